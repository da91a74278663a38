"""MultiheadAttention and F.scaled_dot_product_attention vs torch: the same seed gives the same weights; values,
attention weights, gradients of inputs and every parameter, second order; masks of every kind; dropout draws;
errors; module-hook event sequences."""
import warnings

import numpy as np
import pytest
import torch
from torch.nn.attention import sdpa_kernel as t_sdpa_kernel, SDPBackend as TB

import hookgrad
from oracle import assert_same, check, events

R = np.random.default_rng(0)


def rn(*s):
    return R.standard_normal(s)


def build(L, make, dtype="float64"):
    L.manual_seed(0)
    m = make(L)
    return m.to(getattr(L, dtype))


def compare(make, call, arrays, train=False, tol=None, seed=True):
    """make(L) under manual_seed(0) in both libraries (same weights: checked), call(L, m, *tensors) -> outputs;
    compares outputs, then gradients of every float input and every parameter."""
    tm, hm = build(torch, make), build(hookgrad, make)
    tsd, hsd = tm.state_dict(), hm.state_dict()
    assert list(tsd) == list(hsd)
    for k in tsd:       # drawn in float32 (xavier_uniform_ may differ by one float32 ulp), then run on torch's
        assert_same(tsd[k], hsd[k], f"state_dict[{k!r}]", tol=(1e-6, 1e-7))
        hsd[k]._data[...] = tsd[k].numpy()
    tm.train(train)
    hm.train(train)
    t_in = [torch.tensor(a, requires_grad=a.dtype.kind == "f") if isinstance(a, np.ndarray) else a for a in arrays]
    h_in = [hookgrad.tensor(a, requires_grad=a.dtype.kind == "f") if isinstance(a, np.ndarray) else a
            for a in arrays]
    if seed:
        torch.manual_seed(5)
        hookgrad.manual_seed(5)
    to, ho = call(torch, tm, *t_in), call(hookgrad, hm, *h_in)
    to, ho = (to if isinstance(to, tuple) else (to,)), (ho if isinstance(ho, tuple) else (ho,))
    for i, (a, b) in enumerate(zip(to, ho)):
        assert_same(a, b, f"output {i}", tol)
    tl = [t for t in t_in if isinstance(t, torch.Tensor) and t.requires_grad] + list(tm.parameters())
    hl = [t for t in h_in if isinstance(t, hookgrad.Tensor) and t.requires_grad] + list(hm.parameters())
    outs = [(a, b) for a, b in zip(to, ho) if a is not None and a.requires_grad]
    seeds = [rn(*a.shape) for a, _ in outs]
    tg = torch.autograd.grad([a for a, _ in outs], tl, [torch.tensor(s) for s in seeds], allow_unused=True)
    hg = hookgrad.autograd.grad([b for _, b in outs], hl, [hookgrad.tensor(s) for s in seeds], allow_unused=True)
    names = [f"input {i}" for i in range(len(tl) - len(list(tm.parameters())))] + [n for n, _ in tm.named_parameters()]
    for n, a, b in zip(names, tg, hg):
        assert_same(a, b, f"grad of {n}", tol)
    return tm, hm


E, H = 8, 2
KPM = np.array([[False, False, True, False, True], [False] * 5])
AM2 = np.triu(np.ones((4, 5), bool), 2)
AM3 = R.random((2 * H, 4, 5)) > 0.7


def _t(L, a):
    return None if a is None else L.tensor(a)


