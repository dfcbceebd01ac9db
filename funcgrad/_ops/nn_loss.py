"""Op table — loss functions (``funcgrad.nn.functional``'s losses).

Each kernel is a pure ``jax.numpy`` function with the reduction as a static argument, so the
loss and its reduction are one XLA program (forward) and one jitted ``jax.vjp`` (backward).
Numerics follow PyTorch's formulas: ``log_softmax`` via ``jax.nn.log_softmax``, BCE-with-logits
in the softplus form, BCE's log clamped to ``>= -100``. Where PyTorch composes a loss from
several ops (``kl_div``, ``cosine_embedding_loss``…) the kernel is the elementwise part, named
like PyTorch's last elementwise node, and the frontend reduces with ``sum``/``mean``.
The frontends (argument checks, PyTorch's messages) live in ``funcgrad/nn/_functional_loss.py``.
"""

from __future__ import annotations

import collections
import math

import jax
import jax.numpy as jnp

from .. import _cache, _dispatch, _meta
from ._registry import Tensor, defop
from .nn import _log_softmax
from .reduce import _mean


def _reduce(x, reduction):
    if reduction == "mean":  # (PyTorch's loss.mean(): the sum divided by the count, see _mean)
        return _mean(x, dim=None, keepdim=False, dtype=None)
    if reduction == "sum":
        return jnp.sum(x)
    return x


# ---- regression losses ------------------------------------------------------------------------
def _mse(x, y, *, reduction):
    return _reduce((x - y) ** 2, reduction)


def _smooth_l1(x, y, *, reduction, beta):
    d = jnp.abs(x - y)
    if beta == 0.0:
        return _reduce(d, reduction)
    return _reduce(jnp.where(d < beta, 0.5 * d * d / beta, d - 0.5 * beta), reduction)


def _huber(x, y, *, reduction, delta):
    d = jnp.abs(x - y)
    return _reduce(jnp.where(d < delta, 0.5 * d * d, delta * (d - 0.5 * delta)), reduction)


def _soft_margin(x, y, *, reduction):
    return _reduce(jax.nn.softplus(-y * x), reduction)


mse_loss = defop("mse_loss", _mse, "MseLossBackward0", promote="binary")
smooth_l1_loss = defop("smooth_l1_loss", _smooth_l1, "SmoothL1LossBackward0", promote="binary")
huber_loss = defop("huber_loss", _huber, "HuberLossBackward0", promote="binary")
soft_margin_loss = defop("soft_margin_loss", _soft_margin, "SoftMarginLossBackward0", promote="binary")


# ---- binary cross entropy ---------------------------------------------------------------------
def _bce(x, y, w, *, reduction):
    # PyTorch clamps each log to >= -100 so that x = 0 or 1 gives a finite loss; the safe `where`
    # keeps the gradient finite there too.
    log_x = jnp.maximum(jnp.log(jnp.where(x > 0, x, 1.0)), -100.0)
    log_x = jnp.where(x > 0, log_x, -100.0)
    log_1mx = jnp.maximum(jnp.log(jnp.where(x < 1, 1.0 - x, 1.0)), -100.0)
    log_1mx = jnp.where(x < 1, log_1mx, -100.0)
    loss = -(y * log_x + (1.0 - y) * log_1mx)
    if w is not None:
        loss = loss * w
    return _reduce(loss, reduction)


def _bce_logits(x, y, w, pw, *, reduction):
    # (1 - y) x + (1 + (pw - 1) y) softplus(-x): stable for any |x|
    sp = jax.nn.softplus(-x)
    if pw is None:
        loss = (1.0 - y) * x + sp
    else:
        loss = (1.0 - y) * x + (1.0 + (pw - 1.0) * y) * sp
    if w is not None:
        loss = loss * w
    return _reduce(loss, reduction)


binary_cross_entropy = defop("binary_cross_entropy", _bce, "BinaryCrossEntropyBackward0",
                             promote="binary", diff=(0, 1))
binary_cross_entropy_with_logits = defop(
    "binary_cross_entropy_with_logits", _bce_logits, "BinaryCrossEntropyWithLogitsBackward0",
    promote="binary", diff=(0, 1))


# ---- negative log likelihood / cross entropy ----------------------------------------------------
def _class_shape(w, ndim):
    """Weight of shape (C,) broadcast against an (N, C, d1, ...) input."""
    return w.reshape((1, -1) + (1,) * (ndim - 2))


def _nll(logp, t, w, *, reduction, ignore_index):
    """PyTorch's nll_loss on (N, C, d1...) log-probabilities and (N, d1...) class indices:
    the weighted mean divides by the summed weights of the non-ignored targets."""
    keep = t != ignore_index
    safe = jnp.where(keep, t, 0)
    picked = jnp.squeeze(jnp.take_along_axis(logp, safe[:, None], axis=1), 1)
    wt = keep.astype(logp.dtype) if w is None else jnp.where(keep, w[safe], 0).astype(logp.dtype)
    loss = -picked * wt
    if reduction == "mean":
        return jnp.sum(loss) / jnp.sum(wt)
    if reduction == "sum":
        return jnp.sum(loss)
    return loss


