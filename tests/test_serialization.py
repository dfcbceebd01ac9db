"""funcgrad.save / funcgrad.load: exact round trips, atomic writes, refusal of unsafe pickles and
junk, and the funcgrad format of earlier versions (still read)."""

import collections
import io
import json
import math
import os
import pickle
import signal
import subprocess
import sys
import textwrap
import time
import zipfile

import jax.numpy as jnp
import numpy as np
import pytest

import funcgrad
from funcgrad._serialization import _native

NOT_CKPT = "is not a valid checkpoint or is corrupted"


def _roundtrip(obj, **load_kwargs):
    buf = io.BytesIO()
    funcgrad.save(obj, buf)
    buf.seek(0)
    return funcgrad.load(buf, **load_kwargs)


def _bits(t):
    a = np.asarray(t._value)
    return a.dtype, a.shape, a.tobytes()


def _sample(dtype, shape):
    rng = np.random.default_rng(0)
    n = int(np.prod(shape))
    if dtype is funcgrad.bool:
        a = rng.integers(0, 2, n).astype(bool)
    elif not (dtype.is_floating_point or dtype.is_complex):
        info = np.iinfo(dtype.np)
        a = rng.integers(info.min, info.max, n, endpoint=True, dtype=dtype.np)
        if n >= 2:
            a[:2] = [info.min, info.max]
    else:
        a = rng.standard_normal(n) * 1e3
        if dtype.is_complex:
            a = a + 1j * rng.standard_normal(n)
        a = a.astype(dtype.np)
        if n >= 4:
            special = [np.nan, np.inf, -np.inf, -0.0]
            a[:4] = np.asarray(special).astype(dtype.np)
    return funcgrad.from_numpy(np.asarray(a, dtype=dtype.np).reshape(shape))


ALL_DTYPES = [funcgrad.bool, funcgrad.uint8, funcgrad.int8, funcgrad.int16, funcgrad.int32,
              funcgrad.int64, funcgrad.float16, funcgrad.bfloat16, funcgrad.float32,
              funcgrad.float64, funcgrad.complex64, funcgrad.complex128]


def test_every_dtype_round_trips_bit_exactly():
    obj = {f"{d.name}_{i}": _sample(d, shape) for d in ALL_DTYPES
           for i, shape in enumerate([(2, 3, 4), (), (0, 5)])}
    out = _roundtrip(obj)
    assert list(out) == list(obj)
    for k, t in obj.items():
        assert type(out[k]) is funcgrad.Tensor
        assert out[k].dtype is t.dtype and out[k].shape == t.shape, k
        assert _bits(out[k]) == _bits(t), k


def test_nested_structures_and_plain_values():
    w = funcgrad.randn(3, requires_grad=True)
    sd = collections.OrderedDict([("fc.weight", w), ("fc.bias", funcgrad.zeros(2))])
    sd._metadata = collections.OrderedDict([("", {"version": 1}), ("fc", {"version": 1})])
    obj = {
        "model": sd,
        "again": w,  # same tensor twice: stored once, loaded as one object
        "epoch": 7, "big": 2 ** 80, "loss": 0.1, "inf": float("inf"), "nan": float("nan"),
        "c": 1 + 2j, "name": "run-ü", "flag": True, "none": None, "raw": b"\x00\xff",
        "tup": (1, (2.5, "x"), [None]), "lst": [1, [2, [3]]], 3: "int key", (1, "a"): "tuple key",
        None: "none key", 2.5: "float key",
        "dtype": funcgrad.float16, "dev": funcgrad.device("cpu"), "size": funcgrad.Size([2, 3]),
    }
    out = _roundtrip(obj)
    assert type(out) is dict and list(out) == list(obj)
    assert type(out["model"]) is collections.OrderedDict
    assert out["model"]._metadata == sd._metadata
    assert out["model"]["fc.weight"] is out["again"]
    assert out["again"].requires_grad and out["again"].is_leaf
    assert out["again"].tolist() == w.tolist()
    assert not out["model"]["fc.bias"].requires_grad
    for k in ("epoch", "big", "loss", "inf", "c", "name", "flag", "none", "raw", "tup", "lst",
              3, (1, "a"), None, 2.5, "dtype", "dev", "size"):
        assert out[k] == obj[k] and type(out[k]) is type(obj[k]), k
    assert math.isnan(out["nan"])
    assert out["tup"][1].__class__ is tuple and out["tup"][2].__class__ is list
    assert out["dtype"] is funcgrad.float16
    # NumPy values need weights_only=False, as with torch.load
    out = _roundtrip({"np": np.arange(6, dtype=np.int16).reshape(2, 3), "s": np.float32(1.5)},
                     weights_only=False)
    assert out["np"].dtype == np.int16 and out["np"].tolist() == [[0, 1, 2], [3, 4, 5]]
    assert type(out["s"]) is np.float32 and out["s"] == 1.5


