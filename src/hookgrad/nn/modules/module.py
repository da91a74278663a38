"""nn.modules.module (being written)."""
__all__ = []
