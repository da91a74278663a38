"""grad_fn names and graph structure, op by op: the graph below an op's result (node names at every
level of next_functions, None edges, AccumulateGrad, output_nr) is PyTorch's, and values and
gradients (first and second order) stay PyTorch's."""
import numpy as np
import pytest
import torch

import hookgrad
from oracle import check


def graph(lib, t):
    """The graph below t as nested (name, ((child, output_nr), ...)); AccumulateGrad nodes name their
    leaf's shape, and a node reached twice is spelled out again (the structure, not the identity)."""
    def walk(fn):
        if fn is None:
            return None
        name = fn.name()
        if name.endswith("AccumulateGrad"):
            return ("AccumulateGrad", tuple(fn.variable.shape))
        return (name, tuple((walk(f), nr) for f, nr in fn.next_functions))
    return (walk(t.grad_fn), t.requires_grad, t.is_leaf)


def _inputs(lib, arrays, rg):
    out = []
    for a, r in zip(arrays, rg):
        if isinstance(a, np.ndarray):
            t = lib.tensor(a.copy())
            if r and a.dtype.kind == "f":
                t.requires_grad_(True)
            a = t
        out.append(a)
    return out


def same_graph(fn, *arrays, requires_grad=None):
    rg = requires_grad if requires_grad is not None else [True] * len(arrays)
    outs = []
    for lib in (torch, hookgrad):
        r = fn(lib, *_inputs(lib, arrays, rg))
        r = list(r) if isinstance(r, (tuple, list)) else [r]
        outs.append([graph(lib, t) for t in r])
    assert outs[1] == outs[0], f"\ntorch:    {outs[0]}\nhookgrad: {outs[1]}"


