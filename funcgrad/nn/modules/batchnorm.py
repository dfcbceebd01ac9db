"""``torch.nn.modules.batchnorm`` import path: re-exports of funcgrad's layers (defined in ``funcgrad/nn/layers``)."""

from ..layers.normalization import _NormBase as _NormBase  # noqa: F401
from ..layers.normalization import _BatchNorm as _BatchNorm  # noqa: F401
from ..layers.normalization import BatchNorm1d as BatchNorm1d  # noqa: F401
from ..layers.normalization import BatchNorm2d as BatchNorm2d  # noqa: F401
from ..layers.normalization import BatchNorm3d as BatchNorm3d  # noqa: F401
from ..layers.lazy import LazyBatchNorm1d as LazyBatchNorm1d  # noqa: F401
from ..layers.lazy import LazyBatchNorm2d as LazyBatchNorm2d  # noqa: F401
from ..layers.lazy import LazyBatchNorm3d as LazyBatchNorm3d  # noqa: F401
from ..layers.normalization import SyncBatchNorm as SyncBatchNorm  # noqa: F401


__all__ = ['SyncBatchNorm', 'BatchNorm1d', 'BatchNorm2d', 'BatchNorm3d', 'LazyBatchNorm1d', 'LazyBatchNorm2d', 'LazyBatchNorm3d']
