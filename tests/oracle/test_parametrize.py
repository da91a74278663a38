"""nn.utils against torch: parametrize (custom parametrizations, caching, removal, errors), the
parametrizations weight_norm / spectral_norm / orthogonal, the legacy weight_norm / spectral_norm forward
pre-hooks, BatchNorm fusion, parameters_to_vector and stateless.functional_call."""
import warnings

import numpy as np
import pytest
import torch

import hookgrad
from oracle import assert_same, to_np

LIBS = (torch, hookgrad)


def _both(build):
    """build(lib) under manual_seed(0) in each library -> (torch result, hookgrad result)."""
    out = []
    for L in LIBS:
        L.manual_seed(0)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", FutureWarning)
            out.append(build(L))
    return out


def _same_state(mt, mh):
    st, sh = mt.state_dict(), mh.state_dict()
    assert list(st) == list(sh)
    for k in st:
        assert_same(sh[k], st[k], k)


def _step(L, m, x, train=True):
    """forward, a loss, backward: returns the output and the gradients of the named parameters."""
    m.train(train)
    y = m(L.tensor(x))
    (y.sin() * 1.5).sum().backward()
    return y, {n: p.grad for n, p in m.named_parameters()}


def _compare_step(mt, mh, x, train=True):
    yt, gt = _step(torch, mt, x, train)
    yh, gh = _step(hookgrad, mh, x, train)
    assert_same(yh, yt, "output")
    assert list(gt) == list(gh)
    for k in gt:
        assert_same(gh[k], gt[k], k)
    _same_state(mt, mh)


X = np.random.default_rng(1).standard_normal((4, 5))
XC = np.random.default_rng(2).standard_normal((2, 3, 6, 6))


# --------------------------------------------------------------------------- weight_norm
@pytest.mark.parametrize("dim", [0, 1, None])
def test_parametrizations_weight_norm_linear(dim):
    mt, mh = _both(lambda L: L.nn.utils.parametrizations.weight_norm(L.nn.Linear(5, 3).double(), dim=dim))
    assert type(mh).__name__ == type(mt).__name__ == "ParametrizedLinear"
    assert repr(mh) == repr(mt)
    _compare_step(mt, mh, X)
    assert mh.weight.grad_fn.name() == mt.weight.grad_fn.name()


def test_parametrizations_weight_norm_conv_and_legacy_state_dict():
    mt, mh = _both(lambda L: L.nn.utils.parametrizations.weight_norm(L.nn.Conv2d(3, 4, 3).double()))
    _compare_step(mt, mh, XC)
    # a state_dict of the legacy form (weight_g, weight_v) loads into the parametrization
    lt, lh = _both(lambda L: L.nn.utils.weight_norm(L.nn.Conv2d(3, 4, 3).double()))
    mt.load_state_dict(lt.state_dict())
    mh.load_state_dict(lh.state_dict())
    _same_state(mt, mh)
    assert_same(mh.weight, mt.weight)


def test_legacy_weight_norm_is_a_forward_pre_hook():
    mt, mh = _both(lambda L: L.nn.utils.weight_norm(L.nn.Linear(5, 3).double(), name="weight"))
    assert [type(h).__name__ for h in mh._forward_pre_hooks.values()] == \
        [type(h).__name__ for h in mt._forward_pre_hooks.values()] == ["WeightNorm"]
    assert list(dict(mh.named_parameters())) == list(dict(mt.named_parameters()))
    _compare_step(mt, mh, X)
    assert mh.weight.grad_fn.name() == mt.weight.grad_fn.name()
    for L, m in zip(LIBS, (mt, mh)):
        with pytest.raises(RuntimeError, match="Cannot register two weight_norm hooks"), warnings.catch_warnings():
            warnings.simplefilter("ignore", FutureWarning)
            L.nn.utils.weight_norm(m)
        L.nn.utils.remove_weight_norm(m)
        assert not m._forward_pre_hooks
        with pytest.raises(ValueError, match="weight_norm of 'weight' not found"):
            L.nn.utils.remove_weight_norm(m)
    _same_state(mt, mh)
    with pytest.warns(FutureWarning, match="deprecated"):
        hookgrad.nn.utils.weight_norm(hookgrad.nn.Linear(2, 2))


