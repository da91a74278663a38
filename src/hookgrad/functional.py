"""torch.functional: the module where PyTorch defines einsum, meshgrid, split, norm, ... (re-exported by torch)."""
import hookgrad as _h
from . import _missing

__all__ = ["atleast_1d", "atleast_2d", "atleast_3d", "broadcast_shapes", "broadcast_tensors", "cartesian_prod",
           "block_diag", "cdist", "chain_matmul", "einsum", "istft", "lu", "norm", "meshgrid", "pca_lowrank", "split",
           "stft", "svd_lowrank", "tensordot", "unique", "unique_consecutive", "unravel_index"]

for _n in __all__:
    if _n in _h.__dict__:
        globals()[_n] = _h.__dict__[_n]
del _n
Tensor = _h.Tensor


def __getattr__(name):  # a name hookgrad lacks (stft, lu, ...): torch's answer for it
    if name in __all__:
        return getattr(_h, name)  # NotImplementedName from the top level, with its category
    raise AttributeError(f"module 'hookgrad.functional' has no attribute '{name}'")
