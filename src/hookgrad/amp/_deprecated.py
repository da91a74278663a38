"""The deprecated per-device faces of torch.amp: ``torch.cpu.amp`` and ``torch.cuda.amp`` (autocast, GradScaler,
custom_fwd/custom_bwd), each warning with PyTorch's FutureWarning text, made once here for both devices."""
import functools
import sys
import types
import warnings

from .. import _dtype as D
from . import autocast_mode as _am
from .grad_scaler import GradScaler as _GradScaler


def _warn(what, instead):
    warnings.warn(f"`torch.{what}(args...)` is deprecated. Please use `torch.{instead}` instead.",
                  FutureWarning, stacklevel=3)


def autocast_for(device):
    default = D.bfloat16 if device == "cpu" else D.float16

    class autocast(_am.autocast):
        __doc__ = (f"See :class:`torch.autocast`. ``torch.{device}.amp.autocast(args...)`` is deprecated. "
                   f"Please use ``torch.amp.autocast(\"{device}\", args...)`` instead.")

        def __init__(self, enabled=True, dtype=default, cache_enabled=True):
            _warn(f"{device}.amp.autocast", f"amp.autocast('{device}', args...)")
            super().__init__(device, enabled=enabled, dtype=dtype, cache_enabled=cache_enabled)
    autocast.__module__ = f"torch.{device}.amp.autocast_mode"
    return autocast


def grad_scaler_for(device):
    class GradScaler(_GradScaler):
        __doc__ = (f"See :class:`torch.amp.GradScaler`. ``torch.{device}.amp.GradScaler(args...)`` is deprecated. "
                   f"Please use ``torch.amp.GradScaler(\"{device}\", args...)`` instead.")

        def __init__(self, init_scale=2.0 ** 16, growth_factor=2.0, backoff_factor=0.5, growth_interval=2000,
                     enabled=True):
            _warn(f"{device}.amp.GradScaler", f"amp.GradScaler('{device}', args...)")
            super().__init__(device, init_scale=init_scale, growth_factor=growth_factor,
                             backoff_factor=backoff_factor, growth_interval=growth_interval, enabled=enabled)
    GradScaler.__module__ = f"torch.{device}.amp.grad_scaler"
    return GradScaler


def custom_fwd_for(device):
    def custom_fwd(fwd=None, *, cast_inputs=None):
        _warn(f"{device}.amp.custom_fwd", f"amp.custom_fwd(args..., device_type='{device}')")
        return functools.partial(_am.custom_fwd, device_type=device)(fwd=fwd, cast_inputs=cast_inputs)
    return custom_fwd


def custom_bwd_for(device):
    def custom_bwd(bwd):
        _warn(f"{device}.amp.custom_bwd", f"amp.custom_bwd(args..., device_type='{device}')")
        return functools.partial(_am.custom_bwd, device_type=device)(bwd)
    return custom_bwd


def module_for(device, parent):
    """``torch.<device>.amp`` as a module object registered under ``<parent>.amp`` (for a device module that is
    a plain file, such as hookgrad.cuda)."""
    m = types.ModuleType(parent + ".amp", f"torch.{device}.amp: deprecated aliases of torch.amp")
    m.autocast = autocast_for(device)
    m.GradScaler = grad_scaler_for(device)
    m.custom_fwd = custom_fwd_for(device)
    m.custom_bwd = custom_bwd_for(device)
    m.__all__ = ["autocast", "custom_bwd", "custom_fwd", "GradScaler"]
    if device == "cuda":
        m.amp_definitely_not_available = lambda: True
        m.__all__.append("amp_definitely_not_available")
    sys.modules[m.__name__] = m
    return m
