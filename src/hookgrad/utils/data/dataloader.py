"""DataLoader and default_collate / default_convert.

Loading always happens in the main process: ``num_workers``, ``pin_memory``, ``prefetch_factor``,
``persistent_workers``, ``timeout`` and ``worker_init_fn`` are accepted (validated like PyTorch) and
otherwise ignored.
"""
import collections.abc
import re

from typing import Generic, TypeVar

import numpy as np

from .dataset import IterableDataset
from .sampler import SequentialSampler, RandomSampler, BatchSampler

__all__ = ["DataLoader", "default_collate", "default_convert", "get_worker_info"]

_np_str_obj_array_pattern = re.compile(r"[SaUO]")
default_collate_err_msg_format = ("default_collate: batch must contain tensors, numpy arrays, numbers, dicts or lists; "
                                  "found {}")


def _stack(tensors):
    from ..._tensor import Tensor
    shape = tensors[0]._data.shape
    for i, t in enumerate(tensors):
        if t._data.shape != shape:
            raise RuntimeError(f"stack expects each tensor to be equal size, but got {list(shape)} at entry 0 and "
                               f"{list(t._data.shape)} at entry {i}")
    return Tensor._make(np.stack([t._data for t in tensors]))


def _as_tensor(x):
    from ..._creation import as_tensor
    return as_tensor(x)


def default_convert(data):
    """Convert NumPy arrays inside ``data`` to tensors (used when automatic batching is off)."""
    from ..._tensor import Tensor
    if isinstance(data, Tensor):
        return data
    if isinstance(data, np.ndarray) or isinstance(data, np.generic):
        if data.dtype.kind in "SaUO":
            return data
        return _as_tensor(np.asarray(data))
    if isinstance(data, collections.abc.Mapping):
        return {k: default_convert(v) for k, v in data.items()}
    if isinstance(data, tuple) and hasattr(data, "_fields"):
        return type(data)(*(default_convert(d) for d in data))
    if isinstance(data, tuple):
        return [default_convert(d) for d in data]
    if isinstance(data, collections.abc.Sequence) and not isinstance(data, (str, bytes)):
        return [default_convert(d) for d in data]
    return data


def default_collate(batch):
    """Merge a list of samples into a batch: tensors/arrays are stacked on a new first dimension,
    numbers become tensors, dicts and sequences are collated field by field (tuples give lists)."""
    from ..._tensor import Tensor
    elem = batch[0]
    elem_type = type(elem)
    if isinstance(elem, Tensor):
        return _stack(batch)
    if isinstance(elem, np.ndarray) and elem.dtype.kind not in "SaUO":
        return _stack([_as_tensor(b) for b in batch])
    if isinstance(elem, np.generic) and elem.dtype.kind not in "SaUO":
        return _as_tensor(np.array(batch))
    if isinstance(elem, (np.ndarray, np.generic)):
        raise TypeError(default_collate_err_msg_format.format(elem.dtype))
    if isinstance(elem, float):
        return _as_tensor(np.array(batch, dtype=np.float64))
    if isinstance(elem, bool):
        return _as_tensor(np.array(batch, dtype=np.bool_))
    if isinstance(elem, int):
        return _as_tensor(np.array(batch, dtype=np.int64))
    if isinstance(elem, (str, bytes)):
        return batch
    if isinstance(elem, collections.abc.Mapping):
        collated = {key: default_collate([d[key] for d in batch]) for key in elem}
        try:
            if isinstance(elem, collections.abc.MutableMapping):
                out = elem.copy()
                out.update(collated)
                return out
            return elem_type(collated)
        except TypeError:
            return collated
    if isinstance(elem, tuple) and hasattr(elem, "_fields"):
        return elem_type(*(default_collate(s) for s in zip(*batch)))
    if isinstance(elem, collections.abc.Sequence):
        it = iter(batch)
        elem_size = len(next(it))
        if not all(len(e) == elem_size for e in it):
            raise RuntimeError("each element in list of batch should be of equal size")
        transposed = list(zip(*batch))
        if isinstance(elem, tuple):
            return [default_collate(s) for s in transposed]
        try:
            if isinstance(elem, collections.abc.MutableSequence):
                out = elem.copy()
                for i, s in enumerate(transposed):
                    out[i] = default_collate(s)
                return out
            return elem_type([default_collate(s) for s in transposed])
        except TypeError:
            return [default_collate(s) for s in transposed]
    raise TypeError(default_collate_err_msg_format.format(elem_type))


def get_worker_info():
    """Information about the current DataLoader worker process: always ``None`` here, because loading runs in
    the main process (as in PyTorch with ``num_workers=0``)."""
    return None


class _InfiniteConstantSampler:
    def __iter__(self):
        while True:
            yield None


_T_co = TypeVar("_T_co", covariant=True)


