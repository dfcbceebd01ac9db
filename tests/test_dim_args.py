"""The reductions' ``dim`` as PyTorch 2.13's argument parser reads it: an ``int dim`` takes no
bool and no None (``x.prod(None)``, ``x.max(True)``: its TypeError, not the full reduction or dim
1); an ``int[1] dim`` reads a list by its first element, so ``[True]`` or ``[1.0]`` is refused ("must
be tuple of ints, but found element of type bool at pos 0", or "received an invalid combination of
arguments" with every overload listed) while ``[0, True]`` is dims (0, 1); ``logsumexp``'s dim takes
no None; a 0-d input checks its dim as any other (``s.logsumexp(5)``: the IndexError);
``torch.norm`` hands its dims on to linalg's parser. NumPy's names are PyTorch's parser's too:
``axis=`` for ``dim``, ``keepdims=`` for ``keepdim``, ``a=``/``x=``/``x1=`` for ``input``, ``x2=`` for
``other`` (not in ``torch.norm``, a Python function); ``sum``/``mean`` take ``out=`` as their function
forms do, a method none. ``sort``/``argsort`` take ``stable=`` by keyword only, a bool (sort's: or
None), and then every other argument by keyword too. ``torch.norm(input, p, dim, keepdim, out,
dtype)`` takes ``out`` fifth (``Tensor.norm`` none) and calls ``linalg.vector_norm`` or
``matrix_norm`` as PyTorch's Python function does.

Each row is one call; its outcome (result shape, dtype, node, values and gradient, or the exception
type and full message, PyTorch's ``torch.`` read as ``funcgrad.``) is recorded from PyTorch 2.13 in
``tests/fixtures/dim_args/outcomes.json`` by ``tests/fixtures/dim_args/make_fixtures.py`` and
compared live with PyTorch where it is installed. A refused call leaves its inputs as they were.
The rows run as ``tests/test_keepdim_args.py``'s (same inputs: ``x`` 2x3, ``v`` 3, ``s`` 0-d, all
requiring grad, ``o`` an output).
"""

from __future__ import annotations

import sys

import pytest

import funcgrad

from ._rows import Recorded, shown_signatures
from .test_keepdim_args import _run

# ------------------------------------------------------------------ the table
# each op's arguments before dim, and the ops PyTorch has no Tensor method of
BEFORE_DIM = {"kthvalue": "1, ", "quantile": "0.5, ", "nanquantile": "0.5, ", "norm": "2, "}
FUNCTION_ONLY = {"std_mean", "var_mean"}
# the ops whose dim is PyTorch's int[1] (a list, or one int), and those whose dim is one int
LIST_DIM = ["sum", "mean", "nansum", "nanmean", "amax", "amin", "std", "var", "std_mean", "var_mean", "logsumexp",
            "any", "all", "count_nonzero", "norm"]
INT_DIM = ["prod", "max", "min", "argmax", "argmin", "median", "nanmedian", "mode", "kthvalue"]
# (std/var's first overload takes a bool there: unbiased)
BOOL_DIM = [op for op in LIST_DIM + INT_DIM if op not in ("std", "var", "std_mean", "var_mean", "nanmean")]
NOT_INT = ["sum", "mean", "nansum", "nanmean", "amax", "amin", "logsumexp", "norm"]

# the reductions of PyTorch's argument parser (torch.norm is a Python function: no NumPy names)
REDUCTIONS = LIST_DIM[:-1] + INT_DIM + ["aminmax", "quantile", "nanquantile"]
# those taking no argument before dim but the input
PLAIN = [op for op in REDUCTIONS if op not in BEFORE_DIM]

