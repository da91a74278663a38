"""Fused kernels for the CUDA device (CuPy ElementwiseKernel/ReductionKernel), and the device's TF32 switches.

A chain of CuPy calls launches one kernel per call and writes each intermediate to memory; the ops below run as
one kernel (an activation and its gradient, an optimizer step) or a few (softmax: max, sum, write; LayerNorm).
Each kernel object is made once per process (``_Kernels``, built on first use) and CuPy compiles it once per dtype
and caches the binary, so a call costs one launch.

The ops call ``kernels(a)``: the fused kernels of ``a``'s array module, or None (NumPy, a module without them,
fusion switched off, a dtype other than float32/float64). The caller then keeps its own path. Where the fusion
would hide what a hook could see (a gradient formula's ops, seen by op hooks and recorded under create_graph),
the caller fuses only when nothing is watching (``primitives/elementwise.py``'s ``_watched``); a fused forward of
one primitive hides nothing (its intermediates never were tensors).

The formulas are hookgrad's own (its NumPy paths), written once more in CUDA C: tests/gpu/test_fused.py compares
them with the unfused chain and with torch CUDA, bench/gpu.py times them against the chain.

TF32: PyTorch computes float32 matmuls in full float32 unless ``torch.backends.cuda.matmul.allow_tf32`` (or
``set_float32_matmul_precision("high"/"medium")``) allows TF32; CuPy's cuBLAS calls read its float32 compute
type, set here (``set_matmul_tf32``) when the switch changes and when CuPy becomes the device's module (so the
``CUPY_TF32`` environment variable does not turn it on behind PyTorch's default). cuDNN's switch
(``torch.backends.cudnn.allow_tf32``, True by default as in PyTorch) lives in ``CUDNN_FLAGS``, which
``hookgrad.backends.cudnn`` reads and writes; a cuDNN convolution reads ``conv_tensor_core()``.
"""
import sys

import numpy as np

ENABLED = [True]        # fusion on (tests and bench/gpu.py switch it off to time or compare the unfused chains)
_PROVIDERS = {}         # array type -> the kernels for its arrays (None: none)
_FLOATS = (np.dtype(np.float32), np.dtype(np.float64))


def kernels(a, *same):
    """The fused kernels for array ``a`` (CuPy's, for a float32/float64 CuPy array), or None; ``same``: arrays the
    kernel also takes, which must be of ``a``'s type and dtype."""
    t = type(a)
    if t is np.ndarray or not ENABLED[0] or getattr(a, "dtype", None) not in _FLOATS:
        return None
    for o in same:
        if type(o) is not t or o.dtype != a.dtype:
            return None
    try:
        return _PROVIDERS[t]
    except KeyError:
        cp = sys.modules.get("cupy")        # (imported by _array when CUDA was first asked about)
        k = _PROVIDERS[t] = _Kernels(cp) if cp is not None and t is getattr(cp, "ndarray", None) else None
        return k


def register(array_type, provider):
    """Use ``provider`` as the fused kernels of arrays of ``array_type`` (None: none); returns the previous one.
    (The tests give the CPU stand-in of CuPy a provider that records what was asked.)"""
    prev = _PROVIDERS.get(array_type)
    _PROVIDERS[array_type] = provider
    return prev


# ---- TF32 -------------------------------------------------------------------------------------------------------------
_TF32 = {"matmul": False}
# torch.backends.cudnn's flags (PyTorch's defaults), kept here so that the device's convolution can read them
CUDNN_FLAGS = {"enabled": True, "benchmark": False, "benchmark_limit": None, "deterministic": False, "allow_tf32": True,
               "fp32_precision": "none", "depthwise_kernel": "auto"}
_COMPUTE_TYPE_DEFAULT, _COMPUTE_TYPE_TF32 = 1, 7        # cupy._core._routines_linalg's COMPUTE_TYPE_*


def set_matmul_tf32(on):
    """Let float32 matmuls of the CUDA device use TF32 (``torch.backends.cuda.matmul.allow_tf32``)."""
    _TF32["matmul"] = bool(on)
    cp = sys.modules.get("cupy")
    if cp is not None:
        apply_tf32(cp)


def apply_tf32(m):
    """Set CuPy's float32 compute type (TF32 or full float32) from the matmul switch; nothing for other modules."""
    linalg = getattr(getattr(m, "_core", None), "_routines_linalg", None)
    setter = getattr(linalg, "set_compute_type", None)
    if setter is None:
        return False
    on = _TF32["matmul"]
    if on:
        try:
            on = int(m.cuda.Device().compute_capability) >= 80      # no TF32 before Ampere: CuPy refuses it
        except Exception:          # no device
            return False
    setter(np.float32, getattr(linalg, "COMPUTE_TYPE_TF32" if on else "COMPUTE_TYPE_DEFAULT",
                               _COMPUTE_TYPE_TF32 if on else _COMPUTE_TYPE_DEFAULT))
    return True


