"""torch.distributed._tensor: the old name of torch.distributed.tensor."""
from ..tensor import *  # noqa: F401,F403
from ..tensor import DTensor, DeviceMesh, Partial, Placement, Replicate, Shard, distribute_tensor, init_device_mesh  # noqa: F401
