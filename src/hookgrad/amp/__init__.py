"""torch.amp: autocast (mixed precision by op) and GradScaler (loss scaling)."""
from .autocast_mode import (_enter_autocast, _exit_autocast, autocast, custom_bwd, custom_fwd,  # noqa: F401
                            is_autocast_available)
from .grad_scaler import GradScaler
from . import autocast_mode, grad_scaler  # noqa: F401

__all__ = ["autocast", "custom_bwd", "custom_fwd", "is_autocast_available", "GradScaler"]

from .. import _missing  # noqa: E402
__getattr__ = _missing.module_getattr(__name__, "torch.amp")
