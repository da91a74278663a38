"""torch.distributed.constants: the default collective timeout.
NOTE: hookgrad's default is init_process_group's 60 s (faults end the job within a deadline), not PyTorch's
30 minutes; there is no NCCL, so default_pg_nccl_timeout is None (PyTorch's value when built without NCCL)."""
from .distributed_c10d import default_pg_timeout

__all__ = ["default_pg_timeout", "default_pg_nccl_timeout"]

default_pg_nccl_timeout = None
