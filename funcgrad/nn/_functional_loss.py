"""Loss functions of ``funcgrad.nn.functional`` (PyTorch's signatures, formulas and messages).

The kernels are declared once in ``funcgrad/_ops/nn_loss.py``; these frontends check the
arguments (with PyTorch's errors and warnings) before any kernel runs, so a failed call leaves
nothing changed, then ``apply`` the op.
"""

from __future__ import annotations

import math
import warnings

import jax
import jax.numpy as jnp
import numpy as np

from .. import _meta
from .._factories import tensor
from .._dispatch import _amp_hook, _dual, apply
from .._ops import nn as _nn, nn_loss as _k
from .._ops.reduce import mean as _mean, sum as _sum
from .._broadcast import broadcast_shapes, check_inplace, infer_size
from .._tensor import Size, Tensor, _scalar_type_name

__all__ = [
    "mse_loss", "l1_loss", "smooth_l1_loss", "huber_loss", "cross_entropy", "nll_loss",
    "binary_cross_entropy", "binary_cross_entropy_with_logits", "kl_div", "cosine_embedding_loss",
    "margin_ranking_loss", "triplet_margin_loss", "soft_margin_loss", "multi_margin_loss",
    "gaussian_nll_loss", "poisson_nll_loss",
]

_REDUCTIONS = ("mean", "sum", "none")


# ---- argument checks ------------------------------------------------------------------------------
def _reduction(size_average, reduce, reduction: str) -> str:
    """PyTorch's legacy ``size_average``/``reduce`` arguments, then the ``reduction`` check."""
    if size_average is not None or reduce is not None:
        warnings.warn("size_average and reduce args will be deprecated, please use "
                      f"reduction='{_legacy(size_average, reduce)}' instead.", UserWarning,
                      stacklevel=3)
        reduction = _legacy(size_average, reduce)
    if reduction not in _REDUCTIONS:
        raise ValueError(f"{reduction} is not a valid value for reduction")
    return reduction


def _legacy(size_average, reduce) -> str:
    size_average = True if size_average is None else size_average
    reduce = True if reduce is None else reduce
    if not reduce:
        return "none"
    return "mean" if size_average else "sum"


def _size(shape) -> str:
    return repr(Size(shape))


def _broadcast_check(input, target, warn=True):
    """PyTorch's warning for a target of another size, and its broadcasting error."""
    if tuple(target.shape) != tuple(input.shape):
        if warn:
            warnings.warn(f"Using a target size ({_size(target.shape)}) that is different to the input "
                          f"size ({_size(input.shape)}). This will likely lead to incorrect results due "
                          f"to broadcasting. Please ensure they have the same size.", UserWarning,
                          stacklevel=3)
        infer_size(input.shape, target.shape)  # (PyTorch: broadcast_tensors(input, target))


def _weight_check(input, weight) -> None:
    """mse/l1/huber's ``weight``: PyTorch weighs the loss only with input's own size."""
    if weight is not None and tuple(weight.shape) != tuple(input.shape):
        raise ValueError("Weights and input must have the same size.")


def _as_tensor(x, like):
    if isinstance(x, Tensor):
        return x
    return tensor(x, dtype=like.dtype)


def _concrete(t: Tensor) -> bool:
    """Whether ``t``'s values can be read (not while traced, not on the meta device)."""
    v = t._value
    return not isinstance(v, jax.core.Tracer) and not isinstance(v, _meta.MetaArray)


# ---- regression ---------------------------------------------------------------------------------
def mse_loss(input: Tensor, target: Tensor, size_average=None, reduce=None, reduction: str = "mean",
             weight=None) -> Tensor:
    """Mean squared error ``(input - target)²`` (``MseLossBackward0``).

    >>> import funcgrad
    >>> import funcgrad.nn.functional as F
    >>> F.mse_loss(funcgrad.tensor([1., 2.]), funcgrad.tensor([1., 4.]))
    tensor(2.)
    """
    reduction = _reduction(size_average, reduce, reduction)
    _broadcast_check(input, target)
    _weight_check(input, weight)
    if weight is not None:
        return _weighted(apply(_k.mse_loss, input, target, reduction="none") * weight, reduction)
    return apply(_k.mse_loss, input, target, reduction=reduction)


