"""The API surface real PyTorch scripts use (issue 18): legacy names (``FloatTensor``,
``Variable``, ``Tensor(2, 3)``), ``backends``/``accelerator``/runtime switches, ``onnx``,
``utils.benchmark``, ``testing.assert_close``, ``nn.modules.*`` paths, call forms
(``keepdims=``, ``range`` indices, ``cat`` of 0-d), RNN node names, dict order in ``func.grad``
and NumPy memory sharing — each checked against PyTorch 2.13 where it is installed."""

from __future__ import annotations

import importlib
import re
import warnings

import numpy as np
import pytest

import funcgrad
import funcgrad.backends.cudnn as fg_cudnn
from funcgrad import _runtime
from funcgrad.autograd import Variable


@pytest.fixture
def torch():
    return pytest.importorskip("torch")


@pytest.fixture(autouse=True)
def _restore_runtime():
    """Runtime switches are process-wide: every test gets (and leaves) the defaults, in both
    libraries."""
    saved = dict(_runtime._state)
    flags = {n: getattr(fg_cudnn, n) for n in ("enabled", "benchmark", "deterministic", "allow_tf32")}
    tsaved = None
    try:
        import torch as _t
        tsaved = (_t.get_num_threads(), _t.get_float32_matmul_precision(),
                  _t.are_deterministic_algorithms_enabled(), _t.backends.cudnn.benchmark)
    except ImportError:
        _t = None
    yield
    if saved["precision"] != _runtime._state["precision"]:
        funcgrad.set_float32_matmul_precision(saved["precision"])
    if saved["device"] is not _runtime._state["device"]:
        funcgrad.set_default_device(saved["device"])
    _runtime._state.update(saved)
    for n, v in flags.items():
        setattr(fg_cudnn, n, v)
    if tsaved is not None:
        _t.set_num_threads(tsaved[0])
        _t.set_float32_matmul_precision(tsaved[1])
        _t.use_deterministic_algorithms(tsaved[2])
        _t.backends.cudnn.benchmark = tsaved[3]


def _spelled(msg: str) -> str:
    """PyTorch's message in funcgrad's spelling of its own names."""
    return msg.replace("torch.", "funcgrad.")


def _outcome(lib, f):
    try:
        r = f(lib)
    except Exception as e:  # noqa: BLE001  (the outcome compared is the exception)
        return ("raises", type(e).__name__, _spelled(str(e)) if lib.__name__ == "torch" else str(e))
    return ("ok", _describe(r))


def _describe(r):
    if isinstance(r, tuple):
        return tuple(_describe(x) for x in r)
    if hasattr(r, "dtype") and hasattr(r, "shape") and hasattr(r, "tolist"):
        return (str(r.dtype).split(".")[-1], tuple(r.shape), r.tolist())
    return r


# ---- legacy tensor types -------------------------------------------------------------------------
LEGACY = ["FloatTensor", "DoubleTensor", "HalfTensor", "BFloat16Tensor", "LongTensor", "IntTensor",
          "ShortTensor", "CharTensor", "ByteTensor", "BoolTensor"]

LEGACY_CALLS = {
    "data": lambda T: T([1, 0, 2]),
    "nested": lambda T: T([[1.7, 2.2], [3.0, 0.0]]),
    "sizes": lambda T: T(2, 3).shape,
    "size_obj": lambda T: T(_size(T)(2, 1)).shape,
    "empty": lambda T: T(),
    "zero_size": lambda T: T(0).shape,
    "ndarray": lambda T: T(np.array([1.5, 2.5])),
    "tuple_data": lambda T: T((1, 2)),
    "bad_float": lambda T: T(2.5),
    "bad_str": lambda T: T("a"),
    "bad_mixed": lambda T: T(2, [3]),
    "negative": lambda T: T(-1),
}


def _size(T):
    return importlib.import_module(T.__module__.split(".")[0]).Size


@pytest.mark.torch
@pytest.mark.parametrize("name", LEGACY)
@pytest.mark.parametrize("call", list(LEGACY_CALLS))
def test_legacy_constructors_match_torch(torch, name, call):
    f = LEGACY_CALLS[call]
    got = _outcome(funcgrad, lambda lib: f(getattr(lib, name)))
    want = _outcome(torch, lambda lib: f(getattr(lib, name)))
    if call in ("sizes", "size_obj", "zero_size"):  # compare shapes as tuples
        got, want = (got[0], tuple(got[1])), (want[0], tuple(want[1]))
    assert got == want


