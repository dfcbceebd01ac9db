"""Bounded caches: least-recently-used eviction with a one-time warning.

Every compiled kernel funcgrad keeps (eager op kernels, fused backward programs, compiled steps)
holds XLA executables in memory; a loop whose shapes keep changing (a new batch size each step,
variable sequence lengths) would grow them without bound. An ``LRU`` keeps at most ``maxsize``
entries, drops the least recently used one beyond that, and warns once per cache, naming the
keys, so the user sees which shapes keep changing.

Eager kernels, per shape. JAX caches a jitted function's executables per input shape below the
function (its C++ dispatch cache, the traced jaxpr, the lowered module, the executable), and
frees them only together, when the function object dies: JAX offers no per-shape eviction (the
``_cache_size()``/``clear_cache()`` of a jitted function are all its shapes at once, and the
latter clears every function's traces). Choosing a jitted function per shape in Python would put
a shape key on every eager call (~0.3-1 µs of a ~5 µs dispatch). So a kernel starts as one plain
``jax.jit`` (zero cost on the hot path) and counts its traces (free: a trace runs Python anyway);
one traced for more than ``CHURN`` input signatures has shapes that keep changing and swaps
itself, in the dict the dispatcher reads, for a ``ShapeKernel``: one jitted function per input
signature (a fresh closure each, so JAX frees its caches with it), all held in one global
``LRU`` bounded to ``MAX_EXECUTABLES`` (``FUNCGRAD_MAX_EXECUTABLES``). Only such kernels pay the
shape key; a shape used recently stays compiled while older ones are evicted.

A kernel per value of a static argument (``x.view(b, -1)``, a new ``b`` each step) is compiled
once each and never churns by itself: past ``STATIC_CHURN`` kernels in one op's dict new ones
are ``ShapeKernel``s from the start (``static_kernel``), in the same LRU.

What is not a funcgrad kernel is bounded by a sweep at safe points (``backward()``, a
``ShapeKernel`` compiling outside any trace, which covers inference-only loops, and a
``funcgrad.jit`` step's call, whose backward() runs inside its trace): XLA compilations
are counted (a ``jax.monitoring`` listener: free when nothing compiles), and every
``SWEEP_EVERY`` compilations JAX's eager-primitive executables and all its Python-side
staging caches (traced jaxprs, lowerings, shardings) are dropped (what is in use
stays compiled in the jitted functions' C++ dispatch caches), and kernels that still
hold more than that (e.g. a static argument that changes every step) clear JAX's caches as a
last resort. Freed compiler memory is handed back to the OS (``malloc_trim``).
"""

from __future__ import annotations

import collections
import ctypes
import gc
import os
import warnings

import jax

from . import _ahead


