"""hookgrad.xpu: the answers of PyTorch built without XPU (Intel GPU) support; hookgrad has no XPU device.

Queries answer "no XPU" (``is_available()`` False, ``device_count()`` 0, memory counters 0, no architectures);
seeding and ``empty_cache`` do nothing (PyTorch queues seeds until a device initialises); what needs a device
raises PyTorch's ``AssertionError: Torch not compiled with XPU enabled`` (here also a RuntimeError), and
``with torch.xpu.device(0)`` raises the NotImplementedError PyTorch raises.
"""
from ._errors import NoCuda as _NoDevice     # (an AssertionError that is also a RuntimeError)
from . import _no_accelerator
from ._no_accelerator import (is_bf16_supported, is_tf32_supported, get_arch_list,  # noqa: F401
                              get_gencode_flags, seed, seed_all)

default_generators = ()


def _raise_no_xpu(*args, **kwargs):
    raise _NoDevice("Torch not compiled with XPU enabled")


def is_available():
    """False: hookgrad has no XPU device."""
    return False


def device_count():
    return 0


def is_initialized():
    return False


def _is_compiled():
    return False


def manual_seed(seed):
    pass


def manual_seed_all(seed):
    pass


def empty_cache():
    pass


def memory_allocated(device=None):
    return 0


max_memory_allocated = memory_reserved = max_memory_reserved = memory_allocated


def set_rng_state(new_state, device="xpu"):
    pass


(init, _lazy_init, current_device, set_device, synchronize, get_device_name, get_device_capability,
 get_device_properties, initial_seed, get_rng_state, current_stream, set_stream, mem_get_info) = (_raise_no_xpu,) * 13


def _exchange_device(idx):
    raise NotImplementedError("PyTorch was compiled without XPU support")


class device(_no_accelerator.device):
    """``with torch.xpu.device(i)``: raises, as PyTorch built without XPU does."""
    _exchange_device = staticmethod(_exchange_device)

    @staticmethod
    def _index(device):
        return device if isinstance(device, int) else getattr(device, "index", 0) or 0


class device_of(_no_accelerator.device_of, device):
    """``with torch.xpu.device_of(tensor)``: the tensor's XPU device (none here: entering raises, as in PyTorch)."""


from . import _missing  # noqa: E402
__getattr__ = _missing.module_getattr(__name__, "torch.xpu")
