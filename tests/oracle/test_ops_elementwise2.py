"""The rest of the elementwise maths vs torch (issue 10, part C): inverse trig/hyperbolic, the gamma family,
erfc/erfinv, i0, xlogy, hypot, logaddexp, copysign, addcmul/addcdiv, integer ops, in-place forms, top-level
activations, constants. Values, dtypes (int/bool inputs, promotion), broadcasting, first and second
derivatives, grad_fn names, errors."""
import math

import numpy as np
import pytest

import torch
import hookgrad
from ops_util import data, run, same_error
from oracle import assert_same
from hookgrad.primitives import elementwise as E

DT = ["float32", "float64"]

KIND = {
    "n": lambda s, d, seed=0: data(s, d, "n", seed),
    "u": lambda s, d, seed=0: data(s, d, "u", seed),                        # (-0.9, 0.9)
    "p": lambda s, d, seed=0: data(s, d, "p", seed),                        # (0.5, 2)
    "g1": lambda s, d, seed=0: (data(s, d, "p", seed) + 0.6).astype(d),     # > 1.1 (acosh)
    "w": lambda s, d, seed=0: (data(s, d, "n", seed) * 6).astype(d),        # wide, both signs
    "wp": lambda s, d, seed=0: (np.random.default_rng(seed).uniform(0.05, 25.0, s)).astype(d),   # wide positive
    "nz": lambda s, d, seed=0: data(s, d, "nz", seed),
    "01": lambda s, d, seed=0: (np.random.default_rng(seed).uniform(0.05, 0.95, s)).astype(d),
}

UNARY = {  # name: (fn, data kind)
    "asin": (lambda L, x: L.asin(x), "u"), "acos": (lambda L, x: x.acos(), "u"), "atan": (lambda L, x: L.atan(x), "w"),
    "asinh": (lambda L, x: x.asinh(), "w"), "acosh": (lambda L, x: L.acosh(x), "g1"), "atanh": (lambda L, x: x.atanh(), "u"),
    "arcsin": (lambda L, x: L.arcsin(x), "u"), "arccos": (lambda L, x: x.arccos(), "u"), "arctan": (lambda L, x: x.arctan(), "n"),
    "arcsinh": (lambda L, x: L.arcsinh(x), "n"), "arccosh": (lambda L, x: x.arccosh(), "g1"), "arctanh": (lambda L, x: L.arctanh(x), "u"),
    "sinh": (lambda L, x: L.sinh(x), "n"), "cosh": (lambda L, x: x.cosh(), "n"), "exp2": (lambda L, x: L.exp2(x), "n"),
    "erfc": (lambda L, x: L.erfc(x), "w"), "erfinv": (lambda L, x: x.erfinv(), "u"), "lgamma": (lambda L, x: L.lgamma(x), "w"),
    "digamma": (lambda L, x: x.digamma(), "wp"), "digamma_neg": (lambda L, x: L.digamma(x - 3.2), "01"),
    "polygamma1": (lambda L, x: L.polygamma(1, x), "wp"), "polygamma2": (lambda L, x: x.polygamma(2), "wp"),
    "polygamma0": (lambda L, x: L.polygamma(0, x), "wp"), "mvlgamma": (lambda L, x: L.mvlgamma(x + 2, 3), "wp"),
    "mvlgamma1": (lambda L, x: x.mvlgamma(1), "wp"), "i0": (lambda L, x: L.i0(x), "w"),
    "sinc": (lambda L, x: L.sinc(x), "w"), "deg2rad": (lambda L, x: L.deg2rad(x), "n"), "rad2deg": (lambda L, x: x.rad2deg(), "n"),
    "logit": (lambda L, x: L.logit(x), "01"), "logit_eps": (lambda L, x: x.logit(eps=0.2), "01"),
    "logit_out": (lambda L, x: L.logit(x * 2 - 0.5), "01"), "sgn": (lambda L, x: L.sgn(x), "nz"),
    "angle": (lambda L, x: L.angle(x), "nz"), "nan_to_num": (lambda L, x: L.nan_to_num(x / (x > 0)), "nz"),
    "nan_to_num_args": (lambda L, x: (x.log() * 1e3).exp().nan_to_num(nan=1.5, posinf=2.0, neginf=-3.0), "nz"),
    "frexp": (lambda L, x: L.frexp(x * 100), "w"), "positive": (lambda L, x: L.positive(x) * 2, "n"),
    "conj": (lambda L, x: L.conj(x) * L.resolve_conj(x) + x.conj_physical() + L.resolve_neg(x), "n"),
    "real": (lambda L, x: L.real(x) * 3, "n"), "hardshrink": (lambda L, x: L.hardshrink(x, 0.6), "nz"),
    "hardshrink_m": (lambda L, x: x.hardshrink(), "nz"), "rrelu_eval": (lambda L, x: L.rrelu(x), "nz"),
    "rrelu_eval_b": (lambda L, x: L.rrelu(x, 0.2, 0.4), "nz"),
    "softmax": (lambda L, x: L.softmax(x, 1), "n"), "log_softmax": (lambda L, x: L.log_softmax(x, -1), "n"),
    "softmax_dt": (lambda L, x: L.softmax(x, 0, dtype=L.float64), "n"),
    "log_softmax_dt": (lambda L, x: L.log_softmax(x, 0, dtype=L.float32), "n"),
    "threshold": (lambda L, x: L.threshold(x, 0.3, -2.0), "nz"), "float_power_s": (lambda L, x: L.float_power(x, 3), "n"),
    "float_power_r": (lambda L, x: L.float_power(2, x), "n"), "xlogy_s": (lambda L, x: L.xlogy(2.0, x), "p"),
    "xlogy_s2": (lambda L, x: L.xlogy(x, 3.0), "n"), "copysign_s": (lambda L, x: L.copysign(x, -1.0), "n"),
    "prelu1": (lambda L, x: L.prelu(x, L.tensor([0.25], dtype=x.dtype)), "nz"),
    "fix": (lambda L, x: L.fix(x * 3), "n"),
}


