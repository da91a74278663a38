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
from .._array import array_module, module_of
from ..autograd.graph import Node
from .._errors import not_tensor, not_implemented_for, is_number, not_number
from ._dispatch import binary, apply_inplace
from . import elementwise as E
from .elementwise import Unary, ZeroGrad, _unary, _float_input, _out, _where, _zeros, scale
from ._kernels import _f64, _erfc64, _erf64, _erfc

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


def _bessel_i(x, nu):
    """Modified Bessel I_0 / I_1: power series for |x| <= 20, asymptotic series beyond."""
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
    out[small] = s
    xb = a[~small]
    mu = 4.0 * nu * nu
    term = array_module(xb).ones_like(xb)
    s = term.copy()
    for k in range(1, 30):
        term = term * -(mu - (2 * k - 1) ** 2) / (k * 8.0 * xb)
        s += term
    with np.errstate(all="ignore"):
        out[~small] = np.exp(xb - 0.5 * np.log(2 * _PI * xb)) * s
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


# ----------------------------------------------------------------------- unary primitives
class Asin(Unary, name="AsinBackward0"):
    def forward(self, x):
        return np.arcsin(x)

    def backward(self, g):
        (x,) = self.saved_values
        return g * (-x * x + 1).rsqrt()


class Acos(Unary, name="AcosBackward0"):
    def forward(self, x):
        return np.arccos(x)

    def backward(self, g):
        (x,) = self.saved_values
        return g * -(-x * x + 1).rsqrt()


class Atan(Unary, name="AtanBackward0"):
    def forward(self, x):
        return np.arctan(x)

    def backward(self, g):
        (x,) = self.saved_values
        return g / (x * x + 1)


class Asinh(Unary, name="AsinhBackward0"):
    def forward(self, x):
        return np.arcsinh(x)

    def backward(self, g):
        (x,) = self.saved_values
        return g * (x * x + 1).rsqrt()


class Acosh(Unary, name="AcoshBackward0"):
    def forward(self, x):
        return np.arccosh(x)

    def backward(self, g):
        (x,) = self.saved_values
        return g * (x * x - 1).rsqrt()


class Atanh(Unary, name="AtanhBackward0"):
    def forward(self, x):
        return np.arctanh(x)

    def backward(self, g):
        (x,) = self.saved_values
        return g * (1 / (-x * x + 1))


class AtanhInplace(Atanh, name="AtanhBackward1"):
    def backward(self, g):
        raise NotImplementedError("the derivative for 'inplace version of atanh' is not implemented.")


class Sinh(Unary, name="SinhBackward0"):
    def forward(self, x):
        return np.sinh(x)

    def backward(self, g):
        (x,) = self.saved_values
        return g * x.cosh()


class Cosh(Unary, name="CoshBackward0"):
    def forward(self, x):
        return np.cosh(x)

    def backward(self, g):
        (x,) = self.saved_values
        return g * x.sinh()


class Exp2(Node, name="Exp2Backward0"):
    save = (-1,)
    saved_names = ("result",)

    def forward(self, x):
        return np.exp2(x)

    def backward(self, g):
        (out,) = self.saved_values
        return g * (out * _LN2)


class Erfc(Unary, name="ErfcBackward0"):
    def forward(self, x):
        return _erfc(x)

    def backward(self, g):
        (x,) = self.saved_values
        return g * (-_2_SQRTPI) * (-(x * x)).exp()


class Erfinv(Unary, name="ErfinvBackward0"):
    def forward(self, x):
        return _erfinv(x)

    def backward(self, g):
        (x,) = self.saved_values
        return g * (0.5 * math.sqrt(_PI)) * (erfinv(x) ** 2).exp()


class Lgamma(Unary, name="LgammaBackward0"):
    def forward(self, x):
        return _lgamma(x)

    def backward(self, g):
        (x,) = self.saved_values
        return g * digamma(x)


class Digamma(Unary, name="DigammaBackward0"):
    def forward(self, x):
        return _digamma(x)

    def backward(self, g):
        (x,) = self.saved_values
        return g * polygamma(1, x)


class Polygamma(Unary, name="PolygammaBackward0"):
    n = 1

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
    def forward(self, x):
        return _i0(x)

    def backward(self, g):
        (x,) = self.saved_values
        return g * I1.apply(x)


class I1(Node, name="SpecialI1Backward0"):
    save = (0, -1)
    saved_names = ("self", "result")

    def forward(self, x):
        return _i1(x)

    def backward(self, g):
        x, out = self.saved_values
        # PyTorch's i1_backward: i0(x) - i1(x) / x, 0.5 at x == 0
        return g * _where(x == 0, 0.5, i0(x) - out / x)


