"""Pooling layers: max / average / adaptive, 1-D to 3-D (PyTorch's args and reprs)."""

from __future__ import annotations

from .. import functional as F
from ..module import Module


class _MaxPoolNd(Module):
    _fn = None

    def __init__(self, kernel_size, stride=None, padding=0, dilation=1, return_indices: bool = False,
                 ceil_mode: bool = False) -> None:
        super().__init__()
        self.kernel_size = kernel_size
        self.stride = stride if stride is not None else kernel_size
        self.padding, self.dilation = padding, dilation
        self.return_indices, self.ceil_mode = return_indices, ceil_mode

    def forward(self, input):
        return type(self)._fn(input, self.kernel_size, self.stride, self.padding, self.dilation,
                              ceil_mode=self.ceil_mode, return_indices=self.return_indices)

    def extra_repr(self) -> str:
        return (f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}, "
                f"dilation={self.dilation}, ceil_mode={self.ceil_mode}")


class MaxPool1d(_MaxPoolNd):
    _fn = staticmethod(F.max_pool1d)


class MaxPool2d(_MaxPoolNd):
    """2-D max pooling.

    >>> import funcgrad
    >>> from funcgrad import nn
    >>> nn.MaxPool2d(2)(funcgrad.arange(16.).view(1, 1, 4, 4))
    tensor([[[[ 5.,  7.],
              [13., 15.]]]])
    """

    _fn = staticmethod(F.max_pool2d)


class MaxPool3d(_MaxPoolNd):
    _fn = staticmethod(F.max_pool3d)


class AvgPool1d(Module):
    def __init__(self, kernel_size, stride=None, padding=0, ceil_mode: bool = False,
                 count_include_pad: bool = True) -> None:
        super().__init__()
        one = lambda v: tuple(v) if isinstance(v, (tuple, list)) else (v,)  # noqa: E731
        self.kernel_size = one(kernel_size)
        self.stride = one(stride if stride is not None else kernel_size)
        self.padding = one(padding)
        self.ceil_mode, self.count_include_pad = ceil_mode, count_include_pad

    def forward(self, input):
        return F.avg_pool1d(input, self.kernel_size, self.stride, self.padding, self.ceil_mode,
                            self.count_include_pad)

    def extra_repr(self) -> str:
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"


class _AvgPoolNd(Module):
    _fn = None

    def __init__(self, kernel_size, stride=None, padding=0, ceil_mode: bool = False,
                 count_include_pad: bool = True, divisor_override: int | None = None) -> None:
        super().__init__()
        self.kernel_size = kernel_size
        self.stride = stride if stride is not None else kernel_size
        self.padding, self.ceil_mode = padding, ceil_mode
        self.count_include_pad, self.divisor_override = count_include_pad, divisor_override

    def forward(self, input):
        return type(self)._fn(input, self.kernel_size, self.stride, self.padding, self.ceil_mode,
                              self.count_include_pad, self.divisor_override)

    def extra_repr(self) -> str:
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"


class AvgPool2d(_AvgPoolNd):
    """2-D average pooling."""

    _fn = staticmethod(F.avg_pool2d)


class AvgPool3d(_AvgPoolNd):
    _fn = staticmethod(F.avg_pool3d)


class _AdaptiveNd(Module):
    _fn = None

    def __init__(self, output_size) -> None:
        super().__init__()
        self.output_size = output_size

    def forward(self, input):
        return type(self)._fn(input, self.output_size)

    def extra_repr(self) -> str:
        return f"output_size={self.output_size}"


class AdaptiveAvgPool1d(_AdaptiveNd):
    _fn = staticmethod(F.adaptive_avg_pool1d)


class AdaptiveAvgPool2d(_AdaptiveNd):
    """Average pooling to a fixed ``output_size`` whatever the input size."""

    _fn = staticmethod(F.adaptive_avg_pool2d)


class AdaptiveAvgPool3d(_AdaptiveNd):
    _fn = staticmethod(F.adaptive_avg_pool3d)


class _AdaptiveMaxNd(_AdaptiveNd):
    def __init__(self, output_size, return_indices: bool = False) -> None:
        super().__init__(output_size)
        self.return_indices = return_indices

    def forward(self, input):
        return type(self)._fn(input, self.output_size, self.return_indices)


