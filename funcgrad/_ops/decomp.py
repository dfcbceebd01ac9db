"""Op table — ``funcgrad.linalg``: norms, inverses, determinants, solves and decompositions.

Multi-output ops (``qr``, ``svd``, ``eigh``, ``slogdet``) are single ops with ``diff_outputs``
returning PyTorch-like named tuples. Numerical failures (singular matrix, not positive-definite)
are detected on concrete values only (under ``funcgrad.jit`` the NaN/inf result stays, as XLA has
no exceptions) and raise ``LinAlgError`` with PyTorch's messages.
"""

from __future__ import annotations

import collections
import functools
import math
import operator
import warnings

import jax
import jax.numpy as jnp
import numpy as np

from .._dtype import to_dtype
from .._factories import eye, zeros
from .._tensor import _is_tracer, _scalar_type_name
from ._parser import checked as _checked
from ._registry import Tensor, apply, defop, export, same_dtype
from ._registry import write_out as _out
from .linalg import matmul
from .reduce import _dim_list, _dims


class LinAlgError(RuntimeError):
    """Raised when a linear-algebra routine fails on its input (``torch.linalg.LinAlgError``)."""


LinAlgError.__module__ = "funcgrad.linalg"


def _result_type(module: str, name: str, fields):
    """A named tuple printed as ``funcgrad.return_types.<name>(\\nfield=…,\\n…)`` like PyTorch's."""
    cls = collections.namedtuple(name, fields)

    def __repr__(self):
        body = ",\n".join(f"{f}={v!r}" for f, v in zip(self._fields, self))
        return f"funcgrad.return_types.{name}(\n{body})"
    cls.__repr__ = __repr__
    cls.__module__ = module
    return cls


linalg_qr = _result_type("funcgrad.return_types", "linalg_qr", ["Q", "R"])
linalg_svd = _result_type("funcgrad.return_types", "linalg_svd", ["U", "S", "Vh"])
svd_result = _result_type("funcgrad.return_types", "svd", ["U", "S", "V"])
qr_result = _result_type("funcgrad.return_types", "qr", ["Q", "R"])
linalg_eigh = _result_type("funcgrad.return_types", "linalg_eigh", ["eigenvalues", "eigenvectors"])
linalg_slogdet = _result_type("funcgrad.return_types", "linalg_slogdet", ["sign", "logabsdet"])
slogdet_result = _result_type("funcgrad.return_types", "slogdet", ["sign", "logabsdet"])


def _square(A, fname):
    if A.ndim < 2:
        raise RuntimeError(f"{fname}: The input tensor A must have at least 2 dimensions.")
    if A.shape[-1] != A.shape[-2]:
        raise RuntimeError(f"{fname}: A must be batches of square matrices, but they are "
                           f"{A.shape[-2]} by {A.shape[-1]} matrices")


def _float_input(A, fname):
    if not (A.dtype.is_floating_point or A.dtype.is_complex):
        raise RuntimeError(f"{fname}: Expected a floating point or complex tensor as input. Got "
                           f"{_type_name(A)}")


def _type_name(A):
    return _scalar_type_name(A.dtype)


def _all_finite(t) -> bool:
    v = t._value
    return _is_tracer(v) or bool(jnp.all(jnp.isfinite(v)))


# ================================ norms ========================================================
from .pointwise import _abs, where  # noqa: E402


def _vector_norm(x, *, ord, dim, keepdim, dtype):
    if dtype is not None:
        x = x.astype(dtype)
    a = _abs(x)  # zero subgradient at 0, as PyTorch
    if ord == 2:
        # scaled by the largest |x| (a constant for the gradient, which stays a/‖a‖): squares of
        # tiny float32 entries would underflow to 0 (and of huge ones overflow), as PyTorch's
        # CPU kernel does not. sqrt with a zero-safe gradient: the subgradient at 0 is 0.
        m = jax.lax.stop_gradient(jnp.max(a, axis=dim, keepdims=True)) if a.size else 1
        m = jnp.where(jnp.isfinite(m) & (m > 0), m, 1)
        s = jnp.sum((a / m) ** 2, axis=dim, keepdims=True)
        zero = s == 0  # (not s > 0: a nan element gives a nan norm, as PyTorch)
        r = jnp.where(zero, 0, m * jnp.sqrt(jnp.where(zero, 1, s))).astype(a.dtype)
        return r if keepdim else _squeeze_dims(r, dim)
    if ord == math.inf:
        return jnp.max(a, axis=dim, keepdims=keepdim)
    if ord == -math.inf:
        return jnp.min(a, axis=dim, keepdims=keepdim)
    if ord == 0:
        return jnp.sum(a != 0, axis=dim, keepdims=keepdim).astype(a.dtype)
    if ord == 1:
        return jnp.sum(a, axis=dim, keepdims=keepdim)
    # p-norm with PyTorch's zero subgradients: 0 at zero elements and at the zero vector
    nz = a > 0
    s = jnp.sum(jnp.where(nz, jnp.where(nz, a, 1) ** ord, 0), axis=dim, keepdims=keepdim)
    pos = s > 0
    return jnp.where(pos, jnp.where(pos, s, 1) ** (1.0 / ord), 0).astype(a.dtype)


