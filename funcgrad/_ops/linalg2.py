"""Op table — more of ``torch.linalg``: ``matrix_exp``, ``solve_triangular``, ``inv_ex``,
``cholesky_ex``, ``lu_factor``(``_ex``), ``lu``, ``lu_unpack``, ``lu_solve``, ``lstsq``, ``cond``,
``vander``, ``tensorinv``, ``tensorsolve``, ``householder_product``.

The decompositions are ops named after PyTorch's nodes (``LinalgMatrixExpBackward0``,
``LinalgLuFactorExBackward0``…) whose gradients are ``jax.vjp`` of JAX's factorisations; ``cond``,
``vander``, ``tensorinv`` and ``tensorsolve`` are PyTorch's composites over existing ops, so
their node names (``SqueezeBackward1``, ``NanToNumBackward0``, ``CatBackward0``) are PyTorch's.
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np

from .. import _dtype
from .._errors import warn_at_user
from .._factories import tensor
from .._runtime import warn_once
from .._tensor import _is_tracer, _scalar_type_name
from ._registry import Tensor, apply, defop
from .decomp import (LinAlgError, _cholesky, _pd_info, _raise_info, _float_input, _inv, _result_type, _square, inv, matrix_norm, solve,
                     svdvals)
from ._registry import write_out as _out
from .shape import cat

linalg_inv_ex = _result_type("funcgrad.return_types", "linalg_inv_ex", ["inverse", "info"])
linalg_cholesky_ex = _result_type("funcgrad.return_types", "linalg_cholesky_ex", ["L", "info"])
linalg_lu_factor = _result_type("funcgrad.return_types", "linalg_lu_factor", ["LU", "pivots"])
linalg_lu_factor_ex = _result_type("funcgrad.return_types", "linalg_lu_factor_ex", ["LU", "pivots", "info"])
lu_with_info = _result_type("funcgrad.return_types", "_lu_with_info", ["LU", "pivots", "info"])
linalg_lu = _result_type("funcgrad.return_types", "linalg_lu", ["P", "L", "U"])
lu_unpack_result = _result_type("funcgrad.return_types", "lu_unpack", ["P", "L", "U"])
linalg_lstsq = _result_type("funcgrad.return_types", "linalg_lstsq",
                            ["solution", "residuals", "rank", "singular_values"])


def _batch_info(bad, shape):
    """PyTorch's ``info``: an int32 tensor of the batch shape (0: success)."""
    return tensor(np.asarray(bad, np.int32).reshape(shape))


# ================================ matrix_exp / solve_triangular ===================================
_matrix_exp = defop("matrix_exp", jax.scipy.linalg.expm, "LinalgMatrixExpBackward0")


def matrix_exp(A) -> Tensor:
    """The matrix exponential of square matrices (batches too).

    >>> import funcgrad
    >>> funcgrad.linalg.matrix_exp(funcgrad.zeros(2, 2))
    tensor([[1., 0.],
            [0., 1.]])
    """
    _square(A, "linalg.matrix_exp")
    _float_input(A, "linalg.matrix_exp")
    return apply(_matrix_exp, A)


def _solve_tri_fn(a, b, *, upper, left, unit):
    if not left:  # X A = B  <=>  Aᵀ Xᵀ = Bᵀ (Aᵀ has the other triangle)
        return jnp.swapaxes(_solve_tri_fn(jnp.swapaxes(a, -1, -2), jnp.swapaxes(b, -1, -2), upper=not upper,
                                          left=True, unit=unit), -1, -2)
    shape = jnp.broadcast_shapes(a.shape[:-2], b.shape[:-2])
    a = jnp.broadcast_to(a, shape + a.shape[-2:])
    b = jnp.broadcast_to(b, shape + b.shape[-2:])
    # only the used triangle is read (so only it gets a gradient, as PyTorch's)
    tri = jnp.triu(a, 1 if unit else 0) if upper else jnp.tril(a, -1 if unit else 0)
    if unit:
        tri = tri + jnp.eye(a.shape[-1], dtype=a.dtype)
    return jax.lax.linalg.triangular_solve(tri, b, left_side=True, lower=not upper, unit_diagonal=False)


