"""Common mistakes against PyTorch: every row runs the same mistake on ``torch`` and on
``funcgrad``; both must raise the same exception type with the same first line of message
(PyTorch's ``torch.`` prefixes read ``funcgrad.``), and funcgrad must leave every object the row
built unchanged (values, versions, ``requires_grad``, ``.grad``, module state, optimizer state).

Without PyTorch the expected type and first line come from ``tests/fixtures/errors/errors.json``,
recorded from PyTorch 2.13 by ``tests/fixtures/errors/make_fixtures.py``.
"""

from __future__ import annotations

import json
import pathlib
import warnings

import numpy as np
import pytest

import funcgrad
import funcgrad.nn  # noqa: F401
import funcgrad.nn.functional  # noqa: F401
import funcgrad.optim  # noqa: F401
import funcgrad.utils.data  # noqa: F401

from .test_misuse import _sd_missing, _sd_unexpected  # the same two mistakes, one definition

FIXTURE = pathlib.Path(__file__).parent / "fixtures" / "errors" / "errors.json"


# ------------------------------------------------------------------ objects the rows start from
def _t(lib, *shape, grad=False, dtype=None):
    lib.manual_seed(0)
    return lib.randn(*shape, requires_grad=grad, dtype=dtype or lib.float32)


def _f64(lib, *shape):
    return _t(lib, *shape, dtype=lib.float64)


def _x(lib):
    return {"x": _t(lib, 2, 3, grad=True), "w": _t(lib, 3, 2)}


def _lin(lib):
    lib.manual_seed(0)
    m = lib.nn.Linear(3, 2)
    return {"m": m, "opt": lib.optim.SGD(m.parameters(), lr=0.1)}


def _conv(lib):
    lib.manual_seed(0)
    return {"m": lib.nn.Conv2d(3, 4, 3), "x": _t(lib, 1, 2, 8, 8)}


def _inference(lib):
    with lib.inference_mode():
        i = lib.ones(2)
    return {"i": i, "w": lib.ones(2, requires_grad=True)}


def _freed(lib):
    x = _t(lib, 3, grad=True)
    y = (x * x).sum()
    y.backward()
    return {"x": x, "y": y}


def _saved(lib):
    x = _t(lib, 3, grad=True)
    h = x * 2
    return {"x": x, "h": h, "z": (h * h).sum()}


def _saved_out(lib):
    x = _t(lib, 2, grad=True)
    e = x.exp()
    return {"x": x, "e": e, "z": e.sum()}


def _ds(lib):
    return {"a": lib.arange(6.0), "b": lib.arange(5.0)}


# ------------------------------------------------------------------ the rows: (id, setup, mistake)
def _sd_size(o, lib):
    sd = dict(o["m"].state_dict())
    sd["weight"] = lib.zeros(2, 4)
    o["m"].load_state_dict(sd)


def _saved_modified(lib):
    o = _saved(lib)
    o["h"].add_(1)
    return o


def _saved_detach_modified(lib):
    o = _saved(lib)
    o["h"].detach().zero_()
    return o


def _saved_out_modified(lib):
    o = _saved_out(lib)
    o["e"].add_(1)
    return o


def _saved_out_nograd_modified(lib):
    o = _saved_out(lib)
    with lib.no_grad():
        o["e"].mul_(2)
    return o


def _backward_z(o, lib):
    o["z"].backward()


def _backward_twice(o, lib):
    o["y"].backward()


def _grad_assign(o, lib):
    o["x"].grad = lib.zeros(3)


def _inference_setitem(o, lib):
    o["i"][0] = 2.0


def _iadd(t, v):
    t += v


