"""Random small op graphs with hooks on random intermediates: the event sequence (order, arguments,
counts) and all gradients must match torch. Built with hypothesis."""
import numpy as np
from hypothesis import given, settings, strategies as st, HealthCheck

import torch

import hookgrad
from _randgraph import Rec     # the fuzzer's event recorder


def events_close(scenario):
    recs, errs = [], []
    for lib in (torch, hookgrad):
        r = Rec()
        try:
            scenario(lib, r)
            errs.append(None)
        except Exception as e:  # noqa: BLE001
            errs.append(type(e).__name__)
        recs.append(r)
    t, h = recs
    assert h.struct == t.struct, f"\ntorch:    {t.struct}\nhookgrad: {h.struct}"
    assert errs[0] == errs[1], errs
    for (_, a), (_, b) in zip(t.arrays, h.arrays):
        np.testing.assert_allclose(b, a, rtol=1e-4, atol=1e-5)

UNARY = ("sin", "exp_small", "relu", "neg", "mul2", "tanh")
BINARY = ("add", "mul", "sub")


def _unary(lib, name, t):
    if name == "exp_small":
        return (t * 0.1).exp()
    if name == "mul2":
        return t * 2
    return getattr(t, name)()


def _binary(name, a, b):
    return {"add": a + b, "mul": a * b, "sub": a - b}[name]


op = st.one_of(
    st.tuples(st.just("u"), st.sampled_from(UNARY), st.integers(0, 50)),
    st.tuples(st.just("b"), st.sampled_from(BINARY), st.tuples(st.integers(0, 50), st.integers(0, 50))),
)
hook = st.tuples(st.integers(0, 50), st.sampled_from(("t_log", "t_scale", "retain", "pre", "post", "post_scale",
                                                       "pre_scale", "multi")))


@settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
@given(ops=st.lists(op, min_size=1, max_size=8), hooks=st.lists(hook, max_size=6),
       mode=st.sampled_from(("backward", "backward_twice", "grad", "inputs")), seed=st.integers(0, 3))
def test_random_graph_hooks(ops, hooks, mode, seed):
    data = np.random.default_rng(seed).standard_normal((3, 3)).astype(np.float32)

    def s(lib, log):
        leaves = [lib.tensor(data[i], requires_grad=True) for i in range(3)]
        nodes = list(leaves)
        for kind, name, arg in ops:
            if kind == "u":
                nodes.append(_unary(lib, name, nodes[arg % len(nodes)]))
            else:
                nodes.append(_binary(name, nodes[arg[0] % len(nodes)], nodes[arg[1] % len(nodes)]))
        retained = []
        for k, (idx, h) in enumerate(hooks):
            t = nodes[idx % len(nodes)]
            tag = f"{h}{k}@{idx % len(nodes)}"
            if h == "t_log":
                t.register_hook(lambda g, tag=tag: log(tag, g))
            elif h == "t_scale":
                t.register_hook(lambda g, tag=tag: (log(tag, g), g * 2)[1])
            elif h == "retain":
                t.retain_grad()
                retained.append(t)
            elif h == "multi":
                pair = (t, nodes[(idx + 1) % len(nodes)])
                lib.autograd.graph.register_multi_grad_hook(pair, lambda gs, tag=tag: log(tag, gs))
            elif t.grad_fn is not None:
                n = t.grad_fn
                if h == "pre":
                    n.register_prehook(lambda go, tag=tag: log(tag, go))
                elif h == "pre_scale":
                    n.register_prehook(lambda go, tag=tag: (log(tag, go), tuple(None if g is None else g * 3
                                                                                for g in go))[1])
                elif h == "post":
                    n.register_hook(lambda gi, go, tag=tag: log(tag, gi, go))
                else:
                    n.register_hook(lambda gi, go, tag=tag: (log(tag, len(gi)), tuple(None if g is None else g * 0.5
                                                                                       for g in gi))[1])
        loss = (nodes[-1] * nodes[-1]).sum() + nodes[len(nodes) // 2].sum()
        if mode == "backward":
            loss.backward()
        elif mode == "backward_twice":
            loss.backward(retain_graph=True)
            loss.backward()
        elif mode == "grad":
            targets = [t for t in nodes[1::2] if t.requires_grad]
            log("grads", lib.autograd.grad(loss, targets, allow_unused=True))
        else:
            loss.backward(inputs=[nodes[len(nodes) // 2], leaves[0]])
        log("leaf grads", [t.grad for t in leaves])
        log("retained", [t.grad for t in retained])
    events_close(s)


# ---------------------------------------------------------------------------------------------------
# The seeded random hooked-graph fuzzer (tests/oracle/_randgraph.py): multi-output nodes, views and
# in-place ops on intermediates, node pre/post hooks, retain_grad, post-accumulate and multi-grad hooks,
# second-order gradients through hooks; event sequences, values, node names and error types vs torch.
#   HOOKGRAD_FUZZ_EXAMPLES   programs per category (default 25: the CI slice)
#   HOOKGRAD_FUZZ_CATS       categories to run (default: those hookgrad passes; "all" for every one)
#   HOOKGRAD_FUZZ_START      first seed (default 0)
# A failure names its seed; reproduce and shrink it with
#   .venv/bin/python tests/oracle/_randgraph.py --cats CAT --start SEED --n 1 -v
import os  # noqa: E402

import pytest  # noqa: E402

import _randgraph  # noqa: E402

_N = int(os.environ.get("HOOKGRAD_FUZZ_EXAMPLES", "25"))
_START = int(os.environ.get("HOOKGRAD_FUZZ_START", "0"))
_CI_CATS = "basic,second,leafhooks,multi"
_CATS = os.environ.get("HOOKGRAD_FUZZ_CATS", _CI_CATS)
_CATS = _randgraph.CATS if _CATS == "all" else tuple(_CATS.split(","))


@pytest.mark.parametrize("cat", _CATS)
def test_random_hooked_graphs(cat):
    failures = []
    for seed in range(_START, _START + _N):
        d = _randgraph.compare(_randgraph.make_program(seed, {cat}))
        if d:
            failures.append(f"seed {seed}: {d}")
    assert not failures, f"{len(failures)}/{_N} programs differ from torch (category {cat}):\n" + "\n".join(failures[:5])


def test_fuzzer_sees_differences():
    """The comparison itself: a value, a node name, an error type and a missing event are each caught."""
    def rec(lib, value=1.0, name="MulBackward0", err="RuntimeError", extra=False):
        r = _randgraph.Rec()
        r("node", "pre#1@2", _randgraph.Text(name), 2)
        r("pre#1@2", (lib.tensor([value, 2.0]), None))
        r("backward error", err, _randgraph.Text("msg"))
        if extra:
            r("leaf grads", [None])
        return r
    assert _randgraph.compare_traces(rec(torch), rec(hookgrad)) is None
    assert "values of event 1" in _randgraph.compare_traces(rec(torch), rec(hookgrad, value=1.1))
    assert "text of event 0" in _randgraph.compare_traces(rec(torch), rec(hookgrad, name="MulBackward1"))
    assert "event 2 differs" in _randgraph.compare_traces(rec(torch), rec(hookgrad, err="ValueError"))
    assert "event count" in _randgraph.compare_traces(rec(torch, extra=True), rec(hookgrad))
