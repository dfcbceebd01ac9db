"""Which input gradients a backward computes is decided at backward time, as PyTorch's engine does
(``task_should_compute_output``): a plain ``backward()`` computes every input's that requires grad,
``autograd.grad(out, inputs)`` and ``backward(inputs=...)`` only those on a path to ``inputs``. So a
derivative ``derivatives.yaml`` states ``not_implemented`` (igamma's and igammac's ``self``, zeta's
``self``; the in-place acosh_/asinh_/atanh_ and unique's values have none at all) raises PyTorch's NotImplementedError
only where it is needed: ``autograd.grad(igamma(a, x).sum(), x)`` gives x's gradient although ``a``
requires grad too.

The engine's side of it, also in the rows: a captured node that leads to no other input does not
run (its node hooks do not fire, its tensor hooks do); a captured node that runs is captured before
its tensor hooks (PyTorch's ``evaluate_function``); ``backward(inputs=...)`` calls ``retain_grad``
on each input (a non-leaf keeps its ``.grad``; one that does not require grad raises), runs the
inputs' nodes (a leaf's post-accumulate hooks fire; an input listed twice accumulates once).

Each row is one expression over fresh leaves ``s`` (the input whose derivative is not implemented)
and ``o`` (the one whose derivative is), built from the spec table ``OPS`` x ``ASKS``; its outcome
(the result's repr, or the exception type and message) is recorded from PyTorch 2.13 in
``tests/fixtures/engine_needed_inputs/outcomes.json`` by
``tests/fixtures/engine_needed_inputs/make_fixtures.py`` and compared live with PyTorch where it
is installed.
"""

from __future__ import annotations

import math

import pytest

import funcgrad

from ._rows import Recorded

try:
    import torch
except ImportError:  # the recorded outcomes stand alone
    torch = None

# ------------------------------------------------------------------ the spec table
# y as an expression of ``{S}`` (whose derivative is not implemented) and ``{O}`` (whose is)
OPS = {
    "igamma": "L.igamma({S}, {O})",
    "igammac": "L.igammac({S}, {O})",
    "special.gammainc": "L.special.gammainc({S}, {O})",
    "special.zeta": "L.special.zeta({S}, {O})",
    "special.zeta other scalar": "L.special.zeta({S}, 2.0)",
    "special.zeta self scalar": "L.special.zeta(2.0, {O})",
    # in place: no derivative at all (AcoshBackward1...), o on another path
    "Tensor.acosh_": "({S} * 1).acosh_() + {O}",
    "Tensor.arcsinh_": "({S} * 1).arcsinh_() * {O} * {O}",
    "atanh_": "L.atanh_({S} / 4) + {O}",
    # unique's values (Unique2Backward0...)
    "unique": "L.unique({S}).sum() + {O}",
    "Tensor.unique dim": "{S}[None].unique(dim=0)[0] * {O} * {O}",
    "unique_consecutive": "L.unique_consecutive({S}, return_counts=True)[0] + {O}",
    # no derivatives.yaml entry: PyTorch's NotImplemented node raises whenever it runs
    "heaviside": "L.heaviside({S}, {O} * 0 + 0.5) + {O}",
    "histogram": "L.histogram({S}, 3)[0].sum() + {O}",
}
# what is asked of y (``{y}``: the op on s and o; ``{y2}``: on the non-leaf ``s * 2`` and o)
ASKS = [
    "G({y}, o)",                      # only the implemented input: no error
    "G({y}, s)",                      # the not-implemented one: PyTorch's NotImplementedError
    "G({y}, s, o)",
    "G({y}, o, s, allow_unused=True)",
    "B({y})",                         # a plain backward needs every input that requires grad
    "B({y}, [o])",
    "B({y}, [s])",
    "Cap(lambda: {y})",               # y itself captured: y's node does not run
    "Keep(lambda: {y})",              # backward(inputs=[y]): y's node runs, needing nothing
    "G({y} + s, o)",                  # s has another path, o is asked
    "G({y} + s, s)",                  # s asked: its path through y needs the missing derivative
    "G({y} * s, o)",
    "G2(lambda: {y}, o, s)",          # o's gradient (create_graph), differentiated for s
    "G2(lambda: {y}, o, o)",
    "G({y2}, o)",                     # s a non-leaf: its node is not needed
    "B({y2}, [o])",
    "Twice(lambda: {y})",             # backward(inputs=[o], retain_graph) then again
]
# the engine's rules, apart from any op (see the module's docstring)
ENGINE = [
    "Hooked('grad y')", "Hooked('backward inputs y')", "Hooked('grad x')", "Hooked('grad y, x')",
    "Hooked('backward inputs x')", "Hooked('grad w')", "Hooked('backward')",
    "Inputs('does not require grad')", "Inputs('unused')", "Inputs('post accumulate hook')",
    "Inputs('twice')", "Inputs('view')", "Inputs('non-leaf then backward')",
    "Inputs('non-leaf hooked, and its leaf')", "Inputs('NotImplemented node kept')",
    "Inputs('NotImplemented node captured')",
]


