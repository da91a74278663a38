"""vmap against torch where review found hookgrad apart: torch.linalg/torch.special functions named as another
torch function or Tensor method (linalg.cross, linalg.diagonal, linalg.norm, special.softmax ...), and in-place
ops of a tensor not batched at the level with a batched argument (each of PyTorch's three answers: the physical
broadcast error, "inplace arithmetic", the in-place fallback's "aten::<op> ... at level <n>"), item assignment,
and the augmented assignments (``x **= y``) in place."""
import warnings

import numpy as np
import pytest

from _func_util import both, raises_same, data

X = data(4, 3, 5, dtype=np.float64)
Y = data(4, 5, seed=1, dtype=np.float64)


def _no_warning(fn):
    """fn() with every warning an error: a batching rule, not the per-sample fallback (which warns)."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        return fn()


NAMESPACED = [
    ("linalg.cross", lambda lib, v: lib.linalg.cross(v[:, :3], v[:, 1:4])),
    ("linalg.cross dim", lambda lib, v: lib.linalg.cross(v[:, :3], v[:, :3].flip(1), dim=1)),
    ("linalg.cross dim 0", lambda lib, v: lib.linalg.cross(v.T[:3], v.T[1:4], dim=0)),
    ("linalg.cross unbatched", lambda lib, v: lib.linalg.cross(v[0, :3], lib.tensor([1., 2., 3.], dtype=v.dtype))),
    ("linalg.cross unbatched first", lambda lib, v: lib.linalg.cross(lib.ones(3, 3, dtype=v.dtype), v[:, 1:4])),
    ("cross legacy dim", lambda lib, v: lib.cross(v.T[:3].T, v.T[1:4].T, dim=1)),
    ("linalg.diagonal", lambda lib, v: lib.linalg.diagonal(v)),
    ("linalg.diagonal dims", lambda lib, v: lib.linalg.diagonal(v, offset=1, dim1=1, dim2=0)),
    ("linalg.norm", lambda lib, v: lib.linalg.norm(v)),
    ("linalg.norm keepdim", lambda lib, v: lib.linalg.norm(v, keepdim=True)),
    ("linalg.norm ord 2", lambda lib, v: lib.linalg.norm(v, ord=2)),
    ("linalg.norm ord 1", lambda lib, v: lib.linalg.norm(v, ord=1)),
    ("linalg.norm dim", lambda lib, v: lib.linalg.norm(v, dim=1)),
    ("linalg.norm fro dims", lambda lib, v: lib.linalg.norm(v, "fro", dim=(0, 1))),
    ("linalg.norm vector ord", lambda lib, v: lib.linalg.norm(v[0], ord=1, keepdim=True)),
    ("special.softmax", lambda lib, v: lib.special.softmax(v, 1)),
    ("special.log_softmax dtype", lambda lib, v: lib.special.log_softmax(v, -1, dtype=lib.float32)),
    ("special.logsumexp", lambda lib, v: lib.special.logsumexp(v, 1)),
    ("special.round", lambda lib, v: lib.special.round(v, decimals=1)),
]


@pytest.mark.parametrize("name,f", NAMESPACED, ids=[n for n, _ in NAMESPACED])
def test_namespaced_functions(name, f):
    both(lambda lib: _no_warning(lambda: lib.vmap(lambda v: f(lib, v))(lib.tensor(X))))


def test_namespaced_function_errors():
    raises_same(lambda lib: lib.vmap(lambda v: lib.linalg.cross(v, v))(lib.tensor(X)))       # dim -1 is 5 long
    raises_same(lambda lib: lib.vmap(lambda v: lib.linalg.cross(v[0, :3], lib.ones(2, 3, dtype=v.dtype)))(
        lib.tensor(X)))                                                                          # two ranks


def test_cross_legacy_dim_warns_as_torch():
    """torch.cross without dim under vmap: the deprecation warning, and the first logical dim of size 3."""
    def s(lib):
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            out = lib.vmap(lambda v: lib.cross(v.T[:3].T, v.T[1:4].T))(lib.tensor(X))
        return out, any("without specifying the dim arg" in str(x.message) for x in w)
    both(s)


def _inplace_case(op):
    def f(lib, y):
        z = lib.ones(5, dtype=lib.float64) * 2
        if op in ("bitwise_and_", "gcd_", "bitwise_left_shift_", "__iand__", "__ilshift__"):
            z, y = z.long(), y.long()
        if op in ("lerp_",):
            return getattr(z, op)(y, 0.5)
        if op in ("addcmul_", "addcdiv_"):
            return getattr(z, op)(y, y)
        if op == "clamp_":
            return z.clamp_(min=y)
        if op == "masked_fill_ mask":
            return z.masked_fill_(y > 0, 1.)
        if op == "masked_fill_ value":
            return z.masked_fill_(z > 0, y[0])
        if op == "fill_":
            return z.fill_(y[0])
        if op == "index_add_":
            return z.index_add_(0, lib.tensor([0]), y[:1])
        return getattr(z, op)(y)
    return f


# PyTorch's three answers: the op on the physical tensors (broadcast error), "inplace arithmetic", aten's fallback
INPLACE = """add_ __iadd__ atan2_ copysign_ bitwise_and_ gcd_ bitwise_left_shift_ __iand__ __ilshift__
sub_ __isub__ mul_ __imul__ div_ __itruediv__ divide_ true_divide_ multiply_ copy_ clamp_min_ logical_and_
pow_ __ipow__ subtract_ floor_divide_ __ifloordiv__ fmod_ remainder_ __imod__ hypot_ xlogy_ eq_ lt_ ge_ lerp_
addcmul_ addcdiv_ clamp_ heaviside_ float_power_ fill_ index_add_""".split() + ["masked_fill_ mask",
                                                                              "masked_fill_ value"]


@pytest.mark.parametrize("op", INPLACE)
def test_inplace_of_unbatched_self(op):
    f = _inplace_case(op)
    raises_same(lambda lib: lib.vmap(lambda y: f(lib, y))(lib.tensor(Y)))


def test_inplace_levels_and_nesting():
    """The fallback's level is functorch's (vmap and grad layers counted); a self batched at an outer level."""
    y = lambda lib: lib.tensor(Y)  # noqa: E731
    raises_same(lambda lib: lib.vmap(lambda a: lib.vmap(lambda w: lib.ones(5).double().pow_(w))(a))(
        lib.tensor(X)))
    raises_same(lambda lib: lib.func.grad(lambda w: lib.vmap(lambda v: lib.ones(5).double().pow_(v))(w).sum())(
        y(lib)))
    raises_same(lambda lib: lib.vmap(lambda v: lib.func.grad(lambda w: lib.vmap(
        lambda u: lib.ones(5).double().pow_(u))(w.expand(2, 5)).sum())(v))(y(lib)))
    raises_same(lambda lib: lib.vmap(lambda a: lib.vmap(lambda w: a.add_(w))(lib.ones(3, 5).double()))(y(lib)))
    raises_same(lambda lib: lib.vmap(lambda a: lib.vmap(lambda w: a.mul_(w))(lib.ones(3, 5).double()))(y(lib)))


def test_setitem_with_batched_value():
    def run(index):
        def f(lib, v):
            z = lib.ones(2, 5, dtype=lib.float64)
            z[index(lib)] = v if index(lib) == 0 else v[0] if index(lib) == (slice(None), 0) else v[:1]
            return z
        return f
    raises_same(lambda lib: lib.vmap(lambda v: run(lambda lib: 0)(lib, v))(lib.tensor(Y)))
    raises_same(lambda lib: lib.vmap(lambda v: run(lambda lib: (slice(None), 0))(lib, v))(lib.tensor(Y)))
    raises_same(lambda lib: lib.vmap(lambda v: (lambda z: z.__setitem__(lib.tensor([0]), v[:1]))(
        lib.ones(5, dtype=lib.float64)))(lib.tensor(Y)))


def test_inplace_of_batched_self_still_works():
    """Self batched: the in-place op runs once on the batch (operands padded to the larger logical rank)."""
    def s(lib):
        def f(v, w):
            a = v.clone()
            a.add_(w)
            a.mul_(2).pow_(2)
            a += w
            a **= 0.5
            b = v[0].clone()
            b.atan2_(w)
            return a, b
        return lib.vmap(f)(lib.tensor(X), lib.tensor(Y))
    both(s)
    raises_same(lambda lib: lib.vmap(lambda v, w: v.clone().add_(w.expand(2, 3, 5)))(lib.tensor(X), lib.tensor(Y)))


@pytest.mark.parametrize("op", ["**=", "//=", "%=", "&=", "|=", "^=", "<<=", ">>="])
def test_augmented_assignment_in_place(op):
    """``x op= y`` changes x itself (another name of it sees the change; its version counts up), as PyTorch's."""
    def s(lib):
        x = lib.tensor([5, 6, 7])
        alias = x
        scope = {"x": x}
        exec(f"x {op} 2", scope)
        return scope["x"] is alias, alias, alias._version
    both(s)


