"""PyTorch's checkpoint formats, read and written without PyTorch.

Zip format (``torch.save`` since 1.6): an archive whose members sit under one folder
(``archive/`` for file objects, the file's stem for paths): ``data.pkl`` (a protocol-2 pickle
whose tensors are ``_rebuild_tensor_v2(<storage>, offset, size, stride, ...)`` and whose storages
are persistent ids ``('storage', torch.FloatStorage, key, location, numel)``), ``data/<key>`` (the
raw little-endian bytes of each storage, 64-byte aligned), ``byteorder``, ``version``,
``.format_version`` and ``.storage_alignment``.

Legacy format (``_use_new_zipfile_serialization=False``): five pickles in a row — a magic number,
the protocol version, system info, the object, and the list of storage keys — then, per key, an
int64 element count and the storage's bytes.
"""

from __future__ import annotations

import collections
import io
import os
import pickle
import struct
import zipfile
from typing import Any, Callable

import numpy as np

from .. import _dtype
from .._device import device as _device_cls
from .._tensor import Size, Tensor, _is_tracer
from . import _torch_names as N
from ._limits import MAX_EXPANDED_ELEMENTS, MAX_PICKLE_BYTES, Corrupt, brief, check_member
from ._unpickler import FullUnpickler, WeightsUnpickler

MAGIC_NUMBER = 0x1950A86A20F9469CFC6C
PROTOCOL_VERSION = 1001
ALIGNMENT = 64
_CHUNK = 1 << 24  # bytes written per call, so large tensors need no second full-size copy


# ---- loaded storages and the tensors over them ---------------------------------------------------
class LoadedStorage:
    """One storage of a checkpoint: its bytes as a 1-D array, and the tensors viewing it.

    The first tensor that covers the whole storage contiguously becomes the storage's *root* (a
    plain tensor, no kernel runs); any other tensor over the same storage whose layout is a
    permuted dense block is a view of the root, so writes through one show in the other, as in
    PyTorch. Other layouts (steps, overlaps) are copied out.
    """

    def __init__(self, array: np.ndarray | None, numel: int, dtype, location: str,
                 place: Callable):
        self.array, self.numel, self.dtype, self.location = array, numel, dtype, location
        self.place = place
        self.root: Tensor | None = None
        self.flat: Tensor | None = None

    def _flat(self) -> Tensor:
        if self.flat is None:
            if self.root is None:
                self.root = self.flat = self.place(self.array, self.location)
            else:
                self.flat = self.root.view(-1)
        return self.flat

    def tensor(self, offset, size, stride, requires_grad, dtype) -> Tensor | None:
        if dtype is not None:  # _rebuild_tensor_v3: an untyped (byte) storage seen as `dtype`
            if isinstance(dtype, N.UnsupportedDtype):
                raise Corrupt(f"a tensor of dtype {brief(dtype)}, which funcgrad does not support")
            if not isinstance(dtype, _dtype.dtype):
                raise Corrupt(f"a tensor with the dtype {brief(dtype)}")
            return self._typed(dtype).tensor(offset, size, stride, requires_grad, None)
        if type(offset) is not int or type(size) not in (tuple, Size) or type(stride) not in (tuple, Size) \
                or len(size) != len(stride) or not all(type(v) is int for v in (*size, *stride)):
            raise Corrupt(f"a tensor with a malformed layout (offset {brief(offset)}, size {brief(size)}, "
                          f"stride {brief(stride)})")
        size, stride = tuple(size), tuple(stride)
        if offset < 0 or any(s < 0 for s in size) or any(s < 0 for s in stride):
            raise Corrupt(f"a tensor with a negative offset, size or stride ({offset}, {size}, {stride})")
        n = 1
        for s in size:
            n *= s
        if n and offset + sum((s - 1) * st for s, st in zip(size, stride)) >= self.numel:
            raise Corrupt(f"a tensor (offset {offset}, size {list(size)}, stride {list(stride)}) "
                          f"reaches past the end of its storage of {self.numel} elements")
        if self.array is None:  # a first pass that only validates (legacy format)
            return None
        if n == 0:
            t = self.place(np.zeros(size, self.dtype.np), self.location)
        else:
            t = self._layout(offset, size, stride, n, bool(requires_grad))
        if requires_grad:
            t.requires_grad_(True)
        return t

    def _typed(self, dtype) -> "LoadedStorage":
        cache = self.__dict__.setdefault("_views", {})
        if dtype not in cache:
            if self.numel % dtype.itemsize:
                raise Corrupt(f"a storage of {self.numel} bytes is not a whole number of {dtype.name}")
            arr = None if self.array is None else self.array.view(dtype.np)
            cache[dtype] = LoadedStorage(arr, self.numel // dtype.itemsize, dtype, self.location,
                                         self.place)
        return cache[dtype]

    def _layout(self, offset, size, stride, n, requires_grad) -> Tensor:
        dims = sorted((d for d in range(len(size)) if size[d] != 1), key=lambda d: -stride[d])
        expect, dense = 1, True
        for d in reversed(dims):
            dense &= stride[d] == expect
            expect *= size[d]
        identity = dims == sorted(dims)
        if dense and identity and offset == 0 and n == self.numel and self.root is None:
            self.root = self.place(self.array.reshape(size), self.location)
            return self.root
        if dense and not requires_grad:
            # a view of the storage: slice, view in stride order, permute back
            perm = dims + [d for d in range(len(size)) if size[d] == 1]
            flat = self._flat()
            block = flat if (offset == 0 and n == self.numel) else flat[offset:offset + n]
            v = block.view(tuple(size[d] for d in perm))
            inv = [perm.index(d) for d in range(len(size))]
            return v.permute(*inv) if inv != sorted(inv) else v
        if n > self.numel + MAX_EXPANDED_ELEMENTS:
            raise Corrupt(f"a tensor of {n} elements over a storage of {self.numel} (its layout "
                          f"repeats elements); funcgrad materialises such tensors and refuses "
                          f"more than {MAX_EXPANDED_ELEMENTS} extra elements")
        item = self.array.itemsize
        arr = np.lib.stride_tricks.as_strided(self.array[offset:], size, [s * item for s in stride])
        return self.place(np.array(arr), self.location)