class LRU:
    """A mapping bounded to ``maxsize`` entries with least-recently-used eviction.

    Args:
        maxsize: the bound (``None``: unbounded).
        what: what the entries are, for the warning (``"eager kernels of mul"``).
        on_evict: called with each evicted value (e.g. to clear a jitted function's cache).
        fmt: how the warning prints a key (default: its ``repr``, shortened).

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

    __slots__ = ("maxsize", "what", "on_evict", "evictions", "_d", "_warned", "fmt")

    def __init__(self, maxsize: int | None, what: str, on_evict=None, fmt=None):
        self.maxsize, self.what, self.on_evict, self.fmt = maxsize, what, on_evict, fmt or _short
        self.evictions, self._warned = 0, False
        self._d: collections.OrderedDict = collections.OrderedDict()

    def get(self, key, default=None):
        d = self._d
        v = d.get(key, _MISSING)
        if v is _MISSING:
            return default
        try:
            d.move_to_end(key)
        except KeyError:  # evicted by another thread meanwhile
            pass
        return v

    def __setitem__(self, key, value) -> None:
        self.put(key, value)

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
    warn_evicted(cache.maxsize, cache.what, cache.fmt(new_key), cache.fmt(old_key), stacklevel=5)


def warn_evicted(maxsize, what: str, new: str, old: str, once: list | None = None,
                 stacklevel: int = 4) -> None:
    """The eviction warning, naming the latest and the evicted key (once per ``once`` list)."""
    if once is not None:
        if once:
            return
        once.append(True)
    warnings.warn(
        f"funcgrad: more than {maxsize} {what} are compiled; the least recently used "
        f"are evicted (and recompiled if used again). This usually means shapes keep changing "
        f"from step to step; the latest was {new}, the evicted one {old}. Pad or bucket the "
        f"varying dimension (e.g. drop_last=True in the DataLoader) to compile once.",
        UserWarning, stacklevel=stacklevel)


def _short(key, limit=300) -> str:
    s = repr(key)
    return s if len(s) <= limit else s[:limit] + "…"


# ---- per-shape eager kernels -------------------------------------------------------------------
MAX_EXECUTABLES = int(os.environ.get("FUNCGRAD_MAX_EXECUTABLES", "1024"))
MAX_PROGRAMS = int(os.environ.get("FUNCGRAD_MAX_PROGRAMS", "32"))  # per funcgrad.jit step
CHURN = 8  # a kernel traced for more input signatures than this switches to per-shape mode


def _describe(key) -> str:
    """``mul(float32[37, 20], float32[37, 20])`` for a ``ShapeKernel`` cache key."""
    kern, sig = key
    return f"{kern.label}({', '.join(_fmt_sig(s) for s in sig)})"


def _fmt_sig(s) -> str:
    if type(s) is _Arr:
        return f"{s[1]}[{', '.join(map(str, s[0]))}]"
    if type(s) is _Static:
        return repr(s[0])
    if type(s) is tuple:
        return "[" + ", ".join(map(_fmt_sig, s)) + "]"
    return s.__name__ if isinstance(s, type) else repr(s)


class _Arr(tuple):
    """An array operand's ``(shape, dtype)`` in a signature (told apart from nested lists)."""

    __slots__ = ()


class _Static(tuple):
    """A static argument's value in a signature."""

    __slots__ = ()


def _on_evict_shape(value) -> None:
    value[0].n -= 1


_SHAPED = LRU(MAX_EXECUTABLES, "eager kernel executables (one per kernel and input shape)",
              on_evict=_on_evict_shape, fmt=_describe)


def _leaf_sig(a):
    shape = getattr(a, "shape", None)
    if shape is not None:
        return _Arr((tuple(shape), a.dtype))
    if type(a) is list or type(a) is tuple:
        return tuple(map(_leaf_sig, a))
    return a.__class__  # a Python scalar or None: jax keys it on its type (weakly typed)


class ShapeKernel:
    """A kernel whose shapes keep changing: one jitted function per input signature, in the
    global LRU ``_SHAPED``. ``make()`` returns a fresh function each time, so that JAX's caches
    (keyed weakly on the function) die with an evicted entry.

    >>> import jax.numpy as jnp
    >>> k = ShapeKernel(lambda: (lambda x, n: x * n), "scale", {"static_argnums": (1,)})
    >>> k(jnp.ones(2), 3).tolist(), k(jnp.ones(3), 3).tolist(), k._cache_size()
    ([3.0, 3.0], [3.0, 3.0, 3.0], 2)
    """

    __slots__ = ("make", "label", "jit_kw", "static", "n", "__weakref__")

    def __init__(self, make, label: str, jit_kw=None):
        self.make, self.label, self.jit_kw = make, label, jit_kw or {}
        self.static = frozenset(self.jit_kw.get("static_argnums", ()))
        self.n = 0

    def __repr__(self) -> str:
        return f"<ShapeKernel {self.label}: {self.n} shapes>"

    def __call__(self, *args):
        static = self.static
        sig = tuple(_Static((a,)) if i in static else _leaf_sig(a) for i, a in enumerate(args)) \
            if static \
            else tuple(map(_leaf_sig, args))
        key = (self, sig)
        v = _SHAPED.get(key)
        if v is not None:
            return v[1](*args)
        k = jax.jit(self.make(), **self.jit_kw)
        out = k(*args)  # first: an op that raises (bad shapes) leaves nothing cached
        if _sweep["due"]:
            maybe_sweep()
        if key not in _SHAPED:  # (another thread may have compiled it meanwhile)
            self.n += 1
        _SHAPED.put(key, (self, k))
        _malloc_trim_sometimes()
        return out

    def _cache_size(self) -> int:
        return self.n


