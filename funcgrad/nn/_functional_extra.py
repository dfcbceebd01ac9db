"""More of ``funcgrad.nn.functional`` that PyTorch tutorials reach: ``max_unpool1d/2d/3d``,
``rrelu``/``rrelu_``, ``feature_alpha_dropout``, ``adaptive_max_pool3d``,
``multilabel_margin_loss``, ``triplet_margin_with_distance_loss``, ``fractional_max_pool2d/3d``,
the ``*_with_indices`` spellings of the max pools and the deprecated ``upsample_nearest`` /
``upsample_bilinear`` (PyTorch's signatures, node names, messages and random streams).

The native kernels are ops of the op table declared here (as ``nn/utils/weight_norm.py`` does):
each states PyTorch's derivative where ``jax.vjp`` of its forward would differ (``max_unpool``'s
``max_pool_double_backward`` gathers the gradient for every input, also one whose value a later
duplicate index overwrote).
"""

from __future__ import annotations

import math
import warnings

import jax
import jax.numpy as jnp
import numpy as np

from .._dispatch import apply
from .._ops._registry import defop, kernel_error
from .._ops.nn import _adaptive_max, _pairwise_op, _torch_pick
from .._ops.pointwise import minimum as _minimum
from .._random import _sample, generator_or_default
from .._tensor import Tensor, _scalar_type_name
from . import _functional_conv as _conv
from ._functional_loss import _reduction

__all__ = ["max_unpool1d", "max_unpool2d", "max_unpool3d", "rrelu", "rrelu_", "feature_alpha_dropout",
           "adaptive_max_pool3d", "adaptive_max_pool3d_with_indices", "multilabel_margin_loss",
           "triplet_margin_with_distance_loss", "fractional_max_pool2d", "fractional_max_pool3d",
           "fractional_max_pool2d_with_indices", "fractional_max_pool3d_with_indices",
           "max_pool1d_with_indices", "max_pool2d_with_indices", "max_pool3d_with_indices",
           "adaptive_max_pool1d_with_indices", "adaptive_max_pool2d_with_indices", "upsample_nearest",
           "upsample_bilinear"]

_FLOATS = dict(accepts="f")


# ================================ max_unpool ======================================================
def _unpool(x, idx, *, size):
    """Each input value written at its flat index of its plane (the trailing ``len(size)`` dims)
    of the output; where indices repeat, the later one in input order wins, as PyTorch's CPU loop
    writes on one thread (on several its order is not defined)."""
    lead = x.shape[:x.ndim - len(size)]
    flat = (math.prod(lead), math.prod(x.shape[len(lead):]))
    xf, jf = x.reshape(flat), idx.reshape(flat)
    rows = jnp.arange(xf.shape[0])[:, None]
    pos = jnp.broadcast_to(jnp.arange(xf.shape[1], dtype=jnp.int32), xf.shape)
    win = jnp.full((xf.shape[0], math.prod(size)), -1, jnp.int32).at[rows, jf].max(pos, mode="drop")
    out = jnp.where(win >= 0, jnp.take_along_axis(xf, jnp.maximum(win, 0), 1), jnp.zeros((), x.dtype))
    return out.reshape(*lead, *size)


def _unpool_vjp(primals, g, *, grad_mode, size):
    """``max_pool_double_backward``: the gradient at each input's index (``derivatives.yaml``)."""
    x, idx = primals
    lead = x.shape[:x.ndim - len(size)]
    gf = g.reshape(math.prod(lead), math.prod(size))
    jf = idx.reshape(gf.shape[0], math.prod(x.shape[len(lead):]))
    return jnp.take_along_axis(gf, jnp.clip(jf, 0, gf.shape[1] - 1), 1).reshape(x.shape), None


_max_unpool2d = defop("max_unpool2d", _unpool, "MaxUnpool2DBackward0", diff=(0,), vjp=_unpool_vjp,
                      kernel="max_unpool2d", **_FLOATS)
_max_unpool3d = defop("max_unpool3d", _unpool, "MaxUnpool3DBackward0", diff=(0,), vjp=_unpool_vjp,
                      kernel="max_unpool3d", **_FLOATS)


def _ntuple(v, n):
    return tuple(int(a) for a in v) if isinstance(v, (tuple, list)) else (int(v),) * n


