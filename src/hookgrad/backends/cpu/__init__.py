"""torch.backends.cpu."""
__all__ = ["get_cpu_capability"]


def get_cpu_capability():
    """The vector instruction set of the kernels PyTorch dispatches to ("AVX2", "AVX512" ...). hookgrad reproduces
    the results of x86 PyTorch's AVX2 kernels (the 32-byte lanes of its reductions, the int16 fixed-point uint8
    resize): "AVX2", so that libraries which choose a path by it (torchvision's uint8 Resize) take PyTorch's."""
    return "AVX2"