_solve_triangular = defop("solve_triangular", _solve_tri_fn, "LinalgSolveTriangularBackward0", promote="binary")


def solve_triangular(A, B, *, upper: bool, left: bool = True, unitriangular: bool = False, out=None) -> Tensor:
    """Solve ``A X = B`` (``X A = B`` with ``left=False``) for triangular ``A`` (only its ``upper``
    or lower triangle is read; ``unitriangular``: its diagonal is taken as ones).

    >>> import funcgrad
    >>> A = funcgrad.tensor([[2.0, 1.0], [0.0, 4.0]])
    >>> funcgrad.linalg.solve_triangular(A, funcgrad.tensor([[3.0], [4.0]]), upper=True)
    tensor([[1.],
            [1.]])
    """
    for n, t in (("A", A), ("B", B)):
        if t.ndim < 2:
            raise RuntimeError(f"linalg.solve_triangular: The input tensor {n} must have at least 2 dimensions.")
    _square(A, "linalg.solve_triangular")
    k = A.shape[-1]
    if (B.shape[-2] if left else B.shape[-1]) != k:
        raise RuntimeError(f"linalg.solve_triangular: Incompatible shapes of A and B for the equation "
                           f"{'AX = B' if left else 'XA = B'} ({A.shape[-2]}x{A.shape[-1]} and "
                           f"{B.shape[-2]}x{B.shape[-1]})")
    _float_input(A, "linalg.solve_triangular")
    r = apply(_solve_triangular, A, B, upper=bool(upper), left=bool(left), unit=bool(unitriangular))
    return _out(r, out, "linalg_solve_triangular")


# ================================ inv_ex / cholesky_ex ===========================================
def _singular_info(A):
    """Per matrix: 1-based index of the first zero pivot of its LU factorisation (0: invertible)."""
    a = np.asarray(A._value).reshape((-1,) + tuple(A.shape[-2:]))
    info = []
    for m in a:
        lu = np.asarray(jax.scipy.linalg.lu_factor(jnp.asarray(m))[0]) if m.size else m
        z = np.nonzero(np.diagonal(lu) == 0)[0]
        info.append(int(z[0]) + 1 if len(z) else 0)
    return info


def inv_ex(A, *, check_errors: bool = False, out=None):
    """``(inverse, info)``: the inverse and, per matrix, 0 or the index of a zero pivot (with
    ``check_errors`` a singular input raises as ``linalg.inv`` does)."""
    _square(A, "linalg.inv")
    _float_input(A, "linalg.inv")
    r = apply(_inv, A)
    info = _singular_info(A)
    if check_errors:
        _raise_info(info, A, "linalg.inv_ex: {}The diagonal element {} is zero, the inversion could not be "
                             "completed because the input matrix is singular.")
    return linalg_inv_ex(r, _batch_info(info, A.shape[:-2]))


def cholesky_ex(A, *, upper: bool = False, check_errors: bool = False, out=None):
    """``(L, info)``: the Cholesky factor and, per matrix, 0 or the order of the leading minor
    that is not positive-definite (``check_errors``: raise as ``linalg.cholesky``)."""
    _square(A, "linalg.cholesky")
    r = apply(_cholesky, A, upper=bool(upper))
    info = _pd_info(A, upper)
    if check_errors:
        _raise_info(info, A, "linalg.cholesky_ex: {}The factorization could not be completed because the input "
                             "is not positive-definite (the leading minor of order {} is not positive-definite).")
    return linalg_cholesky_ex(r, _batch_info(info, A.shape[:-2]))


# ================================ lu_factor / lu / lu_unpack / lu_solve ==========================
def _lu_factor_fn(a):
    lu, piv, _ = jax.lax.linalg.lu(a)
    # LAPACK getrf's info: the 1-based index of U's first zero diagonal entry (0: none)
    zero = jnp.diagonal(lu, axis1=-2, axis2=-1) == 0
    info = jnp.where(zero.any(-1), jnp.argmax(zero, -1) + 1, 0) if zero.shape[-1] else jnp.zeros(a.shape[:-2])
    return lu, (piv + 1).astype(jnp.int32), info.astype(jnp.int32)


