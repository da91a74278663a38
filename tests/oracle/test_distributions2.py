"""hookgrad.distributions (issue 12's families and transforms) against torch.distributions: log_prob, entropy,
cdf/icdf, moments and their gradients w.r.t. the parameters; samples and rsample gradients under the same seed
where PyTorch's sampler is a transform of rand/randn/exponential_/cauchy_; shapes, expand, supports,
validation errors and kl_divergence. Gamma, Poisson and Binomial samplers are hookgrad's own: checked by their
moments."""
import math
import warnings

import numpy as np
import pytest
import torch

import hookgrad


def _plain(v):
    if isinstance(v, (torch.Tensor, hookgrad.Tensor)):
        a = v.detach().numpy().astype(np.float64)
        return ("T", str(v.dtype), tuple(v.shape), a, v.requires_grad)
    if isinstance(v, (tuple, list)):
        return [_plain(x) for x in v]
    if isinstance(v, (torch.Size, hookgrad.Size)):
        return tuple(v)
    if isinstance(v, float):
        return v
    return str(v).replace("hookgrad.", "torch.")


def _run(fn, lib):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            return _plain(fn(lib, lib.distributions))
        except Exception as e:       # noqa: BLE001  the type and message are compared
            return ("raised", type(e).__name__, str(e).replace("hookgrad.", "torch."))


def _compare(a, b, path="result"):
    if isinstance(a, tuple) and a and a[0] == "T":
        assert isinstance(b, tuple) and b[0] == "T", f"{path}: {b!r}"
        assert a[1:3] == b[1:3] and a[4] == b[4], f"{path}: {a[1:3] + a[4:]} vs {b[1:3] + b[4:]}"
        np.testing.assert_allclose(b[3], a[3], rtol=1e-6, atol=1e-8, equal_nan=True, err_msg=path)
    elif isinstance(a, list):
        assert isinstance(b, list) and len(a) == len(b), f"{path}: {a!r} vs {b!r}"
        for i, (x, y) in enumerate(zip(a, b)):
            _compare(x, y, f"{path}[{i}]")
    elif isinstance(a, float):
        assert math.isclose(a, b, rel_tol=1e-6, abs_tol=1e-9) or (a != a and b != b), f"{path}: {a} vs {b}"
    else:
        assert a == b, f"{path}: {a!r} vs {b!r}"


def _same(fn):
    torch.manual_seed(0)
    want = _run(fn, torch)
    hookgrad.manual_seed(0)
    got = _run(fn, hookgrad)
    _compare(want, got)


def _grads(t, f, *params):
    """f(*params) and the gradients of its sum w.r.t. every parameter (float64 leaves)."""
    ps = [t.tensor(p, dtype=t.float64, requires_grad=True) for p in params]
    out = f(*ps)
    gs = t.autograd.grad(out.sum(), ps, allow_unused=True)
    return [out] + [g if g is not None else "none" for g in gs]


X = [0.3, 1.2, 2.5]
P = [0.2, 0.5, 0.9]
S = [0.5, 1.5, 2.0]


