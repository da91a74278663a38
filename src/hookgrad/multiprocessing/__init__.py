"""torch.multiprocessing: Python's multiprocessing plus PyTorch's spawn helpers and sharing-strategy switches.

hookgrad tensors are NumPy-backed and pickle by value, so they travel through Queue/Pipe/Pool as they are;
the sharing strategies are recorded for compatibility (there is no shared-memory tensor storage).
"""
import multiprocessing
import sys

from multiprocessing import *  # noqa: F401,F403

from .spawn import (ProcessContext, ProcessException, ProcessExitedException, ProcessRaisedException,  # noqa: F401
                    spawn, SpawnContext, start_processes)

__all__ = ["set_sharing_strategy", "get_sharing_strategy", "get_all_sharing_strategies"]
__all__ += multiprocessing.__all__

_all_sharing_strategies = {"file_system"} if sys.platform == "darwin" else {"file_descriptor", "file_system"}
_sharing_strategy = "file_system" if sys.platform == "darwin" else "file_descriptor"


def set_sharing_strategy(new_strategy):
    """Set the strategy for sharing tensors between processes ('file_descriptor' or 'file_system')."""
    global _sharing_strategy
    assert new_strategy in _all_sharing_strategies
    _sharing_strategy = new_strategy


def get_sharing_strategy():
    return _sharing_strategy


def get_all_sharing_strategies():
    return _all_sharing_strategies
