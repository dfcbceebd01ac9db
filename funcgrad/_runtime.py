"""Process-wide runtime switches with PyTorch's names: thread counts, deterministic algorithms,
float32 matmul precision, the default device.

XLA picks its own CPU thread pool at start-up and its kernels are deterministic, so the thread
counts and the deterministic flag are recorded (scripts set and read them) without changing how
XLA runs. The matmul precision and the default device are passed on to JAX.
"""

from __future__ import annotations

import os
import warnings

import jax

from . import _meta
from ._device import device as _device_cls
from ._device import from_jax, from_platform, jax_device


def _cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


_state = {"threads": _cores(), "interop": _cores(), "interop_set": False, "det": False,
          "det_warn": False, "precision": "highest", "device": None, "warn_always": False}


def set_num_threads(n: int) -> None:
    """Record the intra-op thread count (XLA sizes its pool at start-up: see the module note).

    >>> import funcgrad
    >>> funcgrad.set_num_threads(2); funcgrad.get_num_threads()
    2
    """
    if not isinstance(n, int) or isinstance(n, bool):
        raise RuntimeError(f"set_num_threads expects an int, but got {type(n).__name__}")
    if n <= 0:
        raise RuntimeError("set_num_threads expects a positive integer")
    _state["threads"] = n


def get_num_threads() -> int:
    return _state["threads"]


def set_num_interop_threads(n: int) -> None:
    if not isinstance(n, int) or isinstance(n, bool):
        raise RuntimeError(f"set_num_interop_threads expects an int, but got {type(n).__name__}")
    if n <= 0:
        raise RuntimeError("Expected positive number of threads")
    if _state["interop_set"]:
        raise RuntimeError("Error: cannot set number of interop threads after parallel work has "
                           "started or set_num_interop_threads called")
    _state["interop"], _state["interop_set"] = n, True


def get_num_interop_threads() -> int:
    return _state["interop"]


def use_deterministic_algorithms(mode: bool, *, warn_only: bool = False) -> None:
    """Record the flag; XLA's CPU and GPU kernels used by funcgrad are already deterministic."""
    if not isinstance(mode, bool):
        raise TypeError(f"_set_deterministic_algorithms(): argument 'mode' (position 1) must be "
                        f"bool, not {type(mode).__name__}")
    _state["det"], _state["det_warn"] = mode, bool(warn_only) and mode


def are_deterministic_algorithms_enabled() -> bool:
    return _state["det"]


def is_deterministic_algorithms_warn_only_enabled() -> bool:
    return _state["det_warn"]


def set_deterministic_debug_mode(mode) -> None:
    names = {"default": 0, "warn": 1, "error": 2}
    level = names[mode] if isinstance(mode, str) else int(mode)
    use_deterministic_algorithms(level > 0, warn_only=level == 1)


def get_deterministic_debug_mode() -> int:
    return 0 if not _state["det"] else 1 if _state["det_warn"] else 2


_JAX_PRECISION = {"highest": "highest", "high": "high", "medium": "default"}


def set_float32_matmul_precision(precision: str) -> None:
    """``'highest'`` (full float32), ``'high'`` (TF32 / 3-pass bf16), ``'medium'`` (bf16): passed
    on to JAX as ``jax_default_matmul_precision`` (CPUs always compute in full float32).

    >>> import funcgrad
    >>> funcgrad.set_float32_matmul_precision("high"); funcgrad.get_float32_matmul_precision()
    'high'
    >>> funcgrad.set_float32_matmul_precision("highest")
    """
    if precision not in _JAX_PRECISION:
        warnings.warn(f"{precision} is not one of 'highest', 'high', or 'medium'; the current"
                      f"setFloat32MatmulPrecision call has no effect.", UserWarning, stacklevel=2)
        return
    _state["precision"] = precision
    jax.config.update("jax_default_matmul_precision", _JAX_PRECISION[precision])


def get_float32_matmul_precision() -> str:
    return _state["precision"]


def _cpu_default() -> bool:
    """Whether the default device is the CPU, as in PyTorch: yes, unless the process's JAX has
    no CPU platform (``JAX_PLATFORMS`` naming only accelerators)."""
    plats = (os.environ.get("JAX_PLATFORMS") or jax.config.jax_platforms or "").strip()
    return not plats or "cpu" in [p.strip() for p in plats.split(",")]


