"""torch.nn.quantized (an alias of torch.ao.nn.quantized): ``FloatFunctional``; the quantized modules need
quantized tensors, which hookgrad lacks (docs/differences.md)."""
from ... import _missing
from ...ao.nn.quantized import FloatFunctional

__all__ = ["FloatFunctional"]
__getattr__ = _missing.module_getattr(__name__, "torch.nn.quantized")
