"""PyTorch-compatible tensor printing, implemented on plain numpy arrays.

This module reproduces the strings that ``repr(torch.Tensor)`` produces
(``torch/_tensor_str.py``) so that users see exactly what they would see in
PyTorch: the same number formatting, column alignment, line wrapping,
summarisation with ``...`` and suffixes such as ``dtype=`` or ``grad_fn=``.
It knows nothing about funcgrad tensors; the caller hands over the data as a
numpy array plus the metadata (dtype name, autograd suffixes).
"""

from __future__ import annotations

import math
from typing import Any, Optional, Sequence

import numpy as np

# Mirrors torch's profiles; ``full`` uses an infinite threshold so nothing is
# ever summarised.
_PROFILES = {
    "default": {"precision": 4, "threshold": 1000, "edgeitems": 3, "linewidth": 80},
    "short": {"precision": 2, "threshold": 1000, "edgeitems": 2, "linewidth": 80},
    "full": {"precision": 4, "threshold": math.inf, "edgeitems": 3, "linewidth": 80},
}

# Namespace shown in ``dtype=`` suffixes. Module-level so tests can set it to
# "torch." and compare byte-for-byte with PyTorch (suffix length affects wrapping).
_DTYPE_PREFIX = "funcgrad."

# Module-level state, like torch's PRINT_OPTS: print options are process-global.
_OPTS: dict[str, Any] = dict(_PROFILES["default"], sci_mode=None)


def set_printoptions(precision=None, threshold=None, edgeitems=None, linewidth=None,
                     profile=None, sci_mode=None) -> None:
    """Sets the global options used when printing tensors.

    Same semantics as ``torch.set_printoptions``: a profile is applied first and
    explicit options override it. Note that ``sci_mode`` is always assigned,
    so omitting it resets it to automatic (``None``), exactly as in PyTorch.

    Args:
        precision: Digits after the decimal point for floats (default 4).
        threshold: Element count above which output is summarised (default 1000).
        edgeitems: Items kept at each edge of a summarised dimension (default 3).
        linewidth: Characters per line before wrapping (default 80).
        profile: ``"default"``, ``"short"`` or ``"full"``; unknown names are
            ignored, as PyTorch does.
        sci_mode: ``True``/``False`` forces scientific notation on/off;
            ``None`` lets the formatter decide.
    """
    if profile in _PROFILES:
        _OPTS.update(_PROFILES[profile])
    for key, value in (("precision", precision), ("threshold", threshold),
                       ("edgeitems", edgeitems), ("linewidth", linewidth)):
        if value is not None:
            _OPTS[key] = value
    _OPTS["sci_mode"] = sci_mode


def get_printoptions() -> dict:
    """Returns the current print options as a dict usable as ``set_printoptions(**d)``."""
    return dict(_OPTS)


def _kind(dtype_name: str) -> str:
    """Classifies a dtype name as ``float``, ``complex``, ``bool`` or ``int``."""
    if dtype_name.startswith(("float", "bfloat", "half", "double")):
        return "float"
    if dtype_name.startswith(("complex", "cfloat", "cdouble")):
        return "complex"
    if dtype_name == "bool":
        return "bool"
    return "int"


class _Formatter:
    """Decides one common layout (mode and column width) for a set of values.

    PyTorch scans the (summarised) data once to pick int/fixed/scientific mode
    and the widest rendering, then pads every element to that width so columns
    line up. Only non-zero finite values take part in the decision; nan/inf are
    padded to the width but never widen it, which we keep for exactness.
    """

    def __init__(self, values: np.ndarray, floating: bool):
        self.floating = floating
        self.int_mode = True
        self.sci_mode = False
        self.width = 1
        flat = values.reshape(-1)
        if not floating:
            self.width = max([1] + [len(str(v)) for v in flat.tolist()])
            return
        finite = flat[np.isfinite(flat) & (flat != 0)]
        if finite.size == 0:
            # PyTorch returns before consulting PRINT_OPTS.sci_mode here, so
            # all-zero/non-finite data ignores a forced sci_mode.
            return
        lo, hi = np.abs(finite).min(), np.abs(finite).max()
        self.int_mode = bool(np.all(finite == np.ceil(finite)))
        forced = _OPTS["sci_mode"]
        self.sci_mode = (bool(hi / lo > 1000.0 or hi > 1.0e8 or lo < 1.0e-4)
                         if forced is None else forced)
        p = _OPTS["precision"]
        for v in finite.tolist():
            if self.sci_mode:
                n = len(f"{v:.{p}e}")
            elif self.int_mode:
                n = len(f"{v:.0f}") + 1  # room for the trailing "." marking a float
            else:
                n = len(f"{v:.{p}f}")
            self.width = max(self.width, n)

    def format(self, value) -> str:
        """Renders one Python scalar right-aligned to the common width."""
        p = _OPTS["precision"]
        if not self.floating:
            text = str(value)
        elif self.sci_mode:
            text = f"{value:{self.width}.{p}e}"
        elif self.int_mode:
            text = f"{value:.0f}"
            if math.isfinite(value):
                text += "."
        else:
            text = f"{value:.{p}f}"
        return " " * (self.width - len(text)) + text


