"""Elementwise primitives: forward on arrays and gradient on Tensors, side by side.

Broadcasting and dtype promotion are undone once, in ``Node._run_backward``; the backward of a
binary op returns gradients with the output's shape.
"""
import math

import numpy as np

from .._tensor import Tensor
from ..autograd.graph import Node
from ._dispatch import binary, apply_inplace

_sqrt_2_over_pi = math.sqrt(2.0 / math.pi)


# ---------------------------------------------------------------------------------- binary
class Add(Node, name="AddBackward0"):
    dt = None
    alpha = 1

    def forward(self, x, y):
        if self.alpha != 1:
            y = y * self.alpha
        return np.add(x, y, dtype=self.dt)

    def backward(self, g):
        return g, (g if self.alpha == 1 else g * self.alpha)


class Sub(Node, name="SubBackward0"):
    dt = None
    alpha = 1

    def forward(self, x, y):
        if self.alpha != 1:
            y = y * self.alpha
        return np.subtract(x, y, dtype=self.dt)

    def backward(self, g):
        return g, (-g if self.alpha == 1 else g * -self.alpha)


class Mul(Node, name="MulBackward0"):
    save = (0, 1)
    saved_names = ("self", "other")
    dt = None

    def forward(self, x, y):
        return np.multiply(x, y, dtype=self.dt)

    def backward(self, g):
        x, y = self.saved_tensors
        nf = self.next_functions
        return (g * y if nf[0][0] is not None else None,
                g * x if nf[1][0] is not None else None)


class Div(Node, name="DivBackward0"):
    save = (0, 1)
    saved_names = ("self", "other")
    dt = None

    def forward(self, x, y):
        return np.true_divide(x, y, dtype=self.dt)

    def backward(self, g):
        x, y = self.saved_tensors
        nf = self.next_functions
        gx = g / y if nf[0][0] is not None else None
        gy = -g * x / (y * y) if nf[1][0] is not None else None
        return gx, gy


class Pow(Node, name="PowBackward1"):
    save = (0, 1, -1)
    saved_names = ("self", "exponent", "result")
    dt = None

    def forward(self, x, y):
        return np.power(x, y, dtype=self.dt)

    def backward(self, g):
        x, y, out = self.saved_tensors
        nf = self.next_functions
        gx = gy = None
        if nf[0][0] is not None:
            gx = g * y * _where(y == 0, 0.0, x ** (y - 1)) if isinstance(y, Tensor) else \
                (g * 0.0 if y == 0 else g * (y * x ** (y - 1)))
        if nf[1][0] is not None:
            gy = g * _where((x == 0) & (y >= 0), 0.0, out * x.log())
        return gx, gy


class PowScalar(Pow, name="PowBackward0"):
    """tensor ** number: only the base is differentiable."""
    save = (0, 1)
    saved_names = ("self", "exponent")

    def backward(self, g):
        x, y = self.saved_tensors
        if y == 0:
            return g * 0.0, None
        if y == 1:
            return g, None
        if y == 2:
            return g * (x * 2.0), None
        return g * (y * x ** (y - 1)), None


class RPow(Pow, name="PowBackward2"):
    """number ** tensor: only the exponent is differentiable."""
    save = (0, -1)
    saved_names = ("self", "result")

    def backward(self, g):
        x, out = self.saved_tensors
        return None, g * out * float(np.log(x)) if x > 0 else g * _where(out == 0, 0.0, out * float(np.log(abs(x)) if x else -np.inf))


def _where(cond, a, b):
    from .index import where
    return where(cond, a, b)


class Minimum(Node, name="MinimumBackward0"):
    save = (0, 1)
    saved_names = ("self", "other")
    dt = None
    op = staticmethod(np.minimum)

    def forward(self, x, y):
        if self.dt is not None:
            x, y = np.asarray(x, self.dt), np.asarray(y, self.dt)
        return self.op(x, y)

    def backward(self, g):
        x, y = self.saved_tensors
        if self.op is np.minimum:
            mx, my = (x < y), (y < x)
        else:
            mx, my = (x > y), (y > x)
        eq = (x == y)
        half = g * 0.5
        return (_where(mx, g, _where(eq, half, 0.0)), _where(my, g, _where(eq, half, 0.0)))


class Maximum(Minimum, name="MaximumBackward0"):
    op = staticmethod(np.maximum)


