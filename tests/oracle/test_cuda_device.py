"""The "cuda" device's logic on a machine without a GPU: tests/backend/cupylike.py (CuPy's manners over NumPy)
stands in as the device's array module, so factories, .to/.cuda/.cpu, the mixing error, Module.to, optimizers
and the host-read discipline run in CI. The real GPU runs tests/gpu/test_cuda.py. Without the stand-in,
hookgrad answers as PyTorch built without CUDA (and never imports CuPy)."""
import os
import subprocess
import sys

import numpy as np
import pytest
import torch

import hookgrad
from hookgrad import _array

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import backend  # noqa: E402
from backend import cupylike  # noqa: E402

if backend.NAME == "cupylike":
    pytest.skip("the cupylike module is the default array module here; the stand-in device needs it free",
                allow_module_level=True)


@pytest.mark.skipif(_array._DEVICE_MODULE.get("cuda") is not None, reason="a cuda device is registered")
def test_no_cuda_as_pytorch_cpu_only():
    if _array.device_module("cuda") is not None:
        pytest.skip("this machine has CuPy and a GPU")
    assert hookgrad.cuda.is_available() is torch.cuda.is_available() is False
    assert hookgrad.cuda.device_count() == torch.cuda.device_count() == 0
    assert hookgrad.cuda.memory_allocated() == 0
    for make in (lambda L: L.zeros(1, device="cuda"), lambda L: L.ones(2).cuda(), lambda L: L.ones(2).to("cuda:0"),
                 lambda L: L.randn(2, device="cuda"), lambda L: L.cuda.synchronize()):
        with pytest.raises(AssertionError) as te:
            make(torch)
        with pytest.raises(AssertionError) as he:
            make(hookgrad)
        assert str(he.value).startswith(str(te.value)), (str(te.value), str(he.value))
    assert hookgrad.ones(2).cpu().device == hookgrad.device("cpu")


