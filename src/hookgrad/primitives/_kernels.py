"""NumPy kernels shared by the op families: erf and erfc on float64 (a series / continued fraction), used by
elementwise.erf without scipy and by the special functions. A leaf: arrays in, arrays out, no Tensors."""
import math

import numpy as np

from .._array import array_module

_2_SQRTPI = 2.0 / math.sqrt(math.pi)


def _f64(fn):
    """A float64 kernel applied to an array of any float dtype (the result cast back)."""
    def k(x):
        return fn(array_module(x).asarray(x, np.float64)).astype(x.dtype, copy=False)
    return k


def _erf_series(x):
    """erf(x) = 2/sqrt(pi) exp(-x^2) sum 2^n x^(2n+1) / (2n+1)!!  (positive terms; |x| < 3)."""
    x2 = x * x
    term = x.copy()
    s = x.copy()
    for n in range(1, 90):
        term = term * (2.0 * x2 / (2 * n + 1))
        s += term
        if n % 8 == 0 and not (np.abs(term) > 1e-17 * np.abs(s)).any():
            break
    return _2_SQRTPI * np.exp(-x2) * s


def _erfc_cf(x):
    """erfc(x) for x >= 2.5 by its continued fraction exp(-x^2)/sqrt(pi) / (x + 1/2/(x + 1/(x + 3/2/(...))))."""
    f = x.copy()
    for k in range(80, 0, -1):
        f = x + (k * 0.5) / f
    return np.exp(-x * x) / (math.sqrt(math.pi) * f)


def _erfc64(x):
    out = array_module(x).empty_like(x)
    a = np.abs(x)
    big = a >= 2.5
    m = ~big
    out[m] = 1.0 - _erf_series(x[m])
    xb = x[big]
    with np.errstate(all="ignore"):
        t = _erfc_cf(np.abs(xb))
    out[big] = np.where(xb > 0, t, 2.0 - t)
    out[np.isnan(x)] = np.nan
    return out


def _erf64(x):
    out = array_module(x).empty_like(x)
    big = np.abs(x) >= 2.5
    out[~big] = _erf_series(x[~big])
    xb = x[big]
    with np.errstate(all="ignore"):
        t = 1.0 - _erfc_cf(np.abs(xb))
    out[big] = np.copysign(t, xb)
    out[np.isnan(x)] = np.nan
    return out


_erfc = _f64(_erfc64)
_erf = _f64(_erf64)
