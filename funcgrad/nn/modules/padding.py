"""``torch.nn.modules.padding`` import path: re-exports of funcgrad's layers (defined in ``funcgrad/nn/layers``)."""

from ..layers.pooling import CircularPad1d as CircularPad1d  # noqa: F401
from ..layers.pooling import CircularPad2d as CircularPad2d  # noqa: F401
from ..layers.pooling import CircularPad3d as CircularPad3d  # noqa: F401
from ..layers.pooling import ConstantPad1d as ConstantPad1d  # noqa: F401
from ..layers.pooling import ConstantPad2d as ConstantPad2d  # noqa: F401
from ..layers.pooling import ConstantPad3d as ConstantPad3d  # noqa: F401
from ..layers.pooling import ReflectionPad1d as ReflectionPad1d  # noqa: F401
from ..layers.pooling import ReflectionPad2d as ReflectionPad2d  # noqa: F401
from ..layers.pooling import ReflectionPad3d as ReflectionPad3d  # noqa: F401
from ..layers.pooling import ReplicationPad1d as ReplicationPad1d  # noqa: F401
from ..layers.pooling import ReplicationPad2d as ReplicationPad2d  # noqa: F401
from ..layers.pooling import ReplicationPad3d as ReplicationPad3d  # noqa: F401
from ..layers.pooling import ZeroPad1d as ZeroPad1d  # noqa: F401
from ..layers.pooling import ZeroPad2d as ZeroPad2d  # noqa: F401
from ..layers.pooling import ZeroPad3d as ZeroPad3d  # noqa: F401

__all__ = ['CircularPad1d', 'CircularPad2d', 'CircularPad3d', 'ConstantPad1d', 'ConstantPad2d', 'ConstantPad3d', 'ReflectionPad1d', 'ReflectionPad2d', 'ReflectionPad3d', 'ReplicationPad1d', 'ReplicationPad2d', 'ReplicationPad3d', 'ZeroPad1d', 'ZeroPad2d', 'ZeroPad3d']
