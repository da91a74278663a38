"""Second-order exactness vs torch: what a create_graph gradient links (requires_grad, grad_fn names),
zero vs undefined second-order gradients, and the creation order of the nodes of a gradient graph
(which decides the order hooks fire in a second pass)."""
import numpy as np
import pytest

import torch
import hookgrad
from oracle import events, to_np

r = lambda *s, seed=0: np.random.default_rng(seed).standard_normal(s)
F = lambda L: L.nn.functional

# fn(L, *tensors), *arrays (float64; every input requires grad)
OPS = {
    "threshold": (lambda L, x: F(L).threshold(x, 0.1, 2.0), r(3, 4)),
    "max_pool2d": (lambda L, x: F(L).max_pool2d(x, 3, 2, 1), r(1, 2, 5, 5)),
    "max_pool1d": (lambda L, x: F(L).max_pool1d(x, 2), r(1, 2, 6)),
    "avg_pool2d": (lambda L, x: F(L).avg_pool2d(x, 3, 2, 1), r(1, 2, 5, 5)),
    "avg_pool1d": (lambda L, x: F(L).avg_pool1d(x, 2), r(1, 2, 6)),
    "adaptive_max_pool2d": (lambda L, x: F(L).adaptive_max_pool2d(x, 2), r(1, 2, 4, 4)),
    "adaptive_max_pool1d": (lambda L, x: F(L).adaptive_max_pool1d(x, 3), r(1, 2, 6)),
    "nll_loss": (lambda L, x: F(L).nll_loss(x, L.tensor([0, 1, 3])), r(3, 4)),
    "nll_loss_none": (lambda L, x: F(L).nll_loss(x, L.tensor([0, 1, 3]), reduction="none"), r(3, 4)),
    "median": (lambda L, x: x.median(), r(3, 4)),
    "nanmedian": (lambda L, x: x.nanmedian(), r(3, 4)),
    "median_dim": (lambda L, x: x.median(1)[0], r(3, 4)),
    "kthvalue": (lambda L, x: x.kthvalue(2, 1)[0], r(3, 4)),
    "remainder": (lambda L, x, y: L.remainder(x, y), r(3, 4), r(1, 4, seed=1)),
    "fmod": (lambda L, x, y: L.fmod(x, y), r(3, 4), r(1, 4, seed=1)),
    "div_floor": (lambda L, x, y: L.div(x, y, rounding_mode="floor"), r(3, 4), r(1, 4, seed=1)),
    "mul_bcast": (lambda L, x, y: x * y, r(3, 4), r(4, seed=1)),
    "div_bcast": (lambda L, x, y: x / y, r(3, 4), np.abs(r(4, seed=1)) + 0.5),
    "squeeze": (lambda L, x: x.squeeze(), r(3, 1, 4, 1)),
    "squeeze_dims": (lambda L, x: x.squeeze((1, 3)), r(3, 1, 4, 1)),
    "unsqueeze": (lambda L, x: x.unsqueeze(1), r(3, 4)),
    "sum_to_size": (lambda L, x: x.sum_to_size(4), r(3, 4)),
    "expand": (lambda L, x: x.expand(2, 3, 4), r(3, 1)),
    "maximum": (lambda L, x, y: L.maximum(x, y), r(3, 4), r(3, 1, seed=1)),
    "where": (lambda L, x, y: L.where(x > 0, x, y), r(3, 4), r(3, 1, seed=1)),
    "lerp_t": (lambda L, x, y, w: L.lerp(x, y, w), r(3, 4), r(1, 4, seed=1), r(3, 1, seed=2)),
    "clamp_t": (lambda L, x, lo, hi: L.clamp(x, lo, hi), r(3, 4), r(1, 4, seed=1) - 1, r(3, 1, seed=2) + 1),
    "pow_t": (lambda L, x, y: x ** y, np.abs(r(3, 4)) + 0.5, r(1, 4, seed=1)),
    "mm": (lambda L, x, y: x @ y, r(3, 4), r(4, 2, seed=1)),
    "bmm": (lambda L, x, y: L.bmm(x, y), r(2, 3, 4), r(2, 4, 2, seed=1)),
    "addmm": (lambda L, b, x, y: L.addmm(b, x, y, beta=2.0), r(2), r(3, 4), r(4, 2, seed=1)),
}
# batched matmul's node structure (UnsafeViewBackward0 vs BmmBackward0) is compared in test_graph_structure
NAMES_ELSEWHERE = {"bmm"}


def _grads(lib, fn, arrays):
    """create_graph first grads (vs a seed that does not require grad), then, for each first grad that
    requires grad, the second-order grads of every input (allow_unused)."""
    ins = [lib.tensor(a.copy(), requires_grad=True) for a in arrays]
    out = fn(lib, *ins)
    seed = lib.tensor(np.random.default_rng(5).standard_normal(tuple(out.shape)))
    g = lib.autograd.grad(out, ins, seed, create_graph=True, allow_unused=True)
    first = [None if x is None else (x.requires_grad, None if x.grad_fn is None else x.grad_fn.name(), to_np(x))
             for x in g]
    second = []
    for j, x in enumerate(g):
        if x is None or not x.requires_grad:
            second.append(None)
            continue
        v = lib.tensor(np.random.default_rng(j).standard_normal(tuple(x.shape)))
        gg = lib.autograd.grad((x * v).sum(), ins, allow_unused=True, retain_graph=True)
        second.append([None if y is None else to_np(y) for y in gg])
    return first, second


