"""Stand-in for torch.testing._internal.common_methods_invocations: mask_not_all_zeros only."""
import torch


def mask_not_all_zeros(shape):
    """A random boolean mask of ``shape`` with at least one True."""
    while True:
        result = torch.randn(shape).gt(0)
        if result.sum() > 0:
            return result
