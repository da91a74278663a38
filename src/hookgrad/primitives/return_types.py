"""torch.return_types: named tuples returned by max(dim), sort, topk, ... (``values``, ``indices``)."""

__all__ = ["max", "min", "sort", "topk", "kthvalue", "median", "nanmedian", "mode", "frexp", "cummax", "cummin", "aminmax", "histogram"]


class _StructSeq(tuple):
    """A tuple with named fields that prints like PyTorch's structseq."""
    _fields = ("values", "indices")

    def __new__(cls, *items):
        if len(items) == 1 and isinstance(items[0], (tuple, list)):
            items = tuple(items[0])
        return tuple.__new__(cls, items)

    def __getattr__(self, name):
        try:
            return self[type(self)._fields.index(name)]
        except ValueError:
            raise AttributeError(f"'torch.return_types.{type(self).__name__}' object has no attribute '{name}'") \
                from None

    def __repr__(self):
        body = ",\n".join(f"{f}={v!r}" for f, v in zip(self._fields, self))
        return f"torch.return_types.{type(self).__name__}(\n{body})"

    def __reduce__(self):
        return (type(self), (tuple(self),))


def _make(name, fields=("values", "indices")):
    return type(name, (_StructSeq,), {"_fields": fields, "__module__": __name__, "__qualname__": name})


max = _make("max")
min = _make("min")
sort = _make("sort")
topk = _make("topk")
kthvalue = _make("kthvalue")
median = _make("median")
nanmedian = _make("nanmedian")
frexp = _make("frexp", ("mantissa", "exponent"))
mode = _make("mode")
cummax = _make("cummax")
cummin = _make("cummin")
aminmax = _make("aminmax", ("min", "max"))
histogram = _make("histogram", ("hist", "bin_edges"))