@pytest.mark.parametrize("name", sorted(OPS))
def test_create_graph_links_and_second_order(name):
    fn, *arrays = OPS[name]
    tf, ts = _grads(torch, fn, arrays)
    hf, hs = _grads(hookgrad, fn, arrays)
    for i, (a, b) in enumerate(zip(tf, hf)):
        assert (a is None) == (b is None), f"first grad {i}: torch {a is None and 'None'} hookgrad {b is None and 'None'}"
        if a is not None:
            assert a[0] == b[0], f"first grad {i}: requires_grad torch {a[0]}, hookgrad {b[0]}"
            assert name in NAMES_ELSEWHERE or a[:2] == b[:2], f"first grad {i}: torch (requires_grad, grad_fn) {a[:2]}, hookgrad {b[:2]}"
            np.testing.assert_allclose(b[2], a[2], 1e-9, 1e-9, err_msg=f"first grad {i}")
    for j, (a, b) in enumerate(zip(ts, hs)):
        assert (a is None) == (b is None), f"second-order of first grad {j}: torch {a}, hookgrad {b}"
        for k, (p, q) in enumerate(zip(a or (), b or ())):
            assert (p is None) == (q is None), f"d(grad {j})/d(input {k}): torch {'None' if p is None else 'tensor'}, " \
                                               f"hookgrad {'None' if q is None else 'tensor'}"
            if p is not None:
                np.testing.assert_allclose(q, p, 1e-9, 1e-9, err_msg=f"d(grad {j})/d(input {k})")


def _walk(fn, out, seen):
    if fn is None or fn in seen:
        return
    seen.add(fn)
    out.append((fn.name(), fn._sequence_nr()))
    for f, _ in fn.next_functions:
        _walk(f, out, seen)


@pytest.mark.parametrize("name", ["mul_bcast", "div_bcast", "maximum", "where", "lerp_t", "clamp_t", "pow_t", "mm",
                                  "bmm", "addmm"])
def test_gradient_graph_creation_order(name):
    """The nodes of a create_graph gradient graph are made in PyTorch's order (each op's formulas in
    alphabetical order of the inputs' names, then sum_to/cast per output): compare the relative order
    of the first grads' grad_fn sequence numbers."""
    fn, *arrays = OPS[name]

    def order(lib):
        ins = [lib.tensor(a.copy(), requires_grad=True) for a in arrays]
        out = fn(lib, *ins)
        seed = lib.tensor(np.ones(tuple(out.shape)), requires_grad=True)
        g = lib.autograd.grad(out, ins, seed, create_graph=True)
        nrs = [x.grad_fn._sequence_nr() if x.grad_fn is not None else -1 for x in g]
        return sorted(range(len(nrs)), key=lambda i: nrs[i])

    assert order(hookgrad) == order(torch)


def test_second_pass_leaf_hook_order_f14():
    def scenario(lib, log):
        gen = np.random.default_rng(0)
        x0, x1, x2 = (lib.tensor(gen.standard_normal(s), requires_grad=True) for s in ((4,), (1, 4), (3, 4)))
        for n, x in (("x0", x0), ("x1", x1), ("x2", x2)):
            x.register_hook(lambda g, n=n: log(n, g))
        gs = lib.autograd.grad((x0 * x1 + x2).sum(), (x0, x1, x2), create_graph=True)
        log("second pass")
        sum((g * g).sum() for g in gs).backward()
    events(scenario)


@pytest.mark.parametrize("op", ["mul", "div", "mm", "maximum", "where"])
def test_second_pass_hook_order_binary(op):
    fns = {"mul": lambda L, a, b: a * b, "div": lambda L, a, b: a / (b.abs() + 1), "mm": lambda L, a, b: a @ b.t(),
           "maximum": lambda L, a, b: L.maximum(a, b), "where": lambda L, a, b: L.where(a > 0, a, b)}

    def scenario(lib, log):
        gen = np.random.default_rng(1)
        a, b = (lib.tensor(gen.standard_normal((3, 3)), requires_grad=True) for _ in range(2))
        a.register_hook(lambda g: log("a", g))
        b.register_hook(lambda g: log("b", g))
        y = fns[op](lib, a, b)
        ga, gb = lib.autograd.grad((y * y).sum(), (a, b), create_graph=True)
        log("second pass")
        (ga.sum() + (gb * gb).sum()).backward()
    events(scenario)


def test_threshold_module_and_inplace():
    def scenario(lib, log):
        x = lib.tensor([0.05, 0.5, -1.0, 0.1], requires_grad=True)
        y = F(lib).threshold(x, 0.1, 2.0)
        log("out", y, y.grad_fn.name(), y.grad_fn._saved_threshold)
        z = x * 1
        w = F(lib).threshold(z, 0.1, 2.0, inplace=True)
        log("inplace", w is z, w.grad_fn.name(), w)
        w.sum().backward()
        log("grad", x.grad)
        log("int", F(lib).threshold(lib.tensor([1, 2, 3]), 2, 5))
    events(scenario)
