"""torch.fx under torch and hookgrad: the same model, written once against each library, traces to the same
graph (ops, targets, names), the same generated code and printed graph, and the traced GraphModule computes the
eager model's outputs and gradients, equal to torch's."""
import math
import operator
import os
import sys

import numpy as np
import pytest
import torch

import hookgrad
from oracle import assert_same, to_np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", ".."))
import hookgrad.models.resnet as _hg_resnet  # noqa: E402
from bench.models import _module_under  # noqa: E402

LIBS = (torch, hookgrad)


def leaf_sq(x, y):
    return x * x + y * y


torch.fx.wrap("leaf_sq")
hookgrad.fx.wrap("leaf_sq")


# ---------------------------------------------------------------- the models, written against `lib`
def mlp(lib):
    nn = lib.nn
    return nn.Sequential(nn.Linear(6, 8), nn.ReLU(), nn.Linear(8, 3))


def cnn(lib):
    nn, F = lib.nn, lib.nn.functional

    class CNN(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv1 = nn.Conv2d(3, 4, 3, padding=1)
            self.bn = nn.BatchNorm2d(4)
            self.fc = nn.Linear(4 * 4 * 4, 5)

        def forward(self, x):
            x = F.max_pool2d(F.relu(self.bn(self.conv1(x))), 2)
            x = x.view(x.size(0), -1)
            return F.log_softmax(self.fc(x), dim=1)
    return CNN()


def catnet(lib):
    nn = lib.nn

    class CatNet(nn.Module):
        def __init__(self):
            super().__init__()
            self.branches = nn.ModuleList([nn.Linear(4, 3), nn.Linear(4, 2)])
            self.head0 = nn.Linear(5, 2)
            self.scale = nn.Parameter(lib.ones(5) * 0.5)
            self.register_buffer("shift", lib.arange(5.0))

        def forward(self, x):
            outs = [b(x) for b in self.branches]
            y = lib.cat(outs, dim=1) * self.scale + self.shift
            a, b = y.split([2, 3], dim=-1)
            y = lib.cat([b, a], 1).reshape(-1, y.shape[1])
            y = self.shift - y / (lib.full((5,), 2.0) + y.abs())     # tensors on the left of a Proxy
            return getattr(self, "head0")(y).tanh(), y.sum(dim=1, keepdim=True)
    return CatNet()


def wrapped(lib):
    nn = lib.nn

    class Wrapped(nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = nn.Linear(4, 4)

        def forward(self, x):
            return leaf_sq(self.lin(x), x) + math.sqrt(2.0)
    return Wrapped()


def flagged(lib):
    nn = lib.nn

    class Flagged(nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = nn.Linear(4, 4)

        def forward(self, x, double=True, bias=None):
            y = self.lin(x)
            if double:
                y = y * 2
            if bias is not None:
                y = y + bias
            return lib.sigmoid(y)
    return Flagged()


def _seeded(lib, build):
    """``build(lib)`` with the same weights in both libraries (hookgrad's init, seed 0, copied to torch)."""
    hookgrad.manual_seed(0)
    ref = build(hookgrad)
    if lib is hookgrad:
        return ref
    model = build(lib)
    model.load_state_dict({k: lib.tensor(np.ascontiguousarray(v.detach().numpy()))
                           for k, v in ref.state_dict().items()})
    return model


def _nodes(lib, gm):
    q = lib.fx.node._get_qualified_name
    return [(n.op, n.target if isinstance(n.target, str) else q(n.target), n.name) for n in gm.graph.nodes]


def _traced(build, concrete_args=None):
    out = {}
    for lib in LIBS:
        model = _seeded(lib, build)
        out[lib] = (model, lib.fx.symbolic_trace(model, concrete_args=concrete_args))
    return out


def _run_both(traced, x, train=False):
    """Output and gradients (input and parameters) of the traced modules equal the eager model's and torch's."""
    res = {}
    for lib, (model, gm) in traced.items():
        model.train(train)
        gm.train(train)
        xi = lib.tensor(x, requires_grad=True)
        eager = model(xi)
        out = gm(xi)
        outs = out if isinstance(out, tuple) else (out,)
        eagers = eager if isinstance(eager, tuple) else (eager,)
        for o, e in zip(outs, eagers):
            np.testing.assert_allclose(to_np(o), to_np(e), rtol=1e-6, atol=1e-6)
        loss = sum((o.float() ** 2).sum() for o in outs if isinstance(o, lib.Tensor) and o.requires_grad)
        loss.backward()
        grads = [xi.grad] + [p.grad for _, p in sorted(gm.named_parameters())]
        res[lib] = (outs, grads, sorted(n for n, _ in gm.named_parameters()), sorted(gm.state_dict()))
    (t_out, t_g, t_names, t_sd), (h_out, h_g, h_names, h_sd) = res[torch], res[hookgrad]
    assert t_names == h_names and t_sd == h_sd
    for i, (a, b) in enumerate(zip(t_out, h_out)):
        assert_same(a, b, f"output {i}")
    for i, (a, b) in enumerate(zip(t_g, h_g)):
        if a is None:
            assert b is None
            continue
        assert_same(a, b, f"grad {i}", tol=(1e-4, 1e-4))


def _same_graph(traced):
    (_, tg), (_, hg) = traced[torch], traced[hookgrad]
    assert _nodes(hookgrad, hg) == _nodes(torch, tg)
    assert hg.code == tg.code
    assert str(hg.graph) == str(tg.graph)
    assert hg.print_readable(print_output=False) == tg.print_readable(print_output=False)
    assert str(hg) == str(tg)
    return tg, hg


@pytest.mark.parametrize("build,shape", [(mlp, (5, 6)), (cnn, (2, 3, 8, 8)), (catnet, (3, 4)), (wrapped, (2, 4))],
                         ids=["mlp", "cnn", "cat_getattr", "wrap"])
def test_trace_matches_torch(build, shape):
    traced = _traced(build)
    _same_graph(traced)
    x = np.random.default_rng(0).standard_normal(shape).astype(np.float32)
    _run_both(traced, x)
    if build is cnn:
        _run_both(traced, x, train=True)


def test_wrap_and_autowrap_are_leaves():
    tg, hg = _same_graph(_traced(wrapped))
    calls = [(n.op, n.target) for n in hg.graph.nodes if n.op == "call_function"]
    assert calls[0] == ("call_function", leaf_sq) and hg.graph.find_nodes(op="call_function", target=leaf_sq)
    assert "math.sqrt" not in hg.code and "1.4142135623730951" in hg.code   # a constant: math.sqrt(2.0) ran
    assert [n.meta.get("is_wrapped") for n in hg.graph.nodes if n.target is leaf_sq] == [True]


def _resnet_blocks(lib):
    """hookgrad.models.resnet's blocks (torchvision's code) under ``lib``: a BasicBlock and a strided Bottleneck
    with its downsample branch, inside a module that is no leaf."""
    R = _module_under(lib, _hg_resnet)
    nn = lib.nn
    down = nn.Sequential(R.conv1x1(16, 32, 2), nn.BatchNorm2d(32))
    return nn.Sequential(nn.Conv2d(3, 16, 3, padding=1), R.BasicBlock(16, 16), R.Bottleneck(16, 8, 2, down),
                         nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(32, 4))


def test_resnet_blocks():
    traced = _traced(_resnet_blocks)
    tg, hg = _same_graph(traced)
    assert "_2_downsample_0" in [n.name for n in hg.graph.nodes]
    x = np.random.default_rng(0).standard_normal((2, 3, 8, 8)).astype(np.float32)
    _run_both(traced, x)
    _run_both(traced, x, train=True)


@pytest.mark.parametrize("concrete", [{"double": False, "bias": None}, {"double": True, "bias": None}],
                         ids=["false", "true"])
def test_concrete_args(concrete):
    traced = _traced(flagged, concrete_args=concrete)
    tg, hg = _same_graph(traced)
    x = np.random.default_rng(0).standard_normal((2, 4)).astype(np.float32)
    for lib in LIBS:
        model, gm = traced[lib]
        xi = lib.tensor(x)
        np.testing.assert_allclose(to_np(gm(xi, *concrete.values())), to_np(model(xi, **concrete)), rtol=1e-6)
    with pytest.raises(AssertionError, match="has been specialized"):
        hg(hookgrad.tensor(x), not concrete["double"])


def _pytree_args(lib):
    def f(x, d):
        return x + d["a"] * 2, [d["b"]]
    gm = lib.fx.symbolic_trace(f, concrete_args={"d": {"a": lib.fx.PH, "b": lib.fx.PH}})
    out = gm(lib.ones(2), {"a": lib.arange(2.0), "b": lib.zeros(1)})
    return gm.code, str(gm._in_spec), str(gm._out_spec), out[0].tolist(), out[1][0].tolist()


def test_concrete_args_pytree():
    assert _pytree_args(hookgrad) == _pytree_args(torch)


def functional(lib):
    nn, F = lib.nn, lib.nn.functional

    class Functional(nn.Module):
        def __init__(self):
            super().__init__()
            self.w = nn.Parameter(lib.ones(4, 3, 3, 3) * 0.1)
            self.b = nn.Parameter(lib.zeros(4))
            self.lw = nn.Parameter(lib.ones(5, 16) * 0.05)
            self.register_buffer("rm", lib.zeros(4))
            self.register_buffer("rv", lib.ones(4))

        def forward(self, x):
            x = F.conv2d(x, self.w, self.b, padding=1)
            x = F.batch_norm(x, self.rm, self.rv, None, self.b, training=False)
            x = F.interpolate(F.pad(x, (1, 1, 1, 1)), scale_factor=2, mode="nearest")
            x = F.layer_norm(F.adaptive_avg_pool2d(F.avg_pool2d(x, 2), (2, 2)), (2,))
            x = F.dropout(lib.flatten(x, 1), p=0.2, training=self.training)
            x = F.normalize(F.leaky_relu(F.softmax(F.silu(F.gelu(x)), dim=-1), 0.1), dim=1)
            q = x.view(-1, 2, 8)
            a = F.scaled_dot_product_attention(q, q, q)
            y = F.linear(x, self.lw)
            z = lib.matmul(a, a.transpose(-1, -2)).mean() + lib.sum(y, dim=0).max()
            return F.cross_entropy(y, lib.zeros(y.shape[0], dtype=lib.long)) + z + F.mse_loss(y, y.detach())
    return Functional().eval()     # dropout(training=self.training) is fixed at trace time


def test_functional_calls():
    """nn.functional's Python functions record their arguments as PyTorch's hand them to __torch_function__.
    NOTE: PyTorch names its C functions of nn.functional ``torch._C._nn.<name>``; hookgrad (no such module
    functions) prints ``torch.nn.functional.<name>``."""
    traced = _traced(functional)
    (_, tg), (_, hg) = traced[torch], traced[hookgrad]
    assert "torch._C._nn.gelu" in tg.code
    assert hg.code == tg.code.replace("torch._C._nn.", "torch.nn.functional.")
    assert [n for n in _nodes(hookgrad, hg)] == [(op, t.replace("torch._C._nn.", "torch.nn.functional."), name)
                                                   for op, t, name in _nodes(torch, tg)]
    _run_both(traced, np.random.default_rng(4).standard_normal((2, 3, 4, 4)).astype(np.float32))


def _control_flow(lib):
    class If(lib.nn.Module):
        def forward(self, x):
            return x if x.sum() > 0 else -x

    class Loop(lib.nn.Module):
        def forward(self, x):
            return [r for r in x]

    class Len(lib.nn.Module):
        def forward(self, x):
            return x * len(x)
    errors = []
    for m in (If(), Loop(), Len()):
        try:
            lib.fx.symbolic_trace(m)
            errors.append(None)
        except Exception as e:      # noqa: BLE001 -- compared between the libraries
            errors.append((type(e).__name__, str(e)))
    return errors


def test_control_flow_raises_like_torch():
    errors = _control_flow(hookgrad)
    assert errors == _control_flow(torch)
    assert [e[0] for e in errors] == ["TraceError", "TraceError", "RuntimeError"]
    assert issubclass(hookgrad.fx.proxy.TraceError, ValueError)


def _interpret(lib, gm, x):
    from_shape = {}
    lib.fx.passes.shape_prop.ShapeProp(gm).propagate(x)
    for n in gm.graph.nodes:
        m = n.meta.get("tensor_meta")
        if m is not None:
            from_shape[n.name] = (tuple(m.shape), str(m.dtype), m.requires_grad, tuple(m.stride), str(m.memory_format))
    interp = lib.fx.Interpreter(gm, garbage_collect_values=False)
    out = interp.run(x)
    env = {n.name: tuple(v.shape) for n, v in interp.env.items() if isinstance(v, lib.Tensor)}
    boxed = lib.fx.Interpreter(gm).boxed_run([x])
    return from_shape, env, out, boxed


def test_interpreter_and_shape_prop():
    traced = _traced(cnn)
    tg, hg = _same_graph(traced)
    x = np.random.default_rng(1).standard_normal((2, 3, 8, 8)).astype(np.float32)
    for gm in (tg, hg):
        gm.eval()
    t_meta, t_env, t_out, t_boxed = _interpret(torch, tg, torch.tensor(x))
    h_meta, h_env, h_out, h_boxed = _interpret(hookgrad, hg, hookgrad.tensor(x))
    assert h_meta == t_meta and len(h_meta) == 9
    assert h_env == t_env
    assert_same(t_out, h_out)
    assert_same(t_boxed, h_boxed)


def _edit(lib, gm):
    """relu -> silu, an unused node added then removed by dead-code elimination, an add inserted before the
    output, recompile; then the same through a Transformer (sigmoid for tanh)."""
    F = lib.nn.functional
    g = gm.graph
    for n in list(g.nodes):
        if n.op == "call_function" and n.target is F.relu:
            with g.inserting_after(n):
                new = g.call_function(F.silu, n.args)
            n.replace_all_uses_with(new)
            g.erase_node(n)
    out = next(iter(g.find_nodes(op="output")))
    with g.inserting_before(out):
        dead = g.call_function(lib.neg, (out.args[0],))
        plus = g.call_method("add", (out.args[0], 1.0))
    out.replace_input_with(out.args[0], plus)
    assert dead.name == "neg" and dead in g.nodes
    removed = g.eliminate_dead_code()
    g.lint()
    gm.recompile()
    return removed, gm.code, [(n.op, n.name) for n in g.nodes]


def test_graph_edit():
    traced = _traced(cnn)
    tg, hg = _same_graph(traced)
    t_edit, h_edit = _edit(torch, tg), _edit(hookgrad, hg)
    assert h_edit == t_edit and t_edit[0] is True and "silu" in t_edit[1]
    x = np.random.default_rng(2).standard_normal((2, 3, 8, 8)).astype(np.float32)
    for gm in (tg, hg):
        gm.eval()
    assert_same(tg(torch.tensor(x)), hg(hookgrad.tensor(x)))
    # the edited module copies and serialises like any module
    import copy
    hc = copy.deepcopy(hg)
    assert hc.code == hg.code and type(hc) is not type(hg)
    assert_same(tg(torch.tensor(x)), hc(hookgrad.tensor(x)))
    assert sorted(hc.state_dict()) == sorted(tg.state_dict())
    import pickle
    hp = pickle.loads(pickle.dumps(hg))     # NOTE: the graph as it was (PyTorch traces the pickled code again)
    assert hp.code == hg.code and [(n.op, n.target, n.name) for n in hp.graph.nodes] == \
        [(n.op, n.target, n.name) for n in hg.graph.nodes]
    assert_same(tg(torch.tensor(x)), hp.eval()(hookgrad.tensor(x)))


def _rewrite(lib):
    class M(lib.nn.Module):
        def forward(self, x, w1, w2):
            m1 = lib.cat([w1, w2]).sum()
            m2 = lib.cat([w1, w2]).sum()
            m3 = lib.cat([w2, x]).sum()
            return x + lib.max(m1) + lib.max(m2) + m3.relu()

    def pattern(w1, w2):
        return lib.cat([w1, w2]).sum()

    def replacement(w1, w2):
        return lib.stack([w1, w2])
    gm = lib.fx.symbolic_trace(M())
    matches = lib.fx.replace_pattern(gm, pattern, replacement)
    maps = [sorted((k.name, v.name) for k, v in m.nodes_map.items()) for m in matches]
    x = lib.tensor([[1.0, -2.0], [3.0, 4.0]])
    return maps, [m.anchor.name for m in matches], gm.code, gm(x, x * 2, -x).tolist()


def test_replace_pattern():
    assert _rewrite(hookgrad) == _rewrite(torch)


def _transform(lib, gm):
    class Swap(lib.fx.Transformer):
        def call_method(self, target, args, kwargs):
            if target == "tanh":
                target = "sigmoid"
            return super().call_method(target, args, kwargs)
    return Swap(gm).transform()


def test_transformer():
    tg, hg = _same_graph(_traced(catnet))
    t2, h2 = _transform(torch, tg), _transform(hookgrad, hg)
    assert h2.code == t2.code and "sigmoid" in h2.code
    x = np.random.default_rng(3).standard_normal((3, 4)).astype(np.float32)
    for a, b in zip(t2(torch.tensor(x)), h2(hookgrad.tensor(x))):
        assert_same(a, b)


def _by_hand(lib):
    g = lib.fx.Graph()
    x = g.placeholder("x")
    w = g.placeholder("w", default_value=2.0)
    p = lib.fx.Proxy(x)
    y = lib.relu(p) * lib.fx.Proxy(w)       # hookgrad functions record on hand-made Proxies too
    z = lib.stack([y, p], dim=0).sum(0)
    g.output((z.node, operator.getitem(y, 0).node))
    gm = lib.fx.GraphModule(lib.nn.Module(), g)
    return gm, str(g), [(n.op, n.name) for n in g.nodes], [len(n.users) for n in g.nodes]


def test_graph_by_hand():
    (tgm, *t), (hgm, *h) = _by_hand(torch), _by_hand(hookgrad)
    assert h == t
    assert hgm.code == tgm.code
    x = np.arange(-3.0, 3.0).reshape(2, 3).astype(np.float32)
    for a, b in zip(tgm(torch.tensor(x)), hgm(hookgrad.tensor(x))):
        assert_same(a, b)


def test_tracer_api():
    m = _seeded(hookgrad, catnet)
    tracer = hookgrad.fx.Tracer()
    g = tracer.trace(m)
    assert tracer.path_of_module(m.branches[1]) == "branches.1"
    assert tracer.is_leaf_module(m.branches[0], "branches.0")
    assert not tracer.is_leaf_module(hookgrad.nn.Sequential(), "")
    assert not tracer.is_leaf_module(m, "")
    assert [n.name for n in g.nodes if n.op == "get_attr"] == ["scale", "shift", "_tensor_constant0", "shift_1"]
    node = next(n for n in g.nodes if n.name == "cat")
    assert [a.name for a in node.all_input_nodes] == ["branches_0", "branches_1"]
    assert hookgrad.fx.node.map_arg((node, [node, 1]), lambda n: n.name) == ("cat", ["cat", 1])
    assert not hookgrad.fx._symbolic_trace.is_fx_tracing()
    with pytest.raises(NameError):
        tracer.submodule_paths = None
        tracer.path_of_module(hookgrad.nn.Linear(1, 1))


def test_no_proxy_left_behind():
    from hookgrad.primitives import _dispatch
    import gc
    _traced(cnn)
    gc.collect()
    assert _dispatch.torch_function_objects == 0      # plain calls skip the __torch_function__ check again
