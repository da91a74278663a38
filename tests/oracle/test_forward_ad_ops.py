"""forward_ad tangents vs torch.autograd.forward_ad, generated over the op tables of the backward tests
(test_formulas.PROGRAMS, graph_sweep_ops.OPS, test_ops_elementwise's UNARY and BINARY): every floating input is
made dual with a random tangent, and every output's value, tangent dtype/shape/value (or absence) must equal
torch's. ``test_every_recorded_primitive_has_a_tangent`` checks that each primitive these programs record got its
tangent from a jvp formula or the fallback."""
import numpy as np
import pytest
import torch

import hookgrad
from hookgrad.autograd import forward_ad as hfw
from oracle import assert_same
import graph_sweep_ops
import test_formulas
from test_ops_elementwise import UNARY, BINARY
from ops_util import data

# name: (fn(L, *tensors), *arrays)
CASES = {}
for _k, (_fn, *_arrs) in test_formulas.PROGRAMS.items():
    CASES["formulas." + _k] = (_fn, *_arrs)
for _k, (_fn, *_arrs) in graph_sweep_ops.OPS.items():
    CASES["sweep." + _k] = (_fn, *[a.astype(np.float64) if a.dtype == np.float32 else a for a in _arrs])
for _k, (_fn, _kind) in UNARY.items():
    CASES["unary." + _k] = (_fn, data((3, 4), "float64", _kind))
for _k, (_fn, _kind) in BINARY.items():
    CASES["binary." + _k] = (_fn, data((3, 4), "float64", _kind), data((3, 4), "float64", _kind, seed=1))