@pytest.mark.torch
def test_legacy_isinstance_and_type_strings(torch):
    for lib in (funcgrad, torch):
        pass
    rows = []
    for lib in (funcgrad, torch):
        xs = [lib.ones(2), lib.ones(2).double(), lib.tensor([1, 2]), lib.tensor([True]),
              lib.ones(1, dtype=lib.bfloat16), lib.ones(1, dtype=lib.complex64), lib.nn.Parameter(lib.ones(1))]
        rows.append([[isinstance(x, getattr(lib, n)) for n in LEGACY] + [x.type()] for x in xs])
    assert rows[0] == rows[1]
    x, tx = funcgrad.tensor([1.5, 2.5]), torch.tensor([1.5, 2.5])
    for spec in ("LongTensor", "IntTensor", "DoubleTensor"):
        assert _describe(x.type(getattr(funcgrad, spec))) == _describe(tx.type(getattr(torch, spec)))
        assert _describe(x.type("torch." + spec)) == _describe(tx.type("torch." + spec))
    assert _describe(x.type(funcgrad.int32)) == _describe(tx.type(torch.int32))
    assert x.type(funcgrad.FloatTensor) is x and tx.type(torch.FloatTensor) is tx
    assert _outcome(funcgrad, lambda lib: x.type("foo")) == _outcome(torch, lambda lib: tx.type("foo"))
    assert not issubclass(funcgrad.FloatTensor, funcgrad.Tensor)
    assert funcgrad.FloatTensor.dtype is funcgrad.float32 and funcgrad.LongTensor.dtype is funcgrad.int64
    assert not isinstance(funcgrad.ones(1), funcgrad.cuda.FloatTensor)


@pytest.mark.torch
def test_legacy_errors_match_torch(torch):
    cases = [lambda lib: lib.FloatTensor([1, 2], dtype=lib.float64),
             lambda lib: lib.FloatTensor(lib.tensor([1, 2])),
             lambda lib: lib.Tensor(2.5), lambda lib: lib.Tensor(-1)]
    for f in cases:
        assert _outcome(funcgrad, f) == _outcome(torch, f)


@pytest.mark.torch
def test_tensor_legacy_forms_match_torch(torch):
    cases = [lambda lib: lib.Tensor(2, 3).shape, lambda lib: lib.Tensor([1, 2]), lambda lib: lib.Tensor(),
             lambda lib: lib.Tensor(lib.Size([2, 1])).shape, lambda lib: lib.Tensor((1, 2)),
             lambda lib: lib.Tensor(3).shape, lambda lib: lib.Tensor(np.array([1, 2])),
             lambda lib: lib.Tensor([[1, 2], [3, 4]])]
    for f in cases:
        got, want = _outcome(funcgrad, f), _outcome(torch, f)
        assert got == want or (got[0] == want[0] == "ok" and tuple(got[1]) == tuple(want[1]))


def test_tensor_of_tensor_aliases_storage():
    t = funcgrad.tensor([1.0, 2.0])
    a = funcgrad.Tensor(t)
    a.add_(1)
    assert t.tolist() == [2.0, 3.0] and a is not t
    b = funcgrad.FloatTensor(t)
    b.mul_(2)
    assert t.tolist() == [4.0, 6.0]


# ---- Variable --------------------------------------------------------------------------------------
@pytest.mark.torch
def test_variable_matches_torch(torch):
    from torch.autograd import Variable as TV
    for lib, V in ((funcgrad, Variable), (torch, TV)):
        t = lib.ones(2)
        v = V(t, requires_grad=True)
        assert type(v) is lib.Tensor and v.requires_grad and v.is_leaf and v is not t
        assert isinstance(v, V) and isinstance(lib.nn.Parameter(lib.ones(1)), V) and not isinstance(3, V)
        assert not V(lib.ones(2)).requires_grad and V(lib.ones(2), True).requires_grad
        assert not V(v, requires_grad=False).requires_grad
        y = (v * 2).sum()
        assert V(y).grad_fn is None and V(y).tolist() == 4.0
        w = V(t)
        w.add_(1)
        assert t.tolist() == [2.0, 2.0] and t._version == w._version == 1
        assert V().tolist() == [] and V().dtype is lib.float32
        assert v.data.tolist() == [2.0, 2.0] and not v.data.requires_grad  # v shares t's storage
    for f in (lambda V, lib: V([1, 2]), lambda V, lib: V(lib.tensor([1, 2]), requires_grad=True),
              lambda V, lib: V(lib.ones(2), foo=1)):
        assert _outcome(funcgrad, lambda lib: f(Variable, lib)) == _outcome(torch, lambda lib: f(TV, lib))


@pytest.mark.torch
def test_variable_volatile_warns_like_torch(torch):
    from torch.autograd import Variable as TV
    msgs = []
    for lib, V in ((funcgrad, Variable), (torch, TV)):
        with warnings.catch_warnings(record=True) as rec:
            warnings.simplefilter("always")
            V(lib.ones(2), volatile=False)
            assert not rec
            V(lib.ones(2), volatile=True)
        msgs.append([(r.category, str(r.message)) for r in rec])
    assert msgs[0] == msgs[1] and len(msgs[0]) == 1