def _rows():
    rows = []
    for op, form in OPS.items():
        y, y2 = form.format(S="s", O="o"), form.format(S="(s * 2)", O="o")
        rows += [f"{op}: " + a.format(y=y, y2=y2) for a in ASKS]
    return list(dict.fromkeys(rows + [f"engine: {e}" for e in ENGINE]))  # (an op without {S})


ROWS = _rows()


# ------------------------------------------------------------------ running a row
def _env(L) -> dict:
    s = L.tensor([1.5, 2.0], requires_grad=True)
    o = L.tensor([0.7, 0.3], requires_grad=True)

    def G(y, *inputs, **kw):
        return L.autograd.grad(y.sum(), inputs, **kw)

    def B(y, inputs=None):
        y.sum().backward(inputs=inputs)
        return s.grad, o.grad

    def Cap(f):
        y = f()
        return L.autograd.grad((y * 2).sum(), y)

    def Keep(f):
        y = f()
        (y * 2).sum().backward(inputs=[y])
        return y.grad, s.grad, o.grad

    def G2(f, first, then):
        (g,) = L.autograd.grad(f().sum(), first, create_graph=True)
        return L.autograd.grad(g.sum(), then)

    def Twice(f):
        y = f().sum()
        y.backward(inputs=[o], retain_graph=True)
        y.backward(inputs=[o])
        return s.grad, o.grad

    return dict(L=L, s=s, o=o, G=G, B=B, Cap=Cap, Keep=Keep, G2=G2, Twice=Twice,
                Hooked=lambda mode: _hooked(L, mode), Inputs=lambda case: _inputs(L, case))


def _hooked(L, mode):
    """y = igammac(a, w), w = x * 3: what each way of asking returns, and which hooks ran."""
    a = L.tensor([1.5, 2.0], requires_grad=True)
    x = L.tensor([0.7, 0.3], requires_grad=True)
    w = x * 3
    y = L.igammac(a, w)
    log = []
    y.grad_fn.register_prehook(lambda go: log.append("y pre-hook"))
    y.grad_fn.register_hook(lambda gi, go: log.append(("y hook", [g is None for g in gi])))
    y.register_hook(lambda g: log.append("y tensor hook") or g * 2)
    w.grad_fn.register_hook(lambda gi, go: log.append(("w hook", [g is None for g in gi])))
    z = (y * y).sum()
    if mode == "grad y":
        r = L.autograd.grad(z, y)
    elif mode == "backward inputs y":
        z.backward(inputs=[y])
        r = y.grad, y.retains_grad
    elif mode == "grad x":
        r = L.autograd.grad(z, x)
    elif mode == "grad y, x":
        r = L.autograd.grad(z, [y, x])
    elif mode == "backward inputs x":
        z.backward(inputs=[x])
        r = x.grad, a.grad
    elif mode == "grad w":
        r = L.autograd.grad(z, w)
    else:
        z.backward()
        r = x.grad, a.grad
    return r, log


