"""The op spec table: one or more ``Spec`` rows per op of ``funcgrad._ops.OPS``.

Each module here exports ``SPECS``; ``tests/test_ops.py`` collects them all, fails if an op in
the table has no spec, and checks each row: forward vs the plain ``jax.numpy`` reference, the
gradient of every float input vs ``jax.grad`` of the reference (float64, tight tolerance), and
that the recorded node has the expected PyTorch name.
"""

from __future__ import annotations

import dataclasses
from typing import Callable

import numpy as np


@dataclasses.dataclass
class Spec:
    """One test row.

    op: key in ``funcgrad._ops.OPS`` this row covers (``"mul"``).
    fg: ``fg(*tensors) -> Tensor | tuple`` using funcgrad (the user-facing call).
    ref: ``ref(*jax_arrays) -> array | tuple`` in plain ``jax.numpy``.
    inputs: one entry per input: a shape tuple (float64 normal values), or a numpy array, or a
        callable ``rng -> np.ndarray`` (use for positive domains, integer indices...).
    grad: indices of inputs to differentiate (default: all float inputs).
    out: for tuple results, which output index is compared/differentiated (default 0 if tuple).
    grad_fn: expected ``grad_fn.name()`` of the result (None: do not check).
    nondiff: the op is not differentiable (bool/int result): only the forward is compared.
    atol/rtol: tolerances (float64).
    """

    op: str
    fg: Callable
    ref: Callable
    inputs: list
    grad: tuple | None = None
    out: int | None = None
    grad_fn: str | None = None
    nondiff: bool = False
    atol: float = 1e-9
    rtol: float = 1e-7
    id: str = ""

    def make_inputs(self, seed: int = 0):
        rng = np.random.default_rng(seed)
        arrs = []
        for s in self.inputs:
            if callable(s):
                arrs.append(np.asarray(s(rng)))
            elif isinstance(s, np.ndarray):
                arrs.append(s)
            else:
                arrs.append(rng.standard_normal(s).astype(np.float64))
        return arrs


def pos(*shape, low=0.5, high=2.0):
    """An input of positive values (log, sqrt…)."""
    return lambda rng: rng.uniform(low, high, shape).astype(np.float64)


def ints(*shape, high=3, low=0):
    """An int64 input in [low, high) (indices)."""
    return lambda rng: rng.integers(low, high, shape).astype(np.int64)


def unit(*shape, low=-0.9, high=0.9):
    return lambda rng: rng.uniform(low, high, shape).astype(np.float64)
