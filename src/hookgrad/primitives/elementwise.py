"""Elementwise primitives: forward on arrays and gradient on Tensors, side by side.

Broadcasting and dtype promotion are undone once, in ``Node._run_backward``; the backward of a
binary op returns gradients with the output's shape.
"""
import math

import numpy as np

from .._tensor import Tensor
from .._array import array_module, module_of, default_module
from ..autograd.node import Node
from ..autograd.formulas import TENSORS, zero_like
from ._dispatch import binary, apply_inplace, broadcast_error
from .. import _dtype as D, _parallel
from .._jit import fast, elementwise, wide
from ._kernels import kernel, exp32, erf32_as, erf_as, _f32
from .._errors import not_tensor, not_number, is_number, not_implemented_for, float_kernel
from ..autograd.forward_ad import linear_jvp, multilinear_jvp, elementwise_jvp, tsum, scaled  # noqa: F401  (forward AD)
from .. import _cuda_kernels
from ..autograd import op_hooks as _op_hooks
from ..autograd.grad_mode import _state as _grad_state



_sqrt_2_over_pi = math.sqrt(2.0 / math.pi)
_IS_COMPLEX = D.IS_COMPLEX      # ``g.dtype in _IS_COMPLEX``: a complex gradient, as an array or a Tensor


def _cj(d, g):
    """A derivative ``d`` as the gradient of a complex input uses it: conjugated (PyTorch's convention for a
    holomorphic op, grad * conj(f'(z))); as it is for a real gradient."""
    return d.conj() if g.dtype in _IS_COMPLEX else d


# ---------------------------------------------------------------------------------- binary
def _alpha(node):
    """add/sub's alpha: PyTorch's kernel takes it in the tensors' dtype (bf16/f16: rounded to it, then the sum is
    computed in float32, _dtype.opmath)."""
    low = node.__dict__.get("_low")
    return node.alpha if low is None else float(np.asarray(node.alpha, low))


class Add(Node, name="AddBackward0"):
    opmath = "forward"     # bfloat16 (and a Python number) in float32, rounded once (_dtype.opmath)
    saved_attrs = ("alpha=1",)
    dt = None
    alpha = 1

    def jvp(self, p, t, out):
        return tsum(t[0], scaled(t[1], self.alpha))

    writes_into = True

    def forward(self, x, y):
        if self.alpha != 1:
            y = y * _alpha(self)
        dt = self.dt
        return _parallel.ufunc(np.add, x, y, out=self._into) if dt is None else np.add(x, y, dtype=dt)

    def backward(self, g, F=TENSORS):
        return g, (g if self.alpha == 1 else g * self.alpha)


class Sub(Node, name="SubBackward0"):
    opmath = "forward"     # bfloat16 (and a Python number) in float32, rounded once (_dtype.opmath)
    saved_attrs = ("alpha=1",)
    dt = None
    alpha = 1

    writes_into = True

    def jvp(self, p, t, out):
        return tsum(t[0], scaled(t[1], -self.alpha))

    def forward(self, x, y):
        if self.alpha != 1:
            y = y * _alpha(self)
        dt = self.dt
        return np.subtract(x, y, out=self._into) if dt is None else np.subtract(x, y, dtype=dt)

    def backward(self, g, F=TENSORS):
        return g, (-g if self.alpha == 1 else g * -self.alpha)


class Rsub(Node, name="RsubBackward1"):
    """number - tensor (PyTorch records it as rsub)."""
    opmath = "forward"     # bfloat16 (and a Python number) in float32, rounded once (_dtype.opmath)
    dt = None
    alpha = 1

    def forward(self, x, y):
        if self.alpha != 1:
            x = x * self.alpha
        return np.subtract(y, x, dtype=self.dt)

    def backward(self, g):
        return (-g if self.alpha == 1 else g * -self.alpha), None


class Mul(Node, name="MulBackward0"):
    opmath = "forward"     # bfloat16 (and a Python number) in float32, rounded once (_dtype.opmath)
    save = (0, 1)
    saved_names = ("self", "other")
    save_if = ((1,), (0,))          # self for the gradient of other, other for that of self
    dt = None

    jvp = multilinear_jvp
    writes_into = True

    def forward(self, x, y):
        dt = self.dt
        return np.multiply(x, y, out=self._into) if dt is None else np.multiply(x, y, dtype=dt)

    def backward(self, g, F=TENSORS):
        # NOTE: PyTorch's generated backward computes the inputs' formulas in alphabetical order of
        # their names (other before self); that order is the creation order of a create_graph graph
        x, y = F.saved(self)
        if g.dtype in _IS_COMPLEX:     # complex: the conjugate Wirtinger gradient, g * conj(other)
            x, y = F.conj(x), F.conj(y)
        nf = self.next_functions
        gy = g * x if nf[1][0] is not None else None
        return (g * y if nf[0][0] is not None else None), gy


class Div(Node, name="DivBackward0"):
    opmath = "forward"     # bfloat16 (and a Python number) in float32, rounded once (_dtype.opmath)
    save = (0, 1)
    saved_names = ("self", "other")
    save_if = ((1,), None)          # self only for the gradient of other
    dt = None

    def jvp(self, p, t, out):
        return tsum(t[0], None if t[1] is None else -out * t[1]) / p[1]

    def forward(self, x, y):
        dt = self.dt
        return np.true_divide(x, y) if dt is None else np.true_divide(x, y, dtype=dt)

    def backward(self, g, F=TENSORS):
        x, y = F.saved(self)
        if g.dtype in _IS_COMPLEX:     # complex: the conjugate Wirtinger gradient
            x, y = F.conj(x), F.conj(y)
        nf = self.next_functions
        gy = -g * ((x / y) / y) if nf[1][0] is not None else None     # other first (alphabetical)
        gx = g / y if nf[0][0] is not None else None
        return gx, gy


class Pow(Node, name="PowBackward1"):
    save = (0, 1, -1)
    saved_names = ("self", "exponent", "result")
    dt = None

    def forward(self, x, y):
        try:
            return np.power(x, y, dtype=self.dt)
        except ValueError:          # integers to negative integer powers: PyTorch truncates toward zero
            return np.trunc(np.power(module_of(x, y).asarray(x, np.float64), y)).astype(self.dt or np.result_type(x, y))

    def backward(self, g):
        x, y, out = self.saved_values
        nf = self.next_functions
        gx = gy = None
        cplx = g.dtype in _IS_COMPLEX       # the conjugate Wirtinger gradient (PyTorch's pow_backward_*)
        if nf[1][0] is not None:        # exponent before self (alphabetical, as PyTorch)
            # 0 ** y with y real and >= 0 has gradient 0; the base is promoted before its log (a negative real
            # base with a complex exponent: log(-1) = i*pi)
            nonneg = ((y.imag == 0) & (y.real >= 0)) if y.dtype.is_complex else (y >= 0)
            d = out * (x if x.dtype == out.dtype else x.to(out.dtype)).log()
            gy = g * _where((x == 0) & nonneg, 0.0, d.conj() if cplx else d)
        if nf[0][0] is not None:
            if isinstance(y, Tensor):
                d = y * x ** (y - 1)
                gx = _where(y == 0, 0.0, g * (d.conj() if cplx else d))
            else:
                gx = _zeros(g) if y == 0 else g * (y * x ** (y - 1))
        return gx, gy


def _zeros(g):
    """A zero gradient shaped like g that is a constant (PyTorch's zeros_like in a formula)."""
    d = g._data
    return Tensor._make(array_module(d).zeros_like(d))


class PowScalar(Pow, name="PowBackward0"):
    """tensor ** number: the exponent is a parameter, not an input (one next_function, as PyTorch)."""
    save = (0,)
    saved_names = ("self",)
    saved_attrs = ("exponent",)
    exponent = 1

    jvp = elementwise_jvp

    def forward(self, x):
        return Pow.forward(self, x, self.exponent)

    def backward(self, g, F=TENSORS):
        (x,) = F.saved(self)
        y = self.exponent
        if y == 0:          # PyTorch's pow_backward: zeros_like(self), a constant under create_graph
            return F.zeros_like(g)
        if y == 1:
            return g
        if y == 2:
            return g * (x * 2.0)
        return g * (y * x ** (y - 1))


