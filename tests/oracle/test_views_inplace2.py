"""Views and in-place ops against torch, round 2: the result an in-place op saves is version-checked,
CopySlices folds the op's node (graph shape, hooks, double backward), setitem as PyTorch's set_item
(views + copy_/fill_/index_put_), fill/random node names, memory-overlap errors, CreationMeta of views
of multi-output views, index_copy / masked_scatter / resize_."""
import numpy as np
import pytest
import torch

import hookgrad

from oracle import events, check
from _scen import attempt


def _chain(fn, depth=4):
    """Node names down next_functions (the graph's shape), as nested tuples."""
    if fn is None or depth == 0:
        return None
    return (fn.name(), tuple(_chain(n, depth - 1) for n, _ in fn.next_functions))


X = [[0.3, -0.5, 0.7], [0.2, 0.9, -0.4]]


# ----------------------------------------------------------- F10: saved result shares the version counter
_SAVES_RESULT = ["relu_", "sigmoid_", "tanh_", "exp_", "sqrt_", "reciprocal_"]
_LATER = ["mul_", "zero_", "add_", "view_add_", "setitem"]


@pytest.mark.parametrize("op", _SAVES_RESULT)
@pytest.mark.parametrize("later", _LATER)
@pytest.mark.parametrize("mode", ["backward", "grad"])
def test_saved_result_modified_again(op, later, mode):
    def sc(lib, log):
        x = lib.tensor(X, requires_grad=True)
        y = (x * 2).sin().abs() + 0.1
        getattr(y, op)()
        if later == "mul_":
            y.mul_(2)
        elif later == "zero_":
            y.zero_()
        elif later == "add_":
            y.add_(1)
        elif later == "view_add_":
            y[0].add_(1)
        else:
            y[1, 1:] = 0.5
        log("v", y._version)
        if mode == "backward":
            attempt(log, lambda: y.sum().backward())
        else:
            attempt(log, lambda: log("grad", lib.autograd.grad((y * 1).sum(), [x])))
        log("g", x.grad)
    events(sc)


@pytest.mark.parametrize("op", ["relu_", "sigmoid_", "exp_"])
def test_saved_result_on_view_then_base_or_sibling(op):
    def sc(lib, log):
        x = lib.tensor(X, requires_grad=True)
        y = x * 2
        v = y[0]
        getattr(v, op)()
        log("names", _chain(y.grad_fn), _chain(v.grad_fn))
        y[1].add_(1)                  # another view: the saved result (v) is stale
        attempt(log, lambda: (y * 3).sum().backward())
        log("g", x.grad)
    events(sc)


def test_saved_result_untouched_still_works():
    def sc(lib, log):
        x = lib.tensor(X, requires_grad=True)
        y = x * 2
        y.sigmoid_()
        z = y * 3                      # out of place: no version change of y
        (z * y).sum().backward()
        log("g", x.grad, y._version)
    events(sc)


@pytest.mark.parametrize("op", ["mul_", "div_", "pow_", "atan2_", "lerp_", "mul_self", "addcmul"])
def test_inputs_saved_by_inplace_ops(op):
    # PyTorch saves a clone of the overwritten self where the formula needs it; other inputs by version
    def sc(lib, log):
        x = lib.tensor(X, requires_grad=True)
        y = (x * 1.5).sin()
        z = x * 3 + 2
        if op == "mul_":
            y.mul_(z)
        elif op == "div_":
            y.div_(z)
        elif op == "pow_":
            y.pow_(2)
        elif op == "atan2_":
            y.atan2_(z)
        elif op == "lerp_":
            y.lerp_(z, 0.3)
        elif op == "mul_self":
            y.mul_(y)
        else:
            y.mul_(z).add_(z)
        y.add_(1)                      # self changed again: fine (its old value was cloned)
        attempt(log, lambda: (y * y).sum().backward(retain_graph=True))
        log("g", x.grad)
        z.add_(1)                      # the other input changed: raises where PyTorch raises
        attempt(log, lambda: (y * y).sum().backward())
    events(sc)


