"""Batch, layer and group norm on both paths (the compiled kernels and the NumPy fallback, ``_jit.disabled()``)
against torch: values, every gradient, saved statistics, running statistics, second order, constant, NaN and
inf rows, odd sizes (some crossing the pool's chunking), non-contiguous inputs and gradients, empty tensors."""

import numpy as np
import pytest
import torch

import hookgrad
from hookgrad import _array, _jit


def _np(t):
    return None if t is None else np.asarray(t.detach().numpy() if hasattr(t, "detach") else _array.to_host(t))


def _close(h, t, rtol=2e-5, atol=2e-5, what=""):
    h, t = _np(h), _np(t)
    assert h.shape == t.shape and h.dtype == t.dtype, what
    np.testing.assert_allclose(h, t, rtol=rtol, atol=atol, equal_nan=True, err_msg=what)


def _both(fn, arrays, grads=(True,), g=None, **kw):
    """fn(lib, *tensors) in torch and hookgrad; returns ((out, grads...) torch, (out, grads...) hookgrad)."""
    res = []
    for lib in (torch, hookgrad):
        ts = [None if a is None else lib.tensor(a.copy(), requires_grad=bool(r) and a.dtype.kind == "f")
              for a, r in zip(arrays, tuple(grads) + (False,) * (len(arrays) - len(grads)))]
        out = fn(lib, *ts, **kw)
        if any(t is not None and t.requires_grad for t in ts):
            gt = lib.tensor(g) if g is not None else lib.ones(out.shape)
            out.backward(gt)
        res.append([out] + [None if t is None or not t.requires_grad else t.grad for t in ts])
    return res


def _check(res, rtol=2e-5, atol=2e-5):
    t, h = res
    for i, (a, b) in enumerate(zip(h, t)):
        assert (a is None) == (b is None), i
        if a is not None:
            _close(a, b, rtol, atol, what=f"result {i}")


def _rng(*shape, scale=2.0, shift=0.5, seed=0):
    return (np.random.default_rng(seed).standard_normal(shape) * scale + shift).astype(np.float32)


def _bn(lib, x, w, b, rm=None, rv=None, training=True, momentum=0.1, eps=1e-5):
    return lib.nn.functional.batch_norm(x, rm, rv, w, b, training, momentum, eps)


def _ln(lib, x, w, b, ns=None, eps=1e-5):
    return lib.nn.functional.layer_norm(x, ns, w, b, eps)


def _gn(lib, x, w, b, groups=2, eps=1e-5):
    return lib.nn.functional.group_norm(x, groups, w, b, eps)


# ------------------------------------------------------------------------------------------------ batch norm
BN_SHAPES = [(4, 6, 5, 7), (3, 5), (2, 3, 4), (2, 3, 2, 3, 2), (8, 37, 61, 67)]


@pytest.mark.parametrize("shape", BN_SHAPES)
@pytest.mark.parametrize("affine", [True, False])
def test_batch_norm_training(path, shape, affine):
    c = shape[1]
    x, g = _rng(*shape), _rng(*shape, seed=1, shift=0)
    w, b = (_rng(c, seed=2), _rng(c, seed=3)) if affine else (None, None)
    res = []
    for lib in (torch, hookgrad):
        X = lib.tensor(x, requires_grad=True)
        W, B = [None if a is None else lib.tensor(a, requires_grad=True) for a in (w, b)]
        rm, rv = lib.zeros(c), lib.ones(c)
        for _ in range(3):      # running statistics after a few steps: momentum and the unbiased variance
            y = _bn(lib, X, W, B, rm, rv, training=True, momentum=0.3)
        assert y.grad_fn.name() == "NativeBatchNormBackward0"
        saved = [y.grad_fn._saved_result1, y.grad_fn._saved_result2]
        y.backward(lib.tensor(g))
        res.append([y, X.grad, None if W is None else W.grad, None if B is None else B.grad, rm, rv] + saved)
    big = x.size > 10 ** 5
    _check(res, rtol=1e-4 if big else 2e-5, atol=1e-3 if big else 2e-5)