class DataLoader(Generic[_T_co]):
    """Iterate over a dataset in (optionally shuffled) batches; see the module docstring about workers.

    >>> import hookgrad as torch
    >>> from hookgrad.utils.data import TensorDataset, DataLoader
    >>> [b[0].tolist() for b in DataLoader(TensorDataset(torch.arange(5)), batch_size=2)]
    [[0, 1], [2, 3], [4]]
    """

    def __init__(self, dataset, batch_size=1, shuffle=None, sampler=None, batch_sampler=None, num_workers=0,
                 collate_fn=None, pin_memory=False, drop_last=False, timeout=0, worker_init_fn=None,
                 multiprocessing_context=None, generator=None, *, prefetch_factor=None, persistent_workers=False,
                 pin_memory_device="", in_order=True):
        if num_workers < 0:
            raise ValueError("num_workers option should be non-negative; use num_workers=0 to disable multiprocessing.")
        if timeout < 0:
            raise ValueError("timeout option should be non-negative")
        if num_workers == 0 and prefetch_factor is not None:
            raise ValueError("prefetch_factor option could only be specified in multiprocessing.let num_workers > 0 "
                             "to enable multiprocessing, otherwise set prefetch_factor to None.")
        if persistent_workers and num_workers == 0:
            raise ValueError("persistent_workers option needs num_workers > 0")
        self.dataset = dataset
        self.num_workers = num_workers
        self.prefetch_factor = prefetch_factor
        self.pin_memory = pin_memory
        self.timeout = timeout
        self.worker_init_fn = worker_init_fn
        self.persistent_workers = persistent_workers
        self.multiprocessing_context = multiprocessing_context
        self.pin_memory_device = pin_memory_device
        self.in_order = in_order
        self._iterator = None           # PyTorch keeps the iterator of persistent workers here (never set: no workers)
        self._is_iterable = isinstance(dataset, IterableDataset)
        if self._is_iterable:
            if shuffle not in {False, None}:
                raise ValueError(f"DataLoader with IterableDataset: expected unspecified shuffle option, but got "
                                 f"shuffle={shuffle}")
            if sampler is not None:
                raise ValueError(f"DataLoader with IterableDataset: expected unspecified sampler option, but got "
                                 f"sampler={sampler}")
            if batch_sampler is not None:
                raise ValueError(f"DataLoader with IterableDataset: expected unspecified batch_sampler option, but "
                                 f"got batch_sampler={batch_sampler}")
        else:
            shuffle = bool(shuffle)
        if sampler is not None and shuffle:
            raise ValueError("sampler option is mutually exclusive with shuffle")
        if batch_sampler is not None:
            if batch_size != 1 or shuffle or sampler is not None or drop_last:
                raise ValueError("batch_sampler option is mutually exclusive with batch_size, shuffle, sampler, and "
                                 "drop_last")
            batch_size = None
            drop_last = False
        elif batch_size is None and drop_last:
            raise ValueError("batch_size=None option disables auto-batching and is mutually exclusive with drop_last")
        if sampler is None:
            if self._is_iterable:
                sampler = _InfiniteConstantSampler()
            elif shuffle:
                sampler = RandomSampler(dataset, generator=generator)
            else:
                sampler = SequentialSampler(dataset)
        if batch_size is not None and batch_sampler is None:
            batch_sampler = BatchSampler(sampler, batch_size, drop_last)
        self.batch_size = batch_size
        self.drop_last = drop_last
        self.sampler = sampler
        self.batch_sampler = batch_sampler
        self.generator = generator
        if collate_fn is None:
            collate_fn = default_collate if self._auto_collation else default_convert
        self.collate_fn = collate_fn

    @property
    def _auto_collation(self):
        return self.batch_sampler is not None

    @property
    def _index_sampler(self):
        return self.batch_sampler if self._auto_collation else self.sampler

    def _fetch(self, indices):
        ds = self.dataset
        if self._auto_collation:
            if callable(getattr(ds, "__getitems__", None)):
                return self.collate_fn(ds.__getitems__(indices))
            return self.collate_fn([ds[i] for i in indices])
        return self.collate_fn(ds[indices])

    def __iter__(self):
        return _SingleProcessDataLoaderIter(self)

    def __len__(self):
        if self._is_iterable:
            length = len(self.dataset)
            if self.batch_size is not None:
                import math
                length = length // self.batch_size if self.drop_last else math.ceil(length / self.batch_size)
            return length
        return len(self._index_sampler)


class _BaseDataLoaderIter:
    """The base class of DataLoader's iterators (packages test ``isinstance`` against it)."""


class _MultiProcessingDataLoaderIter(_BaseDataLoaderIter):
    """PyTorch's iterator over worker processes. hookgrad's DataLoader loads in the main process whatever
    ``num_workers`` says (see the module docstring), so it makes none."""

    def __init__(self, loader):
        raise NotImplementedError("hookgrad's DataLoader loads in the main process: it has no multiprocessing "
                                  "iterator (iter(loader) gives a _SingleProcessDataLoaderIter)")


class _SingleProcessDataLoaderIter(_BaseDataLoaderIter):
    """PyTorch's single-process iterator: each __next__ takes the next indices and fetches that batch, so an
    exception from __getitem__, the dataset's iterator or collate_fn propagates and the following next()
    goes on with the following batch (a generator would be finished by the exception)."""

    def __init__(self, loader):
        from .sampler import _random_int64
        self._loader = loader
        self._sampler_iter = iter(loader._index_sampler)
        self._base_seed = loader._base_seed = _random_int64(loader.generator)   # consumed as PyTorch's iterator does
        self._dataset_iter = iter(loader.dataset) if loader._is_iterable else None
        self._ended = False

    def __iter__(self):
        return self

    def __len__(self):
        return len(self._loader)

    def __next__(self):
        loader = self._loader
        index = next(self._sampler_iter)
        if self._dataset_iter is None:
            return loader._fetch(index)
        if self._ended:
            raise StopIteration
        if loader._auto_collation:
            data = []
            for _ in index:
                try:
                    data.append(next(self._dataset_iter))
                except StopIteration:
                    self._ended = True
                    break
            if not data or (loader.drop_last and len(data) < len(index)):
                raise StopIteration
        else:
            data = next(self._dataset_iter)
        return loader.collate_fn(data)
