"""torch.func.vmap: argument checks and the wrapping/unwrapping of the batch (PyTorch's _functorch/vmap.py
behaviour, errors included); the ops themselves are batched by func/_batched.py and func/_rules.py."""
import functools
import itertools

from ..utils._pytree import tree_flatten, tree_unflatten, tree_map_, _broadcast_to_and_flatten
from ._batched import BatchedTensor, push_level, pop_level, level_info

__all__ = ["vmap"]


def _is_tensor(x):
    from .._tensor import Tensor
    return isinstance(x, (Tensor, BatchedTensor))


def _get_name(func):
    if hasattr(func, "__name__"):
        return func.__name__
    if isinstance(func, functools.partial):
        return f"functools.partial({_get_name(func.func)}, ...)"
    return repr(func)


def _check_randomness_arg(randomness):
    if randomness not in ["error", "different", "same"]:
        raise RuntimeError(f"Only allowed values for randomness are 'error', 'different', or 'same'. Got {randomness}")


def _validate_and_get_batch_size(flat_in_dims, flat_args):
    sizes = [arg.size(d) for d, arg in zip(flat_in_dims, flat_args) if d is not None]
    if len(sizes) == 0:
        raise ValueError("vmap: Expected at least one Tensor to vmap over")
    if any(s != sizes[0] for s in sizes):
        raise ValueError(f"vmap: Expected all tensors to have the same size in the mapped dimension, got sizes "
                         f"{sizes} for the mapped dimension")
    return sizes[0]


def _process_batched_inputs(in_dims, args, func):
    name = _get_name(func)
    if not isinstance(in_dims, int) and not isinstance(in_dims, tuple):
        raise ValueError(f"vmap({name}, in_dims={in_dims}, ...)(<inputs>): expected `in_dims` to be int or a "
                         f"(potentially nested) tuple matching the structure of inputs, got: {type(in_dims)}.")
    if len(args) == 0:
        raise ValueError(f"vmap({name})(<inputs>): got no inputs. Maybe you forgot to add inputs, or you are "
                         "trying to vmap over a function with no inputs. The latter is unsupported.")
    flat_args, args_spec = tree_flatten(args)
    flat_in_dims = _broadcast_to_and_flatten(in_dims, args_spec)
    if flat_in_dims is None:
        raise ValueError(f"vmap({name}, in_dims={in_dims}, ...)(<inputs>): in_dims is not compatible with the "
                         f"structure of `inputs`. in_dims has structure {tree_flatten(in_dims)[1]} but inputs has "
                         f"structure {args_spec}.")
    for i, (arg, in_dim) in enumerate(zip(flat_args, flat_in_dims)):
        if not isinstance(in_dim, int) and in_dim is not None:
            raise ValueError(f"vmap({name}, in_dims={in_dims}, ...)(<inputs>): Got in_dim={in_dim} for an input but "
                             "in_dim must be either an integer dimension or None.")
        if isinstance(in_dim, int) and not _is_tensor(arg):
            raise ValueError(f"vmap({name}, in_dims={in_dims}, ...)(<inputs>): Got in_dim={in_dim} for an input but "
                             f"the input is of type {_torch_type(arg)}. We cannot vmap over non-Tensor arguments, "
                             "please use None as the respective in_dim")
        if in_dim is not None and (in_dim < -arg.dim() or in_dim >= arg.dim()):
            raise ValueError(f"vmap({name}, in_dims={in_dims}, ...)(<inputs>): Got in_dim={in_dim} for some input, "
                             f"but that input is a Tensor of dimensionality {arg.dim()} so expected in_dim to satisfy "
                             f"-{arg.dim()} <= in_dim < {arg.dim()}.")
        if in_dim is not None and in_dim < 0:
            flat_in_dims[i] = in_dim % arg.dim()
    return _validate_and_get_batch_size(flat_in_dims, flat_args), flat_in_dims, flat_args, args_spec


def _torch_type(x):
    return type(x)


def _check_out_dims(out_dims, func):
    if isinstance(out_dims, int):
        return

    def check(x):
        if not (isinstance(x, int) or x is None):
            raise ValueError(f"vmap({_get_name(func)}, ..., out_dims={out_dims}): `out_dims` must be an int, None or a "
                             "python collection of ints representing where in the outputs the vmapped dimension "
                             "should appear.")
    tree_map_(check, out_dims)


def _remove_batch_dim(name, out, level, batch_size, out_dim):
    if out_dim is None:
        if type(out) is BatchedTensor and out._level == level:
            raise ValueError(f"vmap({name}, ...): `{name}` can not return a BatchedTensor when out_dim is None")
        return out
    if not _is_tensor(out):
        raise ValueError(f"vmap({name}, ...): `{name}` must only return Tensors, got type {type(out)}. Did you mean "
                         "to set out_dims= to None for output?")
    if type(out) is BatchedTensor and out._level == level:
        v = out._value
        return v if out_dim == 0 else v.movedim(0, out_dim)
    # not batched at this level: every sample got the same value
    d = out_dim % (out.dim() + 1)
    return out.unsqueeze(d).expand(*out.shape[:d], batch_size, *out.shape[d:])


