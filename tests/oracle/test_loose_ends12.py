"""Issue 12, loose ends: in-place ops that record their extra tensor argument, grad_fn names of shape ops on 0-d
tensors and no-op views, double-backward node names of the view and reduce ops, and the last nn names
(LinearCrossEntropyLoss/Options, conv_tbc, embedding_renorm_, UninitializedParameter/Buffer)."""
import numpy as np
import pytest
import torch

import hookgrad
from oracle import check

f64 = np.float64
LIBS = (torch, hookgrad)


def r(*shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape).astype(f64)


# ---------------------------------------------------------------- 1. in-place ops record a source that requires grad
IDX = [0, 2]
INPLACE = {
    "index_copy_": lambda L, x, s: x.index_copy_(0, L.tensor(IDX), s),
    "index_add_": lambda L, x, s: x.index_add_(0, L.tensor(IDX), s, alpha=2.0),
    "index_fill_": lambda L, x, s: x.index_fill_(0, L.tensor(IDX), s[0, 0]),
    "masked_scatter_": lambda L, x, s: x.masked_scatter_(x > 0, s.reshape(-1).repeat(2)),
    "masked_fill_": lambda L, x, s: x.masked_fill_(x > 0, s[0, 1]),
    "scatter_": lambda L, x, s: x.scatter_(0, L.tensor([[0, 1, 2], [3, 0, 1]]), s),
    "scatter_add_": lambda L, x, s: x.scatter_add_(0, L.tensor([[0, 1, 2], [3, 0, 1]]), s),
    "scatter_reduce_": lambda L, x, s: x.scatter_reduce_(0, L.tensor([[0, 1, 2], [3, 0, 1]]), s, "sum"),
    "put_": lambda L, x, s: x.put_(L.tensor([0, 5]), s[0, :2]),
    "addcmul_": lambda L, x, s: x.addcmul_(s[0], s[1], value=0.5),
    "lerp_": lambda L, x, s: x.lerp_(s[0], 0.25),
    "clamp_min_tensor": lambda L, x, s: x.clamp_(min=s[0]),
    "div_trunc": lambda L, x, s: x.add_(5.0).div_(s[0] + 3.0, rounding_mode="trunc"),
    "hypot_": lambda L, x, s: x.hypot_(s[1]),
    "index_copy_on_view": lambda L, x, s: (x[:, :].index_copy_(0, L.tensor(IDX), s), x)[1],
}


@pytest.mark.parametrize("name", sorted(INPLACE))
def test_inplace_records_source(name):
    """self does not require grad, the source does: the write records the op, the source gets its gradient."""
    def fn(L, s):
        x = L.tensor(r(4, 3, seed=1))
        out = INPLACE[name](L, x, s)
        return out, out.grad_fn.name() if out.grad_fn is not None else None
    t, h = (fn(L, L.tensor(r(2, 3), requires_grad=True)) for L in LIBS)
    assert h[1] == t[1]
    check(lambda L, s: fn(L, s)[0], r(2, 3))


def test_inplace_source_overlap_checks_as_torch():
    """PyTorch checks the source against self for partial overlap in index_copy_ (an error), not in
    masked_scatter_ / index_fill_ / masked_fill_ (a 0-d value inside self)."""
    def outcome(L, f):
        x = L.arange(12.).reshape(4, 3)
        try:
            f(L, x)
            return x.tolist()
        except RuntimeError as e:
            return type(e).__name__
    for f in (lambda L, x: x.index_copy_(0, L.tensor(IDX), x[1:3]),
              lambda L, x: x.index_add_(0, L.tensor(IDX), x[1:3]),
              lambda L, x: x.index_fill_(0, L.tensor(IDX), x[1, 1]),
              lambda L, x: x.masked_fill_(x > 5, x[0, 1]),
              lambda L, x: x.masked_scatter_(x > 5, x[0:2])):
        assert outcome(hookgrad, f) == outcome(torch, f)


