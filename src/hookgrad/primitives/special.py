"""The rest of PyTorch's elementwise maths: inverse trig/hyperbolic, the gamma family (lgamma, digamma,
polygamma, mvlgamma), erfc/erfinv, Bessel i0, xlogy, hypot, logaddexp, copysign, integer ops (gcd, lcm,
shifts), ... Forward on arrays and gradient on Tensors side by side, as in elementwise.py.

The special functions are computed here with NumPy alone (float64 inside, cast back): Lanczos for lgamma,
recurrence + asymptotic series for digamma and the Hurwitz zeta (polygamma), power / asymptotic series
for i0 and i1, a series / continued fraction for erf and erfc, Giles' approximation refined by Newton
steps for erfinv.
"""
import math

import numpy as np

from .._tensor import Tensor
from ..autograd.forward_ad import linear_jvp, multilinear_jvp, elementwise_jvp, tsum, scaled  # noqa: F401  (forward AD)
from .._array import array_module, module_of
from ..autograd.node import Node
from .._errors import not_tensor, not_implemented_for, is_number, not_number
from ._dispatch import binary, apply_inplace
from . import elementwise as E
from .elementwise import Unary, ZeroGrad, _unary, _float_input, _out, _where, _zeros, scale, _cj
from ._kernels import _f64, _erfc64, _erf64, _erfc
from .. import _dtype as D

_PI = math.pi
_LN2 = math.log(2.0)
_2_SQRTPI = 2.0 / math.sqrt(math.pi)


# ------------------------------------------------------------------------ NumPy kernels (float64)
def _erfinv64(y):
    """Giles' single-precision erfinv, then Newton steps on erf (or erfc in the tails) in float64."""
    a = np.abs(y)
    with np.errstate(all="ignore"):
        w = -np.log((1.0 - a) * (1.0 + a))
        w1 = w - 2.5
        p1 = 2.81022636e-08
        for c in (3.43273939e-07, -3.5233877e-06, -4.39150654e-06, 0.00021858087, -0.00125372503,
                  -0.00417768164, 0.246640727, 1.50140941):
            p1 = c + p1 * w1
        w2 = np.sqrt(w) - 3.0
        p2 = -0.000200214257
        for c in (0.000100950558, 0.00134934322, -0.00367342844, 0.00573950773, -0.0076224613,
                  0.00943887047, 1.00167406, 2.83297682):
            p2 = c + p2 * w2
        x = np.where(w < 5.0, p1, p2) * a
        finite = a < 1.0
        xf = x[finite]
        af = a[finite]
        tail = af > 0.5
        for _ in range(4):      # tails: Newton on log(erfc(x)) = log(1 - y), nearly linear there
            d = _2_SQRTPI * np.exp(-xf * xf)
            c = _erfc64(xf)
            xf = np.where(tail, xf + (np.log(c) - np.log1p(-af)) * c / d, xf - (_erf64(xf) - af) / d)
        x[finite] = xf
        x[a == 1.0] = np.inf
        x[a > 1.0] = np.nan
        x[np.isnan(a)] = np.nan
    return np.copysign(x, y)


_LANCZOS = (0.99999999999980993, 676.5203681218851, -1259.1392167224028, 771.32342877765313,
            -176.61502916214059, 12.507343278686905, -0.13857109526572012, 9.9843695780195716e-6,
            1.5056327351493116e-7)


def _lgamma_pos(x):
    """log|Gamma(x)| for x >= 0.5 (Lanczos, g = 7)."""
    z = x - 1.0
    a = array_module(z).full_like(z, _LANCZOS[0])
    for i in range(1, 9):
        a += _LANCZOS[i] / (z + i)
    t = z + 7.5
    return 0.5 * math.log(2 * math.pi) + (z + 0.5) * np.log(t) - t + np.log(a)


def _lgamma64(x):
    out = array_module(x).empty_like(x)
    with np.errstate(all="ignore"):
        small = x < 0.5
        out[~small] = _lgamma_pos(x[~small])
        xs = x[small]
        r = xs - np.round(xs)               # reflection: log(pi / |sin(pi x)|) - lgamma(1 - x)
        out[small] = np.log(_PI / np.abs(np.sin(_PI * r))) - _lgamma_pos(1.0 - xs)
        out[small & (x == np.floor(x))] = np.inf      # the poles (and -inf)
        out[(x == 1.0) | (x == 2.0)] = 0.0
        out[np.isposinf(x)] = np.inf
    return out


def _digamma64(x):
    out = array_module(x).zeros_like(x)
    with np.errstate(all="ignore"):
        neg = x < 0
        r = x - np.round(x)
        refl = np.where(neg, -_PI / np.tan(_PI * r), 0.0)   # psi(x) = psi(1 - x) - pi / tan(pi x)
        z = np.where(neg, 1.0 - x, x)
        for _ in range(10):
            m = z < 10.0
            if not m.any():
                break
            out[m] -= 1.0 / z[m]
            z = np.where(m, z + 1.0, z)
        iz2 = 1.0 / (z * z)
        ser = iz2 * (1 / 12 - iz2 * (1 / 120 - iz2 * (1 / 252 - iz2 * (1 / 240 - iz2 * (1 / 132 - iz2 * (
            691 / 32760 - iz2 / 12))))))
        out += np.log(z) - 0.5 / z - ser + refl
        out[neg & (x == np.floor(x))] = np.nan
        out[x == 0] = np.copysign(np.inf, -x[x == 0])
        out[np.isposinf(x)] = np.inf
        out[np.isneginf(x)] = np.nan
    return out


# B_2j / (2j)!
_B2J = (1 / 6 / 2, -1 / 30 / 24, 1 / 42 / 720, -1 / 30 / 40320, 5 / 66 / 3628800,
        -691 / 2730 / 479001600, 7 / 6 / 87178291200, -3617 / 510 / 20922789888000)


def _zeta64(s, q):
    """Hurwitz zeta(s, q) for an integer s >= 2 (Euler-Maclaurin after shifting q past 10 + 2s)."""
    acc = array_module(q).zeros_like(q)
    target = 10.0 + 2 * s
    z = q.copy()
    with np.errstate(all="ignore"):
        for _ in range(int(target) + 2000):
            m = z < target
            if not m.any():
                break
            acc[m] += z[m] ** -s
            z = np.where(m, z + 1.0, z)
        tail = z ** (1.0 - s) / (s - 1) + 0.5 * z ** -s
        fac = float(s)
        zp = z ** (-s - 1.0)
        iz2 = 1.0 / (z * z)
        for j, b in enumerate(_B2J, 1):
            tail += b * fac * zp
            fac *= (s + 2 * j - 1) * (s + 2 * j)
            zp = zp * iz2
        out = acc + tail
        out[(q <= 0) & (q == np.floor(q))] = np.inf
        if s > 2:
            out[np.isposinf(q)] = np.nan
    return out


def _trigamma64(x):
    """PyTorch's trigamma: reflection below 0.5, six recurrence steps, a short asymptotic series."""
    with np.errstate(all="ignore"):
        neg = x < 0.5
        sp = np.sin(_PI * x)
        res = np.where(neg, -(_PI * _PI) / (sp * sp), 0.0)
        z = np.where(neg, 1.0 - x, x)
        for _ in range(6):
            res = res + 1.0 / (z * z)
            z = z + 1.0
        ixx = 1.0 / (z * z)
        res = res + (1 + 1 / (2 * z) + ixx * (1. / 6 - ixx * (1. / 30 - ixx * (1. / 42)))) / z
        return np.where(neg, -res, res)


def _polygamma64(n, x):
    if n == 0:
        return _digamma64(x)
    if n == 1:
        return _trigamma64(x)
    return (-1.0) ** (n + 1) * math.factorial(n) * _zeta64(n + 1, x)


def _bessel_i(x, nu, scaled=False):
    """Modified Bessel I_0 / I_1 (times exp(-|x|) when ``scaled``): power series for |x| <= 20, asymptotic
    series beyond."""
    a = np.abs(x)
    out = array_module(a).empty_like(a)
    small = a <= 20.0
    xs = a[small]
    h2 = (xs * 0.5) ** 2
    term = array_module(xs).ones_like(xs) if nu == 0 else xs * 0.5
    s = term.copy()
    for k in range(1, 70):
        term = term * h2 / (k * (k + nu))
        s += term
    out[small] = s * np.exp(-xs) if scaled else s
    xb = a[~small]
    mu = 4.0 * nu * nu
    term = array_module(xb).ones_like(xb)
    s = term.copy()
    for k in range(1, 30):
        term = term * -(mu - (2 * k - 1) ** 2) / (k * 8.0 * xb)
        s += term
    with np.errstate(all="ignore"):
        out[~small] = np.exp((0.0 if scaled else xb) - 0.5 * np.log(2 * _PI * xb)) * s
    out[np.isnan(a)] = np.nan
    return out if nu == 0 else np.copysign(out, x)


_lgamma = _f64(_lgamma64)
_digamma = _f64(_digamma64)
_erfinv = _f64(_erfinv64)


