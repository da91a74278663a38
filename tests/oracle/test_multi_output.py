"""Multi-output ops are one node with several outputs, as in PyTorch (issue 9).

Differential tests against torch: which outputs share a grad_fn, their output_nr, which are
differentiable, the node's next_functions; the grad_outputs tuple node hooks receive (None for an
output that got no gradient, and no slot at all for indices); tensor hooks / retain_grad on each
output; first and second order gradients with only some outputs used; in-place on multi-view outputs.
"""
import numpy as np
import pytest
import torch

import hookgrad
from oracle import check, events, assert_same

X = np.random.default_rng(7).standard_normal((3, 4))        # distinct values: no ties

# name -> fn(lib, x) returning the op's outputs
OPS = {
    "var_mean": lambda L, t: L.var_mean(t, 1),
    "var_mean_all": lambda L, t: L.var_mean(t),
    "var_mean_keep": lambda L, t: L.var_mean(t, [0, 1], keepdim=True, correction=0),
    "std_mean": lambda L, t: L.std_mean(t, 1),
    "std_mean_all": lambda L, t: L.std_mean(t, unbiased=False),
    "aminmax": lambda L, t: L.aminmax(t),
    "aminmax_dim": lambda L, t: L.aminmax(t, dim=1, keepdim=True),
    "aminmax_method": lambda L, t: t.aminmax(dim=0),
    "max_dim": lambda L, t: L.max(t, 1),
    "min_dim_keep": lambda L, t: t.min(0, keepdim=True),
    "max_scalar": lambda L, t: L.max(t[0, 0], 0),
    "median_dim": lambda L, t: L.median(t, 1),
    "median_all": lambda L, t: (L.median(t),),
    "nanmedian_dim": lambda L, t: t.nanmedian(0, keepdim=True),
    "kthvalue": lambda L, t: L.kthvalue(t, 2, 1),
    "kthvalue_method": lambda L, t: t.kthvalue(3, dim=0, keepdim=True),
    "mode": lambda L, t: L.mode(t, 1),
    "cummax": lambda L, t: L.cummax(t, 1),
    "cummin": lambda L, t: t.cummin(0),
    "sort": lambda L, t: L.sort(t, 1),
    "sort_stable": lambda L, t: L.sort(t, dim=0, stable=True, descending=True),
    "sort_scalar": lambda L, t: L.sort(t[1, 1]),
    "msort": lambda L, t: (L.msort(t),),
    "topk": lambda L, t: L.topk(t, 2),
    "topk_smallest": lambda L, t: t.topk(2, dim=0, largest=False),
    "split": lambda L, t: L.split(t, 2, 1),
    "split_uneven": lambda L, t: t.split(3, 1),
    "split_one": lambda L, t: L.split(t, 4, 1),
    "split_sizes": lambda L, t: L.split(t, [1, 3], 1),
    "split_with_sizes": lambda L, t: t.split_with_sizes([2, 1, 1], 1),
    "chunk": lambda L, t: L.chunk(t, 2, 1),
    "chunk3": lambda L, t: t.chunk(3, 0),
    "unbind": lambda L, t: L.unbind(t, 1),
    "unbind0": lambda L, t: t.unbind(),
    "tensor_split": lambda L, t: L.tensor_split(t, 3, 1),
    "tensor_split_idx": lambda L, t: L.tensor_split(t, [1, 3], 1),
    "tensor_split_odd": lambda L, t: t.tensor_split([3, 1, -1], dim=1),
    "tensor_split_one": lambda L, t: L.tensor_split(t, 1, 0),
    "hsplit": lambda L, t: L.hsplit(t, 2),
    "vsplit": lambda L, t: L.vsplit(t, [1]),
    "dsplit": lambda L, t: L.dsplit(t.reshape(3, 2, 2), 2),
    "max_pool_idx": lambda L, t: L.nn.functional.max_pool2d(t.unsqueeze(0), 2, return_indices=True),
    "max_pool1d_idx": lambda L, t: L.nn.functional.max_pool1d(t.unsqueeze(0), 2, return_indices=True),
    "adaptive_max_pool_idx": lambda L, t: L.nn.functional.adaptive_max_pool2d(t.reshape(1, 3, 4), 2,
                                                                              return_indices=True),
}


def _describe(L, fn):
    t = L.tensor(X.copy(), requires_grad=True)
    outs = fn(L, t * 1)
    nodes, desc = [], []
    for o in outs:
        gf = o.grad_fn
        if gf is not None and not any(n is gf for n in nodes):
            nodes.append(gf)
        which = next((i for i, n in enumerate(nodes) if n is gf), None)
        desc.append((gf.name() if gf is not None else None, which, o.output_nr, o.requires_grad,
                     str(o.dtype), tuple(o.shape), o._is_view()))
    nf = [tuple((f.name() if f is not None else None, k) for f, k in n.next_functions) for n in nodes]
    return type(outs).__name__, desc, nf