@pytest.mark.parametrize("shape", [(4, 6, 5, 7), (3, 5), (8, 37, 61, 67)])
@pytest.mark.parametrize("affine", [True, False])
def test_batch_norm_eval(path, shape, affine):
    c = shape[1]
    x, g = _rng(*shape), _rng(*shape, seed=1, shift=0)
    w, b = (_rng(c, seed=2), _rng(c, seed=3)) if affine else (None, None)
    rm, rv = _rng(c, seed=4), np.abs(_rng(c, seed=5)) + 0.1
    res = _both(lambda lib, x, w, b, rm, rv: _bn(lib, x, w, b, rm, rv, training=False),
                [x, w, b, rm, rv], grads=(True, True, True), g=g)
    big = x.size > 10 ** 5
    _check(res, rtol=1e-4 if big else 2e-5, atol=1e-3 if big else 2e-5)


def test_batch_norm_without_running_stats(path):
    x = _rng(4, 3, 5)
    _check(_both(lambda lib, x: _bn(lib, x, None, None, training=True), [x]))


def test_instance_norm(path):
    x, w, b = _rng(3, 4, 6, 5), _rng(4, seed=1), _rng(4, seed=2)
    _check(_both(lambda lib, x, w, b: lib.nn.functional.instance_norm(x, weight=w, bias=b), [x, w, b],
                 grads=(True, True, True), g=_rng(3, 4, 6, 5, seed=3)))


# ------------------------------------------------------------------------------------------------ layer norm
LN_CASES = [((3, 5, 33), (33,)), ((2, 3, 4, 5), (4, 5)), ((7,), (7,)), ((37, 1000), (1000,)), ((4, 64, 384), (384,))]


@pytest.mark.parametrize("shape,ns", LN_CASES)
@pytest.mark.parametrize("affine", [True, False])
def test_layer_norm(path, shape, ns, affine):
    x, g = _rng(*shape), _rng(*shape, seed=1, shift=0)
    w, b = (_rng(*ns, seed=2), _rng(*ns, seed=3)) if affine else (None, None)
    res = []
    for lib in (torch, hookgrad):
        X = lib.tensor(x, requires_grad=True)
        W, B = [None if a is None else lib.tensor(a, requires_grad=True) for a in (w, b)]
        y = _ln(lib, X, W, B, ns)
        assert y.grad_fn.name() == "NativeLayerNormBackward0"
        saved = [y.grad_fn._saved_result1, y.grad_fn._saved_result2]
        y.backward(lib.tensor(g))
        res.append([y, X.grad, None if W is None else W.grad, None if B is None else B.grad] + saved)
    big = x.size > 10 ** 4
    _check(res, rtol=1e-4 if big else 2e-5, atol=2e-4 if big else 2e-5)


def test_layer_norm_only_some_gradients(path):
    x, w, b = _rng(5, 9), _rng(9, seed=1), _rng(9, seed=2)
    for grads in [(True, False, False), (False, True, False), (False, False, True), (False, True, True)]:
        _check(_both(_ln, [x, w, b], grads=grads, g=_rng(5, 9, seed=3), ns=(9,)))


def test_group_norm(path):
    x, w, b = _rng(3, 6, 5, 4), _rng(6, seed=1), _rng(6, seed=2)
    g = _rng(3, 6, 5, 4, seed=3)
    _check(_both(_gn, [x, w, b], grads=(True, True, True), g=g))
    _check(_both(_gn, [x, None, None], g=g, groups=3))
    x = _rng(2, 4, 2)      # 3-d input
    _check(_both(_gn, [x, w[:4], b[:4]], grads=(True, True, True), g=_rng(2, 4, 2, seed=4)))


