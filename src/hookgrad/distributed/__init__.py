"""torch.distributed over MPI: process groups, collectives (blocking and async), DDP's GradBucket and the
communication hooks (``algorithms``), the launcher (``python -m hookgrad.distributed.run``).

The transport is MPI (mpi4py + MPICH, the ``distributed`` extra), imported when init_process_group runs.
"""
from .distributed_c10d import *  # noqa: F401,F403
from .distributed_c10d import (__all__ as _c10d_all, DistError, DistBackendError, DistNetworkError,  # noqa: F401
                               DistStoreError, _all_gather_base, _reduce_scatter_base)
from ._grad_bucket import GradBucket
from ._reducer import (BuiltinCommHookType, Logger, Reducer, DEFAULT_FIRST_BUCKET_BYTES as _DEFAULT_FIRST_BUCKET_BYTES,
                       compute_bucket_assignment_by_size as _compute_bucket_assignment_by_size,
                       verify_params_across_processes as _verify_params_across_processes,
                       broadcast_coalesced as _broadcast_coalesced)
from ._mpi import Work as _Work  # noqa: F401
from . import constants  # noqa: F401,E402  (torch.distributed.constants, as torch exposes it)
from .distributed_c10d import breakpoint, set_debug_level_from_env  # noqa: F401,A004  (breakpoint: rank-only pdb)
from ._store import Store, HashStore, PrefixStore, QueueEmptyError
import logging as _logging

log = _logging.getLogger(__name__)
RankType = int                      # torch's is int | SymInt; hookgrad has no symbolic shapes

set_debug_level_from_env()          # TORCH_DISTRIBUTED_DEBUG, read at import as PyTorch does
from .device_mesh import DeviceMesh, init_device_mesh  # noqa: E402,F401  (torch.distributed.DeviceMesh)

__all__ = list(_c10d_all) + ["GradBucket", "BuiltinCommHookType", "Logger", "Reducer", "DistError", "DistBackendError",
                             "DistNetworkError", "DistStoreError", "Store", "HashStore", "PrefixStore",
                             "QueueEmptyError", "breakpoint", "RankType"]
