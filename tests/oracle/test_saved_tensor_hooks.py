"""Saved-tensor hooks and what each op saves, compared with torch at run time (issue 9).

The pack log of an op (which tensors, in which order, the input itself or a new tensor) shows what
PyTorch's derivatives.yaml saves for the inputs that need a gradient."""
import gc
import weakref

import numpy as np
import pytest
import torch

import hookgrad
from oracle import events

LIBS = (torch, hookgrad)
R = np.random.default_rng(0)
A, B = R.standard_normal((3, 4)), R.standard_normal((3, 4))
M, V = R.standard_normal((4, 2)), R.standard_normal(4)
P = np.abs(A) + .5

OPS = {
    "mul": (lambda L, a, b: a * b, [A, B]),
    "mul_number": (lambda L, a: a * 3, [A]),
    "div": (lambda L, a, b: a / b, [A, P]),
    "div_number": (lambda L, a: a / 3, [A]),
    "rdiv_number": (lambda L, a: 3 / a, [P]),
    "pow": (lambda L, a, b: a ** b, [P, B]),
    "pow_number": (lambda L, a: a ** 2, [A]),
    "number_pow": (lambda L, a: 2 ** a, [A]),
    "exp_log_tanh": (lambda L, a: a.exp().log().tanh(), [A]),
    "relu_sigmoid_sqrt": (lambda L, a: a.relu().sigmoid().sqrt(), [A]),
    "mm": (lambda L, a, b: a @ b, [A, M]),
    "mv": (lambda L, a, b: a.mv(b), [A, V]),
    "dot": (lambda L, a, b: a.dot(b), [V, V + 1]),
    "addmm": (lambda L, c, a, b: L.addmm(c, a, b), [B[:, :2].copy(), A, M]),
    "linear": (lambda L, x, w, b: L.nn.functional.linear(x, w, b), [A, M.T.copy(), V[:2].copy()]),
    "maximum": (lambda L, a, b: L.maximum(a, b), [A, B]),
    "atan2": (lambda L, a, b: L.atan2(a, b), [A, B]),
    "clamp_tensors": (lambda L, a, b, c: L.clamp(a, b, c), [A, B - 1, B + 1]),
    "lerp_tensors": (lambda L, a, b, c: L.lerp(a, b, c), [A, B, P]),
    "fmax": (lambda L, a, b: L.fmax(a, b), [A, B]),
    "remainder": (lambda L, a, b: L.remainder(a, b), [A, P]),
    "fmod": (lambda L, a, b: L.fmod(a, b), [A, P]),
    "prod_std_var": (lambda L, a: (a.prod(1), a.std(), a.var()), [A]),
    "amax_logsumexp_cumprod_norm": (lambda L, a: (a.amax(1), a.logsumexp(1), a.cumprod(1), a.norm()), [A]),
    "softmax": (lambda L, a: (a.softmax(1), a.log_softmax(1)), [A]),
    "unary_inputs": (lambda L, a: (a.sin(), a.abs(), L.nn.functional.gelu(a), a.clamp(-.5, .5)), [A]),
}


def _patterns(n):
    """All inputs requiring grad, then each one alone."""
    return [[True] * n] + ([[i == j for j in range(n)] for i in range(n)] if n > 1 else [])


def _pack_log(lib, fn, arrays, rg):
    ins = [lib.tensor(a.copy(), requires_grad=r) for a, r in zip(arrays, rg)]
    log = []

    def pack(t):
        who = [i for i, x in enumerate(ins) if x is t]      # the input itself, or a new tensor
        log.append((who[0] if who else "new", tuple(t.shape), str(t.dtype), t.requires_grad,
                    torch.is_grad_enabled() if lib is torch else hookgrad.is_grad_enabled()))
        return t

    with lib.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        fn(lib, *ins)
    return log


@pytest.mark.parametrize("name", sorted(OPS))
def test_pack_log_per_op(name):
    fn, arrays = OPS[name]
    for rg in _patterns(len(arrays)):
        t, h = (_pack_log(lib, fn, arrays, rg) for lib in LIBS)
        assert h == t, f"{name} requires_grad={rg}\ntorch:    {t}\nhookgrad: {h}"


