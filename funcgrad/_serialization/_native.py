"""funcgrad's own checkpoint format of versions before 0.2 (zip + JSON, no pickle): still read.

Format (version 1). A ZIP archive (stored, not compressed) holding:

* ``funcgrad_checkpoint.json`` — the manifest: ``{"format": "funcgrad.checkpoint",
  "version": 1, "tensors": [...], "root": <node>}``. ``root`` describes the saved object as
  tagged JSON nodes (``{"t": "dict", "items": [[key, value], ...]}``, ``{"t": "tensor",
  "id": 3}``, ``{"t": "int", "v": 5}``…).
* ``tensors/<id>`` — one raw little-endian C-order buffer per tensor; its dtype name, shape,
  ``requires_grad`` flag and saved device are in the manifest's ``tensors`` table.

Loading parses JSON and copies bytes, so a file cannot run code. ``save`` (used by tests and by
anyone who needs the old format) writes it.
"""

from __future__ import annotations

import collections
import json
import zipfile
from typing import Any

import numpy as np

from .. import _dtype
from .._device import device as _device_cls
from .._tensor import Size, Tensor, _is_tracer
from ._limits import Corrupt, check_member

FORMAT = "funcgrad.checkpoint"
VERSION = 1
MANIFEST = "funcgrad_checkpoint.json"
_CHUNK = 1 << 24


class _Saver:
    def __init__(self):
        self.tensors: list[dict] = []
        self.arrays: list[np.ndarray] = []
        self.seen: dict[int, int] = {}   # id(Tensor) -> tensor id (dedupe, keep identity)
        self.keep: list = []             # keeps deduped objects alive so ids stay unique
        self.active: set[int] = set()    # containers being encoded (cycle detection)

    def _array(self, arr: np.ndarray, requires_grad: bool, device: str | None, kind: str) -> int:
        d = _dtype.from_np(arr.dtype)
        if arr.dtype.byteorder == ">":
            arr = arr.astype(arr.dtype.newbyteorder("<"))
        self.tensors.append({"dtype": d.name, "shape": list(arr.shape), "requires_grad": requires_grad,
                             "device": device, "kind": kind, "nbytes": int(arr.nbytes)})
        self.arrays.append(np.ascontiguousarray(arr))
        return len(self.tensors) - 1

    def encode(self, obj: Any, path: str) -> dict:
        t = type(obj)
        if obj is None:
            return {"t": "none"}
        if t is bool:
            return {"t": "bool", "v": obj}
        if t is int:
            return {"t": "int", "v": obj}
        if t is float:
            return {"t": "float", "v": obj.hex()}  # exact, and JSON-safe for inf/nan
        if t is complex:
            return {"t": "complex", "re": obj.real.hex(), "im": obj.imag.hex()}
        if t is str:
            return {"t": "str", "v": obj}
        if t is bytes:
            return {"t": "bytes", "v": obj.hex()}
        if isinstance(obj, Tensor):
            key = id(obj)
            if key not in self.seen:
                v = obj._value
                if _is_tracer(v):
                    raise TypeError(f"funcgrad.save: the Tensor at {path} is a traced value (inside "
                                    "funcgrad.jit / jax.jit); save concrete tensors outside the "
                                    "compiled function")
                dev = str(obj.device)
                self.seen[key] = self._array(np.asarray(v), bool(obj._requires_grad), dev, "tensor")
                self.keep.append(obj)
            return {"t": "tensor", "id": self.seen[key]}
        if t is np.ndarray:
            if obj.dtype.kind in "SaUOVM m":
                raise TypeError(f"funcgrad.save cannot save a NumPy array of dtype {obj.dtype} "
                                f"(at {path}): only numeric and bool arrays are supported")
            try:
                return {"t": "ndarray", "id": self._array(obj, False, None, "ndarray")}
            except TypeError:
                raise TypeError(f"funcgrad.save cannot save a NumPy array of dtype {obj.dtype} "
                                f"(at {path})") from None
        if isinstance(obj, np.generic) and obj.dtype.kind in "biufc":
            try:
                d = _dtype.from_np(obj.dtype)
            except TypeError:
                raise TypeError(f"funcgrad.save cannot save a NumPy scalar of dtype {obj.dtype} "
                                f"(at {path})") from None
            return {"t": "npscalar", "dtype": d.name, "v": self.encode(obj.item(), path)}
        if t is _dtype.dtype:
            return {"t": "dtype", "v": obj.name}
        if t is _device_cls:
            return {"t": "device", "v": str(obj)}
        if t is Size:
            return {"t": "size", "v": [int(s) for s in obj]}
        if t in (dict, collections.OrderedDict, list, tuple):
            if id(obj) in self.active:
                raise ValueError(f"funcgrad.save: the object at {path} contains itself (a cycle)")
            self.active.add(id(obj))
            try:
                return self._container(obj, t, path)
            finally:
                self.active.discard(id(obj))
        raise TypeError(
            f"funcgrad.save cannot save an object of type {t.__module__}.{t.__qualname__} (at "
            f"{path}): a funcgrad checkpoint holds only Tensors, NumPy arrays and scalars, and "
            "dict/OrderedDict/list/tuple of int, float, complex, bool, str, bytes and None, so that "
            "loading it never runs code. Save the object's state_dict() instead.")

    def _container(self, obj, t, path: str) -> dict:
        if t in (list, tuple):
            return {"t": t.__name__, "items": [self.encode(v, f"{path}[{i}]") for i, v in enumerate(obj)]}
        items = []
        for k, v in obj.items():
            if type(k) not in (str, int, float, bool, bytes, tuple) and k is not None:
                raise TypeError(f"funcgrad.save cannot save a dict key of type "
                                f"{type(k).__qualname__} (at {path}): keys must be str, int, "
                                "float, bool, bytes, None or tuples of these")
            items.append([self.encode(k, f"{path} key {k!r}"), self.encode(v, f"{path}[{k!r}]")])
        node = {"t": "odict" if t is collections.OrderedDict else "dict", "items": items}
        meta = getattr(obj, "_metadata", None)
        if meta is not None:
            node["metadata"] = self.encode(meta, f"{path}._metadata")
        return node


