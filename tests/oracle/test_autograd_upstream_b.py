"""Behaviours PyTorch's test_autograd.py checks (issue 27, share B), each run the same way under torch and
hookgrad: views across dtypes modified in place, complex elementwise gradients, gradcheck's forward-AD,
batched and undefined-tangent checks, forward AD with vmap's batched tangents, and the aten operators forward
AD uses (_new_zeros_with_same_feature_meta, _has_same_storage_numel, convolution_backward)."""
import warnings

import numpy as np
import pytest
import torch

import hookgrad
from oracle import to_np

LIBS = (torch, hookgrad)


def close(a, b, what="", rtol=1e-7, atol=1e-9):
    """Two results (tensors, nested tuples, numbers) equal within tolerance, dtypes and shapes included."""
    if isinstance(a, (tuple, list)):
        assert isinstance(b, (tuple, list)) and len(a) == len(b), f"{what}: {a!r} vs {b!r}"
        for i, (x, y) in enumerate(zip(a, b)):
            close(x, y, f"{what}[{i}]", rtol, atol)
        return
    if isinstance(a, torch.Tensor):
        assert isinstance(b, hookgrad.Tensor), f"{what}: hookgrad gave {type(b).__name__}"
        assert str(a.dtype) == str(b.dtype), f"{what}: {a.dtype} vs {b.dtype}"
        assert tuple(a.shape) == tuple(b.shape), f"{what}: {tuple(a.shape)} vs {tuple(b.shape)}"
        np.testing.assert_allclose(to_np(b), to_np(a), rtol=rtol, atol=atol, err_msg=what)
        return
    assert a == b, f"{what}: {a!r} vs {b!r}"


def both(fn):
    out = []
    for L in LIBS:
        L.manual_seed(0)
        out.append(fn(L))
    return out


def same(fn, **tol):
    t, h = both(fn)
    close(t, h, **tol)
    return t, h


def errors(fn):
    """The exceptions fn(L) raises under both libraries (their type names and first lines must agree)."""
    res = []
    for L in LIBS:
        L.manual_seed(0)
        with pytest.raises(Exception) as e:
            fn(L)
        res.append(e.value)
    t, h = res
    assert type(t).__name__ == type(h).__name__ or isinstance(h, type(t)), f"{t!r} / {h!r}"
    return t, h


# ------------------------------------------------------------------ views across dtypes, modified in place
@pytest.mark.parametrize("inplace_transpose", [False, True])
def test_view_as_real_inplace_grad(inplace_transpose):
    # PyTorch keeps a cross-dtype view's replay function through an in-place view op (its pinned bug)
    def f(L):
        a_orig = L.rand(3, 3, requires_grad=True, dtype=L.complex64)
        a = a_orig.clone()
        b = L.view_as_real(a)
        if inplace_transpose:
            b.transpose_(0, 1)
        else:
            b = b.transpose(0, 1)
        b += 1
        b.backward(L.arange(0, 18, dtype=L.float).view(3, 3, 2))
        return a_orig.grad
    same(f)


def test_cross_dtype_views_regenerated_after_inplace():
    def f(L):
        x = L.rand(2, 3, dtype=L.complex128, requires_grad=True)
        a = x.clone()
        v, w = a.real, a.imag[:, 1]
        a.mul_(2)
        loss = (v * v).sum() + (w ** 3).sum()
        g, = L.autograd.grad(loss, x, create_graph=True)
        gg, = L.autograd.grad(g.abs().sum(), x)
        y = L.rand(2, 4, dtype=L.float64, requires_grad=True)
        b = y.clone()
        c = L.view_as_complex(b.view(2, 2, 2))
        b.mul_(3)
        loss2 = (c * c.conj()).real.sum() + (c * (1 + 2j)).imag.sum()
        h, = L.autograd.grad(loss2, y, create_graph=True)
        hh, = L.autograd.grad((h * h).sum(), y)
        return g, gg, h, hh
    same(f)


