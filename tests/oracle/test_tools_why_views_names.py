"""tools.why on hooks registered on views (issue 25, item 3) and on canonical hook names (item 11): each case
runs on hookgrad and on PyTorch, and the findings are the same on both."""
import warnings

import numpy as np
import pytest
import torch

import hookgrad
from hookgrad.tools import why
from hookgrad.tools.registry import HookRegistry

LIBS = [hookgrad, torch]


def _mlp(lib):
    lib.manual_seed(0)
    return lib.nn.Sequential(lib.nn.Linear(3, 4), lib.nn.Tanh(), lib.nn.Linear(4, 2))


def _x(lib, requires_grad=False):
    return lib.tensor(np.linspace(-1, 1, 15, dtype=np.float32).reshape(5, 3), requires_grad=requires_grad)


def _rows(w):
    return [(f.record.tag if f.record.tag is not None else f.record.path, f.reason) for f in w.report()]


def slice_of_module_output(lib):
    """The loss uses the module output whole; the hook sits on a slice of it."""
    m = _mlp(lib)
    reg = HookRegistry(m)
    with why.watch(m, registry=reg) as w:
        h = m[0](_x(lib))
        cls = h[:, 0]
        reg.register(cls, "grad", lambda g: None, tag="cls")
        m[2](m[1](h)).sum().backward()
    return _rows(w)


def slice_of_dead_output(lib):
    """Neither the slice nor its base (a module output) reach the loss."""
    m = _mlp(lib)
    reg = HookRegistry(m)
    with why.watch(m, registry=reg) as w:
        h = m[0](_x(lib))
        cls = h[:, 0]
        reg.register(cls, "grad", lambda g: None, tag="cls")
        m[0](_x(lib)).sum().backward()
    return _rows(w)


def slice_in_graph(lib):
    """The loss is computed through the slice: its hook fires, nothing to report."""
    m = _mlp(lib)
    reg = HookRegistry(m)
    fired = []
    with why.watch(m, registry=reg) as w:
        h = m[0](_x(lib))
        cls = h[:, 0]
        reg.register(cls, "grad", fired.append, tag="cls")
        (m[2](m[1](h)).sum() + cls.sum()).backward()
    assert len(fired) == 1
    return _rows(w)


def direct_hooks_on_given_tensors(lib):
    """Hooks registered directly on views given as tensors=: of a used leaf, of an unused leaf, of a used view."""
    m = _mlp(lib)
    leaf = _x(lib, requires_grad=True)
    unused = lib.zeros(5, 3, requires_grad=True)
    rows, dead, used = leaf[1:], unused[:2], leaf[:2]
    fired = []
    for t in (rows, dead, used):
        t.register_hook(lambda g: None)
    used.register_hook(fired.append)
    with why.watch(m, tensors={"rows": rows, "dead": dead, "used": used}) as w:
        (m(leaf).sum() + used.sum()).backward()
    assert len(fired) == 1
    return _rows(w)


def leaf_base_without_tensors(lib):
    """A registry hook on a view of a leaf (not given in tensors=): the leaf's .grad is the evidence."""
    m = _mlp(lib)
    reg = HookRegistry(m)
    leaf = _x(lib, requires_grad=True)
    with why.watch(m, registry=reg) as w:
        v = leaf[0]
        reg.register(v, "grad", lambda g: None, tag="row0")
        m(leaf).sum().backward()
    return _rows(w)


def base_not_observed(lib):
    """The base is an intermediate outside any module and was not given: what to try is said."""
    m = _mlp(lib)
    reg = HookRegistry(m)
    leaf = _x(lib, requires_grad=True)
    with why.watch(m, registry=reg) as w:
        y = leaf * 2
        v = y[0]
        reg.register(v, "grad", lambda g: None, tag="row0")
        m(y).sum().backward()
    return _rows(w)


def base_without_grad(lib):
    """A view made to require grad over a base that does not: register_view_hook cannot help."""
    m = _mlp(lib)
    reg = HookRegistry(m)
    base = lib.zeros(5, 3)
    v = base[1:]
    v.requires_grad_()
    with why.watch(m, registry=reg) as w:
        reg.register(v, "grad", lambda g: None, tag="v")
        m(_x(lib, requires_grad=True)).sum().backward()
    return _rows(w)


def direct_hooks_on_given_plain_tensors(lib):
    """Direct hooks on tensors that are not views, given as tensors=: reported only when provably missed."""
    m = _mlp(lib)
    x = _x(lib, requires_grad=True)
    used, unused, leaf = x * 2, x * 3, lib.zeros(3, requires_grad=True)
    for t in (x, used, unused, leaf):
        t.register_hook(lambda g: None)
    with why.watch(m, tensors={"x": x, "used": used, "unused": unused, "leaf": leaf}) as w:
        m(used).sum().backward()
    return _rows(w)


CASES = {
    slice_of_module_output: [("cls", "view_not_in_graph")],
    slice_of_dead_output: [("cls", "view_base_not_reached")],
    slice_in_graph: [],
    direct_hooks_on_given_tensors: [("rows", "view_not_in_graph"), ("dead", "view_base_not_reached")],
    leaf_base_without_tensors: [("row0", "view_not_in_graph")],
    base_not_observed: [("row0", "view_unknown")],
    base_without_grad: [("v", "view_cannot")],
    direct_hooks_on_given_plain_tensors: [("unused", "backward_not_reached"), ("leaf", "backward_not_reached")],
}