def _bessel_kernel(nu):
    def k(x):
        out = _bessel_i(array_module(x).asarray(x, np.float64), nu).astype(x.dtype, copy=False)
        if x.dtype.itemsize < 8:    # PyTorch's kernel computes exp(|x|) in the input's dtype: it overflows first
            out[np.abs(x) > math.log(np.finfo(x.dtype).max)] = np.inf if nu == 0 else np.copysign(np.inf, x[
                np.abs(x) > math.log(np.finfo(x.dtype).max)])
        return out
    return k


_i0 = _bessel_kernel(0)
_i1 = _bessel_kernel(1)


# ------------------------------------------- torch.special's kernels (float64; see primitives/special_ns.py)
_SQRT2 = math.sqrt(2.0)
_LOG_SQRT_2PI = 0.5 * math.log(2 * math.pi)


def _erfcx64(x):
    """exp(x^2) erfc(x): the continued fraction for x >= 2.5 (no underflow), exp(x^2) erfc(x) below."""
    out = array_module(x).empty_like(x)
    big = x >= 2.5
    xb = x[big]
    f = xb.copy()
    for k in range(80, 0, -1):
        f = xb + (k * 0.5) / f
    out[big] = 1.0 / (math.sqrt(_PI) * f)
    xs = x[~big]
    with np.errstate(all="ignore"):
        out[~big] = np.exp(xs * xs) * _erfc64(xs)
    out[np.isnan(x)] = np.nan
    return out


def _log_ndtr64(x):
    """log(Phi(x)), PyTorch's split: log(erfcx(-t) / 2) - t^2 below -1 (t = x / sqrt 2), log1p(-erfc(t) / 2) above."""
    t = x / _SQRT2
    with np.errstate(all="ignore"):
        return np.where(x < -1.0, np.log(_erfcx64(-t) / 2) - t * t, np.log1p(-_erfc64(t) / 2))


def _ndtri64(p):
    """Phi^-1(p): a start from erfinv (Abramowitz-Stegun 26.2.23 in the tails), then Newton steps on log Phi."""
    with np.errstate(all="ignore"):
        q = np.where(p > 0.5, 1.0 - p, p)          # the lower half; the upper by symmetry
        t = np.sqrt(-2.0 * np.log(q))
        tail = t - (2.515517 + t * (0.802853 + t * 0.010328)) / (1 + t * (1.432788 + t * (0.189269 + t * 0.001308)))
        x = np.where(q < 0.02, -tail, _SQRT2 * _erfinv64(2.0 * q - 1.0))
        ok = (q > 0) & (q <= 0.5)
        x = np.where(ok, x, -1.0)
        lq = np.log(np.where(ok, q, 0.5))
        for _ in range(4):
            lf = _log_ndtr64(x)
            x = x - (lf - lq) * np.exp(lf + 0.5 * x * x + _LOG_SQRT_2PI)
        x = np.where(p > 0.5, -x, x)
        x = np.where(p == 0, -np.inf, np.where(p == 1, np.inf, x))
        return np.where((p < 0) | (p > 1) | np.isnan(p), np.nan, x)


def _entr64(x):
    with np.errstate(all="ignore"):
        r = np.where(x > 0, -x * np.log(x), np.where(x == 0, 0.0, -np.inf))
    return np.where(np.isnan(x), x, r)


def _hurwitz64(s, q):
    """Hurwitz zeta(s, q) for real s (Cephes' domain: nan for s < 1, inf at s == 1 and at the poles q = 0, -1, ...;
    nan for q < 0 with a non-integer s): Euler-Maclaurin after shifting q past max(10, s)."""
    s, q = np.broadcast_arrays(s, q)
    acc = array_module(q).zeros(q.shape, np.float64)
    z = q.astype(np.float64, copy=True)
    target = np.maximum(10.0, s + 2.0)
    with np.errstate(all="ignore"):
        for _ in range(100000):
            m = z < target
            if not m.any():
                break
            acc = acc + np.where(m, z ** -s, 0.0)
            z = np.where(m, z + 1.0, z)
        tail = z ** (1.0 - s) / (s - 1) + 0.5 * z ** -s
        fac = s.astype(np.float64)
        zp = z ** (-s - 1.0)
        iz2 = 1.0 / (z * z)
        for j, b in enumerate(_B2J, 1):
            tail = tail + b * fac * zp
            fac = fac * (s + 2 * j - 1) * (s + 2 * j)
            zp = zp * iz2
        out = acc + tail
    pole = (q <= 0) & (q == np.floor(q))
    out = np.where(pole, np.inf, out)
    out = np.where((q < 0) & ~pole & (s != np.floor(s)), np.nan, out)
    out = np.where(s == 1, np.inf, np.where(s < 1, np.nan, out))
    return np.where(np.isnan(s) | np.isnan(q), np.nan, out)


def _igamma64(a, x, upper):
    """The regularized incomplete gamma P(a, x) (Q(a, x) when ``upper``): its series for x < a + 1, Lentz's
    continued fraction for Q beyond."""
    a, x = np.broadcast_arrays(a, x)
    xp = array_module(x)
    a = xp.asarray(a, np.float64)
    x = xp.asarray(x, np.float64)
    with np.errstate(all="ignore"):
        pre = np.exp(a * np.log(x) - x - _lgamma64(a))
        use_series = x < a + 1.0
        # series: P = pre * sum x^n / (a (a+1) ... (a+n))
        term = 1.0 / a
        tot = term
        for n in range(1, 2000):
            term = term * x / (a + n)
            tot = tot + term
            if n % 16 == 0 and not (np.abs(term) > 1e-17 * np.abs(tot))[use_series].any():
                break
        p_series = pre * tot
        # continued fraction for Q (modified Lentz)
        tiny = 1e-300
        b = x + 1.0 - a
        c = xp.full_like(x, 1.0 / tiny)
        d = 1.0 / np.where(b == 0, tiny, b)
        h = d
        for i in range(1, 2000):
            an = -i * (i - a)
            b = b + 2.0
            d = an * d + b
            d = 1.0 / np.where(d == 0, tiny, d)
            c = b + an / c
            c = np.where(c == 0, tiny, c)
            delta = d * c
            h = h * delta
            if i % 16 == 0 and not (np.abs(delta - 1.0) > 1e-16)[~use_series].any():
                break
        q_cf = pre * h
        p = np.where(use_series, p_series, 1.0 - q_cf)
        q = np.where(use_series, 1.0 - p_series, q_cf)
        r = q if upper else p
        r = np.where(x == 0, 1.0 if upper else 0.0, r)
        r = np.where(np.isposinf(x), 0.0 if upper else 1.0, r)
        r = np.where((a == 0) & (x > 0), 0.0 if upper else 1.0, r)
        r = np.where(np.isposinf(a) & np.isfinite(x), 1.0 if upper else 0.0, r)
        bad = (a < 0) | (x < 0) | ((a == 0) & (x == 0)) | (np.isinf(a) & np.isinf(x)) | np.isnan(a) | np.isnan(x)
        return np.where(bad, np.nan, r)


def _bessel_j64(x, nu):
    """Bessel J_0 / J_1: the power series for |x| < 12, Hankel's asymptotic expansion beyond."""
    a = np.abs(x)
    out = array_module(a).empty_like(a)
    small = a < 12.0
    xs = a[small]
    h2 = -(xs * 0.5) ** 2
    term = array_module(xs).ones_like(xs) if nu == 0 else xs * 0.5
    s = term.copy()
    for k in range(1, 60):
        term = term * h2 / (k * (k + nu))
        s += term
    out[small] = s
    xb = a[~small]
    mu = 4.0 * nu * nu
    p = array_module(xb).ones_like(xb)
    qq = (mu - 1) / (8.0 * xb)
    t = qq.copy()
    for k in range(2, 40, 2):
        t = -t * (mu - (2 * k - 1) ** 2) / (k * 8.0 * xb)
        p = p + t
        t = t * (mu - (2 * k + 1) ** 2) / ((k + 1) * 8.0 * xb)
        qq = qq + t
    with np.errstate(all="ignore"):
        chi = xb - (0.5 * nu + 0.25) * _PI
        out[~small] = np.sqrt(2.0 / (_PI * xb)) * (p * np.cos(chi) - qq * np.sin(chi))
    out[np.isinf(a)] = 0.0
    out[np.isnan(a)] = np.nan
    return out if nu == 0 else np.where(x < 0, -out, out)


# ----------------------------------------------------------------------- unary primitives
class Asin(Unary, name="AsinBackward0"):
    jvp = elementwise_jvp

    def forward(self, x):
        return np.arcsin(x)

    def backward(self, g):
        (x,) = self.saved_values
        return g * _cj((-x * x + 1).rsqrt(), g)


class Acos(Unary, name="AcosBackward0"):
    jvp = elementwise_jvp

    def forward(self, x):
        return np.arccos(x)

    def backward(self, g):
        (x,) = self.saved_values
        return g * _cj(-(-x * x + 1).rsqrt(), g)


class Atan(Unary, name="AtanBackward0"):
    jvp = elementwise_jvp

    def forward(self, x):
        return np.arctan(x)

    def backward(self, g):
        (x,) = self.saved_values
        return g / _cj(x * x + 1, g)


class Asinh(Unary, name="AsinhBackward0"):
    jvp = elementwise_jvp

    def forward(self, x):
        return np.arcsinh(x)

    def backward(self, g):
        (x,) = self.saved_values
        return g * _cj((x * x + 1).rsqrt(), g)


