"""tools.ophooks: OpTimer, OpPrinter, MemoryHook, HookTimeAccount against the known primitive
sequence of a small model (counts, names, shapes, bytes; no timing values beyond sleep bounds)."""
import io
import time

import pytest

import hookgrad as torch
from hookgrad import nn
from hookgrad.autograd.graph import _op_hooks
from hookgrad.nn.modules.module import global_module_hooks
from hookgrad.tools.ophooks import OpTimer, OpPrinter, MemoryHook, HookTimeAccount, account


def _model():
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 2))


def _step(m):
    m(torch.randn(5, 3)).sum().backward()


FWD = [("T", "0"), ("Addmm", "0"), ("Relu", "1"), ("T", "2"), ("Addmm", "2"), ("Sum", None)]
BWD = ["SumBackward0", "AddmmBackward0", "torch::autograd::AccumulateGrad", "TBackward0",
       "torch::autograd::AccumulateGrad", "ReluBackward0", "AddmmBackward0", "torch::autograd::AccumulateGrad",
       "TBackward0", "torch::autograd::AccumulateGrad"]


def _clean():
    assert len(_op_hooks) == 0 and global_module_hooks() == []


def test_printer_lines_follow_the_primitive_sequence():
    m = _model()
    buf = io.StringIO()
    with OpPrinter(m, file=buf):
        _step(m)
    lines = buf.getvalue().splitlines()
    fwd = [ln for ln in lines if ln.startswith("fwd ")]
    bwd = [ln for ln in lines if ln.startswith("bwd ")]
    assert [ln.split()[1] for ln in fwd] == [n for n, _ in FWD]
    assert [ln.split()[2] for ln in fwd] == [f"[{p}]" if p else "[<outside>]" for _, p in FWD]
    assert fwd[1] == "fwd Addmm [0] [(4,) float32, (5, 3) float32, (3, 4) float32] -> (5, 4) float32"
    assert [ln.split()[1] for ln in bwd] == BWD
    assert bwd[1] == ("bwd AddmmBackward0 [2] grad_outputs [(5, 2) float32] -> "
                      "grad_inputs [(2,) float32, (5, 4) float32, (4, 2) float32]")
    assert "grad_inputs [(4,) float32, None, (3, 4) float32]" in bwd[6]   # x needs no grad
    _clean()


def test_printer_verbose_and_nested_backward_ops_indented():
    x = torch.tensor([1.0, 2.0], requires_grad=True)
    buf = io.StringIO()
    with OpPrinter(file=buf, verbose=True):
        y = x.tanh()
        y.register_hook(lambda g: g * 2)     # an op run inside a backward node
        y.sum().backward()
    lines = buf.getvalue().splitlines()
    assert lines[0].startswith("fwd Tanh [(2,) float32] -> (2,) float32 grad_fn=TanhBackward0 [min 0.7616")
    nested = [i for i, ln in enumerate(lines) if ln.startswith("    fwd Mul ")]
    tanh_b = [i for i, ln in enumerate(lines) if ln.startswith("bwd TanhBackward0")]
    assert len(nested) == 1 and nested[0] < tanh_b[0]


def test_timer_counts_per_op_and_module():
    m = _model()
    with OpTimer(m) as t:
        _step(m)
        _step(m)
    r = t.report()
    ops = r["ops"]
    calls = {k: (v["forward_calls"], v["backward_calls"]) for k, v in ops.items()}
    assert calls == {"T": (4, 4), "Addmm": (4, 4), "Relu": (2, 2), "Sum": (2, 2), "AccumulateGrad": (0, 8)}
    mods = {k: (v["forward_calls"], v["backward_calls"]) for k, v in r["modules"].items()}
    assert mods == {"0": (4, 4), "1": (2, 2), "2": (4, 4), None: (2, 10)}
    totals = [v["total_time"] for v in ops.values()]
    assert totals == sorted(totals, reverse=True) and min(totals) >= 0
    assert r["forward_time"] == pytest.approx(sum(v["forward_time"] for v in ops.values()))
    table = t.summary().splitlines()
    assert table[0].split()[:3] == ["op", "fwd", "calls"] and len(table) == 2 + 5
    assert len(t.summary(by="module").splitlines()) == 2 + 4
    with pytest.raises(ValueError):
        t.summary(by="layer")
    _clean()