def _squeeze_dims(r, dim):
    return r.reshape(()) if dim is None else jnp.squeeze(r, axis=dim)


def _matrix_norm(x, *, ord, dims, keepdim):
    return jnp.linalg.norm(x, ord, axis=dims, keepdims=keepdim)


_vnorm = defop("vector_norm", _vector_norm, "LinalgVectorNormBackward0", promote="none")
_MNORM = {k: defop(k, _matrix_norm, g) for k, g in [("matrix_norm_nuc", "SumBackward1"),
                                                     ("matrix_norm_max", "AmaxBackward0"),
                                                     ("matrix_norm_min", "AminBackward0")]}


def vector_norm(x, ord=2, dim=None, keepdim=False, *, dtype=None, out=None) -> Tensor:
    """The vector ``ord``-norm over ``dim`` (all elements by default).

    >>> import funcgrad
    >>> funcgrad.linalg.vector_norm(funcgrad.tensor([3., 4.]))
    tensor(5.)
    """
    if not (x.dtype.is_floating_point or x.dtype.is_complex):
        raise RuntimeError(f"linalg.vector_norm: Expected a floating point or complex tensor as input. "
                           f"Got {_type_name(x)}")
    dims = _dims(dim, x.ndim)  # (dim=() is every dim, as PyTorch's IntArrayRef default)
    if dims is None and keepdim:
        dims = tuple(range(x.ndim))
    dt = None if dtype is None else to_dtype(dtype).np
    r = apply(_vnorm, x, ord=float(ord), dim=dims, keepdim=bool(keepdim), dtype=dt)
    return _out(r, out, "linalg_vector_norm", same_dtype)


def matrix_norm(A, ord="fro", dim=(-2, -1), keepdim=False, *, dtype=None, out=None) -> Tensor:
    """Matrix norm over ``dim``: ``'fro'``, ``'nuc'``, ``±1``, ``±2``, ``±inf``."""
    if A.ndim < 2:
        raise RuntimeError("linalg.matrix_norm: The input tensor A must have at least 2 dimensions.")
    if ord in ("fro", "nuc"):
        key = "matrix_norm_nuc"
    elif ord in (1, 2, math.inf):
        key = "matrix_norm_max"
    elif ord in (-1, -2, -math.inf):
        key = "matrix_norm_min"
    else:
        raise RuntimeError(f"linalg.matrix_norm: Order {ord} not supported.")
    if len(dim) != 2:  # (PyTorch's order of checks: the order, the number of dims, each in range)
        raise RuntimeError(f"linalg.matrix_norm: dim must be a 2-tuple. Got "
                           f"{' '.join(str(operator.index(d)) for d in dim)}")
    dims = tuple(_dim_list(dim, A.ndim))
    if dims[0] == dims[1]:
        raise RuntimeError(f"linalg.matrix_norm: dims must be different. Got ({dims[0]}, {dims[1]})")
    if dtype is not None:
        A = A.to(dtype)
    if ord == "fro":
        r = vector_norm(A, 2, dims, keepdim)
    else:
        o = ord if isinstance(ord, str) else (int(ord) if math.isfinite(ord) else ord)
        r = apply(_MNORM[key], A, ord=o, dims=dims, keepdim=bool(keepdim))
    # (PyTorch's matrix_norm is a composite: its out= is a copy of the result, CopyBackwards)
    return _out(r, out, check=_matrix_norm_out, refuse_grad=False)


def _matrix_norm_out(r, o):
    if r.dtype is not o.dtype:
        return (f"linalg.matrix_norm expected out tensor dtype {_scalar_type_name(r.dtype)} but got: "
                f"{_scalar_type_name(o.dtype)}")
    return None