class Acosh(Unary, name="AcoshBackward0"):
    jvp = elementwise_jvp

    def forward(self, x):
        return np.arccosh(x)

    def backward(self, g):
        (x,) = self.saved_values
        if g.dtype in E._IS_COMPLEX:    # (sqrt(z*z - 1) != sqrt(z + 1) sqrt(z - 1) off the real line)
            return g * ((x + 1).rsqrt() * (x - 1).rsqrt()).conj()
        return g * (x * x - 1).rsqrt()


class Atanh(Unary, name="AtanhBackward0"):
    jvp = elementwise_jvp

    def forward(self, x):
        return np.arctanh(x)

    def backward(self, g):
        (x,) = self.saved_values
        return g * _cj(1 / (-x * x + 1), g)


class AtanhInplace(Atanh, name="AtanhBackward1"):
    jvp = elementwise_jvp

    def backward(self, g):
        raise NotImplementedError("the derivative for 'inplace version of atanh' is not implemented.")


class Sinh(Unary, name="SinhBackward0"):
    jvp = elementwise_jvp

    def forward(self, x):
        return np.sinh(x)

    def backward(self, g):
        (x,) = self.saved_values
        return g * _cj(x.cosh(), g)


class Cosh(Unary, name="CoshBackward0"):
    jvp = elementwise_jvp

    def forward(self, x):
        return np.cosh(x)

    def backward(self, g):
        (x,) = self.saved_values
        return g * _cj(x.sinh(), g)


class Exp2(Node, name="Exp2Backward0"):
    save = (-1,)
    saved_names = ("result",)

    jvp = elementwise_jvp

    def forward(self, x):
        return np.exp2(x)

    def backward(self, g):
        (out,) = self.saved_values
        return g * _cj(out * _LN2, g)


class Erfc(Unary, name="ErfcBackward0"):
    jvp = elementwise_jvp

    def forward(self, x):
        return _erfc(x)

    def backward(self, g):
        (x,) = self.saved_values
        return g * (-_2_SQRTPI) * (-(x * x)).exp()


class Erfinv(Unary, name="ErfinvBackward0"):
    jvp = elementwise_jvp

    def forward(self, x):
        return _erfinv(x)

    def backward(self, g):
        (x,) = self.saved_values
        return g * (0.5 * math.sqrt(_PI)) * (erfinv(x) ** 2).exp()


class Lgamma(Unary, name="LgammaBackward0"):
    jvp = elementwise_jvp

    def forward(self, x):
        return _lgamma(x)

    def backward(self, g):
        (x,) = self.saved_values
        return g * digamma(x)


class Digamma(Unary, name="DigammaBackward0"):
    jvp = elementwise_jvp

    def forward(self, x):
        return _digamma(x)

    def backward(self, g):
        (x,) = self.saved_values
        return g * polygamma(1, x)


class Polygamma(Unary, name="PolygammaBackward0"):
    n = 1

    jvp = elementwise_jvp

    def forward(self, x):
        xp = array_module(x)
        return xp.asarray(_polygamma64(self.n, xp.asarray(x, np.float64))).astype(x.dtype, copy=False)

    def backward(self, g):
        (x,) = self.saved_values
        return g * polygamma(self.n + 1, x)


class PolygammaInplace(Polygamma, name="PolygammaBackward1"):
    pass


class Mvlgamma(Unary, name="MvlgammaBackward0"):
    p = 1

    jvp = elementwise_jvp

    def forward(self, x):
        xp = array_module(x)
        x64 = xp.asarray(x, np.float64)
        p = self.p
        out = sum(_lgamma64(x64 - 0.5 * j) for j in range(p)) + p * (p - 1) / 4 * math.log(_PI)
        return xp.asarray(out).astype(x.dtype, copy=False)

    def backward(self, g):
        (x,) = self.saved_values
        d = digamma(x)
        for j in range(1, self.p):
            d = d + digamma(x - 0.5 * j)
        return g * d


class I0(Unary, name="I0Backward0"):
    jvp = elementwise_jvp

    def forward(self, x):
        return _i0(x)

    def backward(self, g):
        (x,) = self.saved_values
        return g * I1.apply(x)


def _not_tiny(x):
    """(|x| > eps, x with eps where it is not): PyTorch's guard in the i1 / i1e gradients."""
    eps = float(np.finfo(x._data.dtype).eps)
    big = x.abs() > eps
    return big, _where(big, x, eps)


class I1(Node, name="SpecialI1Backward0"):
    save = (0, -1)
    saved_names = ("self", "result")

    jvp = elementwise_jvp

    def forward(self, x):
        return _i1(x)

    def backward(self, g):
        x, out = self.saved_values
        # PyTorch's i1_backward: i0(x) - i1(x) / x, 0.5 where |x| <= eps (x replaced there by eps, so that the
        # unselected branch's own derivative stays finite)
        big, safe = _not_tiny(x)
        return g * _where(big, i0(safe) - out / safe, 0.5)


class Sinc(Unary, name="SincBackward0"):
    jvp = elementwise_jvp

    def forward(self, x):
        with np.errstate(all="ignore"):
            px = x * _PI
            return np.where(x == 0, 1.0, np.sin(px) / px).astype(x.dtype, copy=False)

    def backward(self, g):
        (x,) = self.saved_values
        px = x * _PI
        d = (px * px.cos() - px.sin()) / (px * x)
        return g * _where(x == 0, 0.0, d)


# ---- torch.special's own primitives (the namespace: primitives/special_ns.py)
_erfcx = _f64(_erfcx64)
_log_ndtr = _f64(_log_ndtr64)
_ndtri = _f64(_ndtri64)
_entr = _f64(_entr64)


class Erfcx(Node, name="SpecialErfcxBackward0"):
    save = (0, -1)
    saved_names = ("self", "result")

    jvp = elementwise_jvp

    def forward(self, x):
        return _erfcx(x)

    def backward(self, g):
        x, out = self.saved_values
        return g * (2.0 * x * out - _2_SQRTPI)


class I0e(Node, name="SpecialI0EBackward0"):
    save = (0, -1)
    saved_names = ("self", "result")

    jvp = elementwise_jvp

    def forward(self, x):
        xp = array_module(x)
        return _bessel_i(xp.asarray(x, np.float64), 0, True).astype(x.dtype, copy=False)

    def backward(self, g):
        x, out = self.saved_values
        return g * (I1e.apply(x) - x.sgn() * out)


class I1e(Node, name="SpecialI1EBackward0"):
    save = (0, -1)
    saved_names = ("self", "result")

    jvp = elementwise_jvp

    def forward(self, x):
        xp = array_module(x)
        return _bessel_i(xp.asarray(x, np.float64), 1, True).astype(x.dtype, copy=False)

    def backward(self, g):
        x, out = self.saved_values
        # PyTorch's i1e_backward: i0e(x) - i1e(x) (sgn(x) + 1 / x), 0.5 where |x| <= eps (as I1's)
        big, safe = _not_tiny(x)
        return g * _where(big, I0e.apply(safe) - out * (safe.sgn() + safe.reciprocal()), 0.5)


class Ndtri(Node, name="SpecialNdtriBackward0"):
    save = (-1,)
    saved_names = ("result",)

    jvp = elementwise_jvp

    def forward(self, x):
        return _ndtri(x)

    def backward(self, g):
        (out,) = self.saved_values
        return g * math.sqrt(2 * _PI) * (out * out / 2).exp()


class LogNdtr(Node, name="SpecialLogNdtrBackward0"):
    save = (0, -1)
    saved_names = ("self", "result")

    jvp = elementwise_jvp

    def forward(self, x):
        return _log_ndtr(x)

    def backward(self, g):
        x, out = self.saved_values
        return g / math.sqrt(2 * _PI) * (-(out + x * x / 2)).exp()


class Entr(Unary, name="SpecialEntrBackward0"):
    jvp = elementwise_jvp

    def forward(self, x):
        return _entr(x)

    def backward(self, g):
        (x,) = self.saved_values
        return g * -(x.log() + 1)


class _SpecialBinary(Node):
    """A binary special function of two float arrays; ``kernel`` is its float64 kernel."""
    save = (0, 1)
    saved_names = ("self", "other")
    dt = None

    def forward(self, x, y):
        xp = module_of(x, y)
        dt = self.dt or np.result_type(x, y)
        out = self.kernel(xp.asarray(x, np.float64), xp.asarray(y, np.float64))
        return xp.asarray(out).astype(dt, copy=False)


class Zeta(_SpecialBinary, name="SpecialZetaBackward0"):
    kernel = staticmethod(_hurwitz64)

    def backward(self, g):
        x, q = self.saved_values
        if self.next_functions[0][0] is not None:
            raise NotImplementedError("the derivative for 'zeta' is not implemented.")
        return None, g * -x * zeta(x + 1.0, q)


