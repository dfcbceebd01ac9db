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