def _unpool_output_size(input, kernel_size, stride, padding, output_size):
    """PyTorch's ``_unpool_output_size``: the default size, or ``output_size`` checked against it."""
    n = len(kernel_size)
    default = [(input.shape[-n + d] - 1) * stride[d] + kernel_size[d] - 2 * padding[d] for d in range(n)]
    if output_size is None:
        ret = default
    else:
        if len(output_size) == n + 2:
            output_size = output_size[2:]
        if len(output_size) != n:
            raise ValueError(f"output_size should be a sequence containing {n} or {n + 2} elements, but it "
                             f"has a length of '{len(output_size)}'")
        for d in range(n):
            lo, hi = default[d] - stride[d], default[d] + stride[d]
            if not lo < output_size[d] < hi:
                raise ValueError(f'invalid output_size "{output_size}" (dim {d} must be between {lo} and '
                                 f'{hi})')
        ret = output_size
    for d in range(n):
        if ret[d] < 0:
            raise ValueError("max_unpooling: output_size must contain non-negative spatial dimensions, but "
                             f"got output_size[{d}]={ret[d]}")
    return [int(v) for v in ret]


def _check_indices(idx, size, n):
    """PyTorch's kernel skips an index outside its plane and reports the last one it met (on one
    thread; on several, the last one some thread met)."""
    v = idx._value
    if isinstance(v, jax.core.Tracer) or v.size == 0:
        return
    a = np.asarray(v).reshape(-1)
    bad = (a < 0) | (a >= math.prod(size))
    if bad.any():
        dims = "x".join(str(s) for s in size)
        raise RuntimeError(f"Found an invalid max index: {int(a[bad][-1])} (output volumes are of size "
                           f"{dims})")


def _max_unpool(nd, input, indices, size, stride, padding):
    name = f"max_unpooling{nd}d"
    if indices.dtype.name != "int64":
        raise RuntimeError("elements in indices should be type int64" +
                           (f" but got: {_scalar_type_name(indices.dtype)}" if nd == 2 else ""))
    if nd == 3:
        if input.ndim not in (4, 5):
            raise RuntimeError(f"Input to {name} should be a 4d or 5d Tensor, but got a tensor with "
                               f"{input.ndim} dimensions.")
    elif input.ndim not in (3, 4):
        raise RuntimeError(f"Input to {name} should be a 3d or 4d Tensor, but got a tensor with "
                           f"{input.ndim} dimensions.")
    if tuple(input.shape) != tuple(indices.shape):
        raise RuntimeError(f"Expected shape of indices to be same as that of the input tensor "
                           f"({list(input.shape)}) but got indices tensor with shape: {list(indices.shape)}")
    for i in range(1, input.ndim):
        if input.shape[i] <= 0:
            raise RuntimeError(f"{name}_forward_out_cpu(): Expected input to have non-zero size for "
                               f"non-batch dimensions, but got {list(input.shape)} with dimension {i} being "
                               "empty.")
    if nd == 3 and not all(s > 0 for s in stride):
        raise RuntimeError(f"strides should be greater than zero, but got stride: {list(stride)}")
    _check_indices(indices, size, nd)
    return apply(_max_unpool3d if nd == 3 else _max_unpool2d, input, indices, size=tuple(size))


def max_unpool1d(input: Tensor, indices: Tensor, kernel_size, stride=None, padding=0,
                 output_size=None) -> Tensor:
    """The partial inverse of ``max_pool1d``: each value at its index, zeros elsewhere (PyTorch
    computes it as a 2-D unpool of a unit width: ``SqueezeBackward1``)."""
    k = _ntuple(kernel_size, 1)
    s = k if stride is None else _ntuple(stride, 1)
    p = _ntuple(padding, 1)
    size = _unpool_output_size(input, k, s, p, output_size) + [1]
    return _max_unpool(2, input.unsqueeze(-1), indices.unsqueeze(-1), size, s + (1,), p + (0,)).squeeze(-1)


def max_unpool2d(input: Tensor, indices: Tensor, kernel_size, stride=None, padding=0,
                 output_size=None) -> Tensor:
    """The partial inverse of ``max_pool2d`` (``MaxUnpool2DBackward0``).

    >>> import funcgrad
    >>> import funcgrad.nn.functional as F
    >>> out, idx = F.max_pool2d(funcgrad.arange(16.).view(1, 1, 4, 4), 2, return_indices=True)
    >>> F.max_unpool2d(out, idx, 2)
    tensor([[[[ 0.,  0.,  0.,  0.],
              [ 0.,  5.,  0.,  7.],
              [ 0.,  0.,  0.,  0.],
              [ 0., 13.,  0., 15.]]]])
    """
    k = _ntuple(kernel_size, 2)
    s = k if stride is None else _ntuple(stride, 2)
    p = _ntuple(padding, 2)
    return _max_unpool(2, input, indices, _unpool_output_size(input, k, s, p, output_size), s, p)


def max_unpool3d(input: Tensor, indices: Tensor, kernel_size, stride=None, padding=0,
                 output_size=None) -> Tensor:
    """The partial inverse of ``max_pool3d`` (``MaxUnpool3DBackward0``)."""
    k = _ntuple(kernel_size, 3)
    s = k if stride is None else _ntuple(stride, 3)
    p = _ntuple(padding, 3)
    return _max_unpool(3, input, indices, _unpool_output_size(input, k, s, p, output_size), s, p)


