"""``funcgrad.save`` / ``funcgrad.load``: checkpoints that never execute code on load.

Format (version 1). A ZIP archive (stored, not compressed) holding:

* ``funcgrad_checkpoint.json`` — the manifest: ``{"format": "funcgrad.checkpoint",
  "version": 1, "tensors": [...], "root": <node>}``. ``root`` describes the saved object as
  tagged JSON nodes (``{"t": "dict", "items": [[key, value], ...]}``, ``{"t": "tensor",
  "id": 3}``, ``{"t": "int", "v": 5}``…), so dict keys of any plain type (the ints of an
  optimizer's ``state``) and the list/tuple/OrderedDict distinction survive.
* ``tensors/<id>`` — one raw little-endian C-order buffer per tensor; its dtype name (all
  twelve funcgrad dtypes, ``bfloat16`` included), shape, ``requires_grad`` flag and saved
  device are in the manifest's ``tensors`` table.

Loading parses JSON and copies bytes; there is no pickle anywhere, so a file cannot run code.
Pickle files (including PyTorch's ``torch.save`` output) are refused with a clear message.
Saving to a path is atomic: the archive is written to a temporary file in the same
directory, flushed, ``fsync``-ed and renamed over the target, so a crash mid-write leaves the
previous checkpoint intact.

What can be saved: Tensors (``Parameter`` included; loaded back as plain Tensors with the same
``requires_grad``), NumPy arrays and scalars, ``int``, ``float``, ``complex``, ``bool``,
``str``, ``bytes``, ``None``, funcgrad ``dtype``/``device``/``Size``, and ``dict``,
``OrderedDict`` (with a ``_metadata`` attribute, as ``state_dict()`` has), ``list`` and
``tuple`` of these. A Tensor that appears several times is stored once and loaded as one
object; storage shared between *different* views is not preserved (each is stored whole).
Anything else raises ``TypeError`` at save time, naming the type and where it is.
"""

from __future__ import annotations

import collections
import io
import json
import os
import tempfile
import zipfile
from typing import IO, Any, Union

import jax
import jax.numpy as jnp
import numpy as np

from . import _dtype
from ._device import device as _device_cls
from ._device import jax_device
from ._tensor import Size, Tensor, _is_tracer

__all__ = ["save", "load"]

FORMAT = "funcgrad.checkpoint"
VERSION = 1
MANIFEST = "funcgrad_checkpoint.json"
_CHUNK = 1 << 24  # bytes written per call, so large tensors need no second full-size copy

FileLike = Union[str, os.PathLike, IO[bytes]]


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


def _write_archive(fileobj, manifest: dict, arrays: list) -> None:
    with zipfile.ZipFile(fileobj, "w", compression=zipfile.ZIP_STORED, allowZip64=True) as zf:
        for i, arr in enumerate(arrays):
            flat = arr.reshape(-1).view(np.uint8)
            with zf.open(f"tensors/{i}", "w", force_zip64=flat.nbytes > 2**31) as out:
                for start in range(0, flat.nbytes, _CHUNK):
                    out.write(memoryview(flat[start:start + _CHUNK]))
        # the manifest last: a file cut short lacks it (and the zip directory) and is refused
        zf.writestr(MANIFEST, json.dumps(manifest, separators=(",", ":")))


def save(obj: Any, f: FileLike, pickle_module: Any = None, pickle_protocol: int = 2,
         _use_new_zipfile_serialization: bool = True) -> None:
    """Save ``obj`` (typically a ``state_dict``) to a path or a writable binary file object.

    The object is fully checked before anything is written, so an unsupported value leaves an
    existing file untouched. Writing to a path is atomic (temporary file, ``fsync``, rename).
    ``pickle_module``/``pickle_protocol`` are accepted for PyTorch compatibility and ignored:
    nothing is pickled.

    Args:
        obj: nested dict/OrderedDict/list/tuple of Tensors and plain Python values.
        f: a path (``str`` / ``os.PathLike``) or a binary file object opened for writing.

    Raises:
        TypeError: ``obj`` contains something that is not plain data, e.g. a Module (the
            message names its type and where it is, e.g. ``obj['model']['fc']``).

    >>> import io, funcgrad
    >>> buf = io.BytesIO()
    >>> funcgrad.save({"w": funcgrad.ones(2), "step": 3}, buf)
    >>> _ = buf.seek(0)
    >>> funcgrad.load(buf)
    {'w': tensor([1., 1.]), 'step': 3}
    """
    saver = _Saver()
    root = saver.encode(obj, "obj")
    manifest = {"format": FORMAT, "version": VERSION, "tensors": saver.tensors, "root": root}
    if isinstance(f, (str, os.PathLike)):
        _atomic_write(os.fspath(f), manifest, saver.arrays)
    else:
        _write_archive(f, manifest, saver.arrays)
        if hasattr(f, "flush"):
            f.flush()


