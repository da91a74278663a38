"""The array-module seam on autograd's side: with XArray inputs while NumPy is the default module, everything
autograd makes for them follows their module -- the implicit seed gradient, a view's regenerated history
(AsStridedBackward0) and the base's CopySlices, fills, copy_ and resize_,
torch.autograd.functional's zeros, gradcheck's working copies and the optimizers' per-parameter state -- and
gives torch's values. (Under HOOKGRAD_TEST_BACKEND=xarray the default is XArray too; the tests hold the same.)
"""
import numpy as np
import pytest
import torch

import hookgrad
from backend.xarray import XArray, xp
from oracle import assert_same


def _leaf(L, a, rg=True):
    """The same data as a leaf: a torch tensor, or a hookgrad tensor holding an XArray."""
    if L is torch:
        t = torch.tensor(a)
    else:
        t = hookgrad.Tensor._make(xp.asarray(a))
    return t.requires_grad_(True) if rg else t


def _same(t_out, h_out, what):
    """torch's and hookgrad's results agree, and every hookgrad tensor holds an XArray."""
    assert len(t_out) == len(h_out)
    for i, (a, b) in enumerate(zip(t_out, h_out)):
        if isinstance(b, hookgrad.Tensor):
            assert isinstance(b._data, XArray), f"{what}: result {i} is a {type(b._data).__name__}"
        assert_same(a, b, f"{what}: result {i}")


A = np.array([[1.0, -2.0, 3.0], [0.5, 4.0, -1.5]])


def _seed_retained(L):
    x = _leaf(L, A)
    y = (x * 2).sum()
    y.retain_grad()
    y.backward()                    # the implicit gradient: ones like the output
    return [y.grad, x.grad]


def _view_regenerated(L):
    x = _leaf(L, A)
    b = x * 1
    v = b[0]
    b.mul_(3)                       # v's history becomes AsStridedBackward0 over b's new one
    v.sum().backward()
    return [x.grad]


def _view_regenerated_create_graph(L):
    x = _leaf(L, A)
    b = x * 1
    v = b[:, 1]
    b.exp_()
    (g,) = L.autograd.grad((v * v).sum(), x, create_graph=True)
    (gg,) = L.autograd.grad(g.sum(), x)
    return [g, gg]


def _copy_slices(L):
    x = _leaf(L, A)
    b = x.clone()
    b[1].mul_(x[0])                 # the base gets CopySlices
    (b * b).sum().backward()
    return [b, x.grad]


def _fills(L):
    x = _leaf(L, A)
    b = x.clone()
    b[0].fill_(5.0)
    b[1, :2].zero_()
    L.manual_seed(3)
    z = _leaf(L, A, rg=False)
    z.normal_()
    z.bernoulli_(0.5)
    (b * b).sum().backward()
    return [b, z, x.grad]


def _copy(L):
    x = _leaf(L, A)
    b = _leaf(L, np.zeros((2, 3)), rg=False)
    b.copy_(x * 2)
    b.sum().backward()
    return [b, x.grad]


def _copy_from_other_module(L):
    b = _leaf(L, np.zeros((2, 3), np.float32), rg=False)
    src = L.tensor(A)               # made from nothing: the default module
    return [b.copy_(src)]


def _resize(L):
    t = _leaf(L, A, rg=False)
    t.resize_(3, 3)                 # growing gives new memory (the new elements: torch leaves them uninitialised)
    return [t.reshape(-1)[:6]]


SCENARIOS = {f.__name__[1:]: f for f in (_seed_retained, _view_regenerated, _view_regenerated_create_graph,
                                          _copy_slices, _fills, _copy, _copy_from_other_module,
                                          _resize)}


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_autograd_follows_the_inputs_module(name):
    _same(SCENARIOS[name](torch), SCENARIOS[name](hookgrad), name)


def test_functional_zeros_follow_the_inputs_module():
    def run(L):
        x, y = _leaf(L, A), _leaf(L, A[0])
        F = L.autograd.functional
        jac = F.jacobian(lambda a, b: a * 2, (x, y))           # independent of b: zeros
        _, vjp = F.vjp(lambda a, b: (a * 3).sum(), (x, y))
        return [*jac, *vjp]
    _same(run(torch), run(hookgrad), "functional")


def test_gradcheck_works_on_the_inputs_module():
    seen = []

    def f(a, b):
        seen.append(type(a._data))
        return (a * b).sin()

    x = hookgrad.Tensor._make(xp.asarray(A)).requires_grad_(True)
    y = hookgrad.Tensor._make(xp.asarray(A[::-1].copy())).requires_grad_(True)
    assert hookgrad.autograd.gradcheck(f, (x, y))
    assert hookgrad.autograd.gradgradcheck(f, (x, y))
    assert seen and all(issubclass(t, XArray) for t in seen), seen


OPTIMIZERS = [("SGD", {"lr": 0.1, "momentum": 0.9}), ("Adam", {"lr": 0.01, "amsgrad": True}),
              ("AdamW", {"lr": 0.01}), ("Adamax", {}), ("NAdam", {}), ("RAdam", {}), ("Rprop", {}),
              ("RMSprop", {"centered": True, "momentum": 0.5}), ("Adagrad", {}), ("Adadelta", {}),
              ("ASGD", {"t0": 1}), ("Adafactor", {})]


@pytest.mark.parametrize("name,kw", OPTIMIZERS, ids=[n for n, _ in OPTIMIZERS])
def test_optimizer_state_follows_the_parameters_module(name, kw):
    """The per-parameter buffers are made like the parameter (its module); the 0-dim step counters are made
    from nothing, as PyTorch's CPU ``step``."""
    grads = [np.random.default_rng(i).standard_normal(A.shape) for i in range(3)]

    def run(L):
        p = _leaf(L, A)
        opt = getattr(L.optim, name)([p], **kw)
        for g in grads:
            p.grad = _leaf(L, g, rg=False)
            opt.step()
        return p, opt.state[p]

    tp, ts = run(torch)
    hp, hs = run(hookgrad)
    _same([tp.detach()], [hp.detach()], name)
    assert sorted(ts) == sorted(hs)
    for k in ts:
        if isinstance(ts[k], torch.Tensor):
            if ts[k].dim():
                _same([ts[k]], [hs[k]], f"{name} state[{k!r}]")
            else:
                assert_same(ts[k], hs[k], f"{name} state[{k!r}]")
