"""Sparse COO tensors (``funcgrad.sparse_coo``): PyTorch's ``torch.sparse_coo_tensor``,
``to_sparse``/``to_dense``, products with dense matrices, sums and the elementwise ops a graph
network's preprocessing uses.

A sparse tensor is a ``Tensor`` whose storage cell holds a ``_COO`` (an int64 indices Tensor of
shape ``(sparse_dim, nnz)``, a values Tensor of shape ``(nnz, *dense_dims)``, the size and whether
it is coalesced) instead of an array. ``_COO`` is no JAX type, so a dense kernel refuses it where
it is handed one: dispatch's failure branch (never its fast path, which only takes arrays) then
asks ``on_kernel_error`` here, which computes what PyTorch computes for a sparse operand or raises
PyTorch's ``Could not run 'aten::…' with arguments from the 'SparseCPU' backend``. Gradients flow
through the values Tensor: every product and sum here is an op of the table (a jitted kernel and
its jitted vjp, as every op), taking the indices as a non-differentiable operand.
"""

from __future__ import annotations

import warnings

import jax
import jax.numpy as jnp
import numpy as np

from . import _dispatch, _dtype, _runtime, _strides
from ._factories import tensor as _tensor_of
from ._ops._registry import defop
from ._ops.linalg import mm as _mm
from ._ops.reduce import sum as _dense_sum
from ._tensor import Tensor, _scalar_type_name, _wrap_dim
from ._tensor_str import format_sparse

sparse_coo = _strides.layout("sparse_coo")

INVARIANTS_MSG = (
    "Sparse invariant checks are implicitly disabled. Memory errors (e.g. SEGFAULT) will occur when "
    "operating on a sparse tensor which violates the invariants, but checks incur performance overhead. "
    "To silence this warning, explicitly opt in or out. See "
    "`torch.sparse.check_sparse_tensor_invariants.__doc__` for guidance. ")
_INVARIANTS_WARNED = [False]
REQUIRES_GRAD_MSG = ("funcgrad: a sparse tensor that requires grad itself is not supported (its "
                     "gradient would be sparse); make its values require grad instead: "
                     "sparse_coo_tensor(indices, values.requires_grad_(), size)")
# ATen's names of the ops whose funcgrad key differs (the rest are spelled alike)
_ATEN = {"sum_dim": "sum.dim_IntList", "mean_dim": "mean.dim", "to_copy": "_to_copy", "mul": "mul.Tensor",
         "add": "add.Tensor", "sub": "sub.Tensor", "div": "div.Tensor", "mean": "mean.dim",
         "where": "where.self", "softmax": "_softmax", "log_softmax": "_log_softmax"}


def _not_implemented(name: str, backend: str = "SparseCPU") -> NotImplementedError:
    """PyTorch's error for an op with no kernel for ``backend`` (its first sentences)."""
    name = _ATEN.get(name, name)
    note = "" if backend != "SparseCPU" else (
        " (funcgrad's sparse COO tensors run to_dense, mm/matmul with a dense matrix, sum, add, sub, mul, "
        "div by a number, neg, t, to, coalesce.)")
    return NotImplementedError(
        f"Could not run 'aten::{name}' with arguments from the '{backend}' backend. This could be because "
        f"the operator doesn't exist for this backend, or was omitted during the selective/custom build "
        f"process (if using custom build). If you are a Facebook employee using PyTorch on mobile, please "
        f"visit https://fburl.com/ptmfixes for possible resolutions.{note}")


# ---- the kernels (ops of the table: jitted forward, jitted vjp) ------------------------------
def _to_dense_fn(indices, values, *, shape):
    return jnp.zeros(shape, values.dtype).at[tuple(indices)].add(values)


def _gather_fn(dense, indices):
    return dense[tuple(indices)]


def _sparse_mm_fn(indices, values, dense, *, rows):
    return jax.ops.segment_sum(values[:, None] * dense[indices[1]], indices[0], num_segments=rows)


def _dense_sparse_mm_fn(dense, indices, values, *, cols):
    return jax.ops.segment_sum((dense[:, indices[0]] * values).T, indices[1], num_segments=cols).T


def _add_fn(dense, indices, values, *, dtype, alpha):
    v = values.astype(dtype)
    return dense.astype(dtype).at[tuple(indices)].add(v if alpha == 1 else v * alpha)


def _merge_fn(va, vb, pa, pb, *, n, dtype, alpha):
    out = jnp.zeros((n,) + va.shape[1:], dtype).at[pa].add(va.astype(dtype))
    vb = vb.astype(dtype)
    return out.at[pb].add(vb if alpha == 1 else vb * alpha)


def _segment_fn(values, segments, *, n):
    return jax.ops.segment_sum(values, segments, num_segments=n)


