"""torch.distributed's functions (distributed_c10d): the default process group and the collectives, over MPI.

Every collective works on the tensors' own arrays in place, as PyTorch's do, and returns None, or a
:class:`Work` with ``async_op=True``. Ranks (``src``, ``dst``) are global ranks, ``group_src``/``group_dst``
ranks within the group. The backend is MPI whatever the name asked for: "mpi", "gloo" or none (a script
written for gloo runs unchanged); the ranks come from the MPI launcher (``mpiexec -n N`` or
``python -m hookgrad.distributed.run``).
"""
import contextlib
import enum
import hashlib
import logging
import os
import threading
import warnings
from datetime import timedelta
from typing import NewType

import numpy as np

from .. import _array as _modules
from .._tensor import Tensor, device as _device
from . import _mpi
from ._mpi import ProcessGroup, Work, DistBackendError

__all__ = ["Backend", "ReduceOp", "group", "GroupMember", "P2POp", "Work", "ProcessGroup", "is_available",
           "is_initialized", "is_mpi_available", "is_gloo_available", "is_nccl_available", "is_torchelastic_launched",
           "init_process_group", "destroy_process_group", "get_rank", "get_world_size", "get_backend", "new_group",
           "get_process_group_ranks", "get_group_rank", "get_global_rank", "barrier", "monitored_barrier",
           "all_reduce", "broadcast", "reduce", "all_gather", "all_gather_into_tensor", "reduce_scatter",
           "reduce_scatter_tensor", "gather", "scatter", "all_to_all", "all_to_all_single", "send", "recv", "isend",
           "irecv", "batch_isend_irecv", "all_gather_object", "broadcast_object_list", "gather_object",
           "scatter_object_list", "get_node_local_rank", "default_pg_timeout",
           # the rest of torch.distributed's namespace (see "backends, debug level, subgroups" and below)
           "BackendConfig", "GroupName", "DebugLevel", "get_debug_level", "set_debug_level",
           "set_debug_level_from_env", "supports_complex", "reduce_op", "is_ucc_available", "is_xccl_available",
           "is_backend_available", "get_backend_config", "get_default_backend_for_device", "get_pg_count",
           "new_subgroups", "new_subgroups_by_enumeration", "split_group", "shrink_group", "all_reduce_coalesced",
           "all_gather_single", "all_gather_coalesced", "reduce_scatter_single", "send_object_list",
           "recv_object_list", "record_comm"]

logger = logging.getLogger(__name__)
GroupName = NewType("GroupName", str)

default_pg_timeout = timedelta(seconds=_mpi.DEFAULT_TIMEOUT)


class Backend(str):
    """A backend name. hookgrad has one transport, MPI, which serves every name that runs on the CPU."""
    UNDEFINED = "undefined"
    GLOO = "gloo"
    NCCL = "nccl"
    UCC = "ucc"
    MPI = "mpi"
    XCCL = "xccl"
    backend_list = [UNDEFINED, GLOO, NCCL, XCCL, UCC, MPI]
    # PyTorch's tables (get_default_backend_for_device, BackendConfig); hookgrad itself runs on the CPU
    default_device_backend_map = {"cpu": GLOO, "cuda": NCCL, "xpu": XCCL, "mps": GLOO}
    backend_capability = {GLOO: ["cpu", "cuda"], NCCL: ["cuda"], XCCL: ["xpu"], UCC: ["cpu", "cuda"],
                          MPI: ["cpu", "cuda"]}

    def __new__(cls, name):
        if not isinstance(name, str):
            raise ValueError(f"Backend constructor parameter must be string-ish, but got: {type(name)}")
        value = getattr(Backend, name.upper(), Backend.UNDEFINED)
        if value == Backend.UNDEFINED:
            value = name.lower()
        return super().__new__(cls, value)


class BackendConfig:
    """torch.distributed.BackendConfig: the device -> backend map a backend string stands for ("gloo",
    "cpu:gloo,cuda:nccl"); ``str()`` writes it as "device:backend" pairs."""

    def __init__(self, backend):
        self.device_backend_map = {}
        backend = str(backend)
        if backend == Backend.UNDEFINED:
            self.device_backend_map["cpu"] = Backend(Backend.default_device_backend_map["cpu"])
        elif backend.lower() in Backend.backend_list:
            self.device_backend_map = dict.fromkeys(Backend.backend_capability[backend.lower()], Backend(backend))
        elif ":" in backend.lower():
            message = (f"The custom backend string argument is invalid: {backend}. Custom backend string is an "
                       f"experimental feature where the backend string must be in the format: "
                       f"\"<device_type1>:<backend1>,<device_type2>:<backend2>...\". e.g. 'cpu:gloo,cuda:nccl'")
            for pair in backend.lower().split(","):
                parts = pair.split(":")
                if len(parts) != 2:
                    raise ValueError(f"Invalid device:backend pairing: {pair}. {message}")
                device, name = parts
                if device in self.device_backend_map:
                    raise ValueError(f"Duplicate device type {device} in backend string: {name}. {message}")
                self.device_backend_map[device] = Backend(name)
        else:
            warnings.warn(f"Device capability of {backend} unknown, assuming `cpu` and `cuda`. You can specify it "
                          f"in `device:backend` format in `init_process_group` call.", stacklevel=2)
            self.device_backend_map = dict.fromkeys(("cpu", "cuda", "xpu"), Backend(backend))

    def __repr__(self):
        return ",".join(f"{device}:{backend}" for device, backend in self.device_backend_map.items())

    def get_device_backend_map(self):
        return self.device_backend_map


class _RedOpType(enum.Enum):
    SUM = 0
    AVG = 1
    PRODUCT = 2
    MIN = 3
    MAX = 4
    BAND = 5
    BOR = 6
    BXOR = 7
    PREMUL_SUM = 8


_RedOpType.__name__ = _RedOpType.__qualname__ = "RedOpType"


class ReduceOp:
    """torch.distributed.ReduceOp: SUM, AVG, PRODUCT, MIN, MAX, BAND, BOR, BXOR."""
    RedOpType = _RedOpType
    SUM = _RedOpType.SUM
    AVG = _RedOpType.AVG
    PRODUCT = _RedOpType.PRODUCT
    MIN = _RedOpType.MIN
    MAX = _RedOpType.MAX
    BAND = _RedOpType.BAND
    BOR = _RedOpType.BOR
    BXOR = _RedOpType.BXOR
    PREMUL_SUM = _RedOpType.PREMUL_SUM


def supports_complex(reduceOp):
    """Whether ``reduceOp`` is defined on complex tensors (not MAX, MIN, PRODUCT nor the bitwise ones)."""
    return reduceOp not in (ReduceOp.MAX, ReduceOp.MIN, ReduceOp.PRODUCT, ReduceOp.BAND, ReduceOp.BOR,
                            ReduceOp.BXOR)


class _reduce_op:
    """The deprecated ``torch.distributed.reduce_op``: ReduceOp's members, with a FutureWarning on each use."""

    def __init__(self):
        members = dict(ReduceOp.RedOpType.__members__)
        for k, v in members.items():
            setattr(self, k, v)
        self.__members__ = members

    def __getattribute__(self, key):
        warnings.warn("`torch.distributed.reduce_op` is deprecated, please use `torch.distributed.ReduceOp` "
                      "instead", FutureWarning, stacklevel=2)
        return object.__getattribute__(self, key)