class ZetaScalarSelf(Node, name="SpecialZetaBackward1"):
    """zeta(number, tensor)."""
    save = (0,)
    saved_names = ("other",)
    x = 2.0

    jvp = elementwise_jvp

    def forward(self, q):
        xp = array_module(q)
        return xp.asarray(_hurwitz64(xp.asarray(self.x, np.float64), xp.asarray(q, np.float64))).astype(q.dtype)

    def backward(self, g):
        (q,) = self.saved_values
        return g * -self.x * zeta(self.x + 1.0, q)


class ZetaScalarOther(Node, name="SpecialZetaBackward2"):
    """zeta(tensor, number): no derivative for the tensor (as PyTorch)."""
    y = 1.0

    jvp = elementwise_jvp

    def forward(self, x):
        xp = array_module(x)
        return xp.asarray(_hurwitz64(xp.asarray(x, np.float64), xp.asarray(self.y, np.float64))).astype(x.dtype)

    def backward(self, g):
        raise NotImplementedError("the derivative for 'zeta' is not implemented.")


class Igamma(_SpecialBinary, name="IgammaBackward0"):
    upper = False
    kernel = staticmethod(lambda a, x: _igamma64(a, x, False))

    def backward(self, g):
        a, x = self.saved_values
        if self.next_functions[0][0] is not None:
            what = "igammac" if self.upper else "igamma"
            raise NotImplementedError(f"the derivative for '{what}: input' is not implemented.")
        d = ((a - 1) * x.log() - x - lgamma(a)).exp()
        return None, g * (-d if self.upper else d)


class Igammac(Igamma, name="IgammacBackward0"):
    upper = True
    kernel = staticmethod(lambda a, x: _igamma64(a, x, True))


# ---- the reparameterised gamma sample (torch.distributions.Gamma.rsample)
def _standard_gamma_grad64(a, x):
    """dx/da of a standard gamma sample x at concentration a, by implicit differentiation of its CDF:
    -(dP/da) / (dP/dx), dP/da by a five-point difference (of Q in the upper tail, where P is near 1)."""
    with np.errstate(all="ignore"):
        h = 1e-3 * a
        upper = x > a

        def cdf(b):
            return np.where(upper, -_igamma64(b, x, True), _igamma64(b, x, False))
        dpda = (-cdf(a + 2 * h) + 8 * cdf(a + h) - 8 * cdf(a - h) + cdf(a - 2 * h)) / (12 * h)
        dpdx = np.exp((a - 1) * np.log(x) - x - _lgamma64(a))
        return -dpda / dpdx


class StandardGamma(Node, name="StandardGammaBackward0"):
    """A gamma(alpha, 1) sample drawn by the caller (``sample``), differentiable in alpha by implicit
    reparameterisation (the gradient is first order only, as PyTorch's _standard_gamma_grad)."""
    save = (0, -1)
    saved_names = ("self", "result")
    sample = None

    jvp = elementwise_jvp

    def forward(self, alpha):
        return self.sample

    def backward(self, g):
        alpha, x = self.saved_values
        xp = array_module(x._data)
        d = _standard_gamma_grad64(xp.asarray(alpha._data, np.float64), xp.asarray(x._data, np.float64))
        return g * Tensor._make(d.astype(x._data.dtype, copy=False))


class Deg2Rad(Node, name="Deg2RadBackward0"):
    k = _PI / 180.0

    jvp = elementwise_jvp

    def forward(self, x):
        return x * x.dtype.type(self.k)

    def backward(self, g):
        return g * self.k


class Rad2Deg(Deg2Rad, name="Rad2DegBackward0"):
    k = 180.0 / _PI


class MulScalar(Deg2Rad, name="MulBackward1"):
    """tensor * number inside a composite PyTorch writes in C++ (its mul.Scalar: special.ndtr's last step)."""
    k = 1.0


class Logit(Unary, name="LogitBackward0"):
    eps = None
    saved_attrs = ("eps=None if eps is None else float(eps)",)

    jvp = elementwise_jvp

    def forward(self, x):
        if self.eps is not None:     # as PyTorch: x < eps -> eps, else x > 1 - eps -> 1 - eps (eps > 0.5 too)
            lo, hi = x.dtype.type(self.eps), x.dtype.type(1.0 - self.eps)
            x = np.where(x < lo, lo, np.where(x > hi, hi, x))
        with np.errstate(all="ignore"):
            return np.log(x / (1 - x))

    def backward(self, g):
        (x,) = self.saved_values
        d = g / (x * (1 - x))
        if self.eps is None:
            return _where((x < 0) | (x > 1), float("nan"), d)
        return _where((x < self.eps) | (x > 1 - self.eps), 0.0, d)


class Sgn(ZeroGrad, name="SgnBackward0"):
    def forward(self, x):
        return np.sign(x) if x.dtype.kind != "b" else x.copy()


class Angle(ZeroGrad, name="AngleBackward0"):
    def forward(self, x):
        return np.where(x < 0, x.dtype.type(_PI), np.where(np.isnan(x), x, 0)).astype(x.dtype, copy=False)


class NanToNum(Unary, name="NanToNumBackward0"):
    opmath = False          # exact: a bfloat16 input keeps its own dtype's limits
    nan = 0.0
    posinf = None
    neginf = None

    jvp = elementwise_jvp

    def forward(self, x):
        if not D.is_floating(x.dtype):
            return x.copy()
        fi = D.finfo(D.from_numpy_dtype(x.dtype))
        if x.dtype.kind == "V":         # np.nan_to_num leaves ml_dtypes' types (bfloat16) as they are
            hi = fi.max if self.posinf is None else self.posinf
            lo = fi.min if self.neginf is None else self.neginf
            w = x.astype(np.float32)
            return np.where(np.isnan(w), self.nan, np.where(w == np.inf, hi, np.where(w == -np.inf, lo, w))).astype(x.dtype)
        return np.nan_to_num(x, nan=self.nan, posinf=fi.max if self.posinf is None else self.posinf,
                             neginf=fi.min if self.neginf is None else self.neginf)

    def backward(self, g):
        (x,) = self.saved_values
        return scale(g, np.isfinite(x._data))


class Frexp(Node, name="FrexpBackward0"):
    nondiff_outputs = (1,)

    def forward(self, x):
        m, e = np.frexp(x)
        self.e = e = e.astype(np.int32, copy=False)
        return m, e

    def backward(self, g):
        # the exponent is no output of the node: g / 2^exponent, the exponent a constant
        return g / Tensor._make(np.exp2(self.e).astype(g._data.dtype))


# ------------------------------------------------------------------------ binary primitives
class Xlogy(Node, name="XlogyBackward0"):
    """x * log(y + shift), 0 where x == 0 (unless y is NaN): xlogy (shift 0) and, below, xlog1py (shift 1)."""
    save = (0, 1)
    saved_names = ("self", "other")
    dt = None
    shift = 0
    _log = staticmethod(np.log)

    @staticmethod
    def _again(g, y):           # the function itself, for the gradient of self
        return xlogy(g, y)

    def forward(self, x, y):
        if self.dt is not None:
            xp = module_of(x, y)
            x, y = xp.asarray(x, self.dt), xp.asarray(y, self.dt)
        with np.errstate(all="ignore"):
            return np.where((x == 0) & ~np.isnan(y), 0, x * self._log(y)).astype(np.result_type(x, y), copy=False)

    def backward(self, g):
        x, y = self.saved_values
        nf = self.next_functions
        gy = g * x / (y + self.shift if self.shift else y) if nf[1][0] is not None else None   # other first
        gx = None
        if nf[0][0] is not None:    # PyTorch's: f(grad, other), 0 where self == 0 and other <= -shift
            gx = _where((x == 0) & (y <= -self.shift), 0.0, self._again(g, y))
        return gx, gy


class XlogyScalarSelf(Node, name="XlogyBackward1"):
    """number * log(tensor + shift): the number is a parameter (one next_function, as PyTorch)."""
    save = (0,)
    saved_names = ("other",)
    dt = None
    x = 0.0
    shift = 0
    _log = Xlogy.__dict__["_log"]

    jvp = elementwise_jvp

    def forward(self, y):
        return Xlogy.forward(self, array_module(y).asarray(self.x, y.dtype), y)

    def backward(self, g):
        (y,) = self.saved_values
        return g * self.x / (y + self.shift if self.shift else y)


class XlogyScalarOther(Node, name="XlogyBackward2"):
    """tensor * log(number + shift)."""
    save = (0,)
    saved_names = ("self",)
    dt = None
    y = 1.0
    shift = 0
    _log = Xlogy.__dict__["_log"]
    _again = Xlogy.__dict__["_again"]

    jvp = elementwise_jvp

    def forward(self, x):
        return Xlogy.forward(self, x, array_module(x).asarray(self.y, x.dtype))

    def backward(self, g):
        (x,) = self.saved_values
        gx = self._again(g, self.y)
        return _where(x == 0, 0.0, gx) if self.y <= -self.shift else gx


def _log1p_variant(cls, name):
    """The xlog1py node of an xlogy node class: log1p(y) = log(y + 1)."""
    return type(name, (cls,), {"__module__": __name__, "shift": 1, "_log": staticmethod(np.log1p),
                               "_again": staticmethod(lambda g, y: xlog1py(g, y))}, name=name)


