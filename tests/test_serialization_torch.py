"""PyTorch checkpoints: reading torch.save files (committed fixtures, no torch needed), and live
round trips with real PyTorch (funcgrad-saved files load in torch with weights_only=True)."""

import collections
import io
import os
import pickle
import struct
import zipfile

import numpy as np
import pytest

import funcgrad
from funcgrad import nn, optim

FIX = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixtures", "serialization")


def _np(t):
    a = np.asarray(t.detach()._value)
    return a.view(np.uint16) if t.dtype is funcgrad.bfloat16 else a


class MLP(nn.Module):  # the architecture of make_fixtures.py's MLP
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(4, 8)
        self.norm = nn.LayerNorm(8)
        self.fc2 = nn.Linear(8, 3)

    def forward(self, x):
        return self.fc2(funcgrad.relu(self.norm(self.fc1(x))))


# ---- fixtures recorded from torch (run without torch) ------------------------------------------
@pytest.mark.parametrize("name", ["dtypes.pt", "dtypes_legacy.pt"])
def test_torch_files_of_every_dtype_and_layout_load_exactly(name):
    out = funcgrad.load(os.path.join(FIX, name))
    expect = np.load(os.path.join(FIX, "dtypes.npz"))
    assert type(out) is collections.OrderedDict and list(out) == list(expect.files)
    for k in expect.files:
        t = out[k]
        assert type(t) is funcgrad.Tensor and not t.requires_grad, k
        assert t.dtype.name == (k if k in funcgrad._dtype._NAMES else t.dtype.name)
        a = _np(t)
        assert a.shape == expect[k].shape and a.dtype.itemsize == expect[k].dtype.itemsize, k
        assert a.tobytes() == expect[k].tobytes(), k


def test_views_of_one_storage_stay_shared():
    out = funcgrad.load(os.path.join(FIX, "dtypes.pt"))
    a, b = out["shared_a"], out["shared_b"]  # shared[2:7] and shared.view(2, 5)
    a[0] = 100
    assert b.tolist() == [[0, 1, 100, 3, 4], [5, 6, 7, 8, 9]]
    out["transposed"][0, 1] = -1.0  # base.t()[0, 1] is base[1, 0], also offset_view[0, 0]
    assert out["offset_view"][0, 0].item() == -1.0
    # a step slice is copied out (its layout is not a dense block): independent
    assert out["step_slice"][1, 0].item() == 6.0


def test_pytorch_trained_mlp_gives_pytorchs_outputs():
    ck = funcgrad.load(os.path.join(FIX, "mlp_trained.pt"))
    io_ = np.load(os.path.join(FIX, "mlp_io.npz"))
    for k, t in ck["model"].items():  # the values, checked independently of the reader
        assert np.asarray(t._value).tobytes() == io_[f"p.{k}"].tobytes(), k
    model = MLP()
    model.load_state_dict(ck["model"])
    y = model(funcgrad.from_numpy(io_["x"])).detach().numpy()
    np.testing.assert_allclose(y, io_["y"], rtol=1e-5, atol=1e-6)
    # the Adam state_dict of PyTorch drives a funcgrad Adam
    opt = optim.Adam(model.parameters(), lr=0.01)
    opt.load_state_dict(ck["optim"])
    assert opt.state_dict()["state"][0]["step"].item() == 5.0
    assert opt.param_groups[0]["lr"] == 0.01


def test_safetensors_file_from_the_package_loads():
    sd = funcgrad.load(os.path.join(FIX, "model.safetensors"))
    io_ = np.load(os.path.join(FIX, "mlp_io.npz"))
    assert sorted(sd) == sorted(k[2:] for k in io_.files if k.startswith("p."))
    for k, t in sd.items():
        assert np.asarray(t._value).tobytes() == io_[f"p.{k}"].tobytes()
    model = MLP()
    model.load_state_dict(sd)
    np.testing.assert_allclose(model(funcgrad.from_numpy(io_["x"])).detach().numpy(), io_["y"],
                               rtol=1e-5, atol=1e-6)


