"""``nn.CTCLoss``: the connectionist temporal classification loss as a layer (issue 18)."""

from __future__ import annotations

from .. import functional as F
from .loss import _Loss


class CTCLoss(_Loss):
    """``F.ctc_loss`` with the blank index, reduction and ``zero_infinity`` fixed at construction.

    >>> import funcgrad
    >>> from funcgrad import nn
    >>> nn.CTCLoss(reduction="sum")(funcgrad.zeros(2, 1, 2).log_softmax(2), funcgrad.tensor([[1]]), [2], [1])
    tensor(0.2877)
    """

    def __init__(self, blank: int = 0, reduction: str = "mean", zero_infinity: bool = False) -> None:
        super().__init__(reduction=reduction)
        self.blank = blank
        self.zero_infinity = zero_infinity

    def forward(self, log_probs, targets, input_lengths, target_lengths):
        return F.ctc_loss(log_probs, targets, input_lengths, target_lengths, self.blank, self.reduction,
                          self.zero_infinity)


__all__ = ["CTCLoss"]
