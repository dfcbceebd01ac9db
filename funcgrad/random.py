"""``funcgrad.random``: PyTorch's ``torch.random`` namespace (the global generator's seed and
state, and ``fork_rng``, which restores the state on exit).

>>> import funcgrad
>>> _ = funcgrad.random.manual_seed(0)
>>> with funcgrad.random.fork_rng():
...     _ = funcgrad.rand(3)
>>> funcgrad.rand(1)   # the draw after manual_seed(0): fork_rng put the state back
tensor([0.4963])
"""

from __future__ import annotations

import contextlib
from typing import Generator

from ._random import get_rng_state as get_rng_state, initial_seed as initial_seed  # noqa: F401
from ._random import manual_seed as manual_seed, seed as seed, set_rng_state as set_rng_state  # noqa: F401

__all__ = ["set_rng_state", "get_rng_state", "manual_seed", "seed", "initial_seed", "fork_rng"]


@contextlib.contextmanager
def fork_rng(devices=None, enabled: bool = True, _caller: str = "fork_rng", _devices_kw: str = "devices",
             device_type=None) -> Generator:
    """Fork the RNG: on exit the global generator's state is what it was on entry.

    funcgrad has one generator (the CPU one PyTorch always forks); ``devices`` and
    ``device_type`` are accepted for PyTorch's signature. ``enabled=False`` forks nothing.
    """
    if device_type == "meta" or not enabled:
        yield
        return
    if devices is not None:
        devices = list(devices)  # as PyTorch: a generator argument is consumed once, here
    state = get_rng_state()
    try:
        yield
    finally:
        set_rng_state(state)