def _cross_entropy(x, t, w, *, reduction, ignore_index, label_smoothing):
    logp = jax.nn.log_softmax(x, axis=1)
    nll = _nll(logp, t, w, reduction=reduction, ignore_index=ignore_index)
    if label_smoothing == 0.0:
        return nll
    # PyTorch's cross_entropy_loss_label_smoothing
    keep = t != ignore_index
    smooth = -jnp.sum(logp if w is None else logp * _class_shape(w, x.ndim), axis=1)
    smooth = jnp.where(keep, smooth, 0.0)
    if reduction == "mean":
        den = (jnp.sum(keep).astype(x.dtype) if w is None
               else jnp.sum(jnp.where(keep, w[jnp.where(keep, t, 0)], 0)).astype(x.dtype))
        smooth = jnp.sum(smooth) / den
    elif reduction == "sum":
        smooth = jnp.sum(smooth)
    n_classes = x.shape[1]
    return (1.0 - label_smoothing) * nll + smooth * (label_smoothing / n_classes)


def _cross_entropy_prob(x, p, w, *, reduction, label_smoothing):
    logp = jax.nn.log_softmax(x, axis=1)
    n_classes = x.shape[1]
    if label_smoothing > 0.0:
        p = p * (1.0 - label_smoothing) + label_smoothing / n_classes
    prod = logp * p if w is None else logp * p * _class_shape(w, x.ndim)
    if reduction == "mean":
        return -jnp.sum(prod) / (x.size // n_classes) if x.size else jnp.sum(prod) * jnp.nan
    if reduction == "sum":
        return -jnp.sum(prod)
    return -jnp.sum(prod, axis=1)


nll_loss = defop("nll_loss", _nll, "NllLossBackward0", diff=(0,), linear=True)  # linear in logp
# PyTorch's nll_loss2d: (N, C, H, W) inputs, and every other spatial input viewed as (N, C, 1, -1)
nll_loss2d = defop("nll_loss2d", _nll, "NllLoss2DBackward0", diff=(0,), linear=True)
# cross_entropy on class indices is log_softmax then nll_loss (PyTorch's two nodes); with label
# smoothing one kernel, named like PyTorch's root node.
cross_entropy_smooth = defop("cross_entropy_smooth", _cross_entropy, "AddBackward0", diff=(0,))
cross_entropy_prob = defop("cross_entropy_prob", _cross_entropy_prob, "NegBackward0",
                           promote="binary", diff=(0, 1))
cross_entropy_prob_mean = defop("cross_entropy_prob_mean", _cross_entropy_prob, "DivBackward1",
                                promote="binary", diff=(0, 1))


def _multi_margin(x, t, w, *, p, margin, reduction):
    # x: (N, C), t: (N,)
    xt = jnp.take_along_axis(x, t[:, None], axis=1)
    z = jnp.maximum(margin - xt + x, 0.0)
    if p == 2:
        z = z * z
    if w is not None:
        z = z * w[t][:, None]
    z = jnp.where(jnp.arange(x.shape[1])[None, :] == t[:, None], 0.0, z)
    loss = jnp.sum(z, axis=1) / x.shape[1]
    return _reduce(loss, reduction)


multi_margin_loss = defop("multi_margin_loss", _multi_margin, "MultiMarginLossBackward0", diff=(0,))


# ---- elementwise parts of composite losses (reduced by the frontend) ------------------------------
def _kl_div(x, y):
    return jax.scipy.special.xlogy(y, y) - y * x


def _kl_div_log(x, y):
    return jnp.exp(y) * (y - x)


kl_div = defop("kl_div", _kl_div, "SubBackward0", promote="binary")
kl_div_log_target = defop("kl_div_log_target", _kl_div_log, "MulBackward0", promote="binary")


def _cosine_embedding(x1, x2, y, *, margin):
    eps = 1e-12
    prod = jnp.sum(x1 * x2, axis=-1)
    m1 = jnp.sum(x1 * x1, axis=-1) + eps
    m2 = jnp.sum(x2 * x2, axis=-1) + eps
    cos = prod / jnp.sqrt(m1 * m2)
    pos = jnp.where(y == 1, 1.0 - cos, 0.0)
    neg = jnp.where(y == -1, jnp.maximum(cos - margin, 0.0), 0.0)
    return pos + neg


def _margin_ranking(x1, x2, y, *, margin):
    return jnp.maximum(-y * (x1 - x2) + margin, 0.0)


def _pairwise_distance(a, b, p, eps):
    d = a - b + eps
    if p == 2:
        return jnp.sqrt(jnp.sum(d * d, axis=-1))
    if p == 1:
        return jnp.sum(jnp.abs(d), axis=-1)
    return jnp.sum(jnp.abs(d) ** p, axis=-1) ** (1.0 / p)


def _triplet(a, p, n, *, margin, p_norm, eps, swap):
    d_ap = _pairwise_distance(a, p, p_norm, eps)
    d_an = _pairwise_distance(a, n, p_norm, eps)
    if swap:
        d_an = jnp.minimum(d_an, _pairwise_distance(p, n, p_norm, eps))
    return jnp.maximum(margin + d_ap - d_an, 0.0)


def _gaussian_nll(x, t, var, *, full, eps):
    # PyTorch clamps var under no_grad: the gradient passes through the clamp unchanged
    var = var + jax.lax.stop_gradient(jnp.maximum(var, eps) - var)
    loss = 0.5 * (jnp.log(var) + (x - t) ** 2 / var)
    if full:
        loss = loss + 0.5 * math.log(2 * math.pi)
    return loss


def _poisson_nll(x, t, *, log_input, full, eps):
    loss = jnp.exp(x) - t * x if log_input else x - t * jnp.log(x + eps)
    if full:
        safe_t = jnp.where(t > 1, t, 2.0)
        stirling = safe_t * jnp.log(safe_t) - safe_t + 0.5 * jnp.log(2 * math.pi * safe_t)
        loss = loss + jnp.where(t > 1, stirling, 0.0)
    return loss


cosine_embedding_loss = defop("cosine_embedding_loss", _cosine_embedding, "AddBackward0", diff=(0, 1))
margin_ranking_loss = defop("margin_ranking_loss", _margin_ranking, "ClampMinBackward0",
                            promote="binary")
triplet_margin_loss = defop("triplet_margin_loss", _triplet, "ClampMinBackward0")
gaussian_nll_loss = defop("gaussian_nll_loss", _gaussian_nll, "MulBackward0", promote="binary")
poisson_nll_loss = defop("poisson_nll_loss", _poisson_nll, "SubBackward0", promote="binary")


_ce_kernels: dict = {}


def cross_entropy_indices(x, t, w, reduction, ignore_index, nll=None):
    """``nll_loss(log_softmax(x, 1), t, w)`` with PyTorch's two nodes (``NllLossBackward0`` over
    ``LogSoftmaxBackward0``) from ONE forward kernel that returns only the loss.

    ``nll_loss`` is linear in the log-probabilities, so its node saves only their shape and
    nothing ever needs their value: the intermediate tensor is a lazy view of ``x`` through
    ``log_softmax`` (computed only if something reads it, as ``linear_2d``'s ``weight.t()``),
    which spares the forward a second output array. The fused backward replays both vjps.
    ``nll``: the loss's op (``nll_loss``, or ``nll_loss2d`` for (N, C, H, W) inputs).
    """
    nll = nll_loss if nll is None else nll
    args = (x, t, w)
    vals = [a._value if isinstance(a, Tensor) else a for a in args]
    cast = _dispatch.result_dtype(_log_softmax, (x,), vals[:1])
    key = (reduction, ignore_index, cast)
    k = _ce_kernels.get(key)
    if k is None:
        k = _ce_kernels[key] = _cache.kernel(lambda: _ce_fn(cast, reduction, ignore_index),
                                             "cross_entropy", swap=(_ce_kernels, key))
    try:
        loss = k(*vals)
    except Exception:
        if not _meta.holds(vals):
            raise
        loss = _meta.program(("cross_entropy", key), lambda: _ce_fn(cast, reduction, ignore_index),
                             vals)  # (a meta input: the loss's shape and dtype, funcgrad/_meta.py)
    if not (_dispatch._state.enabled and isinstance(x, Tensor) and x._requires_grad):
        out = Tensor._wrap(loss)
        if _dispatch._state.inference:
            out._ver = None  # an inference tensor, as apply makes them
        return out
    aval = _Aval(vals[0].shape, vals[0].dtype if cast is None else cast.np)
    lp = _dispatch._record(_log_softmax, (x,), aval, _DIM1, cast, (True,))
    lazy = Tensor._make_view(x, aval, _log_softmax, _DIM1)
    lp._cell, lp._viewinfo = lazy._cell, lazy._viewinfo  # the shape is all nll_loss's node reads
    out = _dispatch._record(nll, (lp, t, w), loss, (("reduction", reduction),
                            ("ignore_index", ignore_index)), None, (True, False, False))
    lp._viewinfo.cg = (None, -1)  # the value: from x, if ever read
    return out


def _ce_fn(cast, reduction, ignore_index):
    """``cross_entropy_indices``'s kernel function: the loss from the logits, targets, weight."""
    ls = _log_softmax.traced(_DIM1, cast, 1)
    return lambda x, t, w: _nll(ls(x), t, w, reduction=reduction, ignore_index=ignore_index)


_DIM1 = (("dim", 1),)
_Aval = collections.namedtuple("_Aval", "shape dtype")  # cheaper than jax.ShapeDtypeStruct
