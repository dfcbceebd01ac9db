"""The seeds PyTorch's data utilities draw: ``torch.empty((), dtype=torch.int64).random_()``.

One ``random_()`` of an int64 scalar takes ``random64() % 2**63`` from the generator (the global
one unless ``generator``): the DataLoader iterator's ``_base_seed`` and a ``RandomSampler``'s
private generator seed come from such draws, in the order PyTorch makes them, so a shuffled
DataLoader reads PyTorch's batch order after the same ``manual_seed``.
"""

from __future__ import annotations

import numpy as np

from ..._random import _sample


def seed_from(generator=None) -> int:
    """``int(torch.empty((), dtype=torch.int64).random_(generator=generator))`` (advances it)."""
    return int(_sample.random_full(generator, (), np.int64))