CUDA_QUERIES = ["empty_cache", "current_device", "get_device_name", "memory_allocated",
                "max_memory_allocated", "memory_reserved", "is_bf16_supported", "max_memory_reserved",
                "memory_stats", "reset_peak_memory_stats", "reset_accumulated_memory_stats"]


@pytest.mark.torch
@pytest.mark.parametrize("name", CUDA_QUERIES)
def test_cuda_queries_answer_as_torchs_cpu_build(torch, name):
    """``torch.cuda.empty_cache()``/``memory_allocated()``... in a script: without a GPU the
    answers (and errors) of PyTorch's CPU build; with one, JAX's device and memory statistics."""
    def call(lib):
        try:
            return "ok", getattr(lib.cuda, name)()
        except Exception as e:
            return type(e).__name__, str(e)
    if funcgrad.cuda.is_available():
        kind, v = call(funcgrad)
        assert kind == "ok" and (v is not None or name == "empty_cache" or name.startswith("reset_"))
    else:
        assert call(funcgrad) == call(torch)


# ---- backends, accelerator, runtime switches ------------------------------------------------------
@pytest.mark.torch
def test_backends_defaults_match_torch(torch):
    import torch.backends.cudnn as t_cudnn
    assert type(fg_cudnn).__name__ == "module" and fg_cudnn is funcgrad.backends.cudnn
    for n in ("enabled", "benchmark", "deterministic", "allow_tf32"):
        assert getattr(fg_cudnn, n) == getattr(t_cudnn, n), n
    if not funcgrad.cuda.is_available():
        assert fg_cudnn.is_available() == t_cudnn.is_available() is False
        assert fg_cudnn.version() is t_cudnn.version() is None
        assert funcgrad.backends.cuda.is_built() == torch.backends.cuda.is_built()
    assert funcgrad.backends.mps.is_available() == torch.backends.mps.is_available() is False
    assert funcgrad.backends.mps.is_built() is False
    m, tm = funcgrad.backends.cuda.matmul, torch.backends.cuda.matmul
    for n in ("allow_tf32", "allow_fp16_reduced_precision_reduction", "allow_bf16_reduced_precision_reduction"):
        assert getattr(m, n) == getattr(tm, n), n
    assert _outcome(funcgrad, lambda lib: m.foo) == _outcome(torch, lambda lib: tm.foo)
    with fg_cudnn.flags(enabled=False, benchmark=True):
        assert not fg_cudnn.enabled and fg_cudnn.benchmark
    assert fg_cudnn.enabled and not fg_cudnn.benchmark
    fg_cudnn.benchmark = True
    assert funcgrad.backends.cudnn.benchmark


@pytest.mark.torch
def test_tf32_flag_and_matmul_precision_are_one_setting(torch):
    for lib in (funcgrad, torch):
        seen = [lib.get_float32_matmul_precision()]
        lib.backends.cuda.matmul.allow_tf32 = True
        seen.append(lib.get_float32_matmul_precision())
        lib.set_float32_matmul_precision("medium")
        seen.append(lib.backends.cuda.matmul.allow_tf32)
        lib.set_float32_matmul_precision("highest")
        seen.append(lib.backends.cuda.matmul.allow_tf32)
        with warnings.catch_warnings(record=True) as rec:
            warnings.simplefilter("always")
            lib.set_float32_matmul_precision("foo")
        seen += [lib.get_float32_matmul_precision(), [(r.category, str(r.message)) for r in rec]]
        if lib is funcgrad:
            got = seen
    assert got == seen or got[:-1] == seen[:-1] and got[-1][0][1] in seen[-1][0][1]
    assert got == ["highest", "high", True, False, "highest", got[-1]]


@pytest.mark.torch
def test_runtime_switches_match_torch(torch):
    for f in (lambda lib: lib.set_num_threads(0), lambda lib: lib.set_num_threads(-1),
              lambda lib: lib.set_num_threads("a"), lambda lib: lib.use_deterministic_algorithms("a")):
        assert _outcome(funcgrad, f) == _outcome(torch, f)
    for lib in (funcgrad, torch):
        lib.set_num_threads(1)
        assert lib.get_num_threads() == 1
        assert lib.are_deterministic_algorithms_enabled() is False
        lib.use_deterministic_algorithms(True)
        assert lib.are_deterministic_algorithms_enabled() and not lib.is_deterministic_algorithms_warn_only_enabled()
        assert lib.get_deterministic_debug_mode() == 2
        lib.use_deterministic_algorithms(True, warn_only=True)
        assert lib.is_deterministic_algorithms_warn_only_enabled() and lib.get_deterministic_debug_mode() == 1
        lib.use_deterministic_algorithms(False)
        assert lib.get_deterministic_debug_mode() == 0
    assert funcgrad.get_num_interop_threads() >= 1


def test_set_num_interop_threads_once():
    funcgrad.set_num_interop_threads(3)
    assert funcgrad.get_num_interop_threads() == 3
    with pytest.raises(RuntimeError, match="^Error: cannot set number of interop threads after parallel "
                                           "work has started or set_num_interop_threads called$"):
        funcgrad.set_num_interop_threads(4)


