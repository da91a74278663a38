"""torch.distributed.fsdp: hookgrad has no fully sharded data parallelism (its parameters are plain Tensors, and its
DTensor cannot be one). The configuration types are PyTorch's (enums and dataclasses, usable as values);
``FullyShardedDataParallel(...)`` and ``fully_shard(...)`` raise NotImplementedError, so nothing is ever an FSDP
module (``isinstance`` checks are False). Use DistributedDataParallel."""
import enum
from dataclasses import dataclass
from typing import Any, Optional

__all__ = ["BackwardPrefetch", "CPUOffload", "FullOptimStateDictConfig", "FullStateDictConfig",
           "FullyShardedDataParallel", "LocalOptimStateDictConfig", "LocalStateDictConfig", "MixedPrecision",
           "OptimStateDictConfig", "OptimStateKeyType", "ShardedOptimStateDictConfig", "ShardedStateDictConfig",
           "ShardingStrategy", "StateDictConfig", "StateDictSettings", "StateDictType", "CPUOffloadPolicy",
           "FSDPModule", "fully_shard", "MixedPrecisionPolicy", "OffloadPolicy", "register_fsdp_forward_method"]

_NO_FSDP = ("is not implemented in hookgrad: it has no fully sharded data parallelism (use "
            "torch.nn.parallel.DistributedDataParallel)")


class ShardingStrategy(enum.Enum):
    FULL_SHARD = 1
    SHARD_GRAD_OP = 2
    NO_SHARD = 3
    HYBRID_SHARD = 4
    _HYBRID_SHARD_ZERO2 = 5


class BackwardPrefetch(enum.Enum):
    BACKWARD_PRE = 1
    BACKWARD_POST = 2


class StateDictType(enum.Enum):
    FULL_STATE_DICT = 1
    LOCAL_STATE_DICT = 2
    SHARDED_STATE_DICT = 3


class OptimStateKeyType(enum.Enum):
    PARAM_NAME = 1
    PARAM_ID = 2


@dataclass
class MixedPrecision:
    param_dtype: Optional[Any] = None
    reduce_dtype: Optional[Any] = None
    buffer_dtype: Optional[Any] = None
    keep_low_precision_grads: bool = False
    cast_forward_inputs: bool = False
    cast_root_forward_inputs: bool = True


@dataclass
class CPUOffload:
    offload_params: bool = False


@dataclass
class StateDictConfig:
    offload_to_cpu: bool = False


@dataclass
class FullStateDictConfig(StateDictConfig):
    rank0_only: bool = False


@dataclass
class LocalStateDictConfig(StateDictConfig):
    pass


@dataclass
class ShardedStateDictConfig(StateDictConfig):
    _use_dtensor: bool = False


@dataclass
class OptimStateDictConfig:
    offload_to_cpu: bool = True


@dataclass
class FullOptimStateDictConfig(OptimStateDictConfig):
    rank0_only: bool = False


@dataclass
class LocalOptimStateDictConfig(OptimStateDictConfig):
    offload_to_cpu: bool = False


@dataclass
class ShardedOptimStateDictConfig(OptimStateDictConfig):
    _use_dtensor: bool = False


@dataclass
class StateDictSettings:
    state_dict_type: StateDictType
    state_dict_config: StateDictConfig
    optim_state_dict_config: OptimStateDictConfig


@dataclass(frozen=True)
class MixedPrecisionPolicy:
    param_dtype: Optional[Any] = None
    reduce_dtype: Optional[Any] = None
    output_dtype: Optional[Any] = None
    cast_forward_inputs: bool = True


@dataclass
class OffloadPolicy:
    pass


@dataclass
class CPUOffloadPolicy(OffloadPolicy):
    pin_memory: bool = True


class FullyShardedDataParallel:
    """FSDP's module wrapper: not available (see the module docstring)."""

    def __init__(self, module, *args, **kwargs):
        raise NotImplementedError(f"torch.distributed.fsdp.FullyShardedDataParallel {_NO_FSDP}")


class FSDPModule:
    """The class ``fully_shard`` mixes into a module: nothing is one in hookgrad."""


def fully_shard(module, *, mesh=None, reshard_after_forward=None, shard_placement_fn=None, mp_policy=None,
                offload_policy=None, ignored_params=None, dp_mesh_dims=None):
    raise NotImplementedError(f"torch.distributed.fsdp.fully_shard {_NO_FSDP}")


def register_fsdp_forward_method(module, method_name):
    raise NotImplementedError(f"torch.distributed.fsdp.register_fsdp_forward_method {_NO_FSDP}")


from ... import _missing  # noqa: E402
__getattr__ = _missing.module_getattr(__name__, "torch.distributed.fsdp")