def _weighted(loss, reduction):
    if reduction == "mean":
        return _mean(loss)
    if reduction == "sum":
        return _sum(loss)
    return loss


def l1_loss(input: Tensor, target: Tensor, size_average=None, reduce=None, reduction: str = "mean",
            weight=None) -> Tensor:
    """Mean absolute error; composed as PyTorch does (``MeanBackward0`` / ``SumBackward0`` /
    ``AbsBackward0``).

    >>> import funcgrad
    >>> import funcgrad.nn.functional as F
    >>> F.l1_loss(funcgrad.tensor([1., 2.]), funcgrad.tensor([1., 4.]))
    tensor(1.)
    """
    reduction = _reduction(size_average, reduce, reduction)
    _broadcast_check(input, target)
    _weight_check(input, weight)
    loss = (input - target).abs()
    if weight is not None:
        loss = loss * weight
    return _weighted(loss, reduction)


def smooth_l1_loss(input: Tensor, target: Tensor, size_average=None, reduce=None,
                   reduction: str = "mean", beta: float = 1.0) -> Tensor:
    """Smooth L1: ``0.5 d²/beta`` for ``|d| < beta``, else ``|d| - 0.5 beta``
    (``SmoothL1LossBackward0``)."""
    reduction = _reduction(size_average, reduce, reduction)
    if beta < 0:
        raise RuntimeError("smooth_l1_loss does not support negative values for beta.")
    _broadcast_check(input, target)
    return apply(_k.smooth_l1_loss, input, target, reduction=reduction, beta=float(beta))


def huber_loss(input: Tensor, target: Tensor, reduction: str = "mean", delta: float = 1.0,
               weight=None) -> Tensor:
    """Huber loss with threshold ``delta`` (``HuberLossBackward0``)."""
    reduction = _reduction(None, None, reduction)
    if delta <= 0:
        raise RuntimeError("huber_loss does not support non-positive values for delta.")
    _broadcast_check(input, target)
    _weight_check(input, weight)
    if weight is not None:
        loss = apply(_k.huber_loss, input, target, reduction="none", delta=float(delta))
        return _weighted(loss * weight, reduction)
    return apply(_k.huber_loss, input, target, reduction=reduction, delta=float(delta))


def soft_margin_loss(input: Tensor, target: Tensor, size_average=None, reduce=None,
                     reduction: str = "mean") -> Tensor:
    """``log(1 + exp(-y x))`` (``SoftMarginLossBackward0``)."""
    reduction = _reduction(size_average, reduce, reduction)
    _broadcast_check(input, target, warn=False)
    return apply(_k.soft_margin_loss, input, target, reduction=reduction)


# ---- binary cross entropy ---------------------------------------------------------------------------
def binary_cross_entropy(input: Tensor, target: Tensor, weight: Tensor | None = None,
                         size_average=None, reduce=None, reduction: str = "mean") -> Tensor:
    """BCE on probabilities, each log clamped to ``>= -100`` (``BinaryCrossEntropyBackward0``).

    >>> import funcgrad
    >>> import funcgrad.nn.functional as F
    >>> F.binary_cross_entropy(funcgrad.tensor([0.5, 1.0]), funcgrad.tensor([1., 0.]))
    tensor(50.3466)
    """
    reduction = _reduction(size_average, reduce, reduction)
    if tuple(target.shape) != tuple(input.shape):
        raise ValueError(f"Using a target size ({_size(target.shape)}) that is different to the input "
                         f"size ({_size(input.shape)}) is deprecated. Please ensure they have the same "
                         f"size.")
    if target.dtype != input.dtype:
        raise RuntimeError(f"Found dtype {_scalar_type_name(target.dtype)} but expected "
                           f"{_scalar_type_name(input.dtype)}")
    if weight is not None:  # (PyTorch: broadcast_shapes(target, weight), then its kernel's weight mul_)
        check_inplace(input.shape, (broadcast_shapes(target.shape, weight.shape),))
    v = input._value
    if _concrete(input) and v.size and bool(_outside_unit(v)):
        raise RuntimeError("all elements of input should be between 0 and 1")
    return apply(_k.binary_cross_entropy, input, target, weight, reduction=reduction)


