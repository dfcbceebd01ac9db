"""The ``meta`` device: tensors with a shape and a dtype and no data (PyTorch's meta tensors).

A meta tensor's storage cell holds a :class:`MetaArray` where others hold a ``jax.Array``: the
shape and dtype only, as ``jax.ShapeDtypeStruct``. Nothing on the normal path tests for it. An
op's kernel refuses it as an argument (it is no JAX type), and dispatch, in the ``except`` of
its kernel call, asks :func:`forward` for the result's shape and dtype: ``jax.eval_shape`` of the
op's own traced function, cached per (op, static arguments, cast, operand avals) like the eager
kernels, so an op's shapes, dtype promotion and shape errors are the eager kernel's. A backward
through a meta graph does the same with the backward kernel (:func:`backward`). Factories that
see ``device='meta'`` (or the meta default device) make a ``MetaArray`` without computing any
value, and random ones draw nothing (PyTorch's meta samplers leave the generator alone).
Whatever reads values (``item``, ``tolist``, ``numpy``, ``bool``, ``.to('cpu')``) raises PyTorch's
error, and the repr is PyTorch's ``tensor(..., device='meta', size=(2, 3))``.

>>> a = MetaArray((2, 3), "float32")
>>> a, a.ndim, a.size
(MetaArray(shape=(2, 3), dtype=float32), 2, 6)
"""

from __future__ import annotations

import jax
import numpy as np

COPY_OUT_MSG = "Cannot copy out of meta tensor; no data!"
ITEM_MSG = "Tensor.item() cannot be called on meta tensors"
NUMPY_MSG = ("can't convert meta device type tensor to numpy. Use Tensor.cpu() to copy the tensor to "
             "host memory first.")
UNSUPPORTED_MSG = ("funcgrad: {} is not supported on the meta device (a meta tensor has a shape and a "
                   "dtype but no data); run it on a tensor of the cpu or cuda device")


class _MetaDevice:
    """What ``_device.jax_device('meta')`` gives: no JAX device holds a meta tensor's data."""

    __slots__ = ()
    platform = "meta"

    def __repr__(self) -> str:
        return "MetaDevice"


DEVICE = _MetaDevice()
_DEVICES = frozenset((DEVICE,))
DEFAULT = [False]  # the default device is meta (``set_default_device('meta')``, ``with device('meta')``)


class MetaArray:
    """A meta tensor's value: ``shape`` and ``dtype`` (a NumPy dtype), no data.

    Reading data raises PyTorch's error; ``devices()`` names the meta device."""

    __slots__ = ("shape", "dtype", "weak_type")

    def __init__(self, shape, dtype, weak_type: bool = False):
        self.shape, self.dtype, self.weak_type = tuple(shape), np.dtype(dtype), weak_type

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def size(self) -> int:
        return int(np.prod(self.shape, dtype=np.int64))

    @property
    def aval(self) -> jax.ShapeDtypeStruct:
        return jax.ShapeDtypeStruct(self.shape, self.dtype, weak_type=self.weak_type)

    def devices(self):
        return _DEVICES

    def astype(self, dtype) -> MetaArray:
        return MetaArray(self.shape, dtype)

    def __array__(self, dtype=None, copy=None):  # (NumPy reading it: an op that reads data)
        raise NotImplementedError(COPY_OUT_MSG)

    def __repr__(self) -> str:
        return f"MetaArray(shape={self.shape}, dtype={self.dtype})"


def of(value) -> MetaArray:
    """The meta value with ``value``'s shape and dtype (a concrete array, a tracer, a MetaArray)."""
    if type(value) is MetaArray:
        return value
    return MetaArray(np.shape(value) if not hasattr(value, "shape") else value.shape,
                     value.dtype if hasattr(value, "dtype") else np.asarray(value).dtype)


def wants(device) -> bool:
    """Whether a factory's ``device`` argument (None: the default device) is the meta device."""
    if device is None:
        return DEFAULT[0]
    if isinstance(device, str):
        return device == "meta" or device.startswith("meta:")
    return getattr(device, "type", None) == "meta"


def is_meta(t) -> bool:
    """Whether the Tensor ``t`` is a meta tensor (its storage holds a MetaArray)."""
    return type(t._cell.value) is MetaArray


def holds(vals) -> bool:
    """Whether some operand value is a MetaArray."""
    for v in vals:
        if type(v) is MetaArray:
            return True
    return False


