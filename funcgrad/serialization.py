"""``funcgrad.save`` / ``funcgrad.load``: PyTorch's checkpoint files, read and written without PyTorch.

``funcgrad.save`` writes PyTorch's own zip format (``torch.save``'s, version 3): a file saved by
``import funcgrad as torch; torch.save(model.state_dict(), "m.pt")`` loads in PyTorch with
``torch.load("m.pt", weights_only=True)``, and ``funcgrad.load`` reads ``torch.save`` files (zip
and legacy formats), safetensors files, and funcgrad's own zip+JSON format of earlier versions.

Loading never runs code unless asked to: with ``weights_only=True`` (the default, as in PyTorch
2.6+) the pickle inside a checkpoint is interpreted by a restricted unpickler that only builds
tensors, ``OrderedDict``/``dict``/``list``/``tuple``/``set``, numbers, strings, ``bytes``,
``funcgrad.Size``, dtypes and devices, plus what :func:`add_safe_globals` allows; anything else
(a pickled Module, a NumPy array, ``os.system``) raises PyTorch's ``pickle.UnpicklingError``
("Weights only load failed...") before it is called. ``weights_only=False`` unpickles fully (it
can run arbitrary code, so only for trusted files), which is how whole modules and optimizers
saved with ``funcgrad.save(model, f)`` load back, as with PyTorch.

Every size a file declares (zip members, storages, pickle strings, safetensors offsets) is
checked against the bytes the file holds before anything is allocated (see
``funcgrad/_serialization/_limits.py``); a malformed, truncated or hostile file raises
``RuntimeError`` naming it.

Differences from PyTorch: tensors load as funcgrad Tensors (a PyTorch ``Parameter`` as
``funcgrad.nn.Parameter``); storage sharing between tensors of one file is kept when their layout
is a permuted dense block of the storage (views of one tensor), otherwise the values are copied;
saving writes each tensor's own storage (views of one tensor are saved as separate storages);
``pickle_protocol`` other than 2 and ``pickle_module`` are ignored when saving; a path ending in
``.safetensors`` is written in the safetensors format (a dict of tensors).
"""

from __future__ import annotations

import io
import os
import pickle
import struct
import warnings
import zipfile
from typing import IO, Any, Callable, Union

import jax
import jax.numpy as jnp
import numpy as np

from ._atomic import atomic_write  # noqa: F401  (funcgrad.serialization.atomic_write, used by export)
from ._device import cuda_is_available
from ._device import device as _device_cls
from ._device import jax_device
from ._serialization import _native, _safetensors, _torch_zip
from ._serialization import _unpickler
from ._serialization._limits import MAX_SAFETENSORS_HEADER, Corrupt
from ._tensor import Tensor, _is_tracer

__all__ = ["save", "load", "add_safe_globals", "get_safe_globals", "clear_safe_globals",
           "safe_globals", "save_safetensors", "load_safetensors"]

FileLike = Union[str, os.PathLike, IO[bytes]]
MANIFEST = _native.MANIFEST


# ---- safe globals ---------------------------------------------------------------------------
def add_safe_globals(safe_globals: list) -> None:
    """Mark globals as safe for ``weights_only=True`` loading (``torch.serialization.add_safe_globals``).

    Each item is a class/function, or ``(obj, "module.qualname")`` when the file names it
    differently. Classes listed may be instantiated and have their state set by a loaded file.

    >>> import funcgrad
    >>> class Config:
    ...     pass
    >>> funcgrad.serialization.add_safe_globals([Config])
    >>> Config in funcgrad.serialization.get_safe_globals()
    True
    >>> funcgrad.serialization.clear_safe_globals()
    """
    _unpickler.add_safe_globals(safe_globals)


def get_safe_globals() -> list:
    """The globals added with :func:`add_safe_globals` (``torch.serialization.get_safe_globals``)."""
    return _unpickler.get_safe_globals()


def clear_safe_globals() -> None:
    """Forget every global added with :func:`add_safe_globals`."""
    _unpickler.clear_safe_globals()


