"""``funcgrad.nn.functional`` (``import funcgrad.nn.functional as F``): pure functions, no module
state. The differentiable kernels are ops of the op table (``funcgrad/_ops/nn.py``); these
frontends check arguments with PyTorch's messages before any kernel runs.

Convolution, padding, pooling and resampling are in ``_functional_conv.py``; losses, attention
and recurrent helpers in their own modules; all are re-exported here.
"""

from __future__ import annotations

import math
import warnings

import jax
import jax.numpy as jnp
import numpy as np

from .. import _meta
from .._dtype import uint8 as _uint8
from .._random import _sample
from .._ops import nn as _nn
from .._ops._parser import checked as _checked
from .._ops._registry import write_out
from .._ops.linalg import addmm as _addmm, linear_2d as _linear_2d, matmul as _matmul
from .._ops.linalg import check_addmm_dtypes as _check_addmm_dtypes
from .._ops.nn import log_softmax as _log_softmax, softmax as _softmax
from .._ops.shape import _unsafe_view as _unsafe_view_op
from .._ops.pointwise import relu as _relu, sigmoid as _sigmoid, tanh as _tanh
from .._tensor import Tensor
from ..autograd import grad_mode
from ._functional_conv import (adaptive_avg_pool1d, adaptive_avg_pool2d, adaptive_avg_pool3d,  # noqa: F401
                               adaptive_max_pool1d, adaptive_max_pool2d, avg_pool1d, avg_pool2d,
                               avg_pool3d, conv1d, conv2d, conv3d, conv_transpose1d, conv_transpose2d,
                               conv_transpose3d, interpolate, max_pool1d, max_pool2d, max_pool3d, pad,
                               pixel_shuffle, pixel_unshuffle, upsample)


# ================================ linear ==========================================================
def linear(input: Tensor, weight: Tensor, bias: Tensor | None = None) -> Tensor:
    """``input @ weight.T + bias`` as PyTorch's ``at::linear`` builds it: 2-D input with bias is
    ``AddmmBackward0``, without bias ``MmBackward0``; a contiguous input of more dimensions is
    flattened to 2-D first (``ViewBackward0`` of the addmm; without bias, matmul's fold:
    ``UnsafeViewBackward0`` of the mm), so it gives the flattened input's bits; so is a vector (one
    row: ``ViewBackward0`` of the addmm; without bias, ``SqueezeBackward4`` of the mm).

    >>> import funcgrad
    >>> import funcgrad.nn.functional as F
    >>> F.linear(funcgrad.ones(1, 2), funcgrad.ones(3, 2), funcgrad.zeros(3))
    tensor([[2., 2., 2.]])
    >>> F.linear(funcgrad.ones(2, 1, 2, requires_grad=True), funcgrad.ones(3, 2)).grad_fn
    <UnsafeViewBackward0 object at ...>
    """
    nd = input.ndim
    if nd == 2 and (out := _linear_2d(input, weight, bias)) is not None:
        return out  # the same graph, no transposed weight copy (operands of one dtype only)
    if bias is not None:  # addmm's dtype checks (PyTorch does not promote); without bias, mm's
        _check_addmm_dtypes(bias, input, weight)
    if nd == 0 or weight.ndim == 0:
        raise RuntimeError(f"both arguments to linear need to be at least 1D, but they are {nd}D and "
                           f"{weight.ndim}D")
    if nd == 1 and weight.ndim != 2:  # a dot (or matmul's error), the bias added in place
        out = _matmul(input, weight.t())
        return out if bias is None else out.add_(bias)
    if nd == 2 or weight.ndim != 2 or nd > 2 and input.shape[-1] != weight.shape[1]:
        return _matmul(input, weight.t()) if bias is None else _addmm(bias, input, weight.t())
    lead = tuple(input.shape[:-1])  # (a vector: () and one row, as PyTorch's flattening)
    flat = (math.prod(lead), input.shape[-1])  # (not -1: a 0 in lead would make it ambiguous)
    if bias is not None and input.is_contiguous():  # PyTorch's _flatten_nd_linear
        return linear(input.reshape(flat), weight, bias).view(*lead, weight.shape[0])
    if nd == 1:  # matmul's vector-matrix product (SqueezeBackward4 of an mm)
        out = _matmul(input, weight.t())
    elif weight.requires_grad or _foldable(input):  # matmul's fold: mm of the flattened input
        out = _nn.apply(_unsafe_view_op, linear(input.reshape(flat), weight),
                        shape=(*lead, weight.shape[0]))
    else:
        out = _matmul(input, weight.t())
    return out if bias is None else out.add_(bias)  # non-contiguous input: PyTorch adds in place


