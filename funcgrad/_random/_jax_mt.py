"""mt19937 in ``jax.numpy``: the generator's stream advanced inside a compiled step.

The state is ``_engine``'s uint32 vector (key[624], pos, fresh, cached normals). A draw of ``n``
words (``n`` static, ``pos`` traced) twists ``ceil(n / 624) + 1`` times in a ``lax.scan``,
concatenates the tempered blocks after the current key and slices ``n`` words from ``pos``; the
new key is the block holding the last word drawn. Equal, word for word, to NumPy's ``MT19937``
(and so to PyTorch's ``at::mt19937``).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
from jax import lax

N, M = 624, 397
_MATRIX_A, _UPPER, _LOWER = 0x9908B0DF, 0x80000000, 0x7FFFFFFF


def _twist_pair(a, b):
    y = (a & _UPPER) | (b & _LOWER)
    return (y >> 1) ^ jnp.where((y & 1) != 0, jnp.uint32(_MATRIX_A), jnp.uint32(0))


def twist(k):
    """One mt19937 state transition (NumPy's ``mt19937_gen``), vectorised in dependency order."""
    nxt = jnp.concatenate([k[1:], k[:1]])
    new0 = k[M:N] ^ _twist_pair(k[:N - M], nxt[:N - M])                  # 0..226: old words only
    new1 = new0 ^ _twist_pair(k[N - M:2 * (N - M)], nxt[N - M:2 * (N - M)])  # 227..453
    rest = new1[:N - 1 - 2 * (N - M)] ^ _twist_pair(k[2 * (N - M):N - 1], nxt[2 * (N - M):N - 1])  # 454..622
    new_head = jnp.concatenate([new0, new1, rest])                         # 0..622
    w623 = new_head[M - 1] ^ _twist_pair(k[N - 1], new_head[0])
    return jnp.concatenate([new_head, w623[None]])


def temper(y):
    y = y ^ (y >> 11)
    y = y ^ ((y << 7) & 0x9D2C5680)
    y = y ^ ((y << 15) & 0xEFC60000)
    return y ^ (y >> 18)


def draw(state, n: int):
    """``(new state, n uint32 words)`` from a traced state vector."""
    if n == 0:
        return state, jnp.zeros((0,), jnp.uint32)
    key, pos = state[:N], state[N].astype(jnp.int32)
    n_blocks = -(-n // N) + 1

    def step(k, _):
        k2 = twist(k)
        return k2, k2

    _, blocks = lax.scan(step, key, None, length=n_blocks)
    allk = jnp.concatenate([key[None], blocks])                            # (n_blocks + 1, 624)
    words = temper(allk.reshape(-1))
    out = lax.dynamic_slice(words, (pos,), (n,))
    last = pos + n - 1
    b = last // N
    new_key = lax.dynamic_index_in_dim(allk, b, keepdims=False)
    new_pos = (last - b * N + 1).astype(jnp.uint32)
    new = jnp.concatenate([new_key, new_pos[None], jnp.zeros((1,), jnp.uint32), state[N + 2:]])
    return new, out


draw_jit = jax.jit(draw, static_argnums=1)
