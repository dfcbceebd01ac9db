"""``funcgrad.utils``: ``funcgrad.utils.data`` (datasets, samplers, DataLoader)."""

from . import data as data

__all__ = ["data"]
from . import benchmark as benchmark  # noqa: E402