Xlog1py = _log1p_variant(Xlogy, "SpecialXlog1PyBackward0")
Xlog1pyScalarSelf = _log1p_variant(XlogyScalarSelf, "SpecialXlog1PyBackward1")
Xlog1pyScalarOther = _log1p_variant(XlogyScalarOther, "SpecialXlog1PyBackward2")


class Hypot(Node, name="HypotBackward0"):
    save = (0, 1, -1)
    saved_names = ("self", "other", "result")
    dt = None

    def forward(self, x, y):
        return np.hypot(x, y, dtype=self.dt)

    def backward(self, g):
        x, y, out = self.saved_values
        nf = self.next_functions
        gy = g * y / out if nf[1][0] is not None else None
        return (g * x / out if nf[0][0] is not None else None), gy


class Logaddexp(Node, name="LogaddexpBackward0"):
    save = (0, 1)
    saved_names = ("self", "other")
    dt = None

    def forward(self, x, y):
        return np.logaddexp(x, y, dtype=self.dt)

    def backward(self, g):
        x, y = self.saved_values
        nf = self.next_functions
        gy = g / ((x - y).exp() + 1) if nf[1][0] is not None else None
        return (g / ((y - x).exp() + 1) if nf[0][0] is not None else None), gy


class Logaddexp2(Logaddexp, name="Logaddexp2Backward0"):
    def forward(self, x, y):
        return np.logaddexp2(x, y, dtype=self.dt)

    def backward(self, g):
        x, y = self.saved_values
        nf = self.next_functions
        gy = g / (E.pow(2.0, x - y) + 1) if nf[1][0] is not None else None
        return (g / (E.pow(2.0, y - x) + 1) if nf[0][0] is not None else None), gy


class Copysign(Node, name="CopysignBackward0"):
    save = (0, -1)
    saved_names = ("self", "result")
    dt = None

    def forward(self, x, y):
        return np.copysign(x, y, dtype=self.dt)

    def backward(self, g):
        x, out = self.saved_values
        nf = self.next_functions
        gy = _zeros(g) if nf[1][0] is not None else None
        # PyTorch's copysign_tensor_self_backward: grad * result / self, zero where self == 0
        gx = g * _where(x == 0, 0.0, out / x) if nf[0][0] is not None else None
        return gx, gy


class CopysignScalar(Node, name="CopysignBackward1"):
    """copysign(tensor, number): the number is a parameter."""
    save = (0, -1)
    saved_names = ("self", "result")
    other = 1.0

    jvp = elementwise_jvp

    def forward(self, x):
        return np.copysign(x, array_module(x).asarray(self.other, x.dtype))

    def backward(self, g):
        x, out = self.saved_values
        return g * _where(x == 0, 0.0, out / x)


class Ldexp(Node, name="LdexpBackward0"):
    save = (0, 1)
    saved_names = ("self", "other")
    dt = None

    def forward(self, x, y):
        dt = self.dt or np.result_type(x, y)
        xp = module_of(x, y)
        return (xp.asarray(x, dt) * np.exp2(xp.asarray(y, dt))).astype(dt, copy=False)

    def backward(self, g):
        x, y = self.saved_values
        nf = self.next_functions
        p = E.pow(2.0, y)
        gy = g * x * p * _LN2 if nf[1][0] is not None else None
        return (g * p if nf[0][0] is not None else None), gy


class Heaviside(Node, name="NotImplemented"):
    """heaviside: PyTorch defines no derivative (backward raises)."""

    def forward(self, x, v):
        return np.where(x == 0, v, (x > 0)).astype(np.result_type(x, v), copy=False)

    def backward(self, g):
        raise RuntimeError("derivative for aten::heaviside is not implemented")


class Nextafter(Node, name="NextafterBackward0"):
    dt = None

    def forward(self, x, y):
        return np.nextafter(x, y, dtype=self.dt)

    def backward(self, g):
        nf = self.next_functions
        return g, (_zeros(g) if nf[1][0] is not None else None)


class IntBinary(Node, name="NotImplemented"):
    """gcd, lcm, bitwise shifts: integer results, never differentiable."""
    dt = None
    op = None

    def forward(self, x, y):
        if self.dt is not None:
            xp = module_of(x, y)
            x, y = xp.asarray(x, self.dt), xp.asarray(y, self.dt)
        return self.op(x, y)


def _lshift(x, y):
    bits = x.dtype.itemsize * 8
    return np.where((y < 0) | (y >= bits), 0, np.left_shift(x, np.clip(y, 0, bits - 1))).astype(x.dtype, copy=False)


def _rshift(x, y):
    bits = x.dtype.itemsize * 8
    big = (y < 0) | (y >= bits)
    return np.where(big, np.where(x < 0, -1, 0) if x.dtype.kind == "i" else 0,
                    np.right_shift(x, np.clip(y, 0, bits - 1))).astype(x.dtype, copy=False)


class Addcmul(Node, name="AddcmulBackward0"):
    save = (1, 2)
    saved_names = ("tensor1", "tensor2")
    save_if = ((2,), (1,))
    dt = None
    value = 1

    def forward(self, x, a, b):
        dt = self.dt
        return np.add(x, np.multiply(a, b, dtype=dt) * (self.value if dt is None else module_of(x, a, b).asarray(self.value, dt)),
                      dtype=dt)

    def backward(self, g):
        a, b = self.saved_values
        nf = self.next_functions
        v = self.value
        gb = g * (a * v) if nf[2][0] is not None else None        # tensor2, tensor1, self (alphabetical)
        ga = g * (b * v) if nf[1][0] is not None else None
        return (g if nf[0][0] is not None else None), ga, gb


class Addcdiv(Addcmul, name="AddcdivBackward0"):
    def forward(self, x, a, b):
        dt = self.dt
        return np.add(x, np.true_divide(a, b, dtype=dt) * (self.value if dt is None else module_of(x, a, b).asarray(self.value, dt)),
                      dtype=dt)

    def backward(self, g):
        a, b = self.saved_values
        nf = self.next_functions
        v = self.value
        gb = -g * (a * v / (b * b)) if nf[2][0] is not None else None
        ga = g * (v / b) if nf[1][0] is not None else None
        return (g if nf[0][0] is not None else None), ga, gb


# ------------------------------------------------------------------------ activations
class Hardshrink(Unary, name="HardshrinkBackward0"):
    lambd = 0.5

    jvp = elementwise_jvp

    def forward(self, x):
        return np.where((x > self.lambd) | (x < -self.lambd), x, 0).astype(x.dtype, copy=False)

    def backward(self, g):
        (x,) = self.saved_values
        xa = x._data
        return scale(g, (xa > self.lambd) | (xa < -self.lambd), x)


class Softshrink(Unary, name="SoftshrinkBackward0"):
    """x - lambd above lambd, x + lambd below -lambd, else x * 0 (PyTorch's kernel: -0.0 for negative x)."""
    lambd = 0.5

    jvp = elementwise_jvp

    def forward(self, x):
        lam = x.dtype.type(self.lambd)
        return np.where(x > lam, x - lam, np.where(x < -lam, x + lam, x * 0)).astype(x.dtype, copy=False)

    def backward(self, g):
        (x,) = self.saved_values
        xa = x._data
        return scale(g, (xa > self.lambd) | (xa < -self.lambd), x)


class Rrelu(Unary, name="RreluWithNoiseBackward0"):
    """rrelu: negative inputs scaled by a noise (random in training, (lower + upper) / 2 in evaluation)."""
    lower = 1.0 / 8
    upper = 1.0 / 3
    noise = None

    jvp = elementwise_jvp

    def forward(self, x):
        if self.noise is None:
            return np.where(x > 0, x, x * x.dtype.type((self.lower + self.upper) / 2)).astype(x.dtype, copy=False)
        return (x * self.noise).astype(x.dtype, copy=False)

    def backward(self, g):
        (x,) = self.saved_values
        if self.noise is None:
            f = np.where(x._data > 0, 1.0, (self.lower + self.upper) / 2)
        else:
            f = self.noise
        return scale(g, f.astype(x._data.dtype, copy=False), x)


class RreluInplace(Rrelu, name="RreluWithNoiseBackward1"):
    pass


class Prelu(Node, name="PreluKernelBackward0"):
    save = (0, 1)
    saved_names = ("self", "weight")

    def forward(self, x, w):
        return np.where(x > 0, x, x * _prelu_w(w, x.ndim)).astype(np.result_type(x, w), copy=False)

    def backward(self, g):
        x, w = self.saved_values
        nf = self.next_functions
        pos = x > 0
        gw = None
        if nf[1][0] is not None:
            t = _where(pos, 0.0, x * g)
            if w._data.size == 1:
                gw = t.sum().reshape(w.shape)
            else:
                dims = [d for d in range(x.dim()) if d != 1]
                gw = t.sum(dims).reshape(w.shape) if dims else t.reshape(w.shape)
        gx = None
        if nf[0][0] is not None:
            wb = w if w._data.size == 1 or x.dim() < 2 else w.reshape((-1,) + (1,) * (x.dim() - 2))
            if w.requires_grad:
                gx = _where(pos, g, wb * g)
            else:       # linked to x with derivative zero, as PyTorch's double backward
                gx = scale(g, np.where(pos._data, 1, wb._data).astype(g._data.dtype), x)
        return gx, gw


