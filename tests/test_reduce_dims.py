"""sum/mean's dim and keepdim as PyTorch's argument parser reads them: ``dim`` left out is the
no-dim overload (``SumBackward0``), ``dim=None`` given is the dim overload over every dimension
(``SumBackward1``, keepdim kept), ``keepdims=`` is NumPy's spelling of ``keepdim=`` and both at
once is a TypeError. A list of dims naming one dim twice is PyTorch's RuntimeError in every
reduction (the first repeat in the order given, once every dim is in range). Each row: the call, then PyTorch 2.13's result shape, node and dtype (or its
error), compared live with PyTorch where it is installed."""

import numpy as np
import pytest

import funcgrad

ROWS = [
    ("x.sum()", ((), "SumBackward0", "float32")),
    ("x.sum(None)", ((), "SumBackward1", "float32")),
    ("x.sum(None, True)", ((1, 1), "SumBackward1", "float32")),
    ("x.sum(dim=None, keepdim=True)", ((1, 1), "SumBackward1", "float32")),
    ("x.sum(1)", ((2,), "SumBackward1", "float32")),
    ("x.sum(-1, True)", ((2, 1), "SumBackward1", "float32")),
    ("x.sum(1, keepdims=True)", ((2, 1), "SumBackward1", "float32")),
    ("x.sum(())", ((), "SumBackward1", "float32")),
    ("x.sum((), True)", ((1, 1), "SumBackward1", "float32")),
    ("x.sum(dtype=torch.float64)", ((), "SumBackward0", "float64")),
    ("x.sum(None, dtype=torch.float64)", ((), "SumBackward1", "float64")),
    ("torch.sum(x, None, True)", ((1, 1), "SumBackward1", "float32")),
    ("x.mean()", ((), "MeanBackward0", "float32")),
    ("x.mean(None)", ((), "MeanBackward1", "float32")),
    ("x.mean(None, True)", ((1, 1), "MeanBackward1", "float32")),
    ("x.mean(0, keepdims=True)", ((1, 3), "MeanBackward1", "float32")),
    ("torch.mean(x, dim=None)", ((), "MeanBackward1", "float32")),
    ("x.sum(1, True, keepdims=True)", (TypeError, "sum() got an unexpected keyword argument 'keepdims'")),
    ("x.sum(1, keepdim=False, keepdims=True)", (TypeError, "sum() got an unexpected keyword argument 'keepdims'")),
    ("x.mean(1, True, keepdims=True)", (TypeError, "mean() got an unexpected keyword argument 'keepdims'")),
    ("x.sum((0, 0))", (RuntimeError, "dim 0 appears multiple times in the list of dims")),
    ("x.sum((1, -1))", (RuntimeError, "dim 1 appears multiple times in the list of dims")),
    ("x.mean((1, 0, 1, 0))", (RuntimeError, "dim 1 appears multiple times in the list of dims")),
    ("x.sum((0, 0, 5))", (IndexError, "Dimension out of range (expected to be in range of [-2, 1], but got 5)")),
    ("x.amax((0, -2))", (RuntimeError, "dim 0 appears multiple times in the list of dims")),
    ("x.amin([1, 1])", (RuntimeError, "dim 1 appears multiple times in the list of dims")),
    ("x.std((0, 0))", (RuntimeError, "dim 0 appears multiple times in the list of dims")),
    ("x.nansum((1, 1))", (RuntimeError, "dim 1 appears multiple times in the list of dims")),
    ("x.logsumexp((0, 0))", (RuntimeError, "dim 0 appears multiple times in the list of dims")),
    ("x.any((1, 1))", (RuntimeError, "dim 1 appears multiple times in the list of dims")),
    ("x.count_nonzero((0, -2))", (RuntimeError, "dim 0 appears multiple times in the list of dims")),
    ("torch.linalg.vector_norm(x, dim=(1, 1))", (RuntimeError, "dim 1 appears multiple times in the list of dims")),
    ("x.norm(dim=(0, 0))", (RuntimeError, "dim 0 appears multiple times in the list of dims")),
    ("torch.tensor(2.0).sum((0, -1))", (RuntimeError, "dim 0 appears multiple times in the list of dims")),
]


def _run(torch, expr):
    x = torch.ones(2, 3, requires_grad=True)
    try:
        r = eval(expr, {"torch": torch, "x": x})
    except (TypeError, RuntimeError, IndexError) as e:
        return type(e), str(e)
    return tuple(r.shape), type(r.grad_fn).__name__, str(r.dtype).split(".")[-1]


@pytest.mark.parametrize("expr,want", ROWS, ids=[r[0] for r in ROWS])
def test_as_pytorch_reads_them(expr, want):
    for _ in range(2):  # (the second call: the remembered fast path)
        assert _run(funcgrad, expr) == want


@pytest.mark.torch
@pytest.mark.parametrize("expr,want", ROWS, ids=[r[0] for r in ROWS])
def test_recorded_rows_are_pytorchs(expr, want):
    torch = pytest.importorskip("torch")
    assert _run(torch, expr) == want


def test_values():
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    x = funcgrad.tensor(a)
    assert x.sum(None, True).tolist() == [[15.0]] and x.mean(None, True).tolist() == [[2.5]]
    assert x.sum(1, keepdims=True).tolist() == [[3.0], [12.0]]
