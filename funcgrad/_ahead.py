"""Compiling ahead: an XLA program whose inputs are already known is compiled on a background
thread while the main thread goes on (the optimizer's update during the first forward/backward).

XLA's backend compile releases the GIL, so on a machine with a second core the compile is
hidden behind the user's Python, and jax reuses the executable when the same jitted function is
later called with arguments of the same signature (``jax.jit(f).lower(*specs).compile()`` fills
the caches ``jax.jit(f)(*args)`` reads). The program is the one the main thread would compile:
nothing about its results depends on where or when it was compiled; a guess that turns out
wrong (other shapes, other flags) costs a compile and is never used.

``pending`` holds the objects (optimizers) waiting for the first ``backward()`` to start
compiling: ``autograd.backward`` (``at_backward``) calls each one's ``_compile_ahead()`` once
(an object may start earlier, e.g. at ``zero_grad``, and leaves ``pending`` then);
``start(obj, fn)`` runs ``fn`` on the one background thread; ``finish(obj)`` waits until
``obj``'s compile is done, swallowing its error (the caller compiles as if nothing had been
tried, and raises there). Both tables are weak: a copied or collected object has nothing
pending. ``FUNCGRAD_COMPILE_AHEAD=0`` turns it off. The worker thread is joined at interpreter
exit (``concurrent.futures``), so no compile is cut off while JAX shuts down.
"""

from __future__ import annotations

import concurrent.futures
import os
import threading
import weakref

enabled = os.environ.get("FUNCGRAD_COMPILE_AHEAD", "1").strip().lower() not in ("0", "false", "off", "no")
pending: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # obj -> None: waits for backward
_running: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # obj -> [future, backwards seen]
active = [False]  # pending or _running may hold something: backward() checks only this
_pool: list = []
_lock = threading.Lock()


def wait_for_backward(obj) -> None:
    """``obj._compile_ahead()`` runs at the next ``backward()`` unless ``obj`` starts first."""
    pending[obj] = None
    active[0] = True


_MISSING = object()


def claim(obj) -> bool:
    """Take ``obj`` out of ``pending``: True for the one caller that does (it starts the compile)."""
    return pending.pop(obj, _MISSING) is not _MISSING


def start(obj, fn) -> None:
    """Compile ``fn()`` for ``obj`` on the background thread."""
    with _lock:
        if not _pool:
            _pool.append(concurrent.futures.ThreadPoolExecutor(
                max_workers=1, thread_name_prefix="funcgrad-compile-ahead"))
    _running[obj] = [_pool[0].submit(fn), 0]
    active[0] = True


def at_backward() -> None:
    """At a ``backward()``: each object still waiting for one starts its compile; a compile
    started two backwards ago and never used is forgotten (its object never stepped)."""
    for obj, entry in list(_running.items()):
        entry[1] += 1
        if entry[1] > 2:
            _running.pop(obj, None)
    for obj in list(pending.keys()):
        obj._compile_ahead()  # (claims it first: another thread's backward may be here too)
    active[0] = bool(pending) or bool(_running)


def unused() -> bool:
    """Is a program compiled ahead waiting for its first call? (JAX's trace caches hold the
    way to it until then: clearing them, as ``_cache.sweep`` does, would make it compile again.)"""
    return bool(_running)


def finish(obj) -> None:
    """Before ``obj`` runs what it compiled ahead: wait for that compile (once)."""
    pending.pop(obj, None)
    entry = _running.pop(obj, None)
    if entry is not None:
        try:
            entry[0].result()
        except BaseException:  # noqa: BLE001 - the caller compiles (and reports) as usual
            pass
