"""CTCLoss / F.ctc_loss / torch.ctc_loss against torch: values and the alpha-beta gradient for every reduction,
blank, zero_infinity, padded and concatenated targets, batched and unbatched input; errors; no double backward."""
import numpy as np
import pytest
import torch

import hookgrad
from oracle import check

rng = np.random.default_rng(0)
LP = rng.standard_normal((6, 3, 5))
LP = LP - np.log(np.exp(LP).sum(-1, keepdims=True))
TG = np.array([[1, 2, 2], [3, 4, 1], [1, 1, 1]])


def _targets(blank):
    return np.where(TG == blank, 0 if blank else 3, TG)


@pytest.mark.parametrize("red", ["none", "mean", "sum"])
@pytest.mark.parametrize("zi", [False, True])
@pytest.mark.parametrize("blank", [0, 2])
def test_ctc_matches_torch(red, zi, blank):
    tg = _targets(blank)
    kw = dict(blank=blank, reduction=red, zero_infinity=zi)
    # padded targets; input length 2 cannot hold target "1 1 1" (infinite loss)
    t, h = check(lambda L, a: L.nn.functional.ctc_loss(a, L.tensor(tg), [6, 5, 2], [3, 2, 3], **kw), LP)
    assert t[0].grad_fn.name() == h[0].grad_fn.name()
    # concatenated 1-D targets with tensor lengths
    check(lambda L, a: L.nn.functional.ctc_loss(a, L.tensor(tg[:, :2].reshape(-1)), L.tensor([6, 4, 3]),
                                                L.tensor([2, 2, 2]), **kw), LP)
    # unbatched (T, C) input
    t, h = check(lambda L, a: L.nn.functional.ctc_loss(a[:, 0], L.tensor(tg[0]), L.tensor(5), L.tensor(3), **kw), LP)
    if red == "none":       # (hookgrad's squeeze of a 0-d tensor records no SqueezeBackward1)
        assert t[0].grad_fn.name() == h[0].grad_fn.name()
    # empty targets
    check(lambda L, a: L.nn.functional.ctc_loss(a, L.tensor(tg), [6, 5, 4], [0, 1, 2], **kw), LP)


def test_ctc_module_top_level_and_float32():
    check(lambda L, a: L.nn.CTCLoss(blank=4, reduction="sum")(a, L.tensor(_targets(4)), [6, 5, 4], [3, 2, 2]), LP)
    check(lambda L, a: L.ctc_loss(a, L.tensor(TG), [6, 5, 4], [3, 2, 2], 0, 0, False), LP)
    check(lambda L, a: L.nn.functional.ctc_loss(a.float(), L.tensor(TG).int(), [6, 5, 3], [3, 2, 1]), LP,
          tol=(1e-4, 1e-6))


def test_ctc_has_no_double_backward():
    names = []
    for L in (torch, hookgrad):
        a = L.tensor(LP, requires_grad=True)
        (g,) = L.autograd.grad(L.nn.functional.ctc_loss(a, L.tensor(TG), [6, 5, 4], [3, 2, 2]), a, create_graph=True)
        names.append(g.grad_fn.name())
        with pytest.raises(RuntimeError, match=r"derivative for aten::_ctc_loss_backward is not implemented"):
            g.sum().backward()
    assert names[0] == names[1]


BAD = [
    lambda L, a: L.nn.functional.ctc_loss(a, L.tensor(TG), [6, 5, 4], [3, 2, 2], blank=5),
    lambda L, a: L.nn.functional.ctc_loss(a, L.tensor(TG), [6, 5, 4], [3, 2]),
    lambda L, a: L.nn.functional.ctc_loss(a, L.tensor(TG), [6, 5], [3, 2, 2]),
    lambda L, a: L.nn.functional.ctc_loss(a, L.tensor(TG), [7, 5, 4], [3, 2, 2]),
    lambda L, a: L.nn.functional.ctc_loss(a, L.tensor(TG), [6, 5, 4], [4, 2, 2]),
    lambda L, a: L.nn.functional.ctc_loss(a, L.tensor(TG), [6, 5, 4], [-1, 2, 2]),
    lambda L, a: L.nn.functional.ctc_loss(a, L.tensor([1, 2, 3]), [6, 5, 4], [1, 1, 2]),
    lambda L, a: L.nn.functional.ctc_loss(a, L.tensor(TG), L.tensor([6.0, 5, 4]), L.tensor([3, 2, 2])),
    lambda L, a: L.nn.functional.ctc_loss(a, L.tensor(TG), [6, 5, 4], [3, 2, 2], reduction="bad"),
    lambda L, a: L.nn.functional.ctc_loss(a[None], L.tensor(TG), [6, 5, 4], [3, 2, 2]),
]


@pytest.mark.parametrize("k", range(len(BAD)))
def test_ctc_bad_input(k):
    got = []
    for L in (torch, hookgrad):
        with pytest.raises(Exception) as e:
            BAD[k](L, L.tensor(LP))
        got.append((e.type.__name__, str(e.value)))
    assert got[0] == got[1]
