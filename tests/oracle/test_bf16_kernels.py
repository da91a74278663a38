"""bfloat16 through hookgrad's kernels against PyTorch 2.13 on the CPU (issue 22): every op family that has bf16
CPU kernels in PyTorch takes a bf16 input and returns bf16, computed in float32 and rounded once as PyTorch's
kernels do (_dtype.opmath); values and gradients (backward in bf16) compared in bf16 ulps, then a small CNN and a
transformer encoder layer under ``autocast("cpu", dtype=torch.bfloat16)``."""
import numpy as np
import pytest
import torch

import hookgrad as hg

pytest.importorskip("ml_dtypes")


def _ord(a, half=False):
    """bf16 (or, with ``half``, float16) values held as float32, as integers in value order: adjacent numbers of
    that dtype differ by 1."""
    if half:
        u = np.ascontiguousarray(a, np.float16).view(np.uint16).astype(np.int64)
    else:
        u = (np.ascontiguousarray(a, np.float32).view(np.uint32) >> 16).astype(np.int64)
    return np.where(u & 0x8000, -(u & 0x7FFF), u)


def ulps(h, t):
    """Largest distance in ulps of their dtype between two bf16 (or f16) tensors' values (NaNs must coincide)."""
    a, b = h.float().detach().numpy(), t.float().detach().numpy()
    assert a.shape == b.shape
    nan = np.isnan(b)
    assert (np.isnan(a) == nan).all()
    half = str(t.dtype) == "torch.float16"
    return int(np.abs(_ord(a[~nan], half) - _ord(b[~nan], half)).max(initial=0))


def close(h, t, n, what, dtype="torch.bfloat16"):
    """Within ``n`` ulps, or (where a value is small against the tensor's largest, as after cancellation) within
    ``n`` ulps of that largest value's magnitude."""
    assert str(h.dtype) == str(t.dtype) == dtype, (what, h.dtype, t.dtype)
    a, b = h.float().detach().numpy(), t.float().detach().numpy()
    if ulps(h, t) <= n:
        return
    big = float(np.abs(b).max())
    step = 2.0 ** (np.floor(np.log2(big)) - (10 if dtype == "torch.float16" else 7)) if big > 0 else 0.0
    assert np.abs(a - b).max() <= n * step, (what, ulps(h, t), np.abs(a - b).max(), step)


def inputs(L, shapes, seed, positive=(), dtype="bfloat16"):
    rng = np.random.default_rng(seed)
    out = []
    for k, s in enumerate(shapes):
        if isinstance(s, str):          # an integer index tensor: "idx:<high>:<n>"
            _, high, n = s.split(":")
            out.append(L.tensor(rng.integers(0, int(high), int(n))))
            continue
        a = rng.standard_normal(s).astype(np.float32)
        if k in positive:
            a = np.abs(a) + 0.1
        out.append(L.tensor(a).to(getattr(L, dtype)).requires_grad_())
    return out


