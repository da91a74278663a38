"""hookgrad.special: PyTorch's ``torch.special`` namespace.

The kernels and their gradient formulas live with their families (primitives/special.py, elementwise.py,
reduce.py, nn.py); this module gives them torch.special's names and signatures. Functions PyTorch defines as
composites are composites here too (``ndtr``: its gradient is erf's, as PyTorch's). The Bessel functions
of the first kind (``bessel_j0``/``bessel_j1``) have no derivative in PyTorch: their results never require
grad.
"""
import math
import sys

from .._tensor import Tensor
from .._array import array_module
from ._kernels import _f64
from .elementwise import erf, expm1, log1p, sigmoid as expit, RoundDecimals, _float_input, _out
from .reduce import logsumexp as _logsumexp
from . import nn as _nn
from .special import (erfc, erfcx, erfinv, logit, xlogy, xlog1py, lgamma as gammaln, digamma, polygamma,
                      mvlgamma, i0, i0e, i1, i1e, log_ndtr, ndtri, entr, sinc, exp2, zeta, gammainc, gammaincc,
                      MulScalar, _bessel_j64, _tensor_in)
from .. import _errors
from .. import _dtype as D

__all__ = ["bessel_j0", "bessel_j1", "digamma", "entr", "erf", "erfc", "erfcx", "erfinv", "exp2", "expit",
           "expm1", "gammainc", "gammaincc", "gammaln", "i0", "i0e", "i1", "i1e", "log1p", "log_ndtr",
           "log_softmax", "logit", "logsumexp", "multigammaln", "ndtr", "ndtri", "polygamma", "psi", "round",
           "sinc", "softmax", "xlog1py", "xlogy", "zeta"]

psi = digamma
_SQRT1_2 = math.sqrt(0.5)


def ndtr(input, *, out=None):
    """The standard normal CDF, (1 + erf(input / sqrt 2)) / 2 (a composite, as PyTorch's)."""
    x = _float_input(_tensor_in("special_ndtr", input))
    return _out(MulScalar.apply(1 + erf(x * _SQRT1_2), k=0.5), out)


def multigammaln(input, p, *, out=None):
    """The multivariate log-gamma function of dimension ``p`` (``torch.mvlgamma``)."""
    return mvlgamma(input, p, out=out)


def round(input, *, decimals=0, out=None):   # noqa: A001  (torch's name)
    """Round half to even to ``decimals`` places (grad_fn RoundBackward1, as torch.special.round)."""
    _tensor_in("special_round", input)
    if not D.is_floating(input._data.dtype):
        raise _errors.not_implemented_for("round_vml_cpu" if not decimals else "round_cpu", input._data.dtype)
    return _out(RoundDecimals.apply(input, decimals=decimals), out)


def logsumexp(input, dim, keepdim=False, *, out=None):
    """log(sum(exp(input))) over ``dim``, computed stably."""
    return _out(_logsumexp(input, dim, keepdim), out)


_REQUIRED = object()


def _dim_given(fname, dim):
    if dim is _REQUIRED:
        raise TypeError(f'{fname}() missing 1 required positional arguments: "dim"')


def softmax(input, dim=_REQUIRED, *, dtype=None):
    """softmax over ``dim`` (the input cast to ``dtype`` first when given)."""
    _dim_given("special_softmax", dim)
    return _nn.softmax(input, dim, dtype=dtype)


def log_softmax(input, dim=_REQUIRED, *, dtype=None):
    """log(softmax(input)) over ``dim``, computed stably."""
    _dim_given("special_log_softmax", dim)
    return _nn.log_softmax(input, dim, dtype=dtype)


def _no_grad_fn(name, nu):
    kernel = _f64(lambda x: _bessel_j64(x, nu))

    def fn(input, *, out=None):
        x = _float_input(_tensor_in(f"special_{name}", input))
        d = x._data
        r = Tensor._make(array_module(d).asarray(kernel(d)))     # no derivative in PyTorch: no graph
        return _out(r, out)
    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"The Bessel function of the first kind of order {nu} (no derivative, as PyTorch)."
    return fn


bessel_j0 = _no_grad_fn("bessel_j0", 0)
bessel_j1 = _no_grad_fn("bessel_j1", 1)

sys.modules.setdefault("hookgrad.special", sys.modules[__name__])

# a torch name hookgrad lacks raises _missing.NotImplementedName (an AttributeError)
from .. import _missing  # noqa: E402
__getattr__ = _missing.module_getattr("hookgrad.special", "torch.special")
