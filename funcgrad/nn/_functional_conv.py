"""``nn.functional`` — convolution, padding, pooling, resampling (re-exported by functional.py)."""

from __future__ import annotations

import math
import warnings

from .._ops import nn as _nn
from .._ops import nn_sample as _sample
from .._ops._registry import defop
from .._tensor import Tensor


def _tuple(v, n: int, name: str = "") -> tuple:
    if isinstance(v, (tuple, list)):
        if len(v) == 1 and n > 1:
            return tuple(int(v[0]) for _ in range(n))
        if len(v) != n:
            raise RuntimeError(f"expected {name} to be a single integer value or a list of {n} values "
                               f"to match the convolution dimensions, but got {name}={list(v)}")
        return tuple(int(x) for x in v)
    return (int(v),) * n


def _batchify(input: Tensor, nd: int, what: str):
    """Unbatched input (C, *spatial) → (1, C, *spatial); returns (tensor, was_unbatched)."""
    if input.ndim == nd + 1:
        return input.unsqueeze(0), True
    if input.ndim != nd + 2:
        raise RuntimeError(f"Expected {nd + 1}D (unbatched) or {nd + 2}D (batched) input to {what}, but "
                           f"got input of size: {list(input.shape)}")
    return input, False


# ================================ convolution ====================================================
_SCALAR = {"float64": "Double", "float32": "Float", "float16": "Half", "bfloat16": "BFloat16"}


def _check_dtypes(input, weight, bias):
    if weight.dtype is not input.dtype:
        raise RuntimeError(f"expected scalar type {_SCALAR.get(input.dtype.name, input.dtype.name)} but found "
                           f"{_SCALAR.get(weight.dtype.name, weight.dtype.name)}")
    if bias is not None and bias.dtype is not input.dtype:
        raise RuntimeError(f"Input type ({input.dtype.name.replace('float32', 'float').replace('float64', 'double')}) "
                           f"and bias type ({bias.dtype.name.replace('float32', 'float').replace('float64', 'double')}) "
                           f"should be the same")