@pytest.mark.torch
def test_default_device_and_accelerator_match_torch(torch):
    assert repr(funcgrad.get_default_device()) == repr(torch.get_default_device())
    funcgrad.set_default_device("cpu")
    assert repr(funcgrad.get_default_device()) == "device(type='cpu')"
    assert funcgrad.ones(2).device == funcgrad.device("cpu")
    funcgrad.set_default_device(None)
    assert repr(funcgrad.get_default_device()) == repr(torch.get_default_device())
    with pytest.raises(RuntimeError, match="^Expected one of cpu, cuda"):
        funcgrad.set_default_device("foo")
    if not funcgrad.cuda.is_available():
        assert funcgrad.accelerator.is_available() is torch.accelerator.is_available() is False
        assert funcgrad.accelerator.current_accelerator() is torch.accelerator.current_accelerator() is None
        assert funcgrad.accelerator.device_count() == torch.accelerator.device_count() == 0
        f = lambda lib: lib.accelerator.current_device_index()  # noqa: E731
        assert _outcome(funcgrad, f) == _outcome(torch, f)
    else:
        assert funcgrad.accelerator.current_accelerator() == funcgrad.device("cuda")


@pytest.mark.torch
def test_tensor_flags_and_version_match_torch(torch):
    for lib in (funcgrad, torch):
        x = lib.ones(2)
        flags = (x.is_xpu, x.is_mps, x.is_cuda, x.is_cpu, x.is_meta, x.is_sparse, x._version)
        x.add_(1)
        x[0] = 3
        y = x.detach()
        y.mul_(2)
        d = x.data
        d.mul_(2)  # .data does not share the version counter
        got = flags + (x._version, y._version, d._version)
        with pytest.raises(AttributeError):
            x._version = 3
        if lib is funcgrad:
            fg = got
    assert fg == got


def test_onnx_export_points_to_funcgrad_export():
    import funcgrad.onnx
    with pytest.raises(NotImplementedError, match=r"not supported.*use funcgrad\.export|Use funcgrad\.export"):
        funcgrad.onnx.export(funcgrad.nn.Linear(2, 2), (funcgrad.ones(1, 2),), "model.onnx")
    assert funcgrad.onnx.is_in_onnx_export() is False


# ---- utils.benchmark --------------------------------------------------------------------------------
@pytest.mark.torch
@pytest.mark.parametrize("times,number,kw", [
    ([1.2e-4], 100, {}),
    ([2.0e-3, 2.1e-3, 2.05e-3, 9e-3, 2.2e-3], 1000, {}),
    ([3e-6, 3.1e-6, 3.05e-6, 3.02e-6], 10, dict(label="lab", sub_label="sub", description="desc")),
    ([1.0, 1.01], 1, dict(setup="a = 1\nb = 2")),
])
def test_measurement_matches_torch(torch, times, number, kw):
    from torch.utils.benchmark.utils.common import Measurement as TM, TaskSpec as TT
    from funcgrad.utils.benchmark import Measurement, TaskSpec
    spec = dict(stmt="x + x", setup="pass")
    spec.update(kw)
    m, tm = Measurement(number, list(times), TaskSpec(**spec)), TM(number, list(times), TT(**spec))
    assert (m.mean, m.median, m.iqr, m.times, m.title, m.has_warnings, m.significant_figures) == \
        (tm.mean, tm.median, tm.iqr, tm.times, tm.title, tm.has_warnings, tm.significant_figures)
    body = lambda r: r.split("\n", 1)[1]  # noqa: E731  (the first line is the object's address)
    assert body(repr(m)) == body(repr(tm))
    assert repr(m).startswith("<funcgrad.utils.benchmark.Measurement object at 0x")


def test_timer_runs_statements():
    from funcgrad.utils import benchmark
    x = funcgrad.ones(4)
    t = benchmark.Timer(stmt="torch.add(x, x)", setup="y = 1", globals={"x": x})
    m = t.timeit(5)
    assert m.number_per_run == 5 and len(m.times) == 1 and m.mean > 0 and m.median == m.mean
    b = t.blocked_autorange(min_run_time=0.01)
    assert b.number_per_run >= 1 and sum(b.raw_times) >= 0.01 and b.median > 0
    with pytest.raises(ValueError, match="Currently only a `str` stmt is supported."):
        benchmark.Timer(stmt=lambda: 0)
    with pytest.raises(NotImplementedError, match="See `Timer.blocked_autorange.`"):
        t.autorange()