def _lu_fn(a, *, pivot):
    lu, _, perm = jax.lax.linalg.lu(a)
    L, U = _unpack_data(lu)
    P = jnp.swapaxes(jax.nn.one_hot(perm, a.shape[-2], dtype=a.dtype), -1, -2)  # A = P L U
    return P, L, U


def _unpack_data(lu):
    """(L, U) of a packed factorisation: L unit lower (m x k), U upper (k x n)."""
    m, n = lu.shape[-2:]
    k = min(m, n)
    return jnp.tril(lu[..., :, :k], -1) + jnp.eye(m, k, dtype=lu.dtype), jnp.triu(lu[..., :k, :])


def _perm(piv, m):
    """The row order of ``Pᵀ A`` (``A = P L U``) from LAPACK's 1-based row swaps."""
    return jax.lax.linalg.lu_pivots_to_permutation(piv - 1, m)


def _lu_unpack_fn(lu, piv, *, data, pivots):
    m = lu.shape[-2]
    P = (jnp.swapaxes(jax.nn.one_hot(_perm(piv, m), m, dtype=lu.dtype), -1, -2) if pivots
         else jnp.zeros((0,), lu.dtype))
    L, U = _unpack_data(lu) if data else (jnp.zeros((0,), lu.dtype),) * 2
    return P, L, U


def _lu_solve_fn(lu, piv, b, *, left, adjoint):
    if not left:  # X A = B  <=>  Aᴴ Xᴴ = Bᴴ
        bh = jnp.conj(jnp.swapaxes(b, -1, -2))
        return jnp.conj(jnp.swapaxes(_lu_solve_fn(lu, piv, bh, left=True, adjoint=not adjoint), -1, -2))
    batch = jnp.broadcast_shapes(lu.shape[:-2], b.shape[:-2])
    lu = jnp.broadcast_to(lu, batch + lu.shape[-2:])
    piv = jnp.broadcast_to(piv, batch + piv.shape[-1:])
    b = jnp.broadcast_to(b, batch + b.shape[-2:])
    L, U = _unpack_data(lu)  # (only the triangles are read, so only they get a gradient)
    perm = _perm(piv, lu.shape[-1])
    solve = jax.lax.linalg.triangular_solve
    if not adjoint:  # L U X = Pᵀ B
        y = solve(L, jnp.take_along_axis(b, perm[..., None], -2), left_side=True, lower=True)
        return solve(U, y, left_side=True, lower=False)
    # Uᴴ Lᴴ (Pᵀ X) = B
    z = solve(U, b, left_side=True, lower=False, transpose_a=True, conjugate_a=True)
    w = solve(L, z, left_side=True, lower=True, transpose_a=True, conjugate_a=True)
    return jnp.take_along_axis(w, jnp.argsort(perm, -1)[..., None], -2)


_lu_factor = defop("lu_factor", _lu_factor_fn, "LinalgLuFactorExBackward0", diff_outputs=(0,), accepts="fc",
                   kernel="lu_cpu")
_lu = defop("lu", _lu_fn, "LinalgLuBackward0", diff_outputs=(1, 2), accepts="fc", kernel="lu_cpu")
_lu_unpack = defop("lu_unpack", _lu_unpack_fn, "LuUnpackBackward0", diff=(0,), diff_outputs=(1, 2))
_lu_solve = defop("lu_solve", _lu_solve_fn, "LinalgLuSolveBackward0", diff=(0, 2))


def _check_lu(A, fname):
    if A.ndim < 2:
        raise RuntimeError(f"{fname}: Expected tensor with 2 or more dimensions. Got size: {list(A.shape)} instead")


def _no_pivot(pivot):
    if not pivot:
        raise RuntimeError("linalg.lu_factor: LU without pivoting is not implemented on the CPU")


def _check_zero_pivots(info, A, fname):
    """PyTorch's refusal of an exactly singular factor (``lu_factor``, ``check_errors``)."""
    if _is_tracer(info._value):
        return
    for i, k in enumerate(np.asarray(info._value).reshape(-1)):
        if k:
            where = f"(Batch element {i}): " if A.ndim > 2 else ""
            raise RuntimeError(f"{fname}: {where}U[{k},{k}] is zero and using it on lu_solve would result "
                               f"in a division by zero. If you still want to perform the factorization, "
                               f"consider calling linalg.lu(A, pivot) or linalg.lu_factor_ex(A, pivot)")