@pytest.mark.parametrize("dtype", DT)
@pytest.mark.parametrize("name", sorted(UNARY))
def test_unary(name, dtype):
    fn, kind = UNARY[name]
    tol = (2e-3, 1e-4) if dtype == "float32" or name.endswith("_dt") else None
    run(fn, KIND[kind]((3, 4), dtype), tol=tol)


BINARY = {
    "xlogy": (lambda L, x, y: L.xlogy(x, y.abs()), "n"), "hypot": (lambda L, x, y: L.hypot(x, y), "nz"),
    "logaddexp": (lambda L, x, y: L.logaddexp(x, y), "n"), "logaddexp2": (lambda L, x, y: x.logaddexp2(y), "n"),
    "copysign": (lambda L, x, y: L.copysign(x, y), "nz"), "float_power": (lambda L, x, y: L.float_power(x.abs(), y), "nz"),
    "ldexp": (lambda L, x, y: L.ldexp(x, y), "n"), "arctan2": (lambda L, x, y: x.arctan2(y), "nz"),
    "addcmul": (lambda L, x, y: L.addcmul(x, y, x * 2, value=-1.5), "n"),
    "addcdiv": (lambda L, x, y: x.addcdiv(x, y, value=0.5), "nz"),
    "prelu": (lambda L, x, y: L.prelu(x, y), "nz"),
}


@pytest.mark.parametrize("shapes", [((3, 4), (3, 4)), ((2, 1, 3), (4, 1)), ((), (2, 3))])
@pytest.mark.parametrize("dtype", DT)
@pytest.mark.parametrize("name", sorted(BINARY))
def test_binary(name, dtype, shapes):
    fn, kind = BINARY[name]
    if name == "prelu":
        shapes = ((2, 3), (3,))
    tol = (2e-3, 1e-4) if dtype == "float32" else None
    run(fn, KIND[kind](shapes[0], dtype, 1), KIND[kind](shapes[1], dtype, 2), tol=tol)


