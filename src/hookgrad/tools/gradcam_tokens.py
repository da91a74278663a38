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

__all__ = ["TokenGradCAM", "tokens_to_grid"]


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

    def _weights(self, A, g):
        return GradCAMPlusPlus._weights(self, A, g) if self.plus_plus else GradCAM._weights(self, A, g)

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