# ---- whole objects, safe globals ----------------------------------------------------------------
class Config:  # module level, so a pickle can name it
    def __init__(self, depth=3):
        self.depth = depth


def _saved(obj) -> io.BytesIO:
    buf = io.BytesIO()
    funcgrad.save(obj, buf)
    buf.seek(0)
    return buf


def test_whole_module_and_optimizer_need_weights_only_false():
    funcgrad.manual_seed(0)
    model = nn.Sequential(nn.Linear(2, 3), nn.Tanh(), nn.Linear(3, 1))
    opt = optim.Adam(model.parameters(), lr=0.1)
    x = funcgrad.ones(4, 2)
    model(x).sum().backward()
    opt.step()
    buf = _saved({"model": model, "opt": opt, "epoch": 1})
    for kwargs in ({}, {"weights_only": True}):
        buf.seek(0)
        with pytest.raises(pickle.UnpicklingError) as e:
            funcgrad.load(buf, **kwargs)
        msg = str(e.value)
        assert msg.startswith("Weights only load failed. This file can still be loaded, to do so "
                              "you have two options, \x1b[1mdo those steps only if you trust the "
                              "source of the checkpoint\x1b[0m. ")
        assert "Unsupported global: GLOBAL funcgrad.nn.layers.container.Sequential was not an " \
               "allowed global by default." in msg
    buf.seek(0)
    ck = funcgrad.load(buf, weights_only=False)
    m2, o2 = ck["model"], ck["opt"]
    assert type(m2) is nn.Sequential and ck["epoch"] == 1
    assert type(m2[0].weight) is nn.Parameter and m2[0].weight.requires_grad
    assert o2.param_groups[0]["params"][0] is m2[0].weight  # one object, as pickled
    for a, b in zip(model.parameters(), m2.parameters()):
        assert a.tolist() == b.tolist()
    for m, o in ((model, opt), (m2, o2)):  # both continue identically
        o.zero_grad()
        m(x).sum().backward()
        o.step()
    for a, b in zip(model.parameters(), m2.parameters()):
        assert a.tolist() == b.tolist()


def test_whole_module_in_the_legacy_format():
    model = nn.Linear(2, 2)
    buf = io.BytesIO()
    funcgrad.save({"m": model}, buf, _use_new_zipfile_serialization=False)
    buf.seek(0)
    with pytest.raises(pickle.UnpicklingError, match="GLOBAL funcgrad.nn.layers.linear.Linear"):
        funcgrad.load(buf)
    buf.seek(0)
    out = funcgrad.load(buf, weights_only=False)["m"]
    assert type(out) is nn.Linear and out.weight.tolist() == model.weight.tolist()


def test_safe_globals_allow_a_class():
    buf = _saved({"cfg": Config(5), "w": funcgrad.ones(1)})
    name = f"{Config.__module__}.Config"
    with pytest.raises(pickle.UnpicklingError, match=f"GLOBAL {name} was not an allowed global"):
        funcgrad.load(buf)
    assert funcgrad.serialization.get_safe_globals() == []
    with funcgrad.serialization.safe_globals([Config]):
        buf.seek(0)
        out = funcgrad.load(buf)
    assert type(out["cfg"]) is Config and out["cfg"].depth == 5
    assert funcgrad.serialization.get_safe_globals() == []
    funcgrad.serialization.add_safe_globals([(Config, name)])
    try:
        buf.seek(0)
        assert funcgrad.load(buf)["cfg"].depth == 5
    finally:
        funcgrad.serialization.clear_safe_globals()
    assert funcgrad.serialization.get_safe_globals() == []


