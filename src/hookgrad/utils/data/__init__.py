"""hookgrad.utils.data (mirrors torch.utils.data): datasets, samplers and a single-process DataLoader."""
from .dataset import Dataset, IterableDataset, TensorDataset, Subset, ConcatDataset, random_split
from .sampler import (Sampler, SequentialSampler, RandomSampler, SubsetRandomSampler, WeightedRandomSampler,
                      BatchSampler)
from .dataloader import DataLoader, default_collate, default_convert

__all__ = ["Dataset", "IterableDataset", "TensorDataset", "Subset", "ConcatDataset", "random_split", "Sampler",
           "SequentialSampler", "RandomSampler", "SubsetRandomSampler", "WeightedRandomSampler", "BatchSampler",
           "DataLoader", "default_collate", "default_convert"]