def _storage_dtype(storage_type):
    if not isinstance(storage_type, N.StorageType):
        raise Corrupt(f"a storage of type {brief(storage_type)}")
    if storage_type.dtype is None:
        raise Corrupt(f"a storage of type torch.{storage_type.name}, which funcgrad does not support")
    return storage_type.dtype


def _parse_pid(pid):
    if type(pid) is not tuple or len(pid) not in (5, 6) or pid[0] not in ("storage", b"storage"):
        raise Corrupt(f"an unknown persistent id {brief(pid)}")
    _, storage_type, key, location, numel = pid[:5]
    if type(numel) is not int or numel < 0:
        raise Corrupt(f"a storage with the element count {brief(numel)}")
    if isinstance(location, bytes):
        location = location.decode("latin1")
    if type(location) is not str or type(key) not in (str, int):
        raise Corrupt("a storage with a malformed key or location")
    view = pid[5] if len(pid) == 6 else None
    return _storage_dtype(storage_type), str(key), location, numel, view


def _unpickle(data: bytes, persistent_load, weights_only: bool, encoding: str):
    if weights_only:
        return WeightsUnpickler(data, persistent_load, encoding=encoding).load()
    return FullUnpickler(io.BytesIO(data), persistent_load, encoding=encoding).load()


# ---- reading: zip -----------------------------------------------------------------------------------
def find_prefix(names: list[str]) -> str | None:
    """The folder holding ``data.pkl`` in a PyTorch zip checkpoint, or None."""
    for n in names:
        if n.endswith("data.pkl") and n.count("/") == 1:
            return n[: -len("data.pkl")]
    return None


