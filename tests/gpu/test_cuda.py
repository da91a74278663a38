"""hookgrad on a CUDA device (CuPy) against torch CUDA: ops, gradients, tensor and module hooks, training steps,
models, checkpoints and DLPack.

Skips unless CuPy imports and sees a GPU and torch has CUDA. TF32 is off on both sides (parity). Run on the GPU
machine: ``PYTHONPATH=src python -m pytest -x -q tests/gpu``. With ``HOOKGRAD_FAKE_CUDA=cupylike`` it runs on a
machine without a GPU instead: hookgrad's "cuda" is the tests' CuPy stand-in and torch runs on the CPU (this
checks the script and hookgrad's device logic, not the GPU).
"""
import io
import os

import numpy as np
import pytest

FAKE = os.environ.get("HOOKGRAD_FAKE_CUDA") == "cupylike"
torch = pytest.importorskip("torch")
if FAKE:
    TDEV = "cpu"
else:
    cupy = pytest.importorskip("cupy", reason="CuPy is not installed: no CUDA device for hookgrad")
    try:
        _n = cupy.cuda.runtime.getDeviceCount()
    except Exception as e:          # no driver / no device
        pytest.skip(f"CuPy sees no CUDA device ({type(e).__name__}: {e})", allow_module_level=True)
    if not _n:
        pytest.skip("CuPy sees no CUDA device", allow_module_level=True)
    if not torch.cuda.is_available():
        pytest.skip("torch has no CUDA here: no oracle", allow_module_level=True)
    TDEV = "cuda"

import hookgrad  # noqa: E402
from hookgrad import _array  # noqa: E402

HDEV = "cuda"
torch.backends.cuda.matmul.allow_tf32 = False
torch.backends.cudnn.allow_tf32 = False
torch.backends.cudnn.deterministic = True


def _on_device(h, what):
    if isinstance(h, hookgrad.Tensor):
        assert h.is_cuda and h.device == hookgrad.device("cuda", 0), f"{what}: on {h.device}"
        assert _array.device_type(h._data) == "cuda", f"{what}: holds a {type(h._data).__name__}"


def _np(t):
    if isinstance(t, torch.Tensor):
        return t.detach().cpu().numpy()
    if isinstance(t, hookgrad.Tensor):
        return t.detach().cpu().numpy()
    return np.asarray(t)


def _flat(o):
    if isinstance(o, (tuple, list)):
        return [y for x in o for y in _flat(x)]
    return [o]


def compare(t, h, what, rtol, atol):
    tl, hl = _flat(t), _flat(h)
    assert len(tl) == len(hl), what
    for i, (a, b) in enumerate(zip(tl, hl)):
        if a is None or b is None:
            assert a is None and b is None, f"{what}[{i}]: {a is None} vs {b is None}"
            continue
        if not isinstance(a, torch.Tensor):
            continue
        _on_device(b, f"{what}[{i}]")
        assert str(a.dtype) == str(b.dtype), f"{what}[{i}]: {a.dtype} vs {b.dtype}"
        assert tuple(a.shape) == tuple(b.shape), f"{what}[{i}]: {tuple(a.shape)} vs {tuple(b.shape)}"
        x, y = _np(a), _np(b)
        if x.dtype.kind in "fc":
            np.testing.assert_allclose(y, x, rtol=rtol, atol=atol, err_msg=f"{what}[{i}]")
        else:
            np.testing.assert_array_equal(y, x, err_msg=f"{what}[{i}]")


def check(fn, *arrays, rtol=1e-4, atol=1e-5, grad=True):
    """fn(L, *tensors) under torch (TDEV) and hookgrad ("cuda"); outputs and every input gradient compared; every
    hookgrad output and gradient must be on the device."""
    res = {}
    for L, dev in ((torch, TDEV), (hookgrad, HDEV)):
        ts = [L.tensor(a, device=dev, requires_grad=grad and a.dtype.kind == "f") if isinstance(a, np.ndarray)
              else a for a in arrays]
        out = fn(L, *ts)
        grads = []
        if grad:
            outs = [o for o in _flat(out) if isinstance(o, L.Tensor) and o.requires_grad]
            if outs:
                loss = sum((o * L.cos(L.arange(o.numel(), device=dev, dtype=o.dtype).reshape(o.shape))).sum()
                           for o in outs)
                loss.backward()
                grads = [t.grad for t in ts if isinstance(t, L.Tensor) and t.requires_grad]
        res[L] = (out, grads)
    compare(res[torch][0], res[hookgrad][0], "output", rtol, atol)
    compare(res[torch][1], res[hookgrad][1], "grad", rtol, atol)