def norm(A, ord=None, dim=None, keepdim=False, *, dtype=None, out=None) -> Tensor:
    """``linalg.norm``: a vector norm (1 dim, or flattened when ord is None) or a matrix norm (2 dims)."""
    if isinstance(dim, int):
        dim = (dim,)
    if dim is not None:
        if len(dim) == 1:
            return vector_norm(A, 2 if ord is None else ord, dim, keepdim, dtype=dtype, out=out)
        return matrix_norm(A, "fro" if ord is None else ord, dim, keepdim, dtype=dtype, out=out)
    if ord is None:
        return vector_norm(A, 2, None, keepdim, dtype=dtype, out=out)
    if A.ndim == 2:
        return matrix_norm(A, ord, (-2, -1), keepdim, dtype=dtype, out=out)
    if A.ndim == 1:
        return vector_norm(A, ord, None, keepdim, dtype=dtype, out=out)
    raise RuntimeError(f"linalg.norm: If dim is not specified but ord is, the input must be 1D or 2D. "
                       f"Got {A.ndim}D.")


# linalg's norms as PyTorch's argument parser takes them (funcgrad.linalg's; torch.norm calls them so)
linalg_vector_norm = _checked(vector_norm, "linalg_vector_norm", False)
linalg_matrix_norm = _checked(matrix_norm, "linalg_matrix_norm", False)


@export("norm", method=False)
def tensor_norm(input, p="fro", dim=None, keepdim=False, out=None, dtype=None) -> Tensor:
    """``torch.norm``: ``linalg.vector_norm`` (``p`` a number or None, or ``'fro'`` over at most two
    dims) or ``linalg.matrix_norm`` (``'nuc'``, ``'fro'`` over more), called as PyTorch's Python
    ``torch.norm`` calls them (torch/functional.py): their arguments' errors are theirs."""
    _dim = [dim] if isinstance(dim, int) else dim
    kw = {"dtype": dtype} if out is None else {"dtype": dtype, "out": out}
    if isinstance(p, str):
        if p == "fro" and (dim is None or isinstance(dim, int) or len(dim) <= 2):
            return linalg_vector_norm(input, 2, _dim, keepdim, **kw)
        return linalg_matrix_norm(input, p, list(range(input.ndim)) if _dim is None else _dim, keepdim, **kw)
    return linalg_vector_norm(input, 2.0 if p is None else p, _dim, keepdim, **kw)


@export("norm", function=False)
def _tensor_norm_method(self, p="fro", dim=None, keepdim=False, dtype=None) -> Tensor:
    """``Tensor.norm``: ``torch.norm`` of self (no ``out=``)."""
    return tensor_norm(self, p, dim, keepdim, dtype=dtype)


# ================================ inverses, determinants, solves ===============================
_inv = defop("inv", jnp.linalg.inv, "LinalgInvExBackward0")
_det = defop("det", jnp.linalg.det, "LinalgDetBackward0")
_slogdet = defop("slogdet", lambda a: tuple(jnp.linalg.slogdet(a)), "LinalgSlogdetBackward0")


def _solve_fn(a, b, *, vec, left):
    if not left:  # X A = B  <=>  A^T X^T = B^T
        return jnp.swapaxes(_solve_fn(jnp.swapaxes(a, -1, -2), jnp.swapaxes(b, -1, -2),
                                      vec=False, left=True), -1, -2)
    if vec:
        return jnp.linalg.solve(a, b[..., None])[..., 0]
    return jnp.linalg.solve(a, jnp.broadcast_to(b, jnp.broadcast_shapes(a.shape[:-2], b.shape[:-2])
                                                + b.shape[-2:]))


_solve = defop("solve", _solve_fn, "LinalgSolveExBackward0", promote="binary")


def _singular_index(A) -> int:
    """1-based index of the first zero pivot of A's LU factorisation (PyTorch's message)."""
    lu = jax.scipy.linalg.lu_factor(A._value.reshape((-1,) + A.shape[-2:])[0])[0]
    d = np.abs(np.asarray(jnp.diagonal(lu)))
    zero = np.nonzero(d == 0)[0]
    return int(zero[0]) + 1 if len(zero) else int(np.argmin(d)) + 1


