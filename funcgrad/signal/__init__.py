"""``funcgrad.signal`` (``torch.signal``): ``windows``."""

from __future__ import annotations

from . import windows as windows

__all__ = ["windows"]
