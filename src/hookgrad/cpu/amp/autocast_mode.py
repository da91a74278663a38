"""torch.cpu.amp.autocast: ``torch.amp.autocast("cpu", ...)`` under its deprecated name."""
from ...amp._deprecated import autocast_for

__all__ = ["autocast"]
autocast = autocast_for("cpu")
