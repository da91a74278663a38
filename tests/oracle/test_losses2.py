"""The remaining losses of torch.nn (Gaussian/Poisson NLL, margin ranking, hinge embedding, multi-margin,
multilabel margin and soft margin, soft margin, triplet, cosine embedding, NLL with class weights),
AdaptiveLogSoftmaxWithLoss, and the last activations and alpha dropouts: values, gradients, second order,
grad_fn names, errors and manual_seed draws against torch."""
import warnings

import numpy as np
import pytest
import torch

import hookgrad
from oracle import assert_same, check

rng = np.random.default_rng(0)
X, Y, Z = rng.standard_normal((3, 3, 4))
V = np.abs(rng.standard_normal((3, 4))) + 0.1
T = np.array([1, 0, 3])
ML = np.array([[3, 0, -1, 1], [0, 1, 2, 3], [-1, 0, 0, 0]])
S = np.array([1.0, -1.0, 1.0])
REDS = ["mean", "sum", "none"]

F = lambda L: L.nn.functional  # noqa: E731

# (name, fn(L, *tensors), arrays, second order)
CASES = [
    ("gaussian", lambda L, a, b, v, r: F(L).gaussian_nll_loss(a, b, v, reduction=r), (X, Y, V), True),
    ("gaussian_homo_full", lambda L, a, b, v, r: F(L).gaussian_nll_loss(a, b, v[:, 0], full=True, eps=0.3,
                                                                     reduction=r), (X, Y, V), True),
    ("gaussian_bcast", lambda L, a, b, v, r: F(L).gaussian_nll_loss(a, b, v[:1], reduction=r), (X, Y, V), True),
    ("poisson", lambda L, a, b, r: F(L).poisson_nll_loss(a, b, reduction=r), (X, Y), True),
    ("poisson_full", lambda L, a, b, r: F(L).poisson_nll_loss(a.abs(), b.abs() * 3, log_input=False, full=True,
                                                              eps=0.01, reduction=r), (X, Y), True),
    ("margin_ranking", lambda L, a, b, r: F(L).margin_ranking_loss(a, b, L.tensor(np.sign(Z)), 0.3, reduction=r),
     (X, Y), True),
    ("hinge", lambda L, a, r: F(L).hinge_embedding_loss(a, L.tensor(np.sign(Y)), 0.5, reduction=r), (X,), True),
    ("soft_margin", lambda L, a, r: F(L).soft_margin_loss(a, L.tensor(np.sign(Y)), reduction=r), (X,), True),
    ("multilabel_soft", lambda L, a, r: F(L).multilabel_soft_margin_loss(a, L.tensor((Y > 0) * 1.0),
                                                                        weight=L.tensor(V[0]), reduction=r), (X,), True),
    ("multi_margin_p1", lambda L, a, r: F(L).multi_margin_loss(a, L.tensor(T), margin=0.7, reduction=r), (X,), False),
    ("multi_margin_p2_w", lambda L, a, r: F(L).multi_margin_loss(a, L.tensor(T), p=2, weight=L.tensor(V[0]),
                                                                 reduction=r), (X,), False),
    ("multi_margin_1d", lambda L, a, r: F(L).multi_margin_loss(a[0], L.tensor(2), reduction=r), (X,), False),
    ("multilabel_margin", lambda L, a, r: F(L).multilabel_margin_loss(a, L.tensor(ML), reduction=r), (X,), False),
    ("multilabel_margin_1d", lambda L, a, r: F(L).multilabel_margin_loss(a[1], L.tensor(ML[0]), reduction=r),
     (X,), False),
    ("triplet", lambda L, a, b, c, r: F(L).triplet_margin_loss(a, b, c, p=1.5, reduction=r), (X, Y, Z), True),
    ("triplet_swap", lambda L, a, b, c, r: F(L).triplet_margin_loss(a, b, c, margin=2.0, swap=True, reduction=r),
     (X, Y, Z), True),
    ("triplet_distance", lambda L, a, b, c, r: F(L).triplet_margin_with_distance_loss(
        a, b, c, distance_function=lambda u, w: 1 - F(L).cosine_similarity(u, w), swap=True, reduction=r),
     (X, Y, Z), True),
    ("cosine_embedding", lambda L, a, b, r: F(L).cosine_embedding_loss(a, b, L.tensor(S), 0.2, reduction=r),
     (X, Y), True),
    ("cosine_embedding_0d", lambda L, a, b, r: F(L).cosine_embedding_loss(a[0], b[0], L.tensor(-1.0), -0.5,
                                                                          reduction=r), (X, Y), True),
    ("nll_weight", lambda L, a, r: F(L).nll_loss(a.log_softmax(1), L.tensor(T), weight=L.tensor(V[0]),
                                                 ignore_index=0, reduction=r), (X,), True),
    ("cross_entropy_weight_smooth", lambda L, a, r: F(L).cross_entropy(a, L.tensor(T), weight=L.tensor(V[0]),
                                                                      label_smoothing=0.2, reduction=r), (X,), True),
    ("cross_entropy_kd", lambda L, a, r: F(L).cross_entropy(a.reshape(1, 3, 2, 2), L.tensor(T.reshape(1, 1, 3)[..., :2]
                                                            .repeat(2, 1)), weight=L.tensor(V[0, :3]), reduction=r),
     (X,), True),
]


