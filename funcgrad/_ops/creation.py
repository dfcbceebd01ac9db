"""Creation helpers: ``Tensor.new_zeros``/``new_ones``/``new_full``/``new_empty``/``new_tensor``
(dtype and device default to ``self``'s) and ``tril_indices``/``triu_indices``."""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np

from .. import _dtype
from .. import _factories
from .._factories import _finish, full, tensor
from ._registry import Tensor, export


def _new(factory_name):
    def method(self, *size, dtype=None, device=None, requires_grad=False, layout=None,
               pin_memory=False) -> Tensor:
        f = getattr(_factories, factory_name)
        return f(*size, dtype=dtype or self.dtype, device=device or self.device,
                 requires_grad=requires_grad)
    method.__name__ = "new_" + factory_name
    method.__doc__ = (f"A new ``{factory_name}`` tensor of ``size`` with ``self``'s dtype and device "
                      f"unless given.")
    return method


export("new_zeros", function=False)(_new("zeros"))
export("new_ones", function=False)(_new("ones"))
export("new_empty", function=False)(_new("empty"))


@export("new_full", function=False)
def new_full(self, size, fill_value, *, dtype=None, device=None, requires_grad=False, layout=None,
             pin_memory=False) -> Tensor:
    """A tensor of ``size`` filled with ``fill_value``, with ``self``'s dtype and device by default.

    >>> import funcgrad
    >>> funcgrad.ones(2, dtype=funcgrad.float64).new_full((2,), 7)
    tensor([7., 7.], dtype=funcgrad.float64)
    """
    return full(size, fill_value, dtype=dtype or self.dtype, device=device or self.device,
                requires_grad=requires_grad)


@export("new_tensor", function=False)
def new_tensor(self, data, *, dtype=None, device=None, requires_grad=False, layout=None,
               pin_memory=False) -> Tensor:
    """A new leaf holding a copy of ``data``, with ``self``'s dtype and device by default."""
    import warnings
    if isinstance(data, Tensor):
        warnings.warn("To copy construct from a tensor, it is recommended to use sourceTensor.clone()."
                      "detach() or sourceTensor.clone().detach().requires_grad_(True), rather than "
                      "tensor.new_tensor(sourceTensor).", UserWarning, stacklevel=2)
        data = data.detach()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return tensor(data, dtype=dtype or self.dtype, device=device or self.device,
                      requires_grad=requires_grad)


def _tri_indices(row, col, offset, lower, dtype, device):
    if row < 0 or col < 0:
        raise RuntimeError(f"row must be non-negative, got{row}" if row < 0 else
                           f"col must be non-negative, got{col}")
    r, c = (np.tril_indices if lower else np.triu_indices)(row, offset, col)
    d = _dtype.int64 if dtype is None else _dtype.to_dtype(dtype)
    return _finish(jnp.asarray(np.stack([r, c]), d.np), False, device)


def tril_indices(row: int, col: int, offset: int = 0, *, dtype=None, device=None, layout=None) -> Tensor:
    """The ``2 x N`` coordinates of the lower triangle of a ``row x col`` matrix (row-major).

    >>> import funcgrad
    >>> funcgrad.tril_indices(2, 2)
    tensor([[0, 1, 1],
            [0, 0, 1]])
    """
    return _tri_indices(row, col, offset, True, dtype, device)


def triu_indices(row: int, col: int, offset: int = 0, *, dtype=None, device=None, layout=None) -> Tensor:
    """The ``2 x N`` coordinates of the upper triangle of a ``row x col`` matrix (row-major)."""
    return _tri_indices(row, col, offset, False, dtype, device)