def _conv_nd(nd, input, weight, bias, stride, padding, dilation, groups):
    _check_dtypes(input, weight, bias)
    x, unb = _batchify(input, nd, f"conv{nd}d")
    stride, dilation = _tuple(stride, nd, "stride"), _tuple(dilation, nd, "dilation")
    if weight.ndim != nd + 2:
        raise RuntimeError(f"Expected {nd + 2}-dimensional weight for {nd + 2}-dimensional input, but got "
                           f"{weight.ndim}-dimensional weight of size {list(weight.shape)}")
    cin = x.shape[1]
    if cin != weight.shape[1] * groups:
        raise RuntimeError(f"Given groups={groups}, weight of size {list(weight.shape)}, expected "
                           f"input{list(input.shape)} to have {weight.shape[1] * groups} channels, but got "
                           f"{cin} channels instead")
    if weight.shape[0] % groups:
        raise RuntimeError(f"Given groups={groups}, expected weight to be divisible by {groups} at "
                           f"dimension 0, but got weight of size {list(weight.shape)} instead")
    k = weight.shape[2:]
    if isinstance(padding, str):
        if padding == "valid":
            pads = [(0, 0)] * nd
        elif padding == "same":
            if any(s != 1 for s in stride):
                raise ValueError("padding='same' is not supported for strided convolutions")
            pads = []
            for i in range(nd):
                total = dilation[i] * (k[i] - 1)
                pads.append((total // 2, total - total // 2))
        else:
            raise ValueError(f"Invalid padding string '{padding}', should be one of ('valid', 'same')")
    else:
        pads = [(p, p) for p in _tuple(padding, nd, "padding")]
    for i in range(nd):
        eff = dilation[i] * (k[i] - 1) + 1
        if x.shape[2 + i] + sum(pads[i]) < eff:
            raise RuntimeError(f"Calculated padded input size per channel: "
                               f"({' x '.join(str(x.shape[2 + j] + sum(pads[j])) for j in range(nd))}). "
                               f"Kernel size: ({' x '.join(str(dilation[j] * (k[j] - 1) + 1) for j in range(nd))}). "
                               f"Kernel size can't be greater than actual input size")
    out = _nn.convolution(x, weight, bias, stride=stride, padding=pads, dilation=dilation, groups=groups)
    return out.squeeze(0) if unb else out


def conv1d(input: Tensor, weight: Tensor, bias: Tensor | None = None, stride=1, padding=0, dilation=1,
           groups: int = 1) -> Tensor:
    """1-D convolution over (N, C, L) (``ConvolutionBackward0``); ``padding`` may be ``'same'``/``'valid'``."""
    return _conv_nd(1, input, weight, bias, stride, padding, dilation, groups)


def conv2d(input: Tensor, weight: Tensor, bias: Tensor | None = None, stride=1, padding=0, dilation=1,
           groups: int = 1) -> Tensor:
    """2-D convolution over (N, C, H, W) (``ConvolutionBackward0``).

    >>> import funcgrad
    >>> import funcgrad.nn.functional as F
    >>> F.conv2d(funcgrad.ones(1, 1, 3, 3), funcgrad.ones(1, 1, 2, 2))
    tensor([[[[4., 4.],
              [4., 4.]]]])
    """
    return _conv_nd(2, input, weight, bias, stride, padding, dilation, groups)


def conv3d(input: Tensor, weight: Tensor, bias: Tensor | None = None, stride=1, padding=0, dilation=1,
           groups: int = 1) -> Tensor:
    """3-D convolution over (N, C, D, H, W)."""
    return _conv_nd(3, input, weight, bias, stride, padding, dilation, groups)


def _conv_transpose_nd(nd, input, weight, bias, stride, padding, output_padding, groups, dilation):
    _check_dtypes(input, weight, bias)
    x, unb = _batchify(input, nd, f"conv_transpose{nd}d")
    stride, dilation = _tuple(stride, nd, "stride"), _tuple(dilation, nd, "dilation")
    padding, output_padding = _tuple(padding, nd, "padding"), _tuple(output_padding, nd, "output_padding")
    if x.shape[1] != weight.shape[0]:
        raise RuntimeError(f"Given transposed=1, weight of size {list(weight.shape)}, expected input"
                           f"{list(input.shape)} to have {weight.shape[0]} channels, but got {x.shape[1]} "
                           f"channels instead")
    for i in range(nd):
        if output_padding[i] >= max(stride[i], dilation[i]):
            raise RuntimeError("output padding must be smaller than either stride or dilation, but got "
                               f"output_padding_height: {output_padding[i]} output_padding_width: "
                               f"{output_padding[-1]} stride_height: {stride[i]} stride_width: {stride[-1]} "
                               f"dilation_height: {dilation[i]} dilation_width: {dilation[-1]}")
    out = _nn.convolution(x, weight, bias, stride=stride, padding=[(p, p) for p in padding],
                          dilation=dilation, groups=groups, transposed=True, output_padding=output_padding)
    return out.squeeze(0) if unb else out


def conv_transpose1d(input: Tensor, weight: Tensor, bias: Tensor | None = None, stride=1, padding=0,
                     output_padding=0, groups: int = 1, dilation=1) -> Tensor:
    """Transposed 1-D convolution; ``weight`` is (in, out/groups, k)."""
    return _conv_transpose_nd(1, input, weight, bias, stride, padding, output_padding, groups, dilation)


def conv_transpose2d(input: Tensor, weight: Tensor, bias: Tensor | None = None, stride=1, padding=0,
                     output_padding=0, groups: int = 1, dilation=1) -> Tensor:
    """Transposed 2-D convolution ("deconvolution"); ``weight`` is (in, out/groups, kh, kw)."""
    return _conv_transpose_nd(2, input, weight, bias, stride, padding, output_padding, groups, dilation)


def conv_transpose3d(input: Tensor, weight: Tensor, bias: Tensor | None = None, stride=1, padding=0,
                     output_padding=0, groups: int = 1, dilation=1) -> Tensor:
    return _conv_transpose_nd(3, input, weight, bias, stride, padding, output_padding, groups, dilation)


# padding: F.pad is the op-table frontend of funcgrad/_ops/shape_more.py
from .._ops.shape_more import pad  # noqa: E402,F401


# ================================ pooling ========================================================
def _pool_args(nd, kernel_size, stride, padding, dilation=1):
    k = _tuple(kernel_size, nd, "kernel_size")
    s = k if stride is None or (isinstance(stride, (tuple, list)) and len(stride) == 0) else _tuple(stride, nd, "stride")
    p = _tuple(padding, nd, "padding")
    d = _tuple(dilation, nd, "dilation")
    for i in range(nd):
        if p[i] > k[i] // 2:
            raise RuntimeError(f"pad should be at most half of effective kernel size, but got pad={p[i]}, "
                               f"kernel_size={k[i]} and dilation={d[i]}")
    return k, s, p, d


def _check_pool_out(x, k, s, p, d, ceil_mode):
    outs = [_nn._pool_geometry(x.shape[2 + i], k[i], s[i], p[i], d[i], ceil_mode)[0] for i in range(len(k))]
    if any(o <= 0 for o in outs):
        sizes = "x".join(str(v) for v in x.shape[1:])
        raise RuntimeError(f"Given input size: ({sizes}). Calculated output size: "
                           f"({x.shape[1]}x{'x'.join(str(o) for o in outs)}). Output size is too small")


# (max_pool3d with return_indices, for MaxUnpool3d: the n-d kernel of max_pool2d_with_indices)
_max_pool3d_idx = defop("max_pool3d_with_indices", _nn._max_pool_indices, "MaxPool3DWithIndicesBackward0",
                        diff_outputs=(0,))


def _max_pool_nd(nd, input, kernel_size, stride, padding, dilation, ceil_mode, return_indices):
    x, unb = _batchify(input, nd, f"max_pool{nd}d")
    k, s, p, d = _pool_args(nd, kernel_size, stride, padding, dilation)
    _check_pool_out(x, k, s, p, d, ceil_mode)
    kw = dict(kernel=k, stride=s, padding=p, dilation=d, ceil_mode=bool(ceil_mode))
    if return_indices:
        out, idx = _nn.apply(_max_pool3d_idx if nd == 3 else _nn._max_pool2d_idx, x, **kw)
        return (out.squeeze(0), idx.squeeze(0)) if unb else (out, idx)
    out = _nn.apply(_nn._max_pool3d if nd == 3 else _nn._max_pool2d, x, **kw)
    return out.squeeze(0) if unb else out


def max_pool2d(input: Tensor, kernel_size, stride=None, padding=0, dilation=1, ceil_mode: bool = False,
               return_indices: bool = False):
    """2-D max pooling (``MaxPool2DWithIndicesBackward0``); ``return_indices`` gives flat H*W indices."""
    return _max_pool_nd(2, input, kernel_size, stride, padding, dilation, ceil_mode, return_indices)


def max_pool1d(input: Tensor, kernel_size, stride=None, padding=0, dilation=1, ceil_mode: bool = False,
               return_indices: bool = False):
    """1-D max pooling, computed as 2-D over a unit height (PyTorch's graph: ``SqueezeBackward1``)."""
    k, s, p, d = (_tuple(v, 1)[0] for v in (kernel_size, kernel_size if stride is None else stride, padding,
                                            dilation))
    r = max_pool2d(input.unsqueeze(-2), (1, k), (1, s), (0, p), (1, d), ceil_mode, return_indices)
    if return_indices:
        return r[0].squeeze(-2), r[1].squeeze(-2)
    return r.squeeze(-2)


def max_pool3d(input: Tensor, kernel_size, stride=None, padding=0, dilation=1, ceil_mode: bool = False,
               return_indices: bool = False):
    return _max_pool_nd(3, input, kernel_size, stride, padding, dilation, ceil_mode, return_indices)


def _avg_pool_nd(nd, input, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override):
    x, unb = _batchify(input, nd, f"avg_pool{nd}d")
    k, s, p, _ = _pool_args(nd, kernel_size, stride, padding)
    _check_pool_out(x, k, s, p, (1,) * nd, ceil_mode)
    op = _nn._avg_pool3d if nd == 3 else _nn._avg_pool2d
    out = _nn.apply(op, x, kernel=k, stride=s, padding=p, ceil_mode=bool(ceil_mode),
                    count_include_pad=bool(count_include_pad), divisor_override=divisor_override)
    return out.squeeze(0) if unb else out


def avg_pool2d(input: Tensor, kernel_size, stride=None, padding=0, ceil_mode: bool = False,
               count_include_pad: bool = True, divisor_override: int | None = None) -> Tensor:
    """2-D average pooling (``AvgPool2DBackward0``)."""
    return _avg_pool_nd(2, input, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override)


def avg_pool1d(input: Tensor, kernel_size, stride=None, padding=0, ceil_mode: bool = False,
               count_include_pad: bool = True) -> Tensor:
    k, s, p = (_tuple(v, 1)[0] for v in (kernel_size, kernel_size if stride is None else stride, padding))
    return avg_pool2d(input.unsqueeze(-2), (1, k), (1, s), (0, p), ceil_mode, count_include_pad).squeeze(-2)


def avg_pool3d(input: Tensor, kernel_size, stride=None, padding=0, ceil_mode: bool = False,
               count_include_pad: bool = True, divisor_override: int | None = None) -> Tensor:
    return _avg_pool_nd(3, input, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override)


def _out_size(x, output_size, nd):
    if not isinstance(output_size, (tuple, list)):
        output_size = (output_size,) * nd
    spatial = x.shape[2:]
    return tuple(int(spatial[i]) if o is None else int(o) for i, o in enumerate(output_size))


def adaptive_avg_pool2d(input: Tensor, output_size) -> Tensor:
    """Average over adaptive bins (``AdaptiveAvgPool2DBackward0``; a plain mean for output 1x1)."""
    x, unb = _batchify(input, 2, "adaptive_avg_pool2d")
    size = _out_size(x, output_size, 2)
    if size == (1, 1):  # PyTorch computes this case as a mean (MeanBackward1)
        out = x.mean((-1, -2), keepdim=True)
    else:
        out = _nn.apply(_nn._adaptive_avg_pool2d, x, output_size=size)
    return out.squeeze(0) if unb else out


def adaptive_avg_pool1d(input: Tensor, output_size) -> Tensor:
    o = output_size[0] if isinstance(output_size, (tuple, list)) else output_size
    return adaptive_avg_pool2d(input.unsqueeze(-2), (1, o)).squeeze(-2)


def adaptive_avg_pool3d(input: Tensor, output_size) -> Tensor:
    x, unb = _batchify(input, 3, "adaptive_avg_pool3d")
    out = _nn.apply(_nn._adaptive_avg_pool3d, x, output_size=_out_size(x, output_size, 3))
    return out.squeeze(0) if unb else out


def adaptive_max_pool2d(input: Tensor, output_size, return_indices: bool = False):
    """Max over adaptive bins (``AdaptiveMaxPool2DBackward0``)."""
    x, unb = _batchify(input, 2, "adaptive_max_pool2d")
    out, idx = _nn.apply(_nn._adaptive_max_pool2d, x, output_size=_out_size(x, output_size, 2))
    if unb:
        out, idx = out.squeeze(0), idx.squeeze(0)
    return (out, idx) if return_indices else out


def adaptive_max_pool1d(input: Tensor, output_size, return_indices: bool = False):
    o = output_size[0] if isinstance(output_size, (tuple, list)) else output_size
    out, idx = adaptive_max_pool2d(input.unsqueeze(-2), (1, o), True)
    out, idx = out.squeeze(-2), idx.squeeze(-2)
    return (out, idx) if return_indices else out


# ================================ resampling =====================================================
def interpolate(input: Tensor, size=None, scale_factor=None, mode: str = "nearest", align_corners=None,
                recompute_scale_factor=None, antialias: bool = False) -> Tensor:
    """Resize (N, C, *spatial) by ``size`` or ``scale_factor``: nearest, (bi/tri)linear.

    >>> import funcgrad
    >>> import funcgrad.nn.functional as F
    >>> F.interpolate(funcgrad.tensor([[[1., 2.]]]), scale_factor=2)
    tensor([[[1., 1., 2., 2.]]])
    """
    nd = input.ndim - 2
    if mode in ("nearest", "area", "nearest-exact") and align_corners is not None:
        raise ValueError("align_corners option can only be set with the interpolating modes: "
                         "linear | bilinear | bicubic | trilinear")
    if size is not None and scale_factor is not None:
        raise ValueError("only one of size or scale_factor should be defined")
    spatial = input.shape[2:]
    if size is not None:
        out = _tuple(size, nd, "size") if isinstance(size, (tuple, list)) else (int(size),) * nd
        scales = tuple(spatial[i] / out[i] for i in range(nd))
    elif scale_factor is not None:
        sf = tuple(scale_factor) if isinstance(scale_factor, (tuple, list)) else (scale_factor,) * nd
        out = tuple(int(math.floor(spatial[i] * sf[i])) for i in range(nd))
        scales = tuple(spatial[i] / out[i] if recompute_scale_factor else 1.0 / sf[i] for i in range(nd))
    else:
        raise ValueError("either size or scale_factor should be defined")
    if mode == "area":
        return {1: adaptive_avg_pool1d, 2: adaptive_avg_pool2d, 3: adaptive_avg_pool3d}[nd](input, out)
    if mode == "nearest":
        return _nn.upsample_op(input, "nearest", out, scales, None)
    if mode == "bicubic":
        if nd != 2:
            raise NotImplementedError(f"Input Error: Only 3D, 4D and 5D input Tensors supported (got "
                                      f"{input.ndim}D) for the modes: nearest | linear | bilinear | bicubic | "
                                      f"trilinear | lanczos | area | nearest-exact (got {mode})")
        return _nn.apply(_sample.upsample_bicubic2d, input, size=tuple(out), scales=tuple(scales),
                         align_corners=bool(align_corners))
    expected = {"linear": 1, "bilinear": 2, "trilinear": 3}.get(mode)
    if expected is None:
        raise NotImplementedError(f"Input Error: Only 3D, 4D and 5D input Tensors supported (got "
                                  f"{input.ndim}D) for the modes: nearest | linear | bilinear | bicubic | "
                                  f"trilinear | area | nearest-exact (got {mode})")
    if expected != nd:
        raise NotImplementedError(f"Got {input.ndim}D input, but {mode} mode needs {expected + 2}D input")
    if align_corners is None:
        align_corners = False
    return _nn.upsample_op(input, mode, out, scales, align_corners)


def upsample(input, size=None, scale_factor=None, mode="nearest", align_corners=None):
    warnings.warn("nn.functional.upsample is deprecated. Use nn.functional.interpolate instead.",
                  stacklevel=2)
    return interpolate(input, size, scale_factor, mode, align_corners)


def pixel_shuffle(input: Tensor, upscale_factor: int) -> Tensor:
    """(*, C·r², H, W) → (*, C, H·r, W·r)."""
    c = input.shape[-3]
    if c % (upscale_factor ** 2):
        raise RuntimeError(f"pixel_shuffle expects its input's 'channel' dimension to be divisible by "
                           f"the square of upscale_factor, but input.size(-3)={c} is not divisible by "
                           f"{upscale_factor ** 2}")
    return _nn.apply(_nn._pixel_shuffle_op, input, r=int(upscale_factor))


def pixel_unshuffle(input: Tensor, downscale_factor: int) -> Tensor:
    """(*, C, H·r, W·r) → (*, C·r², H, W)."""
    return _nn.apply(_nn._pixel_unshuffle_op, input, r=int(downscale_factor))