def test_pickled_ndarray_is_refused_like_pytorch():
    for blob in (pickle.dumps(np.arange(3), protocol=2), _saved(np.arange(3)).getvalue()):
        with pytest.raises(pickle.UnpicklingError, match=r"GLOBAL numpy\._core\.multiarray\."
                           r"_reconstruct was not an allowed global by default"):
            funcgrad.load(io.BytesIO(blob))
    assert funcgrad.load(_saved(np.arange(3)), weights_only=False).tolist() == [0, 1, 2]
    with pytest.raises(RuntimeError, match="Can not safely load weights when explicit "
                       "pickle_module is specified"):
        funcgrad.load(_saved(1), pickle_module=pickle, weights_only=True)
    assert funcgrad.load(_saved(1), pickle_module=pickle) == 1  # weights_only defaults to False


def test_safetensors_round_trip_and_validation(tmp_path):
    sd = {"w": funcgrad.randn(3, 2), "i": funcgrad.arange(4, dtype=funcgrad.int16),
          "h": funcgrad.ones(2, dtype=funcgrad.bfloat16), "b": funcgrad.tensor([True, False])}
    p = tmp_path / "m.safetensors"
    funcgrad.save(sd, p)
    out = funcgrad.load(p)
    assert sorted(out) == sorted(sd)
    for k in sd:
        assert out[k].dtype is sd[k].dtype and _np(out[k]).tobytes() == _np(sd[k]).tobytes()
    with pytest.raises(TypeError, match="dict of tensors"):
        funcgrad.save([funcgrad.ones(1)], tmp_path / "x.safetensors")
    with pytest.raises(TypeError, match="complex128"):
        funcgrad.save({"c": funcgrad.ones(1, dtype=funcgrad.complex128)}, tmp_path / "x.safetensors")


def test_written_archive_has_pytorchs_records_and_alignment(tmp_path):
    p = tmp_path / "model.pt"
    funcgrad.save({"a": funcgrad.ones(3), "b": funcgrad.arange(7), "c": funcgrad.ones(5, dtype=funcgrad.float16)}, p)
    raw = p.read_bytes()
    with zipfile.ZipFile(p) as zf:
        names = zf.namelist()
        assert names == ["model/data.pkl", "model/.format_version", "model/.storage_alignment",
                         "model/byteorder", "model/data/0", "model/data/1", "model/data/2", "model/version"]
        assert zf.read("model/version") == b"3\n" and zf.read("model/byteorder") == b"little"
        for info in zf.infolist():
            assert info.compress_type == zipfile.ZIP_STORED
            n, e = struct.unpack("<HH", raw[info.header_offset + 26:info.header_offset + 30])
            assert (info.header_offset + 30 + n + e) % 64 == 0, info.filename


# ---- live round trips with PyTorch --------------------------------------------------------------
DTYPES = ["bool", "uint8", "int8", "int16", "int32", "int64", "float16", "bfloat16", "float32",
          "float64", "complex64", "complex128"]


def _sample(name):
    d = getattr(funcgrad, name)
    rng = np.random.default_rng(0)
    if name == "bool":
        return funcgrad.from_numpy(rng.integers(0, 2, (3, 4)).astype(bool))
    if not (d.is_floating_point or d.is_complex):
        return funcgrad.from_numpy(rng.integers(-50 if d.is_signed else 0, 100, (3, 4)).astype(d.np))
    a = rng.standard_normal((3, 4)) * 100
    if d.is_complex:
        a = a + 1j * rng.standard_normal((3, 4))
    return funcgrad.tensor(a.tolist() if not d.is_complex else a, dtype=d)


def _torch_np(t):
    import torch
    t = t.detach()
    if t.dtype == torch.bfloat16:
        return t.view(torch.int16).numpy().view(np.uint16)
    return t.numpy()


