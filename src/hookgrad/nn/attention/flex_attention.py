"""torch.nn.attention.flex_attention, run eagerly: ``create_block_mask`` evaluates ``mask_mod`` over the whole
(batch, head, query, key) grid with broadcast index tensors and keeps the element mask; ``flex_attention`` is
softmax(score_mod(q @ k^T * scale) masked) @ v composed of hookgrad's ops (so it is differentiable and hooks
see every op). PyTorch compiles it into a block-sparse kernel; the results are the same up to rounding, but no
block is skipped here (memory and time grow with the full Q x KV grid; see docs/differences.md)."""
import math
from typing import Any, NamedTuple, TypedDict

__all__ = ["BlockMask", "flex_attention", "AuxOutput", "AuxRequest", "FlexKernelOptions", "create_block_mask",
           "create_mask", "or_masks", "and_masks", "noop_mask"]


class AuxRequest(NamedTuple):
    """Which auxiliary outputs flex_attention returns (``return_aux=``)."""
    lse: bool = False
    max_scores: bool = False


class AuxOutput(NamedTuple):
    lse: Any = None
    max_scores: Any = None


class FlexKernelOptions(TypedDict, total=False):
    """Options of PyTorch's compiled kernel (accepted and unused: hookgrad runs the composition)."""

_DEFAULT_SPARSE_BLOCK_SIZE = 128


def _index_grid(B, H, Q_LEN, KV_LEN):
    from ... import _creation as C
    b = C.arange(B).reshape(B, 1, 1, 1)
    h = C.arange(H).reshape(1, H, 1, 1)
    q = C.arange(Q_LEN).reshape(1, 1, Q_LEN, 1)
    kv = C.arange(KV_LEN).reshape(1, 1, 1, KV_LEN)
    return b, h, q, kv


def noop_mask(batch, head, token_q, token_kv):
    """The mask_mod that masks nothing."""
    return batch.new_ones(size=(), dtype=_bool())


def _bool():
    from ... import _dtype as D
    return D.bool_


def create_mask(mod_fn, B, H, Q_LEN, KV_LEN, device=None):
    """The dense boolean mask (B, H, Q_LEN, KV_LEN) of a mask_mod (a score_mod: where it leaves the score)."""
    B, H = B or 1, H or 1
    b, h, q, kv = _index_grid(B, H, Q_LEN, KV_LEN)
    out = mod_fn(b, h, q, kv)
    from ...primitives.shape import broadcast_to
    return broadcast_to(out.to(_bool()), (B, H, Q_LEN, KV_LEN))


class BlockMask:
    """The mask of a flex_attention call. hookgrad keeps the element mask itself; ``to_dense()`` gives PyTorch's
    block-level mask (a block is on when any element in it is)."""

    def __init__(self, mask, mask_mod, BLOCK_SIZE):
        self._mask = mask
        self.mask_mod = mask_mod
        self.BLOCK_SIZE = BLOCK_SIZE
        self.seq_lengths = tuple(mask.shape[-2:])

    @property
    def shape(self):
        return tuple(self._mask.shape)

    def to_dense(self):
        from ... import _dtype as D
        B, H, Q, KV = self.shape
        bq, bk = self.BLOCK_SIZE
        nq, nk = -(-Q // bq), -(-KV // bk)
        from ... import _creation as C
        from ...primitives.join import cat
        m = self._mask.to(D.int32)
        pad_q, pad_k = nq * bq - Q, nk * bk - KV
        if pad_k:
            m = cat([m, C.zeros(B, H, Q, pad_k, dtype=D.int32)], 3)
        if pad_q:
            m = cat([m, C.zeros(B, H, pad_q, nk * bk, dtype=D.int32)], 2)
        return m.reshape(B, H, nq, bq, nk, bk).amax(dim=(3, 5))

    def sparsity(self):
        dense = self.to_dense()
        return 100 * (1 - dense.sum().item() / dense.numel())

    def __repr__(self):
        name = getattr(self.mask_mod, "__name__", self.mask_mod)
        return f"BlockMask(shape={self.shape}, sparsity={self.sparsity():.2f}%, mask_mod={name})"


def create_block_mask(mask_mod, B, H, Q_LEN, KV_LEN, device=None, BLOCK_SIZE=_DEFAULT_SPARSE_BLOCK_SIZE,
                      _compile=False, separate_full_blocks=True, compute_dq_write_order=False, dq_kv_order=True):
    """A BlockMask from ``mask_mod(b, h, q_idx, kv_idx) -> bool``, evaluated over the whole grid."""
    if isinstance(BLOCK_SIZE, int):
        BLOCK_SIZE = (BLOCK_SIZE, BLOCK_SIZE)
    return BlockMask(create_mask(mask_mod, B, H, Q_LEN, KV_LEN, device), mask_mod, tuple(BLOCK_SIZE))


def or_masks(*mask_mods):
    def or_mask(b, h, q_idx, kv_idx):
        result = mask_mods[0](b, h, q_idx, kv_idx)
        for m in mask_mods[1:]:
            result = result | m(b, h, q_idx, kv_idx)
        return result
    return or_mask


def and_masks(*mask_mods):
    def and_mask(b, h, q_idx, kv_idx):
        result = mask_mods[0](b, h, q_idx, kv_idx)
        for m in mask_mods[1:]:
            result = result & m(b, h, q_idx, kv_idx)
        return result
    return and_mask


def flex_attention(query, key, value, score_mod=None, block_mask=None, scale=None, enable_gqa=False,
                   return_lse=False, kernel_options=None, *, return_aux=None):
    """softmax(score_mod(query @ key^T * scale), masked by block_mask) @ value, over (B, H, L, E) tensors."""
    from ...primitives.reduce import logsumexp
    Hq, Hkv = query.shape[1], key.shape[1]
    if Hq != Hkv:
        if not enable_gqa or Hq % Hkv:
            raise ValueError(f"Expect query and key/value to have the same number of heads but got Hq={Hq} and "
                             f"Hkv={Hkv}. Try setting enable_gqa=True for GQA.")
        key = key.repeat_interleave(Hq // Hkv, dim=1)
        value = value.repeat_interleave(Hq // Hkv, dim=1)
    scale = 1.0 / math.sqrt(query.shape[-1]) if scale is None else scale
    scores = (query @ key.transpose(-2, -1)) * scale
    if score_mod is not None:
        b, h, q, kv = _index_grid(scores.shape[0], scores.shape[1], scores.shape[2], scores.shape[3])
        scores = score_mod(scores, b, h, q, kv)
    if block_mask is not None:
        scores = scores.masked_fill(block_mask._mask.logical_not(), float("-inf"))
    lse = logsumexp(scores, dim=-1)
    weights = (scores - lse.unsqueeze(-1)).exp().nan_to_num(0.0)     # a fully masked row gives zeros, as PyTorch
    out = weights @ value
    if return_aux is not None:
        return out, AuxOutput(lse=lse if return_aux.lse else None,
                              max_scores=scores.amax(dim=-1) if return_aux.max_scores else None)
    return (out, lse) if return_lse else out
