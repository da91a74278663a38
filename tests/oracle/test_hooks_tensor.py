"""Tensor- and node-level autograd hooks (spec T1-T3, N1/N2, sections 2.1-2.11, 3) against torch."""
import copy
import functools
import pickle
import warnings

import numpy as np
import pytest

from oracle import events
from _scen import attempt, msg


def ones(lib, *shape, rg=True, dtype=None):
    return lib.ones(*shape, dtype=dtype or lib.float32, requires_grad=rg)


# ------------------------------------------------------------------------------ T1
def test_full_order_trace():
    def s(lib, log):
        a = ones(lib, 2)
        b = a * 2
        c = b * 3
        b.grad_fn.register_prehook(lambda go: log("b pre", go))
        b.grad_fn.register_hook(lambda gi, go: log("b post", gi, go))
        b.register_hook(lambda g: (log("b h1", g), g + 1)[1])
        b.retain_grad()
        b.register_hook(lambda g: (log("b h2", g), g * 2)[1])
        c.grad_fn.register_hook(lambda gi, go: log("c post", gi))
        a.register_hook(lambda g: log("a hook", g))
        a.register_post_accumulate_grad_hook(lambda p: log("a postacc", p.grad))
        acc = b.grad_fn.next_functions[0][0]
        log("acc", acc.name(), b.grad_fn.name(), len(b.grad_fn.next_functions), b.grad_fn.next_functions[1])
        acc.register_prehook(lambda go: log("acc pre", go))
        acc.register_hook(lambda gi, go: log("acc post", gi, go, a.grad))
        c.sum().backward()
        log("grads", b.grad, a.grad, b.retains_grad, a.retains_grad)
    events(s)


def test_register_hook_errors():
    def s(lib, log):
        t = lib.ones(2)
        attempt(log, t.register_hook, lambda g: g)
        attempt(log, t.register_post_accumulate_grad_hook, lambda g: g)
        attempt(log, t.retain_grad)
        a = ones(lib, 2)
        attempt(log, (a * 2).register_post_accumulate_grad_hook, lambda p: None)
        a.retain_grad()
        log("leaf retains", a.retains_grad)
        with lib.no_grad():
            a.register_hook(lambda g: log("nograd-registered", g))
        (a * 3).sum().backward()
    events(s)


def test_leaf_hook_scales_and_accumulates():
    def s(lib, log):
        a = ones(lib, 2)
        a.register_hook(lambda g: (log("h", g, a.grad), g * 10)[1])
        (a * 2).sum().backward()
        log("g1", a.grad)
        (a * 3).sum().backward()
        log("g2", a.grad)
    events(s)


@pytest.mark.parametrize("ret", ["ones4", "scalar", "row", "f64", "i64", "int", "tuple", "list", "same", "none"])
@pytest.mark.parametrize("leaf", [True, False])
def test_tensor_hook_bad_returns(ret, leaf):
    def s(lib, log):
        a = ones(lib, 3)
        t = a if leaf else a * 1
        r = {"ones4": lambda g: lib.ones(4), "scalar": lambda g: lib.tensor(1.0), "row": lambda g: lib.ones(1, 3),
             "f64": lambda g: g.double(), "i64": lambda g: g.long(), "int": lambda g: 3, "tuple": lambda g: (g,),
             "list": lambda g: [g], "same": lambda g: g, "none": lambda g: None}[ret]
        t.register_hook(r)
        attempt(log, lambda: (t * 2).sum().backward())
        log("grad", a.grad)
        # the graph and tensors stay usable: remove the culprit and go again
        if t._backward_hooks:
            t._backward_hooks.clear()
        (a * 2).sum().backward()
        log("grad after fix", a.grad)
    events(s)


def test_hook_names_in_errors():
    def s(lib, log):
        def named(g):
            return lib.ones(5)
        for h in (named, functools.partial(lambda g, k: lib.ones(5), k=1)):
            a = ones(lib, 2)
            a.register_hook(h)
            attempt(log, lambda: (a * 1).sum().backward())
    events(s)


def test_hook_inplace_mutation_of_grad():
    def s(lib, log):
        a = ones(lib, 2)
        a.register_hook(lambda g: g.mul_(100) and None)
        (a * 2).sum().backward()
        log("a.grad", a.grad)
        y = ones(lib, 3) * 1
        y.register_hook(lambda g: g.mul_(2) and None)
        attempt(log, lambda: y.sum().backward())
    events(s)


