"""``torch.nn.modules.linear`` import path: re-exports of funcgrad's layers (defined in ``funcgrad/nn/layers``)."""

from ..layers.linear import Identity as Identity  # noqa: F401
from ..layers.linear import Linear as Linear  # noqa: F401
from ..layers.linear import Bilinear as Bilinear  # noqa: F401
from ..layers.attention import NonDynamicallyQuantizableLinear as NonDynamicallyQuantizableLinear  # noqa: F401

__all__ = ['Identity', 'Linear', 'NonDynamicallyQuantizableLinear', 'Bilinear']
from ..layers.extra import LazyLinear as LazyLinear  # noqa: F401,E402
__all__ += ['LazyLinear']
