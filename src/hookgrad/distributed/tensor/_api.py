"""DTensor: a tensor laid out over a DeviceMesh. hookgrad's is the minimal real one: the metadata (mesh,
placements, global shape) and this rank's local tensor; moving between layouts (``redistribute``,
``full_tensor``, ``distribute_tensor``) runs hookgrad's MPI collectives. It is not a Tensor subclass: any other
operation on a DTensor raises NotImplementedError naming it (work on ``to_local()`` or ``full_tensor()``), and
gradients do not flow through ``redistribute`` (see docs/differences.md)."""
import math

from .. import distributed_c10d as c10d
from ..device_mesh import DeviceMesh, init_device_mesh
from .placement_types import Partial, Placement, Replicate, Shard

__all__ = ["DTensor", "distribute_tensor", "distribute_module", "ones", "empty", "full", "rand", "randn", "zeros"]

_REDUCE = {"sum": "SUM", "avg": "AVG", "max": "MAX", "min": "MIN", "product": "PRODUCT"}
_default_mesh = []


def _mesh(device_mesh):
    if device_mesh is not None:
        return device_mesh
    if not _default_mesh:
        if not c10d.is_initialized():
            c10d.init_process_group()
        _default_mesh.append(init_device_mesh("cpu", (c10d.get_world_size(),)))
    return _default_mesh[0]


def _placements(mesh, placements):
    if placements is None:
        return (Replicate(),) * mesh.ndim
    placements = tuple(placements)
    if len(placements) != mesh.ndim:
        raise ValueError(f"`placements` must have the same length as `device_mesh.ndim`! Found placements length: "
                         f"{len(placements)}, and device_mesh.ndim: {mesh.ndim}.")
    out = []
    for p in placements:
        if not isinstance(p, Placement):
            raise TypeError(f"placements must be Placement objects, got {p!r}")
        out.append(p)
    return tuple(out)


def _norm(p, ndim):
    """A Shard with its dim made non-negative."""
    if isinstance(p, Shard) and p.dim < 0:
        return type(p)(p.dim + ndim) if type(p) is Shard else p
    return p


def _local_from_full(full, mesh, placements):
    """This rank's local tensor of the global value ``full`` (held whole by every rank)."""
    local = full
    for i, p in enumerate(placements):
        k = mesh.get_local_rank(i)
        if isinstance(p, Shard):
            start, length = p._split(local.shape[p.dim], mesh.size(i))[k]
            local = local.narrow(p.dim, start, length)
        elif isinstance(p, Partial) and p.reduce_op == "sum" and k != 0:
            local = local.new_zeros(local.shape)
    return local.contiguous().clone() if local is full else local.contiguous()


def _gather(local, dim, mesh, i, global_size):
    """Concatenate the shards along tensor dim ``dim`` of mesh dimension ``i`` (uneven chunks padded for the
    all_gather, then cut back)."""
    from ... import _creation as C
    from ...primitives.join import cat
    n = mesh.size(i)
    chunks = Shard(dim)._split(global_size, n)
    most = max(length for _, length in chunks)
    shape = list(local.shape)
    shape[dim] = most
    padded = C.zeros(shape, dtype=local.dtype)
    padded.narrow(dim, 0, local.shape[dim]).copy_(local)
    parts = [C.zeros(shape, dtype=local.dtype) for _ in range(n)]
    c10d.all_gather(parts, padded, group=mesh.get_group(i))
    return cat([p.narrow(dim, 0, length) for p, (_, length) in zip(parts, chunks)], dim)