def test_hook_chain_and_duplicates():
    def s(lib, log):
        a = ones(lib, 2)

        def f(g):
            log("f", g)
        a.register_hook(lambda g: g + 1)
        a.register_hook(lambda g: g * 10)
        a.register_hook(f)
        a.register_hook(f)
        (a * 1).sum().backward()
        log("grad", a.grad)
    events(s)


def test_retain_grad_after_hooks_and_accumulation():
    def s(lib, log):
        for order in (0, 1):
            a = ones(lib, 2)
            b = a * 1
            if order == 0:
                b.retain_grad()
            b.register_hook(lambda g: g * 5)
            if order == 1:
                b.retain_grad()
                b.retain_grad()
            b.sum().backward(retain_graph=True)
            log("b.grad", b.grad, b.retains_grad)
            b.sum().backward()
            log("b.grad 2", b.grad)
    events(s)


def test_nonleaf_grad_warning():
    def s(lib, log):
        a = ones(lib, 2)
        b = a * 2
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            g = b.grad
            log("g", g, [msg(x.message) for x in w], [x.category.__name__ for x in w])
    events(s)


def test_retain_grad_view_and_create_graph():
    def s(lib, log):
        x = ones(lib, 3)
        y = x * 2
        v = y[:2]
        v.retain_grad()
        (v * 3).sum().backward()
        log("v.grad", v.grad, v.grad.requires_grad)
        x = ones(lib, 2)
        y = x * x
        y.retain_grad()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            y.sum().backward(create_graph=True)
        log("rg", y.grad.requires_grad, x.grad.requires_grad, x.grad)
    events(s)


def test_root_hook_sees_seed():
    def s(lib, log):
        a = ones(lib, 2)
        loss = (a * 3).sum()
        loss.register_hook(lambda g: (log("root", g), g * 10)[1])
        loss.backward()
        log("a.grad", a.grad)
    events(s)


def test_hook_none_for_unused_multi_output():
    def s(lib, log):
        a = ones(lib, 2)
        u, v = a.unbind()
        v.register_hook(lambda g: log("v", g))
        u.register_hook(lambda g: log("u", g))
        u.grad_fn.register_prehook(lambda go: log("pre", go))
        u.grad_fn.register_hook(lambda gi, go: log("post", gi, go))
        u.backward()
        log("a.grad", a.grad)
        a = ones(lib, 2)
        u, v = a.unbind()
        v.register_hook(lambda g: lib.ones(()))
        attempt(log, u.backward)
    events(s)


def test_hook_not_on_path_does_not_fire():
    def s(lib, log):
        a = ones(lib, 2)
        b = a * 2
        c = a * 3
        c.register_hook(lambda g: log("c", g))
        b.sum().backward()
        log("done", a.grad)
    events(s)


def test_hook_returning_requires_grad_tensor_no_graph():
    def s(lib, log):
        x = ones(lib, 2)
        y = x * 2
        w = ones(lib, 2)
        y.register_hook(lambda g: g * w)
        y.sum().backward()
        log("x", x.grad, x.grad.requires_grad, w.grad)
    events(s)


def test_grad_mode_inside_hooks():
    def s(lib, log):
        for cg in (False, True):
            a = ones(lib, 2)
            b = a * a
            b.register_hook(lambda g: log("t", lib.is_grad_enabled(), g.requires_grad))
            b.grad_fn.register_prehook(lambda go: log("pre", lib.is_grad_enabled()))
            b.grad_fn.register_hook(lambda gi, go: log("post", lib.is_grad_enabled(), gi[0].requires_grad))
            a.register_post_accumulate_grad_hook(lambda p: log("pa", lib.is_grad_enabled(), p.grad.requires_grad))
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                b.sum().backward(create_graph=cg)
        with lib.no_grad():
            a = ones(lib, 2)
        y = (a * 3).sum()
        a.register_hook(lambda g: log("under no_grad", lib.is_grad_enabled()))
        with lib.no_grad():
            y.backward()
        log("outer", lib.is_grad_enabled())
    events(s)


def test_hook_raises_propagates_and_graph_usable():
    def s(lib, log):
        p = ones(lib, 2)
        y = (p * p).sum()

        def bad(g):
            raise ValueError("from hook")
        h = p.register_hook(bad)
        # hookgrad keeps the graph after a failed pass (torch frees what already ran): retain_graph here
        attempt(log, y.backward, retain_graph=True)
        h.remove()
        y.backward()
        log("p.grad", p.grad)
    events(s)


