"""Convolutions in 3-d and the transposed 1-d/3-d forms against torch: F.conv3d, F.conv_transpose1d/3d,
torch.conv3d/conv_transpose3d/convolution, the Conv3d/ConvTranspose3d layers (and their lazy forms) with
every padding mode, groups, dilation and output_padding: values, every gradient, second order, grad_fn
names and saved geometry, manual_seed initialisation, state_dict keys, and PyTorch's errors."""
import numpy as np
import pytest
import torch

import hookgrad
from oracle import check


def rn(*shape, seed=0):
    return np.random.default_rng(seed + len(shape) + sum(shape)).standard_normal(shape)


def F(L):
    return L.nn.functional


CONV3D = [{}, {"stride": 2}, {"padding": 1}, {"dilation": 2, "padding": (1, 0, 2)}, {"groups": 2, "stride": (1, 2, 1)},
          {"padding": "same", "dilation": (1, 2, 1)}, {"padding": "valid"}]


@pytest.mark.parametrize("kw", CONV3D, ids=str)
def test_conv3d(kw):
    g = kw.get("groups", 1)
    check(lambda L, x, w, b: F(L).conv3d(x, w, b, **kw), rn(2, 4, 5, 6, 5), rn(6, 4 // g, 3, 2, 3), rn(6),
          second=True)


CONVT = [{}, {"stride": 2}, {"padding": 1, "stride": 2, "output_padding": 1}, {"dilation": 2, "padding": 2},
         {"groups": 2, "stride": (1, 2, 3), "output_padding": (0, 1, 2)}]


@pytest.mark.parametrize("kw", CONVT, ids=str)
def test_conv_transpose3d(kw):
    g = kw.get("groups", 1)
    check(lambda L, x, w, b: F(L).conv_transpose3d(x, w, b, **kw), rn(2, 4, 3, 4, 3), rn(4, 3, 3, 2, 3),
          rn(3 * g), second=True)


@pytest.mark.parametrize("kw", CONVT, ids=str)
def test_conv_transpose1d(kw):
    kw = {k: (v[-1] if isinstance(v, tuple) else v) for k, v in kw.items()}
    g = kw.get("groups", 1)
    check(lambda L, x, w, b: F(L).conv_transpose1d(x, w, b, **kw), rn(2, 4, 7), rn(4, 3, 3), rn(3 * g), second=True)


def test_unbatched_float32_and_top_level_names():
    x, w = rn(4, 5, 4, 6).astype(np.float32), rn(3, 4, 2, 2, 3).astype(np.float32)
    check(lambda L, x, w: L.conv3d(x, w, None, 1, 1), x, w)
    check(lambda L, x, w: L.conv_transpose3d(x, w, stride=2), rn(3, 2, 3, 2).astype(np.float32), w)
    check(lambda L, x, w: L.convolution(x, w, None, [1, 2, 1], [0, 1, 0], [1, 1, 1], False, [0, 0, 0], 1),
          x[None], w)
    check(lambda L, x, w: L.convolution(x, w, None, [2, 1, 1], [0, 0, 0], [1, 1, 1], True, [1, 0, 0], 1),
          rn(1, 3, 2, 3, 2).astype(np.float32), w)


def test_grad_fn_names_and_saved_geometry():
    for nd, fn in ((3, lambda L, x, w: F(L).conv3d(x, w, stride=(1, 2, 1), padding=1)),
                   (1, lambda L, x, w: F(L).conv_transpose1d(x, w, stride=2, output_padding=1)),
                   (1, lambda L, x, w: F(L).conv1d(x, w, stride=2))):
        got = []
        for L in (torch, hookgrad):
            x = L.tensor(rn(*(1, 2) + (4,) * nd), requires_grad=True)
            w = L.tensor(rn(*(2, 2) + (2,) * nd), requires_grad=True)
            y = fn(L, x, w)
            gx, = L.autograd.grad(y.sum(), x, create_graph=True)
            node = y.grad_fn
            got.append((node.name(), gx.grad_fn.name(), tuple(node._saved_stride), tuple(node._saved_padding),
                        tuple(node._saved_dilation), node._saved_transposed, tuple(node._saved_output_padding)))
        assert got[1] == got[0]


MODULES = [("Conv3d", (4, 6, 3), {"padding": 1}), ("Conv3d", (4, 6, (3, 2, 1)), {"padding_mode": "reflect", "padding": 1,
                                                                                  "groups": 2}),
           ("Conv3d", (4, 6, 3), {"padding_mode": "circular", "padding": (1, 2, 1)}),
           ("Conv3d", (4, 6, 3), {"padding_mode": "replicate", "padding": "same", "dilation": (1, 2, 1)}),
           ("Conv3d", (4, 6, 2), {"bias": False, "stride": 2}),
           ("ConvTranspose3d", (4, 6, 3), {"stride": 2, "output_padding": 1, "padding": 1}),
           ("ConvTranspose3d", (4, 6, (1, 2, 3)), {"groups": 2, "dilation": (2, 1, 1), "bias": False}),
           ("ConvTranspose1d", (4, 6, 3), {"stride": 2, "output_padding": 1, "padding": 1, "groups": 2})]


@pytest.mark.parametrize("name,args,kw", MODULES, ids=str)
def test_module_init_state_dict_and_forward(name, args, kw):
    mods = []
    for L in (torch, hookgrad):
        L.manual_seed(0)
        mods.append(getattr(L.nn, name)(*args, **kw).double())
    t, h = mods
    assert list(h.state_dict()) == list(t.state_dict())
    for k, v in t.state_dict().items():
        np.testing.assert_allclose(h.state_dict()[k].numpy(), v.numpy(), rtol=1e-6, atol=1e-7)
    assert repr(h) == repr(t)
    h.load_state_dict({k: hookgrad.tensor(v.numpy()) for k, v in t.state_dict().items()})     # exact weights
    x = rn(2, 4, 5, 6, 5) if "3d" in name else rn(2, 4, 7)
    res = []
    for L, m in zip((torch, hookgrad), mods):
        xt = L.tensor(x, requires_grad=True)
        y = m(xt)
        y.square().sum().backward()
        res.append([y.detach().numpy(), xt.grad.numpy()] + [p.grad.numpy() for p in m.parameters()])
    for a, b in zip(*res):
        np.testing.assert_allclose(b, a, rtol=1e-9, atol=1e-9)


def test_module_output_size_and_lazy():
    for L in (torch, hookgrad):
        m = L.nn.ConvTranspose3d(2, 3, 3, stride=2)
        assert tuple(m(L.ones(1, 2, 3, 3, 3), output_size=[8, 7, 8]).shape) == (1, 3, 8, 7, 8)
    outs = []
    for L in (torch, hookgrad):
        L.manual_seed(0)
        a, b = L.nn.LazyConv3d(5, 3), L.nn.LazyConvTranspose3d(4, 2, stride=2)
        y = b(a(L.ones(2, 3, 4, 4, 4)))
        outs.append((type(a).__name__, type(b).__name__, tuple(a.weight.shape), tuple(b.weight.shape),
                     y.detach().numpy()))
    assert outs[0][:4] == outs[1][:4]
    np.testing.assert_allclose(outs[1][4], outs[0][4], rtol=1e-5, atol=1e-6)


def _err(fn):
    out = []
    for L in (torch, hookgrad):
        with pytest.raises(Exception) as e:
            fn(L)
        out.append((type(e.value), str(e.value).split(" (hookgrad")[0]))
    assert out[1] == out[0]


BAD = [lambda L: F(L).conv3d(L.ones(2, 4, 4, 4, 4, 4), L.ones(3, 2, 2, 2, 2)),
       lambda L: F(L).conv3d(L.ones(2, 4, 4), L.ones(3, 2, 2, 2, 2)),
       lambda L: F(L).conv3d(L.ones(1, 2, 4, 4, 4), L.ones(3, 2, 5, 2, 2)),
       lambda L: F(L).conv3d(L.ones(1, 2, 4, 4, 4), L.ones(3, 3, 2, 2, 2)),
       lambda L: F(L).conv3d(L.ones(1, 2, 4, 4, 4), L.ones(3, 2, 2, 2, 2), stride=0),
       lambda L: F(L).conv3d(L.ones(1, 2, 4, 4, 4), L.ones(3, 2, 2, 2, 2), stride=(1, 2)),
       lambda L: F(L).conv3d(L.ones(1, 2, 4, 4, 4), L.ones(3, 2, 2, 2, 2), padding=-1),
       lambda L: F(L).conv3d(L.ones(1, 2, 4, 4, 4), L.ones(3, 2, 2, 2, 2), padding="same", stride=2),
       lambda L: F(L).conv3d(L.ones(1, 2, 4, 4, 4), L.ones(3, 1, 2, 2, 2), groups=2),
       lambda L: F(L).conv3d(L.ones(1, 2, 4, 4, 4), L.ones(3, 2, 2, 2, 2), L.ones(4)),
       lambda L: F(L).conv3d(L.ones(1, 2, 4, 4, 4), L.ones(3, 2, 2, 2, 2), dilation=(1, 0, 1)),
       lambda L: F(L).conv3d(L.ones(1, 2, 4, 4, 4, dtype=L.float64), L.ones(3, 2, 2, 2, 2)),
       lambda L: F(L).conv_transpose3d(L.ones(1, 2, 4, 4, 4), L.ones(2, 3, 2, 2, 2), stride=2, output_padding=(2, 1, 0)),
       lambda L: F(L).conv_transpose1d(L.ones(1, 2, 4), L.ones(2, 3, 2), stride=2, output_padding=2),
       lambda L: F(L).conv_transpose3d(L.ones(1, 2, 4, 4, 4), L.ones(2, 3, 2, 2, 2), padding=3),
       lambda L: F(L).conv_transpose3d(L.ones(1, 2, 4, 4, 4), L.ones(3, 3, 2, 2, 2)),
       lambda L: F(L).conv_transpose3d(L.ones(1, 2, 4, 4, 4), L.ones(2, 2, 2, 2, 2), dilation=(1, 0, 2)),
       lambda L: L.nn.Conv3d(3, 4, 2, groups=2),
       lambda L: L.nn.ConvTranspose3d(3, 4, 2, padding_mode="reflect"),
       lambda L: L.nn.Conv3d(3, 4, 2, padding="same", stride=2)]


@pytest.mark.parametrize("fn", BAD)
def test_errors(fn):
    _err(fn)
