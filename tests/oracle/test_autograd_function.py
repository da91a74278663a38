"""autograd.Function (ctx API, node API, errors, once_differentiable) against torch."""
import numpy as np
import pytest

from oracle import events, check
from _scen import attempt


def make_fns(lib):
    F = lib.autograd.Function

    class MyExp(F):
        @staticmethod
        def forward(ctx, x):
            y = x.exp()
            ctx.save_for_backward(y)
            ctx.tag = "exp"
            return y

        @staticmethod
        def backward(ctx, g):
            (y,) = ctx.saved_tensors
            return g * y

    class Scale(F):         # setup_context style, non-tensor argument
        @staticmethod
        def forward(x, k):
            return x * k

        @staticmethod
        def setup_context(ctx, inputs, output):
            ctx.k = inputs[1]
            ctx.save_for_backward(inputs[0])

        @staticmethod
        def backward(ctx, g):
            return g * ctx.k, None

    class Two(F):           # two outputs, one non-differentiable, materialize switch
        @staticmethod
        def forward(ctx, x, y, materialize=True):
            ctx.set_materialize_grads(materialize)
            idx = (x > 1.5).long()
            ctx.mark_non_differentiable(idx)
            return x * 2, y * 3, idx

        @staticmethod
        def backward(ctx, g1, g2, gidx):
            return (None if g1 is None else g1 * 2), (None if g2 is None else g2 * 3), None

    class Dirty(F):
        @staticmethod
        def forward(ctx, x):
            ctx.mark_dirty(x)
            return x.mul_(2)

        @staticmethod
        def backward(ctx, g):
            return g * 2

    class Ident(F):
        @staticmethod
        def forward(ctx, x):
            return x

        @staticmethod
        def backward(ctx, g):
            return g * 2

    class Once(F):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * x

        @staticmethod
        @lib.autograd.function.once_differentiable
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            log_state.append(lib.is_grad_enabled())
            return 2 * g * x
    log_state = []
    return MyExp, Scale, Two, Dirty, Ident, Once


def test_function_basic_ctx_and_node_api():
    def s(lib, log):
        MyExp, Scale, Two, Dirty, Ident, Once = make_fns(lib)
        x = lib.tensor([0.5, 1.0], requires_grad=True)
        y = MyExp.apply(x)
        n = y.grad_fn
        log("name", n.name(), type(n).__name__, n.tag, len(n.next_functions), n.needs_input_grad)
        log("is node", isinstance(n, lib.autograd.graph.Node))
        n.register_prehook(lambda go: log("pre", go))
        n.register_hook(lambda gi, go: log("post", gi, go))
        y.register_hook(lambda g: log("t", g))
        n.metadata["a"] = 1
        (y * 2).sum().backward(retain_graph=True)
        log("x.grad", x.grad, n.metadata)
        log("saved", n.saved_tensors)
        (y * 2).sum().backward()
        attempt(log, lambda: n.saved_tensors)
        z = Scale.apply(x, 3.0)
        log("scale", z, z.grad_fn.name(), len(z.grad_fn.next_functions), z.grad_fn.k)
        g, = lib.autograd.grad(z.sum(), x)
        log("g", g)
        with lib.no_grad():
            w = MyExp.apply(x)
        log("nograd", w.requires_grad, w.grad_fn)
        w = MyExp.apply(lib.ones(2))
        log("no rg", w.requires_grad, w.grad_fn)
    events(s)


def test_function_multi_output_materialize_nondiff():
    def s(lib, log):
        MyExp, Scale, Two, Dirty, Ident, Once = make_fns(lib)
        for mat in (True, False):
            x = lib.tensor([1.0, 2.0], requires_grad=True)
            y = lib.tensor([3.0, 4.0], requires_grad=True)
            a, b, idx = Two.apply(x, y, mat)
            log("idx", idx, idx.requires_grad, a.grad_fn.name(), a.output_nr, b.output_nr, idx.grad_fn)
            b.register_hook(lambda g: log("b hook (unused output)", g))
            a.grad_fn.register_hook(lambda gi, go: log("post", gi, go))
            a.sum().backward()
            log("grads", x.grad, y.grad)
    events(s)


def test_function_dirty_identity_and_errors():
    def s(lib, log):
        MyExp, Scale, Two, Dirty, Ident, Once = make_fns(lib)
        x = lib.ones(2, requires_grad=True)
        y = x * 1
        h = y.register_hook(lambda g: log("old hook", g))
        z = Dirty.apply(y)
        log("dirty", z is y, y.grad_fn.name(), y._version)
        z.sum().backward()
        log("x.grad", x.grad)
        attempt(log, Dirty.apply, x)
        x.grad = None
        z = Ident.apply(x)
        log("ident", z is x, z.is_leaf, z.grad_fn.name())
        z.sum().backward()
        log("x.grad", x.grad)
        F = lib.autograd.Function

        def mk(ret):
            class Bad(F):
                @staticmethod
                def forward(ctx, x, k):
                    return x * 2

                @staticmethod
                def backward(ctx, g):
                    return ret(g)
            return Bad
        for ret in (lambda g: g, lambda g: (g, g), lambda g: (lib.ones(3), None), lambda g: (3, None),
                    lambda g: (lib.ones(1, 2), None), lambda g: (g.double(), None), lambda g: (g, None, None)):
            x.grad = None
            attempt(log, lambda: mk(ret).apply(x, 3).sum().backward())
            log("x.grad", x.grad)
    events(s)


def test_once_differentiable():
    def s(lib, log):
        MyExp, Scale, Two, Dirty, Ident, Once = make_fns(lib)
        x = lib.tensor([1.0, 2.0], requires_grad=True)
        y = Once.apply(x).sum()
        g, = lib.autograd.grad(y, x, create_graph=True)
        log("g", g, g.requires_grad)
        y = (Once.apply(x) * x).sum()
        g, = lib.autograd.grad(y, x, create_graph=True)
        log("g2", g, g.requires_grad)
        attempt(log, lambda: g.sum().backward())
    events(s)


def test_function_grad_matches_and_double_backward():
    def fn(lib, x, y):
        MyExp, Scale, *_ = make_fns(lib)
        return Scale.apply(MyExp.apply(x * y), 2.0)
    check(fn, np.array([0.1, 0.2, 0.3]), np.array([1.0, -1.0, 0.5]), second=True)
