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


# ================================ autograd.graph utilities ========================================
def _graph_story(lib):
    """The multi-grad hooks' calls, gradients through GradientEdges, increment_version's effects."""
    from importlib import import_module
    G = import_module(lib.__name__ + ".autograd.graph")
    seen = []
    a = lib.tensor([1.0, 2.0, 3.0], requires_grad=True)
    b = lib.tensor([0.5, -1.0, 2.0], requires_grad=True)
    c, d = a * b, a * b
    h = G.register_multi_grad_hook((a, b, c, d), lambda gs: seen.append([None if g is None else g.tolist() for g in gs]))
    c.sum().backward(retain_graph=True)
    c.sum().backward(inputs=(a,), retain_graph=True)
    h.remove()
    c.sum().backward(retain_graph=True)
    h = G.register_multi_grad_hook((c, d, a), lambda g: seen.append(("any", g.tolist())), mode="any")
    # (one gradient for c and d: funcgrad's engine runs independent ready nodes in another order
    # than PyTorch's, which orders them by creation)
    (c.sum() + d.sum()).backward(retain_graph=True)
    (d.sum() * 5).backward(retain_graph=True)
    with h:
        pass
    (d.sum() * 5).backward(retain_graph=True)
    e = G.get_gradient_edge(c)
    seen.append([type(e).__name__, type(e.node).__name__, e.output_nr, e.ownership_token, e._fields,
                 type(G.get_gradient_edge(a).node).__name__])
    y = (c.exp() * d).sum()
    seen.append([g.tolist() for g in lib.autograd.grad(y, [e, a, G.get_gradient_edge(b)], retain_graph=True)])
    seen.append([g.tolist() for g in lib.autograd.grad(y, e, retain_graph=True)])
    a.grad = None
    y.backward(inputs=[G.get_gradient_edge(a)], retain_graph=True)
    seen.append(a.grad.tolist())
    x = lib.ones(2)
    G.increment_version(x)
    G.increment_version([x, x])
    seen.append(x._version)
    with lib.inference_mode():
        inf = lib.ones(2)
    G.increment_version(inf)
    w = lib.ones(2, requires_grad=True)
    s = w.exp()
    z = (s * s).sum()
    G.increment_version(s)
    for f in (lambda: z.backward(), lambda: G.increment_version(3), lambda: G.get_gradient_edge(lib.ones(2)),
              lambda: G.register_multi_grad_hook((a,), print, mode="some"),
              lambda: lib.autograd.grad((a * 3).sum(), G.get_gradient_edge(d)),
              lambda: lib.autograd.grad((a * 3).sum(), G.get_gradient_edge(d), allow_unused=True),
              lambda: lib.autograd.grad((a * 3).sum(), G.get_gradient_edge(d), allow_unused=True,
                                        materialize_grads=True)):
        try:
            seen.append(("ok", f()))
        except Exception as ex:  # noqa: BLE001
            seen.append((type(ex).__name__, str(ex).replace("torch.", "funcgrad.")))
    return seen


def _close(x, y):
    if isinstance(x, float) and isinstance(y, float):
        return abs(x - y) <= 1e-5 * max(1.0, abs(y))
    if isinstance(x, (list, tuple)) and isinstance(y, (list, tuple)):
        return len(x) == len(y) and all(_close(p, q) for p, q in zip(x, y, strict=True))
    return x == y


@pytest.mark.torch
def test_graph_utilities_as_pytorchs():
    torch = pytest.importorskip("torch")
    mine, theirs = _graph_story(funcgrad), _graph_story(torch)
    assert len(mine) == len(theirs)
    for i, (m, t) in enumerate(zip(mine, theirs, strict=True)):
        assert _close(m, t), (i, m, t)


def test_graph_utilities():
    seen = _graph_story(funcgrad)
    assert seen[:2] == [[[0.5, -1.0, 2.0], [1.0, 2.0, 3.0], [1.0, 1.0, 1.0], None],
                        [[0.5, -1.0, 2.0], None, [1.0, 1.0, 1.0], None]]
    assert seen[2:4] == [("any", [1.0, 1.0, 1.0]), ("any", [5.0, 5.0, 5.0])]
    assert seen[4] == ["GradientEdge", "MulBackward0", 0, None, ("node", "output_nr", "ownership_token"),
                       "AccumulateGrad"]
    assert seen[8] == 3
    assert seen[9][0] == "RuntimeError" and "modified by an inplace operation" in seen[9][1]
    assert seen[10:] == [
        ("RuntimeError", "increment_version expect a Iterable[Tensor] as input"),
        ("RuntimeError", "It is not possible to get the gradient edge for a Tensor that does not require gradients"),
        ("ValueError", "Expects mode to be one of ('all', 'any') but got some"),
        ("RuntimeError", "The differentiated Tensor at index 0 appears to not have been used in the graph. Set "
                         "allow_unused=True if this is the desired behavior."),
        ("ok", (None,)),
        ("RuntimeError", "materialize_grads cannot be used when the given input is a GradientEdge")]