def _prelu_w(w, ndim):
    if w.size == 1 or ndim < 2:
        return w.reshape(()) if w.size == 1 else w
    return w.reshape((-1,) + (1,) * (ndim - 2))


# ========================================================================= public functions
def _float_unary(cls, name):
    """An op whose integer and bool inputs compute in the default float dtype (asin, lgamma, ...)."""
    fn = _unary(cls)
    fn.__name__ = name
    return fn


asin = arcsin = _float_unary(Asin, "asin")
acos = arccos = _float_unary(Acos, "acos")
atan = arctan = _float_unary(Atan, "atan")
asinh = arcsinh = _float_unary(Asinh, "asinh")
acosh = arccosh = _float_unary(Acosh, "acosh")
atanh = arctanh = _float_unary(Atanh, "atanh")
sinh = _float_unary(Sinh, "sinh")
cosh = _float_unary(Cosh, "cosh")
exp2 = _float_unary(Exp2, "exp2")
erfc = _float_unary(Erfc, "erfc")
erfinv = _float_unary(Erfinv, "erfinv")
lgamma = _float_unary(Lgamma, "lgamma")
digamma = _float_unary(Digamma, "digamma")
i0 = _float_unary(I0, "i0")
sinc = _float_unary(Sinc, "sinc")


def _special_unary(cls, name):
    """A torch.special function of one Tensor (integers compute in the default float dtype)."""
    fn = _unary(cls)

    def special_fn(input, *, out=None):
        if not isinstance(input, Tensor):
            raise not_tensor(f"special_{name}", input)
        return fn(input, out=out)
    special_fn.__name__ = special_fn.__qualname__ = name
    return special_fn


erfcx = _special_unary(Erfcx, "erfcx")
i0e = _special_unary(I0e, "i0e")
i1 = _special_unary(I1, "i1")
i1e = _special_unary(I1e, "i1e")
ndtri = _special_unary(Ndtri, "ndtri")
log_ndtr = _special_unary(LogNdtr, "log_ndtr")
entr = _special_unary(Entr, "entr")
deg2rad = _float_unary(Deg2Rad, "deg2rad")
rad2deg = _float_unary(Rad2Deg, "rad2deg")


def _tensor_in(fname, input):
    if not isinstance(input, Tensor):
        raise not_tensor(fname, input)
    return input


def polygamma(n, input, *, out=None):
    """The n-th derivative of digamma."""
    _tensor_in("polygamma", input)
    if not isinstance(n, (int, np.integer)) or isinstance(n, bool):
        raise TypeError(f"polygamma(): argument 'n' (position 1) must be int, not {type(n).__name__}")
    if n < 0:
        raise RuntimeError("polygamma(n, x) does not support negative n.")
    x = _float_input(input)
    r = Polygamma.apply(x, n=int(n))
    return _out(r, out)


def mvlgamma(input, p, *, out=None):
    """Multivariate log-gamma of dimension p."""
    _tensor_in("mvlgamma", input)
    if p < 1:
        raise RuntimeError("p has to be greater than or equal to 1")
    return _out(Mvlgamma.apply(_float_input(input), p=int(p)), out)


def logit(input, eps=None, *, out=None):
    """log(x / (1 - x)), x clamped to [eps, 1 - eps] when eps is given."""
    _tensor_in("logit", input)
    return _out(Logit.apply(_float_input(input), eps=None if eps is None else float(eps)), out)


def sgn(input, *, out=None):
    """sign for real tensors (grad_fn SgnBackward0)."""
    _tensor_in("sgn", input)
    return _out(Sgn.apply(input), out)


def angle(input, *, out=None):
    """The argument of each element: pi for negative reals, 0 otherwise (NaN stays NaN)."""
    _tensor_in("angle", input)
    return _out(Angle.apply(_float_input(input)), out)


def nan_to_num(input, nan=0.0, posinf=None, neginf=None, *, out=None):
    """NaN, +inf and -inf replaced by nan, posinf (default: the dtype's max) and neginf (its min)."""
    _tensor_in("nan_to_num", input)
    return _out(NanToNum.apply(input, nan=nan, posinf=posinf, neginf=neginf), out)


def signbit(input, *, out=None):
    """True where the sign bit is set (-0.0 included)."""
    _tensor_in("signbit", input)
    a = input._data
    xp = array_module(a)
    r = np.signbit(a) if D.is_floating(a.dtype) else (a < 0 if a.dtype.kind == "i" else xp.zeros(a.shape, bool))
    return _out(Tensor._make(xp.asarray(r)), out)


def isreal(input):
    """True everywhere for a real tensor."""
    _tensor_in("isreal", input)
    return Tensor._make(array_module(input._data).ones(input._data.shape, bool))


def frexp(input, *, out=None):
    """(mantissa, exponent) with mantissa in [0.5, 1) and input = mantissa * 2 ** exponent."""
    _tensor_in("frexp", input)
    if not D.is_floating(input._data.dtype):
        raise RuntimeError("torch.frexp() only supports floating-point dtypes")
    from . import return_types
    return return_types.frexp(*Frexp.apply(input))


def positive(input):
    """input itself (bool tensors are refused)."""
    _tensor_in("positive", input)
    if input._data.dtype.kind == "b":
        raise RuntimeError("The `+` operator, on a bool tensor is not supported.")
    return input


def _identity(fname):
    def fn(input):
        _tensor_in(fname, input)
        return input
    fn.__name__ = fname
    fn.__doc__ = f"{fname} of a real tensor: the tensor itself."
    return fn


class NegView(E.Neg, name="NegViewBackward0"):
    pass


def _neg_view(input):
    """PyTorch's negative view: the negated values (computed, see primitives/complex.py) with the negative bit."""
    _tensor_in("_neg_view", input)
    r = NegView.apply(input)
    r._bits = input._bits ^ 2
    return r


def resolve_neg(input):
    """The tensor itself, or where it has the negative bit a copy without it (the values are the same)."""
    _tensor_in("resolve_neg", input)
    if not input._bits & 2:
        return input
    r = input.clone()
    r._bits = input._bits & ~2
    return r


def conj_physical_(input):
    return _tensor_in("conj_physical_", input)


def is_neg(input):
    """Whether the tensor has PyTorch's negative bit (_neg_view(), the imaginary part of a conjugate)."""
    _tensor_in("is_neg", input)
    return bool(input._bits & 2)


def _float_binary(kernel):
    """Binary ops with float loops only (hypot, logaddexp): PyTorch's NotImplementedError otherwise."""
    def check(a, b):
        from .. import _dtype as D
        ts = [t for t in (a, b) if isinstance(t, Tensor)]
        dt = D.result_type_of(ts, [t for t in (a, b) if not isinstance(t, Tensor)])
        if not dt.is_floating_point:
            raise not_implemented_for(kernel, dt.np)
    return check


def hypot(input, other, *, out=None):
    """sqrt(input^2 + other^2)."""
    _float_binary("hypot_cpu")(input, other)
    return _out(binary(Hypot, input, other), out)


def logaddexp(input, other, *, out=None):
    """log(exp(input) + exp(other))."""
    _float_binary("logaddexp_cpu")(input, other)
    return _out(binary(Logaddexp, input, other), out)


def logaddexp2(input, other, *, out=None):
    """log2(2^input + 2^other)."""
    _float_binary("logaddexp2_cpu")(input, other)
    return _out(binary(Logaddexp2, input, other), out)


def _scalar_sided(tt, scalar_self, scalar_other):
    """The public function of a float binary special function whose number operand is a parameter of its own
    node (PyTorch's Backward1 / Backward2 for a number self / other)."""
    def fn(input, other, *, out=None):
        if isinstance(input, Tensor) != isinstance(other, Tensor) and is_number(
                input if isinstance(other, Tensor) else other):
            t = other if isinstance(other, Tensor) else input
            from ._dispatch import _scalar_result
            dt = _scalar_result(t, input if t is other else other, True)
            x = t if t._data.dtype == dt else t.to(_dt(dt))
            if t is other:
                return _out(scalar_self.apply(x, x=float(input)), out)
            return _out(scalar_other.apply(x, y=float(other)), out)
        return _out(binary(tt, input, other, float_only=True), out)
    return fn


xlogy = _scalar_sided(Xlogy, XlogyScalarSelf, XlogyScalarOther)
xlogy.__name__ = xlogy.__qualname__ = "xlogy"
xlogy.__doc__ = "input * log(other), 0 where input == 0 (unless other is NaN)."
xlog1py = _scalar_sided(Xlog1py, Xlog1pyScalarSelf, Xlog1pyScalarOther)
xlog1py.__name__ = xlog1py.__qualname__ = "xlog1py"
xlog1py.__doc__ = "input * log1p(other), 0 where input == 0 (unless other is NaN)."
zeta = _scalar_sided(Zeta, ZetaScalarSelf, ZetaScalarOther)
zeta.__name__ = "zeta"
zeta.__doc__ = "The Hurwitz zeta function zeta(input, other) = sum_k (other + k) ** -input."