class AdaptiveMaxPool1d(_AdaptiveMaxNd):
    _fn = staticmethod(F.adaptive_max_pool1d)


class AdaptiveMaxPool2d(_AdaptiveMaxNd):
    _fn = staticmethod(F.adaptive_max_pool2d)


class AdaptiveMaxPool3d(_AdaptiveMaxNd):
    _fn = staticmethod(F.adaptive_max_pool3d)


def _ntuple(v, n):
    return tuple(v) if isinstance(v, (tuple, list)) else (v,) * n


class _MaxUnpoolNd(Module):
    """The partial inverse of max pooling: ``forward(input, indices, output_size=None)``."""

    _nd = 2
    _fn = None

    def __init__(self, kernel_size, stride=None, padding=0) -> None:
        super().__init__()
        self.kernel_size = _ntuple(kernel_size, self._nd)
        self.stride = _ntuple(stride if stride is not None else kernel_size, self._nd)
        self.padding = _ntuple(padding, self._nd)

    def forward(self, input, indices, output_size=None):
        return type(self)._fn(input, indices, self.kernel_size, self.stride, self.padding, output_size)

    def extra_repr(self) -> str:
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"


class MaxUnpool1d(_MaxUnpoolNd):
    _nd, _fn = 1, staticmethod(F.max_unpool1d)


class MaxUnpool2d(_MaxUnpoolNd):
    """Each pooled value back at its ``MaxPool2d`` index, zeros elsewhere.

    >>> import funcgrad
    >>> from funcgrad import nn
    >>> out, idx = nn.MaxPool2d(2, return_indices=True)(funcgrad.arange(4.).view(1, 1, 2, 2))
    >>> nn.MaxUnpool2d(2)(out, idx)
    tensor([[[[0., 0.],
              [0., 3.]]]])
    """

    _nd, _fn = 2, staticmethod(F.max_unpool2d)


class MaxUnpool3d(_MaxUnpoolNd):
    _nd, _fn = 3, staticmethod(F.max_unpool3d)


class _LPPoolNd(Module):
    _fn = None

    def __init__(self, norm_type: float, kernel_size, stride=None, ceil_mode: bool = False) -> None:
        super().__init__()
        self.norm_type, self.kernel_size = norm_type, kernel_size
        self.stride, self.ceil_mode = stride, ceil_mode

    def forward(self, input):
        return type(self)._fn(input, float(self.norm_type), self.kernel_size, self.stride, self.ceil_mode)

    def extra_repr(self) -> str:
        return (f"norm_type={self.norm_type}, kernel_size={self.kernel_size}, stride={self.stride}, "
                f"ceil_mode={self.ceil_mode}")


class LPPool1d(_LPPoolNd):
    """Power-average pooling: ``(sum of x^p over the window)^(1/p)``."""

    _fn = staticmethod(F.lp_pool1d)


class LPPool2d(_LPPoolNd):
    _fn = staticmethod(F.lp_pool2d)


class LPPool3d(_LPPoolNd):
    _fn = staticmethod(F.lp_pool3d)


class _FractionalMaxPoolNd(Module):
    """Fractional max pooling; ``_random_samples`` (a buffer, ``None`` by default: drawn per call)
    place the windows."""

    _nd = 2
    _fn = None

    def __init__(self, kernel_size, output_size=None, output_ratio=None, return_indices: bool = False,
                 _random_samples=None) -> None:
        super().__init__()
        nd = self._nd
        seq = isinstance(kernel_size, (tuple, list))
        if nd == 3 and (not seq and kernel_size <= 0 or seq and not all(k > 0 for k in kernel_size)):
            raise ValueError(f"kernel_size must be greater than 0, but got {kernel_size}")
        self.kernel_size = _ntuple(kernel_size, nd)
        self.return_indices = return_indices
        self.register_buffer("_random_samples", _random_samples)
        self.output_size = _ntuple(output_size, nd) if output_size is not None else None
        self.output_ratio = _ntuple(output_ratio, nd) if output_ratio is not None else None
        if output_size is None and output_ratio is None:
            raise ValueError(f"{type(self).__name__} requires specifying either an output size, or a pooling "
                             "ratio")
        if output_size is not None and output_ratio is not None:
            raise ValueError("only one of output_size and output_ratio may be specified")
        if self.output_ratio is not None and not all(0 < r < 1 for r in self.output_ratio[:nd]):
            raise ValueError(f"output_ratio must be between 0 and 1 (got {output_ratio})")

    def forward(self, input):
        return type(self)._fn(input, self.kernel_size, self.output_size, self.output_ratio,
                              self.return_indices, _random_samples=self._random_samples)


