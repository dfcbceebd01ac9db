"""Layers over existing functions: ``Unfold``/``Fold``, ``CosineSimilarity``, ``PairwiseDistance``,
``ChannelShuffle``, ``UpsamplingNearest2d``/``UpsamplingBilinear2d``, ``HingeEmbeddingLoss``,
``MultiLabelSoftMarginLoss`` and the lazy ``LazyLinear`` (PyTorch's arguments, reprs and init draws)."""

from __future__ import annotations

from ...autograd.grad_mode import no_grad
from .. import functional as F
from ..module import Module
from ..parameter import UninitializedBuffer, UninitializedParameter
from .linear import Linear
from .loss import _Loss, _WeightedLoss
from .pooling import Upsample

__all__ = ["Unfold", "Fold", "CosineSimilarity", "PairwiseDistance", "ChannelShuffle", "UpsamplingNearest2d",
           "UpsamplingBilinear2d", "HingeEmbeddingLoss", "MultiLabelSoftMarginLoss", "LazyModuleMixin",
           "LazyLinear", "UninitializedBuffer", "MultiLabelMarginLoss", "TripletMarginWithDistanceLoss"]


class Unfold(Module):
    """:func:`~funcgrad.nn.functional.unfold` as a layer.

    >>> from funcgrad import nn
    >>> nn.Unfold(kernel_size=(2, 3))
    Unfold(kernel_size=(2, 3), dilation=1, padding=0, stride=1)
    """

    __constants__ = ["kernel_size", "dilation", "padding", "stride"]

    def __init__(self, kernel_size, dilation=1, padding=0, stride=1) -> None:
        super().__init__()
        self.kernel_size, self.dilation, self.padding, self.stride = kernel_size, dilation, padding, stride

    def forward(self, input):
        return F.unfold(input, self.kernel_size, self.dilation, self.padding, self.stride)

    def extra_repr(self) -> str:
        return (f"kernel_size={self.kernel_size}, dilation={self.dilation}, padding={self.padding}, "
                f"stride={self.stride}")


class Fold(Module):
    """:func:`~funcgrad.nn.functional.fold` as a layer.

    >>> from funcgrad import nn
    >>> nn.Fold(output_size=(4, 5), kernel_size=2)
    Fold(output_size=(4, 5), kernel_size=2, dilation=1, padding=0, stride=1)
    """

    __constants__ = ["output_size", "kernel_size", "dilation", "padding", "stride"]

    def __init__(self, output_size, kernel_size, dilation=1, padding=0, stride=1) -> None:
        super().__init__()
        self.output_size, self.kernel_size = output_size, kernel_size
        self.dilation, self.padding, self.stride = dilation, padding, stride

    def forward(self, input):
        return F.fold(input, self.output_size, self.kernel_size, self.dilation, self.padding, self.stride)

    def extra_repr(self) -> str:
        return (f"output_size={self.output_size}, kernel_size={self.kernel_size}, dilation={self.dilation}, "
                f"padding={self.padding}, stride={self.stride}")


class CosineSimilarity(Module):
    """Cosine similarity along ``dim``.

    >>> import funcgrad
    >>> from funcgrad import nn
    >>> nn.CosineSimilarity(dim=0)(funcgrad.tensor([1., 0.]), funcgrad.tensor([1., 1.]))
    tensor(0.7071)
    """

    __constants__ = ["dim", "eps"]

    def __init__(self, dim: int = 1, eps: float = 1e-8) -> None:
        super().__init__()
        self.dim, self.eps = dim, eps

    def forward(self, x1, x2):
        return F.cosine_similarity(x1, x2, self.dim, self.eps)


class PairwiseDistance(Module):
    """``||x1 - x2 + eps||_p`` over the last dim.

    >>> import funcgrad
    >>> from funcgrad import nn
    >>> nn.PairwiseDistance(eps=0.0)(funcgrad.tensor([[0., 0.]]), funcgrad.tensor([[3., 4.]]))
    tensor([5.])
    """

    __constants__ = ["norm", "eps", "keepdim"]

    def __init__(self, p: float = 2.0, eps: float = 1e-6, keepdim: bool = False) -> None:
        super().__init__()
        self.norm, self.eps, self.keepdim = p, eps, keepdim

    def forward(self, x1, x2):
        return F.pairwise_distance(x1, x2, self.norm, self.eps, self.keepdim)


class ChannelShuffle(Module):
    """:func:`~funcgrad.nn.functional.channel_shuffle` as a layer.

    >>> from funcgrad import nn
    >>> nn.ChannelShuffle(2)
    ChannelShuffle(groups=2)
    """

    __constants__ = ["groups"]

    def __init__(self, groups: int) -> None:
        super().__init__()
        self.groups = groups

    def forward(self, input):
        return F.channel_shuffle(input, self.groups)

    def extra_repr(self) -> str:
        return f"groups={self.groups}"


class UpsamplingNearest2d(Upsample):
    """``Upsample(mode='nearest')`` for 4-D inputs.

    >>> from funcgrad import nn
    >>> nn.UpsamplingNearest2d(scale_factor=2)
    UpsamplingNearest2d(scale_factor=2.0, mode='nearest')
    """

    def __init__(self, size=None, scale_factor=None) -> None:
        super().__init__(size, scale_factor, mode="nearest")


class UpsamplingBilinear2d(Upsample):
    """``Upsample(mode='bilinear', align_corners=True)`` for 4-D inputs.

    >>> from funcgrad import nn
    >>> nn.UpsamplingBilinear2d(size=3)
    UpsamplingBilinear2d(size=3, mode='bilinear')
    """

    def __init__(self, size=None, scale_factor=None) -> None:
        super().__init__(size, scale_factor, mode="bilinear", align_corners=True)


