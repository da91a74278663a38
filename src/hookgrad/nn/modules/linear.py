"""nn.modules.linear (being written)."""
__all__ = []