def test_prelu_channels():
    run(lambda L, x, w: L.prelu(x, w), data((2, 3, 4), "float64", "nz"), data((3,), "float64", "p"))
    run(lambda L, x, w: x.prelu(w), data((2, 3, 2, 2), "float64", "nz"), data((1,), "float64", "p"))
    same_error(lambda L, x, w: L.prelu(x, w), data((2, 3), "float64"), data((2,), "float64"))


def test_addc_three_way_broadcast_and_promotion():
    run(lambda L, a, b, c: L.addcmul(a, b, c, value=2), data((3, 1), "float64"), data((4,), "float64", seed=1),
        data((2, 1, 1), "float64", seed=2))
    run(lambda L, a, b, c: L.addcdiv(a, b, c), data((3, 1), "float32"), data((4,), "float64", seed=1),
        data((4,), "float32", "nz", seed=2))
    run(lambda L, a, b, c: L.addcmul(a, b, c, value=3), *(data((2, 2), "int64", seed=s) for s in range(3)))
    same_error(lambda L, a, b, c: L.addcdiv(a, b, c), *(data((2,), "int64", seed=s) for s in range(3)))
    same_error(lambda L, a: L.addcmul(a, a, 2), data((2,), "float64"))


INT_IN = {  # float ops on integer and bool tensors: computed in the default dtype
    "asin": lambda L, x: L.asin(x), "sinh": lambda L, x: L.sinh(x), "atan": lambda L, x: x.atan(),
    "exp2": lambda L, x: L.exp2(x), "erfc": lambda L, x: L.erfc(x), "lgamma": lambda L, x: L.lgamma(x),
    "digamma": lambda L, x: L.digamma(x), "i0": lambda L, x: L.i0(x), "sinc": lambda L, x: L.sinc(x),
    "deg2rad": lambda L, x: L.deg2rad(x), "logit": lambda L, x: L.logit(x), "angle": lambda L, x: L.angle(x),
    "sgn": lambda L, x: L.sgn(x), "signbit": lambda L, x: L.signbit(x), "isreal": lambda L, x: L.isreal(x),
    "nan_to_num": lambda L, x: L.nan_to_num(x), "xlogy": lambda L, x: L.xlogy(x, x),
    "copysign": lambda L, x: L.copysign(x, -1), "ldexp": lambda L, x: L.ldexp(x, x),
    "float_power": lambda L, x: L.float_power(x, 2), "erfinv": lambda L, x: L.erfinv(x),
}


@pytest.mark.parametrize("dtype", ["int64", "int32", "bool"])
@pytest.mark.parametrize("name", sorted(INT_IN))
def test_integer_inputs(name, dtype):
    x = data((2, 3), dtype)
    run(INT_IN[name], x, tol=(1e-5, 1e-6))


def test_integer_ops():
    a, b = data((3, 4), "int64", seed=1), data((3, 4), "int64", seed=2)
    for fn in (lambda L, x, y: L.gcd(x, y), lambda L, x, y: L.lcm(x, y), lambda L, x, y: x.gcd(y.to(L.int32)),
               lambda L, x, y: L.bitwise_left_shift(x, y.abs()), lambda L, x, y: x.bitwise_right_shift(y.abs()),
               lambda L, x, y: x << 2, lambda L, x, y: x >> y.abs(), lambda L, x, y: L.bitwise_left_shift(x, 70),
               lambda L, x, y: L.bitwise_right_shift(x, 70), lambda L, x, y: x.bitwise_and(y),
               lambda L, x, y: x.bitwise_or(3), lambda L, x, y: x.bitwise_xor(y), lambda L, x, y: x.bitwise_not(),
               lambda L, x, y: L.heaviside(x, y)):
        run(fn, a, b)
    for fn in (lambda L, x: L.gcd(x, x), lambda L, x: L.bitwise_left_shift(x, 1), lambda L, x: L.lcm(x, 2)):
        same_error(fn, data((2,), "float32"))