ROWS = [
    # ---- dtype mismatches in products (PyTorch does not promote them)
    ("mm float32 @ float64", lambda lib: {}, lambda o, lib: lib.mm(_t(lib, 2, 3), _f64(lib, 3, 2))),
    ("matmul 2-D float32 @ float64", lambda lib: {}, lambda o, lib: _t(lib, 2, 3) @ _f64(lib, 3, 2)),
    ("matmul 1-D @ 1-D dtypes", lambda lib: {}, lambda o, lib: _t(lib, 3) @ _f64(lib, 3)),
    ("matmul 2-D @ 1-D dtypes", lambda lib: {}, lambda o, lib: _t(lib, 2, 3) @ _f64(lib, 3)),
    ("matmul 1-D @ 2-D dtypes", lambda lib: {}, lambda o, lib: _t(lib, 3) @ _f64(lib, 3, 2)),
    ("matmul 3-D @ 3-D dtypes", lambda lib: {}, lambda o, lib: _t(lib, 4, 2, 3) @ _f64(lib, 4, 3, 2)),
    ("matmul 3-D @ 2-D dtypes", lambda lib: {}, lambda o, lib: _t(lib, 4, 2, 3) @ _f64(lib, 3, 2)),
    ("matmul 2-D @ 3-D dtypes", lambda lib: {}, lambda o, lib: _t(lib, 2, 3) @ _f64(lib, 4, 3, 2)),
    ("matmul int64 @ float32", lambda lib: {},
     lambda o, lib: lib.ones(2, 3, dtype=lib.int64) @ _t(lib, 3, 2)),
    ("bmm dtypes", lambda lib: {}, lambda o, lib: lib.bmm(_t(lib, 4, 2, 3), _f64(lib, 4, 3, 2))),
    ("dot dtypes", lambda lib: {}, lambda o, lib: lib.dot(_t(lib, 3), _f64(lib, 3))),
    ("mv dtypes", lambda lib: {}, lambda o, lib: lib.mv(_t(lib, 2, 3), _f64(lib, 3))),
    ("F.linear weight dtype", lambda lib: {},
     lambda o, lib: lib.nn.functional.linear(_t(lib, 2, 3), _f64(lib, 4, 3))),
    ("F.linear bias dtype", lambda lib: {},
     lambda o, lib: lib.nn.functional.linear(_t(lib, 2, 3), _t(lib, 4, 3), _f64(lib, 4))),
    ("Linear on float64 input", _lin, lambda o, lib: o["m"](_f64(lib, 5, 3))),
    ("Linear on float64 3-D input", _lin, lambda o, lib: o["m"](_f64(lib, 2, 5, 3))),
    ("addmm input dtype", lambda lib: {},
     lambda o, lib: lib.addmm(_t(lib, 2, 2), _t(lib, 2, 3), _f64(lib, 3, 2))),
    ("addmm bias dtype", lambda lib: {},
     lambda o, lib: lib.addmm(_f64(lib, 2, 2), _t(lib, 2, 3), _t(lib, 3, 2))),
    ("conv2d weight dtype", lambda lib: {},
     lambda o, lib: lib.nn.functional.conv2d(_t(lib, 1, 1, 4, 4), _f64(lib, 1, 1, 2, 2))),
    ("conv1d weight dtype", lambda lib: {},
     lambda o, lib: lib.nn.functional.conv1d(_t(lib, 1, 1, 4), _f64(lib, 1, 1, 2))),
    # ---- shape mismatches
    ("mm shapes", lambda lib: {}, lambda o, lib: lib.mm(_t(lib, 2, 3), _t(lib, 2, 3))),
    ("matmul 1-D sizes", lambda lib: {}, lambda o, lib: _t(lib, 3) @ _t(lib, 4)),
    ("matmul 2-D @ 1-D sizes", lambda lib: {}, lambda o, lib: _t(lib, 2, 3) @ _t(lib, 4)),
    ("matmul 3-D @ 2-D sizes", lambda lib: {}, lambda o, lib: _t(lib, 4, 2, 3) @ _t(lib, 4, 2)),
    ("bmm batch sizes", lambda lib: {}, lambda o, lib: lib.bmm(_t(lib, 4, 2, 3), _t(lib, 5, 3, 2))),
    ("Linear in_features", _lin, lambda o, lib: o["m"](_t(lib, 5, 4))),
    ("conv2d channels", _conv, lambda o, lib: o["m"](o["x"])),
    ("conv2d 5-D input", _conv, lambda o, lib: o["m"](_t(lib, 1, 1, 3, 8, 8))),
    ("conv2d kernel larger than input", _conv, lambda o, lib: o["m"](_t(lib, 1, 3, 2, 2))),
    ("add broadcast", _x, lambda o, lib: o["x"] + _t(lib, 4)),
    ("cat sizes", _x, lambda o, lib: lib.cat([o["x"], _t(lib, 2, 4)], 0)),
    ("cat ranks", _x, lambda o, lib: lib.cat([o["x"], _t(lib, 3)], 0)),
    ("stack sizes", _x, lambda o, lib: lib.stack([o["x"], o["w"]])),
    ("view invalid size", _x, lambda o, lib: o["x"].view(4)),
    ("view of a transpose", _x, lambda o, lib: o["x"].t().view(6)),
    ("view of a strided slice", _x, lambda o, lib: o["x"][:, ::2].view(4)),
    ("view of an expand", _x, lambda o, lib: o["x"][:1].expand(3, 3).view(9)),
    ("reshape two -1", _x, lambda o, lib: o["x"].reshape(-1, -1)),
    ("expand non-singleton", _x, lambda o, lib: o["x"].expand(4, 3)),
    ("expand fewer dims", _x, lambda o, lib: o["x"].expand(3)),
    ("t of 3-D", lambda lib: {}, lambda o, lib: _t(lib, 2, 3, 4).t()),
    ("permute length", _x, lambda o, lib: o["x"].permute(0)),
    # ---- dims and indices out of range
    ("softmax dim", _x, lambda o, lib: o["x"].softmax(2)),
    ("sum dim", _x, lambda o, lib: o["x"].sum(-3)),
    ("transpose dim", _x, lambda o, lib: o["x"].transpose(0, 2)),
    ("unsqueeze dim", _x, lambda o, lib: o["x"].unsqueeze(3)),
    ("index out of range", _x, lambda o, lib: o["x"][2]),
    ("too many indices", _x, lambda o, lib: o["x"][0, 0, 0]),
    ("tensor index out of range", _x, lambda o, lib: o["x"][lib.tensor([0, 5])]),
    ("tensor index out of range in a later dim", _x, lambda o, lib: o["x"][:, lib.tensor([-4])]),
    ("setitem with an index out of range", _x, lambda o, lib: o["w"].__setitem__(lib.tensor([5]), 0.0)),
    ("index_select out of range", _x, lambda o, lib: o["x"].index_select(0, lib.tensor([3]))),
    ("gather out of range", _x, lambda o, lib: o["x"].gather(1, lib.tensor([[0], [5]]))),
    ("embedding index out of range", lambda lib: {"e": (lib.manual_seed(0), lib.nn.Embedding(4, 2))[1]},
     lambda o, lib: o["e"](lib.tensor([1, 4]))),
    ("cross_entropy target out of range", _x,
     lambda o, lib: lib.nn.functional.cross_entropy(o["x"], lib.tensor([0, 3]))),
    ("cross_entropy negative target", _x,
     lambda o, lib: lib.nn.functional.cross_entropy(o["x"], lib.tensor([0, -2]))),
    ("cross_entropy batch sizes", _x,
     lambda o, lib: lib.nn.functional.cross_entropy(o["x"], lib.tensor([0, 1, 2]))),
    ("nll_loss batch sizes", _x,
     lambda o, lib: lib.nn.functional.nll_loss(o["x"], lib.tensor([0, 1, 2]))),
    ("binary_cross_entropy sizes", lambda lib: {"p": lib.full((2,), 0.5, requires_grad=True)},
     lambda o, lib: lib.nn.functional.binary_cross_entropy(o["p"], lib.ones(3))),
    # ---- autograd
    ("backward twice", _freed, _backward_twice),
    ("backward of a non-scalar", _x, lambda o, lib: (o["x"] * 2).backward()),
    ("backward without grad", _x, lambda o, lib: o["w"].sum().backward()),
    ("in-place on a leaf", _x, lambda o, lib: o["x"].add_(1)),
    ("in-place on a view of a leaf", _x, lambda o, lib: o["x"][0].mul_(2)),
    ("in-place on a saved input", _saved_modified, _backward_z),
    ("in-place on a saved input through detach", _saved_detach_modified, _backward_z),
    ("in-place on a saved output", _saved_out_modified, _backward_z),
    ("in-place on a saved output under no_grad", _saved_out_nograd_modified, _backward_z),
    ("requires_grad on int", lambda lib: {"i": lib.arange(3)}, lambda o, lib: o["i"].requires_grad_()),
    ("requires_grad on a non-leaf", _saved, lambda o, lib: setattr(o["h"], "requires_grad", False)),
    ("numpy of a tensor requiring grad", _x, lambda o, lib: o["x"].numpy()),
    ("item of many elements", _x, lambda o, lib: o["x"].item()),
    ("bool of many elements", _x, lambda o, lib: bool(o["x"])),
    ("len of 0-d", lambda lib: {"s": lib.tensor(1.0)}, lambda o, lib: len(o["s"])),
    ("grad unused input", _x,
     lambda o, lib: lib.autograd.grad((o["x"] * 2).sum(), [o["x"], lib.ones(2, requires_grad=True)])),
    ("grad input without grad", _x,
     lambda o, lib: lib.autograd.grad((o["x"] * 2).sum(), [o["x"], o["w"]])),
    ("grad assigned wrong shape", _x, _grad_assign),
    ("inference tensor saved for backward", _inference, lambda o, lib: o["i"] * o["w"]),
    ("inference tensor in-place outside", _inference, lambda o, lib: o["i"].add_(1)),
    ("inference tensor setitem outside", _inference, _inference_setitem),
    ("inference tensor version", _inference, lambda o, lib: o["i"]._version),
    ("inference tensor requires_grad outside", _inference, lambda o, lib: o["i"].requires_grad_()),
    # ---- modules, optimizers, data
    ("load_state_dict missing key", _lin, _sd_missing),
    ("load_state_dict unexpected key", _lin, _sd_unexpected),
    ("load_state_dict size mismatch", _lin, _sd_size),
    ("optimizer given a non-leaf", _saved, lambda o, lib: lib.optim.SGD([o["h"]], lr=0.1)),
    ("optimizer given a tensor", _x, lambda o, lib: lib.optim.SGD(o["x"], lr=0.1)),
    ("optimizer given no parameters", lambda lib: {}, lambda o, lib: lib.optim.Adam([], lr=0.1)),
    ("optimizer negative lr", _x, lambda o, lib: lib.optim.SGD([o["x"]], lr=-0.1)),
    ("Adam bad beta", _x, lambda o, lib: lib.optim.Adam([o["x"]], betas=(1.5, 0.9))),
    ("optimizer duplicate parameter groups", _lin,
     lambda o, lib: o["opt"].add_param_group({"params": [o["m"].weight]})),
    ("TensorDataset sizes", _ds, lambda o, lib: lib.utils.data.TensorDataset(o["a"], o["b"])),
    ("DataLoader batch_size 0", _ds,
     lambda o, lib: lib.utils.data.DataLoader(lib.utils.data.TensorDataset(o["a"]), batch_size=0)),
    # ---- an operand the operator does not take: the dunder declines (Python's TypeError, with
    # the other operand's reflected method tried), an int past int64/uint64 is PyTorch's OverflowError
    ("x + str", _x, lambda o, lib: o["x"] + "a"),
    ("x + None", _x, lambda o, lib: o["x"] + None),
    ("None - x", _x, lambda o, lib: None - o["x"]),
    ("x * list", _x, lambda o, lib: o["x"] * [1.0, 2.0]),
    ("x / str", _x, lambda o, lib: o["x"] / "a"),
    ("x // dict", _x, lambda o, lib: o["x"] // {}),
    ("x % None", _x, lambda o, lib: o["x"] % None),
    ("x ** str", _x, lambda o, lib: o["x"] ** "a"),
    ("str ** x", _x, lambda o, lib: "a" ** o["x"]),
    ("x @ str", _x, lambda o, lib: o["x"] @ "a"),
    ("x @ int", _x, lambda o, lib: o["x"] @ 2),
    ("w += str", _x, lambda o, lib: _iadd(o["w"], "a")),
    ("x + 2**70", _x, lambda o, lib: o["x"] + 2 ** 70),
    ("x * -2**64", _x, lambda o, lib: o["x"] * -2 ** 64),
    ("w.add_(2**70)", _x, lambda o, lib: o["w"].add_(2 ** 70)),
    ("clamp(min=2**70)", _x, lambda o, lib: o["w"].clamp(min=2 ** 70)),
    ("add(str, x)", _x, lambda o, lib: lib.add("a", o["x"])),
    ("add(x, other=str)", _x, lambda o, lib: lib.add(o["x"], other="a")),
    ("w.add_(str)", _x, lambda o, lib: o["w"].add_("a")),
    ("sub(x, None)", _x, lambda o, lib: lib.sub(o["x"], None)),
    ("w.sub_(None)", _x, lambda o, lib: o["w"].sub_(None)),
    ("mul(x, list)", _x, lambda o, lib: lib.mul(o["x"], [1.0, 2.0])),
    ("w.mul_(dict)", _x, lambda o, lib: o["w"].mul_({})),
    ("x.div(str)", _x, lambda o, lib: o["x"].div("a")),
    ("w.div_(None)", _x, lambda o, lib: o["w"].div_(None)),
]
IDS = [r[0] for r in ROWS]


# ------------------------------------------------------------------ running a row
def _outcome(lib, row):
    """(exception type name, first line of its message) of the row's mistake under ``lib``."""
    _, setup, bad = row
    objs = setup(lib)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # a warning before the error is not what is compared
        try:
            bad(objs, lib)
        except Exception as e:  # noqa: BLE001 - the exception is the result
            # the first line, and the second where there is one (load_state_dict's details)
            lines = str(e).strip("'\"").splitlines()[:2]
            return type(e).__name__, "\n".join(lines).replace("torch.", "funcgrad."), objs
    return None, None, objs


def _arr(t):
    return np.array(t.detach().cpu().numpy(), copy=True)


def _snap(obj, lib):
    """Everything observable about ``obj`` as plain values."""
    if isinstance(obj, lib.Tensor):
        try:
            ver = obj._version
        except RuntimeError:  # inference tensors have no version counter
            ver = "inference"
        grad = None
        if obj.is_leaf and obj.grad is not None:
            grad = _arr(obj.grad)
        return ("T", _arr(obj), obj.requires_grad, ver, grad, obj.grad_fn is None)
    if isinstance(obj, lib.nn.Module):
        return ("M", obj.training, {k: _arr(v) for k, v in obj.state_dict().items()},
                [None if p.grad is None else _arr(p.grad) for p in obj.parameters()])
    if isinstance(obj, lib.optim.Optimizer):
        sd = obj.state_dict()
        return ("O", repr(sd["param_groups"]), {k: {n: _arr(v) if isinstance(v, lib.Tensor) else v
                                                    for n, v in s.items()} for k, s in sd["state"].items()})
    return ("X", repr(type(obj)))


def _same(a, b) -> bool:
    if isinstance(a, np.ndarray):
        return isinstance(b, np.ndarray) and a.dtype == b.dtype and np.array_equal(a, b, equal_nan=True)
    if isinstance(a, dict):
        return isinstance(b, dict) and a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)):
        return type(a) is type(b) and len(a) == len(b) and all(map(_same, a, b))
    return a == b


