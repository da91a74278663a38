"""Test processes only: when a process running the real PyTorch imports torchvision, ``_torchvision_oracle``
declares torchvision's operators first (see there). A process where ``torch`` is hookgrad (``python -m
hookgrad``) is left alone: hookgrad provides torchvision's operators itself. Nothing is imported until
torchvision is."""
import importlib.abc
import sys


class _BeforeTorchvision(importlib.abc.MetaPathFinder):
    def find_spec(self, fullname, path=None, target=None):
        if fullname != "torchvision":
            return None
        sys.meta_path.remove(self)
        import torch
        if "hookgrad" not in str(getattr(torch, "__file__", "")):
            import _torchvision_oracle  # noqa: F401
        return None


def install():
    if "torchvision" not in sys.modules and not any(isinstance(f, _BeforeTorchvision) for f in sys.meta_path):
        sys.meta_path.insert(0, _BeforeTorchvision())