@pytest.mark.parametrize("red", REDS)
@pytest.mark.parametrize("name,fn,arrays,second", CASES, ids=[c[0] for c in CASES])
def test_loss_matches_torch(name, fn, arrays, second, red):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        t, h = check(lambda L, *a: fn(L, *a, red), *arrays, second=second)
    assert t[0].grad_fn.name() == h[0].grad_fn.name()


def _raises(fn):
    out = []
    for L in (torch, hookgrad):
        try:
            fn(L)
            out.append(None)
        except Exception as e:      # noqa: BLE001 - the exception type and text are what is compared
            out.append((type(e).__name__, str(e).split(" (hookgrad")[0]))
    return out


BAD = [
    lambda L: F(L).gaussian_nll_loss(L.tensor(X), L.tensor(Y), L.ones(4)),
    lambda L: F(L).gaussian_nll_loss(L.tensor(X), L.tensor(Y), -L.ones(3, 4)),
    lambda L: F(L).gaussian_nll_loss(L.tensor(X), L.tensor(Y), -1.0),
    lambda L: F(L).gaussian_nll_loss(L.tensor(X), L.tensor(Y), 1.0, reduction="bad"),
    lambda L: F(L).poisson_nll_loss(L.tensor(X), L.tensor(Y), reduction="bad"),
    lambda L: F(L).margin_ranking_loss(L.tensor(X), L.tensor(Y), L.ones(4)),
    lambda L: F(L).soft_margin_loss(L.tensor(X), L.tensor(Y, requires_grad=True)),
    lambda L: F(L).soft_margin_loss(L.tensor(X), L.ones(2, 3, 4, dtype=L.float64)),
    lambda L: F(L).multi_margin_loss(L.tensor(X), L.tensor(T), p=3),
    lambda L: F(L).multi_margin_loss(L.tensor(X), L.tensor([1, 2])),
    lambda L: F(L).multi_margin_loss(L.tensor(X), L.tensor([1, 2, 4])),
    lambda L: F(L).multi_margin_loss(L.tensor(X), L.tensor(T), weight=L.ones(3, dtype=L.float64)),
    lambda L: F(L).multi_margin_loss(L.tensor(X), L.tensor(T), weight=L.ones(4)),
    lambda L: F(L).multi_margin_loss(L.tensor(X), L.tensor(T), weight=L.ones(4, dtype=L.float64, requires_grad=True)),
    lambda L: F(L).multi_margin_loss(L.tensor(X), L.tensor(T).int()),
    lambda L: F(L).multi_margin_loss(L.tensor(X)[None], L.tensor(T)),
    lambda L: F(L).multilabel_margin_loss(L.tensor(X), L.tensor(T)),
    lambda L: F(L).multilabel_margin_loss(L.tensor(X), L.tensor([[1, 2, 3, 5]] * 3)),
    lambda L: F(L).triplet_margin_loss(L.tensor(X), L.tensor(Y), L.tensor(Z[0])),
    lambda L: F(L).triplet_margin_loss(L.tensor(X), L.tensor(Y), L.tensor(Z), margin=0),
    lambda L: F(L).triplet_margin_with_distance_loss(L.tensor(X), L.tensor(Y), L.tensor(Z), reduction="bad"),
    lambda L: F(L).cosine_embedding_loss(L.tensor(X), L.tensor(Y), L.ones(3, 1)),
    lambda L: F(L).cosine_embedding_loss(L.tensor(X), L.tensor(Y), L.tensor(1.0)),
    lambda L: F(L).nll_loss(L.tensor(X), L.tensor(T), weight=L.ones(4, dtype=L.float64, requires_grad=True)),
    lambda L: F(L).cross_entropy(L.tensor(X), L.tensor(T), weight=L.ones(4, dtype=L.float64, requires_grad=True)),
    lambda L: L.nn.MultiMarginLoss(weight=L.ones(2, 2)),
    lambda L: L.nn.TripletMarginLoss(margin=-1.0),
    lambda L: L.nn.TripletMarginWithDistanceLoss(margin=0.0),
]


