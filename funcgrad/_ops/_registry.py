"""The op table's registry: every differentiable op is declared once with ``defop``; public
functions and Tensor methods are registered with ``export`` and installed on ``Tensor``."""

from __future__ import annotations

import functools
import inspect

from .._dispatch import Op, apply
from .._tensor import Tensor

OPS: dict[str, Op] = {}        # op table: key → Op (the spec-table test covers every key)
FUNCTIONS: dict[str, object] = {}  # funcgrad.<name>
METHODS: dict[str, object] = {}    # Tensor.<name>


def defop(key: str, fn, grad_name: str | None = None, **kw) -> Op:
    """Declare an op: a pure ``jax.numpy`` fn and its PyTorch node name (see ``Op``)."""
    if key in OPS:
        raise ValueError(f"op {key!r} declared twice")
    op = OPS[key] = Op(key, fn, grad_name, **kw)
    return op


# PyTorch's argument parser takes NumPy's ``keepdims=`` for every native op with ``keepdim``;
# ``norm`` is Python-level in PyTorch and refuses it.
_NO_KEEPDIMS = frozenset({"norm"})
_MISSING = object()


def _accept_keepdims(f, name: str):
    """``f`` also taking ``keepdims=`` for ``keepdim=`` (both at once: PyTorch's TypeError)."""
    @functools.wraps(f)
    def g(*args, keepdims=_MISSING, **kwargs):
        if keepdims is not _MISSING:
            if "keepdim" in kwargs:
                raise TypeError(f"{name}() got an unexpected keyword argument 'keepdims'")
            kwargs["keepdim"] = keepdims
        return f(*args, **kwargs)
    return g


def export(*names: str, method: bool = True, function: bool = True):
    """Register a frontend under ``names`` as ``funcgrad.<name>`` and/or ``Tensor.<name>``."""
    def deco(f):
        if "keepdim" in inspect.signature(f).parameters and names[0] not in _NO_KEEPDIMS:
            f = _accept_keepdims(f, names[0])
        for n in names:
            if function:
                FUNCTIONS[n] = f
            if method:
                METHODS[n] = f
        return f
    return deco


def inplace_method(name: str, fn) -> None:
    """``Tensor.<name>_``: the out-of-place ``fn`` committed into self (version bump, rebase)."""
    def m(self, *args, **kwargs):
        return self._inplace(fn, *args, **kwargs)
    m.__name__ = name
    m.__doc__ = f"In-place version of :func:`{fn.__name__}`."
    METHODS[name] = m


def install() -> None:
    for name, f in METHODS.items():
        if not hasattr(Tensor, name) or name.startswith("__"):
            setattr(Tensor, name, f)


__all__ = ["OPS", "FUNCTIONS", "METHODS", "defop", "export", "inplace_method", "install", "apply",
           "Tensor"]
