"""The reductions' ``keepdim`` as PyTorch 2.13's argument parser reads it: a full reduction with
``keepdim=True`` keeps every dim (as size 1), ``keepdim`` must be a Python bool (an int, a NumPy bool,
a 0-d tensor or None is its TypeError, with the argument's position as PyTorch counts it: a method
after self, a function from input), ``keepdims=`` is NumPy's spelling of it (both at once, or a
``keepdim`` an overload does not take, is the parser's error: "unexpected keyword argument",
"missing 1 required positional arguments", or "received an invalid combination of arguments"
with every overload listed), and ``count_nonzero(0, 1)`` means dims (0, 1). The same for
``linalg.vector_norm``/``matrix_norm``/``norm``, ``special.logsumexp`` and ``pairwise_distance``.

Each row is one call, method and function forms apart; its outcome (result shape, dtype, node,
values and gradient, or the exception type and full message, PyTorch's ``torch.`` read as
``funcgrad.``) is recorded from PyTorch 2.13 in ``tests/fixtures/keepdim_args/outcomes.json`` by
``tests/fixtures/keepdim_args/make_fixtures.py``, and compared live with PyTorch where it is
installed. A refused call leaves its inputs as they were.
"""

from __future__ import annotations

import re

import numpy as np
import pytest

import funcgrad
import funcgrad.nn.functional  # noqa: F401

from ._rows import Recorded, run, shown_signatures

# ------------------------------------------------------------------ the table
# each op's arguments before dim, and the ops PyTorch has no Tensor method of
BEFORE_DIM = {"kthvalue": "1, ", "quantile": "0.5, ", "nanquantile": "0.5, ", "norm": "2, "}
FUNCTION_ONLY = {"std_mean", "var_mean"}
OPS = ["sum", "mean", "nansum", "nanmean", "prod", "max", "min", "amax", "amin", "argmax", "argmin",
       "aminmax", "std", "var", "std_mean", "var_mean", "median", "nanmedian", "mode", "kthvalue",
       "logsumexp", "any", "all", "count_nonzero", "quantile", "nanquantile", "norm"]
NO_DIM_KEEPDIM = ["sum", "mean", "nansum", "prod", "max", "min", "argmax", "argmin", "aminmax", "median",
                  "nanmedian", "logsumexp", "any", "all", "count_nonzero"]
BOTH = ["nansum", "nanmean", "prod", "max", "min", "amax", "amin", "argmax", "argmin", "median", "nanmedian",
        "mode", "kthvalue", "logsumexp", "any", "all", "count_nonzero", "quantile", "nanquantile", "norm"]
NONE_DIM = ["nansum", "prod", "max", "min", "argmax", "argmin", "aminmax", "median", "nanmedian", "mode",
            "kthvalue", "logsumexp", "any", "all", "count_nonzero"]

# (call template, ops): ``{b}`` is the op's arguments before dim; aminmax takes dim and keepdim by
# keyword only (its rows say so: see _expand)
SPEC = [
    # keepdim is not a bool: by position, by keyword, as keepdims=
    ("{b}1, 1", OPS), ("{b}1, 0", OPS), ("{b}1, keepdim=1", OPS), ("{b}dim=1, keepdim=0", OPS),
    ("{b}1, keepdims=1", OPS), ("{b}1, np.bool_(True)", OPS), ("{b}1, keepdim=t.tensor(True)", OPS),
    ("{b}1, None", OPS),
    # keepdim with no dim: a full reduction keeping every dim, or the parser's error
    ("{b}keepdim=True", NO_DIM_KEEPDIM), ("{b}keepdims=True", NO_DIM_KEEPDIM + ["norm"]),
    ("{b}dim=None, keepdim=True", NONE_DIM), ("{b}None, True", NONE_DIM),
    # keepdim by position and keepdims= by keyword; both by keyword
    ("{b}1, True, keepdims=True", BOTH),
    ("{b}1, keepdim=True, keepdims=False", ["any", "all", "count_nonzero", "quantile", "nanquantile", "norm"]),
]


def _expand(op, template):
    call = template.format(b=BEFORE_DIM.get(op, ""))
    if op == "aminmax":  # (dim and keepdim are keyword-only)
        call = re.sub(r"^(1|None), (?!\w+=)([^,]+)", r"dim=\1, keepdim=\2", call)
        call = re.sub(r"^(1|None), (\w+=)", r"dim=\1, \2", call)
    forms = [f"t.{op}(x, {call})"]
    return forms if op in FUNCTION_ONLY else forms + [f"x.{op}({call})"]


