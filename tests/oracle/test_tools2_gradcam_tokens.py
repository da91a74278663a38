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