# (name, fn(L, *inputs), input shapes, inputs made positive, forward ulps, gradient ulps): 0 is bit-exact. Where
# PyTorch's bf16 kernel is not "float32, rounded once" hookgrad still is (softmax along a non-last dim, log_softmax,
# rms_norm, sdpa: 1 ulp), except batch_norm, whose bf16 save_mean/save_invstd hookgrad reproduces; nll_loss's
# bf16 accumulation is not reproduced (3 ulps of a sum that cancels)
T = (4, 8)
CASES = [
    # elementwise unary: one float32 evaluation rounded once
    ("exp", lambda L, x: x.exp(), [T], (), 0, 0),
    ("log", lambda L, x: x.log(), [T], (0,), 0, 0),
    ("sqrt", lambda L, x: x.sqrt(), [T], (0,), 0, 0),
    ("rsqrt", lambda L, x: x.rsqrt(), [T], (0,), 0, 1),
    ("sin", lambda L, x: x.sin(), [T], (), 0, 0),
    ("cos", lambda L, x: x.cos(), [T], (), 0, 0),
    ("tanh", lambda L, x: x.tanh(), [T], (), 0, 1),
    ("sigmoid", lambda L, x: x.sigmoid(), [T], (), 0, 1),
    ("erf", lambda L, x: x.erf(), [T], (), 0, 1),
    ("expm1", lambda L, x: x.expm1(), [T], (), 0, 0),
    ("log1p", lambda L, x: x.log1p(), [T], (0,), 0, 0),
    ("reciprocal", lambda L, x: x.reciprocal(), [T], (0,), 0, 1),
    ("abs", lambda L, x: x.abs(), [T], (), 0, 0),
    ("neg", lambda L, x: -x, [T], (), 0, 0),
    # rounding (before issue 22 these returned their input unchanged for bf16) and clamping
    ("floor", lambda L, x: (x * 3).floor(), [T], (), 0, 0),
    ("ceil", lambda L, x: (x * 3).ceil(), [T], (), 0, 0),
    ("round", lambda L, x: (x * 3).round(), [T], (), 0, 0),
    ("round_decimals", lambda L, x: (x * 3).round(decimals=1), [T], (), 0, 0),
    ("trunc", lambda L, x: (x * 3).trunc(), [T], (), 0, 0),
    ("frac", lambda L, x: (x * 3).frac(), [T], (), 0, 0),
    ("clamp", lambda L, x: x.clamp(-0.5, 0.7), [T], (), 0, 0),
    ("remainder", lambda L, x: x % 0.7, [T], (), 0, 0),
    ("lerp", lambda L, x, y: L.lerp(x, y, 0.3), [T, T], (), 1, 0),     # PyTorch's kernel may fuse (fma)
    ("lerp_tensor", lambda L, x, y, w: L.lerp(x, y, w), [T, T, T], (), 0, 0),
    # binary
    ("add", lambda L, x, y: x + y, [T, T], (), 0, 0),
    ("sub", lambda L, x, y: x - y, [T, T], (), 0, 0),
    ("mul", lambda L, x, y: x * y, [T, T], (), 0, 0),
    ("div", lambda L, x, y: x / y, [T, T], (1,), 0, 0),
    ("mul_scalar", lambda L, x: x * 1.7, [T], (), 0, 0),
    # alpha rounded to bf16 (PyTorch's add kernel takes it as scalar_t), addcmul's value not; both then in float32
    # (32 elements: PyTorch's vectorised loop; its scalar tail for the last elements rounds alpha * y to bf16 first)
    ("add_alpha", lambda L, x, y: L.add(x, y, alpha=0.1), [T, T], (), 0, 0),
    ("sub_alpha", lambda L, x, y: L.sub(x, y, alpha=0.3), [T, T], (), 0, 0),
    # hookgrad composes addcmul/addcdiv (each op rounding to bf16); PyTorch's kernel rounds once
    ("addcmul", lambda L, x, y, z: L.addcmul(x, y, z, value=0.1), [T, T, T], (), 1, 1),
    ("addcdiv", lambda L, x, y, z: L.addcdiv(x, y, z, value=0.1), [T, T, T], (2,), 1, 2),
    ("pow2", lambda L, x: x ** 2, [T], (), 0, 0),
    ("maximum", lambda L, x, y: L.maximum(x, y), [T, T], (), 0, 0),
    ("where", lambda L, x, y: L.where(x > 0, x, y), [T, T], (), 0, 0),
    # activations
    ("relu", lambda L, x: L.relu(x), [T], (), 0, 0),
    ("gelu", lambda L, x: L.nn.functional.gelu(x), [T], (), 0, 0),
    ("gelu_tanh", lambda L, x: L.nn.functional.gelu(x, approximate="tanh"), [T], (), 0, 0),
    ("silu", lambda L, x: L.nn.functional.silu(x), [T], (), 0, 1),
    ("softplus", lambda L, x: L.nn.functional.softplus(x), [T], (), 0, 1),
    ("elu", lambda L, x: L.nn.functional.elu(x), [T], (), 0, 1),
    ("leaky_relu", lambda L, x: L.nn.functional.leaky_relu(x, 0.1), [T], (), 0, 0),
    ("hardswish", lambda L, x: L.nn.functional.hardswish(x), [T], (), 0, 1),
    ("hardsigmoid", lambda L, x: L.nn.functional.hardsigmoid(x), [T], (), 0, 0),
    ("mish", lambda L, x: L.nn.functional.mish(x), [T], (), 0, 2),
    ("logsigmoid", lambda L, x: L.nn.functional.logsigmoid(x), [T], (), 0, 1),
    ("glu", lambda L, x: L.nn.functional.glu(x, -1), [T], (), 0, 1),
    ("softmax", lambda L, x: x.softmax(-1), [T], (), 0, 0),
    ("softmax0", lambda L, x: x.softmax(0), [T], (), 1, 2),
    ("log_softmax", lambda L, x: x.log_softmax(-1), [T], (), 1, 1),
    # norms
    ("batch_norm", lambda L, x, w, b: L.nn.functional.batch_norm(x, None, None, w, b, training=True),
     [(6, 3, 4), (3,), (3,)], (), 1, 1),
    ("layer_norm", lambda L, x, w, b: L.nn.functional.layer_norm(x, (8,), w, b), [T, (8,), (8,)], (), 0, 1),
    ("group_norm", lambda L, x, w, b: L.nn.functional.group_norm(x, 2, w, b), [(3, 4, 5), (4,), (4,)], (), 0, 1),
    ("rms_norm", lambda L, x, w: L.nn.functional.rms_norm(x, (8,), w), [T, (8,)], (), 1, 1),
    # matmul family
    ("mm", lambda L, x, y: x @ y, [T, (8, 5)], (), 0, 0),
    ("bmm", lambda L, x, y: L.bmm(x, y), [(2, 3, 8), (2, 8, 4)], (), 0, 0),
    ("matmul_bcast", lambda L, x, y: L.matmul(x, y), [(2, 3, 8), (8, 4)], (), 0, 0),
    ("linear", lambda L, x, w, b: L.nn.functional.linear(x, w, b), [T, (5, 8), (5,)], (), 0, 1),
    ("addmm", lambda L, b, x, y: L.addmm(b, x, y), [(5,), T, (8, 5)], (), 0, 1),
    ("baddbmm", lambda L, b, x, y: L.baddbmm(b, x, y), [(2, 3, 4), (2, 3, 8), (2, 8, 4)], (), 0, 0),
    ("einsum", lambda L, x, y: L.einsum("ij,kj->ik", x, y), [T, (5, 8)], (), 0, 0),
    # convolution and pooling
    ("conv1d", lambda L, x, w, b: L.nn.functional.conv1d(x, w, b, padding=1), [(2, 3, 7), (4, 3, 3), (4,)], (), 0, 0),
    ("conv2d", lambda L, x, w: L.nn.functional.conv2d(x, w, stride=2), [(2, 3, 6, 6), (4, 3, 3, 3)], (), 0, 0),
    ("conv_transpose2d", lambda L, x, w: L.nn.functional.conv_transpose2d(x, w), [(1, 3, 4, 4), (3, 2, 2, 2)],
     (), 0, 0),
    ("max_pool2d", lambda L, x: L.nn.functional.max_pool2d(x, 2), [(2, 3, 4, 4)], (), 0, 0),
    ("avg_pool2d", lambda L, x: L.nn.functional.avg_pool2d(x, 2), [(2, 3, 4, 4)], (), 0, 0),
    ("adaptive_avg_pool2d", lambda L, x: L.nn.functional.adaptive_avg_pool2d(x, 1), [(2, 3, 4, 4)], (), 0, 0),
    ("interpolate_bilinear", lambda L, x: L.nn.functional.interpolate(x, scale_factor=1.7, mode="bilinear"),
     [(1, 2, 5, 5)], (), 0, 1),
    ("interpolate_nearest", lambda L, x: L.nn.functional.interpolate(x, scale_factor=2), [(1, 2, 3, 3)], (), 0, 0),
    # reductions: accumulated in float32, rounded once
    ("sum", lambda L, x: x.sum(), [T], (), 0, 0),
    ("sum_dim", lambda L, x: x.sum(1), [T], (), 0, 0),
    ("mean", lambda L, x: x.mean(0), [T], (), 0, 0),
    ("amax", lambda L, x: x.amax(1), [T], (), 0, 0),
    ("var", lambda L, x: x.var(1), [T], (), 0, 1),
    ("std", lambda L, x: x.std(), [T], (), 0, 1),
    ("norm", lambda L, x: x.norm(dim=1), [T], (), 0, 1),
    ("logsumexp", lambda L, x: x.logsumexp(1), [T], (), 0, 0),
    ("cumsum", lambda L, x: x.cumsum(1), [T], (), 0, 0),
    # losses
    ("mse_loss", lambda L, x, y: L.nn.functional.mse_loss(x, y), [T, T], (), 1, 0),
    ("l1_loss", lambda L, x, y: L.nn.functional.l1_loss(x, y), [T, T], (), 0, 0),
    ("smooth_l1_loss", lambda L, x, y: L.nn.functional.smooth_l1_loss(x, y), [T, T], (), 0, 1),
    ("cross_entropy", lambda L, x, t: L.nn.functional.cross_entropy(x, t), [T, "idx:8:4"], (), 1, 1),
    ("nll_loss", lambda L, x, t: L.nn.functional.nll_loss(x, t), [T, "idx:8:4"], (), 3, 0),   # see above
    ("bce_with_logits", lambda L, x, y: L.nn.functional.binary_cross_entropy_with_logits(x, y.sigmoid()), [T, T],
     (), 0, 1),
    # kl_div is a composition in PyTorch too (xlogy(t, t) - t * x, each op rounding to bf16), hookgrad's another
    ("cross_entropy_probs", lambda L, x, y: L.nn.functional.cross_entropy(x, y.softmax(-1)), [T, T], (), 1, 3),
    ("soft_margin_loss", lambda L, x, y: L.nn.functional.soft_margin_loss(x, y.sign().detach()), [T, T], (),
     0, 1),
    ("kl_div", lambda L, x, y: L.nn.functional.kl_div(x.log_softmax(-1), y.softmax(-1), reduction="batchmean"),
     [T, T], (), 1, 2),
    # embedding, dropout in eval, attention
    ("embedding", lambda L, i, w: L.nn.functional.embedding(i, w), ["idx:6:5", (6, 4)], (), 0, 0),
    ("dropout_eval", lambda L, x: L.nn.functional.dropout(x, 0.5, training=False), [T], (), 0, 0),
    ("sdpa", lambda L, q, k, v: L.nn.functional.scaled_dot_product_attention(q, k, v), [(1, 2, 3, 4)] * 3, (), 1, 2),
]


