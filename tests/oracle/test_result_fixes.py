"""Results that differed from torch (docs/coverage.md "Disagreements: results"): values, dtypes, grad_fn
names, first and second derivatives, compared with what torch does at run time."""
import warnings

import numpy as np
import pytest
import torch

import hookgrad
from oracle import check, assert_same

LIBS = (torch, hookgrad)
R = np.random.RandomState(0)
XD = R.randn(3, 4) * 2
XD[0, :] = [-3.0, 3.0, 0.0, 2.9]          # the kinks of hardswish / hardsigmoid
YD = R.randn(3, 4)
P = R.rand(3, 4) * 0.8 + 0.1
T = R.rand(3, 4)
W = R.rand(4)


def both(fn):
    """fn(lib) under torch and hookgrad: the same result, or the same exception type."""
    out = []
    for lib in LIBS:
        try:
            with warnings.catch_warnings(record=True) as w:
                warnings.simplefilter("always")
                r = fn(lib)
            out.append((r, [str(x.message).split(" (Triggered")[0] for x in w], None))
        except Exception as e:  # noqa: BLE001
            out.append((None, None, type(e).__name__))
    (rt, wt, et), (rh, wh, eh) = out
    assert et == eh, f"torch raised {et}, hookgrad {eh}"
    if et is None:
        for i, (a, b) in enumerate(zip(rt if isinstance(rt, tuple) else (rt,), rh if isinstance(rh, tuple) else (rh,))):
            assert_same(a, b, f"output {i}")
    return wt, wh


def grad_fn_names(fn, *arrays):
    names = []
    for lib in LIBS:
        ts = [lib.tensor(a, requires_grad=True) for a in arrays]
        names.append(fn(lib, *ts).grad_fn.name())
    assert names[0] == names[1], names
    return names[0]


# ---------------------------------------------------------------------------------------- grad-mode decorators
@pytest.mark.parametrize("ctx", ["no_grad", "enable_grad"])
def test_grad_mode_decorates_the_function_passed(ctx):
    res = []
    for lib in LIBS:
        f = getattr(lib, ctx)(lambda x: x * 2)
        with lib.set_grad_enabled(ctx == "no_grad"):
            res.append((type(f).__name__, f.__name__, f(lib.ones(2, requires_grad=True)).requires_grad))
    assert res[0] == res[1]


# ------------------------------------------------------------------------------------------ number arithmetic
@pytest.mark.parametrize("op", ["add", "sub", "subtract", "mul", "multiply", "div", "divide", "true_divide",
                                "floor_divide"])
@pytest.mark.parametrize("a,b", [(2, 3), (2.5, 3), (7, -2.0), (True, False), (True, 3)])
def test_two_numbers_give_a_0d_tensor(op, a, b):
    both(lambda lib: getattr(lib, op)(a, b))


@pytest.mark.parametrize("call", [
    lambda lib, x, y: lib.add(x, 2, y), lambda lib, x, y: lib.sub(x, 2, y), lambda lib, x, y: x.add(2, y),
    lambda lib, x, y: x.sub(0.5, y), lambda lib, x, y: x.clone().add_(2, y), lambda lib, x, y: x.clone().sub_(2, y),
    lambda lib, x, y: lib.addcmul(x, 2, y, x), lambda lib, x, y: lib.addcdiv(x, 0.5, y, x + 1),
    lambda lib, x, y: x.addcmul(2, y, x), lambda lib, x, y: x.clone().addcdiv_(0.5, y, x + 1),
])
def test_deprecated_alpha_value_overloads(call):
    wt, wh = both(lambda lib: call(lib, lib.tensor(P), lib.tensor(YD)))
    # torch warns once per process (TORCH_WARN_ONCE): its text is compared when it did warn
    assert wh and "is deprecated" in wh[0] and (not wt or wh[0].split("\n")[0] == wt[0].split("\n")[0])


