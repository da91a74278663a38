"""DistributedDataParallel: the name exists for isinstance checks; the wrapper comes in issue 14."""
from ..modules.module import Module

__all__ = ["DistributedDataParallel"]


class DistributedDataParallel(Module):
    """Not implemented yet (issue 14): constructing one raises, as PyTorch's does with no process group."""

    def __init__(self, module, device_ids=None, output_device=None, dim=0, broadcast_buffers=None, init_sync=True,
                 process_group=None, bucket_cap_mb=None, find_unused_parameters=False, check_reduction=False,
                 gradient_as_bucket_view=False, static_graph=False, **kwargs):
        raise ValueError("Default process group has not been initialized, please make sure to call "
                         "init_process_group. (hookgrad: DistributedDataParallel is not implemented yet, see issue 14 "
                         "and docs/coverage.md)")
