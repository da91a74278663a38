"""torch.autograd._functions: the legacy tensor Functions PyTorch keeps there (Resize, Type)."""
from .tensor import Resize, Type  # noqa: F401
