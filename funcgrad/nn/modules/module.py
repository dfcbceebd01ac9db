"""``torch.nn.modules.module`` import path: re-exports of funcgrad's layers (defined in ``funcgrad/nn/layers``)."""

from ..module import _IncompatibleKeys as _IncompatibleKeys  # noqa: F401
from ..module import Module as Module  # noqa: F401

__all__ = ['Module']