class RPow(Pow, name="PowBackward2"):
    """number ** tensor: the base is a parameter; only the exponent is an input."""
    save = (0, -1)                  # PyTorch saves the exponent too (its formula takes it)
    saved_names = ("exponent", "result")
    saved_attrs = ("self=base",)
    base = 1

    jvp = elementwise_jvp

    def forward(self, y):
        return Pow.forward(self, self.base, y)

    def backward(self, g):
        y, out = self.saved_values
        x = self.base
        # PyTorch's pow_backward_exponent: (out * log(base)).conj(), the base a complex number when the exponent
        # is complex (log(-1) = i*pi; a negative real base with a real exponent gives NaN); 0 where base == 0 and
        # the exponent is real and >= 0
        if out.dtype.is_complex:
            lg = complex(np.log(complex(x))) if x != 0 else complex(-np.inf)
            d = (out * lg).conj()
        else:
            with np.errstate(invalid="ignore", divide="ignore"):
                lg = float(np.log(float(x)))
            d = out * lg
        if x == 0:
            nonneg = ((y.imag == 0) & (y.real >= 0)) if y.dtype.is_complex else (y >= 0)
            d = _where(nonneg, 0.0, d)
        return g * d


class Where(Node, name="WhereBackward0"):
    saved_attrs = ("condition=cond",)
    dt = None

    def forward(self, cond, x, y):
        self.cond = cond
        r = np.where(cond, x, y)
        return r.astype(self.dt, copy=False) if self.dt is not None else r

    def backward(self, g):
        nf = self.next_functions
        c = self.cond
        go = scale(g, ~c) if nf[2][0] is not None else None     # other before self (alphabetical)
        return None, (scale(g, c) if nf[1][0] is not None else None), go


def where(condition, input=None, other=None):
    if input is None and other is None:
        return tuple(Tensor._make(a) for a in np.nonzero(condition._data))
    if isinstance(condition, Tensor):
        cond = condition._data
    else:
        like = next((t._data for t in (input, other) if isinstance(t, Tensor)), None)
        cond = (default_module() if like is None else array_module(like)).asarray(condition)
    if cond.dtype != np.bool_:
        if cond.dtype == np.uint8:
            cond = cond.astype(bool)
        else:
            raise RuntimeError(f"where expected condition to be a boolean tensor, but got a tensor with dtype "
                               f"{D.from_numpy_dtype(cond.dtype).name.capitalize() if cond.dtype.kind != 'f' else 'Float'}")
    ts = [t for t in (input, other) if isinstance(t, Tensor)]
    ss = [s for s in (input, other) if not isinstance(s, Tensor)]
    dt = D.result_type_of(ts, ss)
    a = input if isinstance(input, Tensor) else dt.np.type(input)
    b = other if isinstance(other, Tensor) else dt.np.type(other)
    params = {}
    if any(t._data.dtype != dt.np for t in ts) or not ts:
        params["dt"] = dt.np
    try:
        return Where.apply(Tensor._make(cond), a, b, **params)
    except ValueError:
        shapes = [cond.shape] + [t._data.shape for t in ts]
        try:
            sa = np.broadcast_shapes(*shapes[:2])
        except ValueError:
            raise broadcast_error(shapes[0], shapes[1]) from None
        if len(shapes) < 3:
            raise
        raise broadcast_error(sa, shapes[2]) from None


_where = where


class Minimum(Node, name="MinimumBackward0"):
    save = (0, 1)
    saved_names = ("self", "other")
    dt = None
    op = staticmethod(np.minimum)

    def forward(self, x, y):
        if self.dt is not None:
            xp = module_of(x, y)
            x, y = xp.asarray(x, self.dt), xp.asarray(y, self.dt)
        return self.op(x, y)

    def backward(self, g):
        x, y = self.saved_values
        a, b = x._data, y._data
        lt, gt = (np.less, np.greater) if self.op is np.minimum else (np.greater, np.less)
        tie = np.equal(a, b) * 0.5          # ties split the gradient evenly (as PyTorch)
        nf = self.next_functions
        # PyTorch's formula masks with comparisons: the gradient does not depend on x or y
        gy = scale(g, gt(a, b) + tie) if nf[1][0] is not None else None     # other first
        return (scale(g, lt(a, b) + tie) if nf[0][0] is not None else None), gy


class Maximum(Minimum, name="MaximumBackward0"):
    op = staticmethod(np.maximum)


class Atan2(Node, name="Atan2Backward0"):
    save = (0, 1)
    saved_names = ("self", "other")
    dt = None

    def forward(self, x, y):
        return np.arctan2(x, y, dtype=self.dt)

    def backward(self, g):
        x, y = self.saved_values
        recip = (x * x + y * y).reciprocal()        # PyTorch's atan2_backward: 0 at atan2(0, 0)
        recip = _where(recip.isinf(), 0.0, recip)
        return g * y * recip, g * -x * recip


# ----------------------------------------------------------------------------------- unary
class Unary(Node):
    """Base of one-input elementwise ops; integer inputs compute in the default float dtype."""
    opmath = True      # bfloat16: computed in float32, rounded once (_dtype.opmath)
    save = (0,)
    saved_names = ("self",)


class Neg(Node, name="NegBackward0"):
    def jvp(self, p, t, out):
        return -t[0]

    def forward(self, x):
        return np.negative(x)

    def backward(self, g, F=TENSORS):
        return -g


class Exp(Node, name="ExpBackward0"):
    opmath = True      # bfloat16: computed in float32, rounded once (_dtype.opmath)
    save = (-1,)
    saved_names = ("result",)

    def jvp(self, p, t, out):
        return t[0] * out

    def forward(self, x):
        return np.exp(x)

    def backward(self, g, F=TENSORS):
        (out,) = F.saved(self)
        return g * (F.conj(out) if g.dtype in _IS_COMPLEX else out)


class Expm1(Exp, name="Expm1Backward0"):
    def jvp(self, p, t, out):
        return t[0] * (out + 1)

    def forward(self, x):
        return np.expm1(x)

    def backward(self, g):
        (out,) = self.saved_values
        return g * _cj(out + 1, g)


class Log(Unary, name="LogBackward0"):
    def jvp(self, p, t, out):
        return t[0] / p[0]

    def forward(self, x):
        return np.log(x)

    def backward(self, g, F=TENSORS):
        (x,) = F.saved(self)
        return g / (F.conj(x) if g.dtype in _IS_COMPLEX else x)


class Log2(Unary, name="Log2Backward0"):
    """log to a fixed base: d/dx log_b(x) = 1 / (x ln b)."""
    _fn, _ln_base = staticmethod(np.log2), math.log(2.0)

    jvp = elementwise_jvp

    def forward(self, x):
        return self._fn(x)

    def backward(self, g):
        (x,) = self.saved_values
        return g / _cj(x * self._ln_base, g)


class Log10(Log2, name="Log10Backward0"):
    _fn, _ln_base = staticmethod(np.log10), math.log(10.0)


class Log1p(Unary, name="Log1PBackward0"):
    jvp = elementwise_jvp

    def forward(self, x):
        return np.log1p(x)

    def backward(self, g):
        (x,) = self.saved_values
        return g / _cj(x + 1, g)


class Sqrt(Node, name="SqrtBackward0"):
    opmath = True      # bfloat16: computed in float32, rounded once (_dtype.opmath)
    save = (-1,)
    saved_names = ("result",)

    def jvp(self, p, t, out):
        return t[0] / (2 * out)

    def forward(self, x):
        return np.sqrt(x)

    def backward(self, g, F=TENSORS):
        (out,) = F.saved(self)
        return g / _cj(out * 2, g)


class Rsqrt(Node, name="RsqrtBackward0"):
    opmath = True      # bfloat16: computed in float32, rounded once (_dtype.opmath)
    save = (-1,)
    saved_names = ("result",)

    jvp = elementwise_jvp

    def forward(self, x):
        with np.errstate(divide="ignore"):
            return 1.0 / np.sqrt(x)

    def backward(self, g):
        (out,) = self.saved_values
        return g * _cj(out * out * out * -0.5, g)


class Reciprocal(Node, name="ReciprocalBackward0"):
    opmath = True      # bfloat16: computed in float32, rounded once (_dtype.opmath)
    save = (-1,)
    saved_names = ("result",)

    def jvp(self, p, t, out):
        return -t[0] * out * out

    def forward(self, x):
        with np.errstate(divide="ignore"):
            return np.reciprocal(x)

    def backward(self, g):
        (out,) = self.saved_values
        if out._data.dtype.kind == "c":     # complex: the conjugate Wirtinger gradient
            return -g * (out * out).conj()
        return -g * out * out