@pytest.mark.parametrize("name, fn, shapes, positive, fwd_ulps, grad_ulps", CASES, ids=[c[0] for c in CASES])
def test_bf16_kernel(name, fn, shapes, positive, fwd_ulps, grad_ulps):
    seed = sum(map(ord, name))
    outs, grads = [], []
    for L in (torch, hg):
        xs = inputs(L, shapes, seed, positive)
        y = fn(L, *xs)
        g = L.tensor(np.random.default_rng(seed + 1).standard_normal(tuple(y.shape)).astype(np.float32)).to(L.bfloat16)
        y.backward(g)
        outs.append(y)
        grads.append([x.grad for x in xs if x.is_floating_point()])
    t, h = outs
    close(h, t, fwd_ulps, name)
    for k, (gt, gh) in enumerate(zip(*grads)):
        if gt is None:          # an input the result does not depend on
            assert gh is None, (name, k)
            continue
        close(gh, gt, grad_ulps, f"{name}: gradient of input {k}")


@pytest.mark.parametrize("name, fn, shapes, positive", [c[:4] for c in CASES], ids=[c[0] for c in CASES])
def test_f16_kernel(name, fn, shapes, positive):
    """The same ops in float16: PyTorch's CPU kernels compute it in float32 too (one rounding; before issue 22
    hookgrad computed in NumPy's float16, rounding at every step: gelu 37 ulps off, group_norm 900)."""
    seed = sum(map(ord, name))
    outs, grads = [], []
    for L in (torch, hg):
        xs = inputs(L, shapes, seed, positive, "float16")
        y = fn(L, *xs)
        y.backward(L.tensor(np.random.default_rng(seed + 1).standard_normal(tuple(y.shape)).astype(np.float16)))
        outs.append(y)
        grads.append([x.grad for x in xs if x.is_floating_point()])
    close(outs[1], outs[0], 1, name, "torch.float16")
    for k, (gt, gh) in enumerate(zip(*grads)):
        if gt is None:
            assert gh is None, (name, k)
            continue
        close(gh, gt, 2, f"{name}: gradient of input {k}", "torch.float16")


