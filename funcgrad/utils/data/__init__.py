"""``funcgrad.utils.data``: PyTorch's data-loading API (datasets, samplers, ``DataLoader``).

>>> import funcgrad
>>> from funcgrad.utils.data import DataLoader, TensorDataset
>>> _ = funcgrad.manual_seed(0)
>>> loader = DataLoader(TensorDataset(funcgrad.randn(10, 3)), batch_size=4, shuffle=True)
>>> [tuple(x.shape) for (x,) in loader]
[(4, 3), (4, 3), (2, 3)]
"""

from ._collate import collate as collate
from ._collate import default_collate as default_collate
from ._collate import default_collate_fn_map as default_collate_fn_map
from ._collate import default_convert as default_convert
from .dataloader import DataLoader as DataLoader
from .dataloader import WorkerInfo as WorkerInfo
from .dataloader import get_worker_info as get_worker_info
from .dataset import ChainDataset as ChainDataset
from .dataset import ConcatDataset as ConcatDataset
from .dataset import Dataset as Dataset
from .dataset import IterableDataset as IterableDataset
from .dataset import StackDataset as StackDataset
from .dataset import Subset as Subset
from .dataset import TensorDataset as TensorDataset
from .dataset import random_split as random_split
from .sampler import BatchSampler as BatchSampler
from .sampler import RandomSampler as RandomSampler
from .sampler import Sampler as Sampler
from .sampler import SequentialSampler as SequentialSampler
from .sampler import SubsetRandomSampler as SubsetRandomSampler
from .sampler import WeightedRandomSampler as WeightedRandomSampler

__all__ = ["BatchSampler", "ChainDataset", "ConcatDataset", "DataLoader", "Dataset",
           "IterableDataset", "RandomSampler", "Sampler", "SequentialSampler", "StackDataset",
           "Subset", "SubsetRandomSampler", "TensorDataset", "WeightedRandomSampler", "WorkerInfo",
           "collate", "default_collate", "default_collate_fn_map", "default_convert",
           "get_worker_info", "random_split"]
from . import distributed as distributed  # noqa: E402
