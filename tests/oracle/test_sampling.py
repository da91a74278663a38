"""F.interpolate / nn.Upsample in every mode, F.grid_sample and F.affine_grid against torch: values, dtypes,
every gradient, second order, grad_fn names, and torch's errors."""
import warnings

import numpy as np
import pytest
import torch

import hookgrad
from oracle import check

R = np.random.default_rng(0)
MODES = [("nearest", 1), ("nearest", 2), ("nearest", 3), ("nearest-exact", 1), ("nearest-exact", 2),
         ("nearest-exact", 3), ("linear", 1), ("bilinear", 2), ("bicubic", 2), ("trilinear", 3), ("area", 1),
         ("area", 2), ("area", 3)]
SHAPE = {1: (2, 2, 5), 2: (1, 2, 4, 5), 3: (1, 2, 3, 4, 3)}


def _names(fn, x):
    return [fn(L, L.tensor(x, requires_grad=True)).grad_fn.name() for L in (torch, hookgrad)]


@pytest.mark.parametrize("mode,n", MODES)
@pytest.mark.parametrize("how", [dict(size=7), dict(scale_factor=2.0), dict(scale_factor=1.7),
                                 dict(scale_factor=0.6, recompute_scale_factor=True), dict(scale_factor=1.1),
                                 dict(size=1)])
def test_interpolate(mode, n, how):
    x = R.standard_normal(SHAPE[n])
    for ac in ([None] if mode in ("nearest", "nearest-exact", "area") else [False, True]):
        def fn(L, t):
            return L.nn.functional.interpolate(t, mode=mode, align_corners=ac, **how)
        check(fn, x, second=True)
        check(fn, x.astype(np.float32))
        a, b = _names(fn, x)
        assert a == b


@pytest.mark.parametrize("mode", ["bilinear", "bicubic", "lanczos"])
@pytest.mark.parametrize("how", [dict(size=(2, 3)), dict(scale_factor=0.45), dict(size=(6, 9))])
def test_interpolate_antialias(mode, how):
    x = R.standard_normal((1, 2, 5, 7))
    for ac in ([False, True] if mode != "lanczos" else [False]):
        def fn(L, t):
            return L.nn.functional.interpolate(t, mode=mode, align_corners=ac, antialias=True, **how)
        check(fn, x, second=True)
        check(fn, x.astype(np.float32))
        a, b = _names(fn, x)
        assert a == b


@pytest.mark.parametrize("mode", ["nearest", "nearest-exact", "bilinear", "bicubic"])
def test_interpolate_uint8(mode):
    x = R.integers(0, 256, (1, 2, 5, 6)).astype(np.uint8)
    a = torch.nn.functional.interpolate(torch.tensor(x), scale_factor=2, mode=mode).numpy()
    b = hookgrad.nn.functional.interpolate(hookgrad.tensor(x), scale_factor=2, mode=mode).numpy()
    assert b.dtype == np.uint8 and np.abs(a.astype(int) - b).max() <= 1


def test_upsample_modules():
    x = R.standard_normal((1, 2, 3, 4))
    for make in (lambda nn: nn.Upsample(scale_factor=2, mode="bicubic"), lambda nn: nn.Upsample(size=(5, 6)),
                 lambda nn: nn.UpsamplingBilinear2d(scale_factor=2), lambda nn: nn.UpsamplingNearest2d(size=5)):
        check(lambda L, t: make(L.nn)(t), x)
        assert repr(make(torch.nn)) == repr(make(hookgrad.nn))


def _raises(fn, *args):
    errs = []
    for L in (torch, hookgrad):
        with pytest.raises(Exception) as e:
            fn(L, *[L.tensor(a) for a in args])
        errs.append((type(e.value), str(e.value)))
    assert errs[0] == errs[1]


@pytest.mark.parametrize("kw", [dict(scale_factor=2, mode="bilinear", antialias=True, shape=(1, 2, 3)),
                                dict(size=4, scale_factor=2), dict(size=(4, 5), recompute_scale_factor=True),
                                dict(scale_factor=2, mode="foo"), dict(scale_factor=2, mode="bilinear", shape=(1, 2, 3)),
                                dict(scale_factor=2, mode="linear"), dict(scale_factor=0.5, mode="lanczos"),
                                dict(scale_factor=-1, mode="bilinear"), dict(size=(2.5, 3), mode="bilinear"),
                                dict(scale_factor=2, mode="nearest", align_corners=True), dict(),
                                dict(scale_factor=2, mode="bicubic", dtype=np.int64),
                                dict(scale_factor=2, mode="nearest", dtype=np.int64), dict(size=(3,)),
                                dict(scale_factor=(2, 2, 2))])
def test_interpolate_errors(kw):
    kw = dict(kw)
    x = R.standard_normal(kw.pop("shape", (1, 2, 4, 5))).astype(kw.pop("dtype", np.float32))
    _raises(lambda L, t: L.nn.functional.interpolate(t, **kw), x)


