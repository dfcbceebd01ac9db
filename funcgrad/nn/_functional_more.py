"""More of ``funcgrad.nn.functional`` (issue 18): ``rms_norm``, ``hinge_embedding_loss``,
``multilabel_soft_margin_loss``, ``lp_pool1d``/``lp_pool2d``/``lp_pool3d`` (PyTorch's signatures, formulas,
node names and messages)."""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np

from .._broadcast import infer_size
from .._dispatch import apply
from .._ops import nn_more as _k
from .._ops.reduce import mean as _mean, sum as _sum
from .._tensor import Tensor
from ._functional_conv import avg_pool1d, avg_pool2d, avg_pool3d, max_pool1d, max_pool2d, max_pool3d
from ._functional_loss import _reduction

__all__ = ["rms_norm", "hinge_embedding_loss", "multilabel_soft_margin_loss", "lp_pool1d", "lp_pool2d",
           "lp_pool3d", "embedding_bag"]


def rms_norm(input: Tensor, normalized_shape, weight: Tensor | None = None, eps: float | None = None) -> Tensor:
    """``x / sqrt(mean(x²) + eps) * weight`` over the trailing ``normalized_shape`` dims
    (``eps`` defaults to the dtype's machine epsilon, as in PyTorch).

    >>> import funcgrad
    >>> funcgrad.nn.functional.rms_norm(funcgrad.tensor([[0.0, 1.0, 2.0, 3.0]]), (4,))
    tensor([[0.0000, 0.5345, 1.0690, 1.6036]])
    """
    if isinstance(normalized_shape, int):
        raise TypeError("rms_norm(): argument 'normalized_shape' (position 2) must be tuple of ints, not int")
    shape = tuple(normalized_shape)
    if len(shape) > input.ndim or tuple(input.shape[input.ndim - len(shape):]) != shape:
        raise RuntimeError(f"Given normalized_shape={list(shape)}, expected input with shape "
                           f"[*, {', '.join(map(str, shape))}], but got input of size{list(input.shape)}")
    if eps is None:
        eps = float(np.finfo(input.dtype.np).eps) if input.dtype.is_floating_point else 1.1920928955078125e-07
    return apply(_k.rms_norm, input, weight, n=len(shape), eps=float(eps))


def _reduce(loss: Tensor, reduction: str) -> Tensor:
    return _mean(loss) if reduction == "mean" else _sum(loss) if reduction == "sum" else loss


def hinge_embedding_loss(input: Tensor, target: Tensor, margin: float = 1.0, size_average=None, reduce=None,
                         reduction: str = "mean") -> Tensor:
    """``x`` where ``y = 1``, ``max(0, margin - x)`` where ``y = -1``, then reduced."""
    reduction = _reduction(size_average, reduce, reduction)
    _target_first(target, input)
    return _reduce(apply(_k.hinge_embedding, input, target, margin=float(margin)), reduction)


def multilabel_soft_margin_loss(input: Tensor, target: Tensor, weight: Tensor | None = None, size_average=None,
                                reduce=None, reduction: str = "mean") -> Tensor:
    """Per-sample mean over classes of the logistic loss, then reduced over samples."""
    reduction = _reduction(size_average, reduce, reduction)
    _target_first(target, input)
    return _reduce(apply(_k.multilabel_soft_margin, input, target, weight), reduction)


def _target_first(target: Tensor, input: Tensor) -> None:
    """PyTorch's broadcasting error for formulas that take ``target`` first (``target * f(input)``,
    ``where(target != 1, f(input), zeros)``)."""
    if target.shape != input.shape:
        infer_size(target.shape, input.shape)


def _lp_pool(pool, max_pool, input, norm_type, kernel_size, stride, ceil_mode, area):
    if isinstance(norm_type, (int, float)) and math.isinf(norm_type):  # PyTorch's max-pool forms
        if norm_type > 0:
            return max_pool(input.abs(), kernel_size, stride, 0, 1, ceil_mode)
        return -max_pool(-input.abs(), kernel_size, stride, 0, 1, ceil_mode)
    out = pool(input.pow(norm_type), kernel_size, stride, 0, ceil_mode)
    return (out.sign() * out.abs().relu()).mul(area).pow(1.0 / norm_type)


