"""The fused kernels' dispatch on the "cuda" device, on a machine without a GPU (src/hookgrad/_cuda_kernels.py).

The CUDA C of the kernels runs only on a GPU (tests/gpu/test_fused.py). Here the CPU stand-in of CuPy
(tests/backend/cupylike.py) is the device's module and is given a *provider* of fused kernels that records each
call and computes it with torch's own kernels (``aten.silu_backward``, ``_softmax_backward_data`` ...) on host
copies, or for an optimizer step with the CPU compiled kernel it replaces. So these tests check, against torch:
which ops ask for a fused kernel, with which arguments, and what they do with its result; that nothing is fused
where a hook would see what it hides (op hooks on a gradient formula, create_graph); and that the results and
gradients equal torch's.
"""
import os
import sys

import numpy as np
import pytest
import torch

import hookgrad
from hookgrad import _array, _cuda_kernels

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import backend  # noqa: E402
from backend import cupylike  # noqa: E402

if backend.NAME == "cupylike":
    pytest.skip("the cupylike module is the default array module here; the stand-in device needs it free",
                allow_module_level=True)

A = torch.ops.aten


def _t(a):
    return torch.from_numpy(a.get() if type(a) is cupylike.ndarray else np.asarray(a))


def _back(t):
    return cupylike.xp.asarray(t.detach().numpy())


class TorchProvider:
    """The fused kernels' interface, computed by torch on the host; ``calls`` names what was asked."""

    def __init__(self):
        self.calls = []

    def _rec(self, name):
        self.calls.append(name)

    def gelu(self, x, approximate):
        self._rec("gelu")
        return _back(torch.nn.functional.gelu(_t(x), approximate=approximate))

    def gelu_grad(self, g, x, approximate):
        self._rec("gelu_grad")
        return _back(A.gelu_backward(_t(g), _t(x), approximate=approximate))

    def sigmoid(self, x):
        self._rec("sigmoid")
        return _back(torch.sigmoid(_t(x)))

    def sigmoid_grad(self, g, y):
        self._rec("sigmoid_grad")
        return _back(A.sigmoid_backward(_t(g), _t(y)))

    def tanh_grad(self, g, y):
        self._rec("tanh_grad")
        return _back(A.tanh_backward(_t(g), _t(y)))

    def silu(self, x):
        self._rec("silu")
        return _back(torch.nn.functional.silu(_t(x)))

    def silu_grad(self, g, x):
        self._rec("silu_grad")
        return _back(A.silu_backward(_t(g), _t(x)))

    def softplus(self, x, beta, threshold):
        self._rec("softplus")
        return _back(torch.nn.functional.softplus(_t(x), beta, threshold))

    def softplus_grad(self, g, x, beta, threshold):
        self._rec("softplus_grad")
        return _back(A.softplus_backward(_t(g), _t(x), beta, threshold))

    def elu(self, x, alpha, scale, input_scale):
        self._rec("elu")
        return _back(A.elu(_t(x), alpha, scale, input_scale))

    def elu_grad(self, g, x, alpha, scale, input_scale):
        self._rec("elu_grad")
        return _back(A.elu_backward(_t(g), alpha, scale, input_scale, False, _t(x)))

    def leaky_relu(self, x, slope):
        self._rec("leaky_relu")
        return _back(torch.nn.functional.leaky_relu(_t(x), slope))

    def leaky_relu_grad(self, g, x, slope):
        self._rec("leaky_relu_grad")
        return _back(A.leaky_relu_backward(_t(g), _t(x), slope, False))

    def softmax(self, x, axis):
        self._rec("softmax")
        return _back(torch.softmax(_t(x), axis))

    def log_softmax(self, x, axis):
        self._rec("log_softmax")
        return _back(torch.log_softmax(_t(x), axis))

    def softmax_grad(self, g, y, axis):
        self._rec("softmax_grad")
        return _back(A._softmax_backward_data(_t(g), _t(y), axis, _t(y).dtype))

    def log_softmax_grad(self, g, y, axis):
        self._rec("log_softmax_grad")
        return _back(A._log_softmax_backward_data(_t(g), _t(y), axis, _t(y).dtype))

    def layer_norm(self, x, mean, invstd, w, b, n):
        self._rec("layer_norm")
        x2 = _t(x).reshape(-1, n)
        y = (x2 - _t(mean).reshape(-1, 1)) * _t(invstd).reshape(-1, 1)
        if w is not None:
            y = y * _t(w).reshape(n)
        if b is not None:
            y = y + _t(b).reshape(n)
        return _back(y.reshape(x.shape))

    def layer_norm_grad(self, g, x, mean, invstd, w, wshape, needs):
        self._rec("layer_norm_grad")
        gx, gw, gb = A.native_layer_norm_backward(_t(g), _t(x), list(wshape), _t(mean), _t(invstd),
                                                  None if w is None else _t(w), None, list(needs) + [False] * (3 - len(needs)))
        return tuple(None if t is None else _back(t) for t in (gx, gw, gb))

    def step(self, name, outs, ins, scalars):
        self._rec(name)
        from hookgrad.optim import adam, sgd
        k = {"_sgd_kernel": sgd._sgd_kernel, "_adam_kernel": adam._adam_kernel}[name]
        k.py(*[a._a.reshape(-1) for a in outs], *[a._a.reshape(-1) for a in ins], *scalars)   # the kernel's Python
        return True


