"""Spec rows for the ops of funcgrad/_ops/complex.py (complex, polar, view_as_real/complex, conj,
conj_physical, angle). A row whose op gives a complex tensor ends in ``view_as_real`` (or starts
from ``complex``) so that its output and inputs are real: their gradient is then the same under
jax's and PyTorch's complex conventions. Values, errors and node names vs PyTorch:
tests/test_names3.py."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

import funcgrad as fg

from . import Spec, ints, pos

_REAL = np.array([[1.5, -2.0, 0.0, -0.0], [np.nan, 3.0, -0.5, 2.0]])


def _signed_abs(r):  # r's value, derivative sign(r)
    return jax.lax.stop_gradient(r - jnp.abs(r)) + jnp.abs(r)


def _pair(a, b):
    return jnp.stack([a, b], -1)


SPECS = [
    Spec("complex", lambda a, b: fg.view_as_real(fg.complex(a, b)), _pair, [(3, 4), (3, 4)],
         grad_fn="ViewAsRealBackward0"),
    Spec("complex", lambda a, b: fg.view_as_real(fg.complex(a, b)), lambda a, b: _pair(*jnp.broadcast_arrays(a, b)),
         [(3, 4), (4,)], id="complex_broadcast"),
    Spec("polar", lambda r, t: fg.view_as_real(fg.polar(r, t)), lambda r, t: _pair(r * jnp.cos(t), r * jnp.sin(t)),
         [pos(2, 5), (2, 5)]),
    # a negative abs: PyTorch's d/d(abs) is sgn(result) = sign(abs) e^{i angle}
    Spec("polar", lambda r, t: fg.view_as_real(fg.polar(r, t)),
         lambda r, t: _pair(_signed_abs(r) * jnp.cos(t), _signed_abs(r) * jnp.sin(t)), [(2, 5), (2, 5)],
         id="polar_negative_abs"),
    Spec("view_as_real", lambda a, b: fg.view_as_real(fg.complex(a, b)) * 2, lambda a, b: _pair(a, b) * 2,
         [(5,), (5,)], id="view_as_real"),
    Spec("view_as_complex", lambda x: fg.view_as_real(fg.view_as_complex(x)), lambda x: x, [(3, 2)]),
    Spec("view_as_complex", lambda x: fg.view_as_complex(x).abs(),
         lambda x: jnp.abs(jax.lax.complex(x[..., 0], x[..., 1])), [(2, 3, 2)], grad_fn="AbsBackward0",
         id="view_as_complex_abs"),
    # (resolve_conj: PyTorch's view_as_real refuses its lazily conjugated tensor)
    Spec("conj", lambda a, b: fg.view_as_real(fg.complex(a, b).conj().resolve_conj()), lambda a, b: _pair(a, -b),
         [(4,), (4,)]),
    Spec("conj_physical", lambda a, b: fg.view_as_real(fg.conj_physical(fg.complex(a, b))),
         lambda a, b: _pair(a, -b), [(4,), (4,)]),
    Spec("angle", fg.angle, lambda x: jnp.zeros_like(x) + jnp.where(x < 0, jnp.pi, 0.0), [(3, 4)],
         grad_fn="AngleBackward0"),
    Spec("angle", fg.angle, lambda x: jnp.where(jnp.isnan(x), x, jnp.where(x < 0, jnp.pi, 0.0)), [_REAL],
         grad=(), nondiff=True, id="angle_nan_signed_zero"),
    Spec("angle", fg.angle, lambda x: jnp.where(x < 0, np.float32(np.pi), np.float32(0)),
         [ints(6, low=-3, high=3)], nondiff=True, id="angle_int"),
    Spec("angle_complex", lambda a, b: fg.angle(fg.complex(a, b)), lambda a, b: jnp.arctan2(b, a), [(3, 4), (3, 4)],
         grad_fn="AngleBackward0"),
]
