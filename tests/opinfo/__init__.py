"""OpInfo-style sweep against PyTorch: sample inputs for every op of ``funcgrad._ops.OPS``.

A ``Sample`` is one user-level call written once, ``call(lib, *tensors)``, where ``lib`` is the
``funcgrad`` or the ``torch`` module: the same program runs on both and ``compare`` checks, as
PyTorch's OpInfo tests do, the forward values, the result's dtype and shape, the ``grad_fn`` name,
whether both raise (and with which exception type), and the float64 gradient of every float
input for a random cotangent (``autograd.grad``). Each family module here exports ``SAMPLES``
(and may export ``EXCLUDED``: op key → why it has no sample); ``allowlist.py`` lists the known
mismatches with the reason funcgrad differs. ``tests/test_opinfo_torch.py`` runs them.
"""

from __future__ import annotations

import dataclasses
import math
import warnings
from typing import Callable

import numpy as np


@dataclasses.dataclass
class Sample:
    """One call of one op.

    op: key in ``funcgrad._ops.OPS`` this sample reaches.
    call: ``call(lib, *tensors)`` with ``lib`` = ``funcgrad`` or ``torch``.
    inputs: numpy arrays (tensors, their dtype kept), ``View`` (a non-contiguous view of a leaf)
        or ``Py`` (a Python value passed as is).
    grad: indices of the inputs that require grad (default: every floating input).
    id: a readable name, unique within the op (the allowlist's key is ``op/id``).
    rtol/atol: tolerance for float64 values and gradients (float32 gets at least 1e-5/1e-6).
    """

    op: str
    call: Callable
    inputs: list
    grad: tuple | None = None
    id: str = ""
    rtol: float = 1e-7
    atol: float = 1e-9
    grad_check: bool = True

    @property
    def key(self):
        return f"{self.op}/{self.id}"


@dataclasses.dataclass
class View:
    """A non-contiguous input: a leaf made from ``base``, then ``how`` applied (``"t"``: the
    transpose of the last two dims; ``"step"``: every other element of the last dim). The
    gradient is taken with respect to the leaf."""

    base: np.ndarray
    how: str = "t"

    def apply(self, t):
        if self.how == "t":
            return t.transpose(-1, -2)
        return t[..., ::2]


@dataclasses.dataclass
class Py:
    """A Python value passed to the call as is (a scalar operand, a list of indices)."""

    value: object


# ---- edge values -----------------------------------------------------------------------------
INF, NAN = math.inf, math.nan
# ±0, ±1 (ties with integers), halves (rounding ties), ±inf, nan, huge, tiny, and ordinary values
EDGE = np.array([0.0, -0.0, 1.0, -1.0, 0.5, -0.5, 2.5, -2.5, INF, -INF, NAN, 1e300, -1e300, 1e-300,
                 0.3, -0.7], np.float64)


# PyTorch's CPU kernels run a vectorized loop over contiguous operands, 2 vectors at a time (16
# float32 on AVX2, 32 on AVX-512), and a scalar loop over the rest; the two disagree at a few edge
# values (elu's gradient at nan, logit's at -0.0...). funcgrad gives the vectorized answer, what a
# tensor of any realistic size gets on every CPU, so the oracle's contiguous edge inputs have a
# multiple of VEC elements: PyTorch then vectorizes every element whatever the machine's vector width.
VEC = 64


def rand(*shape, seed=0, low=None, high=None, dtype=np.float64):
    rng = np.random.default_rng(seed)
    if low is None:
        a = rng.standard_normal(shape)
    else:
        a = rng.uniform(low, high, shape)
    return np.asarray(a, dtype)


def ints(*shape, low=-3, high=4, seed=0):
    return np.random.default_rng(seed).integers(low, high, shape).astype(np.int64)


def bools(*shape, seed=0):
    return np.random.default_rng(seed).integers(0, 2, shape).astype(bool)


# ---- running a sample on one library ------------------------------------------------------------
def _leaves(lib, sample):
    """(leaves, call arguments) for ``lib``; ``leaves[i]`` is None for Python values."""
    want = sample.grad
    leaves, args = [], []
    for i, a in enumerate(sample.inputs):
        if isinstance(a, Py):
            leaves.append(None)
            args.append(a.value)
            continue
        base = a.base if isinstance(a, View) else a
        floating = np.issubdtype(base.dtype, np.floating)
        rg = floating and (want is None or i in want)
        t = lib.tensor(base.copy(), requires_grad=rg)
        leaves.append(t if rg else None)
        args.append(a.apply(t) if isinstance(a, View) else t)
    return leaves, args


def _flat(r):
    if isinstance(r, (tuple, list)):
        out = []
        for x in r:
            out.extend(_flat(x))
        return out
    return [r]


def _is_tensor(lib, x):
    return isinstance(x, lib.Tensor)


def _np(lib, t):
    if lib.__name__ == "torch":
        return t.detach().numpy(force=True)
    return np.asarray(t.detach()._value)


