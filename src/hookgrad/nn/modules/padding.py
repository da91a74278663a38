"""Padding layers: constant/zero, reflection, replication, circular (torch.nn.modules.padding)."""
from .. import functional as F
from .module import Module
from .utils import _pair, _quadruple, _ntuple

__all__ = ["CircularPad1d", "CircularPad2d", "CircularPad3d", "ConstantPad1d", "ConstantPad2d", "ConstantPad3d",
           "ReflectionPad1d", "ReflectionPad2d", "ReflectionPad3d", "ReplicationPad1d", "ReplicationPad2d",
           "ReplicationPad3d", "ZeroPad1d", "ZeroPad2d", "ZeroPad3d"]

_sextuple = _ntuple(6, "_sextuple")


def _pad_base(name, mode):
    """PyTorch's _CircularPadNd / _ReflectionPadNd / _ReplicationPadNd: F.pad with `mode`; the leaves set
    `_n` and normalise `padding` to F.pad's 2*_n-tuple."""
    def __init__(self, padding):
        Module.__init__(self)
        self.padding = (_pair, _quadruple, _sextuple)[self._n - 1](padding)

    def forward(self, input):
        return F.pad(input, self.padding, mode)

    def extra_repr(self):
        return f"{self.padding}"
    return type(name, (Module,), {"__constants__": ["padding"], "__init__": __init__, "forward": forward,
                                  "extra_repr": extra_repr, "__module__": __name__})


_CircularPadNd = _pad_base("_CircularPadNd", "circular")
_ReflectionPadNd = _pad_base("_ReflectionPadNd", "reflect")
_ReplicationPadNd = _pad_base("_ReplicationPadNd", "replicate")


class _ConstantPadNd(Module):
    __constants__ = ["padding", "value"]

    def __init__(self, value):
        super().__init__()
        self.value = value

    def forward(self, input):
        return F.pad(input, self.padding, "constant", self.value)

    def extra_repr(self):
        return f"padding={self.padding}, value={self.value}"


def _padnd(base, n, doc):
    """The 1d/2d/3d leaves of a padding family (PyTorch's classes differ only in the tuple length)."""
    return type(base.__name__.replace("_", "").replace("Nd", f"{n}d"), (base,),
                {"_n": n, "__doc__": doc, "__module__": __name__})


CircularPad1d, CircularPad2d, CircularPad3d = (_padnd(_CircularPadNd, n, "Pads the input tensor using circular "
                                                      "padding of the input boundary.") for n in (1, 2, 3))
ReflectionPad1d, ReflectionPad2d, ReflectionPad3d = (_padnd(_ReflectionPadNd, n, "Pads the input tensor using the "
                                                            "reflection of the input boundary.") for n in (1, 2, 3))
ReplicationPad1d, ReplicationPad2d, ReplicationPad3d = (_padnd(_ReplicationPadNd, n, "Pads the input tensor using "
                                                               "replication of the input boundary.") for n in (1, 2, 3))


class ConstantPad1d(_ConstantPadNd):
    def __init__(self, padding, value):
        super().__init__(value)
        self.padding = _pair(padding)


class ConstantPad2d(_ConstantPadNd):
    def __init__(self, padding, value):
        super().__init__(value)
        self.padding = _quadruple(padding)


class ConstantPad3d(_ConstantPadNd):
    def __init__(self, padding, value):
        super().__init__(value)
        self.padding = _sextuple(padding)


class ZeroPad1d(ConstantPad1d):
    def __init__(self, padding):
        super().__init__(padding, 0.0)

    def extra_repr(self):
        return f"{self.padding}"


class ZeroPad2d(ConstantPad2d):
    def __init__(self, padding):
        super().__init__(padding, 0.0)

    def extra_repr(self):
        return f"{self.padding}"


class ZeroPad3d(ConstantPad3d):
    def __init__(self, padding):
        super().__init__(padding, 0.0)

    def extra_repr(self):
        return f"{self.padding}"
