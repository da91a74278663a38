"""nn.functional (being written)."""