# ------------------------------------------------------------------------------ grid_sample
@pytest.mark.parametrize("n,mode", [(2, "bilinear"), (2, "nearest"), (2, "bicubic"), (3, "bilinear"), (3, "nearest")])
@pytest.mark.parametrize("pad", ["zeros", "border", "reflection"])
@pytest.mark.parametrize("ac", [False, True])
def test_grid_sample(n, mode, pad, ac):
    x = R.standard_normal((2, 2) + ((4, 5) if n == 2 else (3, 4, 5)))
    g = R.uniform(-2.2, 2.2, (2,) + ((3, 4) if n == 2 else (2, 3, 2)) + (n,))

    def fn(L, a, b):
        return L.nn.functional.grid_sample(a, b, mode=mode, padding_mode=pad, align_corners=ac)
    check(fn, x, g, second=True)
    check(fn, x.astype(np.float32), g.astype(np.float32))
    names = [fn(L, L.tensor(x, requires_grad=True), L.tensor(g)).grad_fn.name() for L in (torch, hookgrad)]
    assert names[0] == names[1]


def test_grid_sampler_top_level_and_constants():
    x, g = R.standard_normal((1, 2, 4, 5)), R.uniform(-1, 1, (1, 3, 3, 2))
    check(lambda L, a, b: L.grid_sampler(a, b, 2, 1, False), x, g)
    check(lambda L, a, b: L.grid_sampler_2d(a, b, 0, 2, True), x, g)
    x3, g3 = R.standard_normal((1, 2, 3, 4, 5)), R.uniform(-1, 1, (1, 2, 2, 2, 3))
    check(lambda L, a, b: L.grid_sampler_3d(a, b, 0, 0, False), x3, g3)
    assert hookgrad.nn.functional.GRID_SAMPLE_INTERPOLATION_MODES == torch.nn.functional.GRID_SAMPLE_INTERPOLATION_MODES
    assert hookgrad.nn.functional.GRID_SAMPLE_PADDING_MODES == torch.nn.functional.GRID_SAMPLE_PADDING_MODES


@pytest.mark.parametrize("case", [((1, 2, 4, 5), (1, 3, 3, 1), {}),
                                  ((1, 2, 4, 5), (2, 3, 3, 2), {}), ((1, 2, 3, 4, 5), (1, 2, 2, 2, 3),
                                                                     {"mode": "bicubic"}),
                                  ((1, 2, 4, 5), (1, 3, 3, 2), {"mode": "area"}),
                                  ((1, 2, 4, 5), (1, 3, 3, 2), {"padding_mode": "wrap"}),
                                  ((1, 2, 0, 5), (1, 3, 3, 2), {})])
def test_grid_sample_errors(case):
    xs, gs, kw = case
    _raises(lambda L, a, b: L.nn.functional.grid_sample(a, b, align_corners=False, **kw),
            R.standard_normal(xs).astype(np.float32), R.standard_normal(gs).astype(np.float32))


def test_grid_sample_dtype_errors():
    _raises(lambda L, a, b: L.nn.functional.grid_sample(a, b, align_corners=False), R.standard_normal((1, 2, 4, 5)),
            R.standard_normal((1, 3, 3, 2)).astype(np.float32))
    _raises(lambda L, a, b: L.grid_sampler(a, b, 0, 0, False), np.ones((1, 2, 4, 5), np.int64),
            np.ones((1, 3, 3, 2), np.int64))


# ------------------------------------------------------------------------------ affine_grid
@pytest.mark.parametrize("size", [(2, 1, 3, 4), (2, 3, 2, 3, 4), (2, 1, 1, 3)])
@pytest.mark.parametrize("ac", [False, True])
def test_affine_grid(size, ac):
    th = R.standard_normal((2, len(size) - 2, len(size) - 1))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        check(lambda L, t: L.nn.functional.affine_grid(t, size, align_corners=ac), th, second=True)
        check(lambda L, t: L.nn.functional.affine_grid(t, size, align_corners=ac), th.astype(np.float32))
        a, b = _names(lambda L, t: L.nn.functional.affine_grid(t, size, align_corners=ac), th)
    assert a == b


@pytest.mark.parametrize("case", [((1, 2, 3), (1, 1, 3)), ((1, 3, 4), (1, 1, 3, 3)), ((1, 2, 3), (1, 1, 0, 3)),
                                  ((1, 2, 2), (1, 1, 3, 3))])
def test_affine_grid_errors(case):
    ts, size = case
    _raises(lambda L, t: L.nn.functional.affine_grid(t, size, align_corners=False), R.standard_normal(ts))
    _raises(lambda L, t: L.nn.functional.affine_grid(t, (1, 1, 3, 3), align_corners=False), np.ones((1, 2, 3), int))


@pytest.mark.parametrize("shape,r", [((1, 8, 2, 3), 2), ((2, 3, 18, 2, 2), 3), ((8, 2, 2), 2)])
def test_pixel_shuffle_nodes(shape, r):
    """PixelShuffleBackward0 / PixelUnshuffleBackward0, each the other's gradient, as in PyTorch."""
    x = np.random.default_rng(0).standard_normal(shape)
    check(lambda L, t: L.nn.functional.pixel_shuffle(t, r), x, second=True)
    check(lambda L, t: L.nn.functional.pixel_unshuffle(L.nn.functional.pixel_shuffle(t, r) * 2, r), x, second=True)
    names = []
    for L in (torch, hookgrad):
        t = L.tensor(x, requires_grad=True)
        y = L.pixel_shuffle(t, r)
        g, = L.autograd.grad((y * y).sum(), t, create_graph=True)
        names.append((y.grad_fn.name(), y.grad_fn._saved_upscale_factor, g.grad_fn.name(),
                      L.pixel_unshuffle(y, r).grad_fn._saved_downscale_factor))
    assert names[0] == names[1]
