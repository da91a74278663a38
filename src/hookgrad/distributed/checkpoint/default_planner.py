"""torch.distributed.checkpoint.default_planner: DCP's planners (making one raises: no distributed checkpointing)."""
from ._api import _Storage


class DefaultSavePlanner(_Storage):
    pass


class DefaultLoadPlanner(_Storage):
    pass