class Sin(Unary, name="SinBackward0"):
    def jvp(self, p, t, out):
        return t[0] * p[0].cos()

    def forward(self, x):
        return np.sin(x)

    def backward(self, g):
        (x,) = self.saved_values
        d = x.cos()
        return g * (d.conj() if g.dtype in _IS_COMPLEX else d)     # complex: the conjugate Wirtinger gradient


class Cos(Unary, name="CosBackward0"):
    def jvp(self, p, t, out):
        return -t[0] * p[0].sin()

    def forward(self, x):
        return np.cos(x)

    def backward(self, g):
        (x,) = self.saved_values
        d = -x.sin()
        return g * (d.conj() if g.dtype in _IS_COMPLEX else d)


class Tan(Node, name="TanBackward0"):
    opmath = True      # bfloat16: computed in float32, rounded once (_dtype.opmath)
    save = (-1,)
    saved_names = ("result",)

    jvp = elementwise_jvp

    def forward(self, x):
        return np.tan(x)

    def backward(self, g):
        (out,) = self.saved_values
        return g * _cj(out * out + 1, g)


def _fused(a, *same):
    """The device's fused kernels for array ``a`` (a CuPy array: _cuda_kernels), or None (NumPy keeps its paths). A
    primitive's forward, or a formula on arrays (a plain backward), hides nothing a hook could see."""
    return None if type(a) is np.ndarray else _cuda_kernels.kernels(a, *same)


def _fused_formula(a, *same):
    """``_fused`` for a gradient formula written on Tensors: only when its ops are not watched, i.e. in a plain
    backward (no graph of the gradient recorded) with no op hook registered (it would see each op of the formula)."""
    if type(a) is np.ndarray or _grad_state.enabled or _op_hooks._op_hooks:
        return None
    return _cuda_kernels.kernels(a, *same)


class Tanh(Node, name="TanhBackward0"):
    opmath = True      # bfloat16: computed in float32, rounded once (_dtype.opmath)
    save = (-1,)
    saved_names = ("result",)

    def jvp(self, p, t, out):
        return t[0] * (1 - out * out)

    def forward(self, x):
        return np.tanh(x)

    def backward(self, g, F=TENSORS):
        (out,) = F.saved(self)
        k = None if F is TENSORS or g.dtype in _IS_COMPLEX else _fused(g, out)
        if k is not None:
            return k.tanh_grad(g, out)
        return g * _cj(1 - out * out, g)


class Sigmoid(Node, name="SigmoidBackward0"):
    opmath = True      # bfloat16: computed in float32, rounded once (_dtype.opmath)
    save = (-1,)
    saved_names = ("result",)

    def jvp(self, p, t, out):
        return t[0] * (out * (1 - out))

    def forward(self, x):
        if x.dtype.kind == "c":
            return 1 / (1 + np.exp(-x))
        k = _fused(x)
        if k is not None:
            return k.sigmoid(x)
        e = np.exp(-np.abs(x))      # never overflows
        return np.where(x >= 0, 1.0, e) / (1.0 + e)

    def backward(self, g, F=TENSORS):
        (out,) = F.saved(self)
        k = None if F is TENSORS or g.dtype in _IS_COMPLEX else _fused(g, out)
        if k is not None:
            return k.sigmoid_grad(g, out)
        return g * _cj(out * (1 - out), g)


class Erf(Unary, name="ErfBackward0"):
    jvp = elementwise_jvp

    def forward(self, x):
        return _erf(x)

    def backward(self, g):
        (x,) = self.saved_values
        return g * (2.0 / math.sqrt(math.pi)) * (-(x * x)).exp()


def _erf(x):
    try:
        from scipy.special import erf
        return erf(x).astype(x.dtype, copy=False)
    except ImportError:
        from ._kernels import _erf      # the NumPy kernel, shared with the special functions
        return _erf(x)


class Scale(Node, name="ThresholdBackwardBackward0"):
    """g * factor for a constant array factor (a mask or piecewise slope): the backward of piecewise-
    linear ops (relu, leaky_relu, clamp, abs, minimum...). Its own backward reuses the same factor.

    ``src`` (the op's input or output, or None) is recorded so that, under create_graph, the gradient
    depends on it with derivative zero, as PyTorch's does."""
    save = (1,)
    opmath = "forward"      # a bfloat16 g times a float32 factor: one rounding (_dtype.opmath)

    def forward(self, g, src):
        return np.multiply(g, self.f, dtype=g.dtype)

    def backward(self, gg, F=TENSORS):
        (src,) = F.saved(self)
        nf = self.next_functions
        return (F.scale(gg, self.f, src, Scale) if nf[0][0] is not None else None,
                F.zeros(self._in_meta[1][0], self._in_meta[1][1], gg) if nf[1][0] is not None else None)


def scale(g, f, src=None):
    """Multiply a gradient by a constant factor array (differentiable in g; zero derivative in src)."""
    return Scale.apply(g, src, f=f)


class DivNumber(Node, name="DivBackward1"):
    """g / k for a Python number k: PyTorch's div.Scalar where its C++ backward formulas divide (mean's
    gradient is grad.expand(sizes) / numel)."""
    jvp = elementwise_jvp

    def forward(self, x):
        return x / self.k

    def backward(self, g, F=TENSORS):
        return F.div_number(g, self.k, DivNumber)


class Abs(Unary, name="AbsBackward0"):
    jvp = elementwise_jvp

    def forward(self, x):
        return np.abs(x)

    def backward(self, g):
        (x,) = self.saved_values
        if x._data.dtype.kind == "c":       # PyTorch's abs_backward: g * sgn(x), sgn(x) = x / |x| (0 at 0)
            return g * x.sgn()
        return scale(g, np.sign(x._data), x)


class Threshold(Unary, name="ThresholdBackward0"):
    """x if x > threshold else value; PyTorch's threshold_backward(grad, self, threshold) links self."""
    threshold = 0
    value = 0
    saved_attrs = ("threshold",)

    jvp = elementwise_jvp

    def forward(self, x):
        th, v = self.threshold, self.value
        if x.dtype.kind != "c":     # a complex Scalar on a real tensor: its real part (PyTorch's Scalar to the dtype)
            th, v = (getattr(a, "real", a) for a in (th, v))
        return np.where(x > th, x, v).astype(x.dtype, copy=False)

    def backward(self, g):
        (x,) = self.saved_values
        return scale(g, ~(x._data <= self.threshold), x)       # PyTorch's: a NaN passes g on


class ThresholdInplace(Threshold, name="ThresholdBackward1"):
    pass


@kernel
def _relu_kernel(x, out):
    """relu into a new array; -0.0 and NaN pass, as in PyTorch's."""
    for i in range(x.size):
        v = x[i]
        out[i] = 0 if v < 0 else v


@kernel
def _relu_inplace_kernel(x):
    """relu_ on one array: as fast as PyTorch's (NumPy's maximum(0, x, out=x), and a kernel given x twice, are
    not vectorised: the loop cannot tell that its input and output are the same). -0.0 and NaN pass."""
    for i in range(x.size):
        v = x[i]
        x[i] = 0 if v < 0 else v


class Relu(Node, name="ReluBackward0"):
    save = (-1,)
    saved_names = ("result",)

    def jvp(self, p, t, out):
        return t[0] * (out > 0)

    writes_into = True

    def forward(self, x):
        self.z = z = zero_like(x)
        if type(x) is np.ndarray:
            if x.size > 4096 and x.flags.c_contiguous and fast(x) and (self._into is None or self._into is x):
                if self._into is None:      # (NumPy's maximum: 2-3x slower than this loop)
                    return elementwise(_relu_kernel, x, grain=1 << 17)
                flat = x.reshape(-1)        # relu_: one array, in place, in chunks of 2^18 (at ~0.1 ns an element
                _parallel.parallel_for(flat.size,  # in cache, smaller chunks cost more to hand out than they save)
                                       lambda lo, hi: _relu_inplace_kernel(flat[lo:hi]), 1 << 18)
                return x
            return _parallel.ufunc(np.maximum, z, x, out=self._into)    # z first: -0.0 stays -0.0, as PyTorch's
        return np.maximum(x, z)         # (another array type: a sparse storage keeps its layout this way round)

    def backward(self, g, F=TENSORS):
        (out,) = F.saved(self)
        return F.threshold_backward(g, out, self.z, Scale)


