"""The convolution and pooling speed paths on both paths (compiled kernels and the NumPy fallback,
``_jit.disabled()``) against torch, in float32: the batch-layout im2col (exact and "wide" columns, filled by
blocks of images or channels on the pool), the one-GEMM weight gradient, the stride-2 input gradient's
col2im, the cache-sized image blocks of a forward without grad mode, max pooling by blocks and its compiled
scatter (ties, -inf, NaN, padding, dilation, ceil mode), avg pooling's scatter. Stride 1/2, kernels 1/3/7,
small and large spatial sizes, groups, dilation, batch 1 and batches larger than the thread count,
non-contiguous inputs, empty batches, second order on one small case."""

import warnings

import numpy as np
import pytest
import torch

import hookgrad
from hookgrad.primitives import nn as N


def _np(t):
    return np.asarray(t.detach().numpy())


def _close(h, t, tol=1e-4, what=""):
    """Equal to ``tol`` relative to the array's largest magnitude (float32 sums of thousands of terms: torch's
    own error is ~1e-5 of the scale, hookgrad's GEMMs ~1e-6)."""
    h, t = _np(h), _np(t)
    assert h.shape == t.shape and h.dtype == t.dtype, (what, h.shape, t.shape, h.dtype, t.dtype)
    fin = np.isfinite(t)
    scale = max(1.0, float(np.abs(t[fin]).max())) if fin.any() else 1.0
    np.testing.assert_allclose(h, t, rtol=tol, atol=tol * scale, equal_nan=True, err_msg=what)


def _rng(*shape, seed=0):
    return np.random.default_rng(seed + sum(shape)).standard_normal(shape).astype(np.float32)


def _run(fn, arrays, g=None, views=None):
    """fn(lib, *tensors) in torch and hookgrad, the tensors leaves (``views[i]`` applied after, for
    non-contiguous inputs); out.backward(g). Returns [(out, grads) torch, (out, grads) hookgrad]."""
    res = []
    for lib in (torch, hookgrad):
        leaves = [lib.tensor(a.copy(), requires_grad=True) for a in arrays]
        ins = [v(t) if views and views[i] else t for i, (t, v) in enumerate(zip(leaves, views or [None] * len(leaves)))]
        out = fn(lib, *ins)
        gg = g if g is not None else _rng(*out.shape, seed=7)
        out.backward(lib.tensor(gg))
        res.append((out, [t.grad for t in leaves]))
    return res


def _check(res, tol=1e-4):
    (to, tg), (ho, hg) = res
    _close(ho, to, tol, "output")
    for i, (a, b) in enumerate(zip(hg, tg)):
        _close(a, b, tol, f"grad {i}")


# (N, C, H, W, O, kernel, stride, padding, dilation, groups)
CONVS = [
    (2, 3, 9, 9, 64, 3, 1, 1, 1, 1),           # small, many output channels: exact columns
    (2, 3, 9, 9, 4, 3, 1, 1, 1, 1),            # small, few output channels: wide columns
    (2, 3, 30, 30, 4, 3, 1, 1, 1, 1),          # wide columns
    (3, 3, 17, 15, 8, 7, 2, 3, 1, 1),          # the stem's geometry, odd sizes
    (2, 4, 10, 10, 6, 1, 2, 0, 1, 1),          # 1x1 stride 2 (downsample)
    (1, 4, 11, 11, 6, 1, 1, 0, 1, 1),          # 1x1 stride 1, batch 1
    (1, 8, 7, 7, 8, 3, 1, 1, 1, 1),            # batch 1, 7x7
    (5, 4, 12, 12, 6, 3, 1, 2, 2, 2),          # dilation and groups
    (1, 8, 7, 7, 8, 3, 2, 1, 1, 8),            # depthwise, stride 2, batch 1
    (4, 6, 13, 11, 4, (3, 2), (2, 1), (1, 0), 1, 2),
    (9, 2, 20, 20, 3, 3, 2, 1, 1, 1),          # more images than channels: blocks of images
    (8, 16, 40, 40, 16, 3, 1, 1, 1, 1),        # crosses the pool's chunking
    (3, 32, 14, 14, 32, 3, 2, 1, 1, 1),        # stride 2, col2im by channel blocks
    (2, 40, 4, 4, 8, 3, 1, 1, 1, 1),           # stride 1, more input channels than outputs: col2im
    (2, 40, 4, 4, 8, 3, 1, 1, 1, 4),           # the same with groups
]


