"""``torch.version``: the PyTorch release hookgrad mirrors, with hookgrad's own version as a local label.

Clients read ``torch.version.cuda`` (None: no CUDA build), ``torch.version.hip`` and
``torch.version.__version__`` as they would on PyTorch's CPU wheel.
"""
from typing import Optional

__all__ = ["__version__", "debug", "cuda", "git_version", "hip", "rocm", "xpu"]

mirrors = "2.13.0"      # the PyTorch release whose API and hooks hookgrad follows
hookgrad = "0.1.0"      # hookgrad's own release (hookgrad.__version__, pyproject.toml)
__version__ = f"{mirrors}+hookgrad.{hookgrad}"
debug = False
cuda: Optional[str] = None
git_version = "Unknown"
hip: Optional[str] = None
rocm: Optional[str] = None
xpu: Optional[str] = None