def lu_factor_ex(A, *, pivot: bool = True, check_errors: bool = False, out=None):
    """``(LU, pivots, info)``: the packed LU factorisation with partial pivoting (1-based int32
    pivots and LAPACK ``getrf``'s int32 ``info``: 0, or the index of U's first zero diagonal
    entry); ``check_errors``: raise for that instead.

    >>> import funcgrad
    >>> funcgrad.linalg.lu_factor_ex(funcgrad.tensor([[1.0, 2.0], [2.0, 4.0]])).info
    tensor(2, dtype=funcgrad.int32)
    """
    _check_lu(A, "torch.lu_factor")
    _no_pivot(pivot)
    r = linalg_lu_factor_ex(*apply(_lu_factor, A))
    if check_errors:
        _check_zero_pivots(r.info, A, "torch.linalg.lu_factor_ex")
    return r


def lu_factor(A, *, pivot: bool = True, out=None):
    """``(LU, pivots)``: the packed LU factorisation with partial pivoting (1-based int32 pivots,
    LAPACK's ``getrf``); an exactly singular ``A`` raises (``lu_factor_ex`` reports it instead)."""
    _check_lu(A, "torch.lu_factor")
    _no_pivot(pivot)
    LU, pivots, info = apply(_lu_factor, A)
    _check_zero_pivots(info, A, "torch.linalg.lu_factor")
    return linalg_lu_factor(LU, pivots)


def lu(A, *, pivot: bool = True, out=None):
    """``(P, L, U)`` with ``A = P L U`` (partial pivoting)."""
    _check_lu(A, "linalg.lu")
    _no_pivot(pivot)
    return linalg_lu(*apply(_lu, A, pivot=True))


_LU_WARNED, _LU_SOLVE_WARNED = [False], [False]


def lu_legacy(A, pivot: bool = True, get_infos: bool = False, out=None):
    """Deprecated ``torch.lu``: ``(LU, pivots)`` as ``linalg.lu_factor`` (a plain tuple, and no error
    for a singular ``A``), ``(LU, pivots, info)`` with ``get_infos``."""
    if warn_once(_LU_WARNED):
        warn_at_user("torch.lu is deprecated in favor of torch.linalg.lu_factor / torch.linalg.lu_factor_ex "
                     "and will be removed in a future PyTorch release.\n"
                     "LU, pivots = torch.lu(A, compute_pivots)\n"
                     "should be replaced with\nLU, pivots = torch.linalg.lu_factor(A, compute_pivots)\nand\n"
                     "LU, pivots, info = torch.lu(A, compute_pivots, get_infos=True)\n"
                     "should be replaced with\n"
                     "LU, pivots, info = torch.linalg.lu_factor_ex(A, compute_pivots)",
                     UserWarning)
    r = lu_factor_ex(A, pivot=pivot)
    return lu_with_info(*r) if get_infos else (r.LU, r.pivots)


def lu_unpack(LU_data, LU_pivots, unpack_data: bool = True, unpack_pivots: bool = True, *, out=None):
    """``(P, L, U)`` from ``lu_factor``'s packed factorisation and pivots (``A = P L U``); the parts
    not asked for are empty.

    >>> import funcgrad
    >>> A = funcgrad.tensor([[1.0, 2.0], [3.0, 4.0]])
    >>> P, L, U = funcgrad.lu_unpack(*funcgrad.linalg.lu_factor(A))
    >>> P @ L @ U
    tensor([[1., 2.],
            [3., 4.]])
    """
    _check_lu(LU_data, "torch.lu_unpack")
    if unpack_pivots:
        if LU_pivots.dtype is not _dtype.int32:
            raise RuntimeError("torch.lu_unpack: LU_pivots is expected to be a contiguous tensor of "
                               "torch.int32 dtype.\nNote: this function is intended to be used with the "
                               "output produced by torch.linalg.lu_factor")
        v = LU_pivots._value
        if not _is_tracer(v) and v.size and (int(v.min()) < 1 or int(v.max()) > LU_data.shape[-2]):
            raise RuntimeError("pivots passed to lu_unpack must be between 1 and LU.size(-2) inclusive.Did "
                               "you properly pass the result of lu_factor?")
    return lu_unpack_result(*apply(_lu_unpack, LU_data, LU_pivots, data=bool(unpack_data),
                                   pivots=bool(unpack_pivots)))