def load_zip(zf: zipfile.ZipFile, prefix: str, archive_size: int, place, weights_only: bool,
             encoding: str) -> Any:
    names = set(zf.namelist())
    byteorder = "little"
    if prefix + "byteorder" in names:
        byteorder = _read_member(zf, prefix + "byteorder", archive_size).decode("ascii", "replace")
        if byteorder not in ("little", "big"):
            raise Corrupt(f"unknown byte order {byteorder!r}")
    storages: dict[str, LoadedStorage] = {}

    def persistent_load(pid):
        dtype, key, location, numel, _ = _parse_pid(pid)
        if key in storages:
            return storages[key]
        name = f"{prefix}data/{key}"
        try:
            info = zf.getinfo(name)
        except KeyError:
            raise Corrupt(f"the archive has no data for storage {key!r}") from None
        nbytes = numel * dtype.itemsize
        if info.file_size != nbytes:
            raise Corrupt(f"storage {key!r} declares {numel} elements of {dtype.name} "
                          f"({nbytes} bytes) but the archive holds {info.file_size} bytes")
        raw = _read_member(zf, name, archive_size)
        arr = np.frombuffer(raw, dtype=dtype.np.newbyteorder("<" if byteorder == "little" else ">"))
        arr = arr.astype(dtype.np, copy=False)
        storages[key] = LoadedStorage(arr, numel, dtype, location, place)
        return storages[key]

    data = _read_member(zf, prefix + "data.pkl", archive_size, MAX_PICKLE_BYTES)
    return _unpickle(data, persistent_load, weights_only, encoding)


def _read_member(zf, name: str, archive_size: int, limit: int | None = None) -> bytes:
    try:
        info = zf.getinfo(name)
    except KeyError:
        raise Corrupt(f"the archive has no {name}") from None
    check_member(info, archive_size)
    if limit is not None and info.file_size > limit:
        raise Corrupt(f"{name} is {info.file_size} bytes, more than the {limit} allowed")
    try:
        return zf.read(info)  # checks the CRC
    except Exception as e:  # BadZipFile, zlib.error, EOFError, an encrypted member...: damaged
        raise Corrupt(f"cannot read {name} ({type(e).__name__}: {e})") from None


