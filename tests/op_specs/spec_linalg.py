"""Spec rows for linear algebra: products, einsum, triangles/diagonals, norms, decompositions."""

import math
import warnings

import jax
import jax.numpy as jnp
import numpy as np

import funcgrad as fg

from . import Spec


def spd(n, batch=()):
    """A well-conditioned symmetric positive-definite matrix."""
    def make(rng):
        a = rng.standard_normal(batch + (n, n))
        return a @ np.swapaxes(a, -1, -2) + n * np.eye(n)
    return make


def quiet(f):
    """Call ``f`` ignoring its (expected) deprecation warning."""
    def g(*a):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return f(*a)
    return g


def _herm_l(a):
    lo = jnp.tril(a, -1)
    return lo + lo.swapaxes(-1, -2) + jnp.diagonal(a, 0, -2, -1)[..., None] * jnp.eye(a.shape[-1])


def _svd_invariant(usv):
    u, s, vh = usv
    return (u * s[..., None, :]) @ vh + s.sum() + ((u * u)[:2] * s).sum() + ((vh * vh)[:, :2].T * s).sum()


def _herm_ref(a):
    """The Hermitian matrix read from the lower triangle, differentiated along the Hermitian part
    of the tangent: PyTorch's eigh gradient is Hermitian (both triangles)."""
    sg, sym = jax.lax.stop_gradient, (a + a.swapaxes(-1, -2)) / 2
    return _herm_l(sg(a)) + sym - sg(sym)


def _pinv_ref(a):
    u, s, vh = jnp.linalg.svd(a, full_matrices=False)
    return (vh.T / s) @ u.T