def inv(A, *, out=None) -> Tensor:
    """Inverse of a square matrix (batches too); singular input raises ``LinAlgError``.

    >>> import funcgrad
    >>> funcgrad.linalg.inv(funcgrad.tensor([[2., 0.], [0., 4.]]))
    tensor([[0.5000, 0.0000],
            [0.0000, 0.2500]])
    """
    _square(A, "linalg.inv")
    _float_input(A, "linalg.inv")
    r = apply(_inv, A)
    if not _all_finite(r) and _all_finite(A):
        raise LinAlgError(f"linalg.inv: The diagonal element {_singular_index(A)} is zero, the inversion "
                          f"could not be completed because the input matrix is singular.")
    return _out(r, out, name="linalg_inv_ex", check=same_dtype)


def det(A, *, out=None) -> Tensor:
    """Determinant (``LinalgDetBackward0``)."""
    _square(A, "linalg.det")
    _float_input(A, "linalg.det")
    return _out(apply(_det, A), out, name="_linalg_det", check=same_dtype)


def slogdet(A, *, out=None):
    """``(sign, logabsdet)`` of the determinant as a named tuple."""
    _square(A, "linalg.slogdet")
    _float_input(A, "linalg.slogdet")
    return linalg_slogdet(*apply(_slogdet, A))


def solve(A, B, *, left=True, out=None) -> Tensor:
    """Solve ``A X = B`` (``X A = B`` with ``left=False``); a vector B when ``B.shape == A.shape[:-1]``."""
    _square(A, "linalg.solve")
    vec = B.ndim == 1 or (B.ndim == A.ndim - 1 and tuple(B.shape) == tuple(A.shape[:-1]))
    k = A.shape[-1]
    if (B.shape[-1] if vec else B.shape[-2 if left else -1]) != k:
        raise RuntimeError(f"linalg.solve: Incompatible shapes of A and B for the equation "
                           f"{'AX = B' if left else 'XA = B'} ({'x'.join(map(str, A.shape[-2:]))} and "
                           f"{'x'.join(map(str, B.shape[-2:] if not vec else (B.shape[-1],)))})")
    r = apply(_solve, A, B, vec=vec and left, left=bool(left))
    if not _all_finite(r) and _all_finite(A) and _all_finite(B):
        raise LinAlgError("torch.linalg.solve: The solver failed because the input matrix is singular.")
    return _out(r, out, name="_linalg_solve_ex", check=same_dtype)


def _hermitian_from(a, upper):
    """The Hermitian matrix PyTorch's factorisation reads: one triangle of ``a`` (LAPACK's
    ``potrf`` with uplo 'L', or 'U' for ``upper``), mirrored."""
    tri = jnp.triu(a) if upper else jnp.tril(a)
    strict = jnp.triu(a, 1) if upper else jnp.tril(a, -1)
    return tri + jnp.conj(jnp.swapaxes(strict, -1, -2))


@functools.partial(jax.custom_jvp, nondiff_argnums=(1,))
def _read_triangle(a, upper):
    """``_hermitian_from`` whose derivative is Hermitian, ``(t + tᴴ) / 2``: PyTorch's gradients
    of a factorisation that reads one triangle are Hermitian (both triangles), at every order."""
    return _hermitian_from(a, upper)


@_read_triangle.defjvp
def _read_triangle_jvp(upper, primals, tangents):
    (t,) = tangents
    return _read_triangle(primals[0], upper), (t + jnp.conj(jnp.swapaxes(t, -1, -2))) / 2


def _cholesky_raw(a, upper):
    lo = jnp.linalg.cholesky(_read_triangle(a, upper))
    return jnp.conj(jnp.swapaxes(lo, -1, -2)) if upper else lo


def _cholesky_fn(a, *, upper):
    return _cholesky_raw(a, upper)


def _cholesky_jvp(primals, tangents, out, *, upper):
    # the forward reads one triangle, but PyTorch's cholesky_backward is Hermitian (both
    # triangles; so is its double backward): the triangle is read through _read_triangle
    return jax.jvp(lambda v: _cholesky_raw(v, upper), primals, tangents)[1]


_cholesky = defop("cholesky", _cholesky_fn, "LinalgCholeskyExBackward0", jvp=_cholesky_jvp)
_cholesky_legacy = defop("cholesky_legacy", _cholesky_fn, "CholeskyBackward0", jvp=_cholesky_jvp)


