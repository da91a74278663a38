"""nn.init (fans, gains, distributions checked statistically), layer reset_parameters, nn.utils."""
import math

import numpy as np
import pytest
import torch

import hookgrad
from oracle import assert_same

init_t, init_h = torch.nn.init, hookgrad.nn.init


@pytest.mark.parametrize("args", [("linear",), ("conv2d",), ("sigmoid",), ("tanh",), ("relu",), ("leaky_relu",),
                                  ("leaky_relu", 0.2), ("selu",)])
def test_calculate_gain(args):
    assert init_h.calculate_gain(*args) == pytest.approx(init_t.calculate_gain(*args))


def test_gain_and_fan_errors():
    for init in (init_t, init_h):
        with pytest.raises(ValueError, match="Unsupported nonlinearity foo"):
            init.calculate_gain("foo")
        with pytest.raises(ValueError, match="negative_slope True not a valid number"):
            init.calculate_gain("leaky_relu", True)
    with pytest.raises(ValueError, match="fewer than 2 dimensions"):
        init_h.xavier_uniform_(hookgrad.empty(3))
    with pytest.raises(ValueError, match="Mode fan_avg not supported"):
        init_h.kaiming_uniform_(hookgrad.empty(3, 4), mode="fan_avg")


@pytest.mark.parametrize("shape", [(5, 3), (4, 3, 2, 2), (6, 2, 5)])
def test_fans(shape):
    assert init_h._calculate_fan_in_and_fan_out(hookgrad.empty(*shape)) == \
        init_t._calculate_fan_in_and_fan_out(torch.empty(*shape))


def _stats(t):
    a = t.detach().numpy().astype(np.float64).ravel()
    return a.mean(), a.std(), a.min(), a.max()


def _uniform_ok(t, bound):
    m, s, lo, hi = _stats(t)
    n = t.numel()
    assert -bound <= lo and hi <= bound
    assert abs(m) < 4 * bound / math.sqrt(3 * n)
    assert abs(s - bound / math.sqrt(3)) < max(0.05, 0.6 / math.sqrt(n)) * bound
    if n >= 1000:
        assert hi > 0.99 * bound and lo < -0.99 * bound


def _normal_ok(t, mean, std):
    m, s, _, _ = _stats(t)
    assert abs(m - mean) < 4 * std / math.sqrt(t.numel())
    assert abs(s - std) < max(0.05, 0.6 / math.sqrt(t.numel())) * std


def test_init_distributions():
    hookgrad.manual_seed(0)
    w = hookgrad.empty(200, 100)
    init_h.uniform_(w, -2, 3)
    assert w.numpy().min() >= -2 and w.numpy().max() <= 3 and abs(w.numpy().mean() - 0.5) < 0.05
    _normal_ok(init_h.normal_(w, 1.0, 2.0), 1.0, 2.0)
    _uniform_ok(init_h.xavier_uniform_(w, gain=2.0), 2.0 * math.sqrt(6 / 300))
    _normal_ok(init_h.xavier_normal_(w), 0.0, math.sqrt(2 / 300))
    _uniform_ok(init_h.kaiming_uniform_(w, a=math.sqrt(5)), math.sqrt(6 / (1 + 5)) / math.sqrt(100))
    _uniform_ok(init_h.kaiming_uniform_(w, mode="fan_out", nonlinearity="relu"), math.sqrt(6 / 200))
    _normal_ok(init_h.kaiming_normal_(w, nonlinearity="relu"), 0.0, math.sqrt(2 / 100))
    t = init_h.trunc_normal_(w, 0.5, 1.0, -1.0, 1.5)
    a = t.numpy()
    ta = init_t.trunc_normal_(torch.empty(200, 100), 0.5, 1.0, -1.0, 1.5).numpy()
    assert a.min() >= -1.0 and a.max() <= 1.5
    assert abs(a.mean() - ta.mean()) < 0.03 and abs(a.std() - ta.std()) < 0.03
    assert (init_h.constant_(w, 0.3).numpy() == np.float32(0.3)).all()
    assert (init_h.ones_(w).numpy() == 1).all() and (init_h.zeros_(w).numpy() == 0).all()
    assert (init_h.eye_(hookgrad.empty(3, 4)).numpy() == np.eye(3, 4)).all()
    assert w.dtype is hookgrad.float32


@pytest.mark.parametrize("shape", [(6, 4), (3, 8), (4, 2, 3)])
def test_orthogonal(shape):
    w = init_h.orthogonal_(hookgrad.empty(*shape), gain=2.0).numpy().reshape(shape[0], -1).astype(np.float64)
    g = w @ w.T if shape[0] <= w.shape[1] else w.T @ w
    np.testing.assert_allclose(g, 4 * np.eye(len(g)), atol=1e-5)


