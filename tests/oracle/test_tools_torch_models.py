"""hookgrad's tools on PyTorch models: the same tool on a torch model and on the hookgrad model holding the same
weights gives the same results (the CNN, the MLP and ResNet-18 of _real_tools_cases.py, in eval mode): the op
tools' call counts per op and per module (torch: TorchDispatchMode + node hooks), trace events, Grad-CAM maps,
gradient statistics, captured NaN locations, the registry's rows and why's findings.

What differs on torch, by design (docs/tools/ophooks.md): in train mode the op tools see the aten ops PyTorch
runs (dropout as bernoulli + div + mul on the CPU, batch norm's num_batches_tracked.add_), and MemoryHook counts
what aten allocates (int64 pooling indices, batch norm's saved statistics, nothing for an in-place op).
"""
import os
import subprocess
import sys
import warnings

import numpy as np
import pytest
import torch

import hookgrad
from hookgrad.tools import (GradCAM, GradientMonitor, HookRegistry, MemoryHook, OpPrinter, OpTimer,
                            detect_nonfinite, feature_maps, trace, why)
from hookgrad.tools.lib import lib_of

import _real_tools_cases as cases

torch.set_num_threads(1)
HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.abspath(os.path.join(HERE, "..", "..", "src"))


def pair(name):
    torch.manual_seed(0)
    t = cases.build(torch, name, on_hookgrad=False)
    h = cases.build(hookgrad, name, on_hookgrad=True)
    h.load_state_dict({k: hookgrad.tensor(v.detach().numpy().copy()) for k, v in t.state_dict().items()})
    return t.eval(), h.eval()


def inputs(name, requires_grad=False):
    x = np.random.default_rng(0).standard_normal((2,) + cases.MODELS[name]).astype(np.float32)
    return torch.tensor(x, requires_grad=requires_grad), hookgrad.tensor(x, requires_grad=requires_grad)


@pytest.fixture(scope="module")
def models():
    return {name: pair(name) for name in cases.MODELS}


def test_the_library_is_worked_out_from_the_objects(models):
    t, h = models["resnet18"]           # the torch ResNet's classes live in a module named hookgrad.models.resnet
    assert lib_of(t).root is torch and lib_of(h).root is hookgrad
    tx, hx = inputs("mlp", requires_grad=True)
    y = (tx * 2).sum()
    assert lib_of(tx).root is torch and lib_of(y.grad_fn).root is torch and lib_of([tx]).root is torch
    assert lib_of(hx).root is hookgrad and lib_of(None).root is hookgrad and lib_of(torch).root is torch
    assert lib_of(torch.optim.SGD([tx], lr=0.1)).is_optimizer(torch.optim.SGD([tx], lr=0.1))


def op_counts(model, x):
    with OpTimer(model) as timer:
        model(x).sum().backward()
    r = timer.report()
    return [{k: (v["forward_calls"], v["backward_calls"]) for k, v in r[by].items()} for by in ("ops", "modules")]


@pytest.mark.parametrize("name", list(cases.MODELS))
def test_op_timer_counts_equal_per_op_and_module(models, name):
    t, h = models[name]
    tx, hx = inputs(name)
    got, want = op_counts(t, tx), op_counts(h, hx)
    assert got == want
    assert got[0]["AccumulateGrad"][1] == len(list(t.parameters()))


def test_op_printer_lines_equal():
    import io
    torch.manual_seed(0)
    t = torch.nn.Sequential(torch.nn.Linear(6, 8), torch.nn.Tanh(), torch.nn.Linear(8, 3), torch.nn.Softmax(1))
    h = hookgrad.nn.Sequential(hookgrad.nn.Linear(6, 8), hookgrad.nn.Tanh(), hookgrad.nn.Linear(8, 3),
                               hookgrad.nn.Softmax(1))
    h.load_state_dict({k: hookgrad.tensor(v.detach().numpy()) for k, v in t.state_dict().items()})
    x = np.random.default_rng(0).standard_normal((4, 6)).astype(np.float32)
    tx, hx = torch.tensor(x), hookgrad.tensor(x)
    outs = []
    for m, x in ((t, tx), (h, hx)):
        buf = io.StringIO()
        with OpPrinter(m, file=buf):
            m(x).sum().backward()
        outs.append(buf.getvalue().splitlines())
    assert outs[0] == outs[1] and len(outs[0]) > 10