# ---------------------------------------------------------------- 2. shape ops on 0-d tensors and no-op views
SHAPE = {
    "0d.squeeze()": lambda x: x[0, 0].squeeze(), "0d.squeeze(0)": lambda x: x[0, 0].squeeze(0),
    "0d.squeeze(-1)": lambda x: x[0, 0].squeeze(-1), "0d.squeeze(())": lambda x: x[0, 0].squeeze(()),
    "0d.unsqueeze(0)": lambda x: x[0, 0].unsqueeze(0), "0d.view(())": lambda x: x[0, 0].view(()),
    "0d.flatten()": lambda x: x[0, 0].flatten(), "0d.movedim(0,0)": lambda x: x[0, 0].movedim(0, 0),
    "0d.movedim(-1,0)": lambda x: x[0, 0].movedim(-1, 0), "0d.t()": lambda x: x[0, 0].t(),
    "0d.expand(())": lambda x: x[0, 0].expand(()), "0d.permute(())": lambda x: x[0, 0].permute(()),
    "view same": lambda x: x.view(2, 3), "reshape same": lambda x: x.reshape(2, 3),
    "permute identity": lambda x: x.permute(0, 1), "expand same": lambda x: x.expand(2, 3),
    "squeeze non-1": lambda x: x.squeeze(0), "transpose(1,1)": lambda x: x.transpose(1, 1),
    "flatten 1-D": lambda x: x[0].flatten(), "narrow full": lambda x: x.narrow(1, 0, 3),
    "narrow 1-D full": lambda x: x[0].narrow(0, 0, 3), "movedim(0,0)": lambda x: x.movedim(0, 0),
}


@pytest.mark.parametrize("name", sorted(SHAPE))
def test_shape_op_grad_fn_names(name):
    def fn(L, x):
        return SHAPE[name](x)
    t, h = (fn(L, L.tensor(r(2, 3), requires_grad=True)) for L in LIBS)
    assert h.grad_fn.name() == t.grad_fn.name()
    check(fn, r(2, 3), second=True)


BAD_0D = {
    "squeeze(1)": lambda x: x.squeeze(1), "sum(1)": lambda x: x.sum(1), "mean(1)": lambda x: x.mean(1),
    "prod(1)": lambda x: x.prod(1), "amax(1)": lambda x: x.amax(1), "var(1)": lambda x: x.var(1),
    "logsumexp(1)": lambda x: x.logsumexp(1), "flatten(1)": lambda x: x.flatten(1), "roll": lambda x: x.roll(1, 0),
    "movedim(0,1)": lambda x: x.movedim(0, 1), "movedim len": lambda x: x.unsqueeze(0).movedim((0, 1), (0,)),
    "movedim repeated": lambda x: x.unsqueeze(0).unsqueeze(0).movedim((0, -2), (1, 0)),
    "movedim tensor": lambda x: x.movedim(0, x),
}


@pytest.mark.parametrize("name", sorted(BAD_0D))
def test_bad_dims_on_0d_raise_as_torch(name):
    errs = []
    for L in LIBS:
        with pytest.raises(Exception) as e:
            BAD_0D[name](L.tensor(1.5))
        errs.append(e.value)
    assert type(errs[1]) is type(errs[0]), (errs[0], errs[1])
    if not isinstance(errs[0], TypeError):
        assert str(errs[1]) == str(errs[0])


# ---------------------------------------------------------------- 3. double-backward grad_fn names
DOUBLE = {
    "select": lambda L, x: x.select(0, 1), "x[1]": lambda L, x: x[1], "x[1, 2]": lambda L, x: x[1, 2],
    "slice": lambda L, x: x[1:3], "slice step": lambda L, x: x[::2], "narrow": lambda L, x: x.narrow(1, 0, 2),
    "x[None]": lambda L, x: x[None], "x[...]": lambda L, x: x[...], "x[[0, 2]]": lambda L, x: x[L.tensor([0, 2])],
    "mask": lambda L, x: x[x > 0], "mean": lambda L, x: x.mean(), "mean dim": lambda L, x: x.mean(1),
    "mean dims": lambda L, x: x.mean((0, 1)), "sum dim": lambda L, x: x.sum(1), "expand": lambda L, x: x[:1].expand(3, 3),
    "unsqueeze": lambda L, x: x.unsqueeze(1), "transpose": lambda L, x: x.transpose(0, 1),
    "diagonal": lambda L, x: x.diagonal(), "index_select": lambda L, x: x.index_select(0, L.tensor([0, 2])),
    "gather": lambda L, x: x.gather(1, L.tensor([[0], [1], [2], [0]])),
    "adaptive_avg_pool1d": lambda L, x: L.nn.functional.adaptive_avg_pool1d(x[None], 1),
    "adaptive_avg_pool2d": lambda L, x: L.nn.functional.adaptive_avg_pool2d(x[None], 1),
}


