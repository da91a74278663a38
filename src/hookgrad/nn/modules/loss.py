"""nn.modules.loss (being written)."""
__all__ = []