def test_legacy_weight_norm_hook_order_with_user_hooks():
    """The weight_norm hook is an ordinary forward pre-hook: user hooks registered before and after it run
    in registration order, and a hook registered with prepend runs first."""
    def run(L):
        events = []
        m = L.nn.Linear(2, 2)
        m.register_forward_pre_hook(lambda mod, a: events.append("before"))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", FutureWarning)
            L.nn.utils.weight_norm(m)
        orig = m._forward_pre_hooks[max(m._forward_pre_hooks)]
        m._forward_pre_hooks[max(m._forward_pre_hooks)] = lambda mod, a: (events.append("weight_norm"), orig(mod, a))[1]
        m.register_forward_pre_hook(lambda mod, a: events.append("after"))
        m.register_forward_pre_hook(lambda mod, a: events.append("first"), prepend=True)
        m(L.ones(1, 2))
        return events
    assert run(hookgrad) == run(torch) == ["first", "before", "weight_norm", "after"]


# --------------------------------------------------------------------------- spectral_norm
@pytest.mark.parametrize("make", [lambda L: L.nn.Linear(5, 3).double(),
                                  lambda L: L.nn.ConvTranspose2d(3, 4, 3).double()], ids=["linear", "convT"])
def test_parametrizations_spectral_norm(make):
    mt, mh = _both(lambda L: L.nn.utils.parametrizations.spectral_norm(make(L)))
    _same_state(mt, mh)      # the random u, v and 15 power iterations at registration
    x = X if isinstance(mt, torch.nn.Linear) else XC
    _compare_step(mt, mh, x, train=True)     # one power iteration, then the normalised weight
    _compare_step(mt, mh, x, train=False)


def test_legacy_spectral_norm():
    mt, mh = _both(lambda L: L.nn.utils.spectral_norm(L.nn.Linear(5, 3).double()))
    assert [type(h).__name__ for h in mh._forward_pre_hooks.values()] == ["SpectralNorm"]
    _same_state(mt, mh)
    assert mh.state_dict()._metadata[""]["spectral_norm"] == mt.state_dict()._metadata[""]["spectral_norm"]
    _compare_step(mt, mh, X, train=True)
    _compare_step(mt, mh, X, train=False)
    for L, m in zip(LIBS, (mt, mh)):
        L.nn.utils.remove_spectral_norm(m)
        assert not m._forward_pre_hooks and not m._state_dict_hooks
    _same_state(mt, mh)


def test_spectral_norm_errors():
    for L in LIBS:
        with pytest.raises(ValueError, match="n_power_iterations to be positive"):
            L.nn.utils.parametrizations.spectral_norm(L.nn.Linear(2, 2), n_power_iterations=0)
        with pytest.raises(IndexError, match="Dimension out of range"):
            L.nn.utils.parametrizations.spectral_norm(L.nn.Linear(2, 2), dim=2)
        with pytest.raises(ValueError, match="has no parameter or buffer with name 'w'"):
            L.nn.utils.parametrizations.spectral_norm(L.nn.Linear(2, 2), name="w")


# --------------------------------------------------------------------------- parametrize
def _symmetric(L):
    class Symmetric(L.nn.Module):
        def forward(self, X):
            return X.triu() + X.triu(1).mT

        def right_inverse(self, A):
            return A.triu()
    return Symmetric()


def _scale(L):
    class Scale(L.nn.Module):
        def forward(self, X):
            return 2 * X

        def right_inverse(self, A):
            return A / 2
    return Scale()


def _outer(L):
    class Outer(L.nn.Module):          # right_inverse returns two tensors: original0, original1
        def forward(self, x, y):
            return x.unsqueeze(-1) @ y.unsqueeze(-2)

        def right_inverse(self, Z):
            return Z[:, 0].clone(), L.ones_like(Z[0])
    return Outer()