def _atomic_write(path: str, manifest: dict, arrays: list) -> None:
    atomic_write(path, lambda fh: _write_archive(fh, manifest, arrays))


def atomic_write(path: str, write) -> None:
    """Call ``write(file)`` on a temporary file beside ``path``, fsync it and rename it over
    ``path``: a crash mid-write leaves the previous file intact (also used by funcgrad.export)."""
    directory = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(dir=directory, prefix=f".{os.path.basename(path)}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as fh:
            write(fh)
            fh.flush()
            os.fsync(fh.fileno())
        # mkstemp makes the file 0600; give it the mode a plain open() would have
        try:
            mode = os.stat(path).st_mode & 0o777
        except FileNotFoundError:
            umask = os.umask(0)
            os.umask(umask)
            mode = 0o666 & ~umask
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    try:  # make the rename itself durable (POSIX; best effort elsewhere)
        dfd = os.open(directory, os.O_RDONLY)
        try:
            os.fsync(dfd)
        finally:
            os.close(dfd)
    except OSError:
        pass


# ---- loading ----------------------------------------------------------------------------------
class _Corrupt(Exception):
    pass


def _describe(f) -> str:
    if isinstance(f, (str, os.PathLike)):
        return repr(os.fspath(f))
    name = getattr(f, "name", None)
    return repr(name) if isinstance(name, str) else "the file object"


def _sniff_refusal(head: bytes, names: list[str] | None) -> str | None:
    """A reason to refuse a file that is a pickle (or a PyTorch checkpoint, which is one)."""
    if head[:1] == b"\x80" or head[:1] in (b"(", b"c", b"}", b"]"):
        return ("it is a pickle file. funcgrad.load never unpickles (unpickling can execute "
                "arbitrary code)")
    if names is not None and any(n.endswith("data.pkl") for n in names):
        return ("it is a PyTorch (pickle-based) checkpoint. funcgrad.load never unpickles; load it "
                "with torch.load(..., weights_only=True) and convert the tensors with "
                "funcgrad.tensor(t.numpy())")
    return None


def load(f: FileLike, map_location: Any = None, pickle_module: Any = None, *,
         weights_only: bool | None = True, mmap: bool | None = None, **pickle_load_args) -> Any:
    """Load an object saved by ``funcgrad.save``.

    Tensors come back as leaf Tensors with their saved dtype, shape and ``requires_grad``.
    Only JSON is parsed and raw bytes copied, so ``weights_only`` changes nothing (loading
    can never run code) and pickle files are refused whatever its value.

    Args:
        f: a path or a readable binary file object.
        map_location: where to put the tensors. ``None``: the device each was saved on
            (PyTorch's error if that device type is absent). A string / ``funcgrad.device``
            (e.g. ``'cpu'``): all tensors there. A dict ``{saved_location: target}`` remaps
            locations (``{'cuda:0': 'cpu'}``). A callable ``fn(tensor, location)`` receives each
            tensor (on the host CPU) and the saved location string and returns the tensor to use,
            or ``None`` to keep it on the CPU.
        pickle_module, mmap, **pickle_load_args: accepted for PyTorch compatibility, ignored.

    Raises:
        RuntimeError: ``f`` is not a funcgrad checkpoint or is corrupted (truncated, bad CRC,
            inconsistent sizes), or is a pickle file.
    """
    desc = _describe(f)
    try:
        if isinstance(f, (str, os.PathLike)):
            with open(os.fspath(f), "rb") as fh:
                return _load(fh, map_location, desc)
        if not (hasattr(f, "seekable") and f.seekable()):
            f = io.BytesIO(f.read())
        return _load(f, map_location, desc)
    except _Corrupt as e:
        raise RuntimeError(f"{desc} is not a funcgrad checkpoint or is corrupted: {e}") from None


def _load(fh, map_location, desc):
    start = fh.tell()
    head = fh.read(8)
    fh.seek(start)
    try:
        zf = zipfile.ZipFile(fh, "r")
    except (zipfile.BadZipFile, OSError, ValueError, EOFError) as e:
        reason = _sniff_refusal(head, None)
        raise _Corrupt(reason or f"not a valid archive ({e}); the file may be truncated") from None
    with zf:
        names = zf.namelist()
        reason = _sniff_refusal(b"", names)
        if reason:
            raise _Corrupt(reason)
        if MANIFEST not in names:
            raise _Corrupt(f"no {MANIFEST} manifest in the archive")
        try:
            manifest = json.loads(zf.read(MANIFEST).decode("utf-8"))
        except (zipfile.BadZipFile, UnicodeDecodeError, ValueError, RecursionError, OSError) as e:
            raise _Corrupt(f"unreadable manifest ({type(e).__name__}: {e})") from None
        if not isinstance(manifest, dict) or manifest.get("format") != FORMAT:
            raise _Corrupt("the manifest does not declare the funcgrad checkpoint format")
        if manifest.get("version") != VERSION:
            raise _Corrupt(f"unsupported checkpoint version {manifest.get('version')!r} "
                           f"(this funcgrad reads version {VERSION})")
        loader = _Loader(zf, manifest.get("tensors"), map_location)
        try:
            return loader.decode(manifest.get("root"))
        except (KeyError, TypeError, ValueError, IndexError, AttributeError, RecursionError) as e:
            raise _Corrupt(f"malformed manifest ({type(e).__name__}: {e})") from None


class _Loader:
    def __init__(self, zf: zipfile.ZipFile, table, map_location):
        if not isinstance(table, list):
            raise _Corrupt("malformed manifest (no tensor table)")
        self.zf, self.table, self.map_location = zf, table, map_location
        self.cache: dict[int, Any] = {}

    def _read(self, i: int) -> tuple[np.ndarray, dict]:
        meta = self.table[i]
        d = _dtype._NAMES.get(meta["dtype"]) if isinstance(meta.get("dtype"), str) else None
        if d is None:
            raise _Corrupt(f"unknown dtype {meta.get('dtype')!r} for tensor {i}")
        shape = tuple(int(s) for s in meta["shape"])
        if any(s < 0 for s in shape):
            raise _Corrupt(f"negative shape {shape} for tensor {i}")
        nbytes = int(np.prod(shape, dtype=np.int64)) * d.itemsize
        name = f"tensors/{i}"
        try:
            info = self.zf.getinfo(name)
        except KeyError:
            raise _Corrupt(f"missing data for tensor {i}") from None
        if info.file_size != nbytes:
            raise _Corrupt(f"tensor {i} has {info.file_size} bytes, expected {nbytes} for "
                           f"{d.name} of shape {list(shape)}")
        try:
            raw = self.zf.read(name)  # checks the CRC
        except (zipfile.BadZipFile, OSError, EOFError, ValueError) as e:
            raise _Corrupt(f"cannot read tensor {i} ({e})") from None
        if len(raw) != nbytes:
            raise _Corrupt(f"tensor {i} is truncated")
        arr = np.frombuffer(raw, dtype=d.np.newbyteorder("<") if d.itemsize > 1 else d.np)
        return arr.astype(d.np, copy=False).reshape(shape), meta

    def _place(self, arr: np.ndarray, location: str | None) -> Tensor:
        ml = self.map_location
        if callable(ml) and not isinstance(ml, (str, _device_cls)):
            t = Tensor._wrap(jnp.asarray(arr))
            out = ml(t, location or "cpu")
            return t if out is None else out
        target = location
        if isinstance(ml, dict):
            target = ml.get(location, location)
            target = str(target) if target is not None else None
        elif ml is not None:
            target = str(ml)
        if target is None:
            return Tensor._wrap(jnp.asarray(arr))
        dev = _device_cls(target)
        if ml is None and dev.type == "cuda":
            from ._device import cuda_is_available
            if not cuda_is_available():
                raise RuntimeError(
                    "Attempting to deserialize object on a CUDA device but "
                    "funcgrad.cuda.is_available() is False. If you are running on a CPU-only "
                    "machine, please use funcgrad.load with map_location=funcgrad.device('cpu') "
                    "to map your storages to the CPU.")
        return Tensor._wrap(jax.device_put(jnp.asarray(arr), jax_device(dev)))

    def tensor(self, i: int) -> Tensor:
        if i not in self.cache:
            arr, meta = self._read(i)
            t = self._place(arr, meta.get("device"))
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

