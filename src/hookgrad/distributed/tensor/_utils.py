"""torch.distributed.tensor._utils: where this rank's shard sits in the global tensor."""


def compute_local_shape_and_global_offset(global_shape, mesh, placements, skip_offset=False):
    """``(local_shape, global_offset)`` of this rank's part of a tensor of ``global_shape`` laid out by
    ``placements`` over ``mesh`` (torch.chunk's split per Shard); ``((0,), ())`` for a rank outside the mesh."""
    from .placement_types import Shard
    if mesh._coordinate() is None:
        return ((0,), ())
    shape, offset = list(global_shape), [0] * len(global_shape)
    for i, p in enumerate(placements):
        if isinstance(p, Shard):
            d = p.dim % len(shape)
            start, length = p._split(shape[d], mesh.size(i))[mesh.get_local_rank(i)]
            offset[d] += start
            shape[d] = length
    return tuple(shape), tuple(offset)
