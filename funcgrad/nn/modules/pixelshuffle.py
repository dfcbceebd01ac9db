"""``torch.nn.modules.pixelshuffle`` import path: re-exports of funcgrad's layers (defined in ``funcgrad/nn/layers``)."""

from ..layers.pooling import PixelShuffle as PixelShuffle  # noqa: F401
from ..layers.pooling import PixelUnshuffle as PixelUnshuffle  # noqa: F401

__all__ = ['PixelShuffle', 'PixelUnshuffle']