# ----------------------------------------------------------- fills: names, views, overlap
@pytest.mark.parametrize("op", ["zero_", "fill_", "fill_t", "fill_grad", "normal_", "uniform_", "random_", "random_to",
                                "random_from_to", "bernoulli_", "exponential_"])
def test_fill_family_names_and_views(op):
    def do(lib, t, x):
        if op == "fill_":
            t.fill_(2.5)
        elif op == "fill_t":
            t.fill_(lib.tensor(1.5))
        elif op == "fill_grad":
            t.fill_(x[1, 1] * 2)
        elif op == "random_to":
            t.random_(5)
        elif op == "random_from_to":
            t.random_(2, 5)
        else:
            getattr(t, op)()

    def sc(lib, log):
        x = lib.tensor(X, requires_grad=True)
        y = x * 2
        do(lib, y, x)
        log("plain", _chain(y.grad_fn, 2))
        z = x * 2
        do(lib, z[0], x)              # a view: CopySlices, the view's region of the gradient is dropped
        log("view", _chain(z.grad_fn, 2))
        w = z * 1
        (w if op.startswith("fill") or op == "zero_" else w[1]).sum().backward()
        log("g", x.grad)
    events(sc)


def test_fill_value_gradient_and_double_backward():
    check(lambda L, x, v: (x * 1).fill_(v * 2) * x, np.array(X, np.float32), np.array(1.5, np.float32), second=True)


@pytest.mark.parametrize("op", ["zero_", "fill_", "fill_t", "add_", "relu_", "normal_", "copy_", "masked_fill_",
                                "setitem_int", "setitem_col", "clamp_"])
@pytest.mark.parametrize("grad", [False, True])
def test_inplace_on_expanded(op, grad):
    # PyTorch writes a constant through elements that share memory (zero_, fill_ with a number) and refuses
    # everything else; with autograd, the CopySlices backward writes into the expanded region and refuses
    def sc(lib, log):
        x = lib.tensor([1., 2, 3, 4], requires_grad=grad)
        b = x * 1
        e = b.expand(2, 4)
        f = {"zero_": lambda: e.zero_(), "fill_": lambda: e.fill_(2), "fill_t": lambda: e.fill_(lib.tensor(2.)),
             "add_": lambda: e.add_(1), "relu_": lambda: e.relu_(), "normal_": lambda: e.normal_(),
             "copy_": lambda: e.copy_(lib.ones(2, 4)), "clamp_": lambda: e.clamp_(0, 1),
             "masked_fill_": lambda: e.masked_fill_(lib.ones(2, 4, dtype=lib.bool), 1.),
             "setitem_int": lambda: e.__setitem__(0, 1.), "setitem_col": lambda: e.__setitem__((slice(None), 0), 1.)}
        import warnings
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            attempt(log, f[op])
        log("b", b, b._version)
        if grad:
            attempt(log, lambda: b.sum().backward())
            log("g", x.grad)
    events(sc)


@pytest.mark.parametrize("case", ["copy_flat", "add_shift", "copy_shift", "mul_shift", "setitem_shift", "add_self",
                                  "add_flip", "copy_t", "copy_same_view", "add_other_half", "lerp_shift",
                                  "index_copy_shift"])
def test_partial_overlap_errors(case):
    def sc(lib, log):
        c = lib.arange(6.)
        m = lib.arange(4.).reshape(2, 2)
        f = {"copy_flat": lambda: c.view(1, 6).copy_(c),
             "add_shift": lambda: c[1:].add_(c[:-1]), "copy_shift": lambda: c[1:].copy_(c[:-1]),
             "mul_shift": lambda: c[1:].mul_(c[:-1]), "setitem_shift": lambda: c.__setitem__(slice(1, None), c[:-1]),
             "add_self": lambda: c.add_(c), "add_flip": lambda: c.add_(c.flip(0)), "copy_t": lambda: m.copy_(m.t()),
             "copy_same_view": lambda: c[:3].copy_(c[:3]), "add_other_half": lambda: c[:3].add_(c[3:]),
             "lerp_shift": lambda: c[1:].lerp_(c[:-1], 0.5),
             "index_copy_shift": lambda: c[1:].index_copy_(0, lib.tensor([0]), c[:1])}
        attempt(log, f[case])
        log("c", c, m)
    events(sc)