def _check_lu_solve(LU, pivots, B, left):
    f = "linalg.lu_solve"
    if LU.ndim < 2:
        raise RuntimeError(f"torch.{f}: The input tensor A must have at least 2 dimensions.")
    _square(LU, f"torch.{f}")
    if B.ndim < 2:
        raise RuntimeError(f"{f}: The input tensor B must have at least 2 dimensions.")
    k = LU.shape[-1]
    if (B.shape[-2] if left else B.shape[-1]) != k:
        eq = "AX = B" if left else "XA = B"
        raise RuntimeError(f"{f}: Incompatible shapes of A and B for the equation {eq} ({k}x{k} and "
                           f"{B.shape[-2]}x{B.shape[-1]})")
    _float_input(LU, f"torch.{f}")
    if B.dtype is not LU.dtype:
        raise RuntimeError(f"{f}: Expected LU and B to have the same dtype, but found LU of type "
                           f"{_scalar_type_name(LU.dtype)} and B of type {_scalar_type_name(B.dtype)} "
                           f"instead")
    if pivots.dtype is not _dtype.int32:
        raise RuntimeError(f"{f}: pivots should be a Tensor of scalar type torch.int32")
    if tuple(pivots.shape) != tuple(LU.shape[:-1]):
        raise RuntimeError(f"{f}: Expected LU.shape[:-1] and pivots.shape to be the same, but got pivots "
                           f"with shape {list(pivots.shape)} instead")


def lu_solve(LU, pivots, B, *, left: bool = True, adjoint: bool = False, out=None) -> Tensor:
    """``X`` with ``A X = B`` (``X A = B`` with ``left=False``; ``Aᴴ`` for ``A`` with ``adjoint``)
    from ``lu_factor``'s ``(LU, pivots)`` of ``A``; batch dims broadcast.

    >>> import funcgrad
    >>> LU, pivots = funcgrad.linalg.lu_factor(funcgrad.tensor([[2.0, 0.0], [1.0, 4.0]]))
    >>> funcgrad.linalg.lu_solve(LU, pivots, funcgrad.tensor([[2.0], [5.0]]))
    tensor([[1.],
            [1.]])
    """
    _check_lu_solve(LU, pivots, B, left)
    r = apply(_lu_solve, LU, pivots, B, left=bool(left), adjoint=bool(adjoint))
    return _out(r, out, "linalg_lu_solve")


def lu_solve_legacy(b, LU_data, LU_pivots, *, out=None) -> Tensor:
    """Deprecated ``torch.lu_solve(b, LU, pivots)``: ``linalg.lu_solve(LU, pivots, b)``."""
    if warn_once(_LU_SOLVE_WARNED):
        warn_at_user("torch.lu_solve is deprecated in favor of torch.linalg.lu_solveand will be removed in a "
                     "future PyTorch release.\nNote that torch.linalg.lu_solve has its arguments reversed.\n"
                     "X = torch.lu_solve(B, LU, pivots)\nshould be replaced with\n"
                     "X = torch.linalg.lu_solve(LU, pivots, B)", UserWarning)
    return lu_solve(LU_data, LU_pivots, b, out=out)


# ================================ lstsq ===========================================================
def _lstsq_fn(a, b, *, vec):
    if vec:
        b = b[..., None]
    shape = jnp.broadcast_shapes(a.shape[:-2], b.shape[:-2])
    a = jnp.broadcast_to(a, shape + a.shape[-2:])
    b = jnp.broadcast_to(b, shape + b.shape[-2:])
    x = jnp.linalg.pinv(a) @ b  # the minimum-norm least-squares solution
    return (x[..., 0] if vec else x), jnp.zeros((0,), a.dtype)


_lstsq = defop("lstsq", _lstsq_fn, "LinalgLstsqBackward0", promote="binary")