reduce_op = _reduce_op()

_OPS = {_RedOpType.SUM: _mpi.SUM, _RedOpType.AVG: _mpi.AVG, _RedOpType.PRODUCT: _mpi.PRODUCT,
        _RedOpType.MIN: _mpi.MIN, _RedOpType.MAX: _mpi.MAX, _RedOpType.BAND: _mpi.BAND, _RedOpType.BOR: _mpi.BOR,
        _RedOpType.BXOR: _mpi.BXOR}


class _WorldMeta(type):
    @property
    def WORLD(cls):
        return _world.default if _world is not None else None


class group(metaclass=_WorldMeta):
    """``group.WORLD``: the default process group (None before init_process_group)."""


class GroupMember(metaclass=_WorldMeta):
    NON_GROUP_MEMBER = -100


_world = None


# ------------------------------------------------------------------------------------------------
# the default group

def is_available():
    """True: hookgrad.distributed exists (it needs mpi4py to run: see is_mpi_available)."""
    return True


def is_mpi_available():
    import importlib.util
    return importlib.util.find_spec("mpi4py") is not None


def is_gloo_available():
    """A gloo script runs unchanged: the name is served by the MPI transport."""
    return is_mpi_available()


def is_nccl_available():
    return False


def is_ucc_available():
    return False


def is_xccl_available():
    return False


def _backend_available(name):
    check = globals().get(f"is_{str(name).lower()}_available")
    if check is not None:
        return check()
    return str(name).lower() in Backend.backend_list


def is_backend_available(backend):
    """Whether ``backend`` ("gloo", "mpi", "cpu:gloo,cuda:nccl", ...) can be used: gloo and mpi (both served
    by MPI) when mpi4py is installed; not nccl, ucc nor xccl."""
    if ":" in backend.lower():
        return all(_backend_available(b) for b in BackendConfig(Backend(backend)).get_device_backend_map().values())
    return _backend_available(backend)


def get_default_backend_for_device(device):
    """PyTorch's default backend for a device type: "gloo" for the CPU."""
    device_str = device.type if isinstance(device, _device) else _device(device).type
    backend = Backend.default_device_backend_map.get(device_str)
    if backend is None:
        raise ValueError(f"Default backend not registered for device : {device}")
    return backend


def is_initialized():
    return _world is not None


def is_torchelastic_launched():
    import os
    return os.getenv("TORCHELASTIC_RUN_ID") is not None


def _check_timeout(timeout):
    if timeout is None:
        return _mpi.DEFAULT_TIMEOUT
    if not isinstance(timeout, timedelta):
        raise TypeError(f"Expected timeout argument to be of type datetime.timedelta, got {timeout}")
    return timeout.total_seconds()


def init_process_group(backend=None, init_method=None, timeout=None, world_size=-1, rank=-1, store=None,
                       group_name="", pg_options=None, device_id=None):
    """Join the job's default process group: every rank the MPI launcher started. ``world_size`` and
    ``rank``, when given, must be MPI's."""
    global _world
    if _world is not None:
        raise ValueError("trying to initialize the default process group twice!")
    if backend is not None and Backend(backend) in (Backend.NCCL, Backend.XCCL):
        raise RuntimeError(f"Distributed package doesn't have {Backend(backend).upper()} built in (hookgrad runs "
                           f"on the CPU: use backend='gloo' or 'mpi')")
    seconds = _check_timeout(timeout)
    world = _mpi.World(seconds)
    for name, asked, got in (("world_size", world_size, world.size), ("rank", rank, world.rank)):
        if asked is not None and asked != -1 and int(asked) != got:
            world.destroy()
            raise ValueError(
                f"hookgrad: init_process_group({name}={asked}) but MPI started this process as {name} {got}: "
                f"hookgrad's ranks are MPI's. Launch the job with `mpiexec -n N python script.py` or "
                f"`python -m hookgrad.distributed.run --nproc-per-node N script.py`")
    _world = world


def destroy_process_group(group=None):
    """Destroy ``group``, or every group and the default one (after which init_process_group may run again)."""
    global _world
    if _world is None:
        raise ValueError("Default process group has not been initialized, please make sure to call "
                         "init_process_group.")
    if group is None or group is _world.default:
        _world.destroy()
        _world = None
    else:
        _world.groups.pop(group, None)
        group._comm.Free()


def _default():
    if _world is None:
        raise ValueError("Default process group has not been initialized, please make sure to call "
                         "init_process_group.")
    return _world.default


def _group(group):
    if group is None or group is GroupMember.WORLD:
        return _default()
    if not isinstance(group, ProcessGroup):
        raise TypeError(f"hookgrad: expected a ProcessGroup, got {type(group).__name__}")
    _default()
    return group


def get_rank(group=None):
    """This process's rank in ``group`` (-1 when it is not a member)."""
    g = _group(group)
    return g.rank()


def get_world_size(group=None):
    return _group(group).size()


def get_backend(group=None):
    _group(group)
    return Backend.MPI


def get_backend_config(group=None):
    """The backend configuration of ``group`` as "device:backend" pairs (of its backend: see get_backend)."""
    pg = group or _default()
    if pg is GroupMember.NON_GROUP_MEMBER:
        raise ValueError("Invalid process group specified")
    return str(BackendConfig(get_backend(pg)))


def get_pg_count():
    """How many process groups init_process_group and new_group have made (0 before init_process_group)."""
    return 0 if _world is None else _world.count


def get_node_local_rank(fallback_rank=None):
    import os
    for name in ("LOCAL_RANK", "MPI_LOCALRANKID"):
        if name in os.environ:
            return int(os.environ[name])
    if fallback_rank is not None:
        return int(fallback_rank)
    raise RuntimeError("LOCAL_RANK is not in the environment. Consider passing fallback_rank to allow "
                       "`get_node_local_rank` to work, assuming you are not running in a multi-device context "
                       "and want the code to run locally instead.")


def new_group(ranks=None, timeout=None, backend=None, pg_options=None, use_local_synchronization=False,
              group_desc=None, device_id=None):
    """A process group of the global ``ranks`` (all by default). Every rank calls it, members or not, as in
    PyTorch; a non-member gets GroupMember.NON_GROUP_MEMBER."""
    _default()
    if ranks is not None:
        ranks = [int(r) for r in ranks]
        if len(set(ranks)) != len(ranks):
            raise ValueError(f"hookgrad: new_group got a rank twice: {ranks}")
        for r in ranks:
            if not 0 <= r < _world.size:
                raise ValueError(f"Invalid rank {r}: the world has {_world.size} ranks")
    seconds = _world.default._timeout if timeout is None else _check_timeout(timeout)
    made = _world.new_group(ranks, seconds)
    return GroupMember.NON_GROUP_MEMBER if made is None else made


def get_process_group_ranks(group):
    return list(_group(group)._ranks)


def get_group_rank(group, global_rank):
    ranks = _group(group)._ranks
    if global_rank not in ranks:
        raise ValueError(f"Global rank {global_rank} is not part of group {group}")
    return ranks.index(global_rank)


def get_global_rank(group, group_rank):
    ranks = _group(group)._ranks
    if not 0 <= group_rank < len(ranks):
        raise ValueError(f"Group rank {group_rank} is not part of group {group}")
    return ranks[group_rank]