@jax.jit
def _outside_unit(v):  # one program (the check's five operations one by one compiled five)
    return jnp.any((v < 0) | (v > 1) | jnp.isnan(v))


def binary_cross_entropy_with_logits(input: Tensor, target: Tensor, weight: Tensor | None = None,
                                     size_average=None, reduce=None, reduction: str = "mean",
                                     pos_weight: Tensor | None = None) -> Tensor:
    """BCE on logits in the stable softplus form, with ``pos_weight`` for positives
    (``BinaryCrossEntropyWithLogitsBackward0``).

    >>> import funcgrad
    >>> import funcgrad.nn.functional as F
    >>> F.binary_cross_entropy_with_logits(funcgrad.tensor([0., 100.]), funcgrad.tensor([1., 1.]))
    tensor(0.3466)
    """
    reduction = _reduction(size_average, reduce, reduction)
    if tuple(target.shape) != tuple(input.shape):
        raise ValueError(f"Target size ({_size(target.shape)}) must be the same as input size "
                         f"({_size(input.shape)})")
    if not target.dtype.is_floating_point and input.dtype.is_floating_point:
        raise RuntimeError(f"result type {_scalar_type_name(input.dtype)} can't be cast to the desired "
                           f"output type {_scalar_type_name(target.dtype)}")
    # ATen: log_sigmoid(input).mul_((pos_weight - 1).mul(target).add_(1)), then loss.mul_(weight)
    if pos_weight is not None:
        check_inplace(input.shape, (infer_size(pos_weight.shape, target.shape),))
    if weight is not None:
        check_inplace(input.shape, (weight.shape,))
    return apply(_k.binary_cross_entropy_with_logits, input, target, weight, pos_weight,
                 reduction=reduction)


# ---- nll / cross entropy ------------------------------------------------------------------------------
def _check_class_target(input, target, weight, ignore_index, fname):
    # (shapes read once: every Tensor property call is a Python call on this per-step path)
    tv = target._value
    if tv.dtype.name not in ("int64", "uint8"):
        raise RuntimeError(f"expected target dtype to be Long or Byte, but got "
                           f"{_scalar_type_name(target.dtype)}")
    ish, tsh = tuple(input.shape), tuple(tv.shape)
    if len(ish) < 1:
        raise ValueError(f"Expected 1 or more dimensions (got {len(ish)})")
    nll = fname == "nll_loss_forward"
    if nll and len(ish) >= 3:
        return _check_spatial_target(input, target, weight, ignore_index, ish, tsh)
    if len(ish) == 1:
        if len(tsh) > 1:
            raise RuntimeError("0D or 1D target tensor expected, multi-target not supported")
        n_classes = ish[0]
    else:
        if len(ish) == 2 and len(tsh) > 1:
            if tsh[0] != ish[0]:
                raise ValueError(f"Expected input batch_size ({ish[0]}) to match target "
                                 f"batch_size ({tsh[0]}).")
            raise RuntimeError("0D or 1D target tensor expected, multi-target not supported")
        if len(tsh) == 0 or ish[0] != tsh[0]:
            tb = tsh[0] if tsh else 1
            raise ValueError(f"Expected input batch_size ({ish[0]}) to match target "
                             f"batch_size ({tb}).")
        want = (ish[0],) + ish[2:]
        if tsh != want:
            raise RuntimeError(f"Expected target size [{', '.join(map(str, want))}], got "
                               f"[{', '.join(map(str, tsh))}]")
        n_classes = ish[1]
    if weight is not None and (weight.ndim != 1 or weight.shape[0] != n_classes):
        raise RuntimeError(f"weight tensor should be defined either for all {n_classes} classes or no "
                           f"classes but got weight tensor of shape: "
                           f"[{', '.join(map(str, weight.shape))}]")
    if weight is not None and weight.requires_grad:
        raise RuntimeError(f"The function '{fname}' is not differentiable with respect to argument "
                           f"'weight'. This input cannot have requires_grad True.")
    if nll:
        _check_weight_dtype(input, weight)
    _check_bounds(target, tv, tsh, n_classes, ignore_index)


