"""nn.modules.sparse (being written)."""
__all__ = []