@pytest.fixture
def fused():
    """The cupylike module as the "cuda" device's, with the torch-computed provider as its fused kernels."""
    saved = dict(_array._DEVICE_MODULE), dict(_array._MODULE_DEVICE), set(_array._probed)
    cupylike.use_as_cuda()
    p = TorchProvider()
    prev = _cuda_kernels.register(cupylike.ndarray, p)
    try:
        yield p
    finally:
        _cuda_kernels.register(cupylike.ndarray, prev)
        for d, s in zip((_array._DEVICE_MODULE, _array._MODULE_DEVICE, _array._probed), saved):
            d.clear()
            d.update(s)


ACTS = [
    ("sigmoid", lambda L, x: L.sigmoid(x), ["sigmoid", "sigmoid_grad"]),
    ("tanh", lambda L, x: L.tanh(x), ["tanh_grad"]),
    ("silu", lambda L, x: L.nn.functional.silu(x), ["silu", "silu_grad"]),
    ("gelu", lambda L, x: L.nn.functional.gelu(x), ["gelu", "gelu_grad"]),
    ("gelu_tanh", lambda L, x: L.nn.functional.gelu(x, approximate="tanh"), ["gelu", "gelu_grad"]),
    ("softplus", lambda L, x: L.nn.functional.softplus(x, beta=2.0, threshold=1.5), ["softplus", "softplus_grad"]),
    ("elu", lambda L, x: L.nn.functional.elu(x, alpha=0.7), ["elu", "elu_grad"]),
    ("selu", lambda L, x: L.nn.functional.selu(x), ["elu", "elu_grad"]),
    ("leaky_relu", lambda L, x: L.nn.functional.leaky_relu(x, 0.2), ["leaky_relu", "leaky_relu_grad"]),
    ("softmax", lambda L, x: L.softmax(x, 1), ["softmax", "softmax_grad"]),
    ("softmax0", lambda L, x: L.softmax(x, 0), ["softmax", "softmax_grad"]),
    ("log_softmax", lambda L, x: L.log_softmax(x, -1), ["log_softmax", "log_softmax_grad"]),
    ("layer_norm", lambda L, x: L.nn.functional.layer_norm(x, (5,), L.linspace(0.5, 1.5, 5, device=x.device, dtype=x.dtype),
                                                         L.linspace(-1, 1, 5, device=x.device, dtype=x.dtype)),
     ["layer_norm", "layer_norm_grad"]),
    ("layer_norm_plain", lambda L, x: L.nn.functional.layer_norm(x, (4, 5)), ["layer_norm", "layer_norm_grad"]),
]


def _run(L, f, xs, gs, dev):
    x = L.tensor(xs, device=dev, requires_grad=True)
    y = f(L, x)
    y.backward(L.tensor(gs, device=dev))
    return y.detach().cpu().numpy(), x.grad.cpu().numpy()


