"""Anomaly detection: ``detect_anomaly`` / ``set_detect_anomaly`` drive the switches that
dispatch and the engine read (``grad_mode._anomaly = [enabled, check_nan]``).

While enabled, every recorded node keeps the stack of the forward call that created it; when a
node's backward fails, or returns NaN (``check_nan``), the engine emits PyTorch's warning
"Error detected in XBackward0. Traceback of forward call that caused the error: …" (the user's
frames, funcgrad's own frames removed), and NaNs raise "Function 'XBackward0' returned nan
values in its 0th output.".
"""

from __future__ import annotations

import os
import warnings

from . import grad_mode
from .grad_mode import _GradModeBase

_anomaly = grad_mode._anomaly
_PKG_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def is_anomaly_enabled() -> bool:
    """Whether anomaly detection is on."""
    return bool(_anomaly[0])


def is_anomaly_check_nan_enabled() -> bool:
    """Whether anomaly detection also checks backward results for NaN."""
    return bool(_anomaly[1])


def set_anomaly_enabled(enabled: bool, check_nan: bool = True) -> None:
    _anomaly[:] = [bool(enabled), bool(check_nan)]


class detect_anomaly(_GradModeBase):
    """Context manager (and decorator) enabling anomaly detection for the autograd engine.

    >>> import warnings, funcgrad
    >>> with warnings.catch_warnings():
    ...     warnings.simplefilter("ignore")
    ...     with funcgrad.autograd.detect_anomaly():
    ...         funcgrad.autograd.is_anomaly_enabled()
    True
    """

    def __new__(cls, *args, **kwargs):
        return object.__new__(cls)

    def __init__(self, check_nan: bool = True) -> None:
        self.prev = is_anomaly_enabled()
        self.check_nan = check_nan
        self.prev_check_nan = is_anomaly_check_nan_enabled()
        warnings.warn("Anomaly Detection has been enabled. This mode will increase the runtime and "
                      "should only be enabled for debugging.", stacklevel=2)

    def clone(self):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return detect_anomaly(self.check_nan)

    def __enter__(self) -> None:
        set_anomaly_enabled(True, self.check_nan)

    def __exit__(self, *args) -> bool:
        set_anomaly_enabled(self.prev, self.prev_check_nan)
        return False


class set_detect_anomaly(_GradModeBase):
    """Turn anomaly detection on or off: at once (as a function) or for a ``with`` block.

    >>> import funcgrad
    >>> with funcgrad.autograd.set_detect_anomaly(True):
    ...     funcgrad.autograd.is_anomaly_enabled()
    True
    >>> funcgrad.autograd.is_anomaly_enabled()
    False
    """

    def __new__(cls, *args, **kwargs):
        return object.__new__(cls)

    def __init__(self, mode: bool, check_nan: bool = True) -> None:
        self.mode, self.check_nan = mode, check_nan
        self.prev = is_anomaly_enabled()
        self.prev_check_nan = is_anomaly_check_nan_enabled()
        set_anomaly_enabled(mode, check_nan)

    def clone(self):
        return set_detect_anomaly(self.mode, self.check_nan)

    def __enter__(self) -> None:
        pass  # already applied in __init__, as PyTorch does

    def __exit__(self, *args) -> bool:
        set_anomaly_enabled(self.prev, self.prev_check_nan)
        return False


def user_trace(trace: str | None) -> str:
    """The recorded forward stack without funcgrad's own frames (PyTorch shows only the user's
    Python frames, its ops being C++)."""
    if not trace:
        return ""
    entries, cur = [], []
    for line in trace.splitlines(keepends=True):
        if line.startswith("  File ") and cur:
            entries.append("".join(cur))
            cur = []
        cur.append(line)
    if cur:
        entries.append("".join(cur))
    keep = [e for e in entries if not _is_internal(e)]
    return "".join(keep)


def _is_internal(entry: str) -> bool:
    try:
        path = entry.split('"', 2)[1]
    except IndexError:
        return False
    path = os.path.abspath(path)
    return path.startswith(_PKG_DIR + os.sep)


def warn_error(node) -> None:
    """PyTorch's warning naming the node whose backward failed and where it was created."""
    warnings.warn(f"Error detected in {node.name()}. Traceback of forward call that caused the "
                  f"error:\n{user_trace(node._trace)}", UserWarning, stacklevel=3)


__all__ = ["detect_anomaly", "set_detect_anomaly", "is_anomaly_enabled",
           "is_anomaly_check_nan_enabled", "set_anomaly_enabled"]
