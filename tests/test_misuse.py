"""Misuse table: each bad call raises a clear error (PyTorch's message where PyTorch has one)
and leaves every object it touched unchanged (values, grads, optimizer state, buffers).

Every row is written against ``lib`` (``funcgrad`` or ``torch``), so the rows flagged
``torch_same`` are also run under PyTorch (when importable) to prove the message is PyTorch's.
"""

import io
import re
import warnings
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np
import pytest

import funcgrad
import funcgrad.nn  # noqa: F401
import funcgrad.optim  # noqa: F401
import funcgrad.utils.data  # noqa: F401


@dataclass
class Row:
    desc: str
    setup: Callable[[Any], dict]
    bad: Callable[[dict, Any], Any]
    exc: type
    msg: str  # regex, searched in str(exception)
    torch_same: bool = True  # PyTorch raises the same type with a message matching ``msg``


def _leaf(lib, *shape):
    lib.manual_seed(0)
    return {"x": lib.randn(*shape, requires_grad=True)}


def _linear(lib):
    lib.manual_seed(0)
    m = lib.nn.Linear(3, 2)
    return {"m": m, "opt": lib.optim.SGD(m.parameters(), lr=0.1, momentum=0.9)}


def _trained(lib):
    """A model and an Adam optimizer with state (one step taken), grads set."""
    lib.manual_seed(0)
    m = lib.nn.Sequential(lib.nn.Linear(3, 4), lib.nn.BatchNorm1d(4), lib.nn.Linear(4, 2))
    opt = lib.optim.Adam(m.parameters(), lr=0.1)
    m(lib.randn(5, 3)).pow(2).sum().backward()
    opt.step()
    return {"m": m, "opt": opt}


def _graph(lib):
    lib.manual_seed(0)
    x = lib.randn(3, requires_grad=True)
    y = (x * x).sum()
    return {"x": x, "y": y}


def _freed(lib):
    o = _graph(lib)
    o["y"].backward()
    return o


def _ds(lib):
    return {"ds": lib.utils.data.TensorDataset(lib.arange(6.0))}


def _sched(lib):
    o = _linear(lib)
    o["sched"] = lib.optim.lr_scheduler.StepLR(o["opt"], step_size=2)
    return o


def _sd_bad_shape(o, lib):
    sd = {k: v.clone() for k, v in o["m"].state_dict().items()}
    sd["weight"] = lib.zeros(2, 4)
    o["m"].load_state_dict(sd)


def _sd_missing(o, lib):
    sd = o["m"].state_dict()
    del sd["bias"]
    o["m"].load_state_dict(sd)


def _sd_unexpected(o, lib):
    sd = dict(o["m"].state_dict())
    sd["extra"] = lib.zeros(1)
    o["m"].load_state_dict(sd)


def _opt_sd_groups(o, lib):
    sd = o["opt"].state_dict()
    sd["param_groups"] = sd["param_groups"] + sd["param_groups"]
    o["opt"].load_state_dict(sd)


def _opt_sd_sizes(o, lib):
    sd = o["opt"].state_dict()
    sd["param_groups"][0] = dict(sd["param_groups"][0], params=sd["param_groups"][0]["params"][:-1])
    o["opt"].load_state_dict(sd)


def _nan_anomaly(o, lib):
    x = lib.zeros(2, requires_grad=True)
    o["x0"] = x
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # anomaly mode's "enabled" and traceback warnings
        with lib.autograd.detect_anomaly():
            (x.sqrt() * 0).sum().backward()


def _inplace_saved(o, lib):
    h = o["x"] * 2
    y = (h * h).sum()
    with lib.no_grad():
        h.add_(1)
    y.backward()