R = np.random.default_rng(0)


def f32(*s):
    return R.standard_normal(s).astype(np.float32)


def f64(*s):
    return R.standard_normal(s)


def test_device_api():
    assert hookgrad.cuda.is_available() and hookgrad.cuda.device_count() >= 1
    assert hookgrad.cuda.current_device() == 0
    x = hookgrad.ones(1024, 1024, device="cuda")
    _on_device(x, "ones")
    assert hookgrad.cuda.memory_allocated() >= 4 * 1024 * 1024 or FAKE
    assert hookgrad.cuda.max_memory_allocated() >= hookgrad.cuda.memory_allocated()
    del x
    hookgrad.cuda.synchronize()
    hookgrad.cuda.empty_cache()
    hookgrad.cuda.manual_seed(3)
    a = hookgrad.randn(5, device="cuda").cpu().numpy()
    hookgrad.cuda.manual_seed_all(3)
    np.testing.assert_array_equal(a, hookgrad.randn(5, device="cuda").cpu().numpy())
    with pytest.raises(RuntimeError, match="Expected all tensors to be on the same device, but found at least two "
                                           "devices, cuda:0 and cpu!"):
        hookgrad.ones(3, device="cuda") + hookgrad.ones(3)
    with pytest.raises(TypeError, match="can't convert cuda:0 device type tensor to numpy"):
        hookgrad.ones(2, device="cuda").numpy()
    assert FAKE or repr(hookgrad.ones(2, device="cuda")) == repr(torch.ones(2, device="cuda"))
    c = hookgrad.tensor([1.0, 2.0], requires_grad=True)
    g = c.cuda()
    assert type(g.grad_fn).__name__ == "ToCopyBackward0"
    (g * g).sum().backward()
    assert not c.grad.is_cuda and c.grad.tolist() == [2.0, 4.0]


ELEMENTWISE = {
    "chain": lambda L, x, y: (x * y + x / (y.abs() + 1) - x.exp() * 0.1).tanh().sigmoid(),
    "pow_where_clamp": lambda L, x, y: L.where(x > 0, x.abs() ** 1.5, y.clamp(-0.5, 0.5)),
    "activations": lambda L, x, y: (L.nn.functional.gelu(x), L.nn.functional.silu(y), L.relu(x), x.log1p().nan_to_num()),
    "broadcast": lambda L, x, y: x[:, :1] * y[:1] + x.sqrt().nan_to_num(),
}


@pytest.mark.parametrize("name", list(ELEMENTWISE))
@pytest.mark.parametrize("dt", ["float32", "float64"])
def test_elementwise(name, dt):
    check(ELEMENTWISE[name], f64(16, 32).astype(dt), f64(16, 32).astype(dt))


REDUCTIONS = {
    "sum_mean": lambda L, x: (x.sum(), x.mean(1), x.sum((0, 2), keepdim=True)),
    "var_std": lambda L, x: (x.var(0), x.std(2, keepdim=True)),
    "max_min": lambda L, x: (x.max(1).values, x.amin(2), x.max()),
    "logsumexp_norm": lambda L, x: (x.logsumexp(1), x.norm(dim=2), L.linalg.vector_norm(x)),
    "cumsum_prod": lambda L, x: (x.cumsum(1), (x * 0.1 + 1).prod(2)),
    "argmax_sort": lambda L, x: (x.argmax(1), x.sort(2).values, x.topk(3, dim=1).values),
}


@pytest.mark.parametrize("name", list(REDUCTIONS))
def test_reductions(name):
    check(REDUCTIONS[name], f64(4, 8, 16).astype(np.float32))


def test_matmul_family():
    check(lambda L, a, b: (a @ b, L.bmm(a, b), L.einsum("bij,bjk->bik", a, b)), f32(3, 64, 48), f32(3, 48, 32),
          rtol=1e-4, atol=1e-4)
    check(lambda L, a, w, b: L.nn.functional.linear(a, w, b), f32(32, 128), f32(64, 128), f32(64), atol=1e-4)
    check(lambda L, a, b: a @ b, f64(256, 256), f64(256, 256), rtol=1e-10, atol=1e-10)


