"""Grad modes and the engine's graph-task rules, torch vs hookgrad (issue 27): each scenario runs under both
libraries and records what it observes; the two records must be equal.

- grad-mode decorators on generators: the mode around each next/send/throw/close, the caller's mode between;
  set_grad_enabled as a decorator leaves the global mode alone; decorating a class warns (FutureWarning);
- the engine runs no node that cannot reach the requested inputs; GradientEdge / get_gradient_edge as outputs
  and inputs of grad/backward; _current_graph_task_execution_order;
- torch._C._functions.UndefinedGrad / DelayedError, torch._C._WeakTensorRef, _force_original_view_tracking.
"""
import warnings

import numpy as np
import pytest
import torch

import hookgrad

LIBS = (torch, hookgrad)


def both(scenario):
    """scenario(lib, log) under each library; the logs must be equal."""
    logs = []
    for lib in LIBS:
        log = []

        def conv(i):
            if isinstance(i, lib.Tensor):
                return np.asarray(i.detach().numpy()).round(6).tolist()
            if isinstance(i, (tuple, list)):
                return type(i)(conv(j) for j in i)
            return i

        def rec(*items):
            log.append(conv(items))
        scenario(lib, rec)
        logs.append(log)
    assert logs[0] == logs[1], f"torch: {logs[0]}\nhookgrad: {logs[1]}"
    return logs[0]


def _err(fn):
    try:
        fn()
    except Exception as e:      # the type and message, as the scenario saw them
        return type(e).__name__, str(e)
    return None


# ------------------------------------------------------------------ grad modes

@pytest.mark.parametrize("deco", ["no_grad", "enable_grad", "set_grad_enabled_false", "inference_mode"])
def test_generator_decorator_restores_mode_around_each_step(deco):
    def scenario(lib, log):
        ctx = {"no_grad": lambda: lib.no_grad(), "enable_grad": lambda: lib.enable_grad(),
               "set_grad_enabled_false": lambda: lib.set_grad_enabled(False),
               "inference_mode": lambda: lib.inference_mode()}[deco]

        @ctx()
        def gen():
            log("start", lib.is_grad_enabled())
            for i in range(3):
                try:
                    r = yield i
                    log("sent", r, lib.is_grad_enabled())
                except KeyError:
                    log("thrown", lib.is_grad_enabled())
                except GeneratorExit:
                    log("closing", lib.is_grad_enabled())
                    raise
        for outer in (True, False):
            with lib.set_grad_enabled(outer):
                g = gen()
                log("next", next(g), lib.is_grad_enabled())
                log("send", g.send("x"), lib.is_grad_enabled())
                log("throw", g.throw(KeyError), lib.is_grad_enabled())
                g.close()
                log("closed", lib.is_grad_enabled())
    both(scenario)


def test_set_grad_enabled_as_decorator_leaves_global_mode():
    def scenario(lib, log):
        with lib.enable_grad():
            @lib.set_grad_enabled(False)
            def inner(x):
                return x.sin()
            log("after decorating", lib.is_grad_enabled())
            x = lib.zeros(1, requires_grad=True)
            log("result requires grad", inner(x).requires_grad, lib.is_grad_enabled())
            obj = lib.set_grad_enabled(False)      # not a decorator: the mode changes at once
            log("constructed", lib.is_grad_enabled())
            inner2 = obj(lambda x: x * 2)
            log("consumed", lib.is_grad_enabled(), inner2(x).requires_grad)
    both(scenario)


def test_decorating_a_class_warns():
    def scenario(lib, log):
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")

            @lib.no_grad()
            class Foo:
                def __init__(self):
                    log("init grad", lib.is_grad_enabled())

                def foo(self):
                    log("method grad", lib.is_grad_enabled())
            Foo().foo()

            @lib.no_grad()
            def f():
                return lib.is_grad_enabled()
            log("function grad", f())
        log([(w_.category.__name__, "Decorating classes is deprecated" in str(w_.message)) for w_ in w])
    both(scenario)


