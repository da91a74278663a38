"""torch.accelerator: hookgrad has no accelerator (it computes on the CPU), so it answers as PyTorch does on a
machine without one: ``is_available()`` False, ``device_count()`` 0, ``current_accelerator()`` None, and what needs
a device raises PyTorch's RuntimeError."""
__all__ = ["Graph", "current_accelerator", "current_device_idx", "current_device_index", "get_device_capability",
           "current_stream", "device_count", "device_index", "empty_cache", "empty_host_cache", "get_memory_info",
           "is_available", "max_memory_allocated", "max_memory_reserved", "memory_allocated", "memory_reserved",
           "memory_stats", "reset_accumulated_memory_stats", "reset_peak_memory_stats", "set_device_idx",
           "set_device_index", "set_stream", "synchronize"]


def _none():
    return RuntimeError("Cannot access accelerator device when none is available.")


def is_available():
    return False


def device_count():
    return 0


def current_accelerator(check_available=False):
    """The accelerator device type (``torch.device("cuda")`` ...): None, there is none."""
    return None


def _needs_device(*args, **kwargs):
    raise _none()


(current_device_index, current_device_idx, get_device_capability, current_stream, empty_cache, empty_host_cache,
 get_memory_info, max_memory_allocated, max_memory_reserved, memory_allocated, memory_reserved, memory_stats,
 reset_accumulated_memory_stats, reset_peak_memory_stats, synchronize) = (_needs_device,) * 15


def set_device_index(device):
    raise _none()


set_device_idx = set_device_index


def set_stream(stream):
    raise _none()


class device_index:
    """``with torch.accelerator.device_index(i):``: None does nothing; an index needs an accelerator."""

    def __init__(self, device):
        self.idx = device

    def __enter__(self):
        if self.idx is not None:
            raise _none()

    def __exit__(self, *exc):
        return False


class Graph:
    def __init__(self, *args, **kwargs):
        raise _none()
