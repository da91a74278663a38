"""autograd.functional, gradcheck, anomaly detection and grad modes against torch."""
import threading
import warnings

import numpy as np
import pytest

from oracle import events
from _scen import attempt, msg


def f_vec(lib):
    return lambda x, y: (x * y).exp() + x * x


def f_scalar(lib):
    return lambda x, y: ((x * y).exp() + x * x * y).sum()


@pytest.mark.parametrize("create_graph", [False, True])
def test_vjp_jvp_vhp_hvp(create_graph):
    def s(lib, log):
        F = lib.autograd.functional
        x = lib.tensor([0.1, 0.2, 0.3], dtype=lib.float64)
        y = lib.tensor([1.0, -1.0, 0.5], dtype=lib.float64)
        v = lib.tensor([1.0, 2.0, 3.0], dtype=lib.float64)
        out, g = F.vjp(f_vec(lib), (x, y), v, create_graph=create_graph)
        log("vjp", out, g, [t.requires_grad for t in g])
        out, g = F.jvp(f_vec(lib), (x, y), (v, v), create_graph=create_graph)
        log("jvp", out, g)
        out, g = F.vhp(f_scalar(lib), (x, y), (v, v), create_graph=create_graph)
        log("vhp", out, g)
        out, g = F.hvp(f_scalar(lib), (x, y), (v, v), create_graph=create_graph)
        log("hvp", out, g)
        out, g = F.vjp(lambda a: (a * a).sum(), x)
        log("vjp single", out, g)
        out, g = F.hvp(lambda a: (a * a * a).sum(), x, v)
        log("hvp single", out, g)
    events(s)


def test_jacobian_hessian_shapes_and_values():
    def s(lib, log):
        F = lib.autograd.functional
        x = lib.tensor([[0.1, 0.2], [0.3, 0.4]], dtype=lib.float64)
        y = lib.tensor([1.0, -1.0], dtype=lib.float64)
        log("J single", F.jacobian(lambda a: a.exp() * 2, x))
        log("J tuple in", F.jacobian(lambda a, b: a * b, (x, y)))
        log("J tuple out", F.jacobian(lambda a: (a * 2, a.sum()), x))
        log("J both", F.jacobian(lambda a, b: (a * b, (a * a).sum()), (x, y)))
        J = F.jacobian(lambda a: a.exp(), x, create_graph=True)
        log("J cg", J.requires_grad)
        log("H", F.hessian(lambda a: (a * a * a).sum(), x))
        log("H tuple", F.hessian(lambda a, b: (a * a * b).sum(), (x, y)))
        log("J unused", F.jacobian(lambda a, b: a * 2, (x, y)))
    events(s)


def test_functional_errors_and_strict():
    def s(lib, log):
        F = lib.autograd.functional
        x = lib.tensor([0.1, 0.2], dtype=lib.float64)
        y = lib.tensor([1.0, 2.0], dtype=lib.float64)
        attempt(log, F.vjp, lambda a: a * 2, x)
        attempt(log, F.vjp, lambda a: a * 2, x, lib.ones(3, dtype=lib.float64))
        attempt(log, F.vjp, lambda a, b: (a, b), (x, y), (lib.ones(2),))
        attempt(log, F.vjp, lambda a: a * 2, [x])
        attempt(log, F.vjp, lambda a: 3, x)
        attempt(log, F.jacobian, lambda a, b: a * 2, (x, y), strict=True)
        attempt(log, F.vjp, lambda a: lib.ones(2, dtype=lib.float64), x, lib.ones(2, dtype=lib.float64), strict=True)
        attempt(log, F.hessian, lambda a: a * 2, x)
        attempt(log, F.hessian, lambda a: (a, a), x)
        attempt(log, F.hvp, lambda a: a * 2, x, x)
        attempt(log, F.jvp, lambda a: a * 2, x)
        attempt(log, F.vhp, lambda a: (a * 2).sum(), x, strict=True, v=x)
        attempt(log, F.jacobian, lambda a: a, x, strategy="bad")
    events(s)


