"""scatter / scatter_kwargs / gather of torch.nn.parallel.scatter_gather, over the one device hookgrad has.

scatter splits tensors along `dim` into one chunk per target (as PyTorch's Scatter does, all on the CPU
here); gather of CPU tensors is refused as in PyTorch.
"""
from ..._tensor import Tensor

__all__ = ["scatter", "scatter_kwargs", "gather"]


def _is_namedtuple(obj):
    return isinstance(obj, tuple) and hasattr(obj, "_asdict") and hasattr(obj, "_fields")


def scatter(inputs, target_gpus, dim=0):
    """Slice tensors into about equal chunks, one per target; copy references to other objects."""
    def scatter_map(obj):
        if isinstance(obj, Tensor):
            return list(obj.chunk(len(target_gpus), dim)) if target_gpus else []
        if _is_namedtuple(obj):
            return [type(obj)(*args) for args in zip(*map(scatter_map, obj))]
        if isinstance(obj, tuple) and len(obj) > 0:
            return list(zip(*map(scatter_map, obj)))
        if isinstance(obj, list) and len(obj) > 0:
            return [list(i) for i in zip(*map(scatter_map, obj))]
        if isinstance(obj, dict) and len(obj) > 0:
            return [type(obj)(i) for i in zip(*map(scatter_map, obj.items()))]
        return [obj for _ in target_gpus]
    try:
        res = scatter_map(inputs)
    finally:
        scatter_map = None  # noqa: F841  (break the closure's reference cycle, as PyTorch does)
    return res


def scatter_kwargs(inputs, kwargs, target_gpus, dim=0):
    """Scatter positional and keyword inputs, padding the shorter list with empty tuples/dicts."""
    scattered_inputs = scatter(inputs, target_gpus, dim) if inputs else []
    scattered_kwargs = scatter(kwargs, target_gpus, dim) if kwargs else []
    if len(scattered_inputs) < len(scattered_kwargs):
        scattered_inputs.extend(() for _ in range(len(scattered_kwargs) - len(scattered_inputs)))
    elif len(scattered_kwargs) < len(inputs):
        scattered_kwargs.extend({} for _ in range(len(scattered_inputs) - len(scattered_kwargs)))
    return tuple(scattered_inputs), tuple(scattered_kwargs)


def gather(outputs, target_device, dim=0):
    """Gather tensors from different devices onto `target_device`: as in PyTorch, not for CPU tensors."""
    def gather_map(outputs):
        out = outputs[0]
        if isinstance(out, Tensor):
            raise AssertionError("Gather function not implemented for CPU tensors")
        if out is None:
            return None
        if isinstance(out, dict):
            if not all(len(out) == len(d) for d in outputs):
                raise ValueError("All dicts must have the same number of keys")
            return type(out)((k, gather_map([d[k] for d in outputs])) for k in out)
        if _is_namedtuple(out):
            return type(out)._make(map(gather_map, zip(*outputs)))
        return type(out)(map(gather_map, zip(*outputs)))
    try:
        res = gather_map(outputs)
    finally:
        gather_map = None  # noqa: F841
    return res
