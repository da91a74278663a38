"""torch.backends.xnnpack: no XNNPACK in hookgrad."""
enabled = False