def new_subgroups(group_size=None, group=None, timeout=None, backend=None, pg_options=None, group_desc=None):
    """Split ``group``'s ranks (the world's by default) into consecutive subgroups of ``group_size``; every rank
    of the world calls it. Returns (this rank's subgroup, all of them)."""
    if group_size is None:
        raise ValueError("Default group size only takes effect when CUDA is available.If your subgroup using a "
                         "backend that does not depend on CUDA,please pass in 'group_size' correctly.")
    if group_size <= 0:
        raise ValueError(f"The arg 'group_size' ({group_size}) must be positive")
    world_size = get_world_size(group=group)
    if world_size < group_size:
        raise ValueError(f"The arg 'group_size' ({group_size}) must not exceed the world size ({world_size})")
    if world_size % group_size != 0:
        raise ValueError(f"The world size ({world_size}) must be divisible by '{group_size=}'")
    ranks = get_process_group_ranks(group)
    return new_subgroups_by_enumeration([ranks[i:i + group_size] for i in range(0, len(ranks), group_size)],
                                        timeout=timeout, backend=backend, pg_options=pg_options,
                                        group_desc=group_desc)


def new_subgroups_by_enumeration(ranks_per_subgroup_list, timeout=None, backend=None, pg_options=None,
                                 group_desc=None):
    """One new_group per list of global ranks (they must not overlap); every rank of the world calls it.
    Returns (this rank's subgroup or None, all of them: NON_GROUP_MEMBER where this rank is not in one)."""
    if ranks_per_subgroup_list is None or len(ranks_per_subgroup_list) == 0:
        raise ValueError("The arg 'ranks_per_subgroup_list' cannot be empty")
    subgroups = []
    cur_subgroup = None
    seen = {}
    for ranks in ranks_per_subgroup_list:
        subgroup = new_group(ranks=ranks, timeout=timeout, backend=backend, pg_options=pg_options,
                             group_desc=group_desc)
        subgroups.append(subgroup)
        my_rank = get_rank()
        for rank in ranks:
            if rank in seen:
                raise ValueError(f"Rank {rank} has appeared in both subgroup {seen[rank]} and {ranks}")
            seen[rank] = ranks
            if my_rank == rank:
                cur_subgroup = subgroup
                logger.info("Rank %s is assigned to subgroup %s", rank, ranks)
    return cur_subgroup, subgroups


def split_group(parent_pg=None, split_ranks=None, timeout=None, pg_options=None, group_desc=None, backend=None):
    """Split ``parent_pg`` (the default group when None) by ``split_ranks``, lists of ranks *within the parent*
    that do not overlap; every rank of the parent calls it, others need not (MPI_Comm_split of the parent).
    Returns this rank's new group, or None when it is in no list."""
    if split_ranks is None or len(split_ranks) == 0:
        raise ValueError("split_ranks cannot be None or empty")
    default = _default()
    parent = parent_pg or default
    if parent not in _world.groups:
        raise ValueError(f"Group {parent} is not registered")
    seconds = parent._timeout if timeout is None else _check_timeout(timeout)
    me = parent.rank()
    mine, color = None, None
    for index, ranks in enumerate(split_ranks):
        if len(ranks) == 0:
            raise ValueError("the split group cannot be empty")
        if len(ranks) > default.size():
            raise ValueError("the split group's size should be less or equal to the world_size set by "
                             "init_process_group")
        if len(ranks) != len(set(ranks)):
            raise ValueError("the split group cannot have duplicate ranks")
        for r in ranks:
            if not 0 <= r < parent.size():
                raise ValueError(f"Group rank {r} is not part of group {parent}")
        if mine is None and me in ranks:
            mine, color = sorted(ranks), index
    MPI = _mpi.mpi()
    comm = parent._comm.Split(MPI.UNDEFINED if color is None else color, 0 if mine is None else mine.index(me))
    if mine is None:
        return None
    comm.Set_errhandler(MPI.ERRORS_RETURN)
    ranks = [parent._global(r) for r in mine]
    unique = f"{'_'.join(map(str, ranks))}_{len(_world.groups)}"
    name = hashlib.sha1(unique.encode(), usedforsecurity=False).hexdigest()
    made = ProcessGroup(comm, ranks, seconds, name, _world.peers)
    _world.groups[made] = ranks
    return made


SHRINK_DEFAULT = 0x00
SHRINK_ABORT = 0x01


def shrink_group(ranks_to_exclude, group=None, shrink_flags=SHRINK_DEFAULT, pg_options=None):
    """PyTorch's shrink_group checks, then its error for a backend that cannot shrink: MPI's communicators
    cannot drop ranks (that takes MPI's fault-tolerance extension, which MPICH's PyPI build lacks)."""
    if not isinstance(ranks_to_exclude, list):
        raise TypeError(f"ranks_to_exclude must be a list, but got {type(ranks_to_exclude).__name__}. "
                        f"Example: [1, 3, 5] to exclude ranks 1, 3, and 5.")
    if not ranks_to_exclude:
        raise ValueError("ranks_to_exclude cannot be empty. To shrink a group, you must specify at least one rank "
                         "to exclude. Example: [failed_rank_id]")
    if not isinstance(shrink_flags, int) or shrink_flags not in (SHRINK_DEFAULT, SHRINK_ABORT):
        raise ValueError(f"Invalid shrink_flags value: {shrink_flags}. Must be one of: SHRINK_DEFAULT "
                         f"({SHRINK_DEFAULT}) or SHRINK_ABORT ({SHRINK_ABORT}). Use SHRINK_ABORT to abort ongoing "
                         f"operations before shrinking.")
    g = _group(group)
    if g.size() <= 1:
        raise ValueError(f"Cannot shrink a process group with size {g.size()}. Group must have at least 2 ranks "
                         f"to support shrinking.")
    raise TypeError(f"Process group backend for '{g._name}' does not support shrinking operations.")


# ------------------------------------------------------------------------------------------------
# debug level (TORCH_DISTRIBUTED_DEBUG), profiling names

class DebugLevel(enum.Enum):
    """torch.distributed.DebugLevel: OFF, INFO, DETAIL (TORCH_DISTRIBUTED_DEBUG)."""
    OFF = 0
    INFO = 1
    DETAIL = 2

    def __int__(self):
        return self.value

    __index__ = __int__


_debug_level = DebugLevel.OFF


def get_debug_level():
    return _debug_level


def set_debug_level(level):
    global _debug_level
    if not isinstance(level, DebugLevel):
        raise TypeError(f"set_debug_level(): incompatible function arguments. The following argument types are "
                        f"supported:\n    1. (arg0: torch._C._distributed_c10d.DebugLevel) -> None\n\nInvoked "
                        f"with: {level!r}")
    _debug_level = level


def set_debug_level_from_env():
    """The level of TORCH_DISTRIBUTED_DEBUG (OFF, INFO or DETAIL, any case); OFF when it is not set."""
    value = os.environ.get("TORCH_DISTRIBUTED_DEBUG")
    if value is None:
        set_debug_level(DebugLevel.OFF)
        return
    level = DebugLevel.__members__.get(value.upper())
    if level is None:
        raise ValueError("The value of TORCH_DISTRIBUTED_DEBUG must be OFF, INFO, or DETAIL.")
    set_debug_level(level)


