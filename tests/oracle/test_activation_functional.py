"""Activation modules look their function up at call time (``F.relu``, ``torch.tanh``), as PyTorch's
do: a tool that patches ``torch.nn.functional.<fn>`` or ``torch.<fn>`` sees every call. Each case runs
on torch and on hookgrad with every candidate function patched, and compares which were called (with
which positional/keyword options) and the outputs."""
import numpy as np
import pytest
import torch

import hookgrad
from oracle import assert_same

X = np.random.RandomState(0).randn(2, 3, 4).astype("float32")

MODULES = ["ReLU()", "ReLU(inplace=True)", "ReLU6()", "LeakyReLU(0.2)", "PReLU()", "ELU(0.5)", "CELU(0.7)", "SELU()",
           "GELU()", "GELU('tanh')", "SiLU()", "Mish()", "Tanh()", "Sigmoid()", "Hardswish()", "Hardsigmoid()",
           "Hardtanh(-2.0, 2.0)", "Softmax(1)", "LogSoftmax(-1)", "Softmin(0)", "Softplus(2.0, 10.0)", "Softsign()",
           "LogSigmoid()", "Tanhshrink()", "Threshold(0.1, 20.0)", "GLU(-1)",
           # [part L]
           "Hardshrink(0.3)", "Softshrink(0.3)", "Softshrink()", "RReLU(0.1, 0.3).eval()",
           "RReLU(inplace=True).eval()", "Softmax2d()"]
NAMES = ["relu", "relu6", "leaky_relu", "prelu", "elu", "celu", "selu", "gelu", "silu", "mish", "hardswish",
         "hardsigmoid", "hardtanh", "softmax", "log_softmax", "softmin", "softplus", "softsign", "logsigmoid",
         "tanhshrink", "threshold", "glu", "tanh", "sigmoid", "hardshrink", "softshrink", "rrelu", "rrelu_"]


def _run(lib, expr):
    calls = []
    patched = []
    # the module's own call only: F's internals may call torch.<fn> in one library and not the other
    for ns, where, names in ((lib.nn.functional, "F", NAMES), (lib, "torch", ["tanh", "sigmoid"])):
        for name in names:
            fn = getattr(ns, name, None)
            if fn is None:
                continue

            def spy(*args, _fn=fn, _name=f"{where}.{name}", **kw):
                calls.append((_name, len(args), sorted(k for k in kw if k != "_stacklevel")))
                return _fn(*args, **kw)
            setattr(ns, name, spy)
            patched.append((ns, name, fn))
    try:
        lib.manual_seed(0)
        m = eval("nn." + expr, {"nn": lib.nn})
        out = m(lib.tensor(X))
    finally:
        for ns, name, fn in patched:
            setattr(ns, name, fn)
    return calls, out


@pytest.mark.parametrize("expr", MODULES)
def test_activation_module_calls_functional_at_call_time(expr):
    ct, ot = _run(torch, expr)
    ch, oh = _run(hookgrad, expr)
    assert ch == ct
    assert_same(ot.detach(), oh.detach())


# [part L] the last activation modules: options, repr, errors and RReLU's training-mode draw
@pytest.mark.parametrize("expr", ["Hardshrink()", "Softshrink(0.25)", "RReLU()", "RReLU(0.2, 0.4, True)",
                                  "Softmax2d()"])
def test_last_activation_modules_repr_and_grad(expr):
    outs = []
    for lib in (torch, hookgrad):
        m = eval("nn." + expr, {"nn": lib.nn}).eval()
        x = lib.tensor(X * 2, requires_grad=True)
        y = m(x * 1)
        y.sum().backward()
        outs.append((repr(m), type(y.grad_fn).__name__, y.detach(), x.grad))
    assert outs[0][:2] == outs[1][:2]
    assert_same(outs[0][2], outs[1][2])
    assert_same(outs[0][3], outs[1][3])


def test_rrelu_training_draws_slopes_in_range():
    # PyTorch's numbers come from its own generator; the law is the same: x > 0 kept, else x * U(lower, upper)
    for lib in (torch, hookgrad):
        x = lib.tensor(X, requires_grad=True)
        y = lib.nn.RReLU(0.1, 0.3)(x)
        assert type(y.grad_fn).__name__ == "RreluWithNoiseBackward0"
        y.sum().backward()
        xn, yn, g = x.detach().numpy(), y.detach().numpy(), x.grad.numpy()
        pos = xn > 0
        assert np.array_equal(yn[pos], xn[pos]) and np.all(g[pos] == 1)
        slope = yn[~pos] / xn[~pos]
        assert np.all((slope >= 0.1 - 1e-6) & (slope <= 0.3 + 1e-6)) and len(set(slope.round(6))) > 1
        np.testing.assert_allclose(g[~pos], slope, rtol=1e-6)


@pytest.mark.parametrize("call", ["nn.Softmax2d()(lib.ones(2, 3))", "nn.Softmax2d()(lib.ones(1, 2, 3, 4, 5))",
                                  "F.softshrink(lib.ones(2), -0.5)", "F.softshrink(lib.ones(2).double(), float('nan'))",
                                  "F.softshrink(lib.ones(2, dtype=lib.int32), 0.5)", "F.softshrink(lib.ones(2), 'a')",
                                  "F.softshrink(3, 0.5)", "F.hardshrink(lib.ones(2), 'a')",
                                  "F.rrelu(lib.ones(2), 'a')", "F.rrelu(lib.ones(2, dtype=lib.int64))",
                                  "F.rrelu(lib.ones(2, dtype=lib.int64), training=True)"])
def test_last_activation_errors(call):
    errs = []
    for lib in (torch, hookgrad):
        try:
            eval(call, {"nn": lib.nn, "F": lib.nn.functional, "lib": lib})
            errs.append(None)
        except Exception as e:  # noqa: BLE001 - compared with torch's
            errs.append((type(e).__name__, str(e).split(" (hookgrad")[0]))
    assert errs[0] is not None and errs[0] == errs[1]