def test_real_view_grad_fn_in_no_grad():
    def f(L):
        a = L.tensor([1 + 1j], requires_grad=True).clone()
        v = a.real
        a.add_(1)
        with L.no_grad():
            name = type(v.grad_fn).__name__
        v.sum().backward()
        return name
    t, h = both(f)
    assert t == h == "AsStridedBackward0"


# ------------------------------------------------------------------ complex elementwise ops
COMPLEX_OPS = ["tanh", "tan", "sigmoid", "sqrt", "rsqrt", "expm1", "exp2", "log2", "log10", "log1p", "asin", "acos",
               "atan", "asinh", "acosh", "atanh", "sinh", "cosh"]


@pytest.mark.parametrize("name", COMPLEX_OPS)
def test_complex_unary_values_and_gradients(name):
    def f(L):
        z = (L.randn(6, dtype=L.cdouble) * 0.5).requires_grad_()
        y = getattr(L, name)(z)
        g, = L.autograd.grad((y * y.conj()).real.sum() + y.imag.sum(), z, create_graph=True)
        gg, = L.autograd.grad(g.abs().sum(), z)
        with L.autograd.forward_ad.dual_level():
            d = L.autograd.forward_ad.make_dual(z.detach(), L.ones_like(z))
            tan = L.autograd.forward_ad.unpack_dual(getattr(L, name)(d)).tangent
        return y, g, gg, tan
    same(f)


def test_sparse_values_tanh_complex_gradcheck():
    # upstream test_sparse_ctor_getter_backward (complex128)
    def f(L):
        i = L.tensor([[0, 1, 1], [0, 0, 0]])
        other = L.sparse_coo_tensor(i, L.randn(3, 2, dtype=L.complex128), (2, 1, 2))
        inp = L.randn(3, 2, dtype=L.double, requires_grad=True)

        def fn(v):
            x = L.sparse_coo_tensor(i, v, (2, 1, 2), dtype=L.complex128)
            y = (x + other).coalesce()
            z = L.sparse_coo_tensor(y.indices(), y.values().tanh(), y.size())
            return z.coalesce().values()
        return L.autograd.gradcheck(fn, (inp,), check_batched_grad=False)
    t, h = both(f)
    assert t is True and h is True


# ------------------------------------------------------------------ gradcheck
def test_gradcheck_real_to_complex_forward_ad():
    def f(L):
        inp_c = L.rand(3, 2, dtype=L.cdouble, requires_grad=True)
        inp_r = L.randn(3, 2, dtype=L.double, requires_grad=True)
        res = []
        for fn in (lambda a, b: L.cat((a, b), dim=-1), lambda a, b: L.stack((a, b), dim=-1)):
            res.append(L.autograd.gradcheck(fn, [inp_r, inp_c], check_forward_ad=True))
            res.append(L.autograd.gradcheck(fn, [inp_c, inp_r], check_forward_ad=True))
        return res
    t, h = same(f)
    assert all(t)


@pytest.mark.parametrize("dtypes", [("double", "double"), ("cdouble", "double"), ("cdouble", "cdouble")])
def test_gradcheck_forward_ad_catches_wrong_tangent(dtypes):
    def f(L):
        fw = L.autograd.forward_ad
        x = L.rand(2, dtype=getattr(L, dtypes[0]), requires_grad=True)
        y = L.rand(2, dtype=getattr(L, dtypes[1]), requires_grad=True)

        def bad_fn(a, b):
            if fw._current_level >= 0:
                p, d = fw.unpack_dual(b)
                b = fw.make_dual(p, d * 1.1)
            return a + b, b
        ok = L.autograd.gradcheck(lambda a, b: (a + b, b), (x, y), check_forward_ad=True)
        bad = L.autograd.gradcheck(bad_fn, (x, y), check_forward_ad=True, raise_exception=False)
        try:
            L.autograd.gradcheck(bad_fn, (x, y), check_forward_ad=True)
            msg = ""
        except RuntimeError as e:
            msg = str(e).split("\n")[0]
        return ok, bad, msg
    t, h = same(f)
    assert t[0] is True and t[1] is False and "forward mode mismatch for output 0 with respect to input 1" in t[2]
    if dtypes[1] == "cdouble":
        assert t[2].startswith("While considering the imaginary part of complex inputs only")


