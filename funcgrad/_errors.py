"""Errors raised by funcgrad itself (PyTorch's own messages are raised as RuntimeError etc.)."""

from __future__ import annotations

import traceback


def _user_frame() -> str:
    """``file:line`` of the innermost frame outside funcgrad and jax (the user's line)."""
    for fs in reversed(traceback.extract_stack()[:-2]):
        f = fs.filename.replace("\\", "/")
        if "/funcgrad/" not in f and "/jax/" not in f and "/jaxlib/" not in f:
            return f"{fs.filename}:{fs.lineno}: {fs.line}"
    return "<unknown>"


class TracedValueError(RuntimeError):
    """A Python value was asked of a tensor while tracing a compiled step (``funcgrad.jit``)."""

    def __init__(self, what: str):
        super().__init__(
            f"{what} needs a concrete value, but this tensor is being traced inside a compiled "
            f"step (funcgrad.jit / jax.jit) at\n  {_user_frame()}\nData-dependent Python control "
            f"flow and conversions cannot be compiled. Fix: compute with tensor ops instead "
            f"(e.g. funcgrad.where(cond, a, b) rather than `if tensor:`), or move this line out of "
            f"the compiled step and return the tensor from it.")