def _foldable(t) -> bool:
    """matmul folds a tensor of 3+ dims into a matrix when its leading dims view as one."""
    if t.numel() == 0:
        return True
    sz, st, _ = t._layout()
    return all(st[i] == st[i + 1] * sz[i + 1] for i in range(len(sz) - 2))


def bilinear(input1: Tensor, input2: Tensor, weight: Tensor, bias: Tensor | None = None) -> Tensor:
    """``y_o = x1ᵀ W_o x2 + b_o``."""
    if input1.shape[:-1] != input2.shape[:-1]:
        raise RuntimeError(f"bilinear(): input batch dimensions do not match: got {list(input1.shape[:-1])} "
                           f"and {list(input2.shape[:-1])}")
    # as PyTorch's at::bilinear: the batch flattened, _trilinear, the result reshaped back
    # (ViewBackward0), then the bias added
    batch = tuple(input1.shape[:-1])
    out = _nn.apply(_nn._bilinear_op, input1.reshape(-1, input1.shape[-1]),
                    input2.reshape(-1, input2.shape[-1]), weight).reshape(*batch, weight.shape[0])
    return out if bias is None else out + bias


# ================================ activations =====================================================
def _maybe_inplace(input, inplace, fn):
    if inplace:
        return input._inplace(fn)
    return fn(input)


def relu(input: Tensor, inplace: bool = False) -> Tensor:
    """``max(x, 0)`` (``ReluBackward0``)."""
    return _maybe_inplace(input, inplace, _relu)


def relu_(input: Tensor) -> Tensor:
    return relu(input, inplace=True)


def hardtanh(input: Tensor, min_val: float = -1.0, max_val: float = 1.0, inplace: bool = False) -> Tensor:
    """Clamp to ``[min_val, max_val]`` with zero gradient outside (``HardtanhBackward0``)."""
    if min_val > max_val:
        raise ValueError("min_val cannot be greater than max_val")
    if input.dtype is _uint8 and (min_val < 0 or max_val < 0):
        raise RuntimeError("cannot do hardtanh on an unsigned type with negative limits")
    return _maybe_inplace(input, inplace, lambda x: _nn.act("hardtanh", x, lo=min_val, hi=max_val))


def relu6(input: Tensor, inplace: bool = False) -> Tensor:
    """``min(max(x, 0), 6)`` (PyTorch computes it as ``hardtanh``: ``HardtanhBackward0``)."""
    return hardtanh(input, 0.0, 6.0, inplace)


def leaky_relu(input: Tensor, negative_slope: float = 0.01, inplace: bool = False) -> Tensor:
    """``x`` if ``x > 0`` else ``negative_slope * x`` (``LeakyReluBackward0``)."""
    return _maybe_inplace(input, inplace, lambda x: _nn.act("leaky_relu_" if inplace else "leaky_relu", x,
                                                            slope=negative_slope))


def elu(input: Tensor, alpha: float = 1.0, inplace: bool = False) -> Tensor:
    """``x`` if ``x > 0`` else ``alpha * (exp(x) - 1)`` (``EluBackward0``)."""
    return _maybe_inplace(input, inplace, lambda x: _nn.act("elu_" if inplace else "elu", x, alpha=float(alpha),
                                                            scale=1.0, input_scale=1.0))