# ================================ rrelu ===========================================================
def _rrelu(x, noise):
    return jnp.where(x > 0, x, x * noise)


# (jax.vjp of the select is PyTorch's rrelu_with_noise_backward: the noise where x <= 0, else 1;
# in evaluation the noise is the mean slope, leaky_relu_backward's)
_rrelu_op = defop("rrelu_with_noise", _rrelu, "RreluWithNoiseBackward0", diff=(0,),
                  kernel="rrelu_with_noise_out_cpu", **_FLOATS)
_rrelu_op_ = defop("rrelu_with_noise_", _rrelu, "RreluWithNoiseBackward1", diff=(0,),
                   kernel="rrelu_with_noise_out_cpu", **_FLOATS)


def _rrelu_noise(input: Tensor, lower: float, upper: float, training: bool):
    """The slopes: in training PyTorch's ``_rrelu_with_noise_train``, one
    ``uniform_real_distribution<double>(lower, upper)`` draw (``random64``) per element ``<= 0``
    in order, bounds in the op-math type; else ``(lower + upper) / 2`` everywhere."""
    dt = input.dtype.np
    if not training:  # (PyTorch computes it as leaky_relu)
        if not input.dtype.is_floating_point:
            raise kernel_error("leaky_relu_cpu", input.dtype)
        return jnp.asarray((lower + upper) / 2, dt)
    if not input.dtype.is_floating_point or dt == np.float16:
        raise kernel_error("rrelu_with_noise_out_cpu", input.dtype)
    x = np.asarray(input._concrete("rrelu in training (its draws depend on the values)"))
    op = np.float64 if dt == np.float64 else np.float32
    neg = np.ascontiguousarray(x).reshape(-1) <= 0
    k = int(neg.sum())
    words = generator_or_default(None)._raw(2 * k).astype(np.uint64)
    bits = (words[0::2] << np.uint64(32)) | words[1::2]
    u = (bits & np.uint64((1 << 53) - 1)).astype(np.float64) * 2.0 ** -53
    lo, hi = np.float64(op(lower)), np.float64(op(upper))
    noise = np.ones(neg.shape, op)
    noise[neg] = (u * (hi - lo) + lo).astype(op)
    return jnp.asarray(noise.reshape(x.shape).astype(dt))


def rrelu(input: Tensor, lower: float = 1.0 / 8, upper: float = 1.0 / 3, training: bool = False,
          inplace: bool = False) -> Tensor:
    """Randomized leaky ReLU: ``x`` if ``x > 0`` else ``a * x``, ``a ~ U(lower, upper)`` drawn
    per element in training (PyTorch's draws for the same seed), ``(lower + upper) / 2`` in
    evaluation (``RreluWithNoiseBackward0``; in place ``RreluWithNoiseBackward1``).

    >>> import funcgrad
    >>> import funcgrad.nn.functional as F
    >>> F.rrelu(funcgrad.tensor([-1.0, 2.0]))
    tensor([-0.2292,  2.0000])
    """
    if lower > upper:
        raise RuntimeError("Lower bound should be less than or equal to the upper bound")
    noise = Tensor._wrap(_rrelu_noise(input, float(lower), float(upper), bool(training)))
    if inplace:
        return input._inplace(lambda x: apply(_rrelu_op_, x, noise))
    return apply(_rrelu_op, input, noise)


def rrelu_(input: Tensor, lower: float = 1.0 / 8, upper: float = 1.0 / 3, training: bool = False) -> Tensor:
    """In-place ``rrelu``."""
    return rrelu(input, lower, upper, training, inplace=True)


# ================================ feature_alpha_dropout ===========================================
def feature_alpha_dropout(input: Tensor, p: float = 0.5, training: bool = False,
                          inplace: bool = False) -> Tensor:
    """Alpha dropout of whole channels: PyTorch's ``_dropout_impl<feature, alpha>``, one
    ``bernoulli_(1 - p)`` draw per (batch, channel), the same draws for the same seed."""
    if p < 0.0 or p > 1.0:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
    if p == 0 or not training or input.numel() == 0:
        return input
    if p == 1:
        zero = Tensor._wrap(jnp.zeros((), input.dtype.np))
        return input.mul_(zero) if inplace else input * zero
    if input.ndim < 2:
        raise RuntimeError("Feature dropout requires at least 2 dimensions in the input")
    dt = input.dtype.np
    shape = tuple(input.shape[:2]) + (1,) * (input.ndim - 2)
    alpha = 1.7580993408473766
    a = 1.0 / math.sqrt((alpha * alpha * p + 1) * (1 - p))
    noise = _sample.bernoulli_scalar(None, shape, 1.0 - p, dt)
    if not input.dtype.is_floating_point:  # (its noise.add(-1).mul_(alpha * a) in the input's type)
        kind = "Long" if input.dtype.name == "bool" else _scalar_type_name(input.dtype)
        raise RuntimeError(f"result type Float can't be cast to the desired output type {kind}")
    b = Tensor._wrap((noise - dt.type(1)) * dt.type(alpha * a) + dt.type(alpha * a * p))
    scale = Tensor._wrap(noise * dt.type(a))
    if inplace:
        return input.mul_(scale).add_(b)
    return (input * scale).add_(b)