HAS_AUX = [
    ("grad", lambda lib, f, x: lib.func.grad(f, has_aux=True)(x)),
    ("grad_and_value", lambda lib, f, x: lib.func.grad_and_value(f, has_aux=True)(x)),
    ("vjp", lambda lib, f, x: lib.func.vjp(f, x, has_aux=True)),
    ("jvp", lambda lib, f, x: lib.func.jvp(f, (x,), (lib.ones_like(x),), has_aux=True)),
    ("jacrev", lambda lib, f, x: lib.func.jacrev(f, has_aux=True)(x)),
    ("jacfwd", lambda lib, f, x: lib.func.jacfwd(f, has_aux=True)(x)),
]


@pytest.mark.parametrize("name,call", HAS_AUX, ids=[n for n, _ in HAS_AUX])
def test_has_aux_checks(name, call):
    """f's result under has_aux=True: a pair (else PyTorch's message naming the transform), aux of tensors."""
    x = lambda lib: lib.tensor([1., 2., 3.], dtype=lib.float64)  # noqa: E731
    raises_same(lambda lib: call(lib, lambda v: (v * v).sum(), x(lib)))                       # not a pair
    raises_same(lambda lib: call(lib, lambda v: ((v * v).sum(), v, v), x(lib)))               # three
    raises_same(lambda lib: call(lib, lambda v: ((v * v).sum(), {"a": 1.5}), x(lib)))          # aux not tensors
    both(lambda lib: call(lib, lambda v: ((v * v).sum(), {"a": v.cos(), "b": (v[0],)}), x(lib)))
