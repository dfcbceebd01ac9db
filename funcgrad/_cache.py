"""Bounded caches: least-recently-used eviction with a one-time warning.

Every compiled kernel funcgrad keeps (eager op kernels, fused backward programs, compiled steps)
holds XLA executables in memory; a loop whose shapes keep changing (a new batch size each step,
variable sequence lengths) would grow them without bound. An ``LRU`` keeps at most ``maxsize``
entries, drops the least recently used one beyond that, and warns once per cache, naming the
last keys, so the user sees which shapes keep changing.
"""

from __future__ import annotations

import collections
import warnings


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
