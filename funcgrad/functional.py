"""``funcgrad.functional``: PyTorch's ``torch.functional``, the module of the functions PyTorch
writes in Python (``einsum``, ``norm``, ``split``, ``stft``, ``meshgrid``, ``unique``...), each
the same object as ``funcgrad.<name>``. Scripts import it (``import torch.functional as F``).

>>> import funcgrad
>>> import funcgrad.functional as F
>>> F.einsum is funcgrad.einsum, F.norm(funcgrad.ones(4))
(True, tensor(2.))
"""

from ._ops.decomp import tensor_norm as norm
from ._ops.indexing import unique, unique_consecutive
from ._ops.linalg import einsum, tensordot
from ._ops.linalg2 import lu_legacy as lu
from ._ops.lowrank import pca_lowrank, svd_lowrank
from ._ops.more import cdist
from ._ops.more2 import block_diag, cartesian_prod
from ._ops.more3 import chain_matmul
from ._ops.more4 import unravel_index
from ._ops.shape_more import (atleast_1d, atleast_2d, atleast_3d, broadcast_shapes, broadcast_tensors,
                              meshgrid, split)
from ._ops.spectral import istft, stft

__all__ = ["atleast_1d", "atleast_2d", "atleast_3d", "broadcast_shapes", "broadcast_tensors", "cartesian_prod",
           "block_diag", "cdist", "chain_matmul", "einsum", "istft", "lu", "norm", "meshgrid",
           "pca_lowrank", "split", "stft", "svd_lowrank", "tensordot", "unique", "unique_consecutive",
           "unravel_index"]
