"""Spec rows for the ops of funcgrad/_ops/linalg2.py (matrix_exp, solve_triangular, lu_factor, lu, lu_unpack,
lu_solve, lstsq, reshape_alias); their composites vs PyTorch: tests/test_ops_names.py."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

import funcgrad as fg

from . import Spec

_rng = np.random.default_rng(3)
_A = _rng.standard_normal((3, 3)) + 3 * np.eye(3)  # well conditioned, no pivoting ties
_AB = _rng.standard_normal((2, 3, 3)) + 3 * np.eye(3)
_TALL = _rng.standard_normal((5, 3))


def _householder_ref(a, tau):
    m, n = a.shape
    q = jnp.eye(m)
    for i in range(tau.shape[0]):
        v = jnp.concatenate([jnp.zeros(i), jnp.ones(1), a[i + 1:, i]])
        q = q @ (jnp.eye(m) - tau[i] * jnp.outer(v, v))
    return q[:, :n]


def _lu_ref(a, part):
    p, l, u = jax.scipy.linalg.lu(a)
    return (p, l, u)[part]


SPECS = [
    Spec("matrix_exp", fg.linalg.matrix_exp, jax.scipy.linalg.expm, [_A * 0.3], grad_fn="LinalgMatrixExpBackward0"),
    Spec("matrix_exp", fg.linalg.matrix_exp, jax.scipy.linalg.expm, [_AB * 0.2], id="matrix_exp_batch"),
    Spec("solve_triangular", lambda a, b: fg.linalg.solve_triangular(a, b, upper=True),
         lambda a, b: jax.scipy.linalg.solve_triangular(jnp.triu(a), b, lower=False), [_A, (3, 2)],
         grad_fn="LinalgSolveTriangularBackward0"),
    Spec("solve_triangular", lambda a, b: fg.linalg.solve_triangular(a, b, upper=False, left=False),
         lambda a, b: jnp.swapaxes(jax.scipy.linalg.solve_triangular(jnp.tril(a).T, b.T, lower=False), 0, 1),
         [_A, (2, 3)], id="solve_triangular_right"),
    Spec("solve_triangular", lambda a, b: fg.linalg.solve_triangular(a, b, upper=False, unitriangular=True),
         lambda a, b: jax.scipy.linalg.solve_triangular(jnp.tril(a, -1) + jnp.eye(3), b, lower=True),
         [_AB, (3, 1)], id="solve_triangular_unit_batch"),
    Spec("lu_factor", lambda a: fg.linalg.lu_factor(a).LU, lambda a: jax.scipy.linalg.lu_factor(a)[0], [_A],
         grad_fn="LinalgLuFactorExBackward0"),
    Spec("lu", lambda a: fg.linalg.lu(a).L, lambda a: _lu_ref(a, 1), [_A], grad_fn="LinalgLuBackward0"),
    Spec("lu", lambda a: fg.linalg.lu(a).U, lambda a: _lu_ref(a, 2), [_AB[0]], id="lu_U"),
    Spec("lu_unpack", lambda a: fg.lu_unpack(*fg.linalg.lu_factor(a)).L, lambda a: _lu_ref(a, 1), [_A],
         grad_fn="LuUnpackBackward0"),
    Spec("lu_unpack", lambda a: fg.lu_unpack(*fg.linalg.lu_factor(a)).U, lambda a: _lu_ref(a, 2), [_TALL],
         id="lu_unpack_U_tall"),
    Spec("lu_solve", lambda a, b: fg.linalg.lu_solve(*fg.linalg.lu_factor(a), b), jnp.linalg.solve, [_A, (3, 2)],
         grad_fn="LinalgLuSolveBackward0"),
    Spec("lu_solve", lambda a, b: fg.linalg.lu_solve(*fg.linalg.lu_factor(a), b, adjoint=True),
         lambda a, b: jnp.linalg.solve(jnp.swapaxes(a, -1, -2), b), [_AB, (3, 2)], id="lu_solve_adjoint_batch"),
    Spec("lu_solve", lambda a, b: fg.linalg.lu_solve(*fg.linalg.lu_factor(a), b, left=False),
         lambda a, b: jnp.linalg.solve(a.T, b.T).T, [_A, (2, 3)], id="lu_solve_right"),
    Spec("lstsq", lambda a, b: fg.linalg.lstsq(a, b).solution, lambda a, b: jnp.linalg.lstsq(a, b)[0],
         [_TALL, (5, 2)], grad_fn="LinalgLstsqBackward0"),
    Spec("lstsq", lambda a, b: fg.linalg.lstsq(a, b).solution, lambda a, b: jnp.linalg.solve(a, b), [_A, (3,)],
         id="lstsq_vec"),
    Spec("reshape_alias", lambda a: fg.linalg.tensorinv(a, ind=1), lambda a: jnp.linalg.inv(a.reshape(3, 3))
         .reshape(3, 3), [_A], grad_fn="ReshapeAliasBackward0"),
    Spec("householder_product", fg.linalg.householder_product, _householder_ref, [(4, 3), (2,)],
         grad_fn="LinalgHouseholderProductBackward0"),
    Spec("householder_product", fg.linalg.householder_product, _householder_ref, [(3, 3), (3,)],
         id="householder_square"),
]
