"""The module-structure counter, below both ``nn`` and the jit bridge in the import DAG.

``nn.Module.__setattr__``/``__delattr__`` bump it when a module's own ``__dict__`` changes; the
jit bridge's cached layouts check this one counter instead of comparing every module
``__dict__`` value on every call.
"""

from __future__ import annotations

_STRUCTURE = [0]


def structure_changed() -> None:
    """Tell compiled steps that a module attribute changed (their cached layouts rediscover)."""
    _STRUCTURE[0] += 1