def lstsq(A, B, rcond=None, *, driver=None):
    """``(solution, residuals, rank, singular_values)`` of ``min ‖A X - B‖`` with PyTorch's CPU
    default driver ``gelsy``: residuals and singular values are empty, ``rank`` is the numerical
    rank (``rcond``: default ``eps · max(m, n)``)."""
    if A.ndim < 2:
        raise RuntimeError("torch.linalg.lstsq: input must have at least 2 dimensions.")
    if driver not in (None, "gelsy"):
        raise NotImplementedError(f"funcgrad.linalg.lstsq: driver {driver!r} is not supported (only gelsy, "
                                  f"PyTorch's CPU default)")
    vec = B.ndim == A.ndim - 1
    if (B.shape[-1] if vec else B.shape[-2]) != A.shape[-2]:
        raise RuntimeError(f"torch.linalg.lstsq: input.size(-2) should match other.size(-{1 if vec else 2})")
    _float_input(A, "torch.linalg.lstsq")
    sol, res = apply(_lstsq, A, B, vec=vec)
    m, n = A.shape[-2:]
    tol = (np.finfo(A.dtype.np).eps * max(m, n)) if rcond is None else float(rcond)
    s = np.asarray(jnp.linalg.svd(A._value, compute_uv=False)) if A.numel() else np.zeros(A.shape[:-2] + (0,))
    rank = (s > tol * s[..., :1]).sum(-1) if s.shape[-1] else np.zeros(A.shape[:-2], np.int64)
    return linalg_lstsq(sol, res, tensor(np.asarray(rank, np.int64)), tensor(np.zeros((0,), A.dtype.np)))


# ================================ cond / vander / tensorinv / tensorsolve ========================
def cond(A, p=None, *, out=None) -> Tensor:
    """The condition number of ``A`` in the ``p`` norm (default 2: the ratio of the extreme
    singular values); PyTorch's composite, so its nodes too.

    >>> import funcgrad
    >>> funcgrad.linalg.cond(funcgrad.tensor([[2.0, 0.0], [0.0, 0.5]]))
    tensor(4.)
    """
    if A.ndim < 2:
        raise RuntimeError("linalg.cond: The input tensor must have at least 2 dimensions.")
    ord_ = 2 if p is None else p
    if isinstance(ord_, str):
        if ord_ not in ("fro", "nuc"):
            raise RuntimeError(f"linalg.cond got an invalid norm type: {ord_}")
    elif ord_ not in (1, -1, 2, -2, math.inf, -math.inf):
        raise RuntimeError(f"linalg.cond got an invalid norm type: {ord_:g}")
    if not isinstance(ord_, str) and abs(ord_) == 2:
        s = svdvals(A)
        smax, smin = s.narrow(-1, 0, 1), s.narrow(-1, s.shape[-1] - 1, 1)
        r = smin / smax if ord_ == -2 else smax / smin
        return _out(r.squeeze(-1), out, refuse_grad=False)
    _square(A, f"linalg.cond(ord={ord_ if isinstance(ord_, str) else int(ord_) if math.isfinite(ord_) else ord_})")
    res = inv_ex(A)
    inverse = res.inverse.masked_fill(res.info.unsqueeze(-1).unsqueeze(-1) > 0, math.inf)
    r = matrix_norm(A, ord_) * matrix_norm(inverse, ord_)
    return _out(r.nan_to_num_(math.inf, math.inf, -math.inf), out, refuse_grad=False)


def vander(x, *, N=None) -> Tensor:
    """The Vandermonde matrix of the last dim, powers increasing (``CatBackward0``).

    >>> import funcgrad
    >>> funcgrad.linalg.vander(funcgrad.tensor([1, 2, 3]))
    tensor([[1, 1, 1],
            [1, 2, 4],
            [1, 3, 9]])
    """
    if x.dtype._kind == "b":
        raise RuntimeError("linalg.vander supports floating point, complex, and integer tensors, but got Bool")
    x_ = x.unsqueeze(-1) if x.ndim == 0 else x
    n = x_.shape[-1] if N is None else int(N)
    if n <= 1:
        raise RuntimeError("N must be greater than 1.")
    shape = tuple(x_.shape) + (n - 1,)
    result = x_.unsqueeze(-1).expand(*shape).cumprod(-1)
    ones = result.new_ones(shape[:-1] + (1,))
    return cat([ones, result], -1)