_SELU_ALPHA = 1.6732632423543772848170429916717
_SELU_SCALE = 1.0507009873554804934193349852946


def selu(input: Tensor, inplace: bool = False) -> Tensor:
    """Scaled ELU with the self-normalising constants (``EluBackward0``)."""
    return _maybe_inplace(input, inplace, lambda x: _nn.act("elu_" if inplace else "elu", x, alpha=_SELU_ALPHA,
                                                            scale=_SELU_SCALE, input_scale=1.0))


def celu(input: Tensor, alpha: float = 1.0, inplace: bool = False) -> Tensor:
    """``max(0, x) + min(0, alpha * (exp(x / alpha) - 1))`` (``CeluBackward0``)."""
    if alpha == 0:
        raise RuntimeError("ZeroDivisionError")
    return _maybe_inplace(input, inplace, lambda x: _nn.act("celu_" if inplace else "celu", x, alpha=float(alpha)))


# the in-place functional forms PyTorch exposes beside relu_ (each is its function with inplace=True)
def elu_(input: Tensor, alpha: float = 1.0) -> Tensor:
    return elu(input, alpha, inplace=True)


def selu_(input: Tensor) -> Tensor:
    return selu(input, inplace=True)


def celu_(input: Tensor, alpha: float = 1.0) -> Tensor:
    return celu(input, alpha, inplace=True)


def hardtanh_(input: Tensor, min_val: float = -1.0, max_val: float = 1.0) -> Tensor:
    return hardtanh(input, min_val, max_val, inplace=True)


def leaky_relu_(input: Tensor, negative_slope: float = 0.01) -> Tensor:
    return leaky_relu(input, negative_slope, inplace=True)


def threshold_(input: Tensor, threshold: float, value: float) -> Tensor:
    return globals()["threshold"](input, threshold, value, inplace=True)


def gelu(input: Tensor, approximate: str = "none") -> Tensor:
    """Gaussian error linear unit, exact (erf) or ``approximate='tanh'`` (``GeluBackward0``)."""
    if approximate not in ("none", "tanh"):
        raise RuntimeError("approximate argument must be either none or tanh.")
    return _nn.act("gelu", input, approximate=approximate)


def silu(input: Tensor, inplace: bool = False) -> Tensor:
    """``x * sigmoid(x)`` (``SiluBackward0``)."""
    return _maybe_inplace(input, inplace, lambda x: _nn.act("silu", x))


def mish(input: Tensor, inplace: bool = False) -> Tensor:
    """``x * tanh(softplus(x))`` (``MishBackward0``)."""
    return _maybe_inplace(input, inplace, lambda x: _nn.act("mish", x))


def softplus(input: Tensor, beta: float = 1.0, threshold: float = 20.0) -> Tensor:
    """``log(1 + exp(beta x)) / beta``, linear where ``beta x > threshold`` (``SoftplusBackward0``)."""
    return _nn.act("softplus", input, beta=float(beta), threshold=float(threshold))


def softsign(input: Tensor) -> Tensor:
    """``x / (1 + |x|)``."""
    return input / (input.abs() + 1)


def hardswish(input: Tensor, inplace: bool = False) -> Tensor:
    """``x * relu6(x + 3) / 6`` (``HardswishBackward0``)."""
    return _maybe_inplace(input, inplace, lambda x: _nn.act("hardswish", x))


def hardsigmoid(input: Tensor, inplace: bool = False) -> Tensor:
    """``relu6(x + 3) / 6`` (``HardsigmoidBackward0``)."""
    return _maybe_inplace(input, inplace, lambda x: _nn.act("hardsigmoid", x))


def logsigmoid(input: Tensor) -> Tensor:
    """``log(sigmoid(x))``, stable for large ``|x|`` (``LogSigmoidBackward0``)."""
    return _nn.act("log_sigmoid", input)