def test_gradcheck_jvp_counts():
    def f(L):
        counts = []

        class UserFn(L.autograd.Function):
            @staticmethod
            def forward(ctx, x, y):
                return x.clone(), y.clone()

            @staticmethod
            def jvp(ctx, x_t, y_t):
                counts[-1] += 1
                return x_t, y_t
        for ry, undefined, batched in ((True, False, False), (True, True, False), (True, True, True),
                                       (False, True, True)):
            counts.append(0)
            x = L.rand(1, dtype=L.double, requires_grad=True)
            y = L.rand(1, dtype=L.double, requires_grad=ry)
            L.autograd.gradcheck(UserFn.apply, (x, y), check_forward_ad=True, check_undefined_grad=undefined,
                                 check_backward_ad=False, check_batched_grad=False,
                                 check_batched_forward_grad=batched)
        return counts
    t, h = same(f)
    assert t == [2, 6, 12, 5]


def test_gradcheck_leaves_random_state_alone():
    def f(L):
        x = L.rand(3, dtype=L.double, requires_grad=True)
        L.autograd.gradcheck(L.sin, (x,), check_forward_ad=True)
        return L.rand(4)
    same(f)


def test_gradcheck_batched_grad_failure():
    def f(L):
        x = L.rand(10, dtype=L.double, requires_grad=True).to_sparse()
        ok = L.autograd.gradcheck(lambda x: x.to_dense(), (x,), masked=True, check_batched_grad=True,
                                  raise_exception=False)
        try:
            L.autograd.gradcheck(lambda x: x.to_dense(), (x,), masked=True, check_batched_grad=True)
            msg = ""
        except RuntimeError as e:       # (PyTorch's advice after the vmap error, which names other ops)
            msg = str(e)[str(e).find("gradcheck or gradgradcheck failed while testing batched gradient"):]
        return ok, msg
    t, h = same(f)
    assert t[0] is False and t[1].startswith("gradcheck or gradgradcheck") and "check_batched_gradgrad" in t[1]


def test_gradcheck_batched_checks_pass():
    def f(L):
        a = L.rand(3, 3, dtype=L.double, requires_grad=True)
        b = L.rand(3, 3, dtype=L.double, requires_grad=True)
        return [L.autograd.gradcheck(fn, args, check_forward_ad=True, check_batched_grad=True,
                                     check_batched_forward_grad=True)
                for fn, args in ((L.sin, (a,)), (L.add, (a, b)), (lambda x, y: (x * y).tanh().sum(0), (a, b)))]
    t, h = same(f)
    assert all(t)


def test_gradcheck_batched_forward_grad_random_op():
    def f(L):
        class Fn(L.autograd.Function):
            @staticmethod
            def forward(ctx, foo):
                return foo * 2

            @staticmethod
            def vjp(ctx, gO):
                return gO * 2

            @staticmethod
            def jvp(ctx, gI):
                L.randn_like(gI)
                return gI * 2
        x = L.rand(2, dtype=L.double, requires_grad=True)
        L.autograd.gradcheck(Fn.apply, (x,), check_forward_ad=True, check_batched_forward_grad=True)
    t, h = errors(f)
    assert "vmap: We do not yet support calling random operations inside of vmap" in str(t)
    assert str(h) == str(t)             # the vmap error, then PyTorch's advice for the forward-mode check
    assert "vmap: We do not yet support calling random operations inside of vmap" in str(h)