@wide
def _gelu_kernel(x, out):
    for i in range(x.size):
        v = x[i]
        out[i] = v * _f32(0.5) * (_f32(1) + erf32_as(v * _f32(0.7071067811865476)))


@wide
def _gelu_grad_kernel(g, x, out):
    for i in range(x.size):
        v = x[i]
        cdf = _f32(0.5) * (_f32(1) + erf32_as(v * _f32(0.7071067811865476)))
        pdf = _f32(0.3989422804014327) * exp32(v * v * _f32(-0.5))
        out[i] = g[i] * (cdf + v * pdf)


def _gelu_erf(x):
    """erf as PyTorch's GELU kernels compute it: A&S for float32, the exact erf in double precision."""
    return erf_as(x) if x.dtype == np.float32 else _erf(x)


class Gelu(Unary, name="GeluBackward0"):
    """GELU. The exact form computes erf as PyTorch's CPU kernel does (Abramowitz & Stegun 7.1.26, see
    ``_kernels.erf32_as``), compiled when numba is there."""
    saved_attrs = ("approximate",)
    approximate = "none"

    jvp = elementwise_jvp

    def forward(self, x):
        k = _fused(x)
        if k is not None:
            return k.gelu(x, self.approximate)
        if self.approximate == "tanh":
            return 0.5 * x * (1 + np.tanh(_sqrt_2_over_pi * (x + 0.044715 * x ** 3)))
        if fast(x):
            return elementwise(_gelu_kernel, x)
        return x * 0.5 * (1 + _gelu_erf(x * (1 / math.sqrt(2.0))))

    def backward(self, g, F=TENSORS):
        (x,) = F.saved(self)
        return F.op(GeluGrad, g, x, approximate=self.approximate)


class GeluGrad(Node, name="GeluBackwardBackward0"):
    """PyTorch's gelu_backward(grad, self): grad * gelu'(self), one kernel; its own gradient composes."""
    opmath = True      # bfloat16: computed in float32, rounded once (_dtype.opmath)
    save = (0, 1)
    saved_names = ("grad_output", "self")
    saved_attrs = ("approximate",)
    approximate = "none"

    def forward(self, g, x):
        k = _fused(x, g)
        if k is not None:
            return k.gelu_grad(g, x, self.approximate)
        if self.approximate == "tanh":
            inner = _sqrt_2_over_pi * (x + 0.044715 * x ** 3)
            t = np.tanh(inner)
            dinner = _sqrt_2_over_pi * (1 + 3 * 0.044715 * x * x)
            return (g * (0.5 * (1 + t) + 0.5 * x * (1 - t * t) * dinner)).astype(x.dtype, copy=False)
        if fast(g, x) and g.shape == x.shape:
            return elementwise(_gelu_grad_kernel, g, x)
        cdf = 0.5 * (1 + _gelu_erf(x * (1 / math.sqrt(2.0))))
        pdf = np.exp(x * x * -0.5) * (1 / math.sqrt(2 * math.pi))
        return (g * (cdf + x * pdf)).astype(x.dtype, copy=False)

    def backward(self, gg):
        g, x = self.saved_values
        if self.approximate == "tanh":
            k = 0.044715
            inner = (x + x * x * x * k) * _sqrt_2_over_pi
            t = inner.tanh()
            dinner = (x * x * (3 * k) + 1) * _sqrt_2_over_pi
            d1 = 0.5 * (1 + t) + 0.5 * x * (1 - t * t) * dinner
            d2 = (1 - t * t) * dinner + x * (1 - t * t) * (-t * dinner * dinner + x * (3 * k) * _sqrt_2_over_pi)
        else:
            cdf = ((x * (1 / math.sqrt(2.0))).erf() + 1) * 0.5
            pdf = (x * x * -0.5).exp() * (1 / math.sqrt(2 * math.pi))
            d1 = cdf + x * pdf
            d2 = pdf * (2 - x * x)
        return gg * d1, gg * g * d2


class Silu(Unary, name="SiluBackward0"):
    jvp = elementwise_jvp

    def forward(self, x):
        k = _fused(x)
        if k is not None:
            return k.silu(x)
        return x * Sigmoid.forward(self, x)

    def backward(self, g):
        (x,) = self.saved_values
        k = _fused_formula(x._data, g._data)
        if k is not None:
            return Tensor._make(k.silu_grad(g._data, x._data))
        s = x.sigmoid()
        return g * (s * (1 + x * (1 - s)))


class Softplus(Unary, name="SoftplusBackward0"):
    saved_attrs = ("beta", "threshold")
    beta = 1.0
    threshold = 20.0

    jvp = elementwise_jvp

    def forward(self, x):
        k = _fused(x)
        if k is not None:
            return k.softplus(x, self.beta, self.threshold)
        bx = x * self.beta
        return np.where(bx > self.threshold, x, np.log1p(np.exp(np.minimum(bx, self.threshold))) / self.beta).astype(x.dtype, copy=False)

    def backward(self, g):
        (x,) = self.saved_values
        k = _fused_formula(x._data, g._data)
        if k is not None:
            return Tensor._make(k.softplus_grad(g._data, x._data, self.beta, self.threshold))
        bx = x * self.beta
        return g * _where(bx > self.threshold, 1.0, bx.sigmoid())


class Elu(Unary, name="EluBackward0"):
    saved_attrs = ("alpha", "scale", "input_scale")
    alpha = 1.0
    scale = 1.0
    input_scale = 1.0

    jvp = elementwise_jvp

    def forward(self, x):
        k = _fused(x)
        if k is not None:
            return k.elu(x, self.alpha, self.scale, self.input_scale)
        return (self.scale * np.where(x > 0, x, self.alpha * np.expm1(np.minimum(x, 0) * self.input_scale))).astype(x.dtype, copy=False)

    def backward(self, g):
        (x,) = self.saved_values
        k = _fused_formula(x._data, g._data)
        if k is not None:
            return Tensor._make(k.elu_grad(g._data, x._data, self.alpha, self.scale, self.input_scale))
        neg = (x * self.input_scale).exp() * (self.alpha * self.input_scale * self.scale)
        return g * _where(x > 0, float(self.scale), neg)


class EluInplace(Elu, name="EluBackward1"):
    pass


class LeakyRelu(Unary, name="LeakyReluBackward0"):
    saved_attrs = ("negative_slope",)
    negative_slope = 0.01

    jvp = elementwise_jvp

    def forward(self, x):
        k = _fused(x)
        if k is not None:
            return k.leaky_relu(x, self.negative_slope)
        return np.where(x > 0, x, x * self.negative_slope).astype(x.dtype, copy=False)

    def backward(self, g):
        (x,) = self.saved_values
        k = _fused_formula(x._data, g._data)
        if k is not None:
            return Tensor._make(k.leaky_relu_grad(g._data, x._data, self.negative_slope))
        return scale(g, np.where(x._data > 0, 1.0, self.negative_slope), x)


class LeakyReluInplace(LeakyRelu, name="LeakyReluBackward1"):
    pass


class Clamp(Unary, name="ClampBackward1"):
    """clamp(x, min, max) with number bounds; the gradient passes where min <= x <= max."""
    saved_attrs = ("min=lo", "max=hi")
    lo = None
    hi = None
    strict = False       # hardtanh: min < x < max

    jvp = elementwise_jvp

    def forward(self, x):
        out = x
        if self.lo is not None:
            out = np.maximum(out, self.lo)
        if self.hi is not None:
            out = np.minimum(out, self.hi)
        return out.astype(x.dtype, copy=False) if out is not x else x.copy()

    def backward(self, g):
        (xt,) = self.saved_values
        x = xt._data
        ge, le = (np.greater, np.less) if self.strict else (np.greater_equal, np.less_equal)
        m = True
        if self.lo is not None:
            m = ge(x, self.lo)
        if self.hi is not None:
            m = m & le(x, self.hi)
        # hardtanh_backward depends on its input (derivative zero); clamp's where() does not
        return scale(g, m, xt if self.strict else None)


class ClampMin(Clamp, name="ClampMinBackward0"):
    pass


class ClampMax(Clamp, name="ClampMaxBackward0"):
    pass


class Hardtanh(Clamp, name="HardtanhBackward0"):
    saved_attrs = ("min_val=lo", "max_val=hi")
    strict = True