def write_archive(fileobj, manifest: dict, arrays: list) -> None:
    with zipfile.ZipFile(fileobj, "w", compression=zipfile.ZIP_STORED, allowZip64=True) as zf:
        for i, arr in enumerate(arrays):
            flat = arr.reshape(-1).view(np.uint8)
            with zf.open(f"tensors/{i}", "w", force_zip64=flat.nbytes > 2**31) as out:
                for start in range(0, flat.nbytes, _CHUNK):
                    out.write(memoryview(flat[start:start + _CHUNK]))
        # the manifest last: a file cut short lacks it (and the zip directory) and is refused
        zf.writestr(MANIFEST, json.dumps(manifest, separators=(",", ":")))


def save(obj: Any, fileobj) -> None:
    """Write ``obj`` in the version-1 funcgrad format to a binary file object."""
    saver = _Saver()
    root = saver.encode(obj, "obj")
    write_archive(fileobj, {"format": FORMAT, "version": VERSION, "tensors": saver.tensors,
                            "root": root}, saver.arrays)


def load(zf: zipfile.ZipFile, archive_size: int, place) -> Any:
    """Read a version-1 archive (``MANIFEST`` is among its members)."""
    info = zf.getinfo(MANIFEST)
    check_member(info, archive_size)
    try:
        manifest = json.loads(zf.read(info).decode("utf-8"))
    except (zipfile.BadZipFile, UnicodeDecodeError, ValueError, RecursionError, OSError,
            EOFError) as e:
        raise Corrupt(f"unreadable manifest ({type(e).__name__}: {e})") from None
    if not isinstance(manifest, dict) or manifest.get("format") != FORMAT:
        raise Corrupt("the manifest does not declare the funcgrad checkpoint format")
    if manifest.get("version") != VERSION:
        raise Corrupt(f"unsupported checkpoint version {manifest.get('version')!r} "
                      f"(this funcgrad reads version {VERSION})")
    loader = _Loader(zf, manifest.get("tensors"), place, archive_size)
    try:
        return loader.decode(manifest.get("root"))
    except (KeyError, TypeError, ValueError, IndexError, AttributeError, RecursionError) as e:
        raise Corrupt(f"malformed manifest ({type(e).__name__}: {e})") from None


