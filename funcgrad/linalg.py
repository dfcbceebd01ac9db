"""``funcgrad.linalg``: PyTorch's ``torch.linalg`` namespace over JAX's linear algebra.

>>> import funcgrad
>>> funcgrad.linalg.det(funcgrad.tensor([[2., 1.], [1., 2.]]))
tensor(3.)
"""

from __future__ import annotations

from ._ops.decomp import LinAlgError as LinAlgError
from ._ops.decomp import cholesky as cholesky, det as det, eigh as eigh, eigvalsh as eigvalsh
from ._ops.decomp import inv as inv, matrix_power as matrix_power
from ._ops.decomp import matrix_rank as matrix_rank, multi_dot as multi_dot
from ._ops.decomp import pinv as pinv, qr as qr, slogdet as slogdet, solve as solve, svd as svd
from ._ops.decomp import svdvals as svdvals
from ._ops import decomp as _decomp
from ._ops._parser import checked as _checked
from ._ops._registry import write_out as _write_out
from ._ops.linalg import matmul as matmul
from ._ops.linalg import _cross_impl
from ._ops.linalg import diagonal as _diagonal
from ._ops.linalg2 import cholesky_ex as cholesky_ex, cond as cond, inv_ex as inv_ex, lstsq as lstsq
from ._ops.linalg2 import lu as lu, lu_factor as lu_factor, matrix_exp as matrix_exp
from ._ops.linalg2 import lu_factor_ex as lu_factor_ex, lu_solve as lu_solve
from ._ops.linalg2 import solve_triangular as solve_triangular, tensorinv as tensorinv
from ._ops.linalg2 import tensorsolve as tensorsolve, vander as vander
from ._ops.linalg2 import householder_product as householder_product

# the norms as PyTorch's argument parser takes them (a non-bool keepdim: linalg_vector_norm()'s
# TypeError); linalg's own calls between them run unwrapped
vector_norm = _decomp.linalg_vector_norm
matrix_norm = _decomp.linalg_matrix_norm
norm = _checked(_decomp.norm, "linalg_norm", False)


def cross(input, other, *, dim=-1, out=None):
    """Cross product of 3-vectors along ``dim`` (default the last), with broadcasting."""
    return _cross_impl(input, other, dim, out)


def diagonal(A, *, offset=0, dim1=-2, dim2=-1):
    """The ``offset`` diagonal of the matrices in the last two dims (a view)."""
    return _diagonal(A, offset, dim1, dim2)


def vecdot(x, y, *, dim=-1, out=None):
    """``sum(conj(x) * y, dim)`` with broadcasting."""
    r = (x.conj() if x.is_complex() else x) * y
    # (PyTorch's out op: vdot for two vectors, else the sum of the product)
    return _write_out(r.sum(dim), out, "vdot" if x.ndim == 1 and y.ndim == 1 else "sum")


__all__ = ["LinAlgError", "cholesky", "cross", "det", "diagonal", "eigh", "eigvalsh", "inv",
           "matmul", "matrix_norm", "matrix_power", "matrix_rank", "multi_dot", "norm", "pinv", "qr",
           "slogdet", "solve", "svd", "svdvals", "vecdot", "vector_norm"]
__all__ += ["cholesky_ex", "cond", "inv_ex", "lstsq", "lu", "lu_factor", "lu_factor_ex", "lu_solve",
            "matrix_exp", "solve_triangular", "tensorinv", "tensorsolve", "vander", "householder_product"]
