"""Op table — the connectionist temporal classification loss (``F.ctc_loss``, issue 18).

The forward algorithm runs in log space over the blank-extended targets with ``jax.lax.scan``;
the gradient is ``jax.vjp`` of it. PyTorch's ``ctc_loss_backward`` returns
``exp(log_probs) - exp(log_alpha + log_beta + nll - log_probs)``: the true derivative plus
``exp(log_probs)`` on every valid frame (the term that makes it exact behind a ``log_softmax``,
whose backward then cancels it). The kernel adds that term as ``exp(lp) - stop_gradient(exp(lp))``,
which is exactly 0 in value, so ``jax.vjp`` gives PyTorch's gradient bit for bit in structure.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from ._registry import defop

_NEG = -jnp.inf


def _lse(*xs):
    """``log(sum(exp(xs)))`` with a zero gradient (not NaN) where every term is ``-inf``."""
    m = xs[0]
    for x in xs[1:]:
        m = jnp.maximum(m, x)
    m = jax.lax.stop_gradient(jnp.where(jnp.isfinite(m), m, 0))
    s = sum(jnp.exp(x - m) for x in xs)
    ok = s > 0
    return jnp.where(ok, jnp.log(jnp.where(ok, s, 1)) + m, _NEG)


def _ctc(lp, targets, in_len, tgt_len, *, blank, zero_infinity):
    """Per-sample negative log likelihood (N,) of ``lp`` (T, N, C) and padded ``targets`` (N, S)."""
    t_max, n, _ = lp.shape
    s_max = targets.shape[1]
    ls = 2 * s_max + 1
    targets = targets.astype(jnp.int32)
    ext = jnp.full((n, ls), blank, jnp.int32).at[:, 1::2].set(targets)          # l' (N, 2S+1)
    prev2 = jnp.concatenate([jnp.full((n, 2), blank, jnp.int32), ext[:, :-2]], 1)
    skip = (ext != blank) & (ext != prev2) & (jnp.arange(ls) >= 2)              # may jump 2 back
    valid_s = jnp.arange(ls)[None, :] < 2 * tgt_len[:, None] + 1

    def emit(t):
        return jnp.take_along_axis(lp[t], ext, axis=1)                         # (N, 2S+1)

    alpha0 = jnp.where((jnp.arange(ls) < 2)[None, :] & valid_s, emit(0), _NEG)

    def step(alpha, t):
        a1 = jnp.concatenate([jnp.full((n, 1), _NEG, lp.dtype), alpha[:, :-1]], 1)
        a2 = jnp.concatenate([jnp.full((n, 2), _NEG, lp.dtype), alpha[:, :-2]], 1)
        new = _lse(alpha, a1, jnp.where(skip, a2, _NEG)) + emit(t)
        new = jnp.where(valid_s, new, _NEG)
        return jnp.where((t < in_len)[:, None], new, alpha), None

    alpha, _ = jax.lax.scan(step, alpha0, jnp.arange(1, t_max))
    last = jnp.take_along_axis(alpha, (2 * tgt_len)[:, None], 1)[:, 0]
    before = jnp.take_along_axis(alpha, jnp.maximum(2 * tgt_len - 1, 0)[:, None], 1)[:, 0]
    nll = -_lse(last, jnp.where(tgt_len > 0, before, _NEG))
    frames = (jnp.arange(t_max)[:, None] < in_len[None, :])[..., None]          # (T, N, 1)
    e = jnp.exp(lp)
    extra = jnp.sum(jnp.where(frames, e - jax.lax.stop_gradient(e), 0), axis=(0, 2))
    if zero_infinity:
        inf = jax.lax.stop_gradient(jnp.isinf(nll))
        return jnp.where(inf, 0, jnp.where(inf, 0, nll) + extra)
    return nll + extra


ctc_loss = defop("ctc_loss", _ctc, "CtcLossBackward0", diff=(0,))
# with zero_infinity PyTorch's last node is the where that zeroes the infinite losses
ctc_loss_zero_inf = defop("ctc_loss_zero_infinity", _ctc, "WhereBackward0", diff=(0,))
