"""torch.distributed.checkpoint (DCP): hookgrad has no distributed checkpointing (its DTensors are not module
parameters, so there is nothing sharded to save). The names packages import exist: ``save``/``load`` and the
storage readers and writers raise NotImplementedError naming themselves when used; ``state_dict``'s getters and
setters work for plain (unsharded) modules and optimizers. Save with torch.save on one rank instead."""
from ._api import (FileSystemReader, FileSystemWriter, async_save, load, load_state_dict, save,  # noqa: F401
                   save_state_dict)
from .default_planner import DefaultLoadPlanner, DefaultSavePlanner  # noqa: F401

__all__ = ["save", "load", "async_save", "save_state_dict", "load_state_dict", "FileSystemReader", "FileSystemWriter",
           "DefaultSavePlanner", "DefaultLoadPlanner"]

from ... import _missing  # noqa: E402
__getattr__ = _missing.module_getattr(__name__, "torch.distributed.checkpoint")
