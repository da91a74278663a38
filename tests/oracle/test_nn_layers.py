"""nn layers vs torch: same weights in, same outputs and gradients (input and every parameter) out, in train and
eval mode, float32 and float64; reprs, state_dict keys, running statistics and error messages."""
import copy

import numpy as np
import pytest
import torch

import hookgrad
from oracle import assert_same

R = np.random.default_rng(0)


def rn(*s, dt=np.float64):
    return R.standard_normal(s).astype(dt)


def sync(tm, hm):
    """Copy torch's parameters and buffers into the hookgrad module (by name)."""
    hs = dict(hm.named_parameters())
    hs.update(dict(hm.named_buffers()))
    ts = dict(tm.named_parameters())
    ts.update(dict(tm.named_buffers()))
    assert sorted(hs) == sorted(ts)
    for k, t in ts.items():
        hs[k]._data[...] = t.detach().numpy()


def run_layer(make, inputs, dt=np.float64, train=True, tol=None, kw=None, grad_inputs=True, out_index=None):
    """Build make(lib) under both libraries, sync weights, compare outputs and all gradients."""
    kw = kw or {}
    tm, hm = make(torch), make(hookgrad)
    tdt = torch.float64 if dt == np.float64 else torch.float32
    tm.to(tdt)
    hm.to(hookgrad.float64 if dt == np.float64 else hookgrad.float32)
    sync(tm, hm)
    tm.train(train)
    hm.train(train)
    arrs = [a.astype(dt) if isinstance(a, np.ndarray) and a.dtype.kind == "f" else a for a in inputs]
    t_in = [torch.tensor(a, requires_grad=grad_inputs and a.dtype.kind == "f") for a in arrs]
    h_in = [hookgrad.tensor(a, requires_grad=grad_inputs and a.dtype.kind == "f") for a in arrs]
    to, ho = tm(*t_in, **kw), hm(*h_in, **kw)
    if out_index is not None:
        to, ho = to[out_index], ho[out_index]
    assert_same(to, ho, "output", tol)
    seed = R.standard_normal(tuple(to.shape)).astype(dt)
    tl = [t for t in t_in if t.requires_grad] + [p for _, p in tm.named_parameters()]
    hl = [t for t in h_in if t.requires_grad] + [p for _, p in hm.named_parameters()]
    tg = torch.autograd.grad(to, tl, torch.tensor(seed), allow_unused=True)
    hg = hookgrad.autograd.grad(ho, hl, hookgrad.tensor(seed), allow_unused=True)
    names = ["input"] * (len(tl) - len(list(tm.parameters()))) + [n for n, _ in tm.named_parameters()]
    for n, a, b in zip(names, tg, hg):
        assert_same(a, b, f"grad of {n}", tol)
    for (n, b1), (_, b2) in zip(tm.named_buffers(), hm.named_buffers()):
        assert_same(b1, b2, f"buffer {n}", tol)
    return tm, hm


DTS = [np.float64, np.float32]
F32TOL = (2e-4, 2e-5)


def tol_of(dt):
    return F32TOL if dt == np.float32 else None


