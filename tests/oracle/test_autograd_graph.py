"""autograd.graph against torch: register_multi_grad_hook (G1), saved-tensor hooks (G2-G5), Node API."""
import numpy as np
import pytest

from oracle import events
from _scen import attempt


def ones(lib, *shape):
    return lib.ones(*shape, requires_grad=True)


def test_multi_grad_hook_all():
    def s(lib, log):
        G = lib.autograd.graph
        a, b = ones(lib, 2), ones(lib, 2)
        c = a * b
        d = a * b
        h = G.register_multi_grad_hook((a, b, c, d), lambda grads: log("all", grads))
        c.sum().backward(retain_graph=True)
        c.sum().backward(inputs=(a,), retain_graph=True)
        (c + d).sum().backward(retain_graph=True)
        lib.autograd.grad(c.sum(), [a, c], retain_graph=True)
        log("type", type(h).__name__, isinstance(h, lib.utils.hooks.RemovableHandle))
        h.remove()
        c.sum().backward(retain_graph=True)
        attempt(log, G.register_multi_grad_hook, (a, lib.ones(2)), lambda g: None)
        a = ones(lib, 2)
        b = a * 2
        G.register_multi_grad_hook((a, b), lambda grads: [g * 100 for g in grads])
        b.sum().backward()
        log("a.grad", a.grad)
    events(s)


def test_multi_grad_hook_any_and_errors():
    def s(lib, log):
        G = lib.autograd.graph
        a, b = ones(lib, 2), ones(lib, 2)
        c = a * 2 + b * 3
        G.register_multi_grad_hook((a, b, lib.ones(1)), lambda g: log("any", g), mode="any")
        c.sum().backward(retain_graph=True)
        c.sum().backward()
        attempt(log, G.register_multi_grad_hook, (a,), lambda g: None, mode="some")
    events(s)


def test_multi_grad_hook_order_with_other_hooks_and_nested_backward():
    def s(lib, log):
        G = lib.autograd.graph
        a, b = ones(lib, 2), ones(lib, 2)
        a.register_hook(lambda g: log("a before"))
        G.register_multi_grad_hook((a, b), lambda gs: log("multi", gs))
        a.register_hook(lambda g: log("a after"))

        def inner(g):
            x = ones(lib, 1)
            (x * 3).sum().backward()   # a nested backward has its own graph task
            log("inner", x.grad)
        b.register_hook(inner)
        (a * b).sum().backward()
    events(s)


def test_saved_tensors_hooks_basic_nesting_and_nograd():
    def s(lib, log):
        G = lib.autograd.graph

        def pack(t):
            log("pack", tuple(t.shape), t.requires_grad)
            return t.detach()

        def unpack(t):
            log("unpack", tuple(t.shape))
            return t
        a = lib.ones(3, requires_grad=True)
        with G.saved_tensors_hooks(pack, unpack):
            y = (a * a).exp()
            z = a + 1
            with lib.no_grad():
                a * a
            lib.ones(2) * lib.ones(2)
        y.sum().backward()
        log("a.grad", a.grad)
        with G.saved_tensors_hooks(lambda t: (log("outer pack"), t.detach())[1], lambda t: (log("outer unpack"), t)[1]):
            with G.saved_tensors_hooks(lambda t: (log("inner pack"), t.detach())[1],
                                       lambda t: (log("inner unpack"), t)[1]):
                y = a * a
        y.sum().backward()
        with G.saved_tensors_hooks(lambda t: t.detach(), lambda t: 3):
            y = a.exp()
        attempt(log, y.sum().backward)
        with G.saved_tensors_hooks(lambda t: t, lambda t: t):
            y = a.exp()
        y.sum().backward()
        e = a.exp()
        with G.saved_tensors_hooks(pack, unpack):
            e = a.exp()
        e.grad_fn._saved_result
        e.grad_fn._saved_result
        log("z", z)
    events(s)


def test_per_tensor_saved_hooks_and_errors():
    def s(lib, log):
        a = lib.ones(3, requires_grad=True)
        y = a * a
        y.grad_fn._raw_saved_self.register_hooks(lambda t: (log("rp"), t.detach())[1], lambda t: (log("ru"), t)[1])
        log("registered")
        attempt(log, y.grad_fn._raw_saved_self.register_hooks, lambda t: t, lambda t: t)
        y.sum().backward()
        log("a.grad", a.grad)
        log("saved", y.grad_fn._saved_other if False else None)
    events(s)


def test_save_on_cpu_and_disable():
    def s(lib, log):
        G = lib.autograd.graph
        a = lib.ones(3, requires_grad=True)
        with G.save_on_cpu():
            y = (a * a.exp()).sum()
        y.backward()
        log("a.grad", a.grad)
        with G.disable_saved_tensors_hooks("my feature forbids saved tensor hooks"):
            attempt(log, lambda: G.saved_tensors_hooks(lambda t: t, lambda t: t).__enter__())
        with G.saved_tensors_hooks(lambda t: t, lambda t: t):
            attempt(log, lambda: G.disable_saved_tensors_hooks("disabled msg").__enter__())
        with G.saved_tensors_hooks(lambda t: t, lambda t: t):
            y = a * 2
        log("ok")
    events(s)


def test_allow_mutation_on_saved_tensors():
    def s(lib, log):
        G = lib.autograd.graph
        a = ones(lib, 2)
        b = a.sin()
        c = b * b
        b.mul_(2)
        attempt(log, c.sum().backward)
        with G.allow_mutation_on_saved_tensors() as ctx:
            a = ones(lib, 2)
            b = a.clone()
            out = (b * b).sum()
            b.sin_()
            out.backward()
            log("a.grad", a.grad, type(ctx).__name__)
            v = a.clone()
            w = v[:1]
            out = (w * 3).exp().sum()
            v.mul_(5)
            out.backward()
            log("a.grad2", a.grad)
        with G.allow_mutation_on_saved_tensors():
            attempt(log, lambda: G.allow_mutation_on_saved_tensors().__enter__())
        with G.allow_mutation_on_saved_tensors():
            a = ones(lib, 2)
            y = (a * a).sum()
        attempt(log, y.backward)
    events(s)


def test_increment_version_and_version_errors():
    def s(lib, log):
        G = lib.autograd.graph
        a = ones(lib, 2)
        b = a * 1
        c = b * b
        log("v", b._version)
        G.increment_version(b)
        log("v", b._version)
        attempt(log, c.sum().backward)
    events(s)


def test_node_api():
    def s(lib, log):
        a = ones(lib, 2)
        b = (a * 2).exp()
        n = b.grad_fn
        log("name", n.name(), n.next_functions[0][0].name(), isinstance(n, lib.autograd.graph.Node))
        n.metadata["k"] = 1
        log("meta", n.metadata)
        log("nf", len(n.next_functions), n.next_functions[0][1])
        log("acc is Node", isinstance(n.next_functions[0][0].next_functions[0][0], lib.autograd.graph.Node))
        log("saved", n._saved_result)
        c = a * a
        log("saved_self", c.grad_fn._saved_self, c.grad_fn._saved_other)
        attempt(log, lambda: c.grad_fn._saved_nonexistent)
    events(s)