# ---- reading: legacy ----------------------------------------------------------------------------------
def load_legacy(data: bytes, place, weights_only: bool, encoding: str) -> Any:
    """Read the pre-1.6 format from the whole file's bytes."""
    def skip_pickle(pos: int, what: str):
        """(value, end) of the small pickle at ``pos`` (magic number, version, sys info, keys)."""
        u = WeightsUnpickler(data[pos:], lambda pid: (_ for _ in ()).throw(
            Corrupt(f"a persistent id in the {what}")), encoding=encoding)
        value = u.load()
        return value, pos + u.pos

    magic, pos = skip_pickle(0, "magic number")
    if magic != MAGIC_NUMBER:
        raise RuntimeError("Invalid magic number; corrupt file?")
    version, pos = skip_pickle(pos, "protocol version")
    if version != PROTOCOL_VERSION:
        raise RuntimeError(f"Invalid protocol version: {version}")
    sys_info, pos = skip_pickle(pos, "system info")
    little = not isinstance(sys_info, dict) or sys_info.get("little_endian", True)
    main_start = pos
    declared: dict[str, tuple] = {}

    def record(pid):  # first pass: note each storage; tensors are only validated
        dtype, key, location, numel, view = _parse_pid(pid)
        if view is not None:
            raise Corrupt("a storage view (a format older than PyTorch 1.0)")
        declared.setdefault(key, (dtype, location, numel))
        return LoadedStorage(None, numel, dtype, location, place)

    # a dry run: with weights_only=False, globals outside the allowlist are inert placeholders,
    # so nothing runs twice (the real unpickling comes once the storages are read)
    first = WeightsUnpickler(data[main_start:], record, encoding=encoding, dry=not weights_only)
    first.load()
    pos = main_start + first.pos
    keys, pos = skip_pickle(pos, "storage keys")
    if type(keys) is not list or not all(type(k) in (str, int) for k in keys):
        raise Corrupt("the storage key list is malformed")
    storages: dict[str, LoadedStorage] = {}
    for k in map(str, keys):
        if k not in declared or k in storages:
            raise Corrupt(f"storage {k!r} is listed but not used, or listed twice")
        dtype, location, numel = declared[k]
        if pos + 8 > len(data):
            raise Corrupt("the file is truncated (storage header)")
        (count,) = struct.unpack("<q" if little else ">q", data[pos:pos + 8])
        nbytes = count * dtype.itemsize
        if count != numel or pos + 8 + nbytes > len(data):
            raise Corrupt(f"storage {k!r} declares {count} elements of {dtype.name} ({nbytes} "
                          f"bytes); {numel} were expected and {len(data) - pos - 8} bytes are left")
        arr = np.frombuffer(data, dtype=dtype.np.newbyteorder("<" if little else ">"),
                            count=count, offset=pos + 8).astype(dtype.np, copy=False)
        storages[k] = LoadedStorage(arr, numel, dtype, location, place)
        pos += 8 + nbytes
    missing = set(declared) - set(storages)
    if missing:
        raise Corrupt(f"no data for storages {sorted(missing)[:5]}")

    def persistent_load(pid):
        return storages[_parse_pid(pid)[1]]

    return _unpickle(bytes(data[main_start:]), persistent_load, weights_only, encoding)


# ---- writing ----------------------------------------------------------------------------------
class _StorageRef:
    """A tensor's data on its way into the archive: pickled as a persistent id."""

    __slots__ = ("key", "storage_type", "location", "numel")

    def __init__(self, key, storage_type, location, numel):
        self.key, self.storage_type, self.location, self.numel = key, storage_type, location, numel


class _TensorPickler(pickle.Pickler):
    def __init__(self, f, arrays: list, legacy: bool):
        super().__init__(f, protocol=2)
        self.arrays, self.legacy = arrays, legacy

    def persistent_id(self, obj):
        if type(obj) is _StorageRef:
            pid = ("storage", obj.storage_type, obj.key, obj.location, obj.numel)
            return pid + (None,) if self.legacy else pid  # legacy: no storage view
        return None

    def reducer_override(self, obj):
        if isinstance(obj, Tensor):
            return self._tensor(obj)
        if type(obj) is _dtype.dtype:
            return N.dtype_attr(obj)
        if type(obj) is Size:
            return (Size, (tuple(int(s) for s in obj),))
        if type(obj) is _device_cls:
            return (_device_cls, (str(obj),))
        return NotImplemented

    def _tensor(self, t: Tensor):
        v = t._value
        if _is_tracer(v):
            raise TypeError("funcgrad.save: a Tensor is a traced value (inside funcgrad.jit / "
                            "jax.jit); save concrete tensors outside the compiled function")
        arr = N.np_array_bytes(np.asarray(v))
        d = _dtype.from_np(arr.dtype)
        key = str(len(self.arrays))
        self.arrays.append(arr)
        ref = _StorageRef(key, N.STORAGE_BY_DTYPE[d], str(t.device), int(arr.size))
        args = (ref, 0, tuple(arr.shape), N.contiguous_strides(arr.shape))
        if getattr(type(t), "_is_parameter", False):
            inner = N._rebuild_tensor_v2, args + (False, collections.OrderedDict())
            return (N._rebuild_parameter, (_Reduced(*inner), bool(t._requires_grad),
                                           collections.OrderedDict()))
        return (N._rebuild_tensor_v2, args + (bool(t._requires_grad), collections.OrderedDict()))


