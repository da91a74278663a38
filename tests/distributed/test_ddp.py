"""DDP's bucket assignment against PyTorch's (torch.distributed._compute_bucket_assignment_by_size), in one
process: dtypes, size limits, sparse gradients, the gradient-ready order of a rebuild."""
import numpy as np
import pytest
import torch
import torch.distributed as tdist

import hookgrad as hg
import hookgrad.distributed as hdist

DTYPES = ["float32", "float64", "float16", "bfloat16"]


def tensors(shapes, dtypes):
    t = [torch.zeros(s, dtype=getattr(torch, d)) for s, d in zip(shapes, dtypes)]
    h = [hg.zeros(s, dtype=getattr(hg, d)) for s, d in zip(shapes, dtypes)]
    return t, h


@pytest.mark.parametrize("seed", range(12))
def test_bucket_assignment_matches_torch(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 12))
    shapes = [tuple(int(k) for k in rng.integers(1, 9, size=rng.integers(1, 3))) for _ in range(n)]
    dtypes = [DTYPES[int(i)] for i in rng.integers(0, 2 if seed < 6 else 4, size=n)]
    t, h = tensors(shapes, dtypes)
    limits = [int(b) for b in rng.integers(1, 400, size=rng.integers(1, 4))]
    sparse = [bool(b) for b in rng.random(n) < 0.15] if seed % 3 == 0 else []
    assert hdist._compute_bucket_assignment_by_size(h, limits, sparse) == \
        tdist._compute_bucket_assignment_by_size(t, limits, sparse)
    order = [int(i) for i in rng.permutation(n)]      # a rebuild: tensors in gradient-ready order
    to = [t[i] for i in order]
    ho = [h[i] for i in order]
    assert hdist._compute_bucket_assignment_by_size(ho, limits, sparse, order) == \
        tdist._compute_bucket_assignment_by_size(to, limits, sparse, order)


def test_default_first_bucket_and_builtin_hook_types():
    assert hdist._DEFAULT_FIRST_BUCKET_BYTES == tdist._DEFAULT_FIRST_BUCKET_BYTES
    for name in ("ALLREDUCE", "FP16_COMPRESS"):
        h, t = getattr(hdist.BuiltinCommHookType, name), getattr(tdist.BuiltinCommHookType, name)
        assert (str(h), repr(h), int(h)) == (str(t), repr(t), int(t))


def test_empty_and_sparse_errors():
    with pytest.raises(RuntimeError, match="tensors.empty"):
        hdist._compute_bucket_assignment_by_size([], [100])


def test_ddp_without_process_group_raises_torchs_error():
    with pytest.raises(ValueError, match="Default process group has not been initialized"):
        hg.nn.parallel.DistributedDataParallel(hg.nn.Linear(2, 2))