# ----------------------------------------------------------- CopySlices: graph shape, hooks, double backward
@pytest.mark.parametrize("op", ["clamp_", "mul_w", "copy_", "sigmoid_", "add_scalar", "index_put_", "masked_fill_",
                                "pow_"])
def test_copyslices_folds_the_op(op):
    def sc(lib, log):
        x = lib.tensor(X, requires_grad=True)
        w = lib.tensor([0.5, 1.5, -2.], requires_grad=True)
        y = x * 2
        y.register_hook(lambda g: log("y hook", g))
        v = y[0]
        v.register_hook(lambda g: log("v old hook", g))
        {"clamp_": lambda: v.clamp_(-0.5, 0.5), "mul_w": lambda: v.mul_(w), "copy_": lambda: v.copy_(w * 3),
         "sigmoid_": lambda: v.sigmoid_(), "add_scalar": lambda: v.add_(2),
         "index_put_": lambda: v.index_put_((lib.tensor([0, 2]),), w[:2] * 2),
         "masked_fill_": lambda: v.masked_fill_(lib.tensor([True, False, True]), 0.25),
         "pow_": lambda: v.pow_(2)}[op]()
        log("graph", _chain(y.grad_fn), _chain(v.grad_fn, 2))
        y.grad_fn.register_hook(lambda gi, go: log("copyslices post", gi, go))
        y.grad_fn.register_prehook(lambda go: log("copyslices pre", go))
        v.register_hook(lambda g: log("v new hook", g))
        (y * lib.tensor([[1., 2, 3], [4, 5, 6]])).sum().backward(retain_graph=True)
        log("g", x.grad, w.grad)
        attempt(log, lambda: (y * 1).sum().backward())
        attempt(log, lambda: (y * 1).sum().backward())
    events(sc)


@pytest.mark.parametrize("op", ["mul_", "setitem_adv", "setitem_basic", "sigmoid_", "zero_", "copy_", "div_",
                                "clamp_", "index_copy_", "masked_scatter_"])
def test_copyslices_double_backward(op):
    def fn(L, x, w):
        y = x * 1
        v = y[:, 1]
        if op == "mul_":
            v.mul_(w)
        elif op == "setitem_adv":
            y[[0, 1], [2, 0]] = w * 3
        elif op == "setitem_basic":
            y[1] = x[0] ** 2
        elif op == "sigmoid_":
            v.sigmoid_()
        elif op == "zero_":
            v.zero_()
        elif op == "copy_":
            v.copy_(w.exp())
        elif op == "div_":
            v.div_(w * w + 1)
        elif op == "clamp_":
            v.clamp_(-0.2, 0.5)
        elif op == "index_copy_":
            y[1].index_copy_(0, L.tensor([2, 0]), w * 2)
        else:
            y[0].masked_scatter_(L.tensor([True, False, True]), w * 2)
        return y ** 3
    check(fn, np.array(X, np.float32), np.array([0.4, -0.7], np.float32), second=True)


# ----------------------------------------------------------- setitem as PyTorch's set_item
_SETITEMS = ["y[0:2] = x[0]", "y[0] = x[0, :1]", "y[...] = 5", "y[0] = 5", "y[[0]] = x[0]", "y[[0]] = x[:1]",
             "y[[0]] = 5", "y[0, [1, 2]] = x[0, :2]", "y[0] = x[0].double()", "y[[0]] = x[:1].double()",
             "y[0] = x[0, 0]", "y[:, None, 1] = x[0, :2]", "y[y > 0] = x[0, 0]", "y[y > 0] = x.sum()", "y[:] = x",
             "y[None] = x", "y[True] = 3", "y[:, 1] = x[:, 2:]", "y[1, ...] = x[0, 1:2]", "y[0] = [1., 2., 3.]"]


@pytest.mark.parametrize("stmt", _SETITEMS)
def test_setitem_graph(stmt):
    def sc(lib, log):
        x = lib.tensor(X, requires_grad=True)
        y = x * 2
        try:
            exec(stmt, {"x": x, "y": y})
        except Exception as e:          # noqa: BLE001
            log("err", type(e).__name__, str(e).split(" (hookgrad")[0])
            return
        log("graph", _chain(y.grad_fn))
        (y * y).sum().backward()
        log("g", x.grad)
    events(sc)