def test_force_original_view_tracking_flag():
    def scenario(lib, log):
        log(lib.autograd.is_view_replay_enabled())
        with lib.autograd._force_original_view_tracking(True):
            log(lib.autograd.is_view_replay_enabled())
            with lib.autograd._force_original_view_tracking(False):
                lib.autograd._force_original_view_tracking(True)     # as a function: sets it
                log(lib.autograd.is_view_replay_enabled())
            log(lib.autograd.is_view_replay_enabled())
        log(lib.autograd.is_view_replay_enabled())

        @lib.autograd._force_original_view_tracking(True)
        def f():
            return lib.autograd.is_view_replay_enabled()
        log(lib.autograd.is_view_replay_enabled(), f(), lib.autograd.is_view_replay_enabled())
    both(scenario)


# ------------------------------------------------------------------ the engine

def _never_run(lib, log):
    class MyFunc(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x

        @staticmethod
        def backward(ctx, g):
            log("backward ran")
            return g
    return MyFunc


def test_nodes_that_cannot_reach_the_inputs_do_not_run():
    def scenario(lib, log):
        MyFunc = _never_run(lib, log)
        x = MyFunc.apply(lib.ones(1, requires_grad=True) * 2)
        y = lib.ones(1, requires_grad=True)
        log(lib.autograd.grad(x, (y,), allow_unused=True)[0])
        z = lib.full((1,), 3.0, requires_grad=True)
        x = MyFunc.apply(lib.ones(1, requires_grad=True) * 2)
        gy, gz = lib.autograd.grad(x + z * z, (y, z), allow_unused=True)
        log(gy, gz)
        x = MyFunc.apply(lib.ones(1, requires_grad=True) * 2)
        lib.autograd.backward(x, inputs=(y,))
        log(y.grad)
        w = lib.ones(1, requires_grad=True)
        out = MyFunc.apply(w * 3) + w * 5       # the custom node leads to w: it runs
        log(lib.autograd.grad(out, (w,)))
    both(scenario)


def test_gradient_edge_as_output_and_input():
    def scenario(lib, log):
        x = lib.tensor([1.0, 2.0], requires_grad=True)

        def fn(x, reduce=True):
            tmp = x.sin().cos()
            if reduce:
                tmp = tmp.sum()
            out = tmp.exp().clone().sin().sum()
            return out, lib.autograd.graph.get_gradient_edge(tmp)
        out, edge = fn(x)
        (g,) = lib.autograd.grad(out, (edge,))
        log("two steps", lib.autograd.grad(edge, (x,), grad_outputs=(g,))[0])
        log("one step", lib.autograd.grad(fn(x)[0], (x,))[0])
        out, edge = fn(x, reduce=False)
        log(_err(lambda: lib.autograd.grad(edge, (x,))))
        out, edge = fn(x)
        log(_err(lambda: lib.autograd.grad(edge, (x,), grad_outputs=lib.tensor([1.0, 2.0, 3.0]))))
        log(_err(lambda: lib.autograd.grad(edge, (x,), grad_outputs=lib.ones((), dtype=lib.complex64))))
        lib.autograd.backward(edge, retain_graph=True)
        log("backward", x.grad)
        # an edge as input: the gradient at the node before an in-place change
        a = lib.tensor([1.0, 3.0], requires_grad=True).clone()
        a_edge = lib.autograd.graph.get_gradient_edge(a)
        a *= 2
        log("inplace", *lib.autograd.grad(a.sum(), (a_edge, a)))
        b = lib.tensor([1.0, 3.0], requires_grad=True).clone()
        c = lib.tensor([2.0], requires_grad=True).clone()
        e_b = lib.autograd.graph.GradientEdge(b.grad_fn, b.output_nr)
        e_c = lib.autograd.graph.GradientEdge(c.grad_fn, c.output_nr)
        log("manual", *lib.autograd.grad((b * 3).sum(), (e_b, c), allow_unused=True))
        log(_err(lambda: lib.autograd.grad((b * 3).sum(), (b, e_c), allow_unused=True, materialize_grads=True)))
        lib.autograd.backward((b * b).sum(), inputs=(e_b, c))
        log(type(lib.autograd.graph.get_gradient_edge(x).node).__name__)
        log(_err(lambda: lib.autograd.graph.get_gradient_edge(lib.ones(1))))
    both(scenario)


def test_current_graph_task_execution_order():
    def scenario(lib, log):
        got = []

        def hook(_):
            got.append([n.name().split(" ")[-1] for n in lib._C._current_graph_task_execution_order()])
        a = lib.tensor(1.0, requires_grad=True)
        b = lib.tensor(2.0, requires_grad=True)
        out = b.sin() * a.cos()
        out.register_hook(hook)
        with lib.autograd.set_multithreading_enabled(False):
            out.backward(retain_graph=True)
        m = a * 2
        o1, o2, o3 = m.sin(), m.cos(), m.cos()
        o3.register_hook(hook)
        with lib.autograd.set_multithreading_enabled(False):
            lib.autograd.grad((o1, o3, o2), inputs=(a,))
        c = a * b
        o = c.sin()
        o.register_hook(hook)
        with lib.autograd.set_multithreading_enabled(False):
            lib.autograd.grad((o,), inputs=(a,), retain_graph=True)
        log(got)
        log(_err(lambda: lib._C._current_graph_task_execution_order()))
        o.register_hook(hook)
        log(_err(lambda: o.backward()))
    both(scenario)


def test_undefined_grad_and_delayed_error_nodes():
    def scenario(lib, log):
        class Id(lib.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                ctx.set_materialize_grads(False)
                return x

            @staticmethod
            def backward(ctx, g):
                log("custom backward sees", g)
                return g
        x = lib.ones(1, requires_grad=True)
        u = lib._C._functions.UndefinedGrad()(Id.apply(x))
        log(type(u.grad_fn).__name__, u)
        u.backward()
        log("x.grad", x.grad)
        y = lib.tensor([1.0, 2.0], requires_grad=True)
        y_safe = lib._C._functions.DelayedError("Boom!", 1)(y)
        log(type(y_safe.grad_fn).__name__, issubclass(lib._C._functions.DelayedError, lib.autograd.graph.Node))
        log(_err(lambda: (y_safe * 2).sum().backward(retain_graph=True)))
        log(lib.autograd.grad((y_safe * 2).sum(), y_safe))
        log(_err(lambda: lib.autograd.grad((y_safe * 2 + y).sum(), y)))
    both(scenario)


def test_weak_tensor_ref():
    def scenario(lib, log):
        x = lib.ones(5, 5, requires_grad=True)

        def run():
            y = x * 2
            y.retain_grad()
            return y / 2, lib._C._WeakTensorRef(y)
        z, ref = run()
        log(ref.expired())
        t = lib.ones(2)
        r = lib._C._WeakTensorRef(t)
        log(r.expired())
        del t
        log(r.expired())
    both(scenario)


def test_deep_reentrant_backward():
    """A backward inside a backward, 100 levels deep (hookgrad moves nested passes to fresh threads past a depth,
    as PyTorch's engine does): no RecursionError, the same gradients, the thread's state intact after."""
    def scenario(lib, log):
        seen = []

        class Deep(lib.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                with lib.enable_grad():
                    ctx.x = x.detach().requires_grad_(True) - 1
                return ctx.x.detach()

            @staticmethod
            def backward(ctx, g):
                seen.append(lib.is_grad_enabled())
                if ctx.x < 0:
                    return g * 2
                with lib.enable_grad():
                    Deep.apply(ctx.x).sum().backward()
                return g * 2
        v = lib.tensor(100.0, requires_grad=True)
        Deep.apply(v).sum().backward()
        log(v.grad, len(seen), set(seen), lib.is_grad_enabled(), lib._C._current_graph_task_id())
    both(scenario)


def test_anomaly_warnings_name_the_parents():
    """A NaN in a node made during a create_graph backward: the error's warnings name the node's forward call,
    then the node that made it (PyTorch's 'Previous calculation was induced by'); with warnings as errors the
    warning goes to stderr and the error propagates."""
    def scenario(lib, log):
        class F2(lib.autograd.Function):
            @staticmethod
            def forward(ctx, a):
                return a * 2.0

            @staticmethod
            def backward(ctx, g):
                g = g.clone()
                g[0] = float("nan")
                return g

        class F1(lib.autograd.Function):
            @staticmethod
            def forward(ctx, a):
                ctx.save_for_backward(a)
                return a.sum(0, keepdim=True)

            @staticmethod
            def backward(ctx, g):
                (a,) = ctx.saved_tensors
                return F2.apply(g.expand(3) * a)

        def first_lines(w):
            return [str(x.message).strip().splitlines()[0] for x in w]
        inp = lib.rand(3, requires_grad=True)
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            with lib.autograd.detect_anomaly():
                out = F1.apply(inp)
                (g,) = lib.autograd.grad(out, (inp,), create_graph=True)
                log(_err(lambda: g.sum().backward()))
        log(first_lines(w))
        log(["F2.apply" in str(w[1].message), "F1.apply" in str(w[2].message)])
        a = lib.randn(5, requires_grad=True)
        with warnings.catch_warnings(record=True) as w:
            with lib.autograd.detect_anomaly():
                warnings.simplefilter("error")
                d1 = a + 1
                d2 = d1 ** 2
                d1 += 1
                log(_err(lambda: lib.autograd.grad(d2.sum(), a))[0])
        log(first_lines(w))
    both(scenario)


def test_legacy_resize_function_and_gradient_edges_through_it():
    def scenario(lib, log):
        import importlib
        fns = importlib.import_module(lib.__name__ + ".autograd._functions")
        x = lib.tensor([1.0, 2.0, 3.0, 4.0], requires_grad=True)
        y = fns.Resize.apply(x, (2, 2))
        out = (y * y).sum()
        edge = lib.autograd.graph.get_gradient_edge(y)
        log(type(y.grad_fn).__name__, y, lib.autograd.grad(out, edge, retain_graph=True),
            lib.autograd.grad(out, x))
        log(_err(lambda: fns.Resize.apply(x, (3,)))[0])
    both(scenario)


def test_materialized_grads_are_graph_leaves_under_create_graph():
    def scenario(lib, log):
        x = lib.tensor(0.5, requires_grad=True)
        a = lib.tensor(1.0, requires_grad=True)
        y = x * a
        dydx = lib.autograd.grad(y, x, create_graph=True)
        d2 = lib.autograd.grad(dydx, x, create_graph=True, allow_unused=True, materialize_grads=True)
        log(d2[0], d2[0].requires_grad)
        log(lib.autograd.grad(d2, x, materialize_grads=True))
        z = (x ** 2)
        g = lib.autograd.grad(z, (x, a), allow_unused=True, materialize_grads=True)
        log(g, [t.requires_grad for t in g])
    both(scenario)


def test_set_gives_a_leaf_a_new_gradient_node():
    def scenario(lib, log):
        x = lib.tensor([1.0, 2.0], requires_grad=True)
        y = x * 2
        edge = lib.autograd.graph.get_gradient_edge(x)
        with lib.no_grad():
            x.set_(lib.tensor([3.0, 4.0]))
        log(lib.autograd.grad(y.sum(), edge, allow_unused=True))
        z = (x * 3).sum()
        log(lib.autograd.grad(z, x))
    both(scenario)