def test_timer_does_not_count_ops_inside_backward_twice():
    x = torch.tensor([0.5, 1.5], requires_grad=True)
    with OpTimer() as t:
        y = (x * x).tanh()
        torch.autograd.grad(y.sum(), x, create_graph=True)
    ops = t.report()["ops"]
    # forward ran Mul, Tanh, Sum; the Tensor-level backward formulas (Mul, Rsub, Expand...) are
    # inside the nodes' windows; only the engine's gradient accumulation (Add) runs between nodes.
    assert ops["Mul"]["forward_calls"] == 1 and ops["Tanh"]["forward_calls"] == 1
    assert "Rsub" not in ops and "Expand" not in ops
    assert {k: v["backward_calls"] for k, v in ops.items() if v["backward_calls"]} == {"Sum": 1, "Tanh": 1, "Mul": 1}


def test_timer_register_handle():
    t = OpTimer()
    h = t.register()
    (torch.ones(2) * 2).sum()
    h.remove()
    (torch.ones(2) * 2).sum()
    assert {k: v["forward_calls"] for k, v in t.report()["ops"].items()} == {"Mul": 1, "Sum": 1}
    _clean()


def test_memory_bytes_per_op_and_module():
    m = _model()
    with MemoryHook(m) as mh:
        _step(m)
    r = mh.report()
    ops = r["ops"]
    assert ops["Addmm"]["forward_bytes"] == (5 * 4 + 5 * 2) * 4 and ops["Addmm"]["forward_allocs"] == 2
    assert ops["Relu"]["forward_bytes"] == 5 * 4 * 4
    assert ops["T"]["forward_bytes"] == 0 and ops["T"]["views"] >= 2      # transposes are views
    assert ops["Sum"]["forward_bytes"] == 4
    # Addmm backward: (2,)+(5,4)+(4,2) for the last layer, (4,)+(3,4) for the first (x needs no grad)
    assert ops["Addmm"]["backward_bytes"] == (2 + 20 + 8 + 4 + 12) * 4
    assert ops["Relu"]["backward_bytes"] == 80
    mods = r["modules"]
    assert mods["1"]["forward_bytes"] == 80 and mods["0"]["forward_bytes"] == 80 and mods["2"]["forward_bytes"] == 40
    assert r["forward_bytes"] == 80 + 80 + 40 + 4
    assert r["peak_bytes"] >= 80 + 80 + 40 and r["peak_bytes"] <= r["forward_bytes"] + r["backward_bytes"]
    assert "peak live bytes" in mh.summary()
    _clean()


def test_hook_time_account_separates_hooks_from_model():
    m = _model()
    before = [(h.kind, h.hook) for h in m[0].hooks()]
    m[0].register_forward_hook(lambda mod, i, o: time.sleep(0.02))
    m[2].register_full_backward_hook(lambda mod, gi, go: time.sleep(0.02))
    x = torch.randn(5, 3)
    with HookTimeAccount(m) as acc:
        y = m(x)
        y.register_hook(lambda g: time.sleep(0.02))
        y.sum().backward()
    r = acc.report()
    assert r["ops"] == 6 and r["nodes"] == 12        # 10 nodes + 2 BackwardHookFunction nodes (output, input)
    assert r["hooks"]["forward"] >= 0.02 and r["hooks"]["backward"] >= 0.04
    assert r["model"]["total"] < 0.02 and r["hook_fraction"] > 0.5
    assert r["wall"] >= r["model"]["total"] + r["hooks"]["total"]
    assert len(m[0].hooks()) == len(before) + 1       # only the user's hook is left
    assert "module forward hooks" in acc.summary()
    r2 = account(m, _step, m)
    assert r2["ops"] == 6 and r2["hooks"]["forward"] >= 0.02
    _clean()
