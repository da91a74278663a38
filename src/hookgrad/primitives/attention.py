"""Scaled dot-product attention as one primitive: PyTorch's CPU flash kernel
(``_scaled_dot_product_flash_attention_for_cpu``, grad_fn ``ScaledDotProductFlashAttentionForCpuBackward0``).

F.scaled_dot_product_attention takes this path where PyTorch's CPU dispatcher picks the flash kernel (4-D
inputs, no dropout, a mask that needs no gradient); elsewhere it composes PyTorch's math path from ops.
"""
import numpy as np

from .._tensor import Tensor
from ..autograd.node import Node
from ..autograd.formulas import TENSORS
from .._array import array_module


class SdpaFlash(Node, name="ScaledDotProductFlashAttentionForCpuBackward0"):
    """softmax(q k^T * scale + mask) v over (B, H, L, E) / (B, Hk, S, E) with H = rep * Hk (grouped-query
    attention repeats each key/value head ``rep`` times). ``mask`` is an additive float array broadcastable
    to (B, H, L, S), the causal mask already folded in; a row whose scores are all -inf gives zeros (as
    PyTorch's kernel does)."""
    opmath = True      # bfloat16: computed in float32, rounded once (_dtype.opmath)
    save = (0, 1, 2)
    saved_names = ("query", "key", "value")
    saved_attrs = ("scale", "is_causal", "dropout_p")
    mask = None
    rep = 1
    scale = None
    is_causal = False
    dropout_p = 0.0

    def forward(self, q, k, v):
        xp = array_module(q)
        if self.rep > 1:
            k, v = xp.repeat(k, self.rep, axis=-3), xp.repeat(v, self.rep, axis=-3)
        s = np.matmul(q, np.swapaxes(k, -1, -2))
        s *= self.sc
        if self.mask is not None:
            s = s + self.mask
        m = s.max(axis=-1, keepdims=True)
        m = np.where(np.isfinite(m), m, 0).astype(s.dtype)
        e = np.exp(s - m)
        tot = e.sum(axis=-1, keepdims=True)
        full = tot == 0                   # every key masked: the row is zeros
        self.shift = m                    # NOTE: constants of the backward (the softmax is shift-invariant)
        self.empty = full.astype(s.dtype)
        e /= np.where(full, 1, tot).astype(s.dtype)
        # PyTorch's CPU flash kernel writes its output in the query's memory layout, so that MHA's
        # permute(...).contiguous() after it copies nothing (and records no CloneBackward0)
        out = xp.empty_like(q, shape=q.shape[:-1] + v.shape[-1:])
        return np.matmul(e, v, out=out)

    def backward(self, g, F=TENSORS):
        q, k, v = F.saved(self)
        r = self.rep
        if r > 1:           # (B, Hk, S, E) -> (B, Hk * r, S, E), each head repeated r times
            b, hk, sl, ed = k.shape
            k = F.expand(F.unsqueeze(k, 2), (b, hk, r, sl, ed)).reshape((b, hk * r, sl, ed))
            v = F.expand(F.unsqueeze(v, 2), (b, hk, r, sl, v.shape[-1])).reshape((b, hk * r, sl, v.shape[-1]))
        s = F.matmul(q, F.transpose(k, -1, -2)) * self.sc
        if self.mask is not None:
            s = s + F.carry(Tensor._make(self.mask))
        e = F.exp(s - F.carry(Tensor._make(self.shift)))
        p = e / (F.sum(e, -1, True) + F.carry(Tensor._make(self.empty)))
        nf = self.next_functions
        gv = F.matmul(F.transpose(p, -1, -2), g) if nf[2][0] is not None else None
        gq = gk = None
        if nf[0][0] is not None or nf[1][0] is not None:
            dp = F.matmul(g, F.transpose(v, -1, -2))
            ds = p * (dp - F.sum(dp * p, -1, True)) * self.sc
            gq = F.matmul(ds, k) if nf[0][0] is not None else None
            gk = F.matmul(F.transpose(ds, -1, -2), q) if nf[1][0] is not None else None
        if r > 1:
            if gk is not None:
                gk = F.sum(gk.reshape((b, hk, r) + tuple(gk.shape[2:])), 2)
            if gv is not None:
                gv = F.sum(gv.reshape((b, hk, r) + tuple(gv.shape[2:])), 2)
        return gq, gk, gv