class Atan2(Node, name="Atan2Backward0"):
    save = (0, 1)
    saved_names = ("self", "other")
    dt = None

    def forward(self, x, y):
        return np.arctan2(x, y, dtype=self.dt)

    def backward(self, g):
        x, y = self.saved_tensors
        r = g / (x * x + y * y)
        return r * y, -r * x


# ----------------------------------------------------------------------------------- unary
class Unary(Node):
    """Base of one-input elementwise ops; integer inputs compute in the default float dtype."""
    save = (0,)
    saved_names = ("self",)


class Neg(Node, name="NegBackward0"):
    def forward(self, x):
        return np.negative(x)

    def backward(self, g):
        return -g


class Exp(Node, name="ExpBackward0"):
    save = (-1,)
    saved_names = ("result",)

    def forward(self, x):
        return np.exp(x)

    def backward(self, g):
        (out,) = self.saved_tensors
        return g * out


class Expm1(Exp, name="Expm1Backward0"):
    def forward(self, x):
        return np.expm1(x)

    def backward(self, g):
        (out,) = self.saved_tensors
        return g * (out + 1)


class Log(Unary, name="LogBackward0"):
    def forward(self, x):
        return np.log(x)

    def backward(self, g):
        (x,) = self.saved_tensors
        return g / x


class Log2(Unary, name="Log2Backward0"):
    def forward(self, x):
        return np.log2(x)

    def backward(self, g):
        (x,) = self.saved_tensors
        return g / (x * math.log(2.0))


class Log10(Unary, name="Log10Backward0"):
    def forward(self, x):
        return np.log10(x)

    def backward(self, g):
        (x,) = self.saved_tensors
        return g / (x * math.log(10.0))


class Log1p(Unary, name="Log1pBackward0"):
    def forward(self, x):
        return np.log1p(x)

    def backward(self, g):
        (x,) = self.saved_tensors
        return g / (x + 1)


class Sqrt(Node, name="SqrtBackward0"):
    save = (-1,)
    saved_names = ("result",)

    def forward(self, x):
        return np.sqrt(x)

    def backward(self, g):
        (out,) = self.saved_tensors
        return g / (out * 2)


class Rsqrt(Node, name="RsqrtBackward0"):
    save = (-1,)
    saved_names = ("result",)

    def forward(self, x):
        with np.errstate(divide="ignore"):
            return 1.0 / np.sqrt(x)

    def backward(self, g):
        (out,) = self.saved_tensors
        return g * out * out * out * -0.5


class Reciprocal(Node, name="ReciprocalBackward0"):
    save = (-1,)
    saved_names = ("result",)

    def forward(self, x):
        with np.errstate(divide="ignore"):
            return np.reciprocal(x)

    def backward(self, g):
        (out,) = self.saved_tensors
        return -g * out * out


class Sin(Unary, name="SinBackward0"):
    def forward(self, x):
        return np.sin(x)

    def backward(self, g):
        (x,) = self.saved_tensors
        return g * x.cos()


class Cos(Unary, name="CosBackward0"):
    def forward(self, x):
        return np.cos(x)

    def backward(self, g):
        (x,) = self.saved_tensors
        return g * -x.sin()


class Tan(Node, name="TanBackward0"):
    save = (-1,)
    saved_names = ("result",)

    def forward(self, x):
        return np.tan(x)

    def backward(self, g):
        (out,) = self.saved_tensors
        return g * (out * out + 1)


class Tanh(Node, name="TanhBackward0"):
    save = (-1,)
    saved_names = ("result",)

    def forward(self, x):
        return np.tanh(x)

    def backward(self, g):
        (out,) = self.saved_tensors
        return g * (1 - out * out)


class Sigmoid(Node, name="SigmoidBackward0"):
    save = (-1,)
    saved_names = ("result",)

    def forward(self, x):
        # NOTE: split by sign so that exp never overflows
        out = np.empty_like(x)
        pos = x >= 0
        out[pos] = 1.0 / (1.0 + np.exp(-x[pos]))
        ex = np.exp(x[~pos])
        out[~pos] = ex / (1.0 + ex)
        return out

    def backward(self, g):
        (out,) = self.saved_tensors
        return g * (out * (1 - out))


class Erf(Unary, name="ErfBackward0"):
    def forward(self, x):
        return _erf(x)

    def backward(self, g):
        (x,) = self.saved_tensors
        return g * (2.0 / math.sqrt(math.pi)) * (-(x * x)).exp()