LAYERS = {
    "linear": (lambda L: L.nn.Linear(5, 3), [(4, 5)]),
    "linear3d_nobias": (lambda L: L.nn.Linear(5, 3, bias=False), [(2, 4, 5)]),
    "bilinear": (lambda L: L.nn.Bilinear(3, 2, 4), [(5, 3), (5, 2)]),
    "conv1d": (lambda L: L.nn.Conv1d(3, 4, 3, stride=2, padding=1), [(2, 3, 9)]),
    "conv2d": (lambda L: L.nn.Conv2d(3, 4, 3, padding=1), [(2, 3, 6, 5)]),
    "conv2d_same_dil_groups": (lambda L: L.nn.Conv2d(4, 6, (3, 2), padding="same", dilation=2, groups=2,
                                                     bias=False), [(2, 4, 6, 5)]),
    "conv2d_reflect": (lambda L: L.nn.Conv2d(2, 3, 3, padding=1, padding_mode="reflect"), [(2, 2, 5, 5)]),
    "conv_transpose2d": (lambda L: L.nn.ConvTranspose2d(3, 2, 3, stride=2, padding=1, output_padding=1),
                         [(2, 3, 4, 5)]),
    "maxpool2d": (lambda L: L.nn.MaxPool2d(2), [(2, 3, 6, 6)]),
    "maxpool1d": (lambda L: L.nn.MaxPool1d(3, 2, 1), [(2, 3, 9)]),
    "avgpool2d": (lambda L: L.nn.AvgPool2d(3, 2, 1), [(2, 3, 7, 6)]),
    "adaptiveavg": (lambda L: L.nn.AdaptiveAvgPool2d((2, 3)), [(2, 3, 7, 6)]),
    "adaptivemax": (lambda L: L.nn.AdaptiveMaxPool2d(3), [(2, 3, 7, 6)]),
    "batchnorm1d": (lambda L: L.nn.BatchNorm1d(3), [(5, 3)]),
    "batchnorm1d_3d": (lambda L: L.nn.BatchNorm1d(3, momentum=None), [(5, 3, 4)]),
    "batchnorm2d": (lambda L: L.nn.BatchNorm2d(3), [(4, 3, 2, 3)]),
    "batchnorm2d_noaffine_notrack": (lambda L: L.nn.BatchNorm2d(3, affine=False, track_running_stats=False),
                                     [(4, 3, 2, 3)]),
    "layernorm": (lambda L: L.nn.LayerNorm((3, 4)), [(2, 3, 4)]),
    "layernorm_nobias": (lambda L: L.nn.LayerNorm(4, bias=False), [(2, 3, 4)]),
    "groupnorm": (lambda L: L.nn.GroupNorm(2, 4), [(3, 4, 5)]),
    "prelu": (lambda L: L.nn.PReLU(3), [(2, 3, 4)]),
    "flatten": (lambda L: L.nn.Flatten(), [(2, 3, 4)]),
    "unflatten": (lambda L: L.nn.Unflatten(1, (2, 3)), [(2, 6, 4)]),
    "upsample_nearest": (lambda L: L.nn.Upsample(scale_factor=2), [(2, 3, 3, 4)]),
    "upsample_bilinear_ac": (lambda L: L.nn.Upsample(size=(5, 7), mode="bilinear", align_corners=True),
                             [(2, 3, 3, 4)]),
    "identity": (lambda L: L.nn.Identity(3, foo=1), [(2, 3)]),
    "dropout_p0": (lambda L: L.nn.Dropout(0.0), [(3, 4)]),
    "softmax": (lambda L: L.nn.Softmax(dim=1), [(3, 4)]),
    "logsoftmax": (lambda L: L.nn.LogSoftmax(dim=-1), [(3, 4)]),
    "seq": (lambda L: L.nn.Sequential(L.nn.Conv2d(1, 4, 3, padding=1), L.nn.ReLU(), L.nn.MaxPool2d(2),
                                      L.nn.Flatten(), L.nn.Linear(16, 3)), [(2, 1, 4, 4)]),
}
ACT = ["ReLU", "ReLU6", "LeakyReLU", "ELU", "GELU", "SiLU", "Mish", "Tanh", "Sigmoid", "Hardswish", "Softplus"]


@pytest.mark.parametrize("train", [True, False], ids=["train", "eval"])
@pytest.mark.parametrize("dt", DTS, ids=["f64", "f32"])
@pytest.mark.parametrize("name", list(LAYERS))
def test_layer(name, dt, train):
    make, shapes = LAYERS[name]
    run_layer(make, [rn(*s) for s in shapes], dt, train, tol_of(dt))


@pytest.mark.parametrize("name", ACT)
def test_activation_layers(name):
    run_layer(lambda L: getattr(L.nn, name)(), [rn(3, 4) * 3])


def test_embedding_layer():
    idx = np.array([[0, 2, 2], [4, 0, 1]])
    for pad in (None, 2):
        tm, hm = run_layer(lambda L: L.nn.Embedding(5, 3, padding_idx=pad), [idx], grad_inputs=False)
    hm(hookgrad.tensor(idx)).sum().backward()
    assert (hm.weight.grad.numpy()[2] == 0).all() and (hm.weight.grad.numpy()[0] == 2).all()


def test_batchnorm_running_stats_momentum_none_and_eval():
    tm, hm = torch.nn.BatchNorm2d(3, momentum=None).double(), hookgrad.nn.BatchNorm2d(3, momentum=None).double()
    for i in range(3):
        x = rn(4, 3, 2, 2) * (i + 1) + i
        assert_same(tm(torch.tensor(x)), hm(hookgrad.tensor(x)))
    for k in ("running_mean", "running_var", "num_batches_tracked"):
        assert_same(getattr(tm, k), getattr(hm, k), k)
    tm.eval()
    hm.eval()
    x = rn(2, 3, 2, 2)
    assert_same(tm(torch.tensor(x)), hm(hookgrad.tensor(x)))
    assert int(hm.num_batches_tracked) == 3


