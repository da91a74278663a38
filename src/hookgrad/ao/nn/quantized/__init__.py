"""torch.ao.nn.quantized: ``FloatFunctional``, the float ops a quantization-ready model calls through a module
(so that ``convert`` can swap them); the quantized modules themselves need quantized tensors."""
from .... import _missing
from .functional_modules import FloatFunctional

__all__ = ["FloatFunctional"]
__getattr__ = _missing.module_getattr(__name__, "torch.ao.nn.quantized")