# ------------------------------------------------------------------------------ T3
def test_post_accumulate():
    def s(lib, log):
        w1 = ones(lib, 2)
        w2 = ones(lib, 2)
        w1.register_post_accumulate_grad_hook(lambda p: log("w1", p.grad, w2.grad, lib.is_grad_enabled()))
        w2.register_post_accumulate_grad_hook(lambda p: log("w2", p.grad, lib.is_grad_enabled()))
        (w1 * w2 * 3).sum().backward()
        a2 = ones(lib, 2)
        a2.register_hook(lambda g: log("a2 t1", g))
        a2.register_post_accumulate_grad_hook(lambda p: log("postacc", p.grad))
        (a2 * 2 + a2 * 3).sum().backward()
        for r in ("tensor", "int"):
            p = ones(lib, 2)
            p.register_post_accumulate_grad_hook(lambda t: t.grad * 2 if r == "tensor" else 3)
            attempt(log, lambda: (p * 2).sum().backward())
            log("p.grad", p.grad)
    events(s)


def test_post_accumulate_sgd_step():
    def s(lib, log):
        w = lib.tensor([1.0, 2.0], requires_grad=True)

        def step(p):
            with lib.no_grad():
                p.sub_(p.grad * 0.1)
            p.grad = None
        w.register_post_accumulate_grad_hook(step)
        for _ in range(3):
            (w * w).sum().backward()
            log("w", w, w.grad)
    events(s)


# ------------------------------------------------------------------------------ N1/N2
@pytest.mark.parametrize("case", ["post2", "pre2", "prebare", "postbare", "postshape", "preshape", "postdtype",
                                  "predtype", "postnone", "prenone", "postlist", "prelist", "postint", "prex10"])
def test_node_hook_returns(case):
    def s(lib, log):
        a = ones(lib, 2)
        b = a.clone()
        n = b.grad_fn
        T = lambda *sh, **k: lib.ones(*sh, **k)
        reg = {"post2": lambda: n.register_hook(lambda gi, go: (gi[0], gi[0])),
               "pre2": lambda: n.register_prehook(lambda go: (go[0], go[0])),
               "prebare": lambda: n.register_prehook(lambda go: go[0]),
               "postbare": lambda: n.register_hook(lambda gi, go: gi[0]),
               "postshape": lambda: n.register_hook(lambda gi, go: (T(3),)),
               "preshape": lambda: n.register_prehook(lambda go: (T(3),)),
               "postdtype": lambda: n.register_hook(lambda gi, go: (T(2, dtype=lib.float64),)),
               "predtype": lambda: n.register_prehook(lambda go: (T(2, dtype=lib.float64),)),
               "postnone": lambda: n.register_hook(lambda gi, go: (None,)),
               "prenone": lambda: n.register_prehook(lambda go: (None,)),
               "postlist": lambda: n.register_hook(lambda gi, go: [gi[0] * 3]),
               "prelist": lambda: n.register_prehook(lambda go: [go[0] * 3]),
               "postint": lambda: n.register_hook(lambda gi, go: (3,)),
               "prex10": lambda: (n.register_prehook(lambda go: (go[0] * 10,)),
                                  n.register_hook(lambda gi, go: (gi[0] + 1,)))}[case]
        log("name", n.name())
        reg()
        attempt(log, lambda: b.sum().backward(retain_graph=True))
        log("a.grad", a.grad)
    events(s)


def test_node_hook_scalar_slot_and_none_slots():
    def s(lib, log):
        a = ones(lib, 2)
        b = a * 2
        b.grad_fn.register_hook(lambda gi, go: (gi[0],))
        attempt(log, lambda: b.sum().backward(retain_graph=True))
        k = lib.ones(2)
        for b in (a * k, k * a):
            b.grad_fn.register_hook(lambda gi, go: log("gi", gi, go))
            b.sum().backward()
        b = a * k
        b.grad_fn.register_hook(lambda gi, go: (gi[0], lib.ones(2)))
        attempt(log, lambda: b.sum().backward())
    events(s)


