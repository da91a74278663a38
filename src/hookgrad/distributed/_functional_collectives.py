"""torch.distributed._functional_collectives: collectives that return their result (hookgrad's complete before
they return, so ``wait_tensor`` has nothing to wait for)."""
from . import distributed_c10d as c10d

_OPS = {"sum": "SUM", "avg": "AVG", "max": "MAX", "min": "MIN", "product": "PRODUCT"}


def _group(group):
    from .device_mesh import DeviceMesh
    if isinstance(group, DeviceMesh):
        return group.get_group()
    if isinstance(group, tuple) and len(group) == 2 and isinstance(group[0], DeviceMesh):
        return group[0].get_group(group[1])
    if isinstance(group, list):
        if group == list(range(c10d.get_world_size())):
            return c10d.group.WORLD
        raise NotImplementedError("hookgrad's functional collectives take a process group or a DeviceMesh (a list "
                                  "of ranks only when it is every rank)")
    return group


def wait_tensor(tensor):
    """The result of a functional collective, once it is complete: it already is."""
    return tensor


def all_reduce(self, reduceOp, group, tag=""):
    out = self.clone()
    c10d.all_reduce(out, op=getattr(c10d.ReduceOp, _OPS[reduceOp.lower()]), group=_group(group))
    return out


def all_gather_tensor(self, gather_dim, group, tag=""):
    from ..primitives.join import cat
    g = _group(group)
    parts = [self.new_empty(self.shape) for _ in range(c10d.get_world_size(g))]
    c10d.all_gather(parts, self.contiguous(), group=g)
    return cat(parts, gather_dim)


def reduce_scatter_tensor(self, reduceOp, scatter_dim, group, tag=""):
    g = _group(group)
    total = all_reduce(self, reduceOp, g)
    return total.chunk(c10d.get_world_size(g), scatter_dim)[c10d.get_rank(g)].contiguous()


def all_to_all_single(self, output_split_sizes, input_split_sizes, group, tag=""):
    """Rows of ``self`` split by ``input_split_sizes`` go to the ranks in order; the result stacks what each rank
    sent here (``output_split_sizes`` rows from each; None: even splits)."""
    g = _group(group)
    rows = sum(output_split_sizes) if output_split_sizes is not None else self.shape[0]
    out = self.new_empty((rows,) + tuple(self.shape[1:]))
    c10d.all_to_all_single(out, self.contiguous(), output_split_sizes, input_split_sizes, group=g)
    return out


def _all_to_all_function():
    from ..autograd import Function

    class _AllToAllSingle(Function):
        """all_to_all_single with its gradient: the reverse exchange (the split sizes swapped)."""

        @staticmethod
        def forward(ctx, x, output_split_sizes, input_split_sizes, group):
            ctx.splits, ctx.group = (output_split_sizes, input_split_sizes), group
            return all_to_all_single(x, output_split_sizes, input_split_sizes, group)

        @staticmethod
        def backward(ctx, g):
            out_sizes, in_sizes = ctx.splits
            return all_to_all_single(g, in_sizes, out_sizes, ctx.group), None, None, None
    return _AllToAllSingle


def all_to_all_single_autograd(self, output_split_sizes, input_split_sizes, group, tag=""):
    """all_to_all_single that backpropagates (the gradient takes the reverse route)."""
    return _all_to_all_function().apply(self, output_split_sizes, input_split_sizes, group)


from .. import _missing  # noqa: E402
__getattr__ = _missing.module_getattr(__name__, "torch.distributed._functional_collectives")