def test_unpack_order_and_count_with_retain_graph():
    def scen(lib, log):
        G = lib.autograd.graph

        def unpack(t):
            log("unpack", tuple(t.shape))
            return t
        a = lib.tensor([[1., 2.], [3., 4.]], requires_grad=True)
        w = lib.tensor(np.ones((2, 3)), requires_grad=True)
        with G.saved_tensors_hooks(lambda t: t, unpack):
            u = (a @ w).tanh().prod()
            v = lib.clamp(lib.lerp(a, a * 2, a.exp()), a - 1, a + 1).sum()
        for _ in range(2):
            u.backward(retain_graph=True)
            log("pass")
        v.backward()
        log("grads", a.grad, w.grad)
    events(scen)


def test_pack_runs_without_grad_and_does_not_reenter():
    def scen(lib, log):
        G = lib.autograd.graph
        x = lib.tensor([1., 2., 3.], dtype=lib.float64, requires_grad=True)

        def pack(t):
            log("pack", t, lib.is_grad_enabled())
            return 2 * t            # would save (and pack) again if grad mode were on
        with G.saved_tensors_hooks(pack, lambda t: t):
            y = (x * x).exp()
        y.sum().backward()
        log("grad", x.grad)
    events(scen)


@pytest.mark.parametrize("case", ["output", "leaf", "non_leaf_input"])
def test_pack_hook_modifying_input_in_place(case):
    def scen(lib, log):
        G = lib.autograd.graph
        x = lib.ones(3, requires_grad=True)
        try:
            with G.saved_tensors_hooks(lambda t: t.mul_(2), lambda t: t):
                if case == "output":
                    x.exp()
                elif case == "leaf":
                    x * x
                else:
                    h = x + 1
                    h * h
        except RuntimeError as e:
            log("error", str(e))
        log("x", x)
    events(scen)


def test_contexts_changed_in_unpack_hook_do_not_outlive_backward():
    def scen(lib, log):
        G = lib.autograd.graph
        x = lib.tensor([1., 2., 3.], requires_grad=True)
        outer = G.saved_tensors_hooks(lambda t: (log("outer pack", t), t)[1], lambda t: t)
        entered = G.saved_tensors_hooks(lambda t: (log("leaked pack", t), t)[1], lambda t: t)
        outer.__enter__()

        def unpack(t):
            outer.__exit__(None, None, None)    # exits the backward's copy of the stack
            entered.__enter__()                 # pushed on the copy only
            return t
        with G.saved_tensors_hooks(lambda t: t, unpack):
            y = x.exp()
        y.sum().backward()
        x.sin()                                 # packed by outer, not by `entered`
        outer.__exit__(None, None, None)
        x.cos()                                 # no hooks left
        log("grad", x.grad)
    events(scen)


@pytest.mark.parametrize("chain", ["mul_exp", "pow_tanh", "mm_sigmoid", "leaf_only"])
def test_detaching_pack_hook_double_backward(chain):
    def scen(lib, log):
        G = lib.autograd.graph
        x = lib.tensor([[1., .5], [-.3, .2]], requires_grad=True)
        w = lib.tensor([[.4, -1.], [2., .1]], requires_grad=True)
        with G.saved_tensors_hooks(lambda t: t.detach().clone(), lambda t: t):
            if chain == "mul_exp":
                y = (x * w).exp().sum()
            elif chain == "pow_tanh":
                y = x.pow(3).tanh().sum()
            elif chain == "mm_sigmoid":
                y = (x @ w).sigmoid().sum()
            else:
                y = (x * x).sum()
        gx, gw = lib.autograd.grad(y, (x, w), create_graph=True, allow_unused=True)
        log("grad", gx, gx.grad_fn is not None)
        ggx, ggw = lib.autograd.grad(gx.sum(), (x, w), allow_unused=True)
        log("double", ggx, ggw)
    events(scen)