def tensorinv(A, ind: int = 2, *, out=None) -> Tensor:
    """The inverse of ``A`` seen as a square matrix: dims ``[:ind]`` by dims ``[ind:]``."""
    if ind <= 0:
        raise RuntimeError(f"Expected a strictly positive integer for 'ind', but got {ind}")
    head, tail = tuple(A.shape[:ind]), tuple(A.shape[ind:])
    rows = int(np.prod(head))
    if rows != int(np.prod(tail)):
        raise RuntimeError(f"Expected self to satisfy the requirement prod(self.shape[ind:]) == "
                           f"prod(self.shape[:ind]), but got {int(np.prod(tail))} != {rows}")
    r = inv(A.reshape(rows, -1))
    return _out(apply(_reshape_alias, r, shape=tail + head), out, refuse_grad=False)


# PyTorch's C++ composites reshape a contiguous result with ``_reshape_alias``
_reshape_alias = defop("reshape_alias", lambda x, shape: jnp.reshape(x, shape), "ReshapeAliasBackward0",
                       linear=True)


def tensorsolve(A, B, dims=None, *, out=None) -> Tensor:
    """``X`` with ``tensordot(A, X, X.ndim) == B``; ``dims`` of ``A`` are moved to the end first."""
    if dims is not None:
        nd = A.ndim
        dims = [d % nd for d in dims]
        rest = [d for d in range(nd) if d not in dims]
        A = A.permute(*(rest + dims))
    rhs = tuple(B.shape)
    res = tuple(A.shape[B.ndim:])
    n = int(np.prod(res))
    if int(np.prod(rhs)) != n:
        raise RuntimeError(f"Expected self to satisfy the requirement prod(self.shape[other.ndim:]) == "
                           f"prod(self.shape[:other.ndim]), but got {n} != {int(np.prod(rhs))}")
    r = solve(A.reshape(n, n), B.reshape(n))
    return _out(r.view(res), out)


# ================================ householder_product =============================================
def _householder_fn(a, tau):
    m, n = a.shape[-2:]
    q = jnp.broadcast_to(jnp.eye(m, dtype=a.dtype), a.shape[:-2] + (m, m))
    rows = jnp.arange(m)
    for i in range(tau.shape[-1]):  # Q = H_1 ... H_k, H_i = I - tau_i v_i v_iᴴ
        v = jnp.where(rows == i, 1, jnp.where(rows > i, a[..., :, i], 0)).astype(a.dtype)
        qv = jnp.einsum("...ij,...j->...i", q, v)
        q = q - tau[..., i, None, None] * qv[..., :, None] * jnp.conj(v)[..., None, :]
    return q[..., :, :n]


_householder = defop("householder_product", _householder_fn, "LinalgHouseholderProductBackward0",
                     accepts="fc", kernel="orgqr_cpu")


def householder_product(A, tau, *, out=None) -> Tensor:
    """The first ``n`` columns of the product of the Householder reflectors stored in ``A``'s
    columns below the diagonal with scales ``tau`` (LAPACK's ``orgqr``)."""
    f = "torch.linalg.householder_product"
    if A.ndim < 2:
        raise RuntimeError(f"{f}: input must have at least 2 dimensions.")
    if A.shape[-2] < A.shape[-1]:
        raise RuntimeError(f"{f}: input.shape[-2] must be greater than or equal to input.shape[-1]")
    if A.shape[-1] < tau.shape[-1]:
        raise RuntimeError(f"{f}: input.shape[-1] must be greater than or equal to tau.shape[-1]")
    if A.ndim - tau.ndim != 1:
        raise RuntimeError(f"{f}: Expected tau to have one dimension less than input, but got tau.ndim equal to "
                           f"{tau.ndim} and input.ndim is equal to {A.ndim}")
    if tuple(tau.shape[:-1]) != tuple(A.shape[:-2]):
        raise RuntimeError(f"{f}: Expected batch dimensions of tau to be equal to input.shape[:-2], but got "
                           f"{list(tau.shape[:-1])}")
    if tau.dtype is not A.dtype:
        raise RuntimeError(f"{f}: tau dtype {_scalar_type_name(tau.dtype)} does not match input dtype "
                           f"{_scalar_type_name(A.dtype)}")
    return _out(apply(_householder, A, tau), out, name="linalg_householder_product")
