"""torch._vmap_internals: PyTorch's legacy vmap (``vmap`` warns that it is deprecated; ``_vmap``, which
gradcheck's batched checks use, does not), on torch.func's vmap (hookgrad/func)."""
import functools
import warnings

__all__ = ["vmap"]


def _vmap(func, in_dims=0, out_dims=0, allow_none_pass_through=False):
    from .func import _vmap as V
    from .func._batched import push_level, pop_level, BatchedTensor
    from .utils._pytree import tree_flatten, tree_unflatten

    @functools.wraps(func)
    def wrapped(*args):
        V._check_out_dims(out_dims, func)
        batch_size, flat_in_dims, flat_args, args_spec = V._process_batched_inputs(in_dims, args, func)
        level = push_level(batch_size, "legacy")       # (random ops raise the legacy vmap's error)
        try:
            batched = [a if d is None else BatchedTensor(a if d == 0 else a.movedim(d, 0), level)
                       for d, a in zip(flat_in_dims, flat_args)]
            outputs = func(*tree_unflatten(batched, args_spec))
            if not allow_none_pass_through:
                return V._unwrap_batched(outputs, out_dims, level, batch_size, func)
            flat, spec = tree_flatten(outputs)
            dims = [out_dims] * len(flat) if isinstance(out_dims, int) else list(out_dims)
            return tree_unflatten([None if o is None else V._remove_batch_dim(V._get_name(func), o, level,
                                                                               batch_size, d)
                                   for o, d in zip(flat, dims)], spec)
        finally:
            pop_level()
    return wrapped


def vmap(func, in_dims=0, out_dims=0):
    """Please use torch.vmap instead of this API."""
    warnings.warn("Please use `torch.vmap` instead of `torch._vmap_internals.vmap`.", FutureWarning, stacklevel=2)
    return _vmap(func, in_dims, out_dims)