def test_multihead_attention():
    E, H = 8, 2
    kpm = np.array([[False, False, True, False, True], [False] * 5])
    am = np.triu(np.ones((4, 5), bool), 2)
    for bf in (False, True):
        for nw, avg in ((True, True), (True, False), (False, True)):
            def make(L):
                return L.nn.MultiheadAttention(E, H, batch_first=bf)
            q, kv = (rn(2, 4, E), rn(2, 5, E)) if bf else (rn(4, 2, E), rn(5, 2, E))
            tm, hm = make(torch).double(), make(hookgrad).double()
            sync(tm, hm)
            tq, tk = torch.tensor(q, requires_grad=True), torch.tensor(kv, requires_grad=True)
            hq, hk = hookgrad.tensor(q, requires_grad=True), hookgrad.tensor(kv, requires_grad=True)
            to = tm(tq, tk, tk, key_padding_mask=torch.tensor(kpm), attn_mask=torch.tensor(am), need_weights=nw,
                    average_attn_weights=avg)
            ho = hm(hq, hk, hk, key_padding_mask=hookgrad.tensor(kpm), attn_mask=hookgrad.tensor(am), need_weights=nw,
                    average_attn_weights=avg)
            assert_same(to[0], ho[0], "attn output")
            assert_same(to[1], ho[1], "attn weights")
            tl = [tq, tk] + list(tm.parameters())
            hl = [hq, hk] + list(hm.parameters())
            s = rn(*to[0].shape)
            for a, b in zip(torch.autograd.grad(to[0], tl, torch.tensor(s)),
                            hookgrad.autograd.grad(ho[0], hl, hookgrad.tensor(s))):
                assert_same(a, b, "mha grad")
    # self-attention, unbatched
    run_layer(lambda L: L.nn.MultiheadAttention(E, H), [rn(4, E)] * 3, out_index=0)


@pytest.mark.parametrize("norm_first", [False, True])
@pytest.mark.parametrize("act", ["relu", "gelu"])
def test_transformer_encoder(norm_first, act):
    def make(L):
        layer = L.nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0, activation=act, batch_first=True,
                                             norm_first=norm_first)
        return L.nn.TransformerEncoder(layer, 2, enable_nested_tensor=False)
    kpm = np.array([[False, False, True], [False] * 3])
    run_layer(make, [rn(2, 3, 8)], kw={"src_key_padding_mask": None})
    tm, hm = make(torch).double(), make(hookgrad).double()
    sync(tm, hm)
    x = rn(2, 3, 8)
    assert_same(tm(torch.tensor(x), src_key_padding_mask=torch.tensor(kpm)),
                hm(hookgrad.tensor(x), src_key_padding_mask=hookgrad.tensor(kpm)))


LOSSES = [("MSELoss", {}), ("L1Loss", {"reduction": "sum"}), ("SmoothL1Loss", {"beta": 0.5}), ("HuberLoss", {}),
          ("KLDivLoss", {"reduction": "batchmean", "log_target": True})]


@pytest.mark.parametrize("name,kw", LOSSES)
def test_loss_layers(name, kw):
    run_layer(lambda L: getattr(L.nn, name)(**kw), [rn(3, 4), rn(3, 4)])


def test_classification_loss_layers():
    t = np.array([1, 0, 3])
    w = np.array([0.5, 1.0, 2.0, 1.5])
    run_layer(lambda L: L.nn.CrossEntropyLoss(weight=L.tensor(w), label_smoothing=0.1), [rn(3, 4), t])
    run_layer(lambda L: L.nn.NLLLoss(ignore_index=0), [rn(3, 4), t])
    p = 1 / (1 + np.exp(-rn(3, 4)))
    run_layer(lambda L: L.nn.BCELoss(), [p, R.random((3, 4))])
    run_layer(lambda L: L.nn.BCEWithLogitsLoss(pos_weight=L.tensor(w)), [rn(3, 4), R.random((3, 4))])
    run_layer(lambda L: L.nn.CosineEmbeddingLoss(0.2), [rn(3, 4), rn(3, 4), np.array([1, -1, 1])])
    assert list(hookgrad.nn.CrossEntropyLoss(weight=hookgrad.ones(3)).state_dict()) == ["weight"]