class ClampT(Node, name="ClampBackward0"):
    """clamp with tensor bounds (either may be None): min(max(x, lo), hi)."""
    save = (0, 1, 2)
    saved_names = ("self", "min", "max")
    dt = None

    def jvp(self, p, t, out):
        # PyTorch's clamp_jvp: at a tie the bound's tangent (unlike backward, which gives it to self)
        x, lo, hi = (a._data if isinstance(a, Tensor) else None for a in p)
        mx = True
        mlo = mhi = None
        if lo is not None and hi is not None:
            mhi = np.greater(lo, hi) | (np.greater(x, hi) & ~np.less(x, lo))
            mlo = ~np.greater(lo, hi) & np.less(x, lo)
            mx = ~(mhi | mlo)
        elif lo is not None:
            mx = np.greater(x, lo)
            mlo = ~mx
        elif hi is not None:
            mx = np.less(x, hi)
            mhi = ~mx
        m = lambda k, a: None if t[k] is None or a is None else t[k] * Tensor._make(a)
        return tsum(m(0, mx), m(1, mlo), m(2, mhi))

    def forward(self, x, lo, hi):
        dt = self.dt or x.dtype
        out = x if lo is None else np.maximum(x, lo)
        out = out if hi is None else np.minimum(out, hi)
        return array_module(x).array(out, dtype=dt, copy=True)

    def backward(self, g):
        xt, lot, hit = self.saved_values
        x, lo, hi = (t._data if isinstance(t, Tensor) else None for t in (xt, lot, hit))
        nf = self.next_functions
        m = True
        if lo is not None:
            m = np.greater_equal(x, lo)
        if hi is not None:
            m = m & np.less_equal(x, hi)
        glo = ghi = None
        if hi is not None and nf[2][0] is not None:             # max, min, self (alphabetical)
            ghi = scale(g, np.greater(x, hi) | (False if lo is None else np.less(hi, lo)))
        if lo is not None and nf[1][0] is not None:
            glo = scale(g, np.less(x, lo) & (True if hi is None else np.less(lo, hi)))
        return (scale(g, m) if nf[0][0] is not None else None), glo, ghi


class ClampMinT(ClampT, name="ClampMinBackward1"):
    pass


class ClampMaxT(ClampT, name="ClampMaxBackward1"):
    pass


class ZeroGrad(Node):
    """Piecewise-constant functions: gradient zero everywhere (a new zero tensor, as PyTorch's
    zeros_like(grad): no graph, so a double backward does not reach the forward graph through it)."""

    def backward(self, g):
        return _zeros(g)


class Sign(ZeroGrad, name="SignBackward0"):
    jvp = elementwise_jvp

    def forward(self, x):
        return np.sign(x)


class Floor(ZeroGrad, name="FloorBackward0"):
    jvp = elementwise_jvp

    def forward(self, x):
        return np.floor(x) if D.is_floating(x.dtype) else x.copy()


class Ceil(ZeroGrad, name="CeilBackward0"):
    jvp = elementwise_jvp

    def forward(self, x):
        return np.ceil(x) if D.is_floating(x.dtype) else x.copy()


class Round(ZeroGrad, name="RoundBackward0"):
    decimals = 0

    jvp = elementwise_jvp

    def forward(self, x):
        return np.round(x, self.decimals) if D.is_floating(x.dtype) else x.copy()


class RoundDecimals(Round, name="RoundBackward1"):
    opmath = "forward"     # bfloat16: x * 10**d rounded in float32, the result rounded once (_dtype.opmath)
    jvp = elementwise_jvp


class Trunc(ZeroGrad, name="TruncBackward0"):
    jvp = elementwise_jvp

    def forward(self, x):
        return np.trunc(x) if D.is_floating(x.dtype) else x.copy()


class Frac(Node, name="FracBackward0"):
    jvp = elementwise_jvp

    def forward(self, x):
        return x - np.trunc(x)

    def backward(self, g):
        return g


class Fmax(Node, name="FmaxBackward0"):
    """fmax/fmin: NaN-ignoring; ties send the whole gradient to ``input`` (as PyTorch)."""
    save = (0, 1)
    saved_names = ("self", "other")
    dt = None
    op = staticmethod(np.fmax)

    def forward(self, x, y):
        return self.op(x, y, dtype=self.dt)

    def backward(self, g):
        x, y = self.saved_values
        a, b = x._data, y._data
        m = (np.greater_equal(a, b) if self.op is np.fmax else np.less_equal(a, b)) | np.isnan(b)
        nf = self.next_functions
        gy = scale(g, ~m) if nf[1][0] is not None else None      # other first
        return (scale(g, m) if nf[0][0] is not None else None), gy


class Fmin(Fmax, name="FminBackward0"):
    op = staticmethod(np.fmin)


class DivMode(Div, name="DivBackward2"):
    """div(..., rounding_mode=None) named explicitly: PyTorch's div.Tensor_mode, true division."""
    saved_attrs = ("rounding_mode=None",)


class DivRound(ZeroGrad, name="DivBackward2"):
    """div(..., rounding_mode='trunc'|'floor'): piecewise constant."""
    save = (0, 1)                   # (what PyTorch's div.Tensor_mode saves, though a rounded quotient's formula is 0)
    saved_names = ("self", "other")
    save_if = ((1,), None)
    saved_attrs = ("rounding_mode=mode",)
    opmath = "forward"     # bfloat16 (and a Python number) in float32, rounded once (_dtype.opmath)
    dt = None
    mode = "trunc"
    _low = None

    def forward(self, x, y):
        if self.dt is not None:
            xp = module_of(x, y)
            x, y = xp.asarray(x, self.dt), xp.asarray(y, self.dt)
        if D.is_floating(x.dtype):
            with np.errstate(divide="ignore", invalid="ignore"):
                if self.mode == "floor":
                    return np.floor_divide(x, y)
                q = np.true_divide(x, y)
                # bfloat16: PyTorch truncates the quotient rounded to bfloat16 (floor: the float32 one)
                return np.trunc(q if self._low is None else q.astype(self._low).astype(q.dtype))
        _check_int_div(y)
        q = np.floor_divide(x, y)
        return q if self.mode == "floor" else q + ((q < 0) & (q * y != x))    # round toward zero

    def backward(self, g):
        # PyTorch: zeros_like(grad) for both inputs (no graph)
        nf = self.next_functions
        return (_zeros(g) if nf[0][0] is not None else None,
                _zeros(g) if nf[1][0] is not None else None)


def _check_int_div(y):
    if np.any(y == 0):
        raise RuntimeError("ZeroDivisionError")


class FloorDivide(Node, name="NotImplemented"):
    """x // y: PyTorch defines no derivative (backward raises)."""
    opmath = "forward"     # bfloat16 (and a Python number) in float32, rounded once (_dtype.opmath)
    dt = None

    def forward(self, x, y):
        if self.dt is not None:
            xp = module_of(x, y)
            x, y = xp.asarray(x, self.dt), xp.asarray(y, self.dt)
        if not D.is_floating(x.dtype):
            _check_int_div(y)
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.floor_divide(x, y)

    def backward(self, g):
        raise RuntimeError("derivative for aten::floor_divide is not implemented")


class Remainder(Node, name="RemainderBackward0"):
    """x % number: the gradient of x is g."""
    dt = None

    def forward(self, x, y):
        if not D.is_floating((self.dt or x.dtype)):
            _check_int_div(y)
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.mod(x, y, dtype=self.dt)

    def backward(self, g):
        return g, None


class RemainderT(Node, name="RemainderBackward1"):
    save = (0, 1)
    saved_names = ("self", "other")
    save_if = ((1,), (1,))          # the gradient of self is grad itself
    dt = None
    op = staticmethod(np.mod)
    round = "floor"

    def forward(self, x, y):
        return Remainder.forward(self, x, y) if self.op is np.mod else np.fmod(x, y, dtype=self.dt)

    def backward(self, g):
        x, y = self.saved_values
        nf = self.next_functions
        gy = None
        if nf[1][0] is not None:
            gy = -g * div(x, y, rounding_mode=self.round)
        return g, gy


class Fmod(Remainder, name="FmodBackward0"):
    def forward(self, x, y):
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.fmod(x, y, dtype=self.dt)


class FmodT(RemainderT, name="FmodBackward1"):
    op = staticmethod(np.fmod)
    round = "trunc"


