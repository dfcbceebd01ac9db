"""Spec rows for the ops of funcgrad/_ops/more4.py (gcd/lcm, the three scatters); their composites
(inner, sum_to_size, fill_diagonal_, unravel_index) and errors vs PyTorch: tests/test_names3.py."""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np

import funcgrad as fg

from . import Spec, ints

_MASK = np.array([[True, False, True, True], [False, False, True, False], [True, True, False, True]])


def _masked_scatter(x, mask, src):
    m = np.asarray(mask)
    return x.at[m].set(src.ravel()[:int(m.sum())])


SPECS = [
    Spec("gcd", fg.gcd, jnp.gcd, [ints(3, 4, low=-9, high=9), ints(4, low=-9, high=9)], nondiff=True),
    Spec("lcm", fg.lcm, jnp.lcm, [ints(3, 4, low=-9, high=9), ints(3, 4, low=-9, high=9)], nondiff=True),
    Spec("diagonal_scatter", fg.diagonal_scatter, lambda x, s: x.at[jnp.arange(3), jnp.arange(3)].set(s),
         [(3, 4), (3,)], grad_fn="DiagonalScatterBackward0"),
    Spec("diagonal_scatter", lambda x, s: fg.diagonal_scatter(x, s, -1, 1, 0),
         lambda x, s: x.at[jnp.arange(3), jnp.arange(3) + 1].set(s), [(3, 4), (3,)], id="diagonal_scatter_offset"),
    Spec("diagonal_scatter", lambda x, s: fg.diagonal_scatter(x, s, 0, 0, 2),
         lambda x, s: x.at[jnp.arange(2), :, jnp.arange(2)].set(s.T), [(2, 3, 2), (3, 2)], id="diagonal_scatter_3d"),
    Spec("select_scatter", lambda x, s: fg.select_scatter(x, s, 1, -1), lambda x, s: x.at[:, -1].set(s),
         [(3, 4), (3,)], grad_fn="SelectScatterBackward0"),
    Spec("slice_scatter", lambda x, s: fg.slice_scatter(x, s, 1, 1, None, 2), lambda x, s: x.at[:, 1::2].set(s),
         [(3, 5), (3, 2)], grad_fn="SliceScatterBackward0"),
    Spec("masked_scatter", lambda x, m, s: x.masked_scatter(m, s), _masked_scatter, [(3, 4), _MASK, (2, 5)],
         grad=(0, 2), grad_fn="MaskedScatterBackward0"),
    Spec("masked_scatter", lambda x, m, s: x.masked_scatter(m, s), lambda x, m, s: _masked_scatter(
        jnp.broadcast_to(x, (3, 4)), m, s), [(4,), _MASK, (9,)], grad=(0, 2), id="masked_scatter_broadcast"),
]
