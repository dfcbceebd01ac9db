"""Spec rows for funcgrad/_ops/inplace_shape.py: the in-place shape methods' steps (``t_``,
``transpose_``, ``squeeze_``, ``unsqueeze_``), each on a non-leaf (``x * 1``); their views,
versions, errors and ``resize_`` against PyTorch: tests/test_inplace_views.py."""

from __future__ import annotations

import jax.numpy as jnp

from . import Spec

SPECS = [
    Spec("t_inplace", lambda x: (x * 1).t_(), lambda x: x.T, [(2, 3)], grad_fn="TBackward1"),
    Spec("transpose_inplace", lambda x: (x * 1).transpose_(0, 2), lambda x: jnp.swapaxes(x, 0, 2),
         [(2, 3, 4)], grad_fn="TransposeBackward1"),
    Spec("squeeze_inplace", lambda x: (x * 1).squeeze_(), jnp.squeeze, [(1, 3, 1)],
         grad_fn="SqueezeBackward3"),
    Spec("squeeze_dim_inplace", lambda x: (x * 1).squeeze_(-1), lambda x: jnp.squeeze(x, -1),
         [(1, 3, 1)], grad_fn="SqueezeBackward4"),
    Spec("squeeze_dims_inplace", lambda x: (x * 1).squeeze_((0, -1)), lambda x: x[0, :, 0],
         [(1, 3, 1)], grad_fn="SqueezeBackward5"),
    Spec("unsqueeze_inplace", lambda x: (x * 1).unsqueeze_(1), lambda x: x[:, None], [(2, 3)],
         grad_fn="UnsqueezeBackward1"),
]