@pytest.mark.parametrize("case", list(CASES), ids=lambda f: f.__name__)
def test_view_hook_findings_equal_on_both_libraries(case):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        got = {lib.__name__: case(lib) for lib in LIBS}
    assert got["hookgrad"] == got["torch"] == CASES[case]


def test_view_finding_messages_name_the_fix_and_the_shapes():
    m = _mlp(hookgrad)
    reg = HookRegistry(m)
    with why.watch(m, registry=reg) as w:
        h = m[0](_x(hookgrad))
        cls = h[:, 0]
        reg.register(cls, "grad", lambda g: None, tag="cls")
        m[2](m[1](h)).sum().backward()
    [f] = w.report()
    assert "register_view_hook(view, fn)" in f.message and "(shape (5,))" in f.message
    assert "(shape (5, 4))" in f.message and "[view_not_in_graph]" in str(f)
    with why.watch(m, registry=reg) as w:
        v = hookgrad.zeros(5, 3)[1:]
        v.requires_grad_()
        reg.register(v, "grad", lambda g: None, tag="v")
    assert "its base does not require grad" in w.report()[0].message


def test_register_view_hook_fires_where_why_says_so():
    """The fix named by view_not_in_graph works: the view hook fires with the slice of the base's gradient."""
    from hookgrad.tools.view_hooks import register_view_hook
    out = {}
    for lib in LIBS:
        m = _mlp(lib)
        h = m[0](_x(lib))
        seen = []
        register_view_hook(h[:, 0], seen.append)
        m[2](m[1](h)).sum().backward()
        out[lib.__name__] = seen[0].detach().numpy()
    np.testing.assert_allclose(out["hookgrad"], out["torch"], rtol=1e-5, atol=1e-6)


def _gpt(lib, blocks=2):
    """GPT-2's module names (Hugging Face layout), tiny: enough for the names to resolve."""
    nn = lib.nn
    g = nn.Module()
    g.wte, g.wpe, g.ln_f = nn.Embedding(10, 4), nn.Embedding(8, 4), nn.LayerNorm(4)
    g.h = nn.ModuleList()
    for _ in range(blocks):
        b = nn.Module()
        b.ln_1, b.ln_2, b.attn, b.mlp = nn.LayerNorm(4), nn.LayerNorm(4), nn.Module(), nn.Module()
        b.attn.c_attn, b.attn.c_proj, b.attn.attn_dropout = nn.Linear(4, 12), nn.Linear(4, 4), nn.Dropout(0.0)
        b.mlp.c_fc, b.mlp.act, b.mlp.c_proj = nn.Linear(4, 16), nn.GELU(), nn.Linear(16, 4)
        g.h.append(b)
    return g


NAMES = ["blocks.0.attn.hook_pattern", "blocks.1.attn.hook_k", "blocks.5.hook_resid_post", "hook_embd",
         "blocks.0.mlp.hook_psot", "ln_final.hook_normalized", "blocks.0.attn.hook_attn_scores"]


def test_unresolved_names_with_nearest_candidates_equal_on_both_libraries():
    got = {lib.__name__: [(f.name, f.reason, f.detail, f.candidates) for f in why.names(_gpt(lib), NAMES)]
           for lib in LIBS}
    assert got["hookgrad"] == got["torch"]
    rows = {name: (detail, cands) for name, _, detail, cands in got["hookgrad"]}
    assert set(rows) == {"blocks.1.attn.hook_k", "blocks.5.hook_resid_post", "hook_embd", "blocks.0.mlp.hook_psot",
                         "blocks.0.attn.hook_attn_scores"}
    assert "a third of h.1.attn.c_attn" in rows["blocks.1.attn.hook_k"][0]
    assert rows["blocks.5.hook_resid_post"] == ("the model has 2 blocks (0..1)", (
        "blocks.1.hook_resid_post", "blocks.1.hook_resid_pre", "blocks.1.hook_resid_mid"))
    assert rows["hook_embd"][1][0] == "hook_embed"
    assert rows["blocks.0.mlp.hook_psot"][1][0] == "blocks.0.mlp.hook_post"
    assert all(c.startswith("blocks.1.") for c in rows["blocks.1.attn.hook_k"][1])
    assert "pre-softmax" in rows["blocks.0.attn.hook_attn_scores"][0]


@pytest.mark.parametrize("lib", LIBS, ids=lambda lib: lib.__name__)
def test_watch_reports_unresolved_names_after_the_hooks(lib):
    g = _gpt(lib, blocks=1)
    reg = HookRegistry(g)
    reg.register(g.ln_f, "forward", lambda m, a, o: None, tag="never")
    with why.watch(g, registry=reg, names="blocks.3.hook_mlp_out") as w:
        pass
    assert [(getattr(f.record, "tag", None), f.reason) for f in w.report()] == [
        ("never", "never_executed"), (None, "unresolved_name")]
    f = w.report()[1]
    assert f.name == "blocks.3.hook_mlp_out" and f.candidates[0] == "blocks.0.hook_mlp_out"
    assert str(f).startswith("hook name 'blocks.3.hook_mlp_out': [unresolved_name] the model has 1 block (0..0); "
                             "nearest names that resolve: blocks.0.hook_mlp_out")


def test_names_on_a_model_of_no_known_layout():
    for lib in LIBS:
        [f] = why.names(lib.nn.Linear(2, 2), ["blocks.0.hook_resid_pre"])
        assert f.reason == "unresolved_name" and "none of the known layouts" in f.detail and f.candidates == ()