def test_gradcheck_and_gradgradcheck():
    def s(lib, log):
        AG = lib.autograd
        x = lib.tensor([0.1, 0.2, 0.3], dtype=lib.float64, requires_grad=True)
        y = lib.tensor([1.0, -1.0, 0.5], dtype=lib.float64, requires_grad=True)
        log("ok", AG.gradcheck(lambda a, b: (a * b).exp(), (x, y)))
        log("gg", AG.gradgradcheck(lambda a, b: (a * b).exp() * a, (x, y)))
        log("non-tensor arg", AG.gradcheck(lambda a, k: a * k, (x, 3.0)))

        class Wrong(AG.Function):
            @staticmethod
            def forward(ctx, a):
                return a * a

            @staticmethod
            def backward(ctx, g):
                return g * 3
        attempt(log, AG.gradcheck, Wrong.apply, (x,))
        log("no raise", AG.gradcheck(Wrong.apply, (x,), raise_exception=False))
        from importlib import import_module
        GE = import_module(lib.__name__ + ".autograd.gradcheck").GradcheckError
        try:
            AG.gradcheck(Wrong.apply, (x,))
        except GE as e:
            log("GradcheckError", isinstance(e, RuntimeError), str(e).splitlines()[0])
        attempt(log, AG.gradcheck, lambda a: a * 2, (lib.ones(2, dtype=lib.float64),))
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            AG.gradcheck(lambda a: a * 2, (lib.ones(2, requires_grad=True),), atol=1e-2, rtol=1e-2)
            log("warn", [msg(x.message) for x in w])
    events(s)


def _anomaly_on(lib):
    # torch exposes these at top level; hookgrad in autograd.anomaly_mode (until hookgrad/__init__ re-exports)
    m = lib if hasattr(lib, "is_anomaly_enabled") else lib.autograd.anomaly_mode
    return m.is_anomaly_enabled(), m.is_anomaly_check_nan_enabled()


def _user_warnings(w):
    return [str(x.message) for x in w if x.category is UserWarning]


def test_detect_anomaly_nan_and_trace():
    def s(lib, log):
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            with lib.autograd.detect_anomaly():
                log("on", _anomaly_on(lib))
                x = lib.zeros(2, requires_grad=True)
                z = (x / x).sum()
                attempt(log, z.backward)
            log("off", _anomaly_on(lib))
            m = _user_warnings(w)
            log("warn0", m[0])
            log("warn1", m[1].split("\n")[0], "in test_detect_anomaly_nan_and_trace" in m[1], "z = (x / x)" in m[1])
        # an error from a hook is reported with the node's forward trace, and re-raised
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            with lib.autograd.set_detect_anomaly(True, check_nan=False):
                log("check_nan", _anomaly_on(lib))
                x = lib.zeros(2, requires_grad=True)
                y = x.exp()
                y.grad_fn.register_hook(lambda gi, go: 1 / 0)
                attempt(log, y.sum().backward)
                z = (x / x).sum()
                z.backward()
                log("nan ok", x.grad.isnan().all())
            log("warns", [m.split("\n")[0] for m in _user_warnings(w)])
        # off again: no traceback recorded, no check
        x = lib.zeros(2, requires_grad=True)
        (x / x).sum().backward()
        log("plain", x.grad.isnan().all())
    events(s)


def test_grad_modes_context_decorator_thread():
    def s(lib, log):
        x = lib.ones(2, requires_grad=True)
        with lib.no_grad():
            log("no_grad", lib.is_grad_enabled(), (x * 2).requires_grad)
            with lib.enable_grad():
                log("enable", (x * 2).requires_grad)
        with lib.set_grad_enabled(False):
            log("sge", lib.is_grad_enabled())
        lib.set_grad_enabled(False)
        log("sge fn", lib.is_grad_enabled())
        lib.set_grad_enabled(True)

        @lib.no_grad()
        def f():
            return (x * 2).requires_grad

        @lib.no_grad
        def f2():
            return lib.is_grad_enabled()

        @lib.enable_grad()
        def g():
            return lib.is_grad_enabled()

        @lib.inference_mode()
        def h():
            return lib.is_grad_enabled(), lib.is_inference_mode_enabled()

        def gen():
            yield lib.is_grad_enabled()
            yield lib.is_grad_enabled()
        log("dec", f(), f2(), g(), h())
        with lib.no_grad():
            log("enable_grad dec under no_grad", g())
        log("gen", list(lib.no_grad()(gen)()), lib.is_grad_enabled())
        with lib.inference_mode():
            log("inf", lib.is_grad_enabled(), lib.is_inference_mode_enabled())
            with lib.inference_mode(False):
                log("inf off", lib.is_inference_mode_enabled())
        out = []

        def worker():
            out.append(lib.is_grad_enabled())
        with lib.no_grad():
            t = threading.Thread(target=worker)
            t.start()
            t.join()
        log("thread sees its own mode", out)
    events(s)