# ---- testing.assert_close -----------------------------------------------------------------------------
CLOSE_CASES = [
    lambda L: (L.tensor([1., 2, 3]), L.tensor([1., 2.1, 3])),
    lambda L: (L.tensor([1., 2, 3]), L.tensor([1., 2.1, 3.5])),
    lambda L: (L.tensor(1.), L.tensor(1.1)),
    lambda L: (L.tensor([1, 2]), L.tensor([1, 3])),
    lambda L: (L.tensor([1., 2]), L.tensor([1, 2])),
    lambda L: (L.tensor([1., 2]), L.tensor([1., 2], dtype=L.float64)),
    lambda L: (L.tensor([1., 2]), L.tensor([1., 2, 3])),
    lambda L: (L.tensor([1., 2]), [1., 2]),
    lambda L: (1.0, 1.0 + 1e-6),
    lambda L: (1.0, 1.1),
    lambda L: (3, 4),
    lambda L: (1, 1.0),
    lambda L: ([L.tensor(1.)], [L.tensor(2.)]),
    lambda L: ({"a": L.tensor(1.)}, {"a": L.tensor(2.)}),
    lambda L: ({"a": 1}, {"b": 1}),
    lambda L: ([1, 2], [1, 2, 3]),
    lambda L: (None, None),
    lambda L: (None, 1),
    lambda L: (True, False),
    lambda L: ("a", "a"),
    lambda L: (L.tensor([float("nan")]), L.tensor([float("nan")])),
    lambda L: (L.tensor([[1., 2], [3, 4]]), L.tensor([[1., 2], [3, 5]])),
    lambda L: (L.tensor([1., 2], dtype=L.float64), L.tensor([1., 2.00001], dtype=L.float64)),
    lambda L: (L.tensor([1., 2], dtype=L.float16), L.tensor([1., 2.001], dtype=L.float16)),
    lambda L: (L.tensor([1., 2], dtype=L.float16), L.tensor([1., 2.01], dtype=L.float16)),
    lambda L: (L.tensor([True]), L.tensor([False])),
    lambda L: (L.tensor([1., 2], requires_grad=True), L.tensor([1., 2])),
    lambda L: (L.tensor([1., float("inf")]), L.tensor([1., float("inf")])),
    lambda L: (L.tensor([1., float("inf")]), L.tensor([1., -float("inf")])),
    lambda L: (L.tensor([0., 2]), L.tensor([1e-3, 2])),
    lambda L: (L.tensor([1, 2], dtype=L.uint8), L.tensor([1, 4], dtype=L.uint8)),
    lambda L: (L.tensor([1 + 1j]), L.tensor([1 + 2j])),
    lambda L: ((L.tensor([1.]), L.tensor([2.])), [L.tensor([1.]), L.tensor([3.])]),
    lambda L: (np.array([1., 2]), np.array([1., 3])),
    lambda L: (L.tensor([1., 2]), np.array([1., 2], dtype=np.float32)),
    lambda L: (np.float32(1), np.float32(2)),
    lambda L: (L.tensor(3), L.tensor(5)),
]
CLOSE_KW = [{}, dict(rtol=0.1, atol=0), dict(rtol=0.1), dict(atol=0.1), dict(rtol=0, atol=0),
            dict(equal_nan=True), dict(check_dtype=False), dict(msg="custom"),
            dict(msg=lambda m: "X" + m), dict(check_dtype=False, rtol=0.1, atol=0.1)]


@pytest.mark.torch
@pytest.mark.parametrize("kw", CLOSE_KW, ids=[str(sorted(k)) for k in CLOSE_KW])
def test_assert_close_matches_torch(torch, kw):
    for i, case in enumerate(CLOSE_CASES):
        got = _outcome(funcgrad, lambda L: funcgrad.testing.assert_close(*case(L), **kw))
        want = _outcome(torch, lambda L: torch.testing.assert_close(*case(L), **kw))
        assert got == want, f"case {i}"


def test_assert_close_default_tolerances():
    from funcgrad.testing import default_tolerances
    assert default_tolerances(funcgrad.float32) == (1.3e-6, 1e-5)
    assert default_tolerances(funcgrad.float16, funcgrad.float64) == (1e-3, 1e-5)
    assert default_tolerances(funcgrad.int64) == (0.0, 0.0)


# ---- nn.modules import paths --------------------------------------------------------------------------
MODULE_PATHS = ["module", "linear", "conv", "activation", "batchnorm", "instancenorm", "normalization",
                "dropout", "container", "rnn", "sparse", "pooling", "loss", "flatten", "padding",
                "pixelshuffle", "upsampling", "transformer", "distance", "fold", "channelshuffle", "adaptive"]


@pytest.mark.torch
@pytest.mark.parametrize("path", MODULE_PATHS)
def test_nn_modules_paths_match_torch(torch, path):
    import inspect
    tmod = importlib.import_module(f"torch.nn.modules.{path}")
    fmod = importlib.import_module(f"funcgrad.nn.modules.{path}")
    public = [n for n, o in vars(tmod).items() if inspect.isclass(o) and o.__module__ == tmod.__name__
              and not n.startswith("_")]
    have = [n for n in public if hasattr(funcgrad.nn, n)]
    assert have, path
    for n in have:
        assert getattr(fmod, n) is getattr(funcgrad.nn, n)
        assert getattr(funcgrad.nn.modules, n) is getattr(funcgrad.nn, n)
    missing = [n for n in public if hasattr(funcgrad.nn, n) and not hasattr(fmod, n)]
    assert not missing


