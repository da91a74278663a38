"""hookgrad.tools.trace against torch: the recorded event order equals the order in which plain torch
hooks, registered the same way (pre-hooks prepended, post-hooks appended) on the same model, fire;
the grad_fn graph has torch's node names; tracing leaves values and grads unchanged."""
import numpy as np
import torch

import hookgrad
from hookgrad.tools.trace import grad_fn_graph, trace, _walk


def build(lib):
    """Sequential inside Sequential, a submodule called twice, a user pre-hook that changes the input
    and a user full backward hook that scales grad_input."""
    nn = lib.nn

    class Twice(nn.Module):
        def __init__(self):
            super().__init__()
            self.block = nn.Sequential(nn.Linear(4, 4), nn.Tanh())

        def forward(self, x):
            return self.block(self.block(x)) * 0.5

    model = nn.Sequential(nn.Linear(3, 4), nn.Sequential(nn.ReLU(), Twice()), nn.Linear(4, 2))
    rng = np.random.default_rng(1)
    with lib.no_grad():
        for _, p in model.named_parameters():
            p.copy_(lib.tensor(rng.standard_normal(tuple(p.shape)).astype(np.float32)))

    def double_input(m, args):
        return (args[0] * 2,)

    def halve_grad(m, gin, gout):
        return tuple(None if g is None else g * 0.5 for g in gin)

    model[2].register_forward_pre_hook(double_input)
    model[1][1].register_full_backward_hook(halve_grad)
    return model


def shp(x, lib):
    if isinstance(x, lib.Tensor):
        return tuple(x.shape)
    if x is None:
        return None
    if isinstance(x, (tuple, list)):
        return [shp(v, lib) for v in x]
    return type(x).__name__


def torch_reference(model, x, watch_nodes):
    """The same observation done by hand with plain torch hooks."""
    ev, calls, open_, handles = [], {}, {}, []
    for path, mod in model.named_modules():
        def pre(m, args, path=path):
            c = calls.get(path, 0)
            calls[path] = c + 1
            open_.setdefault(path, []).append(c)
            ev.append(("forward_pre", path, c, {"args": shp(args, torch)}))

        def post(m, args, out, path=path):
            ev.append(("forward", path, open_[path].pop(), {"args": shp(args, torch), "output": shp(out, torch)}))

        def bpre(m, go, path=path):
            ev.append(("backward_pre", path, None, {"grad_output": shp(go, torch)}))

        def bpost(m, gi, go, path=path):
            ev.append(("full_backward", path, None, {"grad_input": shp(gi, torch), "grad_output": shp(go, torch)}))

        handles += [mod.register_forward_pre_hook(pre, prepend=True), mod.register_forward_hook(post, always_call=True),
                    mod.register_full_backward_pre_hook(bpre, prepend=True), mod.register_full_backward_hook(bpost)]
    for name, p in model.named_parameters():
        handles.append(p.register_hook(lambda g, name=name: ev.append(("grad", name, None, {"grad": shp(g, torch)}))))
        handles.append(p.register_post_accumulate_grad_hook(
            lambda p, name=name: ev.append(("post_accumulate_grad", name, None, {"grad": shp(p.grad, torch)}))))
    y = model(x)
    loss = (y * y).sum()
    handles.append(x.register_hook(lambda g: ev.append(("grad", "x", None, {"grad": shp(g, torch)}))))
    handles.append(x.register_post_accumulate_grad_hook(
        lambda p: ev.append(("post_accumulate_grad", "x", None, {"grad": shp(p.grad, torch)}))))
    handles.append(loss.register_hook(lambda g: ev.append(("grad", "loss", None, {"grad": shp(g, torch)}))))
    if watch_nodes:
        # label nodes as name#k in BFS discovery order, AccumulateGrad by parameter name
        pname = {id(p): n for n, p in model.named_parameters()}
        pname[id(x)] = "x"
        order, seen = [loss.grad_fn], {loss.grad_fn}
        for n in order:
            for nxt, _ in n.next_functions:
                if nxt is not None and nxt not in seen:
                    seen.add(nxt)
                    order.append(nxt)
        counts, k = {}, {}
        for n in order:
            counts[n.name()] = counts.get(n.name(), 0) + 1
        for n in order:
            var = getattr(n, "variable", None)
            if var is not None:
                label = f"AccumulateGrad({pname[id(var)]})"
            else:
                label = n.name() if counts[n.name()] == 1 else f"{n.name()}#{k.get(n.name(), 0)}"
            k[n.name()] = k.get(n.name(), 0) + 1
            handles.append(n.register_prehook(
                lambda go, label=label: ev.append(("node_pre", label, None, {"grad_outputs": shp(go, torch)}))))
            handles.append(n.register_hook(lambda gi, go, label=label: ev.append(
                ("node_post", label, None, {"grad_inputs": shp(gi, torch), "grad_outputs": shp(go, torch)}))))
    loss.backward()
    for h in handles:
        h.remove()
    return ev, y, loss