# ================================ adaptive_max_pool3d =============================================
def _adaptive_max3d(x, *, output_size):
    """``_adaptive_max`` of a batched or unbatched input (PyTorch's kernel takes both)."""
    if x.ndim == 4:
        out, idx = _adaptive_max3d(x[None], output_size=output_size)
        return out[0], idx[0]
    if 0 in output_size:
        shape = x.shape[:2] + tuple(output_size)
        return jnp.zeros(shape, x.dtype), jnp.zeros(shape, jnp.int64)
    return _adaptive_max(x, output_size=output_size)


_adaptive_max_pool3d = defop("adaptive_max_pool3d", _adaptive_max3d, "AdaptiveMaxPool3DBackward0",
                             diff_outputs=(0,), kernel="adaptive_max_pool3d_cpu", **_FLOATS)


def adaptive_max_pool3d_with_indices(input: Tensor, output_size, return_indices: bool = False):
    """3-D max over adaptive bins and the flat ``D*H*W`` index of each (``AdaptiveMaxPool3DBackward0``)."""
    if isinstance(output_size, (tuple, list)):
        if input.ndim <= len(output_size):
            raise ValueError(f"Input dimension should be at least {len(output_size) + 1}")
        size = [input.shape[input.ndim - len(output_size) + i] if o is None else int(o)
                for i, o in enumerate(output_size)]
    else:
        size = [int(output_size)] * 3
    if input.ndim not in (4, 5):
        raise RuntimeError(f"adaptive_max_pool3d(): Expected 4D or 5D tensor, but got: {list(input.shape)}")
    if len(size) != 3:
        raise RuntimeError("adaptive_max_pool3d(): internal error: output_size.size() must be 3")
    for i in range(1, input.ndim):
        if input.shape[i] <= 0:
            raise RuntimeError("adaptive_max_pool3d(): Expected input to have non-zero size for non-batch "
                               f"dimensions, but input has sizes {list(input.shape)} with dimension {i} "
                               "being empty")
    return apply(_adaptive_max_pool3d, input, output_size=tuple(size))


def adaptive_max_pool3d(input: Tensor, output_size, return_indices: bool = False):
    """3-D adaptive max pooling; with ``return_indices`` also the indices."""
    out, idx = adaptive_max_pool3d_with_indices(input, output_size)
    return (out, idx) if return_indices else out


# ================================ multilabel_margin_loss ==========================================
def _multilabel_margin(x, t, *, reduction):
    """Per sample ``sum_j sum_{i not a target} max(0, 1 - (x[y_j] - x[i])) / C`` over the targets
    ``y_j`` before the first -1 (a hinge at exactly 0 passes no gradient, as PyTorch's backward)."""
    c = x.shape[-1] if x.ndim else 1
    x2, t2 = x.reshape(-1, c), t.reshape(-1, c)
    valid = jnp.cumprod(t2 >= 0, axis=1).astype(bool)
    tj = jnp.where(valid, t2, 0)
    is_target = jnp.any(valid[:, :, None] & (tj[:, :, None] == jnp.arange(c)), axis=1)
    xt = jnp.take_along_axis(x2, tj, 1)
    z = 1 - (xt[:, :, None] - x2[:, None, :])
    hinge = jnp.where((z > 0) & valid[:, :, None] & ~is_target[:, None, :], z, 0)
    loss = jnp.sum(hinge, axis=(1, 2)) / c
    if reduction == "mean":
        return jnp.mean(loss)
    if reduction == "sum":
        return jnp.sum(loss)
    return loss if x.ndim == 2 else loss.reshape(())


_multilabel_margin_op = defop("multilabel_margin_loss", _multilabel_margin, "MultilabelMarginLossBackward0",
                              diff=(0,))


