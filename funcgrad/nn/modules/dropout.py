"""``torch.nn.modules.dropout`` import path: re-exports of funcgrad's layers (defined in ``funcgrad/nn/layers``)."""

from ..layers.dropout import _DropoutNd as _DropoutNd  # noqa: F401
from ..layers.dropout import Dropout as Dropout  # noqa: F401
from ..layers.dropout import Dropout1d as Dropout1d  # noqa: F401
from ..layers.dropout import Dropout2d as Dropout2d  # noqa: F401
from ..layers.dropout import Dropout3d as Dropout3d  # noqa: F401
from ..layers.dropout import AlphaDropout as AlphaDropout  # noqa: F401
from ..layers.dropout import FeatureAlphaDropout as FeatureAlphaDropout  # noqa: F401

__all__ = ['Dropout', 'Dropout1d', 'Dropout2d', 'Dropout3d', 'AlphaDropout', 'FeatureAlphaDropout']