def _grad_chain(L, name):
    """The grad_fn names down the first gradient's graph."""
    x = L.tensor(r(4, 3), requires_grad=True)
    y = DOUBLE[name](L, x)
    g = L.ones_like(y, requires_grad=True)
    (gx,) = L.autograd.grad(y, x, g, create_graph=True)
    chain, node = [], gx.grad_fn
    while node is not None and len(chain) < 5:
        chain.append(node.name())
        node = next((n for n, _ in node.next_functions if n is not None and "AccumulateGrad" not in n.name()), None)
    return chain


@pytest.mark.parametrize("name", sorted(DOUBLE))
def test_double_backward_names(name):
    assert _grad_chain(hookgrad, name) == _grad_chain(torch, name)
    check(lambda L, x: DOUBLE[name](L, x), r(4, 3), second=True)


# ---------------------------------------------------------------- 4. the last nn names
def test_linear_cross_entropy_loss_module():
    mods = []
    for L in LIBS:
        L.manual_seed(0)
        mods.append(L.nn.LinearCrossEntropyLoss(4, 5, bias=True, label_smoothing=0.1))
    tm, hm = mods
    assert repr(hm) == repr(tm)
    assert list(hm.state_dict()) == list(tm.state_dict())
    for k, v in tm.state_dict().items():
        np.testing.assert_array_equal(hm.state_dict()[k].numpy(), v.numpy())
    hm.load_state_dict({k: hookgrad.tensor(v.double().numpy()) for k, v in tm.state_dict().items()})
    tm.double(), hm.double()
    check(lambda L, x: (tm if L is torch else hm)(x, L.tensor([0, 4, 2])), r(3, 4))
    for (a, b) in zip(tm.parameters(), hm.parameters()):
        assert b.grad is None and a.grad is None     # autograd.grad: no .grad written


@pytest.mark.parametrize("kw", [{}, {"reduction": "sum"}, {"reduction": "none", "ignore_index": 1},
                                {"label_smoothing": 0.2}, {"probs": True}, {"k_dim": True}, {"unbatched": True},
                                {"weight": True}])
def test_linear_cross_entropy_functional(kw):
    kw = dict(kw)
    probs, k_dim, unbatched = kw.pop("probs", False), kw.pop("k_dim", False), kw.pop("unbatched", False)
    w_shape = (5, 2, 4) if k_dim else (5, 4)
    x_shape = (4,) if unbatched else (3, 4)
    if probs:
        tgt = np.random.default_rng(3).dirichlet(np.ones(5), size=3)
    elif k_dim:
        tgt = np.array([[0, 4], [2, 1], [3, 3]])
    else:
        tgt = np.array(2) if unbatched else np.array([0, 4, 1])
    cw = np.linspace(0.5, 2, 5)
    weight = kw.pop("weight", False)

    def fn(L, x, w, b):
        extra = {"weight": L.tensor(cw)} if weight else {}
        return L.nn.functional.linear_cross_entropy(x, w, L.tensor(tgt), linear_bias=b, **kw, **extra)
    check(fn, r(*x_shape), r(*w_shape, seed=1), r(*w_shape[:-1], seed=2), second=True)


