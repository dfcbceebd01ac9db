"""Indexing with a scalar bool, and argument errors PyTorch words otherwise.

``x[True]``/``x[False]``/``x[tensor(True)]``, alone or beside ints, slices, None, Ellipsis and other
tensor indices: PyTorch inserts a unit axis there and indexes it with ``[0]`` (True) or ``[]``
(False), an advanced index placed by the usual rule; ints select first (``x[0, :, [0]]`` keeps the
indexed axis in place, NumPy puts it first). ``x[False] = v`` does nothing, ``x[True] = v`` copies
into ``x.unsqueeze(0)``; a setitem through a view (an int, None, bool or partial slice) of a leaf
raises the view's message and names its node CopySlices; a value's leading 1s are dropped, a value
that does not broadcast raises expand's or index_put's message, one of another type a TypeError.
Rows read the result (shape, dtype, node, values), its gradient, and the tensors a setitem wrote
(a view's base too).

Then the errors: ``flip``'s dims, the aliases of the op table naming themselves (``divide``, not
``div``), a single Tensor where ``cat``/``stack``/... take a sequence, ``div``'s rounding_mode, and
``tensordot``'s dtype check, each leaving its inputs as they were (in-place forms too).

Each row is one expression; its outcome is recorded from PyTorch 2.13 in
``tests/fixtures/parity_gaps/outcomes.json`` by ``tests/fixtures/parity_gaps/make_fixtures.py``
and compared live with PyTorch where it is installed.
"""

from __future__ import annotations

import numpy as np
import pytest

from ._rows import Recorded, run

# ------------------------------------------------------------------ the rows
# index expressions on x (2, 3, 4)
INDEX = ["True", "False", "torch.tensor(True)", "torch.tensor(False)", "(True,)", "None, True", "..., False",
         "0, True", "True, 1", "True, ...", "..., True", "True, True", "True, False", "False, 0, 1", ":, True",
         "1:, True, 0", "[0, 1], True", "[0, 1], :, True", "True, :, [0, 1]", "[0, 1], True, [0, 1]",
         "[0, 1], True, None, [0, 1]", "[1, 0], False", "torch.tensor([True, False]), True",
         "True, torch.tensor([True, False])", "True, None, ..., False", "torch.tensor(True), :, torch.tensor(False)",
         "0, :, [0]", "[0], :, 0", ":, 0, [0, 1]", "0, [0, 1], :", "[[0], [1]], 0, [1, 2]", "None, 0, [1, 2]",
         "0, None, [1, 2]", "1, ..., [3, 0]", "True, 0, 0, 0", "True, [1], 0, [2]",
         # errors
         "True, [5]", "True, 2", "torch.tensor(True), 0, 0, 0, 0", "torch.tensor([True, False]), 0, 0, 0",
         "True, 0, 0, 0, 0", "None, 5", "..., 5", "None, 0, 7", "True, 0, [9]", ":, [5]", "[0, 1], [0, 1, 2]",
         "torch.ones(2, 5, dtype=torch.bool)", "0, torch.ones(2, dtype=torch.bool)",
         "None, torch.ones(3, dtype=torch.bool)", "torch.ones(3, dtype=torch.bool), 1:",
         "torch.ones(2, dtype=torch.bool), [0, 1, 2]"]
