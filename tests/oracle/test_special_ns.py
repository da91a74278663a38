"""hookgrad.special against torch.special: values, dtypes, grad_fn names, first and second order gradients,
torch's "not implemented" derivatives and its argument errors."""
import numpy as np
import pytest
import torch

import hookgrad
from oracle import check

R = np.random.default_rng(0)
X = np.array([-3.2, -1.1, -0.4, 0.0, 0.3, 1.7, 4.5, 30.0])     # the real line, a zero and the tails
POS = np.array([0.05, 0.3, 1.0, 2.5, 7.0, 15.0])
UNIT = np.array([1e-12, 0.01, 0.2, 0.5, 0.77, 0.99])
FINITE2 = np.array([-3.2, -1.1, -0.4, 0.3, 1.7, 4.5])

UNARY = {                      # name: (inputs, second order)
    "erf": (X, True), "erfc": (X, True), "erfcx": (X, True), "erfinv": (UNIT * 2 - 1, True),
    "expit": (X, True), "logit": (UNIT, True), "gammaln": (POS, True), "digamma": (POS, True),
    "psi": (POS, True), "i0": (X, True), "i0e": (X, True), "i1": (X, True), "i1e": (X, True),
    "log_ndtr": (np.array([-40.0, -5.0, -1.5, -1.0, -0.2, 0.0, 2.0, 9.0]), True), "ndtr": (X, True),
    "ndtri": (UNIT, True), "entr": (POS, True), "sinc": (X, True), "expm1": (X, True), "exp2": (X, True),
    "log1p": (POS, True), "round": (X, False),
}


@pytest.mark.parametrize("name", sorted(UNARY))
def test_unary(name):
    x, second = UNARY[name]
    out = check(lambda t, a: getattr(t.special, name)(a), x, second=second, tol=(1e-8, 1e-10))[1]
    want = getattr(torch.special, name)(torch.tensor(x, requires_grad=True)).grad_fn.name()
    assert out[0].grad_fn.name() == want


@pytest.mark.parametrize("name", ["erfcx", "i0e", "i1", "i1e", "ndtri", "log_ndtr", "entr", "ndtr"])
def test_unary_float32_and_integers(name):
    check(lambda t, a: getattr(t.special, name)(a), (UNIT if name == "ndtri" else POS).astype(np.float32))
    check(lambda t, a: getattr(t.special, name)(a), np.array([0, 1, 2, 5]), grad=False)


def test_special_values():
    """The edges: poles, infinities, NaN."""
    edge = np.array([-np.inf, -1.0, 0.0, 1.0, 2.0, np.inf, np.nan])
    for name in ("erfcx", "i0e", "i1e", "ndtri", "log_ndtr", "entr", "ndtr"):
        check(lambda t, a: getattr(t.special, name)(a), edge, grad=False)


@pytest.mark.parametrize("name", ["xlogy", "xlog1py"])
def test_xlogy_family(name):
    x = np.array([0.0, 0.5, 2.0, -1.5, 0.0, 3.0])
    y = np.array([0.3, 1.5, 2.0, 0.7, np.nan, 4.0])
    check(lambda t, a, b: getattr(t.special, name)(a, b), x, y, second=True)
    check(lambda t, b: getattr(t.special, name)(2.5, b), y, second=True)
    check(lambda t, a: getattr(t.special, name)(a, 3.0), x, second=True)
    h = getattr(hookgrad.special, name)
    a = hookgrad.tensor(x, requires_grad=True)
    tn = getattr(torch.special, name)
    ta = torch.tensor(x, requires_grad=True)
    assert [h(a, 3.0).grad_fn.name(), h(2.0, a).grad_fn.name()] == [tn(ta, 3.0).grad_fn.name(),
                                                                    tn(2.0, ta).grad_fn.name()]


def test_zeta():
    s = np.array([1.5, 2.0, 3.3, 7.0, 2.5])
    q = np.array([0.3, 1.0, 2.5, 0.1, 4.0])
    # only other has a derivative
    check(lambda t, a, b: t.special.zeta(a, b), s, q, requires_grad=[False, True], second=True)
    check(lambda t, b: t.special.zeta(2.0, b), q, second=True)
    check(lambda t, a: t.special.zeta(a, 1.5), s, grad=False)
    edge_s = np.array([1.0, 0.5, 2.0, 2.5, 2.0, np.nan])
    edge_q = np.array([1.0, 1.0, -1.0, -1.5, -1.5, 1.0])
    check(lambda t, a, b: t.special.zeta(a, b), edge_s, edge_q, grad=False)
    check(lambda t, a, b: t.special.zeta(a, b), np.array([2, 3]), np.array([1, 2]), grad=False)