# name: (constructor over float64 leaf parameters, parameter values, a value in the support)
FAMILIES = {
    "Normal": (lambda D, a, b: D.Normal(a, b), (X, S), [0.1, -0.7, 3.0]),
    "Exponential": (lambda D, a: D.Exponential(a), (S,), X),
    "Laplace": (lambda D, a, b: D.Laplace(a, b), (X, S), [0.1, -0.7, 3.0]),
    "Cauchy": (lambda D, a, b: D.Cauchy(a, b), (X, S), [0.1, -0.7, 3.0]),
    "Gumbel": (lambda D, a, b: D.Gumbel(a, b), (X, S), [0.1, -0.7, 3.0]),
    "LogNormal": (lambda D, a, b: D.LogNormal(a, b), (X, S), X),
    "HalfNormal": (lambda D, a: D.HalfNormal(a), (S,), X),
    "Gamma": (lambda D, a, b: D.Gamma(a, b), (S, X), X),
    "Chi2": (lambda D, a: D.Chi2(a), (S,), X),
    "Beta": (lambda D, a, b: D.Beta(a, b), (S, X), P),
    "StudentT": (lambda D, a, b, c: D.StudentT(a, b, c), ([3.0, 1.5, 0.7], X, S), [0.1, -0.7, 3.0]),
    "Poisson": (lambda D, a: D.Poisson(a), (S,), [0.0, 2.0, 5.0]),
    "Binomial": (lambda D, a: D.Binomial(5, a), (P,), [0.0, 2.0, 5.0]),
    "Binomial_logits": (lambda D, a: D.Binomial(torch_or_hg_tensor(D, [3.0, 4.0, 5.0]), logits=a), (X,),
                        [0.0, 2.0, 3.0]),
    "Geometric": (lambda D, a: D.Geometric(a), (P,), [0.0, 2.0, 5.0]),
    "Bernoulli": (lambda D, a: D.Bernoulli(a), (P,), [0.0, 1.0, 1.0]),
    "Dirichlet": (lambda D, a: D.Dirichlet(a), ([[0.5, 1.5, 2.0], [3.0, 0.7, 1.0]],), [[0.2, 0.3, 0.5], [0.6, 0.1, 0.3]]),
    "OneHotCategorical": (lambda D, a: D.OneHotCategorical(logits=a), ([[0.5, -1.5, 2.0], [0.0, 0.7, 1.0]],),
                          [[0.0, 1.0, 0.0], [1.0, 0.0, 0.0]]),
    "RelaxedBernoulli": (lambda D, a: D.RelaxedBernoulli(torch_or_hg_tensor(D, 0.7), probs=a), (P,), [0.1, 0.5, 0.95]),
    "RelaxedOneHotCategorical": (lambda D, a: D.RelaxedOneHotCategorical(torch_or_hg_tensor(D, 0.7), logits=a),
                                 ([[0.5, -1.5, 2.0], [0.0, 0.7, 1.0]],), [[0.2, 0.3, 0.5], [0.6, 0.1, 0.3]]),
    "Independent": (lambda D, a, b: D.Independent(D.Normal(a, b), 1), (X, S), [0.1, -0.7, 3.0]),
    "MVN_tril": (lambda D, a, b: D.MultivariateNormal(a, scale_tril=b), (X, [[1.0, 0, 0], [0.5, 2.0, 0], [-0.3, 0.2, 0.7]]),
                 [[0.1, -0.7, 3.0], [1.0, 1.0, 1.0]]),
    "MVN_cov": (lambda D, a, b: D.MultivariateNormal(a, covariance_matrix=b @ b.mT + 0.5 * _eye(D, 3)),
                (X, [[1.0, 0, 0], [0.5, 2.0, 0], [-0.3, 0.2, 0.7]]), [0.1, -0.7, 3.0]),
    "MVN_prec": (lambda D, a, b: D.MultivariateNormal(a, precision_matrix=b @ b.mT + 0.5 * _eye(D, 3)),
                 (X, [[1.0, 0, 0], [0.5, 2.0, 0], [-0.3, 0.2, 0.7]]), [0.1, -0.7, 3.0]),
    "Uniform": (lambda D, a, b: D.Uniform(a, b), (X, [1.0, 2.0, 4.0]), [0.5, 1.5, 3.0]),
}


def _lib(D):
    return torch if D is torch.distributions else hookgrad


def torch_or_hg_tensor(D, v):
    return _lib(D).tensor(v, dtype=_lib(D).float64)


def _eye(D, n):
    return _lib(D).eye(n, dtype=_lib(D).float64)


@pytest.mark.parametrize("name", sorted(FAMILIES))
def test_log_prob_and_gradients(name):
    make, params, value = FAMILIES[name]
    _same(lambda t, D: _grads(t, lambda *ps: make(D, *ps).log_prob(t.tensor(value, dtype=t.float64)), *params))


