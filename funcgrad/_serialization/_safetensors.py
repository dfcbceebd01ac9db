"""The safetensors format, read and written directly (no dependency).

A file is: 8 bytes (little-endian u64) giving the header's length N, N bytes of JSON
``{"name": {"dtype": "F32", "shape": [2, 3], "data_offsets": [begin, end]}, ...,
"__metadata__": {str: str}}`` (padded with spaces to a multiple of 8), then the tensors' raw
little-endian C-order bytes; offsets are relative to the end of the header. The writer orders
tensors and pads the header as the ``safetensors`` package does, so its files are byte-identical.
"""

from __future__ import annotations

import json
import struct
from typing import Any

import numpy as np

from .. import _dtype
from ._limits import Corrupt

_CODES = {
    _dtype.bool_: "BOOL", _dtype.uint8: "U8", _dtype.int8: "I8", _dtype.int16: "I16",
    _dtype.int32: "I32", _dtype.int64: "I64", _dtype.float16: "F16", _dtype.bfloat16: "BF16",
    _dtype.float32: "F32", _dtype.float64: "F64", _dtype.complex64: "C64",
}
_BY_CODE = {v: k for k, v in _CODES.items()}
# the package's Dtype enum order; it writes tensors by descending dtype, then by name
_RANK = {c: i for i, c in enumerate(["BOOL", "F4", "F6_E2M3", "F6_E3M2", "U8", "I8", "F8_E5M2",
                                      "F8_E4M3", "F8_E8M0", "I16", "U16", "F16", "BF16", "I32",
                                      "U32", "F32", "C64", "F64", "I64", "U64"])}
_UNSUPPORTED = ("U16", "U32", "U64", "F8_E4M3", "F8_E5M2", "F8_E8M0", "F4", "F6_E2M3", "F6_E3M2", "C128")


def dumps(arrays: dict[str, np.ndarray], metadata: dict[str, str] | None) -> tuple[bytes, list]:
    """(header bytes incl. the length prefix, [arrays in file order])."""
    for k, a in arrays.items():
        d = _dtype.from_np(a.dtype)
        if d not in _CODES:
            raise TypeError(f"safetensors cannot store the tensor {k!r} of dtype funcgrad.{d.name}")
    order = sorted(arrays, key=lambda k: (-_RANK[_CODES[_dtype.from_np(arrays[k].dtype)]], k))
    header: dict[str, Any] = {}
    if metadata is not None:
        if not isinstance(metadata, dict) or not all(isinstance(k, str) and isinstance(v, str)
                                                      for k, v in metadata.items()):
            raise TypeError("safetensors metadata must be a dict of str to str")
        header["__metadata__"] = metadata
    offset = 0
    out = []
    for k in order:
        a = arrays[k]
        header[k] = {"dtype": _CODES[_dtype.from_np(a.dtype)], "shape": list(a.shape),
                     "data_offsets": [offset, offset + a.nbytes]}
        offset += a.nbytes
        out.append(a)
    raw = json.dumps(header, separators=(",", ":")).encode()
    raw += b" " * (-len(raw) % 8)
    return struct.pack("<Q", len(raw)) + raw, out


def decode_header(raw: bytes, start: int, file_size: int):
    try:
        header = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError) as e:
        raise Corrupt(f"unreadable safetensors header ({type(e).__name__}: {e})") from None
    if not isinstance(header, dict):
        raise Corrupt("the safetensors header is not a JSON object")
    metadata = header.pop("__metadata__", None)
    if metadata is not None and not (isinstance(metadata, dict) and all(
            isinstance(k, str) and isinstance(v, str) for k, v in metadata.items())):
        raise Corrupt("the safetensors __metadata__ is not a dict of str to str")
    size = file_size - start
    entries = {}
    spans = []
    for name, e in header.items():
        if not isinstance(e, dict) or set(e) - {"dtype", "shape", "data_offsets"}:
            raise Corrupt(f"malformed safetensors entry {name!r}")
        code, shape, offs = e.get("dtype"), e.get("shape"), e.get("data_offsets")
        if code in _UNSUPPORTED:
            raise Corrupt(f"the tensor {name!r} has the dtype {code}, which funcgrad does not support")
        if code not in _BY_CODE:
            raise Corrupt(f"the tensor {name!r} has an unknown dtype {code!r}")
        if type(shape) is not list or not all(type(s) is int and s >= 0 for s in shape) \
                or type(offs) is not list or len(offs) != 2 \
                or not all(type(o) is int for o in offs):
            raise Corrupt(f"malformed shape or offsets for the tensor {name!r}")
        d = _BY_CODE[code]
        begin, end = offs
        n = 1
        for s in shape:
            n *= s
        if not 0 <= begin <= end <= size or end - begin != n * d.itemsize:
            raise Corrupt(f"the tensor {name!r} ({code} {shape}) declares the bytes "
                          f"[{begin}, {end}) of a data section of {size}")
        entries[name] = (d, tuple(shape), begin, end)
        spans.append((begin, end))
    spans.sort()
    pos = 0
    for b, e in spans:  # as the package: tensors tile the data section, no gaps or overlaps
        if b != pos:
            raise Corrupt("the safetensors data offsets overlap or leave a gap")
        pos = e
    if pos != size:
        raise Corrupt(f"the safetensors data section has {size} bytes; the tensors cover {pos}")
    return entries, metadata


def array(buf, start: int, entry) -> np.ndarray:
    d, shape, begin, end = entry
    a = np.frombuffer(buf, dtype=d.np.newbyteorder("<") if d.itemsize > 1 else d.np,
                      count=(end - begin) // d.itemsize, offset=start + begin)
    return a.astype(d.np, copy=False).reshape(shape)
