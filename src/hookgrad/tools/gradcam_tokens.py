"""Grad-CAM for transformers: a layer's token output (N, T, C) reshaped to a grid of patches, on hookgrad
and torch models (pytorch-grad-cam #511, torch-cam PR #416).

>>> cam = TokenGradCAM(vit, "blocks.11.norm1", prefix_tokens=1, patch_size=16)
>>> maps, classes = cam(images)         # (N, H, W) in [0, 1], as GradCAM's

The CLS token and any other prefix tokens (distillation, register tokens) are dropped; the rest are laid
out row by row on a (h, w) grid: ``grid=(h, w)`` given, or from the input's size and ``patch_size``
(non-square images give non-square grids), or the square root of the token count. Then it is
:class:`~hookgrad.tools.gradcam.GradCAM` (or Grad-CAM++ with ``plus_plus=True``) on that grid.
"""
import math

from .gradcam import GradCAM, GradCAMPlusPlus

__all__ = ["TokenGradCAM", "AttentionGradCAM", "tokens_to_grid"]


def tokens_to_grid(tokens, prefix_tokens=1, grid=None):
    """(N, T, C) tokens -> (N, C, h, w): the first ``prefix_tokens`` dropped, the rest row by row."""
    n, t, c = tokens.shape
    t -= prefix_tokens
    if grid is None:
        side = math.isqrt(t)
        if side * side != t:
            raise ValueError(f"tokens_to_grid: {t} tokens after dropping {prefix_tokens} prefix token(s) are not a "
                             "square grid; give grid=(h, w) or patch_size (non-square images), or check prefix_tokens")
        grid = (side, side)
    h, w = grid
    if h * w != t:
        raise ValueError(f"tokens_to_grid: grid {h}x{w} needs {h * w} tokens, the layer has {t} after dropping "
                         f"{prefix_tokens} prefix token(s)")
    return tokens[:, prefix_tokens:].reshape(n, h, w, c).permute(0, 3, 1, 2)


