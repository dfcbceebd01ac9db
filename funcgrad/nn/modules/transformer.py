"""``torch.nn.modules.transformer`` import path: re-exports of funcgrad's layers (defined in ``funcgrad/nn/layers``)."""

from ..layers.transformer import Transformer as Transformer  # noqa: F401
from ..layers.transformer import TransformerEncoder as TransformerEncoder  # noqa: F401
from ..layers.transformer import TransformerDecoder as TransformerDecoder  # noqa: F401
from ..layers.transformer import TransformerEncoderLayer as TransformerEncoderLayer  # noqa: F401
from ..layers.transformer import TransformerDecoderLayer as TransformerDecoderLayer  # noqa: F401

__all__ = ['Transformer', 'TransformerEncoder', 'TransformerDecoder', 'TransformerEncoderLayer', 'TransformerDecoderLayer']
