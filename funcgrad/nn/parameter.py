"""``Parameter`` (a leaf Tensor a ``Module`` registers) and ``Buffer`` (a tensor it keeps as state)."""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np

from .. import _dtype as _d
from .._device import put
from .._tensor import Tensor


def _adopt(self: Tensor, data: Tensor | None) -> None:
    """Make ``self`` share ``data``'s storage cell and version counter (no copy), as a leaf."""
    Tensor._init(self, None)
    if data is None:  # (a deepcopy's placeholder too: a transfer, as jnp.zeros would compile twice)
        self._cell.value = put(np.zeros((0,), np.float32))
        return
    if not isinstance(data, Tensor):
        raise TypeError(f"Parameter/Buffer expects a Tensor as data, got {type(data).__name__}")
    self._cell, self._ver = data._cell, data._ver
    vi = data._viewinfo
    if vi is not None:
        self._viewinfo = vi.copy()


class Parameter(Tensor):
    """A Tensor that is a module parameter: a leaf with ``requires_grad=True`` by default.

    It shares storage with ``data`` (no copy). Assigning one as a ``Module`` attribute registers it.

    >>> import funcgrad
    >>> from funcgrad import nn
    >>> nn.Parameter(funcgrad.ones(2))
    Parameter containing:
    tensor([1., 1.], requires_grad=True)
    """

    _is_parameter = True

    def __new__(cls, data: Tensor | None = None, requires_grad: bool = True):
        self = object.__new__(cls)
        _adopt(self, data)
        if requires_grad:
            self.requires_grad = True  # validates the dtype, with PyTorch's message
        return self

    def __init__(self, data: Tensor | None = None, requires_grad: bool = True):
        pass  # everything happens in __new__ (Tensor.__init__ would reset the storage)

    def __reduce_ex__(self, proto):
        return (_rebuild_parameter, (self.detach(), self._requires_grad))


def _rebuild_parameter(data, requires_grad):
    return Parameter(data, requires_grad)


class Buffer(Tensor):
    """A tensor that, assigned as a ``Module`` attribute, is registered as a buffer.

    ``persistent=False`` keeps it out of ``state_dict``.

    >>> import funcgrad
    >>> from funcgrad import nn
    >>> m = nn.Module()
    >>> m.steps = nn.Buffer(funcgrad.zeros(1))
    >>> list(m.state_dict())
    ['steps']
    """

    def __new__(cls, data: Tensor | None = None, *, persistent: bool = True):
        self = object.__new__(cls)
        _adopt(self, data)
        self.persistent = persistent
        return self

    def __init__(self, data: Tensor | None = None, *, persistent: bool = True):
        pass


class UninitializedParameter(Parameter):
    """A parameter of a lazy module (``nn.LazyLinear``) whose shape is not known yet;
    ``materialize(shape)`` gives it storage and turns it into a plain ``Parameter`` (as PyTorch).

    >>> from funcgrad import nn
    >>> p = nn.UninitializedParameter()
    >>> p
    <UninitializedParameter>
    >>> p.materialize((2, 3)); type(p).__name__, tuple(p.shape)
    ('Parameter', (2, 3))
    """

    cls_to_become = Parameter

    def __new__(cls, requires_grad: bool = True, device=None, dtype=None):
        self = Parameter.__new__(cls, None, requires_grad)
        self._lazy_dtype = dtype
        return self

    def __init__(self, requires_grad: bool = True, device=None, dtype=None):
        pass

    def materialize(self, shape, device=None, dtype=None) -> None:
        """Give the parameter uninitialised storage of ``shape`` (the default dtype unless
        ``dtype`` or the constructor's ``dtype`` says otherwise)."""
        dt = _d.to_dtype(dtype or self.__dict__.get("_lazy_dtype") or _d.get_default_dtype())
        self._cell.value = jnp.zeros(tuple(shape), dt.np)
        self.__dict__.pop("_lazy_dtype", None)
        self.__class__ = self.cls_to_become

    def __repr__(self) -> str:
        return "<UninitializedParameter>"

    __str__ = __repr__

    def __reduce_ex__(self, proto):
        return (UninitializedParameter, (self._requires_grad,))


class UninitializedBuffer(Buffer):
    """A buffer of a lazy module (``nn.LazyBatchNorm1d``'s running stats) whose shape is not known
    yet; ``materialize(shape)`` gives it storage and turns it into a plain ``Tensor`` (as PyTorch).

    >>> from funcgrad import nn
    >>> b = nn.UninitializedBuffer()
    >>> b
    <UninitializedBuffer>
    >>> b.materialize((2,)); type(b).__name__, tuple(b.shape)
    ('Tensor', (2,))
    """

    cls_to_become = Tensor

    def __new__(cls, requires_grad: bool = False, device=None, dtype=None, persistent: bool = True):
        self = Buffer.__new__(cls, None, persistent=persistent)
        self._lazy_dtype = dtype
        if requires_grad:
            self.requires_grad = True
        return self

    def __init__(self, requires_grad: bool = False, device=None, dtype=None, persistent: bool = True):
        pass

    materialize = UninitializedParameter.materialize

    def __repr__(self) -> str:
        return "<UninitializedBuffer>"

    __str__ = __repr__


__all__ = ["Parameter", "Buffer", "UninitializedParameter", "UninitializedBuffer"]
