"""Where stateful objects hand Python scalars to the jit bridge.

Optimizers read each numeric hyperparameter through ``hyper(group, "lr")``. Eagerly this is
just ``group["lr"]``; while ``funcgrad.jit`` traces a step it returns a traced input instead,
so a scheduler changing ``lr`` between calls changes the next call's result without a retrace.

The trace context (``_local.ctx``, a :class:`TraceContext`) is installed by ``funcgrad.jit``
for the duration of one trace. It maps ``(id(group), key)`` to the traced scalar fed to the
compiled program. A key that was not lifted yet (the bridge learns which keys are read) aborts
the trace with :class:`Relift`; the bridge adds the key and traces again.
"""

from __future__ import annotations

import threading

import numpy as np
from jax.core import Tracer as _Tracer

from ._errors import _user_frame

_local = threading.local()


def current():
    """The active jit-bridge trace context, or None when running eagerly."""
    return getattr(_local, "ctx", None)


def hyper(owner: dict, key: str):
    """``owner[key]`` as the running step should see it (a traced scalar under ``funcgrad.jit``)."""
    v = owner[key]
    ctx = getattr(_local, "ctx", None)
    return v if ctx is None else ctx.hyper(owner, key, v)


def is_liftable(v) -> bool:
    """Numbers (not bools) and tuples/lists of numbers can be fed to a compiled step."""
    if isinstance(v, (tuple, list)):
        return len(v) > 0 and all(is_liftable(x) for x in v)
    return isinstance(v, (int, float)) and not isinstance(v, bool)


class Relift(Exception):
    """Raised inside a trace when a hyperparameter that was not lifted yet is read."""

    def __init__(self, key: str):
        super().__init__(key)
        self.key = key


class TraceContext:
    """Traced hyperparameters of one trace: ``{(id(owner), key): traced value}``; the state the
    step made lazily (``created``)."""

    def __init__(self, traced: dict, lifted_keys: set):
        self.traced = traced
        self.lifted_keys = lifted_keys
        self.created: list = []

    def hyper(self, owner: dict, key: str, value):
        t = self.traced.get((id(owner), key))
        if t is not None:
            return t
        if is_liftable(value) and key not in self.lifted_keys:
            raise Relift(key)
        return value  # not a number (or a group the bridge did not find): a trace constant


# ---- state a step makes lazily (an optimizer's first step()) ---------------------------------------
def created(owner: dict, key, make) -> None:
    """``owner[key]``, a dict of state tensors, was just made by the running step (an optimizer's
    first ``step()``), and its first update is computed as the later ones are; ``make()``
    returns its initial tensors again. Under ``funcgrad.jit`` the bridge may make them
    concretely after the trace and trace the step again with them as inputs, so that the first
    call runs the program of the later calls."""
    ctx = getattr(_local, "ctx", None)
    if ctx is not None:
        ctx.created.append((owner, key, make))


# ---- host data (e.g. pack_padded_sequence's lengths) read inside a step -------------------------
class StaticTensor(Exception):
    """Raised inside a trace when a tensor whose values are host data (Python structure: the
    lengths of ``pack_padded_sequence``) is traced; the bridge makes that argument static (its
    values part of the cache key) and traces again."""

    def __init__(self, tensor, what: str):
        super().__init__(what)
        self.tensor, self.what, self.where = tensor, what, _user_frame()


def host_array(t, what: str):
    """The values of ``t`` as a NumPy array: host data that decides shapes and indices.

    Under ``funcgrad.jit`` a traced tensor argument aborts the trace (:class:`StaticTensor`):
    the step is traced again with that argument's values fixed, and retraced when they change,
    as ``torch.compile`` specializes on them (PyTorch keeps such lengths on the CPU).
    """
    v = t._value
    if isinstance(v, _Tracer) and getattr(_local, "ctx", None) is not None:
        raise StaticTensor(t, what)
    return np.asarray(v)