def _corrupt_ckpt(o, lib):
    buf = io.BytesIO()
    lib.save({"w": lib.ones(3)}, buf)
    data = bytearray(buf.getvalue())
    data[len(data) // 2: len(data) // 2 + 64] = b"\x00" * 64
    lib.load(io.BytesIO(bytes(data)), weights_only=True)


def _truncated_ckpt(o, lib):
    buf = io.BytesIO()
    lib.save({"w": lib.ones(3)}, buf)
    lib.load(io.BytesIO(buf.getvalue()[:40]), weights_only=True)


MM = r"mat1 and mat2 shapes cannot be multiplied \({}\)"
ROWS = [
    # ---- shapes
    Row("Linear wrong in_features", _linear, lambda o, lib: o["m"](lib.randn(4, 5)),
        RuntimeError, MM.format("4x5 and 3x2")),
    Row("matmul inner dims", lambda lib: _leaf(lib, 2, 3), lambda o, lib: o["x"] @ lib.randn(4, 5),
        RuntimeError, MM.format("2x3 and 4x5")),
    Row("cat sizes", lambda lib: _leaf(lib, 2, 3), lambda o, lib: lib.cat([o["x"], lib.randn(2, 4)]),
        RuntimeError, re.escape("Sizes of tensors must match except in dimension 0. Expected size 3 "
                                "but got size 4 for tensor number 1 in the list.")),
    Row("stack sizes", lambda lib: _leaf(lib, 2), lambda o, lib: lib.stack([o["x"], lib.randn(3)]),
        RuntimeError, re.escape("stack expects each tensor to be equal size, but got [2] at entry 0 "
                                "and [3] at entry 1")),
    Row("view bad size", lambda lib: _leaf(lib, 2, 3), lambda o, lib: o["x"].view(4),
        RuntimeError, re.escape("shape '[4]' is invalid for input of size 6")),
    Row("reshape bad size", lambda lib: _leaf(lib, 2, 3), lambda o, lib: o["x"].reshape(-1, 4),
        RuntimeError, re.escape("shape '[-1, 4]' is invalid for input of size 6")),
    Row("broadcast mismatch", lambda lib: _leaf(lib, 2, 3), lambda o, lib: o["x"] + lib.randn(4),
        RuntimeError, re.escape("The size of tensor a (3) must match the size of tensor b (4) at "
                                "non-singleton dimension 1")),
    Row("negative dimension", lambda lib: {}, lambda o, lib: lib.ones(2, -1),
        RuntimeError, re.escape("Trying to create tensor with negative dimension -1: [2, -1]")),
    Row("grad of wrong shape assigned", lambda lib: _leaf(lib, 3),
        lambda o, lib: setattr(o["x"], "grad", lib.zeros(4)),
        RuntimeError, re.escape("attempting to assign a gradient of size '[4]' to a tensor of size "
                                "'[3]'. Please ensure that the gradient and the tensor are the same size")),
    Row("grad of wrong dtype assigned", lambda lib: _leaf(lib, 3),
        lambda o, lib: setattr(o["x"], "grad", lib.zeros(3, dtype=lib.float64)),
        RuntimeError, re.escape("attempting to assign a gradient with dtype 'double' to a tensor with "
                                "grad_dtype 'Float'.")),
    Row("in-place broadcast to a larger shape", lambda lib: {"a": lib.zeros(3)},
        lambda o, lib: o["a"].add_(lib.ones(2, 3)),
        RuntimeError, re.escape("output with shape [3] doesn't match the broadcast shape [2, 3]")),
    Row("backward gradient shape", _graph, lambda o, lib: (o["x"] * 2).backward(lib.ones(4)),
        RuntimeError, r"Mismatch in shape: grad_output\[0\] has a shape of .*Size\(\[4\]\) and "
                      r"output\[0\] has a shape of .*Size\(\[3\]\)\."),
    Row("nll batch mismatch", lambda lib: _leaf(lib, 3, 5),
        lambda o, lib: lib.nn.functional.cross_entropy(o["x"], lib.tensor([0, 1])),
        ValueError, re.escape("Expected input batch_size (3) to match target batch_size (2).")),
    # ---- dtypes
    Row("int tensor with requires_grad", lambda lib: {},
        lambda o, lib: lib.tensor([1, 2], requires_grad=True),
        RuntimeError, "Only Tensors of floating point and complex dtype can require gradients"),
    Row("int tensor requires_grad_()", lambda lib: {"i": lib.tensor([1, 2])},
        lambda o, lib: o["i"].requires_grad_(),
        RuntimeError, "only Tensors of floating point dtype can require gradients"),
    Row("float targets for CrossEntropyLoss", lambda lib: _leaf(lib, 3, 5),
        lambda o, lib: lib.nn.CrossEntropyLoss()(o["x"], lib.tensor([1.0, 2.0, 0.0])),
        RuntimeError, "expected target dtype to be Long or Byte, but got Float"),
    Row("mean of int tensor", lambda lib: {"i": lib.tensor([1, 2])}, lambda o, lib: o["i"].mean(),
        RuntimeError, re.escape("mean(): could not infer output dtype. Input dtype must be either a "
                                "floating point or complex dtype. Got: Long")),
    Row("Linear on int input", _linear, lambda o, lib: o["m"](lib.ones(2, 3, dtype=lib.int64)),
        RuntimeError, "mat1 and mat2 must have the same dtype, but got Long and Float"),
    # ---- autograd
    Row("backward twice", _freed, lambda o, lib: o["y"].backward(),
        RuntimeError, re.escape("Trying to backward through the graph a second time")),
    Row("in-place on leaf", lambda lib: _leaf(lib, 3), lambda o, lib: o["x"].add_(1),
        RuntimeError, "a leaf Variable that requires grad is being used in an in-place operation."),
    Row("setitem on leaf", lambda lib: _leaf(lib, 3), lambda o, lib: o["x"].__setitem__(0, 1.0),
        RuntimeError, "a leaf Variable that requires grad is being used in an in-place operation."),
    Row("saved tensor modified in place", lambda lib: _leaf(lib, 3), _inplace_saved,
        RuntimeError, r"one of the variables needed for gradient computation has been modified by "
                      r"an inplace operation: .* is at version 1; expected version 0 instead"),
    Row("non-scalar backward", lambda lib: _leaf(lib, 3), lambda o, lib: (o["x"] * 2).backward(),
        RuntimeError, "grad can be implicitly created only for scalar outputs"),
    Row("backward without grad", lambda lib: {}, lambda o, lib: lib.ones(2).sum().backward(),
        RuntimeError, "element 0 of tensors does not require grad and does not have a grad_fn"),
    Row("numpy() on requires_grad", lambda lib: _leaf(lib, 3), lambda o, lib: o["x"].numpy(),
        RuntimeError, re.escape("Can't call numpy() on Tensor that requires grad. Use "
                                "tensor.detach().numpy() instead.")),
    Row("requires_grad on non-leaf", _graph, lambda o, lib: setattr(o["y"], "requires_grad", False),
        RuntimeError, re.escape("you can only change requires_grad flags of leaf variables. If you "
                                "want to use a computed variable in a subgraph that doesn't require "
                                "differentiation use var_no_grad = var.detach().")),
    Row("NaN under detect_anomaly", lambda lib: {}, _nan_anomaly,
        RuntimeError, re.escape("Function 'SqrtBackward0' returned nan values in its 0th output.")),
    # ---- optimizers, state dicts, schedulers
    Row("optimizer given a non-leaf", _graph, lambda o, lib: lib.optim.SGD([o["x"] * 2], lr=0.1),
        ValueError, "can't optimize a non-leaf Tensor"),
    Row("optimizer negative lr", _linear, lambda o, lib: lib.optim.SGD(o["m"].parameters(), lr=-1.0),
        ValueError, re.escape("Invalid learning rate: -1.0")),
    Row("Adam bad beta", _linear,
        lambda o, lib: lib.optim.Adam(o["m"].parameters(), betas=(1.5, 0.9)),
        ValueError, re.escape("Invalid beta parameter at index 0: 1.5")),
    Row("optimizer empty params", lambda lib: {}, lambda o, lib: lib.optim.SGD([], lr=0.1),
        ValueError, "optimizer got an empty parameter list"),
    Row("load_state_dict wrong shape", _linear, _sd_bad_shape, RuntimeError,
        r"Error\(s\) in loading state_dict for Linear:\n\tsize mismatch for weight: copying a param "
        r"with shape .*Size\(\[2, 4\]\) from checkpoint, the shape in current model is "
        r".*Size\(\[2, 3\]\)\."),
    Row("load_state_dict missing key", _linear, _sd_missing, RuntimeError,
        re.escape('Error(s) in loading state_dict for Linear:\n\tMissing key(s) in state_dict: "bias".')),
    Row("load_state_dict unexpected key", _linear, _sd_unexpected, RuntimeError,
        re.escape('Error(s) in loading state_dict for Linear:\n\tUnexpected key(s) in state_dict: '
                  '"extra".')),
    Row("optimizer load_state_dict group count", _trained, _opt_sd_groups, ValueError,
        "loaded state dict has a different number of parameter groups"),
    Row("optimizer load_state_dict group size", _trained, _opt_sd_sizes, ValueError,
        "loaded state dict contains a parameter group that doesn't match the size of optimizer's group"),
    Row("scheduler on a non-optimizer", lambda lib: {},
        lambda o, lib: lib.optim.lr_scheduler.StepLR([1, 2], step_size=1),
        TypeError, "list is not an Optimizer"),
    Row("LambdaLR wrong number of lambdas", _sched,
        lambda o, lib: lib.optim.lr_scheduler.LambdaLR(o["opt"], [lambda e: 1.0] * 2),
        ValueError, "Expected 1 lr_lambdas, but got 2"),
    # ---- out-of-range indices
    Row("getitem out of range", lambda lib: _leaf(lib, 3), lambda o, lib: o["x"][5],
        IndexError, "index 5 is out of bounds for dimension 0 with size 3"),
    Row("index_select out of range", lambda lib: _leaf(lib, 3),
        lambda o, lib: o["x"].index_select(0, lib.tensor([0, 7])),
        IndexError, "index out of range in self"),
    Row("gather out of range", lambda lib: _leaf(lib, 2, 3),
        lambda o, lib: o["x"].gather(1, lib.tensor([[0], [5]])),
        RuntimeError, "index 5 is out of bounds for dimension 1 with size 3"),
    Row("embedding out of range", lambda lib: {"e": (lib.manual_seed(0), lib.nn.Embedding(4, 2))[1]},
        lambda o, lib: o["e"](lib.tensor([1, 4])),
        IndexError, "index out of range in self"),
    Row("cross_entropy target out of range", lambda lib: _leaf(lib, 2, 3),
        lambda o, lib: lib.nn.functional.cross_entropy(o["x"], lib.tensor([0, 3])),
        IndexError, "Target 3 is out of bounds."),
    # ---- data, checkpoints
    Row("DataLoader batch_size=0", _ds, lambda o, lib: lib.utils.data.DataLoader(o["ds"], batch_size=0),
        ValueError, "batch_size should be a positive integer value, but got batch_size=0"),
    Row("DataLoader sampler and shuffle", _ds,
        lambda o, lib: lib.utils.data.DataLoader(o["ds"], sampler=[0, 1], shuffle=True),
        ValueError, "sampler option is mutually exclusive with shuffle"),
    Row("DataLoader negative workers", _ds,
        lambda o, lib: lib.utils.data.DataLoader(o["ds"], num_workers=-1),
        ValueError, "num_workers option should be non-negative"),
    Row("corrupt checkpoint", lambda lib: {}, _corrupt_ckpt, RuntimeError,
        "is not a valid checkpoint or is corrupted", torch_same=False),
    Row("truncated checkpoint", lambda lib: {}, _truncated_ckpt, RuntimeError,
        "is not a valid checkpoint or is corrupted", torch_same=False),
]


# ---------------------------------------------------------------- snapshots
def _arr(t):
    return np.array(t.detach().cpu().numpy(), copy=True)


def _snap(obj, lib):
    """Everything observable about ``obj`` as plain Python/numpy values."""
    T = lib.Tensor
    if isinstance(obj, T):
        return ("T", _arr(obj), obj.requires_grad, obj._version if hasattr(obj, "_version") else None,
                None if not obj.is_leaf or obj.grad is None else _arr(obj.grad))
    if isinstance(obj, lib.nn.Module):
        return ("M", obj.training, {k: _arr(v) for k, v in obj.state_dict().items()},
                [None if p.grad is None else _arr(p.grad) for p in obj.parameters()])
    if isinstance(obj, lib.optim.Optimizer):
        return ("O", _plain(obj.state_dict(), lib))
    if isinstance(obj, lib.optim.lr_scheduler.LRScheduler):
        return ("S", obj.last_epoch, list(obj.get_last_lr()), _plain(obj.optimizer.state_dict(), lib))
    return ("X", repr(type(obj)))


def _plain(x, lib):
    if isinstance(x, lib.Tensor):
        return _arr(x)
    if isinstance(x, dict):
        return {k: _plain(v, lib) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_plain(v, lib) for v in x]
    return x


def _equal(a, b) -> bool:
    if isinstance(a, np.ndarray):
        return isinstance(b, np.ndarray) and a.dtype == b.dtype and np.array_equal(a, b, equal_nan=True)
    if isinstance(a, dict):
        return isinstance(b, dict) and a.keys() == b.keys() and all(_equal(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)):
        return type(a) is type(b) and len(a) == len(b) and all(map(_equal, a, b))
    return a == b


def _check(row, lib):
    objs = row.setup(lib)
    before = {k: _snap(v, lib) for k, v in objs.items()}
    with pytest.raises(row.exc) as info:
        row.bad(objs, lib)
    assert re.search(row.msg, str(info.value)), f"{row.desc}: got {str(info.value)!r}"
    for k, v in objs.items():
        if k in before:
            assert _equal(before[k], _snap(v, lib)), f"{row.desc}: {k} changed by the failed call"


@pytest.mark.parametrize("row", ROWS, ids=[r.desc for r in ROWS])
def test_misuse_raises_and_leaves_objects_unchanged(row):
    _check(row, funcgrad)


TORCH_ROWS = [r for r in ROWS if r.torch_same]


@pytest.mark.parametrize("row", TORCH_ROWS, ids=[r.desc for r in TORCH_ROWS])
def test_flagged_rows_match_pytorch(row):
    torch = pytest.importorskip("torch")
    _check(row, torch)


def test_table_size():
    print(f"\n[misuse] {len(ROWS)} rows, {len(TORCH_ROWS)} with PyTorch-identical messages")
    assert len(ROWS) >= 30
