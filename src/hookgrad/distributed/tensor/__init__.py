"""torch.distributed.tensor: DTensor over hookgrad's MPI process groups (see _api.py for what it covers)."""
from . import placement_types  # noqa: F401
from ._api import DTensor, distribute_module, distribute_tensor, empty, full, ones, rand, randn, zeros  # noqa: F401
from .placement_types import Partial, Placement, Replicate, Shard  # noqa: F401
from ..device_mesh import DeviceMesh, init_device_mesh  # noqa: F401

__all__ = ["DTensor", "distribute_tensor", "distribute_module", "Shard", "Replicate", "Partial", "Placement", "ones",
           "empty", "full", "rand", "randn", "zeros"]

from ... import _missing  # noqa: E402
__getattr__ = _missing.module_getattr(__name__, "torch.distributed.tensor")