def test_accumulate_grad_node_hooks():
    def s(lib, log):
        p = ones(lib, 2)
        acc = (p * 1).grad_fn.next_functions[0][0]
        log("name", acc.name(), acc.next_functions)
        acc.register_prehook(lambda go: (go[0] * 7,))
        (p * 1).sum().backward()
        log("p.grad", p.grad, (p * 1).grad_fn.next_functions[0][0] is acc)
        p2 = ones(lib, 2)
        acc2 = (p2 * 1).grad_fn.next_functions[0][0]
        acc2.register_hook(lambda gi, go: log("acc post", gi, go))
        acc2.register_hook(lambda gi, go: ())
        (p2 * 1).sum().backward()
        log("p2.grad", p2.grad)
    events(s)


# ------------------------------------------------------------------------------ 2.2 entry points
def test_entry_points_table():
    def s(lib, log):
        a = ones(lib, 2)
        b = a * 2
        a.register_hook(lambda g: log("a hook", g))
        a.register_post_accumulate_grad_hook(lambda p: log("a postacc"))
        b.register_hook(lambda g: log("b hook", g))
        b.retain_grad()
        acc = b.grad_fn.next_functions[0][0]
        acc.register_prehook(lambda go: log("acc pre"))
        acc.register_hook(lambda gi, go: log("acc post"))
        b.grad_fn.register_prehook(lambda go: log("b pre"))
        b.grad_fn.register_hook(lambda gi, go: log("b post"))
        g, = lib.autograd.grad(b.sum(), a, retain_graph=True)
        log("grad(b.sum(), a)", g, a.grad, b.grad)
        g, = lib.autograd.grad((b * b).sum(), b, retain_graph=True)
        log("grad wrt b", g, b.grad)
        (b * b).sum().backward(inputs=[b], retain_graph=True)
        log("backward(inputs=[b])", a.grad, b.grad)
        (b * b).sum().backward(inputs=[a], retain_graph=True)
        log("backward(inputs=[a])", a.grad, b.grad)
        (b * b).sum().backward(inputs=[a, b])
        log("backward(inputs=[a,b])", a.grad, b.grad)
    events(s)


def test_entry_points_multi_inputs_grad():
    def s(lib, log):
        a = ones(lib, 2)
        b = a * 2
        c = b * 3
        for t, n in ((a, "a"), (b, "b"), (c, "c")):
            t.register_hook(lambda g, n=n: log(n, g))
        b.grad_fn.register_hook(lambda gi, go: log("b node"))
        c.grad_fn.register_hook(lambda gi, go: log("c node"))
        log("gab", lib.autograd.grad(c.sum(), [b, a], retain_graph=True))
        log("gb", lib.autograd.grad(c.sum(), [b], retain_graph=True))
        log("gc", lib.autograd.grad(c.sum(), [c, b], retain_graph=True))
        attempt(log, lib.autograd.grad, c.sum(), [lib.ones(2, requires_grad=True)])
        log("unused", lib.autograd.grad(c.sum(), [lib.ones(2, requires_grad=True), a], allow_unused=True))
        log("mat", lib.autograd.grad(c.sum(), [lib.ones(2, requires_grad=True)], materialize_grads=True))
    events(s)


def test_firing_counts_and_retain_graph():
    def s(lib, log):
        a = ones(lib, 2)
        b = a * 1
        b.register_hook(lambda g: log("b", g))
        (b * 2 + b * 3 + b).sum().backward()
        a = ones(lib, 2)
        b = a * 2
        b.register_hook(lambda g: log("t"))
        b.grad_fn.register_hook(lambda gi, go: log("node"))
        a.register_post_accumulate_grad_hook(lambda p: log("postacc"))
        b.sum().backward(retain_graph=True)
        b.sum().backward()
        attempt(log, b.sum().backward)
        c = a * a
        c.sum().backward()
        attempt(log, c.sum().backward)
        attempt(log, lambda: c.grad_fn._saved_self)
    events(s)


# ------------------------------------------------------------------------------ 2.5 snapshot
def test_snapshot_add_remove_during_backward():
    def s(lib, log):
        a = ones(lib, 2)
        hs = []

        def h1(g):
            log("h1")
            hs[1].remove()
            a.register_hook(lambda g: log("late same dict"))
        hs.append(a.register_hook(h1))
        hs.append(a.register_hook(lambda g: log("h2")))
        (a * 1).sum().backward()
        (a * 1).sum().backward()
        # adding to a not-yet-visited tensor fires
        x = ones(lib, 2)
        b = x * 2
        c = b * 3
        c.register_hook(lambda g: (log("c hook"), b.register_hook(lambda g: log("late b", g)))[0])
        c.sum().backward()
        # node hooks
        x = ones(lib, 2)
        b = x * 2
        n = b.grad_fn
        hh = []
        hh.append(n.register_hook(lambda gi, go: (log("n1"), hh[1].remove(), n.register_hook(lambda gi, go: log("n3")))[0]))
        hh.append(n.register_hook(lambda gi, go: log("n2")))
        b.sum().backward(retain_graph=True)
        b.sum().backward()
        h = x.register_hook(lambda g: log("x"))
        h.remove()
        h.remove()
        with x.register_hook(lambda g: log("ctx")) as hc:
            log("type", type(hc).__name__)
        (x * 1).sum().backward()
    events(s)


