"""Spec rows for ``funcgrad/_ops/nn_fold.py``: ``im2col``/``col2im`` (``F.unfold``/``F.fold``),
``channel_shuffle`` and ``pdist`` (PyTorch parity: tests/test_nn_more_torch.py). The references
are independent: XLA's patch extraction (and its transpose) and explicit pair loops."""

from __future__ import annotations

import jax
import jax.numpy as jnp

import funcgrad as fg

from . import Spec

_K = dict(kernel_size=(2, 3), dilation=(2, 1), padding=1, stride=(1, 2))


def _patches(x):
    # (N, C, H, W) -> (N, C*kh*kw, L); XLA orders the patch features [C, kh, kw] as im2col does
    p = jax.lax.conv_general_dilated_patches(x, (2, 3), (1, 2), [(1, 1), (1, 1)], rhs_dilation=(2, 1))
    return p.reshape(p.shape[0], p.shape[1], -1)


def _fold_ref(y):
    x0 = jnp.zeros((2, 3, 5, 6), y.dtype)
    return jax.linear_transpose(_patches, x0)(y)[0]


def _pdist_ref(p):
    def f(x):
        n = x.shape[0]
        rows = [jnp.sum(jnp.abs(x[i] - x[j]) ** p) ** (1 / p) for i in range(n) for j in range(i + 1, n)]
        return jnp.stack(rows)
    return f


SPECS = [
    Spec("im2col", lambda x: fg.nn.functional.unfold(x, **_K), _patches, [(2, 3, 5, 6)], grad_fn="Im2ColBackward0"),
    Spec("col2im", lambda y: fg.nn.functional.fold(y, (5, 6), **_K), _fold_ref, [(2, 18, 15)],
         grad_fn="Col2ImBackward0"),
    Spec("channel_shuffle", lambda x: fg.nn.functional.channel_shuffle(x, 3),
         lambda x: x.reshape(2, 3, 2, 4).transpose(0, 2, 1, 3).reshape(2, 6, 4), [(2, 6, 4)],
         grad_fn="ChannelShuffleBackward0"),
    Spec("pdist", lambda x: fg.nn.functional.pdist(x), _pdist_ref(2.0), [(4, 3)], grad_fn="PdistBackward0"),
    Spec("pdist", lambda x: fg.nn.functional.pdist(x, 1.5), _pdist_ref(1.5), [(4, 3)], id="pdist_p1.5"),
    Spec("pdist", lambda x: fg.nn.functional.pdist(x, float("inf")),
         lambda x: jnp.stack([jnp.max(jnp.abs(x[i] - x[j])) for i in range(4) for j in range(i + 1, 4)]),
         [(4, 3)], id="pdist_inf"),
]
