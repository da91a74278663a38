"""F.pad's non-constant modes against torch: PyTorch's nodes (ReflectionPad{1,2,3}DBackward0,
ReplicationPad..., CopySlices for circular), values and gradients, including negative (cropping) amounts."""
import numpy as np
import pytest
import torch

import hookgrad
from oracle import check

CASES = [((1, 2, 5), (2, 1)), ((1, 2, 4, 5), (1, 2, 2, 1)), ((2, 3, 4), (-1, 2)), ((1, 1, 3, 4, 5), (1, 1, 1, 1, 1, 1)),
         ((2, 5), (1, 2)), ((1, 3, 4, 4), (0, 0, 2, 0))]


@pytest.mark.parametrize("mode", ["reflect", "replicate", "circular"])
@pytest.mark.parametrize("shape,pad", CASES)
def test_pad_mode(mode, shape, pad):
    x = np.random.default_rng(0).standard_normal(shape)
    check(lambda L, t: L.nn.functional.pad(t, pad, mode=mode), x, second=True)
    names = [L.nn.functional.pad(L.tensor(x, requires_grad=True), pad, mode=mode).grad_fn.name()
             for L in (torch, hookgrad)]
    assert names[1] == names[0]
