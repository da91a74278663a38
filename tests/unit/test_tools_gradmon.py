"""GradientMonitor: statistics checked against NumPy on the parameters' .grad; warnings; table; plot; removal."""
import math
import warnings

import numpy as np
import pytest

import hookgrad
from hookgrad import nn
from hookgrad.tools.gradmon import GradientMonitor, GradientWarning


def mlp():
    hookgrad.manual_seed(0)
    return nn.Sequential(nn.Linear(4, 6), nn.ReLU(), nn.Sequential(nn.Linear(6, 5), nn.Tanh()), nn.Linear(5, 2))


def np_stats(g, bins=20, rng=None):
    g = g.ravel()
    counts, edges = np.histogram(g[np.isfinite(g)].astype(np.float64), bins=bins, range=rng)

    return {"norm": float(np.linalg.norm(g.astype(np.float64))), "max": float(np.abs(g).max()),
            "zero_frac": float(np.mean(g == 0)), "numel": g.size, "hist": counts, "edges": edges}


def assert_stats(got, ref):
    assert got["numel"] == ref["numel"]
    assert math.isclose(got["norm"], ref["norm"], rel_tol=1e-12)
    assert got["max"] == ref["max"]
    assert got["zero_frac"] == ref["zero_frac"]
    np.testing.assert_array_equal(got["hist"], ref["hist"])
    np.testing.assert_allclose(got["edges"], ref["edges"])


def test_stats_per_parameter_and_module_match_numpy():
    m = mlp()
    mon = GradientMonitor(m)
    grads = []
    for step in range(3):
        m.zero_grad()
        x = hookgrad.randn(7, 4)
        (m(x) ** 2).sum().backward()
        grads.append({n: p.grad.numpy().copy() for n, p in m.named_parameters()})
    mon.step()
    assert mon.steps == 3
    assert sorted(mon.history) == sorted(n for n, _ in m.named_parameters())
    for n in mon.history:
        assert [s["step"] for s in mon.history[n]] == [0, 1, 2]
        for s, g in zip(mon.history[n], grads):
            assert_stats(s, np_stats(g[n]))
    # module aggregation: subtree of "2" = 2.0.weight, 2.0.bias; "" = everything
    for path, names in {"2": ["2.0.weight", "2.0.bias"], "2.0": ["2.0.weight", "2.0.bias"],
                        "0": ["0.weight", "0.bias"], "": list(grads[0])}.items():
        for s, g in zip(mon.module_history[path], grads):
            cat = np.concatenate([g[n].ravel() for n in names])
            ref = np_stats(cat)
            assert math.isclose(s["norm"], ref["norm"], rel_tol=1e-9)
            assert s["max"] == ref["max"] and s["numel"] == ref["numel"]
            assert math.isclose(s["zero_frac"], ref["zero_frac"], rel_tol=1e-12)
            np.testing.assert_array_equal(s["hist"], ref["hist"])
            assert sorted(s["params"]) == sorted(names)
    assert "1" not in mon.module_history     # ReLU holds no parameter
    mon.remove()


def test_fixed_edges_sum_per_module_and_every():
    m = mlp()
    edges = np.linspace(-1, 1, 9)
    with GradientMonitor(m, every=2, bins=edges) as mon:
        for step in range(5):
            m.zero_grad()
            m(hookgrad.randn(3, 4)).sum().backward()
            if step == 4:
                last = {n: p.grad.numpy().copy() for n, p in m.named_parameters()}
    assert mon.steps == 5                      # closed by __exit__
    assert [s["step"] for s in mon.history["3.weight"]] == [0, 2, 4]
    cat = np.concatenate([g.ravel() for g in last.values()])
    np.testing.assert_array_equal(mon.module_history[""][-1]["hist"], np.histogram(cat, bins=edges)[0])
    np.testing.assert_array_equal(mon.history["0.bias"][-1]["hist"], np.histogram(last["0.bias"], bins=edges)[0])


def test_auto_step_boundaries_forward_and_second_backward():
    m = mlp()
    mon = GradientMonitor(m)
    y = m(hookgrad.randn(2, 4)).sum()
    y.backward(retain_graph=True)
    assert mon.steps == 0                      # still open
    g1 = m[0].weight.grad.numpy().copy()
    y.backward()                               # no forward in between: second gradient closes step 0
    g2 = m[0].weight.grad.numpy().copy()       # accumulated
    assert mon.steps == 1
    m(hookgrad.randn(2, 4))                    # a forward closes step 1
    assert mon.steps == 2
    h = mon.history["0.weight"]
    assert [s["step"] for s in h] == [0, 1]
    assert math.isclose(h[0]["norm"], np.linalg.norm(g1.astype(np.float64)), rel_tol=1e-12)
    assert math.isclose(h[1]["norm"], np.linalg.norm(g2.astype(np.float64)), rel_tol=1e-12)
    mon.remove()


