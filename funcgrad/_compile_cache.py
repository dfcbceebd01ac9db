"""The persistent compilation cache: XLA programs compiled by one run are reused by the next.

funcgrad compiles many small kernels (one per op, static arguments and shapes); JAX's persistent
cache skips programs that compiled in under a second, i.e. all of them, and is off unless a
directory is set. At ``import funcgrad`` this module turns it on — config only: no backend is
started, so ``jax.distributed.initialize`` can still come first — in
``$XDG_CACHE_HOME/funcgrad/jax-<version>-<machine>/`` (``~/.cache`` without XDG), with
thresholds that keep small kernels, unless:

* ``FUNCGRAD_CACHE=0`` (or ``false``/``off``/``no``) disables it;
* the user configured JAX's cache themselves (``jax_compilation_cache_dir`` /
  ``JAX_COMPILATION_CACHE_DIR``): that configuration is left exactly as it is;
* the directory is not writable: one ``UserWarning``, and compiling goes on without it;
* a previous run found that this machine rejects its own entries (jax issue 38445: the XLA:CPU
  loader refuses executables whose recorded CPU tuning flags the host does not list, and
  recompiles): a marker file in the directory says so, and nothing more is written. A hit is
  judged against the compile time funcgrad recorded in the entry (JAX records whole seconds,
  0 for every small kernel), and only for programs slow enough to compile (``_DECISIVE``) that
  a load and a recompile cannot be mistaken for each other.

``FUNCGRAD_CACHE_DIR=path`` moves it, ``FUNCGRAD_CACHE_MAX_MB`` bounds it (default 1024), and
``funcgrad.set_compilation_cache(path_or_None)`` does either at run time.

The directory name includes the jax/jaxlib versions and a fingerprint of the CPU (model and
feature flags), so a home directory shared by different machines or environments never serves
one's executables to another. Entries are written atomically (temporary file, then rename), so
concurrent processes never read half an entry, and reads take no lock; each entry starts with
``_HEADER`` and the milliseconds its program took to compile; the size bound is kept by
deleting the least recently read entries, checked on the first write of a process and every
``_TRIM_EVERY`` writes after (not on every write: a directory scan per write would make writing
quadratic in the number of entries).
"""

from __future__ import annotations

import hashlib
import os
import platform
import tempfile
import threading
import time
import warnings

import jax

from ._atomic import atomic_write

ENV_DIR, ENV_SWITCH, ENV_MAX_MB = "FUNCGRAD_CACHE_DIR", "FUNCGRAD_CACHE", "FUNCGRAD_CACHE_MAX_MB"
REJECTED_MARKER = "funcgrad-entries-rejected-v2"
# written by funcgrad before the compile time was recorded per entry: its detector took JAX's
# compile time (whole seconds: 0 for a small kernel) as the reference, so any 16 hits in a row
# that took over 2 ms to load marked a healthy cache rejected. Such a marker is void: removed.
_OLD_MARKER = "funcgrad-entries-rejected"
_HEADER = b"FGC1"  # an entry: _HEADER, the compile time in ms (4 bytes, big-endian), JAX's bytes
_SUFFIX = "-cache"
_TRIM_EVERY = 256
_REJECT_AFTER = 16   # consecutive hits that loaded no faster than compiling: entries are rejected
_DECISIVE = 0.05     # s: a program that compiled faster says nothing (a load takes ~1-10 ms)

_state = {"dir": None, "warned": set(), "slow_hits": 0, "listening": False, "saved": None}
_lock = threading.Lock()
# per thread (JAX compiles in the calling thread): when the last compile request started, and
# the compile time recorded in the entry the last cache read returned (None: none recorded)
_tls = threading.local()


