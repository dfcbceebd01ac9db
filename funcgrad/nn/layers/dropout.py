"""Dropout layers: a fresh mask per call in training, identity in eval."""

from __future__ import annotations

from .. import functional as F
from ..module import Module


class _DropoutNd(Module):
    _fn = None

    def __init__(self, p: float = 0.5, inplace: bool = False) -> None:
        super().__init__()
        if p < 0 or p > 1:
            raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
        self.p, self.inplace = p, inplace

    def forward(self, input):
        return type(self)._fn(input, self.p, self.training, self.inplace)

    def extra_repr(self) -> str:
        return f"p={self.p}, inplace={self.inplace}"


class Dropout(_DropoutNd):
    """Zero elements with probability ``p`` in training (scaling the rest by ``1/(1-p)``).

    >>> import funcgrad
    >>> from funcgrad import nn
    >>> nn.Dropout(0.5).eval()(funcgrad.ones(3))
    tensor([1., 1., 1.])
    """

    _fn = staticmethod(F.dropout)


class Dropout1d(_DropoutNd):
    _fn = staticmethod(F.dropout1d)


class Dropout2d(_DropoutNd):
    """Zero whole channels with probability ``p`` in training."""

    _fn = staticmethod(F.dropout2d)


class Dropout3d(_DropoutNd):
    _fn = staticmethod(F.dropout3d)


class AlphaDropout(_DropoutNd):
    def forward(self, input):
        return F.alpha_dropout(input, self.p, self.training)


class FeatureAlphaDropout(_DropoutNd):
    """Alpha dropout of whole channels (PyTorch's module passes no ``inplace``)."""

    def forward(self, input):
        return F.feature_alpha_dropout(input, self.p, self.training)
