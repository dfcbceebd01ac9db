"""Spec rows for the ops ``funcgrad/nn/_functional_extra.py`` declares (``max_unpool2d/3d``,
``rrelu_with_noise`` and its in-place form, ``adaptive_max_pool3d``, ``multilabel_margin_loss``,
``fractional_max_pool2d/3d``, ``cross_map_lrn2d``)
and ``max_pool3d_with_indices`` (``_functional_conv.py``). The references are independent:
explicit scatters, bins and pair loops (PyTorch parity: tests/test_nn_more_modules.py)."""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np

import funcgrad as fg
import funcgrad.nn.functional as F

from . import Spec

# unique flat indices per (n, c) plane: 2x2 values unpooled into 4x4 planes
_IDX2 = np.array([[[[0, 3], [9, 14]], [[5, 7], [13, 15]]]], np.int64)
_IDX3 = np.array([[[[[0, 3], [9, 14]], [[20, 27], [40, 63]]]]], np.int64)


def _unpool_ref(x, idx, size):
    lead = x.shape[:x.ndim - len(size)]
    xf = x.reshape(math.prod(lead), -1)
    jf = np.asarray(idx).reshape(xf.shape[0], -1)
    out = jnp.zeros((xf.shape[0], math.prod(size)), x.dtype)
    for r in range(xf.shape[0]):
        out = out.at[r, jf[r]].set(xf[r])
    return out.reshape(*lead, *size)


def _bins(n, o):
    return [(i * n // o, -(-(i + 1) * n // o)) for i in range(o)]


def _amp3d_ref(x):  # (1, 2, 4, 5, 3) -> (2, 3, 2)
    return jnp.stack([jnp.stack([jnp.stack([x[:, :, a:b, c:d, e:f].max((2, 3, 4)) for e, f in _bins(3, 2)], -1)
                                 for c, d in _bins(5, 3)], -2) for a, b in _bins(4, 2)], -3)


_T = np.array([[3, 0, -1, 1], [1, 2, 3, -1], [0, 1, 2, 3]], np.int64)


def _mlm_ref(x, t):
    rows = []
    for n in range(x.shape[0]):
        ys = []
        for y in _T[n]:
            if y < 0:
                break
            ys.append(int(y))
        rows.append(sum(jnp.maximum(0.0, 1 - (x[n, j] - x[n, i])) for j in ys for i in range(x.shape[1])
                        if i not in ys) / x.shape[1])
    return jnp.stack(rows)


# fractional pooling with fixed samples: windows at rows (0, 1, 3), cols (0, 2, 3) of a 5x5 plane
# (samples (W, H) = (0.5, 0.0)), and for 3-D at (0, 3) in each of T, H, W (all samples 0.0)
_U2 = np.array([[[0.5, 0.0]]])
_U3 = np.zeros((1, 1, 3))


def _frac2_ref(x):
    return jnp.stack([jnp.stack([x[:, :, a:a + 2, b:b + 2].max((2, 3)) for b in (0, 2, 3)], -1) for a in (0, 1, 3)],
                     -2)


def _frac3_ref(x):
    return jnp.stack([jnp.stack([jnp.stack([x[:, :, a:a + 2, b:b + 2, c:c + 2].max((2, 3, 4)) for c in (0, 3)], -1)
                                 for b in (0, 3)], -2) for a in (0, 3)], -3)


def _slope(lo, hi):
    return lambda x: jnp.where(x > 0, x, x * (lo + hi) / 2)


def _lrn_ref(x, size=5, alpha=0.5, beta=0.75, k=1.0):
    """CrossMapLRN2d as PyTorch's Function computes it (the running sum of squares: add the next
    channel, drop the one ``pre`` back from the second channel after ``pre`` on), with its
    hand-written backward as the gradient (zero-valued stop_gradient terms): channel i's input
    gradient collects ``grad * out / scale`` over channels ``[i - inv, i + size - 1 - inv]``."""
    c, sq, sg = x.shape[1], x * x, jax.lax.stop_gradient
    pre, inv = int((size - 1) / 2 + 1), int(size - (size - 1) / 2)
    scales = [sum(sq[:, j] for j in range(min(pre, c)))]
    for ch in range(1, c):
        s = scales[-1]
        if ch < c - pre + 1:
            s = s + sq[:, ch + pre - 1]
        if ch > pre:
            s = s - sq[:, ch - pre]
        scales.append(s)
    scale = jnp.stack(scales, 1) * (alpha / size) + k
    out = x * sg(scale) ** -beta
    r, d = sg(out / scale), sq - sg(sq)  # (d: value 0, derivative 2x)
    extra = [-(alpha * beta / size) * r[:, ch] * sum(d[:, i] for i in range(max(0, ch + inv - size + 1),
                                                                            min(c, ch + inv + 1)))
             for ch in range(c)]
    return out + jnp.stack(extra, 1)


SPECS = [
    Spec("max_unpool2d", lambda x, i: F.max_unpool2d(x, i, 2), lambda x, i: _unpool_ref(x, i, (4, 4)),
         [(1, 2, 2, 2), _IDX2], grad_fn="MaxUnpool2DBackward0"),
    Spec("max_unpool3d", lambda x, i: F.max_unpool3d(x, i, 2), lambda x, i: _unpool_ref(x, i, (4, 4, 4)),
         [(1, 1, 2, 2, 2), _IDX3], grad_fn="MaxUnpool3DBackward0"),
    Spec("rrelu_with_noise", lambda x: F.rrelu(x), _slope(1.0 / 8, 1.0 / 3), [(3, 4)],
         grad_fn="RreluWithNoiseBackward0"),
    Spec("rrelu_with_noise_", lambda x: F.rrelu(x * 1, 0.1, 0.3, inplace=True), _slope(0.1, 0.3), [(3, 4)],
         grad_fn="RreluWithNoiseBackward1"),
    Spec("adaptive_max_pool3d", lambda x: F.adaptive_max_pool3d(x, (2, 3, 2), return_indices=True),
         lambda x: (_amp3d_ref(x),), [(1, 2, 4, 5, 3)], out=0, grad_fn="AdaptiveMaxPool3DBackward0"),
    Spec("multilabel_margin_loss", lambda x, t: F.multilabel_margin_loss(x, t, reduction="none"), _mlm_ref,
         [(3, 4), _T], grad=(0,), grad_fn="MultilabelMarginLossBackward0"),
    Spec("fractional_max_pool2d", lambda x, u: F.fractional_max_pool2d(x, 2, output_size=3, _random_samples=u),
         lambda x, u: _frac2_ref(x), [(1, 1, 5, 5), _U2], grad=(0,), grad_fn="FractionalMaxPool2DBackward0"),
    Spec("fractional_max_pool3d", lambda x, u: F.fractional_max_pool3d(x, 2, output_size=2, _random_samples=u),
         lambda x, u: _frac3_ref(x), [(1, 1, 5, 5, 5), _U3], grad=(0,), grad_fn="FractionalMaxPool3DBackward0"),
    Spec("cross_map_lrn2d", lambda x: fg.nn.CrossMapLRN2d(5, alpha=0.5, beta=0.75, k=1.0)(x), _lrn_ref,
         [(2, 6, 2, 3)], grad_fn="CrossMapLRN2dBackward"),
    Spec("max_pool3d_with_indices", lambda x: F.max_pool3d(x, 2, return_indices=True),
         lambda x: (jnp.max(x.reshape(1, 2, 2, 2, 2, 2, 2, 2), axis=(3, 5, 7)),), [(1, 2, 4, 4, 4)], out=0,
         grad_fn="MaxPool3DWithIndicesBackward0"),
]