def default_dir() -> str:
    """``$XDG_CACHE_HOME/funcgrad/jax-<jax>-<jaxlib>-<machine>`` (``~/.cache`` without XDG)."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    import jaxlib  # the native runtime's version, which owns the executable format
    tag = f"jax-{jax.__version__}-jaxlib-{jaxlib.__version__}-{_machine()}"
    return os.path.join(base, "funcgrad", tag)


def _machine() -> str:
    """A short fingerprint of the CPU: architecture, model name and feature flags."""
    parts = [platform.machine(), platform.system()]
    try:
        with open("/proc/cpuinfo") as f:
            seen = set()
            for line in f:
                k = line.split(":", 1)[0].strip()
                if k in ("model name", "flags", "Features", "CPU part") and k not in seen:
                    seen.add(k)
                    parts.append(line.strip())
    except OSError:
        parts.append(platform.processor())
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()[:12]


def setup() -> None:
    """At import: enable the cache as the environment says (config only; see the module doc)."""
    if os.environ.get(ENV_SWITCH, "1").strip().lower() in ("0", "false", "off", "no"):
        return
    if jax.config.jax_compilation_cache_dir:  # the user's own JAX cache: leave it alone
        return
    _enable(os.environ.get(ENV_DIR) or default_dir())


def set_compilation_cache(path: str | os.PathLike | None) -> str | None:
    """Move funcgrad's persistent compilation cache to ``path``, or turn it off with ``None``.

    Compiled XLA programs are saved there and loaded by later runs instead of recompiling. By
    default the cache lives in ``$XDG_CACHE_HOME/funcgrad/`` (``~/.cache/funcgrad/``); the
    environment variables ``FUNCGRAD_CACHE=0`` and ``FUNCGRAD_CACHE_DIR`` do the same at import.

    Args:
        path: a directory (created if missing), or ``None`` to stop reading and writing.

    Returns:
        The directory now in use, or ``None`` (disabled, or not writable: then a ``UserWarning``
        says why and compiling goes on without a persistent cache).

    >>> import funcgrad, tempfile
    >>> d = tempfile.mkdtemp()
    >>> funcgrad.set_compilation_cache(d) == d
    True
    >>> funcgrad.set_compilation_cache(None) is None
    True
    """
    if path is None:
        _disable()
        return None
    return _enable(os.fspath(path))


def compilation_cache_dir() -> str | None:
    """The directory funcgrad's persistent compilation cache uses now (``None``: off)."""
    return _state["dir"]


def _enable(path: str) -> str | None:
    path = os.path.abspath(os.path.expanduser(path))
    try:
        os.makedirs(path, exist_ok=True)
        fd, probe = tempfile.mkstemp(dir=path, prefix=".probe-")
        os.close(fd)
        os.unlink(probe)
    except OSError as e:
        _disable()
        if path not in _state["warned"]:
            _state["warned"].add(path)
            warnings.warn(f"funcgrad: the compilation cache directory {path!r} is not writable "
                          f"({type(e).__name__}: {e}); compiling without a persistent cache. Set "
                          f"{ENV_DIR} to a writable directory, or {ENV_SWITCH}=0 to silence this.",
                          UserWarning, stacklevel=3)
        return None
    try:
        os.unlink(os.path.join(path, _OLD_MARKER))
    except OSError:
        pass
    if os.path.exists(os.path.join(path, REJECTED_MARKER)):
        _disable()  # this machine cannot load what it writes: writing would only cost time
        return None
    _install(path)
    return path


def _configure_thresholds() -> None:
    """Cache every program, however small or fast to compile (JAX's defaults skip them all)."""
    if _state["saved"] is None:
        _state["saved"] = {k: getattr(jax.config, k) for k in (
            "jax_persistent_cache_min_compile_time_secs", "jax_persistent_cache_min_entry_size_bytes")}
    jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.0)
    jax.config.update("jax_persistent_cache_min_entry_size_bytes", -1)


def _jax_cache_module():
    """JAX's cache module: the only place its cache object can be replaced (no public hook).
    None where a JAX version moved it: then JAX's own file cache serves the same directory."""
    try:
        from jax._src import compilation_cache as cc
    except ImportError:
        return None
    return cc


def _install(path: str) -> None:
    cc = _jax_cache_module()
    _configure_thresholds()
    jax.config.update("jax_compilation_cache_dir", path)
    if cc is None:
        jax.config.update("jax_compilation_cache_max_size", _max_bytes())
    else:
        cc.reset_cache()  # forget a cache (or "no cache") decided before: takes effect now
        cache = _FileCache(path, _max_bytes())
        try:
            with cc._cache_initialized_mutex:
                cc._cache, cc._cache_initialized = cache, True
        except AttributeError:  # another jax: its own file cache at the same path (locked writes)
            jax.config.update("jax_compilation_cache_max_size", _max_bytes())
    _state["dir"], _state["slow_hits"] = path, 0
    _listen()


def _disable() -> None:
    if _state["dir"] is None:
        return
    cc = _jax_cache_module()
    jax.config.update("jax_compilation_cache_dir", None)
    for k, v in (_state["saved"] or {}).items():
        jax.config.update(k, v)
    _state["saved"] = None
    if cc is not None:
        cc.reset_cache()
    _state["dir"] = None


def _max_bytes() -> int:
    try:
        return int(float(os.environ.get(ENV_MAX_MB, "1024")) * (1 << 20))
    except ValueError:
        return 1 << 30


