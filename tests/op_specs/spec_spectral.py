"""Spec rows for funcgrad/_ops/strided.py (as_strided and its in-place and scatter forms) and
funcgrad/_ops/spectral.py (stft's in-place transpose/squeeze nodes, istft's overlap-add); the
calls, gradients, errors and warnings against PyTorch: tests/test_as_strided.py, tests/test_stft.py."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

import funcgrad as fg

from . import Spec


def _frames(x, n, hop):
    m = 1 + (x.shape[-1] - n) // hop
    return jnp.stack([x[..., i * hop:i * hop + n] for i in range(m)], -2)


def _stft(x, w):  # center=False, onesided, as real/imag pairs (the spec rows compare real arrays)
    s = jnp.swapaxes(jnp.fft.rfft(_frames(x, 8, 2) * w, axis=-1), -1, -2)
    return jnp.stack([s.real, s.imag], -1)


def _istft(x, w):  # a real signal's frames round trip: overlap-add of the windowed frames / envelope
    f = _frames(x, 8, 2) * w * w
    n = x.shape[-1]
    y = jnp.zeros(n).at[jnp.arange(f.shape[0])[:, None] * 2 + jnp.arange(8)].add(f)
    env = jnp.zeros(n).at[jnp.arange(f.shape[0])[:, None] * 2 + jnp.arange(8)].add(jnp.broadcast_to(w * w, f.shape))
    return (y / env)[4:-4]


_HANN = np.hanning(10)[1:-1]  # (8 positive values)


def _scatter(x, s):
    """x.at[1::2].set(s), differentiated as PyTorch's as_strided_scatter_backward is: ``input``
    gets the gradient *at* the scattered positions (zero elsewhere), not around them."""
    sg = jax.lax.stop_gradient
    return sg(x).at[1::2].set(s + x[1::2] - sg(x[1::2]))


SPECS = [
    Spec("as_strided", lambda x: x.as_strided((2, 3), (1, 1), 1),
         lambda x: jnp.stack([x[1:4], x[2:5]]), [(6,)], grad_fn="AsStridedBackward0"),
    Spec("as_strided", lambda x: fg.as_strided(x, (3, 2), (0, 2)),
         lambda x: jnp.stack([x.ravel()[0:4:2]] * 3), [(2, 3)], id="as_strided_stride0"),
    Spec("as_strided_view", lambda x: x[1:].as_strided((2, 2), (1, 1), 2),
         lambda x: jnp.stack([x[2:4], x[3:5]]), [(6,)], grad_fn="AsStridedBackward0"),
    Spec("as_strided_view", lambda x: x.expand(2, 6).as_strided((2, 3), (1, 1), 1),
         lambda x: jnp.stack([x[1:4], x[2:5]]), [(6,)], id="as_strided_view_overlapping_input"),
    Spec("as_strided_inplace", lambda x: (x * 1).as_strided_((3,), (2,), 1),
         lambda x: x[1::2], [(6,)], grad_fn="AsStridedBackward1"),
    Spec("as_strided_scatter", lambda x, s: fg.as_strided_scatter(x, s, (3,), (2,), 1),
         _scatter, [(6,), (3,)], grad_fn="AsStridedScatterBackward0"),
    Spec("stft_transpose", lambda x, w: fg.view_as_real(fg.stft(x, 8, 2, window=w, center=False,
                                                                 return_complex=True)),
         _stft, [(2, 20), (8,)]),
    Spec("stft_squeeze", lambda x, w: fg.view_as_real(fg.stft(x, 8, 2, window=w, center=False,
                                                               return_complex=True)),
         _stft, [(20,), (8,)]),
    Spec("unfold_backward", lambda x, w: fg.istft(fg.stft(x, 8, 2, window=w, center=False, return_complex=True),
                                                  8, 2, window=w, center=False)[4:-4],
         lambda x, w: x[4:-4], [(20,), _HANN], grad=(0,), atol=1e-9),
]
