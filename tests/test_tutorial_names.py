"""Names PyTorch tutorials reach (the LU family, the randomized low-rank SVD/PCA, swap_tensors,
the autograd graph utilities, the CUDA memory statistics, more saved attributes of nodes). Values
against recordings from PyTorch 2.13 (tests/fixtures/tutorial_names/make_fixtures.py, so the checks
run without torch); node names, warnings and errors against live PyTorch where it is installed (the
LU family's values, gradients and errors per call: tests/test_ops_names.py)."""

from __future__ import annotations

import json
import os
import warnings

import numpy as np
import pytest

import funcgrad

from ._tutorial_names_cases import CASES, TOLERANCE

with open(os.path.join(os.path.dirname(__file__), "fixtures", "tutorial_names", "cases.json")) as _f:
    RECORDED = json.load(_f)


def _want(name):
    return np.array(RECORDED[name]["values"], dtype=RECORDED[name]["dtype"])


@pytest.mark.parametrize("name", sorted(CASES))
def test_matches_recorded_torch(name):
    got, want = CASES[name](funcgrad), _want(name)
    assert got.dtype == want.dtype and got.shape == want.shape, (got.dtype, want.dtype, got.shape, want.shape)
    tol = TOLERANCE.get(name)
    if tol is None:
        np.testing.assert_array_equal(got, want)
    else:
        np.testing.assert_allclose(got, want, rtol=tol, atol=tol)


@pytest.mark.torch
@pytest.mark.parametrize("name", sorted(CASES))
def test_recording_is_current(name):
    torch = pytest.importorskip("torch")
    got, want = CASES[name](torch), _want(name)
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=4 * np.finfo(got.dtype).eps, atol=0)


# ================================ the LU family ===================================================
def _lu_story(lib):
    """What a user sees: result types, reprs of the nodes, the deprecation warnings (once)."""
    a = lib.tensor([[2.0, 1.0], [4.0, 3.0]], requires_grad=True)
    seen = []
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        r = lib.lu(a)
        lib.lu(a)
        info = lib.lu(a, get_infos=True)
        x = lib.lu_solve(lib.ones(2, 1), *r)
        lib.lu_solve(lib.ones(2, 1), *r)
    seen.append([str(m.message).split(" (Triggered internally")[0] for m in w])
    unpacked = lib.lu_unpack(*r)
    seen.append([type(r).__name__, type(info).__name__, type(lib.linalg.lu_factor_ex(a)).__name__,
                 type(unpacked).__name__, info.LU is info[0] and info.pivots is info[1] and info.info is info[2],
                 unpacked.P is unpacked[0] and unpacked.L is unpacked[1] and unpacked.U is unpacked[2]])
    seen.append([type(t.grad_fn).__name__ for t in (*r, *info, x, *lib.lu_unpack(*r), *lib.linalg.lu_factor_ex(a))])
    seen.append([str(t.dtype).split(".")[-1] for t in (*info, *lib.linalg.lu_factor_ex(a))])
    return seen


@pytest.mark.torch
def test_lu_family_as_pytorchs():
    torch = pytest.importorskip("torch")
    import funcgrad._ops.linalg2 as linalg2
    linalg2._LU_WARNED[0] = linalg2._LU_SOLVE_WARNED[0] = False  # (once per process, as PyTorch's)
    # (torch's own once-per-process warnings may have gone already: they are checked below)
    assert _lu_story(funcgrad)[1:] == _lu_story(torch)[1:]


def test_lu_warns_once_and_names_pytorchs_nodes():
    import funcgrad._ops.linalg2 as linalg2
    linalg2._LU_WARNED[0] = linalg2._LU_SOLVE_WARNED[0] = False
    story = _lu_story(funcgrad)
    assert [m.split("\n")[0] for m in story[0]] == [
        "torch.lu is deprecated in favor of torch.linalg.lu_factor / torch.linalg.lu_factor_ex and will be removed "
        "in a future PyTorch release.",
        "torch.lu_solve is deprecated in favor of torch.linalg.lu_solveand will be removed in a future PyTorch release."]
    assert story[1] == ["tuple", "_lu_with_info", "linalg_lu_factor_ex", "lu_unpack", True, True]
    assert story[2] == ["LinalgLuFactorExBackward0", "NoneType", "LinalgLuFactorExBackward0", "NoneType", "NoneType",
                        "LinalgLuSolveBackward0", "NoneType", "LuUnpackBackward0", "LuUnpackBackward0",
                        "LinalgLuFactorExBackward0", "NoneType", "NoneType"]
    assert story[3] == ["float32", "int32", "int32", "float32", "int32", "int32"]
    assert repr(funcgrad.linalg.lu_factor_ex(funcgrad.eye(2))).startswith("funcgrad.return_types.linalg_lu_factor_ex(\n")


def test_lu_functions_in_torch_functional():
    import funcgrad.functional as F
    assert F.lu is funcgrad.lu


# ================================ svd_lowrank / pca_lowrank ======================================
LOWRANK_ERRORS = {
    "q_big": lambda lib: lib.pca_lowrank(lib.ones(5, 3), q=4),
    "q_negative": lambda lib: lib.pca_lowrank(lib.ones(5, 3), q=-1),
    "niter": lambda lib: lib.pca_lowrank(lib.ones(5, 3), niter=-1),
}


def _outcome(f, lib):
    try:
        r = f(lib)
    except Exception as e:  # noqa: BLE001
        return type(e).__name__, str(e)
    return [type(t.grad_fn).__name__ for t in r]


@pytest.mark.torch
@pytest.mark.parametrize("name", sorted(LOWRANK_ERRORS))
def test_lowrank_errors_as_pytorchs(name):
    torch = pytest.importorskip("torch")
    assert _outcome(LOWRANK_ERRORS[name], funcgrad) == _outcome(LOWRANK_ERRORS[name], torch)


def test_lowrank_nodes_and_errors():
    assert _outcome(LOWRANK_ERRORS["q_big"], funcgrad) == (
        "ValueError", "q(=4) must be non-negative integer and not greater than min(m, n)=3")
    a = funcgrad.randn(2, 6, 4, requires_grad=True)
    assert _outcome(lambda lib: lib.svd_lowrank(a, q=3), funcgrad) == [
        "UnsafeViewBackward0", "LinalgSvdBackward0", "TransposeBackward0"]
    assert _outcome(lambda lib: lib.pca_lowrank(a[0]), funcgrad) == ["MmBackward0", "LinalgSvdBackward0",
                                                                    "TransposeBackward0"]
    import funcgrad.functional as F
    assert F.svd_lowrank is funcgrad.svd_lowrank and F.pca_lowrank is funcgrad.pca_lowrank


@pytest.mark.torch
def test_lowrank_nodes_as_pytorchs():
    torch = pytest.importorskip("torch")

    def nodes(lib):
        a, b = lib.ones(2, 6, 4, requires_grad=True), lib.ones(6, 4, requires_grad=True)
        return _outcome(lambda lib: lib.svd_lowrank(a, q=3), lib) + _outcome(lambda lib: lib.pca_lowrank(b), lib)
    assert nodes(funcgrad) == nodes(torch)