def _summarized(a: np.ndarray) -> np.ndarray:
    """Flattened values that are actually shown when summarising.

    Only these feed the formatter, so hidden elements cannot affect widths.
    The quirks follow PyTorch: with ``edgeitems == 0`` a 1-D tensor keeps all
    its items (``a[-0:]`` is the whole array) while higher dims keep none.
    """
    e = _OPTS["edgeitems"]
    if a.ndim == 0:
        return a.reshape(-1)
    if a.ndim == 1:
        return np.concatenate([a[:e], a[-e:]]) if a.shape[0] > 2 * e else a
    if not e:
        return a.reshape(-1)[:0]
    rows = range(a.shape[0])
    if a.shape[0] > 2 * e:
        rows = list(range(e)) + list(range(a.shape[0] - e, a.shape[0]))
    return np.concatenate([_summarized(a[i]) for i in rows])


def _scalar(val, fmts: Sequence[_Formatter]) -> str:
    """Formats one element; complex numbers join real and imaginary parts."""
    if len(fmts) == 1:
        return fmts[0].format(val)
    real = fmts[0].format(val.real)
    imag = (fmts[1].format(val.imag) + "j").lstrip()
    # The imaginary part carries its own sign when negative (or forced "+").
    return real + imag if imag[0] in "+-" else real + "+" + imag


def _vector(a: np.ndarray, indent: int, summarize: bool, fmts) -> str:
    """Formats a 1-D array, wrapping so rows fit within ``linewidth``."""
    # Each element costs its width plus ", "; complex adds the imag width + "j".
    elem_len = fmts[0].width + 2 + (fmts[1].width + 1 if len(fmts) == 2 else 0)
    per_line = max(1, math.floor((_OPTS["linewidth"] - indent) / elem_len))
    e = _OPTS["edgeitems"]
    if summarize and not e:
        data = ["..."]
    elif summarize and a.shape[0] > 2 * e:
        data = ([_scalar(v, fmts) for v in a[:e].tolist()] + [" ..."]
                + [_scalar(v, fmts) for v in a[-e:].tolist()])
    else:
        data = [_scalar(v, fmts) for v in a.tolist()]
    lines = [", ".join(data[i:i + per_line]) for i in range(0, len(data), per_line)]
    return "[" + (",\n" + " " * (indent + 1)).join(lines) + "]"


def _nested(a: np.ndarray, indent: int, summarize: bool, fmts) -> str:
    """Recursively formats an n-D array; each nesting level indents by one."""
    if a.ndim == 0:
        return _scalar(a.item(), fmts)
    if a.ndim == 1:
        return _vector(a, indent, summarize, fmts)
    e, n = _OPTS["edgeitems"], a.shape[0]
    if summarize and n > 2 * e:
        slices = ([_nested(a[i], indent + 1, summarize, fmts) for i in range(e)] + ["..."]
                  + [_nested(a[i], indent + 1, summarize, fmts) for i in range(n - e, n)])
    else:
        slices = [_nested(a[i], indent + 1, summarize, fmts) for i in range(n)]
    # ndim-1 newlines: rows of a matrix are adjacent, 3-D blocks get a blank line.
    return "[" + ("," + "\n" * (a.ndim - 1) + " " * (indent + 1)).join(slices) + "]"


def _body(a: np.ndarray, kind: str, indent: int) -> str:
    """Formats the bracketed data of a non-empty array."""
    summarize = a.size > _OPTS["threshold"]
    shown = _summarized(a) if summarize else a
    if kind == "complex":
        a = a.astype(np.complex128)
        shown = shown.astype(np.complex128)
        # Real and imaginary parts get independent layouts, as in PyTorch.
        fmts = [_Formatter(shown.real, True), _Formatter(shown.imag, True)]
    else:
        if kind == "float":
            # Exact widening (also for float16/bfloat16): PyTorch formats the
            # Python floats of item()/tolist(), which are these same doubles.
            a = a.astype(np.float64)
            shown = shown.astype(np.float64)
        fmts = [_Formatter(shown, kind == "float")]
    return _nested(a, indent, summarize, fmts)


def _add_suffixes(text: str, suffixes: Sequence[str], indent: int) -> str:
    """Appends ``, suffix`` items, moving one to a new line when it won't fit."""
    parts = [text]
    # Same arithmetic as PyTorch (including its +1 offset) so wrapping matches.
    last_len = len(text) - text.rfind("\n") + 1
    for suffix in suffixes:
        if last_len + len(suffix) + 2 > _OPTS["linewidth"]:
            parts.append(",\n" + " " * indent + suffix)
            last_len = indent + len(suffix)
        else:
            parts.append(", " + suffix)
            last_len += len(suffix) + 2
    return "".join(parts) + ")"


