"""``funcgrad.sparse``: PyTorch's ``torch.sparse`` for sparse COO tensors (funcgrad/_sparse.py).

>>> import funcgrad, warnings
>>> s = funcgrad.eye(2).to_sparse()
>>> funcgrad.sparse.mm(s, funcgrad.ones(2, 1))
tensor([[1.],
        [1.]])
>>> funcgrad.sparse.sum(s)
tensor(2.)
"""

from __future__ import annotations

from ._sparse import check_sparse_tensor_invariants as check_sparse_tensor_invariants
from ._sparse import mm as mm  # noqa: A004  (PyTorch's names)
from ._sparse import sum as sum

__all__ = ["check_sparse_tensor_invariants", "mm", "sum"]