_comm_name = threading.local()


@contextlib.contextmanager
def record_comm(name):
    """Name the collectives started inside for a profiler, as PyTorch's; hookgrad has no profiler (see
    autograd.profiler.record_function), so the name is kept and nothing records it."""
    prev = getattr(_comm_name, "name", "")
    _comm_name.name = name
    try:
        yield
    finally:
        _comm_name.name = prev


def breakpoint(rank=0, skip=0, timeout_s=3600):
    """Stop in pdb on rank ``rank`` only (after ``skip`` calls from the same place); the other ranks wait in a
    barrier until it goes on. The groups' timeouts become ``timeout_s`` so the wait does not end the job."""
    import traceback
    if skip > 0:
        key = hash(str(traceback.format_exc()))
        counter = _breakpoint_cache.get(key, 0) + 1
        _breakpoint_cache[key] = counter
        if counter <= skip:
            logging.getLogger("hookgrad.distributed").warning("Skip the breakpoint, counter=%d", counter)
            return
    if timeout_s is not None and _world is not None:
        for g in _world.groups:
            g._timeout = float(timeout_s)
    if get_rank() == rank:
        pdb = _make_distributed_pdb()
        pdb.message("\n!!! ATTENTION !!!\n\n"
                    f"Type 'up' to get to the frame that called dist.breakpoint(rank={rank})\n")
        pdb.set_trace()
    barrier()


_breakpoint_cache = {}


def _make_distributed_pdb():
    """A pdb that reads the terminal (/dev/stdin), not the rank's redirected stdin."""
    import pdb
    import sys

    class _DistributedPdb(pdb.Pdb):
        def interaction(self, *args, **kwargs):
            _stdin = sys.stdin
            try:
                with open("/dev/stdin") as sys.stdin:
                    pdb.Pdb.interaction(self, *args, **kwargs)
            finally:
                sys.stdin = _stdin
    return _DistributedPdb()


def _warn_not_in_group(op_name):
    global_rank = -1 if _world is None else _world.rank
    warnings.warn(f"Running {op_name} on global rank {global_rank} which does not belong to the given group.",
                  stacklevel=4)


# ------------------------------------------------------------------------------------------------
# arguments

def _array(tensor, name="tensor", write=True):
    """The contiguous array a collective reads and writes in place: the tensor's own, or for a non-contiguous
    tensor a copy that :func:`_bump` writes back when the collective completes (as gloo accepts them).

    A device tensor (CUDA: CuPy's memory) is staged through the host: MPI works on a host copy (``_array.to_host``),
    which :func:`_bump` copies back to the device when the collective has written it (no CUDA-aware MPI)."""
    if not isinstance(tensor, Tensor):
        raise TypeError(f"Invalid function argument. Expected parameter `{name}` of type torch.Tensor\n"
                        f"             but got {type(tensor)} instead.")
    a = tensor._data
    if type(a) is not np.ndarray:
        if _modules.array_module(a) is not np:
            h = np.ascontiguousarray(_modules.to_host(a))
            if write:
                _copies[id(tensor)] = h
            return h
        a = np.asarray(a)
    flags = a.flags
    if flags.c_contiguous and (flags.writeable or not write):
        return a
    if not flags.writeable and write:
        raise RuntimeError(f"hookgrad: the collective writes `{name}` in place, but its memory is shared read-only "
                           f"(an expanded tensor?): pass a tensor of its own, e.g. {name}.clone()")
    if not a.flags.c_contiguous:
        a = np.ascontiguousarray(a)
        if write:
            _copies[id(tensor)] = a
    return a


_copies = {}        # id(tensor) -> the contiguous copy a collective works on


def _arrays(tensors, name):
    if not isinstance(tensors, (list, tuple)) or not all(isinstance(t, Tensor) for t in tensors):
        raise TypeError(f"Invalid function argument. Expected parameter `{name}` of type List[torch.Tensor]\n"
                        f"             but got {type(tensors)} with elements of type "
                        f"{[type(t) for t in tensors] if isinstance(tensors, (list, tuple)) else ''}.")
    return [_array(t, name) for t in tensors]


def _check_single_tensor(param, param_name):
    if not isinstance(param, Tensor):
        raise TypeError(f"Invalid function argument. Expected parameter `{param_name}` of type torch.Tensor\n"
                        f"             but got {type(param)} instead.")


def _check_tensor_list(param, param_name):
    if not isinstance(param, list):
        raise TypeError(f"Invalid function argument. Expected parameter `{param_name}` of type List[torch.Tensor]\n"
                        f"             but got {type(param)} instead.")
    if not all(isinstance(p, Tensor) for p in param):
        raise TypeError(f"Invalid function argument. Expected parameter `{param_name}` of type List[torch.Tensor]\n"
                        f"             but got {type(param)} with elements of type {[type(p) for p in param]}.")


def _ensure_same_dtype(tensors):
    """One dtype for all (a complex tensor counts as its real parts' dtype), as PyTorch checks."""
    last = None
    for t in tensors:
        dt = t.dtype
        dt = str(dt).split(".")[-1]
        if dt == "complex64":               # (PyTorch's check pairs complex64 with float32 only)
            dt = "float32"
        if last is None:
            last = dt
        elif last != dt:
            raise ValueError(f"Invalid usage of tensors with different dtypesFound torch.{last} and  {t.dtype}")


def _real(a):
    """A complex array as its real and imaginary parts (a view), as PyTorch sends complex tensors."""
    return a.reshape(-1).view(a.real.dtype) if a.dtype.kind == "c" else a


def _same(a, b, what):
    if a.dtype != b.dtype:
        raise ValueError(f"Invalid usage of tensors with different dtypes: found {a.dtype} and {b.dtype} ({what})")
    if a.size != b.size:
        raise ValueError(f"hookgrad: {what}: expected {b.size} elements, got {a.size}")


def _op(op):
    key = _OPS.get(op) if isinstance(op, _RedOpType) else None
    if key is None:
        raise TypeError(f"(): incompatible function arguments: expected op to be a torch.distributed.ReduceOp "
                        f"(ReduceOp.SUM, AVG, PRODUCT, MIN, MAX, BAND, BOR, BXOR), got {op!r}")
    return key


def _root(g, rank, group_rank, name):
    """The group rank of a root given as a global ``rank`` or as ``group_rank``."""
    if group_rank is not None:
        if rank is not None:
            raise ValueError(f"Can not specify both {name} and group_{name}")
        if not 0 <= group_rank < g.size():
            raise ValueError(f"Group rank {group_rank} is not part of group {g}")
        return group_rank
    if rank is None:
        rank = 0
    if rank not in g._ranks:
        if g is _world.default:
            raise RuntimeError(f"ProcessGroupMPI: invalid root rank: {rank} (the world has {g.size()} ranks)")
        raise ValueError(f"Global rank {rank} is not part of group {g}")
    return g._ranks.index(rank)


def _bump(*tensors):
    """The tensors a collective wrote: write back the contiguous copies, count the in-place change."""
    for t in tensors:
        c = _copies.pop(id(t), None) if _copies else None
        if c is not None:
            d = t._data
            d[...] = c if type(d) is np.ndarray else _modules.asarray(c, d)     # (a staged device tensor: back)
        t._vc[0] += 1