# ------------------------------------------------------------------ forward AD with vmap's batched tangents
def test_batched_tangent_kept_or_copied_by_make_dual():
    def f(L):
        fw = L.autograd.forward_ad
        out = []
        for primal in (L.zeros(2, 2).transpose(0, 1), L.zeros(2, 2)):
            tangent = L.randn(3, 2, 2)

            def jvp(t):
                with fw.dual_level():
                    return fw.unpack_dual(fw.make_dual(primal, t))[1]
            r = L._vmap_internals._vmap(jvp, 0, 0)(tangent)
            out += [r is tangent, r, r.stride()]
        return out
    t, h = same(f)
    assert t[0] is False and t[3] is True


@pytest.mark.parametrize("layout", ["same", "transposed"])
def test_batched_tangent_inplace_on_view(layout):
    def f(L):
        fw = L.autograd.forward_ad
        inp = L.zeros(2, 2)
        tangent = L.randn(3, 2, 2)
        base = L.zeros(2, 2)
        view = base.view_as(base) if layout == "same" else base.transpose(0, 1)

        def jvp(t):
            with fw.dual_level():
                x = fw.make_dual(inp, t)
                view.copy_(x)
                return fw.unpack_dual(x)[1], fw.unpack_dual(view)[1], fw.unpack_dual(view._base)[1]
        with warnings.catch_warnings():
            warnings.simplefilter("error")      # copy_ has a batching rule: no per-sample fallback
            warnings.simplefilter("ignore", DeprecationWarning)     # (torch.jit.script's, on torch's first use)
            x_t, view_t, base_t = L._vmap_internals._vmap(jvp, 0, 0)(tangent)
        return [x_t is tangent, view_t is base_t, view_t._base is base_t, view_t._is_view(), view_t, base_t]
    t, h = same(f)
    assert t[0] is True


def test_batched_tangent_as_strided_checks_bounds():
    def f(L):
        fw = L.autograd.forward_ad
        primal = L.randn(5)[:4].detach()
        tangent = L.randn(10, 4)
        seen = []

        def jvp(t):
            with fw.dual_level():
                dual = fw.make_dual(primal, t)
                _, unpacked = fw.unpack_dual(dual)
                seen.append(unpacked is t)
                try:
                    dual.as_strided((5,), (1,), 0)
                except RuntimeError as e:
                    seen.append(str(e))
                d2 = dual.as_strided((2,), (2,), 1)
                return unpacked, fw.unpack_dual(d2)[1], fw.unpack_dual(dual.sin() * 2 + dual[1:3].sum())[1]
        return L._vmap_internals._vmap(jvp, 0, 0)(tangent), seen
    (t, ts), (h, hs) = both(f)
    close(t, h, rtol=1e-5, atol=1e-6)
    assert ts[0] is hs[0] is True
    assert "can access memory outside of `tensor`" in ts[1] and "can access memory outside of `tensor`" in hs[1]


def test_vmap_as_strided_rule():
    def f(L):
        g = lambda t: t.as_strided((2,), (2,), 1)
        res = [L.vmap(g)(L.arange(40.).reshape(10, 4)), L.vmap(g)(L.arange(40.).reshape(4, 10).t())]
        try:
            L.vmap(lambda t: t.as_strided((5,), (1,), 0))(L.randn(10, 4))
        except RuntimeError as e:
            res.append(str(e))
        return res
    same(f)