@pytest.mark.parametrize("name", list(OPS))
def test_structure(name):
    """One node (or several, where PyTorch has several), output_nr, differentiability, edges."""
    assert _describe(hookgrad, OPS[name]) == _describe(torch, OPS[name])


@pytest.mark.parametrize("name", list(OPS))
def test_gradients_all_outputs(name):
    check(lambda L, x: OPS[name](L, x * 1), X, second=True)


SUBSETS = [(n, k) for n in ("var_mean", "std_mean", "aminmax_dim", "split_sizes", "chunk3", "unbind",
                            "max_dim", "median_dim", "kthvalue", "cummax", "sort", "topk", "mode")
           for k in (0, -1)]


@pytest.mark.parametrize("name,k", SUBSETS)
def test_gradients_one_output(name, k):
    """Only one output in the loss: the others' missing grads (zeros where PyTorch materialises)."""
    def fn(L, x):
        outs = [o for o in OPS[name](L, x * 1) if o.requires_grad]
        return outs[k] * 2
    check(fn, X, second=True)


def _hooked(name, use, create_graph=False, replace=False):
    def scenario(L, log):
        t = L.tensor(X.copy(), requires_grad=True)
        outs = OPS[name](L, t * 2)
        diff = [o for o in outs if o.requires_grad]
        gf = diff[0].grad_fn

        def pre(go):
            log("pre", go)
            if replace:
                return tuple(None if g is None else g * 3 for g in go)
        gf.register_prehook(pre)
        gf.register_hook(lambda gi, go: log("post", gi, go))
        for i, o in enumerate(diff):
            o.register_hook(lambda g, i=i: log("tensor_hook", i, g))
            if i % 2 == 0:
                o.retain_grad()
        loss = sum(((diff[i] ** 2).sum() * (i + 1)) for i in use)
        if create_graph:
            g, = L.autograd.grad(loss, t, create_graph=True)
            log("grad", g)
            gg, = L.autograd.grad((g * g).sum(), t)
            log("grad2", gg)
        else:
            loss.backward()
            log("grad", t.grad)
            log("retained", [o.grad for i, o in enumerate(diff) if i % 2 == 0])
    return scenario


HOOK_CASES = [("var_mean", [0]), ("var_mean", [1]), ("var_mean", [0, 1]), ("std_mean", [1]),
              ("std_mean", [0, 1]), ("aminmax_dim", [0]), ("aminmax_dim", [1]), ("aminmax", [0, 1]),
              ("max_dim", [0]), ("sort", [0]), ("topk_smallest", [0]), ("median_dim", [0]), ("cummin", [0]),
              ("kthvalue", [0]), ("max_pool_idx", [0]), ("adaptive_max_pool_idx", [0]),
              ("split", [1]), ("split_sizes", [0, 1]), ("chunk3", [2]), ("unbind", [0, 3]),
              ("tensor_split", [0, 2])]


@pytest.mark.parametrize("name,use", HOOK_CASES)
def test_node_and_tensor_hooks(name, use):
    """Pre/post hooks get the full grad_outputs tuple (None where no grad arrived); tensor hooks run on
    every output slot, in order, before the node's pre-hooks."""
    events(_hooked(name, use))


@pytest.mark.parametrize("name,use", [("var_mean", [0, 1]), ("std_mean", [1]), ("aminmax_dim", [0, 1]),
                                      ("split_sizes", [1]), ("max_dim", [0]), ("unbind", [1, 2])])
def test_hooks_create_graph(name, use):
    events(_hooked(name, use, create_graph=True))


@pytest.mark.parametrize("name,use", [("var_mean", [1]), ("aminmax_dim", [0, 1]), ("split", [0])])
def test_prehook_replaces_grad_outputs(name, use):
    events(_hooked(name, use, replace=True))


def test_prehook_wrong_count():
    def scenario(L, log):
        t = L.tensor(X.copy(), requires_grad=True)
        v, m = L.var_mean(t, 1)
        v.grad_fn.register_prehook(lambda go: (go[0],))
        try:
            (v.sum() + m.sum()).backward()
        except RuntimeError as e:
            log("error", str(e).split(" (hookgrad")[0])
        i = L.max(t, 1)[0]
        i.grad_fn.register_prehook(lambda go: (go[0], go[0]))
        try:
            i.sum().backward()
        except RuntimeError as e:
            log("error", str(e).split(" (hookgrad")[0])
    events(scenario)


