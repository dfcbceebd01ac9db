"""``torch.nn.modules.upsampling`` import path: re-exports of funcgrad's layers (defined in ``funcgrad/nn/layers``)."""

from ..layers.pooling import Upsample as Upsample  # noqa: F401

__all__ = ['Upsample']
from ..layers.extra import UpsamplingBilinear2d as UpsamplingBilinear2d  # noqa: F401,E402
from ..layers.extra import UpsamplingNearest2d as UpsamplingNearest2d  # noqa: F401,E402
__all__ += ['UpsamplingNearest2d', 'UpsamplingBilinear2d']