class Lerp(Node, name="LerpBackward0"):
    """input + weight * (end - input) with a number weight."""
    opmath = "forward"     # bfloat16 (and a Python number) in float32, rounded once (_dtype.opmath)
    save = ()
    saved_attrs = ("weight=w",)
    dt = None
    w = 0.5

    def forward(self, x, e):
        return np.add(x, self.w * np.subtract(e, x), dtype=self.dt or x.dtype)

    def backward(self, g):
        nf = self.next_functions
        ge = g * self.w if nf[1][0] is not None else None      # end first (alphabetical)
        return (g * (1 - self.w) if nf[0][0] is not None else None), ge


class LerpT(Node, name="LerpBackward1"):
    opmath = "forward"     # bfloat16 (and a Python number) in float32, rounded once (_dtype.opmath)
    save = (0, 1, 2)
    saved_names = ("self", "end", "weight")
    save_if = ((2,), (2,), None)    # self and end only for the gradient of weight
    dt = None

    def forward(self, x, e, w):
        return np.add(x, w * np.subtract(e, x), dtype=self.dt or x.dtype)

    def backward(self, g):
        x, e, w = self.saved_values
        nf = self.next_functions
        ge = g * w if nf[1][0] is not None else None            # end, self, weight (alphabetical)
        gx = g * (1 - w) if nf[0][0] is not None else None
        return gx, ge, (g * (e - x) if nf[2][0] is not None else None)


# -------------------------------------------------------------------------- public functions
# the unary ops whose gradient formulas handle complex input (conjugate Wirtinger); the others refuse it
_COMPLEX_OK = {"ExpBackward0", "ReciprocalBackward0", "LogBackward0", "SinBackward0", "CosBackward0",
               "Expm1Backward0", "Log2Backward0", "Log10Backward0", "Log1PBackward0", "SqrtBackward0",
               "RsqrtBackward0", "TanBackward0", "TanhBackward0", "SigmoidBackward0", "AsinBackward0",
               "AcosBackward0", "AtanBackward0", "AsinhBackward0", "AcoshBackward0", "AtanhBackward0",
               "SinhBackward0", "CoshBackward0", "Exp2Backward0"}


def _float_input(x, cls=None):
    """exp/log/sin... of an integer tensor compute in the default float dtype (as PyTorch); a complex tensor
    passes only to the ops whose formulas handle it (``cls``, its grad_fn name in ``_COMPLEX_OK``)."""
    k = x._data.dtype.kind
    if k == "c":
        if cls is not None and cls.__name__ in _COMPLEX_OK:
            return x
        from .._errors import complex_unsupported
        raise complex_unsupported(cls.__name__.replace("Backward0", "").lower() if cls is not None else "this op")
    if k != "f" and not D.is_floating(x._data.dtype):
        return x.to(D.get_default_dtype())
    return x


def _out(r, out):
    if out is not None:
        out.copy_(r)
        return out
    return r


def _unary(cls, float_only=True, doc=None, kernel=None):
    """The public function of a unary primitive. kernel: for an op that has no loop for bool, the name of
    PyTorch's kernel (its NotImplementedError), or the RuntimeError PyTorch raises instead."""
    name = cls.__name__.replace("Backward0", "").lower()
    if float_only:
        def fn(input, *, out=None):
            try:
                k = input._data.dtype.kind
            except AttributeError:
                raise not_tensor(name, input) from None
            r = cls.apply(input if k == "f" else _float_input(input, cls))
            return r if out is None else _out(r, out)
    else:
        def fn(input, *, out=None):
            try:
                k = input._data.dtype.kind
            except AttributeError:
                raise not_tensor(name, input) from None
            if k == "b" and kernel is not None:
                raise type(kernel)(*kernel.args) if isinstance(kernel, Exception) else not_implemented_for(kernel, input._data.dtype)
            r = cls.apply(input)
            return r if out is None else _out(r, out)
    fn.__name__ = name
    fn.__doc__ = doc or f"Elementwise {fn.__name__} (differentiable; grad_fn {cls.__name__})."
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
neg = negative = _unary(Neg, False, kernel=RuntimeError(
    "Negation, the `-` operator, on a bool tensor is not supported. If you are trying to invert a mask, use the `~` "
    "or `logical_not()` operator instead."))
abs = absolute = _unary(Abs, False, kernel="abs_cpu")
_sign = _unary(Sign, False)


def sign(input, *, out=None):
    """-1, 0 or 1 by the sign of each element (a bool tensor is its own sign)."""
    if isinstance(input, Tensor) and input._data.dtype.kind == "b":
        return _out(Tensor._make(input._data.copy()), out)
    return _sign(input, out=out)
floor = _unary(Floor, False)
ceil = _unary(Ceil, False)
trunc = fix = _unary(Trunc, False)
frac = _unary(Frac, False)
_silu = _unary(Silu)


def silu(input, *, out=None):
    """x * sigmoid(x)."""
    _act(input, "silu", "silu_cpu")
    return _silu(input, out=out)


def round(input, *, decimals=0):
    """Round half to even; ``decimals`` rounds to that many decimal places."""
    if decimals:
        if isinstance(input, Tensor) and not D.is_floating(input._data.dtype):
            raise not_implemented_for("round_cpu", input._data.dtype)
        return RoundDecimals.apply(input, decimals=decimals)
    return Round.apply(input)


def threshold(input, threshold, value, inplace=False):
    """x if x > threshold else value."""
    # Scalars: a 0-dim tensor is its number (grad_fn._saved_threshold reads a Python number)
    threshold, value = (a.item() if isinstance(a, Tensor) else a for a in (threshold, value))
    if inplace:
        return apply_inplace(input, ThresholdInplace, threshold=threshold, value=value)
    return Threshold.apply(input, threshold=threshold, value=value)


def _act(input, fname, kernel, numbers=(), bool_error=None):
    """PyTorch's argument checks of an activation: a Tensor input, Number parameters ((name, value, position)
    triples) and the dtypes its kernel has loops for: kernel is the float-only kernel's name; for kernels
    that take integers too, kernel is None and bool_error the RuntimeError's text PyTorch raises for bool."""
    if not isinstance(input, Tensor):
        raise not_tensor(fname, input)
    for name, v, pos in numbers:
        if not is_number(v):
            raise not_number(fname, v, name, pos)
    k = input._data.dtype.kind
    if k != "f" and not D.has_float_kernels(input._data.dtype):
        if kernel is not None:
            raise not_implemented_for(kernel, input._data.dtype)
        if k == "b":
            raise RuntimeError(bool_error)


def relu(input, inplace=False):
    """max(x, 0)."""
    if type(input) is not Tensor or input._data.dtype.kind == "b":
        _act(input, "relu", None, bool_error="Boolean inputs not supported for relu")
    if inplace:
        return apply_inplace(input, Relu)
    return Relu.apply(input)


def gelu(input, approximate="none"):
    """Gaussian error linear unit; ``approximate='tanh'`` uses the tanh approximation."""
    if approximate not in ("none", "tanh"):
        raise RuntimeError("approximate argument must be either none or tanh.")
    _act(input, "gelu", "GeluKernelImpl")
    return Gelu.apply(input, approximate=approximate)


def softplus(input, beta=1.0, threshold=20.0):
    """log(1 + exp(beta x)) / beta, linear above ``threshold``."""
    _act(input, "softplus", "softplus_cpu", (("beta", beta, 2), ("threshold", threshold, 3)))
    return Softplus.apply(input, beta=beta, threshold=threshold)


def elu(input, alpha=1.0, inplace=False):
    """x if x > 0 else alpha (exp(x) - 1)."""
    _act(input, "elu", "elu_cpu", (("alpha", alpha, 2),))
    if inplace:
        return apply_inplace(input, EluInplace, alpha=alpha)
    return Elu.apply(input, alpha=alpha)


def selu(input, inplace=False):
    """Scaled ELU with the self-normalising constants."""
    _act(input, "selu", "elu_cpu")
    kw = dict(alpha=1.6732632423543772848170429916717, scale=1.0507009873554804934193349852946)
    return apply_inplace(input, EluInplace, **kw) if inplace else Elu.apply(input, **kw)


