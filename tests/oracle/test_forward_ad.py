"""torch.autograd.forward_ad beside the op sweep (test_forward_ad_ops.py): levels, the API's errors, views and
in-place ops on dual tensors, custom Functions with jvp / save_for_forward, gradcheck's forward-AD modes, and
that forward AD leaves no trace once its level is gone. Each test runs the same code under torch and hookgrad."""
import numpy as np
import pytest
import torch

import hookgrad
from oracle import assert_same

LIBS = (torch, hookgrad)
r = lambda *s, seed=0: np.random.default_rng(seed).standard_normal(s)


def both(fn):
    """fn(L) under both libraries; returns (torch's, hookgrad's) result or exception."""
    res = []
    for L in LIBS:
        try:
            res.append(fn(L))
        except Exception as e:  # noqa: BLE001 - compared below
            res.append(e)
        finally:
            fw = L.autograd.forward_ad
            while fw._current_level >= 0:
                fw.exit_dual_level()
    return res


def same_error(fn):
    te, he = both(fn)
    assert isinstance(te, Exception), f"torch raised nothing: {te}"
    assert isinstance(he, Exception), f"hookgrad raised nothing; torch raised {type(te).__name__}: {te}"
    assert type(te).__name__ == type(he).__name__, f"torch {type(te).__name__}: {te} / hookgrad {type(he).__name__}: {he}"
    assert str(he).startswith(str(te).split("\n")[0][:60]), f"\ntorch:    {te}\nhookgrad: {he}"


def same(fn, tol=None):
    t, h = both(fn)
    assert not isinstance(t, Exception), t
    if isinstance(h, Exception):
        raise h
    t, h = (t if isinstance(t, (tuple, list)) else (t,)), (h if isinstance(h, (tuple, list)) else (h,))
    assert len(t) == len(h)
    for i, (a, b) in enumerate(zip(t, h)):
        assert_same(a, b, f"result {i}", tol)


# ------------------------------------------------------------------------------------------- levels

def test_levels():
    def f(L):
        fw = L.autograd.forward_ad
        out = [fw._current_level]
        with fw.dual_level() as lvl:
            out += [lvl, fw._current_level]
        out.append(fw._current_level)
        lvl = fw.enter_dual_level()
        out.append(lvl)
        fw.exit_dual_level(level=lvl)
        out.append(fw._current_level)
        return out
    t, h = both(f)
    assert t == h == [-1, 0, 0, -1, 0, -1]


def test_tangent_deleted_on_exit():
    def f(L):
        fw = L.autograd.forward_ad
        with fw.dual_level():
            d = fw.make_dual(L.tensor([1.0, 2.0]), L.tensor([1.0, 1.0]))
            y = d * 2
            inside = fw.unpack_dual(y).tangent
        after = fw.unpack_dual(y)
        return inside, after.tangent, after.primal
    same(f)


@pytest.mark.parametrize("case", ["nested", "no_level", "size", "int_primal", "int_tangent", "twice", "exit_wrong",
                                  "exit_none", "bad_level"])
def test_errors(case):
    def f(L):
        fw = L.autograd.forward_ad
        x = L.tensor([1.0, 2.0, 3.0])
        if case == "no_level":
            return fw.make_dual(x, x)
        if case == "exit_none":
            return fw.exit_dual_level()
        with fw.dual_level():
            if case == "nested":
                fw.enter_dual_level()
            elif case == "size":
                fw.make_dual(x, L.ones(4))
            elif case == "int_primal":
                fw.make_dual(x.long(), x)
            elif case == "int_tangent":
                fw.make_dual(x, x.long())
            elif case == "twice":
                fw.make_dual(fw.make_dual(x, x), x)
            elif case == "exit_wrong":
                fw.exit_dual_level(level=3)
            elif case == "bad_level":
                fw.make_dual(x, x, level=2)
    same_error(f)


def test_unpack_outside_level_and_plain_tensor():
    def f(L):
        fw = L.autograd.forward_ad
        x = L.tensor([1.0, 2.0])
        a = fw.unpack_dual(x)
        with fw.dual_level():
            b = fw.unpack_dual(x)
        return type(a).__name__, a.tangent is None, a.primal is x, b.tangent is None
    t, h = both(f)
    assert t == h


def test_make_dual_aliases():
    def f(L):
        fw = L.autograd.forward_ad
        x = L.tensor([1.0, 2.0])
        t = L.tensor([3.0, 4.0])
        with fw.dual_level():
            d = fw.make_dual(x, t)
            p, tt = fw.unpack_dual(d)
            x.add_(1)       # the dual and its primal alias x
            return (d._base is x, tt is t, d.grad_fn is None, d.requires_grad, float(d[0]), float(p[0]),
                    fw.make_dual(L.ones(2, requires_grad=True), t).requires_grad)
    t, h = both(f)
    assert t == h