def multilabel_margin_loss(input: Tensor, target: Tensor, size_average=None, reduce=None,
                           reduction: str = "mean") -> Tensor:
    """Multi-class multi-label hinge loss (``MultilabelMarginLossBackward0``): ``target`` holds
    each sample's class indices, ended by the first -1."""
    reduction = _reduction(size_average, reduce, reduction)
    nd = input.ndim
    if not (nd <= 1 and input.numel() > 0 or nd == 2 and input.shape[1] != 0):
        raise RuntimeError(f"Expected non-empty vector or matrix with optional 0-dim batch size, but got: "
                           f"{list(input.shape)}")
    c = input.shape[-1] if nd else 1
    if nd <= 1 and not (target.ndim <= 1 and target.numel() == c) or \
            nd == 2 and not (target.ndim == 2 and tuple(target.shape) == tuple(input.shape)):
        raise RuntimeError(f"inconsistent target size: {list(target.shape)} for input of size: "
                           f"{list(input.shape)}")
    if target.dtype.name != "int64":
        raise RuntimeError(f"expected scalar type Long but found {_scalar_type_name(target.dtype)}")
    v = target._value
    if not isinstance(v, jax.core.Tracer) and v.size:
        a = np.asarray(v)
        if ((a < -1) | (a >= c)).any():
            raise RuntimeError("argument #2 'target' is out of range")
    if input.dtype.name not in ("float32", "float64"):  # (its kernel takes float and double only)
        raise kernel_error("multilabel_margin_loss_forward_out_frame", input.dtype)
    return apply(_multilabel_margin_op, input, target, reduction=reduction)


# ================================ triplet_margin_with_distance_loss ===============================
def _pairwise_distance(x1: Tensor, x2: Tensor) -> Tensor:
    """``pairwise_distance`` with its defaults (PyTorch's default distance)."""
    return apply(_pairwise_op, x1, x2, p=2.0, eps=1e-6, keepdim=False)


def triplet_margin_with_distance_loss(anchor: Tensor, positive: Tensor, negative: Tensor, *,
                                      distance_function=None, margin: float = 1.0, swap: bool = False,
                                      reduction: str = "mean") -> Tensor:
    """``max(d(a, p) - d(a, n) + margin, 0)`` with any distance ``d`` (default
    ``pairwise_distance``), composed as PyTorch composes it (``ClampMinBackward0``, then the
    reduction's node)."""
    if reduction not in ("mean", "sum", "none"):
        raise ValueError(f"{reduction} is not a valid value for reduction")
    if margin <= 0:
        raise ValueError(f"margin must be greater than 0, got {margin}")
    a_dim, p_dim, n_dim = anchor.ndim, positive.ndim, negative.ndim
    if not (a_dim == p_dim and p_dim == n_dim):
        raise RuntimeError(f"The anchor, positive, and negative tensors are expected to have the same number "
                           f"of dimensions, but got: anchor {a_dim}D, positive {p_dim}D, and negative "
                           f"{n_dim}D inputs")
    if distance_function is None:
        distance_function = _pairwise_distance
    dist_pos = distance_function(anchor, positive)
    dist_neg = distance_function(anchor, negative)
    if swap:
        dist_neg = _minimum(dist_neg, distance_function(positive, negative))
    loss = (margin + dist_pos - dist_neg).clamp_min(0)
    if reduction == "sum":
        return loss.sum()
    if reduction == "mean":
        return loss.mean()
    return loss


# ================================ fractional_max_pool ==============================================
def _intervals(u, size, out, pool):
    """ATen's ``generate_intervals`` in the samples' precision: window starts
    ``int((i + u) * alpha) - int(u * alpha)``, ``alpha = (size - pool) / (out - 1)``, the last
    window at ``size - pool``; ``u`` (N, C) gives (N, C, out)."""
    i = jnp.arange(out)
    last = jnp.full(u.shape + (out,), size - pool, jnp.int32)
    if out <= 1:
        return last
    alpha = jnp.asarray(size - pool, u.dtype) / jnp.asarray(out - 1, u.dtype)
    u = u[..., None]
    start = ((i.astype(u.dtype) + u) * alpha).astype(jnp.int32) - (u * alpha).astype(jnp.int32)
    return jnp.where(i < out - 1, start, last)


def _fractional(x, u, *, kernel, output_size, sample_of):
    """Max over the windows the samples place (``val > max || isnan(val)``: ``_torch_pick``) and
    the flat index of each; dim ``d`` of the pooled dims takes sample ``sample_of[d]``."""
    if x.ndim == len(kernel) + 1:
        out, idx = _fractional(x[None], u, kernel=kernel, output_size=output_size, sample_of=sample_of)
        return out[0], idx[0]
    n, c = x.shape[:2]
    spatial = x.shape[2:]
    nd = len(kernel)
    shape = (n, c) + tuple(output_size)
    if 0 in shape:
        return jnp.zeros(shape, x.dtype), jnp.zeros(shape, jnp.int64)
    k = tuple(max(v, 1) for v in kernel)  # (a window of size 0 keeps its start: -inf there)
    flat = jnp.zeros((n, c) + (1,) * (2 * nd), jnp.int32)
    for d in range(nd):
        start = _intervals(u[:n, :, sample_of[d]], spatial[d], output_size[d], kernel[d])
        pos = start[..., None] + jnp.arange(k[d], dtype=jnp.int32)  # (N, C, out_d, k_d)
        expand = [1] * (2 * nd)
        expand[d], expand[nd + d] = output_size[d], k[d]
        flat = flat * spatial[d] + pos.reshape(n, c, *expand)
    flat = jnp.broadcast_to(flat, shape + k).reshape(n, c, -1, math.prod(k))
    if 0 in kernel:
        return jnp.full(shape, -jnp.inf, x.dtype), flat[..., 0].reshape(shape).astype(jnp.int64)
    vals = jnp.take_along_axis(x.reshape(n, c, -1), flat.reshape(n, c, -1), 2).reshape(flat.shape)
    am = _torch_pick(vals)[..., None]
    out = jnp.take_along_axis(vals, am, -1)[..., 0].reshape(shape)
    return out, jnp.take_along_axis(flat, am, -1)[..., 0].reshape(shape).astype(jnp.int64)