def _erf(x):
    try:
        from scipy.special import erf
        return erf(x).astype(x.dtype, copy=False)
    except ImportError:
        v = np.vectorize(math.erf, otypes=[x.dtype])
        return v(x) if x.size else x.copy()


class Abs(Unary, name="AbsBackward0"):
    def forward(self, x):
        return np.abs(x)

    def backward(self, g):
        (x,) = self.saved_tensors
        return g * x.sign()


class Relu(Node, name="ReluBackward0"):
    save = (-1,)
    saved_names = ("result",)

    def forward(self, x):
        return np.maximum(x, 0, dtype=x.dtype) if x.dtype.kind == "f" else np.maximum(x, 0)

    def backward(self, g):
        (out,) = self.saved_tensors
        return g * (out > 0)


class Gelu(Unary, name="GeluBackward0"):
    approximate = "none"

    def forward(self, x):
        if self.approximate == "tanh":
            return 0.5 * x * (1 + np.tanh(_sqrt_2_over_pi * (x + 0.044715 * x ** 3)))
        return (0.5 * x * (1 + _erf(x / math.sqrt(2.0)))).astype(x.dtype, copy=False)

    def backward(self, g):
        (x,) = self.saved_tensors
        if self.approximate == "tanh":
            inner = (x + x * x * x * 0.044715) * _sqrt_2_over_pi
            t = inner.tanh()
            dinner = (x * x * (3 * 0.044715) + 1) * _sqrt_2_over_pi
            return g * (0.5 * (1 + t) + 0.5 * x * (1 - t * t) * dinner)
        cdf = ((x * (1 / math.sqrt(2.0))).erf() + 1) * 0.5
        pdf = (x * x * -0.5).exp() * (1 / math.sqrt(2 * math.pi))
        return g * (cdf + x * pdf)


class Silu(Unary, name="SiluBackward0"):
    def forward(self, x):
        return x * Sigmoid.forward(self, x)

    def backward(self, g):
        (x,) = self.saved_tensors
        s = x.sigmoid()
        return g * (s * (1 + x * (1 - s)))


class Softplus(Unary, name="SoftplusBackward0"):
    beta = 1.0
    threshold = 20.0

    def forward(self, x):
        bx = x * self.beta
        return np.where(bx > self.threshold, x, np.log1p(np.exp(np.minimum(bx, self.threshold))) / self.beta).astype(x.dtype, copy=False)

    def backward(self, g):
        (x,) = self.saved_tensors
        bx = x * self.beta
        return g * _where(bx > self.threshold, 1.0, bx.sigmoid())


class Elu(Unary, name="EluBackward0"):
    alpha = 1.0
    scale = 1.0
    input_scale = 1.0

    def forward(self, x):
        return (self.scale * np.where(x > 0, x, self.alpha * np.expm1(np.minimum(x, 0) * self.input_scale))).astype(x.dtype, copy=False)

    def backward(self, g):
        (x,) = self.saved_tensors
        neg = (x * self.input_scale).exp() * (self.alpha * self.input_scale * self.scale)
        return g * _where(x > 0, float(self.scale), neg)


class LeakyRelu(Unary, name="LeakyReluBackward0"):
    negative_slope = 0.01

    def forward(self, x):
        return np.where(x > 0, x, x * self.negative_slope).astype(x.dtype, copy=False)

    def backward(self, g):
        (x,) = self.saved_tensors
        return g * _where(x > 0, 1.0, float(self.negative_slope))


class Clamp(Unary, name="ClampBackward1"):
    lo = None
    hi = None

    def forward(self, x):
        out = x
        if self.lo is not None:
            out = np.maximum(out, self.lo)
        if self.hi is not None:
            out = np.minimum(out, self.hi)
        return out.astype(x.dtype, copy=False) if out is not x else x.copy()

    def backward(self, g):
        (x,) = self.saved_tensors
        m = None
        if self.lo is not None:
            m = x >= self.lo
        if self.hi is not None:
            m2 = x <= self.hi
            m = m2 if m is None else m & m2
        return g * m if m is not None else g


class ZeroGrad(Node):
    """Piecewise-constant functions: gradient zero everywhere."""

    def backward(self, g):
        return g * 0


class Sign(ZeroGrad, name="SignBackward0"):
    def forward(self, x):
        return np.sign(x)


class Floor(ZeroGrad, name="FloorBackward0"):
    def forward(self, x):
        return np.floor(x) if x.dtype.kind == "f" else x.copy()


