"""hookgrad.utils (mirrors torch.utils)."""
from . import hooks
from . import data
