"""torch.fx.experimental (the names packages import at load time)."""
