"""Spec rows for the reductions, scans and sorting ops (funcgrad/_ops/reduce.py, sort.py)."""

import jax
import jax.numpy as jnp
import numpy as np

import funcgrad as fg

from . import Spec, ints

S = (3, 4)


def _with_zeros(rng):
    x = rng.standard_normal((3, 4))
    x[0, 1] = 0.0
    x[1, 2] = x[1, 3] = 0.0
    return x


def _with_nans(rng):
    x = rng.standard_normal((3, 5))
    x[0, 1] = x[2, 0] = x[2, 4] = np.nan
    return x


def _repeats(rng):
    return rng.integers(0, 3, (3, 7)).astype(np.float64)


def _mode_ref(x):
    # independent reference: the smallest of the most frequent values, at its last occurrence
    counts = (x[..., :, None] == x[..., None, :]).sum(-1)
    cand = jnp.where(counts == counts.max(-1, keepdims=True), x, jnp.inf)
    val = cand.min(-1, keepdims=True)
    n = x.shape[-1]
    idx = n - 1 - jnp.argmax(jnp.flip(x == val, -1), -1, keepdims=True)
    return jnp.take_along_axis(x, idx, -1)[..., 0], idx[..., 0]


SPECS = [
    Spec("prod", lambda x: x.prod(), jnp.prod, [S], grad_fn="ProdBackward0"),
    Spec("prod", fg.prod, jnp.prod, [_with_zeros], id="prod_zeros"),
    Spec("prod", lambda x: x.prod(), jnp.prod, [ints(5, low=1, high=4)], nondiff=True, id="prod_int"),
    Spec("prod_dim", lambda x: fg.prod(x, -1, keepdim=True), lambda x: jnp.prod(x, -1, keepdims=True),
         [_with_zeros], grad_fn="ProdBackward1"),
    Spec("var", lambda x: x.var(), lambda x: jnp.var(x, ddof=1), [S], grad_fn="VarBackward0"),
    Spec("var", lambda x: fg.var(x, 0, keepdim=True, correction=0), lambda x: jnp.var(x, 0, keepdims=True),
         [S], id="var_dim_correction"),
    Spec("var", lambda x: x.var(1, False), lambda x: jnp.var(x, 1), [S], id="var_unbiased_false"),
    Spec("std", lambda x: x.std(-1), lambda x: jnp.std(x, -1, ddof=1), [S], grad_fn="StdBackward0"),
    Spec("std", lambda x: fg.std(x, (0, 1), unbiased=False), lambda x: jnp.std(x, (0, 1)), [(2, 3, 2)], id="std_dims"),
    Spec("var_mean", lambda x: fg.var_mean(x, 1), lambda x: (jnp.var(x, 1, ddof=1), jnp.mean(x, 1)), [S],
         grad_fn="VarMeanBackward0"),
    Spec("var_mean", fg.var_mean, lambda x: (jnp.var(x, ddof=1), jnp.mean(x)), [S], out=1, id="var_mean_mean"),
    Spec("std_mean", lambda x: fg.std_mean(x, correction=0), lambda x: (jnp.std(x), jnp.mean(x)), [S],
         grad_fn="StdMeanBackward0"),
    Spec("logsumexp", lambda x: x.logsumexp(1), lambda x: jax.nn.logsumexp(x, 1), [S],
         grad_fn="LogsumexpBackward0"),
    Spec("logsumexp", lambda x: fg.logsumexp(x, (0, 1), keepdim=True), lambda x: jax.nn.logsumexp(
        x, (0, 1), keepdims=True), [S], id="logsumexp_dims"),
    Spec("nansum", fg.nansum, jnp.nansum, [_with_nans], grad_fn="NansumBackward0"),
    Spec("nansum", lambda x: x.nansum(1), lambda x: jnp.nansum(x, 1), [_with_nans], id="nansum_dim"),
    Spec("nansum", lambda x: fg.nanmean(x, 1), lambda x: jnp.nanmean(x, 1), [_with_nans], grad_fn="DivBackward0",
         id="nanmean"),
    Spec("any", lambda x: (x > 1).any(), lambda x: (x > 1).any(), [S], nondiff=True),
    Spec("any", lambda x: fg.any(x, -1, keepdim=True), lambda x: jnp.any(x, -1, keepdims=True), [ints(3, 4)],
         nondiff=True, id="any_dim"),
    Spec("all", lambda x: x.all(0), lambda x: jnp.all(x, 0), [ints(3, 4)], nondiff=True),
    Spec("count_nonzero", lambda x: x.count_nonzero(1), lambda x: jnp.count_nonzero(x, 1), [ints(3, 4)],
         nondiff=True),
    Spec("aminmax", lambda x: fg.aminmax(x, dim=1), lambda x: (jnp.min(x, 1), jnp.max(x, 1)), [S],
         grad_fn="AminmaxBackward0"),
    Spec("aminmax", lambda x: x.aminmax(), lambda x: (jnp.min(x), jnp.max(x)), [S], out=1, id="aminmax_max"),
    Spec("cumsum", lambda x: x.cumsum(-1), lambda x: jnp.cumsum(x, -1), [S], grad_fn="CumsumBackward0"),
    Spec("cumsum", lambda x: fg.cumsum(x, 0), lambda x: jnp.cumsum(x, 0, dtype=jnp.int64), [ints(5)], nondiff=True,
         id="cumsum_int"),
    Spec("cumsum", lambda x: fg.cumsum(x, 0, dtype=fg.float32), lambda x: jnp.cumsum(x, 0, dtype=jnp.float32), [S],
         atol=1e-6, rtol=1e-6, id="cumsum_dtype"),
    Spec("cumprod", lambda x: x.cumprod(1), lambda x: jnp.cumprod(x, 1), [_with_zeros], grad_fn="CumprodBackward0"),
    Spec("logcumsumexp", lambda x: x.logcumsumexp(0), lambda x: jax.lax.cumlogsumexp(x, 0), [S],
         grad_fn="LogcumsumexpBackward0"),
    # sorting-based: values carry the gradient to the returned indices
    Spec("sort", lambda x: x.sort(), lambda x: (jnp.sort(x, -1), jnp.argsort(x, -1)), [S], grad_fn="SortBackward0"),
    Spec("sort", lambda x: fg.sort(x, 0, descending=True), lambda x: (-jnp.sort(-x, 0),), [S], id="sort_desc"),
    Spec("sort", lambda x: fg.msort(x), lambda x: jnp.sort(x, 0), [S], id="msort"),
    Spec("sort_stable", lambda x: x.sort(stable=True), lambda x: (jnp.sort(x, -1), jnp.argsort(x, -1)), [S],
         grad_fn="SortBackward1"),
    Spec("argsort", lambda x: x.argsort(descending=True), lambda x: jnp.argsort(-x, -1), [S], nondiff=True),
    Spec("topk", lambda x: x.topk(2), lambda x: tuple(jax.lax.top_k(x, 2)), [S], grad_fn="TopkBackward0"),
    Spec("topk", lambda x: fg.topk(x, 2, dim=0, largest=False), lambda x: (jnp.sort(x, 0)[:2],), [S],
         id="topk_smallest"),
    Spec("kthvalue", lambda x: x.kthvalue(2, 0), lambda x: (jnp.sort(x, 0)[1], jnp.argsort(x, 0)[1]), [S],
         grad_fn="KthvalueBackward0"),
    Spec("median", fg.median, lambda x: jnp.quantile(x, 0.5, method="lower"), [S], grad_fn="MedianBackward0"),
    Spec("median_dim", lambda x: x.median(1), lambda x: (jnp.quantile(x, 0.5, axis=1, method="lower"),), [S],
         grad_fn="MedianBackward1"),
    Spec("nanmedian", fg.nanmedian, lambda x: jnp.nanquantile(x, 0.5, method="lower"), [_with_nans],
         grad_fn="NanmedianBackward0"),
    Spec("nanmedian_dim", lambda x: x.nanmedian(1, keepdim=True), lambda x: (jnp.nanquantile(
        x, 0.5, axis=1, method="lower", keepdims=True),), [_with_nans], grad_fn="NanmedianBackward1"),
    Spec("mode", lambda x: x.mode(), _mode_ref, [_repeats], grad_fn="ModeBackward0"),
    Spec("mode", lambda x: x.mode(), _mode_ref, [_repeats], out=1, nondiff=True, id="mode_indices"),
    Spec("cummax", lambda x: x.cummax(1), lambda x: (jax.lax.cummax(x, 1),), [S], grad_fn="CummaxBackward0"),
    Spec("cummin", lambda x: fg.cummin(x, 0), lambda x: (jax.lax.cummin(x, 0),), [S], grad_fn="CumminBackward0"),
]