def _inputs(L, case):
    """``backward(inputs=...)``: PyTorch retains each input's grad and runs its node."""
    x = L.tensor([1.0, 2.0], requires_grad=True)
    w = L.tensor([3.0, 4.0], requires_grad=True)
    if case == "does not require grad":
        (x * L.tensor([1.0, 2.0])).sum().backward(inputs=[L.tensor([1.0, 2.0])])
    elif case == "unused":
        (x * 2).sum().backward(inputs=[w])
        return w.grad, x.grad
    elif case == "post accumulate hook":
        log = []
        w.register_post_accumulate_grad_hook(lambda t: log.append(t.grad.sum().item()))
        (x * w).sum().backward(inputs=[w])
        return w.grad, x.grad, log
    elif case == "twice":
        (w * w).sum().backward(inputs=[w, w])
        return w.grad
    elif case == "view":
        y = w * 2
        v = y[0]
        (v * v).backward(inputs=[v])
        return v.grad, v.retains_grad, y.retains_grad
    elif case == "non-leaf then backward":
        y = x * 2
        (y * y).sum().backward(inputs=[y], retain_graph=True)
        first = y.grad.clone(), y.retains_grad, x.grad
        (y * y).sum().backward()
        return first, y.grad, x.grad
    elif case.startswith("NotImplemented"):  # PyTorch's Error node raises whenever it runs
        y = L.heaviside(x, w)
        if case.endswith("kept"):
            (y * 2).sum().backward(inputs=[y])
            return y.grad
        return L.autograd.grad((y * 2).sum(), y)
    else:
        y = x * 3
        y.register_hook(lambda g: g * 10)
        (y * y).sum().backward(inputs=[y, x])
        return y.grad, x.grad
    return None


def _described(r):
    """A result as JSON: a tensor as ``{"values": [...], "grad_fn": name}``, the rest as it is."""
    if isinstance(r, (tuple, list)):
        return [_described(v) for v in r]
    if hasattr(r, "grad_fn"):
        fn = r.grad_fn
        return {"values": r.detach().tolist(), "grad_fn": None if fn is None else type(fn).__name__}
    return r


def _run(L, expr):
    env = _env(L)
    try:
        r = eval(expr.split(": ", 1)[1], env)
    except Exception as e:  # noqa: BLE001 (the row's outcome)
        return [type(e).__name__, str(e).replace("torch.", "funcgrad.")], True
    return ["ok", _described(r)], True


def _same(got, want) -> bool:
    """Equal outcomes, floats to float32's precision (a kernel's last bit may differ)."""
    if isinstance(want, float) and isinstance(got, float):
        return math.isclose(got, want, rel_tol=1e-5, abs_tol=1e-6)
    if isinstance(want, list) and isinstance(got, list):
        return len(got) == len(want) and all(_same(g, w) for g, w in zip(got, want, strict=True))
    if isinstance(want, dict) and isinstance(got, dict):
        return got.keys() == want.keys() and all(_same(got[k], want[k]) for k in want)
    return got == want


RECORDED = Recorded("engine_needed_inputs", ROWS, _run)
outcomes = RECORDED.outcomes


# ------------------------------------------------------------------ tests
@pytest.mark.parametrize("expr", ROWS)
def test_as_pytorch_decides_needed_inputs(expr):
    want = RECORDED.recorded[expr]
    if torch is not None:  # the record is PyTorch's still
        assert _same(_run(torch, expr)[0], want), "rerun tests/fixtures/engine_needed_inputs/make_fixtures.py"
    got = _run(funcgrad, expr)[0]
    assert _same(got, want), (got, want)


def test_unwanted_gradient_not_computed():
    # x @ w with both requiring grad, x's gradient asked: w's is not computed (the kernel is the
    # one specialised on x alone), as PyTorch's MmBackward0 skips it
    x = funcgrad.ones(2, 3, requires_grad=True)
    w = funcgrad.ones(3, 4, requires_grad=True)
    y = x @ w
    node = y.grad_fn
    (g,) = funcgrad.autograd.grad(y.sum(), x)
    assert g.tolist() == [[4.0] * 3] * 2
    op, key = node._op, node._key
    assert (*key[:3], (True, False), key[4]) in op._bwd
