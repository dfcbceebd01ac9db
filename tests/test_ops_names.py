"""The top-level names of funcgrad/_ops/more2.py, more3.py, linalg2.py, poisson.py against PyTorch 2.13: the composites (values, dtype,
``grad_fn`` name, float64 gradient, through tests/opinfo's ``run``/``compare``), the errors (type and
message), ``finfo``/``iinfo``/``typename``/``can_cast``, and the new methods and operators."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import funcgrad

from .opinfo import Py, Sample, View, compare, ints, rand, run

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.torch

_X = rand(3, 4)
_V = rand(4, seed=1)
_NANS = np.array([[1.0, np.nan, 2.0, 3.0], [np.nan, np.nan, -1.0, 0.5], [0.0, 1.0, 1.0, -2.0]])

SAMPLES = [
    Sample("ravel", lambda lib, x: lib.ravel(x), [View(_X)], id="T"),
    Sample("ravel", lambda lib, x: x.ravel(), [_X], id="method"),
    Sample("adjoint", lambda lib, x: x.adjoint(), [rand(2, 3, 4)]),
    Sample("adjoint", lambda lib, x: lib.adjoint(x), [_X], id="fn"),
    Sample("detach", lambda lib, x: lib.detach(x), [_X]),
    Sample("diagflat", lambda lib, x: lib.diagflat(x), [_X]),
    Sample("diagflat", lambda lib, x: x.diagflat(-2), [_V], id="offset"),
    Sample("diagflat", lambda lib, x: lib.diagflat(x), [np.array(2.0)], id="0d"),
    Sample("block_diag", lambda lib, x, y: lib.block_diag(x, y), [ints(2, 2), _V], id="promote"),
    Sample("block_diag", lambda lib: lib.block_diag(), [], id="none"),
    Sample("block_diag", lambda lib, x: lib.block_diag(x), [rand(2, 2, 2)], id="3d"),
    Sample("cartesian_prod", lambda lib, x, y, z: lib.cartesian_prod(x, y, z), [_V, rand(2, seed=3), rand(3, seed=4)]),
    Sample("cartesian_prod", lambda lib, x: lib.cartesian_prod(x), [_V], id="one"),
    Sample("cartesian_prod", lambda lib, x: lib.cartesian_prod(x, x), [_X], id="2d"),
    Sample("combinations", lambda lib, x: lib.combinations(x), [_V]),
    Sample("combinations", lambda lib, x: lib.combinations(x, 3, with_replacement=True), [_V], id="repl"),
    Sample("combinations", lambda lib, x: lib.combinations(x, 1), [_V], id="r1"),
    Sample("combinations", lambda lib, x: lib.combinations(x, 5), [_V], id="too_many"),
    Sample("combinations", lambda lib, x: lib.combinations(x, 0), [_V], id="r0"),
    Sample("combinations", lambda lib, x: lib.combinations(x), [ints(4)], id="int"),
    Sample("isin", lambda lib, x: lib.isin(x, 2), [ints(3, 4)], id="scalar_test"),
    Sample("isin", lambda lib, x: lib.isin(1, x), [ints(3, 4)], id="scalar_elem"),
    Sample("renorm", lambda lib, x: lib.renorm(x, 2, 0, 1), [_V], id="1d"),
    Sample("renorm", lambda lib, x: lib.renorm(x, 0, 0, 1), [_X], id="p0"),
    Sample("renorm", lambda lib, x: lib.renorm(x, float("inf"), -1, 0.5), [_X], id="inf"),
    Sample("renorm", lambda lib, x: lib.renorm(x, 2, 0, 1), [ints(3, 4)], id="int"),
    Sample("fmax", lambda lib, x: lib.fmax(x, 2.0), [_X], id="scalar"),
    Sample("nextafter", lambda lib, x, y: lib.nextafter(x, y), [_X, _NANS], id="grad"),
    Sample("nextafter", lambda lib, x, y: lib.nextafter(x, y), [ints(3), ints(3)], id="int"),
    Sample("shift", lambda lib, x: x << 1.5, [ints(3)], id="float"),
    Sample("shift", lambda lib, x: 3 >> x, [ints(3, high=3, low=0)], id="rshift_r"),
    Sample("shift", lambda lib, x: lib.bitwise_left_shift(x, x), [np.array([True, False])], id="bool"),
    Sample("cov", lambda lib, x: lib.cov(x), [_X]),
    Sample("cov", lambda lib, x: x.cov(correction=0), [_V], id="1d"),
    Sample("cov", lambda lib, x: lib.cov(x), [ints(2, 5)], id="int"),
    Sample("cov", lambda lib, x, f, a: lib.cov(x, fweights=f, aweights=a), [_X, np.array([1, 2, 0, 3]),
           rand(4, low=0.1, high=1.0)], id="weights"),
    Sample("cov", lambda lib, x, a: lib.cov(x, correction=2, aweights=a), [_X, rand(4, low=0.1, high=1.0)],
           id="aweights"),
    Sample("cov", lambda lib, x: lib.cov(x), [rand(2, 2, 2)], id="3d"),
    Sample("cov", lambda lib, x: lib.cov(x), [np.array([[True, False]])], id="bool"),
    Sample("corrcoef", lambda lib, x: lib.corrcoef(x), [_X]),
    Sample("corrcoef", lambda lib, x: x.corrcoef(), [_V], id="1d"),
    Sample("corrcoef", lambda lib, x: lib.corrcoef(x), [ints(3, 5)], id="int"),
    Sample("quantile", lambda lib, x: lib.quantile(x, 0.4, dim=0, interpolation="nearest"), [_X], id="nearest"),
    Sample("quantile", lambda lib, x: lib.quantile(x, 0.5, interpolation="lower"), [_X], id="lower"),
    Sample("quantile", lambda lib, x, q: lib.quantile(x, q, 1, True, interpolation="higher"), [_X, np.array([0.1, 0.9])],
           id="higher"),
    Sample("quantile", lambda lib, x: lib.quantile(x, 0.7, dim=1), [_NANS], id="nan"),
    Sample("quantile", lambda lib, x: lib.nanquantile(x, 0.2), [_NANS], id="nanq_flat"),
    Sample("quantile", lambda lib, x: x.nanquantile(0.5, dim=-1, keepdim=True), [np.full((2, 3), np.nan)], id="allnan"),
    Sample("quantile", lambda lib, x: lib.quantile(x, 1.5), [_X], id="q_range"),
    Sample("quantile", lambda lib, x, q: lib.quantile(x, q), [_X, np.array([0.5, 2.0])], id="q_tensor_range"),
    Sample("quantile", lambda lib, x: lib.quantile(x, 0.5), [ints(3)], id="int"),
    Sample("quantile", lambda lib, x: lib.quantile(x, 0.5, interpolation="cubic"), [_X], id="mode"),
    Sample("quantile", lambda lib, x: lib.quantile(x, 0.5), [np.zeros(0)], id="empty"),
    Sample("histogram", lambda lib, x: lib.histogram(x, 3), [_X]),
    Sample("histogram", lambda lib, x: x.histogram(4, range=(-1.0, 1.0), density=True), [_X], id="density"),
    Sample("histogram", lambda lib, x, w: lib.histogram(x, 5, weight=w), [_X, rand(3, 4, seed=5)], id="weight"),
    Sample("histogram", lambda lib, x, b: lib.histogram(x, b), [_X, np.array([-1.0, 0.0, 0.3, 2.0])], id="edges"),
    Sample("histogram", lambda lib, x: lib.histogram(x, 2), [np.array([1.0, 1.0])], id="flat"),
    Sample("histogram", lambda lib, x: lib.histogram(x, 2), [ints(4)], id="int"),
    Sample("histogram", lambda lib, x: lib.histogram(x, 2), [rand(3, 4, dtype=np.float32)], id="f32"),
    Sample("gradient", lambda lib, x: lib.gradient(x), [_X]),
    Sample("gradient", lambda lib, x: lib.gradient(x, spacing=0.5, dim=1, edge_order=2), [_X], id="edge2"),
    Sample("gradient", lambda lib, x: lib.gradient(x, spacing=[2.0, 3.0]), [_X], id="spacings"),
    Sample("gradient", lambda lib, x, c: lib.gradient(x, spacing=(c,), dim=1), [_X, np.array([0.0, 0.5, 2.0, 2.5])],
           id="coords"),
    Sample("gradient", lambda lib, x: lib.gradient(x), [ints(3, 4)], id="int"),
    Sample("gradient", lambda lib, x: lib.gradient(x, edge_order=2), [rand(2, 4)], id="small"),
    Sample("cumulative_trapezoid", lambda lib, y: lib.cumulative_trapezoid(y), [_X]),
    Sample("cumulative_trapezoid", lambda lib, y: lib.cumulative_trapezoid(y, dx=0.5, dim=0), [_X], id="dx"),
    Sample("cumulative_trapezoid", lambda lib, y, x: lib.cumulative_trapezoid(y, x), [_X, _V], id="x"),
    Sample("cumulative_trapezoid", lambda lib, y, x: lib.cumulative_trapezoid(y, x, dim=0), [_X, rand(3, 4, seed=2)],
           id="x2d"),
    # PyTorch's own vander backward raises (its in-place cumprod_ on a view bumps the version of a
    # tensor it saved); funcgrad's gradient is checked against the powers' derivative below
    Sample("vander", lambda lib, x: lib.vander(x), [_V], grad_check=False),
    Sample("vander", lambda lib, x: lib.vander(x, 3, increasing=True), [_V], id="increasing", grad_check=False),
    Sample("vander", lambda lib, x: lib.vander(x, 0), [_V], id="N0", grad_check=False),
    Sample("vander", lambda lib, x: lib.vander(x), [ints(3).astype(np.int32)], id="int32"),
    Sample("vander", lambda lib, x: lib.vander(x), [np.array([0.0, 1.0, 2.0])], id="zero", grad_check=False),
    Sample("chain_matmul", lambda lib, a, b, c: lib.chain_matmul(a, b, c), [_X, rand(4, 2), rand(2, 5)]),
    Sample("chain_matmul", lambda lib, a: lib.chain_matmul(a), [_X], id="one"),
    Sample("chain_matmul", lambda lib, a: lib.chain_matmul(a, _V_T(lib)), [_X], id="1d"),
]

_A = rand(3, 3, seed=11) + 3 * np.eye(3)
_SPD = _A @ _A.T
SAMPLES += [
    Sample("inv_ex", lambda lib, a: lib.linalg.inv_ex(a), [_A]),
    Sample("inv_ex", lambda lib, a: lib.linalg.inv_ex(a).info, [np.array([[[1.0, 2.0], [2.0, 4.0]], [[1.0, 0], [0, 1]]])],
           id="singular_info"),
    Sample("cholesky_ex", lambda lib, a: lib.linalg.cholesky_ex(a), [_SPD], grad=()),
    Sample("cholesky_ex", lambda lib, a: lib.linalg.cholesky_ex(a @ a.mT, upper=True), [_A], id="upper"),
    Sample("cholesky_ex", lambda lib, a: lib.linalg.cholesky_ex(a).info, [np.array([[1.0, 2.0], [2.0, 1.0]])],
           id="not_pd_info"),
    Sample("cond", lambda lib, a: lib.linalg.cond(a), [_A]),
    Sample("cond", lambda lib, a: lib.linalg.cond(a, -2), [rand(2, 4, 3)], id="m2_batch_rect"),
    # PyTorch's own backward of cond for p not ±2 raises (it masks inv_ex's saved output in place);
    # funcgrad's gradient is compared with torch's of the same formula out of place below
    Sample("cond", lambda lib, a: lib.linalg.cond(a, 1), [_A], id="p1", grad_check=False),
    Sample("cond", lambda lib, a: lib.linalg.cond(a, "fro"), [_A], id="fro", grad_check=False),
    Sample("cond", lambda lib, a: lib.linalg.cond(a, -float("inf")), [_A], id="minf", grad_check=False),
    Sample("cond", lambda lib, a: lib.linalg.cond(a, 1), [np.zeros((2, 2))], id="singular", grad_check=False),
    Sample("linalg_vander", lambda lib, x: lib.linalg.vander(x), [_V]),
    Sample("linalg_vander", lambda lib, x: lib.linalg.vander(x, N=3), [rand(2, 4)], id="batch_N"),
    Sample("linalg_vander", lambda lib, x: lib.linalg.vander(x), [ints(3)], id="int"),
    Sample("linalg_vander", lambda lib, x: lib.linalg.vander(x, N=2), [np.array(1.5)], id="0d"),
    Sample("tensorinv", lambda lib, a: lib.linalg.tensorinv(a, ind=2), [rand(4, 6, 8, 3, seed=2)]),
    Sample("tensorsolve", lambda lib, a, b: lib.linalg.tensorsolve(a, b), [rand(2, 3, 6, seed=4), rand(2, 3, seed=5)]),
    Sample("tensorsolve", lambda lib, a, b: lib.linalg.tensorsolve(a, b, dims=(0,)), [rand(6, 2, 3, seed=4),
           rand(2, 3, seed=5)], id="dims"),
    Sample("lstsq", lambda lib, a, b: lib.linalg.lstsq(a, b), [rand(5, 3, seed=6), rand(5, 2, seed=7)]),
    Sample("lstsq", lambda lib, a, b: lib.linalg.lstsq(a, b), [rand(2, 4, 4, seed=6) + 2 * np.eye(4), rand(4, 1, seed=7)],
           id="batch_broadcast"),
    Sample("lstsq", lambda lib, a, b: lib.linalg.lstsq(a, b).rank, [np.array([[1.0, 2.0], [2.0, 4.0], [0.0, 0.0]]),
           rand(3, 1)], id="rank_deficient"),
    Sample("lu", lambda lib, a: lib.linalg.lu(a), [rand(4, 4, seed=8)]),
    Sample("lu", lambda lib, a: lib.linalg.lu_factor(a), [rand(2, 4, 4, seed=9)], id="factor_batch"),
    Sample("lu_factor", lambda lib, a: lib.linalg.lu_factor_ex(a), [rand(2, 4, 4, seed=9)], id="ex_batch"),
    Sample("lu_factor", lambda lib, a: lib.linalg.lu_factor_ex(a), [rand(3, 5, seed=9)], id="ex_wide"),
    Sample("lu_factor", lambda lib, a: lib.linalg.lu_factor_ex(a), [rand(5, 3, seed=9)], id="ex_tall"),
    Sample("lu_factor", lambda lib, a: lib.linalg.lu_factor_ex(a), [np.array([[[1.0, 2.0], [2.0, 4.0]], np.eye(2),
           [[0.0, 0.0], [0.0, 1.0]]])], id="ex_singular_info", grad_check=False),
    Sample("lu_factor", lambda lib, a: lib.linalg.lu_factor_ex(a), [np.zeros((0, 0))], id="ex_empty"),
    Sample("lu_factor", lambda lib, a: lib.lu(a), [rand(4, 4, seed=9, dtype=np.float32)], id="legacy_f32"),
    Sample("lu_factor", lambda lib, a: lib.lu(a, get_infos=True), [rand(2, 3, 3, seed=9)], id="legacy_infos"),
    Sample("lu_unpack", lambda lib, a: lib.lu_unpack(*lib.linalg.lu_factor(a)), [rand(2, 4, 4, seed=11)]),
    Sample("lu_unpack", lambda lib, a: lib.lu_unpack(*lib.linalg.lu_factor(a)), [rand(5, 3, seed=11)], id="tall"),
    Sample("lu_unpack", lambda lib, a: lib.lu_unpack(*lib.linalg.lu_factor(a)), [rand(3, 5, seed=11)], id="wide"),
    # (PyTorch's backward through the empty L and U raises "triu: input tensor must have at least 2
    # dimensions"; funcgrad's gives zeros)
    Sample("lu_unpack", lambda lib, a: lib.lu_unpack(*lib.linalg.lu_factor(a), unpack_data=False),
           [rand(3, 3, seed=11)], id="no_data", grad_check=False),
    Sample("lu_unpack", lambda lib, a: lib.lu_unpack(*lib.linalg.lu_factor(a), unpack_pivots=False),
           [rand(3, 3, seed=11)], id="no_pivots"),
    Sample("lu_unpack", lambda lib, a, p: lib.lu_unpack(a, p.int()), [rand(3, 3, seed=11), np.array([3, 3, 3])],
           id="given_pivots"),
    Sample("lu_solve", lambda lib, a, b: lib.linalg.lu_solve(*lib.linalg.lu_factor(a), b), [rand(4, 4, seed=12),
           rand(4, 2, seed=13)]),
    Sample("lu_solve", lambda lib, a, b: lib.linalg.lu_solve(*lib.linalg.lu_factor(a), b, adjoint=True),
           [rand(2, 4, 4, seed=12), rand(3, 1, 4, 2, seed=13)], id="adjoint_broadcast"),
    Sample("lu_solve", lambda lib, a, b: lib.linalg.lu_solve(*lib.linalg.lu_factor(a), b, left=False),
           [rand(4, 4, seed=12), rand(2, 3, 4, seed=13)], id="right"),
    Sample("lu_solve", lambda lib, a, b: lib.linalg.lu_solve(*lib.linalg.lu_factor(a), b, left=False, adjoint=True),
           [rand(4, 4, seed=12, dtype=np.float32), rand(2, 4, seed=13, dtype=np.float32)], id="right_adjoint_f32"),
    Sample("lu_solve", lambda lib, a, b: lib.lu_solve(b, *lib.linalg.lu_factor(a)), [rand(3, 3, seed=12),
           rand(3, 2, seed=13)], id="legacy"),
    Sample("lu_solve", lambda lib, a, b: lib.linalg.lu_solve(a, lib.tensor([1, 2, 3]).int(), b),
           [rand(3, 3, seed=12), rand(3, 2, seed=13)], id="given_pivots"),
    Sample("matrix_exp", lambda lib, a: lib.linalg.matrix_exp(a), [rand(4, 4, seed=10)]),
    Sample("matrix_exp", lambda lib, a: lib.linalg.matrix_exp(a), [rand(3, 3, seed=10, dtype=np.float32)], id="f32"),
    Sample("solve_triangular", lambda lib, a, b: lib.linalg.solve_triangular(a, b, upper=False), [_A, rand(2, 3, 2)],
           id="broadcast"),
    Sample("householder_product", lambda lib, a, t: lib.linalg.householder_product(a, t), [rand(2, 5, 3), rand(2, 3)],
           id="batch"),
    Sample("householder_product", lambda lib, a, t: lib.linalg.householder_product(a, t),
           [rand(4, 2, dtype=np.float32), rand(2, dtype=np.float32)], id="f32"),
]

ERRORS_LINALG = {
    "matrix_exp_rect": lambda lib: lib.linalg.matrix_exp(lib.ones(2, 3)),
    "matrix_exp_int": lambda lib: lib.linalg.matrix_exp(lib.ones(2, 2, dtype=lib.long)),
    "solve_tri_shapes": lambda lib: lib.linalg.solve_triangular(lib.ones(2, 2), lib.ones(3, 1), upper=True),
    "solve_tri_1d": lambda lib: lib.linalg.solve_triangular(lib.ones(2, 2), lib.ones(2), upper=True),
    "cond_rect_p1": lambda lib: lib.linalg.cond(lib.ones(2, 3), 1),
    "cond_p3": lambda lib: lib.linalg.cond(lib.ones(2, 2), 3),
    "cond_bad": lambda lib: lib.linalg.cond(lib.ones(2, 2), "bad"),
    "cond_1d": lambda lib: lib.linalg.cond(lib.ones(3)),
    "vander_bool": lambda lib: lib.linalg.vander(lib.tensor([True])),
    "vander_N1": lambda lib: lib.linalg.vander(lib.ones(3), N=1),
    "tensorinv_shape": lambda lib: lib.linalg.tensorinv(lib.ones(2, 3), 1),
    "tensorinv_ind": lambda lib: lib.linalg.tensorinv(lib.ones(2, 2), 0),
    "tensorsolve_shape": lambda lib: lib.linalg.tensorsolve(lib.ones(2, 3, 4), lib.ones(2, 3)),
    "lu_factor_1d": lambda lib: lib.linalg.lu_factor(lib.ones(3)),
    "lu_1d": lambda lib: lib.linalg.lu(lib.ones(3)),
    "lu_factor_int": lambda lib: lib.linalg.lu_factor(lib.ones(2, 2, dtype=lib.long)),
    "lu_factor_singular": lambda lib: lib.linalg.lu_factor(lib.tensor([[1.0, 2.0], [2.0, 4.0]])),
    "lu_factor_singular_batch": lambda lib: lib.linalg.lu_factor(lib.stack([lib.eye(2), lib.zeros(2, 2)])),
    "lu_factor_no_pivot": lambda lib: lib.linalg.lu_factor(lib.ones(2, 2), pivot=False),
    "lu_factor_ex_1d": lambda lib: lib.linalg.lu_factor_ex(lib.ones(3)),
    "lu_factor_ex_int": lambda lib: lib.linalg.lu_factor_ex(lib.ones(2, 2, dtype=lib.long)),
    "lu_factor_ex_check": lambda lib: lib.linalg.lu_factor_ex(lib.zeros(2, 2), check_errors=True),
    "lu_legacy_1d": lambda lib: lib.lu(lib.ones(3)),
    "lu_legacy_no_pivot": lambda lib: lib.lu(lib.ones(2, 2), pivot=False),
    "lu_unpack_1d": lambda lib: lib.lu_unpack(lib.ones(3), lib.ones(3, dtype=lib.int32)),
    "lu_unpack_long_pivots": lambda lib: lib.lu_unpack(lib.eye(3), lib.ones(3, dtype=lib.long)),
    "lu_unpack_bad_pivots": lambda lib: lib.lu_unpack(lib.eye(3), lib.tensor([0, 2, 3], dtype=lib.int32)),
    "lu_unpack_big_pivots": lambda lib: lib.lu_unpack(lib.eye(3), lib.tensor([1, 4, 3], dtype=lib.int32)),
    "lu_solve_shapes": lambda lib: lib.linalg.lu_solve(lib.eye(3), lib.ones(3, dtype=lib.int32), lib.ones(2, 1)),
    "lu_solve_shapes_right": lambda lib: lib.linalg.lu_solve(lib.eye(3), lib.ones(3, dtype=lib.int32), lib.ones(1, 2),
                                                             left=False),
    "lu_solve_B_1d": lambda lib: lib.linalg.lu_solve(lib.eye(3), lib.ones(3, dtype=lib.int32), lib.ones(3)),
    "lu_solve_LU_1d": lambda lib: lib.linalg.lu_solve(lib.ones(3), lib.ones(3, dtype=lib.int32), lib.ones(3, 1)),
    "lu_solve_rect": lambda lib: lib.linalg.lu_solve(lib.ones(2, 3), lib.ones(2, dtype=lib.int32), lib.ones(2, 1)),
    "lu_solve_long_pivots": lambda lib: lib.linalg.lu_solve(lib.eye(3), lib.ones(3, dtype=lib.long), lib.ones(3, 1)),
    "lu_solve_pivots_shape": lambda lib: lib.linalg.lu_solve(lib.eye(3), lib.ones(2, 3, dtype=lib.int32),
                                                             lib.ones(3, 1)),
    "lu_solve_dtypes": lambda lib: lib.linalg.lu_solve(lib.eye(3), lib.ones(3, dtype=lib.int32),
                                                       lib.ones(3, 1, dtype=lib.float64)),
    "lu_solve_int": lambda lib: lib.linalg.lu_solve(lib.eye(3, dtype=lib.long), lib.ones(3, dtype=lib.int32),
                                                    lib.ones(3, 1, dtype=lib.long)),
    "lu_solve_legacy_shapes": lambda lib: lib.lu_solve(lib.ones(2, 1), lib.eye(3), lib.ones(3, dtype=lib.int32)),
    "lstsq_1d": lambda lib: lib.linalg.lstsq(lib.ones(3), lib.ones(3)),
    "lstsq_shapes": lambda lib: lib.linalg.lstsq(lib.ones(3, 2), lib.ones(4, 1)),
    "householder_1d": lambda lib: lib.linalg.householder_product(lib.ones(3), lib.ones(1)),
    "householder_wide": lambda lib: lib.linalg.householder_product(lib.ones(2, 3), lib.ones(1)),
    "householder_tau": lambda lib: lib.linalg.householder_product(lib.ones(3, 2), lib.ones(3)),
    "householder_ndim": lambda lib: lib.linalg.householder_product(lib.ones(3, 2), lib.ones(1, 1)),
    "householder_dtype": lambda lib: lib.linalg.householder_product(lib.ones(3, 2), lib.ones(1, dtype=lib.float64)),
    "householder_int": lambda lib: lib.linalg.householder_product(lib.ones(3, 2, dtype=lib.long),
                                                                  lib.ones(1, dtype=lib.long)),
    "householder_batch": lambda lib: lib.linalg.householder_product(lib.ones(2, 3, 2), lib.ones(3, 1)),
    "inv_ex_rect": lambda lib: lib.linalg.inv_ex(lib.ones(2, 3)),
    "cholesky_ex_rect": lambda lib: lib.linalg.cholesky_ex(lib.ones(2, 3)),
    "inv_ex_check": lambda lib: lib.linalg.inv_ex(lib.tensor([[1.0, 2.0], [2.0, 4.0]]), check_errors=True),
    "cholesky_ex_check": lambda lib: lib.linalg.cholesky_ex(lib.tensor([[1.0, 2.0], [2.0, 1.0]]), check_errors=True),
}


def _V_T(lib):
    return lib.ones(4)


@pytest.mark.parametrize("s", SAMPLES, ids=[s.key for s in SAMPLES])
def test_matches_torch(s):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        funcgrad.set_default_dtype(funcgrad.float32)
        bad = compare(s, run(funcgrad, s), run(torch, s))
    assert not bad, bad


def _msg(f, lib):
    try:
        f(lib)
    except Exception as e:  # noqa: BLE001
        # (torch.linalg.LinAlgError is torch._C._LinAlgError)
        return type(e).__name__.lstrip("_"), str(e).replace("torch.", "funcgrad.")
    return None


ERRORS = {
    "is_nonzero_empty": lambda lib: lib.is_nonzero(lib.tensor([])),
    "is_nonzero_many": lambda lib: lib.is_nonzero(lib.tensor([1, 2])),
    "is_same_size_int": lambda lib: lib.is_same_size(lib.tensor([1]), 3),
    "adjoint_1d": lambda lib: lib.tensor([1.0, 2.0]).adjoint(),
    "renorm_1d": lambda lib: lib.renorm(lib.ones(3), 2, 0, 1),
    "renorm_p": lambda lib: lib.renorm(lib.ones(2, 3), -1, 0, 1),
    "renorm_maxnorm": lambda lib: lib.renorm(lib.ones(2, 3), 2, 0, -1),
    "block_diag_3d": lambda lib: lib.block_diag(lib.ones(2, 2, 2)),
    "cartesian_2d": lambda lib: lib.cartesian_prod(lib.ones(2, 2), lib.ones(2)),
    "combinations_2d": lambda lib: lib.combinations(lib.ones(2, 2)),
    "cov_3d": lambda lib: lib.cov(lib.ones(2, 2, 2)),
    "cov_bool": lambda lib: lib.cov(lib.tensor([[True, False]])),
    "cov_fweights_float": lambda lib: lib.cov(lib.ones(2, 3), fweights=lib.ones(3)),
    "cov_aweights_int": lambda lib: lib.cov(lib.ones(2, 3), aweights=lib.tensor([1, 2, 3])),
    "cov_weights_numel": lambda lib: lib.cov(lib.ones(2, 3), fweights=lib.tensor([1, 2])),
    "cov_weights_negative": lambda lib: lib.cov(lib.ones(2, 3), fweights=lib.tensor([1, -2, 1])),
    "corrcoef_3d": lambda lib: lib.corrcoef(lib.ones(2, 2, 2)),
    "quantile_q": lambda lib: lib.quantile(lib.ones(3), 1.5),
    "quantile_q_tensor": lambda lib: lib.quantile(lib.ones(3), lib.tensor([0.5, 2.0])),
    "quantile_int": lambda lib: lib.quantile(lib.tensor([1, 2]), 0.5),
    "quantile_q_dtype": lambda lib: lib.quantile(lib.ones(3), lib.tensor([0.5], dtype=lib.float64)),
    "quantile_q_2d": lambda lib: lib.quantile(lib.ones(3), lib.ones(1, 1) / 2),
    "quantile_empty": lambda lib: lib.quantile(lib.ones(0), 0.5),
    "quantile_mode": lambda lib: lib.quantile(lib.ones(3), 0.5, interpolation="cubic"),
    "histogram_int": lambda lib: lib.histogram(lib.tensor([1, 2]), 2),
    "histogram_bins": lambda lib: lib.histogram(lib.ones(3), 0),
    "histogram_range": lambda lib: lib.histogram(lib.ones(3), 2, range=(1.0, 0.0)),
    "histogram_edges_dtype": lambda lib: lib.histogram(lib.ones(3), lib.tensor([0.0, 1.0], dtype=lib.float64)),
    "gradient_small": lambda lib: lib.gradient(lib.ones(2), edge_order=2),
    "gradient_spacing": lambda lib: lib.gradient(lib.ones(2, 3), spacing=[1.0]),
    "vander_2d": lambda lib: lib.vander(lib.ones(2, 2)),
    "vander_N": lambda lib: lib.vander(lib.ones(2), -1),
    "fmax_scalar": lambda lib: lib.fmax(lib.ones(2), 2.0),
    "nextafter_int": lambda lib: lib.nextafter(lib.tensor([1]), lib.tensor([2])),
    "lshift_float": lambda lib: lib.ones(2) << 1,
    "chain_matmul_1d": lambda lib: lib.chain_matmul(lib.ones(2, 2), lib.ones(2)),
    "finfo_int": lambda lib: lib.finfo(lib.int64),
    "iinfo_float": lambda lib: lib.iinfo(lib.float32),
    "iinfo_bool": lambda lib: lib.iinfo(lib.bool),
}


@pytest.mark.parametrize("name", list(ERRORS) + list(ERRORS_LINALG))
def test_errors_match_torch(name):
    f = ERRORS.get(name) or ERRORS_LINALG[name]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        mine, theirs = _msg(f, funcgrad), _msg(f, torch)
    assert theirs is not None
    assert mine == theirs


@pytest.mark.parametrize("d", ["float16", "bfloat16", "float32", "float64", "complex64", "complex128"])
def test_finfo(d):
    a, b = funcgrad.finfo(getattr(funcgrad, d)), torch.finfo(getattr(torch, d))
    assert repr(a) == repr(b)
    for k in ("bits", "eps", "max", "min", "tiny", "smallest_normal", "resolution", "dtype"):
        assert getattr(a, k) == getattr(b, k) and type(getattr(a, k)) is type(getattr(b, k)), k


@pytest.mark.parametrize("d", ["uint8", "int8", "int16", "int32", "int64"])
def test_iinfo(d):
    a, b = funcgrad.iinfo(getattr(funcgrad, d)), torch.iinfo(getattr(torch, d))
    assert repr(a) == repr(b)
    for k in ("bits", "max", "min", "dtype"):
        assert getattr(a, k) == getattr(b, k) and type(getattr(a, k)) is type(getattr(b, k)), k


def test_finfo_default_follows_default_dtype():
    assert repr(funcgrad.finfo()) == repr(torch.finfo())
    funcgrad.set_default_dtype(funcgrad.float64)
    try:
        assert funcgrad.finfo().dtype == "float64"
    finally:
        funcgrad.set_default_dtype(funcgrad.float32)


_DT = ["bool", "uint8", "int8", "int16", "int32", "int64", "float16", "bfloat16", "float32", "float64",
       "complex64", "complex128"]


def test_can_cast_matches_torch():
    for a in _DT:
        for b in _DT:
            assert funcgrad.can_cast(getattr(funcgrad, a), getattr(funcgrad, b)) == \
                torch.can_cast(getattr(torch, a), getattr(torch, b)), (a, b)


def test_typename_and_predicates():
    for mk in (lambda lib: lib.zeros(2), lambda lib: lib.tensor([1]), lambda lib: lib.zeros(2, dtype=lib.float64),
               lambda lib: 1, lambda lib: "s", lambda lib: np.zeros(1)):
        assert funcgrad.typename(mk(funcgrad)) == torch.typename(mk(torch))
    assert funcgrad.typename(funcgrad.Tensor) == "funcgrad.Tensor"  # (torch.Tensor)
    for lib in (funcgrad, torch):
        x = lib.tensor([[1.0, 2.0]])
        assert lib.is_nonzero(lib.tensor([0.5])) and not lib.is_nonzero(lib.tensor(0))
        assert x.is_same_size(lib.zeros(1, 2)) and not lib.is_same_size(x, lib.zeros(2, 1))
        assert not lib.is_complex(x)


def test_shift_operators_and_inplace_match_torch():
    for f in (lambda lib, x: x << 2, lambda lib, x: x >> 1, lambda lib, x: 5 << x, lambda lib, x: 100 >> x,
              lambda lib, x: x.bitwise_left_shift_(3), lambda lib, x: x.bitwise_right_shift_(1),
              lambda lib, x: x.__ilshift__(2), lambda lib, x: x.__irshift__(1),
              lambda lib, x: lib.bitwise_left_shift(x, lib.tensor([1, 70, -1, 63, 2]))):
        a = np.array([-7, 0, 1, 5, 3], np.int64)
        x, y = funcgrad.tensor(a), torch.tensor(a)
        r, s = f(funcgrad, x), f(torch, y)
        np.testing.assert_array_equal(np.asarray(r._value), s.numpy())
        np.testing.assert_array_equal(np.asarray(x._value), y.numpy())  # in place where torch is


def test_nextafter_inplace_matches_torch():
    a, b = np.array([1.0, -2.0, 0.0]), np.array([2.0, -3.0, -1.0])
    x, y = funcgrad.tensor(a), torch.tensor(a)
    x.nextafter_(funcgrad.tensor(b))
    y.nextafter_(torch.tensor(b))
    np.testing.assert_array_equal(np.asarray(x._value), y.numpy())


def test_renorm_inplace_and_ravel_view():
    a = rand(3, 4)
    x, y = funcgrad.tensor(a), torch.tensor(a)
    x.renorm_(2, 1, 0.5)
    y.renorm_(2, 1, 0.5)
    np.testing.assert_allclose(np.asarray(x._value), y.numpy(), rtol=1e-12)
    r = x.ravel()
    r[0] = 7.0  # a view of a contiguous tensor, as PyTorch's
    assert float(x[0, 0]) == 7.0


def test_chain_matmul_warns_once_like_torch():
    a = funcgrad.ones(2, 2)
    from funcgrad._ops import more3
    more3._warned[0] = False
    with pytest.warns(UserWarning, match="chain_matmul is deprecated"):
        funcgrad.chain_matmul(a, a)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        funcgrad.chain_matmul(a, a)


def test_adjoint_0d_warns():
    with pytest.warns(UserWarning, match=r"adjoint\(\) is deprecated on 0-D tensors"):
        r = funcgrad.tensor(3.0).adjoint()
    assert float(r) == 3.0


def test_empty_strided_shape_and_dtype():
    t = funcgrad.empty_strided((2, 3), (3, 1), dtype=funcgrad.float64)
    assert tuple(t.shape) == (2, 3) and t.dtype is funcgrad.float64
    msg = r"dimensionality of sizes \(2\) must match dimensionality of strides \(1\)"
    with pytest.raises(RuntimeError, match=msg):
        torch.empty_strided((2, 3), (1,))
    with pytest.raises(RuntimeError, match=msg):
        funcgrad.empty_strided((2, 3), (1,))


@pytest.mark.parametrize("increasing", [False, True])
def test_vander_gradient_is_the_powers_derivative(increasing):
    a = np.array([0.0, -1.5, 2.0, 0.5])
    x = funcgrad.tensor(a, requires_grad=True)
    v = funcgrad.vander(x, 4, increasing=increasing)
    cot = rand(4, 4, seed=7)
    (g,) = funcgrad.autograd.grad(v, x, funcgrad.tensor(cot))
    k = np.arange(4.0) if increasing else np.arange(3.0, -1.0, -1.0)
    want = (cot * k * np.where(k > 0, a[:, None] ** np.maximum(k - 1, 0), 0)).sum(1)
    np.testing.assert_allclose(np.asarray(g._value), want, rtol=1e-12)
    np.testing.assert_allclose(np.asarray(v._value), torch.vander(torch.tensor(a), 4, increasing).numpy())


@pytest.mark.parametrize("p", [1, "fro", "nuc", float("inf"), -1])
def test_cond_gradient_is_torchs_of_the_out_of_place_formula(p):
    a = rand(3, 3, seed=11) + 3 * np.eye(3)
    x, y = funcgrad.tensor(a, requires_grad=True), torch.tensor(a, requires_grad=True)
    (g,) = funcgrad.autograd.grad(funcgrad.linalg.cond(x, p), x)
    ref = torch.linalg.matrix_norm(y, p) * torch.linalg.matrix_norm(torch.linalg.inv(y), p)
    (h,) = torch.autograd.grad(ref, y)
    np.testing.assert_allclose(np.asarray(g._value), h.numpy(), rtol=1e-10)


_RATES = [np.array([0.5, 3.0, 12.0, 0.0, 100.0]), np.linspace(0.0, 60.0, 50).reshape(5, 10),
          np.array([1e-3, 9.99, 10.0, 10.01, 1e4, 0.2])]


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16"])
def test_poisson_draws_torchs_numbers(dtype):
    for seed, rates in enumerate(_RATES):
        funcgrad.manual_seed(seed)
        torch.manual_seed(seed)
        a = funcgrad.poisson(funcgrad.tensor(rates, dtype=getattr(funcgrad, dtype)))
        b = torch.poisson(torch.tensor(rates, dtype=getattr(torch, dtype)))
        assert str(a.dtype).split(".")[-1] == str(b.dtype).split(".")[-1]
        np.testing.assert_array_equal(np.asarray(a._value).astype(np.float64), b.numpy().astype(np.float64))
        # the generator's stream continues where PyTorch's does
        np.testing.assert_array_equal(np.asarray(funcgrad.rand(4)._value), torch.rand(4).numpy())
    g, h = funcgrad.Generator().manual_seed(3), torch.Generator().manual_seed(3)
    np.testing.assert_array_equal(np.asarray(funcgrad.poisson(funcgrad.full((6,), 4.0), generator=g)._value),
                                  torch.poisson(torch.full((6,), 4.0), generator=h).numpy())


def test_poisson_node_gradient_and_errors():
    x = funcgrad.tensor([1.0, 20.0], requires_grad=True)
    y = funcgrad.poisson(x)
    assert y.grad_fn.name() == "PoissonBackward0"
    (g,) = funcgrad.autograd.grad(y.sum(), x)
    assert np.array_equal(np.asarray(g._value), [0.0, 0.0])
    for mk in (lambda lib: lib.poisson(lib.tensor([-1.0])), lambda lib: lib.poisson(lib.tensor([1])),
               lambda lib: lib.poisson(lib.tensor([float("nan")]))):
        assert _msg(mk, funcgrad) == _msg(mk, torch)