@pytest.mark.parametrize("name, fn", [
    ("floor_divide", lambda L, x: x // 0.7),
    ("div_floor", lambda L, x: L.div(x, 0.7, rounding_mode="floor")),
    ("div_trunc", lambda L, x: L.div(x, x.flip(0), rounding_mode="trunc")),
    ("fmod", lambda L, x: L.fmod(x, 0.7)),
    ("sign", lambda L, x: x.sign()),
    ("signbit", lambda L, x: x.signbit()),
    ("nan_to_num", lambda L, x: L.nan_to_num(x / 0)),
    ("dropout_train_p0", lambda L, x: L.nn.functional.dropout(x, 0.0, training=True)),
    ("parameter", lambda L, x: L.nn.Parameter(x) * 1),
    ("argmax", lambda L, x: x.argmax(1)),
    ("sort", lambda L, x: x.sort(1)[0]),
    ("scatter_reduce_mean", lambda L, x: L.zeros(4, 8, dtype=L.bfloat16).scatter_reduce(
        0, L.tensor([[0, 1, 1, 3, 0, 2, 2, 1]] * 4), x, "mean", include_self=False)),
])
def test_bf16_not_differentiated(name, fn):
    """Ops whose bf16 results hookgrad got wrong (a rounding op returning its input, a floor division rounding the
    divisor to bf16) or refused (nn.Parameter of bf16) before issue 22."""
    a = np.random.default_rng(3).standard_normal((4, 8)).astype(np.float32) * 3
    t, h = (fn(L, L.tensor(a).to(L.bfloat16)) for L in (torch, hg))
    assert str(h.dtype) == str(t.dtype)
    np.testing.assert_array_equal(h.detach().float().numpy(), t.detach().float().numpy())


def test_assert_close_bf16():
    x = hg.tensor([1.0, float("nan")]).bfloat16()
    hg.testing.assert_close(x, x.clone(), equal_nan=True)
    with pytest.raises(AssertionError):
        hg.testing.assert_close(x, x + 1, equal_nan=True)


@pytest.mark.parametrize("name, fn", [
    ("cdist", lambda L, x: L.cdist(x, x)),
    ("pdist", lambda L, x: L.nn.functional.pdist(x)),
    ("avg_pool3d", lambda L, x: L.nn.functional.avg_pool3d(x.reshape(1, 1, 2, 4, 4), 2)),
    ("multi_margin_loss", lambda L, x: L.nn.functional.multi_margin_loss(x, L.tensor([0, 1, 2, 3]))),
    ("ctc_loss", lambda L, x: L.nn.functional.ctc_loss(x.reshape(4, 1, 8).log_softmax(2), L.tensor([[1, 2]]),
                                                       L.tensor([4]), L.tensor([2]))),
])
def test_bf16_refused_as_pytorch(name, fn):
    """The CPU kernels PyTorch has in float32 but not in bf16: the same NotImplementedError."""
    msgs = []
    for L in (torch, hg):
        with pytest.raises(NotImplementedError) as e:
            fn(L, L.ones(4, 8, dtype=L.bfloat16))
        msgs.append(str(e.value))
    assert msgs[0] == msgs[1]


@pytest.mark.parametrize("kind", ["LSTM", "GRU", "RNN"])
def test_recurrent_module_bfloat16(kind):
    """Module.bfloat16() and the recurrent layers in bf16 (the fused LSTM cell computes in float32, as PyTorch's)."""
    torch.manual_seed(0)
    tm = getattr(torch.nn, kind)(4, 5, batch_first=True)
    hm = getattr(hg.nn, kind)(4, 5, batch_first=True)
    hm.load_state_dict({k: hg.tensor(v.detach().numpy()) for k, v in tm.state_dict().items()})
    assert hm.bfloat16() is hm
    x = np.random.default_rng(0).standard_normal((3, 6, 4)).astype(np.float32)
    yt, yh = tm.bfloat16()(torch.tensor(x).bfloat16())[0], hm(hg.tensor(x).bfloat16())[0]
    yt.float().sum().backward()
    yh.float().sum().backward()
    assert all(str(p.dtype) == "torch.bfloat16" for p in hm.parameters())
    close(yh, yt, 2, "output")
    for (k, pt), ph in zip(tm.named_parameters(), hm.parameters()):
        _bf16_close(ph.grad, pt.grad, f"gradient of {k}")


def test_mixed_dtype_mm_error():
    for L in (torch, hg):
        with pytest.raises(RuntimeError, match=r"expected m1 and m2 to have the same dtype, but got: "
                                               r"c10::BFloat16 != float"):
            L.mm(L.ones(2, 3).bfloat16(), L.ones(3, 2))


def test_float8_still_refused():
    """PyTorch has no CPU activation/norm kernels for the float8 types: only bfloat16 joined the float kernels."""
    with pytest.raises(NotImplementedError, match="Float8_e4m3fn"):
        torch.nn.functional.gelu(torch.ones(3).to(torch.float8_e4m3fn))
    with pytest.raises(NotImplementedError, match="Float8_e4m3fn"):
        hg.nn.functional.gelu(hg.ones(3).to(hg.float8_e4m3fn))


# ----------------------------------------------------------------------- end to end under CPU autocast (bf16)
def _cnn(L):
    nn = L.nn
    return nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(), nn.MaxPool2d(2),
                         nn.Conv2d(8, 16, 3), nn.BatchNorm2d(16), nn.ReLU(), nn.AdaptiveAvgPool2d(1), nn.Flatten(),
                         nn.Linear(16, 10))