def test_private_base_classes_import():
    from funcgrad.nn.modules.batchnorm import _BatchNorm
    from funcgrad.nn.modules.conv import _ConvNd
    from funcgrad.nn.modules.loss import _Loss, _WeightedLoss
    from funcgrad.nn.modules.module import Module
    assert Module is funcgrad.nn.Module and issubclass(funcgrad.nn.MSELoss, _Loss)
    assert issubclass(funcgrad.nn.CrossEntropyLoss, _WeightedLoss)
    assert issubclass(funcgrad.nn.Conv2d, _ConvNd) and issubclass(funcgrad.nn.BatchNorm1d, _BatchNorm)


# ---- call forms -----------------------------------------------------------------------------------------
KEEPDIMS = ["sum", "mean", "prod", "amax", "amin", "max", "min", "std", "var", "nansum", "nanmean", "all",
            "any", "logsumexp", "norm", "median", "argmax", "argmin", "count_nonzero", "std_mean",
            "var_mean", "nanmedian", "mode", "cumsum"]


@pytest.mark.torch
@pytest.mark.parametrize("name", KEEPDIMS)
def test_keepdims_alias_like_torch(torch, name):
    def run(lib, form):
        x = lib.arange(6.0).reshape(2, 3)
        if form == "fn":
            return getattr(lib, name)(x, 1, keepdims=True)
        if form == "both":
            return getattr(lib, name)(x, 1, keepdim=True, keepdims=True)
        return getattr(x, name)(dim=1, keepdims=True)

    for form in ("fn", "method", "both"):
        if form == "method" and not hasattr(torch.Tensor, name):
            continue
        got, want = _outcome(funcgrad, lambda lib: run(lib, form)), _outcome(torch, lambda lib: run(lib, form))
        assert got[0] == want[0], (form, got, want)
        if got[0] == "ok":
            assert got == want
        else:
            assert got[1] == want[1] == "TypeError"


@pytest.mark.torch
def test_range_indices_match_torch(torch):
    def run(lib):
        x = lib.arange(12.0).reshape(3, 4)
        t = lib.tensor([0, 1, 3])
        out = [x[range(3), t], x[range(1, 3)], x[:, range(2)], x[range(0, 3, 2), 1]]
        x[range(2), 0] = 5.0
        return tuple(out) + (x,)
    assert _outcome(funcgrad, run) == _outcome(torch, run)
    x = funcgrad.arange(12.0).reshape(3, 4).requires_grad_()
    y = x[range(3), funcgrad.tensor([0, 1, 3])]
    assert y.grad_fn.name() == "IndexBackward0"
    y.sum().backward()
    assert x.grad.sum().item() == 3.0


@pytest.mark.torch
@pytest.mark.parametrize("case", [lambda L: [L.tensor(1.), L.tensor(2.)],
                                  lambda L: [L.ones(2), L.tensor(2.)],
                                  lambda L: [L.ones(0), L.ones(2), L.tensor(3.)]])
def test_cat_zero_dim_error_matches_torch(torch, case):
    got, want = _outcome(funcgrad, lambda L: L.cat(case(L))), _outcome(torch, lambda L: L.cat(case(L)))
    assert got == want and got[0] == "raises"


@pytest.mark.torch
def test_func_grad_keeps_dict_order(torch):
    import torch.func as tf

    def run(lib, fmod):
        d = {"b": lib.ones(2), "a": lib.ones(2) * 2, "c": {"z": lib.ones(1), "y": lib.ones(1)}}
        f = lambda p, x: (p["b"] * p["a"] * x).sum() + (p["c"]["z"] * p["c"]["y"]).sum()  # noqa: E731
        g = fmod.grad(f)(d, lib.ones(2))
        gv, _ = fmod.grad_and_value(f, argnums=(0, 1))(d, lib.ones(2))
        _, pull = fmod.vjp(lambda p: p["b"] * p["a"], d)
        return [list(g), list(g["c"]), list(gv[0]), list(pull(lib.ones(2))[0])]
    assert run(funcgrad, funcgrad.func) == run(torch, tf) == [["b", "a", "c"], ["z", "y"], ["b", "a", "c"],
                                                              ["b", "a", "c"]]