def _igamma_fn(cls, fname, kernel):
    def fn(input, other, *, out=None):
        for i, (arg, v) in enumerate((("input", input), ("other", other))):
            if not isinstance(v, Tensor):
                raise TypeError(f"{fname}(): argument '{arg}' (position {i + 1}) must be Tensor, not "
                                f"{type(v).__name__}")
        from .. import _dtype as D
        dt = D.result_type_of([input, other])
        if not dt.is_floating_point:
            raise not_implemented_for(kernel, dt.np)
        return _out(binary(cls, input, other, float_only=True), out)
    fn.__name__ = fname.replace("special_", "")
    return fn


gammainc = _igamma_fn(Igamma, "special_gammainc", "igamma_cpu")
gammainc.__doc__ = "The regularized lower incomplete gamma function P(input, other) (no derivative for input)."
gammaincc = _igamma_fn(Igammac, "special_gammaincc", "igammac_cpu")
gammaincc.__doc__ = "The regularized upper incomplete gamma function Q(input, other) (no derivative for input)."
igamma = _igamma_fn(Igamma, "igamma", "igamma_cpu")          # torch.igamma / igammac: the same functions
igamma.__doc__ = gammainc.__doc__
igammac = _igamma_fn(Igammac, "igammac", "igammac_cpu")
igammac.__doc__ = gammaincc.__doc__


def _default_np():
    from .. import _dtype as D
    return D.get_default_dtype().np


def _dt(npdt):
    from .. import _dtype as D
    return D._NP_TO_DT[np.dtype(npdt)]


def copysign(input, other, *, out=None):
    """|input| with the sign of other."""
    if isinstance(input, Tensor) and is_number(other):
        return _out(CopysignScalar.apply(_float_input(input), other=float(other)), out)
    return _out(binary(Copysign, input, other, float_only=True), out)


def ldexp(input, other, *, out=None):
    """input * 2 ** other."""
    return _out(binary(Ldexp, input, other, float_only=True), out)


def heaviside(input, values, *, out=None):
    """0 where input < 0, values where input == 0, 1 where input > 0."""
    _tensor_in("heaviside", input)
    if not isinstance(values, Tensor):
        raise not_tensor("heaviside", values, "values", 2)
    if input._data.dtype != values._data.dtype:
        raise RuntimeError("heaviside is not yet implemented for tensors with different dtypes.")
    return _out(Heaviside.apply(input, values), out)


def nextafter(input, other, *, out=None):
    """The next representable float after input toward other."""
    _tensor_in("nextafter", input)
    if not isinstance(other, Tensor):
        raise not_tensor("nextafter", other, "other", 2)
    return _out(binary(Nextafter, input, other), out)


def _int_binary(op, kernel, fname, tensors_only=False):
    def fn(input, other, *, out=None):
        from .. import _dtype as D
        ts = [t for t in (input, other) if isinstance(t, Tensor)]
        if not ts:
            raise not_tensor(fname, input)
        if tensors_only and len(ts) < 2:
            raise not_tensor(fname, input) if ts[0] is other else not_tensor(fname, other, "other", 2)
        dt = D.result_type_of(ts, [t for t in (input, other) if not isinstance(t, Tensor)])
        if dt.np.kind not in "iu":
            raise not_implemented_for(kernel, dt.np)
        return _out(binary(IntBinary, input, other, op=op), out)
    fn.__name__ = fname
    fn.__doc__ = f"Elementwise {fname} of integer tensors."
    return fn


gcd = _int_binary(np.gcd, "gcd_cpu", "gcd", True)
lcm = _int_binary(np.lcm, "lcm_cpu", "lcm", True)
bitwise_left_shift = _int_binary(_lshift, "lshift_cpu", "bitwise_left_shift")
bitwise_right_shift = _int_binary(_rshift, "rshift_cpu", "bitwise_right_shift")


def float_power(input, exponent, *, out=None):
    """input ** exponent computed in float64 (grad_fn PowBackward*)."""
    from .._dtype import float64
    if isinstance(input, Tensor):
        b = input.to(float64)
        e = exponent.to(float64) if isinstance(exponent, Tensor) else float(exponent)
    else:
        b = float(input)
        e = _tensor_in("float_power", exponent).to(float64)
    return _out(E.pow(b, e), out)


def _addc(cls, fname):
    def fn(input, tensor1, tensor2, *rest, value=1, out=None):
        from .. import _dtype as D
        if len(rest) == 1 and is_number(tensor1) and isinstance(rest[0], Tensor):   # (input, value, t1, t2)
            E.deprecated_overload(fname, f"{fname}(Tensor input, Number value, Tensor tensor1, Tensor tensor2, *, "
                                  "Tensor out = None)", f"{fname}(Tensor input, Tensor tensor1, Tensor tensor2, *, "
                                  "Number value = 1, Tensor out = None)")
            tensor1, tensor2, value = tensor2, rest[0], tensor1
        elif rest:
            raise TypeError(f"{fname}() takes 3 positional arguments but {3 + len(rest)} were given")
        for i, (n, t) in enumerate((("input", input), ("tensor1", tensor1), ("tensor2", tensor2))):
            if not isinstance(t, Tensor):
                raise not_tensor(fname, t, n, i + 1)
        if not is_number(value):
            raise not_number(fname, value, "value")
        dt = D.result_type_of([input, tensor1, tensor2])
        if cls is Addcdiv and not dt.is_floating_point:
            raise RuntimeError(
                "Integer division with addcdiv is no longer supported, and in a future  release addcdiv will perform "
                "a true division of tensor1 and tensor2. The historic addcdiv behavior can be implemented as (input + "
                "value * torch.trunc(tensor1 / tensor2)).to(input.dtype) for integer inputs and as (input + value * "
                "tensor1 / tensor2) for float inputs. The future addcdiv behavior is just the latter implementation: "
                "(input + value * tensor1 / tensor2), for all dtypes.")
        if not dt.is_floating_point and isinstance(value, (float, np.floating)):
            raise RuntimeError("For integral input tensors, argument value must not be a floating point number.")
        return _out(cls.apply(input, tensor1, tensor2, value=value, dt=dt.np), out)
    fn.__name__ = fname
    return fn


addcmul = _addc(Addcmul, "addcmul")
addcdiv = _addc(Addcdiv, "addcdiv")


def hardshrink(input, lambd=0.5):
    """x where |x| > lambd, else 0."""
    E._act(input, "hardshrink", "hardshrink_cpu", (("lambd", lambd, 2),))
    return Hardshrink.apply(input, lambd=lambd)


def softshrink(input, lambd=0.5):
    """F.softshrink (torch._C._nn.softshrink): shrinks x toward 0 by lambd, 0 inside [-lambd, lambd]."""
    from .._errors import scalar_name
    E._act(input, "softshrink", "softshrink_check", (("lambd", lambd, 2),))
    dt = input._data.dtype
    big = float(np.finfo(dt).max)
    if not 0 <= lambd <= big:
        raise RuntimeError(f"lambda must be in range [0, {big:g}] for input dtype {scalar_name(dt)}, but found "
                           f"{lambd:g}")
    return Softshrink.apply(input, lambd=lambd)


def rrelu(input, lower=1.0 / 8, upper=1.0 / 3, training=False, generator=None):
    """torch.rrelu (F.rrelu is the same with ``inplace``)."""
    return _rrelu(input, lower, upper, training, False, generator)


def _rrelu(input, lower=1.0 / 8, upper=1.0 / 3, training=False, inplace=False, generator=None):
    """Randomized leaky ReLU: in training, each negative element is scaled by a slope drawn uniformly from
    [lower, upper]; in evaluation by (lower + upper) / 2."""
    E._act(input, "rrelu", "rrelu_with_noise_out_cpu" if training else "leaky_relu_cpu",
           (("lower", lower, 2), ("upper", upper, 3)))
    noise = None
    if training:
        # PyTorch's CPU kernel: one uniform_real_distribution<double>(lower, upper) draw per element <= 0, in order
        from .._creation import _gen
        x = input._data
        neg = x <= 0
        u = _gen(generator)._uniform01(int(neg.sum()), np.float64) * (upper - lower) + lower
        noise = input._xp.ones(x.shape, x.dtype)
        noise[neg] = input._xp.asarray(u.astype(x.dtype))
    kw = dict(lower=lower, upper=upper, noise=noise)
    if inplace:
        return apply_inplace(input, RreluInplace, **kw)
    return Rrelu.apply(input, **kw)


def rrelu_(input, lower=1.0 / 8, upper=1.0 / 3, training=False, generator=None):
    return _rrelu(input, lower, upper, training, True, generator)


def prelu(input, weight):
    """x where x > 0, else weight * x (weight per channel, dim 1, or one value)."""
    _tensor_in("prelu", input)
    if not isinstance(weight, Tensor):
        raise not_tensor("prelu", weight, "weight", 2)
    n = weight._data.size
    if n != 1:
        if input.dim() == 0:
            raise RuntimeError("Not allow zero-dim input tensor.")
        c = input.shape[1] if input.dim() >= 2 else 1
        if n != c:
            raise RuntimeError(f"Mismatch of parameter numbers and input channel size. Found parameter numbers = "
                               f"{n} and channel size = {c}.")
    return Prelu.apply(input, weight)


def softmax(input, dim, dtype=None):
    from . import nn as N
    return N.softmax(input, dim, dtype=dtype)