# name: (MHA kwargs, forward kwargs as arrays, batch_first)
CASES = {
    "plain": ({}, {}),
    "bias_kv": ({"add_bias_kv": True}, {}),
    "zero_attn": ({"add_zero_attn": True}, {}),
    "bias_kv_zero_attn_masks": ({"add_bias_kv": True, "add_zero_attn": True},
                                {"key_padding_mask": KPM, "attn_mask": AM2}),
    "kdim_vdim": ({"kdim": 6, "vdim": 3}, {}),
    "kdim_vdim_masks": ({"kdim": 6, "vdim": 3}, {"key_padding_mask": KPM, "attn_mask": AM3}),
    "no_bias": ({"bias": False}, {"attn_mask": AM2}),
    "bool_masks": ({}, {"key_padding_mask": KPM, "attn_mask": AM2}),
    "float_masks": ({}, {"key_padding_mask": np.where(KPM, -1e9, 0.0), "attn_mask": rn(4, 5)}),
    "mask_3d": ({}, {"attn_mask": AM3}),
    "float_mask_3d": ({}, {"attn_mask": rn(2 * H, 4, 5)}),
    "per_head": ({}, {"key_padding_mask": KPM, "average_attn_weights": False}),
    "no_weights": ({}, {"key_padding_mask": KPM, "attn_mask": AM2, "need_weights": False}),
    "no_weights_3d": ({}, {"attn_mask": AM3, "need_weights": False}),
    "bf": ({"batch_first": True}, {"key_padding_mask": KPM, "attn_mask": AM2}),
    "bf_no_weights": ({"batch_first": True, "add_bias_kv": True}, {"attn_mask": AM2, "need_weights": False}),
}


def _mha_call(kw, self_attn=False):
    def call(L, m, q, k, v):
        kw2 = {n: (_t(L, a) if isinstance(a, np.ndarray) else a) for n, a in kw.items()}
        if self_attn:
            return m(q, q, q, **kw2)
        return m(q, k, v, **kw2)
    return call


@pytest.mark.parametrize("name", sorted(CASES))
def test_mha_matches_torch(name):
    mk, kw = CASES[name]
    bf = mk.get("batch_first", False)
    kd, vd = mk.get("kdim", E), mk.get("vdim", E)
    shp = (lambda n, d: (2, n, d)) if bf else (lambda n, d: (n, 2, d))
    arrays = [rn(*shp(4, E)), rn(*shp(5, kd)), rn(*shp(5, vd))]
    compare(lambda L: L.nn.MultiheadAttention(E, H, **mk), _mha_call(kw), arrays)


@pytest.mark.parametrize("bf", [False, True])
def test_mha_self_attention_unbatched_and_causal(bf):
    causal = np.triu(np.full((4, 4), -np.inf), 1)
    for kw in ({}, {"attn_mask": causal, "is_causal": True, "need_weights": False},
               {"attn_mask": causal, "is_causal": True}):
        x = rn(2, 4, E) if bf else rn(4, 2, E)
        compare(lambda L: L.nn.MultiheadAttention(E, H, batch_first=bf), _mha_call(kw, True), [x, x, x])
    # unbatched (batch_first is ignored), with a 1-D key padding mask and a 3-D attn mask
    kw = {"key_padding_mask": np.array([False, True, False, False, False]), "attn_mask": AM3[:H]}
    compare(lambda L: L.nn.MultiheadAttention(E, H, batch_first=bf), _mha_call(kw), [rn(4, E), rn(5, E), rn(5, E)])


@pytest.mark.parametrize("need_weights", [True, False])
def test_mha_dropout_draws_as_torch(need_weights):
    """training mode: the attention dropout mask comes from the generator as torch draws it."""
    kw = {"key_padding_mask": KPM, "need_weights": need_weights}
    compare(lambda L: L.nn.MultiheadAttention(E, H, dropout=0.4, add_zero_attn=True), _mha_call(kw),
            [rn(4, 2, E), rn(5, 2, E), rn(5, 2, E)], train=True)


