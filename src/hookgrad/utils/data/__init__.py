"""hookgrad.utils.data (mirrors torch.utils.data): datasets, samplers and a single-process DataLoader."""
from .dataset import (Dataset, IterableDataset, TensorDataset, StackDataset, Subset, ConcatDataset, ChainDataset,
                      random_split)
from .sampler import (Sampler, SequentialSampler, RandomSampler, SubsetRandomSampler, WeightedRandomSampler,
                      BatchSampler)
from .dataloader import DataLoader, default_collate, default_convert, get_worker_info
from .distributed import DistributedSampler

__all__ = ["Dataset", "IterableDataset", "TensorDataset", "Subset", "ConcatDataset", "random_split", "Sampler",
           "SequentialSampler", "RandomSampler", "SubsetRandomSampler", "WeightedRandomSampler", "BatchSampler",
           "DataLoader", "default_collate", "default_convert", "StackDataset", "ChainDataset", "get_worker_info",
           "DistributedSampler"]


# a torch name hookgrad lacks raises _missing.NotImplementedName (an AttributeError)
from ... import _missing  # noqa: E402
__getattr__ = _missing.module_getattr(__name__, 'torch.utils.data')
