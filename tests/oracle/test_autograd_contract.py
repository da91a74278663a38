"""Custom autograd.Function's contract against torch (issue 27): the errors and warnings PyTorch's _wrap_outputs
raises, mark_dirty on views (CopySlices), inputs and views returned by forward (CreationMeta), duplicate outputs,
non-differentiable outputs, setup_context with default arguments, legacy Functions, saved tensors' access."""
import warnings

import numpy as np

from oracle import events, check
from _scen import attempt, identity_function


def _warned(log, fn):
    """Run fn, logging its warnings (category, text) and its error or its result's grad_fn name."""
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        try:
            r = fn()
        except Exception as e:  # noqa: BLE001
            log("err", type(e).__name__, str(e).split(" (Triggered")[0])
            r = None
    log("warn", [(x.category.__name__, str(x.message).split(" (Triggered")[0]) for x in w])
    return r


def test_legacy_function_and_missing_methods():
    def s(lib, log):
        F = lib.autograd.Function

        class Legacy(F):
            def forward(self, x):
                return x

            def backward(self, g):
                return g

        _warned(log, lambda: Legacy()(lib.ones(3)))

        class NoBackward(F):
            @staticmethod
            def forward(ctx, x):
                return x.clone()

        class NoForward(F):
            @staticmethod
            def backward(ctx, g):
                return g

        class Both(F):
            @staticmethod
            def forward(ctx, x):
                return x.clone()

            @staticmethod
            def backward(ctx, g):
                return g

            @staticmethod
            def vjp(ctx, g):
                return g

        class VjpOnly(F):
            @staticmethod
            def forward(ctx, x):
                return x * 2

            @staticmethod
            def vjp(ctx, g):
                return g * 5

        x = lib.ones(2, requires_grad=True)
        attempt(log, lambda: NoBackward.apply(x).sum().backward())
        attempt(log, lambda: NoForward.apply(x))
        attempt(log, lambda: Both.apply(x).sum().backward())
        attempt(log, lambda: Both.apply(x).grad_fn.apply(lib.ones(2)))
        VjpOnly.apply(x).sum().backward()
        log("vjp grad", x.grad, VjpOnly.apply(x).grad_fn.apply(lib.ones(2)))
        log("vmap attr", hasattr(VjpOnly, "vmap"), VjpOnly.generate_vmap_rule)
    events(s)


def test_setup_context_binds_forward_defaults():
    def s(lib, log):
        F = lib.autograd.Function

        class Scale(F):
            @staticmethod
            def forward(x, k=3.0):
                return x * k

            @staticmethod
            def setup_context(ctx, inputs, output):
                x, k = inputs
                ctx.k = k
                log("inputs", len(inputs))

            @staticmethod
            def backward(ctx, g):
                return g * ctx.k, None

        class Short(Scale):
            @staticmethod
            def backward(ctx, g):
                return g * ctx.k

        x = lib.tensor([1.0, 2.0], requires_grad=True)
        y = Scale.apply(x)
        log("y", y)
        y.sum().backward()
        log("grad", x.grad)
        log("k", Scale.apply(x, 5.0).grad_fn.k)
        attempt(log, lambda: Short.apply(x).sum().backward())
    events(s)


def test_mark_dirty_contract():
    def s(lib, log):
        F = lib.autograd.Function

        class AddOne(F):
            @staticmethod
            def forward(ctx, x):
                x.add_(1)
                ctx.mark_dirty(x)
                return x

            @staticmethod
            def backward(ctx, g):
                return g * 3

        class DirtyNotInput(F):
            @staticmethod
            def forward(ctx, x):
                y = x.clone()
                ctx.mark_dirty(y)
                return y

            @staticmethod
            def backward(ctx, g):
                return g

        class DirtyTwice(F):
            @staticmethod
            def forward(ctx, x):
                x.mul_(2)
                ctx.mark_dirty(x)
                return x, x

            @staticmethod
            def backward(ctx, g1, g2):
                log("g", g1, g2)
                return g1 * 2 + g2 * 2

        leaf = lib.ones(3, requires_grad=True)
        r = _warned(log, lambda: DirtyNotInput.apply(leaf))
        log("not input", r.grad_fn.name())
        _warned(log, lambda: AddOne.apply(leaf))
        _warned(log, lambda: AddOne.apply(leaf[:2]))
        log("leaf untouched", leaf, leaf._version)
        # a view of a non-leaf: the base gets CopySlices, the view an AsStridedBackward0
        b = leaf * 1
        v = b[:2]
        out = AddOne.apply(v)
        log("view", out is v, b.grad_fn.name(), v.grad_fn.name(), b._version, v._version)
        (b * lib.tensor([1.0, 2.0, 3.0])).sum().backward()
        log("grad", leaf.grad)
        leaf.grad = None
        # a dirty view must be the only output
        attempt(log, lambda: DirtyTwice.apply((leaf * 1)[0]))
        c = leaf * 1
        a1, a2 = DirtyTwice.apply(c)
        log("twice", a1 is a2, a1 is c, a1.output_nr, c._version)
        (a1 + a2).sum().backward()
        log("grad", leaf.grad)
        # a view made under no_grad, then marked dirty
        with lib.no_grad():
            w = (leaf * 1)[:2]
        log("nograd view", w.requires_grad)
        # a view made by a multi-output op
        attempt(log, lambda: AddOne.apply((leaf * 1).unbind()[0]))
    events(s)