def test_mha_second_order():
    def fn(L, q, k, v, w, b, ow):
        return L.nn.functional.multi_head_attention_forward(
            q, k, v, 4, 2, w, b, None, None, False, 0.0, ow, None, key_padding_mask=L.tensor(KPM[:, :3]),
            need_weights=True, average_attn_weights=False)
    check(fn, rn(2, 2, 4), rn(3, 2, 4), rn(3, 2, 4), rn(12, 4), rn(12), rn(4, 4), second=True)

    def fn2(L, q, k, v, w, b, ow):   # need_weights=False: through scaled_dot_product_attention
        with (t_sdpa_kernel(TB.MATH) if L is torch else hookgrad.nn.attention.sdpa_kernel(
                hookgrad.nn.attention.SDPBackend.MATH)):
            return L.nn.functional.multi_head_attention_forward(
                q, k, v, 4, 2, w, b, None, None, False, 0.0, ow, None, attn_mask=L.tensor(AM2[:2, :3]),
                need_weights=False)[0]
    check(fn2, rn(2, 2, 4), rn(3, 2, 4), rn(3, 2, 4), rn(12, 4), rn(12), rn(4, 4), second=True)


def test_mha_init_draws_and_state_dict():
    for kw in ({}, {"add_bias_kv": True, "kdim": 5, "vdim": 3}, {"bias": False}):
        tm, hm = build(torch, lambda L: L.nn.MultiheadAttention(6, 3, **kw), "float32"), \
            build(hookgrad, lambda L: L.nn.MultiheadAttention(6, 3, **kw), "float32")
        assert list(tm.state_dict()) == list(hm.state_dict())
        for k, v in tm.state_dict().items():
            assert_same(v, hm.state_dict()[k], k, tol=(1e-6, 1e-7))
        assert repr(tm) == repr(hm)
        tsd = tm.state_dict()
        hm2 = hookgrad.nn.MultiheadAttention(6, 3, **kw)
        hm2.load_state_dict({k: hookgrad.tensor(v.numpy()) for k, v in tsd.items()})


def _err(fn):
    try:
        fn()
    except Exception as e:      # noqa: BLE001 - the exception is the result
        return e
    return None


BAD = {
    "key_2d": lambda L: L.nn.MultiheadAttention(4, 2)(L.ones(3, 2, 4), L.ones(5, 4), L.ones(5, 4)),
    "query_4d": lambda L: L.nn.MultiheadAttention(4, 2)(L.ones(1, 3, 2, 4), L.ones(5, 4), L.ones(5, 4)),
    "kpm_3d": lambda L: L.nn.MultiheadAttention(4, 2)(L.ones(3, 2, 4), L.ones(5, 2, 4), L.ones(5, 2, 4),
                                                      key_padding_mask=L.zeros(2, 5, 1, dtype=L.bool)),
    "kpm_shape": lambda L: L.nn.MultiheadAttention(4, 2)(L.ones(3, 2, 4), L.ones(5, 2, 4), L.ones(5, 2, 4),
                                                         key_padding_mask=L.zeros(2, 4, dtype=L.bool)),
    "mask_2d_shape": lambda L: L.nn.MultiheadAttention(4, 2)(L.ones(3, 2, 4), L.ones(5, 2, 4), L.ones(5, 2, 4),
                                                             attn_mask=L.zeros(3, 4, dtype=L.bool)),
    "mask_3d_shape": lambda L: L.nn.MultiheadAttention(4, 2)(L.ones(3, 2, 4), L.ones(5, 2, 4), L.ones(5, 2, 4),
                                                             attn_mask=L.zeros(2, 3, 5, dtype=L.bool)),
    "mask_int": lambda L: L.nn.MultiheadAttention(4, 2)(L.ones(3, 2, 4), L.ones(5, 2, 4), L.ones(5, 2, 4),
                                                        attn_mask=L.zeros(3, 5, dtype=L.int64)),
    "unbatched_mask_3d": lambda L: L.nn.MultiheadAttention(4, 2)(L.ones(3, 4), L.ones(5, 4), L.ones(5, 4),
                                                                 attn_mask=L.zeros(3, 3, 5)),
    "embed": lambda L: L.nn.MultiheadAttention(4, 2)(L.ones(3, 2, 6), L.ones(5, 2, 6), L.ones(5, 2, 6)),
    "kv_shape": lambda L: L.nn.MultiheadAttention(4, 2)(L.ones(3, 2, 4), L.ones(5, 2, 4), L.ones(6, 2, 4)),
    "causal_no_mask": lambda L: L.nn.MultiheadAttention(4, 2)(L.ones(3, 2, 4), L.ones(3, 2, 4), L.ones(3, 2, 4),
                                                              is_causal=True),
    "heads": lambda L: L.nn.MultiheadAttention(5, 2),
    "zero_heads": lambda L: L.nn.MultiheadAttention(4, 0),
    "sdpa_dtype": lambda L: L.nn.functional.scaled_dot_product_attention(L.ones(1, 2, 3), L.ones(1, 2, 3).double(),
                                                                          L.ones(1, 2, 3)),
    "sdpa_mask_dtype": lambda L: L.nn.functional.scaled_dot_product_attention(
        L.ones(1, 2, 3), L.ones(1, 2, 3), L.ones(1, 2, 3), attn_mask=L.ones(2, 2, dtype=L.int64)),
    "sdpa_causal_and_mask": lambda L: L.nn.functional.scaled_dot_product_attention(
        L.ones(1, 2, 3), L.ones(1, 2, 3), L.ones(1, 2, 3), attn_mask=L.ones(2, 2, dtype=L.bool), is_causal=True),
    "sdpa_1d": lambda L: L.nn.functional.scaled_dot_product_attention(L.ones(3), L.ones(3), L.ones(3)),
    "sdpa_gqa": lambda L: L.nn.functional.scaled_dot_product_attention(
        L.ones(1, 4, 2, 3), L.ones(1, 3, 2, 3), L.ones(1, 3, 2, 3), enable_gqa=True),
    "sdpa_kernel_type": lambda L: L.nn.attention.sdpa_kernel("math").__enter__(),
}


