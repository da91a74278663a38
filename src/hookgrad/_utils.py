"""torch._utils: the private helpers packages import by name (checkpoint loaders, device-index parsing)."""
from ._weights_only_unpickler import _rebuild_tensor_v2  # noqa: F401
from .nn.parameter import _rebuild_parameter  # noqa: F401


def _element_size(dtype):
    """The size in bytes of one element of ``dtype``."""
    return dtype.itemsize


def _get_device_index(device, optional=False, allow_cpu=False):
    """The device index of ``device`` (an int, a "cuda:N" string or a torch.device); -1 for the CPU when
    ``allow_cpu``."""
    from ._tensor import device as _device
    if isinstance(device, str):
        device = _device(device)
    if isinstance(device, int):
        return device
    if device is not None and device.type == "cpu":
        if not allow_cpu:
            raise ValueError(f"Expected a non cpu device, but got: {device}")
        return -1
    if device is not None and device.index is not None:
        return device.index
    if optional:
        from . import cuda
        return cuda.current_device()        # raises: there is no CUDA device
    raise ValueError(f"Expected a torch.device with a specified index or an integer, but got:{device}")