def test_register_parametrization_chain_assign_cache_remove():
    def build(L):
        m = L.nn.Linear(4, 4).double()
        par = L.nn.utils.parametrize
        par.register_parametrization(m, "weight", _symmetric(L))
        par.register_parametrization(m, "weight", _scale(L))
        return m
    mt, mh = _both(build)
    assert repr(mh) == repr(mt)
    assert type(mh).__name__ == "ParametrizedLinear"
    _compare_step(mt, mh, X[:, :4])
    a = np.random.default_rng(5).standard_normal((4, 4))
    a = a + a.T
    for L, m in zip(LIBS, (mt, mh)):
        m.weight = L.tensor(a)                            # right_inverse in reverse order, stored in place
        assert L.nn.utils.parametrize.is_parametrized(m) and L.nn.utils.parametrize.is_parametrized(m, "weight")
        assert not L.nn.utils.parametrize.is_parametrized(m, "bias")
        assert L.nn.utils.parametrize.type_before_parametrizations(m) is L.nn.Linear
        with L.nn.utils.parametrize.cached():
            assert m.weight is m.weight
        assert m.weight is not m.weight
    _same_state(mt, mh)
    assert_same(mh.weight, mt.weight)
    for L, m in zip(LIBS, (mt, mh)):
        L.nn.utils.parametrize.remove_parametrizations(m, "weight", leave_parametrized=True)
        assert type(m) is L.nn.Linear and not hasattr(m, "parametrizations")
    _same_state(mt, mh)


def test_parametrization_with_several_originals():
    def build(L):
        m = L.nn.Linear(3, 3).double()
        L.nn.utils.parametrize.register_parametrization(m, "weight", _outer(L))
        return m
    mt, mh = _both(build)
    assert list(mh.state_dict()) == list(mt.state_dict())
    _compare_step(mt, mh, X[:, :3])
    for L, m in zip(LIBS, (mt, mh)):
        with pytest.raises(ValueError, match="Cannot leave unparametrized"):
            L.nn.utils.parametrize.remove_parametrizations(m, "weight", leave_parametrized=False)
        L.nn.utils.parametrize.remove_parametrizations(m, "weight")
    _same_state(mt, mh)


def test_parametrize_errors_leave_module_unchanged():
    for L in LIBS:
        m = L.nn.Linear(3, 2)
        before = {k: v.clone() for k, v in m.state_dict().items()}

        class Shrink(L.nn.Module):
            def forward(self, X):
                return X[:1]

        class ToDouble(L.nn.Module):
            def forward(self, X):
                return X.double()
        with pytest.raises(ValueError, match="may not change the shape"):
            L.nn.utils.parametrize.register_parametrization(m, "weight", Shrink())
        with pytest.raises(ValueError, match="may not change the dtype"):
            L.nn.utils.parametrize.register_parametrization(m, "weight", ToDouble())
        with pytest.raises(ValueError, match="does not have a parameter, a buffer, or a parametrized element"):
            L.nn.utils.parametrize.register_parametrization(m, "nope", ToDouble())
        with pytest.raises(ValueError, match="does not have a parametrization on weight"):
            L.nn.utils.parametrize.remove_parametrizations(m, "weight")
        assert type(m) is L.nn.Linear and list(m.state_dict()) == list(before)
        for k, v in m.state_dict().items():
            assert (v == before[k]).all()
        L.nn.utils.parametrize.register_parametrization(m, "weight", _scale(L))
        with pytest.raises(ValueError, match="may not change the shape"):
            L.nn.utils.parametrize.register_parametrization(m, "weight", Shrink())
        assert len(m.parametrizations.weight) == 1
        L.nn.utils.parametrize.remove_parametrizations(m, "weight", leave_parametrized=False)
        assert type(m) is L.nn.Linear
        assert (m.weight * 2 == before["weight"]).all()          # the original: right_inverse's halved weight


def test_parametrized_module_pickles_only_through_state_dict():
    import pickle
    for L in LIBS:
        m = L.nn.utils.parametrize.register_parametrization(L.nn.Linear(2, 2), "weight", _scale(L))
        with pytest.raises(RuntimeError, match="Serialization of parametrized modules is only supported"):
            pickle.dumps(m)
        import copy
        c = copy.deepcopy(m)
        assert type(c).__name__ == "ParametrizedLinear"
        assert (c.weight == m.weight).all()