def test_special_values():
    x = np.array([0.0, -0.0, 1.0, 2.0, -1.0, -2.5, np.inf, -np.inf, np.nan, 1e-300, 170.0, 1e10])
    for fn in (lambda L, t: L.lgamma(t), lambda L, t: L.digamma(t), lambda L, t: L.erfc(t), lambda L, t: L.i0(t),
               lambda L, t: L.sinc(t), lambda L, t: L.exp2(t), lambda L, t: L.signbit(t), lambda L, t: L.angle(t),
               lambda L, t: L.nan_to_num(t), lambda L, t: L.frexp(t), lambda L, t: L.polygamma(1, t.abs() + 0.1),
               lambda L, t: L.xlogy(t, t), lambda L, t: L.xlogy(t * 0, t), lambda L, t: L.copysign(t.abs(), t),
               lambda L, t: L.heaviside(t, t.flip(0)), lambda L, t: L.nextafter(t, t.flip(0))):
        run(fn, x, grad=False, tol=(1e-12, 1e-300))
    y = np.array([-1.0, -0.999999, -0.5, 0.0, 0.3, 0.99, 0.9999999999, 1.0, 1.5, np.nan])
    run(lambda L, t: L.erfinv(t), y, grad=False, tol=(1e-11, 1e-12))


def test_special_functions_wide_range():
    rng = np.random.default_rng(0)
    for dt in DT:
        x = np.concatenate([rng.uniform(-40, 40, 400), np.exp(rng.uniform(-20, 5, 400))]).astype(dt)
        tol = (1e-4, 1e-5) if dt == "float32" else (1e-11, 1e-12)
        tx, hx = torch.tensor(x), hookgrad.tensor(x)
        for name in ("lgamma", "erfc", "i0", "sinc", "exp2", "sinh", "asinh", "atan"):
            assert_same(getattr(torch, name)(tx), getattr(hookgrad, name)(hx), name, tol)
        pos = x[x > 0]
        tp, hp = torch.tensor(pos), hookgrad.tensor(pos)
        assert_same(torch.digamma(tp), hookgrad.digamma(hp), "digamma", tol)
        for n in (1, 2, 4):
            assert_same(torch.polygamma(n, tp), hookgrad.polygamma(n, hp), f"polygamma {n}", tol)
        u = rng.uniform(-1, 1, 800).astype(dt)
        assert_same(torch.erfinv(torch.tensor(u)), hookgrad.erfinv(hookgrad.tensor(u)), "erfinv", tol)


def test_grad_fn_of_multi_output_and_scalar_forms():
    t_out, h_out = run(lambda L, x: L.frexp(x), data((4,), "float64"))
    assert h_out[1].dtype == hookgrad.int32 and h_out[0].grad_fn.name() == "FrexpBackward0"
    for fn in (lambda L, x: L.xlogy(2.0, x), lambda L, x: L.xlogy(x, 2.0), lambda L, x: L.copysign(x, 2.0),
               lambda L, x: L.float_power(x, 2)):
        tx, hx = (L.tensor(data((3,), "float64", "p"), requires_grad=True) for L in (torch, hookgrad))
        t, h = fn(torch, tx), fn(hookgrad, hx)
        assert len(t.grad_fn.next_functions) == len(h.grad_fn.next_functions)


def test_identity_functions_return_input():
    for L in (torch, hookgrad):
        x = L.tensor([1.0, -2.0])
        for f in (L.positive, L.real, L.conj, L.conj_physical, L.resolve_conj, L.resolve_neg, L.conj_physical_):
            assert f(x) is x
        assert x.conj() is x and x.resolve_neg() is x and x.real is x
        assert not L.is_conj(x) and not x.is_conj() and not L.is_neg(x) and not x.is_neg()
    same_error(lambda L, x: L.imag(x), data((2,), "float32"))
    same_error(lambda L, x: x.imag, data((2,), "float32"))
    same_error(lambda L, x: L.positive(x), data((2,), "bool"))