_fractional_max_pool2d = defop("fractional_max_pool2d", _fractional, "FractionalMaxPool2DBackward0",
                               diff=(0,), diff_outputs=(0,))
_fractional_max_pool3d = defop("fractional_max_pool3d", _fractional, "FractionalMaxPool3DBackward0",
                               diff=(0,), diff_outputs=(0,))


def _fractional_pool(nd, input, kernel_size, output_size, samples):
    name = "fractional_max_pool2d" if nd == 2 else "fractional_max_pool3d_out"
    what = "Ints" if nd == 2 else "three Ints"
    k = list(kernel_size) if isinstance(kernel_size, (tuple, list)) else [kernel_size] * nd
    o = list(output_size) if isinstance(output_size, (tuple, list)) else [output_size] * nd
    if len(k) != nd:
        raise RuntimeError(f"fractional_max_pool{nd}d: kernel_size must either be a single Int or tuple of "
                           f"{what}")
    if len(o) != nd:
        raise RuntimeError(f"fractional_max_pool{nd}d: output_size must either be a single Int or tuple of "
                           f"{what}")
    if input.ndim not in (nd + 1, nd + 2):
        raise RuntimeError(f"{name}(): Expected {nd + 1}D or {nd + 2}D tensor, but got: {list(input.shape)}")
    for i in range(1, input.ndim):
        if input.shape[i] <= 0:
            raise RuntimeError(f"{name}(): Expected input to have non-zero size for non-batch dimensions, "
                               f"but got{list(input.shape)} with dimension {i} being empty.")
    spatial = input.shape[input.ndim - nd:]
    words = ("time", "height", "width")[3 - nd:]
    for d in range(nd):
        if o[d] + k[d] - 1 > spatial[d]:
            raise RuntimeError(f"{name}(): pool {words[d]} {k[d]} too large relative to input {words[d]} "
                               f"{spatial[d]}")
    if samples.dtype is not input.dtype:
        raise RuntimeError("Expect _random_samples to have the same dtype as input")
    if samples.ndim != 3:
        raise RuntimeError(f"Expect _random_samples to have 3 dimensions, got {samples.ndim}")
    batch, channels = (1, input.shape[0]) if input.ndim == nd + 1 else input.shape[:2]
    if samples.shape[0] < batch:
        raise RuntimeError("Expect _random_samples.size(0) no less then input batch size.")
    if samples.shape[1] != channels:
        raise RuntimeError("Expect _random_samples.size(1) equals to input channel size.")
    if samples.shape[2] != nd:
        raise RuntimeError(f"Expect _random_samples.size(2) equals to {nd}; got {samples.shape[2]}.")
    # (ATen's samples per plane: [W, H] in 2-D, [T, H, W] in 3-D)
    sample_of = (1, 0) if nd == 2 else (0, 1, 2)
    return apply(_fractional_max_pool3d if nd == 3 else _fractional_max_pool2d, input, samples,
                 kernel=tuple(int(v) for v in k), output_size=tuple(int(v) for v in o), sample_of=sample_of)


def _fractional_args(nd, input, output_size, output_ratio, samples):
    if output_size is None and output_ratio is None:
        raise ValueError(f"fractional_max_pool{nd}d requires specifying either an output_size or an "
                         "output_ratio")
    if output_size is None:
        if nd == 2 and isinstance(output_ratio, (tuple, list)) and len(output_ratio) > 2:
            raise ValueError("fractional_max_pool2d requires output_ratio to either be a single Int or tuple "
                             "of Ints.")
        r = output_ratio if isinstance(output_ratio, (tuple, list)) else (output_ratio,) * nd
        output_size = [int(input.size(-nd + d) * r[d]) for d in range(nd)]
    if samples is None:  # PyTorch's torch.rand draw, in the input's dtype
        n_batch = 1 if input.ndim == nd + 1 else input.size(0)
        samples = Tensor._wrap(_sample.uniform(None, (n_batch, input.size(-nd - 1), nd), input.dtype.np))
    return output_size, samples


