"""The op table. Each module declares its ops once (``defop``) with their frontends (``export``);
importing this package installs the Tensor methods and dunders generated from them."""

from __future__ import annotations

from . import linalg, pointwise, reduce, shape  # noqa: F401  (declare the ops)
from . import nn_loss  # noqa: F401  (losses)
from ._registry import FUNCTIONS, METHODS, OPS, apply, install

install()

__all__ = ["OPS", "FUNCTIONS", "METHODS", "apply"]
