"""torch.ao.quantization: the stubs a quantization-ready model holds (identities in a float model); ``prepare``,
``convert``, observers and qconfigs (quantized tensors) are a non-goal and raise NotImplementedName."""
from .stubs import DeQuantStub, QuantStub, QuantWrapper  # noqa: F401

__all__ = ["QuantStub", "DeQuantStub", "QuantWrapper"]

from ... import _missing  # noqa: E402
__getattr__ = _missing.module_getattr(__name__, "torch.ao.quantization")
