"""torch.distributed.device_mesh: a DeviceMesh names the ranks a DTensor lives on (hookgrad: CPU processes over
MPI) as an n-dimensional array; each mesh dimension has the process group of the ranks along it."""
import math

from . import distributed_c10d as c10d

__all__ = ["init_device_mesh", "DeviceMesh"]


def _check_device_type(device_type):
    if device_type != "cpu":
        from .._errors import no_device
        raise no_device(device_type)


class DeviceMesh:
    """``DeviceMesh(device_type, mesh, *, mesh_dim_names=None)``: ``mesh`` (a tensor or nested list of ranks) lays
    out the ranks of the default process group; this process must be one of them."""

    def __init__(self, device_type, mesh, *, mesh_dim_names=None, _init_backend=True):
        import numpy as np
        _check_device_type(device_type)
        self.device_type = device_type
        arr = np.asarray(mesh._data if hasattr(mesh, "_data") else mesh, dtype=np.int64)
        if arr.ndim == 0:
            raise ValueError("DeviceMesh: mesh must be at least one dimensional")
        self._ranks = arr
        self.mesh_dim_names = tuple(mesh_dim_names) if mesh_dim_names is not None else None
        if self.mesh_dim_names is not None and len(self.mesh_dim_names) != arr.ndim:
            raise RuntimeError(f"mesh_dim_names {self.mesh_dim_names} should have the same length as mesh dims "
                               f"{arr.ndim}")
        self._groups = {}

    @property
    def mesh(self):
        from .._creation import tensor
        return tensor(self._ranks.tolist())

    @property
    def ndim(self):
        return self._ranks.ndim

    @property
    def shape(self):
        return tuple(self._ranks.shape)

    def size(self, mesh_dim=None):
        return int(self._ranks.size) if mesh_dim is None else int(self._ranks.shape[mesh_dim])

    def _coordinate(self):
        import numpy as np
        where = np.argwhere(self._ranks == c10d.get_rank())
        return tuple(int(i) for i in where[0]) if len(where) else None

    def get_coordinate(self):
        """This rank's index in the mesh (None when it is not in it)."""
        c = self._coordinate()
        return list(c) if c is not None else None

    def get_rank(self):
        return c10d.get_rank()

    def _dim(self, mesh_dim):
        if isinstance(mesh_dim, str):
            if self.mesh_dim_names is None or mesh_dim not in self.mesh_dim_names:
                raise KeyError(f"Mesh dimension '{mesh_dim}' does not exist. Available mesh dimensions are: "
                               f"mesh_dim_names={self.mesh_dim_names}")
            return self.mesh_dim_names.index(mesh_dim)
        if mesh_dim is None:
            if self.ndim != 1:
                raise RuntimeError(f"Found the DeviceMesh have {self.ndim} dimensions. Optional kwarg `mesh_dim` "
                                   "needs to be specified when device_mesh.ndim > 1.")
            return 0
        return mesh_dim

    def get_local_rank(self, mesh_dim=None):
        """This rank's index along ``mesh_dim``."""
        return self._coordinate()[self._dim(mesh_dim)]

    def _dim_ranks(self, dim):
        """The ranks along mesh dimension ``dim`` through this rank."""
        import numpy as np
        coord = list(self._coordinate())
        coord[dim] = slice(None)
        return [int(r) for r in np.asarray(self._ranks[tuple(coord)]).reshape(-1)]

    def get_group(self, mesh_dim=None):
        """The process group of the ranks along ``mesh_dim`` (the default group when it holds them all)."""
        dim = self._dim(mesh_dim)
        if dim not in self._groups:
            ranks = self._dim_ranks(dim)
            world = c10d.get_world_size()
            self._groups[dim] = c10d.group.WORLD if ranks == list(range(world)) else c10d.new_group(ranks)
        return self._groups[dim]

    def get_all_groups(self):
        return [self.get_group(d) for d in range(self.ndim)]

    def __getitem__(self, mesh_dim_names):
        names = (mesh_dim_names,) if isinstance(mesh_dim_names, str) else tuple(mesh_dim_names)
        dims = [self._dim(n) for n in names]
        if dims == list(range(self.ndim)):
            return self
        import numpy as np
        coord = list(self._coordinate())
        index = tuple(slice(None) if d in dims else coord[d] for d in range(self.ndim))
        return DeviceMesh(self.device_type, np.asarray(self._ranks[index]), mesh_dim_names=names)

    def __eq__(self, other):
        return isinstance(other, DeviceMesh) and self.device_type == other.device_type and \
            self._ranks.shape == other._ranks.shape and bool((self._ranks == other._ranks).all()) and \
            self.mesh_dim_names == other.mesh_dim_names

    def __hash__(self):
        return hash((self.device_type, self._ranks.tobytes(), self._ranks.shape, self.mesh_dim_names))

    def __repr__(self):
        shape = ", ".join(f"{n}={s}" for n, s in zip(self.mesh_dim_names, self.shape)) if self.mesh_dim_names \
            else ", ".join(str(s) for s in self.shape) + ("," if self.ndim == 1 else "")
        strides = [math.prod(self.shape[i + 1:]) for i in range(self.ndim)]
        stride = ", ".join(str(s) if n > 1 else "()" for s, n in zip(strides, self.shape))
        return f"DeviceMesh(({shape}), '{self.device_type}', stride=({stride}{',' if self.ndim == 1 else ''}))"


def init_device_mesh(device_type, mesh_shape, *, mesh_dim_names=None, backend_override=None):
    """A DeviceMesh of ``mesh_shape`` over the ranks of the default process group, in order."""
    import numpy as np
    _check_device_type(device_type)
    if mesh_dim_names is not None and len(set(mesh_dim_names)) != len(mesh_dim_names):
        raise RuntimeError(f"Each mesh_dim_name must be unique. Found repeated mesh_dim_name in mesh_dim_names "
                           f"{mesh_dim_names}")
    if mesh_dim_names is not None and len(mesh_shape) != len(mesh_dim_names):
        raise RuntimeError(f"mesh_shape and mesh_dim_names should have same length! Found len(mesh_dim_names): "
                           f"{len(mesh_dim_names)} and len(mesh_shape):{len(mesh_shape)}.")
    if not c10d.is_initialized():
        c10d.init_process_group()
    world = c10d.get_world_size()
    n = math.prod(mesh_shape)
    if n > world:
        raise RuntimeError(f"Mesh should not be bigger than default world size {world}, but found {n} ranks!")
    return DeviceMesh(device_type, np.arange(n).reshape(tuple(mesh_shape)), mesh_dim_names=mesh_dim_names)
