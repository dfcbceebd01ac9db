"""``torch.nn.modules.upsampling`` import path: re-exports of funcgrad's layers (defined in ``funcgrad/nn/layers``)."""

from ..layers.pooling import Upsample as Upsample  # noqa: F401

__all__ = ['Upsample']
