"""torch.distributed.algorithms: DDP's communication hooks (``ddp_comm_hooks``) and Join for uneven inputs."""
from .join import Join, Joinable, JoinHook  # noqa: F401
