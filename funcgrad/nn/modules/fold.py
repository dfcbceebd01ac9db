"""``torch.nn.modules.fold`` import path: re-exports of funcgrad's layers (defined in ``funcgrad/nn/layers``)."""

from ..layers.extra import Fold as Fold  # noqa: F401
from ..layers.extra import Unfold as Unfold  # noqa: F401

__all__ = ['Fold', 'Unfold']