_to_dense = defop("sparse_to_dense", _to_dense_fn, "ToDenseBackward0", diff=(1,))
_to_sparse1 = defop("sparse_from_dense", _gather_fn, "ToSparseBackward1", diff=(0,))
_to_sparse0 = defop("sparse_from_dense_dim", _gather_fn, "ToSparseBackward0", diff=(0,))
_values_out = defop("sparse_values", lambda v: v + jnp.zeros((), v.dtype), "ValuesBackward0", linear=True)
_values_of = defop("sparse_coo_values", lambda v: v + jnp.zeros((), v.dtype),
                   "SparseCooTensorWithDimsAndTensorsBackward0", linear=True)
_spmm = defop("sparse_mm", _sparse_mm_fn, "MmBackward0", diff=(1, 2))
_spaddmm = defop("sparse_addmm", _sparse_mm_fn, "SparseAddmmBackward0", diff=(1, 2))


def _spmm_dense_fn(x, indices, dense, *, rows):
    return _sparse_mm_fn(indices, x[tuple(indices)], dense, rows=rows)


def _spmm_dense_vjp(primals, cot, *, grad_mode, rows):
    """mm's derivatives for a sparse self (``grad @ mat2.t()``, dense: every entry of to_sparse's
    input) and for the dense mat2 (``self.t() @ grad``)."""
    x, indices, dense = primals
    return (cot @ dense.T.astype(cot.dtype), None,
            _dense_sparse_mm_fn(cot.T, indices, x[tuple(indices)], cols=dense.shape[0]).T)


_spmm_dense = defop("sparse_mm_of_dense", _spmm_dense_fn, "MmBackward0", diff=(0, 2), vjp=_spmm_dense_vjp)
_dsmm = defop("dense_sparse_mm", _dense_sparse_mm_fn, "MmBackward0", diff=(0, 2))
_add_dense = defop("dense_add_sparse", _add_fn, "AddBackward0", diff=(0, 2))
_sub_dense = defop("dense_sub_sparse", _add_fn, "SubBackward0", diff=(0, 2))
_coalesce_values = defop("sparse_coalesce", _segment_fn, "CoalesceBackward0", diff=(0,), linear=True)
_merge_values = defop("sparse_add_sparse", _merge_fn, "AddBackward0", diff=(0, 1), linear=True)
_sum_values = defop("sparse_sum_dim", _segment_fn, "SumBackward1", diff=(0,), linear=True)
def _sum_all_fn(v, *, shape=None):
    return v.sum(0) if shape is None else v.sum(0).reshape(shape)


_sum_all = defop("sparse_sum_all", _sum_all_fn, "SumBackward1", linear=True)
_sparse_sum_values = defop("sparse_sparse_sum", _segment_fn, "SparseSumBackward0", diff=(0,), linear=True)
_sparse_sum_all = defop("sparse_sparse_sum_all", _sum_all_fn, "SparseSumBackward0", linear=True)


# ---- the value in the storage cell, and the Tensor that holds it ------------------------------
class _COO:
    """A sparse COO tensor's storage: no JAX type, so no dense kernel takes it."""

    __slots__ = ("indices", "values", "shape", "coalesced", "dense")

    def __init__(self, indices: Tensor, values: Tensor, shape: tuple, coalesced: bool, dense=None):
        self.indices, self.values, self.shape, self.coalesced = indices, values, shape, coalesced
        # to_sparse()'s input where it requires grad: a product's gradient reaches it whole, as
        # PyTorch's (mm's derivative for a sparse self is dense there, and ToSparseBackward passes
        # it on), not only at the entries kept
        self.dense = dense

    @property
    def dtype(self):
        return self.values._value.dtype

    @property
    def ndim(self) -> int:
        return len(self.shape)

    def devices(self):
        return self.values._value.devices()


def _coo(t) -> _COO:
    return t._cell.value


def is_sparse(t) -> bool:
    return isinstance(t, Tensor) and type(t._cell.value) is _COO