CONV = {
    "conv2d": lambda L, x, w: L.nn.functional.conv2d(x, w, padding=1),
    "conv2d_stride": lambda L, x, w: L.nn.functional.conv2d(x, w, stride=2, dilation=1),
    "conv2d_groups": lambda L, x, w: L.nn.functional.conv2d(x, w[:, :2], groups=2, padding=2, dilation=2),
    "conv_transpose": lambda L, x, w: L.nn.functional.conv_transpose2d(x, w.transpose(0, 1), stride=2, padding=1),
    "maxpool": lambda L, x, w: L.nn.functional.max_pool2d(x, 3, 2, 1),
    "avgpool": lambda L, x, w: L.nn.functional.avg_pool2d(x, 2),
    "adaptive": lambda L, x, w: L.nn.functional.adaptive_avg_pool2d(x, (3, 5)),
    "conv1d": lambda L, x, w: L.nn.functional.conv1d(x[:, :, 0], w[:, :, 0], padding=1),
}


@pytest.mark.parametrize("name", list(CONV))
def test_conv_pool(name):
    check(CONV[name], f32(4, 4, 16, 16), f32(6, 4, 3, 3), rtol=1e-3, atol=1e-4)


def test_softmax_norms_losses():
    x = f32(8, 10)
    t = R.integers(0, 10, 8)
    check(lambda L, x: (x.softmax(-1), x.log_softmax(0)), x)
    check(lambda L, x, t: L.nn.functional.cross_entropy(x, t), x, t)
    check(lambda L, x, t: L.nn.functional.nll_loss(x.log_softmax(1), t, ignore_index=2), x, t)
    check(lambda L, x, w, b: L.nn.functional.layer_norm(x, (10,), w, b), x, f32(10), f32(10))
    check(lambda L, x, w, b: L.nn.functional.batch_norm(x, None, None, w, b, training=True), f32(8, 3, 5, 5), f32(3),
          f32(3), atol=1e-4)
    check(lambda L, x, y: (L.nn.functional.mse_loss(x, y), L.nn.functional.binary_cross_entropy_with_logits(x, y.sigmoid())),
          x, f32(8, 10))


def test_embedding_indexing():
    w = f32(20, 8)
    idx = R.integers(0, 20, (4, 6))
    check(lambda L, w, i: L.nn.functional.embedding(i, w), w, idx)
    check(lambda L, w, i: (w[i[0]], w[2:9:3], w[w[:, 0] > 0], w.index_select(0, i[1]), w.gather(1, i[:, :4] % 8)),
          w, idx)
    check(lambda L, w, i: L.zeros(20, 8, device=w.device).scatter_add(0, (i[:, :4] % 8).repeat(5, 2)[:20], w), w, idx)
    check(lambda L, w, i: w.masked_fill(w > 0.5, 0.0).index_add(0, i[0], w[:6]), w, idx)


def _copy_module(tm, hm, dev):
    sd = {k: hookgrad.tensor(v.detach().cpu().numpy()) for k, v in tm.state_dict().items()}
    hm.load_state_dict(sd)
    return hm.to(dev)


def test_lstm_mha_transformer():
    x = f32(5, 3, 8)
    res = {}
    for L, dev in ((torch, TDEV), (hookgrad, HDEV)):
        L.manual_seed(0)
        res[L] = (L.nn.LSTM(8, 16, num_layers=2, batch_first=False), L.nn.MultiheadAttention(8, 2),
                  L.nn.TransformerEncoderLayer(8, 2, 32, dropout=0.0))
    mods = [(t, _copy_module(t, h, HDEV)) for t, h in zip(res[torch], res[hookgrad])]
    for t, _ in mods:
        t.to(TDEV)

    def run(L, x, which):
        m = dict(zip((torch, hookgrad), mods[which]))[L] if False else mods[which][0 if L is torch else 1]
        if which == 0:
            out, (h, c) = m(x)
            return out, h, c
        if which == 1:
            return m(x, x, x)[0]
        return m(x)
    for which in range(3):
        check(lambda L, x: run(L, x, which), x, rtol=1e-3, atol=1e-4)