class safe_globals:
    """Context manager that allows ``safe_globals`` for ``weights_only`` loads inside it.

    >>> import funcgrad
    >>> with funcgrad.serialization.safe_globals([complex]):
    ...     complex in funcgrad.serialization.get_safe_globals()
    True
    >>> funcgrad.serialization.get_safe_globals()
    []
    """

    def __init__(self, safe_globals: list):
        self.safe_globals = safe_globals

    def __enter__(self):
        _unpickler.add_safe_globals(self.safe_globals)

    def __exit__(self, type, value, tb):
        _unpickler.remove_safe_globals(self.safe_globals)


# ---- saving ---------------------------------------------------------------------------------
def save(obj: Any, f: FileLike, pickle_module: Any = None, pickle_protocol: int = 2,
         _use_new_zipfile_serialization: bool = True, _disable_byteorder_record: bool = False) -> None:
    """Save ``obj`` in PyTorch's checkpoint format (``torch.save``), readable by PyTorch.

    ``obj`` is typically a ``state_dict`` (or a dict of them): such a file loads in PyTorch with
    ``torch.load(f, weights_only=True)`` and in funcgrad with ``funcgrad.load(f)``. Any picklable
    object can be saved (a whole Module or optimizer too); loading one back needs
    ``weights_only=False``, as in PyTorch. The object is pickled completely before anything is
    written, and writing to a path is atomic (temporary file, ``fsync``, rename), so a failure
    leaves an existing file untouched. A path ending in ``.safetensors`` is written with
    :func:`save_safetensors` (``obj`` must be a dict of tensors).

    Args:
        obj: what to save.
        f: a path (``str`` / ``os.PathLike``) or a binary file object opened for writing.
        pickle_module, pickle_protocol: accepted for PyTorch compatibility; the pickle is always
            protocol 2 (PyTorch's default).
        _use_new_zipfile_serialization: ``False`` writes PyTorch's legacy (pre-1.6) format.

    Raises:
        TypeError: a Tensor is a traced value (inside ``funcgrad.jit``), or has no PyTorch dtype.
        pickle.PicklingError, AttributeError: ``obj`` holds something that cannot be pickled
            (e.g. a lambda), as with ``torch.save``.

    >>> import io, funcgrad
    >>> buf = io.BytesIO()
    >>> funcgrad.save({"w": funcgrad.ones(2), "step": 3}, buf)
    >>> _ = buf.seek(0)
    >>> funcgrad.load(buf)
    {'w': tensor([1., 1.]), 'step': 3}
    """
    if isinstance(f, (str, os.PathLike)) and os.fspath(f).endswith(".safetensors"):
        if not isinstance(obj, dict):
            raise TypeError("funcgrad.save to a .safetensors path needs a dict of tensors, got "
                            f"{type(obj).__name__}")
        save_safetensors(obj, f)
        return
    pickled, arrays = _torch_zip.dump(obj, legacy=not _use_new_zipfile_serialization)
    if _use_new_zipfile_serialization:
        prefix = _torch_zip.archive_name(f)

        def write(fh):
            _torch_zip.write_zip(fh, prefix, pickled, arrays)
    else:
        def write(fh):
            _torch_zip.write_legacy(fh, pickled, arrays)
    _write(f, write)


def save_safetensors(tensors: dict, f: FileLike, metadata: dict[str, str] | None = None) -> None:
    """Save a dict of tensors (a ``state_dict``) in the safetensors format.

    The file is byte-identical to ``safetensors.numpy.save_file``'s for the same arrays.

    Args:
        tensors: ``{name: Tensor or NumPy array}``.
        f: a path or a binary file object.
        metadata: optional ``{str: str}`` stored in the header's ``__metadata__``.

    >>> import io, funcgrad
    >>> buf = io.BytesIO()
    >>> funcgrad.serialization.save_safetensors({"w": funcgrad.arange(3.0)}, buf)
    >>> funcgrad.serialization.load_safetensors(io.BytesIO(buf.getvalue()))
    {'w': tensor([0., 1., 2.])}
    """
    arrays = {}
    for k, v in tensors.items():
        if not isinstance(k, str):
            raise TypeError(f"safetensors keys must be str, got {type(k).__name__}")
        if isinstance(v, Tensor):
            if _is_tracer(v._value):
                raise TypeError(f"funcgrad.save: the Tensor {k!r} is a traced value")
            v = np.asarray(v.detach()._value)
        elif not isinstance(v, np.ndarray):
            raise TypeError(f"safetensors stores tensors only; {k!r} is a {type(v).__name__}")
        if v.dtype.byteorder == ">":
            v = v.astype(v.dtype.newbyteorder("<"))
        arrays[k] = v if v.flags.c_contiguous else np.array(v, order="C")
    header, ordered = _safetensors.dumps(arrays, metadata)

    def write(fh):
        fh.write(header)
        for a in ordered:
            fh.write(memoryview(a.reshape(-1).view(np.uint8)))
    _write(f, write)