def kernel(make, label: str, swap=None, per_shape: bool = False, **jit_kw):
    """``jax.jit(make(), **jit_kw)`` that becomes a ``ShapeKernel`` once its shapes keep changing.

    Args:
        make: returns the (pure, traceable) function; called again for each shape once the
            kernel is per-shape, so it must return a fresh function object each time.
        label: the kernel's name in the warning (``"mul"``, ``"fused backward (5 ops)"``).
        swap: ``(dict, key)`` where the caller keeps the kernel, or a callable taking the
            replacement: past ``CHURN`` traces the ``ShapeKernel`` is put there (effective from
            the next call; this one finishes compiling). ``(dict, key, forget)``: ``forget()``
            is called then too (a second place that held the plain kernel drops it).
        per_shape: a ``ShapeKernel`` from the start (``static_kernel``: the caller's kernels
            keep changing, e.g. one per value of a static argument).

    >>> import jax.numpy as jnp
    >>> d = {}
    >>> d["neg"] = kernel(lambda: (lambda x: -x), "neg", swap=(d, "neg"))
    >>> for n in range(1, CHURN + 3):
    ...     _ = d["neg"](jnp.ones(n))
    >>> d["neg"]
    <ShapeKernel neg: 1 shapes>
    """
    if per_shape:
        return ShapeKernel(make, label, jit_kw)
    fn = make()
    traces = [0]
    me: list = []

    def counted(*a, **kw):  # runs only while jax traces: once per new input signature
        traces[0] += 1
        if traces[0] > CHURN and me:
            rep = ShapeKernel(make, label, jit_kw)
            if callable(swap):
                swap(rep)
            elif swap is not None:
                d, key = swap[0], swap[1]
                if d.get(key) is me[0]:
                    d[key] = rep
                if len(swap) > 2:  # (whoever else holds the plain kernel lets it go)
                    swap[2]()
            me.clear()
        return fn(*a, **kw)
    k = jax.jit(counted, **jit_kw)
    me.append(k)
    return k


STATIC_CHURN = 2 * CHURN  # an op with more kernels than this (static arguments) makes per-shape ones
OP_KERNELS = 256  # ...and keeps at most this many of them in its dict


def static_kernel(d: dict, key, make, label: str, forget=None):
    """``d[key] = kernel(make, label, swap=(d, key))``, for a dict of kernels keyed on static
    arguments (an op's kernels per static arguments and dtype cast); ``forget``: see ``kernel``.

    A static argument that changes from call to call (``x.view(b, -1)`` for a new batch size
    ``b`` each step) makes a kernel per value, each compiled once: past ``STATIC_CHURN``
    kernels in ``d`` new ones are ``ShapeKernel``s, whose executables the per-shape LRU
    bounds, and past ``OP_KERNELS`` the oldest per-shape ones leave ``d`` (the plain
    kernels, the ones made first, stay: those are the ones a steady loop uses).

    >>> d = {}
    >>> for n in range(STATIC_CHURN + 2):
    ...     _ = static_kernel(d, n, lambda: (lambda x: x), "id")
    >>> sum(type(k) is ShapeKernel for k in d.values())
    2
    """
    k = d[key] = kernel(make, label, swap=(d, key) if forget is None else (d, key, forget),
                        per_shape=len(d) >= STATIC_CHURN)
    if len(d) > OP_KERNELS:
        for old in [o for o, v in d.items() if type(v) is ShapeKernel][:len(d) - OP_KERNELS]:
            del d[old]
    return k


class Kernel:
    """A module-level kernel (``@jax.jit`` at import) that may become per-shape: the decorator
    form of ``kernel``, at the price of one Python call (for kernels off the per-op hot path).

    >>> import jax.numpy as jnp
    >>> full = Kernel(lambda v, shape: jnp.full(shape, v), "full", static_argnums=(1,))
    >>> full(2.0, (2,)).tolist()
    [2.0, 2.0]
    """

    __slots__ = ("_k", "__wrapped__")

    def __init__(self, fn, label: str | None = None, **jit_kw):
        self.__wrapped__ = fn

        def make():
            return lambda *a: fn(*a)
        self._k = kernel(make, label or getattr(fn, "__name__", "kernel"), swap=self._swap, **jit_kw)

    def _swap(self, rep) -> None:
        self._k = rep

    def __call__(self, *args):
        return self._k(*args)

    def _cache_size(self) -> int:
        return self._k._cache_size()


