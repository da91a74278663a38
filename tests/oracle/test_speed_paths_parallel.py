"""Issue 23's parallel paths against torch and NumPy: large elementwise ops split over the pool
(``_parallel.ufunc``: ReLU, add), the compiled max-pool forward by planes, and the convolution's tiles of images
(one im2col and one single-threaded GEMM per tile, BLAS on one thread meanwhile), at 1, 2 and 3 threads."""
import numpy as np
import pytest
import torch

import hookgrad
from hookgrad import _parallel


@pytest.fixture(params=[1, 2, 3])
def threads(request):
    was = hookgrad.get_num_threads()
    hookgrad.set_num_threads(request.param)
    yield request.param
    hookgrad.set_num_threads(was)


def _rng(*shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


def test_ufunc_matches_numpy_on_every_kind_of_argument(threads):
    big = _rng(600, 1000)
    ints = np.arange(600 * 1000, dtype=np.int32).reshape(600, 1000)
    cases = [(np.add, big, big), (np.add, big, 1.5), (np.maximum, big, np.float32(0)), (np.add, ints, 2.5),
             (np.add, ints, ints), (np.multiply, big, np.array(2.0)), (np.maximum, big, np.array(0, np.float32)),
             (np.add, big, big[:1]),            # broadcasting: into a new result by rows
             (np.add, big.T, big.T),            # not C-contiguous: NumPy itself
             (np.add, big[:2], big[:2])]        # small: NumPy itself
    for f, *args in cases:
        got, want = _parallel.ufunc(f, *args), f(*args)
        assert got.dtype == want.dtype and got.shape == want.shape
        np.testing.assert_array_equal(got, want)


def test_ufunc_broadcasting_by_rows(threads, monkeypatch):
    """An attention mask or a bias broadcast against a large array, in either order and across dtypes: a new result
    filled by chunks of its rows on the pool, equal to NumPy's in values, dtype and shape."""
    att, mask = _rng(32, 12, 64, 64), _rng(32, 1, 1, 64, seed=1)
    split = []
    real = _parallel.parallel_for
    monkeypatch.setattr(_parallel, "parallel_for", lambda n, fn, grain=1 << 15: split.append(n) or real(n, fn, grain))
    others = [mask, _rng(64, seed=2), _rng(1, 12, 64, 64, seed=3), mask.astype(np.float64), mask.astype(np.float16)]
    for f in (np.add, np.maximum, np.true_divide):
        for other in others:
            for args in ((att, other), (other, att)):
                got, want = _parallel.ufunc(f, *args), f(*args)
                assert got.dtype == want.dtype and got.shape == want.shape
                np.testing.assert_array_equal(got, want)
    assert bool(split) == (threads > 1)
    with pytest.raises(ValueError):                 # shapes that do not broadcast: NumPy's own error
        _parallel.ufunc(np.add, att, _rng(3, 64))
    small = _rng(32, 1), _rng(1, 64)                # nothing large: NumPy itself
    np.testing.assert_array_equal(_parallel.ufunc(np.add, *small), np.add(*small))


def test_ufunc_in_place_by_rows(threads):
    """``out=``: a bias added to a large product in place, by chunks of rows; every broadcasting form."""
    prod = _rng(3000, 300)
    for other in (_rng(300), _rng(1, 300), _rng(3000, 300, seed=1), _rng(3000, 1, seed=2), np.float32(2.5), 1.5):
        got, want = prod.copy(), prod.copy()
        _parallel.ufunc(np.add, got, other, out=got)
        want += other
        np.testing.assert_array_equal(got, want)


def test_large_linear_with_bias(threads):
    x, w, b = _rng(2048, 384), _rng(1536, 384, seed=1), _rng(1536, seed=2)
    res = [lib.nn.functional.linear(lib.tensor(x), lib.tensor(w), lib.tensor(b)).numpy() for lib in (torch, hookgrad)]
    np.testing.assert_allclose(res[1], res[0], rtol=1e-5, atol=1e-4)


def test_large_relu_and_add_forward_backward(threads):
    x, y = _rng(4, 64, 56, 56), _rng(4, 64, 56, 56, seed=1)
    x[0, 0, 0, :4] = [0.0, -0.0, np.nan, np.inf]
    res = []
    for lib in (torch, hookgrad):
        a, b = lib.tensor(x, requires_grad=True), lib.tensor(y, requires_grad=True)
        out = (a.relu() + b).relu()
        out.backward(lib.tensor(y))
        res.append([t.detach().numpy() for t in (out, a.grad, b.grad, a.relu())])
    native = type(hookgrad.zeros(1)._data) is np.ndarray    # (the CuPy-like test backend's maximum gives +0.0)
    big = _rng(6, 64, 56, 56, seed=2)          # relu_ in place: chunks of 2^18 elements (this one is split)
    big[5, 63, 55, -4:] = [0.0, -0.0, np.nan, -np.inf]
    res[0].append(torch.relu_(torch.tensor(big)).numpy())
    res[1].append(hookgrad.relu_(hookgrad.tensor(big)).numpy())
    for h, t in zip(res[1], res[0]):
        np.testing.assert_array_equal(h, t)
        if native:
            np.testing.assert_array_equal(np.signbit(h), np.signbit(t))    # relu(-0.0) is -0.0


@pytest.mark.parametrize("geo", [dict(kernel_size=3, stride=2, padding=1), dict(kernel_size=2),
                                 dict(kernel_size=3, stride=1, padding=1, dilation=2, ceil_mode=True)], ids=str)
def test_large_max_pool2d_with_indices(threads, geo):
    x = _rng(4, 32, 40, 40)
    x[0, 0, :3, :3] = np.nan
    x[1, 1] = -np.inf
    x[2, 2, :, ::2] = 1.0                    # ties
    res = []
    for lib in (torch, hookgrad):
        a = lib.tensor(x, requires_grad=True)
        out, idx = lib.nn.functional.max_pool2d(a, return_indices=True, **geo)
        out.backward(lib.ones_like(out))
        res.append((out.detach().numpy(), idx.numpy(), a.grad.numpy()))
    for h, t in zip(res[1], res[0]):
        np.testing.assert_array_equal(h, t)


def test_resnet_block_training_step_in_tiles(threads):
    """A residual block (convolutions with stride 1 and 2, batch norm, ReLU, add) trained one step in both
    libraries with the same weights: outputs and every gradient."""
    x = _rng(6, 8, 20, 20)
    res = []
    for lib in (torch, hookgrad):
        nn = lib.nn
        lib.manual_seed(0)
        conv1, conv2, down = nn.Conv2d(8, 16, 3, 2, 1, bias=False), nn.Conv2d(16, 16, 3, 1, 1, bias=False), \
            nn.Conv2d(8, 16, 1, 2, bias=False)
        for m, seed in ((conv1, 1), (conv2, 2), (down, 3)):
            m.weight.data = lib.tensor(_rng(*m.weight.shape, seed=seed) * 0.2)
        bn1, bn2 = nn.BatchNorm2d(16), nn.BatchNorm2d(16)
        a = lib.tensor(x, requires_grad=True)
        out = (bn2(conv2(bn1(conv1(a)).relu())) + down(a)).relu()
        out.backward(lib.tensor(_rng(*out.shape, seed=4)))
        res.append([t.detach().numpy() for t in (out, a.grad, conv1.weight.grad, conv2.weight.grad, down.weight.grad)])
    for h, t in zip(res[1], res[0]):
        np.testing.assert_allclose(h, t, rtol=2e-4, atol=2e-4 * max(1.0, float(np.abs(t).max())))


@pytest.mark.parametrize("rows", [1, 16, 48, 49])
def test_small_batch_linear_and_mm_with_a_transposed_weight(rows):
    """Few rows times a transposed matrix (Linear's x @ W.T) is taken as (W x^T)^T copied back: values, gradients,
    a C-contiguous result, as torch's."""
    x, w, b = _rng(rows, 384), _rng(1536, 384, seed=1), _rng(1536, seed=2)
    res = []
    for lib in (torch, hookgrad):
        X, W, B = (lib.tensor(a, requires_grad=True) for a in (x, w, b))
        y = lib.nn.functional.linear(X, W, B)
        z = lib.mm(X, W.t())
        (y.sum() + (z * z).sum()).backward()
        res.append((y.detach().numpy(), z.detach().numpy(), X.grad.numpy(), W.grad.numpy(), B.grad.numpy(),
                    y.is_contiguous(), z.is_contiguous()))
    for h, t in zip(res[1][:5], res[0][:5]):
        np.testing.assert_allclose(h, t, rtol=1e-4, atol=1e-3)
    assert res[1][5:] == res[0][5:] == (True, True)