class Ceil(ZeroGrad, name="CeilBackward0"):
    def forward(self, x):
        return np.ceil(x) if x.dtype.kind == "f" else x.copy()


class Round(ZeroGrad, name="RoundBackward0"):
    decimals = 0

    def forward(self, x):
        return np.round(x, self.decimals) if x.dtype.kind == "f" else x.copy()


class Trunc(ZeroGrad, name="TruncBackward0"):
    def forward(self, x):
        return np.trunc(x) if x.dtype.kind == "f" else x.copy()


class Frac(Node, name="FracBackward0"):
    def forward(self, x):
        return x - np.trunc(x)

    def backward(self, g):
        return g


# -------------------------------------------------------------------------- public functions
def _float_input(x):
    """exp/log/sin... of an integer tensor compute in the default float dtype (as PyTorch)."""
    if x._data.dtype.kind != "f":
        from .. import _dtype as D
        return x.to(D.get_default_dtype())
    return x


def _unary(cls, float_only=True):
    def fn(input, *, out=None):
        x = _float_input(input) if float_only else input
        r = cls.apply(x)
        if out is not None:
            out.copy_(r)
            return out
        return r
    return fn


exp = _unary(Exp)
expm1 = _unary(Expm1)
log = _unary(Log)
log2 = _unary(Log2)
log10 = _unary(Log10)
log1p = _unary(Log1p)
sqrt = _unary(Sqrt)
rsqrt = _unary(Rsqrt)
sin = _unary(Sin)
cos = _unary(Cos)
tan = _unary(Tan)
tanh = _unary(Tanh)
sigmoid = _unary(Sigmoid)
erf = _unary(Erf)
reciprocal = _unary(Reciprocal)
neg = negative = _unary(Neg, False)
abs = absolute = _unary(Abs, False)
sign = _unary(Sign, False)
floor = _unary(Floor, False)
ceil = _unary(Ceil, False)
trunc = fix = _unary(Trunc, False)
frac = _unary(Frac, False)
silu = _unary(Silu)


def round(input, *, decimals=0):
    return Round.apply(input, decimals=decimals)


def relu(input, inplace=False):
    if inplace:
        return apply_inplace(input, Relu)
    return Relu.apply(input)


def gelu(input, approximate="none"):
    if approximate not in ("none", "tanh"):
        raise RuntimeError(f"approximate argument must be either none or tanh.")
    return Gelu.apply(input, approximate=approximate)


def softplus(input, beta=1.0, threshold=20.0):
    return Softplus.apply(input, beta=beta, threshold=threshold)


def elu(input, alpha=1.0, inplace=False):
    if inplace:
        return apply_inplace(input, Elu, alpha=alpha)
    return Elu.apply(input, alpha=alpha)


def selu(input, inplace=False):
    return Elu.apply(input, alpha=1.6732632423543772848170429916717, scale=1.0507009873554804934193349852946)


def celu(input, alpha=1.0, inplace=False):
    return Elu.apply(input, alpha=alpha, input_scale=1.0 / alpha)


def leaky_relu(input, negative_slope=0.01, inplace=False):
    if inplace:
        return apply_inplace(input, LeakyRelu, negative_slope=negative_slope)
    return LeakyRelu.apply(input, negative_slope=negative_slope)


def _clamp_bound(v):
    if isinstance(v, Tensor):
        return v
    return v


def clamp(input, min=None, max=None, *, out=None):
    if min is None and max is None:
        raise RuntimeError("torch.clamp: At least one of 'min' or 'max' must not be None")
    if isinstance(min, Tensor) or isinstance(max, Tensor):
        r = input
        if min is not None:
            r = maximum(r, min)
        if max is not None:
            r = minimum(r, max)
        return r
    x = input
    if x._data.dtype.kind != "f" and (isinstance(min, float) or isinstance(max, float)):
        x = _float_input(x)
    r = Clamp.apply(x, lo=min, hi=max)
    if out is not None:
        out.copy_(r)
        return out
    return r


clip = clamp


def clamp_min(input, min):
    return clamp(input, min=min)


def clamp_max(input, max):
    return clamp(input, max=max)


def add(input, other, *, alpha=1, out=None):
    r = binary(Add, input, other, alpha=alpha) if alpha != 1 else binary(Add, input, other)
    if out is not None:
        out.copy_(r)
        return out
    return r


