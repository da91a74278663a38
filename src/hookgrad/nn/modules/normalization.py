"""nn.modules.normalization (being written)."""
__all__ = []