def _done(work, async_op):
    if async_op:
        return work
    work.wait()
    return None


def _member(group, op_name):
    """Whether this rank belongs to ``group``; PyTorch's warning when it does not (the collective is skipped)."""
    if group is GroupMember.NON_GROUP_MEMBER:
        _warn_not_in_group(op_name)
        return False
    return True


# ------------------------------------------------------------------------------------------------
# collectives

def all_reduce(tensor, op=ReduceOp.SUM, group=None, async_op=False):
    """Reduce ``tensor`` over the group, in place on every rank."""
    if not _member(group, "all_reduce"):
        return None
    g = _group(group)
    a = _array(tensor)
    key = _op(op)
    if a.dtype.kind == "c" and key not in (_mpi.SUM, _mpi.AVG, _mpi.PRODUCT):
        raise ValueError(f"all_reduce does not support {op} on complex tensors")
    mop, bytes_ = _mpi._mpi_op(key, a.dtype)
    comm = g._comm
    MPI = _mpi.mpi()

    def finish():
        if key == _mpi.AVG:
            if a.dtype.kind in "iub":
                raise ValueError("hookgrad: all_reduce with ReduceOp.AVG needs a floating-point tensor")
            np.divide(a, g.size(), out=a, casting="unsafe")
        _bump(tensor)
    work = g._start("all_reduce", a.size, _mpi._dtype_code(a.dtype), -1,
                    [lambda: comm.Iallreduce(MPI.IN_PLACE, _mpi._buf(a, bytes_), mop)], [tensor], finish)
    return _done(work, async_op)


def all_reduce_coalesced(tensors, op=ReduceOp.SUM, group=None, async_op=False):
    """Reduce each tensor of ``tensors`` (one dtype) over the group, in place, in one collective. With
    ``async_op=True`` it returns a Future (of the tensors), as PyTorch's."""
    warnings.warn("`torch.distributed.all_reduce_coalesced` will be deprecated. If you must use it, please revisit "
                  "our documentation later at https://pytorch.org/docs/main/distributed.html#collective-functions",
                  FutureWarning, stacklevel=2)
    if isinstance(tensors, Tensor):
        tensors = [tensors]
    _check_tensor_list(tensors, "tensor")
    _ensure_same_dtype(tensors)
    if not _member(group, "all_reduce_coalesced"):
        return None
    if any(t.is_complex() for t in tensors) and not supports_complex(op):
        raise ValueError(f"all_reduce does not support {op} on complex tensors")
    g = _group(group)
    key = _op(op)
    arrays = [_real(_array(t, "tensor")) for t in tensors]
    dtype = arrays[0].dtype if arrays else np.dtype(np.float32)
    flat = np.concatenate([a.reshape(-1) for a in arrays]) if arrays else np.empty(0, dtype)
    mop, bytes_ = _mpi._mpi_op(key, dtype)
    comm = g._comm
    MPI = _mpi.mpi()

    def finish():
        if key == _mpi.AVG:
            if dtype.kind in "iub":
                raise ValueError("hookgrad: all_reduce with ReduceOp.AVG needs a floating-point tensor")
            np.divide(flat, g.size(), out=flat, casting="unsafe")
        at = 0
        for a in arrays:
            a.reshape(-1)[...] = flat[at:at + a.size]
            at += a.size
        _bump(*tensors)
    work = g._start("all_reduce", flat.size, _mpi._dtype_code(dtype), -1,
                    [lambda: comm.Iallreduce(MPI.IN_PLACE, _mpi._buf(flat, bytes_), mop)], list(tensors), finish)
    if async_op:
        return work.get_future()
    work.wait()
    return None


def broadcast(tensor, src=None, group=None, async_op=False, group_src=None):
    """Copy ``tensor`` of rank ``src`` into ``tensor`` on every rank."""
    if not _member(group, "broadcast"):
        return None
    g = _group(group)
    a = _array(tensor)
    root = _root(g, src, group_src, "src")
    comm = g._comm
    work = g._start("broadcast", a.size, _mpi._dtype_code(a.dtype), root,
                    [lambda: comm.Ibcast(_mpi._buf(a), root)], [tensor], lambda: _bump(tensor))
    return _done(work, async_op)


def reduce(tensor, dst=None, op=ReduceOp.SUM, group=None, async_op=False, group_dst=None):
    """Reduce ``tensor`` into rank ``dst``'s (the others' are unchanged)."""
    if not _member(group, "reduce"):
        return None
    g = _group(group)
    a = _array(tensor)
    root = _root(g, dst, group_dst, "dst")
    key = _op(op)
    mop, bytes_ = _mpi._mpi_op(key, a.dtype)
    comm = g._comm
    MPI = _mpi.mpi()
    me = g.rank() == root

    def start():
        buf = _mpi._buf(a, bytes_)
        return comm.Ireduce(MPI.IN_PLACE if me else buf, buf if me else None, mop, root)

    def finish():
        if me:
            if key == _mpi.AVG:
                np.divide(a, g.size(), out=a, casting="unsafe")
            _bump(tensor)
    work = g._start("reduce", a.size, _mpi._dtype_code(a.dtype), root, [start], [tensor], finish)
    return _done(work, async_op)


def all_gather(tensor_list, tensor, group=None, async_op=False):
    """Every rank's ``tensor``, into ``tensor_list`` (one per rank) on every rank."""
    if not _member(group, "all_gather"):
        return None
    g = _group(group)
    a = _array(tensor, write=False)
    outs = _arrays(tensor_list, "tensor_list")
    if len(outs) != g.size():
        raise RuntimeError(f"ProcessGroupMPI::allgather: invalid output tensor list at index 0 (expected length "
                           f"{g.size()}, got {len(outs)})")
    for o in outs:
        _same(o, a, "all_gather output")
    recv = np.empty((g.size(),) + a.shape, a.dtype)
    comm = g._comm

    def finish():
        for o, r, t in zip(outs, recv, tensor_list):
            o[...] = r.reshape(o.shape)
            _bump(t)
    work = g._start("all_gather", a.size, _mpi._dtype_code(a.dtype), -1,
                    [lambda: comm.Iallgather(_mpi._buf(np.ascontiguousarray(a)), _mpi._buf(recv))],
                    list(tensor_list), finish)
    return _done(work, async_op)


def all_gather_single(output_tensor, input_tensor, group=None, async_op=False):
    """Every rank's ``input_tensor``, concatenated (or stacked) in rank order into ``output_tensor``."""
    _check_single_tensor(input_tensor, "input_tensor")
    _check_single_tensor(output_tensor, "output_tensor")
    if not _member(group, "all_gather_single"):
        return None
    g = _group(group)
    a = _array(input_tensor, "input_tensor", write=False)
    out = _array(output_tensor, "output_tensor")
    if out.dtype != a.dtype:
        raise ValueError(f"Invalid usage of tensors with different dtypes: found {out.dtype} and {a.dtype}")
    if out.size != a.size * g.size():
        raise ValueError(f"output tensor size must be equal to world_size times input tensor size (hookgrad: "
                         f"{out.size} elements for {g.size()} x {a.size})")
    comm = g._comm
    work = g._start("all_gather", a.size, _mpi._dtype_code(a.dtype), -1,
                    [lambda: comm.Iallgather(_mpi._buf(a), _mpi._buf(out))], [output_tensor],
                    lambda: _bump(output_tensor))
    return _done(work, async_op)


