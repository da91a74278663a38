"""torch.poisson and torch.binomial: samples drawn from tensor parameters with the distributions' samplers
(distributions/_samplers.py; the numbers differ from PyTorch's C++ samplers, docs/differences.md). As in
PyTorch, a Poisson sample's gradient to its rates is zeros (PoissonBackward0) and a binomial sample has no
derivative (its node raises when backward reaches it)."""
from ._tensor import Tensor
from ._errors import not_tensor
from ._creation import _sampled

__all__ = ["poisson", "binomial"]


def _dtype_name(t):
    return {"float64": "Double", "float32": "Float", "float16": "Half", "int64": "Long", "int32": "Int",
            "int16": "Short", "int8": "Char", "uint8": "Byte", "bool": "Bool"}.get(t._data.dtype.name,
                                                                                  t._data.dtype.name)


def poisson(input, generator=None):
    """A Poisson(input) sample per entry (the rates must be non-negative floats)."""
    if not isinstance(input, Tensor):
        raise not_tensor("poisson", input)
    if not input.is_floating_point():
        raise NotImplementedError(f"\"poisson_cpu\" not implemented for '{_dtype_name(input)}'")
    if input.numel() and bool((input.detach() < 0).any()):
        raise RuntimeError("invalid Poisson rate, expected rate to be non-negative")
    from .distributions._samplers import poisson as draw
    return _sampled(draw(input, generator)._data, (input,), "PoissonBackward0")


def binomial(count, prob, generator=None):
    """A Binomial(count, prob) sample per (broadcast) entry; not differentiable, as in PyTorch."""
    for i, (arg, v) in enumerate((("count", count), ("prob", prob))):
        if not isinstance(v, Tensor):
            raise not_tensor("binomial", v, arg, i + 1)
    if not count.is_floating_point():
        raise ValueError(f"binomial only supports floating-point dtypes for count, got: {_dtype_name(count)}")
    if prob.dtype != count.dtype:
        raise RuntimeError(f"Found dtype {_dtype_name(prob)} but expected {_dtype_name(count)}")
    from .distributions._samplers import binomial as draw
    return _sampled(draw(count, prob, generator)._data, (count, prob), None, "binomial")
