"""Sparse COO tensors as PyTorch 2.13's (funcgrad/_sparse.py): ``sparse_coo_tensor``,
``to_sparse``/``to_dense``, ``indices``/``values``/``_indices``/``_values``, ``coalesce``, ``_nnz``,
``sparse_dim``/``dense_dim``, ``is_sparse``, ``layout``, products with dense matrices (``@``, ``mm``,
``matmul``, ``spmm``, ``sparse.mm``) with their gradients, ``sum``/``sparse.sum``, dense + sparse,
sparse + sparse, sparse * number, ``to``, ``t``; every other op refused with PyTorch's
``Could not run 'aten::…' with arguments from the 'SparseCPU' backend``.

Each row is one expression; its outcome (the result's repr and the inputs' gradients of a weighted
sum of it, or the exception's type and message: for "Could not run" its first sentences) is
recorded from PyTorch 2.13 in ``tests/fixtures/sparse_coo/outcomes.json`` by
``tests/fixtures/sparse_coo/make_fixtures.py`` and compared live with PyTorch where installed.
A short script's transcript (the invariant-checks warning PyTorch gives once per process, reprs
of a graph network's preprocessing) is recorded there too (``transcript``).
"""

from __future__ import annotations

import json
import subprocess
import sys
import warnings

import numpy as np
import pytest

import funcgrad

from ._rows import FIXTURES, Recorded, check_transcript, run

