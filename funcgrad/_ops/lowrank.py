"""``svd_lowrank`` and ``pca_lowrank``: PyTorch's randomized low-rank SVD and PCA (Halko, Martinsson
and Tropp 2009, Algorithms 4.4 and 5.1), written as PyTorch writes them (``torch/_lowrank.py``) over
funcgrad's ops, so they draw the same ``randn`` from the global generator (one ``n x q`` draw per
call): with the same seed the results are PyTorch's up to the rounding of the factorisations, and the
gradients flow through ``matmul``, ``linalg.qr`` and ``linalg.svd`` as in PyTorch.

>>> import funcgrad
>>> _ = funcgrad.manual_seed(0)
>>> A = funcgrad.tensor([[3.0, 0.0, 0.0], [0.0, 2.0, 0.0], [0.0, 0.0, 1.0], [0.0, 0.0, 0.0]])
>>> U, S, V = funcgrad.svd_lowrank(A, q=3)
>>> U.shape, S.shape, V.shape, bool(((U * S) @ V.T - A).abs().max() < 1e-5)
(funcgrad.Size([4, 3]), funcgrad.Size([3]), funcgrad.Size([3, 3]), True)
"""

from __future__ import annotations

from .. import _dtype
from .._factories import randn
from ._registry import Tensor
from .decomp import qr, svd


def _floating_dtype(A):
    """``_linalg_utils.get_floating_dtype``: half/float/double as they are, anything else float32."""
    return A.dtype if A.dtype in (_dtype.float16, _dtype.float32, _dtype.float64) else _dtype.float32


def _approximate_basis(A, q, niter, M):
    """``Q`` with ``q`` orthonormal columns such that ``Q Qᴴ (A - M)`` approximates ``A - M``."""
    niter = 2 if niter is None else niter
    dtype = _floating_dtype(A) if not A.is_complex() else A.dtype
    R = randn(A.shape[-1], q, dtype=dtype, device=A.device)
    X = A.matmul(R)
    if M is not None:
        X = X - M.matmul(R)
    Q = qr(X).Q
    for _ in range(niter):
        X = A.mH.matmul(Q)
        if M is not None:
            X = X - M.mH.matmul(Q)
        Q = qr(X).Q
        X = A.matmul(Q)
        if M is not None:
            X = X - M.matmul(Q)
        Q = qr(X).Q
    return Q


def _svd_lowrank(A, q, niter, M):
    q = 6 if q is None else q
    m, n = A.shape[-2:]
    if M is not None:
        M = M.broadcast_to(A.size())
    if m < n:  # (the algorithm assumes a tall A)
        A = A.mH
        if M is not None:
            M = M.mH
    Q = _approximate_basis(A, q, niter, M)
    B = Q.mH.matmul(A)
    if M is not None:
        B = B - Q.mH.matmul(M)
    U, S, Vh = svd(B, full_matrices=False)
    V = Vh.mH
    U = Q.matmul(U)
    if m < n:
        U, V = V, U
    return U, S, V


def svd_lowrank(A: Tensor, q: int | None = 6, niter: int | None = 2,
                M: Tensor | None = None) -> tuple[Tensor, Tensor, Tensor]:
    """``(U, S, V)`` with ``A ≈ U diag(S) Vᴴ`` (of ``A - M`` when ``M`` is given, broadcast to
    ``A``'s shape), from a random ``q``-dimensional subspace refined by ``niter`` power iterations."""
    return _svd_lowrank(A, q, niter, M)


def pca_lowrank(A: Tensor, q: int | None = None, center: bool = True,
                niter: int = 2) -> tuple[Tensor, Tensor, Tensor]:
    """PCA of the data matrix ``A`` (``m`` samples by ``n`` features) as ``svd_lowrank`` of ``A``
    with its column means subtracted (``center``): the columns of ``V`` are the principal
    directions, ``S ** 2 / (m - 1)`` the variances; ``q`` defaults to ``min(6, m, n)``."""
    m, n = A.shape[-2:]
    if q is None:
        q = min(6, m, n)
    elif not (q >= 0 and q <= min(m, n)):
        raise ValueError(f"q(={q}) must be non-negative integer and not greater than min(m, n)={min(m, n)}")
    if not (niter >= 0):
        raise ValueError(f"niter(={niter}) must be non-negative integer")
    if not center:
        return _svd_lowrank(A, q, niter, None)
    C = A.mean(dim=(-2,), keepdim=True)
    return _svd_lowrank(A - C, q, niter, None)
