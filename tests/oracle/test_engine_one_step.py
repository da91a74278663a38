"""One node step whatever the pass: the same hooked graph run as a plain backward, with create_graph,
with backward(inputs=), with autograd.grad and under anomaly mode gives torch's hook events (order,
arguments, .grad, retain_grad) in every mode. Plus structural checks of the engine's shape."""
import ast
import os
import warnings

import numpy as np
import pytest

import hookgrad
from oracle import events

A = (np.arange(6, dtype=np.float32).reshape(2, 3) - 2) / 3
MODES = ["plain", "create_graph", "inputs", "grad", "grad_create_graph", "anomaly", "anomaly_inputs"]


def _scenario(mode):
    def s(lib, log):
        x = lib.tensor(A, requires_grad=True)
        w = lib.tensor(A[0] + 1, requires_grad=True)
        x.register_hook(lambda g: (log("x hook", g), g * 2)[1])
        acc = x.view_as(x).grad_fn.next_functions[0][0]
        acc.register_prehook(lambda go: log("acc pre", go))
        acc.register_hook(lambda gi, go: log("acc post", gi, go))
        x.register_post_accumulate_grad_hook(lambda p: log("post acc", p.grad))
        y = x * w
        y.retain_grad()
        y.register_hook(lambda g: log("y hook", g))
        a, b = y.split([1, 1])              # a multi-output node: hooks see the whole tuple
        a.grad_fn.register_prehook(lambda go: log("split pre", go))
        a.grad_fn.register_hook(lambda gi, go: (log("split post", gi, go), (gi[0] * 3,))[1])
        z = (a.exp() + b.tanh() * 2).sum()
        z.grad_fn.register_hook(lambda gi, go: log("sum post", gi, go))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            if mode.startswith("anomaly"):
                with lib.autograd.detect_anomaly():
                    z.backward(inputs=[x] if mode == "anomaly_inputs" else None)
            elif mode.startswith("grad"):
                cg = mode == "grad_create_graph"
                gs = lib.autograd.grad(z, [x, w, y], create_graph=cg)
                log("grads", *gs)
                if cg:
                    gs[0].sum().backward()
            else:
                z.backward(create_graph=mode == "create_graph", inputs=[x, y] if mode == "inputs" else None)
        log("result", x.grad, w.grad, y.grad)
    return s


@pytest.mark.parametrize("mode", MODES)
def test_hooked_graph_same_events_in_every_mode(mode):
    events(_scenario(mode))


def test_op_hooks_see_the_same_nodes_in_every_mode():
    """An OpHook sees each node of a pass once, with Tensors, whatever the pass's gradient space."""
    seen = {}
    for mode in ("plain", "create_graph", "inputs", "grad"):
        names = []

        class Rec(hookgrad.autograd.graph.OpHook):
            def backward_post(self, node, grad_inputs, grad_outputs):
                assert all(g is None or isinstance(g, hookgrad.Tensor) for g in grad_inputs + grad_outputs)
                names.append(node.name())
        x = hookgrad.tensor(A, requires_grad=True)
        with Rec():
            z = (x.exp() * x).sum()
            if mode == "grad":
                hookgrad.autograd.grad(z, [x])
            else:
                z.backward(create_graph=mode == "create_graph", inputs=[x] if mode == "inputs" else None)
        seen[mode] = names
    assert seen["plain"] == seen["create_graph"] == seen["inputs"]
    assert seen["grad"] == [n for n in seen["plain"] if "AccumulateGrad" not in n]


_AUTOGRAD = os.path.join(os.path.dirname(hookgrad.__file__), "autograd")


def _tree(name):
    with open(os.path.join(_AUTOGRAD, name)) as f:
        return ast.parse(f.read())


def test_engine_names_no_node_type_and_has_one_loop():
    tree = _tree("engine.py")
    names = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)}
    names |= {n.attr for n in ast.walk(tree) if isinstance(n, ast.Attribute)}
    assert not {"AccumulateGrad", "_CopyGrad", "BackwardCFunction"} & names
    loops = [n for n in ast.walk(tree) if isinstance(n, ast.While)]
    assert len([n for n in loops if "ready" in ast.unparse(n.test)]) == 1     # one traversal


def test_anomaly_mode_writes_no_other_module():
    tree = _tree("anomaly_mode.py")
    imported = {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)}
    imported |= {a.name for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) for a in n.names}
    assert not {"engine", "node", "graph"} & imported
