"""torch.distributed.fsdp.api: FSDP's configuration types (see torch.distributed.fsdp)."""
from . import (BackwardPrefetch, CPUOffload, FullOptimStateDictConfig, FullStateDictConfig,  # noqa: F401
               LocalOptimStateDictConfig, LocalStateDictConfig, MixedPrecision, OptimStateDictConfig,
               ShardedOptimStateDictConfig, ShardedStateDictConfig, ShardingStrategy, StateDictConfig,
               StateDictSettings, StateDictType)