# ---- rejected entries (jax issue 38445) --------------------------------------------------------
def _listen() -> None:
    """Watch cache hits: a hit that takes as long as compiling was recompiled, not loaded."""
    if _state["listening"]:
        return
    _state["listening"] = True

    def on_event(name, **_kw):
        if name == "/jax/compilation_cache/compile_requests_use_cache":  # (then read, compile, put)
            _tls.t0 = time.monotonic()

    def on_duration(name, secs, **_kw):
        if name == "/jax/compilation_cache/cache_retrieval_time_sec":  # a hit, loaded in ``secs``
            compiled, _tls.compiled = getattr(_tls, "compiled", None), None
            _note_hit(compiled, secs)
    jax.monitoring.register_event_listener(on_event)
    jax.monitoring.register_event_duration_secs_listener(on_duration)


def _note_hit(compiled: float | None, retrieval: float) -> None:
    """One cache hit: ``compiled`` = the seconds its program took to compile, as the entry
    recorded them (None: not recorded), ``retrieval`` = the seconds this read and load took.
    A program that compiled in under ``_DECISIVE`` counts neither way.
    """
    if _state["dir"] is None or compiled is None or compiled < _DECISIVE:
        return
    if 2 * retrieval >= compiled:  # loading cost at least half of compiling
        _state["slow_hits"] += 1
        if _state["slow_hits"] >= _REJECT_AFTER:
            _mark_rejected()
    else:
        _state["slow_hits"] = 0


def _mark_rejected() -> None:
    path = _state["dir"]
    try:
        with open(os.path.join(path, REJECTED_MARKER), "w") as f:
            f.write(f"{_REJECT_AFTER} cache hits in a row loaded no faster than compiling: this "
                    f"machine rejects its own entries (jax issue 38445). funcgrad stopped using this "
                    f"directory; delete it to try again.\n")
    except OSError:
        pass
    _disable()


# ---- the file cache ----------------------------------------------------------------------------
class _FileCache:
    """JAX's ``CacheInterface`` over one directory: atomic writes, lock-free reads, LRU trimming."""

    def __init__(self, path: str, max_bytes: int):
        self._path = self.path = path
        self.max_bytes = max_bytes
        self._writes = 0

    def _file(self, key: str) -> str:
        return os.path.join(self.path, key + _SUFFIX)

    def get(self, key: str):
        if not key:
            raise ValueError("key cannot be empty")
        f = self._file(key)
        try:
            with open(f, "rb") as fh:
                val = fh.read()
        except FileNotFoundError:
            return None
        try:
            os.utime(f)  # the mtime orders eviction: least recently read goes first
        except OSError:
            pass
        if val[:4] == _HEADER:
            _tls.compiled = int.from_bytes(val[4:8], "big") / 1000
            return val[8:]
        _tls.compiled = None  # (written by an older funcgrad: no compile time recorded)
        return val

    def put(self, key: str, value: bytes) -> None:
        if not key:
            raise ValueError("key cannot be empty")
        f = self._file(key)
        if os.path.exists(f):
            return
        t0 = getattr(_tls, "t0", None)  # JAX writes right after compiling: since its request
        ms = 0 if t0 is None else min(int((time.monotonic() - t0) * 1000), 2 ** 32 - 1)
        entry = _HEADER + ms.to_bytes(4, "big") + value
        # atomic: a concurrent reader sees no entry or the whole entry; a lost entry is a recompile
        atomic_write(f, lambda fh: fh.write(entry), durable=False)
        with _lock:
            self._writes += 1
            due = self._writes % _TRIM_EVERY == 1
        if due:
            self.trim()

    def trim(self, target: float = 0.8) -> int:
        """Delete the least recently read entries while the directory exceeds the bound.

        Returns the number of entries deleted (to ``target`` × the bound, so trimming is rare).
        """
        entries, total = [], 0
        try:
            with os.scandir(self.path) as it:
                for e in it:
                    if e.name.endswith(_SUFFIX):
                        try:
                            st = e.stat()
                        except OSError:
                            continue
                        entries.append((st.st_mtime_ns, e.path, st.st_size))
                        total += st.st_size
        except OSError:
            return 0
        if total <= self.max_bytes:
            return 0
        entries.sort()
        n, goal = 0, self.max_bytes * target
        for _, p, size in entries:
            if total <= goal:
                break
            try:
                os.unlink(p)
                n += 1
            except OSError:
                pass  # another process trimmed it first
            total -= size
        return n