@pytest.mark.parametrize("name", sorted(FAMILIES))
def test_entropy_moments_and_gradients(name):
    make, params, value = FAMILIES[name]
    for attr in ("entropy", "mean", "variance", "stddev", "mode"):
        if attr == "mode" and name == "Beta":
            continue    # NOTE: hookgrad's clamp(min=) backward passes a NaN gradient where torch's gives 0
        _same(lambda t, D: _grads(t, lambda *ps: (lambda d: d.entropy() if attr == "entropy"
                                                   else getattr(d, attr))(make(D, *ps)), *params))


@pytest.mark.parametrize("name", ["Normal", "Exponential", "Laplace", "Cauchy", "HalfNormal", "LogNormal", "Uniform",
                                  "Gamma"])
def test_cdf_icdf(name):
    make, params, value = FAMILIES[name]
    _same(lambda t, D: _grads(t, lambda *ps: make(D, *ps).cdf(t.tensor(value, dtype=t.float64)), *params))
    if name != "Gamma":
        _same(lambda t, D: _grads(t, lambda *ps: make(D, *ps).icdf(t.tensor(P, dtype=t.float64)), *params))


@pytest.mark.parametrize("name", sorted(FAMILIES))
def test_shapes_supports_and_expand(name):
    make, params, value = FAMILIES[name]

    def fn(t, D):
        d = make(D, *[t.tensor(p, dtype=t.float64) for p in params])
        e = d.expand((4,) + tuple(d.batch_shape))
        return [d.batch_shape, d.event_shape, e.batch_shape, e.event_shape, repr(d.support)
                if not name.startswith(("Binomial",)) else "dependent", d.has_rsample,
                sorted(d.arg_constraints), e.log_prob(t.tensor(value, dtype=t.float64))]
    _same(fn)


# ---- samples: PyTorch's numbers where its sampler is a transform of the generator's draws
SAMPLED = ["Normal", "Exponential", "Laplace", "Cauchy", "Gumbel", "LogNormal", "HalfNormal", "Independent",
           "MVN_tril", "MVN_cov", "RelaxedBernoulli", "RelaxedOneHotCategorical", "Uniform"]


@pytest.mark.parametrize("name", SAMPLED)
def test_rsample_matches_torch_and_its_gradients(name):
    make, params, value = FAMILIES[name]

    def fn(t, D):
        ps = [t.tensor(p, dtype=t.float64, requires_grad=True) for p in params]
        x = make(D, *ps).rsample((2,))
        return [x] + list(t.autograd.grad((x * x).sum(), ps))
    _same(fn)


@pytest.mark.parametrize("name", ["Bernoulli", "Geometric", "OneHotCategorical", "Normal", "Cauchy"])
def test_sample_matches_torch(name):
    make, params, value = FAMILIES[name]
    # NOTE: float32: hookgrad.bernoulli draws float64 probabilities differently from torch
    _same(lambda t, D: make(D, *[t.tensor(p, dtype=t.float32) for p in params]).sample((3,)))