def test_optimizer_like_state_dict(tmp_path):
    state = {
        "state": {i: {"step": funcgrad.tensor(3.0), "exp_avg": funcgrad.randn(4, 2),
                      "exp_avg_sq": funcgrad.rand(4, 2)} for i in range(2)},
        "param_groups": [{"lr": 1e-3, "betas": (0.9, 0.999), "eps": 1e-8, "weight_decay": 0,
                          "amsgrad": False, "maximize": False, "foreach": None,
                          "capturable": False, "differentiable": False, "fused": None,
                          "params": [0, 1]}],
    }
    path = tmp_path / "opt.pt"
    funcgrad.save(state, path)
    out = funcgrad.load(str(path))
    assert list(out["state"]) == [0, 1]
    assert out["param_groups"] == state["param_groups"]
    for i in range(2):
        for k, t in state["state"][i].items():
            assert _bits(out["state"][i][k]) == _bits(t)


def test_file_objects_and_paths(tmp_path):
    obj = {"x": funcgrad.arange(5)}
    p = tmp_path / "a.ckpt"
    with open(p, "wb") as fh:
        funcgrad.save(obj, fh)
    with open(p, "rb") as fh:
        assert funcgrad.load(fh)["x"].tolist() == [0, 1, 2, 3, 4]
    funcgrad.save(obj, str(tmp_path / "b.ckpt"))
    assert funcgrad.load(tmp_path / "b.ckpt")["x"].tolist() == [0, 1, 2, 3, 4]
    assert not [n for n in os.listdir(tmp_path) if n.endswith(".tmp")]

    class Stream:  # readable but not seekable
        def __init__(self, data):
            self._b = io.BytesIO(data)

        def read(self, n=-1):
            return self._b.read(n)

    assert funcgrad.load(Stream(p.read_bytes()))["x"].tolist() == [0, 1, 2, 3, 4]


def test_map_location():
    obj = {"x": funcgrad.ones(2)}
    for ml in ("cpu", funcgrad.device("cpu"), {"cpu": "cpu"}):
        assert _roundtrip(obj, map_location=ml)["x"].device == funcgrad.device("cpu")
    seen = []

    def fn(t, location):
        seen.append(location)
        return t * 2

    assert _roundtrip(obj, map_location=fn)["x"].tolist() == [2.0, 2.0]
    assert seen == ["cpu"]
    assert _roundtrip(obj, map_location=lambda t, loc: None)["x"].tolist() == [1.0, 1.0]


def test_unpicklable_objects_are_refused_at_save(tmp_path):
    p = tmp_path / "keep.ckpt"
    funcgrad.save({"v": 1}, p)
    before = p.read_bytes()
    with pytest.raises((AttributeError, pickle.PicklingError), match="local object"):
        funcgrad.save({"f": lambda: 0}, p)
    with pytest.raises(TypeError, match="traced value"):
        import jax
        jax.jit(lambda a: funcgrad.save(funcgrad.Tensor._wrap(a), io.BytesIO()) or a)(jnp.ones(2))
    assert p.read_bytes() == before  # a refused save leaves the old file as it was
    assert not [n for n in os.listdir(tmp_path) if n.endswith(".tmp")]
    cyc = []
    cyc.append(cyc)  # pickle keeps cycles, as torch.save does
    out = _roundtrip(cyc)
    assert out[0] is out


def _native_file(tmp_path, obj, name="old.ckpt"):
    p = tmp_path / name
    with open(p, "wb") as fh:
        _native.save(obj, fh)
    return p


def test_old_funcgrad_format_still_loads(tmp_path):
    w = funcgrad.randn(3, requires_grad=True)
    obj = {"w": w, "again": w, "np": np.arange(3, dtype=np.int16), 3: (1, "x"), "dt": funcgrad.int8}
    out = funcgrad.load(_native_file(tmp_path, obj))
    assert out["w"] is out["again"] and out["w"].requires_grad and out["w"].tolist() == w.tolist()
    assert out["np"].tolist() == [0, 1, 2] and out[3] == (1, "x") and out["dt"] is funcgrad.int8


