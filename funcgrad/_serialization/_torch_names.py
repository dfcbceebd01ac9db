"""The PyTorch names a ``torch.save`` pickle refers to, and what funcgrad puts in their place.

A PyTorch checkpoint's pickle names ``torch._utils._rebuild_tensor_v2``, ``torch.FloatStorage``,
``torch.float32``, ``torch.Size``... Reading, these names resolve (through an allowlist, never an
import) to the stand-ins below, which build funcgrad Tensors. Writing, funcgrad's pickler emits
the stand-ins' own names and :func:`rewrite_globals` renames them to PyTorch's, so PyTorch reads
the file as one of its own.
"""

from __future__ import annotations

import collections
import importlib
import io
import pickletools

import numpy as np

from .. import _dtype
from .._device import device as _device_cls
from .._tensor import Size
from ._limits import Corrupt


class StorageType:
    """A stand-in for ``torch.FloatStorage`` & co. in a storage's persistent id: it carries the
    dtype of the storage (``None`` for an unsupported torch dtype, ``uint8`` for UntypedStorage)."""

    __slots__ = ("name", "dtype", "torch_dtype")

    def __init__(self, name: str, dtype, torch_dtype: str):
        self.name, self.dtype, self.torch_dtype = name, dtype, torch_dtype

    def __repr__(self) -> str:
        return f"<storage type torch.{self.name}>"

    def __reduce__(self):
        return self.name  # pickled by reference: GLOBAL funcgrad._serialization._torch_names <name>


class UnsupportedDtype:
    """A torch dtype funcgrad has no counterpart for (``torch.uint16``, ``torch.float8_e4m3fn``)."""

    __slots__ = ("name",)

    def __init__(self, name: str):
        self.name = name

    def __repr__(self) -> str:
        return f"torch.{self.name}"


# torch storage class -> (funcgrad dtype, torch dtype name)
_STORAGES = {
    "BoolStorage": (_dtype.bool_, "bool"), "ByteStorage": (_dtype.uint8, "uint8"),
    "CharStorage": (_dtype.int8, "int8"), "ShortStorage": (_dtype.int16, "int16"),
    "IntStorage": (_dtype.int32, "int32"), "LongStorage": (_dtype.int64, "int64"),
    "HalfStorage": (_dtype.float16, "float16"), "BFloat16Storage": (_dtype.bfloat16, "bfloat16"),
    "FloatStorage": (_dtype.float32, "float32"), "DoubleStorage": (_dtype.float64, "float64"),
    "ComplexFloatStorage": (_dtype.complex64, "complex64"),
    "ComplexDoubleStorage": (_dtype.complex128, "complex128"),
}
BoolStorage = StorageType("BoolStorage", *_STORAGES["BoolStorage"])
ByteStorage = StorageType("ByteStorage", *_STORAGES["ByteStorage"])
CharStorage = StorageType("CharStorage", *_STORAGES["CharStorage"])
ShortStorage = StorageType("ShortStorage", *_STORAGES["ShortStorage"])
IntStorage = StorageType("IntStorage", *_STORAGES["IntStorage"])
LongStorage = StorageType("LongStorage", *_STORAGES["LongStorage"])
HalfStorage = StorageType("HalfStorage", *_STORAGES["HalfStorage"])
BFloat16Storage = StorageType("BFloat16Storage", *_STORAGES["BFloat16Storage"])
FloatStorage = StorageType("FloatStorage", *_STORAGES["FloatStorage"])
DoubleStorage = StorageType("DoubleStorage", *_STORAGES["DoubleStorage"])
ComplexFloatStorage = StorageType("ComplexFloatStorage", *_STORAGES["ComplexFloatStorage"])
ComplexDoubleStorage = StorageType("ComplexDoubleStorage", *_STORAGES["ComplexDoubleStorage"])
UntypedStorage = StorageType("UntypedStorage", _dtype.uint8, "uint8")
# torch storage types funcgrad has no dtype for: readable names, refused when used
_UNSUPPORTED_STORAGES = ("QUInt8Storage", "QInt8Storage", "QInt32Storage", "QUInt4x2Storage",
                         "QUInt2x4Storage", "ComplexHalfStorage")