@pytest.mark.parametrize("stmt", ["x[[0]] = 3", "x[0] = 3", "x[...] = 3", "x[:] = 3", "x[x > 0] = 3", "x[0, [1]] = 3",
                                  "x[None] = 3", "x[:, 1:3] = 0.5"])
def test_setitem_on_leaf_errors(stmt):
    def sc(lib, log):
        x = lib.tensor(X, requires_grad=True)
        attempt(log, lambda: exec(stmt, {"x": x}))
    events(sc)


# ----------------------------------------------------------- CreationMeta: multi-output views and their views
@pytest.mark.parametrize("case", ["split_view_select", "split_view_view", "unbind_view", "chunk_slice_slice",
                                  "split_base_modified", "split_view_base_modified", "nograd_view_of_view",
                                  "nograd_view_base_modified", "split_no_grad_base", "split_detach"])
def test_creation_meta_errors(case):
    def sc(lib, log):
        x = lib.ones(4, 2, requires_grad=True)
        a = x * 1
        if case == "split_view_select":
            attempt(log, lambda: a.split(2)[1][0].add_(1))
        elif case == "split_view_view":
            attempt(log, lambda: a.split(2)[1].view(4).add_(1))
        elif case == "unbind_view":
            attempt(log, lambda: a.unbind(1)[0].view(2, 2).mul_(1))
        elif case == "chunk_slice_slice":
            attempt(log, lambda: a.chunk(2)[0][0][1:].mul_(1))
        elif case == "split_base_modified":
            p = a.split(2)[0]
            a.add_(1)
            attempt(log, lambda: p.grad_fn)
        elif case == "split_view_base_modified":
            q = a.split(2)[0][0]
            a.add_(1)
            attempt(log, lambda: q.grad_fn)
        elif case == "nograd_view_of_view":
            with lib.no_grad():
                v = a[0]
            attempt(log, lambda: v[0:1].add_(1))
        elif case == "nograd_view_base_modified":
            with lib.no_grad():
                v = a[:3]
            w = v[:1]
            a.add_(1)
            attempt(log, lambda: w.grad_fn)
        elif case == "split_no_grad_base":
            b = lib.ones(4, 2)
            q = b.split(2)[0][0]
            attempt(log, lambda: q.add_(1))
            attempt(log, lambda: q.add_(x[0] * 1))
            log("b", b)
        else:
            q = a.split(2)[0].detach()
            attempt(log, lambda: q.mul_(2))
            log("a", a)
    events(sc)


def test_view_requires_grad_follows_base():
    def sc(lib, log):
        a = lib.ones(3)
        v = a[:2]
        u = v[1:]
        a.requires_grad_()
        log("rg", v.requires_grad, u.requires_grad, v.is_leaf, v.grad_fn is None)
        b = a * 1
        w = b[:2]
        log("rg2", w.requires_grad, _chain(w.grad_fn, 2))
    events(sc)


# ----------------------------------------------------------- index_copy / masked_scatter / resize_
def test_index_copy_values_and_grads():
    idx = np.array([2, 0])
    check(lambda L, x, s: x.index_copy(0, L.tensor(idx), s) * x, np.array([[1., 2], [3, 4], [5, 6]], np.float32),
          np.array([[7., 8], [9, 10]], np.float32), second=True)
    check(lambda L, x, s: L.index_copy(x, 1, L.tensor([1]), s).exp(), np.array(X, np.float32),
          np.array([[0.5], [0.25]], np.float32), second=True)
    check(lambda L, x, s: (x * 1).index_copy_(1, L.tensor([2, 0]), s * s), np.array(X, np.float32),
          np.array([[0.5, 1.], [0.25, 2.]], np.float32), second=True)


