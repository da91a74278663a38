"""Forward AD with batched tangents: ``fwAD.make_dual(primal, tangent)`` where ``tangent`` is a vmap
BatchedTensor (gradcheck's check_batched_forward_grad, jacfwd-style code), as PyTorch's functorch allows.

autograd/forward_ad.py sits below vmap (it cannot import it); this module fills its ``_vmap_support`` slot with
the few things it needs to know about BatchedTensors:

- a primitive's tangent formula runs once per sample of a batched tangent (the formulas compute on hookgrad
  Tensors), the results stacked into a BatchedTensor of the same level;
- a view's tangent is the same view of the input's batched tangent, made by the view's replay function on the
  BatchedTensor, so that vmap's rules give it PyTorch's semantics (a view of the batched value; as_strided's
  offsets counted per sample, with its bounds check);
- a custom Function's ``jvp`` sees the BatchedTensors themselves (one call, as PyTorch), so random ops in it hit
  vmap's randomness check;
- make_dual's layout rule (the tangent is kept when its per-sample strides are the primal's, else copied into
  the primal's layout; a batched tangent's storage size is not checked) and PyTorch's
  ``_new_zeros_with_same_feature_meta`` for the tangent a base gets when a view of it is modified in place.
"""
from ._batched import BatchedTensor, level_info


def is_batched(t):
    return type(t) is BatchedTensor


def top_level(tangents):
    level = None
    for t in tangents:
        if type(t) is BatchedTensor and (level is None or t._level > level):
            level = t._level
    return level


def per_sample(level, fn, tangents):
    """``fn(tangents)`` (a list of per-output tangents or None) run once per sample of the tangents batched at
    ``level``; the results stacked into BatchedTensors of that level."""
    import hookgrad
    size = level_info(level)[1]
    rows = []
    for b in range(size):
        rows.append(fn([t._value.select(0, b) if type(t) is BatchedTensor and t._level == level else t
                        for t in tangents]))
    res = []
    for k in range(len(rows[0]) if rows else 0):
        col = [r[k] for r in rows]
        if all(c is None for c in col):
            res.append(None)
            continue
        ref = next(c for c in col if c is not None)
        col = [hookgrad.zeros_like(ref) if c is None else c for c in col]
        res.append(BatchedTensor(hookgrad.stack(col), level))
    return res


def physical(t):
    """The hookgrad Tensor under a (possibly nested) BatchedTensor."""
    while type(t) is BatchedTensor:
        t = t._value
    return t


def _feature_strides(t):
    """The per-sample strides (elements) of a batched tangent: the physical strides behind its batch dims."""
    n = 0
    while type(t) is BatchedTensor:
        t = t._value
        n += 1
    return tuple(t.stride())[n:], n


def laid_out_like(tangent, primal):
    """make_dual: the batched tangent as it is when its per-sample strides are the primal's (PyTorch skips the
    storage-size check for batched tangents), else a copy in the primal's layout."""
    strides, _ = _feature_strides(tangent)
    if strides == tuple(primal.stride()):
        return tangent
    res = new_zeros_with_same_feature_meta(tangent, primal)
    res.copy_(tangent)
    return res


def new_zeros_with_same_feature_meta(tangent, target):
    """A batched zero tensor with ``tangent``'s batch dims in front and ``target``'s sizes and strides behind them
    (PyTorch's aten::_new_zeros_with_same_feature_meta under vmap)."""
    import hookgrad
    levels = []
    t = tangent
    while type(t) is BatchedTensor:
        levels.append(t._level)
        t = t._value
    batch = tuple(t.shape[:len(levels)])
    phys = hookgrad.ops.aten._new_zeros_with_same_feature_meta(t.new_empty(batch + tuple(target.shape)).detach(),
                                                                target.detach(), self_num_batch_dims=len(batch))
    if phys.is_contiguous() and phys.storage_offset() == 0 and _storage_numel(phys) == phys.numel():
        phys = phys.clone()     # the whole storage, in order: a tensor of its own (the base of the views made of it)
    for lv in reversed(levels):
        phys = BatchedTensor(phys, lv)
    return phys


def view_of_tangent(fn, tangent):
    """A view's tangent: its replay function run on the input's batched tangent (vmap's view rules)."""
    return fn(tangent)


def _storage_numel(t):
    return t.untyped_storage().nbytes() // t.element_size()


def same_feature_meta(t, other):
    """PyTorch's has_same_meta for a batched tangent: its per-sample sizes and strides are ``other``'s (the
    storage size is not compared for a batched tangent)."""
    strides, _ = _feature_strides(t)
    return tuple(t.shape) == tuple(other.shape) and strides == tuple(other.stride())


def view_tangent(fn, tangent):
    """The view ``fn`` (a replay function on plain Tensors) of a batched tangent: ``fn`` run on the first sample
    gives the view's geometry, which the physical batch then takes with its own batch stride in front (PyTorch's
    view batching: each sample's view is the same view of that sample; as_strided offsets count from the batch's
    storage offset, and a view reaching outside its sample raises). None if the tangent is batched at several
    levels or ``fn`` makes no view of the sample (the per-sample tangent is kept)."""
    from ._rules import batched_as_strided
    levels = []
    v = tangent
    while type(v) is BatchedTensor:         # (nested vmaps: the physical value has one batch dim per level)
        levels.append(v._level)
        v = v._value
    n = len(levels)
    if 0 in tuple(v.shape[:n]):
        return None
    first = v
    for _ in range(n):
        first = first.select(0, 0)
    r = fn(first)
    if not isinstance(r, type(first)) or r.untyped_storage().data_ptr() != v.untyped_storage().data_ptr():
        return None
    out = batched_as_strided(v, tuple(r.shape), tuple(r.stride()), r.storage_offset(), n)
    for lv in reversed(levels):
        out = BatchedTensor(out, lv)
    return out