# ------------------------------------------------------------------------------------------- views and in-place

def test_view_tangent_is_a_view_of_the_tangent():
    def f(L):
        fw = L.autograd.forward_ad
        t = L.tensor(r(3, 4))
        with fw.dual_level():
            d = fw.make_dual(L.tensor(r(3, 4, seed=1)), t)
            v = d[1:].t()
            vt = fw.unpack_dual(v).tangent
            vt.mul_(0)          # writing the view's tangent writes the tangent
            return t.clone(), vt
    same(f)


def test_inplace_updates_tangent():
    def f(L):
        fw = L.autograd.forward_ad
        t = L.tensor(r(3))
        with fw.dual_level():
            d = fw.make_dual(L.tensor(r(3, seed=1)), t)
            d.mul_(2).sin_()
            y = L.tensor(r(3, seed=2))
            y.add_(d)           # a plain tensor becomes dual
            return fw.unpack_dual(d).tangent, t.clone(), fw.unpack_dual(y).tangent
    same(f)


def test_inplace_on_view_of_plain_base():
    def f(L):
        fw = L.autograd.forward_ad
        with fw.dual_level():
            base = L.tensor(r(3, 4))
            d = fw.make_dual(L.tensor(r(4, seed=1)), L.tensor(r(4, seed=2)))
            base[1] = d                    # copy_ into a view: the base gets a tangent, zeros elsewhere
            base[2].mul_(d)
            z = base * 1
            return fw.unpack_dual(base).tangent, fw.unpack_dual(z).tangent
    same(f)


def test_meta_inplace():
    def f(L):
        fw = L.autograd.forward_ad
        with fw.dual_level():
            d = fw.make_dual(L.tensor(r(3, 1, 4)), L.tensor(r(3, 1, 4, seed=1)))
            e = d * 1
            e.squeeze_(1).t_()
            return e, fw.unpack_dual(e).tangent
    same(f)


def test_no_grad_and_requires_grad():
    """Tangents flow under no_grad; a dual input that requires grad keeps its reverse graph (and no extra
    edge is left behind by the tangent step)."""
    def f(L):
        fw = L.autograd.forward_ad
        x = L.tensor(r(3), requires_grad=True)
        w = L.tensor(r(3, seed=1))
        with fw.dual_level():
            dw = fw.make_dual(w, L.tensor(r(3, seed=2)))
            with L.no_grad():
                a = fw.unpack_dual((dw * 3).exp()).tangent
            y = (x * dw).sin().sum()
            yt = fw.unpack_dual(y).tangent
            (g,) = L.autograd.grad(y, x)
            return a, yt, g, y.grad_fn.next_functions[0][0].next_functions[0][0].next_functions[1][0] is None
    same(f)


def test_reverse_over_forward():
    """The tangent is differentiable (reverse mode through the forward-mode computation)."""
    def f(L):
        fw = L.autograd.forward_ad
        x = L.tensor(r(4), requires_grad=True)
        t = L.tensor(r(4, seed=1), requires_grad=True)
        with fw.dual_level():
            d = fw.make_dual(x, t)
            yt = fw.unpack_dual((d.sin() * d).sum()).tangent
        return L.autograd.grad(yt, (x, t))
    same(f)


def test_fallback_ops_match():
    """Ops without a written jvp (the transpose-of-transpose fallback): layer norm, conv, max pool, cumprod."""
    def f(L):
        fw = L.autograd.forward_ad
        F = L.nn.functional
        with fw.dual_level():
            x = fw.make_dual(L.tensor(r(2, 3, 5, 5)), L.tensor(r(2, 3, 5, 5, seed=1)))
            w = fw.make_dual(L.tensor(r(4, 3, 3, 3, seed=2)), L.tensor(r(4, 3, 3, 3, seed=3)))
            y = F.max_pool2d(F.conv2d(x, w, padding=1), 2)
            z = F.layer_norm(y, (2, 2)).cumprod(-1)
            return fw.unpack_dual(y).tangent, fw.unpack_dual(z).tangent
    same(f, tol=(1e-7, 1e-7))


# ------------------------------------------------------------------------------------------- custom Functions

