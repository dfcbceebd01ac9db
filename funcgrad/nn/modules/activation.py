"""``torch.nn.modules.activation`` import path: re-exports of funcgrad's layers (defined in ``funcgrad/nn/layers``)."""

from ..layers.activation import Threshold as Threshold  # noqa: F401
from ..layers.activation import ReLU as ReLU  # noqa: F401
from ..layers.activation import Hardtanh as Hardtanh  # noqa: F401
from ..layers.activation import ReLU6 as ReLU6  # noqa: F401
from ..layers.activation import Sigmoid as Sigmoid  # noqa: F401
from ..layers.activation import Hardsigmoid as Hardsigmoid  # noqa: F401
from ..layers.activation import Tanh as Tanh  # noqa: F401
from ..layers.activation import SiLU as SiLU  # noqa: F401
from ..layers.activation import Mish as Mish  # noqa: F401
from ..layers.activation import Hardswish as Hardswish  # noqa: F401
from ..layers.activation import ELU as ELU  # noqa: F401
from ..layers.activation import CELU as CELU  # noqa: F401
from ..layers.activation import SELU as SELU  # noqa: F401
from ..layers.activation import GLU as GLU  # noqa: F401
from ..layers.activation import GELU as GELU  # noqa: F401
from ..layers.activation import Hardshrink as Hardshrink  # noqa: F401
from ..layers.activation import LeakyReLU as LeakyReLU  # noqa: F401
from ..layers.activation import LogSigmoid as LogSigmoid  # noqa: F401
from ..layers.activation import Softplus as Softplus  # noqa: F401
from ..layers.activation import Softshrink as Softshrink  # noqa: F401
from ..layers.activation import PReLU as PReLU  # noqa: F401
from ..layers.activation import Softsign as Softsign  # noqa: F401
from ..layers.activation import Tanhshrink as Tanhshrink  # noqa: F401
from ..layers.activation import Softmin as Softmin  # noqa: F401
from ..layers.activation import Softmax as Softmax  # noqa: F401
from ..layers.activation import Softmax2d as Softmax2d  # noqa: F401
from ..layers.activation import LogSoftmax as LogSoftmax  # noqa: F401
from ..layers.attention import MultiheadAttention as MultiheadAttention  # noqa: F401
from ..layers.activation import RReLU as RReLU  # noqa: F401

__all__ = ['Threshold', 'ReLU', 'Hardtanh', 'ReLU6', 'Sigmoid', 'Hardsigmoid', 'Tanh', 'SiLU', 'Mish', 'Hardswish', 'ELU', 'CELU', 'SELU', 'GLU', 'GELU', 'Hardshrink', 'LeakyReLU', 'LogSigmoid', 'Softplus', 'Softshrink', 'MultiheadAttention', 'PReLU', 'Softsign', 'Tanhshrink', 'Softmin', 'Softmax', 'Softmax2d', 'LogSoftmax', 'RReLU']