@pytest.mark.torch
@pytest.mark.parametrize("legacy", [False, True])
def test_funcgrad_files_load_in_torch_weights_only(tmp_path, legacy):
    torch = pytest.importorskip("torch")
    base = funcgrad.arange(12.0).view(3, 4)
    obj = {name: _sample(name) for name in DTYPES}
    obj.update(transposed=base.t(), sliced=base[:, 1::2], scalar=funcgrad.tensor(3),
               empty=funcgrad.zeros(0, 2), grad=funcgrad.ones(2, requires_grad=True),
               param=nn.Parameter(funcgrad.zeros(2)), size=funcgrad.Size([2, 3]),
               dtype=funcgrad.bfloat16, device=funcgrad.device("cpu"), nested=[(1, 2.5), {"k": b"x"}])
    p = tmp_path / "f.pt"
    funcgrad.save(obj, p, _use_new_zipfile_serialization=not legacy)
    out = torch.load(p, weights_only=True)
    assert list(out) == list(obj)
    for k, v in obj.items():
        if isinstance(v, funcgrad.Tensor):
            assert str(out[k].dtype) == f"torch.{v.dtype.name}", k
            assert tuple(out[k].shape) == tuple(v.shape), k
            assert _torch_np(out[k]).tobytes() == _np(v).tobytes(), k
            assert out[k].requires_grad == v.requires_grad, k
    assert type(out["param"]) is torch.nn.Parameter
    assert out["size"] == torch.Size([2, 3]) and type(out["size"]) is torch.Size
    assert out["dtype"] is torch.bfloat16 and out["device"] == torch.device("cpu")
    assert out["nested"] == [(1, 2.5), {"k": b"x"}]
    if not legacy:  # storages are 64-byte aligned, so PyTorch can also map the file
        mm = torch.load(p, mmap=True, weights_only=True)
        assert _torch_np(mm["float64"]).tobytes() == _np(obj["float64"]).tobytes()
    # and back: torch's own save of what it loaded reads in funcgrad identically
    buf = io.BytesIO()
    torch.save(out, buf)
    buf.seek(0)
    back = funcgrad.load(buf)
    for k, v in obj.items():
        if isinstance(v, funcgrad.Tensor):
            assert _np(back[k]).tobytes() == _np(v).tobytes() and back[k].dtype is v.dtype, k


@pytest.mark.torch
def test_optimizer_state_dicts_both_ways():
    torch = pytest.importorskip("torch")
    torch.manual_seed(0)
    tm = torch.nn.Linear(3, 2)
    fm = nn.Linear(3, 2)
    fm.load_state_dict(funcgrad.load(_torch_saved(torch, tm.state_dict())))
    topt = torch.optim.Adam(tm.parameters(), lr=0.05)
    fopt = optim.Adam(fm.parameters(), lr=0.05)
    xs = np.random.default_rng(0).standard_normal((4, 3)).astype(np.float32)

    def tstep():
        topt.zero_grad()
        tm(torch.from_numpy(xs)).pow(2).sum().backward()
        topt.step()

    def fstep():
        fopt.zero_grad()
        fm(funcgrad.from_numpy(xs)).pow(2).sum().backward()
        fopt.step()

    for _ in range(2):
        tstep()
    fopt.load_state_dict(funcgrad.load(_torch_saved(torch, topt.state_dict())))  # torch -> funcgrad
    fm.load_state_dict(funcgrad.load(_torch_saved(torch, tm.state_dict())))
    tstep()
    fstep()
    for (k, tv), fv in zip(tm.state_dict().items(), fm.state_dict().values()):
        np.testing.assert_allclose(fv.numpy(), tv.numpy(), rtol=1e-5, atol=1e-6, err_msg=k)
    buf = _saved({"model": fm.state_dict(), "optim": fopt.state_dict()})  # funcgrad -> torch
    ck = torch.load(buf, weights_only=True)
    tm.load_state_dict(ck["model"])
    topt.load_state_dict(ck["optim"])
    assert topt.state_dict()["state"][0]["step"].item() == 3.0
    tstep()
    fstep()
    for (k, tv), fv in zip(tm.state_dict().items(), fm.state_dict().values()):
        np.testing.assert_allclose(fv.numpy(), tv.numpy(), rtol=1e-5, atol=1e-6, err_msg=k)


