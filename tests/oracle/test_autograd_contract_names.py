"""The torch names test_autograd.py uses that issue 27 adds: torch._foreach_* (values, gradients, in-place forms,
argument errors), torch._unique, Tensor._make_subclass."""
from oracle import events
from _scen import attempt


def test_foreach_values_and_errors():
    def s(lib, log):
        a = [lib.tensor(1.0), lib.tensor([2.0, -3.0])]
        t2 = [lib.tensor(0.5), lib.tensor([1.5, 2.0])]
        for name in ("exp", "neg", "sqrt", "sin", "abs", "sigmoid", "log1p", "reciprocal"):
            log(name, getattr(lib, "_foreach_" + name)([x.abs() + 0.5 for x in a]))
        log("add", lib._foreach_add(a, 1), lib._foreach_add(a, t2, alpha=2), lib._foreach_add(a, lib.tensor(3.0)),
            lib._foreach_add(a, [1.0, 2.0]))
        log("sub mul div", lib._foreach_sub(a, t2), lib._foreach_mul(a, 2.0), lib._foreach_div(a, [2.0, 4.0]))
        log("max min", lib._foreach_maximum(a, 1.5), lib._foreach_minimum(a, t2), lib._foreach_clamp_min(a, 0.0),
            lib._foreach_clamp_max(a, [0.5, 1.0]))
        log("pow", lib._foreach_pow(t2, 2), lib._foreach_pow(2.0, t2), lib._foreach_pow(t2, [1.0, 3.0]))
        log("pointwise", lib._foreach_addcmul(a, t2, t2, value=2), lib._foreach_addcmul(a, t2, t2, [1.0, 2.0]),
            lib._foreach_addcdiv(a, t2, t2), lib._foreach_lerp(a, t2, 0.25))
        log("norm", lib._foreach_norm(a), lib._foreach_norm(a, 1))
        b = [x.clone() for x in a]
        log("in place", lib._foreach_add_(b, 1) is b, b)
        lib._foreach_mul_(b, [2.0, 3.0])
        lib._foreach_maximum_(b, t2)
        lib._foreach_exp_(b)
        log("chain", b)
        lib._foreach_copy_(b, t2)
        log("copy", b)
        lib._foreach_zero_(b)
        log("zero", b)
        attempt(log, lambda: lib._foreach_add(a, [1.0]))
        attempt(log, lambda: lib._foreach_add(a, [lib.tensor(1.0)]))
        attempt(log, lambda: lib._foreach_exp([]))
    events(s)


def test_foreach_gradients_and_saved_mutation():
    def s(lib, log):
        a = [lib.tensor(1.0, requires_grad=True), lib.tensor([0.5, 2.0], requires_grad=True)]
        out = lib._foreach_mul(lib._foreach_exp(a), [2.0, 3.0])
        lib._foreach_addcmul_(out, out, out, value=0.5)
        (out[0] + out[1].sum()).backward()
        log("grads", a[0].grad, a[1].grad)
        with lib.autograd.graph.allow_mutation_on_saved_tensors():
            x = [lib.tensor(1.0, requires_grad=True), lib.tensor(1.0, requires_grad=True)]
            y = lib._foreach_exp(x)
            lib._foreach_add_(y, 1)
            (y[0] + y[1]).backward()
        log("mutation", [x[0].grad, x[1].grad], lib._foreach_exp(x))
    events(s)


def test_unique_and_make_subclass():
    def s(lib, log):
        t = lib.tensor([3, 1, 3, 2])
        log("_unique", lib._unique(t), lib._unique(t, True, True), lib._unique(t, sorted=True, return_inverse=True))
        x = lib.tensor([1.0, 2.0, 3.0], requires_grad=True)

        class Sub(lib.Tensor):
            pass
        s1 = lib.Tensor._make_subclass(Sub, x.detach(), True)
        log("subclass", type(s1).__name__, isinstance(s1, lib.Tensor), s1.requires_grad, s1.is_leaf,
            s1.data_ptr() == x.data_ptr(), s1._version)
        (s1 * 2).sum().backward()
        log("grad", s1.grad)
        s2 = lib.Tensor._make_subclass(Sub, x * 2)
        log("from non-leaf", s2.requires_grad, s2.is_leaf, s2.grad_fn)
        attempt(log, lambda: lib.Tensor._make_subclass(int, x.detach()))
    events(s)
