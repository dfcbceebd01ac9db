"""``torch.nn.modules.conv`` import path: re-exports of funcgrad's layers (defined in ``funcgrad/nn/layers``)."""

from ..layers.conv import _ConvNd as _ConvNd  # noqa: F401
from ..layers.conv import Conv1d as Conv1d  # noqa: F401
from ..layers.conv import Conv2d as Conv2d  # noqa: F401
from ..layers.conv import Conv3d as Conv3d  # noqa: F401
from ..layers.conv import _ConvTransposeNd as _ConvTransposeNd  # noqa: F401
from ..layers.conv import ConvTranspose1d as ConvTranspose1d  # noqa: F401
from ..layers.conv import ConvTranspose2d as ConvTranspose2d  # noqa: F401
from ..layers.conv import ConvTranspose3d as ConvTranspose3d  # noqa: F401
from ..layers.lazy import LazyConv1d as LazyConv1d  # noqa: F401
from ..layers.lazy import LazyConv2d as LazyConv2d  # noqa: F401
from ..layers.lazy import LazyConv3d as LazyConv3d  # noqa: F401
from ..layers.lazy import LazyConvTranspose1d as LazyConvTranspose1d  # noqa: F401
from ..layers.lazy import LazyConvTranspose2d as LazyConvTranspose2d  # noqa: F401
from ..layers.lazy import LazyConvTranspose3d as LazyConvTranspose3d  # noqa: F401

__all__ = ['Conv1d', 'Conv2d', 'Conv3d', 'ConvTranspose1d', 'ConvTranspose2d', 'ConvTranspose3d', 'LazyConv1d', 'LazyConv2d', 'LazyConv3d', 'LazyConvTranspose1d', 'LazyConvTranspose2d', 'LazyConvTranspose3d']