def test_tensor_and_module_hooks():
    """The same hooks fire in the same order with the same shapes and values on both devices."""
    xs = f32(6, 10)
    logs = {}
    torch.manual_seed(0)
    tm = torch.nn.Sequential(torch.nn.Linear(10, 8), torch.nn.Tanh(), torch.nn.Linear(8, 4))
    for L, dev in ((torch, TDEV), (hookgrad, HDEV)):
        m = tm.to(dev) if L is torch else _copy_module(tm, hookgrad.nn.Sequential(
            hookgrad.nn.Linear(10, 8), hookgrad.nn.Tanh(), hookgrad.nn.Linear(8, 4)), dev)
        log = []
        m[0].register_forward_pre_hook(lambda mod, i: log.append(("pre", _np(i[0]).sum())))
        m[1].register_forward_hook(lambda mod, i, o: log.append(("fwd", _np(o).sum())))
        m[2].register_full_backward_pre_hook(lambda mod, go: log.append(("bpre", _np(go[0]).sum())))
        m[0].register_full_backward_hook(lambda mod, gi, go: log.append(("bwd", _np(go[0]).sum())))
        x = L.tensor(xs, device=dev, requires_grad=True)
        x.register_hook(lambda g: log.append(("x", _np(g).sum())))
        y = m(x)
        y.register_hook(lambda g: g * 2)            # a hook that changes the gradient
        m[0].weight.register_post_accumulate_grad_hook(lambda p: log.append(("acc", _np(p.grad).sum())))
        (y ** 2).sum().backward()
        logs[L] = log
        if L is hookgrad:
            assert x.grad.is_cuda and m[0].weight.grad.is_cuda
    assert [k for k, _ in logs[torch]] == [k for k, _ in logs[hookgrad]]
    for (k, a), (_, b) in zip(logs[torch], logs[hookgrad]):
        np.testing.assert_allclose(b, a, rtol=1e-4, atol=1e-4, err_msg=k)


def test_double_backward():
    check(lambda L, x: L.autograd.grad((x.tanh() ** 3).sum(), x, create_graph=True)[0], f64(5, 4))


@pytest.mark.parametrize("kind", ["mlp_sgd", "cnn_adam", "mlp_adamw"])
def test_training_steps(kind):
    rng = np.random.default_rng(1)
    if kind == "cnn_adam":
        xs, ys = rng.standard_normal((8, 1, 12, 12)).astype(np.float32), rng.integers(0, 10, 8)
    else:
        xs, ys = rng.standard_normal((16, 784)).astype(np.float32), rng.integers(0, 10, 16)
    res = {}
    for L, dev in ((torch, TDEV), (hookgrad, HDEV)):
        nn = L.nn
        L.manual_seed(0)
        if kind == "cnn_adam":
            m = nn.Sequential(nn.Conv2d(1, 8, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2), nn.Conv2d(8, 8, 3, bias=False),
                              nn.BatchNorm2d(8), nn.ReLU(), nn.Flatten(), nn.Linear(8 * 4 * 4, 10))
        else:
            m = nn.Sequential(nn.Linear(784, 256), nn.ReLU(), nn.Linear(256, 128), nn.ReLU(), nn.Linear(128, 10))
        res[L] = [m]
    _copy_module(res[torch][0], res[hookgrad][0], HDEV)
    res[torch][0].to(TDEV)
    out = {}
    for L, dev in ((torch, TDEV), (hookgrad, HDEV)):
        m = res[L][0]
        opt = (L.optim.SGD(m.parameters(), lr=0.05, momentum=0.9) if kind == "mlp_sgd" else
               L.optim.Adam(m.parameters(), lr=1e-3) if kind == "cnn_adam" else
               L.optim.AdamW(m.parameters(), lr=1e-3, weight_decay=0.01))
        x, y = L.tensor(xs, device=dev), L.tensor(ys, device=dev)
        losses = []
        for _ in range(3):
            opt.zero_grad()
            loss = L.nn.functional.cross_entropy(m(x), y)
            loss.backward()
            opt.step()
            losses.append(loss.item())
        if L is hookgrad:
            for p in m.parameters():
                _on_device(p, "parameter")
                for v in opt.state[p].values():
                    if isinstance(v, hookgrad.Tensor) and v.dim():
                        _on_device(v, "optimizer state")
        out[L] = (losses, [_np(p) for p in m.parameters()])
    np.testing.assert_allclose(out[hookgrad][0], out[torch][0], rtol=1e-4, atol=1e-5)
    for a, b in zip(out[torch][1], out[hookgrad][1]):
        np.testing.assert_allclose(b, a, rtol=1e-3, atol=1e-5)


