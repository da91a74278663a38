"""Stand-in for torch.testing._internal.common_dtype."""
import torch


def floating_types_and(*dtypes):
    return (torch.float32, torch.float64, *dtypes)