class SparseTensor(Tensor):
    """A ``Tensor`` of layout ``funcgrad.sparse_coo`` (``type()`` prints as ``funcgrad.Tensor``)."""

    __slots__ = ()
    is_sparse = True
    layout = sparse_coo

    def __repr__(self) -> str:
        c = _coo(self)
        dt = self.dtype
        suffixes = [f"size={tuple(c.shape)}", f"nnz={c.values.shape[0]}"]
        if dt not in (_dtype.get_default_dtype(), _dtype.int64, _dtype.bool_):
            suffixes.append(f"dtype={dt!r}")
        dev = self.device
        if dev.type != "cpu":
            suffixes.insert(0, f"device='{dev}'")
        suffixes.append(f"layout={sparse_coo!r}")
        if self._grad_fn is not None:
            suffixes.append(f"grad_fn=<{type(self._grad_fn).__name__}>")
        elif self._requires_grad:
            suffixes.append("requires_grad=True")
        return format_sparse(np.asarray(c.indices._value), np.asarray(c.values._value), dt.name,
                             dt is _dtype.get_default_dtype(), suffixes)

    __str__ = __repr__

    @property
    def requires_grad(self) -> bool:
        return self._requires_grad

    @requires_grad.setter
    def requires_grad(self, flag: bool) -> None:
        if flag:
            raise NotImplementedError(REQUIRES_GRAD_MSG)

    def requires_grad_(self, requires_grad: bool = True) -> Tensor:
        self.requires_grad = requires_grad
        return self

    def stride(self, dim=None):  # (PyTorch 2.13 answers zeros)
        return (0,) * self.ndim if dim is None else 0

    def is_contiguous(self, memory_format=None) -> bool:
        return False

    def contiguous(self, memory_format=None):
        raise RuntimeError("unsupported memory format option Contiguous")

    def numpy(self, *, force: bool = False):
        raise TypeError("can't convert Sparse layout tensor to numpy. Use Tensor.to_dense() first.")

    def tolist(self):
        raise RuntimeError("Cannot access data pointer of Tensor that doesn't have storage")

    data_ptr = tolist

    def item(self):
        n = self.numel()
        if n != 1:
            raise RuntimeError(f"a Tensor with {n} elements cannot be converted to Scalar")
        return self.to_dense().item()

    def __array__(self, dtype=None, copy=None):
        self.numpy()

    def __bool__(self) -> bool:
        return bool(self.item())

    def __getitem__(self, idx):
        raise _not_implemented("index")

    def view(self, *shape):
        raise _not_implemented("view")

    def reshape(self, *shape):
        raise RuntimeError("reshape is not implemented for sparse tensors")

    @property
    def data(self) -> Tensor:
        return self.detach()

    def _set_value(self, new) -> None:
        """An in-place write: only of another sparse value (``s.mul_(2)``, ``s += s``); a dense write
        (``fill_``, ``copy_``, an init) would leave a dense array in a sparse tensor's storage."""
        if type(new) is not _COO:
            raise NotImplementedError(f"funcgrad: a dense in-place write into a sparse tensor is not "
                                      f"supported (its in-place ops: {_INPLACE})")
        Tensor._set_value(self, new)

    def zero_(self) -> Tensor:
        """No entries left (PyTorch's ``zero_`` of a sparse tensor: nnz 0, coalesced)."""
        self._check_inplace()
        c = _coo(self)
        sd = c.indices.shape[0]
        idx = _tensor_of(np.zeros((sd, 0), np.int64), device=c.values.device)
        self._set_value(_COO(idx, c.values.detach()[:0], c.shape, True))
        if self._ver is not None:
            self._ver[0] += 1
        return self

    @property
    def nbytes(self) -> int:
        raise RuntimeError("nbytes is not defined for sparse tensors.  If you want the size of the "
                           "constituent tensors, add the nbytes of the indices and values.  If you want the "
                           "size of the  equivalent dense tensor, multiply numel() by element_size()")

    def untyped_storage(self):
        raise NotImplementedError("Cannot access storage of SparseTensorImpl")

    storage = untyped_storage

    def __float__(self) -> float:
        if self.numel() != 1:
            raise ValueError("only one element tensors can be converted to Python scalars")
        return float(self.to_dense())

    def __int__(self) -> int:
        if self.numel() != 1:
            raise ValueError("only one element tensors can be converted to Python scalars")
        return int(self.to_dense())

    def detach(self) -> Tensor:
        c = _coo(self)
        return _make(c.indices, c.values.detach(), c.shape, c.coalesced)

    def clone(self, *, memory_format=None) -> Tensor:
        c = _coo(self)
        return _make(c.indices.clone(), c.values.clone(), c.shape, c.coalesced, _on_dense(c, Tensor.clone))

    def to(self, *args, **kwargs) -> Tensor:
        """``to(dtype)``, ``to(device)``: the indices and values moved/cast (same pattern)."""
        c = _coo(self)
        probe = c.values.to(*args, **kwargs)
        if probe is c.values:
            return self
        idx = c.indices.to(probe.device)
        return _make(idx, probe, c.shape, c.coalesced, _on_dense(c, lambda d: d.to(*args, **kwargs)))

    def t(self) -> Tensor:
        c = _coo(self)
        if c.ndim > 2:
            raise RuntimeError(f"t() expects a tensor with <= 2 sparse and 0 dense dimensions, but self is "
                               f"{c.indices.shape[0]} sparse and {c.values.ndim - 1} dense dimensions")
        if c.ndim < 2 or c.indices.shape[0] < 2:
            return self
        return _make(c.indices.flip(0), c.values, (c.shape[1], c.shape[0]), False, _on_dense(c, Tensor.t))

    # the sparse-only methods (on a dense tensor, Tensor's versions raise PyTorch's errors)
    def to_dense(self, dtype=None, *, masked_grad=None) -> Tensor:
        c = _coo(self)
        out = _dispatch.apply(_to_dense, c.indices, c.values, shape=tuple(c.shape))
        return out if dtype is None else out.to(dtype)

    def to_sparse(self, sparse_dim=None, *, layout=None, blocksize=None, dense_dim=None) -> Tensor:
        if sparse_dim is not None and sparse_dim != self.sparse_dim():
            raise RuntimeError("to_sparse: conversion from Sparse to Sparse with sparse_dim argument "
                               "!=self.sparse_dim() is not supported")
        return self

    def _indices(self) -> Tensor:
        return _coo(self).indices

    def _values(self) -> Tensor:  # (PyTorch's alias is not differentiable)
        return _coo(self).values.detach()

    def indices(self) -> Tensor:
        if not _coo(self).coalesced:
            raise RuntimeError("Cannot get indices on an uncoalesced tensor, please call .coalesce() first")
        return _coo(self).indices

    def values(self) -> Tensor:
        if not _coo(self).coalesced:
            raise RuntimeError("Cannot get values on an uncoalesced tensor, please call .coalesce() first")
        return _dispatch.apply(_values_out, _coo(self).values)

    def _nnz(self) -> int:
        return _coo(self).values.shape[0]

    def sparse_dim(self) -> int:
        return _coo(self).indices.shape[0]

    def dense_dim(self) -> int:
        return _coo(self).values.ndim - 1

    def is_coalesced(self) -> bool:
        return _coo(self).coalesced

    def coalesce(self) -> Tensor:
        return _coalesce(self)