class TokenGradCAM(GradCAM):
    """Grad-CAM at a transformer layer whose output (or its first element, for a tuple) is (N, T, C).

    Args:
        model, target_layer: as :class:`GradCAM` (a Module or a module path).
        prefix_tokens: tokens before the patches (1: CLS; 2: CLS + distillation/register...).
        grid: ``(h, w)`` of the patch grid; None: from ``patch_size`` and the input's size, else square.
        patch_size: an int or ``(ph, pw)``: the grid is ``(H // ph, W // pw)`` of each input.
        plus_plus: Grad-CAM++ weights instead of Grad-CAM's.
    """

    def __init__(self, model, target_layer, prefix_tokens=1, grid=None, patch_size=None, plus_plus=False):
        super().__init__(model, target_layer)
        self.prefix_tokens, self.grid, self.patch_size = prefix_tokens, grid, patch_size
        self.plus_plus = plus_plus
        self._grid_now = None

    def weights(self, A, g):
        return GradCAMPlusPlus.weights(self, A, g) if self.plus_plus else GradCAM.weights(self, A, g)

    def _forward_hook(self, module, args, output):
        Tensor = self.lib.Tensor
        tup = isinstance(output, (tuple, list))
        tok = output[0] if tup else output
        if not isinstance(tok, Tensor) or tok.dim() != 3:
            shape = tuple(tok.shape) if isinstance(tok, Tensor) else type(tok).__name__
            raise ValueError(f"{type(self).__name__}: layer '{self.path}' ({type(module).__name__}) must output "
                             f"(N, tokens, channels) tokens, got {shape}")
        out = tok.detach().requires_grad_(True)
        grid = self._grid_now
        self.activations = tokens_to_grid(out.detach(), self.prefix_tokens, grid)
        self._leaf = out

        def token_gradcam_keep_grad(grad):
            self.gradients = tokens_to_grid(grad.detach(), self.prefix_tokens, grid)
        out.register_hook(token_gradcam_keep_grad)
        return type(output)((out,) + tuple(output[1:])) if tup else out

    def cam(self, x, target=None):
        grid = self.grid
        if grid is None and self.patch_size is not None:
            ph, pw = (self.patch_size, self.patch_size) if isinstance(self.patch_size, int) else self.patch_size
            grid = (x.shape[-2] // ph, x.shape[-1] // pw)
        self._grid_now = grid
        return super().cam(x, target)

    __call__ = cam


class AttentionGradCAM:
    """The attention-gradient method (Chefer et al., 2021, "Generic attention-model explainability"), on
    op-level hooks: every softmax of the forward whose output is an attention pattern (N, heads, T, T) is
    kept (an :class:`~hookgrad.tools.ophooks.OpTool`: op hooks on hookgrad, ``TorchDispatchMode`` on
    torch), its gradient A' w.r.t. the class score is taken with ``autograd.grad`` (``.grad`` untouched),
    and the relevance is rolled out layer by layer: ``R = I; R += mean_heads(relu(A' * A)) @ R``. The map
    is row 0 (the CLS token's) of ``R`` over the patch tokens, on the grid (kept as ``relevance``, N x h x w),
    upsampled and normalised as :class:`TokenGradCAM`'s.

    The attention must run as a visible softmax (eager attention): a fused kernel
    (``scaled_dot_product_attention`` on torch, e.g. ``nn.MultiheadAttention(need_weights=False)``) keeps
    the pattern to itself, and a call that finds no pattern raises ``RuntimeError`` saying so.
    """

    def __init__(self, model, prefix_tokens=1, grid=None, patch_size=None):
        from .lib import lib_of
        self.model, self.lib = model, lib_of(model)
        self.prefix_tokens, self.grid, self.patch_size = prefix_tokens, grid, patch_size
        self.patterns = []
        self.gradients = []

    def _keeper(self):
        from .ophooks import OpTool
        kept = self.patterns

        class KeepAttention(OpTool):
            def forward_post(self, name, inputs, output, node):
                if name == "Softmax" and output.dim() == 4 and output.shape[-1] == output.shape[-2]:
                    kept.append(output)
        return KeepAttention(lib=self.lib)

    def __call__(self, x, target=None):
        L = self.lib
        self.patterns, self.gradients = [], []
        with L.enable_grad():
            with self._keeper():
                out = self.model(x)
        if not self.patterns:
            raise RuntimeError("AttentionGradCAM: no attention softmax (N, heads, T, T) ran in the forward: a fused "
                               "attention kernel hides it (use eager attention, e.g. need_weights=True)")
        n = out.shape[0]
        classes = ([int(c) for c in out.detach().argmax(1).tolist()] if target is None else
                   [target] * n if isinstance(target, int) else [int(c) for c in target])
        score = out[list(range(n)), classes].sum()
        grads = L.autograd.grad(score, self.patterns, allow_unused=True)
        with L.no_grad():
            t = self.patterns[0].shape[-1]
            R = L.root.eye(t, dtype=out.dtype).expand(n, t, t).clone()
            for A, g in zip(self.patterns, grads):
                if g is None:
                    continue
                self.gradients.append(g)
                a = (g * A).clamp(min=0).mean(1)                       # N, T, T
                R = R + a @ R
            rel = R[:, 0, self.prefix_tokens:]                          # the CLS row over the patches
            grid = self.grid
            if grid is None and self.patch_size is not None:
                ph, pw = (self.patch_size,) * 2 if isinstance(self.patch_size, int) else self.patch_size
                grid = (x.shape[-2] // ph, x.shape[-1] // pw)
            m = tokens_to_grid(rel[:, :, None], 0, grid)                # N, 1, h, w
            self.relevance = m[:, 0]
            m = L.nn.functional.interpolate(m, size=tuple(x.shape[-2:]), mode="bilinear", align_corners=False)[:, 0]
            lo = m.amin((1, 2), keepdim=True)
            span = m.amax((1, 2), keepdim=True) - lo
            maps = (m - lo) / span.masked_fill(span == 0, 1.0) * (span != 0)
        self.patterns = [p.detach() for p in self.patterns]
        return maps, classes
