"""hookgrad.tools.trace without torch: event sequences, observers removed, legacy hooks skipped,
well-formed self-contained HTML/SVG, grad_fn graph names."""
import re
import warnings
import xml.etree.ElementTree as ET
from html.parser import HTMLParser

import pytest

import hookgrad as torch
from hookgrad import nn
from hookgrad.nn.modules.module import register_module_forward_hook
from hookgrad.tools.trace import TraceEvent, grad_fn_graph, trace

SVG = "{http://www.w3.org/2000/svg}"


def small():
    torch.manual_seed(0)
    shared = nn.Linear(3, 3)
    return nn.Sequential(shared, nn.Sequential(nn.ReLU(), shared))   # one module at two paths


def test_event_sequence_of_a_shared_module_and_nested_sequential():
    model = small()
    x = torch.randn(2, 3, requires_grad=True)
    with trace(model) as t:
        model(x).sum().backward()
    got = [(e.step, e.phase, e.kind, e.path, e.call) for e in t.events]
    F, B = "forward", "backward"
    assert got == [
        (0, F, "forward_pre", "", 0), (1, F, "forward_pre", "0", 0), (2, F, "forward", "0", 0),
        (3, F, "forward_pre", "1", 0), (4, F, "forward_pre", "1.0", 0), (5, F, "forward", "1.0", 0),
        (6, F, "forward_pre", "0", 1), (7, F, "forward", "0", 1),            # the shared Linear, 2nd call
        (8, F, "forward", "1", 0), (9, F, "forward", "", 0),
        (10, B, "backward_pre", "", None), (11, B, "backward_pre", "1", None), (12, B, "backward_pre", "0", None),
        (13, B, "full_backward", "0", None), (14, B, "backward_pre", "1.0", None),
        (15, B, "full_backward", "1.0", None), (16, B, "full_backward", "1", None),
        (17, B, "backward_pre", "0", None), (18, B, "full_backward", "0", None), (19, B, "full_backward", "", None)]
    assert t.events[2].shapes == {"args": [(2, 3)], "output": (2, 3)}
    assert t.events[18].shapes == {"grad_input": [(2, 3)], "grad_output": [(2, 3)]}
    assert isinstance(t.events[0], TraceEvent)
    assert all(m.hooks() == [] for m in model.modules())        # observers removed
    assert "forward_pre" in t.format() and "1.0" in t.format()


def test_user_hooks_are_named_where_they_intercept_and_left_untouched():
    model = small()
    calls = []

    def seen(m, args, out):
        calls.append("user")

    model[1][0].register_forward_hook(seen)
    g = register_module_forward_hook(lambda m, a, o: None)
    try:
        with trace(model, backward=False) as t:
            model(torch.randn(2, 3))
    finally:
        g.remove()
    ev = {(e.kind, e.path): e.hooks for e in t.events}
    assert ev[("forward", "1.0")] == ("forward:test_user_hooks_are_named_where_they_intercept_and_left_untouched.<lambda> (global)", "forward:test_user_hooks_are_named_where_they_intercept_and_left_untouched.seen")
    assert ev[("forward_pre", "1.0")] == ()
    assert calls == ["user"]
    assert [i.hook for i in model[1][0].hooks()] == [seen]
    assert all(e.phase == "forward" for e in t.events) and len(t.events) == 10


def test_forward_error_still_recorded_and_observers_removed():
    class Boom(nn.Module):
        def forward(self, x):
            raise ValueError("boom")

    model = nn.Sequential(nn.Linear(2, 2), Boom())
    with pytest.raises(ValueError, match="boom"):
        with trace(model) as t:
            model(torch.randn(1, 2))
    assert [(e.kind, e.path, e.shapes.get("output", "-")) for e in t.events][-2:] == \
        [("forward", "1", None), ("forward", "", None)]       # always_call observers saw the failure
    assert all(m.hooks() == [] for m in model.modules())


def test_legacy_backward_hook_module_is_skipped_not_mixed():
    model = nn.Sequential(nn.Linear(2, 2), nn.Tanh())
    got = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model[1].register_backward_hook(lambda m, gi, go: got.append(len(gi)))
        with trace(model) as t:
            model(torch.randn(3, 2, requires_grad=True)).sum().backward()
    assert "1" in t.skipped and "legacy" in t.skipped["1"]
    kinds = [(e.kind, e.path) for e in t.events if e.phase == "backward"]
    assert ("backward_pre", "1") not in kinds and ("full_backward", "0") in kinds
    assert got == [1]                                         # the legacy hook still fired
    assert [i.kind for i in model[1].hooks()] == ["backward"]
    assert "No backward observers" in t.to_html()


