"""``torch.nn.modules.sparse`` import path: re-exports of funcgrad's layers (defined in ``funcgrad/nn/layers``)."""

from ..layers.sparse import Embedding as Embedding  # noqa: F401
from ..layers.sparse import EmbeddingBag as EmbeddingBag  # noqa: F401

__all__ = ['Embedding', 'EmbeddingBag']
