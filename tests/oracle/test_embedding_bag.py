"""EmbeddingBag / F.embedding_bag / torch.embedding_bag against torch: every mode, offsets, include_last_offset,
2-D input, per_sample_weights, padding_idx, max_norm, the module's init, repr and from_pretrained, errors and
the missing double backward."""
import numpy as np
import pytest
import torch

import hookgrad
from oracle import assert_same, check

rng = np.random.default_rng(0)
W = rng.standard_normal((10, 3))
PSW = rng.random(6)
IDX = np.array([1, 2, 4, 5, 4, 3])
OFF = np.array([0, 2, 2])       # the middle bag is empty


@pytest.mark.parametrize("mode", ["sum", "mean", "max"])
@pytest.mark.parametrize("pad", [None, 4, -6])
def test_embedding_bag_matches_torch(mode, pad):
    t, h = check(lambda L, w: L.nn.functional.embedding_bag(L.tensor(IDX), w, L.tensor(OFF), mode=mode,
                                                           padding_idx=pad), W)
    assert t[0].grad_fn.name() == h[0].grad_fn.name()
    check(lambda L, w: L.nn.functional.embedding_bag(L.tensor(IDX), w, L.tensor([0, 2, 6]), mode=mode,
                                                     padding_idx=pad, include_last_offset=True), W)
    check(lambda L, w: L.nn.functional.embedding_bag(L.tensor(IDX.reshape(2, 3)).int(), w, mode=mode,
                                                     padding_idx=pad), W)


@pytest.mark.parametrize("pad", [None, 2])
def test_per_sample_weights(pad):
    check(lambda L, w, p: L.nn.functional.embedding_bag(L.tensor(IDX), w, L.tensor(OFF), mode="sum",
                                                        per_sample_weights=p, padding_idx=pad), W, PSW)
    check(lambda L, w, p: L.nn.functional.embedding_bag(L.tensor(IDX.reshape(2, 3)), w, mode="sum",
                                                        per_sample_weights=p.reshape(2, 3)), W, PSW)


def test_top_level_and_max_norm():
    check(lambda L, w: L.embedding_bag(w, L.tensor(IDX), L.tensor(OFF), False, 2, False, None, False, None)[0], W)

    def renorm(L, w):
        w2 = w.detach().clone()
        out = L.nn.functional.embedding_bag(L.tensor(IDX), w2, L.tensor(OFF), max_norm=0.8, norm_type=1.5)
        return out, w2
    check(renorm, W, grad=False)


def test_double_backward_raises_as_torch():
    got = []
    for L in (torch, hookgrad):
        w, p = L.tensor(W, requires_grad=True), L.tensor(PSW, requires_grad=True)
        out = L.nn.functional.embedding_bag(L.tensor(IDX), w, L.tensor(OFF), mode="sum", per_sample_weights=p)
        gw, gp = L.autograd.grad((out * out).sum(), [w, p], create_graph=True)
        row = [gw.grad_fn.name(), gp.grad_fn.name()]
        for g in (gw, gp):
            with pytest.raises((RuntimeError, NotImplementedError)) as e:
                g.sum().backward(retain_graph=True)
            row.append((e.type.__name__, str(e.value)))
        got.append(row)
        mean = L.nn.functional.embedding_bag(L.tensor(IDX), w, L.tensor(OFF))
        (g,) = L.autograd.grad(mean.sum(), w, create_graph=True)
        got.append(g.requires_grad)
    assert got[:2] == got[2:]


def test_module():
    got = []
    for L in (torch, hookgrad):
        L.manual_seed(0)
        m = L.nn.EmbeddingBag(10, 3, mode="max", padding_idx=-2, max_norm=2.0)
        f = L.nn.EmbeddingBag.from_pretrained(L.tensor(W), freeze=False, mode="sum", include_last_offset=True)
        got.append((m.weight, repr(m), list(m.state_dict()), m.padding_idx, repr(f), f.weight.requires_grad,
                    m(L.tensor(IDX.reshape(3, 2))), f(L.tensor(IDX), L.tensor([0, 3, 6]))))
    for a, b in zip(*got):
        assert_same(a.detach() if isinstance(a, torch.Tensor) else a, b.detach() if isinstance(b, hookgrad.Tensor)
                    else b)


BAD = [
    lambda L, w: L.nn.functional.embedding_bag(L.tensor(IDX), w, L.tensor(OFF), padding_idx=10),
    lambda L, w: L.nn.functional.embedding_bag(L.tensor([1, 2, 12]), w, L.tensor([0])),
    lambda L, w: L.nn.functional.embedding_bag(L.tensor(IDX), w, L.tensor([1, 2])),
    lambda L, w: L.nn.functional.embedding_bag(L.tensor(IDX), w, L.tensor([0, 7])),
    lambda L, w: L.nn.functional.embedding_bag(L.tensor(IDX).float(), w, L.tensor(OFF)),
    lambda L, w: L.nn.functional.embedding_bag(L.tensor(IDX), w, L.tensor(OFF), mode="max",
                                               per_sample_weights=L.ones(6, dtype=L.float64)),
    lambda L, w: L.nn.functional.embedding_bag(L.tensor(IDX), w, L.tensor(OFF), per_sample_weights=L.ones(5)),
    lambda L, w: L.nn.functional.embedding_bag(L.tensor(IDX), w, L.tensor(OFF), mode="bad"),
    lambda L, w: L.nn.functional.embedding_bag(L.tensor(IDX.reshape(2, 3)), w, L.tensor(OFF)),
    lambda L, w: L.nn.functional.embedding_bag(L.tensor(IDX), w),
    lambda L, w: L.nn.functional.embedding_bag(L.tensor(IDX), w[0], L.tensor(OFF)),
    lambda L, w: L.nn.functional.embedding_bag(L.tensor(IDX), w, L.tensor(OFF), mode="max", scale_grad_by_freq=True),
    lambda L, w: L.nn.EmbeddingBag(10, 3, padding_idx=10),
]


@pytest.mark.parametrize("k", range(len(BAD)))
def test_bad_input(k):
    got = []
    for L in (torch, hookgrad):
        with pytest.raises(Exception) as e:
            BAD[k](L, L.tensor(W))
        text = str(e.value).split(" (hookgrad")[0].splitlines()[0]
        got.append((e.type.__name__, text.replace("hookgrad._tensor.Tensor", "torch.Tensor")))
    assert got[0] == got[1]
