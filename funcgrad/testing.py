"""``funcgrad.testing.assert_close``: PyTorch's comparison (same pairs, default tolerances per
dtype, and the same failure messages, with funcgrad's spelling of dtypes and sizes).

>>> import funcgrad
>>> from funcgrad.testing import assert_close
>>> assert_close(funcgrad.tensor([1.0, 2.0]), funcgrad.tensor([1.0, 2.0 + 1e-7]))
>>> assert_close(funcgrad.tensor([1.0, 2.0]), funcgrad.tensor([1.0, 2.1]))
Traceback (most recent call last):
...
AssertionError: Tensor-likes are not close!
<BLANKLINE>
Mismatched elements: 1 / 2 (50.0%)
Greatest absolute difference: 0.09999990463256836 at index (1,) (up to 1e-05 allowed)
Greatest relative difference: 0.04761900380253792 at index (1,) (up to 1.3e-06 allowed)
"""

from __future__ import annotations

import cmath
import collections.abc

import numpy as np

from . import _dtype
from ._dtype import _np_promote
from ._factories import from_numpy
from ._tensor import Tensor

# (rtol, atol) by dtype (PyTorch's table); other dtypes compare exactly
_DTYPE_PRECISIONS = {_dtype.float16: (0.001, 1e-5), _dtype.bfloat16: (0.016, 1e-5),
                     _dtype.float32: (1.3e-6, 1e-5), _dtype.float64: (1e-7, 1e-7),
                     _dtype.complex64: (1.3e-6, 1e-5), _dtype.complex128: (1e-7, 1e-7)}
_NUMBER_DTYPE = {int: _dtype.int64, float: _dtype.float64, complex: _dtype.complex128}


class _Fail(Exception):
    def __init__(self, type_, msg, id_=()):
        self.type, self.msg, self.id = type_, msg, id_

    def to_error(self, msg):
        if not isinstance(msg, str):
            generated = self.msg
            if self.id:
                generated += f"\n\nThe failure occurred for item {''.join(str([i]) for i in self.id)}"
            msg = msg(generated) if callable(msg) else generated
        return self.type(msg)


def default_tolerances(*dtypes) -> tuple[float, float]:
    rtols, atols = zip(*[_DTYPE_PRECISIONS.get(d, (0.0, 0.0)) for d in dtypes])
    return max(rtols), max(atols)


def _tolerances(dtypes, rtol, atol, id_):
    if (rtol is None) ^ (atol is None):
        raise _Fail(ValueError, f"Both 'rtol' and 'atol' must be either specified or omitted, but got "
                                f"no {'rtol' if rtol is None else 'atol'}.", id_)
    if rtol is not None:
        return rtol, atol
    return default_tolerances(*dtypes)


def _mismatch_msg(identifier, extra, abs_diff, abs_idx, atol, rel_diff, rel_idx, rtol) -> str:
    equality = rtol == 0 and atol == 0

    def diff_msg(kind, diff, idx, tol):
        msg = f"{kind.title()} difference: {diff}" if idx is None else \
            f"Greatest {kind} difference: {diff} at index {idx}"
        return msg + ("" if equality else f" (up to {tol} allowed)") + "\n"
    msg = f"{identifier} are not {'equal' if equality else 'close'}!\n\n"
    if extra:
        msg += f"{extra.strip()}\n"
    msg += diff_msg("absolute", abs_diff, abs_idx, atol) + diff_msg("relative", rel_diff, rel_idx, rtol)
    return msg.strip()


def _scalar_msg(actual, expected, rtol, atol) -> str:
    abs_diff = abs(actual - expected)
    rel_diff = float("inf") if expected == 0 else abs_diff / abs(expected)
    return _mismatch_msg("Scalars", f"Expected {expected} but got {actual}.", abs_diff, None, atol,
                         rel_diff, None, rtol)


