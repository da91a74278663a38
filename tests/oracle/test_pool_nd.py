"""Pooling in 1-d and 3-d (and the 2-d forms new in issue 12) against torch: max (indices, ceil_mode,
dilation), average (count_include_pad, divisor_override), adaptive average/max, power-average (LPPool),
max-unpooling and fractional max pooling (output_size/output_ratio, manual_seed's samples): values,
every gradient, second order, grad_fn names, the layers' reprs and state_dicts, and PyTorch's errors."""
import numpy as np
import pytest
import torch

import hookgrad
from oracle import check


def rn(*shape, seed=0):
    return np.random.default_rng(seed + len(shape) + sum(shape)).standard_normal(shape)


def F(L):
    return L.nn.functional


GEO = [{"kernel_size": 2}, {"kernel_size": 3, "stride": 2, "padding": 1},
       {"kernel_size": (2, 3, 2), "stride": (1, 2, 1), "dilation": (2, 1, 1), "ceil_mode": True}]


@pytest.mark.parametrize("kw", GEO, ids=str)
def test_max_avg_pool3d(kw):
    x = rn(2, 3, 6, 7, 5)
    check(lambda L, x: F(L).max_pool3d(x, return_indices=True, **kw), x, second=True)
    akw = {k: v for k, v in kw.items() if k != "dilation"}
    check(lambda L, x: F(L).avg_pool3d(x, **akw), x, second=True)
    check(lambda L, x: F(L).avg_pool3d(x, count_include_pad=False, **akw), x[0], second=True)
    check(lambda L, x: F(L).avg_pool3d(x, divisor_override=3, **akw), x[0], second=True)


@pytest.mark.parametrize("kw", GEO[:2], ids=str)
def test_pool1d(kw):
    x = rn(2, 3, 9)
    check(lambda L, x: F(L).max_pool1d(x, return_indices=True, ceil_mode=True, **kw), x, second=True)
    check(lambda L, x: F(L).avg_pool1d(x, count_include_pad=False, **kw), x, second=True)
    check(lambda L, x: L.avg_pool1d(x, 2), x)
    check(lambda L, x: L.max_pool3d(x, 2).float(), x[None, None])


def test_max_pool3d_nan_and_float32():
    x = rn(1, 2, 4, 4, 4).astype(np.float32)
    x[0, 0, 1, 1, 1] = x[0, 1, 0, 0, 3] = x[0, 1, 0, 1, 3] = np.nan
    check(lambda L, x: F(L).max_pool3d(x, 2, return_indices=True), x)


@pytest.mark.parametrize("o", [2, (3, 1, 2), (None, 2, 4)], ids=str)
def test_adaptive3d(o):
    x = rn(2, 3, 5, 6, 7)
    check(lambda L, x: F(L).adaptive_avg_pool3d(x, o), x, second=True)
    check(lambda L, x: F(L).adaptive_max_pool3d(x, o, return_indices=True), x, second=True)


def test_adaptive1d():
    check(lambda L, x: F(L).adaptive_max_pool1d(x, 3, return_indices=True), rn(2, 3, 7), second=True)
    check(lambda L, x: F(L).adaptive_avg_pool1d(x, 3), rn(2, 3, 7), second=True)
    check(lambda L, x: F(L).adaptive_max_pool3d(x, 2), rn(3, 4, 5, 3))


@pytest.mark.parametrize("n,shape", [(1, (2, 3, 9)), (2, (2, 3, 7, 6)), (3, (2, 2, 5, 6, 5))])
@pytest.mark.parametrize("p", [2, 1.5, float("inf")])
def test_lp_pool(n, shape, p):
    fn = f"lp_pool{n}d"
    check(lambda L, x: getattr(F(L), fn)(x.abs() + 0.1, p, 2), rn(*shape), second=True)
    check(lambda L, x: getattr(F(L), fn)(x.abs() + 0.1, p, 3, stride=2, ceil_mode=True), rn(*shape), second=True)