def _full_from_local(local, mesh, placements, shape):
    """The global value, on every rank, from each rank's local tensor."""
    # undo the mesh dims last to first; a Shard's global size at that step is what the earlier dims left
    partial_sizes = []
    cur = list(shape)
    for i, p in enumerate(placements):
        partial_sizes.append(list(cur))
        if isinstance(p, Shard):
            k = mesh.get_local_rank(i)
            cur[p.dim] = p._split(cur[p.dim], mesh.size(i))[k][1]
    value = local
    for i in reversed(range(len(placements))):
        p = placements[i]
        if isinstance(p, Shard):
            value = _gather(value, p.dim, mesh, i, partial_sizes[i][p.dim])
        elif isinstance(p, Partial):
            value = value.clone()
            c10d.all_reduce(value, op=getattr(c10d.ReduceOp, _REDUCE[p.reduce_op]), group=mesh.get_group(i))
    return value


class DTensor:
    """A distributed tensor: ``placements[i]`` says how the global value of ``shape`` is laid out along mesh
    dimension i; ``to_local()`` is this rank's part."""
    __slots__ = ("_local_tensor", "_mesh", "_placements", "_shape")

    def __init__(self, local_tensor, device_mesh, placements, shape):
        object.__setattr__(self, "_local_tensor", local_tensor)
        object.__setattr__(self, "_mesh", device_mesh)
        object.__setattr__(self, "_placements", tuple(placements))
        object.__setattr__(self, "_shape", tuple(shape))

    @staticmethod
    def from_local(local_tensor, device_mesh=None, placements=None, *, run_check=False, shape=None, stride=None):
        """A DTensor from each rank's local tensor. Without ``shape`` the shards are taken as even (the global size
        of a sharded dim is the local one times the mesh size, as in PyTorch); ``run_check`` broadcasts replicated
        values from the first rank of each mesh dimension."""
        from ..._tensor import Size
        mesh = _mesh(device_mesh)
        placements = tuple(_norm(p, local_tensor.ndim) for p in _placements(mesh, placements))
        if run_check:
            for i, p in enumerate(placements):
                if isinstance(p, Replicate):
                    local_tensor = local_tensor.clone()
                    c10d.broadcast(local_tensor, src=mesh._dim_ranks(i)[0], group=mesh.get_group(i))
        if shape is None:
            shape = list(local_tensor.shape)
            for i, p in enumerate(placements):
                if isinstance(p, Shard):
                    shape[p.dim] *= mesh.size(i)
        return DTensor(local_tensor, mesh, placements, Size(shape))

    def to_local(self, *, grad_placements=None):
        """This rank's local tensor (the object itself: its graph is kept)."""
        return self._local_tensor

    def full_tensor(self, *, grad_placements=None):
        """The global value on every rank (an all_gather per sharded mesh dimension, an all_reduce per partial)."""
        return _full_from_local(self._local_tensor, self._mesh, self._placements, self._shape)

    def redistribute(self, device_mesh=None, placements=None, *, async_op=False, forward_dtype=None,
                     backward_dtype=None):
        """The same global value laid out by ``placements`` (on the same mesh)."""
        mesh = self._mesh if device_mesh is None else device_mesh
        if mesh != self._mesh:
            raise NotImplementedError("DTensor.redistribute across different device meshes is not supported")
        placements = tuple(_norm(p, len(self._shape)) for p in _placements(mesh, placements))
        for p in placements:
            if isinstance(p, Partial) and p not in self._placements:
                raise RuntimeError(f"redistribute to {p} from {self._placements} is not supported (only a Partial "
                                   "DTensor stays Partial)")
        if placements == self._placements:
            return self
        full = self.full_tensor()
        return DTensor(_local_from_full(full, mesh, placements), mesh, placements, self._shape)

    @property
    def placements(self):
        return self._placements

    @property
    def device_mesh(self):
        return self._mesh

    @property
    def shape(self):
        from ..._tensor import Size
        return Size(self._shape)

    def size(self, dim=None):
        return self.shape if dim is None else self._shape[dim]

    def dim(self):
        return len(self._shape)

    ndim = property(dim)

    def numel(self):
        return math.prod(self._shape)

    def stride(self, dim=None):
        s = tuple(math.prod(self._shape[i + 1:]) for i in range(len(self._shape)))
        return s if dim is None else s[dim]

    def __len__(self):
        return self._shape[0]

    @property
    def dtype(self):
        return self._local_tensor.dtype

    @property
    def device(self):
        return self._local_tensor.device

    @property
    def requires_grad(self):
        return self._local_tensor.requires_grad

    def requires_grad_(self, requires_grad=True):
        self._local_tensor.requires_grad_(requires_grad)
        return self

    def __repr__(self):
        return (f"DTensor(local_tensor={self._local_tensor!r}, device_mesh={self._mesh!r}, "
                f"placements={self._placements!r})")

    def __getattr__(self, name):
        if name[:2] == "__":
            raise AttributeError(name)
        raise NotImplementedError(f"DTensor.{name} is not implemented in hookgrad: its DTensor holds the local "
                                  "tensor and the layout (to_local, full_tensor, redistribute and the metadata); "
                                  "compute on to_local() or full_tensor()")

    def __setattr__(self, name, value):
        raise NotImplementedError(f"setting DTensor.{name} is not implemented in hookgrad")