@pytest.mark.parametrize("k", range(len(BAD)))
def test_bad_input_raises_as_torch(k):
    t, h = _raises(BAD[k])
    assert t is not None and h == t


def test_margin_kernels_have_no_double_backward():
    for fn, op in ((lambda L, x: F(L).multi_margin_loss(x, L.tensor(T)), "multi_margin_loss_backward"),
                   (lambda L, x: F(L).multilabel_margin_loss(x, L.tensor(ML)), "multilabel_margin_loss_backward")):
        res = []
        for L in (torch, hookgrad):
            x = L.tensor(X, requires_grad=True)
            (g,) = L.autograd.grad(fn(L, x), x, create_graph=True)
            with pytest.raises(RuntimeError, match=f"derivative for aten::{op} is not implemented"):
                g.sum().backward()
            res.append(g.grad_fn.name())
        assert res[0] == res[1]


def test_nll_weight_without_grad_mode_is_fine():
    for L in (torch, hookgrad):
        with L.no_grad():
            F(L).nll_loss(L.tensor(X), L.tensor(T), weight=L.ones(4, dtype=L.float64, requires_grad=True))


MODULES = ["GaussianNLLLoss(full=True, eps=1e-3)", "PoissonNLLLoss(log_input=False, full=True)",
           "MarginRankingLoss(0.5)", "HingeEmbeddingLoss(2.0)", "MultiMarginLoss(2, 0.5, weight=L.ones(4))",
           "MultiLabelMarginLoss()", "MultiLabelSoftMarginLoss(weight=L.ones(4))", "SoftMarginLoss(reduction='sum')",
           "TripletMarginLoss(swap=True)", "TripletMarginWithDistanceLoss(margin=0.5)", "CTCLoss(blank=2)",
           "NLLLoss2d()", "CosineEmbeddingLoss(0.1)"]


@pytest.mark.parametrize("expr", MODULES)
def test_loss_module_state(expr):
    got = []
    for L in (torch, hookgrad):
        m = eval("L.nn." + expr, {"L": L})
        got.append((repr(m), list(m.state_dict()), [n for n, _ in m.named_children()],
                    {k: getattr(m, k) for k in ("reduction", "margin", "p", "eps", "full", "log_input", "swap", "blank",
                                               "zero_infinity") if hasattr(m, k)}))
    assert got[0] == got[1]


def test_loss_modules_compute_as_functional():
    for L in (torch, hookgrad):
        x, y = L.tensor(X), L.tensor(Y)
        assert float(L.nn.MultiMarginLoss(2, 0.5)(x, L.tensor(T))) == \
            float(F(L).multi_margin_loss(x, L.tensor(T), 2, 0.5))
    check(lambda L, a, b, c: L.nn.TripletMarginWithDistanceLoss(swap=True)(a, b, c), X, Y, Z)
    check(lambda L, a, b, v: L.nn.GaussianNLLLoss(full=True)(a, b, v), X, Y, V)
    check(lambda L, a, b: L.nn.PoissonNLLLoss()(a, b), X, Y)


def test_top_level_loss_names():
    check(lambda L, a, b: (L.margin_ranking_loss(a, b, L.tensor(np.sign(Z)), 0.1, 1),
                           L.hinge_embedding_loss(a, L.tensor(np.sign(Y)), 1.0, 2),
                           L.poisson_nll_loss(a, b, True, False, 1e-8, 0),
                           L.triplet_margin_loss(a, b, a * 2, 1.0, 2.0, 1e-6, False, 1)), X, Y)


