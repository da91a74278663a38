"""Gradient modifiers vs torch doing the same with plain torch hooks (or torch's own utilities) on the same weights."""
import numpy as np
import pytest
import torch

import hookgrad
from hookgrad.tools import modifiers as M

torch.set_num_threads(1)


def build(lib):
    nn = lib.nn
    return nn.Sequential(nn.Linear(5, 7), nn.Tanh(), nn.Sequential(nn.Linear(7, 6), nn.ReLU(), nn.Linear(6, 4)),
                         nn.Tanh(), nn.Linear(4, 3))


def pair():
    torch.manual_seed(1)
    tm = build(torch)
    hm = build(hookgrad)
    hm.load_state_dict({k: hookgrad.tensor(v.detach().numpy().copy()) for k, v in tm.state_dict().items()})
    return tm, hm


def run(lib, model, x, backward_times=1, scale=1.0):
    xt = lib.tensor(x, requires_grad=True)
    for _ in range(backward_times):
        ((model(xt) * scale) ** 2).sum().backward()
    return xt


def compare(tm, hm, tx, hx):
    tg = {n: p.grad for n, p in tm.named_parameters()}
    hg = {n: p.grad for n, p in hm.named_parameters()}
    assert sorted(tg) == sorted(hg)
    for n in tg:
        if tg[n] is None:
            assert hg[n] is None, f"{n}: torch .grad is None, hookgrad has one"
        else:
            assert hg[n] is not None, f"{n}: hookgrad .grad is None"
            np.testing.assert_allclose(hg[n].numpy(), tg[n].numpy(), rtol=1e-5, atol=1e-6, err_msg=n)
    np.testing.assert_allclose(hx.grad.numpy(), tx.grad.numpy(), rtol=1e-5, atol=1e-6, err_msg="input grad")


X = np.random.RandomState(3).randn(8, 5).astype(np.float32)


def test_scale_grad_parameters():
    tm, hm = pair()
    for p in tm[2].parameters():
        p.register_hook(lambda g: g * 0.25)
    h = M.scale_grad(hm[2], 0.25)
    compare(tm, hm, run(torch, tm, X), run(hookgrad, hm, X))
    h.remove()
    assert not any(p.hooks() for p in hm.parameters())


def test_scale_grad_input_and_tensor():
    tm, hm = pair()
    tm[2].register_full_backward_hook(lambda m, gi, go: tuple(None if g is None else g * -3.0 for g in gi))
    tm[4].weight.register_hook(lambda g: g * 10)
    M.scale_grad(hm[2], -3.0, where="input")
    M.scale_grad(hm[4].weight, 10)
    compare(tm, hm, run(torch, tm, X), run(hookgrad, hm, X))


def test_clip_grad_value_parameters_and_input():
    tm, hm = pair()
    for p in tm.parameters():
        p.register_hook(lambda g: g.clamp(-0.05, 0.05))
    tm[2].register_full_backward_hook(lambda m, gi, go: tuple(None if g is None else g.clamp(-0.02, 0.02) for g in gi))
    M.clip_grad_value(hm, 0.05)
    M.clip_grad_value(hm[2], 0.02, where="input")
    tx, hx = run(torch, tm, X, 2), run(hookgrad, hm, X, 2)
    compare(tm, hm, tx, hx)
    assert np.abs(hm[0].weight.grad.numpy()).max() <= 0.1 + 1e-7     # two clipped backwards accumulated


@pytest.mark.parametrize("norm_type", [2.0, 1.0, float("inf")])
def test_clip_grad_norm_module_equals_clip_grad_norm_after_each_backward(norm_type):
    tm, hm = pair()
    M.clip_grad_norm(hm, 0.5, norm_type)
    M.clip_grad_norm(hm[2], 0.1, norm_type)        # a second group inside the first
    xt = torch.tensor(X, requires_grad=True)
    for _ in range(2):                             # accumulation: clipped after each backward
        ((tm(xt) * 3) ** 2).sum().backward()
        torch.nn.utils.clip_grad_norm_(tm[2].parameters(), 0.1, norm_type)
        torch.nn.utils.clip_grad_norm_(tm.parameters(), 0.5, norm_type)
    hx = run(hookgrad, hm, X, 2, scale=3)
    compare(tm, hm, xt, hx)
    total = torch.nn.utils.get_total_norm([p.grad for p in tm.parameters()], norm_type)
    assert total <= 0.5 * 2 + 1e-5


def test_clip_grad_norm_input_and_nonleaf_tensor():
    tm, hm = pair()

    def tclip(gs, max_norm):
        total = torch.linalg.vector_norm(torch.stack([torch.linalg.vector_norm(g) for g in gs]))
        return (max_norm / (total + 1e-6)).clamp(max=1.0)
    tm[2].register_full_backward_hook(lambda m, gi, go: tuple(g * tclip([g], 0.3) for g in gi))
    xt = torch.tensor(X, requires_grad=True)
    t_mid = tm[1](tm[0](xt))
    t_mid.register_hook(lambda g: g * tclip([g], 0.7))
    (tm[4](tm[3](tm[2](t_mid))) ** 2).sum().backward()

    M.clip_grad_norm(hm[2], 0.3, where="input")
    hx = hookgrad.tensor(X, requires_grad=True)
    h_mid = hm[1](hm[0](hx))
    M.clip_grad_norm(h_mid, 0.7)
    (hm[4](hm[3](hm[2](h_mid))) ** 2).sum().backward()
    compare(tm, hm, xt, hx)


def test_freeze_equals_requires_grad_false():
    tm, hm = pair()
    run(torch, tm, X)                # both have a .grad from a first backward
    run(hookgrad, hm, X)
    for p in tm[2].parameters():
        p.requires_grad_(False)
    tm[0].bias.requires_grad_(False)
    tm[0].bias.grad = None
    hm[0].bias.grad = None
    h1 = M.freeze(hm[2])
    h2 = M.freeze(hm[0].bias)
    tx, hx = run(torch, tm, X * 2), run(hookgrad, hm, X * 2)
    compare(tm, hm, tx, hx)          # frozen: .grad unchanged (first backward's) or still None
    assert hm[0].bias.grad is None and all(p.requires_grad for p in hm.parameters())
    h1.remove(), h2.remove()
    for p in tm.parameters():
        p.requires_grad_(True)
    compare(tm, hm, run(torch, tm, X), run(hookgrad, hm, X))   # unfrozen: same again


def test_gradient_reversal_dann_style():
    tm, hm = pair()
    lam = 0.3
    tm[2].register_full_backward_hook(lambda m, gi, go: tuple(None if g is None else g * -lam for g in gi))
    h = M.gradient_reversal(hm[2], lam)
    compare(tm, hm, run(torch, tm, X), run(hookgrad, hm, X))
    # the handle's lambda_ is read at hook time (a schedule changes it in place)
    tm2, hm2 = pair()
    tm2[2].register_full_backward_hook(lambda m, gi, go: tuple(None if g is None else g * -1.5 for g in gi))
    h = M.gradient_reversal(hm2[2], 0.0)
    h.lambda_ = 1.5
    compare(tm2, hm2, run(torch, tm2, X), run(hookgrad, hm2, X))
