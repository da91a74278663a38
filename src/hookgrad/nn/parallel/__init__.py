"""torch.nn.parallel on a CPU-only library: DataParallel and data_parallel behave as PyTorch's do when no
accelerator is present (a pass-through to the module); DistributedDataParallel comes in issue 14."""
from .scatter_gather import scatter, scatter_kwargs, gather  # noqa: F401
from .data_parallel import DataParallel, data_parallel, replicate, parallel_apply
from .distributed import DistributedDataParallel
from . import scatter_gather  # noqa: F401

__all__ = ["replicate", "scatter", "parallel_apply", "gather", "data_parallel", "DataParallel",
           "DistributedDataParallel"]
