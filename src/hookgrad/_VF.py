"""torch._VF: PyTorch's raw bindings of its ATen functions (``torch._C._VariableFunctions``), which torch's own Python
wrappers call (``_VF.unique_dim``, ``_VF.stft``, ``_VF.lstm``...). Here: hookgrad's functions of the same names,
plus the few that PyTorch keeps out of the torch namespace (``unique_dim``)."""
import sys

from .primitives.stats import unique_dim  # noqa: F401


def __getattr__(name):
    root = sys.modules[__name__.rpartition(".")[0]]
    try:
        return getattr(root, name)
    except AttributeError:
        raise AttributeError(f"'torch._C._VariableFunctionsClass' object has no attribute '{name}'") from None