# ------------------------------------------------------------------------------------ reprs, keys
REPRS = [
    "Linear(10, 20)", "Linear(3, 4, bias=False)", "Bilinear(2, 3, 4)", "Conv2d(1, 8, 3, padding=1)",
    "Conv2d(4, 8, (3, 2), stride=2, dilation=2, groups=2, bias=False, padding_mode='reflect')",
    "Conv1d(2, 3, 3, padding='same')", "ConvTranspose2d(2, 3, 3, stride=2, output_padding=1)",
    "MaxPool2d(2)", "MaxPool1d(3, 2, 1, ceil_mode=True)", "AvgPool2d(3, 2)", "AdaptiveAvgPool2d((2, 3))",
    "AdaptiveMaxPool2d(3)", "BatchNorm2d(8)", "BatchNorm1d(3, momentum=None, affine=False)", "LayerNorm(5)",
    "LayerNorm((2, 3), eps=1e-6, elementwise_affine=False)", "GroupNorm(2, 4)", "Dropout()", "Dropout2d(0.2)",
    "Embedding(10, 3, padding_idx=0)", "ReLU()", "ReLU(inplace=True)", "ReLU6()", "LeakyReLU(0.2)", "PReLU()",
    "ELU()", "GELU(approximate='tanh')", "SiLU()", "Mish()", "Tanh()", "Sigmoid()", "Hardswish()", "Softmax(dim=1)",
    "LogSoftmax(1)", "Softplus()", "Flatten()", "Unflatten(1, (2, 3))", "Upsample(scale_factor=2)",
    "Upsample(size=(4, 5), mode='bilinear', align_corners=True)", "MultiheadAttention(8, 2)", "Identity()",
    "TransformerEncoderLayer(8, 2, 16)", "MSELoss()", "CrossEntropyLoss(label_smoothing=0.1)", "BCEWithLogitsLoss()",
]


@pytest.mark.parametrize("expr", REPRS)
def test_repr_and_state_dict_keys(expr):
    t, h = eval("torch.nn." + expr), eval("hookgrad.nn." + expr)
    assert repr(h) == repr(t)
    assert list(h.state_dict()) == list(t.state_dict())
    for (k, a), (_, b) in zip(t.state_dict().items(), h.state_dict().items()):
        assert tuple(a.shape) == tuple(b.shape) and str(a.dtype) == str(b.dtype), k


def test_transformer_encoder_state_dict_and_deepcopy():
    t = torch.nn.TransformerEncoder(torch.nn.TransformerEncoderLayer(8, 2, 16), 2, enable_nested_tensor=False)
    h = hookgrad.nn.TransformerEncoder(hookgrad.nn.TransformerEncoderLayer(8, 2, 16), 2)
    assert list(h.state_dict()) == list(t.state_dict())
    assert repr(h) == repr(t)
    assert h.layers[0].linear1.weight is not h.layers[1].linear1.weight
    copy.deepcopy(h)


# ---------------------------------------------------------------------------------------- errors
def test_linear_shape_error_names_layer():
    for L in (torch, hookgrad):
        with pytest.raises(RuntimeError, match=r"mat1 and mat2 shapes cannot be multiplied \(4x3 and 5x2\)"):
            L.nn.Linear(5, 2)(L.randn(4, 3))
    with pytest.raises(RuntimeError, match=r"in Linear\(in_features=5, out_features=2, bias=True\).*\[4, 3\]"):
        hookgrad.nn.Linear(5, 2)(hookgrad.randn(4, 3))


def test_layer_errors_match_torch_types():
    cases = [
        (lambda L: L.nn.Conv2d(3, 4, 3), lambda L: L.randn(2, 2, 5, 5), RuntimeError, "expected input"),
        (lambda L: L.nn.BatchNorm2d(3), lambda L: L.randn(2, 3), ValueError, "expected 4D input \\(got 2D input\\)"),
        (lambda L: L.nn.BatchNorm1d(3), lambda L: L.randn(2, 3, 4, 5), ValueError, "expected 2D or 3D input"),
        (lambda L: L.nn.LayerNorm(4), lambda L: L.randn(2, 5), RuntimeError,
         r"Given normalized_shape=\[4\], expected input with shape \[\*, 4\], but got input of size\[2, 5\]"),
        (lambda L: L.nn.GroupNorm(2, 4), lambda L: L.randn(2, 3, 4), RuntimeError, "divisible by num_groups"),
        (lambda L: L.nn.Embedding(3, 2), lambda L: L.tensor([3]), IndexError, "index out of range in self"),
        (lambda L: L.nn.MaxPool2d(2), lambda L: L.randn(2, 2), RuntimeError, "3D or 4D"),
    ]
    for mod, inp, exc, msg in cases:
        for L in (torch, hookgrad):
            with pytest.raises(exc, match=msg):
                mod(L)(inp(L))
    with pytest.raises(RuntimeError, match=r"hookgrad: in Conv2d\(3, 4, kernel_size=\(3, 3\).*\[2, 2, 5, 5\]"):
        hookgrad.nn.Conv2d(3, 4, 3)(hookgrad.randn(2, 2, 5, 5))
