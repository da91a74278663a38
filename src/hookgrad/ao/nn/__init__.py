"""torch.ao.nn: of the quantized module namespaces, the float ``FloatFunctional`` (see hookgrad.ao)."""
from ... import _missing

__getattr__ = _missing.module_getattr(__name__, "torch.ao.nn")