# (call template, ops): ``{b}`` is the op's arguments before dim (``{k}``: by keyword)
SPEC = [
    # a list whose first element is a bool
    ("{b}[True]", LIST_DIM), ("{b}(True, 0)", LIST_DIM), ("{b}dim=[True]", LIST_DIM),
    # ... or another non-int: a NumPy bool, a float
    ("{b}[np.bool_(True)]", NOT_INT), ("{b}[1.0]", NOT_INT),
    # a bool for the dim itself
    ("{b}True", BOOL_DIM), ("{b}dim=False", ["sum", "mean", "norm"]),
    # None where the dim is no optional one
    ("{b}None", ["prod", "max", "min", "median", "nanmedian", "logsumexp"]),
    ("{b}dim=None", ["prod", "max", "min", "median", "nanmedian", "logsumexp"]),
    # NumPy's names: axis=, keepdims=
    ("{b}axis=1", REDUCTIONS), ("{b}axis=-1, keepdims=True", ["sum", "mean"]),
    ("{b}keepdims=False, axis=0", ["sum", "mean"]), ("{b}axis=[True]", ["sum", "mean"]),
    ("{b}axis=1, keepdim=1", ["sum", "mean"]), ("{b}axis=None", ["sum", "mean"]),
]
# the function forms taking the input by NumPy's names (``{k}``: the arguments before dim, by keyword)
INPUT_SPEC = [
    ("a=x, {k}axis=1", REDUCTIONS), ("x=x{k0}", [op for op in PLAIN if op != "logsumexp"]),
    ("x1=x, {k}axis=0", REDUCTIONS), ("input=x, a=x", ["sum", "mean"]), ("x, x=x", ["sum", "mean"]),
]
KEYWORDS_BEFORE_DIM = {"kthvalue": "k=1, ", "quantile": "q=0.5, ", "nanquantile": "q=0.5, ", "norm": "p=2, "}


def _expand_input(op, template):
    k = KEYWORDS_BEFORE_DIM.get(op, "")
    call = template.format(k=k, k0=", " + k[:-2] if k else "")
    if op == "aminmax":  # (dim keyword-only)
        call = call.replace("axis=1", "dim=1")
    return [f"t.{op}({call})"]


def _expand(op, template):
    call = template.format(b=BEFORE_DIM.get(op, ""))
    if op == "aminmax" and call.startswith("1, "):  # (dim keyword-only)
        call = "dim=1, " + call[3:]
    forms = [f"t.{op}(x, {call})"]
    return forms if op in FUNCTION_ONLY else forms + [f"x.{op}({call})"]