def _expected(fixture=FIXTURE):
    return {k: tuple(v) for k, v in json.loads(fixture.read_text()).items()}


def check_matches_torch(row, fixture=FIXTURE):
    """Same exception type and first line as PyTorch (live when installed, else recorded)."""
    try:
        import torch
        want = _outcome(torch, row)[:2]
    except ImportError:
        want = _expected(fixture)[row[0]]
    assert want[0] is not None, f"{row[0]}: PyTorch raises nothing (not a mistake)"
    got = _outcome(funcgrad, row)[:2]
    assert got == tuple(want)


def check_unchanged(row):
    """The row's mistake raises and leaves every object it built unchanged."""
    _, setup, bad = row
    objs = setup(funcgrad)
    before = {k: _snap(v, funcgrad) for k, v in objs.items()}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(Exception):
            bad(objs, funcgrad)
    for k, v in objs.items():
        assert _same(before[k], _snap(v, funcgrad)), f"{row[0]}: {k} changed by the failed call"


def check_fixture_current(rows, fixture=FIXTURE, script="tests/fixtures/errors/make_fixtures.py"):
    """The recorded fixture covers every row and agrees with live PyTorch."""
    rec = _expected(fixture)
    assert set(rec) == {r[0] for r in rows}
    try:
        import torch
    except ImportError:
        pytest.skip("PyTorch is not installed: only the recorded messages are checked")
    stale = [r[0] for r in rows if tuple(rec[r[0]]) != _outcome(torch, r)[:2]]
    assert not stale, f"re-run {script}: {stale}"


@pytest.mark.torch
@pytest.mark.parametrize("row", ROWS, ids=IDS)
def test_error_matches_torch(row):
    check_matches_torch(row)


@pytest.mark.parametrize("row", ROWS, ids=IDS)
def test_error_leaves_objects_unchanged(row):
    check_unchanged(row)


def test_fixture_is_current():
    check_fixture_current(ROWS)


def test_table_size():
    print(f"\n[errors vs torch] {len(ROWS)} rows")
    assert len(ROWS) >= 50