def test_deprecated_overload_warning_text_and_gradients():
    wt, wh = both(lambda lib: lib.addcmul(lib.tensor(P), 3, lib.tensor(T), lib.tensor(YD)))
    assert wh and (not wt or wh == wt)
    check(lambda lib, x, y: lib.add(x, 3, y) * lib.addcdiv(x, 2, y, x), P, T)


# ------------------------------------------------------------------------------------------- varargs dims
@pytest.mark.parametrize("call", [
    lambda x: x.squeeze(0, 1), lambda x: x.squeeze((0, 1)), lambda x: x.squeeze(0, 2), lambda x: x.squeeze(1, 1),
    lambda x: x.clone().squeeze_(0, 1), lambda x: x.clone().squeeze_(1, 1), lambda x: x.count_nonzero(0, 2),
    lambda x: x.hsplit(1, 3), lambda x: x.vsplit(0, 1), lambda x: x.dsplit(1, 2), lambda x: x.broadcast_to(2, 1, 1, 4),
])
def test_methods_taking_int_varargs(call):
    both(lambda lib: call(lib.tensor(np.arange(4.0).reshape(1, 1, 4))))


# ----------------------------------------------------------------------------------- losses: one node each
LOSSES = {
    "mse": lambda F, x, y, r: F.mse_loss(x, y, reduction=r),
    "mse_broadcast": lambda F, x, y, r: F.mse_loss(x, y[0], reduction=r),
    "huber": lambda F, x, y, r: F.huber_loss(x, y, reduction=r, delta=0.7),
    "smooth_l1": lambda F, x, y, r: F.smooth_l1_loss(x, y, reduction=r, beta=0.5),
    "smooth_l1_beta0": lambda F, x, y, r: F.smooth_l1_loss(x, y, reduction=r, beta=0.0),
    "bce_logits": lambda F, x, y, r: F.binary_cross_entropy_with_logits(x, y.sigmoid(), reduction=r),
    "bce_logits_w": lambda F, x, y, r: F.binary_cross_entropy_with_logits(
        x, y.sigmoid(), weight=F.torch_lib.tensor(W), pos_weight=F.torch_lib.tensor(3 * W), reduction=r),
    "bce": lambda F, x, y, r: F.binary_cross_entropy(x.sigmoid(), y.sigmoid(), reduction=r),
    "bce_w": lambda F, x, y, r: F.binary_cross_entropy(x.sigmoid(), y.sigmoid(), F.torch_lib.tensor(W), reduction=r),
}


class _F:
    def __init__(self, lib):
        self.lib, self.torch_lib = lib, lib

    def __getattr__(self, k):
        return getattr(self.lib.nn.functional, k)


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("loss", sorted(LOSSES))
def test_losses_values_and_two_derivatives(loss, reduction):
    f = LOSSES[loss]
    check(lambda lib, x, y: f(_F(lib), x, y, reduction), XD, YD, second=True)
    check(lambda lib, x, y: f(_F(lib), x, y, reduction), XD.astype(np.float32), YD.astype(np.float32))


@pytest.mark.parametrize("loss,name", [("mse", "MseLossBackward0"), ("huber", "HuberLossBackward0"),
                                       ("smooth_l1", "SmoothL1LossBackward0"),
                                       ("bce_logits", "BinaryCrossEntropyWithLogitsBackward0"),
                                       ("bce_w", "BinaryCrossEntropyBackward0")])
def test_loss_grad_fn_names_and_saved(loss, name):
    f = LOSSES[loss]
    assert grad_fn_names(lambda lib, x, y: f(_F(lib), x, y, "sum"), XD, YD) == name
    fns = []
    for lib in LIBS:
        x = lib.tensor(XD, requires_grad=True)
        fns.append(f(_F(lib), x, lib.tensor(YD), "mean").grad_fn)
    tnames = sorted(n for n in dir(fns[0]) if n.startswith("_saved_"))
    assert tnames == sorted(n for n in dir(fns[1]) if n.startswith("_saved_"))
    for n in tnames:
        a, b = getattr(fns[0], n), getattr(fns[1], n)
        assert_same(a if not isinstance(a, torch.Tensor) else a.detach(), b if not isinstance(b, hookgrad.Tensor)
                    else b.detach(), n)