def _check_pd(r, A, fname, upper=False):
    if _all_finite(r) or not _all_finite(A):
        return
    # (XLA's factor of a failed matrix is all nan: the order comes from the leading minors)
    _raise_info(_pd_info(A, upper), A, fname + ": {}The factorization could not be completed because the input "
                "is not positive-definite (the leading minor of order {} is not positive-definite).")


def _pd_info(A, upper):
    """Per matrix: the order of the first leading minor that is not positive-definite (0: PD)."""
    a = np.asarray(A._value).reshape((-1,) + tuple(A.shape[-2:]))
    info = []
    for m in a:
        m = np.triu(m) + np.triu(m, 1).T.conj() if upper else np.tril(m) + np.tril(m, -1).T.conj()
        bad = 0
        for k in range(1, m.shape[0] + 1):
            try:
                np.linalg.cholesky(m[:k, :k])
            except np.linalg.LinAlgError:
                bad = k
                break
        info.append(bad)
    return info


def _raise_info(info, A, msg):
    """PyTorch's error for the first failed matrix (``(Batch element i): `` in a batch)."""
    for i, k in enumerate(info):
        if k:
            raise LinAlgError(msg.format(f"(Batch element {i}): " if A.ndim > 2 else "", k))


def cholesky(A, *, upper=False, out=None) -> Tensor:
    """Cholesky factor ``L`` (``A = L Lᴴ``) of a Hermitian positive-definite matrix."""
    _square(A, "linalg.cholesky")
    r = apply(_cholesky, A, upper=bool(upper))
    _check_pd(r, A, "linalg.cholesky", bool(upper))
    return _out(r, out, name="linalg_cholesky_ex")


@export("cholesky")
def cholesky_legacy(input, upper=False, *, out=None) -> Tensor:
    """Deprecated ``torch.cholesky`` (``CholeskyBackward0``); prefer ``funcgrad.linalg.cholesky``."""
    warnings.warn("torch.cholesky is deprecated in favor of torch.linalg.cholesky and will be removed "
                  "in a future PyTorch release.\nL = torch.cholesky(A)\nshould be replaced with\n"
                  "L = torch.linalg.cholesky(A)\nand\nU = torch.cholesky(A, upper=True)\nshould be "
                  "replaced with\nU = torch.linalg.cholesky(A).mH\nThis transform will produce "
                  "equivalent results for all valid (symmetric positive definite) inputs.",
                  UserWarning, stacklevel=2)
    _square(input, "cholesky")
    r = apply(_cholesky_legacy, input, upper=bool(upper))
    _check_pd(r, input, "cholesky", bool(upper))
    return _out(r, out)


# ================================ decompositions ===============================================
def _qr_fn(a, *, mode):
    if mode == "r":
        r = jnp.linalg.qr(a, mode="r")
        return jnp.zeros((0,), a.dtype), r
    return tuple(jnp.linalg.qr(a, mode=mode))


_qr = defop("qr", _qr_fn, "LinalgQrBackward0")


def qr(A, mode="reduced", *, out=None):
    """QR decomposition: named tuple ``(Q, R)``; ``mode`` is ``'reduced'``, ``'complete'`` or ``'r'``."""
    if mode not in ("reduced", "complete", "r"):
        raise RuntimeError(f"qr received unrecognized mode '{mode}' but expected one of 'reduced' "
                           f"(default), 'r', or 'complete'")
    if A.ndim < 2:
        raise RuntimeError("linalg.qr: The input tensor A must have at least 2 dimensions.")
    return linalg_qr(*apply(_qr, A, mode=mode))


@export("qr")
def qr_legacy(input, some=True, *, out=None):
    """Deprecated ``torch.qr(A, some=True)``: ``linalg.qr(A, 'reduced' if some else 'complete')``."""
    warnings.warn("torch.qr is deprecated in favor of torch.linalg.qr and will be removed in a future "
                  "PyTorch release.\nThe boolean parameter 'some' has been replaced with a string "
                  "parameter 'mode'.\nQ, R = torch.qr(A, some)\nshould be replaced with\nQ, R = "
                  "torch.linalg.qr(A, 'reduced' if some else 'complete')", UserWarning, stacklevel=2)
    return qr_result(*qr(input, "reduced" if some else "complete"))