# families the tables above reach little: linear algebra, FFT, pooling and sampling, norms, losses, recurrences
_r = lambda *s, seed=0: np.random.default_rng(seed).standard_normal(s)
_spd = (lambda a: a @ a.T + 3 * np.eye(3))(_r(3, 3, seed=5))
_F = lambda L: L.nn.functional
EXTRA = {
    "inv": (lambda L, a: L.linalg.inv(a), _spd),
    "det": (lambda L, a: L.linalg.det(a), _spd),
    "slogdet": (lambda L, a: L.linalg.slogdet(a)[1], _spd),
    "solve": (lambda L, a, b: L.linalg.solve(a, b), _spd, _r(3, 2, seed=1)),
    "cholesky": (lambda L, a: L.linalg.cholesky((a + a.mT) / 2), _spd),     # (a symmetric tangent)
    "eigh_vals": (lambda L, a: L.linalg.eigvalsh(a), _spd),
    "svd_vals": (lambda L, a: L.linalg.svdvals(a), _r(4, 3)),
    "qr_r": (lambda L, a: L.linalg.qr(a)[1], _r(4, 3)),
    "pinv": (lambda L, a: L.linalg.pinv(a), _r(4, 3)),
    "matrix_exp": (lambda L, a: L.linalg.matrix_exp(a * 0.3), _r(3, 3)),
    "rfft": (lambda L, x: L.fft.rfft(x).abs(), _r(2, 8)),
    "fft_ifft": (lambda L, x: L.fft.ifft(L.fft.fft(x) * 2).real, _r(2, 8)),
    "avg_pool": (lambda L, x: _F(L).avg_pool2d(x, 2), _r(1, 2, 4, 4)),
    "adaptive_avg": (lambda L, x: _F(L).adaptive_avg_pool2d(x, 3), _r(1, 2, 5, 5)),
    "max_pool": (lambda L, x: _F(L).max_pool2d(x, 2), _r(1, 2, 4, 4)),
    "conv1d": (lambda L, x, w, b: _F(L).conv1d(x, w, b, padding=1), _r(2, 3, 6), _r(4, 3, 3, seed=1), _r(4, seed=2)),
    "conv_transpose2d": (lambda L, x, w: _F(L).conv_transpose2d(x, w, stride=2), _r(1, 2, 3, 3), _r(2, 3, 2, 2, seed=1)),
    "interpolate": (lambda L, x: _F(L).interpolate(x, scale_factor=2, mode="bilinear"), _r(1, 1, 3, 3)),
    "grid_sample": (lambda L, x, g: _F(L).grid_sample(x, g.tanh(), align_corners=False), _r(1, 2, 4, 4),
                    _r(1, 3, 3, 2, seed=1)),
    "group_norm": (lambda L, x, w, b: _F(L).group_norm(x, 2, w, b), _r(2, 4, 3), _r(4, seed=1), _r(4, seed=2)),
    "layer_norm": (lambda L, x, w, b: _F(L).layer_norm(x, (3,), w, b), _r(2, 4, 3), _r(3, seed=1), _r(3, seed=2)),
    "batch_norm": (lambda L, x, w, b: _F(L).batch_norm(x, None, None, w, b, True), _r(4, 3, 2), _r(3, seed=1),
                   _r(3, seed=2)),
    "mse": (lambda L, x, y: _F(L).mse_loss(x, y), _r(3, 4), _r(3, 4, seed=1)),
    "smooth_l1": (lambda L, x, y: _F(L).smooth_l1_loss(x, y), _r(3, 4), _r(3, 4, seed=1)),
    "bce_logits": (lambda L, x, y: _F(L).binary_cross_entropy_with_logits(x, y.sigmoid()), _r(3, 4), _r(3, 4, seed=1)),
    "kl_div": (lambda L, x, y: _F(L).kl_div(x.log_softmax(-1), y.softmax(-1), reduction="batchmean"), _r(3, 4),
               _r(3, 4, seed=1)),
    "embedding": (lambda L, w: _F(L).embedding(L.tensor([[0, 2], [1, 0]]), w), _r(3, 4)),
    "pad_reflect": (lambda L, x: _F(L).pad(x, (1, 2), mode="reflect"), _r(2, 3, 5)),
    "unfold": (lambda L, x: _F(L).unfold(x, 2), _r(1, 2, 3, 3)),
    "lstm": (lambda L, x, w1, w2: L._VF.lstm_cell(x, (w1[:, :4] * 0, w1[:, :4] * 0), w1, w2, None, None)[0]
             if False else L.lstm_cell(x, (x[:, :4] * 0, x[:, :4] * 0), w1, w2), _r(2, 4), _r(16, 4, seed=1),
             _r(16, 4, seed=2)),
    "gru_cell": (lambda L, x, h, w1, w2: L.gru_cell(x, h, w1, w2), _r(2, 4), _r(2, 3, seed=3), _r(9, 4, seed=1),
                 _r(9, 3, seed=2)),
    "sdpa": (lambda L, q, k, v: _F(L).scaled_dot_product_attention(q, k, v), _r(1, 2, 3, 4), _r(1, 2, 3, 4, seed=1),
             _r(1, 2, 3, 4, seed=2)),
    "cumprod": (lambda L, x: x.cumprod(1), _r(3, 4)),
    "sort": (lambda L, x: x.sort(1)[0], _r(3, 4)),
    "topk": (lambda L, x: x.topk(2, 1)[0], _r(3, 4)),
    "index_add": (lambda L, x, s: x.index_add(0, L.tensor([0, 2]), s), _r(3, 4), _r(2, 4, seed=1)),
    "scatter_add": (lambda L, x, s: x.scatter_add(1, L.tensor([[0, 1], [2, 3], [1, 1]]), s), _r(3, 4), _r(3, 2, seed=1)),
    "index_put": (lambda L, x, v: x.index_put((L.tensor([0, 2]),), v), _r(3, 4), _r(2, 4, seed=1)),
    "masked_fill": (lambda L, x: x.masked_fill(x > 0, 2.0), _r(3, 4)),
    "complex_mul_abs": (lambda L, x, y: (L.complex(x, y) * L.complex(y, x)).abs(), _r(3), _r(3, seed=1)),
    "view_as_real": (lambda L, x, y: L.view_as_real(L.complex(x, y) * 2), _r(3), _r(3, seed=1)),
}
for _k, (_fn, *_arrs) in EXTRA.items():
    CASES["extra." + _k] = (_fn, *_arrs)

# torch itself has no forward-mode formula for these (it raises NotImplementedError), or the program is
# not something forward AD can run (a backward inside the program)
TORCH_LACKS = {"formulas.relu_grad"}

# known differences, each with its reason
XFAIL = {}


def _flat(out):
    if isinstance(out, (tuple, list)):
        return [x for o in out for x in _flat(o)]
    return [out]


