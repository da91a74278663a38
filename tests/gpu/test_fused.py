"""The fused CUDA kernels (src/hookgrad/_cuda_kernels.py) on a GPU: fused against the same ops unfused and against
torch CUDA, forward and backward, for the activations, softmax/log-softmax, LayerNorm and the SGD/Adam/AdamW steps.

Skips unless CuPy imports and sees a GPU and torch has CUDA (the dispatch itself is tested on the CPU in
tests/oracle/test_cuda_fused.py). Run on the GPU machine: ``PYTHONPATH=src python -m pytest -q tests/gpu/test_fused.py``.
"""
import numpy as np
import pytest

torch = pytest.importorskip("torch")
cupy = pytest.importorskip("cupy", reason="CuPy is not installed: no CUDA device for hookgrad's fused kernels")
try:
    _n = cupy.cuda.runtime.getDeviceCount()
except Exception as e:          # no driver / no device
    pytest.skip(f"CuPy sees no CUDA device ({type(e).__name__}: {e})", allow_module_level=True)
if not _n:
    pytest.skip("CuPy sees no CUDA device", allow_module_level=True)
if not torch.cuda.is_available():
    pytest.skip("torch has no CUDA here: no oracle", allow_module_level=True)

import hookgrad  # noqa: E402
from hookgrad import _cuda_kernels  # noqa: E402

torch.backends.cuda.matmul.allow_tf32 = False
torch.backends.cudnn.allow_tf32 = False
assert hookgrad.cuda.is_available()


@pytest.fixture
def calls(monkeypatch):
    """The names of the fused kernels called (the device's kernel object, its methods wrapped)."""
    k = _cuda_kernels.kernels(cupy.zeros(1, cupy.float32))
    assert k is not None, "no fused kernels for CuPy arrays"
    seen = []
    for name in ("gelu", "gelu_grad", "sigmoid", "sigmoid_grad", "tanh_grad", "silu", "silu_grad", "softplus",
                 "softplus_grad", "elu", "elu_grad", "leaky_relu", "leaky_relu_grad", "softmax", "log_softmax",
                 "softmax_grad", "log_softmax_grad", "layer_norm", "layer_norm_grad", "step"):
        f = getattr(k, name)

        def wrapped(*a, _f=f, _n=name, **kw):
            seen.append(a[0] if _n == "step" else _n)
            return _f(*a, **kw)
        monkeypatch.setattr(k, name, wrapped)
    return seen


def _unfused():
    class Off:
        def __enter__(self):
            _cuda_kernels.ENABLED[0] = False

        def __exit__(self, *exc):
            _cuda_kernels.ENABLED[0] = True
    return Off()


ACTS = {
    "sigmoid": (lambda L, x: L.sigmoid(x), ["sigmoid", "sigmoid_grad"]),
    "tanh": (lambda L, x: L.tanh(x), ["tanh_grad"]),
    "silu": (lambda L, x: L.nn.functional.silu(x), ["silu", "silu_grad"]),
    "gelu": (lambda L, x: L.nn.functional.gelu(x), ["gelu", "gelu_grad"]),
    "gelu_tanh": (lambda L, x: L.nn.functional.gelu(x, approximate="tanh"), ["gelu", "gelu_grad"]),
    "softplus": (lambda L, x: L.nn.functional.softplus(x, beta=2.0, threshold=1.5), ["softplus", "softplus_grad"]),
    "elu": (lambda L, x: L.nn.functional.elu(x, alpha=0.7), ["elu", "elu_grad"]),
    "selu": (lambda L, x: L.nn.functional.selu(x), ["elu", "elu_grad"]),
    "leaky_relu": (lambda L, x: L.nn.functional.leaky_relu(x, 0.2), ["leaky_relu", "leaky_relu_grad"]),
    "softmax": (lambda L, x: L.softmax(x, -1), ["softmax", "softmax_grad"]),
    "softmax_dim0": (lambda L, x: L.softmax(x, 0), ["softmax", "softmax_grad"]),
    "log_softmax": (lambda L, x: L.log_softmax(x, -1), ["log_softmax", "log_softmax_grad"]),
    "layer_norm": (lambda L, x: L.nn.functional.layer_norm(
        x, (64,), L.linspace(0.5, 1.5, 64, device=x.device, dtype=x.dtype),
        L.linspace(-1, 1, 64, device=x.device, dtype=x.dtype)), ["layer_norm", "layer_norm_grad"]),
    "layer_norm_2d_plain": (lambda L, x: L.nn.functional.layer_norm(x, (16, 64)), ["layer_norm", "layer_norm_grad"]),
}