def sub(input, other, *, alpha=1, out=None):
    r = binary(Sub, input, other, alpha=alpha) if alpha != 1 else binary(Sub, input, other)
    if out is not None:
        out.copy_(r)
        return out
    return r


subtract = sub


def mul(input, other, *, out=None):
    r = binary(Mul, input, other)
    if out is not None:
        out.copy_(r)
        return out
    return r


multiply = mul


def div(input, other, *, rounding_mode=None, out=None):
    if rounding_mode is None:
        r = binary(Div, input, other, float_only=True)
    elif rounding_mode == "floor":
        r = floor_divide(input, other)
    elif rounding_mode == "trunc":
        q = binary(Div, input, other, float_only=True)
        r = q.trunc()
        ref = input if isinstance(input, Tensor) else other
        if isinstance(ref, Tensor) and ref._data.dtype.kind != "f" and (not isinstance(other, float)):
            r = r.to(_int_result(input, other))
    else:
        raise RuntimeError(f"div expected rounding_mode to be one of None, 'trunc', or 'floor' but found '{rounding_mode}'")
    if out is not None:
        out.copy_(r)
        return out
    return r


divide = true_divide = div


def _int_result(a, b):
    from .. import _dtype as D
    ts = [t for t in (a, b) if isinstance(t, Tensor)]
    ss = [s for s in (a, b) if not isinstance(s, Tensor)]
    return D.result_type_of(ts, ss)


class FloorDivide(ZeroGrad, name="FloorDivideBackward0"):
    dt = None

    def forward(self, x, y):
        return np.floor_divide(x, y, dtype=self.dt)

    def backward(self, g):
        return g * 0, None


class Remainder(Node, name="RemainderBackward0"):
    save = (0, 1)
    dt = None

    def forward(self, x, y):
        return np.mod(x, y, dtype=self.dt)

    def backward(self, g):
        x, y = self.saved_tensors
        nf = self.next_functions
        gy = None
        if nf[1][0] is not None:
            gy = -g * (x / y).floor()
        return g, gy


class Fmod(Remainder, name="FmodBackward0"):
    def forward(self, x, y):
        return np.fmod(x, y, dtype=self.dt)

    def backward(self, g):
        x, y = self.saved_tensors
        nf = self.next_functions
        gy = -g * (x / y).trunc() if nf[1][0] is not None else None
        return g, gy


def floor_divide(input, other):
    return binary(FloorDivide, input, other)


def remainder(input, other):
    return binary(Remainder, input, other)


def fmod(input, other):
    return binary(Fmod, input, other)


def pow(input, exponent):
    if isinstance(input, Tensor) and not isinstance(exponent, Tensor):
        if isinstance(exponent, (list, tuple)):
            exponent = _tensor(exponent)
        else:
            x = input
            if x._data.dtype.kind != "f" and isinstance(exponent, float):
                x = _float_input(x)
            if x._data.dtype.kind != "f" and isinstance(exponent, int) and exponent < 0:
                raise RuntimeError("Integers to negative integer powers are not allowed.")
            return binary(PowScalar, x, exponent)
    if not isinstance(input, Tensor):
        return binary(RPow, input, exponent)
    return binary(Pow, input, exponent)


def _tensor(v):
    from .._creation import tensor
    return tensor(v)


def square(input):
    return pow(input, 2)


def minimum(input, other):
    return binary(Minimum, input, other)


def maximum(input, other):
    return binary(Maximum, input, other)


def fmax(input, other):
    return maximum(input, other)


def fmin(input, other):
    return minimum(input, other)


def atan2(input, other):
    return binary(Atan2, input, other, float_only=True)


arctan2 = atan2


def rsub(input, other, alpha=1):
    return sub(other, input, alpha=alpha)


def lerp(input, end, weight):
    return input + (end - input) * weight


def hardtanh(input, min_val=-1.0, max_val=1.0, inplace=False):
    return clamp(input, min_val, max_val)


def relu6(input, inplace=False):
    return hardtanh(input, 0.0, 6.0)


def hardsigmoid(input, inplace=False):
    return relu6(input + 3) / 6


def hardswish(input, inplace=False):
    return input * relu6(input + 3) / 6


def mish(input, inplace=False):
    return input * tanh(softplus(input))


def logsigmoid(input):
    return -softplus(-input)


def softsign(input):
    return input / (abs(input) + 1)


def tanhshrink(input):
    return input - tanh(input)