def test_resnet18_and_bert_match_the_cpu():
    """hookgrad.models on the GPU give the CPU backend's values (same weights)."""
    from hookgrad.models import resnet18
    from hookgrad.models.bert import BertConfig, BertModel
    hookgrad.manual_seed(0)
    net = resnet18().eval()
    x = hookgrad.randn(2, 3, 64, 64)
    with hookgrad.no_grad():
        want = net(x).numpy()
        net.cuda()
        got = net(x.cuda())
    _on_device(got, "resnet18")
    np.testing.assert_allclose(got.cpu().numpy(), want, rtol=1e-3, atol=1e-3)
    hookgrad.manual_seed(0)
    bert = BertModel(BertConfig(vocab_size=1000, hidden_size=64, num_hidden_layers=2, num_attention_heads=4,
                                intermediate_size=128)).eval()
    ids = hookgrad.randint(0, 1000, (2, 16))
    mask = hookgrad.ones(2, 16, dtype=hookgrad.int64)
    with hookgrad.no_grad():
        want = bert(ids, mask).last_hidden_state.numpy()
        bert.cuda()
        got = bert(ids.cuda(), mask.cuda()).last_hidden_state
    _on_device(got, "bert")
    np.testing.assert_allclose(got.cpu().numpy(), want, rtol=1e-3, atol=1e-3)
    # a training step of ResNet-18 on the device, with a module hook
    net.train()
    seen = []
    net.layer1.register_full_backward_hook(lambda m, gi, go: seen.append(go[0].is_cuda))
    out = net(hookgrad.randn(2, 3, 64, 64, device="cuda"))
    out.sum().backward()
    assert seen == [True] and net.conv1.weight.grad.is_cuda


def test_save_load_map_location(tmp_path):
    t = hookgrad.arange(12, dtype=hookgrad.float32, device="cuda").reshape(3, 4)
    p = str(tmp_path / "ck.pt")
    hookgrad.save({"w": t, "b": t[1]}, p)
    back = hookgrad.load(p)
    _on_device(back["w"], "load")
    assert back["w"].tolist() == t.tolist() and back["b"].tolist() == t[1].tolist()
    cpu = hookgrad.load(p, map_location="cpu")
    assert not cpu["w"].is_cuda and cpu["w"].tolist() == t.tolist()
    if not FAKE:        # torch reads hookgrad's CUDA checkpoint onto its own device, and the other way round
        tt = torch.load(p, map_location="cuda")
        assert tt["w"].is_cuda and tt["w"].tolist() == t.tolist()
        buf = io.BytesIO()
        torch.save({"w": torch.arange(4.0, device="cuda")}, buf)
        buf.seek(0)
        hw = hookgrad.load(buf)["w"]
        _on_device(hw, "load of torch's file")
        assert hw.tolist() == [0.0, 1.0, 2.0, 3.0]
    m = hookgrad.nn.Linear(3, 2).cuda()
    hookgrad.save(m.state_dict(), p)
    m2 = hookgrad.nn.Linear(3, 2).cuda()
    m2.load_state_dict(hookgrad.load(p, map_location="cpu"))
    assert m2.weight.is_cuda and m2.weight.tolist() == m.weight.tolist()


@pytest.mark.skipif(FAKE, reason="DLPack to torch CUDA needs a GPU")
def test_dlpack_with_torch_is_zero_copy():
    h = hookgrad.arange(6, dtype=hookgrad.float32, device="cuda")
    assert h.__dlpack_device__()[0] == 2        # kDLCUDA
    t = torch.from_dlpack(h)
    assert t.is_cuda and t.data_ptr() == h.data_ptr()
    t[0] = 42.0
    torch.cuda.synchronize()
    assert h[0].item() == 42.0
    src = torch.arange(4.0, device="cuda")
    h2 = hookgrad.from_dlpack(src)
    _on_device(h2, "from_dlpack")
    assert h2.data_ptr() == src.data_ptr()
    h2.add_(1.0)
    hookgrad.cuda.synchronize()
    assert src.tolist() == [1.0, 2.0, 3.0, 4.0]