S = "S(i, c, (2, 3))"  # a plain sparse operand (values not requiring grad)
ROWS = [
    # construction, attributes
    S, "S(i, c)", "S(i, c, (2, 3), dtype=t.float64)", "S(i, c, (2, 3), dtype=t.int64)", "S(i, v, (2, 3))",
    "S(i, c, (2, 3, 4))", "S(i, c[:2], (2, 3))", "S(i[0], c, (2, 3))", "S([[0, 1], [1, 0]], [1, 2], (2, 2))",
    "S(i, c, (1, 3))", "S(t.empty(2, 0, dtype=t.long), t.empty(0), (2, 3))",
    f"{S}.layout", f"{S}.is_sparse", f"{S}._nnz()", f"{S}.sparse_dim()", f"{S}.dense_dim()",
    f"{S}.is_coalesced()", f"{S}.shape", f"{S}.dtype", f"{S}.requires_grad", f"{S}.is_leaf",
    f"str(type({S}))", f"{S}.device", f"{S}.numel()", f"{S}.dim()", "S(i, v, (2, 3)).is_leaf",
    "S(i, v, (2, 3)).requires_grad",
    # dense <-> sparse
    "x.to_sparse()", "x.to_sparse(1)", "x.to_sparse().to_dense()", "t.zeros(2, 3).to_sparse()",
    "t.eye(3).to_sparse()", "t.diag(t.tensor([1., 0., 2.])).to_sparse()", "x.to_sparse().is_coalesced()",
    f"{S}.to_dense()", "S(i, v, (2, 3)).to_dense()", f"{S}.to_sparse()", "x.to_dense()",
    "t.tensor([[1, 0], [0, 2]]).to_sparse()",
    "x.layout", "x.is_sparse", "x.indices()", "x._nnz()", "x.coalesce()", "x.is_coalesced()", "x.sparse_dim()",
    "x.dense_dim()",
    # indices and values, coalescing
    "S([[1, 0, 1]], c, (2,)).coalesce()", "S([[1, 0, 1]], c, (2,)).indices()", "S([[1, 0, 1]], c, (2,)).values()",
    "S([[1, 0, 1]], c, (2,))._indices()", "S([[1, 0, 1]], c, (2,))._values()", f"{S}.coalesce().indices()",
    f"{S}.coalesce().values()", "S([[1, 0, 1]], v, (2,)).coalesce()", f"{S}.coalesce().is_coalesced()",
    # products
    f"{S} @ d", f"t.mm({S}, d)", f"t.spmm({S}, d)", f"t.sparse.mm({S}, d)", f"t.matmul({S}, d)",
    "S(i, v, (2, 3)) @ d", "t.sparse.mm(S(i, v, (2, 3)), d)", f"{S} @ t.ones(4, 2)", f"{S} @ t.ones(3)",
    f"{S} @ d.double()", f"d.t() @ {S}.t()", f"x @ {S}.t()", f"t.ones(3, 3) @ {S}", f"{S}.t() @ {S}",
    "x.to_sparse() @ d", "S(i, c, (2, 3), dtype=t.int64) @ t.ones(3, 1, dtype=t.long)",
    f"t.mm({S}, t.ones(3, 1, dtype=t.long))",
    # sums
    f"t.sum({S})", f"t.sum({S}, dim=1)", f"t.sum({S}, 0)", f"t.sparse.sum({S})", f"t.sparse.sum({S}, dim=1)",
    f"t.sparse.sum({S}, dim=(0, 1))", f"{S}.sum()", "S(i, v, (2, 3)).sum()", "t.sparse.sum(S(i, v, (2, 3)), 1)",
    # elementwise
    f"t.eye(2, 3) + {S}", f"t.ones(3, 3) + {S}", f"{S} + t.ones(2, 3)", f"{S} + 1", f"{S} + {S}",
    f"{S} - {S}", f"{S} * 2", f"2 * {S}", f"{S} / 2", f"-{S}", f"{S} * {S}", f"{S} * t.ones(2, 3)",
    f"{S} + S(i, c, (2, 4))", "x + S(i, v, (2, 3))", "t.eye(2, 3) + S(i, c, (2, 3), dtype=t.int64)",
    "S(i, v, (2, 3)) * 3", "S(i, v, (2, 3)) + S(i, v, (2, 3))", f"t.add(x, {S}, alpha=2)",
    f"x - {S}", "S([[1, 0]], t.tensor([1., 2.]), (2,)) + S([[0, 1]], t.tensor([5., 6.]), (2,))",
    # pointwise ops mapping 0 to 0 (on the coalesced values), PyTorch's SparseCPU kernels
    "S([[0, 1, 0]], t.tensor([.3, -.4, .5]), (2,)).sqrt()", "t.relu(S(i, v, (2, 3)) * -1)", "S(i, v, (2, 3)).abs()",
    f"t.isnan({S})", "t.square(S(i, v, (2, 3)))", f"t.tanh({S})", f"{S}.sign()",
    f"{S} ** 2", f"{S} ** 0", f"{S} ** -1.5", f"{S} == {S}", f"{S} > 0",
    # transposes, keepdim sums, what a sparse tensor has no answer for
    f"{S}.T", f"{S}.mT", f"{S}.transpose(0, 1)", f"{S}.permute(1, 0)", f"{S}.sum(1, keepdim=True)",
    f"t.sum({S}, (0, 1), keepdim=True)", f"{S}.nbytes", f"{S}.untyped_storage()", f"float({S})", f"{S}.data",
    "float(S([[0]], c[:1], (1,)))",
    # gradients through to_sparse() of a tensor requiring grad: dense where PyTorch's derivative is
    # (mm, sum, add, t, to, a number's product), masked where it is (to_dense, sparse.mm, sparse.sum, abs)
    "t.sum(x.to_sparse())", "t.sparse.sum(x.to_sparse())", "t.ones(2, 3) + x.to_sparse()", "x - x.to_sparse()",
    "(x.to_sparse() * 2) @ d", "t.sparse.mm(x.to_sparse(), d)", "x.to_sparse().t() @ d.t()",
    "d.t() @ x.to_sparse().t()", "x.to_sparse().coalesce() @ d", "(x.to_sparse() + x.to_sparse()).to_dense()",
    "(x.to_sparse() + x.to_sparse()) @ d", "x.to_sparse().abs().to_dense()", "x.to_sparse().to(t.float64).to_dense()",
    "(S(i, v, (2, 3)) + x.to_sparse()) @ d", "x.to_sparse()._values()", "S(i, v, (2, 3))._values()",
    "S(i, v, (2, 3)).coalesce().values()", "x.to_sparse().values()", "-x.to_sparse() @ d", "(x.to_sparse() / 2) @ d",
    "x.to_sparse().T @ d.t()",
    # nn.functional.linear and addmm with a sparse operand
    f"t.nn.functional.linear(d.t(), {S})", f"t.nn.functional.linear(d.t(), {S}, t.ones(2))",
    f"t.nn.functional.linear({S}, x)", f"t.nn.functional.linear({S}, x, t.ones(2))",
    f"t.addmm(t.ones(2, 2), {S}, d, beta=2, alpha=3)", "t.addmm(t.ones(2, 2), S(i, v, (2, 3)), d)",
    # in place: on a sparse tensor, and a dense one with a sparse operand
    f"{S}.zero_()", f"{S}.mul_(2)", "t.ones(2, 3).mul_(S(i, c, (2, 3)))", "t.ones(2, 3).add_(S(i, c, (2, 3)), alpha=2)",
    "t.ones(2, 3).sub_(S(i, c, (2, 3)))", f"t.where(x > 0, {S}, 0.)",
    # invariant checks
    "t.sparse_coo_tensor([[0, 2]], c[:2], (2,), check_invariants=True)",
    "t.sparse_coo_tensor([[0, -1]], c[:2], (2,), check_invariants=True)",
    "t.sparse_coo_tensor([[0, -1]], c[:2], (2,), check_invariants=False)",
    "t.sparse.check_sparse_tensor_invariants.is_enabled()",
    # conversions
    f"{S}.to(t.float64)", f"{S}.double()", f"{S}.to('cpu')", f"{S}.t()", f"{S}.t().is_coalesced()",
    f"{S}.clone()", f"{S}.detach()", "S(i, v, (2, 3)).detach()",
    # refused, as PyTorch refuses them
    f"{S}.exp()", f"t.exp({S})", f"{S}.view(6)", f"{S}.mean()", f"{S}.reshape(6)", f"{S}.numpy()",
    f"{S}.tolist()", f"{S}.item()", f"{S}.contiguous()", f"{S}.is_contiguous()", f"{S}.stride()",
    f"{S}.softmax(0)", f"{S}.max()",
]

