"""``nn.utils.parametrizations``: ``weight_norm`` as a parametrization (PyTorch's recommended form):
``weight = g · v / ‖v‖`` with ``g`` in ``parametrizations.weight.original0`` and ``v`` in
``original1``, the ``state_dict`` keys PyTorch writes."""

from __future__ import annotations

from ..._dispatch import apply
from ..module import Module
from . import parametrize
from .weight_norm import _norm_op, _weight_norm_all_op, _weight_norm_op

__all__ = ["weight_norm"]


class _WeightNorm(Module):
    def __init__(self, dim: int | None = 0) -> None:
        super().__init__()
        self.dim = -1 if dim is None else dim

    def forward(self, weight_g, weight_v):
        if self.dim == -1:
            return apply(_weight_norm_all_op, weight_v, weight_g)
        return apply(_weight_norm_op, weight_v, weight_g, dim=self.dim)

    def right_inverse(self, weight):
        return apply(_norm_op, weight, dim=self.dim), weight


def weight_norm(module: Module, name: str = "weight", dim: int | None = 0) -> Module:
    """Parametrize ``module.<name>`` as ``g · v / ‖v‖`` (norm over every dim but ``dim``; over all
    with ``dim=None``).

    >>> from funcgrad import nn
    >>> m = nn.utils.parametrizations.weight_norm(nn.Linear(20, 40))
    >>> list(m.state_dict())
    ['bias', 'parametrizations.weight.original0', 'parametrizations.weight.original1']
    >>> m.parametrizations.weight.original0.shape
    funcgrad.Size([40, 1])
    """
    if dim is not None and dim < -1:
        dim = dim % getattr(module, name).ndim
    parametrize.register_parametrization(module, name, _WeightNorm(dim), unsafe=True)
    return module