FRAC = [(2, (2, 3, 7, 6), 2, {"output_size": 3}), (2, (3, 7, 6), (3, 2), {"output_size": (4, 2)}),
        (2, (2, 3, 7, 6), 2, {"output_ratio": (0.5, 0.7)}), (3, (2, 3, 7, 6, 5), 2, {"output_size": 3}),
        (3, (2, 3, 7, 6, 5), (2, 3, 1), {"output_ratio": 0.5}), (3, (3, 7, 6, 5), (2, 3, 1), {"output_size": (2, 3, 4)})]


@pytest.mark.parametrize("n,shape,k,kw", FRAC, ids=str)
def test_fractional_max_pool(n, shape, k, kw):
    u = np.random.default_rng(1).random((shape[0] if len(shape) == n + 2 else 1, shape[-n - 1], n))
    check(lambda L, x, u: getattr(F(L), f"fractional_max_pool{n}d")(x, k, return_indices=True, _random_samples=u,
                                                                    **kw),
          rn(*shape), u, second=True, requires_grad=[True, False])


@pytest.mark.parametrize("n", [2, 3])
def test_fractional_max_pool_manual_seed(n):
    x = rn(*(2, 3) + (7,) * n).astype(np.float32)
    outs = []
    for L in (torch, hookgrad):
        L.manual_seed(3)
        m = getattr(L.nn, f"FractionalMaxPool{n}d")(2, output_ratio=0.5, return_indices=True)
        outs.append([t.numpy() for t in m(L.tensor(x))] + [L.rand(2).numpy()])
        assert list(m.state_dict()) == []
    for a, b in zip(*outs):
        np.testing.assert_array_equal(b, a)


@pytest.mark.parametrize("n,shape", [(1, (2, 3, 8)), (2, (2, 3, 8, 6)), (3, (2, 2, 4, 6, 4))])
def test_max_unpool(n, shape):
    def plain(L, x):
        y, i = getattr(F(L), f"max_pool{n}d")(x, 2, return_indices=True)
        return getattr(F(L), f"max_unpool{n}d")(y, i, 2)

    def sized(L, x):
        y, i = getattr(F(L), f"max_pool{n}d")(x, 3, stride=2, padding=1, return_indices=True)
        return getattr(L.nn, f"MaxUnpool{n}d")(3, 2, 1)(y * 2, i, output_size=x.shape[2:])
    check(plain, rn(*shape), second=True)
    check(sized, rn(*shape), second=True)


def _names(fn, x):
    out = []
    for L in (torch, hookgrad):
        t = L.tensor(x, requires_grad=True)
        y = fn(L, t)
        y = y[0] if isinstance(y, tuple) else y
        g, = L.autograd.grad(y, t, L.ones_like(y).requires_grad_(), create_graph=True)
        out.append((y.grad_fn.name(), g.grad_fn.name()))
    assert out[1] == out[0]


NAMED = [(lambda L, x: F(L).max_pool3d(x, 2), 3), (lambda L, x: F(L).avg_pool3d(x, 2), 3),
         (lambda L, x: F(L).adaptive_avg_pool3d(x, 3), 3), (lambda L, x: F(L).adaptive_max_pool3d(x, 3), 3),
         (lambda L, x: F(L).max_pool1d(x, 2), 1), (lambda L, x: F(L).avg_pool1d(x, 2), 1),
         (lambda L, x: F(L).lp_pool3d(x, 2, 2), 3),
         (lambda L, x: F(L).fractional_max_pool2d(x, 2, output_size=3), 2),
         (lambda L, x: F(L).fractional_max_pool3d(x, 2, output_size=3), 3),
         (lambda L, x: F(L).max_unpool2d(x, L.tensor([[[[0, 3], [9, 14]]]]), 2), -2),
         (lambda L, x: F(L).max_unpool3d(x, L.arange(8).reshape(1, 1, 2, 2, 2) * 7, 2), -3)]


