"""torch.backends.mkl: hookgrad has no MKL kernels of its own (NumPy's BLAS does the matmuls): ``is_available()`` is
False, as in a PyTorch built without MKL."""
VERBOSE_OFF = 0
VERBOSE_ON = 1


def is_available():
    return False


class verbose:
    """On-demand MKL verbosing: without MKL, turning it on fails as PyTorch's does."""

    def __init__(self, enable):
        self.enable = enable

    def __enter__(self):
        if self.enable == VERBOSE_OFF:
            return
        raise AssertionError("Failed to set MKL into verbose mode. Please consider to disable this verbose scope.")

    def __exit__(self, exc_type, exc_val, exc_tb):
        return False