def _run(lib, fn, arrays, tangents):
    fw = lib.autograd.forward_ad
    with fw.dual_level():
        ins = []
        for a, t in zip(arrays, tangents):
            x = lib.tensor(a.copy()) if isinstance(a, np.ndarray) else a
            if t is not None:
                x = fw.make_dual(x, lib.tensor(t))
            ins.append(x)
        outs = _flat(fn(lib, *ins))
        return [(o, fw.unpack_dual(o).tangent) if isinstance(o, lib.Tensor) else (o, None) for o in outs]


def _tangents(arrays):
    rng = np.random.default_rng(7)
    return [rng.standard_normal(a.shape).astype(a.dtype) if isinstance(a, np.ndarray) and a.dtype.kind == "f"
            else None for a in arrays]


def compare(name, fn, arrays):
    tans = _tangents(arrays)
    try:
        t_res = _run(torch, fn, arrays, tans)
    except (NotImplementedError, RuntimeError) as e:
        pytest.skip(f"torch has no forward AD here: {type(e).__name__}: {str(e)[:100]}")
    h_res = _run(hookgrad, fn, arrays, tans)
    assert len(t_res) == len(h_res)
    for i, ((tv, tt), (hv, ht)) in enumerate(zip(t_res, h_res)):
        assert_same(tv, hv, f"{name}: output {i}")
        if tt is None:
            if ht is not None:      # torch gives no tangent; hookgrad may only give a zero one
                assert not np.any(ht.detach().numpy()), f"{name}: output {i}: torch has no tangent, hookgrad {ht}"
            continue
        assert ht is not None, f"{name}: output {i}: torch has a tangent, hookgrad none"
        assert_same(tt, ht, f"{name}: tangent of output {i}", tol=(1e-7, 1e-7) if tt.dtype == torch.float64 else None)


@pytest.mark.parametrize("name", sorted(set(CASES) - TORCH_LACKS))
def test_tangent(name):
    if name in XFAIL:
        pytest.xfail(XFAIL[name])
    fn, *arrays = CASES[name]
    compare(name, fn, arrays)


def test_every_recorded_primitive_has_a_tangent():
    """Each primitive the programs above record (its node under reverse mode) is reached in forward mode with a
    dual input and produces its tangent through a jvp formula or the fallback."""
    hfw._JVP_USED.clear()
    recorded = set()
    for name in sorted(set(CASES) - TORCH_LACKS):
        if name.endswith("_grad"):      # a program that runs a backward inside: its nodes are the formula's
            continue
        fn, *arrays = CASES[name]
        leaves = [hookgrad.tensor(a.copy(), requires_grad=a.dtype.kind == "f") if isinstance(a, np.ndarray) else a
                  for a in arrays]
        try:
            outs = _flat(fn(hookgrad, *leaves))
        except Exception:   # noqa: BLE001 - programs that need more than this (test_tangent runs them)
            continue
        stack = [o.grad_fn for o in outs if isinstance(o, hookgrad.Tensor) and o.grad_fn is not None]
        seen = set()
        while stack:
            n = stack.pop()
            if n is None or n in seen:
                continue
            seen.add(n)
            recorded.add(type(n))
            stack.extend(f for f, _ in n.next_functions)
        try:
            _run(hookgrad, fn, arrays, _tangents(arrays))
        except Exception:   # noqa: BLE001
            pass
    recorded = {c for c in recorded if "forward" in c.__dict__ or "backward" in c.__dict__
                or hasattr(c, "forward")} - {hookgrad.autograd.graph.Node}
    missing = sorted(c.__name__ for c in recorded if c not in hfw._JVP_USED and c.__name__ != "AccumulateGrad"
                     and c.__name__ not in ("CopySlices", "CopyBackwards"))
    assert not missing, f"primitives recorded in reverse mode that computed no tangent: {missing}"


def test_fallback_list():
    """fallback_ops() lists every primitive once, explicit or fallback (the list docs/coverage.md shows)."""
    ops = hfw.fallback_ops()
    assert "elementwise.ExpBackward0" in ops["explicit"] and not set(ops["explicit"]) & set(ops["fallback"])
    assert len(ops["fallback"]) > 0