def test_params_and_watch_and_nodes():
    torch.manual_seed(0)
    lin = nn.Linear(3, 2)
    x = torch.randn(4, 3, requires_grad=True)
    with trace(lin, params=True, backward=False) as t:
        y = lin(x)
        loss = t.watch((y * y).sum(), "loss", nodes=True)
        loss.backward()
    got = [(e.kind, e.path) for e in t.events if e.phase == "backward"]
    assert got == [
        ("grad", "loss"), ("node_pre", "SumBackward0"), ("node_post", "SumBackward0"),
        ("node_pre", "MulBackward0"), ("node_post", "MulBackward0"),
        ("node_pre", "AddmmBackward0"), ("node_post", "AddmmBackward0"),
        ("grad", "bias"), ("node_pre", "AccumulateGrad(bias)"), ("post_accumulate_grad", "bias"),
        ("node_post", "AccumulateGrad(bias)"),
        ("node_pre", "torch::autograd::AccumulateGrad"), ("node_post", "torch::autograd::AccumulateGrad"),  # x
        ("node_pre", "TBackward0"), ("node_post", "TBackward0"),
        ("grad", "weight"), ("node_pre", "AccumulateGrad(weight)"), ("post_accumulate_grad", "weight"),
        ("node_post", "AccumulateGrad(weight)")]
    assert loss.grad_fn.next_functions[0][0] is not None
    assert lin.weight.hooks() == [] and loss.hooks() == []
    with pytest.raises(RuntimeError, match="inside the `with trace"):
        t.watch(loss)
    with trace(lin) as t2, pytest.raises(RuntimeError, match="'z' does not require grad"):
        t2.watch(torch.ones(2), "z")
    with pytest.raises(TypeError, match="nn.Module"):
        trace(x)


class Checker(HTMLParser):
    VOID = {"br", "meta", "img", "hr", "input", "link"}

    def __init__(self):
        super().__init__()
        self.stack, self.tags, self.errors = [], [], []

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))
        if tag not in self.VOID:
            self.stack.append(tag)

    def handle_startendtag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))

    def handle_endtag(self, tag):
        if not self.stack or self.stack[-1] != tag:
            self.errors.append(f"unexpected </{tag}> with open {self.stack[-3:]}")
        else:
            self.stack.pop()


def test_html_is_well_formed_self_contained_and_mentions_every_module(tmp_path):
    model = small()
    model[1].register_forward_pre_hook(lambda m, a: None)
    x = torch.randn(2, 3, requires_grad=True)
    with trace(model, params=True) as t:
        loss = model(x).sum()
        loss.backward()
    page = t.to_html(tmp_path / "t.html", grad_fn=loss, title="a <b> & c")
    assert (tmp_path / "t.html").read_text(encoding="utf-8") == page
    c = Checker()
    c.feed(page)
    c.close()
    assert c.errors == [] and c.stack == []
    assert not any(tag in ("script", "link", "img") for tag, _ in c.tags)
    assert not re.search(r"(src|href)\s*=", page)              # no external assets
    svgs = re.findall(r"<svg.*?</svg>", page, re.S)
    assert len(svgs) == 2
    tree = ET.fromstring(svgs[0])
    texts = " ".join("".join(el.itertext()) for el in tree.iter(SVG + "text"))
    for path, _ in model.named_modules():
        assert (path or "(root)") in texts, path
    assert "forward_pre:test_html_is_well_formed_self_contained_and_mentions_every_module.<lambda>" in texts
    # one marker per event, numbered in order; forward arrows go down or stay, the backward ones up
    nums = [el.text for el in tree.iter(SVG + "text") if el.get("class") == "num"]
    assert nums == [str(i) for i in range(len(t.events))]
    flows = [(el.get("class"), float(el.get("y1")), float(el.get("y2"))) for el in tree.iter(SVG + "line")
             if (el.get("class") or "").startswith("flow-")]
    assert len(flows) == len(t.events) - 1
    assert flows[0] == ("flow-forward", 40.0, 66.0)          # root row -> row of "0" (one row lower)
    assert {c for c, _, _ in flows} == {"flow-forward", "flow-backward"}
    assert "a &lt;b&gt; &amp; c" in page
    rows = page.count("<tr class=")
    assert rows == len(t.events)
    ET.fromstring(svgs[1])


def test_grad_fn_graph_names_labels_and_hook_marks(tmp_path):
    x = torch.randn(3, 4, requires_grad=True)
    w = torch.randn(4, 2, requires_grad=True)
    w.register_hook(lambda g: g)
    y = ((x @ w).tanh() * 2).sum()
    svg = grad_fn_graph(y, {"x": x, "w": w}, path=tmp_path / "g.html")
    root = ET.fromstring(svg)
    texts = [el.text for el in root.iter(SVG + "text")]
    for name in ("SumBackward0", "MulBackward0", "TanhBackward0", "MmBackward0",
                 "AccumulateGrad(x)", "AccumulateGrad(w)"):
        assert name in texts
    hooked = [g for g in root.iter(SVG + "g") if "hooked" in (g.get("class") or "")]
    assert len(hooked) == 1 and "AccumulateGrad(w)" in "".join(hooked[0].itertext())
    assert "grad:test_grad_fn_graph_names_labels_and_hook_marks.<lambda>" in texts
    assert len([el for el in root.iter(SVG + "line")]) == 5    # Sum>Mul>Tanh>Mm>(x, w)
    assert "<svg" in (tmp_path / "g.html").read_text(encoding="utf-8")
    # unnamed leaves show their shape; repeated names get #k
    z = (x * x) * x
    texts = [el.text for el in ET.fromstring(grad_fn_graph(z)).iter(SVG + "text")]
    assert "MulBackward0#0" in texts and "MulBackward0#1" in texts and "leaf (3, 4)" in texts
    with pytest.raises(RuntimeError, match="no grad_fn"):
        grad_fn_graph(x)
