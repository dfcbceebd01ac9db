"""Loss modules: thin wrappers holding the options of the functions in ``_functional_loss``."""

from __future__ import annotations

from .. import _functional_loss as F
from .._deprecated import deprecated_class
from ..module import Module

__all__ = ["MSELoss", "L1Loss", "SmoothL1Loss", "HuberLoss", "CrossEntropyLoss", "NLLLoss", "NLLLoss2d",
           "BCELoss", "BCEWithLogitsLoss", "KLDivLoss", "CosineEmbeddingLoss", "MarginRankingLoss",
           "TripletMarginLoss", "SoftMarginLoss", "MultiMarginLoss", "GaussianNLLLoss",
           "PoissonNLLLoss"]


class _Loss(Module):
    def __init__(self, size_average=None, reduce=None, reduction: str = "mean") -> None:
        super().__init__()
        if size_average is not None or reduce is not None:
            reduction = F._reduction(size_average, reduce, reduction)
        self.reduction = reduction


class _WeightedLoss(_Loss):
    def __init__(self, weight=None, size_average=None, reduce=None, reduction: str = "mean") -> None:
        super().__init__(size_average, reduce, reduction)
        self.register_buffer("weight", weight)


class MSELoss(_Loss):
    """Mean squared error (``MseLossBackward0``).

    >>> import funcgrad
    >>> from funcgrad import nn
    >>> nn.MSELoss()(funcgrad.tensor([1., 2.]), funcgrad.tensor([1., 4.]))
    tensor(2.)
    """

    def forward(self, input, target):
        return F.mse_loss(input, target, reduction=self.reduction)


class L1Loss(_Loss):
    """Mean absolute error."""

    def forward(self, input, target):
        return F.l1_loss(input, target, reduction=self.reduction)


class SmoothL1Loss(_Loss):
    """Smooth L1 with threshold ``beta``."""

    def __init__(self, size_average=None, reduce=None, reduction: str = "mean", beta: float = 1.0):
        super().__init__(size_average, reduce, reduction)
        self.beta = beta

    def forward(self, input, target):
        return F.smooth_l1_loss(input, target, reduction=self.reduction, beta=self.beta)


class HuberLoss(_Loss):
    """Huber loss with threshold ``delta``."""

    def __init__(self, reduction: str = "mean", delta: float = 1.0):
        super().__init__(reduction=reduction)
        self.delta = delta

    def forward(self, input, target):
        return F.huber_loss(input, target, reduction=self.reduction, delta=self.delta)


class SoftMarginLoss(_Loss):
    def forward(self, input, target):
        return F.soft_margin_loss(input, target, reduction=self.reduction)


class CrossEntropyLoss(_WeightedLoss):
    """Cross entropy of logits against class indices or class probabilities.

    >>> import funcgrad
    >>> from funcgrad import nn
    >>> loss = nn.CrossEntropyLoss()(funcgrad.tensor([[2.0, 0.0, 0.0]]), funcgrad.tensor([0]))
    >>> round(loss.item(), 4)
    0.2395
    """

    __constants__ = ["ignore_index", "reduction", "label_smoothing"]

    def __init__(self, weight=None, size_average=None, ignore_index: int = -100, reduce=None,
                 reduction: str = "mean", label_smoothing: float = 0.0) -> None:
        super().__init__(weight, size_average, reduce, reduction)
        self.ignore_index = ignore_index
        self.label_smoothing = label_smoothing

    def forward(self, input, target):
        return F.cross_entropy(input, target, weight=self.weight, ignore_index=self.ignore_index,
                               reduction=self.reduction, label_smoothing=self.label_smoothing)


class NLLLoss(_WeightedLoss):
    """Negative log likelihood of log-probabilities."""

    def __init__(self, weight=None, size_average=None, ignore_index: int = -100, reduce=None,
                 reduction: str = "mean") -> None:
        super().__init__(weight, size_average, reduce, reduction)
        self.ignore_index = ignore_index

    def forward(self, input, target):
        return F.nll_loss(input, target, weight=self.weight, ignore_index=self.ignore_index,
                          reduction=self.reduction)


@deprecated_class("`NLLLoss2d` has been deprecated. Please use `NLLLoss` instead as a drop-in replacement "
                  "and see https://pytorch.org/docs/main/nn.html#torch.nn.NLLLoss for more details.")