# ================================ swap_tensors and the __future__ switches ========================
def _swap_story(lib):
    import importlib
    import weakref
    nn, fut = importlib.import_module(lib.__name__ + ".nn"), importlib.import_module(lib.__name__ + ".__future__")
    seen = [fut.get_swap_module_params_on_conversion(), fut.get_overwrite_module_params_on_conversion()]
    a, b = lib.ones(2, requires_grad=True), nn.Parameter(lib.zeros(3, dtype=lib.float64))
    a.note = "a's"
    ida, idb = id(a), id(b)
    lib.utils.swap_tensors(a, b)
    seen.append([id(a) == ida, id(b) == idb, type(a).__name__, type(b).__name__, a.tolist(), b.tolist(),
                 str(a.dtype).split(".")[-1], a.requires_grad, b.requires_grad, getattr(b, "note", None),
                 hasattr(a, "note")])

    class Slotted(type(lib.ones(1))):
        __slots__ = ("extra",)

    r = weakref.ref(a)
    for f in (lambda: lib.utils.swap_tensors(a, b), lambda: lib.utils.swap_tensors(b, a),
              lambda: lib.utils.swap_tensors(b, Slotted(lib.ones(1)))):
        try:
            f()
            seen.append("ok")
        except RuntimeError as e:
            seen.append(str(e))
    del r
    for mode in ("swap", "overwrite"):
        getattr(fut, f"set_{mode}_module_params_on_conversion")(True)
        try:
            m = nn.Linear(2, 3)
            w = m.weight
            m(lib.ones(1, 2)).sum().backward()
            g = m.weight.grad
            m.double()
            seen.append([mode, m.weight is w, str(m.weight.dtype).split(".")[-1], type(m.weight).__name__,
                         m.weight.grad is g, str(m.weight.grad.dtype).split(".")[-1], m.weight.requires_grad,
                         str(m.bias.dtype).split(".")[-1]])
            out = m(lib.ones(1, 2, dtype=lib.float64)).sum()
            m.float()
            try:
                out.backward()
                seen.append(str(m.weight.grad.dtype).split(".")[-1])
            except RuntimeError as e:
                seen.append(str(e).replace("torch.", "funcgrad."))
            del out
            m(lib.ones(1, 2)).sum().backward()
            seen.append(m.weight.grad.tolist())
        finally:
            getattr(fut, f"set_{mode}_module_params_on_conversion")(False)
    return seen


@pytest.mark.torch
def test_swap_tensors_as_pytorchs():
    torch = pytest.importorskip("torch")
    assert _swap_story(funcgrad) == [s.replace("torch.", "funcgrad.") if isinstance(s, str) else s
                                     for s in _swap_story(torch)]


def test_swap_tensors():
    seen = _swap_story(funcgrad)
    assert seen[:2] == [False, False]
    assert seen[2] == [True, True, "Parameter", "Tensor", [0.0, 0.0, 0.0], [1.0, 1.0], "float64", True, True, "a's",
                       False]
    assert seen[3:6] == ["Cannot swap t1 because it has weakref associated with it",
                         "Cannot swap t2 because it has weakref associated with it",
                         "Cannot swap t1 and t2 if they have different slots"]
    assert seen[6] == ["swap", True, "float64", "Parameter", True, "float64", True, "float64"]
    assert seen[7].startswith("Trying to execute AccumulateGrad node that was poisoned by swap_tensors")
    assert seen[9] == ["overwrite", False, "float64", "Parameter", False, "float64", True, "float64"]
    assert seen[10] == "float32"


# ================================ torch.cuda memory statistics ===================================
def _cuda_memory(lib):
    out = []
    for name in ("max_memory_reserved", "memory_stats", "reset_peak_memory_stats", "reset_accumulated_memory_stats",
                 "reset_max_memory_allocated", "max_memory_allocated"):
        for args in ((), (0,), ("cuda:0",)):
            with warnings.catch_warnings(record=True) as w:
                warnings.simplefilter("always")
                try:
                    r = repr(getattr(lib.cuda, name)(*args))
                except Exception as e:  # noqa: BLE001
                    r = (type(e).__name__, str(e))
            out.append((name, args, r, [(x.category.__name__, str(x.message)) for x in w]))
    return out