@pytest.mark.parametrize("make,mean,var", [
    (lambda D: D.Gamma(hookgrad.tensor([0.3, 2.0, 9.0]), hookgrad.tensor([1.0, 0.5, 3.0])),
     [0.3, 4.0, 3.0], [0.3, 8.0, 1.0]),
    (lambda D: D.Poisson(hookgrad.tensor([0.5, 4.0, 30.0, 0.0])), [0.5, 4.0, 30.0, 0.0], [0.5, 4.0, 30.0, 0.0]),
    (lambda D: D.Binomial(hookgrad.tensor([10.0, 200.0, 50.0]), hookgrad.tensor([0.3, 0.4, 0.97])),
     [3.0, 80.0, 48.5], [2.1, 48.0, 1.455]),
    (lambda D: D.Beta(hookgrad.tensor([0.5, 2.0]), hookgrad.tensor([0.5, 5.0])), [0.5, 2 / 7], [0.125, 10 / 392]),
    (lambda D: D.Chi2(hookgrad.tensor([3.0])), [3.0], [6.0]),
    (lambda D: D.Dirichlet(hookgrad.tensor([1.0, 2.0, 3.0])), [1 / 6, 2 / 6, 3 / 6],
     [5 / 252, 8 / 252, 9 / 252]),
])
def test_own_samplers_moments(make, mean, var):
    """Gamma, Poisson and Binomial (and those built on Gamma) sample with hookgrad's own algorithms: their
    moments over 20000 draws, within 5 standard errors, and the same draws for the same seed."""
    hookgrad.manual_seed(0)
    d = make(hookgrad.distributions)
    x = d.sample((20000,)).double().numpy()
    hookgrad.manual_seed(0)
    np.testing.assert_array_equal(make(hookgrad.distributions).sample((20000,)).double().numpy(), x)
    assert np.all(np.isfinite(x))
    n = x.shape[0]
    mean, var = np.array(mean), np.array(var)
    assert np.all(np.abs(x.mean(0) - mean) <= 5 * np.sqrt(var / n) + 1e-12), (x.mean(0), mean)
    assert np.all(np.abs(x.var(0) - var) <= 0.06 * var + 1e-12), (x.var(0), var)


def test_gamma_rsample_gradient_is_torchs_implicit_gradient():
    """d sample / d concentration: hookgrad's exact implicit gradient vs torch's _standard_gamma_grad
    (a fitted approximation, to ~1e-4) at hookgrad's own samples."""
    hookgrad.manual_seed(0)
    a = hookgrad.tensor([0.2, 0.9, 2.5, 7.0, 40.0], dtype=hookgrad.float64, requires_grad=True)
    rate = hookgrad.tensor(2.0, dtype=hookgrad.float64, requires_grad=True)
    x = hookgrad.distributions.Gamma(a, rate).rsample((3,))
    ga, gr = hookgrad.autograd.grad(x.sum(), [a, rate])
    xs = x.detach().numpy() * 2.0
    want = torch._standard_gamma_grad(torch.tensor(np.broadcast_to(a.detach().numpy(), xs.shape).copy()),
                                      torch.tensor(xs)).numpy() / 2.0
    np.testing.assert_allclose(ga.numpy(), want.sum(0), rtol=1e-3)
    np.testing.assert_allclose(gr.numpy(), -(x.detach().numpy() / 2.0).sum(), rtol=1e-12)
    assert x.grad_fn.name() == "DivBackward0"


def test_dirichlet_and_beta_rsample_are_differentiable():
    hookgrad.manual_seed(0)
    c = hookgrad.tensor([1.0, 2.0, 3.0], requires_grad=True)
    x = hookgrad.distributions.Dirichlet(c).rsample((4,))
    assert torch.allclose(torch.tensor(x.sum(-1).detach().numpy()), torch.ones(4))
    (g,) = hookgrad.autograd.grad((x[:, 0]).sum(), [c])
    assert g[0] > 0 and g[1] < 0 and g[2] < 0
    b = hookgrad.distributions.Beta(c[:1], c[1:2]).rsample((5,))
    assert b.shape == (5, 1) and b.requires_grad


# ---- transforms
TRANSFORMS = {
    "exp": lambda T: T.ExpTransform(),
    "affine": lambda T: T.AffineTransform(0.5, -2.0),
    "sigmoid": lambda T: T.SigmoidTransform(),
    "tanh": lambda T: T.TanhTransform(),
    "power": lambda T: T.PowerTransform(2.5),
    "compose": lambda T: T.ComposeTransform([T.AffineTransform(0.1, 3.0), T.SigmoidTransform()]),
    "stick": lambda T: T.StickBreakingTransform(),
    "softmax": lambda T: T.SoftmaxTransform(),
    "exp_inv": lambda T: T.ExpTransform().inv,
}


