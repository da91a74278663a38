"""torch.backends.mha: the switch of nn.MultiheadAttention's fast path (recorded; hookgrad computes one path)."""
_fastpath = [True]


def get_fastpath_enabled():
    return _fastpath[0]


def set_fastpath_enabled(value):
    _fastpath[0] = bool(value)
