"""nn.modules.container (being written)."""
__all__ = []