ROWS = list(dict.fromkeys([r for template, ops in SPEC for op in ops for r in _expand(op, template)]
                          + [r for template, ops in INPUT_SPEC for op in ops for r in _expand_input(op, template)])) + [
    # aminmax (dim keyword-only, int? dim) of a 0-d input
    "s.aminmax(dim=())", "s.aminmax(dim=[0])", "s.aminmax(dim=5)",
    # a 0-d input checks its dim too
    "s.logsumexp(5)", "s.logsumexp(None)", "s.logsumexp([True])", "s.nansum(5)", "s.nansum(True)",
    "t.nansum(s, [True])", "s.any(5)", "t.all(s, -2)", "s.sum(True)",
    # special.logsumexp; torch.norm's and matrix_norm's dims (as linalg's parser reads them)
    "t.special.logsumexp(x, None)", "t.special.logsumexp(x, [True])", "x.norm('fro', [True])",
    "t.norm(x, p=2, dim=(True,))", "x.norm('nuc', [True, 0])", "x.norm(2, 1.5)",
    "t.linalg.matrix_norm(x, 'fro', [True, 0])",
    # NumPy's names in linalg's norms, special.logsumexp; x2= for other
    "t.linalg.vector_norm(x, axis=1)", "t.linalg.vector_norm(a=x, ord=1)",
    "t.linalg.matrix_norm(x1=x, axis=(1, 0))", "t.special.logsumexp(x, axis=0)",
    "t.special.logsumexp(a=x, dim=1)", "t.max(x, x2=v)", "t.min(a=x, x2=v)",
    # sum/mean: no input, an unknown keyword; out= (the function forms')
    "t.sum()", "t.mean()", "x.sum(foo=1)", "t.mean(x, 1, bar=None)", "x.sum(a=x)",
    "t.sum(x, 1, out=o)", "t.sum(x.detach(), 1, out=o)", "t.mean(x.detach(), dim=1, out=o)",
    "t.sum(x.detach(), out=o)", "t.mean(v.detach(), out=o[0])",
    # a method takes no out=
    "x.logsumexp(1, out=o)", "x.std(1, out=o)", "x.any(1, out=o)",
    # sort/argsort: stable= a bool (sort's: or None) by keyword, with dim and descending by keyword
    "x.sort(stable=1)", "t.sort(x, stable=np.bool_(True))", "x.argsort(stable=1)", "t.argsort(x, stable=0)",
    "x.argsort(stable=None)", "x.sort(0, False, True)", "t.sort(x, 0, False, True)", "x.argsort(0, False, True)",
    "t.sort(x, 1, True, stable=False)", "x.argsort(1, stable=True)", "x.sort(0, 1)", "x.sort(descending=1)",
    "t.argsort(x, 0, 1)", "x.sort(True)", "x.argsort(True)", "x.sort(None)", "t.sort(x, dim=None)",
    "x.sort(axis=0)", "t.sort(a=x, descending=True)", "x.argsort(axis=1, descending=True)",
    "t.argsort(v.detach(), stable=True, out=t.zeros(3, dtype=t.long))", "t.argsort(v, out=t.zeros(3, dtype=t.long))",
    "x.argsort(stable=True, out=o)", "x.sort(out=(o, o))",
    # torch.norm: out= fifth, dtype= sixth; p=None is 2; 'fro' over more than two dims, 'nuc', any other
    # string: matrix_norm (its order, dim count and dim checks, in PyTorch's order)
    "t.norm(x.detach(), 2, 1, False, o)", "t.norm(x.detach(), 'fro', None, False, o[0])",
    "t.norm(x.detach(), dim=1, out=o)",
    "t.norm(x, 2, 1, False, None, t.float64)", "t.norm(x, 2, 1, False, None, None, 1)",
    "x.norm(None)", "x.norm(None, 1)", "x.norm('fro', (0, 1, 0))", "x.norm('abc')", "x.norm('nuc', 1)",
    "t.norm(t.ones(2, 2, 2), 'nuc')", "t.norm(t.ones(2, 2, 2), 'fro', (0, 1, 2))",
    "t.linalg.matrix_norm(x, 'fro', (0, 1, 0))", "t.linalg.matrix_norm(x, 'fro', (0, 1, 5))",
    "t.linalg.matrix_norm(x, 'fro', (0, -2))", "t.linalg.matrix_norm(x, 'nuc', (0,))",
    "t.linalg.matrix_norm(x, 'abc', (0, 1, 2))", "t.linalg.matrix_norm(x, 'fro', (0, True, 1))",
    # axis= outside the reductions: every native op's dim takes it (not nn.functional's Python softmax),
    # keepdims= none without a keepdim; a dim of None is the parser's TypeError
    "t.cumsum(x, axis=1)", "x.cumsum(axis=1)", "t.cumprod(x, axis=1)", "x.cumprod(axis=1)",
    "t.softmax(x, axis=1)", "x.softmax(axis=1)", "t.log_softmax(x, axis=1)", "x.log_softmax(axis=1)",
    "t.nn.functional.softmax(x, axis=1)", "t.cat([x, x], axis=1)", "t.concat([x, x], axis=1)",
    "t.concatenate([x, x], axis=1)", "t.stack([x, v[:3].expand(2, 3)], axis=1)", "t.squeeze(x[:1], axis=0)",
    "x[:1].squeeze(axis=0)", "x.squeeze(axis=(0,))", "t.unsqueeze(x, axis=0)", "x.unsqueeze(axis=0)",
    "t.topk(x, 1, axis=1)", "x.topk(1, axis=1)", "x.argmin(axis=0, keepdims=True)",
    "t.logcumsumexp(x, axis=1)", "t.cummax(x, axis=1)", "t.movedim(x, axis=0)",
    "t.moveaxis(x, source=0, destination=1)", "t.cumsum(x, None)", "x.cumsum(None)", "t.cumsum(x, dim=None)",
    "t.cumprod(x, None)", "t.softmax(x, 1, keepdims=True)", "x.cumsum(axis=1, keepdims=True)",
    "t.cumsum(x, 1, axis=1)", "t.cat([x, x], 1, axis=1)", "t.cumsum(x, 'a')",
    "x.squeeze('a', 'b')", "x.topk(1, 1, True, True, True)",
    # cat's and movedim's aliases name themselves
    "t.concat([x, x], 'a')", "t.concatenate([x, x], dim='a')", "t.moveaxis(x, 'a', 0)", "t.concat([x, x], 1.0)",
    # the frameless frontends (no wrapper: FRAMELESS below) read a refused call back as PyTorch's parser
    # reads it: an argument left out, more positional arguments than the op has, a keyword it does not
    # take (a method's out=), a non-bool for a bool, a TypeError of the frontend (a dim of another type)
    "x.unsqueeze()", "t.unsqueeze(dim=0)", "t.cat()", "x.cumsum()", "t.topk(x)", "t.squeeze(dim=0)",
    "x.unsqueeze(0, 1)", "t.cat([x, x], 0, 0)", "t.softmax(x, 1, 1, 1)", "x.cumsum(1, t.float64)",
    "t.cummin(x, 1, 1)", "t.eq(x, x, x)", "x.eq(v, 1)", "t.squeeze(x[:1], 0, 1)", "x.squeeze(0, 1)",
    "x.unsqueeze(None)", "x.unsqueeze('a')", "x.squeeze('a')", "t.stack([x, x], 'a')", "x.cummin('a')",
    "x.logcumsumexp(None)", "x.movedim(0, 1.0)", "x.log_softmax('a')", "x.cummax(None)",
    "t.cat((a for a in [x, x]), None)", "t.not_equal(x, 'a')", "x.bitwise_and(None)",
    "t.unsqueeze(x, dim=0, foo=1)", "x.cumsum(1, out=o)", "x.cumsum(1, out=None)", "x.eq(x, out=o)",
    "x.cummax(1, out=(o, o))", "x.topk(1, out=None)", "x.ne(a=x)", "t.less(x, v, out=None, foo=1)",
    "t.cat([x, x], 0, out=None, foo=1)", "x.cumsum(1, dtype=1)", "t.eq(other=x)", "t.movedim(x, source=0)",
    "x.topk(1, 1, 1)", "x.topk(1, 1, True, 1)", "x.topk(1, largest=1)", "t.stack(tensors=[x, x], dim=1)",
    "t.gt(input=x, other=v)", "t.cummax(x, 1, out=None)", "x.cumprod(axis=1, dtype=t.float64)",
]