# ------------------------------------------------------------------------------ AdaptiveLogSoftmaxWithLoss
def _asm(L, batched=True):
    L.manual_seed(0)
    m = L.nn.AdaptiveLogSoftmaxWithLoss(8, 10, [3, 6], div_value=2.0, head_bias=True).double()
    x = L.tensor(np.random.default_rng(1).standard_normal((6, 8)), requires_grad=True)
    t = L.tensor([0, 3, 7, 9, 2, 5])
    out = m(x, t) if batched else m(x[0], t[1])
    out.loss.backward()
    return m, x, out


@pytest.mark.parametrize("batched", [True, False])
def test_adaptive_log_softmax(batched):
    (mt, xt, ot), (mh, xh, oh) = _asm(torch, batched), _asm(hookgrad, batched)
    tol = (1e-6, 1e-6)      # initialised in float32, compared in float64
    assert type(oh).__name__ == "_ASMoutput" and oh._fields == ot._fields
    for a, b in zip(ot, oh):
        assert_same(a, b, tol=tol)
    assert_same(xt.grad, xh.grad, tol=tol)
    assert list(mt.state_dict()) == list(mh.state_dict()) and repr(mt) == repr(mh)
    for (n, p), (_, q) in zip(mt.named_parameters(), mh.named_parameters()):
        assert_same(p.grad, q.grad, tol=tol)
    assert_same(mt.log_prob(xt), mh.log_prob(xh), tol=tol)
    assert_same(mt.predict(xt), mh.predict(xh))


def test_adaptive_log_softmax_errors():
    for args in (dict(cutoffs=[]), dict(cutoffs=[5, 3]), dict(cutoffs=[3, 10])):
        t, h = _raises(lambda L: L.nn.AdaptiveLogSoftmaxWithLoss(8, 10, **args))
        assert t is not None and t == h
    t, h = _raises(lambda L: L.nn.AdaptiveLogSoftmaxWithLoss(8, 10, [3])(L.zeros(2, 8), L.tensor([1, 12])))
    assert t is not None and t == h


# ---------------------------------------------------------------------------------------- activations
RANDOM = [lambda L, x: F(L).rrelu(x, training=True), lambda L, x: L.nn.RReLU(0.1, 0.4)(x),
          lambda L, x: F(L).feature_alpha_dropout(x, 0.4, True), lambda L, x: L.nn.FeatureAlphaDropout(0.3)(x),
          lambda L, x: L.feature_alpha_dropout(x, 0.5, True), lambda L, x: F(L).alpha_dropout(x, 0.4, True),
          lambda L, x: F(L).feature_alpha_dropout(x * 1.0, 0.5, True, inplace=True)]


@pytest.mark.parametrize("k", range(len(RANDOM)))
def test_random_activation_draws_as_torch(k):
    x4 = np.random.default_rng(2).standard_normal((2, 3, 4, 5))

    def fn(L, x):
        L.manual_seed(3)
        return RANDOM[k](L, x)
    check(fn, x4, second=True)


@pytest.mark.parametrize("name,args", [("celu_", (0.5,)), ("elu_", (0.7,)), ("hardtanh_", (-0.5, 0.4)),
                                       ("leaky_relu_", (0.2,)), ("selu_", ()), ("threshold_", (0.1, -3.0))])
def test_inplace_functional_activations(name, args):
    def fn(L, x):
        y = x * 1.0
        assert getattr(F(L), name)(y, *args) is y
        return y, y.grad_fn.name()
    check(fn, X, second=True)


def test_shrink_and_softmax2d():
    check(lambda L, x: (F(L).hardshrink(x, 0.3), F(L).softshrink(x, 0.3), L.nn.Softmax2d()(x.reshape(1, 3, 2, 2))),
          X, second=True)


def test_feature_alpha_dropout_errors():
    t, h = _raises(lambda L: F(L).feature_alpha_dropout(L.ones(3), 0.5, True))
    assert t is not None and t == h
    t, h = _raises(lambda L: L.nn.FeatureAlphaDropout(1.5))
    assert t is not None and t == h