_CUT = "possible resolutions."


def _env(L):
    def sparse(*args, **kwargs):
        return L.sparse_coo_tensor(*args, check_invariants=False, **kwargs)
    return {"t": L, "S": sparse, "i": L.tensor([[0, 1, 1], [2, 0, 2]]), "c": L.tensor([3., 4., 5.]),
            "v": L.tensor([3., 4., 5.], requires_grad=True),
            "d": L.tensor([[1., -2.], [0.5, 3.], [-1., 2.]], requires_grad=True),
            "x": L.tensor([[0., 1., 0.], [2., 0., 3.]], requires_grad=True)}


def _result(r, env):
    """The result's repr; for a tensor requiring grad, the inputs' gradients of its weighted sum."""
    out = [repr(r).replace("torch.", "funcgrad.")]
    if getattr(r, "requires_grad", False):
        rd = r.to_dense() if r.is_sparse else r
        w = (np.arange(rd.numel()).reshape(tuple(rd.shape)) + 1).tolist()
        (rd * env["t"].tensor(w, dtype=rd.dtype) if rd.ndim else rd).sum().backward()
        out.append({k: None if env[k].grad is None else np.round(np.asarray(env[k].grad.tolist()), 5).tolist()
                    for k in "vdx"})
    return out


def _run(L, expr):
    with warnings.catch_warnings():  # (PyTorch's warnings of sparse products: once per process)
        warnings.simplefilter("ignore")
        got, unchanged = run(L, expr, _env(L), _result)
    if got[0] == "NotImplementedError" and _CUT in got[1]:  # (PyTorch's backend list after it)
        got = [got[0], got[1][:got[1].index(_CUT) + len(_CUT)]]
    return got, unchanged


RECORDED = Recorded("sparse_coo", ROWS, _run)
outcomes = RECORDED.outcomes
TRANSCRIPT = FIXTURES / "sparse_coo" / "transcript.json"


@pytest.mark.parametrize("expr", ROWS)
def test_as_pytorch(expr):
    RECORDED.check(expr)


# ---- a script's transcript (a process of its own: the warning comes once per process) ----------
SCRIPT = r"""
import sys, json
L = __import__(sys.argv[1])
sys.path.insert(0, sys.argv[2])
from tests._rows import shower
out = []
show = shower(out, warns=True)
i = L.tensor([[0, 1, 1], [2, 0, 2]])
show(lambda: L.sparse_coo_tensor(i, L.ones(3), (2, 3), dtype=L.int64))
show(lambda: L.sparse_coo_tensor(i, L.ones(3), (2, 3)))
show(lambda: L.sparse_coo_tensor(i, L.ones(3), (2, 3), check_invariants=False))
adj = L.eye(3, 2) + L.sparse_coo_tensor(i.flip(0), L.ones(3), (3, 2), dtype=L.int64)
show(lambda: adj)
deg = L.sqrt(1 / L.sum(adj, dim=1))
show(lambda: L.diag(deg).to_sparse())
show(lambda: (L.diag(deg).to_sparse() @ adj @ L.diag(L.tensor([1., 2.])).to_sparse()).to_sparse())
w = L.tensor([[1., -1.], [0.5, 2.]], requires_grad=True)
out_ = L.spmm(adj.to_sparse(), w)
show(lambda: out_)
out_.sum().backward()
show(lambda: w.grad)
with L.sparse.check_sparse_tensor_invariants():
    show(lambda: L.sparse.check_sparse_tensor_invariants.is_enabled())
    show(lambda: L.sparse_coo_tensor([[0, 5]], [1., 2.], (2,)))
show(lambda: L.sparse.check_sparse_tensor_invariants.is_enabled())
json.dump(out, sys.stdout)
"""


def transcript_of(name: str) -> list:
    """The script's lines run with ``name`` (``torch`` or ``funcgrad``) in a fresh process."""
    root = str(FIXTURES.parents[1])
    r = subprocess.run([sys.executable, "-c", SCRIPT, name, root], capture_output=True, text=True, cwd=root)
    assert r.returncode == 0, r.stderr[-3000:]
    return json.loads(r.stdout)


def test_transcript():
    want = json.loads(TRANSCRIPT.read_text())
    if torch_installed():  # the record is PyTorch's still
        assert transcript_of("torch") == want, "rerun tests/fixtures/sparse_coo/make_fixtures.py"
    check_transcript(transcript_of("funcgrad"), want)


def torch_installed() -> bool:
    from . import _rows
    return _rows.torch is not None


def test_dense_path_untouched():
    # a dense tensor's kernels never see the sparse module: its layout and methods are strided's
    x = funcgrad.ones(2, 2)
    assert x.layout is funcgrad.strided and not x.is_sparse and type(x) is funcgrad.Tensor
    s = x.to_sparse()
    assert isinstance(s, funcgrad.Tensor) and s.layout is funcgrad.sparse_coo