def _isclose(a: np.ndarray, b: np.ndarray, rtol, atol, equal_nan) -> np.ndarray:
    """``torch.isclose``, computed in the tensors' dtype as PyTorch does."""
    with np.errstate(all="ignore"):
        close = a == b
        if equal_nan and a.dtype.kind in "fcV":
            close |= np.isnan(a) & np.isnan(b)
        if rtol == 0 and atol == 0 or a.dtype.kind == "b":
            return close
        if a.dtype.kind in "iu":
            a, b = a.astype(np.float64), b.astype(np.float64)
        err = np.abs(a - b)
        allowed = atol + np.abs(rtol * b)
        return close | (np.isfinite(err) & (err <= allowed))


def _tensor_msg(a: np.ndarray, b: np.ndarray, matches: np.ndarray, rtol, atol) -> str:
    n = matches.size
    mism = n - int(matches.sum())
    extra = f"Mismatched elements: {mism} / {n} ({mism / n:.1%})"
    a, b, m = a.ravel(), b.ravel(), matches.ravel()
    if a.dtype.kind in "biu":
        a, b = a.astype(np.int64), b.astype(np.int64)
    with np.errstate(all="ignore"):
        abs_diff = np.abs(a - b)
        abs_diff[m] = 0
        i = int(np.argmax(abs_diff))
        # integer division is true division into the default float dtype, as in PyTorch
        rel = abs_diff / np.abs(b) if a.dtype.kind in "fcV" else \
            (abs_diff / np.abs(b)).astype(_dtype.get_default_dtype().np)
        rel[m] = 0
        j = int(np.argmax(rel))

    def unravel(k):
        return tuple(int(x) for x in np.unravel_index(k, matches.shape)) if matches.shape else ()
    return _mismatch_msg("Tensor-likes", extra, abs_diff[i].item(), unravel(i), atol, rel[j].item(),
                         unravel(j), rtol)


def _compare_tensors(actual, expected, id_, rtol, atol, equal_nan, check_device, check_dtype):
    def attr(name, x, y):
        raise _Fail(AssertionError, f"The values for attribute '{name}' do not match: {x} != {y}.", id_)
    if actual.shape != expected.shape:
        attr("shape", actual.shape, expected.shape)
    if check_device and actual.device != expected.device:
        attr("device", actual.device, expected.device)
    if check_dtype and actual.dtype is not expected.dtype:
        attr("dtype", actual.dtype, expected.dtype)
    a, b = np.asarray(actual.detach().cpu()), np.asarray(expected.detach().cpu())
    if actual.dtype is not expected.dtype:
        d = _np_promote(actual.dtype, expected.dtype).np
        a, b = a.astype(d), b.astype(d)
    matches = _isclose(a, b, rtol, atol, equal_nan)
    if matches.all():
        return
    if a.shape == ():
        raise _Fail(AssertionError, _scalar_msg(a.item(), b.item(), rtol, atol), id_)
    raise _Fail(AssertionError, _tensor_msg(a, b, matches, rtol, atol), id_)


def _compare_numbers(actual, expected, id_, rtol, atol, equal_nan, check_dtype):
    if check_dtype and type(actual) is not type(expected):
        raise _Fail(AssertionError, f"The (d)types do not match: {type(actual)} != {type(expected)}.", id_)
    if actual == expected:
        return
    if equal_nan and cmath.isnan(actual) and cmath.isnan(expected):
        return
    diff = abs(actual - expected)
    if cmath.isfinite(diff) and diff <= atol + rtol * abs(expected):
        return
    raise _Fail(AssertionError, _scalar_msg(actual, expected, rtol, atol), id_)


def _compare_none(actual, expected, id_):
    if actual is not expected:
        raise _Fail(AssertionError, f"None mismatch: {actual} is not {expected}", id_)


def _compare_bools(actual, expected, id_):
    if bool(actual) is not bool(expected):
        raise _Fail(AssertionError, f"Booleans mismatch: {bool(actual)} is not {bool(expected)}", id_)


def _is_number(x) -> bool:
    return isinstance(x, (int, float, complex, np.number)) and not isinstance(x, (bool, np.bool_))