def all_gather_into_tensor(output_tensor, input_tensor, group=None, async_op=False):
    """Deprecated in PyTorch 2.13 for :func:`all_gather_single` (a FutureWarning)."""
    warnings.warn("`torch.distributed.all_gather_into_tensor` is deprecated. Please use "
                  "`torch.distributed.all_gather_single` instead.", FutureWarning, stacklevel=2)
    return all_gather_single(output_tensor, input_tensor, group, async_op)


def _all_gather_base(output_tensor, input_tensor, group=None, async_op=False):
    warnings.warn("`torch.distributed._all_gather_base` is a private function and will be deprecated. Please use "
                  "`torch.distributed.all_gather_single` instead.", FutureWarning, stacklevel=2)
    return all_gather_single(output_tensor, input_tensor, group, async_op)


def all_gather_coalesced(output_tensor_lists, input_tensor_list, group=None, async_op=False):
    """Every rank's ``input_tensor_list`` into ``output_tensor_lists[rank]`` on every rank, in one collective.
    With ``async_op=True`` it returns a Future (of the output lists), as PyTorch's."""
    warnings.warn("`torch.distributed.all_gather_coalesced` will be deprecated. If you must use it, please revisit "
                  "our documentation later at https://pytorch.org/docs/main/distributed.html#collective-functions",
                  FutureWarning, stacklevel=2)
    if not _member(group, "all_gather_coalesced"):
        return None
    _check_tensor_list(input_tensor_list, "input_tensor_list")
    _ensure_same_dtype(input_tensor_list)
    if not isinstance(output_tensor_lists, list):
        raise TypeError("Invalid function argument: output_tensor_lists should be a list")
    for output_tensor_list in output_tensor_lists:
        _check_tensor_list(output_tensor_list, "output_tensor_lists")
        _ensure_same_dtype(output_tensor_list)
    g = _group(group)
    if len(output_tensor_lists) != g.size():
        raise RuntimeError(f"ProcessGroupMPI::allgather_coalesced: invalid output tensor list (expected "
                           f"{g.size()} lists, one per rank, got {len(output_tensor_lists)})")
    ins = [_real(_array(t, "input_tensor_list", write=False)) for t in input_tensor_list]
    outs = [[_real(_array(t, "output_tensor_lists")) for t in lst] for lst in output_tensor_lists]
    for r, lst in enumerate(outs):
        if len(lst) != len(ins) or any(o.dtype != i.dtype or o.size != i.size for o, i in zip(lst, ins)):
            raise RuntimeError(f"ProcessGroupMPI::allgather_coalesced: output_tensor_lists[{r}] must match "
                               f"input_tensor_list (tensors of the same sizes and dtype)")
    dtype = ins[0].dtype if ins else np.dtype(np.float32)
    send = np.concatenate([i.reshape(-1) for i in ins]) if ins else np.empty(0, dtype)
    recv = np.empty(g.size() * send.size, dtype)
    comm = g._comm
    flat_outputs = [t for lst in output_tensor_lists for t in lst]

    def finish():
        for r, lst in enumerate(outs):
            at = r * send.size
            for o in lst:
                o.reshape(-1)[...] = recv[at:at + o.size]
                at += o.size
        _bump(*flat_outputs)
    work = g._start("all_gather", send.size, _mpi._dtype_code(dtype), -1,
                    [lambda: comm.Iallgather(_mpi._buf(send), _mpi._buf(recv))], output_tensor_lists, finish)
    if async_op:
        return work.get_future()
    work.wait()
    return None


def reduce_scatter(output, input_list, op=ReduceOp.SUM, group=None, async_op=False):
    """Reduce the ranks' ``input_list``s elementwise; rank i gets entry i into ``output``."""
    if not _member(group, "reduce_scatter"):
        return None
    g = _group(group)
    ins = _arrays(input_list, "input_list")
    if len(ins) != g.size():
        raise RuntimeError(f"ProcessGroupMPI::reduce_scatter: invalid input tensor list (expected length "
                           f"{g.size()}, got {len(ins)})")
    out = _array(output, "output")
    for i in ins:
        _same(i, out, "reduce_scatter input")
    send = np.concatenate([i.reshape(-1) for i in ins]) if out.size else np.empty(0, out.dtype)
    return _reduce_scatter(g, send, out, output, op, async_op)


def reduce_scatter_single(output, input, op=ReduceOp.SUM, group=None, async_op=False):
    """Reduce ``input`` (the group's outputs concatenated) over the ranks; rank i gets chunk i."""
    _check_single_tensor(output, "output")
    _check_single_tensor(input, "input")
    if not _member(group, "reduce_scatter_single"):
        return None
    g = _group(group)
    out = _array(output, "output")
    a = _array(input, "input", write=False)
    if a.dtype != out.dtype:
        raise ValueError(f"Invalid usage of tensors with different dtypes: found {a.dtype} and {out.dtype}")
    if a.size != out.size * g.size():
        raise ValueError(f"input tensor must be the same size as output size times world size (hookgrad: "
                         f"{a.size} elements for {g.size()} x {out.size})")
    return _reduce_scatter(g, a.reshape(-1), out, output, op, async_op)


def reduce_scatter_tensor(output, input, op=ReduceOp.SUM, group=None, async_op=False):
    """Deprecated in PyTorch 2.13 for :func:`reduce_scatter_single` (a FutureWarning)."""
    warnings.warn("`torch.distributed.reduce_scatter_tensor` is deprecated. Please use "
                  "`torch.distributed.reduce_scatter_single` instead.", FutureWarning, stacklevel=2)
    return reduce_scatter_single(output, input, op, group, async_op)


def _reduce_scatter_base(output, input, op=ReduceOp.SUM, group=None, async_op=False):
    warnings.warn("`torch.distributed._reduce_scatter_base` is a private function and will be deprecated. Please "
                  "use `torch.distributed.reduce_scatter_single` instead.", FutureWarning, stacklevel=2)
    return reduce_scatter_single(output, input, op, group, async_op)


def _reduce_scatter(g, send, out, output, op, async_op):
    key = _op(op)
    mop, bytes_ = _mpi._mpi_op(key, out.dtype)
    comm = g._comm

    def finish():
        if key == _mpi.AVG:
            np.divide(out, g.size(), out=out, casting="unsafe")
        _bump(output)
    work = g._start("reduce_scatter", out.size, _mpi._dtype_code(out.dtype), -1,
                    [lambda: comm.Ireduce_scatter_block(_mpi._buf(send, bytes_), _mpi._buf(out, bytes_), mop)],
                    [output], finish)
    return _done(work, async_op)