def conv_tensor_core():
    """cupyx.cudnn's ``tensor_core`` for a float32 convolution: "auto" (TF32 allowed) or "never"."""
    return "auto" if CUDNN_FLAGS["allow_tf32"] else "never"


# ---- the kernels --------------------------------------------------------------------------------------------------------
_PRE = r"""
template <typename T> __device__ T hg_sigmoid(T x) {
    T e = exp(-fabs(x));                      // never overflows
    return (x >= (T)0 ? (T)1 : e) / ((T)1 + e);
}
"""
_GELU_TANH = "T k0 = (T)0.7978845608028654; T k1 = (T)0.044715;"


class _Kernels:
    """CuPy's fused kernels (made once; CuPy compiles each once per dtype and caches it)."""

    def __init__(self, cp):
        E, R = cp.ElementwiseKernel, cp.ReductionKernel
        self.cp = cp

        def ew(ins, outs, body, name):
            return E(ins, outs, body, "hookgrad_" + name, preamble=_PRE)

        # activations and their gradients (hookgrad's NumPy formulas, primitives/elementwise.py)
        self._gelu = ew("T x", "T y", "y = x * (T)0.5 * ((T)1 + erf(x * (T)0.70710678118654752440));", "gelu")
        self._gelu_tanh = ew("T x", "T y", _GELU_TANH + "y = (T)0.5 * x * ((T)1 + tanh(k0 * (x + k1 * x * x * x)));",
                             "gelu_tanh")
        self._gelu_grad = ew("T g, T x", "T gx", """
            T cdf = (T)0.5 * ((T)1 + erf(x * (T)0.70710678118654752440));
            T pdf = exp(x * x * (T)-0.5) * (T)0.39894228040143267794;
            gx = g * (cdf + x * pdf);""", "gelu_grad")
        self._gelu_tanh_grad = ew("T g, T x", "T gx", _GELU_TANH + """
            T t = tanh(k0 * (x + k1 * x * x * x));
            T dinner = k0 * ((T)1 + (T)3 * k1 * x * x);
            gx = g * ((T)0.5 * ((T)1 + t) + (T)0.5 * x * ((T)1 - t * t) * dinner);""", "gelu_tanh_grad")
        self._sigmoid = ew("T x", "T y", "y = hg_sigmoid(x);", "sigmoid")
        self._sigmoid_grad = ew("T g, T y", "T gx", "gx = g * (y * ((T)1 - y));", "sigmoid_grad")
        self._tanh_grad = ew("T g, T y", "T gx", "gx = g * ((T)1 - y * y);", "tanh_grad")
        self._silu = ew("T x", "T y", "y = x * hg_sigmoid(x);", "silu")
        self._silu_grad = ew("T g, T x", "T gx", "T s = hg_sigmoid(x); gx = g * (s * ((T)1 + x * ((T)1 - s)));",
                             "silu_grad")
        self._softplus = ew("T x, T beta, T threshold", "T y", """
            T bx = x * beta;
            y = bx > threshold ? x : log1p(exp(bx < threshold ? bx : threshold)) / beta;""", "softplus")
        self._softplus_grad = ew("T g, T x, T beta, T threshold", "T gx",
                                 "T bx = x * beta; gx = bx > threshold ? g : g * hg_sigmoid(bx);", "softplus_grad")
        self._elu = ew("T x, T alpha, T scale, T input_scale", "T y",
                       "y = scale * (x > (T)0 ? x : alpha * expm1((x < (T)0 ? x : (T)0) * input_scale));", "elu")
        self._elu_grad = ew("T g, T x, T alpha, T scale, T input_scale", "T gx",
                            "gx = g * (x > (T)0 ? scale : exp(x * input_scale) * (alpha * input_scale * scale));",
                            "elu_grad")
        self._leaky = ew("T x, T slope", "T y", "y = x > (T)0 ? x : x * slope;", "leaky_relu")
        self._leaky_grad = ew("T g, T x, T slope", "T gx", "gx = x > (T)0 ? g : g * slope;", "leaky_relu_grad")

        # softmax / log-softmax over one axis: the row maximum (CuPy's max), a fused sum, a fused write
        self._sum_exp = R("T x, T m", "T s", "exp(x - m)", "a + b", "s = a", "0", "hookgrad_sum_exp")
        self._sum_mul = R("T g, T y", "T s", "g * y", "a + b", "s = a", "0", "hookgrad_sum_mul")
        self._softmax = ew("T x, T m, T s", "T y", "y = exp(x - m) / s;", "softmax")
        self._log_softmax = ew("T x, T m, T s", "T y", "y = (x - m) - log(s);", "log_softmax")
        self._softmax_grad = ew("T g, T y, T d", "T gx", "gx = y * (g - d);", "softmax_grad")
        self._log_softmax_grad = ew("T g, T y, T s", "T gx", "gx = g - exp(y) * s;", "log_softmax_grad")

        # LayerNorm over the last axis of (rows, n): out = (x - mean) * invstd * w + b; its gradients
        self._ln = ew("T x, T mean, T invstd, T w, T b", "T y", "y = (x - mean) * invstd * w + b;", "layer_norm")
        self._ln_sum_gw = R("T g, T w", "T s", "g * w", "a + b", "s = a", "0", "hookgrad_ln_sum_gw")
        self._ln_sum_gwxh = R("T g, T w, T x, T mean, T invstd", "T s", "g * w * ((x - mean) * invstd)", "a + b",
                              "s = a", "0", "hookgrad_ln_sum_gwxh")
        self._ln_sum_gxh = R("T g, T x, T mean, T invstd", "T s", "g * ((x - mean) * invstd)", "a + b", "s = a", "0",
                             "hookgrad_ln_sum_gxh")
        self._ln_grad = ew("T g, T w, T x, T mean, T invstd, T s1, T s2, T inv_n", "T gx", """
            T xh = (x - mean) * invstd;
            gx = invstd * (g * w - s1 * inv_n - xh * (s2 * inv_n));""", "layer_norm_grad")

        # optimizer steps (PyTorch's single-tensor loops, as optim/sgd.py's and optim/adam.py's compiled kernels)
        sgd_in = "T g, float32 neg_lr, float32 wd, float32 momentum, float32 keep, bool nesterov, bool maximize, "
        self._sgd = ew(sgd_in + "bool first", "T p", """
            T d = maximize ? -g : g;
            if (wd != 0) d = d + wd * p;
            p = p + neg_lr * d;""", "sgd_step")
        self._sgd_momentum = ew(sgd_in + "bool first", "T p, T buf", """
            T d = maximize ? -g : g;
            if (wd != 0) d = d + wd * p;
            T b = first ? d : buf * momentum + keep * d;
            buf = b;
            d = nesterov ? d + momentum * b : b;
            p = p + neg_lr * d;""", "sgd_momentum_step")
        adam_in = ("T g, float32 decay, float32 wd, float32 w1, float32 beta2, float32 w2, float32 bc2_sqrt, "
                   "float32 eps, float32 neg_step_size, bool decoupled, bool amsgrad")
        adam_head = """
            T d = g; T x = p;
            if (wd != 0) { if (decoupled) x = x * decay; else d = d + wd * x; }
            T m = exp_avg;
            m = fabs(w1) < 0.5f ? m + w1 * (d - m) : d - (d - m) * (1.0f - w1);
            exp_avg = m;
            T v = exp_avg_sq * beta2;
            v = v + w2 * d * d;
            exp_avg_sq = v;"""
        adam_tail = "p = x + neg_step_size * m / (sqrt(v) / bc2_sqrt + eps);"
        self._adam = ew(adam_in, "T p, T exp_avg, T exp_avg_sq", adam_head + adam_tail, "adam_step")
        self._adam_ams = ew(adam_in, "T p, T exp_avg, T exp_avg_sq, T max_sq", adam_head + """
            T mv = max_sq;
            if (!(mv >= v || mv != mv)) mv = v;     // torch.maximum: NaN wins
            max_sq = mv;
            v = mv;""" + adam_tail, "adam_amsgrad_step")

    # ---- activations
    def gelu(self, x, approximate):
        return (self._gelu_tanh if approximate == "tanh" else self._gelu)(x)

    def gelu_grad(self, g, x, approximate):
        return (self._gelu_tanh_grad if approximate == "tanh" else self._gelu_grad)(g, x)

    def sigmoid(self, x):
        return self._sigmoid(x)

    def sigmoid_grad(self, g, y):
        return self._sigmoid_grad(g, y)

    def tanh_grad(self, g, y):
        return self._tanh_grad(g, y)

    def silu(self, x):
        return self._silu(x)

    def silu_grad(self, g, x):
        return self._silu_grad(g, x)

    def softplus(self, x, beta, threshold):
        t = x.dtype.type
        return self._softplus(x, t(beta), t(threshold))

    def softplus_grad(self, g, x, beta, threshold):
        t = x.dtype.type
        return self._softplus_grad(g, x, t(beta), t(threshold))

    def elu(self, x, alpha, scale, input_scale):
        t = x.dtype.type
        return self._elu(x, t(alpha), t(scale), t(input_scale))

    def elu_grad(self, g, x, alpha, scale, input_scale):
        t = x.dtype.type
        return self._elu_grad(g, x, t(alpha), t(scale), t(input_scale))

    def leaky_relu(self, x, slope):
        return self._leaky(x, x.dtype.type(slope))

    def leaky_relu_grad(self, g, x, slope):
        return self._leaky_grad(g, x, x.dtype.type(slope))

    # ---- softmax
    def _max(self, x, axis):
        return self.cp.broadcast_to(x.max(axis=axis, keepdims=True), x.shape)

    def softmax(self, x, axis):
        m = self._max(x, axis)
        s = self._sum_exp(x, m, axis=axis, keepdims=True)
        return self._softmax(x, m, s)

    def log_softmax(self, x, axis):
        m = self._max(x, axis)
        s = self._sum_exp(x, m, axis=axis, keepdims=True)
        return self._log_softmax(x, m, s)

    def softmax_grad(self, g, y, axis):
        return self._softmax_grad(g, y, self._sum_mul(g, y, axis=axis, keepdims=True))

    def log_softmax_grad(self, g, y, axis):
        return self._log_softmax_grad(g, y, g.sum(axis=axis, keepdims=True))

    # ---- LayerNorm over the trailing n elements of each row; mean and invstd one per row; w and b of n or None
    def layer_norm(self, x, mean, invstd, w, b, n):
        t = x.dtype.type
        x2 = x.reshape(-1, n)
        y = self._ln(x2, mean.reshape(-1, 1), invstd.reshape(-1, 1), t(1) if w is None else w.reshape(n),
                     t(0) if b is None else b.reshape(n))
        return y.reshape(x.shape)

    def layer_norm_grad(self, g, x, mean, invstd, w, wshape, needs):
        """(gx, gw, gb) as LayerNormNode's backward gives them (None where ``needs`` says no)."""
        t = x.dtype.type
        n = int(np.prod(wshape))
        g2, x2 = g.reshape(-1, n), x.reshape(-1, n)
        mean, invstd = mean.reshape(-1, 1), invstd.reshape(-1, 1)
        gx = gw = gb = None
        if needs[0]:
            w1 = t(1) if w is None else w.reshape(n)
            s1 = self._ln_sum_gw(g2, w1, axis=1, keepdims=True)
            s2 = self._ln_sum_gwxh(g2, w1, x2, mean, invstd, axis=1, keepdims=True)
            gx = self._ln_grad(g2, w1, x2, mean, invstd, s1, s2, t(1.0 / n)).reshape(x.shape)
        if len(needs) > 1 and needs[1]:
            gw = self._ln_sum_gxh(g2, x2, mean, invstd, axis=0).reshape(wshape)
        if len(needs) > 2 and needs[2]:
            gb = g2.sum(axis=0).reshape(wshape)
        return gx, gw, gb

    # ---- optimizer steps: ``name`` is the CPU compiled kernel's (optim/sgd.py, optim/adam.py)
    def step(self, name, outs, ins, scalars):
        """Run the step of kernel ``name`` in place on ``outs`` (the parameter first) from ``ins`` (the gradient);
        False where there is none (the caller's path runs)."""
        p = outs[0]
        if p.dtype != np.float32 or any(a.dtype != p.dtype or a.shape != p.shape for a in outs + ins):
            return False
        f32, b = np.float32, np.bool_
        if name == "_sgd_kernel":
            neg_lr, wd, momentum, keep, nesterov, maximize, first = scalars
            args = (ins[0], f32(neg_lr), f32(wd), f32(momentum), f32(keep), b(nesterov), b(maximize), b(first))
            if momentum == 0:
                self._sgd(*args, p)
            else:
                self._sgd_momentum(*args, p, outs[1])
            return True
        if name == "_adam_kernel":
            *fs, decoupled, amsgrad = scalars
            args = (ins[0],) + tuple(f32(s) for s in fs) + (b(decoupled), b(amsgrad))
            if amsgrad:
                self._adam_ams(*args, *outs)
            else:
                self._adam(*args, *outs[:3])
            return True
        return False
