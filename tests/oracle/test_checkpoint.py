"""torch.utils.checkpoint vs hookgrad.utils.checkpoint: values, gradients, and the order of every hook
event (module hooks fire again in the recomputation; non-reentrant stops recomputing early)."""
import warnings

import numpy as np
import pytest

from oracle import events

RNG = np.random.default_rng(0)
X = RNG.standard_normal((4, 3))     # float64: event values compare to 5 decimals


def _model(lib, log, dropout=False):
    lib.manual_seed(0)
    layers = [lib.nn.Linear(3, 5), lib.nn.ReLU()]
    if dropout:
        layers.append(lib.nn.Dropout(0.5))
    layers += [lib.nn.Linear(5, 2), lib.nn.Tanh()]
    m = lib.nn.Sequential(*layers).double()
    with lib.no_grad():     # the same weights in both libraries (initialisation agrees only to float32 rounding)
        for i, p in enumerate(m.parameters()):
            p.copy_(lib.tensor(np.random.default_rng(i).standard_normal(tuple(p.shape))))
    for name, sub in m.named_children():
        sub.register_forward_pre_hook(lambda mod, inp, name=name: log("pre", name, lib.is_grad_enabled()))
        sub.register_forward_hook(lambda mod, inp, out, name=name: log("fwd", name, out))
        sub.register_full_backward_hook(lambda mod, gi, go, name=name: log("bwd", name, go))
    return m


@pytest.mark.parametrize("reentrant", [True, False])
def test_hook_events_and_grads(reentrant):
    def scenario(lib, log):
        m = _model(lib, log)
        x = lib.tensor(X, requires_grad=True)
        h = x * 2
        h.register_hook(lambda g: log("h.grad", g))
        y = lib.utils.checkpoint.checkpoint(m, h, use_reentrant=reentrant)
        log("out", y, y.requires_grad, type(y.grad_fn).__name__ if reentrant else None)
        y.register_hook(lambda g: log("y.grad", g))
        (y * y).sum().backward()
        log("x.grad", x.grad)
        log("w.grad", m[0].weight.grad, m[2].bias.grad)
    events(scenario)


@pytest.mark.parametrize("reentrant", [True, False])
def test_checkpoint_sequential(reentrant):
    def scenario(lib, log):
        m = _model(lib, log)
        x = lib.tensor(X, requires_grad=True)
        y = lib.utils.checkpoint.checkpoint_sequential(m, 2, x, use_reentrant=reentrant)
        y.sum().backward()
        log("x.grad", x.grad)
        log("w.grad", m[0].weight.grad)
    events(scenario)


@pytest.mark.parametrize("reentrant", [True, False])
def test_rng_state_restored_for_recomputation(reentrant):
    """Dropout in the recomputation draws the forward's mask: the gradients equal those of a plain run."""
    def scenario(lib, log):
        m = _model(lib, lambda *a: None, dropout=True)
        x = lib.tensor(X, requires_grad=True)
        lib.manual_seed(1)
        m(x).sum().backward()
        plain = x.grad.clone()
        x.grad = None
        lib.manual_seed(1)
        y = lib.utils.checkpoint.checkpoint(m, x, use_reentrant=reentrant)
        lib.rand(7)                 # the RNG moves on between forward and backward
        y.sum().backward()
        log("same", bool(lib.equal(plain, x.grad)))
        after = lib.rand(2)         # the recomputation leaves the outer RNG state as it was
        lib.manual_seed(1)
        m(x)
        lib.rand(7)
        log("outer", bool(lib.equal(after, lib.rand(2))))
    assert events(scenario) == [("same", True), ("outer", True)]


@pytest.mark.parametrize("reentrant", [True, False])
def test_multiple_outputs_non_tensor_args_and_retain_graph(reentrant):
    def scenario(lib, log):
        a = lib.tensor(X, requires_grad=True)
        b = lib.tensor(X[:, :1] + 1, requires_grad=True)

        def fn(u, k, v):
            log("run", lib.is_grad_enabled(), k)
            return (u * v).sin() * k, u.exp(), 3

        y1, y2, n = lib.utils.checkpoint.checkpoint(fn, a, 2.0, b, use_reentrant=reentrant)
        log("outs", y1, y2, n)
        (y1.sum() + y2.sum()).backward(retain_graph=True)
        log("grads", a.grad, b.grad)
        y1.sum().backward()
        log("grads2", a.grad, b.grad)
    events(scenario)


def test_non_reentrant_kwargs_and_autograd_grad():
    def scenario(lib, log):
        a = lib.tensor(X, requires_grad=True)

        def fn(u, *, scale):
            log("run", scale)
            return (u * scale).tanh()

        y = lib.utils.checkpoint.checkpoint(fn, a, use_reentrant=False, scale=3.0)
        g, = lib.autograd.grad(y.sum(), a)
        log("g", g)
        g2, = lib.autograd.grad(fn(a, scale=3.0).sum(), a)
        log("same", bool(lib.allclose(g, g2)))
    events(scenario)


@pytest.mark.parametrize("early_stop", [True, False])
def test_early_stop(early_stop):
    def scenario(lib, log):
        m = _model(lib, log)
        x = lib.tensor(X, requires_grad=True)
        with lib.utils.checkpoint.set_checkpoint_early_stop(early_stop):
            y = lib.utils.checkpoint.checkpoint(m, x, use_reentrant=False)
        y.sum().backward()
        log("x.grad", x.grad)
    events(scenario)


def test_errors_and_warnings():
    def scenario(lib, log):
        ck = lib.utils.checkpoint
        a = lib.tensor(X, requires_grad=True)
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            y = ck.checkpoint(lambda u: u.sin(), a)
            ck.checkpoint_sequential([lib.nn.Tanh()], 1, a)
            ck.checkpoint(lambda u: u.sin(), lib.tensor(X), use_reentrant=True)
        log("warnings", [(c.category.__name__, str(c.message)) for c in w])
        for call in (lambda: ck.checkpoint(lambda u: u, a, use_reentrant=True, foo=1),
                     lambda: ck.checkpoint(lambda u: u, a, use_reentrant=True, debug=True),
                     lambda: ck.checkpoint(lambda u: u, a, use_reentrant=False, determinism_check="x"),
                     lambda: ck.checkpoint_sequential([lib.nn.Tanh()], 1, a, use_reentrant=True, foo=1),
                     lambda: lib.autograd.grad(y.sum(), a),
                     lambda: ck.checkpoint(lambda u: u.detach(), a, use_reentrant=True).sum().backward()):
            try:
                call()
                log("ok")
            except Exception as e:
                log(type(e).__name__, str(e).split("\n")[0])
        b = a * 1
        z = ck.checkpoint(lambda u: u.sin(), b, use_reentrant=False)
        b.mul_(2)
        try:
            z.sum().backward()
        except RuntimeError as e:
            log("inplace", str(e)[:150])
    events(scenario)


def test_no_grad_forward_runs_plainly():
    def scenario(lib, log):
        m = _model(lib, log)
        with lib.no_grad():
            y = lib.utils.checkpoint.checkpoint(m, lib.tensor(X), use_reentrant=False)
        log("y", y, y.requires_grad)
    events(scenario)
