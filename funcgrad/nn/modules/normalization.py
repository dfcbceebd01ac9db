"""``torch.nn.modules.normalization`` import path: re-exports of funcgrad's layers (defined in ``funcgrad/nn/layers``)."""

from ..layers.normalization import LocalResponseNorm as LocalResponseNorm  # noqa: F401
from ..layers.normalization import LayerNorm as LayerNorm  # noqa: F401
from ..layers.normalization import GroupNorm as GroupNorm  # noqa: F401
from ..layers.normalization import RMSNorm as RMSNorm  # noqa: F401
from ..layers.normalization import CrossMapLRN2d as CrossMapLRN2d  # noqa: F401


__all__ = ['CrossMapLRN2d', 'LocalResponseNorm', 'LayerNorm', 'GroupNorm', 'RMSNorm']