def test_memory_hook_bytes_equal_on_an_mlp():
    torch.manual_seed(0)
    t = torch.nn.Sequential(torch.nn.Linear(6, 8), torch.nn.Tanh(), torch.nn.Linear(8, 3), torch.nn.ReLU())
    h = hookgrad.nn.Sequential(hookgrad.nn.Linear(6, 8), hookgrad.nn.Tanh(), hookgrad.nn.Linear(8, 3),
                               hookgrad.nn.ReLU())
    h.load_state_dict({k: hookgrad.tensor(v.detach().numpy()) for k, v in t.state_dict().items()})
    x = np.ones((4, 6), np.float32)
    reports = []
    for m, lib in ((t, torch), (h, hookgrad)):
        xt = lib.tensor(x)
        with MemoryHook(m) as mem:
            m(xt).sum().backward()
        r = mem.report()
        reports.append((r["ops"], r["modules"], r["forward_bytes"], r["backward_bytes"]))
    assert reports[0] == reports[1]
    assert reports[0][0]["Tanh"]["forward_bytes"] == 4 * 8 * 4


def test_op_tools_leave_nothing_behind_and_nest():
    t, _ = pair("mlp")
    tx, _ = inputs("mlp")
    with OpTimer(t) as a, OpTimer(t) as b, detect_nonfinite(t):
        t(tx).sum().backward()
    alone = op_counts(t, tx)[0]
    for timer in (a, b):
        assert {k: (v["forward_calls"], v["backward_calls"]) for k, v in timer.report()["ops"].items()} == alone
    assert all(not m._forward_hooks and not m._forward_pre_hooks for m in t.modules())
    from torch.utils._python_dispatch import _get_current_dispatch_mode
    assert _get_current_dispatch_mode() is None
    y = t(tx).sum()                      # no tool: ops run as before, nothing counted
    y.backward()
    assert a.report()["ops"]["Addmm"]["forward_calls"] == 3 and a.report()["ops"]["Addmm"]["backward_calls"] == 3


@pytest.mark.parametrize("name", ["cnn", "mlp"])
def test_trace_events_equal(models, name):
    t, h = models[name]
    tx, hx = inputs(name, requires_grad=True)
    events = []
    for m, x in ((t, tx), (h, hx)):
        with trace(m, params=True) as tr:
            m(x).sum().backward()
        events.append([(e.phase, e.kind, e.path, e.call, e.shapes, e.hooks) for e in tr.events])
    assert events[0] == events[1] and len(events[0]) > 40


def test_trace_forward_only_on_resnet(models):
    t, h = models["resnet18"]           # in-place ReLUs: full backward observers would raise, in both libraries
    tx, hx = inputs("resnet18")
    events = []
    for m, x in ((t, tx), (h, hx)):
        with trace(m, backward=False) as tr:
            m(x)
        events.append([(e.kind, e.path, e.call, e.shapes) for e in tr.events])
    assert events[0] == events[1]


# (ResNet's layer4 is 1 x 1 at this input size: a constant map, which the upsampling's rounding makes noise of)
@pytest.mark.parametrize("name,layer", [("cnn", "4"), ("resnet18", "layer3"), ("resnet18", "layer2.1.conv2")])
def test_gradcam_maps_equal(models, name, layer):
    t, h = models[name]
    tx, hx = inputs(name)
    t.zero_grad()
    tmaps, tcls = GradCAM(t, layer)(tx)
    hmaps, hcls = GradCAM(h, layer)(hx)
    assert tcls == hcls
    np.testing.assert_allclose(tmaps.numpy(), hmaps.numpy(), atol=2e-5)
    assert all(p.grad is None for p in t.parameters())
    tf, hf = feature_maps(t, "layer*" if name == "resnet18" else "[02]", tx), \
        feature_maps(h, "layer*" if name == "resnet18" else "[02]", hx)
    assert tf.keys() == hf.keys()
    for k in tf:
        np.testing.assert_allclose(tf[k].numpy(), hf[k].numpy(), rtol=1e-4, atol=1e-4)