@pytest.mark.parametrize("fmt", ["torch", "old"])
def test_truncated_and_corrupt_files(tmp_path, fmt):
    p = tmp_path / "c.ckpt"
    obj = {"w": funcgrad.arange(1000, dtype=funcgrad.float32)}
    if fmt == "torch":
        funcgrad.save(obj, p)
    else:
        _native_file(tmp_path, obj, "c.ckpt")
    data = p.read_bytes()
    cases = {
        "truncated": data[: len(data) // 2],
        "empty": b"",
        "garbage": os.urandom(300),
    }
    # one flipped byte inside the tensor data: the CRC check catches it
    flipped = bytearray(data)
    flipped[len(data) // 2] ^= 0xFF
    cases["flipped"] = bytes(flipped)
    for name, blob in cases.items():
        q = tmp_path / f"{name}.ckpt"
        q.write_bytes(blob)
        with pytest.raises((RuntimeError, pickle.UnpicklingError)) as e:
            funcgrad.load(q)
        if name == "truncated":  # PyTorch's words for a zip without its directory
            assert "PytorchStreamReader failed reading zip archive: failed finding central " \
                   "directory" in str(e.value)
    if fmt == "torch":
        return
    # a well-formed zip that is not a funcgrad checkpoint, and lying manifests
    def rewrite(manifest_fn, name):
        q = tmp_path / name
        with zipfile.ZipFile(p) as src, zipfile.ZipFile(q, "w") as dst:
            for info in src.infolist():
                blob = src.read(info.filename)
                if info.filename == _native.MANIFEST:
                    m = manifest_fn(json.loads(blob))
                    if m is None:
                        continue
                    blob = json.dumps(m).encode()
                dst.writestr(info.filename, blob)
        return q

    def bad_shape(m):
        m["tensors"][0]["shape"] = [2000]
        return m

    def bad_format(m):
        m["format"] = "something.else"
        return m

    def bad_node(m):
        m["root"] = {"t": "exec", "v": "import os"}
        return m

    for fn, msg in [(lambda m: None, "neither a PyTorch nor a funcgrad checkpoint"), (bad_shape, "expected 8000"),
                    (bad_format, "does not declare"), (bad_node, "unknown node type 'exec'")]:
        with pytest.raises(RuntimeError, match=NOT_CKPT) as e:
            funcgrad.load(rewrite(fn, "x.ckpt"))
        assert msg in str(e.value)


class _Evil:
    """Unpickling this calls open(marker, 'w'): it would create the marker file."""

    def __init__(self, marker):
        self.marker = marker

    def __reduce__(self):
        return (open, (self.marker, "w"))


def test_malicious_pickle_is_refused_and_not_executed(tmp_path):
    proof = tmp_path / "proof"
    pickle.loads(pickle.dumps(_Evil(str(proof)))).close()
    assert proof.exists()  # the payload really runs code when unpickled
    marker = tmp_path / "pwned"
    payload = pickle.dumps({"state": _Evil(str(marker))}, protocol=2)
    raw = tmp_path / "evil.pt"
    raw.write_bytes(payload)
    # the same payload inside a PyTorch-style zip checkpoint
    zipped = tmp_path / "evil_zip.pt"
    with zipfile.ZipFile(zipped, "w") as zf:
        zf.writestr("archive/data.pkl", payload)
        zf.writestr("archive/version", "3\n")
    for f in (raw, zipped):
        for kwargs in ({}, {"weights_only": True}):
            with pytest.raises(pickle.UnpicklingError, match="Weights only load failed") as e:
                funcgrad.load(f, **kwargs)
            # pickle names open by its __module__: io on Python 3.11, _io from 3.12
            assert f"GLOBAL {open.__module__}.open was not an allowed global" in str(e.value)
            with pytest.raises(pickle.UnpicklingError):
                funcgrad.load(io.BytesIO(f.read_bytes()))
    assert not marker.exists()


_CHILD = textwrap.dedent("""
    import sys, time
    import numpy as np
    import funcgrad
    from funcgrad import serialization as S

    path = sys.argv[1]
    big = {"w": funcgrad.from_numpy(np.full((4096, 1024), 7.0, np.float32))}  # 16 MiB

    class Slow:  # the real file, but every write is slow, so the parent can kill us mid-write
        def __init__(self, f):
            self._f = f
            self._told = False
        def write(self, b):
            n = self._f.write(b)
            self._f.flush()
            if not self._told:
                print("WRITING", flush=True)
                self._told = True
            time.sleep(0.02)
            return n
        def __getattr__(self, name):
            return getattr(self._f, name)

    from funcgrad._serialization import _torch_zip as Z
    real = Z.write_zip
    Z._CHUNK = 1 << 16
    Z.write_zip = lambda fh, *a: real(Slow(fh), *a)
    funcgrad.save(big, path)
    print("DONE", flush=True)
""")


def test_atomic_write_survives_a_crash_mid_write(tmp_path):
    path = tmp_path / "model.ckpt"
    old = {"w": funcgrad.arange(10, dtype=funcgrad.float32), "epoch": 1}
    funcgrad.save(old, path)
    before = path.read_bytes()
    env = dict(os.environ, JAX_PLATFORMS="cpu")
    proc = subprocess.Popen([sys.executable, "-c", _CHILD, str(path)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, env=env, cwd=os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    try:
        line = proc.stdout.readline()
        if line.strip() != b"WRITING":
            proc.wait(timeout=30)
            pytest.fail("the saving subprocess failed: " + proc.stderr.read().decode()[-2000:])
        deadline = time.time() + 30
        while not [n for n in os.listdir(tmp_path) if n.endswith(".tmp")] and time.time() < deadline:
            time.sleep(0.01)
        time.sleep(0.1)  # let some data reach the temporary file
        proc.send_signal(signal.SIGKILL)
    finally:
        proc.wait(timeout=30)
        proc.stdout.close()
        proc.stderr.close()
    assert proc.returncode == -signal.SIGKILL
    assert path.read_bytes() == before
    out = funcgrad.load(path)
    assert out["w"].tolist() == old["w"].tolist() and out["epoch"] == 1
    # the half-written temporary file is not a checkpoint, and a later save works
    leftovers = [n for n in os.listdir(tmp_path) if n.endswith(".tmp")]
    assert leftovers
    with pytest.raises(RuntimeError, match=NOT_CKPT):
        funcgrad.load(tmp_path / leftovers[0])
    funcgrad.save({"epoch": 2}, path)
    assert funcgrad.load(path) == {"epoch": 2}


def test_saved_file_mode_follows_umask(tmp_path):
    p = tmp_path / "m.ckpt"
    funcgrad.save({"a": 1}, p)
    umask = os.umask(0)
    os.umask(umask)
    assert os.stat(p).st_mode & 0o777 == 0o666 & ~umask


def test_bfloat16_values_survive():
    t = funcgrad.tensor([1.5, -2.25, 3.0e38], dtype=funcgrad.bfloat16)
    out = _roundtrip(t)
    assert out.dtype is funcgrad.bfloat16
    assert np.asarray(out._value).astype(np.float32).tolist() == \
        np.asarray(t._value).astype(np.float32).tolist()
    assert jnp.array_equal(out._value, t._value)


def test_parameter_loads_as_parameter():
    nn = pytest.importorskip("funcgrad.nn")
    p = nn.Parameter(funcgrad.ones(3))
    out = _roundtrip({"p": p})["p"]
    assert type(out) is nn.Parameter and out.requires_grad and out.tolist() == [1.0, 1.0, 1.0]


def test_module_and_optimizer_checkpoint_resume(tmp_path):
    nn = pytest.importorskip("funcgrad.nn")
    optim = pytest.importorskip("funcgrad.optim")
    x = funcgrad.ones(4, 2)

    def step(model, opt):
        opt.zero_grad()
        model(x).pow(2).sum().backward()
        opt.step()

    funcgrad.manual_seed(0)
    model = nn.Linear(2, 3)
    opt = optim.Adam(model.parameters(), lr=0.1)
    step(model, opt)
    funcgrad.save({"model": model.state_dict(), "opt": opt.state_dict(), "epoch": 1}, tmp_path / "ck.pt")
    ck = funcgrad.load(tmp_path / "ck.pt")
    model2 = nn.Linear(2, 3)
    opt2 = optim.Adam(model2.parameters(), lr=0.1)
    model2.load_state_dict(ck["model"])
    opt2.load_state_dict(ck["opt"])
    step(model, opt)
    step(model2, opt2)
    for a, b in zip(model.parameters(), model2.parameters()):
        assert a.tolist() == b.tolist()
    funcgrad.save({"m": model}, tmp_path / "whole.pt")  # a whole module: weights_only=False
    assert funcgrad.load(tmp_path / "whole.pt", weights_only=False)["m"].weight.tolist() == \
        model.weight.tolist()
