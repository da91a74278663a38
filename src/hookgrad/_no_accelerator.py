"""What PyTorch answers for an accelerator it was built without, shared by the stand-ins ``cuda.py`` (where CuPy sees
no GPU) and ``xpu.py``: no bf16/tf32, no architectures, seeding does nothing, and ``with torch.<accelerator>.device(i)``
goes through the build's dummy ``_exchange_device``."""


def is_bf16_supported(including_emulation=True):
    return False


def is_tf32_supported():
    return False


def get_arch_list():
    return []


def get_gencode_flags():
    return ""


def seed():
    pass


seed_all = seed


class device:
    """``with torch.<accelerator>.device(i):`` entering selects device ``i`` and leaving selects the previous one,
    both through ``_exchange_device`` (a subclass gives it, with ``_index``: the index its module reads from ``i``)."""

    def __init__(self, device):
        self.idx = self._index(device)
        self.prev_idx = -1

    def __enter__(self):
        self.prev_idx = self._exchange_device(self.idx)

    def __exit__(self, *exc):
        self.idx = self._exchange_device(self.prev_idx)
        return False


class device_of:
    """``with torch.<accelerator>.device_of(obj):`` the device of ``obj``; the stand-ins select none for it: the index
    is -1 (mixed in before the module's ``device``)."""

    def __init__(self, obj):
        super().__init__(-1)
