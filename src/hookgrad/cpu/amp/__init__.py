"""torch.cpu.amp: deprecated aliases of torch.amp for the CPU (each warns with a FutureWarning)."""
from .autocast_mode import autocast
from .grad_scaler import GradScaler

__all__ = ["autocast", "GradScaler"]