class NLLLoss2d(NLLLoss):
    """Deprecated (PyTorch's ``FutureWarning``): ``NLLLoss``, which takes (N, C, H, W) inputs too."""

    def __init__(self, weight=None, size_average=None, ignore_index: int = -100, reduce=None,
                 reduction: str = "mean") -> None:
        super().__init__(weight, size_average, ignore_index, reduce, reduction)


class BCELoss(_WeightedLoss):
    """Binary cross entropy on probabilities."""

    def forward(self, input, target):
        return F.binary_cross_entropy(input, target, weight=self.weight, reduction=self.reduction)


class BCEWithLogitsLoss(_Loss):
    """Binary cross entropy on logits (stable), with ``pos_weight``."""

    def __init__(self, weight=None, size_average=None, reduce=None, reduction: str = "mean",
                 pos_weight=None) -> None:
        super().__init__(size_average, reduce, reduction)
        self.register_buffer("weight", weight)
        self.register_buffer("pos_weight", pos_weight)

    def forward(self, input, target):
        return F.binary_cross_entropy_with_logits(input, target, self.weight, pos_weight=self.pos_weight,
                                                  reduction=self.reduction)


class KLDivLoss(_Loss):
    """KL divergence; use ``reduction='batchmean'`` for the mathematical definition."""

    def __init__(self, size_average=None, reduce=None, reduction: str = "mean",
                 log_target: bool = False) -> None:
        super().__init__(size_average, reduce, reduction)
        self.log_target = log_target

    def forward(self, input, target):
        return F.kl_div(input, target, reduction=self.reduction, log_target=self.log_target)


class CosineEmbeddingLoss(_Loss):
    def __init__(self, margin: float = 0.0, size_average=None, reduce=None, reduction: str = "mean"):
        super().__init__(size_average, reduce, reduction)
        self.margin = margin

    def forward(self, input1, input2, target):
        return F.cosine_embedding_loss(input1, input2, target, margin=self.margin,
                                       reduction=self.reduction)


class MarginRankingLoss(_Loss):
    def __init__(self, margin: float = 0.0, size_average=None, reduce=None, reduction: str = "mean"):
        super().__init__(size_average, reduce, reduction)
        self.margin = margin

    def forward(self, input1, input2, target):
        return F.margin_ranking_loss(input1, input2, target, margin=self.margin,
                                     reduction=self.reduction)


class TripletMarginLoss(_Loss):
    def __init__(self, margin: float = 1.0, p: float = 2.0, eps: float = 1e-6, swap: bool = False,
                 size_average=None, reduce=None, reduction: str = "mean"):
        super().__init__(size_average, reduce, reduction)
        self.margin, self.p, self.eps, self.swap = margin, p, eps, swap

    def forward(self, anchor, positive, negative):
        return F.triplet_margin_loss(anchor, positive, negative, margin=self.margin, p=self.p,
                                     eps=self.eps, swap=self.swap, reduction=self.reduction)


class MultiMarginLoss(_WeightedLoss):
    def __init__(self, p: int = 1, margin: float = 1.0, weight=None, size_average=None, reduce=None,
                 reduction: str = "mean"):
        super().__init__(weight, size_average, reduce, reduction)
        self.p, self.margin = p, margin

    def forward(self, input, target):
        return F.multi_margin_loss(input, target, p=self.p, margin=self.margin, weight=self.weight,
                                   reduction=self.reduction)


class GaussianNLLLoss(_Loss):
    def __init__(self, *, full: bool = False, eps: float = 1e-6, reduction: str = "mean"):
        super().__init__(reduction=reduction)
        self.full, self.eps = full, eps

    def forward(self, input, target, var):
        return F.gaussian_nll_loss(input, target, var, full=self.full, eps=self.eps,
                                   reduction=self.reduction)


class PoissonNLLLoss(_Loss):
    def __init__(self, log_input: bool = True, full: bool = False, size_average=None, eps: float = 1e-8,
                 reduce=None, reduction: str = "mean"):
        super().__init__(size_average, reduce, reduction)
        self.log_input, self.full, self.eps = log_input, full, eps

    def forward(self, log_input, target):
        return F.poisson_nll_loss(log_input, target, log_input=self.log_input, full=self.full,
                                  eps=self.eps, reduction=self.reduction)