SETS = ["5.0", "-torch.arange(4.0)", "torch.ones(1, 1, 4)", "torch.ones(7)", "'a'"]
ROWS = ([f"x[{i}]" for i in INDEX] + [f"g[{i}]" for i in INDEX[:24]] + [f"G(lambda a: a[{i}])" for i in INDEX[:36]]
        + [f"S(x, ({i}), {v})" for i in INDEX[:36] for v in SETS[:2]]
        + [f"S(x, {i}, {v})" for i in ["True", "False", "torch.tensor(True)", "torch.tensor(False)"] for v in SETS]
        + [f"SV(({i}), -torch.arange(2.0))" for i in INDEX[:24]]
        + [f"GS(({i}))" for i in INDEX[:36]]
        + [f"S(w, ({i}), 5.0)" for i in ["True", "False", "torch.tensor(False)", "(False,)", "0", "[0]", "..."
                                         , "[0, 1], :", ":, [0, 1]", "1:, [0]", "None, [0]"]]
        + [f"S(x, {i}, {v})" for i in ["0", "[0, 1]", "None", "0, [0, 1]", "..."] for v in
           ["torch.ones(2, 3, 4)", "torch.ones(5, 4)", "torch.ones(3, 5)", "torch.ones(1, 1, 1, 3, 4)", "torch.ones(7)",
            "np.float32(1)", "np.float64(2)", "np.int64(3)", "[1, 2, 3, 4]", "None"]])

# the errors (a float 2x3, i its int64 twin)
FLIP = ["a.flip(1.0)", "torch.flip(a, 1.0)", "a.flip((1.0,))", "a.flip(dims=1.0)", "torch.flip(a, dims=1.0)",
        "a.flip([0, 1.0])", "a.flip(0, 1.0)", "a.flip(True)", "a.flip(None)", "a.flip('a')", "torch.flip(a, (1.0,))",
        "a.flip()", "torch.flip(a)", "torch.flip(a, 0, 1)", "torch.flip(a, 1)", "torch.flip(input=a, dims=1)",
        "a.flip(torch.tensor(1))", "a.flip(axis=1)", "torch.flip(a, dims=[0], out=None)", "torch.flip(a, [0, 0])",
        "a.flip(1)", "a.flip(-1)", "a.flip(0, 1)", "a.flip(dims=(1,))", "torch.flip(a, [1])", "a.flip(np.int64(1))",
        "a.flip([np.int64(1)])", "torch.flip(a, [torch.tensor(1)])", "torch.fliplr(a)", "torch.flipud(a)"]
# (the aliases name themselves; div/mul/sub's own forms beside them: their one-operand errors)
ARITH = [f.format(n=n) for n in ["divide", "true_divide", "multiply", "subtract", "floor_divide", "div", "mul", "sub"]
         for f in ["torch.{n}(a, 'a')", "a.{n}('a')", "a.{n}_('a')", "torch.{n}(a, 2)", "a.{n}_(2)",
                   "a.{n}(np.float64(2))"]]
ARITH += [f.format(n=n) for n in ["divide", "true_divide", "multiply", "subtract", "floor_divide"]
          for f in ["torch.{n}('a')", "torch.{n}(a, a, 'a')", "a.{n}(a, 'a')"]]
ARITH += ["torch.true_divide(a, a, rounding_mode='floor')", "torch.divide(a, 2, rounding_mode='floor')",
          "a.divide_(2, rounding_mode='trunc')", "torch.subtract(a, a, alpha=2)", "a.subtract_(a, alpha='a')",
          "torch.div(a, a, rounding_mode='bad')", "a.div_(a, rounding_mode='bad')", "a.divide(2, rounding_mode='bad')",
          "torch.div(a, 2, rounding_mode='Floor')", "a.div_(2, rounding_mode='bad')", "a.divide_(a, rounding_mode='bad')",
          "torch.divide(a, a, rounding_mode='bad')", "i.floor_divide_(2)"]
ALIASES = [f.format(n=n) for n in ["absolute", "arccos", "arccosh", "arcsin", "arcsinh", "arctan", "arctanh", "negative",
                                   "fix"] for f in ["torch.{n}(a, 'a')", "torch.{n}(a, a, 'a')"]]
ALIASES += ["torch.arctan2(a, 'a')", "torch.arctan2('a')", "torch.swapaxes(a, 1.5, 'a', 'b')", "torch.ger(a, a, 'a')",
            "torch.row_stack(a, 1)", "torch.swapdims(a, 1.5, 'a', 'b')"]