class Celu(Elu, name="CeluBackward0"):
    jvp = elementwise_jvp

    def backward(self, g):
        (x,) = self.saved_values
        s = 1.0 / float(np.float32(self.alpha))     # PyTorch's celu backward: 1.0 / alpha.toFloat()
        return g * _where(x > 0, 1.0, (x * s).exp() * (self.alpha * s))


class CeluInplace(Celu, name="CeluBackward1"):
    pass


def celu(input, alpha=1.0, inplace=False):
    """max(0, x) + min(0, alpha (exp(x / alpha) - 1))."""
    _act(input, "celu", "elu_cpu", (("alpha", alpha, 2),))
    kw = dict(alpha=alpha, input_scale=1.0 / alpha)
    return apply_inplace(input, CeluInplace, **kw) if inplace else Celu.apply(input, **kw)


def leaky_relu(input, negative_slope=0.01, inplace=False):
    """x if x > 0 else negative_slope * x."""
    _act(input, "leaky_relu", "leaky_relu_cpu", (("negative_slope", negative_slope, 2),))
    if inplace:
        return apply_inplace(input, LeakyReluInplace, negative_slope=negative_slope)
    return LeakyRelu.apply(input, negative_slope=negative_slope)


def _clamp_tensor(cls, input, lo, hi):
    from .. import _dtype as D
    ts = [t for t in (input, lo, hi) if isinstance(t, Tensor)]
    ss = [s for s in (lo, hi) if s is not None and not isinstance(s, Tensor)]
    dt = D.result_type_of(ts, ss)
    xp = array_module(ts[0]._data)
    lo = lo if lo is None or isinstance(lo, Tensor) else Tensor._make(xp.asarray(lo, dt.np))
    hi = hi if hi is None or isinstance(hi, Tensor) else Tensor._make(xp.asarray(hi, dt.np))
    return cls.apply(input, lo, hi, dt=dt.np)


def clamp(input, min=None, max=None, *, out=None):
    """Clamp every element into [min, max]; bounds may be numbers or (broadcasting) tensors."""
    if min is None and max is None:
        raise RuntimeError("torch.clamp: At least one of 'min' or 'max' must not be None")
    if isinstance(min, Tensor) or isinstance(max, Tensor):
        return _out(_clamp_tensor(ClampT, input, min, max), out)
    x = input
    if not D.is_floating(x._data.dtype) and (isinstance(min, float) or isinstance(max, float)):
        x = _float_input(x)
    return _out(Clamp.apply(x, lo=min, hi=max), out)


clip = clamp


def clamp_min(input, min):
    """max(input, min) (grad_fn ClampMinBackward)."""
    if isinstance(min, Tensor):
        return _clamp_tensor(ClampMinT, input, min, None)
    x = _float_input(input) if isinstance(min, float) else input
    return ClampMin.apply(x, lo=min)


def clamp_max(input, max):
    """min(input, max) (grad_fn ClampMaxBackward)."""
    if isinstance(max, Tensor):
        return _clamp_tensor(ClampMaxT, input, None, max)
    x = _float_input(input) if isinstance(max, float) else input
    return ClampMax.apply(x, hi=max)


def hardtanh(input, min_val=-1.0, max_val=1.0, inplace=False):
    """clamp(x, min_val, max_val) whose gradient is zero at the bounds."""
    _act(input, "hardtanh", None, (("min_val", min_val, 2), ("max_val", max_val, 3)),
         bool_error="Bool inputs not supported for hardtanh")
    if inplace:
        return apply_inplace(input, Hardtanh, lo=min_val, hi=max_val, strict=True)
    return Hardtanh.apply(input, lo=min_val, hi=max_val)


def relu6(input, inplace=False):
    """hardtanh(x, 0, 6)."""
    return hardtanh(input, 0.0, 6.0, inplace)


def _check_alpha(fname, input, other, alpha):
    """PyTorch's checks of add/sub's ``alpha``: a Number, integral for integral tensors, bool only for bool."""
    if not is_number(alpha):
        raise not_number(fname, alpha, "alpha")
    ts = [t for t in (input, other) if isinstance(t, Tensor)]
    from .. import _dtype as D
    dt = D.result_type_of(ts, [t for t in (input, other) if not isinstance(t, Tensor)]) if ts else None
    if dt is not None and not dt.is_floating_point and isinstance(alpha, (float, np.floating)):
        raise RuntimeError("For integral input tensors, argument alpha must not be a floating point number.")
    if dt is not None and dt.name != "bool" and isinstance(alpha, (bool, np.bool_)):
        raise RuntimeError("Boolean alpha only supported for Boolean results.")


def deprecated_overload(fname, old, new):
    """PyTorch's warning for a deprecated positional overload (``add(input, alpha, other)``)."""
    import warnings
    warnings.warn(f"This overload of {fname} is deprecated:\n\t{old}\nConsider using one of the following "
                  f"signatures instead:\n\t{new}", UserWarning, stacklevel=3)


def _alpha_overload(fname, input, other, rest, alpha):
    """``add(input, Number alpha, Tensor other)`` (deprecated) -> (other, alpha)."""
    if len(rest) == 1 and is_number(other) and isinstance(rest[0], Tensor) and alpha == 1:
        deprecated_overload(fname, f"{fname}(Tensor input, Number alpha, Tensor other, *, Tensor out = None)",
                            f"{fname}(Tensor input, Tensor other, *, Number alpha = 1, Tensor out = None)")
        return rest[0], other
    raise TypeError(f"{fname}() takes 2 positional arguments but {2 + len(rest)} were given")


def _numbers(input, other):
    """torch.add(2, 3) & co.: two Python numbers give a 0-d tensor with PyTorch's dtype rules."""
    if not isinstance(input, Tensor) and not isinstance(other, Tensor) and is_number(input) and is_number(other):
        from .. import _dtype as D
        return Tensor._make(default_module().asarray(input, D.result_type_of([], [input]).np))
    return input


def add(input, other, *rest, alpha=1, out=None):
    """input + alpha * other, with broadcasting and type promotion."""
    if rest:
        other, alpha = _alpha_overload("add", input, other, rest, alpha)
    if not isinstance(input, Tensor):
        input = _numbers(input, other)
    if alpha != 1 or type(alpha) is not int:
        _check_alpha("add", input, other, alpha)
    r = binary(Add, input, other, alpha=alpha) if alpha != 1 else binary(Add, input, other)
    return r if out is None else _out(r, out)


def sub(input, other, *rest, alpha=1, out=None):
    """input - alpha * other."""
    if rest:
        other, alpha = _alpha_overload("sub", input, other, rest, alpha)
    if not isinstance(input, Tensor):
        input = _numbers(input, other)
    if alpha != 1 or type(alpha) is not int:
        _check_alpha("sub", input, other, alpha)
    ba = input._data.dtype == np.bool_ if isinstance(input, Tensor) else isinstance(input, (bool, np.bool_))
    bb = other._data.dtype == np.bool_ if isinstance(other, Tensor) else isinstance(other, (bool, np.bool_))
    if ba and bb:
        raise RuntimeError("Subtraction, the `-` operator, with two bool tensors is not supported. Use the `^` or "
                           "`logical_xor()` operator instead.")
    if ba or bb:
        raise RuntimeError("Subtraction, the `-` operator, with a bool tensor is not supported. If you are trying to "
                           "invert a mask, use the `~` or `logical_not()` operator instead.")
    r = binary(Sub, input, other, alpha=alpha) if alpha != 1 else binary(Sub, input, other)
    return r if out is None else _out(r, out)


def subtract(input, other, alpha=1, *, out=None):
    """sub's alias; PyTorch's subtract(input, Number other, Number alpha) also takes alpha by position."""
    return sub(input, other, alpha=alpha, out=out)



def rsub(input, other, alpha=1):
    """other - alpha * input."""
    if isinstance(other, Tensor):
        return binary(RsubT, input, other, alpha=alpha)
    return binary(Rsub, input, other, alpha=alpha)


class RsubT(Rsub, name="RsubBackward0"):
    def backward(self, g):
        return (-g if self.alpha == 1 else g * -self.alpha), g


def mul(input, other, *, out=None):
    """input * other."""
    if not isinstance(input, Tensor):
        input = _numbers(input, other)
    r = binary(Mul, input, other)
    return r if out is None else _out(r, out)


multiply = mul


_NO_MODE = "no rounding_mode given"


