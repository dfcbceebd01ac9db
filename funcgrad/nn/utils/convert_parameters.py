"""``parameters_to_vector`` / ``vector_to_parameters``."""

from __future__ import annotations

from ..._ops.shape import cat as _cat
from ..._tensor import Tensor


def parameters_to_vector(parameters) -> Tensor:
    """All parameters flattened and concatenated into one vector (differentiable).

    >>> import funcgrad
    >>> from funcgrad import nn
    >>> nn.utils.parameters_to_vector(nn.Linear(2, 3).parameters()).shape
    funcgrad.Size([9])
    """
    return _cat([p.reshape(-1) for p in parameters])


def vector_to_parameters(vec: Tensor, parameters) -> None:
    """Copy slices of ``vec`` into the parameters' storage (the Parameter objects stay)."""
    if not isinstance(vec, Tensor):
        raise TypeError(f"expected torch.Tensor, but got: {type(vec).__name__}")
    pointer = 0
    for p in parameters:
        n = p.numel()
        p.data = vec[pointer:pointer + n].view_as(p).detach().clone()
        pointer += n