@pytest.mark.parametrize("name", sorted(BAD))
def test_errors_as_torch(name):
    et, eh = _err(lambda: BAD[name](torch)), _err(lambda: BAD[name](hookgrad))
    assert et is not None and eh is not None, (et, eh)
    assert type(et) is type(eh), (et, eh)
    assert str(et).split("\n")[0].strip() in str(eh), (str(et), str(eh))


def test_mask_type_mismatch_warns_as_torch():
    def run(L):
        m = L.nn.MultiheadAttention(4, 2)
        x = L.ones(3, 2, 4)
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            m(x, x, x, key_padding_mask=L.zeros(2, 3, dtype=L.bool), attn_mask=L.zeros(3, 3))
        return [str(x.message) for x in w]
    assert run(torch) == run(hookgrad) and len(run(torch)) == 1


# ---------------------------------------------------------------------------- scaled_dot_product_attention
def _sdpa(math=False, **kw):
    def f(L, q, k, v, *mask):
        kw2 = dict(kw)
        if mask:
            kw2["attn_mask"] = mask[0]
        elif isinstance(kw2.get("attn_mask"), np.ndarray):
            kw2["attn_mask"] = L.tensor(kw2["attn_mask"])
        if math and L is torch:     # torch's flash kernel has no double backward: its math path is the oracle
            with t_sdpa_kernel(TB.MATH):
                return L.nn.functional.scaled_dot_product_attention(q, k, v, **kw2)
        return L.nn.functional.scaled_dot_product_attention(q, k, v, **kw2)
    return f


BM = R.random((4, 6)) > 0.4
BM[1] = False       # a query row that sees no key: zeros, as torch
SDPA = {
    "plain": ({}, [rn(2, 3, 4, 5), rn(2, 3, 6, 5), rn(2, 3, 6, 5)]),
    "causal": ({"is_causal": True}, [rn(2, 3, 4, 5), rn(2, 3, 6, 5), rn(2, 3, 6, 5)]),
    "scale": ({"scale": 0.3}, [rn(1, 2, 4, 5), rn(1, 2, 6, 5), rn(1, 2, 6, 5)]),
    "bool_mask": ({"attn_mask": BM}, [rn(2, 3, 4, 5), rn(2, 3, 6, 5), rn(2, 3, 6, 5)]),
    "float_mask_4d": ({"attn_mask": rn(2, 1, 4, 6)}, [rn(2, 3, 4, 5), rn(2, 3, 6, 5), rn(2, 3, 6, 5)]),
    "gqa": ({"enable_gqa": True}, [rn(2, 4, 4, 5), rn(2, 2, 6, 5), rn(2, 2, 6, 5)]),
    "3d_vdim": ({"attn_mask": BM}, [rn(3, 4, 5), rn(3, 6, 5), rn(3, 6, 7)]),
}