def test_gradient_monitor_statistics_equal(models):
    t, h = models["cnn"]
    tx, hx = inputs("cnn")
    mons = []
    for m, x in ((t, tx), (h, hx)):
        m.zero_grad()
        with GradientMonitor(m) as mon:
            for _ in range(2):
                m(x).pow(2).sum().backward()
        mons.append(mon)
    for a, b in ((mons[0].history, mons[1].history), (mons[0].module_history, mons[1].module_history)):
        assert a.keys() == b.keys()
        for k in a:
            assert [s["step"] for s in a[k]] == [s["step"] for s in b[k]]
            np.testing.assert_allclose([s["norm"] for s in a[k]], [s["norm"] for s in b[k]], rtol=1e-4)
            assert [s["numel"] for s in a[k]] == [s["numel"] for s in b[k]]


def nan_events(lib, model, x, check):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with detect_nonfinite(model, check=check, raise_=False) as ctx:
            y = model(x)
            (y - y.detach().mean()).sqrt().sum().backward() if check != "forward" else None
    return [(e.phase, e.op, e.node, e.module_path, e.call_index, e.kind, e.upstream, e.output_index)
            for e in ctx.events]


@pytest.mark.parametrize("check", ["forward", "backward", "both"])
def test_detect_nonfinite_locates_the_same_op(check):
    t, h = pair("mlp")
    with torch.no_grad():
        t[2].weight[0, 0] = float("inf")      # Linear '2' makes inf, the Tanh after it NaN... in both
    h[2].weight.data[0, 0] = float("inf")
    tx, hx = inputs("mlp")
    got, want = nan_events(torch, t, tx, check), nan_events(hookgrad, h, hx, check)
    assert got == want and got
    if check != "backward":           # the weight's transpose is the first non-finite output, from upstream
        assert got[0][:4] + got[0][6:7] == ("forward", "T", "TBackward0", "2", True)


def registry_rows(lib, model, x):
    reg = HookRegistry(model)
    reg.register(model[0], "forward", lambda m, a, o: None, tag="f")
    reg.register(model[0], "forward_pre", lambda m, a, k: None, tag="f", with_kwargs=True, prepend=True)
    reg.register("2", "full_backward_pre", lambda m, g: None, tag="b")
    reg.register(model[2].weight, "post_accumulate_grad", lambda p: None, tag="p")
    reg.register([model[0].weight, model[0].bias], "multi_grad", lambda grads: None, tag="multi")
    reg.register("global", "forward", lambda m, a, o: None, tag="g")
    reg.register(model, "load_state_dict_post", lambda m, keys: None, tag="sd")
    model[1].register_forward_hook(lambda m, a, o: None, always_call=True)
    model[0].bias.register_hook(lambda g: None)
    opt = lib.optim.SGD(model.parameters(), lr=0.1)
    reg.register(opt, "step_post", lambda o, a, k: None, tag="opt")
    opt.register_step_pre_hook(lambda o, a, k: None)
    y = model(x).sum()
    reg.register(y.grad_fn, "node", lambda gi, go: None, tag="node")
    y.backward()
    opt.step()
    model.load_state_dict(model.state_dict())
    rows = [(r.kind, r.path, r.tag, r.fired, r.state, r.by) for r in reg.hooks()]
    rows_opt = [(r.kind, r.tag, r.fired) for r in reg.hooks(owner=opt)]
    reg.disable(tag="f")
    model(x)
    skipped = [r.skipped for r in reg.hooks(tag="f")]
    removed = (reg.remove(owner="0", recurse=True), reg.remove(tag="g"), reg.remove_all())
    left = [(r.kind, r.path) for r in reg.hooks()]
    return rows, rows_opt, skipped, removed, left


def test_registry_rows_equal():
    t, h = pair("mlp")
    tx, hx = inputs("mlp")
    got, want = registry_rows(torch, t, tx), registry_rows(hookgrad, h, hx)
    assert got == want
    rows = got[0]
    assert ("forward", "1", None, None, "active", None) in rows and ("grad", "0.bias", None, None, "active", None) in rows
    assert ("node", "SumBackward0", "node", 1, "active", None) in rows
    assert got[1] == [("step_post", "opt", 1), ("step_pre", None, None)]
    assert not torch.nn.modules.module._global_forward_hooks
    assert all(not m._forward_hooks and not m._forward_pre_hooks for m in t.modules())


