"""``out=`` as PyTorch 2.13 writes it (one helper for every op, ``_registry.write_out``): an ``out``
of another shape is resized (with PyTorch's deprecation UserWarning unless it was empty), a result
``out``'s dtype cannot take is PyTorch's RuntimeError in the op's own words (TensorIterator's "result
type Float can't be cast to the desired output type Long", ``check_out``'s "Expected out tensor to
have dtype ...", logsumexp's, amax's, kthvalue's, median's, mode's, cummax's), and an input requiring
grad (grad mode on) is refused before the op runs ("<op>(): functions with out=... arguments don't
support automatic differentiation"). ``sum``, ``cumsum`` and ``cumprod`` compute in out's dtype.

Each row is one call on fresh inputs (``x`` 2x3 requiring grad, ``xd`` its detached copy, ``o`` a
float (2,), ``o3`` a float (3,), ``ol`` a long (2,), ``oe`` an empty float); its outcome (the
result, every ``o*`` after the call, and the warnings, or the exception) is recorded from PyTorch
2.13 in ``tests/fixtures/out_args/outcomes.json`` by ``tests/fixtures/out_args/make_fixtures.py``.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from ._rows import Recorded, run

ROWS = [
    # resized: with the warning when out had elements, silently when empty
    "t.logsumexp(xd, 1, out=o3)", "t.logsumexp(xd, 1, out=oe)", "t.logsumexp(xd, 1, out=o)",
    "t.exp(xd, out=o3)", "t.add(xd, 1, out=oe)", "t.sum(xd, 1, out=o3)", "t.cumsum(xd, 1, out=o3)",
    "t.special.logsumexp(xd, 1, out=o3)", "t.argsort(xd[0], stable=True, out=ol)",
    "t.sort(xd, out=(o3, t.zeros(6, dtype=t.long)))", "t.eq(xd, 1, out=t.zeros(5, dtype=t.bool))",
    # dtypes: the cast check, or the op's own
    "t.exp(xd, out=t.zeros(2, 3, dtype=t.long))", "t.add(xd, 1, out=t.zeros(2, 3, dtype=t.int32))",
    "t.add(xd, 1j, out=o3)", "t.add(xd, 1, out=t.zeros(2, 3, dtype=t.float64))", "t.mean(xd, 1, out=ol)",
    "t.sum(t.tensor([1.5, 2.5]), 0, out=ol[0])", "t.cumsum(t.tensor([1.5, 2.5]), 0, out=ol)",
    "t.cumprod(xd, 1, out=t.zeros(2, 3, dtype=t.long))", "t.eq(xd, 1, out=o3)", "t.logical_not(xd, out=o3)",
    "t.bitwise_and(ol, 1, out=t.zeros(2, dtype=t.bool))", "t.std(xd, 1, out=ol)",
    "t.logsumexp(xd, 1, out=ol)", "t.logsumexp(xd, 1, out=t.zeros(2, dtype=t.bool))",
    "t.logsumexp(xd.long(), 1, out=o)", "t.argsort(xd[0], stable=True, out=o3)",
    "t.sort(xd, out=(t.zeros(2, 3, dtype=t.long), t.zeros(2, 3, dtype=t.long)))",
    "t.sort(xd, out=(t.zeros(2, 3), t.zeros(2, 3)))", "t.topk(xd, 1, out=(ol, ol))",
    "t.kthvalue(xd, 1, out=(ol, ol))",
    "t.kthvalue(xd, 1, out=(o, o))", "t.median(xd, 1, out=(ol, ol))", "t.median(xd, 1, out=(o, o))",
    "t.nanmedian(xd, 1, out=(ol, ol))", "t.mode(xd, 1, out=(ol, ol))", "t.mode(xd, 1, out=(o, o))",
    "t.cummax(xd, 1, out=(ol, ol))", "t.cummin(xd, 1, out=(o3, o3))", "t.quantile(xd, 0.5, out=ol)",
    "t.special.logit(xd, out=ol)", "t.prod(t.tensor([1.5, 2.5]), 0, out=ol[0])", "t.any(xd, 1, out=o)",
    "t.all(xd, 1, out=t.zeros(2, dtype=t.uint8))", "t.logcumsumexp(xd, 1, out=t.zeros(2, 3, dtype=t.long))",
    "t.index_select(xd, 1, ol, out=t.zeros(2, 2, dtype=t.float64))", "t.masked_select(xd, xd > 2, out=ol)",
    "t.gather(xd, 1, t.zeros(2, 1, dtype=t.long), out=ol)",
    "t.take_along_dim(xd, t.zeros(2, 1, dtype=t.long), 1, out=ol)",
    "t.tril(xd, out=ol)", "t.triu(xd, out=t.zeros(2, 3, dtype=t.float64))", "t.diag(xd, out=ol)",
    "t.where(xd > 2, xd, xd, out=ol)", "t.nan_to_num(xd, out=ol)", "t.tensordot(xd, xd, 2, out=ol[0])",
    "t.linalg.vector_norm(xd, out=ol[0])", "t.linalg.matrix_norm(xd, out=ol[0])",
    "t.linalg.det(xd[:, :2], out=ol[0])",
    "t.outer(xd[0], xd[0], out=ol)",
    "t.cat([xd, xd], out=ol)", "t.stack([xd, xd], out=t.zeros(2, 2, 3, dtype=t.long))",
    "t.cat([ol, ol], out=o3)",
    "t.cat([xd, xd], 1, out=t.zeros(2, 6, dtype=t.bool))",
    # amax/amin take out=
    "t.amax(xd, 1, out=o)", "t.amax(xd, 1, out=o3)", "t.amin(xd, 0, True, out=o3)",
    "t.amax(xd, 1, out=ol)", "t.amin(xd, 1, out=t.zeros(2, dtype=t.float64))", "t.amax(x, 1, out=o)",
    # an input requiring grad: refused (before the op's own checks), in grad mode only
    "t.logsumexp(x, 1, out=o)", "t.logsumexp(x, 5, out=o)", "t.exp(x, out=o3)", "t.add(x, 1, out=o3)",
    "t.sum(x, 1, out=o)", "t.mean(x, out=o[0])", "t.cumsum(x, 1, out=o3)", "t.clamp(x, 0, 1, out=o3)",
    "t.sort(x, out=(o3, ol))", "t.argsort(x[0], stable=True, out=ol)", "t.special.logit(x, out=o3)",
    "t.atan2(x, x, out=o3)", "t.cumsum(x, 1, out=t.zeros(2, 3, dtype=t.long))",
    "t.exp(xd, out=t.zeros(2, 3, requires_grad=True))", "t.no_grad()(t.exp)(x, out=o3)",
    # PyTorch names its out op: linalg's, special's, a composite's inner one
    "t.linalg.vector_norm(x, out=o[0])", "t.linalg.det(x[:, :2], out=o[0])", "t.linalg.inv(x[:, 1:], out=o3)",
    "t.outer(x[0], x[0], out=o3)", "t.kron(x, x, out=t.zeros(4, 9))", "t.msort(x, out=o3)",
    "t.special.xlog1py(x, x, out=o3)",
    "t.special.zeta(x, 2.0, out=o3)", "t.take_along_dim(x, t.zeros(2, 1, dtype=t.long), 1, out=o)",
    "t.linalg.vecdot(x, x, out=o)", "t.linalg.vecdot(x[0], x[0], out=o[0])",
    "t.nn.functional.normalize(x, out=o3)", "t.prod(x, 1, out=o)",
    # and a composite of PyTorch's copies its result into out (CopyBackwards)
    "t.quantile(x, 0.5, out=o[0])", "t.linalg.matrix_norm(x, out=o[0])", "t.tensordot(x, x, 2, out=o[0])",
]


def _env(L):
    x = L.tensor([[1.0, 5.0, 3.0], [4.0, 2.0, 6.0]], requires_grad=True)
    return {"t": L, "x": x, "xd": x.detach().clone(), "o": L.zeros(2), "o3": L.zeros(3),
            "ol": L.zeros(2, dtype=L.long), "oe": L.zeros(0)}


def _desc(r):
    if isinstance(r, tuple):
        return [_desc(v) for v in r]
    vals = r.detach().tolist()
    return [list(r.shape), str(r.dtype).split(".")[-1], r.requires_grad,
            np.round(np.asarray(vals, dtype=complex if r.dtype.is_complex else float).real, 3).tolist()]


def _result(r, env):
    return [_desc(r), {k: _desc(v) for k, v in env.items() if k[0] == "o"}]


def _run(L, expr):
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        out, unchanged = run(L, expr, _env(L), _result)
    # (PyTorch's C++ warnings end with where they were triggered)
    return [*out, [[x.category.__name__, str(x.message).split(" (Triggered internally")[0]] for x in w]], unchanged


RECORDED = Recorded("out_args", ROWS, _run)
outcomes = RECORDED.outcomes


@pytest.mark.parametrize("expr", ROWS)
def test_out_as_pytorch(expr):
    RECORDED.check(expr)