def _svd_fn(a, *, full_matrices):
    m, n = a.shape[-2:]
    if full_matrices and m != n:
        # the extra singular vectors carry no gradient (as in PyTorch): differentiate the reduced
        # factors and append the completing columns/rows as constants
        u, s, vh = jnp.linalg.svd(a, full_matrices=False)
        uf, _, vhf = jnp.linalg.svd(jax.lax.stop_gradient(a), full_matrices=True)
        k = min(m, n)
        u = jnp.concatenate([u, uf[..., :, k:]], axis=-1)
        vh = jnp.concatenate([vh, vhf[..., k:, :]], axis=-2)
        return u, s, vh
    return tuple(jnp.linalg.svd(a, full_matrices=full_matrices))


_svd = defop("svd", _svd_fn, "LinalgSvdBackward0")
_svdvals = defop("svdvals", lambda a: jnp.linalg.svd(a, compute_uv=False), "LinalgSvdBackward0")


def svd(A, full_matrices=True, *, driver=None, out=None):
    """Singular value decomposition: named tuple ``(U, S, Vh)`` with ``A = U diag(S) Vh``."""
    if A.ndim < 2:
        raise RuntimeError("linalg.svd: The input tensor A must have at least 2 dimensions.")
    return linalg_svd(*apply(_svd, A, full_matrices=bool(full_matrices)))


def svdvals(A, *, driver=None, out=None) -> Tensor:
    """Singular values, in descending order."""
    if A.ndim < 2:
        raise RuntimeError("linalg.svdvals: The input tensor A must have at least 2 dimensions.")
    return _out(apply(_svdvals, A), out, name="_linalg_svd")


@export("svd")
def svd_legacy(input, some=True, compute_uv=True, *, out=None):
    """``torch.svd``: named tuple ``(U, S, V)`` with ``A = U diag(S) Vᴴ`` (V, not Vh)."""
    if not compute_uv:
        s = svdvals(input)
        m, n = input.shape[-2:]
        return svd_result(zeros(input.shape[:-2] + (m, m if not some else min(m, n)), dtype=input.dtype),
                          s, zeros(input.shape[:-2] + (n, n if not some else min(m, n)), dtype=input.dtype))
    u, s, vh = svd(input, full_matrices=not some)
    v = vh.mT.conj() if vh.is_complex() else vh.mT
    return svd_result(u, s, v)


def _hermitian(a, uplo):
    """The Hermitian matrix PyTorch reads from one triangle of ``a``."""
    if uplo == "L":
        lo = jnp.tril(a, -1)
        return lo + jnp.conj(jnp.swapaxes(lo, -1, -2)) + jnp.real(jnp.diagonal(a, 0, -2, -1))[..., None] * \
            jnp.eye(a.shape[-1], dtype=a.dtype)
    up = jnp.triu(a, 1)
    return up + jnp.conj(jnp.swapaxes(up, -1, -2)) + jnp.real(jnp.diagonal(a, 0, -2, -1))[..., None] * \
        jnp.eye(a.shape[-1], dtype=a.dtype)


def _eigh_fn(a, *, uplo):
    w, v = jnp.linalg.eigh(_hermitian(a, uplo), symmetrize_input=False)
    return w, v


def _sym(x):
    return (x + jnp.conj(jnp.swapaxes(x, -1, -2))) / 2


def _eigh_jvp(primals, tangents, out, *, uplo):
    # PyTorch's linalg_eigh_backward returns the Hermitian V (diag(gL) + skew(V^H gV) / E) V^H:
    # both triangles get the gradient (the forward reads one). That is the transpose of eigh's
    # derivative along the Hermitian part of the tangent, whatever triangle the forward read.
    # The matrix is the triangle's value with the Hermitian part's derivative, so that the second
    # derivative is Hermitian too, as PyTorch's (its backward's inputs are eigh's outputs).
    (a,), (t,) = primals, tangents
    sg = jax.lax.stop_gradient
    m = _hermitian(sg(a), uplo) + (_sym(a) - sg(_sym(a)))
    return jax.jvp(_eigh_plain, (m,), (_sym(t),))[1]


def _eigh_plain(m):
    w, v = jnp.linalg.eigh(m, symmetrize_input=False)
    return w, v


_eigh = defop("eigh", _eigh_fn, "LinalgEighBackward0", jvp=_eigh_jvp)
_eigvalsh = defop("eigvalsh", lambda a, uplo: _eigh_fn(a, uplo=uplo)[0], "LinalgEighBackward0",
                  jvp=lambda p, t, out, uplo: _eigh_jvp(p, t, None, uplo=uplo)[0])


def _check_uplo(UPLO):
    if UPLO not in ("L", "U"):
        raise RuntimeError(f"Expected UPLO argument to be 'L' or 'U', but got {UPLO}")


