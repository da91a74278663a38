"""More of torch.utils.data against torch: StackDataset, ChainDataset, get_worker_info, random_split with
fractions, sampler index lists under the same seeds, and errors."""
import warnings

import numpy as np
import pytest
import torch

import hookgrad
from test_data import _same


def _tds(lib, n=6):
    return lib.utils.data.TensorDataset(lib.arange(n * 2).reshape(n, 2).float(), lib.arange(n))


class _Range:
    """An IterableDataset subclass built for either library."""
    @staticmethod
    def make(lib, lo, hi):
        class R(lib.utils.data.IterableDataset):
            def __iter__(self):
                return iter(range(lo, hi))

            def __len__(self):
                return hi - lo
        return R()


@pytest.mark.parametrize("kw", [dict(batch_size=4), dict(batch_size=3, shuffle=False), dict(batch_size=None)])
@pytest.mark.parametrize("named", [False, True])
def test_stack_dataset(named, kw):
    out = []
    for lib in (torch, hookgrad):
        a, b = _tds(lib), lib.arange(6) * 10
        ds = lib.utils.data.StackDataset(x=a, y=b) if named else lib.utils.data.StackDataset(a, b)
        out.append((len(ds), ds[2], ds.__getitems__([0, 5]), list(lib.utils.data.DataLoader(ds, **kw))))
    _same(out[0], out[1])


def test_chain_dataset_and_iterable_add():
    out = []
    for lib in (torch, hookgrad):
        a, b = _Range.make(lib, 0, 3), _Range.make(lib, 10, 12)
        chain = lib.utils.data.ChainDataset([a, b])
        added = a + b
        out.append((list(chain), len(chain), type(added).__name__, list(added),
                    list(lib.utils.data.DataLoader(chain, batch_size=2))))
    _same(out[0], out[1])


@pytest.mark.parametrize("case", [
    lambda L: L.utils.data.StackDataset(),
    lambda L: L.utils.data.StackDataset(L.arange(3), y=L.arange(3)),
    lambda L: L.utils.data.StackDataset(L.arange(3), L.arange(4)),
    lambda L: L.utils.data.StackDataset(x=L.arange(3), y=L.arange(4)),
    lambda L: list(L.utils.data.ChainDataset([_Range.make(L, 0, 2), L.arange(3)])),
    lambda L: len(L.utils.data.ChainDataset([L.utils.data.TensorDataset(L.arange(3))])),
    lambda L: L.utils.data.random_split(range(10), [0.5, 0.6]),
    lambda L: L.utils.data.random_split(range(10), [1.5, -0.5]),
    lambda L: L.utils.data.random_split(range(10), [3, 4]),
    lambda L: L.utils.data.WeightedRandomSampler([1.0, 2.0], 0),
    lambda L: L.utils.data.WeightedRandomSampler([1.0, 2.0], 3, replacement=1),
    lambda L: list(L.utils.data.WeightedRandomSampler([1.0, 2.0], 3, replacement=False)),
    lambda L: L.utils.data.RandomSampler(range(3), num_samples=0),
    lambda L: L.utils.data.BatchSampler(range(3), 0, False),
])
def test_errors(case):
    res = []
    for lib in (torch, hookgrad):
        with pytest.raises(Exception) as ei:
            case(lib)
        res.append((type(ei.value).__name__, str(ei.value)))
    assert res[0] == res[1]


def test_get_worker_info_in_main_process():
    assert torch.utils.data.get_worker_info() is None
    assert hookgrad.utils.data.get_worker_info() is None
    seen = []
    for lib in (torch, hookgrad):
        class DS(lib.utils.data.IterableDataset):
            def __iter__(self):
                info = lib.utils.data.get_worker_info()
                return iter(range(4) if info is None else range(info.id, 4, info.num_workers))
        seen.append([b.tolist() for b in lib.utils.data.DataLoader(DS(), batch_size=3)])
    assert seen[0] == seen[1]


@pytest.mark.parametrize("lengths", [[0.5, 0.3, 0.2], [0.1, 0.9], [1 / 3, 1 / 3, 1 / 3], [0.0, 1.0], [4, 3, 3]])
def test_random_split_fractions_same_indices(lengths):
    out = []
    for lib in (torch, hookgrad):
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            parts = lib.utils.data.random_split(range(10), lengths, generator=lib.Generator().manual_seed(7))
            lib.manual_seed(3)
            glob = lib.utils.data.random_split(range(10), lengths)
        out.append(([list(p.indices) for p in parts], [list(p.indices) for p in glob], [str(x.message) for x in w]))
    assert out[0] == out[1]


SAMPLERS = {
    "random": lambda L, g: L.utils.data.RandomSampler(range(7), generator=g),
    "random_repl": lambda L, g: L.utils.data.RandomSampler(range(7), replacement=True, num_samples=40, generator=g),
    "random_more": lambda L, g: L.utils.data.RandomSampler(range(5), num_samples=12, generator=g),
    "subset": lambda L, g: L.utils.data.SubsetRandomSampler([3, 9, 4, 1, 7], generator=g),
    "weighted": lambda L, g: L.utils.data.WeightedRandomSampler([0.1, 0.9, 0.4, 0.7, 3.0], 12, generator=g),
    "batch": lambda L, g: L.utils.data.BatchSampler(L.utils.data.RandomSampler(range(7), generator=g), 3, True),
}


@pytest.mark.parametrize("with_generator", [True, False])
@pytest.mark.parametrize("name", list(SAMPLERS))
def test_sampler_indices_match_torch(name, with_generator):
    out = []
    for lib in (torch, hookgrad):
        lib.manual_seed(11)
        g = lib.Generator().manual_seed(5) if with_generator else None
        s = SAMPLERS[name](lib, g)
        out.append((len(s), list(s), list(s)))
    assert out[0] == out[1]


def test_shuffled_loader_epochs_match_torch():
    out = []
    for lib in (torch, hookgrad):
        lib.manual_seed(0)
        dl = lib.utils.data.DataLoader(_tds(lib, 9), batch_size=4, shuffle=True)
        out.append([[b[1].tolist() for b in dl] for _ in range(3)])
    assert out[0] == out[1]


def test_weighted_without_replacement_draws_distinct_indices():
    # not bit-compatible (PyTorch draws exponentials from an MKL stream): same shape of result only
    for lib in (torch, hookgrad):
        s = lib.utils.data.WeightedRandomSampler([0.1, 0.9, 0.0, 0.7, 3.0], 4, replacement=False)
        for _ in range(5):
            idx = list(s)
            assert len(idx) == 4 and len(set(idx)) == 4 and 2 not in idx