def _unwrap_batched(outputs, out_dims, level, batch_size, func):
    flat, spec = tree_flatten(outputs)
    name = _get_name(func)

    def incompatible():
        raise ValueError(f"vmap({name}, ..., out_dims={out_dims})(<inputs>): out_dims is not compatible with the "
                         f"structure of `outputs`. out_dims has structure {tree_flatten(out_dims)[1]} but outputs "
                         f"has structure {spec}.")
    if _is_tensor(outputs):
        if isinstance(out_dims, int) or out_dims is None:
            flat_out_dims = [out_dims]
        elif isinstance(out_dims, tuple) and len(out_dims) == 1:
            flat_out_dims = list(out_dims)
        else:
            incompatible()
    else:
        flat_out_dims = _broadcast_to_and_flatten(out_dims, spec)
        if flat_out_dims is None:
            incompatible()
    return tree_unflatten([_remove_batch_dim(name, o, level, batch_size, d) for o, d in zip(flat, flat_out_dims)],
                          spec)


def _flat_vmap(func, batch_size, flat_in_dims, flat_args, args_spec, out_dims, randomness, kwargs):
    level = push_level(batch_size, randomness)
    try:
        batched = [a if d is None else BatchedTensor(a if d == 0 else a.movedim(d, 0), level)
                   for d, a in zip(flat_in_dims, flat_args)]
        outputs = func(*tree_unflatten(batched, args_spec), **kwargs)
        return _unwrap_batched(outputs, out_dims, level, batch_size, func)
    finally:
        pop_level()


def _chunk_sizes(total, chunk_size):
    sizes = [chunk_size] * (total // chunk_size)
    if total % chunk_size:
        sizes.append(total % chunk_size)
    return sizes


def _chunked_vmap(func, batch_size, flat_in_dims, flat_args, args_spec, out_dims, randomness, chunk_size, kwargs):
    import hookgrad as torch
    split = tuple(itertools.accumulate(_chunk_sizes(batch_size, chunk_size)))
    per_arg = [a.tensor_split(split, dim=d) if d is not None else [a] * len(split)
               for a, d in zip(flat_args, flat_in_dims)]
    rng = torch.get_rng_state() if randomness == "same" else None
    outputs = []
    for chunk in zip(*per_arg):
        size = _validate_and_get_batch_size(flat_in_dims, chunk)
        if size == 0:
            continue
        if rng is not None:
            torch.set_rng_state(rng)
        outputs.append(_flat_vmap(func, size, flat_in_dims, list(chunk), args_spec, out_dims, randomness, kwargs))
    flat_chunks = [tree_flatten(o)[0] for o in outputs]
    spec = tree_flatten(outputs[0])[1]
    flat_out_dims = _broadcast_to_and_flatten(out_dims, spec)
    flat = [torch.cat([c[i] for c in flat_chunks], dim=d) for i, d in enumerate(flat_out_dims)]
    return tree_unflatten(flat, spec)


def vmap_impl(func, in_dims, out_dims, randomness, chunk_size, *args, **kwargs):
    _check_out_dims(out_dims, func)
    batch_size, flat_in_dims, flat_args, args_spec = _process_batched_inputs(in_dims, args, func)
    if chunk_size is not None:
        return _chunked_vmap(func, batch_size, flat_in_dims, flat_args, args_spec, out_dims, randomness, chunk_size,
                             kwargs)
    return _flat_vmap(func, batch_size, flat_in_dims, flat_args, args_spec, out_dims, randomness, kwargs)


def vmap(func, in_dims=0, out_dims=0, randomness="error", *, chunk_size=None):
    """``vmap(f)(x)`` is ``torch.stack([f(xi) for xi in x])``, computed with one call of each op on the whole
    batch where hookgrad has the op's batching rule (func/_rules.py), a loop over the samples elsewhere.

    ``in_dims``/``out_dims``: the batch dim of each input/output (a pytree prefix of the inputs/outputs; None: not
    batched); ``randomness``: "error", "different" or "same"; ``chunk_size``: the batch is processed that many
    samples at a time.

    >>> import hookgrad as torch
    >>> torch.func.vmap(torch.dot)(torch.ones(2, 3), torch.ones(2, 3))
    tensor([3., 3.])
    """
    _check_randomness_arg(randomness)
    if not (chunk_size is None or chunk_size > 0):
        raise ValueError(f"vmap: chunk_size should be None or greater than 0. (got {chunk_size})")

    def wrapped(*args, **kwargs):
        return vmap_impl(func, in_dims, out_dims, randomness, chunk_size, *args, **kwargs)
    try:
        wrapped = functools.wraps(func)(wrapped)
    except (AttributeError, TypeError):
        pass
    return wrapped


def level_batch_size(level):
    return level_info(level)[1]