# (aminmax's keyword forms of two templates coincide: once each)
ROWS = list(dict.fromkeys(r for template, ops in SPEC for op in ops for r in _expand(op, template))) + [
    # full reductions with keepdim of 1-d and 0-d inputs
    "v.argmax(keepdim=True)", "t.argmax(v, keepdim=True)", "v.argmin(keepdim=True)", "t.argmin(v, keepdim=True)",
    "v.nansum(keepdim=True)", "t.nansum(v, keepdim=True)", "v.any(keepdim=True)", "t.any(v, keepdim=True)",
    "v.all(keepdim=True)", "t.all(v, keepdim=True)", "v.aminmax(keepdim=True)", "t.aminmax(v, keepdim=True)",
    "v.count_nonzero(keepdim=True)", "t.count_nonzero(s, keepdim=True)",
    # std/var: unbiased and keepdim both bools
    "x.std(1, True, 1)", "t.std(x, 1, True, 1)", "x.var(1, correction=1, keepdim=1)", "x.var(1, unbiased=1)",
    "x.std(True, keepdim=True)", "t.var(x, True, keepdim=True)",
    # count_nonzero: int varargs in the method form only; duplicates and out-of-range dims
    "x.count_nonzero(0, 1)", "x.count_nonzero(0, -1)", "t.count_nonzero(x, 0, 1)",
    "x.count_nonzero(0, True)", "x.count_nonzero(-1, True)", "x.count_nonzero(0, 1, 1)",
    "x.count_nonzero((0,), 1)", "x.count_nonzero(0, 1, keepdim=True)", "x.count_nonzero(0, dim=1)",
    "x.count_nonzero(dim=0, keepdim=False)", "x.count_nonzero(0, 1.5)", "v.count_nonzero(0, True)",
    "s.count_nonzero(0, True)",
    # any/all over no dim; norm over every dim; quantile of a 0-d tensor
    "x.any(())", "x.all((), True)", "t.any(x, [], keepdim=True)", "x.norm(2, ())", "x.norm(dim=(), keepdim=True)",
    "t.norm(x, 'fro', 1, 1)", "x.norm('nuc', keepdim=1)", "x.norm(None, 1, keepdim=0)", "t.norm(x, 2, 0, keepdims=True)",
    "s.quantile(0.5, 0, True)", "s.nanquantile(0.5, -1)",
    # sum/mean (their frontends read the call back): with dtype=, keepdims=, a NumPy bool, a tensor
    "x.sum(dtype=t.float64, keepdim=True)", "t.mean(x, keepdim=True, dtype=t.float64)", "x.sum(keepdim=1)",
    "t.sum(x, keepdims=False)", "x.sum(None, keepdims=1)", "t.sum(x, (0, 1), keepdim=None)",
    "x.sum(1, np.bool_(False))", "t.mean(x, 1, t.tensor(True))",
    # a dim PyTorch's parser refuses, met on the way
    "x.amax((0, 'a'))", "x.max((0,), True)",
    # linalg's norms, special.logsumexp, pairwise_distance: PyTorch's bindings of their own
    "t.linalg.vector_norm(x, 2, 1, 1)", "t.linalg.vector_norm(x, 2, 1, keepdim=1)",
    "t.linalg.vector_norm(x, 2, 1, keepdims=True)", "t.linalg.vector_norm(x, keepdim=np.bool_(True))",
    "t.linalg.vector_norm(x, 2, 1, True, keepdims=True)", "t.linalg.matrix_norm(x, 'fro', (0, 1), 1)",
    "t.linalg.matrix_norm(x, keepdim=None)", "t.linalg.norm(x, None, 1, 1)", "t.linalg.norm(x, 'fro', keepdim=1)",
    "t.special.logsumexp(x, 1, 1)", "t.special.logsumexp(x, 1, keepdim=1)", "t.special.logsumexp(x, keepdim=True)",
    "t.special.logsumexp(x, 1, True, keepdims=True)", "t.nn.functional.pairwise_distance(x, x, 2.0, 1e-6, 1)",
    "t.nn.functional.pairwise_distance(x, x, keepdim=1)", "t.nn.functional.pairwise_distance(x, x, keepdims=True)",
    # out= left as it was
    "t.logsumexp(x, 1, 1, out=o)", "t.std(x, 1, True, 1, out=o)", "t.any(x, 1, keepdims=1, out=o)",
]


# ------------------------------------------------------------------ running a row
def _env(L):
    return {"t": L, "np": np, "x": L.tensor([[1.0, 5.0, 3.0], [4.0, 2.0, 6.0]], requires_grad=True),
            "v": L.tensor([1.0, 5.0, 3.0], requires_grad=True), "s": L.tensor(2.5, requires_grad=True),
            "o": L.zeros(2)}


def _result(r, env):
    """The result's shape, dtype, node and values, and the inputs' gradients of the sum of its
    outputs (output k weighted k + 1)."""
    out = [_desc(r)]
    outs = r if isinstance(r, tuple) else (r,)
    if outs[0].requires_grad:
        sum(o.sum() * (k + 1) for k, o in enumerate(outs) if o.requires_grad).backward()
        out.append([None if env[k].grad is None else np.round(np.asarray(env[k].grad.tolist()), 5).tolist()
                    for k in "xvs"])
    return out


def _desc(r):
    if isinstance(r, tuple):
        return [_desc(v) for v in r]
    vals = r.detach().double().tolist() if r.dtype.is_floating_point else r.tolist()
    return [list(r.shape), str(r.dtype).split(".")[-1], None if r.grad_fn is None else type(r.grad_fn).__name__,
            np.round(np.asarray(vals, dtype=float), 5).tolist()]


def _run(L, expr):
    return run(L, expr, _env(L), _result)


RECORDED = Recorded("keepdim_args", ROWS, _run)
outcomes = RECORDED.outcomes


# ------------------------------------------------------------------ tests
@pytest.mark.parametrize("expr", ROWS)
def test_as_pytorch_reads_keepdim(expr):
    RECORDED.check(expr)


@pytest.mark.parametrize("name", ["sum", "mean"])
def test_signature_shows_no_sentinel(name):
    # the frontends take keepdims= themselves (no wrapper on their hot calls): help() and
    # inspect.signature show PyTorch's parameters, not the sentinel telling keepdims= apart
    for sig in shown_signatures(name):
        assert list(sig.parameters) == ["input", "dim", "keepdim", "dtype"], sig
