"""tools.TokenGradCAM: Grad-CAM on a transformer layer's tokens (prefix tokens dropped, non-square grids),
on hookgrad and torch models of the same weights, against Grad-CAM computed by hand."""
import numpy as np
import pytest
import torch

import hookgrad
from hookgrad.tools.gradcam_tokens import TokenGradCAM, tokens_to_grid

torch.set_num_threads(1)
LIBS = pytest.mark.parametrize("lib", [torch, hookgrad], ids=["torch", "hookgrad"])
D, P = 8, 4


def vit(lib, prefix=2):
    nn = lib.nn

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.norm1 = nn.LayerNorm(D)
            self.attn = nn.MultiheadAttention(D, 2, batch_first=True)
            self.norm2 = nn.LayerNorm(D)
            self.mlp = nn.Sequential(nn.Linear(D, 2 * D), nn.GELU(), nn.Linear(2 * D, D))

        def forward(self, x):
            h = self.norm1(x)
            x = x + self.attn(h, h, h, need_weights=False)[0]
            return x + self.mlp(self.norm2(x))

    class ViT(nn.Module):
        def __init__(self):
            super().__init__()
            self.patch = nn.Conv2d(3, D, P, stride=P)
            self.prefix = nn.Parameter(lib.randn(1, prefix, D) * 0.1)      # CLS + a register token
            self.blocks = nn.Sequential(Block(), Block())
            self.head = nn.Linear(D, 5)

        def forward(self, img):
            t = self.patch(img).flatten(2).transpose(1, 2)                # (N, h*w, D), row by row
            x = self.blocks(lib.cat([self.prefix.expand(t.shape[0], -1, -1), t], 1))
            return self.head(x[:, 0])
    return ViT()


def pair():
    torch.manual_seed(0)
    t, h = vit(torch), vit(hookgrad)
    h.load_state_dict({k: hookgrad.tensor(v.detach().numpy().copy()) for k, v in t.state_dict().items()})
    return t.eval(), h.eval()


IMG = np.random.RandomState(0).randn(2, 3, 8, 12).astype(np.float32)     # 2 x 3 patches: not square


def by_hand(lib, m, x, cls):
    """Grad-CAM at blocks.0's output, computed with a plain forward hook and autograd.grad."""
    keep = {}

    def hook(mod, a, out):
        keep["a"] = out
    h = m.blocks[0].register_forward_hook(hook)
    out = m(x)
    h.remove()
    g = lib.autograd.grad(out[list(range(len(cls))), cls].sum(), keep["a"])[0]
    A = keep["a"].detach()[:, 2:].reshape(2, 2, 3, D).numpy()
    G = g[:, 2:].reshape(2, 2, 3, D).numpy()
    w = G.mean((1, 2))                                                     # (N, D)
    return np.maximum((A * w[:, None, None, :]).sum(-1), 0)               # (N, 2, 3), before upsampling


@LIBS
def test_matches_gradcam_by_hand(lib):
    m = pair()[0] if lib is torch else pair()[1]
    x = lib.tensor(IMG)
    cam = TokenGradCAM(m, "blocks.0", prefix_tokens=2, patch_size=P)
    maps, classes = cam(x)
    assert tuple(maps.shape) == (2, 8, 12) and float(maps.min()) >= 0 and float(maps.max()) <= 1
    assert tuple(cam.activations.shape) == (2, D, 2, 3)
    ref = by_hand(lib, m, x, classes)
    A, g = cam.activations.numpy(), cam.gradients.numpy()
    ours = np.maximum((A * g.mean((2, 3))[:, :, None, None]).sum(1), 0)
    np.testing.assert_allclose(ours, ref, rtol=1e-5, atol=1e-6)
    assert all(p.grad is None for p in m.parameters())
    assert not m.blocks[0]._forward_hooks


def test_same_maps_on_both_libraries():
    t, h = pair()
    res = []
    for lib, m in ((torch, t), (hookgrad, h)):
        for pp in (False, True):
            maps, classes = TokenGradCAM(m, m.blocks[1], prefix_tokens=2, grid=(2, 3), plus_plus=pp)(lib.tensor(IMG), 3)
            res.append((maps.numpy(), classes))
    for a, b in zip(res[:2], res[2:]):
        assert a[1] == b[1] == [3, 3]
        np.testing.assert_allclose(b[0], a[0], rtol=1e-4, atol=1e-5)