def _check_bounds(target, tv, tsh, n_classes, ignore_index):
    if _concrete(target) and math.prod(tsh):
        t = np.asarray(tv)
        if t.min() < 0 or t.max() >= n_classes:  # (all in range: nothing more to look at)
            bad = (t != ignore_index) & ((t < 0) | (t >= n_classes))
            if bad.any():
                raise IndexError(f"Target {int(t[bad].flat[0])} is out of bounds.")


def _check_weight_dtype(input, weight):
    """nll_loss's kernels read the weight in the input's dtype (autocast casts both first)."""
    if weight is not None and weight.dtype is not input.dtype and _amp_hook[0] is None:
        raise RuntimeError(f"expected scalar type {_scalar_type_name(input.dtype)} but found "
                           f"{_scalar_type_name(weight.dtype)}")


def _dims(shape) -> str:
    return f"[{', '.join(map(str, shape))}]"


def _check_spatial_target(input, target, weight, ignore_index, ish, tsh):
    """PyTorch's nll_loss_nd and nll_loss2d checks, in their order, for an (N, C, d1, ...) input."""
    if len(tsh) == 0 or ish[0] != tsh[0]:
        raise ValueError(f"Expected input batch_size ({ish[0]}) to match target batch_size "
                         f"({tsh[0] if tsh else 1}).")
    if len(ish) != 4 and tsh[1:] != ish[2:]:
        raise RuntimeError(f"Expected target size {_dims((ish[0],) + ish[2:])}, got {_dims(tsh)}")
    if weight is not None and weight.requires_grad:
        raise RuntimeError("The function 'nll_loss2d_forward' is not differentiable with respect to argument "
                           "'weight'. This input cannot have requires_grad True.")
    if len(ish) == 4 and len(tsh) != 3:
        raise RuntimeError(f"only batches of spatial targets supported (3D tensors) but got targets of "
                           f"dimension: {len(tsh)}")
    if weight is not None and weight.numel() != ish[1]:
        raise RuntimeError("weight tensor should be defined either for all or no classes")
    if len(ish) == 4 and (ish[0], ish[2], ish[3]) != tsh:
        raise RuntimeError(f"size mismatch (got input: {_dims(ish)} , target: {_dims(tsh)}")
    _check_weight_dtype(input, weight)
    if target._value.dtype == np.uint8:
        raise RuntimeError("expected scalar type Long but found Byte")
    _check_bounds(target, target._value, tsh, ish[1], ignore_index)


def _nll_nd(logp, target, weight, reduction, ignore_index):
    """PyTorch's nll_loss_nd on an (N, C, d1, ...) input: ``nll_loss2d`` (``NllLoss2DBackward0``)
    of an (N, C, H, W) input, of any other one viewed as (N, C, 1, -1), the unreduced loss then
    viewed back (``ViewBackward0``)."""
    if weight is not None and weight.ndim != 1:  # (any shape of C elements: it is read flat)
        weight = weight.reshape(-1)
    if logp.ndim == 4:
        return apply(_k.nll_loss2d, logp, target, weight, reduction=reduction, ignore_index=ignore_index)
    n, c = logp.shape[:2]
    out_size = (n,) + tuple(logp.shape[2:])
    x = logp.reshape(n, c, 1, -1) if logp.numel() else logp.reshape(n, c, 0, 0)
    t = target.reshape(n, 1, -1) if target.numel() else target.reshape(n, 0, 0)
    out = apply(_k.nll_loss2d, x, t, weight, reduction=reduction, ignore_index=ignore_index)
    return out if reduction != "none" else out.view(out_size)


