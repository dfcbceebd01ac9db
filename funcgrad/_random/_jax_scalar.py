"""The sequential sampler inside a compiled step: PyTorch's scalar normal path (with the
cached second sample kept in the traced state vector).

libm's ``log1p`` is replaced by XLA's here, so a scalar-path normal drawn inside
``funcgrad.jit`` may differ from eager (and PyTorch) in the last bit; the stream stays the same.
"""

from __future__ import annotations

import math

import jax.numpy as jnp
from jax import lax

from . import _jax_mt
from ._engine import N

_MASK53 = (1 << 53) - 1


def _u53(hi, lo):
    v = (hi.astype(jnp.uint64) << 32) | lo.astype(jnp.uint64)
    return (v & jnp.uint64(_MASK53)).astype(jnp.float64) * 2.0 ** -53


def normal_scalar_traced(g, n: int, mean: float, std: float):
    with g._lock:
        st = g._cell.traced()
        out = []
        for _ in range(n):
            valid = st[N + 2] != 0
            cached = lax.bitcast_convert_type(jnp.stack([st[N + 3], st[N + 4]]), jnp.float64)
            drawn, w = _jax_mt.draw(st, 4)
            u1, u2 = _u53(w[0], w[1]), _u53(w[2], w[3])
            r = jnp.sqrt(-2.0 * jnp.log1p(-u2))
            theta = 2.0 * math.pi * u1
            s_bits = lax.bitcast_convert_type(r * jnp.sin(theta), jnp.uint32)
            filled = drawn.at[N + 2].set(1).at[N + 3].set(s_bits[0]).at[N + 4].set(s_bits[1])
            st = jnp.where(valid, st.at[N + 2].set(0), filled)
            out.append(jnp.where(valid, cached, r * jnp.cos(theta)) * std + mean)
        g._cell.value = st
    return jnp.stack(out) if out else jnp.zeros((0,), jnp.float64)