def eigh(A, UPLO="L", *, out=None):
    """Eigen-decomposition of a Hermitian matrix (read from the ``UPLO`` triangle), ascending."""
    _square(A, "linalg.eigh")
    _check_uplo(UPLO)
    return linalg_eigh(*apply(_eigh, A, uplo=UPLO))


def eigvalsh(A, UPLO="L", *, out=None) -> Tensor:
    """Eigenvalues of a Hermitian matrix, ascending."""
    _square(A, "linalg.eigvalsh")
    _check_uplo(UPLO)
    return _out(apply(_eigvalsh, A, uplo=UPLO), out, name="_linalg_eigh")


def _pinv_fn(a, *, atol, rtol, hermitian):
    if hermitian:  # PyTorch's eigh reads the lower triangle
        w, v = jnp.linalg.eigh(_hermitian(a, "L"), symmetrize_input=False)
        s = jnp.abs(w)
    else:
        u, s, vh = jnp.linalg.svd(a, full_matrices=False)
    smax = jnp.max(s, axis=-1, keepdims=True)
    if rtol is None:
        rtol = 0.0 if atol else max(a.shape[-2:]) * jnp.finfo(a.dtype).eps
    cutoff = jnp.maximum(atol or 0.0, rtol * smax)
    keep = s > cutoff
    sinv = jnp.where(keep, 1 / jnp.where(keep, s if not hermitian else w, 1), 0)
    if hermitian:
        return (v * sinv[..., None, :]) @ jnp.conj(jnp.swapaxes(v, -1, -2))
    return jnp.conj(jnp.swapaxes(vh, -1, -2)) * sinv[..., None, :] @ jnp.conj(jnp.swapaxes(u, -1, -2))


def _pinv_jvp(primals, tangents, out, *, atol, rtol, hermitian):
    # PyTorch's pinv_backward is the general pseudo-inverse derivative at the input A, also for
    # hermitian=True, whose forward reads one triangle (jax.vjp would give the gradient of that
    # triangle's function): dP = -P dA P + P P^H dA^H (I - A P) + (I - P A) dA^H P^H P
    (a,), (t,) = primals, tangents
    if not hermitian:
        return jax.jvp(lambda m: _pinv_fn(m, atol=atol, rtol=rtol, hermitian=False), (a,), (t,))[1]
    p = out

    def h(x):
        return jnp.conj(jnp.swapaxes(x, -1, -2))
    eye_m, eye_n = jnp.eye(a.shape[-2], dtype=a.dtype), jnp.eye(a.shape[-1], dtype=a.dtype)
    return (-(p @ t @ p) + p @ h(p) @ h(t) @ (eye_m - a @ p) + (eye_n - p @ a) @ h(t) @ h(p) @ p)


_pinv = defop("pinv", _pinv_fn, "LinalgPinvBackward0", jvp=_pinv_jvp)


def pinv(A, *, atol=None, rtol=None, hermitian=False, out=None) -> Tensor:
    """Moore–Penrose pseudo-inverse (singular values below ``max(atol, rtol·σ₁)`` are dropped)."""
    if A.ndim < 2:
        raise RuntimeError("linalg.pinv(" + _type_name(A) + "{[" + ", ".join(map(str, A.shape)) +
                           "]}): expected a tensor with 2 or more dimensions of float, double, cfloat or "
                           "cdouble types")
    return _out(apply(_pinv, A, atol=None if atol is None else float(atol),
                      rtol=None if rtol is None else float(rtol), hermitian=bool(hermitian)), out,
                "linalg_pinv")


def matrix_power(A, n: int, *, out=None) -> Tensor:
    """``A`` to the integer power ``n`` by repeated squaring (``n < 0``: of the inverse)."""
    _square(A, "linalg.matrix_power")
    if n == 0:
        e = eye(A.shape[-1], dtype=A.dtype)
        return _out(e.expand(A.shape).clone(), out, name="matmul")
    if n < 0:
        A, n = inv(A), -n
    result, base = None, A
    while n:
        if n & 1:
            result = base if result is None else matmul(result, base)
        n >>= 1
        if n:
            base = matmul(base, base)
    return _out(result, out, name="matmul")