@pytest.mark.parametrize("case", CONVS, ids=str)
def test_conv2d_forward_and_gradients(path, case):
    n, c, h, w, o, k, s, p, d, g = case
    k2 = k if isinstance(k, tuple) else (k, k)
    x, wt, b = _rng(n, c, h, w), _rng(o, c // g, *k2, seed=1) * 0.3, _rng(o, seed=2)
    _check(_run(lambda L, x, w, b: L.nn.functional.conv2d(x, w, b, s, p, d, g), [x, wt, b]), tol=2e-4)


@pytest.mark.parametrize("case", [CONVS[0], CONVS[2], CONVS[3], CONVS[10], CONVS[11]], ids=str)
def test_conv2d_without_grad_in_image_blocks(path, case, monkeypatch):
    """No grad mode: the images go through in blocks (one image per block here), the columns not kept."""
    n, c, h, w, o, k, s, p, d, g = case
    x, wt, b = _rng(n, c, h, w), _rng(o, c // g, k, k, seed=1) * 0.3, _rng(o, seed=2)
    ref = torch.nn.functional.conv2d(torch.tensor(x), torch.tensor(wt), torch.tensor(b), s, p, d, g)
    for block in (1, 1 << 30):
        monkeypatch.setattr(N, "_BLOCK_BYTES", block)
        with hookgrad.no_grad():
            out = hookgrad.nn.functional.conv2d(hookgrad.tensor(x), hookgrad.tensor(wt), hookgrad.tensor(b), s, p, d, g)
        _close(out, ref, 2e-4, f"block {block}")


@pytest.mark.parametrize("threads", [1, 3])
@pytest.mark.parametrize("case", [CONVS[3], CONVS[7], CONVS[9], CONVS[11]], ids=str)
def test_conv2d_tiles_of_images(path, case, threads, monkeypatch):
    """Training: the batch in tiles (one image per tile with a 1-byte block, else one tile per thread), each
    tile's columns kept for its part of the weight gradient, the parts summed; the input gradient per tile."""
    n, c, h, w, o, k, s, p, d, g = case
    k2 = k if isinstance(k, tuple) else (k, k)
    x, wt, b = _rng(n, c, h, w), _rng(o, c // g, *k2, seed=1) * 0.3, _rng(o, seed=2)
    was = hookgrad.get_num_threads()
    hookgrad.set_num_threads(threads)
    try:
        for block in (1, 1 << 30):
            monkeypatch.setattr(N, "_BLOCK_BYTES", block)
            _check(_run(lambda L, x, w, b: L.nn.functional.conv2d(x, w, b, s, p, d, g), [x, wt, b]), tol=2e-4)
            _check(_run(lambda L, x, w: L.nn.functional.conv_transpose2d(x, w, None, s, p, groups=g),
                        [_rng(n, o, h // 2 + 1, w // 2 + 1), _rng(o, c // g, *k2, seed=3)]), tol=2e-4)
    finally:
        hookgrad.set_num_threads(was)


# (N, C, H, W, O, kernel, padding, dilation): few channels, stride 1 -> the direct kernels on the compiled path
DIRECT = [
    (2, 1, 28, 28, 8, 3, 1, 1),              # a small CNN's first layer
    (3, 2, 11, 9, 5, 3, 2, 2),               # dilation, five output channels (a partial block of four)
    (2, 4, 7, 12, 3, (2, 4), "same", 1),     # an even kernel: asymmetric padding
    (1, 8, 6, 6, 16, 1, 0, 1),               # 1x1
    (4, 8, 14, 14, 16, 3, 1, 1),             # a small CNN's second layer
    (2, 16, 10, 10, 32, 3, 1, 1),            # the largest 3x3 that goes direct (32 x 16 x 3 x 3)
    (2, 3, 12, 12, 128, 3, 1, 1),            # few channels in, many out (its input gradient: many in, few out)
    (2, 16, 9, 8, 16, 2, 1, 1),              # the largest 2-wide (16 x 16 x 2 x 2)
    (2, 3, 9, 11, 6, (2, 7), 3, 1),          # a 7-wide row: two groups of three taps and one alone
    (2, 160, 14, 14, 5, 3, 1, 1),            # few output channels from many (O x C x 3 x 3 above the limit)
]


@pytest.mark.filterwarnings("ignore:Using padding='same'")
@pytest.mark.parametrize("threads", [1, 3])
@pytest.mark.parametrize("case", DIRECT, ids=str)
def test_conv2d_direct(path, case, threads, monkeypatch):
    """The direct convolution, its input gradient (a direct convolution with the flipped kernel) and its weight
    gradient, by runs of (image, block of four output channels) on the pool, the smallest runs too (one image's blocks
    on several threads); taken on the compiled path only."""
    n, c, h, w, o, k, p, d = case
    k2 = k if isinstance(k, tuple) else (k, k)
    x, wt, b = _rng(n, c, h, w), _rng(o, c, *k2, seed=1) * 0.3, _rng(o, seed=2)
    calls, real = [], N._direct_wgrad
    monkeypatch.setattr(N, "_direct_wgrad", lambda *a: calls.append(1) or real(*a))
    was = hookgrad.get_num_threads()
    hookgrad.set_num_threads(threads)
    try:
        for grain in (N._GRAIN, 1):
            monkeypatch.setattr(N, "_GRAIN", grain)
            _check(_run(lambda L, x, w, b: L.nn.functional.conv2d(x, w, b, 1, p, d), [x, wt, b]), tol=2e-4)
    finally:
        hookgrad.set_num_threads(was)
    native = type(hookgrad.zeros(1)._data) is np.ndarray        # (a test backend's arrays: NumPy's paths)
    assert bool(calls) == (path == "compiled" and native)


@pytest.mark.parametrize("big", [1, 1 << 40])
@pytest.mark.parametrize("case", [CONVS[0], CONVS[7], CONVS[11], CONVS[13]], ids=str)
def test_conv2d_weight_gradient_in_the_weights_layout(path, case, big, monkeypatch):
    """The weight gradient's product in either orientation (``_BIG_WEIGHT``) is the weight's contiguous layout,
    as torch's, so that AccumulateGrad takes it as it is (a transposing copy of a large gradient is slow)."""
    monkeypatch.setattr(N, "_BIG_WEIGHT", big)
    n, c, h, w, o, k, s, p, d, g = case
    x, wt, b = _rng(n, c, h, w), _rng(o, c // g, k, k, seed=1) * 0.3, _rng(o, seed=2)
    res = _run(lambda L, x, w, b: L.nn.functional.conv2d(x, w, b, s, p, d, g), [x, wt, b])
    _check(res, tol=2e-4)
    (_, tg), (_, hg) = res
    assert hg[1].stride() == tg[1].stride()
    gy = _rng(*res[0][0].shape, seed=7)
    gw = N._conv_weight(x, gy, wt.shape, (s, s), (p,) * 4, (d, d), g)      # as the product left it: no copy later
    assert gw.flags.c_contiguous
    _close(hookgrad.tensor(gw), tg[1], 2e-4)


def test_conv2d_non_contiguous_and_empty(path):
    x, wt = _rng(3, 5, 12, 10), _rng(4, 5, 3, 3, seed=1)
    _check(_run(lambda L, x, w: L.nn.functional.conv2d(x, w, None, 1, 1), [x, wt],
                views=[lambda t: t.transpose(2, 3), lambda t: t.flip(3)]))
    _check(_run(lambda L, x, w: L.nn.functional.conv2d(x, w, None, 2, 1), [x, wt],
                views=[lambda t: t[:, :, ::2], None]))
    _check(_run(lambda L, x, w: L.nn.functional.conv2d(x, w, None, 1, 1), [_rng(0, 5, 6, 6), wt]))


def test_conv2d_nan_inf(path):
    x = _rng(2, 3, 8, 8)
    x[0, 1, 2, 3], x[1, 0, 5, 5], x[1, 2, 0, 0] = np.nan, np.inf, -np.inf
    _check(_run(lambda L, x, w: L.nn.functional.conv2d(x, w, None, 1, 1), [x, _rng(4, 3, 3, 3, seed=1)]))


# 3x3 stride-1 convolutions with >= 16 channels in and out: Winograd F(2x2, 3x3) on the compiled path
WINOGRAD = [
    (2, 16, 10, 10, 16, 1, True),      # even sizes, padding 1
    (3, 24, 7, 9, 32, 1, False),       # odd sizes: the last tile row and column cropped
    (1, 16, 5, 6, 20, 0, True),        # no padding, batch 1
    (2, 32, 4, 4, 16, 2, True),        # padding larger than the kernel's reach
    (5, 16, 3, 3, 16, 1, False),       # one tile per image, bands crossing images
]


@pytest.mark.parametrize("case", WINOGRAD, ids=str)
def test_conv2d_winograd(path, case, monkeypatch):
    """Forward and every gradient (the input gradient is itself a 3x3 stride-1 convolution: Winograd again; the
    weight gradient by Winograd's adjoint) against torch, on both paths; on the compiled path the Winograd routes
    must have been taken. Bands of one tile row
    (a 1-byte budget) and one band for the whole batch give the same."""
    n, c, h, w, o, p, bias = case
    monkeypatch.setattr(N, "_WINO_MIN_TILES", 1)       # (small batches: the real threshold is ~256 tiles)
    monkeypatch.setattr(N, "_DIRECT_MAX", (0, 0, 0))   # (these few channels would go direct)
    monkeypatch.setattr(N, "_DIRECT_FEW", 0)
    calls = []
    for name in ("_winograd", "_winograd_weight_grad"):
        real = getattr(N, name)
        monkeypatch.setattr(N, name, lambda *a, _name=name, _real=real: calls.append(_name) or _real(*a))
    x, wt, b = _rng(n, c, h, w), _rng(o, c, 3, 3, seed=1) * 0.2, _rng(o, seed=2)
    for band in (1, 1 << 30):
        monkeypatch.setattr(N, "_WINO_BLOCK", band)
        if bias:
            _check(_run(lambda L, x, w, b: L.nn.functional.conv2d(x, w, b, 1, p), [x, wt, b]), tol=2e-4)
        else:
            _check(_run(lambda L, x, w: L.nn.functional.conv2d(x, w, None, 1, p), [x, wt]), tol=2e-4)
    native = type(hookgrad.zeros(1)._data) is np.ndarray        # (a test backend's arrays: NumPy's paths)
    assert sorted(set(calls)) == (["_winograd", "_winograd_weight_grad"] if path == "compiled" and native else [])
    if o >= 16:     # conv_transpose2d, stride 1: its forward and its weight gradient are the same maps
        _check(_run(lambda L, y, w: L.nn.functional.conv_transpose2d(y, w, None, 1, 1), [_rng(n, o, h, w), wt]),
               tol=2e-4)


def test_conv2d_winograd_nan_inf_and_threads(path, monkeypatch):
    """A NaN or inf in the input or the weight: the columns' route (Winograd's tiles would mix an inf into its
    neighbours as NaN), torch's values. More images than threads: tiles of images, each its own bands."""
    monkeypatch.setattr(N, "_WINO_MIN_TILES", 1)
    monkeypatch.setattr(N, "_DIRECT_MAX", (0, 0, 0))
    monkeypatch.setattr(N, "_DIRECT_FEW", 0)
    x, wt = _rng(2, 16, 8, 8), _rng(16, 16, 3, 3, seed=1) * 0.2
    x[0, 1, 2, 3], x[1, 0, 5, 5], x[1, 2, 0, 0] = np.nan, np.inf, -np.inf
    with warnings.catch_warnings():
        warnings.simplefilter("error")      # the pool's threads keep NumPy quiet too, as torch is
        _check(_run(lambda L, x, w: L.nn.functional.conv2d(x, w, None, 1, 1), [x, wt]))
    w2 = wt.copy()
    w2[3, 4, 1, 1] = np.inf
    ref = torch.nn.functional.conv2d(torch.tensor(_rng(2, 16, 8, 8)), torch.tensor(w2), None, 1, 1)
    with hookgrad.no_grad():
        out = hookgrad.nn.functional.conv2d(hookgrad.tensor(_rng(2, 16, 8, 8)), hookgrad.tensor(w2), None, 1, 1)
    _close(out, ref, 1e-4, "inf weight")
    was = hookgrad.get_num_threads()
    hookgrad.set_num_threads(3)
    try:
        _check(_run(lambda L, x, w: L.nn.functional.conv2d(x, w, None, 1, 1), [_rng(7, 16, 9, 9), wt]), tol=2e-4)
    finally:
        hookgrad.set_num_threads(was)


@pytest.mark.parametrize("kw", [dict(stride=2, padding=1, output_padding=1), dict(stride=2), dict(stride=1, padding=1),
                                dict(stride=(2, 3), padding=(1, 0), groups=2, dilation=(1, 2))], ids=str)
def test_conv_transpose2d(path, kw):
    g = kw.get("groups", 1)
    x, wt, b = _rng(3, 4, 7, 6), _rng(4, 3, 3, 3, seed=1), _rng(3 * g, seed=2)
    _check(_run(lambda L, x, w, b: L.nn.functional.conv_transpose2d(x, w, b, **kw), [x, wt, b]), tol=2e-4)


def test_conv1d_conv3d_float32(path):
    _check(_run(lambda L, x, w: L.nn.functional.conv1d(x, w, None, 1, 2), [_rng(3, 4, 30), _rng(5, 4, 5, seed=1)]))
    _check(_run(lambda L, x, w: L.nn.functional.conv1d(x, w, None, 2, 1, 2), [_rng(3, 4, 30), _rng(5, 4, 3, seed=1)]))
    _check(_run(lambda L, x, w: L.nn.functional.conv3d(x, w, None, (1, 2, 1), 1), [_rng(2, 3, 6, 7, 5),
                                                                                   _rng(4, 3, 3, 3, 3, seed=1)]))


def test_fold_unfold_float32(path):
    _check(_run(lambda L, x: L.nn.functional.unfold(x, 3, 1, 1, 2), [_rng(3, 4, 9, 8)]))
    _check(_run(lambda L, x: L.nn.functional.fold(x, (9, 8), 3, 1, 1, 2), [_rng(3, 36, 20)]))


def test_conv2d_second_order_and_names(path):
    x, wt, b = _rng(2, 3, 6, 5), _rng(4, 3, 3, 3, seed=1), _rng(4, seed=2)
    res = []
    for lib in (torch, hookgrad):
        ts = [lib.tensor(a.copy(), requires_grad=True) for a in (x, wt, b)]
        y = lib.nn.functional.conv2d(*ts, 2, 1)
        assert type(y.grad_fn).__name__ == "ConvolutionBackward0"
        assert tuple(y.grad_fn._saved_stride) == (2, 2) and tuple(y.grad_fn._saved_padding) == (1, 1)
        gy = lib.tensor(_rng(*y.shape, seed=3), requires_grad=True)
        gs = lib.autograd.grad(y, ts, gy, create_graph=True)
        assert type(gs[0].grad_fn).__name__ == "ConvolutionBackwardBackward0"
        s = (gs[0] * gs[0]).sum() + (gs[1] * gs[1]).sum() + (gs[2] * gs[2]).sum()
        res.append([t.detach() for t in gs] + list(lib.autograd.grad(s, ts[:2] + [gy])))
    for i, (a, b) in enumerate(zip(res[1], res[0])):
        _close(a, b, 2e-4, f"{i}")


# ------------------------------------------------------------------------------------------- pooling
def _pool_input(kind, shape):
    x = _rng(*shape)
    if kind == "ties":
        x = np.round(x).astype(np.float32)          # many equal values in a window
    elif kind == "const":
        x = np.full(shape, 0.5, np.float32)
    elif kind == "-inf":
        x[..., ::3, :] = -np.inf
        x[0, 0] = -np.inf                           # a whole plane of -inf
    return x


@pytest.mark.parametrize("kind", ["normal", "ties", "const", "-inf"])
@pytest.mark.parametrize("geo", [dict(kernel_size=3, stride=2, padding=1), dict(kernel_size=2),
                                 dict(kernel_size=3, stride=2, ceil_mode=True),
                                 dict(kernel_size=(3, 2), stride=(1, 2), padding=(1, 1), dilation=(2, 1)),
                                 dict(kernel_size=3, stride=1, padding=1),
                                 dict(kernel_size=(2, 4), stride=(2, 3), padding=(0, 2), ceil_mode=True)], ids=str)
@pytest.mark.parametrize("width", [10, 75], ids=["short rows", "long rows"])
def test_max_pool2d(path, kind, geo, width):
    """Values, indices and gradient; short rows go through the compiled kernel as one grid per plane, long
    ones row by row."""
    x = _pool_input(kind, (3, 4, 11, width))
    res = []
    for lib in (torch, hookgrad):
        t = lib.tensor(x.copy(), requires_grad=True)
        y, idx = lib.nn.functional.max_pool2d(t, return_indices=True, **geo)
        assert type(y.grad_fn).__name__ == "MaxPool2DWithIndicesBackward0"
        y.backward(lib.tensor(_rng(*y.shape, seed=5)))
        res.append((y, idx, t.grad))
    _close(res[1][0], res[0][0], 0, "out")
    np.testing.assert_array_equal(_np(res[1][1]), _np(res[0][1]))
    _close(res[1][2], res[0][2], 1e-6, "grad")


def test_max_pool2d_nan(path):
    x = _rng(2, 3, 9, 9)
    x[0, 1, 2, 2], x[1, 2, 4, 5], x[1, 2, 4, 6] = np.nan, np.nan, np.nan
    res = []
    for lib in (torch, hookgrad):
        t = lib.tensor(x.copy(), requires_grad=True)
        y, idx = lib.nn.functional.max_pool2d(t, 3, 2, 1, return_indices=True)
        y.backward(lib.ones(y.shape))
        res.append((y, idx, t.grad))
    _close(res[1][0], res[0][0], 0, "out")
    np.testing.assert_array_equal(_np(res[1][1]), _np(res[0][1]))
    _close(res[1][2], res[0][2], 0, "grad")


@pytest.mark.parametrize("shape", [(4, 8, 64, 64), (1, 2, 5, 7), (9, 3, 16, 16), (0, 3, 8, 8), (3, 16, 16)], ids=str)
def test_max_pool2d_sizes_blocks_and_views(path, shape):
    """Sizes across the pool's chunking and the cache blocks, unbatched, empty, a non-contiguous input."""
    x = _rng(*shape)
    _check(_run(lambda L, x: L.nn.functional.max_pool2d(x, 3, 2, 1), [x]), tol=1e-6)
    _check(_run(lambda L, x: L.nn.functional.max_pool2d(x, 2), [x], views=[lambda t: t.transpose(-1, -2)]), tol=1e-6)


def test_max_pool2d_second_order(path):
    x = _rng(2, 3, 8, 8)
    res = []
    for lib in (torch, hookgrad):
        t = lib.tensor(x.copy(), requires_grad=True)
        y = lib.nn.functional.max_pool2d(t, 3, 2, 1)
        gy = lib.tensor(_rng(*y.shape, seed=3), requires_grad=True)
        (gx,) = lib.autograd.grad(y, t, gy, create_graph=True)
        res.append(lib.autograd.grad((gx * gx).sum(), gy)[0])
    _close(res[1], res[0], 1e-6)


@pytest.mark.parametrize("geo", [dict(kernel_size=3, stride=2, padding=1), dict(kernel_size=2),
                                 dict(kernel_size=3, stride=3, padding=1, ceil_mode=True)], ids=str)
def test_avg_pool2d(path, geo):
    _check(_run(lambda L, x: L.nn.functional.avg_pool2d(x, **geo), [_rng(5, 4, 17, 16)]), tol=1e-5)