def tanhshrink(input: Tensor) -> Tensor:
    """``x - tanh(x)``."""
    return input - _tanh(input)


def threshold(input: Tensor, threshold: float, value: float, inplace: bool = False) -> Tensor:
    """``x`` if ``x > threshold`` else ``value`` (``ThresholdBackward0``)."""
    threshold, value = _nn.threshold_scalars(input, threshold, value)
    return _maybe_inplace(input, inplace, lambda x: _nn.act("threshold_" if inplace else "threshold", x,
                                                            threshold, value))


def glu(input: Tensor, dim: int = -1) -> Tensor:
    """Gated linear unit: first half ⊙ sigmoid(second half) along ``dim`` (``GluBackward0``)."""
    if input.ndim == 0:
        raise RuntimeError("glu does not support scalars because halving size must be even")
    d = dim % input.ndim
    if input.shape[d] % 2:
        raise RuntimeError(f"Halving dimension must be even, but dimension {d} is size {input.shape[d]}")
    return _nn.act("glu", input, dim=d)


def prelu(input: Tensor, weight: Tensor) -> Tensor:
    """``x`` if ``x > 0`` else ``weight * x``, weight per channel (dim 1) or shared."""
    return _nn.apply(_nn._ACT["prelu"], input, weight)


def hardshrink(input: Tensor, lambd: float = 0.5) -> Tensor:
    return _nn.act("hardshrink", input, lambd=float(lambd))


def softshrink(input: Tensor, lambd: float = 0.5) -> Tensor:
    return _nn.act("softshrink", input, lambd=float(lambd))


def sigmoid(input: Tensor) -> Tensor:
    return _sigmoid(input)


def tanh(input: Tensor) -> Tensor:
    return _tanh(input)


def _implicit_dim(name, ndim, dim, stacklevel):
    if dim is None:
        warnings.warn(f"Implicit dimension choice for {name} has been deprecated. Change the call to "
                      f"include dim=X as an argument.", UserWarning, stacklevel=stacklevel)
    return dim


def softmax(input: Tensor, dim: int | None = None, _stacklevel: int = 3, dtype=None) -> Tensor:
    """``exp(x_i) / Σ exp(x_j)`` along ``dim`` (``SoftmaxBackward0``).

    >>> import funcgrad
    >>> import funcgrad.nn.functional as F
    >>> F.softmax(funcgrad.tensor([0., 0.]), dim=0)
    tensor([0.5000, 0.5000])
    """
    return _softmax(input, _implicit_dim("softmax", input.ndim, dim, _stacklevel), dtype)


def log_softmax(input: Tensor, dim: int | None = None, _stacklevel: int = 3, dtype=None) -> Tensor:
    """``log(softmax(x))``, stable for large logits (``LogSoftmaxBackward0``)."""
    return _log_softmax(input, _implicit_dim("log_softmax", input.ndim, dim, _stacklevel), dtype)


def softmin(input: Tensor, dim: int | None = None, _stacklevel: int = 3, dtype=None) -> Tensor:
    """``softmax(-x)``."""
    return _softmax(-input if dtype is None else -input.to(dtype),
                    _implicit_dim("softmin", input.ndim, dim, _stacklevel))


# ================================ normalisation ==================================================
def _update_stat(buf: Tensor, new) -> None:
    """Write a running statistic in place (the jit bridge tracks the buffer's storage)."""
    buf._set_value(new._value)
    buf._ver[0] += 1