def _batched(input, target):
    """(C,) input with a () target is a batch of one; returns (input, target, unbatched?)."""
    if input.ndim == 1:
        return input.unsqueeze(0), target.reshape(1), True
    return input, target, False


def nll_loss(input: Tensor, target: Tensor, weight: Tensor | None = None, size_average=None,
             ignore_index: int = -100, reduce=None, reduction: str = "mean") -> Tensor:
    """Negative log likelihood of class indices on log-probabilities ``(N, C, d1, ...)``
    (``NllLossBackward0``); the weighted mean divides by the summed weights of non-ignored targets."""
    reduction = _reduction(size_average, reduce, reduction)
    _check_class_target(input, target, weight, ignore_index, "nll_loss_forward")
    if input.ndim >= 3:
        return _nll_nd(input, target, weight, reduction, int(ignore_index))
    x, t, unb = _batched(input, target)
    out = apply(_k.nll_loss, x, t, weight, reduction=reduction, ignore_index=int(ignore_index))
    return out.squeeze(0) if unb and reduction == "none" else out


def cross_entropy(input: Tensor, target: Tensor, weight: Tensor | None = None, size_average=None,
                  ignore_index: int = -100, reduce=None, reduction: str = "mean",
                  label_smoothing: float = 0.0) -> Tensor:
    """Cross entropy of logits ``(N, C, d1, ...)`` against class indices ``(N, d1, ...)`` or class
    probabilities (same shape as the input), PyTorch's formulas incl. ``weight``, ``ignore_index``
    and ``label_smoothing``. The graph is PyTorch's: ``NllLossBackward0`` over
    ``LogSoftmaxBackward0`` for class indices.

    >>> import funcgrad
    >>> import funcgrad.nn.functional as F
    >>> x = funcgrad.tensor([[2.0, 0.0, 0.0]], requires_grad=True)
    >>> loss = F.cross_entropy(x, funcgrad.tensor([0]))
    >>> loss
    tensor(0.2395, grad_fn=<NllLossBackward0>)
    >>> loss.grad_fn.next_functions[0][0].name()
    'LogSoftmaxBackward0'
    """
    reduction = _reduction(size_average, reduce, reduction)
    ls = float(label_smoothing)
    if not 0.0 <= ls <= 1.0:
        raise RuntimeError(f"label_smoothing must be between 0.0 and 1.0. Got: {label_smoothing:g}")
    if target.dtype.is_floating_point and tuple(target.shape) == tuple(input.shape):
        n_classes = input.shape[1] if input.ndim > 1 else input.shape[0]
        if weight is not None and (weight.ndim != 1 or weight.shape[0] != n_classes):
            raise RuntimeError(f"weight tensor should be defined either for all {n_classes} classes or "
                               f"no classes but got weight tensor of shape: "
                               f"[{', '.join(map(str, weight.shape))}]")
        x, p = (input.unsqueeze(0), target.unsqueeze(0)) if input.ndim == 1 else (input, target)
        op = _k.cross_entropy_prob_mean if reduction == "mean" else _k.cross_entropy_prob
        out = apply(op, x, p, weight, reduction=reduction, label_smoothing=ls)
        return out.squeeze(0) if input.ndim == 1 and reduction == "none" else out
    _check_class_target(input, target, weight, ignore_index, "nll_loss_forward")
    x, t, unb = _batched(input, target)
    if ls > 0:
        out = apply(_k.cross_entropy_smooth, x, t, weight, reduction=reduction,
                    ignore_index=int(ignore_index), label_smoothing=ls)
    elif input.ndim >= 3 and (input.ndim != 4 or weight is not None and weight.ndim != 1):
        # PyTorch's graph: nll_loss2d of log_softmax viewed as (N, C, 1, -1) (see _nll_nd)
        return _nll_nd(_nn.log_softmax(x, 1), t, weight, reduction, int(ignore_index))
    elif _amp_hook[0] is not None or _dual[0] is not None:  # autocast: both ops through dispatch,
        # each cast by its policy; a forward-AD level: each gives its result a tangent
        lp = _nn.log_softmax(x, 1)
        if input.ndim >= 3:
            return _nll_nd(lp, t, weight, reduction, int(ignore_index))
        out = apply(_k.nll_loss, lp, t, weight, reduction=reduction, ignore_index=int(ignore_index))
    else:  # PyTorch's graph: NllLossBackward0 (NllLoss2DBackward0 for (N, C, H, W)) ->
        # LogSoftmaxBackward0, from one forward kernel
        out = _k.cross_entropy_indices(x, t, weight, reduction, int(ignore_index),
                                       _k.nll_loss2d if input.ndim == 4 else _k.nll_loss)
    return out.squeeze(0) if unb and reduction == "none" else out


