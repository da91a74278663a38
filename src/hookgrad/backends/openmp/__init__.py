"""torch.backends.openmp: hookgrad's threads are its own pool (hookgrad._parallel), not OpenMP: False."""


def is_available():
    return False