def fractional_max_pool2d_with_indices(input: Tensor, kernel_size, output_size=None, output_ratio=None,
                                       return_indices: bool = False, _random_samples: Tensor | None = None):
    """Fractional max pooling (Graham, 2014): windows of ``kernel_size`` at pseudo-random
    fractional strides, placed by ``_random_samples`` (drawn with ``rand`` as PyTorch draws them)
    (``FractionalMaxPool2DBackward0``); the output and the flat ``H*W`` indices."""
    output_size, samples = _fractional_args(2, input, output_size, output_ratio, _random_samples)
    return _fractional_pool(2, input, kernel_size, output_size, samples)


def fractional_max_pool2d(input: Tensor, kernel_size, output_size=None, output_ratio=None,
                          return_indices: bool = False, _random_samples: Tensor | None = None):
    """2-D fractional max pooling; with ``return_indices`` also the indices.

    >>> import funcgrad
    >>> import funcgrad.nn.functional as F
    >>> x = funcgrad.arange(25.).view(1, 1, 5, 5)
    >>> F.fractional_max_pool2d(x, 2, output_size=3, _random_samples=funcgrad.tensor([[[0.5, 0.0]]]))
    tensor([[[[ 6.,  8.,  9.],
              [11., 13., 14.],
              [21., 23., 24.]]]])
    """
    out, idx = fractional_max_pool2d_with_indices(input, kernel_size, output_size, output_ratio,
                                                  _random_samples=_random_samples)
    return (out, idx) if return_indices else out


def fractional_max_pool3d_with_indices(input: Tensor, kernel_size, output_size=None, output_ratio=None,
                                       return_indices: bool = False, _random_samples: Tensor | None = None):
    """3-D fractional max pooling (``FractionalMaxPool3DBackward0``): output and flat ``T*H*W`` indices."""
    output_size, samples = _fractional_args(3, input, output_size, output_ratio, _random_samples)
    return _fractional_pool(3, input, kernel_size, output_size, samples)


def fractional_max_pool3d(input: Tensor, kernel_size, output_size=None, output_ratio=None,
                          return_indices: bool = False, _random_samples: Tensor | None = None):
    """3-D fractional max pooling; with ``return_indices`` also the indices."""
    out, idx = fractional_max_pool3d_with_indices(input, kernel_size, output_size, output_ratio,
                                                  _random_samples=_random_samples)
    return (out, idx) if return_indices else out


# ================================ the *_with_indices and deprecated upsample forms ================
def max_pool1d_with_indices(input: Tensor, kernel_size, stride=None, padding=0, dilation=1,
                            ceil_mode: bool = False, return_indices: bool = False):
    """``max_pool1d`` and its indices, whatever ``return_indices`` says (PyTorch's spelling)."""
    return _conv.max_pool1d(input, kernel_size, stride, padding, dilation, ceil_mode, True)


def max_pool2d_with_indices(input: Tensor, kernel_size, stride=None, padding=0, dilation=1,
                            ceil_mode: bool = False, return_indices: bool = False):
    """``max_pool2d`` and its indices."""
    return _conv.max_pool2d(input, kernel_size, stride, padding, dilation, ceil_mode, True)


def max_pool3d_with_indices(input: Tensor, kernel_size, stride=None, padding=0, dilation=1,
                            ceil_mode: bool = False, return_indices: bool = False):
    """``max_pool3d`` and its indices."""
    return _conv.max_pool3d(input, kernel_size, stride, padding, dilation, ceil_mode, True)


def adaptive_max_pool1d_with_indices(input: Tensor, output_size, return_indices: bool = False):
    """``adaptive_max_pool1d`` and its indices."""
    return _conv.adaptive_max_pool1d(input, output_size, True)


def adaptive_max_pool2d_with_indices(input: Tensor, output_size, return_indices: bool = False):
    """``adaptive_max_pool2d`` and its indices."""
    return _conv.adaptive_max_pool2d(input, output_size, True)


def upsample_nearest(input: Tensor, size=None, scale_factor=None) -> Tensor:
    """Deprecated: ``interpolate(mode="nearest")`` with PyTorch's warning."""
    warnings.warn("`nn.functional.upsample_nearest` is deprecated. Use `nn.functional.interpolate` instead.",
                  stacklevel=2)
    return _conv.interpolate(input, size, scale_factor, mode="nearest")


def upsample_bilinear(input: Tensor, size=None, scale_factor=None) -> Tensor:
    """Deprecated: ``interpolate(mode="bilinear", align_corners=True)`` with PyTorch's warning."""
    warnings.warn("`nn.functional.upsample_bilinear` is deprecated. Use `nn.functional.interpolate` instead.",
                  stacklevel=2)
    return _conv.interpolate(input, size, scale_factor, mode="bilinear", align_corners=True)