def _run(L, f, xs, gs, dev):
    x = L.tensor(xs, device=dev, requires_grad=True)
    y = f(L, x)
    y.backward(L.tensor(gs, device=dev))
    assert y.is_cuda and x.grad.is_cuda
    return y.detach().cpu().numpy(), x.grad.cpu().numpy()


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("name", list(ACTS))
def test_fused_ops_against_unfused_and_torch(calls, name, dtype):
    f, want = ACTS[name]
    rng = np.random.default_rng(0)
    xs = (rng.standard_normal((8, 16, 64)) * 3).astype(dtype)
    gs = rng.standard_normal((8, 16, 64)).astype(dtype)
    ty, tg = _run(torch, f, xs, gs, "cuda")
    fy, fg = _run(hookgrad, f, xs, gs, "cuda")
    assert calls == want, calls
    calls.clear()
    with _unfused():
        uy, ug = _run(hookgrad, f, xs, gs, "cuda")
    assert calls == []
    tol = dict(rtol=2e-5, atol=2e-6) if dtype == "float32" else dict(rtol=1e-10, atol=1e-12)
    for a, b in ((fy, ty), (fg, tg), (fy, uy), (fg, ug)):
        np.testing.assert_allclose(a, b, **tol)


def test_op_hooks_and_create_graph_run_unfused(calls):
    from hookgrad.utils._python_dispatch import TorchDispatchMode

    class Log(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            return func(*args, **(kwargs or {}))

    x = hookgrad.randn(4, 8, device="cuda", requires_grad=True)
    with Log():
        hookgrad.nn.functional.silu(x).sum().backward()
    assert "silu_grad" not in calls
    calls.clear()
    (g,) = hookgrad.autograd.grad(hookgrad.nn.functional.silu(x).sum(), x, create_graph=True)
    assert g.grad_fn is not None and "silu_grad" not in calls


OPTS = {
    "sgd": (lambda L, ps: L.optim.SGD(ps, lr=0.1, weight_decay=0.01), "_sgd_kernel"),
    "sgd_momentum": (lambda L, ps: L.optim.SGD(ps, lr=0.1, momentum=0.9, dampening=0.1), "_sgd_kernel"),
    "nesterov": (lambda L, ps: L.optim.SGD(ps, lr=0.1, momentum=0.9, nesterov=True, maximize=True), "_sgd_kernel"),
    "adam": (lambda L, ps: L.optim.Adam(ps, lr=0.01, weight_decay=0.1), "_adam_kernel"),
    "adamw": (lambda L, ps: L.optim.AdamW(ps, lr=0.01), "_adam_kernel"),
    "amsgrad": (lambda L, ps: L.optim.Adam(ps, lr=0.01, amsgrad=True), "_adam_kernel"),
}


@pytest.mark.parametrize("name", list(OPTS))
def test_fused_optimizer_steps(calls, name):
    make, kernel = OPTS[name]
    rng = np.random.default_rng(1)
    xs, ys = rng.standard_normal((32, 40)).astype(np.float32), rng.standard_normal((32, 20)).astype(np.float32)

    def train(L, fused=True):
        L.manual_seed(0)
        m = L.nn.Linear(40, 20)
        if L is hookgrad:
            m.load_state_dict({k: hookgrad.tensor(v.numpy()) for k, v in ref_init.items()})
        m = m.to("cuda")
        o = make(L, m.parameters())
        x, y = L.tensor(xs, device="cuda"), L.tensor(ys, device="cuda")
        for _ in range(4):
            o.zero_grad()
            L.nn.functional.mse_loss(m(x), y).backward()
            o.step()
        return [p.detach().cpu().numpy() for p in m.parameters()]
    torch.manual_seed(0)
    ref_init = {k: v.detach().clone() for k, v in torch.nn.Linear(40, 20).state_dict().items()}
    t = train(torch)
    f = train(hookgrad)
    assert calls.count(kernel) == 8, calls            # 4 steps x 2 parameters
    calls.clear()
    with _unfused():
        u = train(hookgrad)
    assert calls == []
    for a, b, c in zip(t, f, u):
        np.testing.assert_allclose(b, a, rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(b, c, rtol=1e-5, atol=1e-6)


def test_tf32_switch_reaches_cupy():
    from cupy._core import _routines_linalg as lin
    try:
        assert lin.get_compute_type(np.float32) == lin.COMPUTE_TYPE_DEFAULT     # off by default, as PyTorch
        hookgrad.backends.cuda.matmul.allow_tf32 = True
        cc = int(cupy.cuda.Device().compute_capability)
        assert lin.get_compute_type(np.float32) == (lin.COMPUTE_TYPE_TF32 if cc >= 80 else lin.COMPUTE_TYPE_DEFAULT)
    finally:
        hookgrad.backends.cuda.matmul.allow_tf32 = False
    assert lin.get_compute_type(np.float32) == lin.COMPUTE_TYPE_DEFAULT
