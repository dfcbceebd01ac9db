"""``funcgrad.amp``: automatic mixed precision, PyTorch's ``torch.amp`` (``autocast``,
``GradScaler``, ``custom_fwd``/``custom_bwd``).

>>> import funcgrad
>>> with funcgrad.amp.autocast("cpu"):
...     funcgrad.ones(2, 2).mm(funcgrad.ones(2, 2)).dtype
funcgrad.bfloat16
"""

from .autocast_mode import autocast as autocast, custom_bwd as custom_bwd, custom_fwd as custom_fwd
from .autocast_mode import get_autocast_dtype as get_autocast_dtype
from .autocast_mode import is_autocast_available as is_autocast_available
from .autocast_mode import is_autocast_enabled as is_autocast_enabled
from .grad_scaler import GradScaler as GradScaler

__all__ = ["GradScaler", "autocast", "custom_bwd", "custom_fwd", "get_autocast_dtype",
           "is_autocast_available", "is_autocast_enabled"]