def test_errors():
    f32 = data((3,), "float32")
    same_error(lambda L, x: L.heaviside(x, x.double()), f32)
    same_error(lambda L, x: L.hypot(x.long(), x.long()), f32)
    same_error(lambda L, x: L.logaddexp(x.long(), x.long()), f32)
    same_error(lambda L, x: L.frexp(x.long()), f32)
    same_error(lambda L, x: L.polygamma(-1, x), f32)
    same_error(lambda L, x: L.mvlgamma(x, 0), f32)
    same_error(lambda L, x: x.long().polygamma_(1), f32)
    same_error(lambda L, x: x.long().atanh_(), f32)
    same_error(lambda L, x: L.atanh_(x.requires_grad_() * 0.5).sum().backward(), f32)
    same_error(lambda L, x: L.asin(x.tolist()), f32)
    same_error(lambda L, x: x.long().asin_(), f32)
    same_error(lambda L, x: L.float_power_(x, 2) if hasattr(L, "float_power_") else x.float_power_(2), f32)
    same_error(lambda L, x: L.hypot(x, x.reshape(3, 1)[:2].t()), f32)
    same_error(lambda L, x: L.hardshrink(x.long()), f32)
    with pytest.raises(RuntimeError, match="derivative for aten::heaviside is not implemented"):
        x = hookgrad.tensor([1.0, 0.0], requires_grad=True)
        hookgrad.heaviside(x, x).sum().backward()


INPLACE = {  # Tensor.X_ / torch.X_ vs torch: value, version bump, grad_fn, gradient through the rebase
    "asin_": lambda L, x: x.asin_(), "arccos_": lambda L, x: x.arccos_(),
    "sinh_": lambda L, x: L.sinh_(x), "cosh_": lambda L, x: x.cosh_(), "erfinv_": lambda L, x: x.erfinv_(),
    "erfc_": lambda L, x: L.erfc_(x), "lgamma_": lambda L, x: x.lgamma_(), "digamma_": lambda L, x: x.digamma_(),
    "polygamma_": lambda L, x: x.polygamma_(1), "i0_": lambda L, x: L.i0_(x), "sinc_": lambda L, x: x.sinc_(),
    "logit_": lambda L, x: L.logit_(x), "atanh_nograd": lambda L, x: L.atanh_(x.detach()), "exp2_": lambda L, x: L.exp2_(x), "deg2rad_": lambda L, x: L.deg2rad_(x),
    "rad2deg_": lambda L, x: x.rad2deg_(), "nan_to_num_": lambda L, x: L.nan_to_num_(x), "sgn_": lambda L, x: x.sgn_(),
    "xlogy_": lambda L, x: L.xlogy_(x, 2.0), "hypot_": lambda L, x: x.hypot_(x * 2),
    "copysign_": lambda L, x: x.copysign_(-1.0), "ldexp_": lambda L, x: L.ldexp_(x, L.tensor([2])),
    "addcmul_": lambda L, x: x.addcmul_(x.detach() + 1, x.detach() * 2, value=2),
    "addcdiv_": lambda L, x: x.addcdiv_(x.detach() + 2, x.detach() + 1),
    "float_power_": lambda L, x: x.double().float_power_(2), "arctan2_": lambda L, x: x.arctan2_(x + 1),
    "fix_": lambda L, x: L.fix_(x), "true_divide_": lambda L, x: x.true_divide_(3),
    "abs_": lambda L, x: L.abs_(x), "exp_": lambda L, x: L.exp_(x), "sqrt_": lambda L, x: L.sqrt_(x),
    "sigmoid_": lambda L, x: L.sigmoid_(x), "relu_": lambda L, x: L.relu_(x - 0.5), "selu_": lambda L, x: L.selu_(x - 0.5),
    "celu_": lambda L, x: L.celu_(x - 0.5, 2.0), "threshold_": lambda L, x: L.threshold_(x, 0.5, -1.0),
    "clamp_": lambda L, x: L.clamp_(x, 0.3, 0.6), "round_": lambda L, x: L.round_(x * 4), "square_": lambda L, x: L.square_(x),
    "rrelu_": lambda L, x: L.rrelu_(x - 0.5), "mvlgamma_": lambda L, x: (x + 2).mvlgamma_(2),
    "elu_": lambda L, x: (L.nn.functional.elu_ if L is torch else E.elu)(x - 0.5, 0.5, **({} if L is torch else {"inplace": True})),
    "leaky_relu_": lambda L, x: (L.nn.functional.leaky_relu_ if L is torch else E.leaky_relu)(x - 0.5, 0.3, **({} if L is torch else {"inplace": True})),
}


