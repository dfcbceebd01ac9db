"""``torch.nn.modules.distance`` import path: re-exports of funcgrad's layers (defined in ``funcgrad/nn/layers``)."""

from ..layers.extra import CosineSimilarity as CosineSimilarity  # noqa: F401
from ..layers.extra import PairwiseDistance as PairwiseDistance  # noqa: F401

__all__ = ['CosineSimilarity', 'PairwiseDistance']
