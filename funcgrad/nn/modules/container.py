"""``torch.nn.modules.container`` import path: re-exports of funcgrad's layers (defined in ``funcgrad/nn/layers``)."""

from ..layers.container import Sequential as Sequential  # noqa: F401
from ..layers.container import ModuleList as ModuleList  # noqa: F401
from ..layers.container import ModuleDict as ModuleDict  # noqa: F401
from ..layers.container import ParameterList as ParameterList  # noqa: F401
from ..layers.container import ParameterDict as ParameterDict  # noqa: F401
from ..layers.container import Container as Container  # noqa: F401


__all__ = ['Container', 'Sequential', 'ModuleList', 'ModuleDict', 'ParameterList', 'ParameterDict']