SparseTensor.__name__ = SparseTensor.__qualname__ = "Tensor"  # (type(s) prints funcgrad.Tensor, as PyTorch)
SparseTensor.__module__ = "funcgrad"


def _make(indices: Tensor, values: Tensor, shape, coalesced: bool, dense=None) -> SparseTensor:
    t = object.__new__(SparseTensor)
    t._init(_COO(indices, values, tuple(shape), coalesced, dense))
    t._requires_grad, t._grad_fn = values._requires_grad, values._grad_fn
    if values._output_nr:
        t._output_nr = values._output_nr
    return t


def _strided_error(what: str):
    def method(self, *args, **kwargs):
        raise RuntimeError(f"{what} expected sparse coordinate tensor layout but got Strided")
    method.__name__ = what
    return method


def _dense_nnz(self):
    raise _not_implemented("_nnz", "CPU")


def _dense_to_dense(self, dtype=None, *, masked_grad=None) -> Tensor:
    return self if dtype is None else self.to(dtype)


def _dense_sparse_dim(self) -> int:
    return 0


def _dense_dense_dim(self) -> int:
    return self.ndim


# ---- construction ---------------------------------------------------------------------------
_CHECK = [None]  # check_invariants by default (funcgrad.sparse.check_sparse_tensor_invariants); None: unset


def sparse_coo_tensor(indices, values, size=None, *, dtype=None, device=None, pin_memory=False,
                      requires_grad=False, check_invariants=None, is_coalesced=None) -> Tensor:
    """PyTorch's ``torch.sparse_coo_tensor``: a tensor with ``values[k]`` at ``indices[:, k]``
    (duplicates add up when coalesced or densified).

    >>> import funcgrad, warnings
    >>> with warnings.catch_warnings():
    ...     warnings.simplefilter("ignore")
    ...     s = funcgrad.sparse_coo_tensor([[0, 1], [2, 0]], [3., 4.], (2, 3))
    >>> s.to_dense()
    tensor([[0., 0., 3.],
            [4., 0., 0.]])
    """
    if requires_grad:
        raise NotImplementedError(REQUIRES_GRAD_MSG)
    if check_invariants is None:
        if _CHECK[0] is None and _runtime.warn_once(_INVARIANTS_WARNED):
            warnings.warn(INVARIANTS_MSG, UserWarning, stacklevel=2)
        check_invariants = bool(_CHECK[0])
    idx = indices if isinstance(indices, Tensor) else _tensor_of(np.asarray(indices))
    val = values if isinstance(values, Tensor) else _tensor_of(values)
    if idx.dtype is not _dtype.int64:
        idx = idx.detach().to(_dtype.int64)
    if idx.ndim != 2:
        raise RuntimeError(f"'len(size) == sparse_dim + dense_dim' is not satisfied: len(size) = "
                           f"{len(size) if size is not None else idx.ndim}, sparse_dim = {idx.shape[0]}, "
                           f"dense_dim = {max(val.ndim - 1, 0)}")
    if val.ndim == 0:
        raise RuntimeError("values has incorrect size, expected at least one dimension")
    sd, nnz = idx.shape
    if val.shape[0] != nnz:
        raise RuntimeError(f"indices and values must have same nnz, but got nnz from indices: {nnz}, "
                           f"nnz from values: {val.shape[0]}")
    if dtype is not None:
        val = val.to(_dtype.to_dtype(dtype))
    if device is not None:
        val, idx = val.to(device), idx.to(device)
    if size is None:
        hi = np.asarray(idx._value).max(axis=1) + 1 if nnz else np.zeros(sd, np.int64)
        size = tuple(int(h) for h in hi) + tuple(val.shape[1:])
    size = tuple(int(s) for s in size)
    if len(size) != sd + val.ndim - 1:
        raise RuntimeError(f"'len(size) == sparse_dim + dense_dim' is not satisfied: len(size) = "
                           f"{len(size)}, sparse_dim = {sd}, dense_dim = {val.ndim - 1}")
    if tuple(val.shape[1:]) != size[sd:]:
        raise RuntimeError(f"values has incorrect size, expected {list((nnz, *size[sd:]))}, got "
                           f"{list(val.shape)}")
    if check_invariants and nnz:
        ii = np.asarray(idx._value)
        for d in range(sd):
            if ii[d].min() < 0:
                raise RuntimeError(f"found negative index {int(ii[d].min())} for dim {d}")
            if ii[d].max() >= size[d]:
                raise RuntimeError(f"size is inconsistent with indices: for dim {d}, size is {size[d]} but "
                                   f"found index {int(ii[d].max())}")
    if val._requires_grad:
        val = _dispatch.apply(_values_of, val)
    return _make(idx, val, size, bool(is_coalesced) or nnz <= 1)