@pytest.mark.parametrize("name", sorted(INPLACE))
def test_inplace(name):
    fn = INPLACE[name]

    def f(L, x):
        y = x * 1.0
        v = y._version
        r = fn(L, y)
        assert r._version > v
        return r
    run(f, KIND["01"]((2, 3), "float64"))


CMP_INPLACE = ["eq_", "ne_", "lt_", "le_", "gt_", "ge_", "less_", "greater_", "less_equal_", "greater_equal_",
               "not_equal_", "logical_and_", "logical_or_", "logical_xor_"]


@pytest.mark.parametrize("name", CMP_INPLACE)
def test_comparison_inplace(name):
    run(lambda L, x, y: getattr(x.clone(), name)(y), data((2, 3), "float32"), data((3,), "float32", seed=1),
        grad=False)
    if not name.startswith("logical"):
        run(lambda L, x: getattr(x.clone(), name)(0.2), data((2, 3), "int64"), grad=False)


@pytest.mark.parametrize("name", ["eq_", "lt_", "greater_equal_", "not_equal_"])
def test_comparison_inplace_records_zero_gradient(name):
    run(lambda L, x, y: getattr(x * 1, name)(y), data((2, 3), "float64"), data((3,), "float64", seed=1))
    run(lambda L, x: getattr(x * 1, name)(0.1), data((2, 3), "float64"))


def test_bitwise_and_logical_not_inplace():
    run(lambda L, x, y: (x.clone().bitwise_and_(y), x.clone().bitwise_or_(y), x.clone().bitwise_xor_(y),
                         x.clone().bitwise_not_(), x.clone().bitwise_left_shift_(2), x.clone().gcd_(y),
                         x.clone().lcm_(y), x.float().logical_not_()),
        data((2, 3), "int64"), data((2, 3), "int64", seed=1))


def test_rrelu_training_shape_and_slopes():
    for L in (torch, hookgrad):
        L.manual_seed(0)
        x = L.linspace(-3, 3, 50, requires_grad=True)
        y = L.rrelu(x, 0.1, 0.3, training=True)
        assert type(y.grad_fn).__name__ == "RreluWithNoiseBackward0"
        neg = x.detach() < 0
        s = (y.detach()[neg] / x.detach()[neg])
        assert bool(((s >= 0.1) & (s <= 0.3)).all()) and bool((y.detach()[~neg] == x.detach()[~neg]).all())
        y.sum().backward()
        assert bool(((x.grad[neg] - s).abs() < 1e-6).all())


def test_constants():
    for name in ("pi", "e", "inf", "nan", "newaxis"):
        a, b = getattr(torch, name), getattr(hookgrad, name)
        assert a == b or (a != a and b != b)
    assert hookgrad.tensor([[1.0]])[:, hookgrad.newaxis].shape == (1, 1, 1)
    assert math.isinf(hookgrad.inf)