def log_softmax(input, dim, dtype=None):
    from . import nn as N
    return N.log_softmax(input, dim, dtype=dtype)


def threshold(input, threshold, value):
    return E.threshold(input, threshold, value)


def threshold_(input, threshold, value):
    return E.threshold(input, threshold, value, inplace=True)


def relu_(input):
    return E.relu(input, inplace=True)


def selu_(input):
    return E.selu(input, inplace=True)


def celu_(input, alpha=1.0):
    return E.celu(input, alpha, inplace=True)


def _inplace_fn(name):
    """torch.X_(input, *args): input.X_(*args)."""
    def fn(input, *args, **kwargs):
        _tensor_in(name, input)
        return getattr(input, name)(*args, **kwargs)
    fn.__name__ = name
    fn.__doc__ = f"In-place {name[:-1]} (input.{name}(...))."
    return fn


# the torch.X_ functions that call Tensor.X_
TORCH_INPLACE = ("abs_", "acos_", "acosh_", "arccos_", "arccosh_", "arcsin_", "arcsinh_", "arctan_", "arctanh_",
                 "asin_", "asinh_", "atan_", "atanh_", "ceil_", "clamp_", "clamp_max_", "clamp_min_", "clip_",
                 "cos_", "cosh_", "deg2rad_", "erf_", "erfc_", "exp2_", "exp_", "expm1_", "fix_", "floor_", "frac_",
                 "gcd_", "i0_", "lcm_", "ldexp_", "log10_", "log1p_", "log2_", "log_", "logit_", "nan_to_num_",
                 "neg_", "negative_", "rad2deg_", "reciprocal_", "round_", "rsqrt_", "sigmoid_", "sin_", "sinc_",
                 "sinh_", "sqrt_", "square_", "tan_", "tanh_", "trunc_", "xlogy_")
INPLACE_FUNCS = {n: _inplace_fn(n) for n in TORCH_INPLACE}


def sign_inplace(methods):
    """Give each torch.X_ the parameters of the out-of-place X (less ``out``), so that keyword names and
    positions are PyTorch's (called by primitives/__init__.py once the method table is built)."""
    import inspect
    for name, fn in INPLACE_FUNCS.items():
        base = methods.get(name[:-1])
        try:
            sig = inspect.signature(base)
        except (TypeError, ValueError):
            continue
        ps = [p for p in sig.parameters.values() if p.name != "out"]
        if ps and ps[0].name == "self":
            ps[0] = ps[0].replace(name="input")
        fn.__signature__ = sig.replace(parameters=ps)


def float_power_(self, exponent):
    """In-place float_power: self must already be float64."""
    if self._data.dtype != np.float64:
        from ._inplace import _tname
        raise RuntimeError(f"the base given to float_power_ has dtype {_tname(self._data.dtype)} but the operation's "
                           "result requires dtype Double")
    from .index import via_, _ViaShared
    return via_(self, lambda t: float_power(t, exponent), exponent, cls=_ViaShared)


def polygamma_(self, n):
    """In-place polygamma (grad_fn PolygammaBackward1)."""
    _float_result_into(self)
    return apply_inplace(self, PolygammaInplace, n=int(n))


class AsinhInplace(Asinh, name="AsinhBackward1"):
    jvp = elementwise_jvp

    def backward(self, g):
        raise NotImplementedError("the derivative for 'inplace version of asinh' is not implemented.")


class AcoshInplace(Acosh, name="AcoshBackward1"):
    jvp = elementwise_jvp

    def backward(self, g):
        raise NotImplementedError("the derivative for 'inplace version of acosh' is not implemented.")


def asinh_(self):
    """In-place asinh: PyTorch defines no derivative for it (grad_fn AsinhBackward1 raises)."""
    _float_result_into(self)
    return apply_inplace(self, AsinhInplace)


def acosh_(self):
    """In-place acosh: PyTorch defines no derivative for it (grad_fn AcoshBackward1 raises)."""
    _float_result_into(self)
    return apply_inplace(self, AcoshInplace)


def _float_result_into(self):
    """An in-place float op on an integer tensor: PyTorch's cast error."""
    if not D.is_floating(self._data.dtype):
        from ._inplace import _tname
        raise RuntimeError(f"result type {_tname(_default_np())} can't be cast to the desired output type "
                           f"{_tname(self._data.dtype)}")


def atanh_(self):
    """In-place atanh: PyTorch defines no derivative for it (grad_fn AtanhBackward1 raises)."""
    _float_result_into(self)
    return apply_inplace(self, AtanhInplace)


def _cmp_inplace(base, npfn):
    """x.eq_(other) & co.: the comparison written into x as x's dtype; zero gradients (as PyTorch, whose
    grad_fn is EqBackward0 for a number, EqBackward1 for a tensor)."""
    class Scalar(Node, name=f"{base}Backward0"):
        other = 0

        def forward(self, x):
            return npfn(x, self.other).astype(x.dtype)

        def backward(self, g):
            return _zeros(g)

    class Tens(Node, name=f"{base}Backward1"):
        def forward(self, x, y):
            return npfn(x, y).astype(x.dtype)

        def backward(self, g):
            nf = self.next_functions
            return tuple(_zeros(g) if nf[i][0] is not None else None for i in (0, 1))

    def method(self, other):
        from ._inplace import inplace_apply
        if isinstance(other, Tensor):
            return inplace_apply(self, Tens, (other,), {})
        if not is_number(other):
            raise TypeError(f"{base.lower()}_(): argument 'other' (position 1) must be Tensor, not "
                            f"{type(other).__name__}")
        return inplace_apply(self, Scalar, (), {"other": other})
    return method


_CMP_INPLACE = {n: _cmp_inplace(b, f) for n, b, f in (
    ("eq", "Eq", np.equal), ("ne", "Ne", np.not_equal), ("lt", "Lt", np.less), ("le", "Le", np.less_equal),
    ("gt", "Gt", np.greater), ("ge", "Ge", np.greater_equal))}


# Tensor methods (installed by primitives/__init__.py)
METHODS = {
    "igamma": igamma, "igammac": igammac,
    "asin": asin, "arcsin": asin, "acos": acos, "arccos": acos, "atan": atan, "arctan": atan,
    "asinh": asinh, "arcsinh": asinh, "acosh": acosh, "arccosh": acosh, "atanh": atanh, "arctanh": atanh,
    "sinh": sinh, "cosh": cosh, "arctan2": E.atan2, "exp2": exp2, "erfc": erfc, "erfinv": erfinv,
    "lgamma": lgamma, "digamma": digamma, "polygamma": lambda self, n: polygamma(n, self), "mvlgamma": mvlgamma,
    "i0": i0, "sinc": sinc, "deg2rad": deg2rad, "rad2deg": rad2deg, "logit": logit, "sgn": sgn, "angle": angle,
    "nan_to_num": nan_to_num, "signbit": signbit, "isreal": isreal, "frexp": frexp, "positive": positive,
    "resolve_neg": resolve_neg, "is_neg": is_neg, "conj_physical_": conj_physical_, "_neg_view": _neg_view,
    "hypot": hypot, "logaddexp": logaddexp, "logaddexp2": logaddexp2, "xlogy": xlogy, "copysign": copysign,
    "ldexp": ldexp, "heaviside": heaviside, "nextafter": nextafter, "gcd": gcd, "lcm": lcm,
    "bitwise_left_shift": bitwise_left_shift, "bitwise_right_shift": bitwise_right_shift,
    "float_power": float_power, "float_power_": float_power_, "addcmul": addcmul, "addcdiv": addcdiv,
    "hardshrink": hardshrink, "prelu": prelu,
    "atanh_": atanh_, "arctanh_": atanh_, "polygamma_": polygamma_,
    "asinh_": asinh_, "arcsinh_": asinh_, "acosh_": acosh_, "arccosh_": acosh_,
    **{a + "_": _CMP_INPLACE[b] for a, b in (("eq", "eq"), ("ne", "ne"), ("lt", "lt"), ("le", "le"), ("gt", "gt"),
                                             ("ge", "ge"), ("not_equal", "ne"), ("less", "lt"), ("less_equal", "le"),
                                             ("greater", "gt"), ("greater_equal", "ge"))},
    "__lshift__": bitwise_left_shift, "__rshift__": bitwise_right_shift,
    "__rlshift__": lambda s, o: bitwise_left_shift(o, s), "__rrshift__": lambda s, o: bitwise_right_shift(o, s),
}
# the in-place Tensor.X_ computed by the out-of-place X (installed through primitives/__init__._via)
INPLACE_VIA = ("igamma", "igammac", "asin", "arcsin", "acos", "arccos", "atan", "arctan",
               "sinh", "cosh", "arctan2", "exp2", "erfc", "erfinv", "lgamma", "digamma",
               "mvlgamma", "i0", "sinc", "deg2rad", "rad2deg", "logit", "sgn", "nan_to_num",
               "hypot", "xlogy", "copysign", "ldexp", "heaviside", "nextafter", "gcd", "lcm",
               "bitwise_left_shift", "bitwise_right_shift", "addcmul", "addcdiv", "fix", "true_divide",
               "logical_and", "logical_or", "logical_xor", "logical_not",
               "bitwise_and", "bitwise_or", "bitwise_xor", "bitwise_not")