# ------------------------------------------------------------------------------- activations: one node each
ACTS = {"hardsigmoid": "HardsigmoidBackward0", "hardswish": "HardswishBackward0", "mish": "MishBackward0",
        "logsigmoid": "LogSigmoidBackward0", "glu": "GluBackward0"}


@pytest.mark.parametrize("act", sorted(ACTS))
def test_activation_nodes(act):
    f = lambda lib, x: getattr(lib.nn.functional, act)(x)  # noqa: E731
    assert grad_fn_names(f, XD) == ACTS[act]
    check(f, XD, second=act != "hardsigmoid")
    check(f, XD.astype(np.float32))


def test_hardsigmoid_has_no_second_derivative_and_glu_dims():
    for lib in LIBS:
        x = lib.tensor(XD, requires_grad=True)
        g, = lib.autograd.grad(lib.nn.functional.hardsigmoid(x).sum(), x, create_graph=True)
        with pytest.raises(RuntimeError, match="derivative for aten::hardsigmoid_backward is not implemented"):
            g.sum().backward()
    check(lambda lib, x: lib.nn.functional.glu(x, 0), XD[:2], second=True)
    b = [lib.nn.functional.logsigmoid(lib.tensor(XD, requires_grad=True)).grad_fn._saved_buffer for lib in LIBS]
    assert_same(b[0], b[1], "buffer")
    d = [lib.nn.functional.glu(lib.tensor(XD, requires_grad=True)).grad_fn._saved_dim for lib in LIBS]
    assert d[0] == d[1]


# --------------------------------------------------------------------------------------------- the rest
@pytest.mark.parametrize("eps", [None, 0.1, 0.6, 1.0, 0.5])
def test_logit_eps(eps):
    check(lambda lib, x: lib.logit(x, eps), P)
    both(lambda lib: lib.tensor(P).logit_(eps))


@pytest.mark.parametrize("op,name", [("acosh_", "AcoshBackward1"), ("arccosh_", "AcoshBackward1"),
                                     ("asinh_", "AsinhBackward1"), ("arcsinh_", "AsinhBackward1")])
def test_inplace_acosh_asinh(op, name):
    for lib in LIBS:
        x = lib.tensor(XD.__abs__() + 1.5, requires_grad=True)
        y = x.clone()
        getattr(y, op)()
        assert y.grad_fn.name() == name
        with pytest.raises(NotImplementedError, match="inplace version of"):
            y.sum().backward()
    both(lambda lib: getattr(lib, op)(lib.tensor(XD.__abs__() + 1.5)))


@pytest.mark.parametrize("call", [
    lambda lib, x: lib.bernoulli(x.sigmoid()), lambda lib, x: x.sigmoid().bernoulli(),
    lambda lib, x: lib.normal(x, 1.0), lambda lib, x: lib.normal(1.0, x.abs()),
    lambda lib, x: lib.normal(x, x.abs()), lambda lib, x: lib.detach_copy(x), lambda lib, x: lib.bernoulli(x, 0.5),
])
def test_sampling_requires_grad_like_torch(call):
    res = []
    for lib in LIBS:
        lib.manual_seed(0)
        r = call(lib, lib.tensor(XD, requires_grad=True))
        try:
            x = lib.tensor(XD, requires_grad=True)
            lib.manual_seed(0)
            g = lib.autograd.grad(call(lib, x).sum(), x)[0].sum().item()
        except RuntimeError as e:
            g = str(e)
        res.append((r.requires_grad, r.grad_fn.name(), g))
    assert res[0] == res[1]