def batch_norm(input: Tensor, running_mean: Tensor | None, running_var: Tensor | None,
               weight: Tensor | None = None, bias: Tensor | None = None, training: bool = False,
               momentum: float = 0.1, eps: float = 1e-5) -> Tensor:
    """Batch normalisation over dim 1 (``NativeBatchNormBackward0``). In training, batch statistics
    are used and ``running_mean``/``running_var`` (if given) are updated in place with the
    unbiased variance: ``r = (1 - momentum) r + momentum * stat``."""
    if training:
        size = input.numel() // input.shape[1]
        if size == 1:
            raise ValueError(f"Expected more than 1 value per channel when training, got input size "
                             f"{input.shape}")
    elif running_mean is None or running_var is None:
        raise RuntimeError("running_mean and running_var must be defined in evaluation mode")
    c = input.shape[1] if input.ndim > 1 else None
    for name, t in (("running_mean", running_mean), ("running_var", running_var), ("weight", weight),
                    ("bias", bias)):
        if t is not None and t.numel() != c:
            raise RuntimeError(f"{name} should contain {c} elements not {t.numel()}")
    y, rm, rv = _nn.batch_norm_op(input, running_mean, running_var, weight, bias,
                                  0.0 if momentum is None else momentum, training, eps)
    if training and running_mean is not None:
        _update_stat(running_mean, rm)
        _update_stat(running_var, rv)
    return y


def instance_norm(input: Tensor, running_mean: Tensor | None = None, running_var: Tensor | None = None,
                  weight: Tensor | None = None, bias: Tensor | None = None, use_input_stats: bool = True,
                  momentum: float = 0.1, eps: float = 1e-5) -> Tensor:
    """Normalise each (sample, channel) over its spatial dims (a batch norm over a (1, N·C, …) view)."""
    n, c = input.shape[:2]
    if use_input_stats and input.numel() // (n * c) == 1:
        raise ValueError(f"Expected more than 1 spatial element when training, got input size {input.shape}")
    x = input.reshape(1, n * c, *input.shape[2:])
    y, rm, rv = _nn.batch_norm_op(x, running_mean, running_var, weight, bias, momentum, use_input_stats,
                                  eps, tile=n)
    if use_input_stats and running_mean is not None:
        _update_stat(running_mean, rm)
        _update_stat(running_var, rv)
    return y.view(input.shape)


def layer_norm(input: Tensor, normalized_shape, weight: Tensor | None = None, bias: Tensor | None = None,
               eps: float = 1e-5) -> Tensor:
    """Normalise over the trailing ``normalized_shape`` dims (``NativeLayerNormBackward0``)."""
    shape = (normalized_shape,) if isinstance(normalized_shape, int) else tuple(normalized_shape)
    if tuple(input.shape[input.ndim - len(shape):]) != shape or len(shape) > input.ndim:
        raise RuntimeError(f"Given normalized_shape={list(shape)}, expected input with shape "
                           f"[*, {', '.join(map(str, shape))}], but got input of size{list(input.shape)}")
    return _nn.apply(_nn._layer_norm_op, input, weight, bias, n=len(shape), eps=float(eps))


def group_norm(input: Tensor, num_groups: int, weight: Tensor | None = None, bias: Tensor | None = None,
               eps: float = 1e-5) -> Tensor:
    """Normalise over groups of channels (``NativeGroupNormBackward0``)."""
    if input.ndim < 2:
        raise RuntimeError(f"Expected at least 2 dimensions for input tensor but received {input.ndim}")
    if input.shape[1] % num_groups:
        raise RuntimeError(f"Expected number of channels in input to be divisible by num_groups, but got "
                           f"input of shape {input.shape} and num_groups={num_groups}")
    return _nn.apply(_nn._group_norm_op, input, weight, bias, groups=int(num_groups), eps=float(eps))