_UNSUPPORTED_DTYPES = ("uint16", "uint32", "uint64", "complex32", "float8_e4m3fn",
                       "float8_e5m2", "float8_e4m3fnuz", "float8_e5m2fnuz", "float8_e8m0fnu",
                       "float4_e2m1fn_x2", "quint8", "qint8", "qint32", "quint4x2", "quint2x4",
                       "bits8", "bits16", "bits1x8", "bits2x4", "bits4x2",
                       *[f"int{i}" for i in range(1, 8)], *[f"uint{i}" for i in range(1, 8)])

STORAGE_BY_DTYPE = {_STORAGES[n][0]: globals()[n] for n in _STORAGES}


def _rebuild_tensor_v2(storage, storage_offset, size, stride, requires_grad=False,
                       backward_hooks=None, metadata=None):
    """``torch._utils._rebuild_tensor_v2``: a tensor over ``storage`` (a loaded storage)."""
    return storage.tensor(storage_offset, size, stride, requires_grad, None)


def _rebuild_tensor(storage, storage_offset, size, stride):
    """``torch._utils._rebuild_tensor``."""
    return storage.tensor(storage_offset, size, stride, False, None)


def _rebuild_tensor_v3(storage, storage_offset, size, stride, requires_grad, backward_hooks,
                       dtype, metadata=None):
    """``torch._utils._rebuild_tensor_v3``: as v2, with the dtype given (an untyped storage)."""
    return storage.tensor(storage_offset, size, stride, requires_grad, dtype)


def _parameter_cls():
    # resolved like any pickled global: by name, when a file needs it (funcgrad.nn sits above
    # serialization in the layering, so it cannot be imported at the top of this module)
    return importlib.import_module("funcgrad.nn.parameter").Parameter


def _rebuild_parameter(data, requires_grad, backward_hooks=None):
    """``torch._utils._rebuild_parameter``: an ``nn.Parameter`` sharing ``data``'s storage."""
    if data is None:  # a validating first pass builds no tensors
        return None
    if not requires_grad and data.requires_grad:
        data = data.detach()
    return _parameter_cls()(data, bool(requires_grad))


def _rebuild_parameter_with_state(data, requires_grad, backward_hooks, state):
    """``torch._utils._rebuild_parameter_with_state`` (the state's attributes are set)."""
    p = _rebuild_parameter(data, requires_grad)
    if state:
        raise Corrupt("a Parameter with extra Python state cannot be loaded by funcgrad")
    return p


def _torch_device(*args):
    return _device_cls(*args)


def _encode(obj, encoding="latin1"):
    """``_codecs.encode``, as protocol-2 pickles spell ``bytes``: str -> bytes only."""
    if type(obj) is not str or encoding not in ("latin1", "latin-1"):
        raise Corrupt("_codecs.encode is only used for bytes (str, 'latin1')")
    return obj.encode("latin1")


def _bytearray(data=b""):
    if type(data) not in (bytes, str):  # bytearray(n) would allocate n bytes
        raise Corrupt("bytearray is only rebuilt from its bytes")
    return bytearray(data.encode("latin1") if type(data) is str else data)


def _complex(real=0.0, imag=0.0):
    if type(real) not in (int, float) or type(imag) not in (int, float):
        raise Corrupt("complex is only rebuilt from two numbers")
    return complex(real, imag)


def _size(dims=()):
    if type(dims) is not tuple or not all(type(d) is int for d in dims):
        raise Corrupt("torch.Size is only rebuilt from a tuple of ints")
    return Size(dims)