def test_custom_function_jvp_sees_batched_tangent_once():
    def f(L):
        calls = []

        class Fn(L.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                return x * 2

            @staticmethod
            def jvp(ctx, t):
                calls.append(1)
                return t * 2
        fw = L.autograd.forward_ad
        primal = L.randn(3)

        def jvp(t):
            with fw.dual_level():
                return fw.unpack_dual(Fn.apply(fw.make_dual(primal, t)))[1]
        r = L._vmap_internals._vmap(jvp)(L.randn(4, 3))
        return r, len(calls)
    t, h = same(f)
    assert t[1] == 1


def test_make_dual_grad_fn():
    def f(L):
        fw = L.autograd.forward_ad
        with fw.dual_level():
            p = L.rand(2, requires_grad=True)
            d = fw.make_dual(p, L.ones(2))
            return type(d.grad_fn).__name__, d._base is p, d._is_view()
    t, h = same(f)
    assert t == ("ViewBackward0", True, True)


# ------------------------------------------------------------------ aten operators
def _meta(r):
    return tuple(r.shape), r.stride(), r.storage_offset(), r.untyped_storage().nbytes() // r.element_size(), \
        str(r.dtype), r.is_contiguous(), bool((r == 0).all())


def test_new_zeros_with_same_feature_meta():
    def f(L):
        fn = L.ops.aten._new_zeros_with_same_feature_meta
        pairs = [(L.randn(5), L.randn(2, 3, 4, dtype=L.double)),
                 (L.randn(2, 3, 4).transpose(0, 1).contiguous().transpose(0, 1), L.randn(2, 3, 4)),
                 (L.randn(5).narrow(0, 1, 2), L.randn(2)), (L.randn(5).resize_(4), L.randn(4)),
                 (L.randn(1, 0, 2), L.randn(1, 2)), (L.tensor(1.0), L.randn(1, 2))]
        out = []
        for a, b in pairs:
            for t, target in ((a, b), (b, a)):
                for n in range(t.dim()):
                    out.append(_meta(fn(t, target, self_num_batch_dims=n)))
        return out
    same(f)


def test_has_same_storage_numel():
    def f(L):
        fn = L.ops.aten._has_same_storage_numel
        return [fn(L.randn(5)[:4], L.randn(4)), fn(L.randn(5)[:4], L.randn(5)), fn(L.randn(2, 3).t(), L.randn(6))]
    same(f)


@pytest.mark.parametrize("transposed", [False, True])
def test_convolution_backward(transposed):
    def f(L):
        x = L.randn(2, 4, 7, 6, dtype=L.double)
        if transposed:
            w = L.randn(4, 3, 3, 2, dtype=L.double)
            out = L.nn.functional.conv_transpose2d(x, w, None, (2, 1), (1, 0), (1, 0), 2, (1, 2))
            op = (1, 0)
        else:
            w = L.randn(6, 2, 3, 2, dtype=L.double)
            out = L.nn.functional.conv2d(x, w, None, (2, 1), (1, 0), (1, 2), 2)
            op = (0, 0)
        go = L.randn_like(out)
        full = L.ops.aten.convolution_backward(go, x, w, [out.shape[1]], (2, 1), (1, 0), (1, 2), transposed, op, 2,
                                               (True, True, True))
        masked = L.ops.aten.convolution_backward(go, x, w, None, (2, 1), (1, 0), (1, 2), transposed, op, 2,
                                                 (False, True, False))
        return full, masked
    same(f, rtol=1e-10)


def test_convolution_backward_forward_ad_ignores_masked_outputs():
    def f(L):
        fw = L.autograd.forward_ad
        weight = L.randn(6, 1, 5, 5)
        inp = L.rand(1, 1, 8, 8)
        grad_out = L.ones_like(L.nn.functional.conv2d(inp, weight))
        with fw.dual_level():
            dual_weight = fw.make_dual(weight, L.ones_like(weight))
            gi, gw, gb = L.ops.aten.convolution_backward(grad_out, inp, dual_weight, (0,), (1, 1), (0, 0), (1, 1),
                                                         False, (0, 0), 1, (False, True, False))
            dual_out = fw.make_dual(grad_out, L.ones_like(grad_out))
            gi2, _, _ = L.ops.aten.convolution_backward(dual_out, inp, dual_weight, (0,), (1, 1), (0, 0), (1, 1),
                                                        False, (0, 0), 1, (True, False, False))
            return gi, gw, gb, gi2, fw.unpack_dual(gi2).tangent
    same(f, rtol=1e-5, atol=1e-5)


def test_empty_strides_and_as_strided_storage():
    def f(L):
        z = L.zeros(5).as_strided((2,), (1,), 1)
        return [L.randn(1, 0, 2).stride(), L.zeros(0, 3).stride(), z.storage_offset(),
                z.untyped_storage().nbytes()]
    same(f)


# ------------------------------------------------------------------ conjugate / negative bits (metadata)
def test_conj_neg_bits():
    def f(L):
        x = L.randn(2, 2, dtype=L.cdouble, requires_grad=True)
        c = x.conj()
        n = x._neg_view()
        r = L.randn(3)
        bits = lambda t: (t.is_conj(), t.is_neg())
        out = [bits(c), bits(c.conj()), bits(c.clone()), bits(c.resolve_conj()), bits(c * 2), bits(c[1:]),
               bits(c.t()), bits(c.reshape(4)), bits(c.imag), bits(c.real), bits(n), bits(n.resolve_neg()),
               bits(-x), bits(c.detach()), bits(r.conj()), bits(r._neg_view()), bits(c.resolve_neg()),
               bits(c.imag.resolve_neg()), bits(c.to(L.cfloat)), bits(c.contiguous()), bits(c.sum()),
               L.is_conj(c), L.is_neg(c.imag), r.conj() is r,
               type(c.grad_fn).__name__, type(n.grad_fn).__name__, type(c.resolve_conj().grad_fn).__name__,
               c, n, c.imag, c.resolve_conj(), n.resolve_neg()]
        c2 = x.detach().clone().conj()
        c2.add_(1)
        out.append(bits(c2))
        try:
            L.view_as_real(c)
        except RuntimeError as e:
            out.append(str(e))
        g, = L.autograd.grad((c * c.imag).abs().sum() + n.real.sum(), x)
        return out + [g]
    same(f)


@pytest.mark.parametrize("primal_key", ["NEITHER", "CONJ", "NEG"])
@pytest.mark.parametrize("tangent_key", ["NEITHER", "CONJ", "NEG"])
def test_make_dual_compares_conj_neg_bits(primal_key, tangent_key):
    def f(L):
        keys = {"NEITHER": lambda x: x, "CONJ": lambda x: x.conj(), "NEG": lambda x: x._neg_view()}
        fw = L.autograd.forward_ad
        x = keys[primal_key](L.randn(2, 3, dtype=L.cdouble))
        t = keys[tangent_key](L.randn(2, 3, dtype=L.cdouble))
        with fw.dual_level():
            dual = fw.make_dual(x, t)
            tan = fw.unpack_dual(dual).tangent
            re, im = L.real(dual), L.imag(dual)
            parts = [fw.unpack_dual(v).tangent for v in (re, im, dual[1:])]
            return [tan is t, tan.is_conj(), tan.is_neg(), tan] + [(p.is_conj(), p.is_neg(), p) for p in parts]
    t, h = same(f)
    assert t[0] is (primal_key == tangent_key)


def test_aten_alias():
    def f(L):
        x = L.randn(3, requires_grad=True)
        a = L.ops.aten.alias(x)
        a.sum().backward()
        return type(a.grad_fn).__name__, a._base is x, a.data_ptr() == x.data_ptr(), x.grad
    same(f)


def test_nested_vmap_batched_tangents():
    def f(L):
        fw = L.autograd.forward_ad
        V = L._vmap_internals._vmap
        p = L.randn(3, 4)

        def jvp(t):
            with fw.dual_level():
                d = fw.make_dual(p, t)
                o = (d.sin() * d).t()[1:].sum(0) + d.as_strided((2,), (1,), 1).sum() + d.exp().mean()
                v = L.zeros(4, 3).t()
                v.copy_(d)
                return fw.unpack_dual(o).tangent, fw.unpack_dual(v)[1], fw.unpack_dual(v._base)[1]
        return V(V(jvp))(L.randn(2, 5, 3, 4))
    same(f, rtol=1e-5, atol=1e-6)
