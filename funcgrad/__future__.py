"""``funcgrad.__future__``: PyTorch's ``torch.__future__``, the switches for how converting an
``nn.Module`` (``.to()``, ``.double()``, ``.to_empty()``...) changes its parameters.

>>> import funcgrad.__future__
>>> funcgrad.__future__.get_swap_module_params_on_conversion()
False
"""

from .nn._swap import get_overwrite_module_params_on_conversion as get_overwrite_module_params_on_conversion
from .nn._swap import get_swap_module_params_on_conversion as get_swap_module_params_on_conversion
from .nn._swap import set_overwrite_module_params_on_conversion as set_overwrite_module_params_on_conversion
from .nn._swap import set_swap_module_params_on_conversion as set_swap_module_params_on_conversion

__all__ = ["get_overwrite_module_params_on_conversion", "get_swap_module_params_on_conversion",
           "set_overwrite_module_params_on_conversion", "set_swap_module_params_on_conversion"]
