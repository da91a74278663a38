"""torch.backends.miopen: no MIOpen (no ROCm device)."""
from .._flags import flag_module, scoped_flags, swap_flags

_values = {"immediate": False}


def set_flags(_immediate=None):
    return swap_flags(_values, {"immediate": _immediate})


def flags(immediate=False):
    return scoped_flags(_values, set_flags, dict(_immediate=immediate))


flag_module(__name__, _values, "MiopenModule")
