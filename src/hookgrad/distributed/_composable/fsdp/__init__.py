"""torch.distributed._composable.fsdp: the old name of FSDP2's API (see torch.distributed.fsdp)."""
from ...fsdp import (CPUOffloadPolicy, FSDPModule, MixedPrecisionPolicy, OffloadPolicy, fully_shard,  # noqa: F401
                     register_fsdp_forward_method)