def test_masked_scatter_values_and_grads():
    mask = np.array([[True, False, True], [False, True, True]])
    check(lambda L, x, s: x.masked_scatter(L.tensor(mask), s) * x, np.array(X, np.float32),
          np.arange(6, dtype=np.float32).reshape(2, 3) / 3, second=True)
    check(lambda L, x, s: L.masked_scatter(x, L.tensor([True, False, True]), s).sin(), np.array(X, np.float32),
          np.arange(7, dtype=np.float32) / 5, second=True)
    check(lambda L, x, s: (x * 1).masked_scatter_(L.tensor(mask), s ** 2), np.array(X, np.float32),
          np.arange(5, dtype=np.float32) / 4, second=True)


def test_index_copy_masked_scatter_names_and_errors():
    def sc(lib, log):
        x = lib.tensor(X, requires_grad=True)
        s = lib.ones(3, requires_grad=True)
        log("names", _chain(x.index_copy(0, lib.tensor([1]), s.view(1, 3)).grad_fn, 2),
            _chain(x.masked_scatter(x > 0, s).grad_fn, 2))
        y = x * 1
        y.index_copy_(0, lib.tensor([0]), s.view(1, 3) * 2)
        z = x * 1
        z.masked_scatter_(x > 0, s * 2)
        log("inplace", _chain(y.grad_fn, 2), _chain(z.grad_fn, 2))
        t = lib.ones(3, 4)
        for f in (lambda: t.index_copy(0, lib.tensor([0, 5]), lib.ones(2, 4)),
                  lambda: t.index_copy(0, lib.tensor([0, 2]), lib.ones(2, 3)),
                  lambda: t.index_copy(0, lib.tensor([0, 2]), lib.ones(3, 4)),
                  lambda: t.index_copy(0, lib.tensor([0, 2]), lib.ones(2, 4, dtype=lib.float64)),
                  lambda: t.index_copy(0, lib.tensor([0., 2]), lib.ones(2, 4)),
                  lambda: t.index_copy(0, lib.tensor([[0, 2]]), lib.ones(2, 4)),
                  lambda: t.index_copy(1, lib.tensor([-1]), lib.ones(3, 1)),
                  lambda: t.masked_scatter(t > 0, lib.arange(11.)),
                  lambda: t.masked_scatter((t > 0).float(), lib.arange(12.)),
                  lambda: t.masked_scatter(t > 0, lib.arange(12)),
                  lambda: t.masked_scatter(lib.ones(2, 4, dtype=lib.bool), lib.arange(12.)),
                  lambda: x.index_copy_(0, lib.tensor([0]), lib.ones(1, 3)),
                  lambda: x.masked_scatter_(x > 0, lib.ones(6))):
            attempt(log, f)
        log("t", t.masked_scatter(lib.tensor([True, False, True, False]), lib.arange(12.)))
    events(sc)


def test_resize():
    def sc(lib, log):
        y = lib.ones(3, requires_grad=True)
        attempt(log, lambda: y.resize_(4))
        attempt(log, lambda: (y * 1).resize_(4))
        a = lib.arange(6.).reshape(2, 3)
        log("same", a.resize_(3, 2), a._version)
        log("smaller", a.resize_(4), a.shape)
        b = lib.arange(6.)
        log("as", b.resize_as_(lib.ones(2, 3)).shape, b[1])
        log("grow", lib.arange(6.).resize_(2, 4)[0], lib.arange(6.).resize_(7).shape)
        attempt(log, lambda: lib.ones(2).resize_(-1))
    events(sc)


@pytest.mark.parametrize("make", [
    lambda t: t.unbind(0)[1], lambda t: t.select(0, 1), lambda t: t[1], lambda t: t.view(2, 2)[0][1],
    lambda t: t.split(1)[1].squeeze(0), lambda t: t.unsqueeze(1).unbind(0)[1][0]])
def test_inplace_on_a_0d_view_writes_through(make):
    # a 0-d view must share memory with its base (NumPy's integer index gives a copy): found by the fuzzer
    res = []
    for lib in (torch, hookgrad):
        x = lib.tensor([-1.9, -0.42, -0.76, -0.66])
        make(x.detach()).clamp_(0.41)
        res.append(x.numpy().copy())
    np.testing.assert_array_equal(res[1], res[0])