@pytest.mark.parametrize("name,f,want", ACTS, ids=[a[0] for a in ACTS])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_fused_activation_against_torch(fused, name, f, want, dtype):
    rng = np.random.default_rng(0)
    xs = (rng.standard_normal((3, 4, 5)) * 3).astype(dtype)
    gs = rng.standard_normal((3, 4, 5)).astype(dtype)
    ty, tg = _run(torch, f, xs, gs, "cpu")
    hy, hg = _run(hookgrad, f, xs, gs, "cuda")
    assert fused.calls == want
    tol = dict(rtol=1e-5, atol=1e-6) if dtype == "float32" else dict(rtol=1e-12, atol=1e-13)
    np.testing.assert_allclose(hy, ty, **tol)
    np.testing.assert_allclose(hg, tg, **tol)


def test_no_fusion_on_numpy_or_when_off(fused):
    x = hookgrad.randn(3, 4, requires_grad=True)
    hookgrad.nn.functional.silu(x).sum().backward()
    assert fused.calls == []
    _cuda_kernels.ENABLED[0] = False
    try:
        x = hookgrad.randn(3, 4, device="cuda", requires_grad=True)
        hookgrad.nn.functional.silu(x).softmax(-1).sum().backward()
    finally:
        _cuda_kernels.ENABLED[0] = True
    assert fused.calls == []
    y = hookgrad.randn(3, 4, device="cuda", dtype=hookgrad.float16)     # float16: computed in float32 (opmath)
    hookgrad.sigmoid(y)
    assert fused.calls == ["sigmoid"]