INPLACE = {
    "split": lambda L, t: L.split(t, 2, 1)[1].add_(1),
    "chunk": lambda L, t: L.chunk(t, 2, 1)[0].mul_(2),
    "unbind": lambda L, t: L.unbind(t)[2].zero_(),
    "split_sizes": lambda L, t: L.split(t, [1, 3], 1)[1].add_(1),
    "split_with_sizes": lambda L, t: t.split_with_sizes([3, 1], 1)[0].sub_(1),
    "split_one": lambda L, t: L.split(t, 4, 1)[0].add_(1),
}


@pytest.mark.parametrize("name", list(INPLACE))
def test_inplace_on_multi_view_output(name):
    def scenario(L, log):
        t = L.tensor(X.copy(), requires_grad=True)
        try:
            INPLACE[name](L, t * 1)
            log("no error")
        except RuntimeError as e:
            log("error", str(e))
        with L.no_grad():           # without grad mode the write is allowed
            INPLACE[name](L, t * 1)
        INPLACE[name](L, L.tensor(X.copy()))    # and without history
        log("ok")
    events(scenario)


def test_saved_values():
    for name, attrs in [("var_mean", ["_saved_self"]), ("std_mean", ["_saved_self", "_saved_result0"]),
                        ("aminmax_dim", ["_saved_self", "_saved_min", "_saved_max"]),
                        ("median_all", ["_saved_self", "_saved_result"]),
                        ("split", ["_saved_split_size", "_saved_dim"]),
                        ("split_sizes", ["_saved_split_sizes", "_saved_dim"])]:
        vals = {}
        for L in (torch, hookgrad):
            t = L.tensor(X.copy(), requires_grad=True)
            gf = OPS[name](L, t * 1)[0].grad_fn
            vals[L] = [getattr(gf, a) for a in attrs]
        for a, tv, hv in zip(attrs, vals[torch], vals[hookgrad]):
            if isinstance(tv, torch.Tensor):
                assert_same(tv, hv, f"{name}.{a}")
            else:
                assert tuple(np.atleast_1d(tv)) == tuple(np.atleast_1d(hv)), (name, a, tv, hv)


def test_saved_output_version_check():
    """An output saved by the node (std of std_mean, min/max of aminmax) is version-checked."""
    def scenario(L, log):
        for make in (lambda t: L.std_mean(t, 1), lambda t: L.aminmax(t, dim=0)):
            t = L.tensor(X.copy(), requires_grad=True)
            a, b = make(t)
            b.mul_(2)
            try:
                (a.sum() + b.sum()).backward()
                log("no error", t.grad)
            except RuntimeError as e:
                log("error", str(e).split("Hint")[0])
    events(scenario)


def test_errors():
    def scenario(L, log):
        x = L.tensor(X.copy(), requires_grad=True)
        for f in (lambda: L.kthvalue(x, 5, 1), lambda: L.kthvalue(x, 0), lambda: L.median(x[:, :0], 1),
                  lambda: L.mode(x[:0], 0), lambda: L.aminmax(x[:0]), lambda: L.aminmax(x[:, :0], dim=1),
                  lambda: L.tensor_split(x, 0, 1), lambda: L.tensor_split(x[0, 0], 2),
                  lambda: L.tensor_split(x, L.tensor([[1]])), lambda: L.hsplit(x, 3), lambda: L.vsplit(x[0], 1),
                  lambda: L.dsplit(x, 2), lambda: L.hsplit(x[0, 0], 1), lambda: L.median(x, 2)):
            try:
                f()
                log("no error")
            except (RuntimeError, IndexError) as e:
                log(type(e).__name__, str(e))
    events(scenario)


@pytest.mark.parametrize("name", ["max_dim", "sort", "cummax", "median_dim", "split", "var_mean", "aminmax"])
def test_float32_and_empty(name):
    check(lambda L, x: OPS[name](L, x * 1), X.astype(np.float32), second=True)


def test_cummax_ties_and_nan():
    a = np.array([[1., 3, 3, 2, 3, np.nan, 1], [0, 0, -1, -1, 5, 5, 4]])
    check(lambda L, x: (L.cummax(x * 1, 1), L.cummin(x * 1, 1)), a, second=True)


def test_median_nan():
    a = np.array([[2., np.nan, 1, 0.5], [2., 1, 3, 0.]])
    check(lambda L, x: (L.median(x * 1, 1), L.nanmedian(x * 1, 1), L.nanmedian(x * 1)), a)
