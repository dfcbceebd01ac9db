"""Op table — sampling ops real scripts reached for (issue 18): ``grid_sample`` (4-D, bilinear and
nearest, padding ``zeros``/``border``/``reflection``), ``affine_grid`` and bicubic upsampling.

The coordinate arithmetic is PyTorch's (``GridSampler.h``): unnormalise, then clip or reflect with
the borders counted as out of bounds for the gradient (``clip_coordinates_set_grad``), which is why
the clips are written with ``where`` rather than ``jnp.clip`` (whose derivative splits at ties).
Bicubic resampling is separable: each axis is one (out, in) matrix of PyTorch's cubic-convolution
taps (A = -0.75) with the source indices clamped to the edge, as ``upsample_bicubic2d`` does.
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np

from .._factories import _linspace_values
from ._registry import defop


# ================================ grid_sample =====================================================
def _unnormalize(coord, size, align_corners):
    if align_corners:
        return (coord + 1) / 2 * (size - 1)
    return ((coord + 1) * size - 1) / 2


def _clip(coord, size):
    # borders count as out of bounds for the gradient (PyTorch's clip_coordinates_set_grad)
    return jnp.where(coord <= 0, 0.0, jnp.where(coord >= size - 1, size - 1, coord)).astype(coord.dtype)


def _reflect(coord, twice_low, twice_high):
    if twice_low == twice_high:
        return jnp.zeros_like(coord)
    lo = twice_low / 2
    span = (twice_high - twice_low) / 2
    c = coord - lo
    c = jnp.where(c < 0, -c, c)  # d|c|/dc = 1 at 0, as PyTorch's reflect_coordinates_set_grad
    extra = jnp.fmod(c, span)
    flips = jax.lax.stop_gradient(jnp.floor(c / span)).astype(jnp.int32)
    return jnp.where(flips % 2 == 0, extra + lo, span - extra + lo)


def _source(coord, size, padding_mode, align_corners):
    c = _unnormalize(coord, size, align_corners)
    if padding_mode == "border":
        c = _clip(c, size)
    elif padding_mode == "reflection":
        c = _reflect(c, 0, 2 * (size - 1)) if align_corners else _reflect(c, -1, 2 * size - 1)
        c = _clip(c, size)
    return c


def _gather(x, iy, ix, valid):
    """``x[n, :, iy, ix]`` (N, C, Ho, Wo), zero where ``valid`` is false."""
    h, w = x.shape[2], x.shape[3]
    yc, xc = jnp.clip(iy, 0, h - 1), jnp.clip(ix, 0, w - 1)
    v = jax.vmap(lambda img, y, xx: img[:, y, xx])(x, yc, xc)
    return jnp.where(valid[:, None], v, 0)


def _grid_sample(x, grid, *, mode, padding_mode, align_corners):
    h, w = x.shape[2], x.shape[3]
    ix = _source(grid[..., 0], w, padding_mode, align_corners)
    iy = _source(grid[..., 1], h, padding_mode, align_corners)

    def inb(yy, xx):
        return (yy >= 0) & (yy < h) & (xx >= 0) & (xx < w)

    if mode == "nearest":
        # nearbyint: round half to even, as jnp.round
        xn, yn = jnp.round(ix).astype(jnp.int32), jnp.round(iy).astype(jnp.int32)
        return _gather(x, yn, xn, inb(yn, xn))
    x0f, y0f = jax.lax.stop_gradient(jnp.floor(ix)), jax.lax.stop_gradient(jnp.floor(iy))
    x0, y0 = x0f.astype(jnp.int32), y0f.astype(jnp.int32)
    x1, y1 = x0 + 1, y0 + 1
    we, ws = ix - x0f, iy - y0f   # weights of the east / south neighbours
    ww, wn = 1 - we, 1 - ws
    out = (_gather(x, y0, x0, inb(y0, x0)) * (wn * ww)[:, None]
           + _gather(x, y0, x1, inb(y0, x1)) * (wn * we)[:, None]
           + _gather(x, y1, x0, inb(y1, x0)) * (ws * ww)[:, None]
           + _gather(x, y1, x1, inb(y1, x1)) * (ws * we)[:, None])
    return out


grid_sampler_2d = defop("grid_sampler_2d", _grid_sample, "GridSampler2DBackward0", promote="binary")


# ================================ affine_grid =====================================================
def _base(n, align_corners, dtype):
    """PyTorch's linspace_from_neg_one: its linspace(-1, 1, n) scaled by (n - 1) then divided by
    n, each step rounded in the dtype (float32: one rounding in float64 gave other last bits)."""
    dt = np.dtype(dtype)
    if n <= 1:
        return np.zeros((n,), dt)
    if dt not in (np.float32, np.float64):   # (half types: rounded once, from float64)
        b = np.linspace(-1.0, 1.0, n)
        return (b if align_corners else b * (n - 1) / n).astype(dt)
    b = _linspace_values(-1.0, 1.0, n, dt)
    return b if align_corners else b * dt.type(n - 1) / dt.type(n)


def _affine_grid(theta, *, size, align_corners):
    n, _, h, w = size
    bx = jnp.asarray(_base(w, align_corners, theta.dtype))
    by = jnp.asarray(_base(h, align_corners, theta.dtype))
    base = jnp.stack([jnp.broadcast_to(bx[None, :], (h, w)), jnp.broadcast_to(by[:, None], (h, w)),
                      jnp.ones((h, w), theta.dtype)], -1)          # (H, W, 3): x, y, 1
    grid = jnp.einsum("pk,njk->npj", base.reshape(h * w, 3), theta)  # (N, H*W, 2)
    return grid.reshape(n, h, w, 2)


affine_grid_generator = defop("affine_grid_generator", _affine_grid, "AffineGridGeneratorBackward0")


# ================================ bicubic upsampling ==============================================
_A = -0.75


def _cubic_taps(t):
    def c1(x):
        return ((_A + 2) * x - (_A + 3)) * x * x + 1

    def c2(x):
        return ((_A * x - 5 * _A) * x + 8 * _A) * x - 4 * _A
    return (c2(t + 1.0), c1(t), c1(1.0 - t), c2(2.0 - t))


def _cubic_matrix(size, out, align_corners, scale):
    m = np.zeros((out, size))
    if align_corners:
        scale = (size - 1) / (out - 1) if out > 1 else 0.0
    for i in range(out):
        src = scale * i if align_corners else scale * (i + 0.5) - 0.5  # no clamp at 0 for cubic
        i0 = int(math.floor(src))
        for k, c in enumerate(_cubic_taps(src - i0)):
            m[i, min(max(i0 - 1 + k, 0), size - 1)] += c
    return m


def _upsample_bicubic(x, *, size, align_corners, scales):
    for i, o in enumerate(size):
        ax = 2 + i
        m = jnp.asarray(_cubic_matrix(x.shape[ax], o, align_corners, scales[i]), x.dtype)
        x = jnp.moveaxis(jnp.tensordot(x, m, axes=[[ax], [1]]), -1, ax)
    return x


upsample_bicubic2d = defop("upsample_bicubic2d", _upsample_bicubic, "UpsampleBicubic2DBackward0")