L = fg.linalg
TOL = dict(atol=1e-7, rtol=1e-6)
SPECS = [
    Spec("vdot", fg.vdot, jnp.vdot, [(4,), (4,)], grad_fn="VdotBackward0"),
    Spec("outer", fg.outer, jnp.outer, [(3,), (4,)], grad_fn="MulBackward0"),
    Spec("outer", fg.ger, jnp.outer, [(3,), (2,)], id="ger"),
    Spec("addmm", lambda i, a, b: fg.addmm(i, a, b, beta=0.5, alpha=2.0),
         lambda i, a, b: 0.5 * i + 2.0 * a @ b, [(4,), (3, 2), (2, 4)], grad_fn="AddmmBackward0"),
    Spec("addmm", lambda i, a, b: i.addmm(a, b, beta=0), lambda i, a, b: a @ b, [(3, 4), (3, 2), (2, 4)],
         id="addmm_beta0"),
    Spec("addmv", fg.addmv, lambda i, a, v: i + a @ v, [(3,), (3, 2), (2,)], grad_fn="AddmvBackward0"),
    Spec("addbmm", fg.addbmm, lambda i, a, b: i + jnp.einsum("bij,bjk->ik", a, b), [(3, 4), (2, 3, 5), (2, 5, 4)],
         grad_fn="AddbmmBackward0"),
    Spec("baddbmm", lambda i, a, b: fg.baddbmm(i, a, b, alpha=0.5), lambda i, a, b: i + 0.5 * a @ b,
         [(1, 4), (2, 3, 5), (2, 5, 4)], grad_fn="BaddbmmBackward0"),
    Spec("einsum", lambda a, b: fg.einsum("bij,bjk->bik", a, b), lambda a, b: a @ b, [(2, 3, 4), (2, 4, 5)],
         grad_fn="ViewBackward0"),
    Spec("einsum", lambda a, b, c: fg.einsum("ij,jk,k", [a, b, c]), lambda a, b, c: a @ b @ c,
         [(2, 3), (3, 4), (4,)], id="einsum_list_implicit"),
    Spec("einsum_sum", lambda a: fg.einsum("ii", a), jnp.trace, [(3, 3)], grad_fn="SumBackward1"),
    Spec("einsum_permute", lambda a: fg.einsum("...ij->...ji", a), lambda a: a.swapaxes(-1, -2), [(2, 3, 4)],
         grad_fn="PermuteBackward0"),
    Spec("einsum_mul", lambda a, b: fg.einsum("i,j->ij", a, b), jnp.outer, [(3,), (4,)], grad_fn="MulBackward0"),
    Spec("tensordot", lambda a, b: fg.tensordot(a, b, dims=([1, 0], [0, 1])),
         lambda a, b: jnp.tensordot(a, b, ([1, 0], [0, 1])), [(3, 4, 2), (4, 3, 5)], grad_fn="ViewBackward0"),
    Spec("tensordot", lambda a, b: fg.tensordot(a, b), lambda a, b: jnp.tensordot(a, b, 2),
         [(2, 3, 4), (3, 4)], id="tensordot_int"),
    Spec("kron", fg.kron, jnp.kron, [(2, 3), (3, 2)], grad_fn="UnsafeViewBackward0"),
    Spec("tril", lambda x: x.tril(-1), lambda x: jnp.tril(x, -1), [(2, 3, 4)], grad_fn="TrilBackward0"),
    Spec("triu", lambda x: fg.triu(x, diagonal=1), lambda x: jnp.triu(x, 1), [(3, 4)], grad_fn="TriuBackward0"),
    Spec("diagonal", lambda x: x.diagonal(1, -1, 0), lambda x: jnp.diagonal(x, 1, 2, 0), [(3, 2, 4)],
         grad_fn="DiagonalBackward0"),
    Spec("diagonal", lambda x: L.diagonal(x, offset=-1), lambda x: jnp.diagonal(x, -1, -2, -1), [(2, 3, 3)],
         id="linalg_diagonal"),
    Spec("diag_2d", lambda x: fg.diag(x, 1), lambda x: jnp.diag(x, 1), [(3, 4)], grad_fn="DiagonalBackward0_copy"),
    Spec("diag_embed", lambda x: fg.diag(x, -1), lambda x: jnp.diag(x, -1), [(3,)], grad_fn="DiagEmbedBackward0"),
    Spec("diag_embed", lambda x: fg.diag_embed(x, 1, 0, 2),
         lambda x: jnp.moveaxis(jnp.zeros((2, 4, 4)).at[:, jnp.arange(3), jnp.arange(3) + 1].set(x), (1, 2), (0, 2)),
         [(2, 3)], id="diag_embed_dims"),
    Spec("trace", fg.trace, jnp.trace, [(3, 4)], grad_fn="TraceBackward0"),
    Spec("cross", lambda a, b: fg.cross(a, b, dim=0), lambda a, b: jnp.cross(a, b, axis=0), [(3, 2), (3, 2)],
         grad_fn="LinalgCrossBackward0"),
    Spec("cross", L.cross, lambda a, b: jnp.cross(a, b), [(2, 3), (1, 3)], id="linalg_cross"),
    Spec("vector_norm", L.norm, jnp.linalg.norm, [(3, 4)], grad_fn="LinalgVectorNormBackward0"),
    Spec("vector_norm", lambda x: L.vector_norm(x, 3, dim=-1, keepdim=True),
         lambda x: jnp.sum(jnp.abs(x) ** 3, -1, keepdims=True) ** (1 / 3), [(3, 4)], id="vector_norm_3"),
    Spec("vector_norm", lambda x: x.norm(p=1, dim=1), lambda x: jnp.abs(x).sum(1), [(3, 4)], id="norm_p1"),
    Spec("vector_norm", lambda x: L.vector_norm(x, math.inf), lambda x: jnp.abs(x).max(), [(3, 4)], id="norm_inf"),
    Spec("vector_norm", lambda x: L.matrix_norm(x), lambda x: jnp.sqrt((x * x).sum((-2, -1))), [(2, 3, 4)],
         id="matrix_norm_fro"),
    Spec("matrix_norm_nuc", lambda x: L.norm(x, "nuc"), lambda x: jnp.linalg.norm(x, "nuc"), [(3, 4)],
         grad_fn="SumBackward1", **TOL),
    Spec("matrix_norm_max", lambda x: L.matrix_norm(x, 2), lambda x: jnp.linalg.norm(x, 2, (-2, -1)), [(2, 3, 4)],
         grad_fn="AmaxBackward0", **TOL),
    Spec("matrix_norm_max", lambda x: L.norm(x, math.inf), lambda x: jnp.abs(x).sum(1).max(), [(3, 4)],
         id="matrix_norm_inf"),
    Spec("matrix_norm_min", lambda x: L.matrix_norm(x, -1), lambda x: jnp.abs(x).sum(0).min(), [(3, 4)],
         grad_fn="AminBackward0"),
    Spec("inv", L.inv, jnp.linalg.inv, [spd(3)], grad_fn="LinalgInvExBackward0", **TOL),
    Spec("inv", fg.inverse, jnp.linalg.inv, [spd(3, (2,))], id="inverse", **TOL),
    Spec("det", L.det, jnp.linalg.det, [spd(3)], grad_fn="LinalgDetBackward0", **TOL),
    Spec("det", lambda x: x.det(), jnp.linalg.det, [(2, 3, 3)], id="det_method", **TOL),
    Spec("slogdet", L.slogdet, lambda x: tuple(jnp.linalg.slogdet(x)), [(3, 3)], out=1,
         grad_fn="LinalgSlogdetBackward0", **TOL),
    Spec("slogdet", lambda x: fg.slogdet(x).logabsdet, lambda x: jnp.linalg.slogdet(x)[1], [(2, 3, 3)],
         id="slogdet_top", **TOL),
    Spec("solve", L.solve, lambda a, b: jnp.linalg.solve(a, b), [spd(3), (3, 2)], grad_fn="LinalgSolveExBackward0",
         **TOL),
    Spec("solve", L.solve, lambda a, b: jnp.linalg.solve(a, b[..., None])[..., 0], [spd(3, (2,)), (2, 3)],
         id="solve_batched_vector", **TOL),
    Spec("solve", lambda a, b: L.solve(a, b, left=False), lambda a, b: b @ jnp.linalg.inv(a), [spd(3), (2, 3)],
         id="solve_right", **TOL),
    Spec("cholesky", L.cholesky, jnp.linalg.cholesky, [spd(3)], grad_fn="LinalgCholeskyExBackward0", **TOL),
    Spec("cholesky", lambda a: L.cholesky(a, upper=True), lambda a: jnp.linalg.cholesky(a).swapaxes(-1, -2),
         [spd(3, (2,))], id="cholesky_upper", **TOL),
    Spec("cholesky_legacy", quiet(fg.cholesky), jnp.linalg.cholesky, [spd(3)], grad_fn="CholeskyBackward0", **TOL),
    Spec("qr", L.qr, lambda a: tuple(jnp.linalg.qr(a)), [(4, 3)], out=0, grad_fn="LinalgQrBackward0", **TOL),
    Spec("qr", L.qr, lambda a: tuple(jnp.linalg.qr(a)), [(2, 3, 3)], out=1, id="qr_R", **TOL),
    Spec("qr", lambda a: quiet(fg.qr)(a).R, lambda a: jnp.linalg.qr(a)[1], [(3, 3)], id="qr_legacy", **TOL),
    Spec("svd", lambda a: L.svd(a, full_matrices=False), lambda a: tuple(jnp.linalg.svd(a, full_matrices=False)),
         [(4, 3)], out=0, grad_fn="LinalgSvdBackward0", **TOL),
    Spec("svd", L.svd, lambda a: tuple(jnp.linalg.svd(a, full_matrices=False)), [(3, 5)], out=1, id="svd_S_full",
         **TOL),
    # sign-invariant functions of U, S, Vh (U S Vh, S, U ⊙ U, Vh ⊙ Vh): LAPACK (PyTorch) and XLA
    # pick different signs for the singular vectors, so this row compares the gradient with torch's
    Spec("svd", lambda a: _svd_invariant(L.svd(a, full_matrices=False)),
         lambda a: _svd_invariant(jnp.linalg.svd(a, full_matrices=False)), [(4, 3)], id="svd_sign_invariant",
         grad_fn="AddBackward0", **TOL),
    Spec("svd", lambda a: fg.svd(a).V, lambda a: jnp.linalg.svd(a, full_matrices=False)[2].T, [(3, 3)],
         id="svd_legacy_V", grad_fn="TransposeBackward0", **TOL),
    Spec("svdvals", L.svdvals, lambda a: jnp.linalg.svd(a, compute_uv=False), [(2, 3, 4)],
         grad_fn="LinalgSvdBackward0", **TOL),
    Spec("eigh", L.eigh, lambda a: tuple(jnp.linalg.eigh(_herm_ref(a))), [(3, 3)], out=0,
         grad_fn="LinalgEighBackward0", **TOL),
    Spec("eigh", lambda a: L.eigh(a, UPLO="U").eigenvectors.abs(),
         lambda a: jnp.abs(jnp.linalg.eigh(_herm_ref(a.swapaxes(-1, -2)))[1]), [(3, 3)], id="eigh_U_vectors",
         **TOL),
    Spec("eigvalsh", L.eigvalsh, lambda a: jnp.linalg.eigh(_herm_ref(a))[0], [(2, 3, 3)],
         grad_fn="LinalgEighBackward0", **TOL),
    Spec("pinv", L.pinv, _pinv_ref, [(3, 4)], grad_fn="LinalgPinvBackward0", **TOL),
    # PyTorch's pinv gradient is the general one at A (also for hermitian=True): inv's, for an spd A
    Spec("pinv", lambda a: L.pinv(a, hermitian=True), lambda a: jnp.linalg.inv(a), [spd(3)], id="pinv_hermitian",
         **TOL),
    Spec("mm", lambda a: L.matrix_power(a, 3), lambda a: a @ a @ a, [(3, 3)], id="matrix_power_3",
         grad_fn="MmBackward0"),
    Spec("mm", lambda a: fg.matrix_power(a, -2), lambda a: jnp.linalg.inv(a @ a), [spd(3)], id="matrix_power_neg",
         **TOL),
    Spec("mv", lambda a, b, c: L.multi_dot([a, b, c]), lambda a, b, c: a @ b @ c, [(2, 3), (3, 4), (4,)],
         id="multi_dot"),
]