class Sinc(Unary, name="SincBackward0"):
    def forward(self, x):
        with np.errstate(all="ignore"):
            px = x * _PI
            return np.where(x == 0, 1.0, np.sin(px) / px).astype(x.dtype, copy=False)

    def backward(self, g):
        (x,) = self.saved_values
        px = x * _PI
        d = (px * px.cos() - px.sin()) / (px * x)
        return g * _where(x == 0, 0.0, d)


class Deg2Rad(Node, name="Deg2RadBackward0"):
    k = _PI / 180.0

    def forward(self, x):
        return x * x.dtype.type(self.k)

    def backward(self, g):
        return g * self.k


class Rad2Deg(Deg2Rad, name="Rad2DegBackward0"):
    k = 180.0 / _PI


class Logit(Unary, name="LogitBackward0"):
    eps = None

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
    nan = 0.0
    posinf = None
    neginf = None

    def forward(self, x):
        if x.dtype.kind != "f":
            return x.copy()
        fi = np.finfo(x.dtype)
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
    save = (0, 1)
    saved_names = ("self", "other")
    dt = None

    def forward(self, x, y):
        if self.dt is not None:
            xp = module_of(x, y)
            x, y = xp.asarray(x, self.dt), xp.asarray(y, self.dt)
        with np.errstate(all="ignore"):
            return np.where((x == 0) & ~np.isnan(y), 0, x * np.log(y)).astype(np.result_type(x, y), copy=False)

    def backward(self, g):
        x, y = self.saved_values
        nf = self.next_functions
        gy = g * x / y if nf[1][0] is not None else None      # other first (alphabetical)
        gx = None
        if nf[0][0] is not None:
            gx = g * xlogy((x != 0).to(x.dtype), y)
        return gx, gy


class XlogyScalarSelf(Node, name="XlogyBackward1"):
    """number * log(tensor): the number is a parameter (one next_function, as PyTorch)."""
    save = (0,)
    saved_names = ("other",)
    dt = None
    x = 0.0

    def forward(self, y):
        return Xlogy.forward(self, array_module(y).asarray(self.x, y.dtype), y)

    def backward(self, g):
        (y,) = self.saved_values
        return g * self.x / y


class XlogyScalarOther(Node, name="XlogyBackward2"):
    """tensor * log(number)."""
    save = (0,)
    saved_names = ("self",)
    dt = None
    y = 1.0

    def forward(self, x):
        return Xlogy.forward(self, x, array_module(x).asarray(self.y, x.dtype))

    def backward(self, g):
        (x,) = self.saved_values
        return g * xlogy((x != 0).to(x.dtype), self.y)


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

    def forward(self, x):
        return np.where((x > self.lambd) | (x < -self.lambd), x, 0).astype(x.dtype, copy=False)

    def backward(self, g):
        (x,) = self.saved_values
        xa = x._data
        return scale(g, (xa > self.lambd) | (xa < -self.lambd), x)


class Softshrink(Unary, name="SoftshrinkBackward0"):
    """x - lambd above lambd, x + lambd below -lambd, else x * 0 (PyTorch's kernel: -0.0 for negative x)."""
    lambd = 0.5

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
    r = np.signbit(a) if a.dtype.kind == "f" else (a < 0 if a.dtype.kind == "i" else xp.zeros(a.shape, bool))
    return _out(Tensor._make(xp.asarray(r)), out)


def isreal(input):
    """True everywhere for a real tensor."""
    _tensor_in("isreal", input)
    return Tensor._make(array_module(input._data).ones(input._data.shape, bool))


def frexp(input, *, out=None):
    """(mantissa, exponent) with mantissa in [0.5, 1) and input = mantissa * 2 ** exponent."""
    _tensor_in("frexp", input)
    if input._data.dtype.kind != "f":
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


real = _identity("real")
conj = _identity("conj")
conj_physical = _identity("conj_physical")
resolve_conj = _identity("resolve_conj")
resolve_neg = _identity("resolve_neg")


def conj_physical_(input):
    return _tensor_in("conj_physical_", input)


def imag(input):
    _tensor_in("imag", input)
    raise RuntimeError("imag is not implemented for tensors with non-complex dtypes.")


def is_conj(input):
    _tensor_in("is_conj", input)
    return False


def is_neg(input):
    _tensor_in("is_neg", input)
    return False


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


