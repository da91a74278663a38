"""A 0-d CPU tensor in an op with tensors on the "cuda" device (the CPU stand-in of CuPy): PyTorch takes it as a
scalar (the result on the device, its gradient back on the CPU); every other mix of devices raises PyTorch's
RuntimeError naming both devices. torch (on the CPU) gives the values to compare."""
import os
import sys

import numpy as np
import pytest
import torch

import hookgrad

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import backend  # noqa: E402

if backend.NAME == "cupylike":
    pytest.skip("the cupylike module is the default array module here; the stand-in device needs it free",
                allow_module_level=True)

MIX = "Expected all tensors to be on the same device, but found at least two devices, cuda:0 and cpu!"


OPS = {
    "add": lambda L, a, s: a + s,
    "radd": lambda L, a, s: s + a,
    "mul": lambda L, a, s: a * s,
    "rsub": lambda L, a, s: s - a,
    "div": lambda L, a, s: a / s,
    "pow": lambda L, a, s: a.abs() ** s,
    "maximum": lambda L, a, s: L.maximum(a, s),
    "where": lambda L, a, s: L.where(a > 0, s, a),
    "clamp": lambda L, a, s: a.clamp(min=s),
    "lerp": lambda L, a, s: L.lerp(a, a * 2, s),
    "int_scalar": lambda L, a, s: a * L.tensor(3),
    "double_scalar": lambda L, a, s: a * L.tensor(0.5, dtype=L.float64),     # a 0-d tensor's dtype: no promotion
}


@pytest.mark.parametrize("name", list(OPS))
def test_cpu_scalar_tensor_joins_a_device_op(fake_cuda, name):
    f = OPS[name]
    xs = np.array([[-1.5, 0.25, 2.0], [3.0, -0.5, 1.0]], np.float32)
    res = {}
    for L, dev in ((torch, "cpu"), (hookgrad, "cuda")):
        a = L.tensor(xs, device=dev, requires_grad=True)
        s = L.tensor(0.75, requires_grad=True)          # on the CPU
        out = f(L, a, s)
        out.backward(L.ones_like(out))
        res[L] = (out, a.grad, s.grad)
    (to, ta, ts), (ho, ha, hs) = res[torch], res[hookgrad]
    assert ho.is_cuda and ha.is_cuda and str(ho.dtype) == str(to.dtype)
    np.testing.assert_allclose(ho.detach().cpu().numpy(), to.detach().numpy(), rtol=1e-6)
    np.testing.assert_allclose(ha.cpu().numpy(), ta.numpy(), rtol=1e-6)
    if ts is None:
        assert hs is None
    else:
        assert not hs.is_cuda and hs.dim() == 0            # the CPU scalar's gradient stays on the CPU
        np.testing.assert_allclose(hs.numpy(), ts.numpy(), rtol=1e-5)


def test_cpu_scalar_in_place_on_a_device_tensor(fake_cuda):
    a = hookgrad.ones(3, device="cuda")
    a.add_(hookgrad.tensor(2.0)).mul_(hookgrad.tensor(3.0))
    assert a.is_cuda and a.cpu().tolist() == [9.0, 9.0, 9.0]


def test_other_mixes_raise_naming_both_devices(fake_cuda):
    c, c0 = hookgrad.ones(3, device="cuda"), hookgrad.tensor(2.0, device="cuda")
    for f in (lambda: c + hookgrad.ones(3), lambda: hookgrad.ones(3) + c, lambda: hookgrad.ones(3) * c0,
              lambda: hookgrad.ones(3).add_(c0), lambda: hookgrad.where(hookgrad.ones(3) > 0, c, hookgrad.ones(3)),
              lambda: hookgrad.matmul(hookgrad.ones(2, 3, device="cuda"), hookgrad.ones(3, 2))):
        with pytest.raises(RuntimeError) as e:
            f()
        assert str(e.value) == MIX
    with pytest.raises(RuntimeError, match="both arguments to matmul need to be at least 1D"):
        hookgrad.matmul(c, hookgrad.tensor(2.0))      # a 0-d CPU tensor where the op refuses a scalar: its own error
