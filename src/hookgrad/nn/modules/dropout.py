"""nn.modules.dropout (being written)."""
__all__ = []