def refuse_read(v, what: str) -> None:
    """PyTorch's error for reading the values of a meta tensor (``what``: ``Tensor._concrete``'s
    name of the reader). ``item()``/``bool()`` of more than one element keep their own error."""
    if what in ("item()", "bool()"):
        if v.size != 1:
            return
        raise RuntimeError(ITEM_MSG)
    if what in ("numpy()", "__array__"):
        raise TypeError(NUMPY_MSG)
    raise NotImplementedError(COPY_OUT_MSG)


def check_devices(tensors, vals) -> None:
    """PyTorch's ``check_same_device`` (CPU 0-dim tensors allowed with any device): an op mixing
    meta tensors with tensors of another device raises its error. ``vals``: their values."""
    expected = None
    for t, v in zip(tensors, vals, strict=True):
        meta = type(v) is MetaArray
        if not meta and v.ndim == 0:
            continue  # (a CPU scalar tensor goes with any device)
        if expected is None:
            expected = meta, t
        elif expected[0] != meta:
            raise RuntimeError(f"Tensor on device {t.device} is not on the expected device "
                               f"{expected[1].device}!")


# ---- shapes through ops: jax.eval_shape of the kernels, cached --------------------------------------
_CACHE_MAX = 4096
_fwd: dict = {}
_bwd: dict = {}


def _spec(v):
    if type(v) is MetaArray:
        return jax.ShapeDtypeStruct(v.shape, v.dtype, weak_type=v.weak_type)
    if hasattr(v, "aval"):  # a concrete array (or a tracer): its shape only
        a = v.aval
        return jax.ShapeDtypeStruct(a.shape, a.dtype, weak_type=getattr(a, "weak_type", False))
    if isinstance(v, (np.ndarray, np.generic)):
        return jax.ShapeDtypeStruct(v.shape, v.dtype)
    return v


def _key(specs) -> tuple:
    return tuple((s.shape, s.dtype, s.weak_type) if type(s) is jax.ShapeDtypeStruct else
                 (type(s), s) for s in specs)


def _back(out):
    """eval_shape's result as MetaArrays (a tuple stays a tuple, a None None)."""
    if type(out) is tuple or type(out) is list:
        return tuple(_back(o) for o in out)
    if out is None:
        return None
    return MetaArray(out.shape, out.dtype, getattr(out, "weak_type", False))


def _cached(table, key, compute):
    out = table.get(key)
    if out is None:
        out = compute()
        if len(table) >= _CACHE_MAX:
            table.clear()
        table[key] = out
    return out


def forward(op, skey, cast, vals):
    """The result of ``op`` on operands some of which are MetaArrays: MetaArray(s) of the shape
    and dtype its kernel would give (its errors for shapes it refuses)."""
    specs = [_spec(v) for v in vals]
    return _cached(_fwd, (op, skey, cast, _key(specs)),
                   lambda: _back(jax.eval_shape(op.traced(skey, cast, len(vals)), *specs)))


def backward(op, key, vals, cots):
    """The gradients of ``OpNode``'s backward kernel (``op.backward(*key)``) as MetaArrays."""
    specs = [_spec(v) for v in vals]
    cspecs = tuple(None if c is None else _spec(c) for c in cots)
    return _cached(_bwd, (op, key, _key(specs), _key(c for c in cspecs if c is not None),
                          tuple(c is None for c in cspecs)),
                   lambda: _back(jax.eval_shape(op.vjp_fn(*key), specs, cspecs)))


def program(key, make, vals):
    """What the program ``make()`` (a fused backward, cached per ``key``) gives for ``vals``,
    some of them MetaArrays: MetaArrays of its results' shapes and dtypes."""
    specs = [_spec(v) for v in vals]
    return _cached(_bwd, (key, _key(specs)), lambda: _back(jax.eval_shape(make(), *specs)))


def stand_in(v):
    """An empty array of ``v``'s rank and dtype where ``v`` is a MetaArray (a kernel that must run
    on a meta operand's rank without its data), else ``v``."""
    if type(v) is not MetaArray:
        return v
    return jax.device_put(np.zeros((0,) * v.ndim, v.dtype))


def view_value(fn, value):
    """A view's value where its base is meta: ``fn`` (the view chain's function) on shapes."""
    return _back(jax.eval_shape(fn, _spec(value)))


# ops that write their other operands into the first (copy_, x[i] = v): from any device into a
# meta tensor (nothing written), never out of one (dispatch checks the other ops' devices)
ANY_DEVICE = frozenset(("copy", "setitem"))
# where PyTorch's meta kernel checks another operand first (the one whose device is "expected")
DEVICE_ORDER = {"addmm": (1, 0, 2)}
