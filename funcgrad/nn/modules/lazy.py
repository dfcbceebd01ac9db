"""``torch.nn.modules.lazy`` import path: re-exports of funcgrad's layers (defined in ``funcgrad/nn/layers``)."""

from ..layers.extra import LazyModuleMixin as LazyModuleMixin  # noqa: F401

__all__ = ['LazyModuleMixin']