@pytest.mark.torch
@pytest.mark.skipif(funcgrad.cuda.is_available(), reason="PyTorch's CPU build's answers: a machine without a GPU")
def test_cuda_memory_statistics_as_pytorchs_cpu_build():
    torch = pytest.importorskip("torch")
    assert _cuda_memory(funcgrad) == _cuda_memory(torch)


@pytest.mark.skipif(funcgrad.cuda.is_available(), reason="PyTorch's CPU build's answers: a machine without a GPU")
def test_cuda_memory_statistics_without_a_gpu():
    got = {(n, a): (r, w) for n, a, r, w in _cuda_memory(funcgrad)}
    assert got["max_memory_reserved", ()] == ("0", []) and got["memory_stats", (0,)] == ("OrderedDict()", [])
    assert got["reset_peak_memory_stats", ()] == (
        ("AttributeError", "module 'torch._C' has no attribute '_cuda_resetPeakMemoryStats'"), [])
    assert got["reset_accumulated_memory_stats", ("cuda:0",)] == (
        ("AttributeError", "module 'torch._C' has no attribute '_cuda_resetAccumulatedMemoryStats'"), [])
    assert got["reset_max_memory_allocated", ()][1] == [
        ("FutureWarning", "torch.cuda.reset_max_memory_allocated now calls torch.cuda.reset_peak_memory_stats, "
                          "which resets /all/ peak memory stats.")]


# ================================ grad_fn._saved_exponent / _saved_dim ===========================
def _saved_story(lib):
    x = lib.tensor([1.0, 2.0, 3.0], requires_grad=True)
    m = lib.tensor([[1.0, -2.0], [0.5, 3.0]], requires_grad=True)
    out = []
    for y in (x ** 2.5, x ** 2, lib.pow(x, 3), x ** True, 2.0 ** x, x ** lib.tensor([1.0, 2.0, 0.5]),
              lib.softmax(m, 1), lib.log_softmax(m, 0), lib.nn.functional.softmax(m, dim=1), m.sum(1), m.sum((0, 1)),
              m.mean(0), m.cumsum(1), lib.cat([m, m], 1), lib.stack([m, m], 0), m.unsqueeze(2), m.split(1, 1)[0],
              m.unbind(1)[0]):
        g = y.grad_fn
        got = {}
        for a in ("_saved_exponent", "_saved_self", "_saved_result", "_saved_dim"):
            if hasattr(type(g), a):
                v = getattr(g, a)
                got[a] = v.tolist() if isinstance(v, lib.Tensor) else v
        out.append((type(g).__name__, got))
    y = x ** 2.5
    y.sum().backward(retain_graph=True)
    out.append(y.grad_fn._saved_exponent)
    return out


@pytest.mark.torch
def test_saved_exponent_and_dim_as_pytorchs():
    torch = pytest.importorskip("torch")
    mine, theirs = _saved_story(funcgrad), _saved_story(torch)
    assert len(mine) == len(theirs)
    for m, t in zip(mine, theirs, strict=True):
        assert _close(m, t), (m, t)


def test_saved_exponent_and_dim():
    seen = dict(_saved_story(funcgrad)[:6])
    assert seen["PowBackward0"] == {"_saved_exponent": True, "_saved_self": [1.0, 2.0, 3.0]}
    assert seen["PowBackward2"]["_saved_self"] == 2.0 and seen["PowBackward2"]["_saved_exponent"] == [1.0, 2.0, 3.0]
    story = _saved_story(funcgrad)
    assert [type(v) for _, d in story[:4] for v in [d["_saved_exponent"]]] == [float, int, int, bool]
    assert [d["_saved_dim"] for _, d in story[6:-1]] == [1, 0, 1, (1,), (0, 1), (0,), 1, 1, 0, 2, 1, 1]
    x = funcgrad.ones(2, requires_grad=True)
    y = x ** 2.5
    y.sum().backward()  # (freed: funcgrad's node keeps its numbers with its tensors, PyTorch's apart)
    with pytest.raises(RuntimeError, match="Trying to backward through the graph a second time"):
        _ = y.grad_fn._saved_exponent