@pytest.mark.parametrize("fn,n", NAMED)
def test_grad_fn_names(fn, n):
    _names(fn, rn(*(1, 1) + (2,) * -n) if n < 0 else rn(*(1, 1) + (5,) * n))    # n < 0: unpooling 2^|n|


LAYERS = [("MaxPool3d", (2,), {"stride": 1, "padding": 1, "dilation": 2, "ceil_mode": True}),
          ("AvgPool3d", ((2, 1, 2),), {"count_include_pad": False, "divisor_override": 2}),
          ("AdaptiveAvgPool3d", ((2, None, 3),), {}), ("AdaptiveMaxPool3d", (2,), {"return_indices": True}),
          ("LPPool1d", (2, 3), {"stride": 2}), ("LPPool2d", (1.5, 2), {}), ("LPPool3d", (2, (2, 1, 2)), {"ceil_mode": True}),
          ("MaxPool1d", (3,), {"return_indices": True}), ("AvgPool1d", (3,), {"padding": 1}),
          ("FractionalMaxPool3d", (2,), {"output_size": 2}), ("FractionalMaxPool2d", ((2, 1),), {"output_ratio": 0.5})]


@pytest.mark.parametrize("name,args,kw", LAYERS, ids=str)
def test_layers(name, args, kw):
    nd = 1 if "1d" in name else 2 if "2d" in name else 3
    x = np.abs(rn(*(2, 3) + (6,) * nd)) + 0.1
    res = []
    for L in (torch, hookgrad):
        L.manual_seed(0)
        m = getattr(L.nn, name)(*args, **kw)
        t = L.tensor(x, requires_grad=True)
        y = m(t)
        y0 = y[0] if isinstance(y, tuple) else y
        y0.square().sum().backward()
        res.append((repr(m), list(m.state_dict()), [v.detach().numpy() for v in (y if isinstance(y, tuple) else [y])],
                    t.grad.numpy()))
    assert res[1][:2] == res[0][:2]
    for a, b in zip(res[0][2] + [res[0][3]], res[1][2] + [res[1][3]]):
        np.testing.assert_allclose(b, a, rtol=1e-9, atol=1e-12)


def _err(fn):
    out = []
    for L in (torch, hookgrad):
        with pytest.raises(Exception) as e:
            fn(L)
        out.append((type(e.value), str(e.value).split(" (hookgrad")[0]))
    assert out[1] == out[0]