RNN_CASES = [
    ("LSTM", {}, (4, 1, 2)), ("LSTM", dict(num_layers=2), (4, 1, 2)), ("LSTM", dict(bidirectional=True), (4, 1, 2)),
    ("LSTM", dict(batch_first=True), (1, 4, 2)), ("LSTM", {}, (4, 2)), ("GRU", dict(num_layers=2), (4, 1, 2)),
    ("GRU", dict(bidirectional=True), (4, 1, 2)), ("RNN", dict(bidirectional=True), (4, 1, 2)), ("RNN", {}, (4, 2)),
    ("RNN", {}, (4, 1, 2)),
]


@pytest.mark.torch
@pytest.mark.parametrize("cls,kw,shape", RNN_CASES)
def test_rnn_result_nodes_match_torch(torch, cls, kw, shape):
    def names(lib):
        out, hidden = getattr(lib.nn, cls)(2, 3, **kw)(lib.ones(*shape))
        hs = hidden if isinstance(hidden, tuple) else (hidden,)
        return [t.grad_fn.name() for t in (out,) + hs]
    assert names(funcgrad) == names(torch)


def test_lstm_state_nodes_carry_gradients():
    lstm = funcgrad.nn.LSTM(2, 3, bidirectional=True)
    out, (h, c) = lstm(funcgrad.ones(4, 1, 2))
    (out.sum() + h.sum() + c.sum()).backward()
    assert all(p.grad is not None for p in lstm.parameters())
    assert h.grad_fn.next_functions[0][0].name() == "MkldnnRnnLayerBackward0"


# ---- NumPy memory sharing ------------------------------------------------------------------------------
def test_numpy_sees_inplace_ops_tutorial():
    a = funcgrad.ones(5)
    b = a.numpy()
    a.add_(1)
    assert b.tolist() == [2.0] * 5 and a.tolist() == [2.0] * 5
    a[0] = 7.0
    assert b[0] == 7.0
    b[1] = 9.0  # and NumPy writes show in the tensor
    assert a.tolist() == [7.0, 9.0, 2.0, 2.0, 2.0] and repr(a) == "tensor([7., 9., 2., 2., 2.])"


def test_from_numpy_sees_numpy_writes_tutorial():
    a = np.ones(5)
    b = funcgrad.from_numpy(a)
    np.add(a, 1, out=a)
    assert repr(b) == "tensor([2., 2., 2., 2., 2.], dtype=funcgrad.float64)"
    b.mul_(3)
    assert a.tolist() == [6.0] * 5
    v = b[1:3]  # a view reads the shared values too
    a[2] = -1.0
    assert v.tolist() == [6.0, -1.0] and (b * 2).tolist() == [12.0, 12.0, -2.0, 12.0, 12.0]


@pytest.mark.torch
def test_numpy_sharing_matches_torch(torch):
    def run(lib):
        out = []
        t = lib.arange(6.0).reshape(2, 3)
        n = t.numpy()
        t.mul_(2)
        n[1, 1] = -5
        t[0] += 1
        out += [n.tolist(), t.tolist()]
        arr = np.arange(4, dtype=np.int32)
        u = lib.from_numpy(arr)
        arr[::2] = 9
        u.add_(1)
        out += [arr.tolist(), u.tolist(), str(u.dtype).split(".")[-1]]
        y = lib.zeros(3)
        yn = y.detach().numpy()
        y.copy_(lib.tensor([1.0, 2.0, 3.0]))
        out.append(yn.tolist())
        return out
    assert run(funcgrad) == run(torch)


def test_numpy_sharing_ends_when_the_array_is_dropped():
    t = funcgrad.ones(3)
    n = t.numpy()
    cell = t._cell
    assert type(cell).__name__ == "_HostCell"
    del n
    t.add_(1)
    assert type(t._cell).__name__ == "_Cell" and t.tolist() == [2.0, 2.0, 2.0]


def test_numpy_sharing_keeps_autograd_and_views_working():
    a = np.array([1.0, 2.0, 3.0], np.float32)
    x = funcgrad.from_numpy(a).requires_grad_()
    y = (x * x).sum()
    y.backward()
    assert x.grad.tolist() == [2.0, 4.0, 6.0]
    w = funcgrad.ones(2, 2)
    wn = w.numpy()
    r = w[0]
    rn = r.numpy()  # a view's array is a NumPy view of its base's, as in PyTorch
    assert np.shares_memory(rn, wn)
    rn[1] = 4.0
    assert w.tolist() == [[1.0, 4.0], [1.0, 1.0]]
    w.fill_(1.0)
    w.t().mul_(3)  # writes through a view reach the NumPy array
    assert wn.tolist() == [[3.0, 3.0], [3.0, 3.0]]
    with pytest.raises(RuntimeError, match="Can't call numpy\\(\\) on Tensor that requires grad"):
        x.numpy()


@pytest.mark.torch
def test_complex_prints_and_parts_match_torch(torch):
    def run(lib):
        z = lib.fft.fft(lib.tensor([1.0, 2.0, 0.0, -1.0]))
        return [repr(z).replace("torch.", "funcgrad."), repr(z.to(lib.complex128)).replace("torch.", "funcgrad."),
                z.real.tolist(), z.imag.tolist(), lib.real(lib.ones(2)).tolist()]
    assert run(funcgrad) == run(torch)
    f = lambda lib: lib.ones(2).imag  # noqa: E731
    assert _outcome(funcgrad, f) == _outcome(torch, f)


