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
           "LogSigmoid()", "Tanhshrink()", "Threshold(0.1, 20.0)", "GLU(-1)"]
NAMES = ["relu", "relu6", "leaky_relu", "prelu", "elu", "celu", "selu", "gelu", "silu", "mish", "hardswish",
         "hardsigmoid", "hardtanh", "softmax", "log_softmax", "softmin", "softplus", "softsign", "logsigmoid",
         "tanhshrink", "threshold", "glu", "tanh", "sigmoid"]


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