try:  # not inside a trace (a sweep clears caches a running trace or compile may be using)
    from jax._src.core import trace_state_clean as _clean
except ImportError:  # private in JAX: then only backward() sweeps
    def _clean() -> bool:
        return False
trace_clean = _clean  # also: whether a concrete array made now is not a constant of some trace


_TRIM = [0]


def _malloc_trim_sometimes() -> None:
    _TRIM[0] += 1
    if _TRIM[0] % 64 == 0 and _SHAPED.evictions:
        _malloc_trim()


# ---- the sweep: what is not a funcgrad kernel ----------------------------------------------------
SWEEP_EVERY = 64  # a sweep (gc + counting) costs ~0.1 s; 64 compilations take seconds
_BACKEND_COMPILE = "/jax/core/compile/backend_compile_duration"
_holders: list = []          # callables yielding (label, jitted function) of kernels to count
_sweep = {"compiles": 0, "due": False, "warned": False, "sweeps": 0, "primitive_clears": 0}


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
    # (backward() inside funcgrad.jit's trace, or a program compiled ahead and not yet used: later)
    if _sweep["due"] and _clean() and not _ahead.unused():
        sweep()


def executables(shaped: bool = True) -> list:
    """``(count, label)`` of every registered kernel holding compiled executables
    (``shaped=False``: leave out the per-shape kernels, which the LRU bounds)."""
    out = []
    for h in _holders:
        for label, k in h():
            if not shaped and type(k) is ShapeKernel:
                continue
            n = k._cache_size()
            if n:
                out.append((n, label))
    return out


def _trace_caches() -> list:
    """JAX's Python-side staging caches (private; [] if this JAX has other ones): every
    ``util.cache``/``weakref_lru_cache`` that ``jax.clear_caches`` clears besides the C++
    dispatch caches of jitted functions (where the executables in use stay). Kernels traced
    inside a funcgrad kernel or compiled step (``jnp.matmul`` is itself jitted) are cached per
    shape there, keyed on JAX's own functions, which never die: thousands of entries (traced
    jaxprs, lowered modules, shardings) of some KiB each, ~1.7 MiB per batch size of an MLP
    step. (The first of these is the one this relies on.)"""
    try:
        from jax._src import pjit, util
        pjit._infer_params_cached.cache_clear  # noqa: B018 - the API this relies on
        return [c for c in list(util._caches.keys()) if hasattr(c, "cache_clear")]
    except (ImportError, AttributeError):
        return []


def _primitive_cache():
    """JAX's cache of eager primitive executables (private: None if this JAX has none)."""
    try:
        from jax._src import dispatch
        c = dispatch.xla_primitive_callable
        c.cache_info().currsize  # noqa: B018 - the API this relies on
        return c
    except (ImportError, AttributeError):
        return None


def sweep(limit: int | None = None) -> bool:
    """Bound what the per-shape LRU does not: JAX's eager-primitive executables are dropped; plain
    kernels holding more than ``limit`` executables clear JAX's caches.

    Returns whether it cleared JAX's caches.
    """
    _sweep["due"] = False
    limit = MAX_EXECUTABLES if limit is None else limit
    prim = _primitive_cache()
    if prim is not None and prim.cache_info().currsize:
        # one jitted function per primitive, compiled per shape below it (jnp.asarray of a numpy
        # array stages one per shape): the sweep comes every SWEEP_EVERY compilations, so
        # dropping them all costs a recompile of the few in use, rarely
        prim.cache_clear()
        _sweep["primitive_clears"] += 1
    # the executables in use stay in each jitted function's C++ dispatch cache: nothing in use
    # recompiles, a call of a new signature traces anew (as it would anyway)
    for c in _trace_caches():
        c.cache_clear()
    gc.collect()
    _malloc_trim()
    counts = executables(shaped=False)
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
