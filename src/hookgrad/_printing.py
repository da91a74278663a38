"""repr/str of tensors, formatted as PyTorch formats them (placeholder, replaced below)."""
import numpy as np


def tensor_repr(t):
    body = np.array2string(t._data, separator=", ", prefix="tensor(")
    extra = ""
    if t.grad_fn is not None:
        extra = f", grad_fn=<{t.grad_fn.name()}>"
    elif t.requires_grad:
        extra = ", requires_grad=True"
    return f"tensor({body}{extra})"