def local_response_norm(input: Tensor, size: int, alpha: float = 1e-4, beta: float = 0.75,
                        k: float = 1.0) -> Tensor:
    """Normalise each element by the squared activity of ``size`` neighbouring channels."""
    sq = input * input
    c = input.shape[1]
    padded = pad(sq.transpose(1, -1), (size // 2, (size - 1) // 2)).transpose(1, -1)
    acc = sum(padded[:, i:i + c] for i in range(size)) / size
    return input / (acc * alpha + k) ** beta


def normalize(input: Tensor, p: float = 2.0, dim: int = 1, eps: float = 1e-12, out=None) -> Tensor:
    """``x / max(||x||_p, eps)`` along ``dim``.

    >>> import funcgrad
    >>> import funcgrad.nn.functional as F
    >>> F.normalize(funcgrad.tensor([[3., 4.]]))
    tensor([[0.6000, 0.8000]])
    """
    r = _nn.apply(_nn._normalize_op, input, p=float(p), dim=dim % max(input.ndim, 1), eps=float(eps))
    return write_out(r, out, "div")


def cosine_similarity(x1: Tensor, x2: Tensor, dim: int = 1, eps: float = 1e-8) -> Tensor:
    """Cosine of the angle between ``x1`` and ``x2`` along ``dim`` (broadcasting)."""
    nd = max(x1.ndim, x2.ndim)
    return _nn.apply(_nn._cosine_op, x1, x2, dim=dim % max(nd, 1), eps=float(eps))


def pairwise_distance(x1: Tensor, x2: Tensor, p: float = 2.0, eps: float = 1e-6, keepdim: bool = False) -> Tensor:
    """``||x1 - x2 + eps||_p`` over the last dim."""
    return _nn.apply(_nn._pairwise_op, x1, x2, p=float(p), eps=float(eps), keepdim=bool(keepdim))


# (as PyTorch's native binding takes its arguments: a non-bool keepdim is pairwise_distance()'s TypeError)
pairwise_distance = _checked(pairwise_distance, "pairwise_distance", False)


# ================================ dropout, embedding =============================================
def _check_p(p):
    if p < 0.0 or p > 1.0:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")


def _noise(input, shape, p):
    """PyTorch's ``_dropout_impl`` noise (``_sample.dropout_noise``) in the input's dtype, drawn
    in the input's storage order when it is a dense transposed view (as ``empty_like`` keeps it)."""
    strides = input.stride() if shape == tuple(input.shape) and not input.is_contiguous() else None
    return _sample.dropout_noise(None, shape, p, input.dtype.np, strides)


def dropout(input: Tensor, p: float = 0.5, training: bool = True, inplace: bool = False) -> Tensor:
    """Zero each element with probability ``p`` and scale the rest by ``1/(1-p)``; identity when
    not ``training``. PyTorch's mask: the same seed drops the same elements.

    >>> import funcgrad
    >>> _ = funcgrad.manual_seed(0)
    >>> funcgrad.nn.functional.dropout(funcgrad.ones(6), 0.5)
    tensor([0., 0., 2., 0., 0., 0.])
    """
    _check_p(p)
    if not training or p == 0.0 or input.numel() == 0:
        return input
    if p == 1.0:
        return _maybe_inplace(input, inplace, lambda x: x * 0)
    noise = Tensor._wrap(_noise(input, tuple(input.shape), p))
    return _maybe_inplace(input, inplace, lambda x: _nn.dropout_op(x, noise))


def _feature_dropout(input, p, training, inplace):
    """PyTorch's ``feature_dropout`` (``_dropout_impl<feature_dropout=true>``): one draw per
    (batch, channel), broadcast over the rest."""
    if not training or p == 0.0 or input.numel() == 0:
        return input
    if p == 1.0:
        return _maybe_inplace(input, inplace, lambda x: x * 0)
    if input.ndim < 2:
        raise RuntimeError("Feature dropout requires at least 2 dimensions in the input")
    shape = tuple(input.shape[:2]) + (1,) * (input.ndim - 2)
    noise = Tensor._wrap(_noise(input, shape, p))
    return _maybe_inplace(input, inplace, lambda t: _nn.dropout_op(t, noise))


def _unbatched_feature_dropout(input, p, training, inplace):
    # dropout1d/dropout3d drop an unbatched input as a batch of one, through unsqueeze/squeeze
    # (in place when ``inplace``), so the result is a new view even in eval mode, as in PyTorch
    x = input.unsqueeze_(0) if inplace else input.unsqueeze(0)
    out = _feature_dropout(x, p, training, inplace)
    return out.squeeze_(0) if inplace else out.squeeze(0)


def _warn_feature_dims(name, ndim, nd):
    # torch/nn/functional.py's dropout2d/dropout3d message, stacklevel=2 from the public function
    warnings.warn(
        f"{name}: Received a {ndim}-D input to {name}, which is deprecated and will result in an "
        "error in a future release. To retain the behavior and silence this warning, please use "
        f"dropout instead. Note that {name} exists to provide channel-wise dropout on inputs with "
        f"{nd} spatial dimensions, a channel dimension, and an optional batch dimension "
        f"(i.e. {nd + 1}D or {nd + 2}D inputs).", UserWarning, stacklevel=3)


def dropout1d(input: Tensor, p: float = 0.5, training: bool = True, inplace: bool = False) -> Tensor:
    """Zero whole channels of ``(N, C, L)`` or ``(C, L)`` inputs with probability ``p``."""
    _check_p(p)
    if input.ndim not in (2, 3):
        raise RuntimeError(
            f"dropout1d: Expected 2D or 3D input, but received a {input.ndim}D input. "
            "Note that dropout1d exists to provide channel-wise dropout on inputs with 1 "
            "spatial dimension, a channel dimension, and an optional batch dimension "
            "(i.e. 2D or 3D inputs).")
    if input.ndim == 3:
        return _feature_dropout(input, p, training, inplace)
    return _unbatched_feature_dropout(input, p, training, inplace)


def dropout2d(input: Tensor, p: float = 0.5, training: bool = True, inplace: bool = False) -> Tensor:
    """Zero whole channels (dim 1) with probability ``p``. As PyTorch, a 3-D input is taken as
    ``(N, C, L)`` (with a warning), and other than 3-D or 4-D inputs warn, in eval mode too."""
    _check_p(p)
    if input.ndim not in (3, 4):
        _warn_feature_dims("dropout2d", input.ndim, 2)
    if input.ndim == 3:
        warnings.warn(
            "dropout2d: Received a 3D input to dropout2d and assuming that channel-wise "
            "1D dropout behavior is desired - input is interpreted as shape (N, C, L), where C "
            "is the channel dim. This behavior will change in a future release to interpret the "
            "input as one without a batch dimension, i.e. shape (C, H, W). To maintain the 1D "
            "channel-wise dropout behavior, please switch to using dropout1d instead.",
            UserWarning, stacklevel=2)
    return _feature_dropout(input, p, training, inplace)


def dropout3d(input: Tensor, p: float = 0.5, training: bool = True, inplace: bool = False) -> Tensor:
    """Zero whole channels with probability ``p``; only a 5-D input is batched."""
    _check_p(p)
    if input.ndim not in (4, 5):
        _warn_feature_dims("dropout3d", input.ndim, 3)
    if input.ndim == 5:
        return _feature_dropout(input, p, training, inplace)
    return _unbatched_feature_dropout(input, p, training, inplace)


def alpha_dropout(input: Tensor, p: float = 0.5, training: bool = False, inplace: bool = False) -> Tensor:
    """Dropout that keeps SELU's self-normalising mean and variance."""
    _check_p(p)
    if not training or p == 0.0:
        return input
    if p == 1.0:
        return input * 0
    # PyTorch's _dropout_impl<alpha_dropout>, op by op in the input's dtype
    dt = input.dtype.np
    alpha = 1.7580993408473766
    a = 1.0 / math.sqrt((alpha * alpha * p + 1) * (1 - p))
    noise = _sample.bernoulli_scalar(None, tuple(input.shape), 1.0 - p, dt)
    b = Tensor._wrap((noise - dt.type(1)) * dt.type(alpha * a) + dt.type(alpha * a * p))
    return input * Tensor._wrap(noise * dt.type(a)) + b


@jax.jit
def _renorm_rows(w, idx, max_norm, norm_type):
    rows = jnp.unique(idx.ravel(), size=idx.size, fill_value=idx.ravel()[0])
    sel = w[rows]
    norms = jnp.sum(jnp.abs(sel) ** norm_type, axis=-1) ** (1.0 / norm_type)
    scale = jnp.where(norms > max_norm, max_norm / (norms + 1e-7), 1.0)
    return w.at[rows].set(sel * scale[:, None].astype(w.dtype))


def embedding(input: Tensor, weight: Tensor, padding_idx: int | None = None, max_norm: float | None = None,
              norm_type: float = 2.0, scale_grad_by_freq: bool = False, sparse: bool = False) -> Tensor:
    """Rows of ``weight`` at the integer ``input`` indices (``EmbeddingBackward0``). The
    ``padding_idx`` row gets no gradient; ``max_norm`` renormalises the used rows in place."""
    if input.dtype.is_floating_point:
        raise RuntimeError(f"Expected tensor for argument #1 'indices' to have one of the following scalar "
                           f"types: Long, Int; but got {input._type_name()} instead (while checking "
                           f"arguments for embedding)")
    iv = input._value
    if not isinstance(iv, (jax.core.Tracer, _meta.MetaArray)) and iv.size:  # jax would clamp silently
        a = np.asarray(iv)
        if (a < 0).any() or (a >= weight.shape[0]).any():
            raise IndexError("index out of range in self")
    if padding_idx is not None:
        n = weight.shape[0]
        if padding_idx > 0 and padding_idx >= n:
            raise AssertionError("Padding_idx must be within num_embeddings")
        if padding_idx < 0:
            if padding_idx < -n:
                raise AssertionError("Padding_idx must be within num_embeddings")
            padding_idx = n + padding_idx
    if max_norm is not None:
        with grad_mode.no_grad():
            weight._set_value(_renorm_rows(weight._value, input._value, float(max_norm), float(norm_type)))
            weight._ver[0] += 1
    return _nn.embedding_op(weight, input, padding_idx)


def one_hot(tensor: Tensor, num_classes: int = -1) -> Tensor:
    """int64 one-hot encoding with a new last dim of size ``num_classes`` (max + 1 when -1).

    >>> import funcgrad
    >>> import funcgrad.nn.functional as F
    >>> F.one_hot(funcgrad.tensor([0, 2]))
    tensor([[1, 0, 0],
            [0, 0, 1]])
    """
    if tensor.dtype.is_floating_point:
        raise RuntimeError("one_hot is only applicable to index tensor of type LongTensor.")
    v = tensor._value
    if num_classes == -1:
        num_classes = int(jnp.max(tensor._concrete("one_hot without num_classes"))) + 1 if v.size else 0
    elif not isinstance(v, jax.core.Tracer) and v.size:
        if int(jnp.min(v)) < 0:
            raise RuntimeError("Class values must be non-negative.")
        if int(jnp.max(v)) >= num_classes:
            raise RuntimeError("Class values must be smaller than num_classes.")
    return Tensor._wrap(_one_hot(v, int(num_classes)))


_one_hot = jax.jit(lambda v, n: jax.nn.one_hot(v, n, dtype=jnp.int64), static_argnums=1)


# ---- losses, attention, recurrent helpers (their own modules) are re-exported below ----------
from ._functional_loss import *  # noqa: E402,F401,F403
from ._functional_attention import *  # noqa: E402,F401,F403
from ._functional_more import *  # noqa: E402,F401,F403
from ._functional_sample import *  # noqa: E402,F401,F403
from ._functional_fold import *  # noqa: E402,F401,F403
from ._functional_extra import *  # noqa: E402,F401,F403
