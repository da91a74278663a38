"""utils.data against torch: batching, collate, samplers, random_split and errors."""
import collections

import numpy as np
import pytest
import torch

import hookgrad
from oracle import assert_same


def _same(a, b, what="batch"):
    if isinstance(a, torch.Tensor):
        assert_same(a, b, what)
    elif isinstance(a, dict):
        assert type(a).__name__ == type(b).__name__ and list(a) == list(b), what
        for k in a:
            _same(a[k], b[k], f"{what}[{k!r}]")
    elif isinstance(a, (list, tuple)):
        assert type(a).__name__ == type(b).__name__ and len(a) == len(b), (what, a, b)
        for i, (x, y) in enumerate(zip(a, b)):
            _same(x, y, f"{what}[{i}]")
    else:
        assert a == b, (what, a, b)


def _loader(lib, **kw):
    x = np.arange(20, dtype=np.float32).reshape(10, 2)
    y = np.arange(10)
    ds = lib.utils.data.TensorDataset(lib.tensor(x), lib.tensor(y))
    return list(lib.utils.data.DataLoader(ds, **kw)), len(lib.utils.data.DataLoader(ds, **kw))


@pytest.mark.parametrize("kw", [dict(), dict(batch_size=3), dict(batch_size=3, drop_last=True), dict(batch_size=None),
                                dict(batch_size=4, num_workers=0, collate_fn=lambda b: len(b)),
                                dict(batch_size=2, sampler=[9, 1, 4, 4, 0]), dict(batch_sampler=[[1, 2], [7], [0, 3, 5]])])
def test_batches_match_torch(kw):
    t, h = _loader(torch, **kw), _loader(hookgrad, **kw)
    assert t[1] == h[1]
    _same(t[0], h[0])


SAMPLES = [
    [(1, 2.5, True), (3, 4.5, False)],
    [{"a": np.ones(2, np.float32), "b": "x", "c": [1, 2]}, {"a": np.zeros(2, np.float32), "b": "y", "c": [3, 4]}],
    [np.float64(1.5), np.float64(2.5)],
    [np.arange(3), np.arange(3, 6)],
    [collections.OrderedDict(x=1), collections.OrderedDict(x=2)],
    [[1, 2], [3, 4]],
]


@pytest.mark.parametrize("i", range(len(SAMPLES)))
def test_default_collate_matches_torch(i):
    batch = SAMPLES[i]
    tb = [torch.tensor(s) if isinstance(s, np.ndarray) else s for s in batch] if i == 3 else batch
    hb = [hookgrad.tensor(s) if isinstance(s, np.ndarray) else s for s in batch] if i == 3 else batch
    _same(torch.utils.data.default_collate(tb), hookgrad.utils.data.default_collate(hb))
    _same(torch.utils.data.default_collate(batch), hookgrad.utils.data.default_collate(batch))


def test_collate_namedtuple():
    P = collections.namedtuple("P", "x y")
    batch = [P(1, 2.0), P(3, 4.0)]
    t, h = torch.utils.data.default_collate(batch), hookgrad.utils.data.default_collate(batch)
    assert type(h) is P
    _same(tuple(t), tuple(h))


def _err(fn):
    try:
        fn()
    except Exception as e:
        return type(e).__name__, str(e)
    return None


@pytest.mark.parametrize("case", range(10))
def test_errors_match_torch(case):
    def run(lib):
        D = lib.utils.data
        ds = D.TensorDataset(lib.arange(4))

        class It(D.IterableDataset):
            def __iter__(self):
                return iter(range(3))
        return [
            lambda: D.default_collate([lib.ones(3), lib.ones(2)]),
            lambda: D.default_collate([[1, 2], [3]]),
            lambda: D.default_collate([object(), object()]),
            lambda: D.DataLoader(ds, shuffle=True, sampler=[0]),
            lambda: D.DataLoader(ds, batch_size=2, batch_sampler=[[0]]),
            lambda: D.DataLoader(ds, batch_size=None, drop_last=True),
            lambda: D.DataLoader(It(), shuffle=True),
            lambda: D.DataLoader(ds, num_workers=-1),
            lambda: D.BatchSampler(range(3), 0, False),
            lambda: D.random_split(ds, [1, 2]),
        ][case]
    assert _err(run(torch)) == _err(run(hookgrad))


