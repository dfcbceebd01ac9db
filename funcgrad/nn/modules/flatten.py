"""``torch.nn.modules.flatten`` import path: re-exports of funcgrad's layers (defined in ``funcgrad/nn/layers``)."""

from ..layers.linear import Flatten as Flatten  # noqa: F401
from ..layers.linear import Unflatten as Unflatten  # noqa: F401

__all__ = ['Flatten', 'Unflatten']
