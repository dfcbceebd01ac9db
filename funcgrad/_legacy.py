"""PyTorch's legacy tensor names: ``FloatTensor``/``LongTensor``… (the typed constructors that
old scripts and tutorials still use), the ``Tensor(2, 3)`` / ``Tensor([1, 2])`` constructor forms
and the strings of ``Tensor.type()``.

A legacy type is not a subclass of ``Tensor`` (as in PyTorch, whose ``torch.FloatTensor`` is a
``torch.tensortype``): calling it makes an ordinary ``Tensor`` of its dtype, and
``isinstance(x, FloatTensor)`` asks whether ``x`` is a float32 tensor on its device kind.
"""

from __future__ import annotations

import numbers
import sys

import jax
import jax.numpy as jnp
import numpy as np

from . import _dtype, _tensor
from ._device import _devices, jax_device
from ._errors import warn_at_user
from ._factories import tensor as _tensor_factory
from ._runtime import get_default_device, set_default_device, warn_once
from ._tensor import Size, Tensor, _dtype_cname

# (legacy name, dtype) in PyTorch's order; ``Tensor.type()`` spells them "torch.<name>" because
# scripts compare that string (``x.type() == 'torch.FloatTensor'``) and print it.
_NAMES = (("FloatTensor", _dtype.float32), ("DoubleTensor", _dtype.float64),
          ("HalfTensor", _dtype.float16), ("BFloat16Tensor", _dtype.bfloat16),
          ("LongTensor", _dtype.int64), ("IntTensor", _dtype.int32), ("ShortTensor", _dtype.int16),
          ("CharTensor", _dtype.int8), ("ByteTensor", _dtype.uint8), ("BoolTensor", _dtype.bool_),
          ("ComplexFloatTensor", _dtype.complex64), ("ComplexDoubleTensor", _dtype.complex128))
_BY_DTYPE = {d: n for n, d in _NAMES}
_BY_NAME = dict(_NAMES)


def type_string(t: Tensor) -> str:
    """``x.type()``: ``'torch.FloatTensor'``, ``'torch.cuda.LongTensor'``…"""
    where = "" if t.device.type == "cpu" else t.device.type + "."
    return f"torch.{where}{_BY_DTYPE[t.dtype]}"


def to_type(t: Tensor, spec) -> Tensor:
    """``x.type(spec)`` for a legacy type, its string, or a dtype."""
    if isinstance(spec, tensortype):
        return t.to(device=spec.device_type, dtype=spec.dtype) if spec.device_type != "cpu" or \
            t.device.type != "cpu" else t.to(spec.dtype)
    if isinstance(spec, str):
        parts = spec.split(".")
        if parts[0] in ("torch", "funcgrad") and parts[-1] in _BY_NAME and len(parts) in (2, 3):
            dev = parts[1] if len(parts) == 3 else "cpu"
            return t.to(device=dev, dtype=_BY_NAME[parts[-1]]) if dev != t.device.type else \
                t.to(_BY_NAME[parts[-1]])
        raise ValueError(f"invalid type: '{spec}'")
    return t.to(_dtype.to_dtype(spec))


def new(d: _dtype.dtype, args: tuple, kwargs: dict, device=None):
    """The array PyTorch's legacy constructor makes: ``()`` empty, ints or a ``Size`` a shape
    (zeros: XLA has no uninitialised memory), one sequence/array data, one Tensor an alias;
    ``size=``/``data=`` name the one argument."""
    if not args and len(kwargs) == 1 and ("size" in kwargs or "data" in kwargs):
        v = kwargs.pop("size", None)
        args = (Size(v),) if v is not None else (kwargs.pop("data"),)
    if kwargs:
        kinds = ", ".join([type(a).__name__ for a in args] + [f"{k}={_kw_type(v)}" for k, v in kwargs.items()])
        raise TypeError(
            f"new() received an invalid combination of arguments - got ({kinds}), but expected one of:\n"
            " * (*, funcgrad.device device = None)\n"
            f"      didn't match because some of the keywords were incorrect: {', '.join(kwargs)}\n"
            " * (funcgrad.Storage storage)\n * (Tensor other)\n"
            " * (tuple of ints size, *, funcgrad.device device = None)\n"
            " * (object data, *, funcgrad.device device = None)\n")
    if len(args) == 1 and isinstance(args[0], Size):
        args = tuple(args[0])
    if all(isinstance(a, numbers.Integral) and not isinstance(a, bool) or
           isinstance(a, Tensor) and a.ndim == 0 and a.dtype._kind == "i" for a in args):
        shape = tuple(int(a) for a in args)
        for s in shape:
            if s < 0:
                raise RuntimeError(f"Trying to create tensor with negative dimension {s}: {list(shape)}")
        return jnp.zeros(shape if args else (0,), d.np)
    if len(args) > 1:
        pos = next(i for i, a in enumerate(args) if not isinstance(a, numbers.Integral))
        raise TypeError(f"new(): argument 'size' failed to unpack the object at pos {pos + 1} with "
                        f"error \"type must be tuple of ints,but got {type(args[pos]).__name__}\"")
    data = args[0]
    if isinstance(data, Tensor):
        if data.dtype is not d:
            raise TypeError(f"expected TensorOptions(dtype={_cname(d)}, device=cpu, layout=Strided, "
                            "requires_grad=false (default), pinned_memory=false (default), "
                            f"memory_format=(nullopt)) (got TensorOptions(dtype={_cname(data.dtype)}, "
                            "device=cpu, layout=Strided, requires_grad=false (default), "
                            "pinned_memory=false (default), memory_format=(nullopt)))")
        return data
    if isinstance(data, str):
        raise TypeError("new(): invalid data type 'str'")
    if not isinstance(data, (list, tuple, np.ndarray)) and not hasattr(data, "__array__"):
        raise TypeError(f"new(): data must be a sequence (got {type(data).__name__})")
    return _tensor_factory(data, dtype=d, device=device)._value