def to_sparse(self, sparse_dim=None, *, layout=None, blocksize=None, dense_dim=None) -> Tensor:
    """``Tensor.to_sparse()``: the nonzero entries (along the first ``sparse_dim`` dims) as a
    coalesced sparse COO tensor."""
    if layout not in (None, sparse_coo) or blocksize is not None:
        raise NotImplementedError("funcgrad: only the sparse COO layout is supported")
    nd = self.ndim
    sd = nd if sparse_dim is None else int(sparse_dim)
    if dense_dim is not None:
        sd = nd - int(dense_dim)
    if not 0 <= sd <= nd:
        raise RuntimeError(f"sparse_dim must be between 0 and {nd} (inclusive), but got {sd}")
    a = np.asarray(self.detach()._value)
    nz = a != 0 if sd == nd else (a != 0).reshape(a.shape[:sd] + (-1,)).any(-1)
    idx = _tensor_of(np.stack(np.nonzero(nz)).astype(np.int64).reshape(sd, -1), device=self.device)
    val = _dispatch.apply(_to_sparse1 if sparse_dim is None else _to_sparse0, self, idx)
    return _make(idx, val, self.shape, True, self if val._requires_grad and sd == nd else None)


def _coalesce(s) -> Tensor:
    c = _coo(s)
    if c.coalesced:
        return s
    ii = np.asarray(c.indices._value)
    sd = ii.shape[0]
    lin = np.ravel_multi_index(tuple(ii), c.shape[:sd])
    uniq, inv = np.unique(lin, return_inverse=True)
    idx = _tensor_of(np.stack(np.unravel_index(uniq, c.shape[:sd])).astype(np.int64).reshape(sd, -1),
                     device=c.values.device)
    val = _dispatch.apply(_coalesce_values, c.values, _tensor_of(inv.reshape(-1), device=c.values.device),
                          n=len(uniq))
    return _make(idx, val, c.shape, True, c.dense)


# ---- products -------------------------------------------------------------------------------
def _check_mm(a, b):
    if a.ndim != 2 or b.ndim != 2:
        raise RuntimeError("self must be a matrix" if a.ndim != 2 else "mat2 must be a matrix")
    if is_sparse(a) and _coo(a).indices.shape[0] != 2:
        raise _not_implemented("mm")
    if a.shape[1] != b.shape[0]:
        raise RuntimeError(f"addmm: Argument #3 (dense): Expected dim 0 size {a.shape[1]}, got {b.shape[0]}")
    if a.dtype is not b.dtype:
        raise RuntimeError(f"expected scalar type {_scalar_type_name(a.dtype)} but found "
                           f"{_scalar_type_name(b.dtype)}")


def _sparse_mm(a, b, op=_spmm):
    """sparse @ dense (dense result), dense @ sparse (dense), sparse @ sparse (sparse)."""
    if is_sparse(a) and is_sparse(b):
        _check_mm(a, b)
        return to_sparse(_sparse_mm(a, b.to_dense(), op))
    if is_sparse(a):
        _check_mm(a, b)
        c = _coo(a)
        if c.dense is not None and op is _spmm:  # (torch.sparse.mm's derivative is masked: the values')
            return _dispatch.apply(_spmm_dense, c.dense, c.indices, b, rows=a.shape[0])
        return _dispatch.apply(op, c.indices, c.values, b, rows=a.shape[0])
    if b.ndim != 2 or _coo(b).indices.shape[0] != 2 or a.ndim != 2:
        raise _not_implemented("mm")
    _check_mm(b.t(), a.t())  # (ATen's dense @ sparse: (sparse.t() @ dense.t()).t())
    c = _coo(b)
    if c.dense is not None:  # (mm's derivative for a sparse mat2 is dense)
        return _mm(a, c.dense)
    return _dispatch.apply(_dsmm, a, c.indices, c.values, cols=b.shape[1])