@pytest.mark.parametrize("name", ["gammainc", "gammaincc"])
def test_incomplete_gamma(name):
    a = np.array([0.5, 1.0, 2.0, 5.0, 3.0, 12.0])
    x = np.array([0.3, 2.0, 1.0, 10.0, 3.0, 9.0])
    check(lambda t, p, q: getattr(t.special, name)(p, q), a, x, requires_grad=[False, True], second=True,
          tol=(1e-8, 1e-10))
    edge_a = np.array([0.0, 0.0, 1.0, -1.0, 2.0, 2.0, np.inf])
    edge_x = np.array([1.0, 0.0, 0.0, 1.0, np.inf, -1.0, 3.0])
    check(lambda t, p, q: getattr(t.special, name)(p, q), edge_a, edge_x, grad=False)


def _errors(fn):
    """The exception (type, message) fn(lib) raises under torch and hookgrad."""
    got = []
    for lib in (torch, hookgrad):
        with pytest.raises(Exception) as e:
            fn(lib)
        got.append((type(e.value).__name__, str(e.value)))
    return got


@pytest.mark.parametrize("case", [
    lambda t: t.autograd.grad(t.special.zeta(t.tensor([2.0], requires_grad=True), t.tensor([1.5])).sum(),
                              t.tensor([0.0])),
    lambda t: [a := t.tensor([2.0], requires_grad=True), t.autograd.grad(t.special.zeta(a, 1.5).sum(), a)],
    lambda t: [a := t.tensor([2.0], requires_grad=True),
               t.autograd.grad(t.special.gammainc(a, t.tensor([1.5])).sum(), a)],
    lambda t: [a := t.tensor([2.0], requires_grad=True),
               t.autograd.grad(t.special.gammaincc(a, t.tensor([1.5])).sum(), a)],
    lambda t: t.special.gammainc(t.tensor([2.0]), 1.0),
    lambda t: t.special.gammaincc(2, t.tensor([2.0])),
    lambda t: t.special.gammainc(t.tensor([2]), t.tensor([1])),
    lambda t: t.special.round(t.tensor([1, 2])),
    lambda t: t.special.bessel_j0(1.0),
    lambda t: t.special.softmax(t.ones(2)),
    lambda t: t.special.polygamma(-1, t.ones(2)),
    lambda t: t.special.ndtri([0.5]),
])
def test_errors(case):
    want, got = _errors(case)
    assert got[0] == want[0]
    if want[0] != "RuntimeError" or "element 0" not in want[1]:
        assert got[1].replace("hookgrad", "torch") == want[1]


@pytest.mark.parametrize("name", ["bessel_j0", "bessel_j1"])
def test_bessel_j_has_no_derivative(name):
    x = np.linspace(-30.0, 30.0, 41)
    # PyTorch's own J0/J1 are accurate to ~4e-7 beyond |x| = 5; hookgrad's to ~1e-11
    t, h = check(lambda t, a: getattr(t.special, name)(a), x, tol=(0, 1e-6))
    assert not h[0].requires_grad and h[0].grad_fn is None
    check(lambda t, a: getattr(t.special, name)(a), np.array([0, 1, 3]), grad=False, tol=(1e-6, 1e-6))


def test_reductions_and_polygamma():
    a = R.standard_normal((3, 4))
    check(lambda t, x: t.special.logsumexp(x, 1), a, second=True)
    check(lambda t, x: t.special.logsumexp(x, (0, 1), keepdim=True), a, second=True)
    check(lambda t, x: t.special.softmax(x, 0), a, second=True)
    check(lambda t, x: t.special.log_softmax(x, -1, dtype=t.float32), a, tol=(1e-5, 1e-6))
    check(lambda t, x: t.special.polygamma(3, x), POS, second=True)
    check(lambda t, x: t.special.multigammaln(x, 3), POS + 1.5, second=True)
    check(lambda t, x: t.special.round(x, decimals=1), X, grad=False)
    check(lambda t, x: t.special.logit(x, eps=0.1), UNIT, second=True)


def test_out_argument():
    for name in ("erfcx", "ndtri", "entr", "log_ndtr", "i1e"):
        outs = []
        for lib in (torch, hookgrad):
            o = lib.empty(6, dtype=lib.float64)
            r = getattr(lib.special, name)(lib.tensor(UNIT), out=o)
            assert r is o
            outs.append(o.numpy())
        np.testing.assert_allclose(outs[1], outs[0], rtol=1e-10)


def test_namespace():
    assert hookgrad.special.psi(hookgrad.tensor(2.0)) == \
        hookgrad.special.digamma(hookgrad.tensor(2.0))         # two functions, as in PyTorch
    import hookgrad.special as sp
    assert sp is hookgrad.special
    with pytest.raises(AttributeError):
        hookgrad.special.airy_ai