def test_mark_dirty_on_python_view_gradients():
    """PyTorch's test_inplace_on_view_python: in-place Functions on narrowed views (CopySlices over the Function)."""
    def fn(lib, root, b):
        F = lib.autograd.Function

        class PyAdd(F):
            @staticmethod
            def forward(ctx, x, y):
                ctx.mark_dirty(x)
                x.add_(y)
                return x

            @staticmethod
            def backward(ctx, grad):
                return grad, grad

        x = root.clone()
        PyAdd.apply(x.narrow(1, 2, 2).narrow(0, 1, 2), b)
        PyAdd.apply(x.narrow(1, 0, 2).narrow(0, 1, 2), b * 2)
        return x * x
    rng = np.random.default_rng(1)
    check(fn, rng.standard_normal((4, 4)), rng.standard_normal((2, 2)), second=True)


def test_outputs_that_are_inputs_or_views():
    def s(lib, log):
        F = lib.autograd.Function

        class ViewOf(F):
            @staticmethod
            def forward(ctx, x):
                return x.view_as(x)

            @staticmethod
            def backward(ctx, g):
                return g

        Ident = identity_function(lib, "Ident")

        class TwoViews(F):
            @staticmethod
            def forward(ctx, x):
                return x.view_as(x), x[0]

            @staticmethod
            def backward(ctx, g, h):
                return g

        class Twice(F):
            @staticmethod
            def forward(ctx, x):
                return x, x

            @staticmethod
            def backward(ctx, g1, g2):
                log("g", g1, g2)
                return g1 * 2 + g2 * 3

        class Dup(F):
            @staticmethod
            def forward(ctx, x):
                out = x * 2
                return out, out

            @staticmethod
            def backward(ctx, g1, g2):
                log("g", g1, g2)
                return g1 * 2 + g2 * 2

        b = lib.rand(1, requires_grad=True)
        for cls in (ViewOf, Ident):
            a = lib.rand(1, 2)
            v = cls.apply(a)
            log("no grad", v is a, v._base is a, v.requires_grad)
            attempt(log, lambda: v.add_(b))
            attempt(log, lambda: cls.apply(lib.rand(1, 2)).copy_(b))
            c = lib.rand(1, 2, requires_grad=True).clone()
            v = cls.apply(c)
            log("grad", v is c, v._base is c, v.grad_fn.name(), v.is_leaf)
            attempt(log, lambda: v.mul_(2))
            c.mul_(2)
            attempt(log, lambda: v.grad_fn)
        c = lib.rand(2, 2, requires_grad=True).clone()
        v, w = TwoViews.apply(c)
        attempt(log, lambda: w.mul_(2))
        attempt(log, lambda: v.mul_(2))
        a = lib.rand(1, 2)
        a.select(1, 0).copy_(b)
        log("plain view still works", a.grad_fn.name())
        x = lib.tensor([1.0, 2.0], requires_grad=True)
        p, q = Twice.apply(x)
        log("twice", p is q, p.output_nr, q.output_nr)
        (p * 3 + q * 5).sum().backward()
        log("grad", x.grad)
        x.grad = None
        p, q = Dup.apply(x)
        log("dup", p is q, p.output_nr, q.output_nr)
        (p + q).sum().backward()
        log("grad", x.grad)
    events(s)


def test_duplicate_output_gradcheck():
    def s(lib, log):
        F = lib.autograd.Function

        class Dup(F):
            @staticmethod
            def forward(ctx, x):
                out = x * 2
                return out, out

            @staticmethod
            def backward(ctx, g1, g2):
                return g1 * 2 + g2 * 2

        def fn(x):
            a, b = Dup.apply(x)
            return a + b
        x = lib.tensor([[0.5, -1.0], [2.0, 0.25]], dtype=lib.double, requires_grad=True)
        log("gradcheck", lib.autograd.gradcheck(fn, [x]), lib.autograd.gradgradcheck(fn, [x]))
    events(s)