def test_manual_step_reads_accumulated_grad():
    m = mlp()
    mon = GradientMonitor(m, auto_step=False)
    for _ in range(3):                         # gradient accumulation: one step
        m(hookgrad.randn(2, 4)).sum().backward()
    mon.step()
    assert mon.steps == 1 and len(mon.history["3.bias"]) == 1
    assert math.isclose(mon.history["3.bias"][0]["norm"],
                        np.linalg.norm(m[3].bias.grad.numpy().astype(np.float64)), rel_tol=1e-12)
    mon.remove()


def test_warnings_name_parameter_module_and_value():
    m = mlp()
    mon = GradientMonitor(m, vanishing=1e-3, exploding=50.0)
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        (m(hookgrad.randn(4, 4)) * 1e6).sum().backward()
        mon.step()
    msgs = [str(x.message) for x in w if issubclass(x.category, GradientWarning)]
    norm = mon.history["3.weight"][-1]["norm"]
    assert any(f"exploding gradient in parameter '3.weight' (module '3'): norm {norm:.4g} > 50" in s for s in msgs), msgs
    assert len(msgs) == len(mon.history)       # every parameter explodes here

    m.zero_grad()
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        (m(hookgrad.randn(4, 4)) * 1e-9).sum().backward()
        mon.step()
    msgs = [str(x.message) for x in w]
    assert any("step 1: vanishing gradient in parameter '2.0.bias' (module '2.0'): norm" in s and "< 0.001" in s
               for s in msgs), msgs

    m.zero_grad()
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        (m(hookgrad.tensor([[float("nan"), 0, 0, 0]]))).sum().backward()
        mon.step()
    msgs = [str(x.message) for x in w]
    assert any("non-finite gradient in parameter '0.weight' (module '0'): norm nan" in s for s in msgs), msgs
    st = mon.history["0.weight"][-1]
    assert st["nonfinite"] == int((~np.isfinite(m[0].weight.grad.numpy())).sum()) > 0 and math.isnan(st["norm"])
    assert "NONFINITE" in mon.table()
    mon.remove()


def test_table_plot_and_removal(tmp_path):
    m = mlp()
    mon = GradientMonitor(m)
    for _ in range(3):
        m.zero_grad()
        m(hookgrad.randn(2, 4)).sum().backward()
    t = mon.table()
    lines = t.splitlines()
    assert lines[0] == "gradients at step 2"
    assert lines[1].split() == ["parameter", "numel", "norm", "max|g|", "zero%", "flag"]
    row = next(l for l in lines if l.startswith("2.0.weight"))
    assert row.split()[1:4] == ["30", f"{mon.history['2.0.weight'][-1]['norm']:.4e}",
                                f"{mon.history['2.0.weight'][-1]['max']:.4e}"]
    assert [l.split()[0] for l in lines[3:]] == [n for n, _ in m.named_parameters()]   # model order
    mt = mon.table(by="module").splitlines()
    assert [l.split()[0] for l in mt[3:]] == ["(model)", "0", "2", "2.0", "3"]
    pytest.importorskip("matplotlib")
    p = mon.plot(str(tmp_path / "norms.png"))
    assert open(p, "rb").read(8) == b"\x89PNG\r\n\x1a\n"
    assert any(p.hooks() for p in m.parameters()) and m.hooks()
    mon.remove()
    mon.remove()
    assert not any(p.hooks() for p in m.parameters()) and not m.hooks()
    m(hookgrad.randn(2, 4)).sum().backward()
    assert mon.steps == 3                      # nothing recorded after removal


def test_shared_parameter_watched_once_and_frozen_skipped():
    lin = nn.Linear(3, 3)
    m = nn.Sequential(lin, nn.ReLU(), lin, nn.Linear(3, 1))
    m[3].bias.requires_grad_(False)
    mon = GradientMonitor(m)
    assert sorted(mon.history) == [] and len(lin.weight.hooks()) == 1
    m(hookgrad.randn(2, 3)).sum().backward()
    mon.step()
    assert sorted(mon.history) == ["0.bias", "0.weight", "3.weight"]
    mon.remove()
