"""Gradient modifiers without torch: values vs NumPy, handles, removal, errors."""
import numpy as np
import pytest

import hookgrad
from hookgrad import nn
from hookgrad.tools.modifiers import (ModifierHandle, clip_grad_norm, clip_grad_value, freeze, gradient_reversal,
                                      scale_grad)


def leaf(vals):
    return hookgrad.tensor(np.asarray(vals, np.float32), requires_grad=True)


def test_scale_tensor_values_settings_and_context_manager():
    w = leaf([1.0, 2.0, 3.0])
    with scale_grad(w, 2.0) as h:
        assert isinstance(h, ModifierHandle) and h.active and len(w.hooks()) == 1
        (w * hookgrad.tensor([1.0, -1.0, 0.5])).sum().backward()
        np.testing.assert_array_equal(w.grad.numpy(), [2.0, -2.0, 1.0])
        h.factor = -1.0                            # read at hook time
        w.grad = None
        w.sum().backward()
        np.testing.assert_array_equal(w.grad.numpy(), [-1.0, -1.0, -1.0])
    assert not h.active and w.hooks() == [] and "(removed)" in repr(h)
    w.grad = None
    w.sum().backward()
    np.testing.assert_array_equal(w.grad.numpy(), [1.0, 1.0, 1.0])


def test_clip_value_and_norm_on_tensors():
    w = leaf([0.0, 0.0, 0.0])
    with clip_grad_value(w, 0.5):
        (w * hookgrad.tensor([3.0, -0.2, -9.0])).sum().backward()
    np.testing.assert_array_equal(w.grad.numpy(), np.float32([0.5, -0.2, -0.5]))

    a, b = leaf([0.0, 0.0]), leaf([0.0])
    g = np.array([3.0, 4.0, 12.0])               # total norm 13
    with clip_grad_norm([a, b], 1.0) as h:
        assert repr(h) == "<clip_grad_norm on tensors, max_norm=1.0, norm_type=2.0, error_if_nonfinite=False>"
        ((a * hookgrad.tensor(g[:2].astype(np.float32))).sum() + (b * float(g[2])).sum()).backward()
    got = np.concatenate([a.grad.numpy(), b.grad.numpy()])
    np.testing.assert_allclose(got, g / (13 + 1e-6), rtol=1e-6)
    # below the limit: untouched
    c = leaf([0.0, 0.0])
    with clip_grad_norm(c, 10.0):
        (c * hookgrad.tensor([3.0, 4.0])).sum().backward()
    np.testing.assert_array_equal(c.grad.numpy(), [3.0, 4.0])


def test_clip_grad_norm_only_counts_tensors_reached():
    a, b = leaf([0.0, 0.0]), leaf([0.0])
    clip_grad_norm([a, b], 1.0)
    (a * hookgrad.tensor([6.0, 8.0])).sum().backward()      # b not in this graph
    np.testing.assert_allclose(a.grad.numpy(), [0.6, 0.8], rtol=1e-6)
    assert b.grad is None
    (b * 5.0).sum().backward()                              # then b alone
    np.testing.assert_allclose(b.grad.numpy(), [1.0], rtol=1e-6)


def test_error_if_nonfinite_names_target():
    lin = nn.Linear(2, 1)
    clip_grad_norm(lin, 1.0, error_if_nonfinite=True)
    with pytest.raises(RuntimeError, match=r"non-finite.*clip_grad_norm on Linear"):
        lin(hookgrad.tensor([[float("inf"), 1.0]])).sum().backward()


def test_freeze_keeps_grad_and_none():
    lin = nn.Linear(3, 2)
    x = hookgrad.randn(4, 3, requires_grad=True)
    lin(x).sum().backward()
    before = lin.weight.grad.numpy().copy()
    xg = x.grad.numpy().copy()
    lin.bias.grad = None
    with freeze(lin):
        lin(x).sum().backward()
        assert lin.bias.grad is None and lin.weight.requires_grad
        np.testing.assert_array_equal(lin.weight.grad.numpy(), before)
        np.testing.assert_allclose(x.grad.numpy(), 2 * xg, rtol=1e-6)    # still flows to the input
    lin(x).sum().backward()
    np.testing.assert_allclose(lin.weight.grad.numpy(), 2 * before, rtol=1e-6)
    assert all(p.hooks() == [] for p in lin.parameters())


def test_gradient_reversal_and_where_input():
    lin = nn.Linear(2, 2, bias=False)
    with hookgrad.no_grad():
        lin.weight.copy_(hookgrad.tensor([[1.0, 2.0], [3.0, 4.0]]))
    x = hookgrad.tensor([[1.0, 1.0]], requires_grad=True)
    with gradient_reversal(lin, 0.5):
        lin(x).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [[-2.0, -3.0]])           # -0.5 * [4, 6]
    np.testing.assert_allclose(lin.weight.grad.numpy(), [[1.0, 1.0], [1.0, 1.0]])
    x.grad = None
    lin.weight.grad = None
    with scale_grad(lin, 3.0, where="input"):
        lin(x).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [[12.0, 18.0]])
    np.testing.assert_allclose(lin.weight.grad.numpy(), [[1.0, 1.0], [1.0, 1.0]])
    assert lin.hooks() == []


def test_errors():
    with pytest.raises(TypeError, match="target must be a Tensor, an iterable of Tensors or a Module, got float"):
        scale_grad(1.0, 2)
    with pytest.raises(TypeError, match=r"target\[1\] must be a Tensor, got int"):
        scale_grad([leaf([1.0]), 3], 2)
    with pytest.raises(RuntimeError, match=r"doesn't require gradient \(target Tensor\(2,\) at index 1\)"):
        clip_grad_value([leaf([1.0]), hookgrad.zeros(2)], 1.0)
    with pytest.raises(ValueError, match="where must be 'parameters' or 'input', got 'output'"):
        scale_grad(nn.Linear(1, 1), 2, where="output")
    with pytest.raises(ValueError, match="where='input' needs a Module target"):
        scale_grad(leaf([1.0]), 2, where="input")
    with pytest.raises(RuntimeError, match="freeze\\(\\): can only freeze leaf tensors.*MulBackward0"):
        freeze(leaf([1.0]) * 2)
    with pytest.raises(TypeError, match="gradient_reversal\\(\\): module must be a Module"):
        gradient_reversal(leaf([1.0]))
