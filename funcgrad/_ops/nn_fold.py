"""Op table — ``unfold``/``fold`` (PyTorch's ``im2col``/``col2im``), ``channel_shuffle`` and ``pdist``:
each one PyTorch node (``Im2ColBackward0``, ``Col2ImBackward0``, ``ChannelShuffleBackward0``,
``PdistBackward0``), so they are ops here rather than compositions."""

from __future__ import annotations

import jax
import jax.numpy as jnp

from ._registry import defop


def _windows(kernel, dilation, padding, stride, size):
    """For each kernel offset (row-major), the strided slice of the padded input it reads."""
    (kh, kw), (dh, dw), (sh, sw) = kernel, dilation, stride
    oh = (size[0] + 2 * padding[0] - dh * (kh - 1) - 1) // sh + 1
    ow = (size[1] + 2 * padding[1] - dw * (kw - 1) - 1) // sw + 1
    sl = [(slice(i * dh, i * dh + sh * (oh - 1) + 1, sh), slice(j * dw, j * dw + sw * (ow - 1) + 1, sw))
          for i in range(kh) for j in range(kw)]
    return sl, oh, ow


def _im2col(x, *, kernel, dilation, padding, stride):
    (ph, pw) = padding
    xp = jnp.pad(x, [(0, 0)] * (x.ndim - 2) + [(ph, ph), (pw, pw)])
    sl, oh, ow = _windows(kernel, dilation, padding, stride, x.shape[-2:])
    cols = jnp.stack([xp[..., a, b] for a, b in sl], axis=-3)  # (..., C, kh*kw, oh, ow)
    lead = x.shape[:-3]
    return cols.reshape(lead + (x.shape[-3] * len(sl), oh * ow))


def _col2im(y, *, output_size, kernel, dilation, padding, stride):
    (ph, pw), (kh, kw) = padding, kernel
    lead = y.shape[:-2]
    c = y.shape[-2] // (kh * kw)
    sl, oh, ow = _windows(kernel, dilation, padding, stride, output_size)
    cols = y.reshape(lead + (c, kh * kw, oh, ow))
    out = jnp.zeros(lead + (c, output_size[0] + 2 * ph, output_size[1] + 2 * pw), y.dtype)
    for k, (a, b) in enumerate(sl):
        out = out.at[..., a, b].add(cols[..., k, :, :])
    return out[..., ph:ph + output_size[0], pw:pw + output_size[1]]


def _channel_shuffle(x, *, groups):
    n, c = x.shape[:2]
    return x.reshape((n, groups, c // groups) + x.shape[2:]).swapaxes(1, 2).reshape(x.shape)


def _pdist(x, *, p):
    n = x.shape[0]
    i, j = jnp.triu_indices(n, 1)
    d = jnp.abs(x[i] - x[j])
    if p == 0:
        return jnp.sum(d != 0, axis=-1).astype(x.dtype)
    if p == float("inf"):
        # PyTorch's derivative: sign(diff) at every element reaching the max (ties each get it all,
        # where jnp.max would share), 0 for a zero difference
        d = jnp.where(d == 0, 0, d)
        m = jax.lax.stop_gradient(jnp.max(d, axis=-1, initial=0))
        return m + jnp.sum(jnp.where(d == m[..., None], d - jax.lax.stop_gradient(d), 0), axis=-1)
    # PyTorch's kernel gives a zero gradient for a zero difference (and so at a zero distance),
    # where jnp's ``d ** p`` (p < 1) or root would give inf/nan: keep both away from 0 and mask
    zd = d == 0
    s = jnp.sum(jnp.where(zd, 0, jnp.where(zd, 1, d) ** p), axis=-1)
    zero = s == 0
    return jnp.where(zero, 0, jnp.where(zero, 1, s) ** (1.0 / p))

im2col = defop("im2col", _im2col, "Im2ColBackward0", linear=True)
col2im = defop("col2im", _col2im, "Col2ImBackward0", linear=True)
channel_shuffle = defop("channel_shuffle", _channel_shuffle, "ChannelShuffleBackward0", linear=True)
pdist = defop("pdist", _pdist, "PdistBackward0")
