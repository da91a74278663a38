"""torch.backends.quantized: hookgrad has no quantized kernels, so no quantized engine: "none", as PyTorch says when
it is built with none of fbgemm, qnnpack, onednn, x86."""
import sys
import types

_engine = ["none"]
_SUPPORTED = ("none",)


def _set_engine(self, value):
    if value not in _SUPPORTED:
        raise RuntimeError(f"quantized engine {value} is not supported")
    _engine[0] = value


class QuantizedEngine(types.ModuleType):
    engine = property(lambda self: _engine[0], _set_engine)
    supported_engines = property(lambda self: list(_SUPPORTED))


sys.modules[__name__].__class__ = QuantizedEngine