def _encoder(L):
    return L.nn.TransformerEncoderLayer(16, 2, dim_feedforward=32, dropout=0.0, batch_first=True)


def _bf16_close(h, t, what):
    a, b = h.detach().float().numpy(), t.detach().float().numpy()
    assert a.shape == b.shape, what
    np.testing.assert_allclose(a, b, rtol=2e-2, atol=1e-2 * float(np.abs(b).max()), err_msg=what)


@pytest.mark.parametrize("make, shape, loss", [
    (_cnn, (4, 3, 12, 12), lambda L, y: L.nn.functional.cross_entropy(y, L.tensor([1, 3, 5, 7]))),
    # a fixed random projection (the mean square of a LayerNorm's output is constant: its gradient is noise)
    (_encoder, (2, 5, 16), lambda L, y: (y * L.tensor(np.random.default_rng(1).standard_normal((16,)),
                                                          dtype=L.float32)).sum()),
], ids=["cnn", "transformer_encoder_layer"])
def test_model_under_autocast_bf16(make, shape, loss):
    torch.manual_seed(0)
    tm = make(torch)
    hm = make(hg)
    hm.load_state_dict({k: hg.tensor(v.detach().numpy()) for k, v in tm.state_dict().items()})
    x = np.random.default_rng(0).standard_normal(shape).astype(np.float32)
    res = {}
    for L, m in ((torch, tm), (hg, hm)):
        with L.autocast("cpu", dtype=L.bfloat16):
            y = m(L.tensor(x))
            out = loss(L, y)
        out.float().backward()
        res[L] = y, out, {k: p.grad for k, p in m.named_parameters()}
    (yt, lt, gt), (yh, lh, gh) = res[torch], res[hg]
    assert str(yh.dtype) == str(yt.dtype) and str(lh.dtype) == str(lt.dtype)
    _bf16_close(yh, yt, "output")
    _bf16_close(lh, lt, "loss")
    assert gh.keys() == gt.keys()
    for k in gt:
        assert str(gh[k].dtype) == str(gt[k].dtype) == "torch.float32", k
        _bf16_close(gh[k], gt[k], f"gradient of {k}")