def run(lib, sample):
    """Run ``sample`` on ``lib``: dict with the outputs (numpy), dtypes, node names, gradients,
    or the exception type name where the forward / backward raised."""
    res = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # warnings are not what this sweep compares
        try:
            leaves, args = _leaves(lib, sample)
            out = sample.call(lib, *args)
        except Exception as e:  # noqa: BLE001 - the type is compared with the other library's
            res["raises"] = type(e).__name__
            return res
        outs = _flat(out)
        res["outs"] = [(_np(lib, o), str(o.dtype).split(".")[-1]) if _is_tensor(lib, o) else ("py", o)
                       for o in outs]
        diff = [o for o in outs if _is_tensor(lib, o) and o.requires_grad]
        # torch's name() of its C++-only nodes carries the namespace (torch::autograd::CopySlices);
        # the class name users see in reprs is the bare one
        res["grad_fn"] = [None if o.grad_fn is None else o.grad_fn.name().replace("torch::autograd::", "")
                          for o in outs if _is_tensor(lib, o)]
        res["requires_grad"] = [o.requires_grad for o in outs if _is_tensor(lib, o)]
        ins = [t for t in leaves if t is not None]
        if not sample.grad_check or not diff or not ins:
            return res
        rng = np.random.default_rng(1)
        cots = [lib.tensor(rng.standard_normal(tuple(o.shape))).to(o.dtype) for o in diff]
        try:
            gs = lib.autograd.grad(diff, ins, cots, allow_unused=True)
        except Exception as e:  # noqa: BLE001
            res["grad_raises"] = type(e).__name__
            return res
        res["grads"] = [None if g is None else _np(lib, g) for g in gs]
    return res


def _close(a, b, rtol, atol):
    a, b = np.asarray(a), np.asarray(b)
    if a.shape != b.shape:
        return f"shape {a.shape} vs torch {b.shape}"
    if a.dtype == bool or np.issubdtype(a.dtype, np.integer):
        if not np.array_equal(a, b):
            return f"values differ: {a.ravel()[:8]} vs torch {b.ravel()[:8]}"
        return None
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    if a.dtype == np.float32 or b.dtype == np.float32:
        rtol, atol = max(rtol, 1e-5), max(atol, 1e-6)
    bad = ~np.isclose(a64, b64, rtol=rtol, atol=atol, equal_nan=True)
    # huge finite values: compare relatively only (atol is meaningless at 1e300)
    if bad.any():
        i = np.flatnonzero(bad.ravel())[:4]
        return f"values differ at {i.tolist()}: {a64.ravel()[i].tolist()} vs torch {b64.ravel()[i].tolist()}"
    return None


def compare(sample, mine, theirs):
    """Mismatches ``[(kind, detail)]`` of funcgrad's run ``mine`` against torch's ``theirs``."""
    bad = []
    if "raises" in mine or "raises" in theirs:
        if mine.get("raises") != theirs.get("raises"):
            bad.append(("raises", f"funcgrad {mine.get('raises')} vs torch {theirs.get('raises')}"))
        return bad
    mo, to = mine["outs"], theirs["outs"]
    if len(mo) != len(to):
        return [("outputs", f"{len(mo)} outputs vs torch {len(to)}")]
    for j, ((a, da), (b, db)) in enumerate(zip(mo, to)):
        if isinstance(a, str) != isinstance(b, str):
            bad.append(("type", f"output {j}: tensor/python value mismatch"))
            continue
        if isinstance(a, str):
            if da != db:
                bad.append(("value", f"output {j}: {da!r} vs torch {db!r}"))
            continue
        if da != db:
            bad.append(("dtype", f"output {j}: {da} vs torch {db}"))
        msg = _close(a, b, sample.rtol, sample.atol)
        if msg:
            bad.append(("shape" if msg.startswith("shape") else "value", f"output {j}: {msg}"))
    if mine["requires_grad"] != theirs["requires_grad"]:
        bad.append(("requires_grad", f"{mine['requires_grad']} vs torch {theirs['requires_grad']}"))
    elif mine["grad_fn"] != theirs["grad_fn"]:
        bad.append(("grad_fn", f"{mine['grad_fn']} vs torch {theirs['grad_fn']}"))
    if "grad_raises" in mine or "grad_raises" in theirs:
        if mine.get("grad_raises") != theirs.get("grad_raises"):
            bad.append(("grad", f"backward raises: funcgrad {mine.get('grad_raises')} vs torch "
                                f"{theirs.get('grad_raises')}"))
        return bad
    for i, (g, h) in enumerate(zip(mine.get("grads", []), theirs.get("grads", []))):
        if (g is None) != (h is None):
            # an unused input: None in one, zeros in the other is the same gradient
            z = h if g is None else g
            if np.any(np.asarray(z) != 0):
                bad.append(("grad", f"input {i}: None vs torch zeros or the reverse"))
            continue
        if g is not None:
            msg = _close(g, h, sample.rtol, sample.atol)
            if msg:
                bad.append(("grad", f"input {i}: {msg}"))
    return bad