RECORDED = Recorded("dim_args", ROWS, _run)
outcomes = RECORDED.outcomes


# ------------------------------------------------------------------ tests
@pytest.mark.parametrize("expr", ROWS)
def test_as_pytorch_reads_dim(expr):
    RECORDED.check(expr)


@pytest.mark.parametrize("name", ["sort", "argsort"])
def test_signature_shows_no_sentinel(name):
    # stable= left out is told apart from stable=False given (sort: SortBackward0, not 1): help() and
    # inspect.signature show PyTorch's default, not the sentinel
    for sig in shown_signatures(name):
        assert sig.parameters["stable"].kind == sig.parameters["stable"].KEYWORD_ONLY, sig
        assert repr(sig.parameters["stable"].default) == "False", sig


# the ops of _parser.SCHEMAS whose frontend takes PyTorch's parser's keywords itself (``**``): no wrapper
FRAMELESS = ["cumsum", "cumprod", "logcumsumexp", "cummax", "cummin", "softmax", "log_softmax", "squeeze",
             "unsqueeze", "topk", "movedim", "moveaxis", "eq", "ne", "not_equal", "lt", "less", "le", "less_equal",
             "gt", "greater", "ge", "greater_equal", "bitwise_and", "bitwise_or", "bitwise_xor", "sum", "mean"]
HOT = ["x.unsqueeze(0)", "t.unsqueeze(x, 0)", "r.squeeze(0)", "t.cat([x, x])", "t.stack([x, x], 1)",
       "x.softmax(1)", "t.log_softmax(x, 1)", "x.cumsum(1)", "t.cumprod(x, dim=1)", "x.logcumsumexp(1)",
       "x.cummax(1)", "x.cummin(0)", "x.topk(1)", "x.movedim(0, 1)", "x.eq(x)", "t.ne(x, 1)", "x.less(x)",
       "x.greater_equal(1)", "i.bitwise_and(i)", "x.sum(1)", "x.mean()"]


@pytest.mark.parametrize("expr", HOT)
def test_hot_call_runs_no_wrapper(expr):
    # a plain call of a frameless op enters its frontend first (named as the op: Tensor.<op> for the method),
    # no wrapper frame in between; PyTorch's parser is read only for a call it refuses or that uses its keywords
    env = {"t": funcgrad, "x": funcgrad.ones(2, 3), "r": funcgrad.ones(1, 3), "i": funcgrad.ones(2, dtype=funcgrad.int64)}
    first = []

    def profile(frame, event, arg):
        if event == "call" and frame.f_code.co_filename != "<string>" and not first:
            first.append(frame.f_code)

    code = compile(expr, "<string>", "eval")
    sys.setprofile(profile)
    try:
        eval(code, env)
    finally:
        sys.setprofile(None)
    op = expr.split("(")[0].split(".")[-1]
    method = not expr.startswith("t.")
    assert (first[0].co_name, first[0].co_qualname) == (op, f"Tensor.{op}" if method else op)


@pytest.mark.parametrize("name", FRAMELESS)
def test_frameless_signature(name):
    # help() and inspect.signature show PyTorch's parameters: no sentinel, no *args, no **numpy
    for sig in shown_signatures(name):
        assert all(p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD) for p in sig.parameters.values()), sig
