"""hookgrad.utils (mirrors torch.utils)."""
from . import hooks
from . import data
from . import _pytree  # noqa: F401  (torch.utils._pytree is loaded with torch)