def why_findings(lib, x):
    nn = lib.nn
    model = nn.Sequential(nn.Linear(3, 4), nn.Linear(4, 2), nn.Linear(2, 2))
    for p in model[0].parameters():
        p.requires_grad_(False)
    reg = HookRegistry(model)
    reg.register(model[0], "full_backward", lambda m, gi, go: None, tag="frozen")   # no grad output
    reg.register(model[2], "forward", lambda m, a, o: None, tag="disabled")
    reg.disable(tag="disabled")
    model[1].weight.register_post_accumulate_grad_hook(lambda p: None)           # direct
    with why.watch(model, registry=reg) as w:
        out = model[1](model[0](x))                                            # model[2] never runs
        t = out * 2
        reg.register(t, "grad", lambda g: None, tag="unused")                  # not in the loss
        out.sum().backward()
    return [(f.record.tag, f.record.path, f.reason) for f in w.report()]


def test_why_findings_equal():
    x = np.ones((2, 3), np.float32)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        got, want = why_findings(torch, torch.tensor(x)), why_findings(hookgrad, hookgrad.tensor(x))
    assert got == want
    assert ("frozen", "0", "no_grad_output") in got and ("unused", None, "backward_not_reached") in got


def _run(code, timeout=120):
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([SRC, os.environ.get("PYTHONPATH", "")]))
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=timeout)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc.stdout


def test_tools_never_import_torch():
    out = _run("import sys, hookgrad\nfrom hookgrad import tools\n"
               "m = hookgrad.nn.Sequential(hookgrad.nn.Linear(2, 2), hookgrad.nn.ReLU())\n"
               "with tools.OpTimer(m) as t, tools.trace(m) as tr, tools.why.watch(m) as w:\n"
               "    m(hookgrad.ones(3, 2)).sum().backward()\n"
               "tools.GradientMonitor(m).remove(); print(tools.HookRegistry(m).table())\n"
               "print('torch' in sys.modules, t.report()['ops']['Addmm']['forward_calls'])")
    assert out.split()[-2:] == ["False", "1"]


def test_under_the_alias_torch_means_hookgrad():
    out = _run("import hookgrad.compat; hookgrad.compat.install()\nimport torch, hookgrad\n"
               "from hookgrad.tools import OpTimer\nfrom hookgrad.tools.lib import lib_of\n"
               "m = torch.nn.Linear(2, 2)\nwith OpTimer(m) as t:\n    m(torch.ones(3, 2)).sum().backward()\n"
               "print(lib_of(m).root is hookgrad, t.report()['ops']['Addmm']['backward_calls'])")
    assert out.split() == ["True", "1"]


def test_registry_and_why_on_torch_ddp():
    out = _run(r'''
import torch, torch.distributed as dist
from hookgrad.tools import why, HookRegistry
dist.init_process_group("gloo", rank=0, world_size=1, store=dist.HashStore())
torch.manual_seed(0)
ddp = torch.nn.parallel.DistributedDataParallel(torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.Linear(4, 2)))
reg = HookRegistry(ddp)
x = torch.randn(5, 3)
def hook(state, bucket):
    fut = torch.futures.Future(); fut.set_result(bucket.buffer()); return fut
with why.watch(ddp, registry=reg) as w:
    with ddp.no_sync():
        ddp(x).sum().backward()
    reg.register(ddp, "comm", hook, tag="comm")
print([(f.record.kind, f.reason) for f in w.report()])
ddp(x).sum().backward()
print([(r.kind, r.tag, r.fired, r.state) for r in reg.hooks()])
try:
    reg.remove(tag="comm")
except RuntimeError as e:
    print("cannot remove" if "cannot be removed" in str(e) else e)
dist.destroy_process_group()
''')
    assert out.splitlines() == ["[('comm', 'no_sync')]", "[('comm', 'comm', 1, 'active')]", "cannot remove"]


def test_op_tools_keep_no_graph_alive_on_torch():
    """The node hooks hold no reference to their node (a cycle through C++ the collector cannot free)."""
    import gc
    import weakref
    t, _ = pair("mlp")
    tx, _ = inputs("mlp")
    refs = []
    with OpTimer(t) as timer, detect_nonfinite(t):
        for _ in range(5):
            y = t(tx)
            refs.append(weakref.ref(y))
            y.sum().backward()
            del y
        gc.collect()
        assert sum(r() is not None for r in refs) == 0
    assert timer.report()["ops"]["Addmm"]["backward_calls"] == 15