def lp_pool1d(input: Tensor, norm_type: float, kernel_size: int, stride=None, ceil_mode: bool = False) -> Tensor:
    """Power-average pooling: ``(sum over the window of x^p)^(1/p)`` (``PowBackward0``)."""
    return _lp_pool(avg_pool1d, max_pool1d, input, norm_type, kernel_size, stride, ceil_mode, kernel_size)


def lp_pool2d(input: Tensor, norm_type: float, kernel_size, stride=None, ceil_mode: bool = False) -> Tensor:
    """2-D power-average pooling (``PowBackward0``)."""
    kh, kw = (kernel_size, kernel_size) if isinstance(kernel_size, int) else kernel_size
    return _lp_pool(avg_pool2d, max_pool2d, input, norm_type, kernel_size, stride, ceil_mode, kh * kw)


def lp_pool3d(input: Tensor, norm_type: float, kernel_size, stride=None, ceil_mode: bool = False) -> Tensor:
    """3-D power-average pooling (``PowBackward0``).

    >>> import funcgrad
    >>> funcgrad.nn.functional.lp_pool3d(funcgrad.ones(1, 1, 2, 2, 2), 2, 2)
    tensor([[[[[2.8284]]]]])
    """
    kd, kh, kw = (kernel_size,) * 3 if isinstance(kernel_size, int) else kernel_size
    return _lp_pool(avg_pool3d, max_pool3d, input, norm_type, kernel_size, stride, ceil_mode, kd * kh * kw)


def embedding_bag(input: Tensor, weight: Tensor, offsets: Tensor | None = None, max_norm=None,
                  norm_type: float = 2, scale_grad_by_freq: bool = False, mode: str = "mean",
                  sparse: bool = False, per_sample_weights: Tensor | None = None,
                  include_last_offset: bool = False, padding_idx: int | None = None) -> Tensor:
    """Sums, means or maxima of bags of embeddings: the rows of a 2-D ``input``, or the segments
    of a 1-D ``input`` that ``offsets`` start (``EmbeddingBagBackward0``; bags are found eagerly).
    """
    if mode not in ("sum", "mean", "max"):
        raise ValueError(f"mode has to be one of sum, mean or max, but got {mode}")
    if per_sample_weights is not None and mode != "sum":
        raise NotImplementedError(
            f"embedding_bag: per_sample_weights was not None. per_sample_weights is only supported for "
            f"mode='sum' (got mode='{mode}'). Please open a feature request on GitHub.")
    if input.ndim == 2:
        if offsets is not None:
            raise ValueError("if input is 2D, then offsets has to be None, as input is treated is a "
                             "mini-batch of fixed length sequences. However, found offsets of type "
                             f"{type(offsets).__name__}")
        nbags, per = input.shape
        seg = np.repeat(np.arange(nbags), per)
        flat = input.reshape(-1)
        psw = per_sample_weights.reshape(-1) if per_sample_weights is not None else None
    elif input.ndim == 1:
        if offsets is None:
            raise ValueError("offsets has to be a 1D Tensor but got None")
        if offsets.ndim != 1:
            raise ValueError("offsets has to be a 1D Tensor")
        off = np.asarray(offsets._concrete("embedding_bag offsets")).astype(np.int64)
        n = input.shape[0]
        if include_last_offset:
            off = off[:-1]
        nbags = len(off)
        seg = np.searchsorted(off, np.arange(n), side="right") - 1
        flat, psw = input, per_sample_weights
    else:
        raise ValueError(f"input has to be 1D or 2D Tensor, but got Tensor of dimension {input.ndim}")
    fv = flat._value
    if not isinstance(fv, jax.core.Tracer) and fv.size:
        a = np.asarray(fv)
        bad = (a < 0) | (a >= weight.shape[0])
        if bad.any():
            raise RuntimeError("embedding_bag: Expected idx >= 0 && idx < num_embeddings but found idx to be "
                               f"{int(a[bad].flat[0])}")
    if padding_idx is not None and padding_idx < 0:
        padding_idx += weight.shape[0]
    seg_t = Tensor._wrap(jnp.asarray(seg, jnp.int32))
    return apply(_k.embedding_bag, weight, flat, seg_t, psw, mode=mode, nbags=int(nbags),
                 padding_idx=padding_idx)