@pytest.mark.parametrize("name", sorted(TRANSFORMS))
def test_transforms(name):
    def fn(t, D):
        tr = TRANSFORMS[name](D.transforms)
        x = t.tensor([[0.3, 1.2, 0.9], [-0.4, 0.1, 0.2]], dtype=t.float64, requires_grad=True)
        if name == "exp_inv":
            x = x.exp()
        y = tr(x)
        out = [y, tr.inv(y), repr(tr), repr(tr.domain), repr(tr.codomain), tr.bijective]
        if name != "softmax":
            out.append(tr.log_abs_det_jacobian(x, y))
            out.append(tr.forward_shape((2, 3)))
            out.append(tr.inverse_shape((2, 3)) if name != "stick" else tr.inverse_shape((2, 4)))
        out.append(t.autograd.grad(sum(o.sum() for o in out if isinstance(o, t.Tensor)), x)[0])
        return out
    _same(fn)


def test_transformed_distribution():
    def fn(t, D):
        T = D.transforms
        loc = t.tensor([0.2, -0.5], dtype=t.float64, requires_grad=True)
        d = D.TransformedDistribution(D.Normal(loc, t.tensor([1.0, 2.0], dtype=t.float64)),
                                      [T.AffineTransform(1.0, 2.0), T.SigmoidTransform()])
        v = t.tensor([0.3, 0.8], dtype=t.float64)
        s = D.TransformedDistribution(D.Normal(t.zeros(3, dtype=t.float64), 1.0), T.StickBreakingTransform())
        r = d.rsample((3,))
        return [d.log_prob(v), d.cdf(v), d.icdf(v), d.batch_shape, d.event_shape, s.event_shape,
                s.log_prob(t.tensor([0.2, 0.3, 0.1, 0.4], dtype=t.float64)), r, repr(d.support),
                t.autograd.grad(d.log_prob(v).sum() + r.sum(), loc)[0]]
    _same(fn)


# ---- kl_divergence
def _d(t, D, name, shift):
    make, params, value = FAMILIES[name]
    return make(D, *[t.tensor(np.array(p) * shift, dtype=t.float64, requires_grad=True) for p in params])


KL_PAIRS = [("Normal", "Normal"), ("Exponential", "Exponential"), ("Laplace", "Laplace"), ("Gamma", "Gamma"),
            ("Beta", "Beta"), ("Dirichlet", "Dirichlet"), ("Poisson", "Poisson"), ("Gumbel", "Gumbel"),
            ("Geometric", "Geometric"), ("HalfNormal", "HalfNormal"), ("Cauchy", "Cauchy"),
            ("OneHotCategorical", "OneHotCategorical"), ("Independent", "Independent"), ("MVN_tril", "MVN_cov"),
            ("LogNormal", "LogNormal"), ("Binomial", "Binomial"), ("Exponential", "Gamma"), ("Gamma", "Normal"),
            ("Normal", "Laplace"), ("Laplace", "Normal"), ("Beta", "Normal"), ("Uniform", "Normal"),
            ("Normal", "Gumbel"), ("Gumbel", "Normal"), ("Exponential", "Gumbel"), ("Gamma", "Gumbel"),
            ("Beta", "Gamma"), ("Beta", "Exponential"), ("Exponential", "Normal"), ("Gamma", "Exponential"),
            ("Normal", "Gamma"), ("Uniform", "Gamma"), ("Uniform", "Exponential"), ("Uniform", "Gumbel"),
            ("Bernoulli", "Poisson"), ("Poisson", "Bernoulli"), ("Chi2", "Chi2"), ("Bernoulli", "Bernoulli"),
            ("Normal", "Cauchy"), ("StudentT", "Normal")]


