"""Spec rows for the ops of funcgrad/_ops/more2.py (fmax/fmin, nextafter, bit shifts, block_diag, isin,
renorm, quantile, histogram); their composites and errors vs PyTorch: tests/test_ops_names.py."""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np

import funcgrad as fg

from . import Spec, ints

_NANS = np.array([[1.0, np.nan, 2.0, 3.0], [np.nan, np.nan, -1.0, 0.5], [0.0, 1.0, 1.0, -2.0]])
_TIE = np.array([[1.0, 5.0, 2.0, 3.0], [-1.0, 4.0, -1.0, 0.5], [7.0, 1.0, 1.0, -2.0]])
_Q = np.array([0.0, 0.25, 0.5, 1.0])


def _fmax(x, y):  # PyTorch's gradient: to x at ties and where y is nan
    return jnp.where((x >= y) | jnp.isnan(y), x, y)


def _fmin(x, y):
    return jnp.where((x <= y) | jnp.isnan(y), x, y)


SPECS = [
    Spec("fmax", fg.fmax, _fmax, [_NANS, _TIE], grad_fn="FmaxBackward0", id="fmax_nan_ties"),
    Spec("fmax", fg.fmax, _fmax, [(3, 4), (4,)], id="fmax_broadcast"),
    Spec("fmin", lambda x, y: x.fmin(y), _fmin, [_NANS, _TIE], grad_fn="FminBackward0", id="fmin_nan_ties"),
    Spec("fmax", fg.fmax, jnp.fmax, [ints(3, 4, high=5), ints(3, 4, high=5)], nondiff=True, id="fmax_int"),
    Spec("nextafter", fg.nextafter, jnp.nextafter, [_TIE, _NANS], nondiff=True),
    Spec("bitwise_left_shift", lambda x, s: x << s, lambda x, s: x << s, [ints(3, 4, high=9, low=-9),
         ints(3, 4, high=8)], nondiff=True),
    Spec("bitwise_left_shift", lambda x: fg.bitwise_left_shift(x, 3), lambda x: x << 3, [ints(5, high=100)],
         nondiff=True, id="lshift_scalar"),
    Spec("bitwise_right_shift", lambda x, s: x >> s, lambda x, s: x >> s, [ints(3, 4, high=99, low=-99),
         ints(3, 4, high=8)], nondiff=True),
    Spec("bitwise_right_shift", lambda x, s: x.bitwise_right_shift(s), lambda x, s: x >> s,
         [ints(6, high=200), np.array([1, 2, 0, 63, 64, 70])], nondiff=True, id="rshift_wide"),
    Spec("block_diag", lambda a, b, c: fg.block_diag(a, b, c),
         lambda a, b, c: jnp.block([[a, jnp.zeros((2, 4)), jnp.zeros((2, 1))],
                                    [jnp.zeros((1, 3)), b[None], jnp.zeros((1, 1))],
                                    [jnp.zeros((1, 3)), jnp.zeros((1, 4)), c.reshape(1, 1)]]),
         [(2, 3), (4,), np.array(1.5)], grad_fn="BlockDiagBackward0"),
    Spec("isin", fg.isin, jnp.isin, [ints(3, 4, high=6), ints(3, high=6)], nondiff=True),
    Spec("isin", lambda x, t: fg.isin(x, t, invert=True), lambda x, t: ~jnp.isin(x, t), [_TIE, _TIE[0]],
         nondiff=True, id="isin_invert"),
    Spec("renorm", lambda x: fg.renorm(x, 2, 0, 3.0),
         lambda x: x * jnp.where((n := jnp.linalg.norm(x, axis=1, keepdims=True)) > 3.0, 3.0 / (n + 1e-7), 1.0),
         [_TIE], grad_fn="RenormBackward0"),
    Spec("renorm", lambda x: x.renorm(1, 1, 4.0),
         lambda x: x * jnp.where((n := jnp.abs(x).sum(0, keepdims=True)) > 4.0, 4.0 / (n + 1e-7), 1.0),
         [(3, 4)], id="renorm_p1_dim1"),
    Spec("quantile", lambda x: fg.quantile(x, 0.3), lambda x: jnp.quantile(x, 0.3), [(3, 4)],
         grad_fn="SqueezeBackward4"),
    Spec("quantile", lambda x, q: x.quantile(q, dim=1), lambda x, q: jnp.quantile(x, q, axis=1), [(3, 5), _Q],
         grad=(0,), id="quantile_q_tensor"),
    Spec("quantile", lambda x, q: fg.quantile(x, q, dim=0, keepdim=True, interpolation="midpoint"),
         lambda x, q: jnp.quantile(x, q, axis=0, keepdims=True, method="midpoint"), [(4, 3), _Q],
         grad=(0,), id="quantile_midpoint"),
    Spec("quantile", lambda x: fg.nanquantile(x, 0.5, dim=1), lambda x: jnp.nanquantile(x, 0.5, axis=1),
         [_NANS], id="nanquantile"),
    Spec("histogram", lambda x: fg.histogram(x, 4, range=(-1.0, 1.0)).hist,
         lambda x: jnp.histogram(x, 4, (-1.0, 1.0))[0].astype(x.dtype), [(3, 5)], nondiff=True),
    Spec("div_scalar", lambda y, x: fg.cumulative_trapezoid(y, x), lambda y, x: jnp.cumsum(
         jnp.diff(x) * (y[:, 1:] + y[:, :-1]), -1) / 2.0, [(3, 4), (4,)], grad_fn="DivBackward1"),
    # rate 0 draws nothing, so the row is deterministic (seeded draws vs torch: tests/test_ops_names.py)
    Spec("poisson", lambda r: fg.poisson(r), lambda r: r * 0, [np.zeros((2, 3))], grad_fn="PoissonBackward0"),
]