def _r(*shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


# ------------------------------------------------------------------------------- matmul (F8)
MATMUL_SHAPES = [((4,), (4,)), ((3, 4), (4,)), ((4,), (4, 3)), ((2, 3), (3, 4)), ((5, 3, 4), (4,)),
                 ((4,), (5, 4, 3)), ((5, 3, 4), (4, 2)), ((3, 4), (5, 4, 2)), ((5, 3, 4), (5, 4, 2)),
                 ((2, 1, 3, 4), (5, 4, 2)), ((2, 5, 3, 4), (5, 4, 2)), ((2, 5, 3, 4), (4,)), ((4,), (2, 5, 4, 3)),
                 ((2, 5, 3, 4), (4, 2)), ((1, 3, 4), (5, 4, 2)), ((2, 3, 4), (1, 4, 2)), ((0, 3, 4), (4, 2)),
                 ((2, 3, 0), (0, 5))]


@pytest.mark.parametrize("rg", [(True, True), (True, False), (False, True)])
@pytest.mark.parametrize("sa,sb", MATMUL_SHAPES)
def test_matmul_graph(sa, sb, rg):
    a, b = _r(*sa), _r(*sb, seed=1)
    same_graph(lambda lib, x, y: x @ y, a, b, requires_grad=list(rg))
    same_graph(lambda lib, x, y: lib.matmul(x, y), a, b, requires_grad=list(rg))
    check(lambda lib, x, y: x @ y, a, b, requires_grad=list(rg), second=True)


@pytest.mark.parametrize("rg", [(True, True), (True, False), (False, True)])
@pytest.mark.parametrize("case", range(6))
def test_matmul_graph_noncontiguous(case, rg):
    """should_fold looks at the strides of the larger operand (a transposed batch does not fold)."""
    fns = [lambda lib, x, y: x.transpose(0, 1) @ y, lambda lib, x, y: x @ y.transpose(0, 1),
           lambda lib, x, y: x.transpose(0, 1) @ y[0], lambda lib, x, y: x.mT @ y[0, :, :3],
           lambda lib, x, y: x[..., :3, :] @ y.mT, lambda lib, x, y: x[:, ::2] @ y[1, :, 0]]
    a, b = _r(4, 4, 4), _r(4, 4, 4, seed=1)
    same_graph(fns[case], a, b, requires_grad=list(rg))
    check(fns[case], a, b, requires_grad=list(rg), second=True)


@pytest.mark.parametrize("sa,sb,dt", [((2, 3, 4), (5, 4), None), ((2, 3, 4), (3, 4, 2), None), ((2, 3, 4), (2, 5, 2), None),
                                      ((2, 3, 4), (5,), None), ((3,), (2, 4, 2), None), ((3,), (4, 2), None),
                                      ((2, 3, 4), (2, 4, 2), np.float64), ((2, 3, 4), (4, 2), np.float64),
                                      ((2, 3, 4), (4,), np.float64), ((3, 4), (4,), np.float64), ((4,), (4,), np.float64),
                                      ((4,), (4, 2), np.float64), ((), (4,), None)])
def test_matmul_errors(sa, sb, dt):
    res = []
    for lib in (torch, hookgrad):
        a = lib.tensor(np.ones(sa, np.float32))
        b = lib.tensor(np.ones(sb, dt or np.float32))
        with pytest.raises(Exception) as e:
            a @ b
        res.append((type(e.value).__name__, str(e.value)))
    assert res[1] == res[0]


def test_mv_dot_errors():
    for f in (lambda lib: lib.mv(lib.ones(3), lib.ones(3)), lambda lib: lib.dot(lib.ones(3), lib.ones(4)),
              lambda lib: lib.dot(lib.ones(3), lib.ones(3, dtype=lib.float64)),
              lambda lib: lib.mv(lib.ones(2, 3), lib.ones(3, dtype=lib.float64)),
              lambda lib: lib.bmm(lib.ones(2, 3, 4), lib.ones(2, 4, 2, dtype=lib.float64))):
        res = []
        for lib in (torch, hookgrad):
            with pytest.raises(Exception) as e:
                f(lib)
            res.append((type(e.value).__name__, str(e.value)))
        assert res[1] == res[0]


# ------------------------------------------------------------------------------- reshape
@pytest.mark.parametrize("case", range(6))
def test_reshape_graph(case):
    """contiguous: ViewBackward0; viewable strides: ReshapeAliasBackward0; otherwise a copy
    (UnsafeViewBackward0 over CloneBackward0) that is not a view."""
    fns = [lambda lib, x: x.reshape(6, 4), lambda lib, x: x.reshape(4, 6), lambda lib, x: x.t().reshape(24),
           lambda lib, x: x.t().reshape(6, 4, 1), lambda lib, x: x[:, :3].reshape(2, 2, 3),
           lambda lib, x: x.t().flatten()]
    x = _r(4, 6)
    same_graph(fns[case], x)
    check(fns[case], x, second=True)
    for_views = [fns[case](lib, lib.tensor(x, requires_grad=True))._is_view() for lib in (torch, hookgrad)]
    assert for_views[1] == for_views[0]


# ------------------------------------------------------------------------------- indexing, select, t (F7, F16)
INDEXES = ["x[0]", "x[1:]", "x[:]", "x[...]", "x[:, 0]", "x[0, :, 1]", "x[None]", "x[:, None, 1:3]", "x[..., 2]",
           "x[0, ..., None]", "x[::2, 1]", "x[0:4]", "x[-1]", "x[L.tensor(1)]", "x[L.tensor([1, 2])]", "x[[1, 2]]",
           "x[0, [1, 2]]", "x[[0, 1], :, [2, 3]]", "x[:, [0, 1], 1:3]", "x[x > 5]", "x[True]", "x[False]",
           "x[None, 0, None]", "x[1, 2, 3]", "x[L.tensor([True, False, True, True])]", "x[..., [1, 2]]",
           "x[1:3, 0:2, [1]]", "x[(slice(None),)]", "x[L.tensor(1), 1:]", "x[0, True]", "x[1, ..., 1:5:2]"]


@pytest.mark.parametrize("expr", INDEXES)
def test_getitem_graph(expr):
    """PyTorch applies one select/slice/unsqueeze per index (full slices in a tuple skipped), then one index."""
    fn = lambda L, x: eval(expr)
    x = np.arange(120, dtype=np.float32).reshape(4, 5, 6)
    same_graph(fn, x)
    check(fn, x, second=True)
    assert fn(hookgrad, hookgrad.tensor(x))._is_view() == fn(torch, torch.tensor(x))._is_view()


@pytest.mark.parametrize("expr", ["x[0, 10]", "x[10]", "x[0, 0, 0, 0]", "x[..., 7]", "x[0, :, 9]", "x[[0], 10]",
                                  "x[None, 9]", "x[[9]]", "x[0, [9]]", "x.select(3, 0)", "x.select(1, 5)",
                                  "L.ones(()).select(0, 0)", "L.ones(()).transpose(1, 0)"])
def test_getitem_errors(expr):
    res = []
    for L in (torch, hookgrad):
        x = L.ones(4, 5, 6)
        with pytest.raises(Exception) as e:
            eval(expr)
        res.append((type(e.value).__name__, str(e.value)))
    assert res[1] == res[0]


@pytest.mark.parametrize("expr", ["x.select(1, 2)", "L.select(x, -1, -1)", "x.select(0, 0).select(0, 1)"])
def test_select(expr):
    fn = lambda L, x: eval(expr)
    same_graph(fn, _r(3, 4, 5))
    check(fn, _r(3, 4, 5), second=True)


@pytest.mark.parametrize("expr", ["x.t()", "L.t(x)", "x.transpose(0, 0)", "x.transpose(-1, 0)", "x.t().t() * x"])
def test_zero_dim_transpose(expr):
    fn = lambda L, x: eval(expr)
    x = np.array(1.5, np.float32)
    same_graph(fn, x)
    check(fn, x, second=True)


# ------------------------------------------------------------------------------- sweep
from graph_sweep_ops import OPS  # noqa: E402

# Remaining differences (reported, not yet followed): edges for non-Tensor / non-differentiable arguments
# (rsub, where, masked_fill, embedding, nll_loss, cross_entropy, conv without bias), missing ops (addcmul,
# nansum), and composites that PyTorch fuses or builds otherwise (outer, inner, einsum, linear of a vector,
# mse_loss, bce_with_logits, normalize, scaled_dot_product_attention).
KNOWN = {"rsub", "where", "addcmul", "masked_fill", "nansum", "outer", "einsum", "inner", "linear1d", "conv1d",
         "embedding", "cross_entropy", "nll_loss", "mse_loss", "bce_logits", "normalize", "sdpa"}


@pytest.mark.parametrize("name", sorted(set(OPS) - KNOWN))
def test_sweep_graph(name):
    fn, *arrays = OPS[name]
    same_graph(fn, *arrays)
    check(fn, *arrays, second=True)
