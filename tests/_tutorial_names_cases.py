"""Cases recorded from PyTorch for tests/test_tutorial_names.py (each ``case(lib)`` gives a NumPy
array, for ``lib`` funcgrad or torch): the LU family (``linalg.lu_factor_ex``, ``lu_unpack``,
``linalg.lu_solve``, the deprecated ``lu``/``lu_solve``) with its gradients, and the randomized
``svd_lowrank``/``pca_lowrank`` from a seeded generator, with theirs. ``TOLERANCE`` names the cases not compared
bit for bit (PyTorch's LAPACK and the one XLA:CPU calls, and their triangular solves, round
differently in the last bits)."""

from __future__ import annotations

import warnings

import numpy as np

_A = [[2.0, -1.0, 0.5, 3.0], [1.0, 4.0, -2.0, 0.0], [-3.0, 0.5, 1.0, 2.0], [0.5, 2.0, 3.0, -1.0]]
_B = [[1.0, -2.0], [0.5, 3.0], [2.0, 1.0], [-1.0, 0.25]]


def _flat(*ts):
    return np.concatenate([np.asarray(t.detach().numpy(), np.float64).ravel() for t in ts])


def lu_factor_ex(lib):
    a = lib.tensor([_A, [[1.0, 2.0, 0.0, 0.0], [2.0, 4.0, 0.0, 0.0], [0.0, 0.0, 1.0, 0.0], [0.0, 0.0, 0.0, 1.0]]],
                   dtype=lib.float64)
    LU, piv, info = lib.linalg.lu_factor_ex(a)
    return _flat(LU, piv, info)


def lu_unpack_grads(lib):
    a = lib.tensor(_A, dtype=lib.float64, requires_grad=True)
    P, L, U = lib.lu_unpack(*lib.linalg.lu_factor(a))
    w = lib.arange(16, dtype=lib.float64).reshape(4, 4) - 7
    ((L * w).sum() + (U * w.T).sum()).backward()
    return _flat(P, L, U, a.grad)


def lu_unpack_rect(lib):
    a = lib.tensor(_A, dtype=lib.float64)[:, :3]
    parts = list(lib.lu_unpack(*lib.linalg.lu_factor(a))) + list(lib.lu_unpack(*lib.linalg.lu_factor(a.T)))
    return _flat(*parts)


def lu_solve_grads(lib):
    a = lib.tensor(_A, dtype=lib.float64, requires_grad=True)
    b = lib.tensor(_B, dtype=lib.float64, requires_grad=True)
    LU, piv = lib.linalg.lu_factor(a)
    xs = [lib.linalg.lu_solve(LU, piv, b), lib.linalg.lu_solve(LU, piv, b, adjoint=True),
          lib.linalg.lu_solve(LU, piv, b.T, left=False)]
    sum(((x if x.shape == b.shape else x.T) * b.detach()).sum() for x in xs).backward()
    return _flat(*xs, a.grad, b.grad)


def lu_solve_f32(lib):
    a = lib.tensor(_A)
    b = lib.tensor(_B)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # (the deprecated spellings' warnings)
        LU, piv = lib.lu(a)
        return _flat(lib.lu_solve(b, LU, piv).float())


def _data(lib, dtype):
    x = np.random.default_rng(0).standard_normal((20, 8)) * np.linspace(3.0, 0.5, 8)
    return lib.tensor(x, dtype=getattr(lib, dtype), requires_grad=True)


def svd_lowrank(lib, dtype="float64"):
    """Seeded: the one ``randn`` draw per call is PyTorch's stream; each loss term reads the
    singular vectors' signs, which agree as long as the small SVD inside is not of a very wide
    matrix (LAPACK's LQ path for ``n >= 11/6 m``, where MKL and XLA's LAPACK choose other signs)."""
    a = _data(lib, dtype)
    lib.manual_seed(3)
    U, S, V = lib.svd_lowrank(a, q=5)
    U2, S2, V2 = lib.svd_lowrank(a.T, q=5, niter=1, M=a.T.mean(-1, keepdim=True))
    ((U[0] * 2).sum() + S.sum() + V[1].sum() + U2[:, 1].sum() + (S2 ** 2).sum() + V2[:, 0].sum()).backward()
    return _flat(U, S, V, U2, S2, V2, a.grad)


def pca_lowrank(lib, dtype="float64"):
    a = _data(lib, dtype)
    lib.manual_seed(5)
    U, S, V = lib.pca_lowrank(a)
    U2, S2, V2 = lib.pca_lowrank(a, q=5, center=False, niter=3)
    (U[:, 0].sum() + S.sum() + (V * V.detach()).sum() + V2[0].sum() + S2.sum()).backward()
    return _flat(U, S, V, U2, S2, V2, a.grad)


def lowrank_wide(lib):
    """Where the signs differ: what does not depend on them (the approximation, S, the gradient
    of a sign-blind loss)."""
    a = _data(lib, "float64")
    lib.manual_seed(7)
    U, S, V = lib.svd_lowrank(a, q=3)  # (B is 3 x 8: the LQ path)
    approx = (U * S) @ V.T
    (approx * a.detach()).sum().backward()
    return _flat(approx, S, a.grad)


CASES = {"lu_factor_ex": lu_factor_ex, "lu_unpack_grads": lu_unpack_grads, "lu_unpack_rect": lu_unpack_rect,
         "lu_solve_grads": lu_solve_grads, "lu_solve_f32": lu_solve_f32, "svd_lowrank": svd_lowrank,
         "svd_lowrank_f32": lambda lib: svd_lowrank(lib, "float32"), "pca_lowrank": pca_lowrank,
         "pca_lowrank_f32": lambda lib: pca_lowrank(lib, "float32"), "lowrank_wide": lowrank_wide}
TOLERANCE = {"svd_lowrank": 1e-12, "svd_lowrank_f32": 2e-4, "pca_lowrank": 1e-12, "pca_lowrank_f32": 2e-4,
             "lowrank_wide": 1e-12, "lu_factor_ex": 1e-14, "lu_unpack_grads": 1e-13, "lu_solve_grads": 1e-13, "lu_solve_f32": 2e-6}


def outcomes(torch) -> dict:
    """PyTorch's value of each case, as tests/fixtures/tutorial_names/cases.json holds them."""
    assert torch.__version__.startswith("2.13"), torch.__version__
    return {name: {"dtype": str(a.dtype), "values": a.tolist()} for name, a in ((n, f(torch)) for n, f in CASES.items())}
