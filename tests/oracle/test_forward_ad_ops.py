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