def test_raw_saved_tensor_data_and_unpack_hook():
    def scen(lib, log):
        G = lib.autograd.graph
        a = lib.tensor([1., 2., 3.], requires_grad=True)
        b = lib.tensor([4., 5., 6.])
        y = a * b
        raw = y.grad_fn._raw_saved_other
        log("plain", raw.data is b, raw.unpack_hook is None, y.grad_fn._saved_other is b)
        log("not saved", y.grad_fn._saved_self, y.grad_fn._raw_saved_self.data)
        try:
            y.grad_fn._raw_saved_self.register_hooks(lambda t: t, lambda t: t)
        except RuntimeError as e:
            log("register on None", str(e))
        e = a.exp()
        log("output data", e.grad_fn._raw_saved_result.data, e.grad_fn._raw_saved_result.data is e)

        def unpack(p):
            return p[1]
        with G.saved_tensors_hooks(lambda t: ("packed", t * 2), unpack):
            z = a * b
        raw = z.grad_fn._raw_saved_other
        log("hooked", raw.data[0], raw.data[1], raw.unpack_hook is unpack, z.grad_fn._saved_other)
        y.sum().backward()
        log("after backward", y.grad_fn._saved_self)
        try:
            y.grad_fn._saved_other
        except RuntimeError as e:
            log("freed", str(e)[:40])
    events(scen)


def test_custom_function_raw_saved_tensors():
    def scen(lib, log):
        G = lib.autograd.graph

        class F(lib.autograd.Function):
            @staticmethod
            def forward(ctx, x, y):
                ctx.save_for_backward(x, None, y)
                return x * y

            @staticmethod
            def backward(ctx, g):
                x, _, y = ctx.saved_tensors
                return g * y, g * x
        a = lib.tensor([1., 2., 3.], requires_grad=True)
        b = lib.tensor([4., 5., 6.])
        with G.saved_tensors_hooks(lambda t: (log("pack", t), t * 2)[1], lambda t: (log("unpack", t), t)[1]):
            o = F.apply(a, b)
        raw = o.grad_fn._raw_saved_tensors
        log("raw", len(raw), raw[0].data, raw[1].data, raw[2].unpack_hook is not None)
        o.sum().backward()
        log("grad", a.grad)
        try:
            o.grad_fn._raw_saved_tensors
        except RuntimeError as e:
            log("freed", str(e)[:40])
    events(scen)


def test_unneeded_tensor_is_not_kept_alive():
    def scen(lib, log):
        x = lib.tensor([1., 2., 3.], requires_grad=True)
        c = lib.tensor([4., 5., 6.])
        h = x.sin()                 # an intermediate that needs a gradient
        z = c * h                   # saves c (for h's gradient), not h
        ref = weakref.ref(h)
        del h
        gc.collect()
        log("expired", ref() is None)
        z.sum().backward()
        log("grad", x.grad)
    events(scen)


@pytest.mark.parametrize("shape", [(4,), (2, 3), (3,)])
def test_unpack_hook_returning_another_shape(shape):
    def scen(lib, log):
        G = lib.autograd.graph
        b = lib.ones(3, requires_grad=True)
        with G.saved_tensors_hooks(lambda t: t, lambda t: lib.ones(*shape, dtype=lib.float64)):
            y = (b * b).exp()
        try:
            y.sum().backward()
            log("grad", b.grad)
        except RuntimeError as e:
            log("error", str(e).split(" (hookgrad")[0])
    events(scen)


def test_save_on_cpu_nested_and_disabled():
    def scen(lib, log):
        G = lib.autograd.graph
        x = lib.tensor([1., 2., 3.], requires_grad=True)
        with G.saved_tensors_hooks(lambda t: (log("outer", t), t)[1], lambda t: t):
            with G.save_on_cpu():
                y = (x * x).exp()
            w = x.sin()
        (y.sum() + w.sum()).backward()
        log("grad", x.grad)
        with G.disable_saved_tensors_hooks("my feature forbids saved tensor hooks"):
            try:
                G.saved_tensors_hooks(lambda t: t, lambda t: t).__enter__()
            except RuntimeError as e:
                log("disabled", str(e))
        with G.saved_tensors_hooks(lambda t: t, lambda t: t):
            try:
                with G.disable_saved_tensors_hooks("inside hooks"):
                    pass
            except RuntimeError as e:
                log("disable inside", str(e))
    events(scen)


def test_double_backward_with_hooks_active_counts_calls():
    def scen(lib, log):
        G = lib.autograd.graph
        x = lib.tensor([.5, -1., 2.], requires_grad=True)
        with G.saved_tensors_hooks(lambda t: (log("pack", t), t)[1], lambda t: (log("unpack", t), t)[1]):
            y = (x * x.exp()).sum()
            g, = lib.autograd.grad(y, x, create_graph=True)
            log("g", g)
            gg, = lib.autograd.grad(g.sum(), x)
        log("gg", gg)
    events(scen)