def test_hook_added_after_node_ran():
    def s(lib, log):
        x = ones(lib, 2)
        b = x * 2
        b.sum().backward(retain_graph=True)
        b.grad_fn.register_hook(lambda gi, go: log("late node hook", gi))
        b.register_hook(lambda g: log("late tensor hook", g))
        b.sum().backward()
    events(s)


# ------------------------------------------------------------------------------ 2.9 in-place
def test_inplace_rebase_hooks():
    def s(lib, log):
        x = lib.tensor([0.5, 1.0], requires_grad=True)
        t = x.sin()
        ha = t.register_hook(lambda g: log("A", g))
        old = t.grad_fn
        t.cos_()
        log("bh", t._backward_hooks, t.grad_fn.name(), old.name())
        t.register_hook(lambda g: log("B", g))
        t.sum().backward(retain_graph=True)
        ha.remove()
        t.sum().backward()
        log("x.grad", x.grad)
    events(s)


def test_inplace_rebase_retain_grad():
    def s(lib, log):
        x = lib.tensor([0.5, 1.0], requires_grad=True)
        t = x * 3
        t.retain_grad()
        t.mul_(2)
        t.sin_()
        (t * 5).sum().backward()
        log("t.grad", t.grad, x.grad)
        x = ones(lib, 2)
        attempt(log, x.mul_, 2)
        with lib.no_grad():
            x.mul_(2)
        log("x", x, x._version)
    events(s)


def test_inplace_saved_tensor_version_error():
    def s(lib, log):
        a = ones(lib, 2)
        b = a.sin()
        c = b * b
        b.add_(1)
        attempt(log, lambda: c.sum().backward())
        a = ones(lib, 2)
        b = a * 1
        c = b.exp()
        b.add_(1)
        attempt(log, lambda: c.sum().backward())
        c = a.exp()
        c.mul_(2)
        attempt(log, lambda: c.sum().backward())
    events(s)


# ------------------------------------------------------------------------------ 2.11
def test_deepcopy_and_pickle_tensor():
    def s(lib, log):
        a = ones(lib, 2)
        a.register_hook(lambda g: g)
        a.register_post_accumulate_grad_hook(lambda p: None)
        (a * 2).sum().backward()
        b = copy.deepcopy(a)
        log("deepcopy", b._backward_hooks, b._post_accumulate_grad_hooks, b.requires_grad, b.grad, b)
        attempt(log, copy.deepcopy, a * 2)
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            c = pickle.loads(pickle.dumps(a))
        log("pickle", len(w) > 0, "will not be serialized" in str(w[0].message) if w else None,
            type(c._backward_hooks).__name__, len(c._backward_hooks), c.requires_grad)
    events(s)


# ------------------------------------------------------------------------------ errors in section 3
def test_backward_errors():
    def s(lib, log):
        a = ones(lib, 2)
        attempt(log, (a * 2).backward)
        attempt(log, lib.ones(2).sum().backward)
        attempt(log, lambda: (a * 2).backward(lib.ones(3)))
        attempt(log, lambda: a.sum().backward(inputs=[]))
        attempt(log, lambda: lib.autograd.grad((a * 2).sum(), [lib.ones(2)]))
        (a * 2).backward(lib.ones(2))
        log("a.grad", a.grad)
    events(s)


def test_handle_semantics():
    def s(lib, log):
        import collections
        RH = lib.utils.hooks.RemovableHandle
        attempt(log, RH, {})
        d = collections.OrderedDict()
        e = collections.OrderedDict()
        h = RH(d, extra_dict=[e])
        d[h.id] = 1
        e[h.id] = 2
        h2 = pickle.loads(pickle.dumps(h))
        log("ids", h2.id == h.id, RH.next_id > h.id)
        h.remove()
        log("rm", len(d), len(e))
    events(s)
