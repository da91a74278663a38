"""nn.init (being written)."""