def _originate(actual, expected, id_, pairs, **opts):
    """PyTorch's first phase: pair up the leaves (structure, type and tolerance errors raise
    here, before any value is compared, and are not replaced by ``msg``)."""
    seq, mapping = collections.abc.Sequence, collections.abc.Mapping
    if isinstance(actual, seq) and isinstance(expected, seq) and \
            not isinstance(actual, str) and not isinstance(expected, str):
        if len(actual) != len(expected):
            raise _Fail(AssertionError,
                        f"The length of the sequences mismatch: {len(actual)} != {len(expected)}", id_)
        for i, (a, e) in enumerate(zip(actual, expected)):
            _originate(a, e, id_ + (i,), pairs, **opts)
        return
    if isinstance(actual, mapping) and isinstance(expected, mapping):
        ka, ke = set(actual), set(expected)
        if ka != ke:
            missing, extra = ke - ka, ka - ke
            msg = "The keys of the mappings do not match:\n"
            if missing:
                msg += f"Missing keys in the actual mapping: {sorted(missing)}\n"
            if extra:
                msg += f"Additional keys in the actual mapping: {sorted(extra)}"
            raise _Fail(AssertionError, msg.strip(), id_)
        keys = actual.keys()
        try:
            keys = sorted(keys)
        except Exception:  # noqa: BLE001  (unsortable keys keep their order, as in PyTorch)
            keys = list(keys)
        for k in keys:
            _originate(actual[k], expected[k], id_ + (k,), pairs, **opts)
        return
    if actual is None or expected is None:
        pairs.append(lambda: _compare_none(actual, expected, id_))
        return
    if isinstance(actual, (bool, np.bool_)) and isinstance(expected, (bool, np.bool_)):
        pairs.append(lambda: _compare_bools(actual, expected, id_))
        return
    rtol, atol, equal_nan = opts["rtol"], opts["atol"], opts["equal_nan"]
    if _is_number(actual) and _is_number(expected):
        a = actual.item() if isinstance(actual, np.number) else actual
        e = expected.item() if isinstance(expected, np.number) else expected
        rt, at = _tolerances((_NUMBER_DTYPE[type(a)], _NUMBER_DTYPE[type(e)]), rtol, atol, id_)
        pairs.append(lambda: _compare_numbers(a, e, id_, rt, at, equal_nan, opts["check_dtype"]))
        return
    if isinstance(actual, np.ndarray) and isinstance(expected, np.ndarray):
        actual, expected = from_numpy(actual.copy()), from_numpy(expected.copy())
    if isinstance(actual, Tensor) and isinstance(expected, Tensor) and \
            (opts["allow_subclasses"] or type(actual) is type(expected)):
        rt, at = _tolerances((actual.dtype, expected.dtype), rtol, atol, id_)
        pairs.append(lambda: _compare_tensors(actual, expected, id_, rt, at, equal_nan,
                                              opts["check_device"], opts["check_dtype"]))
        return
    raise _Fail(TypeError, f"No comparison pair was able to handle inputs of type {type(actual)} and "
                           f"{type(expected)}.", id_)


def assert_close(actual, expected, *, allow_subclasses: bool = True, rtol: float | None = None,
                 atol: float | None = None, equal_nan: bool = False, check_device: bool = True,
                 check_dtype: bool = True, check_layout: bool = True, check_stride: bool = False,
                 msg=None) -> None:
    """Assert ``actual`` and ``expected`` are close: tensors, NumPy arrays, numbers, ``None``,
    and sequences/mappings of them. ``|actual - expected| <= atol + rtol * |expected|``, with
    ``(rtol, atol)`` from the dtypes unless both are given.

    Raises:
        AssertionError: with PyTorch's message (mismatched elements, greatest differences).
    """
    pairs: list = []
    try:
        _originate(actual, expected, (), pairs, allow_subclasses=allow_subclasses, rtol=rtol, atol=atol,
                   equal_nan=equal_nan, check_device=check_device, check_dtype=check_dtype)
    except _Fail as f:
        raise f.to_error(None) from None
    for compare in pairs:
        try:
            compare()
        except _Fail as f:
            raise f.to_error(msg) from None


__all__ = ["assert_close"]
