"""torch.backends.mps: no Metal device (hookgrad runs on the CPU): PyTorch's answers on a machine without MPS."""
__all__ = ["is_built", "is_available", "is_macos13_or_newer", "is_macos_or_newer", "get_name", "get_core_count"]


def is_built():
    return False


def is_available():
    return False


def is_macos_or_newer(major, minor):
    return False


def is_macos13_or_newer(minor=0):
    return False


def get_name():
    raise AttributeError("module 'torch._C' has no attribute '_mps_get_name'")


def get_core_count():
    raise AttributeError("module 'torch._C' has no attribute '_mps_get_core_count'")
