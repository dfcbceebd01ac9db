"""``torch.nn.modules.instancenorm`` import path: re-exports of funcgrad's layers (defined in ``funcgrad/nn/layers``)."""

from ..layers.normalization import _InstanceNorm as _InstanceNorm  # noqa: F401
from ..layers.normalization import InstanceNorm1d as InstanceNorm1d  # noqa: F401
from ..layers.normalization import InstanceNorm2d as InstanceNorm2d  # noqa: F401
from ..layers.normalization import InstanceNorm3d as InstanceNorm3d  # noqa: F401
from ..layers.lazy import LazyInstanceNorm1d as LazyInstanceNorm1d  # noqa: F401
from ..layers.lazy import LazyInstanceNorm2d as LazyInstanceNorm2d  # noqa: F401
from ..layers.lazy import LazyInstanceNorm3d as LazyInstanceNorm3d  # noqa: F401

__all__ = ['InstanceNorm1d', 'InstanceNorm2d', 'InstanceNorm3d', 'LazyInstanceNorm1d', 'LazyInstanceNorm2d', 'LazyInstanceNorm3d']
