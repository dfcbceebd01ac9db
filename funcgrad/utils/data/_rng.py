"""Host-side randomness for samplers, seeded from funcgrad's JAX generators.

Index shuffles are small integer work that would only pay kernel-launch and compile costs
on an accelerator, so samplers shuffle with NumPy. Each shuffle draws one fresh subkey from
a funcgrad ``Generator`` (the global one by default) and seeds a NumPy ``Generator`` with it:
``funcgrad.manual_seed(0)`` therefore makes every epoch's order reproducible, successive
epochs differ (the generator advances), and ``generator=`` is honoured.
"""

from __future__ import annotations

import numpy as np

from ... import _random


def seed_from(generator=None) -> int:
    """A 64-bit seed drawn from a funcgrad generator (advances it)."""
    k = np.asarray(_random.next_key(generator)).astype(np.uint64).ravel()
    return int(k[0]) << 32 | int(k[-1])


def numpy_rng(generator=None) -> np.random.Generator:
    """A NumPy generator seeded from a fresh draw of ``generator`` (or the global one)."""
    return np.random.default_rng(seed_from(generator))