# ------------------------------------------------------------------------------------------- special inputs
def test_constant_rows_and_channels(path):
    x = _rng(4, 3, 6)
    x[1] = 2.5              # a constant row (layer norm), variance 0
    x[:, 1] = -1.0          # a constant channel (batch norm)
    w, b, g = _rng(6, seed=1), _rng(6, seed=2), _rng(4, 3, 6, seed=3)
    _check(_both(_ln, [x, w, b], grads=(True, True, True), g=g, ns=(6,)))
    # eps 1e-12: invstd 1e6 on the constant row; forward only (PyTorch's gradient formula cancels there)
    _check(_both(_ln, [x, None, None], grads=(False,), ns=(6,), eps=1e-12), rtol=1e-4, atol=1e-4)
    w3, b3 = _rng(3, seed=4), _rng(3, seed=5)
    _check(_both(lambda lib, x, w, b: _bn(lib, x, w, b, training=True), [x, w3, b3], grads=(True, True, True), g=g))


def test_nan_and_inf_rows(path):
    x = _rng(6, 3, 8)
    x[1, 0, 2] = np.nan
    x[2, 1, 0] = np.inf
    x[3, 2, 5] = -np.inf
    g = _rng(6, 3, 8, seed=3)
    w, b = _rng(8, seed=1), _rng(8, seed=2)
    # NOTE: only outputs and gradients: the saved mean of a row with an inf is inf here, NaN in PyTorch's
    # layer norm (Welford); the NumPy path gives inf too
    _check(_both(_ln, [x, w, b], grads=(True, True, True), g=g, ns=(8,)))
    y = x.transpose(0, 2, 1).copy()     # the same specials in batch norm's channels
    w3, b3 = _rng(3, seed=4), _rng(3, seed=5)
    res = _both(lambda lib, x, w, b: _bn(lib, x, w, b, training=True), [x, w3, b3], grads=(True, True, True), g=g)
    _check(res)
    _check(_both(lambda lib, x: _bn(lib, x, None, None, training=True), [y], g=y))


def test_non_contiguous_inputs_and_gradients(path):
    base = _rng(6, 40, 10)
    w, b = _rng(14, seed=2), _rng(14, seed=3)
    res = []
    for lib in (torch, hookgrad):
        X = lib.tensor(base, requires_grad=True)
        W, B = lib.tensor(w, requires_grad=True), lib.tensor(b, requires_grad=True)
        xv = X.permute(2, 0, 1)[:, :, ::3]                                  # (10, 6, 14), no unit stride
        gv = lib.tensor(_rng(14, 6, 10, seed=1)).permute(2, 1, 0)          # a transposed gradient
        y = _ln(lib, xv, W, B, (14,))
        y.backward(gv)
        rm, rv = lib.zeros(6), lib.ones(6)
        xb = xv.detach().requires_grad_()
        z = _bn(lib, xb, None, None, rm, rv, training=True)
        z.sum().backward()                                                  # an expanded (stride 0) gradient
        res.append([y, X.grad, W.grad, B.grad, z, xb.grad, rm, rv])
    _check(res)


def test_empty(path):
    for lib_pair in [_both(_ln, [np.zeros((0, 5), np.float32), _rng(5), _rng(5, seed=1)],
                           grads=(True, True, True), ns=(5,)),
                     _both(lambda lib, x, rm, rv: _bn(lib, x, None, None, rm, rv, training=False),
                           [np.zeros((0, 3, 4), np.float32), _rng(3), np.abs(_rng(3)) + 1])]:
        _check(lib_pair)


def test_float64_takes_the_numpy_path(path):
    x = _rng(4, 3, 5).astype(np.float64)
    _check(_both(_ln, [x, None, None], ns=(5,)), rtol=1e-12, atol=1e-12)
    _check(_both(lambda lib, x: _bn(lib, x, None, None, training=True), [x]), rtol=1e-12, atol=1e-12)