def spmm(input, mat2) -> Tensor:
    """``torch.spmm``: ``mm`` (a sparse ``input`` times a dense ``mat2``, or two dense)."""
    return _mm(input, mat2)


def mm(mat1, mat2, reduce: str = "sum") -> Tensor:
    """``torch.sparse.mm``: sparse @ dense (``SparseAddmmBackward0``), sparse @ sparse."""
    if reduce != "sum":
        raise NotImplementedError(f"funcgrad: torch.sparse.mm(reduce={reduce!r}) is not supported")
    if not is_sparse(mat1):
        return _mm(mat1, mat2)
    return _sparse_mm(mat1, mat2, _spaddmm)


# ---- elementwise and sums ---------------------------------------------------------------------
def _add(a, b, alpha=1, op=None):
    if is_sparse(a) and not is_sparse(b):
        raise RuntimeError("add(sparse, dense) is not supported. Use add(dense, sparse) instead.")
    if is_sparse(a):  # sparse + sparse: the entries of both (uncoalesced, as PyTorch's)
        if a.shape != b.shape:
            raise RuntimeError(f"add: expected sizes of 'self' and 'other' to match, but {list(a.shape)} != "
                               f"{list(b.shape)}")
        return _merge(a, b, alpha)
    if not isinstance(a, Tensor):
        raise RuntimeError("add(sparse, dense) is not supported. Use add(dense, sparse) instead.")
    if a.shape != b.shape:
        raise RuntimeError(f"add: expected 'self' and 'other' to have same size, but self has size "
                           f"{list(a.shape)} while other has size {list(b.shape)} (FYI: dense-sparse "
                           f"addition does not currently support broadcasting)")
    c = _coo(b)
    if c.dense is not None:  # (add's derivative for a sparse other is dense)
        return (a - c.dense) if op is _sub_dense else a.add(c.dense, alpha=alpha)
    dt = _dtype.result_type([(a.dtype, 2), (b.dtype, 2)])
    return _dispatch.apply(op or _add_dense, a, c.indices, c.values, dtype=dt.np, alpha=alpha)


def _linear(c) -> np.ndarray:
    ii = np.asarray(c.indices._value)
    return np.ravel_multi_index(tuple(ii), c.shape[:ii.shape[0]], mode="wrap") if ii.shape[1] else \
        np.zeros(0, np.int64)


def _merge(a, b, alpha):
    """sparse + sparse as ATen's add_out_sparse_contiguous: one walk along both index lists, equal
    entries added (so two sorted lists give a sorted, duplicate-free result)."""
    ca, cb = _coo(a), _coo(b)
    la, lb = _linear(ca), _linear(cb)
    pa, pb, cols = np.empty(len(la), np.int64), np.empty(len(lb), np.int64), []
    i = j = 0
    while i < len(la) or j < len(lb):
        if j == len(lb) or (i < len(la) and la[i] < lb[j]):
            pa[i], i = len(cols), i + 1
            cols.append(("a", i - 1))
        elif i == len(la) or lb[j] < la[i]:
            pb[j], j = len(cols), j + 1
            cols.append(("b", j - 1))
        else:
            pa[i], pb[j] = len(cols), len(cols)
            cols.append(("a", i))
            i, j = i + 1, j + 1
    ia, ib = np.asarray(ca.indices._value), np.asarray(cb.indices._value)
    idx = np.stack([ia[:, k] if w == "a" else ib[:, k] for w, k in cols], 1) if cols else ia[:, :0]
    dt = _dtype.result_type([(a.dtype, 2), (b.dtype, 2)])
    dev = ca.values.device
    val = _dispatch.apply(_merge_values, ca.values, cb.values, _tensor_of(pa, device=dev),
                          _tensor_of(pb, device=dev), n=len(cols), dtype=dt.np, alpha=alpha)
    dense = None
    if ca.dense is not None or cb.dense is not None:  # (add's derivative is dense: both sides whole)
        dense = (a.to_dense() if ca.dense is None else ca.dense).add(
            b.to_dense() if cb.dense is None else cb.dense, alpha=alpha).to(dt)
    return _make(_tensor_of(idx.astype(np.int64), device=dev), val, a.shape, ca.coalesced and cb.coalesced,
                 dense)


_INPLACE = "zero_, mul_/div_ by a number, add_/sub_ of a sparse tensor"


