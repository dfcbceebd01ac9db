"""Hostile checkpoint files: nothing runs, nothing large is allocated, nothing hangs.

Each crafted file must be refused quickly with a documented exception (``RuntimeError`` for a
malformed or oversized file, ``pickle.UnpicklingError`` for a pickle outside the allowlist), with
a small peak of Python memory (tracemalloc; NumPy allocations are traced), and a seeded fuzz
loop over the readers (truncation at every N bytes, bit flips, huge counts) may raise only those.
"""

import collections
import io
import os
import pickle
import random
import struct
import time
import tracemalloc
import zipfile

import numpy as np
import pytest

import funcgrad
from funcgrad import nn, serialization
from funcgrad._serialization import _native

CLEAN = (RuntimeError, pickle.UnpicklingError)
MiB = 1 << 20


def _refused(blob: bytes, match: str, exc=RuntimeError, seconds=2.0, peak=32 * MiB):
    tracemalloc.start()
    t0 = time.perf_counter()
    try:
        with pytest.raises(exc, match=match):
            funcgrad.load(io.BytesIO(blob))
    finally:
        _, top = tracemalloc.get_traced_memory()
        tracemalloc.stop()
    took = time.perf_counter() - t0
    assert took < seconds, f"refusing took {took:.2f} s"
    assert top < peak, f"refusing allocated {top / MiB:.1f} MiB"


def _torch_zip(pkl: bytes, members: dict | None = None, compress=zipfile.ZIP_STORED) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", compression=compress) as zf:
        zf.writestr("archive/data.pkl", pkl)
        zf.writestr("archive/version", "3\n")
        for k, v in (members or {}).items():
            zf.writestr(f"archive/data/{k}", v)
    return buf.getvalue()


def _tensor_pickle(numel: int, size: tuple, stride: tuple, storage="FloatStorage") -> bytes:
    """A protocol-2 pickle of one _rebuild_tensor_v2 over storage '0' (as torch.save writes)."""
    def tup(v):
        return b"(" + b"".join(b"J" + struct.pack("<i", x) for x in v) + b"t"
    return (b"\x80\x02ctorch._utils\n_rebuild_tensor_v2\n(" +
            b"(X\x07\x00\x00\x00storagectorch\n" + storage.encode() + b"\nX\x01\x00\x00\x000"
            b"X\x03\x00\x00\x00cpuJ" + struct.pack("<i", numel) + b"tQ" +
            b"K\x00" + tup(size) + tup(stride) + b"\x89ccollections\nOrderedDict\n)RtR.")


def test_the_tensor_pickle_helper_is_real():
    blob = _torch_zip(_tensor_pickle(6, (2, 3), (3, 1)), {"0": np.arange(6, dtype=np.float32).tobytes()})
    assert funcgrad.load(io.BytesIO(blob)).tolist() == [[0, 1, 2], [3, 4, 5]]


# ---- sizes declared vs bytes present ---------------------------------------------------------------
def test_zip_bomb_member_is_refused_before_inflating():
    bomb = _torch_zip(_tensor_pickle(16 * MiB, (16 * MiB,), (1,)), {"0": bytes(64 * MiB)},
                      compress=zipfile.ZIP_DEFLATED)
    assert len(bomb) < MiB
    _refused(bomb, "would expand from .* refusing a possible zip bomb")


def test_old_format_manifest_bomb_is_refused():
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        zf.writestr(_native.MANIFEST, b'{"format": "funcgrad.checkpoint", "version": 1, "tensors": [],'
                    b' "root": {"t": "str", "v": "' + b"a" * (64 * MiB) + b'"}}')
    _refused(buf.getvalue(), "refusing a possible zip bomb")


def _patch_central_sizes(blob: bytes, name: bytes, size: int) -> bytes:
    """Make the central directory declare ``size`` bytes for member ``name`` (both sizes)."""
    b = bytearray(blob)
    pos = 0
    while True:
        pos = b.find(b"PK\x01\x02", pos)
        assert pos >= 0
        n = struct.unpack("<H", b[pos + 28:pos + 30])[0]
        if bytes(b[pos + 46:pos + 46 + n]) == name:
            b[pos + 20:pos + 28] = struct.pack("<II", size, size)
            return bytes(b)
        pos += 4