@LIBS
def test_grid_errors(lib):
    tok = lib.zeros(1, 7, 4)
    assert tuple(tokens_to_grid(lib.zeros(1, 10, 4), 1).shape) == (1, 4, 3, 3)
    with pytest.raises(ValueError, match="6 tokens after dropping 1 prefix token.*not a square grid"):
        tokens_to_grid(tok, 1)
    with pytest.raises(ValueError, match="grid 2x2 needs 4 tokens"):
        tokens_to_grid(tok, 1, (2, 2))
    m = pair()[0] if lib is torch else pair()[1]
    with pytest.raises(ValueError, match="must output .N, tokens, channels. tokens, got \\(2, 8, 2, 3\\)"):
        TokenGradCAM(m, "patch")(lib.tensor(IMG))


def eager_vit(lib):
    """Attention written out (a visible softmax), keeping each pattern for the by-hand check."""
    nn = lib.nn

    class Attn(nn.Module):
        def __init__(self):
            super().__init__()
            self.qkv, self.proj = nn.Linear(D, 3 * D), nn.Linear(D, D)

        def forward(self, x):
            b, t, _ = x.shape
            q, k, v = [z.reshape(b, t, 2, D // 2).transpose(1, 2) for z in self.qkv(x).split(D, -1)]
            self.p = (q @ k.transpose(2, 3) / 2).softmax(-1)
            return self.proj((self.p @ v).transpose(1, 2).reshape(b, t, D))

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.n1, self.attn = nn.LayerNorm(D), Attn()
            self.mlp = nn.Sequential(nn.LayerNorm(D), nn.Linear(D, D), nn.GELU())

        def forward(self, x):
            x = x + self.attn(self.n1(x))
            return x + self.mlp(x)

    class ViT(nn.Module):
        def __init__(self):
            super().__init__()
            self.patch = nn.Conv2d(3, D, P, stride=P)
            self.cls = nn.Parameter(lib.randn(1, 1, D))
            self.blocks = nn.Sequential(Block(), Block())
            self.head = nn.Linear(D, 5)

        def forward(self, img):
            t = self.patch(img).flatten(2).transpose(1, 2)
            return self.head(self.blocks(lib.cat([self.cls.expand(len(t), -1, -1), t], 1))[:, 0])
    return ViT().eval()


def test_attention_gradient_rollout_on_both_libraries():
    from hookgrad.tools.gradcam_tokens import AttentionGradCAM
    torch.manual_seed(0)
    t, h = eager_vit(torch), eager_vit(hookgrad)
    h.load_state_dict({k: hookgrad.tensor(v.detach().numpy().copy()) for k, v in t.state_dict().items()})
    res = []
    for lib, m in ((torch, t), (hookgrad, h)):
        cam = AttentionGradCAM(m, prefix_tokens=1, patch_size=P)
        maps, classes = cam(lib.tensor(IMG))
        assert len(cam.patterns) == 2 and tuple(cam.patterns[0].shape) == (2, 2, 7, 7)
        assert all(p.grad is None for p in m.parameters())
        # by hand: the patterns the modules kept, their gradients, the rollout
        out = m(lib.tensor(IMG))
        ps = [b.attn.p for b in m.blocks]
        gs = lib.autograd.grad(out[[0, 1], classes].sum(), ps)
        R = np.broadcast_to(np.eye(7, dtype=np.float32), (2, 7, 7)).copy()
        for p, g in zip(ps, gs):
            R = R + np.maximum(g.numpy() * p.detach().numpy(), 0).mean(1) @ R
        rel = R[:, 0, 1:].reshape(2, 2, 3)
        small = np.maximum(cam.patterns[0].numpy(), 0)       # the kept pattern is the softmax output
        assert np.allclose(small.sum(-1), 1, atol=1e-5)
        np.testing.assert_allclose(cam.relevance.numpy(), rel, rtol=1e-5, atol=1e-6)
        res.append((maps.numpy(), classes))
    assert res[0][1] == res[1][1]
    np.testing.assert_allclose(res[1][0], res[0][0], rtol=1e-4, atol=1e-5)


@LIBS
def test_attention_gradient_needs_a_visible_softmax(lib):
    from hookgrad.tools.gradcam_tokens import AttentionGradCAM
    m = lib.nn.Sequential(lib.nn.Flatten(), lib.nn.Linear(3 * 8 * 12, 5))
    with pytest.raises(RuntimeError, match="no attention softmax"):
        AttentionGradCAM(m, patch_size=P)(lib.tensor(IMG))