def _unsupported(op):
    def f(self, *args, **kwargs):
        raise NotImplementedError(f"DTensor.{op} (aten op on a DTensor) is not implemented in hookgrad: compute on "
                                  "to_local() or full_tensor()")
    f.__name__ = op
    return f


for _op in ("__add__", "__radd__", "__sub__", "__rsub__", "__mul__", "__rmul__", "__truediv__", "__rtruediv__",
            "__matmul__", "__rmatmul__", "__pow__", "__neg__", "__getitem__", "__setitem__", "__iter__", "__bool__",
            "__lt__", "__le__", "__gt__", "__ge__", "__float__", "__int__", "__iadd__", "__imul__"):
    setattr(DTensor, _op, _unsupported(_op))
del _op


def distribute_tensor(tensor, device_mesh=None, placements=None, *, src_data_rank=0):
    """Lay ``tensor`` out over ``device_mesh``: the value of group rank ``src_data_rank`` along each mesh dimension
    is broadcast (None: each rank's own value is used as it is), then each rank keeps its part."""
    mesh = _mesh(device_mesh)
    placements = tuple(_norm(p, tensor.ndim) for p in _placements(mesh, placements))
    full = tensor.detach().clone()
    if src_data_rank is not None:
        for i in range(mesh.ndim):
            c10d.broadcast(full, src=mesh._dim_ranks(i)[src_data_rank], group=mesh.get_group(i))
    local = _local_from_full(full, mesh, placements)
    if tensor.requires_grad:
        local.requires_grad_(True)
    return DTensor(local, mesh, placements, tensor.shape)


def distribute_module(module, device_mesh=None, partition_fn=None, input_fn=None, output_fn=None):
    raise NotImplementedError("torch.distributed.tensor.distribute_module is not implemented in hookgrad: its "
                              "DTensor is not a Tensor, so it cannot be a module's parameter")


def _factory(fn):
    def make(*size, device_mesh=None, placements=None, dtype=None, requires_grad=False, **kwargs):
        from ..._creation import size_args
        t = fn(size_args(size), dtype=dtype, **kwargs)
        d = distribute_tensor(t, device_mesh, placements)
        if requires_grad:
            d.requires_grad_(True)
        return d
    make.__name__ = fn.__name__
    return make


def _factories():
    from ... import _creation as C
    return {n: _factory(getattr(C, n)) for n in ("ones", "zeros", "empty", "rand", "randn")}


globals().update(_factories())


def full(size, fill_value, *, device_mesh=None, placements=None, dtype=None, requires_grad=False, **kwargs):
    from ... import _creation as C
    return _factory(lambda s, dtype=None: C.full(s, fill_value, dtype=dtype))(*size, device_mesh=device_mesh,
                                                                            placements=placements, dtype=dtype,
                                                                            requires_grad=requires_grad)
