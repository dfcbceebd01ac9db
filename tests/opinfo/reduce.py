"""Edge-value samples for reductions, scans, sorting and softmax: ties (which element gets the
gradient of max/min/median/sort/topk/kthvalue/mode), zeros (prod, cumprod, norms), nan/±inf,
negative dims and keepdim, 0-d, empty, a transposed view, int64 and bool inputs."""

from __future__ import annotations

import numpy as np

from . import INF, NAN, Sample, View, bools, ints, rand

TIES = np.array([[1.0, 3.0, 3.0, 0.0], [2.0, 2.0, 2.0, 2.0], [0.0, 0.0, -1.0, 5.0]])
SPECIAL = np.array([[NAN, 1.0, 2.0, 0.0], [INF, -INF, 1.0, 2.0], [-INF, -INF, -INF, -INF]])
ZEROS = np.array([[0.0, 2.0, 3.0, 0.5], [0.0, 0.0, 1.5, -2.0], [1.0, -1.0, 0.5, 4.0]])
_INPUTS = [("ties", TIES), ("special", SPECIAL), ("zeros", ZEROS), ("0d", np.array(1.5)),
           ("empty", np.zeros((0, 4))), ("T", View(rand(4, 3))), ("int64", ints(3, 4)), ("bool", bools(3, 4))]


def _set(op, f, skip=()):
    return [Sample(op, f, [x], id=sid) for sid, x in _INPUTS if sid not in skip]


def _dim(f):
    """``f(x, dim)`` with the last dim (-1; 0-d tensors accept it too)."""
    return lambda lib, x: f(lib, x, -1)


_OPS = {
    "sum": lambda lib, x: x.sum(),
    "sum_dim": _dim(lambda lib, x, d: x.sum(d, keepdim=True)),
    "mean": lambda lib, x: x.mean(),
    "mean_dim": _dim(lambda lib, x, d: x.mean(d)),
    "nansum": lambda lib, x: x.nansum(),
    "prod": lambda lib, x: x.prod(),
    "prod_dim": _dim(lambda lib, x, d: x.prod(d, keepdim=True)),
    "amax": _dim(lambda lib, x, d: x.amax(d)),
    "amin": _dim(lambda lib, x, d: x.amin(d, keepdim=True)),
    "max": lambda lib, x: x.max(),
    "min": lambda lib, x: x.min(),
    "max_dim": _dim(lambda lib, x, d: x.max(d, keepdim=True)),
    "min_dim": _dim(lambda lib, x, d: x.min(d)),
    "argmax": _dim(lambda lib, x, d: x.argmax(d)),
    "argmin": lambda lib, x: x.argmin(),
    "aminmax": _dim(lambda lib, x, d: lib.aminmax(x, dim=d)),
    "median": lambda lib, x: x.median(),
    "median_dim": _dim(lambda lib, x, d: x.median(d)),
    "nanmedian": lambda lib, x: x.nanmedian(),
    "nanmedian_dim": _dim(lambda lib, x, d: x.nanmedian(d, keepdim=True)),
    "mode": _dim(lambda lib, x, d: x.mode(d)),
    "kthvalue": _dim(lambda lib, x, d: x.kthvalue(1, d)),
    "sort": _dim(lambda lib, x, d: x.sort(d)),
    "sort_stable": _dim(lambda lib, x, d: x.sort(dim=d, stable=True)),
    "argsort": _dim(lambda lib, x, d: x.argsort(dim=d, stable=True)),
    "topk": _dim(lambda lib, x, d: x.topk(1, d)),
    "logsumexp": _dim(lambda lib, x, d: x.logsumexp(d)),
    "var": _dim(lambda lib, x, d: x.var(d)),
    "std": _dim(lambda lib, x, d: x.std(d, correction=0)),
    "var_mean": _dim(lambda lib, x, d: lib.var_mean(x, d)),
    "std_mean": lambda lib, x: lib.std_mean(x),
    "vector_norm": _dim(lambda lib, x, d: lib.linalg.vector_norm(x, 2, d)),
    "cumsum": _dim(lambda lib, x, d: x.cumsum(d)),
    "cumprod": _dim(lambda lib, x, d: x.cumprod(d)),
    "cummax": _dim(lambda lib, x, d: x.cummax(d)),
    "cummin": _dim(lambda lib, x, d: x.cummin(d)),
    "logcumsumexp": _dim(lambda lib, x, d: x.logcumsumexp(d)),
    "softmax": _dim(lambda lib, x, d: x.softmax(d)),
    "log_softmax": _dim(lambda lib, x, d: x.log_softmax(d)),
    "all": _dim(lambda lib, x, d: x.all(d)),
    "any": lambda lib, x: x.any(),
    "count_nonzero": _dim(lambda lib, x, d: x.count_nonzero(d)),
}

SAMPLES = [s for k, f in _OPS.items() for s in _set(k, f)]
# norms of other orders at zeros and ties (PyTorch's subgradients), along two dims
SAMPLES += [
    Sample("vector_norm", lambda lib, x, o=o: lib.linalg.vector_norm(x, o, (0, -1)), [x], id=f"ord{o}-{sid}")
    for o in (1, 3, 0.5, INF, -INF, 0) for sid, x in [("zeros", ZEROS), ("ties", TIES), ("allzero", np.zeros((2, 3)))]
]