_THIS = __name__
# full PyTorch name -> what it means in funcgrad, for the restricted unpickler
ALLOWED: dict[str, object] = {
    "collections.OrderedDict": collections.OrderedDict,
    "collections.Counter": collections.Counter,
    "builtins.set": set,
    "builtins.bytearray": _bytearray,
    "builtins.complex": _complex,
    "_codecs.encode": _encode,
    "torch.Size": _size,
    "torch.device": _torch_device,
    "torch._utils._rebuild_tensor": _rebuild_tensor,
    "torch._utils._rebuild_tensor_v2": _rebuild_tensor_v2,
    "torch._utils._rebuild_tensor_v3": _rebuild_tensor_v3,
    "torch._utils._rebuild_parameter": _rebuild_parameter,
    "torch._utils._rebuild_parameter_with_state": _rebuild_parameter_with_state,
    "torch.storage.UntypedStorage": UntypedStorage,
}
ALLOWED.update({f"torch.{n}": globals()[n] for n in _STORAGES})
ALLOWED.update({f"torch.{n}": StorageType(n, None, n) for n in _UNSUPPORTED_STORAGES})
ALLOWED.update({f"torch.{d.name}": d for d in _dtype.ALL})
ALLOWED.update({f"torch.{n}": UnsupportedDtype(n) for n in _UNSUPPORTED_DTYPES})
# Parameter is resolved when used (see _parameter_cls); NEWOBJ of it is allowed like PyTorch's
LAZY = {"torch.nn.parameter.Parameter": _parameter_cls}

# (module, name) funcgrad's pickler emits -> (module, name) PyTorch knows
_DTYPE_ATTRS = {id(v): k for k, v in vars(_dtype).items() if isinstance(v, _dtype.dtype)}
RENAMES: dict[tuple[str, str], tuple[str, str]] = {
    (_THIS, "_rebuild_tensor_v2"): ("torch._utils", "_rebuild_tensor_v2"),
    (_THIS, "_rebuild_parameter"): ("torch._utils", "_rebuild_parameter"),
    (_THIS, "UntypedStorage"): ("torch.storage", "UntypedStorage"),
    (Size.__module__, "Size"): ("torch", "Size"),
    (_device_cls.__module__, "device"): ("torch", "device"),
}
RENAMES.update({(_THIS, n): ("torch", n) for n in _STORAGES})
RENAMES.update({(_dtype.__name__, attr): ("torch", d.name)
                for attr, d in vars(_dtype).items() if isinstance(d, _dtype.dtype)})


def dtype_attr(d) -> str:
    """The attribute of ``funcgrad._dtype`` that names dtype ``d`` (``bool_`` for bool)."""
    return "bool_" if d is _dtype.bool_ else d.name


def rewrite_globals(data: bytes) -> bytes:
    """Rename the GLOBAL opcodes of a protocol-2 pickle from funcgrad's names to PyTorch's.

    Protocol 2 spells a global inline (``c<module>\\n<name>\\n``) and has no frames; memo
    indices are positions in the memo, not byte offsets, so changing a name's length is safe.
    """
    out = io.BytesIO()
    last = 0
    for op, arg, pos in pickletools.genops(data):
        if op.name == "GLOBAL":
            module, _, name = arg.partition(" ")
            new = RENAMES.get((module, name))
            if new is not None:
                out.write(data[last:pos])
                out.write(b"c" + new[0].encode() + b"\n" + new[1].encode() + b"\n")
                last = pos + 1 + len(module) + 1 + len(name) + 1
    out.write(data[last:])
    return out.getvalue()


def contiguous_strides(shape) -> tuple:
    strides, acc = [], 1
    for s in reversed(shape):
        strides.append(acc)
        acc *= max(int(s), 1)
    return tuple(reversed(strides))


def np_array_bytes(arr: np.ndarray) -> np.ndarray:
    """``arr`` as a C-contiguous little-endian array (what a storage's bytes are)."""
    if arr.dtype.byteorder == ">":
        arr = arr.astype(arr.dtype.newbyteorder("<"))
    return arr if arr.flags.c_contiguous else np.array(arr, order="C")  # (ascontiguousarray makes 0-d 1-d)
