"""torch.cpu.amp.GradScaler: ``torch.amp.GradScaler("cpu", ...)`` under its deprecated name."""
from ...amp._deprecated import grad_scaler_for

__all__ = ["GradScaler"]
GradScaler = grad_scaler_for("cpu")