@pytest.mark.parametrize("name", sorted(SDPA))
def test_sdpa_values_grads_second_order(name):
    kw, arrays = SDPA[name]
    check(_sdpa(**kw), *arrays)
    check(_sdpa(math=True, **kw), *arrays, second=True)


def test_sdpa_mask_gradient_and_grad_fn_names():
    check(_sdpa(), rn(2, 3, 4, 5), rn(2, 3, 6, 5), rn(2, 3, 6, 5), rn(4, 6), second=True)
    for L in (torch, hookgrad):
        q = L.randn(1, 2, 3, 4, requires_grad=True)
        f = L.nn.functional.scaled_dot_product_attention
        assert f(q, q, q).grad_fn.name() == "ScaledDotProductFlashAttentionForCpuBackward0"
        assert f(q[0], q[0], q[0]).grad_fn.name() != "ScaledDotProductFlashAttentionForCpuBackward0"
        with L.nn.attention.sdpa_kernel([L.nn.attention.SDPBackend.MATH]):
            assert f(q, q, q).grad_fn.name() != "ScaledDotProductFlashAttentionForCpuBackward0"
        assert f(q, q, q).grad_fn.name() == "ScaledDotProductFlashAttentionForCpuBackward0"


def test_sdpa_dropout_draws_as_torch():
    def fn(L, q, k, v):
        L.manual_seed(3)
        return L.nn.functional.scaled_dot_product_attention(q, k, v, dropout_p=0.3, attn_mask=L.tensor(BM))
    check(fn, rn(2, 3, 4, 5), rn(2, 3, 6, 5), rn(2, 3, 6, 5), second=True)


def test_sdpa_float32():
    a = [rn(2, 3, 4, 5).astype(np.float32), rn(2, 3, 6, 5).astype(np.float32), rn(2, 3, 6, 5).astype(np.float32)]
    check(_sdpa(is_causal=True), *a)


# ---------------------------------------------------------------------------- hooks
def set_weights(L, m):
    """Deterministic weights (the hook logs round to 5 decimals: no float32 init ulps in the way)."""
    with L.no_grad():
        for i, p in enumerate(m.parameters()):
            p.copy_(L.tensor(0.5 * np.cos(np.arange(p.numel()) * 0.7 + i).reshape(tuple(p.shape))))


def test_mha_module_hook_events():
    def scenario(L, log):
        L.manual_seed(0)
        m = L.nn.MultiheadAttention(4, 2, kdim=3, vdim=3).double()
        set_weights(L, m)
        m.register_forward_pre_hook(lambda mod, args, kwargs: log("pre", args, kwargs), with_kwargs=True)
        m.register_forward_hook(lambda mod, args, out: log("fwd", out))
        m.register_full_backward_pre_hook(lambda mod, go: log("bwd_pre", go))
        m.register_full_backward_hook(lambda mod, gi, go: log("bwd", gi, go))
        m.out_proj.register_forward_hook(lambda mod, args, out: log("out_proj", out))
        q = L.tensor(np.linspace(-1, 1, 16).reshape(2, 2, 4), requires_grad=True)
        k = L.tensor(np.linspace(-2, 1.1, 18).reshape(3, 2, 3), requires_grad=True)
        out, w = m(q, k, k, key_padding_mask=L.tensor(KPM[:, :3]))
        (out.sum() + (w * w).sum()).backward()
        log("grads", q.grad, k.grad, m.k_proj_weight.grad)
    events(scenario)
