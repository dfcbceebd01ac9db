"""``multinomial`` as PyTorch 2.13 samples it on CPU (aten/src/ATen/native/Distributions.cpp,
native/cpu/MultinomialKernel.cpp).

Without replacement, or one sample: ``q = exponential_(1)`` of the probabilities' shape and dtype,
then the top ``n`` of ``p / q`` (argmax for one). With replacement: per row the running sum in
the probabilities' dtype, normalised, last bucket forced to 1, and for each sample a float64
uniform located by binary search (the first bucket ``>= u``).
"""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np

from .._tensor import Tensor, _scalar_type_name
from . import _sample, generator_or_default


def multinomial(input: Tensor, n_sample: int, replacement: bool, generator) -> Tensor:
    p = input._value
    if p.ndim not in (1, 2):
        raise RuntimeError("prob_dist must be 1 or 2 dim")
    if not jnp.issubdtype(p.dtype, jnp.floating):
        raise RuntimeError(f"multinomial only supports floating-point dtypes for input, got: "
                           f"{_scalar_type_name(input.dtype)}")
    n_cat = p.shape[-1]
    if n_sample <= 0:
        raise RuntimeError("cannot sample n_sample <= 0 samples")
    if not replacement and n_sample > n_cat:
        raise RuntimeError("cannot sample n_sample > prob_dist.size(-1) samples without replacement")
    pn = np.asarray(p)
    g = generator_or_default(generator)
    if not replacement or n_sample == 1:
        if not (np.all(np.isfinite(pn)) and np.all(pn >= 0)):
            raise RuntimeError("probability tensor contains either `inf`, `nan` or element < 0")
        if np.any(pn.sum(-1) == 0):
            raise RuntimeError("invalid multinomial distribution (sum of probabilities <= 0)")
        q = np.asarray(_sample.exponential(g, pn.shape, pn.dtype, 1.0))
        ratio = pn / q
        if n_sample == 1:
            idx = np.argmax(ratio, -1)[..., None]
        else:  # topk: largest first (a stable sort keeps ties in index order)
            idx = np.argsort(-ratio, -1, kind="stable")[..., :n_sample]
        return Tensor._wrap(jnp.asarray(idx.astype(np.int64)))
    rows = pn.reshape(-1, n_cat)
    out = np.empty((rows.shape[0], n_sample), np.int64)
    with g._lock:
        for i, row in enumerate(rows):
            if np.any(row < 0):
                raise RuntimeError("invalid multinomial distribution (encountering probability entry < 0)")
            if not np.all(np.isfinite(row)):
                raise RuntimeError("invalid multinomial distribution (encountering probability entry = "
                                   "infinity or NaN)")
            cum = np.cumsum(row, dtype=row.dtype)  # sequential, in the input's precision
            total = cum[-1]
            if not total > 0:
                raise RuntimeError("invalid multinomial distribution (sum of probabilities <= 0)")
            cum = (cum / total).astype(row.dtype)
            cum[-1] = 1
            u = np.asarray(_sample.uniform(g, (n_sample,), np.float64))
            out[i] = np.searchsorted(cum.astype(np.float64), u, side="left")
    return Tensor._wrap(jnp.asarray(out.reshape(pn.shape[:-1] + (n_sample,))))
