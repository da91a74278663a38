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


# ------------------------------------------------------------------ compiled float32 helpers (numba, _jit)
# Scalar functions that the compiled kernels inline; written so that LLVM vectorises the loops calling
# them (no libm calls, no branches it cannot turn into selects). NaN and inf propagate.
from .._jit import kernel  # noqa: E402

_f32 = np.float32


@kernel
def exp32(x):
    """e^x in float32 (Cephes' expf: x = n ln2 + r, a degree-6 polynomial in r, 2^n built in the exponent
    bits as two halves so that results near overflow and the subnormal ones come out right); within 1 ulp
    of the correctly rounded value, like the SLEEF expf that PyTorch's CPU kernels use."""
    xc = min(max(x, _f32(-104.0)), _f32(88.72284))
    n = np.floor(xc * _f32(1.44269504088896341) + _f32(0.5))
    r = xc - n * _f32(0.693359375)
    r = r + n * _f32(2.12194440e-4)
    p = _f32(1.9875691500e-4)
    p = p * r + _f32(1.3981999507e-3)
    p = p * r + _f32(8.3334519073e-3)
    p = p * r + _f32(4.1665795894e-2)
    p = p * r + _f32(1.6666665459e-1)
    p = p * r + _f32(5.0000001201e-1)
    p = p * r * r + r + _f32(1)
    ni = np.int32(n)
    h = ni >> np.int32(1)
    b1 = np.int32((h + np.int32(127)) << np.int32(23))
    b2 = np.int32((ni - h + np.int32(127)) << np.int32(23))
    res = p * b1.view(np.float32) * b2.view(np.float32)
    if x > _f32(88.72284):
        res = np.float32(np.inf)
    elif x < _f32(-104.0):
        res = _f32(0)
    return res if x == x else x


@kernel
def erf32_as(x):
    """erf by Abramowitz & Stegun 7.1.26 (|error| < 1.5e-7): the formula of PyTorch's vectorised float erf,
    which its GELU kernels use (torch.erf itself is more exact)."""
    a = abs(x)
    t = _f32(1) / (_f32(0.3275911) * a + _f32(1))
    r = (((_f32(1.061405429) * t + _f32(-1.453152027)) * t + _f32(1.421413741)) * t + _f32(-0.284496736)) * t \
        + _f32(0.254829592)
    e = _f32(1) - r * t * exp32(-(x * x))
    return e if x >= _f32(0) else -e        # (a NaN x gives a NaN e; one select keeps the loop vectorised: 10x)


def erf_as(x):
    """The same A&S erf on arrays with NumPy (the fallback of the kernels that use erf32_as), in x's dtype."""
    a = np.abs(x)
    t = 1 / (0.3275911 * a + 1)
    r = (((1.061405429 * t - 1.453152027) * t + 1.421413741) * t - 0.284496736) * t + 0.254829592
    return np.copysign(1 - r * t * np.exp(-(x * x)), x).astype(x.dtype, copy=False)