def test_op_hooks_see_the_unfused_formula(fused):
    """A formula written on Tensors (silu's backward) is a chain of ops an op hook sees: with one registered it
    runs unfused; the primitive's own forward is fused all the same (nothing of it was ever a tensor)."""
    from torch.utils._python_dispatch import TorchDispatchMode as _TDM      # noqa: F401 (torch's, for the names)
    from hookgrad.utils._python_dispatch import TorchDispatchMode

    seen = []

    class Log(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            seen.append(str(func))
            return func(*args, **(kwargs or {}))

    x = hookgrad.randn(3, 4, device="cuda", requires_grad=True)
    with Log():
        y = hookgrad.nn.functional.silu(x)
        y.sum().backward()
    assert "silu_grad" not in fused.calls and fused.calls[0] == "silu"     # (its sigmoid: one op, fused)
    assert len(seen) > 3
    g1 = x.grad.cpu().numpy()
    x.grad = None
    fused.calls.clear()
    hookgrad.nn.functional.silu(x).sum().backward()
    assert fused.calls == ["silu", "silu_grad"]
    # two float32 formulas of the same gradient: a few ulps of the inputs' scale apart (near-zero entries too)
    np.testing.assert_allclose(x.grad.cpu().numpy(), g1, rtol=1e-6, atol=1e-7)


def test_create_graph_runs_the_differentiable_formulas(fused):
    want = []
    for L, dev in ((torch, "cpu"), (hookgrad, "cuda")):
        x = L.tensor([[0.3, -1.2, 2.0]], device=dev, requires_grad=True)
        for i, f in enumerate((L.sigmoid, L.nn.functional.silu, lambda t: t.softmax(-1), L.tanh)):
            (g,) = L.autograd.grad((f(x) * L.tensor([[1.0, 2.0, 3.0]], device=dev)).sum(), x, create_graph=True)
            (gg,) = L.autograd.grad(g.sum(), x)
            if L is torch:
                want.append(gg.numpy())
            else:
                np.testing.assert_allclose(gg.cpu().numpy(), want[i], rtol=1e-5, atol=1e-6)
            assert g.grad_fn is not None       # the gradient's graph was recorded (a fused kernel records none)


@pytest.mark.parametrize("opt", ["sgd", "sgd_momentum", "nesterov", "adam", "adamw", "amsgrad"])
def test_fused_optimizer_steps(fused, opt):
    rng = np.random.default_rng(1)
    xs, ys = rng.standard_normal((6, 4)).astype(np.float32), rng.standard_normal((6, 2)).astype(np.float32)
    res = {}
    for L, dev in ((torch, "cpu"), (hookgrad, "cuda")):
        L.manual_seed(0)
        m = L.nn.Linear(4, 2).to(dev)
        ps = m.parameters()
        o = {"sgd": lambda: L.optim.SGD(ps, lr=0.1, weight_decay=0.01),
             "sgd_momentum": lambda: L.optim.SGD(ps, lr=0.1, momentum=0.9, dampening=0.1),
             "nesterov": lambda: L.optim.SGD(ps, lr=0.1, momentum=0.9, nesterov=True, maximize=True),
             "adam": lambda: L.optim.Adam(ps, lr=0.01, weight_decay=0.1),
             "adamw": lambda: L.optim.AdamW(ps, lr=0.01),
             "amsgrad": lambda: L.optim.Adam(ps, lr=0.01, amsgrad=True)}[opt]()
        x, y = L.tensor(xs, device=dev), L.tensor(ys, device=dev)
        for _ in range(3):
            o.zero_grad()
            L.nn.functional.mse_loss(m(x), y).backward()
            o.step()
        res[L] = [p.detach().cpu().numpy() for p in m.parameters()]
        if L is hookgrad:
            st = o.state[m.weight]
            assert all(v.is_cuda for v in st.values() if isinstance(v, hookgrad.Tensor) and v.dim() > 0)
    name = "_sgd_kernel" if opt.startswith("sgd") or opt == "nesterov" else "_adam_kernel"
    assert fused.calls.count(name) == 6, fused.calls       # 3 steps x 2 parameters
    for a, b in zip(res[torch], res[hookgrad]):
        np.testing.assert_allclose(b, a, rtol=1e-5, atol=1e-6)


class _FakeLinalg:
    COMPUTE_TYPE_DEFAULT, COMPUTE_TYPE_TF32 = 1, 7

    def __init__(self):
        self.set = []

    def set_compute_type(self, dtype, kind):
        self.set.append((np.dtype(dtype).name, kind))


def test_tf32_switches_set_cupys_compute_type(monkeypatch):
    import types
    lin = _FakeLinalg()
    dev = types.SimpleNamespace(compute_capability="90")
    fake = types.SimpleNamespace(_core=types.SimpleNamespace(_routines_linalg=lin),
                                 cuda=types.SimpleNamespace(Device=lambda: dev))
    monkeypatch.setitem(sys.modules, "cupy", fake)
    prec = hookgrad.get_float32_matmul_precision()
    assert hookgrad.backends.cuda.matmul.allow_tf32 is torch.backends.cuda.matmul.allow_tf32 is False
    assert hookgrad.backends.cudnn.allow_tf32 is torch.backends.cudnn.allow_tf32 is True
    try:
        hookgrad.backends.cuda.matmul.allow_tf32 = True
        assert lin.set[-1] == ("float32", 7) and hookgrad.get_float32_matmul_precision() == "high"
        hookgrad.set_float32_matmul_precision("highest")
        assert lin.set[-1] == ("float32", 1) and not hookgrad.backends.cuda.matmul.allow_tf32
        hookgrad.set_float32_matmul_precision("medium")
        assert lin.set[-1] == ("float32", 7)
        hookgrad.backends.cuda.matmul.fp32_precision = "ieee"      # PyTorch's newer switch
        assert lin.set[-1] == ("float32", 1)
        hookgrad.backends.cuda.matmul.fp32_precision = "tf32"
        assert lin.set[-1] == ("float32", 7)
        hookgrad.backends.cuda.matmul.fp32_precision = "none"      # back to the legacy switch's "medium"
        assert lin.set[-1] == ("float32", 7)
        dev.compute_capability = "75"           # no TF32 before Ampere
        hookgrad.backends.cuda.matmul.allow_tf32 = True
        assert lin.set[-1] == ("float32", 1)
        assert _cuda_kernels.apply_tf32(fake) and lin.set[-1] == ("float32", 1)
    finally:
        hookgrad.set_float32_matmul_precision(prec)
    assert lin.set[-1] == ("float32", 1)
    try:
        hookgrad.backends.cudnn.allow_tf32 = False
        assert _cuda_kernels.conv_tensor_core() == "never"
        with hookgrad.backends.cudnn.flags(allow_tf32=True):
            assert _cuda_kernels.conv_tensor_core() == "auto"
        assert _cuda_kernels.conv_tensor_core() == "never"
    finally:
        hookgrad.backends.cudnn.allow_tf32 = True
    assert not _cuda_kernels.apply_tf32(cupylike.xp)        # a module without CuPy's compute types: nothing
