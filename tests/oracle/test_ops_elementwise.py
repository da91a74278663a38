"""Elementwise ops vs torch: values, dtypes, first/second-order grads, grad_fn names, promotion, errors."""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from hypothesis.extra.numpy import mutually_broadcastable_shapes

import torch
import hookgrad
from hookgrad.primitives import elementwise as E
from ops_util import data, run, same_error

DT = ["float32", "float64"]
SET = settings(max_examples=8, deadline=None)


def F(lib):
    # the activation functions live in hookgrad.primitives.elementwise (nn.functional re-exports them)
    return lib.nn.functional if lib is torch else E


UNARY = {  # name: (fn, data kind)
    "neg": (lambda L, x: -x, "n"), "abs": (lambda L, x: x.abs(), "nz"), "reciprocal": (lambda L, x: x.reciprocal(), "nz"),
    "exp": (lambda L, x: x.exp(), "n"), "log": (lambda L, x: x.log(), "p"), "log1p": (lambda L, x: x.log1p(), "p"),
    "expm1": (lambda L, x: x.expm1(), "n"), "log2": (lambda L, x: x.log2(), "p"), "sqrt": (lambda L, x: x.sqrt(), "p"),
    "rsqrt": (lambda L, x: x.rsqrt(), "p"), "sin": (lambda L, x: x.sin(), "n"), "cos": (lambda L, x: x.cos(), "n"),
    "tan": (lambda L, x: x.tan(), "u"), "tanh": (lambda L, x: x.tanh(), "n"), "sigmoid": (lambda L, x: x.sigmoid(), "n"),
    "erf": (lambda L, x: x.erf(), "n"), "relu": (lambda L, x: x.relu(), "nz"), "square": (lambda L, x: x.square(), "n"),
    "gelu": (lambda L, x: F(L).gelu(x), "n"), "gelu_tanh": (lambda L, x: F(L).gelu(x, approximate="tanh"), "n"),
    "silu": (lambda L, x: F(L).silu(x), "n"), "softplus": (lambda L, x: F(L).softplus(x, beta=2.0), "n"),
    "elu": (lambda L, x: F(L).elu(x, alpha=0.7), "nz"), "selu": (lambda L, x: F(L).selu(x), "nz"),
    "celu": (lambda L, x: F(L).celu(x, alpha=1.3), "nz"), "leaky_relu": (lambda L, x: F(L).leaky_relu(x, 0.2), "nz"),
    "hardtanh": (lambda L, x: F(L).hardtanh(x, -0.5, 0.5), "nz"), "relu6": (lambda L, x: F(L).relu6(x * 4), "nz"),
    "clamp": (lambda L, x: x.clamp(-0.5, 0.5), "nz"), "clamp_min": (lambda L, x: x.clamp(min=0.3), "nz"),
    "clamp_min_fn": (lambda L, x: x.clamp_min(0.3), "nz"), "clamp_max_fn": (lambda L, x: L.clamp_max(x, 0.3), "nz"),
    "clip": (lambda L, x: L.clip(x, max=0.2), "nz"), "sign": (lambda L, x: x.sign(), "nz"),
    "floor": (lambda L, x: x.floor(), "n"), "ceil": (lambda L, x: x.ceil(), "n"), "round": (lambda L, x: x.round(), "n"),
    "round_dec": (lambda L, x: x.round(decimals=1), "n"), "trunc": (lambda L, x: x.trunc(), "n"),
    "frac": (lambda L, x: x.frac(), "n"), "pow_scalar": (lambda L, x: x ** 3, "n"), "pow_half": (lambda L, x: x ** 0.5, "p"),
    "rpow": (lambda L, x: 2.0 ** x, "n"), "rsub": (lambda L, x: 2 - x, "n"), "rdiv": (lambda L, x: 2 / x, "nz"),
    "radd": (lambda L, x: 1.5 + x, "n"), "rmul": (lambda L, x: 3 * x, "n"), "mod_scalar": (lambda L, x: x % 0.7, "n"),
    "fmod_scalar": (lambda L, x: L.fmod(x, 0.7), "n"), "div_scalar": (lambda L, x: x / 4, "n"),
    "sub_alpha": (lambda L, x: L.sub(x, 1.0, alpha=2), "n"), "lerp": (lambda L, x: L.lerp(x, x * x, 0.3), "n"),
}


@pytest.mark.parametrize("dtype", DT)
@pytest.mark.parametrize("name", sorted(UNARY))
def test_unary(name, dtype):
    fn, kind = UNARY[name]
    run(fn, data((3, 4), dtype, kind))