def test_registry_without_a_model_on_torch_global_hooks():
    reg = HookRegistry(lib=torch)
    seen = []
    h = reg.register("global", "forward_pre", lambda m, a: seen.append(type(m).__name__), tag="g")
    try:
        torch.nn.Linear(2, 2)(torch.ones(1, 2))
        assert seen == ["Linear"] and reg.hooks(tag="g")[0].fired == 1
        assert [(r.kind, r.path, r.tag) for r in reg.hooks(owner="global")] == [("forward_pre", "<global>", "g")]
    finally:
        h.remove()
    assert not torch.nn.modules.module._global_forward_pre_hooks
    assert reg.hooks(tag="g") == [] and reg.hooks(tag="g", removed=True)[0].state == "removed"


def test_tools_on_a_transformers_bert_in_torch(monkeypatch):
    """A real PyTorch library model (keyword arguments, dict-like outputs, 2 layers): the tools run on it."""
    if "torchvision" not in sys.modules:            # torchvision's wheel does not load beside this torch
        monkeypatch.setitem(sys.modules, "torchvision", None)
    transformers = pytest.importorskip("transformers")
    cfg = transformers.BertConfig(vocab_size=50, hidden_size=16, num_hidden_layers=2, num_attention_heads=2,
                                  intermediate_size=32, max_position_embeddings=16)
    torch.manual_seed(0)
    m = transformers.BertModel(cfg).eval()
    ids = torch.randint(0, 50, (2, 7))
    with OpTimer(m) as timer, detect_nonfinite(m) as nan:
        m(input_ids=ids).last_hidden_state.sum().backward()
    mods = timer.report()["modules"]
    assert mods["encoder.layer.1.output.dense"]["forward_calls"] == 4          # a 3-d input: view, t, addmm, view
    assert nan.events == [] and timer.report()["ops"]["AccumulateGrad"]["backward_calls"] == \
        sum(1 for p in m.parameters() if p.grad is not None)
    with trace(m, backward=False) as tr:
        m(input_ids=ids)
    calls = [e for e in tr.events if e.kind == "forward"]
    assert len(tr.events) == 2 * len(calls) and calls[-1].path == ""
    reg = HookRegistry(m)
    reg.register("encoder.layer.0.attention", "forward", lambda mod, a, o: None, tag="x")
    reg.register("pooler", "full_backward", lambda mod, gi, go: None, tag="y")
    with why.watch(m, registry=reg) as w:
        m(input_ids=ids).last_hidden_state.sum().backward()            # the pooler's output is not in the loss
    assert [(f.record.tag, f.reason) for f in w.report()] == [("y", "backward_not_reached")]
    acts = feature_maps(m, "encoder.layer.*.output", ids)
    assert sorted(acts) == ["encoder.layer.0.attention.output", "encoder.layer.0.output",
                            "encoder.layer.1.attention.output", "encoder.layer.1.output"]
    np.testing.assert_allclose(acts["encoder.layer.1.output"].numpy(),
                               m(input_ids=ids).last_hidden_state.detach().numpy(), atol=1e-6)


def global_optimizer_rows(lib):
    reg = HookRegistry(lib=lib)
    p = lib.nn.Parameter(lib.ones(2))
    opt = lib.optim.SGD([p], lr=0.1)
    h1 = reg.register("global", "step_pre", lambda o, a, k: None, tag="pre")
    import importlib
    optimizer_mod = importlib.import_module(lib.__name__ + ".optim.optimizer")
    h2 = optimizer_mod.register_optimizer_step_post_hook(lambda o, a, k: None)          # direct
    try:
        p.sum().backward()
        opt.step()
        rows = [(r.kind, r.path, r.tag, r.fired) for r in reg.hooks(owner="global")]
    finally:
        h1.remove()
        h2.remove()
    return rows, [(r.kind, r.state) for r in reg.hooks(removed=True)]


def test_registry_global_optimizer_hooks_equal():
    got, want = global_optimizer_rows(torch), global_optimizer_rows(hookgrad)
    assert got == want
    assert got[0] == [("step_pre", "<global>", "pre", 1), ("step_post", "<global>", None, None)]
    import torch.optim.optimizer as topt
    assert not topt._global_optimizer_pre_hooks and not topt._global_optimizer_post_hooks