def div(input, other, *, rounding_mode=_NO_MODE, out=None):
    """True division (integers give floats); rounding_mode 'trunc' or 'floor' rounds the quotient."""
    if not isinstance(input, Tensor):
        input = _numbers(input, other)
    if rounding_mode is _NO_MODE or rounding_mode is None:
        # (rounding_mode=None named: PyTorch's div.Tensor_mode, DivBackward2)
        r = binary(Div if rounding_mode is _NO_MODE else DivMode, input, other, float_only=True)
    elif rounding_mode in ("trunc", "floor"):
        r = binary(DivRound, input, other, mode=rounding_mode)
    else:
        raise RuntimeError("div expected rounding_mode to be one of None, 'trunc', or 'floor' but found "
                           f"'{rounding_mode}'")
    return r if out is None else _out(r, out)


divide = true_divide = div


def floor_divide(input, other):
    """Floor of input / other (no derivative, as in PyTorch)."""
    if not isinstance(input, Tensor):
        input = _numbers(input, other)
    if isinstance(input, Tensor) and input._data.dtype == np.bool_ and (
            other._data.dtype == np.bool_ if isinstance(other, Tensor) else isinstance(other, (bool, np.bool_))):
        from .._dtype import bool_ as _bool
        raise not_implemented_for("div_floor_cpu", _bool)
    return binary(FloorDivide, input, other)


def remainder(input, other):
    """Python-style modulus (sign of the divisor)."""
    if isinstance(other, Tensor) and isinstance(input, Tensor):
        return binary(RemainderT, input, other)
    if not isinstance(input, Tensor):
        return binary(RemainderT, _scalar_tensor(input, other), other)
    return binary(Remainder, input, other)


def fmod(input, other):
    """C-style modulus (sign of the dividend)."""
    if isinstance(input, Tensor) and input._data.dtype.kind in "iub" and isinstance(other, (int, np.integer)) \
            and not isinstance(other, bool) and other == 0:
        raise RuntimeError("ZeroDivisionError")
    if isinstance(other, Tensor):
        if isinstance(input, Tensor) and input._data.dtype.kind in "iub" and other._data.dtype.kind in "iub":
            _check_int_div(other._data)
        return binary(FmodT, input, other)
    return binary(Fmod, input, other)


def _scalar_tensor(v, like):
    from .. import _dtype as D
    return Tensor._make(array_module(like._data).asarray(v, D.result_type_of([], [v]).np if not isinstance(v, float) else like._data.dtype
                                   if D.is_floating(like._data.dtype) else D.get_default_dtype().np))


def pow(input, exponent):
    """input ** exponent; either may be a number."""
    if isinstance(input, Tensor) and not isinstance(exponent, Tensor):
        if isinstance(exponent, (list, tuple)):
            exponent = _tensor(exponent)
        else:
            x = input
            if not D.is_floating(x._data.dtype) and isinstance(exponent, float):
                x = _float_input(x)
            if x._data.dtype.kind in "iu" and isinstance(exponent, int) and exponent < 0:
                raise RuntimeError("Integers to negative integer powers are not allowed.")
            return _scalar_op(PowScalar, x, exponent, "exponent")
    if not isinstance(input, Tensor):
        return _scalar_op(RPow, exponent, input, "base")
    return binary(Pow, input, exponent)


def _scalar_op(cls, t, scalar, param):
    """Apply an op whose Python-number operand is a parameter (PyTorch's Scalar overloads)."""
    from ._dispatch import _scalar_result
    dt = _scalar_result(t, scalar, False)
    params = {param: dt.type(scalar)}
    if dt is not t._data.dtype:
        params["dt"] = dt
    return cls.apply(t, **params)


def _tensor(v):
    from .._creation import tensor
    return tensor(v)


def square(input):
    """input ** 2."""
    return pow(input, 2)


def _two_tensors(fname, input, other):
    if not isinstance(input, Tensor):
        raise not_tensor(fname, input)
    if not isinstance(other, Tensor):
        raise not_tensor(fname, other, "other", 2)


def _two_tensor_op(node, name, doc):
    """The public function of a binary op whose arguments must both be tensors (no Python numbers)."""
    def op(input, other):
        _two_tensors(name, input, other)
        return binary(node, input, other)
    op.__name__ = op.__qualname__ = name
    op.__doc__ = doc
    return op


minimum = _two_tensor_op(Minimum, "minimum", "Elementwise minimum (ties split the gradient).")
maximum = _two_tensor_op(Maximum, "maximum", "Elementwise maximum (ties split the gradient).")
fmax = _two_tensor_op(Fmax, "fmax", "Elementwise maximum ignoring NaN.")
fmin = _two_tensor_op(Fmin, "fmin", "Elementwise minimum ignoring NaN.")


def atan2(input, other):
    """Elementwise arctan(input / other) in the right quadrant."""
    return binary(Atan2, input, other, float_only=True)


arctan2 = atan2


def lerp(input, end, weight):
    """input + weight * (end - input); weight a number or a tensor."""
    if isinstance(weight, Tensor):
        from .. import _dtype as D
        dt = D.result_type_of([input, end, weight])
        return LerpT.apply(input, end, weight, dt=dt.np)
    if input._data.dtype != end._data.dtype:
        raise RuntimeError(f"expected dtype {input.dtype} for `end` but got dtype {end.dtype}")
    return Lerp.apply(input, end, w=weight)


class Hardsigmoid(Unary, name="HardsigmoidBackward0"):
    jvp = elementwise_jvp

    def forward(self, x):
        return (np.clip(x + 3, 0, 6) / 6).astype(x.dtype, copy=False)

    def backward(self, g):
        (x,) = self.saved_values
        return HardsigmoidGrad.apply(g, x)


class HardsigmoidGrad(Node, name="HardsigmoidBackwardBackward0"):
    """g / 6 strictly inside (-3, 3): PyTorch defines no derivative of it (backward raises)."""
    opmath = True      # bfloat16: computed in float32, rounded once (_dtype.opmath)

    def forward(self, g, x):
        # PyTorch multiplies by its float constant 1/6 (a float32), also for double
        return np.where((x > -3) & (x < 3), g * g.dtype.type(np.float32(1 / 6)), 0).astype(g.dtype, copy=False)

    def backward(self, gg):
        raise RuntimeError("derivative for aten::hardsigmoid_backward is not implemented")


class Hardswish(Unary, name="HardswishBackward0"):
    jvp = elementwise_jvp

    def forward(self, x):
        return (x * np.clip(x + 3, 0, 6) / 6).astype(x.dtype, copy=False)

    def backward(self, g):
        (xt,) = self.saved_values
        x = xt._data
        # PyTorch: 0 up to -3, x/3 + 1/2 inside (-3, 3), 1 from 3 on; its derivative 1/3 strictly inside
        slope = np.where((x > -3) & (x < 3), 1 / 3, 0).astype(x.dtype)
        d = np.where(x <= -3, 0, np.where(x < 3, x / 3 + 0.5, 1)).astype(x.dtype) - slope * x
        return g * (xt * Tensor._make(slope) + Tensor._make(d))


class Mish(Unary, name="MishBackward0"):
    jvp = elementwise_jvp

    def forward(self, x):
        return (x * np.tanh(np.logaddexp(0, x))).astype(x.dtype, copy=False)

    def backward(self, g):
        (x,) = self.saved_values
        t = softplus(x).tanh()
        return g * (t + x * x.sigmoid() * (1 - t * t))


class LogSigmoid(Unary, name="LogSigmoidBackward0"):
    saved_attrs = ("buffer=buf",)

    jvp = elementwise_jvp

    def forward(self, x):
        z = np.exp(-np.abs(x))
        self.buf = z
        return (np.minimum(x, 0) - np.log1p(z)).astype(x.dtype, copy=False)

    def backward(self, g):
        (x,) = self.saved_values
        return g * (-x).sigmoid()


def hardsigmoid(input, inplace=False):
    _act(input, "hardsigmoid", "hardsigmoid_cpu")
    return Hardsigmoid.apply(input)


def hardswish(input, inplace=False):
    _act(input, "hardswish", "hardswish_cpu")
    return Hardswish.apply(input)


def mish(input, inplace=False):
    _act(input, "mish", "mish_cpu")
    return Mish.apply(input)


def logsigmoid(input):
    _act(input, "log_sigmoid", "log_sigmoid_cpu")
    return LogSigmoid.apply(input)


def softsign(input):
    return input / (abs(input) + 1)


def tanhshrink(input):
    return input - tanh(input)