SEQUENCE = ["torch.concat(a)", "torch.cat(a)", "torch.concatenate(a)", "torch.stack(a)", "torch.hstack(a)",
            "torch.vstack(a)", "torch.dstack(a)", "torch.column_stack(a)", "torch.row_stack(a)", "torch.cat(a, 1)",
            "torch.cat(a, dim=0)", "torch.stack(a, 1)", "torch.cat(tensors=a)", "torch.hstack(tensors=a)",
            "torch.vstack(tensors=a)", "torch.hstack((a, a))", "torch.row_stack([a])", "torch.concat((a, a), 1)",
            "torch.column_stack([a, a])"]
TENSORDOT = ["torch.tensordot(a, i.T, 1)", "torch.tensordot(a, i, 0)", "torch.tensordot(a, i.T, ([1], [0]))",
             "torch.tensordot(i, a.T, dims=1)", "torch.tensordot(a, a.double().T, 1)", "torch.tensordot(a, i.int(), 2)",
             "torch.tensordot(a, a.T, 1)", "torch.tensordot(i, i.T, 1)", "torch.tensordot(a, i.T, -1)",
             "torch.tensordot(a, i.T, ([1], [0, 1]))", "torch.tensordot(a, a, 1)", "torch.tensordot(a, a, 2)",
             "torch.tensordot(a, a, ([0, 1], [1, 0]))", "torch.tensordot(a, i.T, ([0, 1], [1, 0]))",
             "torch.tensordot(a, a.T, 3)", "torch.tensordot(a, a, ([5], [0]))"]
ROWS += FLIP + ARITH + ALIASES + SEQUENCE + TENSORDOT


def _env(L):
    x = L.arange(24.0).reshape(2, 3, 4)

    def S(t, idx, v):  # setitem, then what it wrote
        t[idx] = v
        return t, t._version

    def SV(idx, v):  # setitem through a view: the view and its base
        b = x.transpose(0, 2)
        b[idx] = v
        return b, x, x._version

    def G(f):  # a result and the gradient reaching the leaf
        w = L.arange(24.0, dtype=L.float64).reshape(2, 3, 4).requires_grad_()
        y = f(w)
        y.backward(L.arange(1.0, y.numel() + 1, dtype=L.float64).reshape(y.shape))
        return y, w.grad

    def GS(idx):  # setitem of a value requiring grad into a non-leaf: both gradients
        w = L.arange(24.0, dtype=L.float64).reshape(2, 3, 4).requires_grad_()
        v = L.tensor([-1.0, -2.0, -3.0, -4.0], dtype=L.float64, requires_grad=True)
        a = w * 1
        a[idx] = v
        (a * L.arange(1.0, 25.0, dtype=L.float64).reshape(2, 3, 4)).sum().backward()
        return a, w.grad, v.grad

    return {"torch": L, "np": np, "x": x, "g": x.permute(2, 0, 1)[1:], "w": L.ones(2, 3, 4, requires_grad=True),
            "a": L.arange(6.0).reshape(2, 3), "i": L.arange(6).reshape(2, 3), "S": S, "SV": SV, "G": G, "GS": GS}


def _describe(r):
    if isinstance(r, (tuple, list)):
        return [_describe(i) for i in r]
    if not hasattr(r, "grad_fn"):
        return r if r is None or isinstance(r, (bool, int, str)) else repr(r)
    vals = r.detach().double().tolist() if r.dtype.is_floating_point else r.tolist()
    return [list(r.shape), str(r.dtype).split(".")[-1], None if r.grad_fn is None else type(r.grad_fn).__name__,
            np.round(np.asarray(vals, dtype=float), 5).tolist()]


def _run(L, expr):
    return run(L, expr, _env(L), lambda r, env: _describe(r))


RECORDED = Recorded("parity_gaps", ROWS, _run)
outcomes = RECORDED.outcomes


# ------------------------------------------------------------------ tests
@pytest.mark.parametrize("expr", ROWS)
def test_as_pytorch(expr):
    RECORDED.check(expr)
