"""``torch.nn.modules.pooling`` import path: re-exports of funcgrad's layers (defined in ``funcgrad/nn/layers``)."""

from ..layers.pooling import _MaxPoolNd as _MaxPoolNd  # noqa: F401
from ..layers.pooling import MaxPool1d as MaxPool1d  # noqa: F401
from ..layers.pooling import MaxPool2d as MaxPool2d  # noqa: F401
from ..layers.pooling import MaxPool3d as MaxPool3d  # noqa: F401
from ..layers.pooling import _AvgPoolNd as _AvgPoolNd  # noqa: F401
from ..layers.pooling import AvgPool1d as AvgPool1d  # noqa: F401
from ..layers.pooling import AvgPool2d as AvgPool2d  # noqa: F401
from ..layers.pooling import AvgPool3d as AvgPool3d  # noqa: F401
from ..layers.pooling import AdaptiveMaxPool1d as AdaptiveMaxPool1d  # noqa: F401
from ..layers.pooling import AdaptiveMaxPool2d as AdaptiveMaxPool2d  # noqa: F401
from ..layers.pooling import AdaptiveAvgPool1d as AdaptiveAvgPool1d  # noqa: F401
from ..layers.pooling import AdaptiveAvgPool2d as AdaptiveAvgPool2d  # noqa: F401
from ..layers.pooling import AdaptiveAvgPool3d as AdaptiveAvgPool3d  # noqa: F401
from ..layers.pooling import AdaptiveMaxPool3d as AdaptiveMaxPool3d  # noqa: F401
from ..layers.pooling import _MaxUnpoolNd as _MaxUnpoolNd  # noqa: F401
from ..layers.pooling import MaxUnpool1d as MaxUnpool1d  # noqa: F401
from ..layers.pooling import MaxUnpool2d as MaxUnpool2d  # noqa: F401
from ..layers.pooling import MaxUnpool3d as MaxUnpool3d  # noqa: F401
from ..layers.pooling import _LPPoolNd as _LPPoolNd  # noqa: F401
from ..layers.pooling import LPPool1d as LPPool1d  # noqa: F401
from ..layers.pooling import LPPool2d as LPPool2d  # noqa: F401
from ..layers.pooling import LPPool3d as LPPool3d  # noqa: F401
from ..layers.pooling import FractionalMaxPool2d as FractionalMaxPool2d  # noqa: F401
from ..layers.pooling import FractionalMaxPool3d as FractionalMaxPool3d  # noqa: F401

__all__ = ['MaxPool1d', 'MaxPool2d', 'MaxPool3d', 'AvgPool1d', 'AvgPool2d', 'AvgPool3d', 'AdaptiveMaxPool1d', 'AdaptiveMaxPool2d', 'AdaptiveAvgPool1d', 'AdaptiveAvgPool2d', 'AdaptiveAvgPool3d', 'AdaptiveMaxPool3d', 'MaxUnpool1d', 'MaxUnpool2d', 'MaxUnpool3d', 'LPPool1d', 'LPPool2d', 'LPPool3d', 'FractionalMaxPool2d',
           'FractionalMaxPool3d']