def _write(f: FileLike, write: Callable) -> None:
    if isinstance(f, (str, os.PathLike)):
        atomic_write(os.fspath(f), write)
    else:
        write(f)
        if hasattr(f, "flush"):
            f.flush()


# ---- loading --------------------------------------------------------------------------------
def _describe(f) -> str:
    if isinstance(f, (str, os.PathLike)):
        return repr(os.fspath(f))
    name = getattr(f, "name", None)
    return repr(name) if isinstance(name, str) else "the file object"


def _placer(ml) -> Callable:
    """``place(array, saved_location) -> Tensor`` for a ``map_location``."""
    def place(arr: np.ndarray, location: str | None) -> Tensor:
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
        if target is None or target == "cpu":
            return Tensor._wrap(jnp.asarray(arr))
        dev = _device_cls(target)
        if ml is None and dev.type == "cuda" and not cuda_is_available():
            raise RuntimeError(
                "Attempting to deserialize object on a CUDA device but "
                "funcgrad.cuda.is_available() is False. If you are running on a CPU-only "
                "machine, please use funcgrad.load with map_location=funcgrad.device('cpu') "
                "to map your storages to the CPU.")
        return Tensor._wrap(jax.device_put(jnp.asarray(arr), jax_device(dev)))
    return place


def load(f: FileLike, map_location: Any = None, pickle_module: Any = None, *,
         weights_only: bool | None = None, mmap: bool | None = None, **pickle_load_args) -> Any:
    """Load a checkpoint: ``torch.save``'s (zip or legacy), funcgrad's, or safetensors.

    Args:
        f: a path or a readable binary file object.
        map_location: where to put the tensors. ``None``: the device each was saved on
            (PyTorch's error if that device type is absent). A string / ``funcgrad.device``
            (e.g. ``'cpu'``): all tensors there. A dict ``{saved_location: target}`` remaps
            locations (``{'cuda:0': 'cpu'}``). A callable ``fn(tensor, location)`` receives each
            loaded storage as a tensor on the host CPU (shaped as the tensor that covers it, or
            1-D when several tensors view it) and the saved location string, and returns the
            tensor to use, or ``None`` to keep it on the CPU.
        pickle_module: with ``weights_only=False``, accepted and ignored (as PyTorch's default).
        weights_only: ``True`` (the default, unless ``pickle_module`` is given): only tensors and
            plain data are built and nothing in the file is called; ``False``: full unpickling,
            which can run arbitrary code (only for trusted files).
        mmap: accepted for PyTorch compatibility, ignored.
        **pickle_load_args: ``encoding=`` for Python-2 strings (``weights_only=False`` only).

    Raises:
        pickle.UnpicklingError: with ``weights_only=True``, the file needs something outside the
            allowlist ("Weights only load failed...", PyTorch's message).
        RuntimeError: ``f`` is not a checkpoint, is corrupted or truncated, or declares more data
            than it holds.
    """
    if weights_only is None:
        weights_only = pickle_module is None
    if weights_only and pickle_module is not None:
        raise RuntimeError("Can not safely load weights when explicit pickle_module is specified")
    if pickle_load_args and weights_only:
        warnings.warn("pickle_load_args only works if `weights_only=False`.", stacklevel=2)
    encoding = pickle_load_args.get("encoding", "utf-8")
    desc = _describe(f)
    place = _placer(map_location)
    try:
        if isinstance(f, (str, os.PathLike)):
            with open(os.fspath(f), "rb") as fh:
                return _load(fh, place, weights_only, encoding)
        if not (hasattr(f, "seekable") and f.seekable()):
            f = io.BytesIO(f.read())
        return _load(f, place, weights_only, encoding)
    except Corrupt as e:
        raise RuntimeError(f"{desc} is not a valid checkpoint or is corrupted: {e}") from None
    except pickle.UnpicklingError as e:
        if not weights_only:
            raise
        raise pickle.UnpicklingError(_unpickler.weights_only_message(str(e))) from None