class _Loader:
    def __init__(self, zf: zipfile.ZipFile, table, place, archive_size: int):
        if not isinstance(table, list):
            raise Corrupt("malformed manifest (no tensor table)")
        self.zf, self.table, self.place, self.size = zf, table, place, archive_size
        self.cache: dict[int, Any] = {}

    def _read(self, i: int) -> tuple[np.ndarray, dict]:
        meta = self.table[i]
        d = _dtype._NAMES.get(meta["dtype"]) if isinstance(meta.get("dtype"), str) else None
        if d is None:
            raise Corrupt(f"unknown dtype {meta.get('dtype')!r} for tensor {i}")
        shape = tuple(int(s) for s in meta["shape"])
        if any(s < 0 for s in shape):
            raise Corrupt(f"negative shape {shape} for tensor {i}")
        nbytes = int(np.prod(shape, dtype=np.int64)) * d.itemsize
        name = f"tensors/{i}"
        try:
            info = self.zf.getinfo(name)
        except KeyError:
            raise Corrupt(f"missing data for tensor {i}") from None
        check_member(info, self.size)
        if info.file_size != nbytes:
            raise Corrupt(f"tensor {i} has {info.file_size} bytes, expected {nbytes} for "
                           f"{d.name} of shape {list(shape)}")
        try:
            raw = self.zf.read(name)  # checks the CRC
        except Exception as e:  # BadZipFile, zlib.error, EOFError...: all mean a damaged archive
            raise Corrupt(f"cannot read tensor {i} ({type(e).__name__}: {e})") from None
        if len(raw) != nbytes:
            raise Corrupt(f"tensor {i} is truncated")
        arr = np.frombuffer(raw, dtype=d.np.newbyteorder("<") if d.itemsize > 1 else d.np)
        return arr.astype(d.np, copy=False).reshape(shape), meta

    def tensor(self, i: int) -> Tensor:
        if i not in self.cache:
            arr, meta = self._read(i)
            t = self.place(arr, meta.get("device"))
            if meta.get("requires_grad") and isinstance(t, Tensor) and t.is_leaf:
                t.requires_grad_(True)
            self.cache[i] = t
        return self.cache[i]

    def decode(self, node):
        tag = node["t"]
        if tag == "none":
            return None
        if tag in ("bool", "str"):
            v = node["v"]
            if type(v) is not {"bool": bool, "str": str}[tag]:
                raise ValueError(f"bad {tag} value")
            return v
        if tag == "int":
            if type(node["v"]) is not int:
                raise ValueError("bad int value")
            return node["v"]
        if tag == "float":
            return float.fromhex(node["v"])
        if tag == "complex":
            return complex(float.fromhex(node["re"]), float.fromhex(node["im"]))
        if tag == "bytes":
            return bytes.fromhex(node["v"])
        if tag == "tensor":
            return self.tensor(int(node["id"]))
        if tag == "ndarray":
            return self._read(int(node["id"]))[0].copy()
        if tag == "npscalar":
            return _dtype._NAMES[node["dtype"]].np.type(self.decode(node["v"]))
        if tag == "dtype":
            return _dtype._NAMES[node["v"]]
        if tag == "device":
            return _device_cls(node["v"])
        if tag == "size":
            return Size(int(s) for s in node["v"])
        if tag == "list":
            return [self.decode(v) for v in node["items"]]
        if tag == "tuple":
            return tuple(self.decode(v) for v in node["items"])
        if tag in ("dict", "odict"):
            out = (collections.OrderedDict if tag == "odict" else dict)(
                (self.decode(k), self.decode(v)) for k, v in node["items"])
            if "metadata" in node:
                out._metadata = self.decode(node["metadata"])
            return out
        raise ValueError(f"unknown node type {tag!r}")