def _mul(s, o):
    """sparse * dense (the values times the dense entries at the indices), sparse * sparse (the
    entries both have)."""
    c = _coo(s)
    if not is_sparse(o):
        if o.shape != s.shape:
            raise _not_implemented("mul")
        return _make(c.indices, c.values * o[tuple(c.indices)], c.shape, c.coalesced)
    if o.shape != s.shape:
        raise RuntimeError(f"mul: expected 'self' and 'other' to have same sizes, but {list(s.shape)} != "
                           f"{list(o.shape)}")
    s, o = _coalesce(s), _coalesce(o)
    cs, co = _coo(s), _coo(o)
    _, ia, ib = np.intersect1d(_linear(cs), _linear(co), assume_unique=True, return_indices=True)
    dev = cs.values.device
    ta, tb = _tensor_of(ia.astype(np.int64), device=dev), _tensor_of(ib.astype(np.int64), device=dev)
    return _make(cs.indices[:, ta], cs.values[ta] * co.values[tb], c.shape, True)


def _scale(s, fn):
    """An op on the values alone (``s * 2``, ``s / 2``, ``-s``): same pattern."""
    c = _coo(s)
    return _make(c.indices, fn(c.values), c.shape, c.coalesced, _on_dense(c, fn))


def _on_dense(c, fn):
    """``fn`` of the dense source of a sparse tensor made by ``to_sparse()`` of a tensor requiring
    grad (``_COO.dense``), for an op whose derivative passes a dense gradient on (t, to, a number's
    product...); None where there is none."""
    return None if c.dense is None else fn(c.dense)


def sum(input, dim=None, dtype=None) -> Tensor:  # noqa: A001  (PyTorch's name)
    """``torch.sparse.sum``: over all (a dense 0-d tensor) or over ``dim`` (sparse, coalesced;
    dense where every sparse dim is summed), ``SparseSumBackward0`` where a dim is given."""
    if not is_sparse(input):
        return _dense_sum(input, dtype=dtype) if dim is None else _dense_sum(input, dim, dtype=dtype)
    return _sum(input, dim, False, dtype, (_sparse_sum_all, _sparse_sum_values))


def _sum(input, dim, keepdim, dtype, ops) -> Tensor:
    """``sum`` of a sparse tensor; ``ops``: the kernels over every sparse dim and over some (their
    nodes: ``torch.sum``'s SumBackward1, ``torch.sparse.sum``'s SparseSumBackward0)."""
    c = _coo(input)
    vals = c.values if dtype is None else c.values.to(dtype)
    if dim is None:  # (torch.sum's derivative for a sparse self is dense, torch.sparse.sum's masked)
        return vals.sum() if c.dense is None or dtype is not None or ops[0] is not _sum_all else c.dense.sum()
    dims = sorted({_wrap_dim(d, c.ndim) for d in ((dim,) if isinstance(dim, int) else dim)})
    sd = c.indices.shape[0]
    dense = [d - sd + 1 for d in dims if d >= sd]
    if dense:
        vals = vals.sum(dense)
    keep = [d for d in range(sd) if d not in dims]
    shape = tuple(n for i, n in enumerate(c.shape) if i not in dims)
    if keepdim:  # (the summed dims stay, of size 1: their index rows all 0; dense if all are summed)
        shape = tuple(1 if i in dims else n for i, n in enumerate(c.shape))
        if not keep:
            return _dispatch.apply(ops[0], vals, shape=shape)
        keep = list(range(sd))
    if not keep:
        return _dispatch.apply(ops[0], vals)
    ii = np.asarray(c.indices._value)[keep] * np.array([[d not in dims] for d in keep], np.int64)
    if not ii.shape[1]:
        return _make(_tensor_of(ii.astype(np.int64)), vals, shape, True)
    sizes = tuple(shape[:len(keep)] if keepdim else (c.shape[d] for d in keep))
    lin = np.ravel_multi_index(tuple(ii), sizes)
    uniq, inv = np.unique(lin, return_inverse=True)
    idx = np.stack(np.unravel_index(uniq, sizes)).astype(np.int64)
    dev = c.values.device
    val = _dispatch.apply(ops[1], vals, _tensor_of(inv.reshape(-1), device=dev), n=len(uniq))
    return _make(_tensor_of(idx.reshape(len(keep), -1), device=dev), val, shape, True)


# ---- dispatch's failure branch: a kernel handed a sparse operand ------------------------------
# the pointwise ops PyTorch's SparseCPU backend runs on the values (each maps 0 to 0)
ZERO_PRESERVING = frozenset(
    "abs sqrt sin tan tanh relu sign sgn floor ceil round trunc expm1 log1p asin atan sinh asinh atanh "
    "erf square frac deg2rad rad2deg signbit isnan isinf nan_to_num erfinv conj positive isneginf "
    "isposinf".split())


def holds(vals) -> bool:
    return any(type(v) is _COO for v in vals)


