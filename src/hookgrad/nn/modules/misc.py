"""nn.modules.misc (being written)."""
__all__ = []
