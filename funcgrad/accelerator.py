"""``funcgrad.accelerator``: the accelerator JAX runs on ('cuda' for its GPU platform), or none.

>>> import funcgrad
>>> funcgrad.accelerator.is_available() == funcgrad.cuda.is_available()
True
"""

from __future__ import annotations

import jax

from ._device import cuda_device_count, cuda_is_available
from ._device import device as _device_cls

_current = {"index": 0}


def is_available() -> bool:
    return cuda_is_available()


def current_accelerator(check_available: bool = False) -> _device_cls | None:
    """``device(type='cuda')`` where JAX has a GPU, else ``None`` (as PyTorch's CPU build)."""
    return _device_cls("cuda") if cuda_is_available() else None


def device_count() -> int:
    return cuda_device_count()


def _check() -> None:
    if not cuda_is_available():
        raise RuntimeError("Cannot access accelerator device when none is available.")


def current_device_index() -> int:
    _check()
    return _current["index"]


current_device_idx = current_device_index


def set_device_index(device) -> None:
    _check()
    _current["index"] = device if isinstance(device, int) else (_device_cls(device).index or 0)


set_device_idx = set_device_index


def synchronize(device=None) -> None:
    """Wait for the work queued on the device (JAX dispatches asynchronously)."""
    _check()
    (jax.device_put(0.0, jax.devices("gpu")[_current["index"]]) + 0).block_until_ready()


__all__ = ["is_available", "current_accelerator", "device_count", "current_device_index",
           "set_device_index", "synchronize"]