X5 = (1, 2, 4, 4, 4)
BAD = [lambda L: F(L).max_pool3d(L.ones(*X5), 0), lambda L: F(L).max_pool3d(L.ones(*X5), (2, 2)),
       lambda L: F(L).max_pool3d(L.ones(*X5), 2, (1, 2)), lambda L: F(L).max_pool3d(L.ones(*X5), 2, padding=2),
       lambda L: F(L).max_pool3d(L.ones(*X5), 2, padding=-1), lambda L: F(L).max_pool3d(L.ones(*X5), 2, dilation=0),
       lambda L: F(L).max_pool3d(L.ones(2, 4, 4), 2), lambda L: F(L).max_pool3d(L.ones(*X5), 5),
       lambda L: F(L).max_pool3d(L.ones(1, 2, 0, 4, 4), 2), lambda L: F(L).max_pool3d(L.ones(*X5), (2, 2, -1), 1),
       lambda L: F(L).avg_pool3d(L.ones(*X5), (2, 2)), lambda L: F(L).avg_pool3d(L.ones(*X5), 2, (1, 2)),
       lambda L: F(L).avg_pool3d(L.ones(*X5), 2, 1, (1, 2)), lambda L: F(L).avg_pool3d(L.ones(2, 4, 4), 2),
       lambda L: F(L).avg_pool3d(L.ones(*X5), 5), lambda L: F(L).avg_pool3d(L.ones(*X5), 2, divisor_override=0),
       lambda L: F(L).avg_pool3d(L.ones(*X5, dtype=L.int32), 2),
       lambda L: F(L).avg_pool3d(L.ones(1, 2, 4, 4, 2), 3, 1, (0, 0, 1)),
       lambda L: F(L).adaptive_avg_pool3d(L.ones(*X5), (2, 2)), lambda L: F(L).adaptive_avg_pool3d(L.ones(*X5), -1),
       lambda L: F(L).adaptive_avg_pool3d(L.ones(2, 4, 4), 2), lambda L: F(L).adaptive_avg_pool3d(L.ones(1, 2, 0, 4, 4), 2),
       lambda L: F(L).adaptive_avg_pool3d(L.ones(*X5, dtype=L.long), 2),
       lambda L: F(L).adaptive_max_pool3d(L.ones(*X5), (2, 2)), lambda L: F(L).adaptive_max_pool3d(L.ones(*X5), -1),
       lambda L: F(L).adaptive_max_pool3d(L.ones(2, 4, 4), 2),
       lambda L: F(L).lp_pool3d(L.ones(4, 6), 2, 3), lambda L: F(L).lp_pool2d(L.ones(4, 6), 2, 3),
       lambda L: F(L).fractional_max_pool2d(L.ones(1, 2, 6, 6), 2),
       lambda L: F(L).fractional_max_pool2d(L.ones(1, 2, 6, 6), 2, output_size=6),
       lambda L: F(L).fractional_max_pool3d(L.ones(1, 2, 6, 6, 6), 2, output_size=6),
       lambda L: F(L).fractional_max_pool2d(L.ones(1, 2, 6, 6, dtype=L.long), 2, output_size=3,
                                            _random_samples=L.rand(1, 2, 2)),
       lambda L: F(L).fractional_max_pool2d(L.ones(1, 2, 6, 6), 2, output_size=3, _random_samples=L.rand(1, 2, 3)),
       lambda L: L.nn.FractionalMaxPool2d(2, output_ratio=1.5), lambda L: L.nn.FractionalMaxPool3d(0, output_size=2),
       lambda L: L.nn.FractionalMaxPool2d(2), lambda L: L.nn.FractionalMaxPool2d(2, output_size=2, output_ratio=0.5),
       lambda L: F(L).max_unpool2d(L.ones(1, 2, 2, 2), L.full((1, 2, 2, 2), 18, dtype=L.long), 2),
       lambda L: F(L).max_unpool2d(L.ones(1, 2, 2, 2), L.zeros((1, 2, 2, 2), dtype=L.long), 2, output_size=(9, 9)),
       lambda L: F(L).max_unpool2d(L.ones(1, 2, 2, 2), L.zeros((1, 2, 2, 2), dtype=L.long), 2, output_size=(4, 4, 4)),
       lambda L: F(L).max_unpool2d(L.ones(1, 2, 2, 2), L.zeros((1, 2, 2, 1), dtype=L.long), 2),
       lambda L: F(L).max_unpool2d(L.ones(1, 2, 2, 2), L.zeros((1, 2, 2, 2)), 2),
       lambda L: F(L).max_unpool3d(L.ones(1, 2, 2, 2, 2), L.full((1, 2, 2, 2, 2), 100, dtype=L.long), 2),
       lambda L: F(L).max_unpool3d(L.ones(2, 2, 2), L.zeros((2, 2, 2), dtype=L.long), 2),
       lambda L: F(L).max_unpool1d(L.ones(1, 2, 2), L.full((1, 2, 2), 9, dtype=L.long), 2),
       lambda L: F(L).max_unpool2d(L.ones(2, 2), L.zeros((2, 2), dtype=L.long), 2)]


@pytest.mark.parametrize("fn", BAD)
def test_errors(fn):
    _err(fn)
