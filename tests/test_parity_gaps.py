"""Indexing with a scalar bool.

``x[True]``/``x[False]``/``x[tensor(True)]``, alone or beside ints, slices, None, Ellipsis and other
tensor indices: PyTorch inserts a unit axis there and indexes it with ``[0]`` (True) or ``[]``
(False), an advanced index placed by the usual rule; ints select first (``x[0, :, [0]]`` keeps the
indexed axis in place, NumPy puts it first). ``x[False] = v`` does nothing, ``x[True] = v`` copies
into ``x.unsqueeze(0)``; a setitem through a view (an int, None, bool or partial slice) of a leaf
raises the view's message and names its node CopySlices; a value's leading 1s are dropped, a value
that does not broadcast raises expand's or index_put's message, one of another type a TypeError.
Rows read the result (shape, dtype, node, values), its gradient, and the tensors a setitem wrote
(a view's base too).

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