def xlogy(input, other, *, out=None):
    """input * log(other), 0 where input == 0 (unless other is NaN)."""
    if isinstance(input, Tensor) != isinstance(other, Tensor) and is_number(input if isinstance(other, Tensor)
                                                                          else other):
        t = other if isinstance(other, Tensor) else input
        from ._dispatch import _scalar_result
        dt = _scalar_result(t, input if t is other else other, True)
        x = t if t._data.dtype == dt else t.to(_dt(dt))
        if t is other:
            return _out(XlogyScalarSelf.apply(x, x=float(input)), out)
        return _out(XlogyScalarOther.apply(x, y=float(other)), out)
    return _out(binary(Xlogy, input, other, float_only=True), out)


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
        from .._creation import empty
        u = empty(input.shape, dtype=input.dtype).uniform_(lower, upper, generator=generator)._data
        noise = np.where(input._data > 0, 1.0, u).astype(input._data.dtype)
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
    from ._inplace import inplace_apply
    from .index import _Via
    return inplace_apply(self, _Via, (), {"f": lambda t: float_power(t, exponent)})


def polygamma_(self, n):
    """In-place polygamma (grad_fn PolygammaBackward1)."""
    _float_result_into(self)
    return apply_inplace(self, PolygammaInplace, n=int(n))


class AsinhInplace(Asinh, name="AsinhBackward1"):
    def backward(self, g):
        raise NotImplementedError("the derivative for 'inplace version of asinh' is not implemented.")


class AcoshInplace(Acosh, name="AcoshBackward1"):
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
    if self._data.dtype.kind != "f":
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
    "asin": asin, "arcsin": asin, "acos": acos, "arccos": acos, "atan": atan, "arctan": atan,
    "asinh": asinh, "arcsinh": asinh, "acosh": acosh, "arccosh": acosh, "atanh": atanh, "arctanh": atanh,
    "sinh": sinh, "cosh": cosh, "arctan2": E.atan2, "exp2": exp2, "erfc": erfc, "erfinv": erfinv,
    "lgamma": lgamma, "digamma": digamma, "polygamma": lambda self, n: polygamma(n, self), "mvlgamma": mvlgamma,
    "i0": i0, "sinc": sinc, "deg2rad": deg2rad, "rad2deg": rad2deg, "logit": logit, "sgn": sgn, "angle": angle,
    "nan_to_num": nan_to_num, "signbit": signbit, "isreal": isreal, "frexp": frexp, "positive": positive,
    "conj": conj, "conj_physical": conj_physical, "resolve_conj": resolve_conj, "resolve_neg": resolve_neg,
    "is_conj": is_conj, "is_neg": is_neg, "conj_physical_": conj_physical_,
    "hypot": hypot, "logaddexp": logaddexp, "logaddexp2": logaddexp2, "xlogy": xlogy, "copysign": copysign,
    "ldexp": ldexp, "heaviside": heaviside, "nextafter": nextafter, "gcd": gcd, "lcm": lcm,
    "bitwise_left_shift": bitwise_left_shift, "bitwise_right_shift": bitwise_right_shift,
    "float_power": float_power, "float_power_": float_power_, "addcmul": addcmul, "addcdiv": addcdiv,
    "hardshrink": hardshrink, "prelu": prelu,
    "atanh_": atanh_, "arctanh_": atanh_, "polygamma_": polygamma_,
    "asinh_": asinh_, "arcsinh_": asinh_, "acosh_": acosh_, "arccosh_": acosh_,
    "real": property(real, doc="The real part: the tensor itself."), "imag": property(imag, doc="Complex only."),
    **{a + "_": _CMP_INPLACE[b] for a, b in (("eq", "eq"), ("ne", "ne"), ("lt", "lt"), ("le", "le"), ("gt", "gt"),
                                             ("ge", "ge"), ("not_equal", "ne"), ("less", "lt"), ("less_equal", "le"),
                                             ("greater", "gt"), ("greater_equal", "ge"))},
    "__lshift__": bitwise_left_shift, "__rshift__": bitwise_right_shift,
    "__rlshift__": lambda s, o: bitwise_left_shift(o, s), "__rrshift__": lambda s, o: bitwise_right_shift(o, s),
}
# the in-place Tensor.X_ computed by the out-of-place X (installed through primitives/__init__._via)
INPLACE_VIA = ("asin", "arcsin", "acos", "arccos", "atan", "arctan",
               "sinh", "cosh", "arctan2", "exp2", "erfc", "erfinv", "lgamma", "digamma",
               "mvlgamma", "i0", "sinc", "deg2rad", "rad2deg", "logit", "sgn", "nan_to_num",
               "hypot", "xlogy", "copysign", "ldexp", "heaviside", "nextafter", "gcd", "lcm",
               "bitwise_left_shift", "bitwise_right_shift", "addcmul", "addcdiv", "fix", "true_divide",
               "logical_and", "logical_or", "logical_xor", "logical_not",
               "bitwise_and", "bitwise_or", "bitwise_xor", "bitwise_not")
