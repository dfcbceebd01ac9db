"""funcgrad.export: StableHLO programs that run without the model's Python class."""

from __future__ import annotations

import io
import os
import subprocess
import sys
import textwrap
import zipfile

import jax
import numpy as np
import pytest

import funcgrad
import funcgrad.nn.functional as F
from funcgrad import nn

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


class SmallCNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 4, 3, padding=1)
        self.bn = nn.BatchNorm2d(4)
        self.drop = nn.Dropout(0.5)  # eval() in the export makes it the identity
        self.fc = nn.Linear(4 * 4 * 4, 3)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.bn(self.conv(x))), 2)
        return self.fc(self.drop(x.reshape(-1, 4 * 4 * 4)))


@pytest.fixture(scope="module")
def trained():
    funcgrad.manual_seed(0)
    model = SmallCNN()
    opt = funcgrad.optim.SGD(model.parameters(), lr=0.1)
    for _ in range(2):  # a couple of steps: running stats and weights are non-trivial
        loss = model(_x(6, seed=10) * 2 + 1).pow(2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
    assert model.bn.num_batches_tracked.item() == 2
    ep = funcgrad.export(model, _x(2))
    return model, ep


def _x(n, seed=0, cols=8, dtype="float32"):
    # NumPy inputs: a funcgrad.randn of a new shape would compile a kernel (slow on a busy machine)
    a = np.random.default_rng(seed + n).standard_normal((n, 3, 8, cols)).astype(dtype)
    return funcgrad.from_numpy(a)


def _a(*shape, seed=0):
    return funcgrad.from_numpy(np.random.default_rng(seed).standard_normal(shape).astype("float32"))


def _eager(model, x):
    model.eval()
    try:
        with funcgrad.no_grad():
            return model(x).numpy()
    finally:
        model.train()


def test_export_matches_eager_two_batch_sizes(trained):
    model, ep = trained
    assert model.training and model.bn.training  # the export restored train mode
    stats = model.bn.running_mean.numpy().copy()
    for n in (2, 5):
        x = _x(n)
        out = ep(x)
        assert isinstance(out, funcgrad.Tensor) and out.grad_fn is None
        np.testing.assert_allclose(out.numpy(), _eager(model, x), rtol=1e-5, atol=1e-5)
        assert isinstance(ep(x.numpy()), np.ndarray)
        assert isinstance(ep(x._value), jax.Array)
    np.testing.assert_array_equal(model.bn.running_mean.numpy(), stats)  # eval: stats untouched


def test_print_shows_shapes_and_ops(trained):
    _, ep = trained
    text = repr(ep)
    assert text.startswith("ExportedProgram(SmallCNN)")
    assert "args[0]: float32[b, 3, 8, 8]" in text
    assert "output: float32[b, 3]" in text
    assert "weights:   9 tensors" in text  # conv w/b, bn w/b + 3 buffers, fc w/b
    assert f"{ep.num_ops} StableHLO ops" in text and ep.num_ops > 10
    assert ep.op_counts()["convolution"] >= 1
    assert "stablehlo.convolution" in ep.mlir_module()


def test_saved_program_runs_in_fresh_process_without_model_class(trained, tmp_path):
    pytest.importorskip("flatbuffers")
    model, ep = trained
    path = tmp_path / "cnn.fgx"
    ep.save(path)
    xs = {f"x{n}": _x(n, seed=1).numpy() for n in (2, 5)}
    np.savez(tmp_path / "inputs.npz", **xs)
    script = textwrap.dedent(f"""
        import sys, numpy as np, funcgrad, jax
        ep = funcgrad.export.load({str(path)!r})
        xs = np.load({str(tmp_path / "inputs.npz")!r})
        outs = {{}}
        for k in xs.files:
            outs[k] = ep(funcgrad.from_numpy(xs[k])).numpy()
            assert isinstance(ep(xs[k]), np.ndarray)
            assert isinstance(ep(jax.numpy.asarray(xs[k])), jax.Array)
        np.savez({str(tmp_path / "outputs.npz")!r}, **outs)
        assert not any("test_export" in m for m in sys.modules), "model module was imported"
        print(ep)
    """)
    env = dict(os.environ, PYTHONPATH=REPO, JAX_PLATFORMS="cpu")
    res = subprocess.run([sys.executable, "-c", script], cwd=tmp_path, env=env,
                         capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stderr[-3000:]
    assert "float32[b, 3, 8, 8]" in res.stdout
    outs = np.load(tmp_path / "outputs.npz")
    for k in xs:
        np.testing.assert_allclose(outs[k], _eager(model, funcgrad.from_numpy(xs[k])),
                                   rtol=1e-5, atol=1e-5)


def test_save_load_in_memory_and_manifest(trained):
    pytest.importorskip("flatbuffers")
    _, ep = trained
    buf = io.BytesIO()
    ep.save(buf)
    with zipfile.ZipFile(io.BytesIO(buf.getvalue())) as zf:
        import json
        man = json.loads(zf.read("funcgrad_export.json"))
    assert man["inputs"] == [{"shape": ["b", 3, 8, 8], "dtype": "float32"}]
    assert man["outputs"] == [{"shape": ["b", 3], "dtype": "float32"}]
    assert man["jax_version"] == jax.__version__ and man["funcgrad_version"] == funcgrad.__version__
    buf.seek(0)
    ep2 = funcgrad.load_exported(buf)
    x = _x(2, seed=3)
    np.testing.assert_array_equal(ep2(x).numpy(), ep(x).numpy())
    assert repr(ep2) == repr(ep)


def test_corrupt_or_wrong_files_raise_clear_errors(trained, tmp_path):
    pytest.importorskip("flatbuffers")
    _, ep = trained
    good = tmp_path / "good.fgx"
    ep.save(good)
    data = good.read_bytes()
    (tmp_path / "trunc.fgx").write_bytes(data[: len(data) // 2])
    with pytest.raises(RuntimeError, match="is not a funcgrad exported program or is corrupted"):
        funcgrad.load_exported(tmp_path / "trunc.fgx")
    flipped = bytearray(data)
    flipped[200] ^= 0xFF  # inside the program bytes: the zip CRC check catches it
    (tmp_path / "flip.fgx").write_bytes(bytes(flipped))
    with pytest.raises(RuntimeError, match="corrupted"):
        funcgrad.load_exported(tmp_path / "flip.fgx")
    funcgrad.save({"w": funcgrad.ones(2)}, tmp_path / "ckpt.pt")
    with pytest.raises(RuntimeError, match="no funcgrad_export.json manifest"):
        funcgrad.load_exported(tmp_path / "ckpt.pt")
    (tmp_path / "junk.fgx").write_bytes(b"not a zip at all")
    with pytest.raises(RuntimeError, match="not a valid archive"):
        funcgrad.load_exported(tmp_path / "junk.fgx")


def test_wrong_inputs_raise(trained):
    _, ep = trained
    with pytest.raises(ValueError, match=r"expects float32\[b, 3, 8, 8\], got float32\[2, 3, 8, 9\]"):
        ep(_x(2, cols=9))
    with pytest.raises(TypeError, match="got float64"):
        ep(_x(2, dtype="float64"))


class MaskModel(nn.Module):
    def forward(self, x):
        return x[x > 0]


class ItemModel(nn.Module):
    def __init__(self):
        super().__init__()
        self.bn = nn.BatchNorm1d(3)

    def forward(self, x):
        return self.bn(x) * x.sum().item()


def test_non_exportable_models_give_helpful_errors():
    with pytest.raises(funcgrad.export.ExportError, match=r"(?s)boolean mask indexing.*static graph"):
        funcgrad.export(MaskModel(), _a(2, 3))
    m = ItemModel()
    before = m.bn.running_mean.numpy().copy()
    with pytest.raises(funcgrad.export.ExportError, match=r"(?s)item\(\).*test_export.py"):
        funcgrad.export(m, _a(2, 3))
    assert m.training and m.bn.training  # restored after the failure
    np.testing.assert_array_equal(m.bn.running_mean.numpy(), before)
    assert not isinstance(m.bn.running_mean._value, jax.core.Tracer)


def test_static_batch_and_plain_function():
    w = _a(3, 2)
    ep = funcgrad.export(lambda x, y: (x @ w + y).relu(), (_a(4, 3), _a(4, 2)),
                         dynamic_batch=False)
    assert ep.inputs[0]["shape"] == [4, 3]
    x, y = _a(4, 3, seed=1), _a(4, 2, seed=2)
    np.testing.assert_allclose(ep(x, y).numpy(), (x @ w + y).relu().numpy(), rtol=1e-6)
    with pytest.raises(ValueError, match=r"expects float32\[4, 3\]"):
        ep(_a(5, 3), _a(5, 2))