def _start() -> None:
    """At import: new tensors go to the CPU, as in PyTorch, also on a machine with a GPU.

    JAX's own default is the accelerator; there a script that never asks for ``"cuda"`` would
    print ``device='cuda:0'``, draw other random bits and compute other last bits than on a CPU
    machine, and lose ``from_numpy``'s shared memory, none of which PyTorch does. The GPU is
    taken as in PyTorch: ``.to("cuda")``, ``device="cuda"``, ``set_default_device("cuda")``. The
    default is passed on to JAX (``jax_default_device``), which JAX code in the same process
    shares; a default device the user gave JAX before importing funcgrad is kept."""
    if jax.config.jax_default_device is None and _cpu_default():
        jax.config.update("jax_default_device", "cpu")


def set_default_device(device) -> None:
    """Where factories put new tensors (JAX's ``jax_default_device``); ``None`` resets it to
    the CPU, as in PyTorch."""
    if device is None:
        _state["device"] = None
        _meta.DEFAULT[0] = False
        jax.config.update("jax_default_device", "cpu" if _cpu_default() else None)
        return
    d = _device_cls(device) if not isinstance(device, _device_cls) else device
    jd = jax_device(d)
    _meta.DEFAULT[0] = jd is _meta.DEVICE
    if _meta.DEFAULT[0]:  # factories make meta tensors (funcgrad/_meta.py); JAX's default stays
        _state["device"] = _device_cls("meta")
        return
    if d.type != "cpu" and d.index is None:
        d = _device_cls(d.type, 0)
    _state["device"] = d
    jax.config.update("jax_default_device", jd)


# the defaults saved by each ``with device(...)`` still open, innermost last
_ENTERED: list = []


def _device_enter(self: _device_cls) -> _device_cls:
    """``with funcgrad.device("cpu"):`` makes the device the default one for factories, as
    PyTorch's ``DeviceContext``; the default before is restored at exit, also after a
    ``set_default_device`` inside the block."""
    _ENTERED.append((_state["device"], jax.config.jax_default_device))
    try:
        set_default_device(self)
    except BaseException:
        _ENTERED.pop()
        raise
    return self


def _device_exit(self: _device_cls, *exc_info) -> None:
    _state["device"], jd = _ENTERED.pop()
    _meta.DEFAULT[0] = _state["device"] is not None and _state["device"].type == "meta"
    jax.config.update("jax_default_device", jd)


# installed from here (the layer that owns the default), as jax attaches array methods from above
_device_cls.__enter__ = _device_enter
_device_cls.__exit__ = _device_exit


def get_default_device() -> _device_cls:
    """>>> import funcgrad; funcgrad.get_default_device()
    device(type='cpu')
    """
    d = _state["device"]
    if d is not None:
        return d
    jd = jax.config.jax_default_device
    if jd is None:
        return from_platform(jax.default_backend())
    return from_platform(jd) if isinstance(jd, str) else from_jax(jd)


_start()


def set_warn_always(b: bool) -> None:
    """Make PyTorch's once-per-process warnings (``TORCH_WARN_ONCE``: ``float()`` of a tensor
    that requires grad, ``chain_matmul``'s deprecation) warn on every call while set.

    >>> import funcgrad
    >>> funcgrad.set_warn_always(True); funcgrad.is_warn_always_enabled()
    True
    >>> funcgrad.set_warn_always(False)
    """
    if type(b) is not bool:
        raise RuntimeError(f"setWarnOnlyOnce expects a bool, but got {type(b).__name__}")
    _state["warn_always"] = b


def is_warn_always_enabled() -> bool:
    """Whether ``set_warn_always(True)`` is in force."""
    return _state["warn_always"]


def set_flush_denormal(mode: bool) -> bool:
    """PyTorch's switch for flushing subnormal floats to zero on the CPU. XLA's CPU kernels keep
    their own setting, which funcgrad cannot change, so it answers False ("not supported", as
    PyTorch does on a CPU without the feature) and changes nothing.

    >>> import funcgrad
    >>> funcgrad.set_flush_denormal(True)
    False
    """
    if type(mode) is not bool:
        raise TypeError(f"set_flush_denormal(): argument 'mode' (position 1) must be bool, not "
                        f"{type(mode).__name__}")
    return False


def warn_once(seen: list) -> bool:
    """Whether a once-per-process warning whose record is ``seen`` (``[False]`` until it first
    warns) warns now: the first time, or every time under ``set_warn_always(True)``."""
    if seen[0] and not _state["warn_always"]:
        return False
    seen[0] = True
    return True


__all__ = ["set_warn_always", "is_warn_always_enabled", "warn_once", "set_flush_denormal",
           "set_num_threads", "get_num_threads", "set_num_interop_threads", "get_num_interop_threads",
           "use_deterministic_algorithms", "are_deterministic_algorithms_enabled",
           "is_deterministic_algorithms_warn_only_enabled", "set_deterministic_debug_mode",
           "get_deterministic_debug_mode", "set_float32_matmul_precision",
           "get_float32_matmul_precision", "set_default_device", "get_default_device"]
