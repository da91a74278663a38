"""torch.backends.cpu."""
__all__ = ["get_cpu_capability"]


def get_cpu_capability():
    """The vector instruction set of the kernels PyTorch dispatches to ("AVX2", "AVX512" ...). hookgrad has no
    kernels of its own per instruction set (NumPy and the optional numba kernels choose theirs): "DEFAULT", what
    PyTorch answers when it uses its non-vectorised kernels."""
    return "DEFAULT"