@pytest.mark.parametrize("p,q", KL_PAIRS)
def test_kl_divergence(p, q):
    def fn(t, D):
        dp, dq = _d(t, D, p, 1.0), _d(t, D, q, 1.3 if q != "Bernoulli" else 0.9)
        kl = D.kl_divergence(dp, dq)
        leaves = [v for v in list(vars(dp).values()) + list(vars(dq).values())
                  if isinstance(v, t.Tensor) and v.requires_grad and v.grad_fn is None]
        return [kl] + list(t.autograd.grad(kl.sum(), leaves, allow_unused=True)) if leaves else [kl]
    _same(fn)


# ---- errors (torch's type and message)
ERRORS = {
    "normal_bad_scale": lambda t, D: D.Normal(t.zeros(2), t.tensor([1.0, -1.0])),
    "gamma_bad": lambda t, D: D.Gamma(t.tensor([-1.0]), t.tensor([1.0])),
    "gamma_bad_value": lambda t, D: D.Gamma(t.tensor([1.0]), t.tensor([1.0])).log_prob(t.tensor([-1.0])),
    "beta_bad": lambda t, D: D.Beta(t.tensor([0.0]), t.tensor([1.0])),
    "dirichlet_0d": lambda t, D: D.Dirichlet(t.tensor(1.0)),
    "poisson_bad_value": lambda t, D: D.Poisson(t.tensor([1.0])).log_prob(t.tensor([0.5])),
    "binomial_no_args": lambda t, D: D.Binomial(3),
    "binomial_bad_count": lambda t, D: D.Binomial(t.tensor([-1.0]), t.tensor([0.5])),
    "mvn_two": lambda t, D: D.MultivariateNormal(t.zeros(2), covariance_matrix=t.eye(2), scale_tril=t.eye(2)),
    "mvn_0d_loc": lambda t, D: D.MultivariateNormal(t.tensor(0.0), t.eye(2)),
    "mvn_not_pd": lambda t, D: D.MultivariateNormal(t.zeros(2), t.tensor([[1.0, 2.0], [2.0, 1.0]])),
    "laplace_bad_value": lambda t, D: D.Laplace(0.0, 1.0).log_prob(t.tensor(float("nan"))),
    "independent_too_many": lambda t, D: D.Independent(D.Normal(t.zeros(2), 1.0), 2),
    "td_bad": lambda t, D: D.TransformedDistribution(D.Normal(0.0, 1.0), "exp"),
    "kl_missing": lambda t, D: D.kl_divergence(D.Beta(t.ones(1), t.ones(1)), D.Laplace(t.zeros(1), t.ones(1))),
    "kl_cross_family": lambda t, D: D.kl_divergence(D.Exponential(t.ones(1)), D.Poisson(t.ones(1))),
    "onehot_bad_value": lambda t, D: D.OneHotCategorical(t.ones(3) / 3).log_prob(t.tensor([1.0, 1.0, 0.0])),
    "exponential_bad_value": lambda t, D: D.Exponential(t.ones(1)).log_prob(t.tensor([-2.0])),
    "geometric_zero": lambda t, D: D.Geometric(t.tensor([0.0])),
    "studentT_bad": lambda t, D: D.StudentT(t.tensor([-1.0])),
    "transform_cache": lambda t, D: D.transforms.ExpTransform(cache_size=2),
}


@pytest.mark.parametrize("name", sorted(ERRORS))
def test_errors(name):
    _same(ERRORS[name])


def test_names_and_namespace():
    for n in ("Beta", "Binomial", "Chi2", "Dirichlet", "Exponential", "Gamma", "Geometric", "Gumbel", "HalfNormal",
              "Independent", "Laplace", "LogNormal", "MultivariateNormal", "OneHotCategorical", "Poisson",
              "RelaxedBernoulli", "RelaxedOneHotCategorical", "StudentT", "TransformedDistribution", "Cauchy"):
        assert getattr(hookgrad.distributions, n).__name__ == getattr(torch.distributions, n).__name__
    assert hookgrad.distributions.transforms.identity_transform(hookgrad.ones(1)).item() == 1.0