def format_tensor(arr: "np.ndarray", *, dtype_name: str, is_default_dtype: bool,
                  suffixes: Sequence[str] = (), prefix: str = "tensor(",
                  device_suffix: Optional[str] = None) -> str:
    """Builds the full PyTorch-style ``repr`` of a tensor.

    Args:
        arr: The tensor's values. Any numpy dtype holding them exactly works
            (e.g. bfloat16 data may be passed as float32 or ml_dtypes arrays).
        dtype_name: funcgrad dtype name, e.g. ``"float64"``, ``"int32"``.
        is_default_dtype: For floating and complex dtypes, whether the dtype is
            the current default (``float32``/``complex64`` unless changed via
            ``set_default_dtype``). Ignored for integer and bool dtypes, where
            ``int64`` and ``bool`` are always the defaults.
        suffixes: Suffixes placed after the dtype one, e.g.
            ``["grad_fn=<SigmoidBackward0>"]`` or ``["requires_grad=True"]``.
        prefix: Text before the data; its length sets the continuation indent.
        device_suffix: Optional suffix placed first, e.g. ``"device='cuda:0'"``.

    Returns:
        The string PyTorch would print, with ``funcgrad.`` in place of ``torch.``.
    """
    arr = np.asarray(arr)
    kind = _kind(dtype_name)
    indent = len(prefix)
    dtype_suffix = f"dtype={_DTYPE_PREFIX}{dtype_name}"
    extra = [device_suffix] if device_suffix else []
    if arr.size == 0:
        # Shape is shown unless it is (0,), matching NumPy; the dtype is shown
        # unless it is the default *float* dtype, since nothing else hints at it.
        if arr.ndim != 1:
            extra.append(f"size={tuple(arr.shape)}")
        if not (kind == "float" and is_default_dtype):
            extra.append(dtype_suffix)
        body = "[]"
    else:
        if not _OPTS["edgeitems"]:
            extra.append(f"size={tuple(arr.shape)}")  # data fully elided
        default = {"float": is_default_dtype, "complex": is_default_dtype,
                   "bool": True, "int": dtype_name == "int64"}[kind]
        if not default:
            extra.append(dtype_suffix)
        body = _body(arr, kind, indent)
    return _add_suffixes(prefix + body, extra + list(suffixes), indent)


def format_meta(shape: tuple, *, dtype_name: str, is_default_dtype: bool,
                suffixes: Sequence[str] = (), prefix: str = "tensor(") -> str:
    """The repr of a meta tensor (no data), PyTorch's: ``...``, the device, the size, the dtype
    unless it is the default float dtype (an ``int64`` one is named too), then ``suffixes``.

    >>> format_meta((2, 3), dtype_name="int64", is_default_dtype=False)
    "tensor(..., device='meta', size=(2, 3), dtype=funcgrad.int64)"
    """
    extra = ["device='meta'", f"size={tuple(shape)}"]
    if not is_default_dtype:
        extra.append(f"dtype={_DTYPE_PREFIX}{dtype_name}")
    return _add_suffixes(prefix + "...", extra + list(suffixes), len(prefix))


def format_sparse(indices: np.ndarray, values: np.ndarray, dtype_name: str, is_default_dtype: bool,
                  suffixes: Sequence[str]) -> str:
    """PyTorch's repr of a sparse COO tensor: ``tensor(indices=tensor([[...]]),\\n       values=
    tensor([...]),\\n       size=(3, 3), nnz=2, layout=torch.sparse_coo)`` (``suffixes``: size,
    nnz, dtype, layout, grad; the first on a line of its own, the rest wrapped as PyTorch's)."""
    indent = len("tensor(")

    def part(prefix, a, kind):
        body = _body(a, kind, indent + len(prefix)) if a.size else "[]"
        return prefix + body + (f", size={tuple(a.shape)}" if not a.size else "") + ")"

    text = ("tensor(" + part("indices=tensor(", indices, "int") + ",\n" + " " * indent
            + part("values=tensor(", values, _kind(dtype_name)))
    parts, last, force = [text], 0, True  # (PyTorch's _add_suffixes with force_newline)
    for suffix in suffixes:
        n = len(suffix.replace(_DTYPE_PREFIX, "torch."))  # (wrapped where PyTorch's text would be)
        if force or last + n + 2 > _OPTS["linewidth"]:
            parts.append(",\n" + " " * indent + suffix)
            last, force = indent + n, False
        else:
            parts.append(", " + suffix)
            last += n + 2
    return "".join(parts) + ")"
