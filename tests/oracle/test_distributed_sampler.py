"""utils.data.distributed.DistributedSampler against torch in one process (explicit num_replicas/rank): the index
lists for every rank, seed and epoch, padding and drop_last, lengths, and the errors."""
import pytest
import torch
from torch.utils.data.distributed import DistributedSampler as TorchSampler

import hookgrad
from hookgrad.utils.data.distributed import DistributedSampler


def _error(fn):
    try:
        fn()
    except Exception as e:
        return type(e).__name__, str(e)
    return None


@pytest.mark.parametrize("n", [0, 1, 5, 10, 13])
@pytest.mark.parametrize("replicas", [1, 2, 3, 7])
@pytest.mark.parametrize("drop_last", [False, True])
def test_index_lists_match_torch(n, replicas, drop_last):
    for shuffle, seed in ((False, 0), (True, 0), (True, 17)):
        for rank in range(replicas):
            kw = dict(num_replicas=replicas, rank=rank, shuffle=shuffle, seed=seed, drop_last=drop_last)
            ours, theirs = DistributedSampler(range(n), **kw), TorchSampler(range(n), **kw)
            for epoch in (0, 1, 4):
                ours.set_epoch(epoch)
                theirs.set_epoch(epoch)
                assert list(ours) == list(theirs), (kw, epoch)
                assert len(ours) == len(theirs) and ours.total_size == theirs.total_size, (kw, epoch)
            assert (ours.num_replicas, ours.rank, ours.epoch, ours.shuffle, ours.seed, ours.drop_last) == \
                   (theirs.num_replicas, theirs.rank, theirs.epoch, theirs.shuffle, theirs.seed, theirs.drop_last)


def test_over_a_dataset_and_in_a_dataloader():
    data = [(torch.arange(9.).reshape(9, 1), torch.arange(9)), (hookgrad.arange(9.).reshape(9, 1),
                                                                hookgrad.arange(9))]
    got = []
    for lib, (x, y), cls in ((torch, data[0], TorchSampler), (hookgrad, data[1], DistributedSampler)):
        ds = lib.utils.data.TensorDataset(x, y)
        s = cls(ds, num_replicas=2, rank=1, seed=3)
        s.set_epoch(2)
        loader = lib.utils.data.DataLoader(ds, batch_size=2, sampler=s)
        got.append([b[1].tolist() for b in loader])
    assert got[0] == got[1]
    assert hookgrad.utils.data.DistributedSampler is DistributedSampler
    assert isinstance(DistributedSampler(range(3), 1, 0), hookgrad.utils.data.Sampler)


@pytest.mark.parametrize("kw", [dict(num_replicas=2, rank=2), dict(num_replicas=2, rank=-1),
                                dict(num_replicas=3, rank=5), dict(), dict(num_replicas=2), dict(rank=0)])
def test_errors_match_torch(kw):
    # without num_replicas or rank and no process group: the default group's error
    theirs = _error(lambda: TorchSampler(range(4), **kw))
    assert theirs is not None
    assert _error(lambda: DistributedSampler(range(4), **kw)) == theirs
