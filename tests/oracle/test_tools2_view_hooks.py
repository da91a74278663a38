"""tools.register_view_hook: a hook on a view that is not in the loss graph fires with the slice of the
base's gradient, on hookgrad and torch, equal to the base's .grad sliced the same way."""
import numpy as np
import pytest
import torch

import hookgrad
from hookgrad.tools.view_hooks import register_view_hook, view_hook_reason

LIBS = pytest.mark.parametrize("lib", [torch, hookgrad], ids=["torch", "hookgrad"])
VIEWS = {
    "slice": lambda y: y[:, 1:3],
    "select": lambda y: y[:, 0],
    "strided": lambda y: y[::2, ::3],
    "transpose_slice": lambda y: y.t()[1:3, ::2],
    "reshape": lambda y: y.reshape(2, 3, 4)[1],
    "diagonal": lambda y: y[:, :3].diagonal(),
}
X = np.random.RandomState(0).randn(6, 4).astype(np.float32)


@LIBS
@pytest.mark.parametrize("kind", list(VIEWS))
def test_fires_with_the_slice_of_the_base_gradient(lib, kind):
    x = lib.tensor(X, requires_grad=True)
    y = x.sin() * 3                                   # a non-leaf base
    v = VIEWS[kind](y)
    got = []
    plain = []
    v.register_hook(lambda g: plain.append(g))       # the ordinary hook: v is not in the loss graph
    register_view_hook(v, lambda g: got.append(g.clone()))
    y.retain_grad()
    (y ** 2).sum().backward()
    assert plain == []                                # never fires
    assert len(got) == 1
    ref = VIEWS[kind](y.grad)
    assert tuple(got[0].shape) == tuple(ref.shape) and np.array_equal(got[0].numpy(), ref.numpy())


def test_same_on_both_libraries():
    res = []
    for lib in (torch, hookgrad):
        x = lib.tensor(X, requires_grad=True)
        h = x.tanh().t().contiguous() + 1         # base made of a non-contiguous input
        got = []
        register_view_hook(h[1:3, 2:], got.append)
        (h * h.detach().exp()).sum().backward()
        res.append(got[0].numpy())
    np.testing.assert_allclose(res[1], res[0], rtol=1e-6, atol=1e-6)


@LIBS
def test_view_in_the_graph_gets_every_path(lib):
    x = lib.tensor(X, requires_grad=True)
    v = x[:2]
    got = []
    register_view_hook(v, got.append)
    (x.sum() + (v * 5).sum()).backward()              # the base's gradient: both paths
    assert np.array_equal(got[0].numpy(), np.full((2, 4), 6, np.float32))
    assert np.array_equal(x.grad[:2].numpy(), got[0].numpy())


@LIBS
def test_raises_with_the_reason(lib):
    with pytest.raises(RuntimeError, match="its base does not require grad"):
        register_view_hook(lib.tensor(X)[:, 1], print)
    x = lib.tensor(X, requires_grad=True)
    with lib.no_grad():
        watched = x[:, 1]                             # taken under no_grad: still the base's elements
    got = []
    register_view_hook(watched, got.append)
    (x * 2).sum().backward()
    assert np.array_equal(got[0].numpy(), np.full(6, 2, np.float32))
    assert view_hook_reason(lib.zeros(2)) == "the tensor does not require grad"
    leaf = lib.tensor(X, requires_grad=True)
    got = []
    h = register_view_hook(leaf, got.append)          # not a view: an ordinary hook
    leaf.sum().backward()
    h.remove()
    assert len(got) == 1 and tuple(got[0].shape) == (6, 4)