# ================================ CrossMapLRN2d ===================================================
# PyTorch's CrossMapLRN2d is a Python autograd.Function (torch/nn/modules/_functions.py) with a
# hand-written backward that is not the derivative of its forward: the forward's running window
# never drops channel 0, and the backward's window is shifted. Both are reproduced as they are.
def _lrn_windows(c: int, size: int):
    """``(F, B)``, (C, C) 0/1 matrices: ``F[i, j]`` whether channel i's scale sums channel j's
    square (the forward's add-next / drop-previous loop run on index sets), ``B[i, j]`` whether
    channel i's gradient sums channel j's ratio (the backward's padded window)."""
    pre = int((size - 1) / 2 + 1)
    fwd = np.zeros((c, c))
    fwd[0, :min(pre, c)] = 1
    for ch in range(1, c):
        fwd[ch] = fwd[ch - 1]
        if ch < c - pre + 1:
            fwd[ch, ch + pre - 1] += 1
        if ch > pre:
            fwd[ch, ch - pre] -= 1
    inv = int(size - (size - 1) / 2)
    j = np.arange(c)
    bwd = ((j[None] >= j[:, None] - inv) & (j[None] <= j[:, None] + size - 1 - inv)).astype(np.float64)
    return fwd, bwd


def _lrn_scale(x, size, alpha, k):
    fwd = jnp.asarray(_lrn_windows(x.shape[1], size)[0], x.dtype)
    s = jnp.einsum("cj,njhw->nchw", fwd, x * x, precision=jax.lax.Precision.HIGHEST)
    return s * jnp.asarray(alpha / size, x.dtype) + jnp.asarray(k, x.dtype)


def _cross_map_lrn2d_fn(x, *, size, alpha, beta, k):
    return jnp.power(_lrn_scale(x, size, alpha, k), jnp.asarray(-beta, x.dtype)) * x


def _cross_map_lrn2d_vjp(primals, g, *, grad_mode, size, alpha, beta, k):
    """PyTorch's CrossMapLRN2d.backward: ``scale**-beta * grad - 2 alpha beta / size * input *
    accum``, ``accum`` the sums of ``grad * output / scale`` over its shifted window."""
    x, = primals
    c, inv = x.shape[1], int(size - (size - 1) / 2)
    if inv + c > c + size - 1:  # (its narrow of the padded ratios, for size 1)
        raise RuntimeError(f"start ({inv}) + length ({c}) exceeds dimension size ({c + size - 1}).")
    if grad_mode and x.shape[0]:  # its torch.mul(..., out=) of the saved output, which requires grad
        raise RuntimeError("mul(): functions with out=... arguments don't support automatic differentiation, "
                           "but one of the arguments requires grad.")
    s = _lrn_scale(x, size, alpha, k)
    p = jnp.power(s, jnp.asarray(-beta, x.dtype))
    bwd = jnp.asarray(_lrn_windows(c, size)[1], x.dtype)
    accum = jnp.einsum("cj,njhw->nchw", bwd, g * (p * x) / s, precision=jax.lax.Precision.HIGHEST)
    return (p * g - jnp.asarray(2 * alpha * beta / size, x.dtype) * x * accum,)


_cross_map_lrn2d = defop("cross_map_lrn2d", _cross_map_lrn2d_fn, "CrossMapLRN2dBackward",
                         vjp=_cross_map_lrn2d_vjp, saves_result=True)


def cross_map_lrn2d(input: Tensor, size: int, alpha: float = 1e-4, beta: float = 0.75,
                    k: float = 1) -> Tensor:
    """``nn.CrossMapLRN2d``'s computation (PyTorch has no functional form): ``input`` divided by
    ``(k + alpha / size * sum of squares over neighbouring channels) ** beta``, with PyTorch's
    legacy windows and its hand-written backward (``CrossMapLRN2dBackward``)."""
    if input.dim() != 4:
        raise ValueError(f"CrossMapLRN2d: Expected input to be 4D, got {input.dim()}D instead.")
    if input.shape[1] == 0:
        raise IndexError(f"select(): index 0 out of range for tensor of size {list(input.shape)} at "
                         f"dimension 1")
    if input.dtype._kind in "bi":  # its in-place pow / mul_ into a tensor of input's dtype
        src = "Long" if input.dtype._kind == "b" else "Float"
        raise RuntimeError(f"result type {src} can't be cast to the desired output type "
                           f"{_scalar_type_name(input.dtype)}")
    return apply(_cross_map_lrn2d, input, size=int(size), alpha=float(alpha), beta=float(beta), k=float(k))