def on_kernel_error(op, args, static):
    """What PyTorch gives for ``op`` with a sparse operand (dispatch asks after a dense kernel
    refused the ``_COO`` value), or its NotImplementedError."""
    name = op.name
    a = args[0]
    b = args[1] if len(args) > 1 else None
    if name in ("mm", "matmul") and len(args) == 2:
        return _sparse_mm(a, b)
    if name == "addmm" and len(args) == 3:  # (F.linear of a sparse input with a bias)
        if not is_sparse(args[1]) or is_sparse(args[2]) or is_sparse(a):
            lay = ["Sparse" if is_sparse(m) else "Strided" for m in args[1:]]
            raise RuntimeError(f"addmm_sparse_dense: expected either 'mat1' to have sparse layout and 'mat2' "
                               f"to have strided layout, got 'mat1' with layout {lay[0]} and 'mat2' with "
                               f"layout {lay[1]}")
        return _dispatch.apply(op, a, args[1].to_dense(), args[2], **static)
    if name == "mv" and is_sparse(a):
        if a.shape[1] != b.shape[0]:
            raise RuntimeError(f"size mismatch, got input ({a.shape[0]}), mat ({a.shape[0]}x{a.shape[1]}), "
                               f"vec ({b.shape[0]})")
        return _sparse_mm(a, b.unsqueeze(1)).squeeze(1)
    if name in ("add", "sub"):
        alpha = args[2] if len(args) > 2 else static.get("alpha", 1)
        if name == "sub":
            alpha = -alpha
        if not isinstance(a, Tensor) or not isinstance(b, Tensor):
            raise RuntimeError("add(sparse, dense) is not supported. Use add(dense, sparse) instead.")
        if is_sparse(b) and not is_sparse(a):
            return _add(a, b, alpha, _sub_dense if name == "sub" else _add_dense)
        if is_sparse(a) and is_sparse(b):
            return _add(a, b, alpha)
        raise RuntimeError("add(sparse, dense) is not supported. Use add(dense, sparse) instead.")
    if name in ("mul", "div") and len(args) == 2:
        s, o = (a, b) if is_sparse(a) else (b, a)
        if name == "div" and s is b:
            raise _not_implemented(name)
        if not isinstance(o, Tensor) or (o.ndim == 0 and not is_sparse(o)):
            return _scale(s, (lambda v: v * o) if name == "mul" else (lambda v: v / o))
        if name == "mul":  # (dense * sparse: dense, so that dense.mul_(sparse) writes a dense value)
            return _mul(s, o) if s is a else _mul(s, o).to_dense()
        raise _not_implemented(name)
    if name == "neg":
        return _scale(a, lambda v: -v)
    if name in ZERO_PRESERVING and len(args) == 1:  # f(0) == 0: f of the (coalesced) values
        c = _coo(_coalesce(a))
        return _make(c.indices, _dispatch.apply(op, c.values, **static), c.shape, True)
    if name in ("sum", "sum_dim"):
        dim = static.get("dim")
        return _sum(a, None if name == "sum" else dim, static.get("keepdim", False), static.get("dtype"),
                    (_sum_all, _sum_values))
    if name == "t":
        return a.t()
    if name in ("transpose", "permute"):
        sd = _coo(a).indices.shape[0]
        if name == "transpose":
            dd = args[1:3] if len(args) >= 3 else (static["d0"], static["d1"])
            d0, d1 = (_wrap_dim(d, a.ndim) for d in dd)
            dims = list(range(a.ndim))
            dims[d0], dims[d1] = d1, d0
        else:
            dims = list(static["dims"])
        if sorted(dims[:sd]) != list(range(sd)) or dims[sd:] != list(range(sd, a.ndim)):
            raise _not_implemented(name)  # (a dense dim moved: not here)
        c = _coo(a)
        idx = c.indices[_tensor_of(dims[:sd])] if dims[:sd] != list(range(sd)) else c.indices
        return _make(idx, c.values, tuple(c.shape[d] for d in dims), c.coalesced and idx is c.indices,
                     _on_dense(c, lambda d: d.permute(dims)))
    if name == "pow_scalar" and is_sparse(a) and not isinstance(b, Tensor):
        if b == 0:
            raise RuntimeError("pow: cannot raise to zeroth power on sparse tensor; it would make the "
                               "result tensor dense")
        c = _coo(_coalesce(a))
        return _make(c.indices, c.values ** b, c.shape, True)
    if name == "clone":
        return a.clone()
    if name == "to_copy":
        return a.to(_dtype.from_np(np.dtype(static["dtype"])))
    if name in ("eq", "ne", "gt", "ge", "lt", "le"):
        raise _not_implemented(f"{name}.{'Tensor' if isinstance(b, Tensor) else 'Scalar'}")
    raise _not_implemented(name)


_dispatch.SPARSE_HOOK[0] = on_kernel_error
_dispatch.SPARSE_HOLDS[0] = holds

for _name, _impl in (("to_sparse", to_sparse), ("to_dense", _dense_to_dense), ("_nnz", _dense_nnz),
                     ("sparse_dim", _dense_sparse_dim), ("dense_dim", _dense_dense_dim)):
    setattr(Tensor, _name, _impl)
for _name in ("indices", "values", "_indices", "_values", "coalesce", "is_coalesced"):
    setattr(Tensor, _name, _strided_error(_name))
