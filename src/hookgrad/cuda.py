"""hookgrad.cuda: hookgrad runs on the CPU only; this module answers the questions PyTorch code asks."""


def is_available():
    return False


def device_count():
    return 0


def manual_seed(seed):
    """No CUDA generator to seed (PyTorch silently does nothing without CUDA, too)."""


manual_seed_all = manual_seed


def synchronize(device=None):
    pass


def empty_cache():
    pass


def is_initialized():
    return False


def current_device():
    raise RuntimeError("hookgrad runs on the CPU only: there is no CUDA device")