def _kw_type(v) -> str:
    return "funcgrad.dtype" if isinstance(v, _dtype.dtype) else type(v).__name__


_cname = _dtype_cname


class tensortype(type):
    """The metaclass of the legacy types: calling one builds a Tensor; ``isinstance`` checks
    dtype and device kind."""

    dtype: _dtype.dtype
    device_type: str

    def __call__(cls, *args, device=None, **kwargs):
        if device is None and cls.device_type != "cpu":
            device = cls.device_type
        v = new(cls.dtype, args, kwargs, device)
        if isinstance(v, Tensor):  # Tensor(other): an alias sharing storage, as PyTorch's
            return v.detach() if v.requires_grad else v._share(v._ver)
        t = Tensor._wrap(v)
        return t.to(device) if device is not None else t

    def __instancecheck__(cls, obj) -> bool:
        return isinstance(obj, Tensor) and obj.dtype is cls.dtype and obj.device.type == cls.device_type


def _make(name: str, d: _dtype.dtype, device_type: str, module: str):
    return tensortype(name, (), {"dtype": d, "device_type": device_type, "is_cuda": device_type == "cuda",
                                 "is_sparse": False, "__module__": module,
                                 "__doc__": f"Legacy constructor of {d!r} tensors on {device_type}."})


CPU_TYPES = {n: _make(n, d, "cpu", "funcgrad") for n, d in _NAMES}
CUDA_TYPES = {n: _make(n, d, "cuda", "funcgrad.cuda") for n, d in _NAMES}


_WARNED_TENSOR_TYPE = [False]


def set_default_tensor_type(t, /) -> None:
    """Deprecated (PyTorch 2.1): make a legacy float type's dtype the default (``'torch.DoubleTensor'``
    or ``funcgrad.DoubleTensor``); a CUDA type needs a GPU. Use ``set_default_dtype``.

    >>> import warnings, funcgrad
    >>> with warnings.catch_warnings():
    ...     warnings.simplefilter("ignore")
    ...     funcgrad.set_default_tensor_type("torch.DoubleTensor")
    >>> funcgrad.ones(1).dtype
    funcgrad.float64
    >>> funcgrad.set_default_dtype(funcgrad.float32)
    """
    if isinstance(t, str):  # PyTorch imports the dotted name: "torch.X" is this module's X
        head, _, rest = t.partition(".")
        if head not in ("torch", "funcgrad"):
            raise ModuleNotFoundError(f"No module named '{head}'", name=head)
        kind, _, name = rest.rpartition(".")
        types = {"": CPU_TYPES, "cuda": CUDA_TYPES}.get(kind)
        if types is None or name not in types:
            raise AttributeError(f"module '{head}{'.' + kind if kind else ''}' has no attribute '{name}'")
        t = types[name]
    if warn_once(_WARNED_TENSOR_TYPE):  # (PyTorch's TORCH_WARN_ONCE, before its checks)
        warn_at_user("torch.set_default_tensor_type() is deprecated as of PyTorch 2.1, please use "
                     "torch.set_default_dtype() and torch.set_default_device() as alternatives.", UserWarning)
    if not isinstance(t, tensortype):
        raise TypeError("invalid type object: only floating-point types are supported as the default type")
    if not t.dtype.is_floating_point:
        raise TypeError("only floating-point types are supported as the default type")
    if t.device_type == "cuda" and not _devices("gpu"):
        raise TypeError(f"type torch.cuda.{t.__name__} not available. Torch not compiled with CUDA enabled.")
    _dtype.set_default_dtype(t.dtype)
    # the type's device becomes the factories' too, as in PyTorch: a CUDA type puts new tensors
    # on the GPU, a CPU type back on the CPU (not where set_default_device chose the GPU: in
    # PyTorch that one is a mode above the default type)
    if t.device_type == "cuda":
        set_default_device("cuda")
        _CUDA_TYPE[0] = get_default_device()
    elif _CUDA_TYPE[0] is not None:
        if get_default_device() == _CUDA_TYPE[0]:
            set_default_device(None)
        _CUDA_TYPE[0] = None


_CUDA_TYPE = [None]  # the device a CUDA default tensor type set (set_default_tensor_type)


def legacy_tensor_init(self: Tensor, args: tuple, kwargs: dict) -> None:
    """``Tensor(*args)``: the default-dtype legacy constructor on ``self``."""
    device = kwargs.pop("device", None)
    v = new(_dtype.get_default_dtype(), args, kwargs, device)
    if isinstance(v, Tensor):  # an alias of the other tensor's storage
        alias = v._share(v._ver)
        self._cell, self._ver, self._viewinfo = alias._cell, alias._ver, alias._viewinfo
        return
    if device is not None:
        v = jax.device_put(v, jax_device(device))
    self._cell = _tensor._new_cell(v)  # frame-aware, as Tensor._wrap


_tensor.register_above(legacy=sys.modules[__name__])  # Tensor(2, 3), t.type()
