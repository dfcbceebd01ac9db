"""Spec rows for the sparse COO kernels (funcgrad/_sparse.py; PyTorch parity: tests/test_sparse_coo.py):
each row builds a sparse tensor from fixed indices and the row's float values, and compares a dense
result (or the values) with the same computation on the dense matrix in ``jax.numpy``."""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np

import funcgrad as fg

from . import Spec

I = np.array([[0, 1, 1, 2], [2, 0, 2, 2]])  # (3, 3), sorted, no duplicates
J = np.array([[0, 1, 0], [2, 0, 2]])  # a duplicate: (0, 2) twice
K = np.array([[0, 2], [2, 0]])
X = np.array([[0., 1.5, 0.], [2., 0., -3.]])


def S(idx, v, size=(3, 3)):
    return fg.sparse_coo_tensor(fg.tensor(idx), v, size, check_invariants=False)


def V(s):
    """The values Tensor itself (``values()`` adds its ValuesBackward0, ``_values()`` is detached)."""
    return s._cell.value.values


def dense(idx, v, size=(3, 3)):
    return jnp.zeros(size, v.dtype).at[tuple(idx)].add(v)


SPECS = [
    Spec("sparse_to_dense", lambda v: S(I, v).to_dense(), lambda v: dense(I, v), [(4,)],
         grad_fn="ToDenseBackward0"),
    Spec("sparse_values", lambda v: S(I, v).coalesce().values(), lambda v: v, [(4,)], grad_fn="ValuesBackward0"),
    Spec("sparse_coo_values", lambda v: V(S(I, v)), lambda v: v, [(4,)],
         grad_fn="SparseCooTensorWithDimsAndTensorsBackward0"),
    Spec("sparse_from_dense", lambda x: V(x.to_sparse()), lambda x: x[np.nonzero(X)], [X],
         grad_fn="ToSparseBackward1"),
    Spec("sparse_from_dense_dim", lambda x: V(x.to_sparse(1)), lambda x: x, [X],
         grad_fn="ToSparseBackward0"),
    Spec("sparse_mm", lambda v, d: S(I, v) @ d, lambda v, d: dense(I, v) @ d, [(4,), (3, 2)],
         grad_fn="MmBackward0"),
    Spec("sparse_addmm", lambda v, d: fg.sparse.mm(S(I, v), d), lambda v, d: dense(I, v) @ d, [(4,), (3, 2)],
         grad_fn="SparseAddmmBackward0"),
    Spec("sparse_mm_of_dense", lambda x, d: x.to_sparse() @ d, lambda x, d: x @ d, [X, (3, 2)],
         grad_fn="MmBackward0"),
    Spec("dense_sparse_mm", lambda d, v: d @ S(I, v), lambda d, v: d @ dense(I, v), [(2, 3), (4,)],
         grad_fn="MmBackward0"),
    Spec("dense_add_sparse", lambda d, v: d + S(I, v), lambda d, v: d + dense(I, v), [(3, 3), (4,)],
         grad_fn="AddBackward0"),
    Spec("dense_sub_sparse", lambda d, v: d - S(I, v), lambda d, v: d - dense(I, v), [(3, 3), (4,)],
         grad_fn="SubBackward0"),
    Spec("sparse_coalesce", lambda v: V(S(J, v).coalesce()), lambda v: jnp.stack([v[0] + v[2], v[1]]),
         [(3,)], grad_fn="CoalesceBackward0"),
    Spec("sparse_sum_dim", lambda v: V(fg.sum(S(I, v), 1)), lambda v: jnp.stack([v[0], v[1] + v[2], v[3]]),
         [(4,)], grad_fn="SumBackward1"),
    Spec("sparse_sum_all", lambda v: fg.sum(S(I, v), (0, 1)), lambda v: v.sum(0), [(4,)], grad_fn="SumBackward1"),
    Spec("sparse_sparse_sum", lambda v: V(fg.sparse.sum(S(I, v), 1)),
         lambda v: jnp.stack([v[0], v[1] + v[2], v[3]]), [(4,)], grad_fn="SparseSumBackward0"),
    Spec("sparse_sparse_sum_all", lambda v: fg.sparse.sum(S(I, v), (0, 1)), lambda v: v.sum(0), [(4,)],
         grad_fn="SparseSumBackward0"),
    Spec("sparse_add_sparse", lambda v, w: V(S(I, v) + S(K, w)),
         lambda v, w: jnp.stack([v[0] + w[0], v[1], v[2], w[1], v[3]]), [(4,), (2,)], grad_fn="AddBackward0"),
]