# --------------------------------------------------------------------------- fusion, vectors, stateless
def test_fuse_conv_bn_and_linear_bn():
    def build(L):
        conv, bn = L.nn.Conv2d(3, 4, 3).double(), L.nn.BatchNorm2d(4).double()
        lin, bn1 = L.nn.Linear(5, 4).double(), L.nn.BatchNorm1d(4).double()
        for b in (bn, bn1):
            b.running_mean.uniform_(-1, 1)
            b.running_var.uniform_(0.5, 2)
            b.weight.data.uniform_(0.5, 2)
            b.bias.data.uniform_(-1, 1)
        for mod in (conv, bn, lin, bn1):
            mod.eval()
        fc = L.nn.utils.fuse_conv_bn_eval(conv, bn)
        fl = L.nn.utils.fuse_linear_bn_eval(lin, bn1)
        return fc, fl, bn(conv(L.tensor(XC))), fc(L.tensor(XC)), bn1(lin(L.tensor(X))), fl(L.tensor(X))
    rt, rh = _both(build)
    for a, b in zip(rt[:2], rh[:2]):
        _same_state(a, b)
    for a, b in zip(rt[2:], rh[2:]):
        assert_same(b, a)
    np.testing.assert_allclose(to_np(rh[3]), to_np(rh[2]), atol=1e-12)
    for L in LIBS:
        with pytest.raises(AssertionError, match="Fusion only for eval"):
            L.nn.utils.fuse_conv_bn_eval(L.nn.Conv2d(1, 1, 1), L.nn.BatchNorm2d(1))


def test_parameters_to_vector_and_back():
    def build(L):
        m = L.nn.Linear(3, 2).double()
        v = L.nn.utils.parameters_to_vector(m.parameters())
        (v * v).sum().backward()
        L.nn.utils.vector_to_parameters(v.detach() * 2, m.parameters())
        return v, m.weight.grad, m.bias.grad, m.weight, m.bias
    rt, rh = _both(build)
    for a, b in zip(rt, rh):
        assert_same(b, a)
    for L in LIBS:
        with pytest.raises(TypeError, match="expected torch.Tensor"):
            L.nn.utils.vector_to_parameters([1.0], [])


def test_stateless_functional_call():
    def build(L):
        m = L.nn.Linear(3, 2).double()
        w = L.ones(2, 3, dtype=L.float64, requires_grad=True)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", FutureWarning)
            y = L.nn.utils.stateless.functional_call(m, {"weight": w}, (L.tensor(X[:, :3]),))
        y.sum().backward()
        return y, w.grad, m.weight, m.weight.grad
    rt, rh = _both(build)
    for a, b in zip(rt, rh):
        assert_same(b, a)
    for L in LIBS:
        with pytest.raises(RuntimeError, match="Missing key"), warnings.catch_warnings():
            warnings.simplefilter("ignore", FutureWarning)
            L.nn.utils.stateless.functional_call(L.nn.Linear(1, 1), {"weight": L.ones(1, 1)}, L.ones(1, 1),
                                                 strict=True)


def test_skip_init_draws_nothing():
    for L in LIBS:
        L.manual_seed(3)
        m = L.nn.utils.skip_init(L.nn.Linear, 4, 2)
        assert m.weight.shape == (2, 4)
        a = L.rand(1).item()
        L.manual_seed(3)
        assert L.rand(1).item() == a
        with pytest.raises(RuntimeError, match="Expected a Module"):
            L.nn.utils.skip_init(int)


# --------------------------------------------------------------------------- orthogonal
@pytest.mark.parametrize("shape,omap", [((4, 4), None), ((4, 4), "cayley"), ((5, 3), None), ((3, 5), "matrix_exp"),
                                        ((5, 3), "householder")])
def test_orthogonal(shape, omap):
    def build(L):
        m = L.nn.Linear(shape[1], shape[0]).double()
        return L.nn.utils.parametrizations.orthogonal(m, orthogonal_map=omap)
    mt, mh = _both(build)
    w = mh.weight.detach().numpy()
    small = min(shape)
    np.testing.assert_allclose((w.T @ w if shape[0] >= shape[1] else w @ w.T), np.eye(small), atol=1e-10)
    _same_state(mt, mh)
    _compare_step(mt, mh, np.random.default_rng(4).standard_normal((2, shape[1])))


def test_orthogonal_errors():
    for L in LIBS:
        with pytest.raises(ValueError, match="Expected a matrix or batch of matrices"):
            L.nn.utils.parametrizations.orthogonal(L.nn.Linear(3, 3), name="bias")
        with pytest.raises(ValueError, match="orthogonal_map has to be one of"):
            L.nn.utils.parametrizations.orthogonal(L.nn.Linear(3, 3), orthogonal_map="qr")
        m = L.nn.utils.parametrizations.orthogonal(L.nn.Linear(3, 3), use_trivialization=False)
        with pytest.raises(NotImplementedError, match="not possible to assign to the matrix exponential"):
            m.weight = L.eye(3)