def _torch_saved(torch, obj):
    buf = io.BytesIO()
    torch.save(obj, buf)
    buf.seek(0)
    return buf


@pytest.mark.torch
def test_weights_only_messages_match_torch():
    torch = pytest.importorskip("torch")
    cases = {
        "ndarray": pickle.dumps(np.arange(3), protocol=2),
        "os.system": b"\x80\x02cos\nsystem\nX\x04\x00\x00\x00trueq\x00\x85R.",
        "eval": b"\x80\x02cbuiltins\neval\nX\x01\x00\x00\x001\x85R.",
    }
    for name, blob in cases.items():
        with pytest.raises(pickle.UnpicklingError) as te:
            torch.load(io.BytesIO(blob))
        with pytest.raises(pickle.UnpicklingError) as fe:
            funcgrad.load(io.BytesIO(blob))
        ours = str(fe.value).replace("funcgrad.load", "torch.load").replace(
            "funcgrad.serialization", "torch.serialization")
        assert ours == str(te.value), name
    # a torch-pickled Module: both refuse with weights_only; funcgrad also with False (clearly)
    blob = _torch_saved(torch, torch.nn.Linear(2, 2)).getvalue()
    with pytest.raises(pickle.UnpicklingError, match="GLOBAL torch.nn.modules.linear.Linear was "
                       "not an allowed global"):
        funcgrad.load(io.BytesIO(blob))
    with pytest.raises(pickle.UnpicklingError, match="cannot load the PyTorch object "
                       "torch.nn.modules.linear.Linear"):
        funcgrad.load(io.BytesIO(blob), weights_only=False)
    # torch refuses a funcgrad whole module the same way
    with pytest.raises(pickle.UnpicklingError, match="GLOBAL funcgrad.nn.layers.linear.Linear was "
                       "not an allowed global"):
        torch.load(_saved(nn.Linear(2, 2)))


@pytest.mark.torch
def test_torch_dtypes_funcgrad_lacks_are_refused_clearly():
    torch = pytest.importorskip("torch")
    for dt in (torch.uint16, torch.float8_e4m3fn):
        with pytest.raises(RuntimeError, match=f"a tensor of dtype {dt}, which funcgrad does not support"):
            funcgrad.load(_torch_saved(torch, {"x": torch.zeros(3, dtype=dt)}))


@pytest.mark.torch
def test_safetensors_files_match_the_package(tmp_path):
    st = pytest.importorskip("safetensors.numpy")
    sd = {"w": funcgrad.randn(3, 2), "i": funcgrad.arange(4, dtype=funcgrad.int16),
          "a": funcgrad.ones(5, dtype=funcgrad.int64), "b": funcgrad.tensor([True, False]),
          "c": funcgrad.ones(2, dtype=funcgrad.int32), "h": funcgrad.ones(2, dtype=funcgrad.float64),
          "z": funcgrad.ones(2, dtype=funcgrad.complex64), "e": funcgrad.ones(3, dtype=funcgrad.bfloat16),
          "f": funcgrad.ones(3, dtype=funcgrad.float16), "u": funcgrad.ones(3, dtype=funcgrad.uint8),
          "s": funcgrad.ones(3, dtype=funcgrad.int8)}
    funcgrad.serialization.save_safetensors(sd, tmp_path / "ours.safetensors", metadata={"k": "v"})
    st.save_file({k: np.asarray(v._value) for k, v in sd.items()}, str(tmp_path / "theirs.safetensors"),
                 metadata={"k": "v"})
    assert (tmp_path / "ours.safetensors").read_bytes() == (tmp_path / "theirs.safetensors").read_bytes()
    back = st.load_file(str(tmp_path / "ours.safetensors"))
    assert all(back[k].tobytes() == np.asarray(v._value).tobytes() for k, v in sd.items())
