"""Errors raised by funcgrad itself (PyTorch's own messages are raised as RuntimeError etc.)."""

from __future__ import annotations

import os
import sys
import traceback

# at::native::resize_output's deprecation warning, for an out= of another shape than the result
RESIZED_OUTPUT = ("An output with one or more elements was resized since it had shape {}, which does "
                  "not match the required output shape {}. This behavior is deprecated, and in a future "
                  "PyTorch release outputs will not be resized unless they have zero elements. You can "
                  "explicitly reuse an out tensor t by resizing it, inplace, to zero elements with "
                  "t.resize_(0).")

# Libraries whose frames are never the user's line. Compared as real directories, not by a
# "/funcgrad/" substring: a user's own project may live in a folder named funcgrad or jax.
_LIBRARIES = ("funcgrad", "jax", "jaxlib", "optax", "numpy")


def _norm(path: str) -> str:
    return os.path.normcase(os.path.realpath(path))


def _library_dirs() -> tuple:
    dirs = []
    for name in _LIBRARIES:
        mod = sys.modules.get(name)  # only what is imported can have frames on the stack
        f = getattr(mod, "__file__", None)
        if f:
            dirs.append(_norm(os.path.dirname(f)) + os.sep)
    return tuple(dirs)


def _is_library(filename: str, dirs: tuple) -> bool:
    if filename.startswith("<frozen "):  # runpy, importlib: Python's own machinery
        return True
    if filename.startswith("<"):  # <stdin>, <string>, a notebook cell: the user's code
        return False
    return _norm(filename).startswith(dirs)


def _user_frame() -> str:
    """``file:line`` of the innermost frame outside funcgrad, jax and the libraries it runs on
    (the user's line)."""
    dirs = _library_dirs()
    for fs in reversed(traceback.extract_stack()[:-2]):
        if not _is_library(fs.filename, dirs):
            return f"{fs.filename}:{fs.lineno}: {fs.line}"
    return "<unknown>"


def warn_at_user(message: str, category: type) -> None:
    """``warnings.warn`` attributed to the innermost frame outside funcgrad and the libraries it
    runs on (the user's line, as a warning PyTorch raises from C++ is)."""
    import warnings
    dirs, f = _library_dirs(), sys._getframe(1)
    while f is not None and _is_library(f.f_code.co_filename, dirs):
        f = f.f_back
    if f is None:
        warnings.warn(message, category, stacklevel=2)
        return
    # (a module name as warnings.warn takes it: code run by exec/eval with globals of its own has
    # no __name__, and warn_explicit drops a warning whose module is None whatever the filters)
    warnings.warn_explicit(message, category, f.f_code.co_filename, f.f_lineno,
                           f.f_globals.get("__name__") or "<string>",
                           f.f_globals.setdefault("__warningregistry__", {}))


class TracedValueError(RuntimeError):
    """A Python value was asked of a tensor while tracing a compiled step (``funcgrad.jit``)."""

    def __init__(self, what: str):
        super().__init__(
            f"{what} needs a concrete value, but this tensor is being traced inside a compiled "
            f"step (funcgrad.jit / jax.jit) at\n  {_user_frame()}\nData-dependent Python control "
            f"flow and conversions cannot be compiled. Fix: compute with tensor ops instead "
            f"(e.g. funcgrad.where(cond, a, b) rather than `if tensor:`), or move this line out of "
            f"the compiled step and return the tensor from it.")
