"""torch.distributed.fsdp.fully_sharded_data_parallel: FSDP's names (see torch.distributed.fsdp)."""
from . import (BackwardPrefetch, CPUOffload, FullOptimStateDictConfig, FullStateDictConfig,  # noqa: F401
               FullyShardedDataParallel, LocalOptimStateDictConfig, LocalStateDictConfig, MixedPrecision,
               OptimStateDictConfig, OptimStateKeyType, ShardedOptimStateDictConfig, ShardedStateDictConfig,
               ShardingStrategy, StateDictConfig, StateDictSettings, StateDictType)
