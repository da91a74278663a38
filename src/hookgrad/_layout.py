"""torch.layout and torch.memory_format: the types of ``torch.strided`` and ``torch.contiguous_format``.

Both are opaque tags, as in PyTorch: they print as ``torch.<name>``, cannot be constructed by users, and
pickle/copy to the same object.
"""


class _Tag:
    __slots__ = ("_name",)

    def __new__(cls, *args, **kwargs):
        raise TypeError(f"cannot create 'torch.{cls.__name__}' instances")

    @classmethod
    def _make(cls, name):
        self = object.__new__(cls)
        self._name = name
        return self

    def __repr__(self):
        return "torch." + self._name

    def __reduce__(self):
        return self._name  # pickle looks the name up in this class's module (hookgrad), as PyTorch's does

    def __copy__(self):
        return self

    def __deepcopy__(self, memo):
        return self


class layout(_Tag):
    __slots__ = ()


class memory_format(_Tag):
    __slots__ = ()


for _c in (layout, memory_format):
    _c.__module__ = "hookgrad"
del _c

strided = layout._make("strided")
sparse_coo = layout._make("sparse_coo")
sparse_csr = layout._make("sparse_csr")
sparse_csc = layout._make("sparse_csc")
sparse_bsr = layout._make("sparse_bsr")
sparse_bsc = layout._make("sparse_bsc")
_mkldnn = layout._make("_mkldnn")
jagged = layout._make("jagged")

contiguous_format = memory_format._make("contiguous_format")
preserve_format = memory_format._make("preserve_format")
channels_last = memory_format._make("channels_last")
channels_last_3d = memory_format._make("channels_last_3d")
legacy_contiguous_format = contiguous_format  # PyTorch: the same object


def is_contiguous(data, memory_format=None):
    """``Tensor.is_contiguous(memory_format=)`` on a NumPy array (PyTorch's strides rules)."""
    if memory_format is None or memory_format is contiguous_format or memory_format is preserve_format:
        return bool(data.flags.c_contiguous)
    if memory_format is channels_last or memory_format is channels_last_3d:
        nd = 4 if memory_format is channels_last else 5
        if data.ndim != nd:
            return False
        # channels-last strides: C is the fastest dimension, then W (, D), H, N; size-1 dims are free
        order = (1,) + tuple(range(nd - 1, 1, -1)) + (0,)
        isz = data.itemsize
        expected = 1
        for d in order:
            n = data.shape[d]
            if n != 1 and data.strides[d] // isz != expected:
                return False
            expected *= n
        return True
    raise TypeError("is_contiguous(): argument 'memory_format' must be torch.memory_format, not "
                    + type(memory_format).__name__)