def test_linear_cross_entropy_options_and_errors():
    for L in LIBS:
        o = L.nn.LinearCrossEntropyOptions(batch_chunk_size=2, chunking_method=None)
        assert repr(o) == repr(torch.nn.LinearCrossEntropyOptions(batch_chunk_size=2, chunking_method=None))
        with pytest.raises(ValueError, match="invalid acc_policy"):
            L.nn.LinearCrossEntropyOptions(acc_policy="fast")
        with pytest.raises(ValueError, match="invalid chunking_method"):
            L.nn.LinearCrossEntropyOptions(chunking_method="aspect_ratio:0")
        with pytest.raises(RuntimeError, match="expected input with dimensionality 1 or 2"):
            L.nn.functional.linear_cross_entropy(L.ones(1, 2, 3), L.ones(4, 3), L.tensor([0]))
        with pytest.raises(RuntimeError, match="expected equal input and linear_weight"):
            L.nn.functional.linear_cross_entropy(L.ones(2, 3), L.ones(4, 2), L.tensor([0, 1]))
        with pytest.raises(RuntimeError, match="expected linear_bias shape"):
            L.nn.functional.linear_cross_entropy(L.ones(2, 3), L.ones(4, 3), L.tensor([0, 1]), linear_bias=L.ones(3))
        with pytest.raises(RuntimeError, match="expected weight shape"):
            L.nn.LinearCrossEntropyLoss(3, 4, weight=L.ones(3))
    t = torch.nn.LinearCrossEntropyOptions()
    h = hookgrad.nn.LinearCrossEntropyOptions()
    assert repr(h) == repr(t)
    check(lambda L, x, w: L.nn.functional.linear_cross_entropy(x, w, L.tensor([0, 3]),
                                                               options=L.nn.LinearCrossEntropyOptions()),
          r(2, 3), r(4, 3, seed=1))


@pytest.mark.parametrize("pad", [0, 2])
def test_conv_tbc(pad):
    check(lambda L, x, w, b: L.conv_tbc(x, w, b, pad), r(5, 2, 3), r(2, 3, 4, seed=1), r(4, seed=2), second=True)
    check(lambda L, x, w, b: L.nn.functional.conv_tbc(x, w, b, pad=pad), r(5, 2, 3), r(3, 3, 2, seed=1),
          r(2, seed=2))


@pytest.mark.parametrize("args", [((5, 2), (2, 3, 4), (4,)), ((5, 2, 3), (2, 3), (4,)), ((5, 2, 3), (2, 3, 4), (1, 4)),
                                  ((5, 2, 3), (2, 4, 4), (4,)), ((5, 2, 3), (9, 3, 4), (4,))])
def test_conv_tbc_errors(args):
    msgs = []
    for L in LIBS:
        with pytest.raises(RuntimeError) as e:
            L.conv_tbc(*(L.ones(*s) for s in args))
        msgs.append(str(e.value))
    assert msgs[1] == msgs[0]


def test_embedding_renorm_():
    w0 = r(5, 3) * 2
    out = []
    for L in LIBS:
        w = L.tensor(w0)
        v = w._version
        res = L.embedding_renorm_(w, L.tensor([0, 2, 2, -1]), 1.0, 2.0)
        assert res is w and w._version == v + 1
        out.append(w.numpy().copy())
        with pytest.raises(RuntimeError, match="a leaf Variable that requires grad"):
            L.embedding_renorm_(L.ones(5, 3, requires_grad=True), L.tensor([0]), 1.0, 2.0)
        with pytest.raises(RuntimeError, match="'indices' to have one of the following scalar types"):
            L.embedding_renorm_(w, L.tensor([0.0]), 1.0, 2.0)
        with pytest.raises(IndexError):
            L.embedding_renorm_(w, L.tensor([7]), 1.0, 2.0)
    np.testing.assert_allclose(out[1], out[0], rtol=1e-12)


def test_uninitialized_names_exported():
    assert hookgrad.nn.UninitializedParameter is hookgrad.nn.parameter.UninitializedParameter
    assert hookgrad.nn.UninitializedBuffer is hookgrad.nn.parameter.UninitializedBuffer
    p = hookgrad.nn.UninitializedParameter()
    assert isinstance(p, hookgrad.nn.UninitializedParameter) and p.requires_grad