def gather(tensor, gather_list=None, dst=None, group=None, async_op=False, group_dst=None):
    """Every rank's ``tensor`` into ``gather_list`` on rank ``dst`` (None elsewhere)."""
    if not _member(group, "gather"):
        return None
    g = _group(group)
    a = _array(tensor)
    root = _root(g, dst, group_dst, "dst")
    me = g.rank() == root
    if me:
        if gather_list is None or len(gather_list) != g.size():
            raise ValueError("Argument ``gather_list`` must be specified on destination rank.")
        outs = _arrays(gather_list, "gather_list")
        for o in outs:
            _same(o, a, "gather output")
    elif gather_list:
        raise ValueError("Argument ``gather_list`` must NOT be specified on non-destination ranks.")
    recv = np.empty((g.size(),) + a.shape, a.dtype) if me else None
    comm = g._comm

    def finish():
        if me:
            for o, r, t in zip(outs, recv, gather_list):
                o[...] = r.reshape(o.shape)
                _bump(t)
    work = g._start("gather", a.size, _mpi._dtype_code(a.dtype), root,
                    [lambda: comm.Igather(_mpi._buf(a), _mpi._buf(recv) if me else None, root)],
                    list(gather_list or []), finish)
    return _done(work, async_op)


def scatter(tensor, scatter_list=None, src=None, group=None, async_op=False, group_src=None):
    """Entry i of rank ``src``'s ``scatter_list`` into rank i's ``tensor``."""
    if not _member(group, "scatter"):
        return None
    g = _group(group)
    a = _array(tensor)
    root = _root(g, src, group_src, "src")
    me = g.rank() == root
    if me:
        if scatter_list is None or len(scatter_list) != g.size():
            raise ValueError("Argument ``scatter_list`` must be specified on source rank.")
        ins = _arrays(scatter_list, "scatter_list")
        for i in ins:
            _same(i, a, "scatter input")
        send = np.concatenate([i.reshape(-1) for i in ins])
    elif scatter_list:
        raise ValueError("Argument ``scatter_list`` must NOT be specified on non-source ranks.")
    comm = g._comm
    work = g._start("scatter", a.size, _mpi._dtype_code(a.dtype), root,
                    [lambda: comm.Iscatter(_mpi._buf(send) if me else None, _mpi._buf(a), root)], [tensor],
                    lambda: _bump(tensor))
    return _done(work, async_op)


def all_to_all(output_tensor_list, input_tensor_list, group=None, async_op=False):
    """Rank i's input j goes to rank j's output i."""
    if not _member(group, "all_to_all"):
        return None
    g = _group(group)
    ins = _arrays(input_tensor_list, "input_tensor_list")
    outs = _arrays(output_tensor_list, "output_tensor_list")
    if len(ins) != g.size() or len(outs) != g.size():
        raise RuntimeError(f"ProcessGroupMPI::alltoall: expected {g.size()} input and output tensors (one per "
                           f"rank), got {len(ins)} and {len(outs)}")
    dtypes = {x.dtype for x in ins + outs}
    if len(dtypes) > 1:
        raise ValueError(f"Invalid usage of tensors with different dtypes: found {sorted(map(str, dtypes))}")
    send = np.concatenate([i.reshape(-1) for i in ins]) if ins else np.empty(0)
    recv = np.empty(sum(o.size for o in outs), send.dtype)
    return _all_to_all(g, send, [i.size for i in ins], recv, [o.size for o in outs], outs, output_tensor_list,
                       async_op)