class _Reduced:
    """An object that pickles as ``fn(*args)`` (the tensor inside a Parameter)."""

    __slots__ = ("fn", "args")

    def __init__(self, fn, args):
        self.fn, self.args = fn, args

    def __reduce__(self):
        return (self.fn, self.args)


def dump(obj: Any, legacy: bool = False) -> tuple[bytes, list[np.ndarray]]:
    """The data.pkl of ``obj`` (in PyTorch's names) and its storages' arrays, in key order."""
    buf, arrays = io.BytesIO(), []
    _TensorPickler(buf, arrays, legacy).dump(obj)
    return N.rewrite_globals(buf.getvalue()), arrays


def write_legacy(fh, pickled: bytes, arrays: list[np.ndarray]) -> None:
    """PyTorch's pre-1.6 format: magic, version, sys info, the object, keys, then the storages."""
    sys_info = {"protocol_version": PROTOCOL_VERSION, "little_endian": True,
                "type_sizes": {"short": 2, "int": 4, "long": 4}}
    for head in (MAGIC_NUMBER, PROTOCOL_VERSION, sys_info):
        fh.write(pickle.dumps(head, protocol=2))
    fh.write(pickled)
    fh.write(pickle.dumps([str(i) for i in range(len(arrays))], protocol=2))
    for arr in arrays:
        fh.write(struct.pack("<q", arr.size))
        flat = arr.reshape(-1).view(np.uint8)
        for start in range(0, flat.nbytes, _CHUNK):
            fh.write(memoryview(flat[start:start + _CHUNK]))


def archive_name(f) -> str:
    """The folder name PyTorch gives the records: the file's stem for paths, else 'archive'."""
    if isinstance(f, (str, os.PathLike)):
        stem = os.path.splitext(os.path.basename(os.fspath(f)))[0]
        if stem and all(c.isalnum() or c in "_-." for c in stem):
            return stem
    return "archive"


def write_zip(fileobj, prefix: str, pickled: bytes, arrays: list[np.ndarray]) -> None:
    """Write the archive as PyTorch's writer does (stored members, storages 64-byte aligned)."""
    with zipfile.ZipFile(fileobj, "w", compression=zipfile.ZIP_STORED, allowZip64=True) as zf:
        zf.writestr(_info(zf, f"{prefix}/data.pkl", len(pickled)), pickled)
        zf.writestr(_info(zf, f"{prefix}/.format_version", 1), b"1")
        zf.writestr(_info(zf, f"{prefix}/.storage_alignment", 2), str(ALIGNMENT).encode())
        zf.writestr(_info(zf, f"{prefix}/byteorder", 6), b"little")
        for i, arr in enumerate(arrays):
            flat = arr.reshape(-1).view(np.uint8)
            big = flat.nbytes * 1.05 > zipfile.ZIP64_LIMIT  # zipfile's own test for zip64
            with zf.open(_info(zf, f"{prefix}/data/{i}", flat.nbytes, big), "w",
                         force_zip64=big) as out:
                for start in range(0, flat.nbytes, _CHUNK):
                    out.write(memoryview(flat[start:start + _CHUNK]))
        zf.writestr(_info(zf, f"{prefix}/version", 2), b"3\n")


def _info(zf: zipfile.ZipFile, name: str, size: int, zip64: bool = False) -> zipfile.ZipInfo:
    """A ZipInfo whose local header is padded so the member's data start 64-byte aligned."""
    info = zipfile.ZipInfo(name, date_time=(1980, 1, 1, 0, 0, 0))
    info.compress_type = zipfile.ZIP_STORED
    info.external_attr = 0o600 << 16
    start = zf.fp.tell() + 30 + len(name.encode()) + (20 if zip64 else 0)
    pad = (-(start + 4)) % ALIGNMENT  # a 4-byte extra-field header, then padding
    info.extra = struct.pack("<HH", 0x4246, pad) + b"Z" * pad  # 'FB', as PyTorch's writer
    return info