class FractionalMaxPool2d(_FractionalMaxPoolNd):
    _nd, _fn = 2, staticmethod(F.fractional_max_pool2d)


class FractionalMaxPool3d(_FractionalMaxPoolNd):
    _nd, _fn = 3, staticmethod(F.fractional_max_pool3d)


class Upsample(Module):
    """``F.interpolate`` as a layer."""

    def __init__(self, size=None, scale_factor=None, mode: str = "nearest", align_corners=None,
                 recompute_scale_factor=None) -> None:
        super().__init__()
        self.size, self.mode, self.align_corners = size, mode, align_corners
        self.scale_factor = float(scale_factor) if isinstance(scale_factor, (int, float)) else scale_factor
        self.recompute_scale_factor = recompute_scale_factor

    def forward(self, input):
        return F.interpolate(input, self.size, self.scale_factor, self.mode, self.align_corners,
                             recompute_scale_factor=self.recompute_scale_factor)

    def extra_repr(self) -> str:
        if self.scale_factor is not None:
            info = f"scale_factor={self.scale_factor!r}"
        else:
            info = f"size={self.size!r}"
        return info + f", mode={self.mode!r}"


class PixelShuffle(Module):
    def __init__(self, upscale_factor: int) -> None:
        super().__init__()
        self.upscale_factor = upscale_factor

    def forward(self, input):
        return F.pixel_shuffle(input, self.upscale_factor)

    def extra_repr(self) -> str:
        return f"upscale_factor={self.upscale_factor}"


class PixelUnshuffle(Module):
    def __init__(self, downscale_factor: int) -> None:
        super().__init__()
        self.downscale_factor = downscale_factor

    def forward(self, input):
        return F.pixel_unshuffle(input, self.downscale_factor)

    def extra_repr(self) -> str:
        return f"downscale_factor={self.downscale_factor}"


class _PadNd(Module):
    _mode = "constant"
    _nd = 1

    def __init__(self, padding, value: float = 0.0) -> None:
        super().__init__()
        self.padding = tuple(padding) if isinstance(padding, (tuple, list)) else (padding,) * (2 * self._nd)
        self.value = value

    def forward(self, input):
        return F.pad(input, self.padding, self._mode, self.value if self._mode == "constant" else None)

    def extra_repr(self) -> str:
        if self._mode == "constant" and type(self).__name__.startswith("Constant"):
            return f"padding={self.padding}, value={self.value}"
        return f"{self.padding}"


def _pad_cls(name, mode, nd):
    if mode == "constant":
        def __init__(self, padding, value: float) -> None:
            _PadNd.__init__(self, padding, value)
    elif mode == "zeros":
        def __init__(self, padding) -> None:
            _PadNd.__init__(self, padding, 0.0)
        mode = "constant"
    else:
        def __init__(self, padding) -> None:
            _PadNd.__init__(self, padding)
    return type(name, (_PadNd,), {"_mode": mode, "_nd": nd, "__init__": __init__,
                                  "__module__": __name__})


ConstantPad1d, ConstantPad2d, ConstantPad3d = (_pad_cls(f"ConstantPad{d}d", "constant", d) for d in (1, 2, 3))
ZeroPad1d, ZeroPad2d, ZeroPad3d = (_pad_cls(f"ZeroPad{d}d", "zeros", d) for d in (1, 2, 3))
ReflectionPad1d, ReflectionPad2d, ReflectionPad3d = (_pad_cls(f"ReflectionPad{d}d", "reflect", d)
                                                     for d in (1, 2, 3))
ReplicationPad1d, ReplicationPad2d, ReplicationPad3d = (_pad_cls(f"ReplicationPad{d}d", "replicate", d)
                                                        for d in (1, 2, 3))
CircularPad1d, CircularPad2d, CircularPad3d = (_pad_cls(f"CircularPad{d}d", "circular", d) for d in (1, 2, 3))