def test_non_differentiable_outputs():
    def s(lib, log):
        F = lib.autograd.Function

        class Mixed(F):
            @staticmethod
            def forward(ctx, x, no_mat):
                a = x + 1
                b = x + 2
                ctx.mark_non_differentiable(a)
                if no_mat:
                    ctx._materialize_non_diff_grads = False
                return a, b, 7

            @staticmethod
            def backward(ctx, ga, gb, gc):
                log("grads in", ga, gb, gc)
                return gb

        class NoneBack(F):
            @staticmethod
            def forward(ctx, x):
                out = x.clone()
                ctx.mark_non_differentiable(out)
                return out

            @staticmethod
            def backward(ctx, g):
                return None

        class InputNonDiff(F):
            @staticmethod
            def forward(ctx, x):
                ctx.mark_non_differentiable(x)
                return x

            @staticmethod
            def backward(ctx, g):
                return g

        for no_mat in (False, True):
            x = lib.tensor([1.0, 2.0], requires_grad=True)
            a, b, c = Mixed.apply(x, no_mat)
            log("a", a.requires_grad, a.grad_fn, b.grad_fn.name(), c)
            b.sum().backward()
            log("x.grad", x.grad)
        x = lib.randn(3, 3, requires_grad=True)
        r = NoneBack.apply(x * x)
        (r * x).sum().backward()
        log("none back", r.requires_grad, x.grad is not None)
        y = InputNonDiff.apply(x)
        log("input nondiff", y is x, y.requires_grad, y.is_leaf, x.requires_grad)
    events(s)


def test_saved_tensors_access():
    def s(lib, log):
        F = lib.autograd.Function

        class Once(F):
            clear_saved_tensors_on_access = True

            @staticmethod
            def forward(ctx, x):
                y = x * 2
                ctx.save_for_backward(x, y)
                return y

            @staticmethod
            def backward(ctx, g):
                a, b = ctx.saved_tensors
                attempt(log, lambda: ctx.saved_tensors)
                log("raw", len(ctx._raw_saved_tensors))
                return g * 2

        class Old(F):
            @staticmethod
            def forward(ctx, x):
                ctx.save_for_backward(x)
                return x * 2

            @staticmethod
            def backward(ctx, g):
                (x,) = ctx.saved_variables
                return g * 2

        x = lib.ones(2, requires_grad=True)
        y = Once.apply(x)
        y.sum().backward(retain_graph=True)
        attempt(log, lambda: y.sum().backward())
        y = Once.apply(x)
        log("first", y.grad_fn.saved_tensors[0] is x)
        attempt(log, lambda: y.grad_fn.saved_tensors)
        with lib.autograd.graph.saved_tensors_hooks(lambda t: t, lambda t: t):
            y = Once.apply(x)
        y.sum().backward()
        log("grad", x.grad)
        _warned(log, lambda: Old.apply(x).sum().backward())
    events(s)


def test_creation_meta_errors():
    """PyTorch's CreationMeta texts: views made under no_grad / inference_mode or by a multi-output op, then
    modified in place (directly, through a view of the view, or through their base)."""
    def s(lib, log):
        for mode in (lib.no_grad, lib.inference_mode):
            x = lib.zeros(2)
            with mode():
                y = x.view(2)
            y.requires_grad_(True)
            z = y.view(2)
            attempt(log, lambda: z.div_(2))
            attempt(log, lambda: y.div_(2))
            a = lib.ones(3, requires_grad=True)
            b = a * 1
            with mode():
                v = b[:2]
            attempt(log, lambda: v.mul_(2))
            b.mul_(2)
            attempt(log, lambda: v.grad_fn)
        a = lib.ones(3, requires_grad=True)
        b = a * 1
        u = b.unbind(0)[0]
        attempt(log, lambda: u.mul_(2))
        w = b.split(1)[1].view(1)
        attempt(log, lambda: w.mul_(2))
        b.mul_(2)
        attempt(log, lambda: u.grad_fn)
    events(s)


def test_grad_fn_call_checks_the_number_of_grads():
    def s(lib, log):
        x = lib.ones(1, requires_grad=True)
        y = x ** 2
        attempt(log, lambda: y.grad_fn(x.detach(), x.detach()))
        attempt(log, lambda: y.grad_fn())
        log("one", [float(g.detach().sum()) for g in y.grad_fn(x.detach())])
        a, b = lib.ones(2, requires_grad=True).unbind()
        attempt(log, lambda: a.grad_fn(x.detach()))
    events(s)