def test_storage_declared_bigger_than_the_file_is_refused():
    gib = 1 << 30
    # the zip directory declares a 1 GiB member in a file of a few hundred bytes
    ok = _torch_zip(_tensor_pickle(gib // 4, (4,), (1,)), {"0": bytes(16)})
    _refused(_patch_central_sizes(ok, b"archive/data/0", gib), "declares 1073741824 bytes but the file has only")
    # the pickle declares a 1 GiB storage, the archive holds 16 bytes
    lying = _torch_zip(_tensor_pickle(gib // 4, (gib // 4,), (1,)), {"0": bytes(16)})
    _refused(lying, r"declares 268435456 elements of float32 \(1073741824 bytes\) but the archive holds 16")
    # a tensor reaching past its storage, and one repeating a storage element a billion times
    _refused(_torch_zip(_tensor_pickle(4, (5,), (1,)), {"0": bytes(16)}), "reaches past the end")
    _refused(_torch_zip(_tensor_pickle(1, (1 << 15, 1 << 15), (0, 0)), {"0": bytes(4)}),
             "refuses more than")


def test_legacy_storage_count_bigger_than_the_file_is_refused():
    buf = io.BytesIO()
    funcgrad.save({"w": funcgrad.ones(4)}, buf, _use_new_zipfile_serialization=False)
    blob = buf.getvalue()
    assert funcgrad.load(io.BytesIO(blob))["w"].tolist() == [1.0] * 4
    head = len(blob) - 16 - 8
    assert struct.unpack("<q", blob[head:head + 8])[0] == 4
    huge = blob[:head] + struct.pack("<q", 1 << 40) + blob[head + 8:]
    _refused(huge, "declares 1099511627776 elements")


def test_safetensors_lies_are_refused():
    buf = io.BytesIO()
    serialization.save_safetensors({"w": funcgrad.ones(4)}, buf)
    blob = buf.getvalue()
    _refused(struct.pack("<Q", 1 << 60) + blob[8:], "header declares")
    n = struct.unpack("<Q", blob[:8])[0]
    header = blob[8:8 + n].replace(b"[0,16]", b"[0,99]")
    _refused(blob[:8] + header + blob[8 + n:], "declares the bytes")
    header = blob[8:8 + n].replace(b'"shape":[4]', b'"shape":[9]')
    _refused(blob[:8] + header + blob[8 + n:], "declares the bytes")


# ---- pickle opcodes that would allocate or loop --------------------------------------------------
def test_pickle_opcodes_with_huge_counts():
    # a string declaring 4 GiB, a memo index of 2**32 - 1, a long MARK nest
    _refused(_torch_zip(b"\x80\x02X\xff\xff\xff\xff"), "the pickle is truncated", seconds=1)
    assert funcgrad.load(io.BytesIO(_torch_zip(b"\x80\x02K\x07r\xff\xff\xff\xff."))) == 7
    # a tuple that contains itself 2**60 times over, used as a dict key (hashing it never ends)
    p = b"\x80\x02K\x01q\x00"
    for i in range(60):
        p += b"h" + bytes([i]) + b"h" + bytes([i]) + b"\x86q" + bytes([i + 1])
    _refused(_torch_zip(b"\x80\x02}(" + p[2:] + b"K\x00u."), "dict key or set element",
             exc=pickle.UnpicklingError, seconds=1)
    _refused(_torch_zip(b"\x80\x02cbuiltins\nset\n(" + p[2:] + b"t\x85R."),
             "dict key or set element", exc=pickle.UnpicklingError, seconds=1)
    # bytearray(n) would allocate n bytes: only bytearray(bytes) is rebuilt
    _refused(_torch_zip(b"\x80\x02c__builtin__\nbytearray\nJ\x00\x00\x00\x40\x85R."),
             "bytearray is only rebuilt from its bytes")


def test_error_messages_do_not_repr_hostile_objects():
    p = b"K\x01q\x00"
    for i in range(60):
        p += b"h" + bytes([i]) + b"h" + bytes([i]) + b"\x86q" + bytes([i + 1])
    # the self-reusing tuple as a function to call, as a tensor size, as a persistent id
    _refused(_torch_zip(b"\x80\x02" + p + b")R."), "unrecognized function",
             exc=pickle.UnpicklingError, seconds=1)
    pid = b"(X\x07\x00\x00\x00storageh\x3ct"  # ('storage', <the tuple>)
    _refused(_torch_zip(b"\x80\x02" + p + pid + b"Q."), "unknown persistent id", seconds=1)


def test_object_count_is_bounded(monkeypatch):
    from funcgrad._serialization import _unpickler
    monkeypatch.setattr(_unpickler, "MAX_OBJECTS", 1000)
    _refused(_torch_zip(b"\x80\x02" + b"]" * 2000 + b"."), "creates more than 1000 objects")


# ---- code that must not run -------------------------------------------------------------------------
def _calls(module: str, name: str, arg: str) -> bytes:
    a = arg.encode()
    return (b"\x80\x02c" + module.encode() + b"\n" + name.encode() + b"\nX" +
            struct.pack("<I", len(a)) + a + b"\x85R.")


def _legacy(main: bytes) -> bytes:
    return (pickle.dumps(0x1950A86A20F9469CFC6C, protocol=2) + pickle.dumps(1001, protocol=2) +
            pickle.dumps({"protocol_version": 1001}, protocol=2) + main + pickle.dumps([], protocol=2))


@pytest.mark.parametrize("module,name,msg", [
    ("os", "system", "Trying to load unsupported GLOBAL os.system whose module os is blocked."),
    ("posix", "system", "whose module posix is blocked"),
    ("builtins", "eval", "Unsupported global: GLOBAL eval was not an allowed global"),
    ("__builtin__", "exec", "Unsupported global: GLOBAL exec was not an allowed global"),
    ("subprocess", "getoutput", "GLOBAL subprocess.getoutput was not an allowed global"),
])
def test_code_execution_globals_are_refused_and_do_not_run(tmp_path, module, name, msg):
    marker = tmp_path / "pwned"
    arg = {"system": f"touch {marker}", "getoutput": f"touch {marker}",
           "eval": f"open({str(marker)!r}, 'w')", "exec": f"open({str(marker)!r}, 'w')"}[name]
    payload = _calls(module, name, arg)
    for blob in (_torch_zip(payload), _legacy(payload), payload):
        for kwargs in ({}, {"weights_only": True}):
            with pytest.raises(pickle.UnpicklingError, match="Weights only load failed") as e:
                funcgrad.load(io.BytesIO(blob), **kwargs)
            assert msg in str(e.value)
    # even allowlisting cannot open the blocked modules
    if module in ("os", "posix"):
        with serialization.safe_globals([os.system]):
            with pytest.raises(pickle.UnpicklingError, match="is blocked"):
                funcgrad.load(io.BytesIO(_torch_zip(payload)))
    assert not marker.exists()


# ---- fuzz ---------------------------------------------------------------------------------------------
def _bases() -> dict[str, bytes]:
    base = funcgrad.arange(12.0).view(3, 4)
    sd = collections.OrderedDict([("w", base), ("t", base.t()), ("i", funcgrad.arange(5)),
                                  ("p", nn.Parameter(funcgrad.ones(2))), ("h", funcgrad.ones(2, dtype=funcgrad.bfloat16))])
    sd._metadata = collections.OrderedDict([("", {"version": 1})])
    obj = {"model": sd, "step": 3, "names": ["a", (1, 2.5)], "flag": True, "b": b"xy"}
    out = {}
    for key, kw in (("zip", {}), ("legacy", {"_use_new_zipfile_serialization": False})):
        buf = io.BytesIO()
        funcgrad.save(obj, buf, **kw)
        out[key] = buf.getvalue()
    buf = io.BytesIO()
    serialization.save_safetensors({"w": funcgrad.ones(3, 2), "i": funcgrad.arange(4)}, buf)
    out["safetensors"] = buf.getvalue()
    buf = io.BytesIO()
    _native.save({"w": funcgrad.ones(3), "n": [1, "x"]}, buf)
    out["old"] = buf.getvalue()
    with zipfile.ZipFile(io.BytesIO(out["zip"])) as zf:
        out["pkl"] = zf.read("archive/data.pkl")  # mutated, then re-zipped (valid CRCs)
        out["_members"] = {n: zf.read(n) for n in zf.namelist()}
    return out


def _rezip(members: dict, pkl: bytes) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        for n, v in members.items():
            zf.writestr(n, pkl if n.endswith("data.pkl") else v)
    return buf.getvalue()


def _mutants(bases: dict, rng: random.Random):
    for key in ("zip", "legacy", "safetensors", "old", "pkl"):
        data = bases[key]
        wrap = (lambda b: _rezip(bases["_members"], b)) if key == "pkl" else (lambda b: b)
        step = max(1, len(data) // 60)
        for cut in range(0, len(data), step):  # truncation at every N bytes
            yield key, wrap(data[:cut])
        for _ in range(120):  # bit flips
            b = bytearray(data)
            for _ in range(rng.randint(1, 3)):
                i = rng.randrange(len(b))
                b[i] ^= 1 << rng.randrange(8)
            yield key, wrap(bytes(b))
        for _ in range(60):  # huge counts written over 4 or 8 bytes
            b = bytearray(data)
            i = rng.randrange(max(1, len(b) - 8))
            n = rng.choice([4, 8])
            b[i:i + n] = rng.choice([b"\xff", b"\x7f", b"\x00"]) * n
            yield key, wrap(bytes(b))


def test_fuzzed_files_raise_only_clean_errors_quickly():
    rng = random.Random(1234)
    bases = _bases()
    counts = collections.Counter()
    slowest = 0.0
    for key, blob in _mutants(bases, rng):
        t0 = time.perf_counter()
        try:
            funcgrad.load(io.BytesIO(blob))
            counts[key, "loaded"] += 1
        except CLEAN:
            counts[key, "refused"] += 1
        except Exception as e:  # pragma: no cover - the failure this test exists to catch
            pytest.fail(f"{key}: {type(e).__name__}: {e} for a mutant of {len(blob)} bytes")
        slowest = max(slowest, time.perf_counter() - t0)
    assert slowest < 2.0, slowest
    for key in ("zip", "legacy", "safetensors", "old", "pkl"):
        assert counts[key, "refused"] > 50, counts  # the mutations really reach the readers


# ---- layouts the fixtures do not cover ---------------------------------------------------------------
def test_big_endian_archive_and_untyped_storage_with_dtype():
    # a storage written big-endian (byteorder record 'big'), as PyTorch reads it
    vals = np.arange(6, dtype=np.float32)
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        zf.writestr("archive/data.pkl", _tensor_pickle(6, (2, 3), (3, 1)))
        zf.writestr("archive/byteorder", "big")
        zf.writestr("archive/data/0", vals.astype(">f4").tobytes())
    assert funcgrad.load(io.BytesIO(buf.getvalue())).tolist() == [[0, 1, 2], [3, 4, 5]]
    # _rebuild_tensor_v3 over a torch.storage.UntypedStorage of 24 bytes, seen as float32
    pkl = (b"\x80\x02ctorch._utils\n_rebuild_tensor_v3\n((X\x07\x00\x00\x00storage"
           b"ctorch.storage\nUntypedStorage\nX\x01\x00\x00\x000X\x03\x00\x00\x00cpuK\x18tQ"
           b"K\x02(K\x02K\x02tK\x02K\x01\x86\x89ccollections\nOrderedDict\n)Rctorch\nfloat32\ntR.")
    blob = _torch_zip(pkl, {"0": vals.tobytes()})
    out = funcgrad.load(io.BytesIO(blob))  # offset 2, size (2, 2), stride (2, 1)
    assert out.dtype is funcgrad.float32 and out.tolist() == [[2, 3], [4, 5]]