class HingeEmbeddingLoss(_Loss):
    """:func:`~funcgrad.nn.functional.hinge_embedding_loss` as a layer."""

    __constants__ = ["margin", "reduction"]

    def __init__(self, margin: float = 1.0, size_average=None, reduce=None, reduction: str = "mean") -> None:
        super().__init__(size_average, reduce, reduction)
        self.margin = margin

    def forward(self, input, target):
        return F.hinge_embedding_loss(input, target, margin=self.margin, reduction=self.reduction)


class MultiLabelSoftMarginLoss(_WeightedLoss):
    """:func:`~funcgrad.nn.functional.multilabel_soft_margin_loss` as a layer."""

    __constants__ = ["reduction"]

    def forward(self, input, target):
        return F.multilabel_soft_margin_loss(input, target, weight=self.weight, reduction=self.reduction)


# ---- lazy modules --------------------------------------------------------------------------------
def _is_lazy(p) -> bool:
    return isinstance(p, (UninitializedParameter, UninitializedBuffer))


class MultiLabelMarginLoss(_Loss):
    """:func:`~funcgrad.nn.functional.multilabel_margin_loss` as a layer."""

    def forward(self, input, target):
        return F.multilabel_margin_loss(input, target, reduction=self.reduction)


class TripletMarginWithDistanceLoss(_Loss):
    """Triplet loss with any distance (a ``PairwiseDistance()`` child module by default)."""

    def __init__(self, *, distance_function=None, margin: float = 1.0, swap: bool = False,
                 reduction: str = "mean") -> None:
        super().__init__(reduction=reduction)
        if margin <= 0:
            raise ValueError("TripletMarginWithDistanceLoss: expected margin to be greater than 0, got "
                             f"{margin} instead")
        self.distance_function = distance_function if distance_function is not None else PairwiseDistance()
        self.margin, self.swap = margin, swap

    def forward(self, anchor, positive, negative):
        return F.triplet_margin_with_distance_loss(anchor, positive, negative,
                                                   distance_function=self.distance_function,
                                                   margin=self.margin, swap=self.swap,
                                                   reduction=self.reduction)


class LazyModuleMixin:
    """PyTorch's lazy-module protocol: parameters stay ``UninitializedParameter`` until the first
    call, where a forward pre-hook runs ``initialize_parameters(*args)`` (which materializes and
    draws the init, as the eager layer would) and the module becomes ``cls_to_become``."""

    cls_to_become = None

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self._initialize_hook = self.register_forward_pre_hook(_infer_parameters, with_kwargs=True)

    def has_uninitialized_params(self) -> bool:
        params = self._parameters.values()
        buffers = self._buffers.values()
        return any(_is_lazy(p) for p in (*params, *buffers))

    def initialize_parameters(self, *args, **kwargs) -> None:
        raise NotImplementedError(f"initialize_parameters is not implemented for {self.__class__.__name__}")

    def _save_to_state_dict(self, destination, prefix, keep_vars) -> None:
        for name, p in self._parameters.items():
            if p is not None:
                destination[prefix + name] = p if keep_vars or _is_lazy(p) else p.detach()
        for name, b in self._buffers.items():
            if b is not None and name not in self._non_persistent_buffers_set:
                destination[prefix + name] = b if keep_vars or _is_lazy(b) else b.detach()


def _infer_parameters(module, args, kwargs=None):
    kwargs = kwargs if kwargs else {}
    module.initialize_parameters(*args, **kwargs)
    if module.has_uninitialized_params():
        raise RuntimeError(f"module {module._get_name()} has not been fully initialized")
    module._initialize_hook.remove()
    del module._initialize_hook
    if module.cls_to_become is not None:
        module.__class__ = module.cls_to_become


class LazyLinear(LazyModuleMixin, Linear):
    """A ``Linear`` whose ``in_features`` is inferred from the first input's last dim; then it
    becomes a plain ``Linear``, initialised with the same draws as ``Linear(in, out)``.

    >>> import funcgrad
    >>> from funcgrad import nn
    >>> m = nn.LazyLinear(3)
    >>> m
    LazyLinear(in_features=0, out_features=3, bias=True)
    >>> _ = m(funcgrad.ones(2, 4)); m
    Linear(in_features=4, out_features=3, bias=True)
    """

    cls_to_become = Linear

    def __init__(self, out_features: int, bias: bool = True, device=None, dtype=None) -> None:
        super().__init__(0, 0, False)
        self.weight = UninitializedParameter(device=device, dtype=dtype)
        self.out_features = out_features
        if bias:
            self.bias = UninitializedParameter(device=device, dtype=dtype)

    def reset_parameters(self) -> None:
        if not self.has_uninitialized_params() and self.in_features != 0:
            super().reset_parameters()

    def initialize_parameters(self, input) -> None:
        if self.has_uninitialized_params():
            with no_grad():
                self.in_features = input.shape[-1]
                self.weight.materialize((self.out_features, self.in_features))
                if self.bias is not None:
                    self.bias.materialize((self.out_features,))
                self.reset_parameters()
        if self.in_features == 0:
            if input.shape[-1] != self.weight.shape[-1]:
                raise AssertionError(f"The in_features inferred from input: {input.shape[-1]} is not equal to "
                                     f"in_features from self.weight: {self.weight.shape[-1]}")
            self.in_features = input.shape[-1]
