"""torch.bfloat16 (NumPy has none: ml_dtypes supplies the array type) against PyTorch: casts (round to nearest
even), factories, arithmetic and PyTorch's promotion, in-place copy_/div_, reductions, printing, finfo."""
import subprocess
import sys

import numpy as np
import pytest
import torch

import hookgrad as hg

pytest.importorskip("ml_dtypes")

VALUES = [0.0, -0.0, 1.0, 1.00390625, 1.01171875, 1.1, -2.2, 3.14159, 1e10, -3e38, 3.4e38, 1e-40, 1e-45, 65504.0,
          float("inf"), float("-inf"), 0.333333, 257.0, 259.0]


def same(t, h):
    assert str(h.dtype) == str(t.dtype) and tuple(h.shape) == tuple(t.shape)
    np.testing.assert_array_equal(h.float().numpy(), t.float().numpy())


def both(fn):
    return fn(torch), fn(hg)


def test_casts_round_to_nearest_even():
    x = np.array(VALUES, np.float32)
    same(*both(lambda L: L.tensor(x).to(L.bfloat16)))
    same(*both(lambda L: L.tensor(x).bfloat16()))
    same(*both(lambda L: L.tensor(x.astype(np.float64)).to(L.bfloat16)))
    same(*both(lambda L: L.tensor(x).to(L.bfloat16).to(L.float16)))
    same(*both(lambda L: L.tensor([1, -7, 300, 1025]).to(L.bfloat16)))
    same(*both(lambda L: L.tensor([float("nan")]).to(L.bfloat16).isnan()))


def test_factories_and_properties():
    same(*both(lambda L: L.zeros(2, 3, dtype=L.bfloat16)))
    same(*both(lambda L: L.ones(4, dtype=L.bfloat16)))
    same(*both(lambda L: L.tensor([1.1, 2.7], dtype=L.bfloat16)))
    same(*both(lambda L: L.full((2,), 3.3, dtype=L.bfloat16)))
    for L in (torch, hg):
        t = L.zeros(3, dtype=L.bfloat16)
        assert t.element_size() == 2 and t.is_floating_point() and L.is_floating_point(t)
        assert L.bfloat16.itemsize == 2 and L.bfloat16.is_floating_point and L.bfloat16.is_signed
        assert t.type() == "torch.BFloat16Tensor" and str(L.bfloat16) == "torch.bfloat16"
    assert hg.bfloat16 is hg.zeros(1).bfloat16().dtype


@pytest.mark.parametrize("other", ["bfloat16", "float16", "float32", "float64", "int64", "int32", "int8", "uint8",
                                   "bool"])
def test_promotion(other):
    assert str(hg.promote_types(hg.bfloat16, getattr(hg, other))) == \
        str(torch.promote_types(torch.bfloat16, getattr(torch, other)))
    a = np.array([1.5, -2.25, 3.1], np.float32)
    b = np.array([2, 3, 1])

    def f(L):
        x = L.tensor(a).to(L.bfloat16)
        y = L.tensor(b).to(getattr(L, other))
        return [x + y, y * x, x / y] + ([x - y] if other != "bool" else [])
    for t, h in zip(*both(f)):
        same(t, h)


def test_arithmetic_with_scalars_and_inplace():
    a = np.array([1.1, -2.2, 3.3, 100.7, 0.01], np.float32)

    def f(L):
        x = L.tensor(a).to(L.bfloat16)
        y = x.clone()
        y.div_(3)
        z = L.zeros(5, dtype=L.bfloat16)
        z.copy_(L.tensor(a))
        w = L.zeros(5)
        w.copy_(x)
        return [x + 1, x * 2.5, 1 - x, x / 7, x ** 2, -x, x.abs(), y, z, w, x.sum(), x.mean(), x.sum(0), x > 1]
    for t, h in zip(*both(f)):
        same(t, h)


def test_sum_accumulates_in_float32():
    a = np.random.RandomState(0).randn(4000).astype(np.float32)
    same(*both(lambda L: L.tensor(a).bfloat16().sum()))
    same(*both(lambda L: L.tensor(a).bfloat16().view(40, 100).mean(1)))


def test_gradient_is_bfloat16():
    def f(L):
        w = L.tensor([1.5, -2.0, 0.25]).bfloat16().requires_grad_()
        (w * w * 3).sum().backward()
        return w.grad
    same(*both(f))


def test_printing():
    a = np.array([1.1, 2.2, 1e10, -3.0], np.float32)
    for data in (a, a[:2], a[:1].reshape(())):
        t, h = both(lambda L: L.tensor(data).to(L.bfloat16))
        assert repr(h) == repr(t)


def test_finfo():
    t, h = torch.finfo(torch.bfloat16), hg.finfo(hg.bfloat16)
    for k in ("bits", "eps", "max", "min", "tiny", "smallest_normal", "resolution"):
        assert getattr(h, k) == getattr(t, k), k
    assert repr(h) == repr(t)


def test_pickled_dtype_is_the_same_object():
    import pickle
    assert pickle.loads(pickle.dumps(hg.bfloat16)) is hg.bfloat16


def test_without_ml_dtypes():
    """import hookgrad does not load ml_dtypes; without it, bfloat16 exists and using it names the package."""
    code = """
import sys
import hookgrad as torch
assert "ml_dtypes" not in sys.modules
sys.modules["ml_dtypes"] = None          # as if it were not installed
print(torch.bfloat16, torch.promote_types(torch.bfloat16, torch.float16))
try:
    torch.zeros(2, dtype=torch.bfloat16)
except ModuleNotFoundError as e:
    print(type(e).__name__, e.name, "ml_dtypes" in str(e))
print(torch.zeros(2).sum().item())
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split("\n")[:3] == ["torch.bfloat16 torch.float32", "ModuleNotFoundError ml_dtypes True",
                                          "0.0"]