def test_cpu_path_never_imports_cupy():
    code = ("import sys, hookgrad as t; x = t.randn(3, requires_grad=True); (x * 2).sum().backward(); "
            "m = t.nn.Linear(3, 2); m.to('cpu'); m.cpu(); print(x); print('cupy' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                         env=dict(os.environ, HOOKGRAD_TEST_BACKEND="", HOOKGRAD_FAKE_CUDA=""))
    assert out.returncode == 0, out.stderr
    assert out.stdout.split()[-1] == "False"


def test_factories_and_queries(fake_cuda):
    assert hookgrad.cuda.is_available() and hookgrad.cuda.device_count() == 1 and hookgrad.cuda.current_device() == 0
    for t in (hookgrad.zeros(2, 3, device="cuda"), hookgrad.ones(2, device="cuda:0"),
              hookgrad.randn(4, device=hookgrad.device("cuda")), hookgrad.arange(5, device="cuda"),
              hookgrad.tensor([1.0, 2.0], device="cuda"), hookgrad.full((2,), 3.0, device="cuda"),
              hookgrad.eye(3, device="cuda"), hookgrad.rand(3, device="cuda"), hookgrad.randint(0, 5, (3,), device="cuda"),
              hookgrad.empty(2, device="cuda")):
        assert type(t._data) is cupylike.ndarray
        assert t.device == hookgrad.device("cuda", 0) and str(t.device) == "cuda:0" and t.is_cuda and t.get_device() == 0
    c = hookgrad.zeros(2, device="cuda")
    for t in (hookgrad.zeros_like(c), hookgrad.randn_like(c), c.new_zeros(3), c.new_tensor([1.0])):
        assert t.is_cuda, t
    assert not hookgrad.zeros_like(c, device="cpu").is_cuda
    assert hookgrad.zeros(2).device == hookgrad.device("cpu") and not hookgrad.zeros(2).is_cuda
    assert hookgrad.zeros(2).get_device() == -1


def test_cuda_seed_reproducible(fake_cuda):
    hookgrad.cuda.manual_seed(5)
    a = hookgrad.randn(6, device="cuda").cpu().numpy()
    hookgrad.cuda.manual_seed(5)
    b = hookgrad.randn(6, device="cuda").cpu().numpy()
    np.testing.assert_array_equal(a, b)
    hookgrad.manual_seed(7)             # torch.manual_seed seeds the cuda generator too
    c = hookgrad.randn(6, device="cuda").cpu().numpy()
    hookgrad.manual_seed(7)
    np.testing.assert_array_equal(c, hookgrad.randn(6, device="cuda").cpu().numpy())
    cpu_state = hookgrad.get_rng_state()         # the device draws (dropout too) leave the CPU generator alone
    d = hookgrad.nn.functional.dropout(hookgrad.ones(8, 8, device="cuda"), 0.5)
    assert d.is_cuda and set(d.cpu().numpy().ravel().tolist()) <= {0.0, 2.0}
    hookgrad.randn(3, device="cuda")
    assert hookgrad.equal(hookgrad.get_rng_state(), cpu_state)


def test_moves_are_differentiable(fake_cuda):
    x = hookgrad.tensor([1.0, -2.0, 3.0], requires_grad=True)
    c = x.cuda()
    assert type(c.grad_fn).__name__ == "ToCopyBackward0" and c.is_cuda
    y = c.to("cuda", hookgrad.float64)
    assert y.dtype == hookgrad.float64 and y.is_cuda
    back = (y * y).sum().cpu()
    assert type(back.grad_fn).__name__ == "ToCopyBackward0" and not back.is_cuda
    back.backward()
    assert not x.grad.is_cuda
    np.testing.assert_allclose(x.grad.numpy(), [2.0, -4.0, 6.0])
    assert c.cuda() is c and x.cpu() is x and x.to("cpu") is x
    d = hookgrad.ones(2, device="cuda")
    assert d.to(x).device == x.device and x.to(d).is_cuda
    assert hookgrad.ones(2).to(device=0).is_cuda


def test_second_order_through_moves(fake_cuda):
    for L, dev in ((torch, "cpu"), (hookgrad, "cuda")):
        x = L.tensor([0.5, -1.0, 2.0], requires_grad=True)
        y = (x.to(dev) ** 3).sum()
        (g,) = L.autograd.grad(y, x, create_graph=True)
        (gg,) = L.autograd.grad(g.sum(), x)
        if L is torch:
            want = g.detach().numpy(), gg.numpy()
        else:
            assert not g.is_cuda
            np.testing.assert_allclose(g.detach().numpy(), want[0])
            np.testing.assert_allclose(gg.numpy(), want[1])


def test_mixing_devices_raises(fake_cuda):
    a, b = hookgrad.ones(3, device="cuda"), hookgrad.ones(3)
    for f in (lambda: a + b, lambda: b + a, lambda: a * b, lambda: hookgrad.matmul(a, b), lambda: hookgrad.cat([a, b]),
              lambda: hookgrad.nn.functional.linear(hookgrad.ones(2, 3, device="cuda"), hookgrad.ones(4, 3))):
        with pytest.raises(RuntimeError) as e:
            f()
        assert str(e.value) == ("Expected all tensors to be on the same device, but found at least two devices, "
                                "cuda:0 and cpu!")


def test_conversions(fake_cuda):
    a = hookgrad.tensor([[1.5, 2.0]], device="cuda")
    with pytest.raises(TypeError, match="can't convert cuda:0 device type tensor to numpy"):
        a.numpy()
    with pytest.raises(TypeError, match="can't convert cuda:0"):
        np.asarray(a)
    assert a.cpu().numpy().tolist() == [[1.5, 2.0]] and a.tolist() == [[1.5, 2.0]]
    assert a[0, 0].item() == 1.5 and float(a[0, 1]) == 2.0
    assert "device='cuda:0'" in repr(a)
    assert repr(a) == "tensor([[1.5000, 2.0000]], device='cuda:0')"


def _mlp(L):
    L.manual_seed(0)
    return L.nn.Sequential(L.nn.Linear(6, 5), L.nn.ReLU(), L.nn.Linear(5, 3))


@pytest.mark.parametrize("opt", ["sgd", "adam"])
def test_module_to_and_training_step(fake_cuda, opt):
    """Module.cuda(), hooks and an optimizer step on the device, against torch on the CPU; no host read."""
    rng = np.random.default_rng(0)
    xs, ys = rng.standard_normal((4, 6)).astype(np.float32), rng.integers(0, 3, 4)
    res = {}
    for L, dev in ((torch, "cpu"), (hookgrad, "cuda")):
        m = _mlp(L).to(dev)
        log = []
        m[0].register_forward_hook(lambda mod, i, o: log.append(("fwd", tuple(o.shape), o.device.type)))
        m[2].register_full_backward_hook(lambda mod, gi, go: log.append(("bwd", tuple(go[0].shape), go[0].device.type)))
        o = (L.optim.SGD(m.parameters(), lr=0.1, momentum=0.9) if opt == "sgd"
             else L.optim.Adam(m.parameters(), lr=0.01))
        x, y = L.tensor(xs).to(dev), L.tensor(ys).to(dev)
        x.requires_grad_()
        h = x.register_hook(lambda g: log.append(("x", tuple(g.shape), g.device.type)))
        reads = _array.HOST_READS[0], cupylike.IMPLICIT[0]
        for _ in range(2):
            o.zero_grad()
            loss = L.nn.functional.cross_entropy(m(x), y)
            loss.backward()
            o.step()
        if L is hookgrad:
            assert (_array.HOST_READS[0], cupylike.IMPLICIT[0]) == reads, "a host read in a step"
            assert all(p.is_cuda for p in m.parameters())
            st = o.state[m[0].weight]
            assert all(v.is_cuda for v in st.values() if isinstance(v, hookgrad.Tensor) and v.dim() > 0)
            log = [(k, s, "cpu" if d == "cuda" else d) for k, s, d in log]
            assert _array.HOST_READS[0] == reads[0]
            loss.item()
            assert _array.HOST_READS[0] == reads[0] + 1 and cupylike.IMPLICIT[0] == reads[1]
            m.cpu()
            assert not any(p.is_cuda for p in m.parameters())
        h.remove()
        res[L] = (log, [p.detach().cpu().numpy() for p in m.parameters()], loss.item())
    assert res[torch][0] == res[hookgrad][0]
    for a, b in zip(res[torch][1], res[hookgrad][1]):
        np.testing.assert_allclose(b, a, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(res[hookgrad][2], res[torch][2], rtol=1e-5)


def test_conv_model_on_device(fake_cuda):
    rng = np.random.default_rng(1)
    xs = rng.standard_normal((2, 3, 8, 8)).astype(np.float32)
    outs = {}
    for L, dev in ((torch, "cpu"), (hookgrad, "cuda")):
        L.manual_seed(0)
        m = L.nn.Sequential(L.nn.Conv2d(3, 4, 3, padding=1), L.nn.BatchNorm2d(4), L.nn.ReLU(), L.nn.MaxPool2d(2),
                            L.nn.Flatten(), L.nn.Linear(64, 5)).to(dev)
        x = L.tensor(xs, device=dev, requires_grad=True)
        out = m(x).log_softmax(-1).sum()
        out.backward()
        outs[L] = (out.item(), x.grad.cpu().numpy(), m[0].weight.grad.cpu().numpy())
    for a, b in zip(outs[torch], outs[hookgrad]):
        np.testing.assert_allclose(b, a, rtol=1e-4, atol=1e-5)


def test_save_load_map_location(fake_cuda, tmp_path):
    t = hookgrad.arange(6, dtype=hookgrad.float32, device="cuda").reshape(2, 3)
    p = str(tmp_path / "t.pt")
    hookgrad.save({"t": t}, p)
    assert hookgrad.load(p)["t"].is_cuda
    back = hookgrad.load(p, map_location="cpu")["t"]
    assert not back.is_cuda and back.tolist() == t.tolist()