@pytest.mark.torch
def test_output_nr_matches_torch(torch):
    def run(lib):
        x = lib.randn(4, requires_grad=True)
        a, b = x.split(2)
        m, i = x.max(0)
        e = lib.linalg.eigh(lib.eye(3, requires_grad=True) * 2)
        return [x.output_nr, a.output_nr, b.output_nr, lib.ones(2).output_nr, m.output_nr, i.output_nr,
                (x * 2).output_nr, b.detach().output_nr, b.view(2).output_nr, e.eigenvalues.output_nr,
                e.eigenvectors.output_nr]
    assert run(funcgrad) == run(torch)


_SCALAR_SCRIPT = r"""
import sys, warnings
warnings.simplefilter("always")
lib = __import__(sys.argv[1])
x = lib.ones(1, requires_grad=True)
seen = []
for expr in sys.argv[2:]:
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        eval(expr, {"x": x, "lib": lib})
    seen.append([str(m.message).split(" (Triggered internally")[0] for m in w])
print(repr(seen))
"""


@pytest.mark.torch
@pytest.mark.parametrize("exprs", [
    ("float(x)", "float(x)", "complex(x)"),  # once per process
    ("int(x)", "x.item()", "bool(x)", "x.tolist()", "float(x * 2)"),
    ("complex(x)", "float(x.detach())"),
    # grad mode off: no warning (LBFGS's float(closure()) under no_grad), and the once is not spent
    ("[lib.set_grad_enabled(False), float(x), complex(x), lib.set_grad_enabled(True)]", "float(x)"),
], ids=["float-once", "int-item-then-float", "complex", "no-grad-then-float"])
def test_scalar_conversion_of_a_tensor_that_requires_grad_warns_once_as_torch(torch, exprs):
    """``float(loss)`` warns once per process while grad mode is on, as PyTorch's TORCH_WARN_ONCE
    (``int()``, ``.item()``, ``bool()``, ``.tolist()`` do not)."""
    import subprocess
    import sys
    out = [subprocess.run([sys.executable, "-c", _SCALAR_SCRIPT, lib, *exprs], capture_output=True,
                          text=True, timeout=300, check=True).stdout for lib in ("funcgrad", "torch")]
    assert out[0] == out[1]
    assert "Converting a tensor with requires_grad=True" in out[0]



_CLASSES = {"Tensor": (lambda lib: lib.ones(1), "<class 'torch.Tensor'>"),  # (recorded from PyTorch 2.13)
            "Size": (lambda lib: lib.ones(2).shape, "<class 'torch.Size'>"),
            "device": (lambda lib: lib.device("cpu"), "<class 'torch.device'>")}


@pytest.mark.parametrize("name", sorted(_CLASSES))
def test_public_classes_print_pytorchs_path(name):
    """``type(x)`` prints ``<class 'funcgrad.Tensor'>`` (PyTorch's ``torch.Tensor``), not the
    private module that defines it (found running the tutorial 'Introduction to PyTorch Tensors',
    which prints ``type(x)``); such objects still pickle and load (``funcgrad.Tensor`` is the class)."""
    import pickle
    make, want = _CLASSES[name]
    obj = make(funcgrad)
    assert repr(type(obj)).replace("funcgrad", "torch") == want
    assert type(pickle.loads(pickle.dumps(obj))) is type(obj)


@pytest.mark.torch
@pytest.mark.parametrize("name", sorted(_CLASSES))
def test_recorded_class_paths_are_pytorchs(torch, name):
    make, want = _CLASSES[name]
    assert repr(type(make(torch))) == want


def test_torch_functional_module():
    """``import torch.functional as F`` (PyTorch's tutorial 'Building Models with PyTorch' does):
    the module of the functions PyTorch writes in Python, each ``funcgrad.<name>`` itself. Its
    names are PyTorch 2.13's ``torch.functional.__all__``."""
    import funcgrad.functional as F
    assert F.__all__ == ["atleast_1d", "atleast_2d", "atleast_3d", "broadcast_shapes", "broadcast_tensors",
                         "cartesian_prod", "block_diag", "cdist", "chain_matmul", "einsum", "istft", "lu", "norm",
                         "meshgrid", "pca_lowrank", "split", "stft", "svd_lowrank", "tensordot", "unique",
                         "unique_consecutive", "unravel_index"]
    assert all(getattr(F, n) is getattr(funcgrad, n) for n in F.__all__)
    assert funcgrad.functional is F


@pytest.mark.torch
def test_torch_functional_names_are_pytorchs(torch):
    import funcgrad.functional as F
    assert F.__all__ == torch.functional.__all__
