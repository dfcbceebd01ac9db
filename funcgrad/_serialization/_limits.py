"""Limits that keep a hostile checkpoint from exhausting memory or time, and the internal error.

Every reader checks what a file *declares* (a zip member's size, a storage's element count, a
pickle string's length, a safetensors header's offsets) against what the file can hold before it
allocates anything, so a small file cannot make funcgrad allocate a large buffer.
"""

from __future__ import annotations

import reprlib

# A zip member may declare at most this many uncompressed bytes per stored byte. Checkpoint
# members are stored (ratio 1); deflate reaches ~1032, so a real compressed member of a few
# bytes of JSON fits and a zip bomb does not.
MAX_RATIO = 64
# Members this small are exempt from the ratio (a tiny deflated record expands a bit more).
RATIO_FREE_BYTES = 1 << 16
# The pickle of a state_dict takes ~100 bytes per tensor; 64 MiB is ~600 000 tensors.
MAX_PICKLE_BYTES = 64 << 20
# Objects the restricted unpickler may create (lists, dicts, tuples, tensors...): each costs up
# to ~100 bytes, so this bounds its memory at a few hundred MiB whatever the pickle holds.
MAX_OBJECTS = 1 << 22
# Nodes a dict key / set element may have (hashing a tuple that reuses itself is exponential).
MAX_KEY_NODES = 1000
# A tensor whose layout reuses storage elements (a stride of 0) is materialised; it may hold at
# most this many elements beyond its storage's.
MAX_EXPANDED_ELEMENTS = 1 << 20
# The safetensors package's own limit on its JSON header.
MAX_SAFETENSORS_HEADER = 100_000_000


class Corrupt(Exception):
    """A file is malformed, truncated or declares more than it holds (raised to the user as a
    ``RuntimeError`` that names the file)."""


def check_member(info, archive_size: int) -> None:
    """Refuse a zip member whose declared size the archive cannot hold (before reading it)."""
    if info.compress_size > archive_size or info.header_offset + info.compress_size > archive_size:
        raise Corrupt(f"the archive member {info.filename!r} declares {info.compress_size} bytes "
                      f"but the file has only {archive_size}")
    if info.compress_type == 0:  # stored: the data are exactly the bytes present
        if info.file_size != info.compress_size:
            raise Corrupt(f"the stored archive member {info.filename!r} declares "
                          f"{info.file_size} bytes but holds {info.compress_size}")
    elif info.file_size > max(RATIO_FREE_BYTES, MAX_RATIO * info.compress_size):
        raise Corrupt(f"the archive member {info.filename!r} would expand from "
                      f"{info.compress_size} to {info.file_size} bytes (more than {MAX_RATIO}x): "
                      "refusing a possible zip bomb")


_brief = reprlib.Repr()
_brief.maxlevel, _brief.maxstring, _brief.maxother = 3, 60, 60


def brief(obj) -> str:
    """A bounded repr for error messages: a hostile file's tuple that reuses itself has an
    exponentially long repr, so a plain ``repr`` in a message would hang."""
    if isinstance(obj, type) or callable(obj):
        return f"{getattr(obj, '__module__', '?')}.{getattr(obj, '__qualname__', type(obj).__name__)}"
    return _brief.repr(obj)