def matrix_rank(A, *, atol=None, rtol=None, hermitian=False, out=None) -> Tensor:
    """Numerical rank (int64, not differentiable)."""
    if A.ndim < 2:
        raise RuntimeError("linalg.matrix_rank: The input tensor input must have at least 2 dimensions.")
    a = A._value
    # hermitian: PyTorch's eigvalsh reads the lower triangle only (no symmetrizing)
    s = jnp.abs(jnp.linalg.eigvalsh(a, symmetrize_input=False)) if hermitian else \
        jnp.linalg.svd(a, compute_uv=False)
    smax = jnp.max(s, axis=-1, keepdims=True) if s.shape[-1] else jnp.zeros(s.shape[:-1] + (1,), s.dtype)
    if rtol is None:
        rtol = 0.0 if atol else max(a.shape[-2:]) * float(jnp.finfo(a.dtype).eps)
    cutoff = jnp.maximum(atol or 0.0, rtol * smax)
    return _out(Tensor._wrap(jnp.sum(s > cutoff, axis=-1).astype(jnp.int64)), out)


def multi_dot(tensors, *, out=None) -> Tensor:
    """Chained matrix product; the first/last may be 1-D (row/column vectors)."""
    tensors = list(tensors)
    if len(tensors) < 2:
        raise RuntimeError(f"multi_dot(): expected at least 2 tensors but got {len(tensors)}")
    for i, t in enumerate(tensors):
        if t.ndim != 2 and not (t.ndim == 1 and i in (0, len(tensors) - 1)):
            raise RuntimeError(f"multi_dot(): tensor {i} must be 2D but got {t.ndim}D")
    # as PyTorch's multi_dot_impl: 1-D ends viewed as a row / column matrix, the chain of mm in
    # the cheapest order, the result viewed back to its shape (its node is ViewBackward0)
    first, last = tensors[0], tensors[-1]
    shape = ([] if first.ndim == 1 else [first.shape[0]]) + ([] if last.ndim == 1 else [last.shape[1]])
    if first.ndim == 1:
        tensors[0] = first.view(1, -1)
    if last.ndim == 1:
        tensors[-1] = last.view(-1, 1)
    return _out(_chain(tensors, _chain_order(tensors), 0, len(tensors) - 1).view(shape), out, name="mm")


def _chain_order(ms):
    """The split points of the cheapest product order (the matrix-chain DP; PyTorch's order)."""
    n = len(ms)
    p = [m.shape[0] for m in ms] + [ms[-1].shape[1]]
    cost = [[0] * n for _ in range(n)]
    split = [[0] * n for _ in range(n)]
    for length in range(1, n):
        for i in range(n - length):
            j = i + length
            cost[i][j] = None
            for k in range(i, j):
                c = cost[i][k] + cost[k + 1][j] + p[i] * p[k + 1] * p[j + 1]
                if cost[i][j] is None or c < cost[i][j]:
                    cost[i][j], split[i][j] = c, k
    return split


def _chain(ms, split, i, j):
    if i == j:
        return ms[i]
    k = split[i][j]
    return matmul(_chain(ms, split, i, k), _chain(ms, split, k + 1, j))


# ---- top-level aliases (torch.det, torch.inverse …) --------------------------------------------
@export("det")
def _det_alias(input) -> Tensor:
    """``torch.det``: see ``funcgrad.linalg.det``."""
    return det(input)


@export("inverse")
def _inverse_alias(input, *, out=None) -> Tensor:
    """``torch.inverse``: see ``funcgrad.linalg.inv``."""
    return inv(input, out=out)


@export("slogdet")
def _slogdet_alias(input):
    """``torch.slogdet``: named tuple ``slogdet(sign, logabsdet)``."""
    return slogdet_result(*slogdet(input))


@export("pinverse")
def _pinverse_alias(input, rcond=1e-15) -> Tensor:
    return pinv(input, rtol=rcond)


@export("matrix_power")
def _matrix_power_alias(input, n) -> Tensor:
    return matrix_power(input, n)


@export("logdet")
def logdet(input) -> Tensor:
    """``log(det(input))``: nan for a negative determinant, -inf for a singular matrix.

    As PyTorch's composite, ``where(sign == -1, nan, logabsdet)`` (``WhereBackward0``).

    >>> import funcgrad
    >>> funcgrad.logdet(funcgrad.tensor([[2.0, 0.0], [0.0, 3.0]]))
    tensor(1.7918)
    """
    _square(input, "logdet")
    _float_input(input, "logdet")
    sign, logabs = apply(_slogdet, input)
    return where(sign == -1, float("nan"), logabs)