def test_init_on_parameter_records_no_graph():
    p = hookgrad.nn.Parameter(hookgrad.empty(3, 4))
    v = p._version
    init_h.kaiming_uniform_(p)
    assert p.grad_fn is None and p.requires_grad and p.is_leaf and p._version > v


def test_layer_reset_parameters_distributions():
    hookgrad.manual_seed(0)
    lin = hookgrad.nn.Linear(400, 300)
    _uniform_ok(lin.weight, 1 / math.sqrt(400))
    _uniform_ok(lin.bias, 1 / math.sqrt(400))
    conv = hookgrad.nn.Conv2d(16, 64, 3)
    _uniform_ok(conv.weight, 1 / math.sqrt(16 * 9))
    _uniform_ok(conv.bias, 1 / math.sqrt(16 * 9))
    ct = hookgrad.nn.ConvTranspose2d(64, 16, 3)
    _uniform_ok(ct.weight, 1 / math.sqrt(16 * 9))
    bil = hookgrad.nn.Bilinear(30, 20, 50)
    _uniform_ok(bil.weight, 1 / math.sqrt(30))
    emb = hookgrad.nn.Embedding(300, 40, padding_idx=3)
    assert (emb.weight.detach().numpy()[3] == 0).all()
    _normal_ok(emb.weight[4:], 0.0, 1.0)
    mha = hookgrad.nn.MultiheadAttention(64, 4)
    _uniform_ok(mha.in_proj_weight, math.sqrt(6 / (64 + 192)))
    assert (mha.in_proj_bias.detach().numpy() == 0).all() and (mha.out_proj.bias.detach().numpy() == 0).all()
    bn = hookgrad.nn.BatchNorm2d(5)
    assert (bn.weight.detach().numpy() == 1).all() and (bn.bias.detach().numpy() == 0).all()
    assert (hookgrad.nn.PReLU(3).weight.detach().numpy() == np.float32(0.25)).all()
    for m in (lin, conv, bn):
        assert all(p.dtype is hookgrad.float32 and p.is_leaf for p in m.parameters())


# ------------------------------------------------------------------------------------------ utils
def _with_grads(L, seed=0):
    L.manual_seed(seed)
    ps = [L.nn.Parameter(L.zeros(3, 4)), L.nn.Parameter(L.zeros(5)), L.nn.Parameter(L.zeros(2))]
    rng = np.random.default_rng(seed)
    for p in ps[:2]:
        p.grad = L.tensor(rng.standard_normal(tuple(p.shape)).astype(np.float32) * 3)
    return ps


@pytest.mark.parametrize("norm_type", [2.0, 1.0, math.inf, 3])
@pytest.mark.parametrize("max_norm", [0.5, 100.0])
def test_clip_grad_norm(norm_type, max_norm):
    pt, ph = _with_grads(torch), _with_grads(hookgrad)
    nt = torch.nn.utils.clip_grad_norm_(pt, max_norm, norm_type)
    nh = hookgrad.nn.utils.clip_grad_norm_(ph, max_norm, norm_type)
    assert_same(nt, nh)
    for a, b in zip(pt[:2], ph[:2]):
        assert_same(a.grad, b.grad)
    assert ph[2].grad is None


def test_clip_grad_value_and_nonfinite():
    pt, ph = _with_grads(torch), _with_grads(hookgrad)
    torch.nn.utils.clip_grad_value_(pt, 1.5)
    hookgrad.nn.utils.clip_grad_value_(ph, 1.5)
    for a, b in zip(pt[:2], ph[:2]):
        assert_same(a.grad, b.grad)
    ph[0].grad._data[0, 0] = np.inf
    with pytest.raises(RuntimeError, match="non-finite"):
        hookgrad.nn.utils.clip_grad_norm_(ph, 1.0, error_if_nonfinite=True)


def test_parameters_vector_roundtrip():
    lin_t, lin_h = torch.nn.Linear(3, 2), hookgrad.nn.Linear(3, 2)
    v = np.arange(8, dtype=np.float32)
    torch.nn.utils.vector_to_parameters(torch.tensor(v), lin_t.parameters())
    hookgrad.nn.utils.vector_to_parameters(hookgrad.tensor(v), lin_h.parameters())
    assert_same(lin_t.weight, lin_h.weight)
    assert_same(lin_t.bias, lin_h.bias)
    vt = torch.nn.utils.parameters_to_vector(lin_t.parameters())
    vh = hookgrad.nn.utils.parameters_to_vector(lin_h.parameters())
    assert_same(vt, vh)
    (vh * hookgrad.arange(8.0)).sum().backward()
    np.testing.assert_allclose(lin_h.weight.grad.numpy().ravel(), np.arange(6.0))
    with pytest.raises(TypeError, match="expected torch.Tensor"):
        hookgrad.nn.utils.vector_to_parameters([1.0], lin_h.parameters())