def run_hookgrad(model, x, watch_nodes):
    with trace(model, params=True) as t:
        y = model(x)
        loss = (y * y).sum()
        t.watch(x, "x")
        t.watch(loss, "loss", nodes=watch_nodes)
        loss.backward()
    return t, y, loss


def test_event_order_equals_torch_hooks_registered_the_same_way():
    xs = np.random.default_rng(2).standard_normal((5, 3)).astype(np.float32)
    for watch_nodes in (False, True):
        tm, hm = build(torch), build(hookgrad)
        tx = torch.tensor(xs, requires_grad=True)
        hx = hookgrad.tensor(xs, requires_grad=True)
        ref, ty, tl = torch_reference(tm, tx, watch_nodes)
        t, hy, hl = run_hookgrad(hm, hx, watch_nodes)
        got = [(e.kind, e.path, e.call, e.shapes) for e in t.events]
        assert len(got) == len(ref)
        for i, (g, r) in enumerate(zip(got, ref)):
            assert g == r, f"event {i}: hookgrad {g} vs torch {r}"
        assert [e.step for e in t.events] == list(range(len(ref)))
        assert [e.phase for e in t.events] == ["forward" if r[0].startswith("forward") else "backward" for r in ref]
        # the module called twice is traced twice, with call indices 0 and 1
        assert [(k, c) for k, p, c, _ in got if p == "1.1.block.0" and k.startswith("forward")] == \
            [("forward_pre", 0), ("forward", 0), ("forward_pre", 1), ("forward", 1)]
        # the user's hooks are named where they intercept
        assert [e.hooks for e in t.events if e.path == "2" and e.kind == "forward_pre"] == [("forward_pre:build.double_input",)]
        assert [e.hooks for e in t.events if e.path == "1.1" and e.kind == "full_backward"] == [("full_backward:build.halve_grad",)]
        # values and grads equal torch's (the trace changed nothing, user hooks included)
        np.testing.assert_allclose(hy.detach().numpy(), ty.detach().numpy(), rtol=1e-5, atol=1e-5)
        np.testing.assert_allclose(hx.grad.numpy(), tx.grad.numpy(), rtol=1e-5, atol=1e-5)
        for (n, hp), (_, tp) in zip(hm.named_parameters(), tm.named_parameters()):
            np.testing.assert_allclose(hp.grad.numpy(), tp.grad.numpy(), rtol=1e-5, atol=1e-5, err_msg=n)
        # every observer is gone: only the user's two hooks remain
        assert [(p, [i.kind for i in m.hooks()]) for p, m in hm.named_modules() if m.hooks()] == \
            [("1.1", ["full_backward"]), ("2", ["forward_pre"])]
        assert all(p.hooks() == [] for p in hm.parameters()) and hx.hooks() == []


def test_trace_does_not_change_grads():
    xs = np.random.default_rng(3).standard_normal((5, 3)).astype(np.float32)
    m1, m2 = build(hookgrad), build(hookgrad)
    x1, x2 = hookgrad.tensor(xs, requires_grad=True), hookgrad.tensor(xs, requires_grad=True)
    (m1(x1) ** 2).sum().backward()
    run_hookgrad(m2, x2, True)
    np.testing.assert_array_equal(x1.grad.numpy(), x2.grad.numpy())
    for p1, p2 in zip(m1.parameters(), m2.parameters()):
        np.testing.assert_array_equal(p1.grad.numpy(), p2.grad.numpy())


def torch_names(fn):
    order, seen = [fn], {fn}
    edges = []
    for n in order:
        for nxt, _ in n.next_functions:
            if nxt is None:
                continue
            edges.append((n.name(), nxt.name()))
            if nxt not in seen:
                seen.add(nxt)
                order.append(nxt)
    return [n.name() for n in order], edges


def test_grad_fn_graph_node_names_equal_torchs():
    xs = np.random.default_rng(4).standard_normal((3, 4)).astype(np.float32)
    ws = np.random.default_rng(5).standard_normal((4, 2)).astype(np.float32)
    out = {}
    for lib in (torch, hookgrad):
        x = lib.tensor(xs, requires_grad=True)
        w = lib.tensor(ws, requires_grad=True)
        y = ((x @ w).tanh() * x.sum(1, keepdim=True)).exp().mean() + w.pow(2).sum()
        out[lib] = (y, {"x": x, "w": w})
    t_names, t_edges = torch_names(out[torch][0].grad_fn)
    y, params = out[hookgrad]
    nodes, edges = _walk(y.grad_fn, params)
    assert [n.name() for n, _, _ in nodes] == t_names
    assert [(nodes[i][0].name(), nodes[j][0].name()) for i, j in edges] == t_edges
    svg = grad_fn_graph(y, params)
    import xml.etree.ElementTree as ET
    root = ET.fromstring(svg)
    texts = [el.text for el in root.iter("{http://www.w3.org/2000/svg}text")]
    for name in set(t_names) - {"torch::autograd::AccumulateGrad"}:
        assert name in texts, name
    assert "AccumulateGrad(x)" in texts and "AccumulateGrad(w)" in texts
    assert len(list(root.iter("{http://www.w3.org/2000/svg}line"))) == len(t_edges)