def multi_margin_loss(input: Tensor, target: Tensor, p: int = 1, margin: float = 1.0,
                      weight: Tensor | None = None, size_average=None, reduce=None,
                      reduction: str = "mean") -> Tensor:
    """Multi-class hinge loss (``MultiMarginLossBackward0``)."""
    reduction = _reduction(size_average, reduce, reduction)
    if p not in (1, 2):
        raise ValueError("only p == 1 and p == 2 supported")
    _check_class_target(input, target, weight, -(2 ** 62), "multi_margin_loss")
    x, t, unb = _batched(input, target)
    out = apply(_k.multi_margin_loss, x, t, weight, p=int(p), margin=float(margin), reduction=reduction)
    return out.squeeze(0) if unb and reduction == "none" else out


# ---- composite losses --------------------------------------------------------------------------------
def kl_div(input: Tensor, target: Tensor, size_average=None, reduce=None, reduction: str = "mean",
           log_target: bool = False) -> Tensor:
    """KL divergence ``target * (log target - input)`` with ``input`` in log space; ``reduction=
    'batchmean'`` divides the sum by the batch size (the mathematical KL), ``'mean'`` warns as
    PyTorch does.

    >>> import funcgrad
    >>> import funcgrad.nn.functional as F
    >>> F.kl_div(funcgrad.tensor([[-1.0, -0.5]]), funcgrad.tensor([[0.5, 0.5]]), reduction="batchmean")
    tensor(0.0569)
    """
    if size_average is not None or reduce is not None:
        reduction = _reduction(size_average, reduce, reduction)
    elif reduction == "mean":
        warnings.warn("reduction: 'mean' divides the total loss by both the batch size and the support "
                      "size.'batchmean' divides only by the batch size, and aligns with the KL div math "
                      "definition.'mean' will be changed to behave the same as 'batchmean' in the next "
                      "major release.", UserWarning, stacklevel=2)
    if reduction not in _REDUCTIONS + ("batchmean",):
        raise ValueError(f"{reduction} is not a valid value for reduction")
    if target.shape != input.shape:  # (ATen: target * input, or exp(target) * (target - input))
        infer_size(target.shape, input.shape)
    loss = apply(_k.kl_div_log_target if log_target else _k.kl_div, input, target)
    if reduction == "batchmean" and input.ndim != 0:
        return _sum(loss) / input.shape[0]
    if reduction == "batchmean":
        return _sum(loss)
    return _weighted(loss, reduction)


def cosine_embedding_loss(input1: Tensor, input2: Tensor, target: Tensor, margin: float = 0.0,
                          size_average=None, reduce=None, reduction: str = "mean") -> Tensor:
    """``1 - cos(x1, x2)`` for ``y = 1``, ``max(0, cos - margin)`` for ``y = -1``."""
    reduction = _reduction(size_average, reduce, reduction)
    if input1.ndim not in (1, 2):
        raise RuntimeError(f"cosine_embedding_loss(): Expected 1D or 2D tensor, but got "
                           f"{input1.ndim}D tensor")
    if not (input1.shape == input2.shape and target.shape == input1.shape[:target.ndim]):
        # ATen: where(target == 1, 1 - cos, zeros), cos = (input1 * input2).sum(target.dim()) / ...
        cos = infer_size(input1.shape, input2.shape)
        infer_size(target.shape, cos[:target.ndim] + cos[target.ndim + 1:])
    loss = apply(_k.cosine_embedding_loss, input1, input2, target, margin=float(margin))
    return _weighted(loss, reduction)


