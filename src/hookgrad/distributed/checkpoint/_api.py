"""What torch.distributed.checkpoint would do with storage: not available in hookgrad."""


def unavailable(name):
    return NotImplementedError(f"torch.distributed.checkpoint.{name} is not implemented in hookgrad: it has no "
                               "distributed checkpointing (save the state_dict with torch.save on one rank)")


def _raiser(name):
    def f(*args, **kwargs):
        raise unavailable(name)
    f.__name__ = name
    return f


save = _raiser("save")
load = _raiser("load")
async_save = _raiser("async_save")
save_state_dict = _raiser("save_state_dict")
load_state_dict = _raiser("load_state_dict")


class _Storage:
    """A storage reader or writer of DCP: making one raises (there is no distributed checkpointing)."""

    def __init__(self, *args, **kwargs):
        raise unavailable(type(self).__name__)


class StorageReader(_Storage):
    pass


class StorageWriter(_Storage):
    pass


class FileSystemReader(StorageReader):
    pass


class FileSystemWriter(StorageWriter):
    pass
