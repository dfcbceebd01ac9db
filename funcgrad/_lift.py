"""Where stateful objects hand Python scalars to the jit bridge.

Optimizers read each numeric hyperparameter through ``hyper(group, "lr")``. Eagerly this is
just ``group["lr"]``; while ``funcgrad.jit`` traces a step it returns a traced input instead,
so a scheduler changing ``lr`` between calls changes the next call's result without a retrace.
"""

from __future__ import annotations

import threading

_local = threading.local()


def current():
    """The active jit-bridge trace context, or None when running eagerly."""
    return getattr(_local, "ctx", None)


def hyper(owner: dict, key: str):
    """``owner[key]`` as the running step should see it (a traced scalar under ``funcgrad.jit``)."""
    v = owner[key]
    ctx = getattr(_local, "ctx", None)
    return v if ctx is None else ctx.hyper(owner, key, v)