def load_safetensors(f: FileLike, map_location: Any = None) -> dict:
    """Load a safetensors file as ``{name: Tensor}`` (``safetensors.numpy.load_file``'s contract).

    Raises:
        RuntimeError: the file is not a valid safetensors file (bad header, offsets outside the
            file, gaps or overlaps, an unsupported dtype).
    """
    desc = _describe(f)
    try:
        if isinstance(f, (str, os.PathLike)):
            with open(os.fspath(f), "rb") as fh:
                return _load_safetensors(fh, _placer(map_location))
        if not (hasattr(f, "seekable") and f.seekable()):
            f = io.BytesIO(f.read())
        return _load_safetensors(f, _placer(map_location))
    except Corrupt as e:
        raise RuntimeError(f"{desc} is not a valid safetensors file or is corrupted: {e}") from None


def _size_of(fh) -> tuple[int, int]:
    start = fh.tell()
    end = fh.seek(0, io.SEEK_END)
    fh.seek(start)
    return start, end - start


def _load_safetensors(fh, place) -> dict:
    start, size = _size_of(fh)
    head = fh.read(8)
    if len(head) < 8:
        raise Corrupt("the file is too short for a safetensors header")
    (n,) = struct.unpack("<Q", head)
    if n > MAX_SAFETENSORS_HEADER or 8 + n > size:
        raise Corrupt(f"the safetensors header declares {n} bytes; the file has {size}")
    entries, _ = _safetensors.decode_header(fh.read(n), 8 + n, size)
    data = fh.read(size - 8 - n)
    if len(data) != size - 8 - n:
        raise Corrupt("the file is truncated")
    return {k: place(_safetensors.array(data, 0, e), "cpu") for k, e in entries.items()}


def _looks_safetensors(head: bytes) -> bool:
    # 8 bytes of header length, then JSON; a pickle starts with PROTO (0x80) instead
    return len(head) >= 9 and head[8:9] == b"{" and head[:1] != b"\x80"


def _load(fh, place, weights_only: bool, encoding: str):
    start, size = _size_of(fh)
    head = fh.read(16)
    fh.seek(start)
    if size == 0:
        raise Corrupt("the file is empty")
    if head[:4] == b"PK\x03\x04" or head[:4] == b"PK\x05\x06":
        try:
            zf = zipfile.ZipFile(fh, "r")
        except Exception as e:  # BadZipFile, struct.error, UnicodeDecodeError...: a damaged directory
            # PyTorch's words for it, which users search for
            raise Corrupt("PytorchStreamReader failed reading zip archive: failed finding central "
                          f"directory ({type(e).__name__}: {e}); the file may be truncated") from None
        with zf:
            names = zf.namelist()
            if MANIFEST in names:
                return _native.load(zf, size, place)
            prefix = _torch_zip.find_prefix(names)
            if prefix is None:
                raise Corrupt("a zip archive that is neither a PyTorch nor a funcgrad checkpoint "
                              "(no data.pkl)")
            if prefix + "constants.pkl" in names or any(n.startswith(prefix + "code/") for n in names):
                raise Corrupt("a TorchScript archive (torch.jit.save); funcgrad cannot load those")
            return _torch_zip.load_zip(zf, prefix, size, place, weights_only, encoding)
    if _looks_safetensors(head):
        return _load_safetensors(fh, place)
    data = fh.read()
    return _torch_zip.load_legacy(data, place, weights_only, encoding)
