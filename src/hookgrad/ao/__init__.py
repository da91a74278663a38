"""torch.ao: PyTorch's architecture-optimization namespace (quantization, sparsity, pruning). Quantized tensors
are a non-goal of hookgrad; ``ao.quantization`` has the stubs models hold in float mode (identities until a model
is converted, which hookgrad cannot do)."""
from .. import _missing
__getattr__ = _missing.module_getattr(__name__, "torch.ao")
