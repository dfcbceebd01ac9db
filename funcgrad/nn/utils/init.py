"""``skip_init``: a module built without spending its initialisation's random draws."""

from __future__ import annotations

import inspect

from ... import _random
from ..module import Module

__all__ = ["skip_init"]


def skip_init(module_cls, *args, **kwargs):
    """``module_cls(*args, **kwargs)`` whose parameters' values are unspecified (PyTorch builds it
    on the meta device and leaves its storage uninitialised): funcgrad builds it as usual and puts
    the global generator back, so later draws are PyTorch's after ``skip_init``."""
    if not issubclass(module_cls, Module):
        raise RuntimeError(f"Expected a Module; got {module_cls}")
    if "device" not in inspect.signature(module_cls).parameters:
        raise RuntimeError("Module must support a 'device' arg to skip initialization")
    state = _random.get_rng_state()
    try:
        return module_cls(*args, **kwargs)
    finally:
        _random.set_rng_state(state)
