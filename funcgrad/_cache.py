"""Bounded caches: least-recently-used eviction with a one-time warning.

Every compiled kernel funcgrad keeps (eager op kernels, fused backward programs, compiled steps)
holds XLA executables in memory; a loop whose shapes keep changing (a new batch size each step,
variable sequence lengths) would grow them without bound. An ``LRU`` keeps at most ``maxsize``
entries, drops the least recently used one beyond that, and warns once per cache, naming the
last keys, so the user sees which shapes keep changing.

Most of what a compiled kernel holds lives in JAX's own caches (per-function executables, the
lowered modules, jaxprs), keyed per input shape. Counting them per call would put Python on the
eager hot path, so the bound on executables is kept by a sweep instead: XLA compilations are
counted (a ``jax.monitoring`` listener: free when nothing compiles), and every ``SWEEP_EVERY``
compilations the next ``backward()`` counts the executables of the registered kernels; beyond
``MAX_EXECUTABLES`` (``FUNCGRAD_MAX_EXECUTABLES``) it warns once, naming the kernels with the most
shapes, and clears JAX's caches, so memory stays flat however many shapes a loop goes through.
Kernels still in use recompile on their next call (from the persistent compilation cache: a
file read, not an XLA compile). Freed compiler memory is handed back to the OS (``malloc_trim``).
"""

from __future__ import annotations

import collections
import ctypes
import gc
import os
import warnings

import jax


class LRU:
    """A mapping bounded to ``maxsize`` entries with least-recently-used eviction.

    Args:
        maxsize: the bound (``None``: unbounded).
        what: what the entries are, for the warning (``"eager kernels of mul"``).
        on_evict: called with each evicted value (e.g. to clear a jitted function's cache).

    >>> c = LRU(2, "examples")
    >>> c.put("a", 1); c.put("b", 2); c.get("a")
    1
    >>> import warnings
    >>> with warnings.catch_warnings(record=True) as w:
    ...     warnings.simplefilter("always")
    ...     c.put("c", 3)
    >>> sorted(c.keys()), c.evictions
    (['a', 'c'], 1)
    """

    __slots__ = ("maxsize", "what", "on_evict", "evictions", "_d", "_warned")

    def __init__(self, maxsize: int | None, what: str, on_evict=None):
        self.maxsize, self.what, self.on_evict = maxsize, what, on_evict
        self.evictions, self._warned = 0, False
        self._d: collections.OrderedDict = collections.OrderedDict()

    def get(self, key, default=None):
        d = self._d
        v = d.get(key, _MISSING)
        if v is _MISSING:
            return default
        d.move_to_end(key)
        return v

    def put(self, key, value) -> None:
        d = self._d
        d[key] = value
        d.move_to_end(key)
        if self.maxsize is not None:
            while len(d) > self.maxsize:
                old_key, old = d.popitem(last=False)
                self.evictions += 1
                if self.on_evict is not None:
                    self.on_evict(old)
                if not self._warned:
                    self._warned = True
                    _warn(self, old_key, key)

    def __contains__(self, key):
        return key in self._d

    def __len__(self):
        return len(self._d)

    def keys(self):
        return list(self._d.keys())

    def values(self):
        return list(self._d.values())

    def clear(self) -> None:
        self._d.clear()

    def pop(self, key, default=None):
        return self._d.pop(key, default)


_MISSING = object()


def _warn(cache, old_key, new_key) -> None:
    warnings.warn(
        f"funcgrad: more than {cache.maxsize} {cache.what} are compiled; the least recently used "
        f"are evicted (and recompiled if used again). This usually means shapes keep changing "
        f"from step to step; the latest key was {_short(new_key)}, the evicted one "
        f"{_short(old_key)}. Pad or bucket the varying dimension (e.g. drop_last=True in the "
        f"DataLoader) to compile once.", UserWarning, stacklevel=4)


def _short(key, limit=300) -> str:
    s = repr(key)
    return s if len(s) <= limit else s[:limit] + "…"


# ---- the bound on compiled executables ---------------------------------------------------------
MAX_EXECUTABLES = int(os.environ.get("FUNCGRAD_MAX_EXECUTABLES", "2048"))
SWEEP_EVERY = 256
_BACKEND_COMPILE = "/jax/core/compile/backend_compile_duration"
_holders: list = []          # callables yielding (label, jitted function) of kernels to count
_sweep = {"compiles": 0, "due": False, "warned": False, "sweeps": 0}


def register_kernels(holder) -> None:
    """Count the kernels ``holder()`` yields (``(label, jitted)`` pairs) against the bound."""
    _holders.append(holder)


def _on_duration(name, _secs, **_kw):
    if name == _BACKEND_COMPILE:
        s = _sweep
        s["compiles"] += 1
        if s["compiles"] % SWEEP_EVERY == 0:
            s["due"] = True  # not here: this runs inside a compilation


jax.monitoring.register_event_duration_secs_listener(_on_duration)


def maybe_sweep() -> None:
    """Called at a safe point (``backward()``): sweep if enough compilations happened."""
    if _sweep["due"]:
        sweep()


def executables() -> list:
    """``(count, label)`` of every registered kernel holding compiled executables."""
    out = []
    for h in _holders:
        for label, k in h():
            n = k._cache_size()
            if n:
                out.append((n, label))
    return out


def sweep(limit: int | None = None) -> bool:
    """Clear JAX's compilation caches if the kernels hold more than ``limit`` executables.

    Returns whether it cleared them.
    """
    _sweep["due"] = False
    limit = MAX_EXECUTABLES if limit is None else limit
    counts = executables()
    total = sum(n for n, _ in counts)
    if total <= limit:
        return False
    if not _sweep["warned"]:
        _sweep["warned"] = True
        top = ", ".join(f"{label} ({n} shapes)" for n, label in sorted(counts, key=lambda c: -c[0])[:3])
        warnings.warn(
            f"funcgrad: {total} compiled kernels are held (more than {limit}); the compilation "
            f"caches are cleared and kernels in use recompile. The kernels compiled for the most "
            f"input shapes are: {top}. Shapes keep changing from step to step: pad or bucket the "
            f"varying dimension (e.g. drop_last=True in the DataLoader) to compile once.",
            UserWarning, stacklevel=3)
    jax.clear_caches()
    gc.collect()
    _malloc_trim()
    _sweep["sweeps"] += 1
    return True


def _malloc_trim() -> None:
    """Return freed heap pages to the OS (glibc keeps them: RSS would not go down)."""
    try:
        _LIBC[0] = _LIBC[0] or ctypes.CDLL("libc.so.6")
        _LIBC[0].malloc_trim(0)
    except (OSError, AttributeError):
        _LIBC[0] = None


_LIBC: list = [None]