# -------------------------------------------------------------------------------------------- second order
@pytest.mark.parametrize("kind", ["bn", "ln", "gn", "bn_eval"])
def test_second_order(path, kind):
    x = _rng(4, 4, 3)
    w, b = _rng(4, seed=1), _rng(4, seed=2)
    g = _rng(4, 4, 3, seed=3)
    res = []
    for lib in (torch, hookgrad):
        X, W, B = [lib.tensor(a, requires_grad=True) for a in (x, w, b)]
        if kind == "bn":
            y = _bn(lib, X, W, B, training=True)
        elif kind == "bn_eval":
            y = _bn(lib, X, W, B, lib.tensor(w * 0.1), lib.tensor(np.abs(b) + 0.5), training=False)
        elif kind == "ln":
            y = _ln(lib, X, W[:3], B[:3], (3,))
        else:
            y = _gn(lib, X, W, B)
        gx, gw, gb = lib.autograd.grad(y, (X, W, B), lib.tensor(g), create_graph=True)
        (gx * gx).sum().add((gw * gx.sum((0, 2))).sum()).backward()
        res.append([gx, gw, gb, X.grad, W.grad])
    _check(res, rtol=1e-4, atol=1e-4)


def test_module_training_steps(path):
    """BatchNorm2d and LayerNorm modules through a few optimizer steps: parameters and running statistics."""
    x = _rng(5, 3, 4, 4)
    res = []
    for lib in (torch, hookgrad):
        lib.manual_seed(0)
        bn, ln = lib.nn.BatchNorm2d(3, momentum=0.2), lib.nn.LayerNorm(4)
        opt = lib.optim.SGD(list(bn.parameters()) + list(ln.parameters()), lr=0.1)
        for i in range(3):
            opt.zero_grad()
            out = ln(bn(lib.tensor(x * (i + 1))))
            (out * out).mean().backward()
            opt.step()
        bn.eval()
        res.append([bn(lib.tensor(x)), bn.weight, bn.bias, bn.running_mean, bn.running_var, ln.weight, ln.bias])
    _check(res)


def test_the_compiled_path_is_taken(monkeypatch):
    """With numba, float32 NumPy inputs run every norm kernel (the tests above then compare it with torch)."""
    from hookgrad.primitives import nn as N
    if not _jit.available() or type(hookgrad.zeros(1)._data) is not np.ndarray:
        pytest.skip("no compiled path here (numba missing, or another array module)")
    names = ["_chan_stats_kernel", "_scale_shift_kernel", "_ln_kernel", "_ln_grad_kernel",
             "_chan_grad_sums_kernel", "_bn_grad_kernel"]
    calls = dict.fromkeys(names, 0)
    for name in names:
        k = getattr(N, name)
        monkeypatch.setattr(N, name, lambda *a, _k=k, _n=name: (calls.__setitem__(_n, calls[_n] + 1), _k(*a))[1])
    x = hookgrad.tensor(_rng(4, 3, 5), requires_grad=True)
    w = hookgrad.ones(5, requires_grad=True)
    _ln(hookgrad, x, w, None, (5,)).sum().backward()
    _bn(hookgrad, x, None, None, training=True).sum().backward()
    _gn(hookgrad, x, None, None, groups=3)
    assert all(calls.values()), calls


@pytest.mark.parametrize("threads", [2, 3])
@pytest.mark.parametrize("shape", [(16, 64, 28, 28), (5, 7, 150, 150)])
def test_pool_chunks_not_aligned_with_channels(path, threads, shape):
    """The pool's chunks of planes start anywhere in the channel cycle (341 planes of 64 channels): each plane's
    channel counts from the whole's first plane. Batch norm's output and gradients, group norm's output."""
    was = hookgrad.get_num_threads()
    hookgrad.set_num_threads(threads)
    try:
        c = shape[1]
        x, g = _rng(*shape), _rng(*shape, seed=1, shift=0)
        w, b = _rng(c, seed=2), _rng(c, seed=3)
        _check(_both(lambda lib, x, w, b: _bn(lib, x, w, b), [x, w, b], grads=(True, True, True), g=g),
               rtol=1e-4, atol=1e-3)
        _check(_both(lambda lib, x, w, b: _gn(lib, x, w, b, groups=c), [x, w, b], grads=(False,)), rtol=1e-4,
               atol=1e-3)
    finally:
        hookgrad.set_num_threads(was)