def _fns(L):
    class Cube(L.autograd.Function):
        @staticmethod
        def forward(ctx, x, k):
            ctx.save_for_forward(x)
            ctx.k = k
            return x ** 3 * k

        @staticmethod
        def backward(ctx, g):
            return None, None

        @staticmethod
        def jvp(ctx, tx, tk):
            (x,) = ctx.saved_tensors
            return 3 * x * x * tx * ctx.k

    class Two(L.autograd.Function):
        @staticmethod
        def forward(x, y):
            return x * y, x + y

        @staticmethod
        def setup_context(ctx, inputs, output):
            ctx.save_for_forward(*inputs)

        @staticmethod
        def backward(ctx, a, b):
            return None, None

        @staticmethod
        def jvp(ctx, tx, ty):
            x, y = ctx.saved_tensors
            return tx * y + x * ty, tx + ty

    class NoJvp(L.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, g):
            return g * 2

    class WrongCount(NoJvp):
        @staticmethod
        def jvp(ctx, t):
            return t, t
    return Cube, Two, NoJvp, WrongCount


def test_custom_function_jvp():
    def f(L):
        fw = L.autograd.forward_ad
        Cube, Two, _, _ = _fns(L)
        with fw.dual_level():
            x = fw.make_dual(L.tensor(r(3)), L.tensor(r(3, seed=1)))
            y = L.tensor(r(3, seed=2))      # not dual: its tangent is zeros in jvp
            a = Cube.apply(x, 2.0)
            b, c = Two.apply(x, y)
            return fw.unpack_dual(a).tangent, fw.unpack_dual(b).tangent, fw.unpack_dual(c).tangent
    same(f)


@pytest.mark.parametrize("which", [2, 3])
def test_custom_function_jvp_errors(which):
    def f(L):
        fw = L.autograd.forward_ad
        fn = _fns(L)[which]
        with fw.dual_level():
            fn.apply(fw.make_dual(L.tensor(r(3)), L.tensor(r(3, seed=1))))
    same_error(f)


# ------------------------------------------------------------------------------------------- gradcheck

def test_gradcheck_forward_ad_calls_jvp():
    """check_forward_ad compares real jvp results with finite differences: a wrong jvp fails, a right one passes."""
    def f(L):
        Cube, _, NoJvp, _ = _fns(L)

        class Wrong(NoJvp):             # (forward x * 2, whose tangent is not t * 3)
            @staticmethod
            def jvp(ctx, t):
                return t * 3
        x = L.tensor(r(3), requires_grad=True)
        ok = L.autograd.gradcheck(lambda x: Cube.apply(x, 2.0), (x,), check_forward_ad=True, check_backward_ad=False)
        ok2 = L.autograd.gradcheck(lambda x, w: (x[:, None] * w).tanh().softmax(-1),
                                   (x, L.tensor(r(3, 2, seed=1), requires_grad=True)), check_forward_ad=True)
        bad = L.autograd.gradcheck(Wrong.apply, (x,), check_forward_ad=True, check_backward_ad=False,
                                   raise_exception=False)
        return ok, ok2, bad
    t, h = both(f)
    assert t == h == (True, True, False), (t, h)


def test_gradgradcheck_fwd_over_rev():
    def f(L):
        x = L.tensor(r(3), requires_grad=True)
        w = L.tensor(r(3, seed=1), requires_grad=True)
        # tanh and softmax save their outputs: the backward inside the level must see those outputs' tangents
        return L.autograd.gradgradcheck(lambda x, w: ((x * w).sin() * x).tanh().softmax(0), (x, w),
                                        check_fwd_over_rev=True)
    t, h = both(f)
    assert t is True and h is True, (t, h)


def test_print():
    def f(L):
        fw = L.autograd.forward_ad
        with fw.dual_level():
            a = L.tensor([1.0, 2.0])
            b = fw.make_dual(a, L.tensor([3.0, 4.0], dtype=L.float64))
            p, t = fw.unpack_dual(b)
            return repr(a), repr(b), str(b * 2), repr(p), repr(t)
    t, h = both(f)
    assert t == h


def test_not_implemented_message():
    """An op with neither a jvp nor a backward formula: PyTorch's NotImplementedError."""
    same_error(lambda L: _igamma(L))


def _igamma(L):
    fw = L.autograd.forward_ad
    with fw.dual_level():
        x = fw.make_dual(L.tensor([1.0, 2.0]), L.tensor([1.0, 1.0]))
        L.igamma(x, L.tensor([1.0, 2.0]))


def test_out_variant_refused():
    def f(L):
        fw = L.autograd.forward_ad
        with fw.dual_level():
            foo = fw.make_dual(L.rand(2), L.rand(2))
            L.add(L.rand(2), L.rand(2), out=foo)
    same_error(f)