def margin_ranking_loss(input1: Tensor, input2: Tensor, target: Tensor, margin: float = 0.0,
                        size_average=None, reduce=None, reduction: str = "mean") -> Tensor:
    """``max(0, -y (x1 - x2) + margin)``."""
    reduction = _reduction(size_average, reduce, reduction)
    if not (input1.ndim == input2.ndim == target.ndim):
        raise RuntimeError(f"margin_ranking_loss : All input tensors should have same dimension but got "
                           f"sizes: input1: {_size(input1.shape)}, input2: {_size(input2.shape)}, "
                           f"target: {_size(target.shape)} ")
    if not (input1.shape == input2.shape == target.shape):  # (ATen: -target * (input1 - input2))
        infer_size(target.shape, infer_size(input1.shape, input2.shape))
    loss = apply(_k.margin_ranking_loss, input1, input2, target, margin=float(margin))
    return _weighted(loss, reduction)


def triplet_margin_loss(anchor: Tensor, positive: Tensor, negative: Tensor, margin: float = 1.0,
                        p: float = 2, eps: float = 1e-6, swap: bool = False, size_average=None,
                        reduce=None, reduction: str = "mean") -> Tensor:
    """``max(d(a, p) - d(a, n) + margin, 0)`` with ``d`` the pairwise p-norm distance."""
    reduction = _reduction(size_average, reduce, reduction)
    a, pp, n = anchor.ndim, positive.ndim, negative.ndim
    if not (a == pp == n):
        raise RuntimeError(f"The anchor, positive, and negative tensors are expected to have the same "
                           f"number of dimensions, but got: anchor {a}D, positive {pp}D, and negative "
                           f"{n}D inputs")
    loss = apply(_k.triplet_margin_loss, anchor, positive, negative, margin=float(margin),
                 p_norm=float(p) if p not in (1, 2) else int(p), eps=float(eps), swap=bool(swap))
    return _weighted(loss, reduction)


def gaussian_nll_loss(input: Tensor, target: Tensor, var: Tensor | float, full: bool = False,
                      eps: float = 1e-6, reduction: str = "mean") -> Tensor:
    """Gaussian negative log likelihood ``0.5 (log var + (input - target)² / var)``."""
    reduction = _reduction(None, None, reduction)
    var = _as_tensor(var, input)
    if tuple(var.shape) != tuple(input.shape):
        if tuple(input.shape[:-1]) == tuple(var.shape):
            var = var.unsqueeze(-1)
        elif tuple(input.shape[:-1]) == tuple(var.shape[:-1]) and var.shape[-1] == 1:
            pass
        elif var.ndim == 0 or var.numel() == 1:
            pass
        else:
            raise ValueError("var is of incorrect size")
    if _concrete(var) and bool(jnp.any(var._value < 0)):
        raise ValueError("var has negative entry/entries")
    loss = apply(_k.gaussian_nll_loss, input, target, var, full=bool(full), eps=float(eps))
    return _weighted(loss, reduction)


def poisson_nll_loss(input: Tensor, target: Tensor, log_input: bool = True, full: bool = False,
                     size_average=None, eps: float = 1e-8, reduce=None,
                     reduction: str = "mean") -> Tensor:
    """Poisson negative log likelihood (``exp(input) - target * input`` with ``log_input``)."""
    reduction = _reduction(size_average, reduce, reduction)
    if target.shape != input.shape:  # (ATen: target * input, or target * log(input + eps))
        infer_size(target.shape, input.shape)
    loss = apply(_k.poisson_nll_loss, input, target, log_input=bool(log_input), full=False,
                 eps=float(eps))
    if full:  # PyTorch adds the Stirling term as a composite (so its node is AddBackward0)
        stirling = target * target.log() - target + 0.5 * (2 * math.pi * target).log()
        loss = loss + stirling.masked_fill(target <= 1, 0)
    return _weighted(loss, reduction)
