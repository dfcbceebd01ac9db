"""``funcgrad.utils``: ``funcgrad.utils.data`` (datasets, samplers, DataLoader)."""

from . import data as data

__all__ = ["data"]
from . import checkpoint as checkpoint  # noqa: E402
from . import benchmark as benchmark  # noqa: E402
from . import hooks as hooks  # noqa: E402
from ..nn._swap import swap_tensors as swap_tensors  # noqa: E402