def all_to_all_single(output, input, output_split_sizes=None, input_split_sizes=None, group=None,
                      async_op=False):
    """``input``, split along dim 0 (evenly or by ``input_split_sizes``), one piece to each rank; the pieces
    received, in rank order, into ``output``."""
    if not _member(group, "all_to_all_single"):
        return None
    g = _group(group)
    a = _array(input, "input", write=False)
    out = _array(output, "output")
    n = g.size()
    row_in = a[0].size if a.ndim and a.shape[0] else (a.size // max(a.shape[0], 1) if a.ndim else 1)
    row_out = out[0].size if out.ndim and out.shape[0] else row_in

    def counts(splits, arr, row, what):
        if not splits:
            if arr.shape[0] % n:
                raise ValueError(f"hookgrad: all_to_all_single: the {what} tensor's dim 0 ({arr.shape[0]}) is "
                                 f"not divisible by the group size ({n})")
            return [arr.shape[0] // n * row] * n
        if len(splits) != n or sum(splits) != arr.shape[0]:
            raise ValueError(f"hookgrad: all_to_all_single: {what}_split_sizes {list(splits)} must have {n} "
                             f"entries summing to {arr.shape[0]}")
        return [int(s) * row for s in splits]
    return _all_to_all(g, a.reshape(-1), counts(input_split_sizes, a, row_in, "input"), out.reshape(-1),
                       counts(output_split_sizes, out, row_out, "output"), None, [output], async_op)


def _all_to_all(g, send, scounts, recv, rcounts, outs, tensors, async_op):
    comm = g._comm
    sdispl = np.concatenate([[0], np.cumsum(scounts)[:-1]]).astype(int).tolist()
    rdispl = np.concatenate([[0], np.cumsum(rcounts)[:-1]]).astype(int).tolist()
    bytes_ = not _mpi._native(send.dtype)
    k = send.itemsize if bytes_ else 1
    sb = _mpi._buf(send)
    rb = _mpi._buf(recv)
    spec_s = [sb[0], ([c * k for c in scounts], [d * k for d in sdispl]), sb[1]] if bytes_ else \
        [send, (scounts, sdispl)]
    spec_r = [rb[0], ([c * k for c in rcounts], [d * k for d in rdispl]), rb[1]] if bytes_ else \
        [recv, (rcounts, rdispl)]

    def finish():
        if outs is not None:
            for o, c, d in zip(outs, rcounts, rdispl):
                o.reshape(-1)[...] = recv[d:d + c]
        _bump(*tensors)
    work = g._start("all_to_all", -1, _mpi._dtype_code(send.dtype), -1,       # the counts may differ by rank
                    [lambda: comm.Ialltoallv(spec_s, spec_r)], list(tensors), finish)
    return _done(work, async_op)


def barrier(group=None, async_op=False, device_ids=None):
    """Wait until every rank of the group has reached the barrier."""
    if not _member(group, "barrier"):
        return None
    g = _group(group)
    work = g._start("barrier", 0, 0, -1, [], [], None)
    return _done(work, async_op)


def monitored_barrier(group=None, timeout=None, wait_all_ranks=False):
    """A barrier within ``timeout``; past it, the error names the ranks that did not arrive (those alive)."""
    g = _group(group)
    work = g._start("barrier", 0, 0, -1, [], [], None)
    work.wait(timeout)


# ------------------------------------------------------------------------------------------------
# point to point

_TAG_LIMIT = 32767


def _p2p_peer(g, rank, group_rank, name):
    if rank is None and group_rank is None:
        return None
    r = _root(g, rank, group_rank, name)
    if r == g.rank():
        raise ValueError(f"Invalid {name} rank: {name} must not be the same as the rank of the current process.")
    return r


def isend(tensor, dst=None, group=None, tag=0, group_dst=None):
    """Send ``tensor`` to rank ``dst``; returns a Work."""
    g = _group(group)
    a = _array(tensor)
    peer = _p2p_peer(g, dst, group_dst, "dst")
    if peer is None:
        raise ValueError("hookgrad: isend needs dst")
    comm = g._comm
    return g._p2p("send", lambda: comm.Isend(_mpi._buf(a), peer, tag % _TAG_LIMIT), [tensor], peer)


def irecv(tensor, src=None, group=None, tag=0, group_src=None):
    """Receive into ``tensor`` from rank ``src`` (any rank when None); returns a Work (source_rank())."""
    g = _group(group)
    a = _array(tensor)
    peer = _p2p_peer(g, src, group_src, "src")
    comm = g._comm
    MPI = _mpi.mpi()
    work = g._p2p("recv", lambda: comm.Irecv(_mpi._buf(a), MPI.ANY_SOURCE if peer is None else peer,
                                             tag % _TAG_LIMIT), [tensor], -1)
    if peer is not None:
        work._source = g._global(peer)
    _bump(tensor)
    return work


def send(tensor, dst=None, group=None, tag=0, group_dst=None):
    isend(tensor, dst, group, tag, group_dst).wait()


def recv(tensor, src=None, group=None, tag=0, group_src=None):
    """Receive into ``tensor``; returns the sender's rank."""
    work = irecv(tensor, src, group, tag, group_src)
    work.wait()
    return work._source


class P2POp:
    """One point-to-point operation for batch_isend_irecv: ``op`` is isend or irecv."""

    def __init__(self, op, tensor, peer=None, group=None, tag=0, group_peer=None):
        if op not in (isend, irecv):
            raise ValueError("Invalid ``op``. Expected ``op`` to be of type ``torch.distributed.isend`` or "
                             "``torch.distributed.irecv``.")
        self.op, self.tensor, self.peer, self.group, self.tag, self.group_peer = op, tensor, peer, group, tag, \
            group_peer


def batch_isend_irecv(p2p_op_list):
    """Start every operation of the list; one Work each."""
    if not isinstance(p2p_op_list, list) or not all(isinstance(p, P2POp) for p in p2p_op_list):
        raise ValueError("Invalid ``p2p_op_list``. Each op is expected to to be of type "
                         "``torch.distributed.P2POp``.")
    return [p.op(p.tensor, p.peer, p.group, p.tag) for p in p2p_op_list]


# ------------------------------------------------------------------------------------------------
# objects (pickled)

def _exchange_objects(g, obj):
    """Every rank's ``obj``, in group rank order."""
    mine = _mpi.dumps(obj)
    sizes = np.zeros(g.size(), np.int64)
    comm = g._comm
    g._start("object", 1, 0, -1, [lambda: comm.Iallgather(np.array([mine.size], np.int64), sizes)], [],
             None).wait()
    buf = np.empty(int(sizes.sum()), np.uint8)
    displ = np.concatenate([[0], np.cumsum(sizes)[:-1]]).astype(int).tolist()
    g._start("object", int(sizes.sum()), 0, -1,
             [lambda: comm.Iallgatherv(mine, [buf, (sizes.astype(int).tolist(), displ)])], [], None).wait()
    return [_mpi.loads(buf[d:d + int(s)]) for d, s in zip(displ, sizes)]


def all_gather_object(object_list, obj, group=None):
    """Every rank's picklable ``obj`` into ``object_list`` (one entry per rank)."""
    if not _member(group, "all_gather_object"):
        return
    g = _group(group)
    if len(object_list) != g.size():
        raise ValueError(f"hookgrad: all_gather_object: object_list has {len(object_list)} entries, the group "
                         f"has {g.size()} ranks")
    object_list[:] = _exchange_objects(g, obj)


def broadcast_object_list(object_list, src=None, group=None, device=None, group_src=None):
    """Rank ``src``'s ``object_list`` entries into every rank's list."""
    if not _member(group, "broadcast_object_list"):
        return
    g = _group(group)
    root = _root(g, src, group_src, "src")
    got = _exchange_objects(g, list(object_list) if g.rank() == root else None)[root]
    object_list[:] = got


def gather_object(obj, object_gather_list=None, dst=None, group=None, group_dst=None):
    if not _member(group, "gather_object"):
        return
    g = _group(group)
    root = _root(g, dst, group_dst, "dst")
    got = _exchange_objects(g, obj)
    if g.rank() == root:
        if object_gather_list is None or len(object_gather_list) != g.size():
            raise ValueError("Argument ``object_gather_list`` must be specified on destination rank.")
        object_gather_list[:] = got


def scatter_object_list(scatter_object_output_list, scatter_object_input_list=None, src=None, group=None,
                        group_src=None):
    if not _member(group, "scatter_object_list"):
        return
    g = _group(group)
    root = _root(g, src, group_src, "src")
    if not isinstance(scatter_object_output_list, list) or len(scatter_object_output_list) < 1:
        raise ValueError("Expected argument scatter_object_output_list to be a list of size at least 1.")
    got = _exchange_objects(g, list(scatter_object_input_list) if g.rank() == root else None)[root]
    scatter_object_output_list[0] = got[g.rank()]


def _object_peer(g, rank, group_rank, what):
    """The group rank of the peer of send/recv_object_list, as PyTorch resolves it."""
    if group_rank is not None:
        if rank is not None:
            raise ValueError("Can't specify both group_rank and global_rank")
    else:
        if rank is None:
            raise ValueError("Must specify global_rank or group_rank")
        group_rank = get_group_rank(g, rank)
    if g.rank() == group_rank:
        raise ValueError(f"Invalid {what} rank: {what} rank should not be the same as the rank of the current "
                         f"process.")
    return group_rank


def send_object_list(object_list, dst=None, group=None, device=None, group_dst=None, use_batch=False):
    """Send the picklable objects of ``object_list`` to rank ``dst``, which calls recv_object_list with a list
    of the same length (two messages, as PyTorch's: the pickled sizes, then the pickles)."""
    if group is GroupMember.NON_GROUP_MEMBER:
        raise ValueError("Invalid process group specified")     # (PyTorch's: the peer is not in the group)
    g = _group(group)
    peer = _object_peer(g, dst, group_dst, "destination")
    pickles = [_mpi.dumps(obj) for obj in object_list]
    sizes = np.array([p.size for p in pickles], np.int64)
    payload = np.concatenate(pickles) if pickles else np.empty(0, np.uint8)
    comm = g._comm
    for buf in (sizes, payload):
        g._p2p("send", lambda buf=buf: comm.Isend(buf, peer, 0), [], peer).wait()


def recv_object_list(object_list, src=None, group=None, device=None, group_src=None, use_batch=False):
    """Receive into ``object_list`` (its length: the number of objects sent) the objects rank ``src`` sent with
    send_object_list; returns the sender's global rank."""
    if group is GroupMember.NON_GROUP_MEMBER:
        raise ValueError("Invalid process group specified")
    g = _group(group)
    peer = _object_peer(g, src, group_src, "source")
    comm = g._comm
    sizes = np.zeros(len(object_list), np.int64)
    g._p2p("recv", lambda: comm.Irecv(sizes, peer, 0), [], peer).wait()
    payload = np.empty(int(sizes.sum()), np.uint8)
    g._p2p("recv", lambda: comm.Irecv(payload, peer, 0), [], peer).wait()
    if len(object_list) and not sizes.all():        # (a pickle is never empty: the sender's list was shorter)
        raise ValueError(f"hookgrad: recv_object_list: rank {g._global(peer)} sent fewer objects than the "
                         f"{len(object_list)} of object_list (the lists must have the same length)")
    at = 0
    for i, size in enumerate(sizes.tolist()):
        object_list[i] = _mpi.loads(payload[at:at + size])
        at += size
    return g._global(peer)


DistError = _mpi.DistError
DistBackendError = DistBackendError
DistNetworkError = _mpi.DistNetworkError
DistStoreError = _mpi.DistStoreError