def test_ragged_batch_error_text():
    with pytest.raises(RuntimeError, match=r"stack expects each tensor to be equal size, but got \[3\] at entry 0 and "
                                           r"\[2\] at entry 1"):
        list(hookgrad.utils.data.DataLoader([hookgrad.ones(3), hookgrad.ones(2)], batch_size=2))


def test_shuffle_with_generator_is_reproducible_permutation():
    D = hookgrad.utils.data
    ds = D.TensorDataset(hookgrad.arange(50))

    def order(seed):
        g = hookgrad.Generator().manual_seed(seed)
        return [int(v) for b in D.DataLoader(ds, batch_size=7, shuffle=True, generator=g) for v in b[0]]
    a, b, c = order(1), order(1), order(2)
    assert sorted(a) == list(range(50)) and a == b and a != c and a != list(range(50))
    hookgrad.manual_seed(3)
    x = [int(v) for b in D.DataLoader(ds, batch_size=50, shuffle=True) for v in b[0]]
    hookgrad.manual_seed(3)
    y = [int(v) for b in D.DataLoader(ds, batch_size=50, shuffle=True) for v in b[0]]
    assert x == y


def test_samplers():
    D = hookgrad.utils.data
    g = hookgrad.Generator().manual_seed(0)
    assert sorted(D.SubsetRandomSampler([3, 5, 7], generator=g)) == [3, 5, 7]
    rs = list(D.RandomSampler(range(5), num_samples=12, generator=g))
    assert len(rs) == 12 and sorted(rs[:10]) == sorted(list(range(5)) * 2)
    rr = list(D.RandomSampler(range(5), replacement=True, num_samples=30, generator=g))
    assert len(rr) == 30 and set(rr) <= set(range(5))
    w = list(D.WeightedRandomSampler([0.0, 1.0, 0.0], 5, generator=g))
    assert w == [1] * 5
    for lib in (torch, hookgrad):
        bs = lib.utils.data.BatchSampler(lib.utils.data.SequentialSampler(range(7)), 3, drop_last=False)
        assert list(bs) == [[0, 1, 2], [3, 4, 5], [6]] and len(bs) == 3


@pytest.mark.parametrize("lengths", [[3, 7], [0.3, 0.7], [0.33, 0.33, 0.34], [0.5, 0.5, 0.0]])
def test_random_split_lengths(lengths):
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        t = torch.utils.data.random_split(range(10), lengths)
        h = hookgrad.utils.data.random_split(range(10), lengths, generator=hookgrad.Generator().manual_seed(0))
    assert [len(s) for s in t] == [len(s) for s in h]
    assert sorted(i for s in h for i in s) == list(range(10))


def test_subset_concat_and_iterable():
    out = []
    for lib in (torch, hookgrad):
        D = lib.utils.data

        class It(D.IterableDataset):
            def __iter__(self):
                return iter([{"v": i} for i in range(7)])
        ds = D.TensorDataset(lib.arange(6) * 10)
        cat = D.Subset(ds, [5, 0, 2]) + D.TensorDataset(lib.arange(2))
        out.append(([int(cat[i][0]) for i in range(len(cat))],
                    [b["v"].tolist() for b in D.DataLoader(It(), batch_size=3)],
                    [b["v"].tolist() for b in D.DataLoader(It(), batch_size=3, drop_last=True)],
                    [b for b in D.DataLoader(It(), batch_size=None)][:2]))
    t, h = out
    assert t[:3] == h[:3]
    _same(t[3], h[3])


@pytest.mark.parametrize("kw", [dict(batch_size=4, shuffle=True), dict(batch_size=3, shuffle=True, drop_last=True),
                                dict(batch_size=5, sampler="replacement")])
@pytest.mark.parametrize("with_generator", [False, True])
def test_shuffled_order_matches_torch(kw, with_generator):
    out = []
    for lib in (torch, hookgrad):
        lib.manual_seed(7)
        D = lib.utils.data
        ds = D.TensorDataset(lib.arange(37))
        g = lib.Generator().manual_seed(11) if with_generator else None
        k = dict(kw)
        if k.get("sampler") == "replacement":
            k["sampler"] = D.RandomSampler(ds, replacement=True, num_samples=70, generator=g)
        else:
            k["generator"] = g
        loader = D.DataLoader(ds, **k)
        out.append([[b[0].tolist() for b in loader] for _ in range(2)] + [D.random_split(ds, [0.5, 0.5])[0].indices,
                                                                         list(D.SubsetRandomSampler([4, 8, 15, 16]))])
    assert out[0] == out[1]
