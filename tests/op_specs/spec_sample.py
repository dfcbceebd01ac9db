"""Spec rows for grid_sample, affine_grid, bicubic upsampling and ctc_loss (issue 18; PyTorch
parity: tests/test_ops_more2.py). The references are independent formulations: SciPy-style
``map_coordinates`` for the grid sampler, a per-pixel 4×4 neighbourhood for bicubic, and brute-force
enumeration of every alignment path for CTC."""

from __future__ import annotations

import itertools

import jax
import jax.numpy as jnp
import numpy as np
from jax.scipy.ndimage import map_coordinates

import funcgrad as fg
import funcgrad.nn.functional as F

from . import Spec


def _ref_grid_sample(x, grid, order):
    h, w = x.shape[2:]
    ix = (grid[..., 0] + 1) / 2 * (w - 1)   # align_corners=True
    iy = (grid[..., 1] + 1) / 2 * (h - 1)
    return jnp.stack([jnp.stack([map_coordinates(x[n, c], [iy[n], ix[n]], order=order, mode="constant")
                                 for c in range(x.shape[1])]) for n in range(x.shape[0])])


def _grid(rng):
    return rng.uniform(-1.3, 1.3, (2, 3, 4, 2))  # partly outside: the zero padding


def _nearest_grid(rng):  # away from the rounding ties
    g = rng.integers(-1, 6, (2, 3, 4, 2)) + rng.uniform(-0.3, 0.3, (2, 3, 4, 2))
    return g / 2.5 - 1


def _ref_affine(theta, h, w):
    xs = jnp.linspace(-1.0, 1.0, w) * (w - 1) / w
    ys = jnp.linspace(-1.0, 1.0, h) * (h - 1) / h
    gx = theta[:, 0, 0, None, None] * xs[None, None, :] + theta[:, 0, 1, None, None] * ys[None, :, None] \
        + theta[:, 0, 2, None, None]
    gy = theta[:, 1, 0, None, None] * xs[None, None, :] + theta[:, 1, 1, None, None] * ys[None, :, None] \
        + theta[:, 1, 2, None, None]
    return jnp.stack([gx, gy], -1)


def _cubic_w(t, a=-0.75):
    d = jnp.abs(t)
    return jnp.where(d <= 1, ((a + 2) * d - (a + 3)) * d * d + 1,
                     jnp.where(d < 2, ((a * d - 5 * a) * d + 8 * a) * d - 4 * a, 0.0))


def _ref_bicubic(x, out_h, out_w):
    """align_corners=False, per output pixel: 4×4 clamped neighbours weighted by the cubic kernel."""
    h, w = x.shape[2:]
    sy = (jnp.arange(out_h) + 0.5) * h / out_h - 0.5
    sx = (jnp.arange(out_w) + 0.5) * w / out_w - 0.5
    y0, x0 = jnp.floor(sy).astype(int), jnp.floor(sx).astype(int)
    out = 0
    for i in range(-1, 3):
        for j in range(-1, 3):
            yy, xx = jnp.clip(y0 + i, 0, h - 1), jnp.clip(x0 + j, 0, w - 1)
            wy, wx = _cubic_w(sy - (y0 + i)), _cubic_w(sx - (x0 + j))
            out = out + x[:, :, yy][:, :, :, xx] * (wy[:, None] * wx[None, :])
    return out


_TGT = np.array([[1, 1], [2, 0]])
_IN_LEN, _TGT_LEN = [4, 3], [2, 1]


def _ref_ctc(lp):
    """-log Σ over the label paths of length T_n that collapse to the target, plus PyTorch's
    ``exp(lp) - stop_gradient(exp(lp))`` term (value 0; its gradient convention, see nn_ctc.py)."""
    out = []
    for n in range(lp.shape[1]):
        t_n, tgt = _IN_LEN[n], tuple(_TGT[n, :_TGT_LEN[n]])
        terms = []
        for path in itertools.product(range(lp.shape[2]), repeat=t_n):
            col = [c for k, c in enumerate(path) if c != 0 and (k == 0 or c != path[k - 1])]
            if tuple(col) == tgt:
                terms.append(sum(lp[t, n, c] for t, c in enumerate(path)))
        e = jnp.exp(lp[:t_n, n])
        out.append(-jax.scipy.special.logsumexp(jnp.stack(terms)) + jnp.sum(e - jax.lax.stop_gradient(e)))
    return jnp.stack(out)


def _lp(rng):
    z = rng.standard_normal((4, 2, 3))
    return z - np.log(np.exp(z).sum(-1, keepdims=True))


SPECS = [
    Spec("grid_sampler_2d", lambda x, g: F.grid_sample(x, g, align_corners=True),
         lambda x, g: _ref_grid_sample(x, g, 1), [(2, 2, 3, 5), _grid], grad_fn="GridSampler2DBackward0",
         atol=1e-8),
    Spec("grid_sampler_2d", lambda x, g: F.grid_sample(x, g, mode="nearest", align_corners=True),
         lambda x, g: _ref_grid_sample(x, g, 0), [(2, 2, 3, 5), _nearest_grid], id="grid_sampler_2d_nearest"),
    Spec("affine_grid_generator", lambda th: F.affine_grid(th, (2, 1, 3, 4), align_corners=False),
         lambda th: _ref_affine(th, 3, 4), [(2, 2, 3)], grad_fn="AffineGridGeneratorBackward0"),
    Spec("upsample_bicubic2d", lambda x: F.interpolate(x, size=(5, 7), mode="bicubic"),
         lambda x: _ref_bicubic(x, 5, 7), [(1, 2, 3, 4)], grad_fn="UpsampleBicubic2DBackward0"),
    Spec("ctc_loss", lambda lp: F.ctc_loss(lp, fg.tensor(_TGT), _IN_LEN, _TGT_LEN, reduction="none"),
         _ref_ctc, [_lp], grad_fn="CtcLossBackward0"),
    Spec("ctc_loss_zero_infinity",
         lambda lp: F.ctc_loss(lp, fg.tensor(_TGT), _IN_LEN, _TGT_LEN, reduction="none", zero_infinity=True),
         _ref_ctc, [_lp], grad_fn="WhereBackward0"),
]
