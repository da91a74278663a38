"""The padding modules (Zero/Constant/Reflection/Replication/Circular, 1-d to 3-d) and the shape layers Fold,
Unfold, ChannelShuffle, PixelShuffle, PixelUnshuffle against torch: values, gradients, second order, grad_fn
names, reprs and torch's errors for bad sizes."""
import numpy as np
import pytest
import torch

import hookgrad
from oracle import check

R = np.random.default_rng(0)
FAMILIES = ["ReflectionPad", "ReplicationPad", "CircularPad", "ZeroPad", "ConstantPad"]
SHAPES = {1: [(2, 5), (1, 2, 5)], 2: [(2, 4, 5), (1, 2, 4, 5)], 3: [(1, 3, 4, 5), (1, 2, 3, 4, 5)]}


def _make(nn, fam, n, pad):
    cls = getattr(nn, f"{fam}{n}d")
    return cls(pad, 1.5) if fam == "ConstantPad" else cls(pad)


@pytest.mark.parametrize("fam", FAMILIES)
@pytest.mark.parametrize("n", [1, 2, 3])
@pytest.mark.parametrize("pad", [2, "tuple"])
def test_padding_module(fam, n, pad):
    pad = tuple(range(1, 2 * n + 1)) if pad == "tuple" else pad
    pad = tuple(min(p, 2) for p in pad) if isinstance(pad, tuple) else pad
    for shape in SHAPES[n]:
        x = R.standard_normal(shape)
        check(lambda L, t: _make(L.nn, fam, n, pad)(t), x, second=True)
        names = [_make(L.nn, fam, n, pad)(L.tensor(x, requires_grad=True)).grad_fn.name() for L in (torch, hookgrad)]
        assert names[0] == names[1]
    assert repr(_make(torch.nn, fam, n, pad)) == repr(_make(hookgrad.nn, fam, n, pad))


def _same_error(fn, x):
    errs = []
    for L in (torch, hookgrad):
        with pytest.raises(Exception) as e:
            fn(L, L.tensor(x))
        errs.append((type(e.value), str(e.value).split(" (hookgrad")[0]))
    assert errs[0] == errs[1]


@pytest.mark.parametrize("fam,n,pad,shape", [("ReflectionPad", 1, 5, (1, 2, 5)), ("ReflectionPad", 2, 1, (2, 4)),
                                             ("CircularPad", 1, 6, (1, 2, 5)), ("ReplicationPad", 3, 1, (2, 3)),
                                             ("ReflectionPad", 3, 3, (1, 2, 3, 4, 5)),
                                             ("ReplicationPad", 2, -3, (1, 2, 2, 2))])
def test_padding_errors(fam, n, pad, shape):
    _same_error(lambda L, t: _make(L.nn, fam, n, pad)(t), R.standard_normal(shape).astype(np.float32))


# ------------------------------------------------------------------------------ Fold / Unfold
@pytest.mark.parametrize("kw", [dict(kernel_size=2), dict(kernel_size=(2, 3), dilation=(1, 2), padding=1, stride=2)])
def test_unfold_fold_modules(kw):
    x = R.standard_normal((2, 3, 5, 6))
    check(lambda L, t: L.nn.Unfold(**kw)(t), x, second=True)
    cols = torch.nn.Unfold(**kw)(torch.tensor(x)).numpy()
    check(lambda L, t: L.nn.Fold((5, 6), **kw)(t), cols, second=True)
    check(lambda L, t: L.nn.Fold((5, 6), **kw)(t), cols[0])
    assert repr(torch.nn.Unfold(**kw)) == repr(hookgrad.nn.Unfold(**kw))
    assert repr(torch.nn.Fold(5, **kw)) == repr(hookgrad.nn.Fold(5, **kw))
    names = [L.nn.Unfold(**kw)(L.tensor(x, requires_grad=True)).grad_fn.name() for L in (torch, hookgrad)]
    assert names[0] == names[1]


def test_fold_errors():
    _same_error(lambda L, t: L.nn.Fold(4, 2)(t), R.standard_normal((1, 5, 9)).astype(np.float32))
    _same_error(lambda L, t: L.nn.Fold(4, 2)(t), R.standard_normal((1, 8, 8)).astype(np.float32))
    _same_error(lambda L, t: L.nn.Unfold(2)(t), R.standard_normal((5, 6)).astype(np.float32))


# ------------------------------------------------------------------------------ shuffles
@pytest.mark.parametrize("shape,groups", [((2, 6, 3), 2), ((1, 6, 2, 2), 3), ((2, 4, 1, 2, 2), 4)])
def test_channel_shuffle(shape, groups):
    x = R.standard_normal(shape)
    for fn in (lambda L, t: L.nn.ChannelShuffle(groups)(t), lambda L, t: L.channel_shuffle(t, groups),
               lambda L, t: L.nn.functional.channel_shuffle(t, groups)):
        check(fn, x, second=True)
        names = [fn(L, L.tensor(x, requires_grad=True)).grad_fn.name() for L in (torch, hookgrad)]
        assert names[0] == names[1] == "ChannelShuffleBackward0"
    assert repr(torch.nn.ChannelShuffle(groups)) == repr(hookgrad.nn.ChannelShuffle(groups))


@pytest.mark.parametrize("case", [((2, 5, 3), 2), ((2, 6), 2), ((2, 6, 3), 0)])
def test_channel_shuffle_errors(case):
    shape, groups = case
    _same_error(lambda L, t: L.nn.ChannelShuffle(groups)(t), R.standard_normal(shape).astype(np.float32))


def test_pixel_shuffle_modules():
    x = R.standard_normal((2, 8, 3, 2))
    check(lambda L, t: L.nn.PixelShuffle(2)(t), x, second=True)
    check(lambda L, t: L.nn.PixelUnshuffle(2)(t), R.standard_normal((1, 2, 4, 6)), second=True)
    assert repr(torch.nn.PixelShuffle(2)) == repr(hookgrad.nn.PixelShuffle(2))
    _same_error(lambda L, t: L.nn.PixelShuffle(2)(t), R.standard_normal((1, 6, 2, 2)).astype(np.float32))
    _same_error(lambda L, t: L.nn.PixelUnshuffle(2)(t), R.standard_normal((1, 6, 3, 2)).astype(np.float32))