BINARY = {
    "add": (lambda L, x, y: x + y, "n"), "sub": (lambda L, x, y: x - y, "n"), "mul": (lambda L, x, y: x * y, "n"),
    "div": (lambda L, x, y: x / y, "nz"), "pow": (lambda L, x, y: x.abs() ** y, "nz"),
    "add_alpha": (lambda L, x, y: L.add(x, y, alpha=-2), "n"), "rsub_t": (lambda L, x, y: L.rsub(x, y), "n"),
    "minimum": (lambda L, x, y: L.minimum(x, y), "n"), "maximum": (lambda L, x, y: L.maximum(x, y), "n"),
    "fmax": (lambda L, x, y: L.fmax(x, y), "n"), "fmin": (lambda L, x, y: L.fmin(x, y), "n"),
    "max_binary": (lambda L, x, y: L.max(x, y), "n"), "atan2": (lambda L, x, y: L.atan2(x, y), "nz"),
    "remainder": (lambda L, x, y: L.remainder(x, y), "nz"), "fmod": (lambda L, x, y: L.fmod(x, y), "nz"),
    "where": (lambda L, x, y: L.where(x > y, x, y), "n"), "clamp_t": (lambda L, x, y: x.clamp(min=y), "n"),
    "clamp_t2": (lambda L, x, y: L.clamp(x, y - 0.5, y + 0.5), "n"), "clamp_min_t": (lambda L, x, y: x.clamp_min(y), "n"),
    "clamp_max_t": (lambda L, x, y: x.clamp_max(y), "n"), "lerp_t": (lambda L, x, y: L.lerp(x, y, y.sigmoid()), "n"),
}


@pytest.mark.parametrize("name", sorted(BINARY))
@SET
@given(shapes=mutually_broadcastable_shapes(num_shapes=2, max_dims=3, max_side=3), dt=st.sampled_from(DT))
def test_binary_broadcast(name, shapes, dt):
    fn, kind = BINARY[name]
    a, b = shapes.input_shapes
    run(fn, data(a, dt, kind, 1), data(b, dt, kind, 2))


def test_ties_split_gradient():
    x = np.array([1.0, 2.0, 3.0])
    run(lambda L, a, b: L.maximum(a, b), x, np.array([1.0, 0.0, 3.0]))
    run(lambda L, a, b: L.minimum(a, b) * L.tensor([1.0, 2.0, 3.0], dtype=a.dtype), x, np.array([1.0, 5.0, 3.0]))
    run(lambda L, a: a.clamp(1.0, 2.0), x)        # boundaries are inside for clamp
    run(lambda L, a: F(L).hardtanh(a, 1.0, 2.0), x)
    run(lambda L, a: a.relu(), np.array([-1.0, 0.0, 2.0]))
    run(lambda L, a: a.abs(), np.array([-1.0, 0.0, 2.0]))


@pytest.mark.parametrize("expr", [
    lambda L, i, f: i * 2.5, lambda L, i, f: i / i, lambda L, i, f: i / 2, lambda L, i, f: i // 2,
    lambda L, i, f: i % 3, lambda L, i, f: i + True, lambda L, i, f: i * L.tensor(2.5, dtype=L.float64),
    lambda L, i, f: f * L.tensor(2.5, dtype=L.float64), lambda L, i, f: f.double() + f, lambda L, i, f: i + f,
    lambda L, i, f: i > 0, lambda L, i, f: f <= i, lambda L, i, f: i == 2, lambda L, i, f: i.exp(),
    lambda L, i, f: i.clamp(0.5), lambda L, i, f: i ** 2, lambda L, i, f: 2 ** i, lambda L, i, f: i.sqrt(),
    lambda L, i, f: L.div(i, 3, rounding_mode="trunc"), lambda L, i, f: L.div(i, -3, rounding_mode="floor"),
    lambda L, i, f: L.div(f, 0.3, rounding_mode="floor"), lambda L, i, f: (i > 0) + (i > 1), lambda L, i, f: -i,
    lambda L, i, f: i.abs(), lambda L, i, f: L.where(i > 0, i, 0.5), lambda L, i, f: L.where(i > 0, f, i),
])
def test_promotion(expr):
    run(expr, data((4,), "int64"), data((4,), "float32"), second=False)


def test_floor_divide_has_no_derivative():
    for L in (torch, hookgrad):
        x = L.tensor([1.5, -2.5], requires_grad=True)
        y = x // 0.7
        assert type(y.grad_fn).__name__ == "NotImplemented"
        with pytest.raises(RuntimeError, match="derivative for aten::floor_divide is not implemented"):
            y.sum().backward()


@pytest.mark.parametrize("fn", [
    lambda L, x, y: x + y, lambda L, x, y: L.maximum(x, y), lambda L, x, y: L.clamp(x),
    lambda L, x, y: L.tensor([1, 2]) // 0, lambda L, x, y: L.tensor([1, 2]) % 0,
    lambda L, x, y: F(L).gelu(x, approximate="foo"), lambda L, x, y: L.div(x, y, rounding_mode="x"),
    lambda L, x, y: L.tensor([1, 2]) ** -1,
])
def test_errors(fn):
    same_error(fn, data((3, 4)), data((3, 5)))


def test_inplace_variants():
    def f(L, x, y):
        z = x * 1
        z.add_(y, alpha=2).mul_(y).sub_(0.5).div_(2.0).clamp_(-1, 1)
        z.exp_()
        z = z + 0
        z.pow_(2)
        z = z + 0
        z += y
        z *= 2
        return z
    run(f, data((3, 4)), data((4,)))


def test_inplace_dtype_errors():
    same_error(lambda L, x: L.tensor([1, 2]).add_(0.5), data((2,)))
    same_error(lambda L, x: L.tensor([1, 2]).div_(2), data((2,)))
