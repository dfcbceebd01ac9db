"""Op table — nn ops real scripts reached for (issue 18): ``rms_norm``, the elementwise parts of
``hinge_embedding_loss`` and ``multilabel_soft_margin_loss`` (PyTorch composes both; the kernel
is named like its last elementwise node and the frontend reduces with ``mean``/``sum``)."""

from __future__ import annotations

import jax
import jax.numpy as jnp

from ._registry import defop


def _rms_norm(x, w, *, n, eps):
    axes = tuple(range(x.ndim - n, x.ndim))
    y = x * jax.lax.rsqrt(jnp.mean(jnp.square(x), axis=axes, keepdims=True) + eps)
    return y if w is None else y * w


def _hinge(x, t, *, margin):
    return jnp.where(t != 1, jnp.maximum(margin - x, 0), 0) + jnp.where(t != -1, x, 0)


def _multilabel_soft_margin(x, t, w):
    loss = -(t * jax.nn.log_sigmoid(x) + (1 - t) * jax.nn.log_sigmoid(-x))
    if w is not None:
        loss = loss * w
    return jnp.sum(loss, axis=x.ndim - 1) / x.shape[-1]


rms_norm = defop("rms_norm", _rms_norm, "MulBackward0")
hinge_embedding = defop("hinge_embedding_loss", _hinge, "AddBackward0", diff=(0,))
multilabel_soft_margin = defop("multilabel_soft_margin_loss", _multilabel_soft_margin, "DivBackward0",
                               diff=(0, 2))


def _embedding_bag(w, idx, seg, psw, *, mode, nbags, padding_idx):
    rows = w[idx]
    valid = jnp.ones(idx.shape, bool) if padding_idx is None else idx != padding_idx
    if psw is not None:
        rows = rows * psw[:, None].astype(rows.dtype)
    if mode == "max":
        m = jax.ops.segment_max(jnp.where(valid[:, None], rows, -jnp.inf), seg, nbags)
        return jnp.where(jnp.isneginf(m), 0, m).astype(w.dtype)
    s = jax.ops.segment_sum(jnp.where(valid[:, None], rows, 0), seg, nbags)
    if mode == "sum":
        return s
    n = jax.ops.segment_sum(valid.astype(w.dtype), seg, nbags)
    return s / jnp.maximum(n, 1)[:, None]


embedding_bag = defop("embedding_bag", _embedding_bag, "EmbeddingBagBackward0", diff=(0, 3))
