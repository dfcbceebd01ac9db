"""``Variable``: PyTorch's pre-0.4 wrapper, kept for old scripts (``Variable(t, requires_grad=True)``).

As in PyTorch, ``Variable(t)`` returns a plain ``Tensor`` (an alias of ``t``'s storage and
version counter, a new leaf) and every Tensor is an instance of ``Variable``. ``volatile=True``
has no effect and warns with PyTorch's message.
"""

from __future__ import annotations

import warnings

import jax.numpy as jnp

from .._tensor import Tensor

VOLATILE_MSG = "volatile was removed and now has no effect. Use `with torch.no_grad():` instead."


class VariableMeta(type):
    def __instancecheck__(cls, other) -> bool:
        return isinstance(other, Tensor)


class Variable(metaclass=VariableMeta):
    """``Variable(data, requires_grad=False, volatile=False)`` → ``data`` as a new leaf.

    >>> import funcgrad
    >>> from funcgrad.autograd import Variable
    >>> v = Variable(funcgrad.ones(2), requires_grad=True)
    >>> v, isinstance(v, Variable)
    (tensor([1., 1.], requires_grad=True), True)
    """

    def __new__(cls, data=None, requires_grad: bool = False, volatile: bool = False, **kwargs):
        if kwargs:
            raise TypeError(f"'{next(iter(kwargs))}' is an invalid keyword argument for this function")
        if data is None:
            data = Tensor._wrap(jnp.zeros((0,), jnp.float32))
        elif not isinstance(data, Tensor):
            raise TypeError(f"Variable data has to be a tensor, but got {type(data).__name__}")
        if volatile:
            warnings.warn(VOLATILE_MSG, UserWarning, stacklevel=2)
        if requires_grad and not (data.dtype.is_floating_point or data.dtype.is_complex):
            raise RuntimeError("Only Tensors of floating point and complex dtype can require gradients")
        out = data.detach()
        out.requires_grad = bool(requires_grad)
        return out


__all__ = ["Variable", "VariableMeta"]
