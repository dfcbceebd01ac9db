"""apply's fast path (a call decided once by its operands' dtypes runs its kernel directly) and
Python scalars as reused 0-d arrays: the same results, nodes, errors and compiles as the full path.

Each case runs its call three times: the first takes the full path and remembers the decision,
the later ones take the fast path; every result must equal the first (bit for bit) and, where
PyTorch is installed, PyTorch's values, dtype, node name and gradients.
"""

import math
import warnings

import numpy as np
import pytest

import funcgrad
from funcgrad import _cache, _dispatch, _scalars

from .test_caches import _COMPILES

# (name, f(mod, a, b) -> tensor) with a = 4x3 float32 requiring grad, b = 4x3 float32 constant
CASES = [
    ("exp", lambda m, a, b: m.exp(a)),
    ("neg", lambda m, a, b: -a),
    ("mul tensors", lambda m, a, b: a * b),
    ("mul scalar", lambda m, a, b: a * 2.5),
    ("rmul int", lambda m, a, b: 3 * a),
    ("add alpha", lambda m, a, b: m.add(a, b, alpha=2)),
    ("add scalar", lambda m, a, b: a + 1),
    ("sub float", lambda m, a, b: a - 1.5),
    ("rsub", lambda m, a, b: 1.5 - a),
    ("div scalar", lambda m, a, b: a / 3.0),
    ("pow scalar", lambda m, a, b: a ** 2),
    ("pow tensor", lambda m, a, b: a.abs() ** b),
    ("constant only", lambda m, a, b: b * b + 0.5),
    ("clamp", lambda m, a, b: m.clamp(a, min=-0.5)),
    ("mul -0.0", lambda m, a, b: a * -0.0),
    ("add method", lambda m, a, b: a.add(b)),
    ("sum", lambda m, a, b: a.sum()),
    ("sum dim", lambda m, a, b: a.sum(1)),
    ("sum dim keepdim", lambda m, a, b: a.sum(-1, keepdim=True)),
    ("sum function", lambda m, a, b: m.sum(a, 0, True)),
    ("mean", lambda m, a, b: a.mean()),
]


def _inputs(mod):
    rng = np.random.default_rng(0)
    a = mod.tensor(rng.standard_normal((4, 3)).astype(np.float32), requires_grad=True)
    b = mod.tensor(rng.standard_normal((4, 3)).astype(np.float32))
    return a, b


def _run(mod, f):
    a, b = _inputs(mod)
    out = f(mod, a, b)
    node = type(out.grad_fn).__name__ if out.grad_fn is not None else None
    grad = None
    if out.requires_grad:
        out.sum().backward()
        grad = a.grad.detach().numpy().copy()
    return out.detach().numpy().copy(), str(out.dtype).split(".")[-1], node, grad


@pytest.mark.parametrize("name,f", CASES, ids=[c[0] for c in CASES])
def test_fast_path_same_as_full_path(name, f):
    runs = [_run(funcgrad, f) for _ in range(3)]  # full path, then remembered
    for r in runs[1:]:
        np.testing.assert_array_equal(r[0], runs[0][0])
        assert r[0].tobytes() == runs[0][0].tobytes()  # -0.0 included
        assert r[1:3] == runs[0][1:3]
        if runs[0][3] is None:
            assert r[3] is None
        else:
            assert r[3].tobytes() == runs[0][3].tobytes()


@pytest.mark.torch
@pytest.mark.parametrize("name,f", CASES, ids=[c[0] for c in CASES])
def test_fast_path_matches_torch(name, f):
    torch = pytest.importorskip("torch")
    ref = _run(torch, f)
    for _ in range(3):
        got = _run(funcgrad, f)
        np.testing.assert_allclose(got[0], ref[0], rtol=1e-6, atol=1e-6)
        assert np.signbit(got[0]).tolist() == np.signbit(ref[0]).tolist()
        assert got[1:3] == ref[1:3]
        if ref[3] is None:
            assert got[3] is None
        else:
            np.testing.assert_allclose(got[3], ref[3], rtol=1e-6, atol=1e-6)


def test_remembered_calls_skip_the_decisions(monkeypatch):
    """The second call of a remembered kind neither promotes nor looks up the kernel again.
    (Fresh ops: the table's own may have gone per-shape in this process, which is never
    remembered, see test_churning_shapes_drop_the_remembered_plain_kernel.)"""
    import jax.numpy as jnp

    mul = _dispatch.Op("fast_mul", jnp.multiply, "MulBackward0", promote="binary")
    exp = _dispatch.Op("fast_exp", jnp.exp, "ExpBackward0", promote="float")
    sm = _dispatch.Op("fast_sum", lambda x, dim: x.sum(dim), "SumBackward1")
    a, b = _inputs(funcgrad)
    calls = lambda: (_dispatch.apply(mul, a, b), _dispatch.apply(mul, a, 2.0),  # noqa: E731
                     _dispatch.apply(exp, a), _dispatch.apply(sm, a, dim=1))
    first = calls()  # remembered (full path)
    assert (a.dtype.np, b.dtype.np) in mul._fast and (a.dtype.np, float) in mul._fast
    assert a.dtype.np in exp._fast and (a.dtype.np, (("dim", 1),)) in sm._fast

    def refuse(*args, **kw):
        raise AssertionError("the full path ran")
    monkeypatch.setattr(_dispatch, "result_dtype", refuse)
    monkeypatch.setattr(_dispatch, "_check_dtype", refuse)
    monkeypatch.setattr(_dispatch, "_remember", refuse)
    again = calls()
    assert [type(r.grad_fn).__name__ for r in again] == ["MulBackward0", "MulBackward0", "ExpBackward0",
                                                        "SumBackward1"]
    for r, f in zip(again, first):
        assert r.detach().numpy().tobytes() == f.detach().numpy().tobytes()
    with funcgrad.no_grad():
        assert not _dispatch.apply(mul, a, b).requires_grad


# (name, operands(a, b, c), operator): a and b 4x3 float32 leaves requiring grad, c a constant
_MUL, _ADD = (lambda x, y: x * y), (lambda x, y: x + y)
RECORDED = [
    ("mul, one needs grad", lambda a, b, c: (a, c), _MUL),
    ("mul, the other", lambda a, b, c: (c, a), _MUL),
    ("mul, both", lambda a, b, c: (a, b), _MUL),
    ("mul, a non-leaf", lambda a, b, c: (a * c, b), _MUL),
    ("mul, same tensor", lambda a, b, c: (a, a), _MUL),
    ("mul by a float", lambda a, b, c: (a, 2.5), _MUL),
    ("rmul int", lambda a, b, c: (a, 3), lambda x, y: y * x),  # (3 * a: a.__rmul__(3))
    ("add tensors", lambda a, b, c: (a, b), _ADD),
    ("add a constant", lambda a, b, c: (c, a), _ADD),
    ("add a float", lambda a, b, c: (a, 1.5), _ADD),
    ("add broadcast", lambda a, b, c: (a, c[0]), _ADD),
]


@pytest.mark.parametrize("name,operands,f", RECORDED, ids=[c[0] for c in RECORDED])
def test_unrolled_recording_makes_the_nodes_record_makes(name, operands, f):
    """The binary caller records a plain or linear op unrolled: the node (key, what it saves,
    versions, edges) is the one ``_record`` makes of the same call, and backward agrees with
    anomaly mode's (which records through ``_record``)."""
    rng = np.random.default_rng(1)
    a, b, c = (funcgrad.tensor(rng.standard_normal((4, 3)).astype(np.float32), requires_grad=r)
               for r in (True, True, False))
    x, y = operands(a, b, c)
    f(x, y)  # remembered
    out = f(x, y)  # unrolled
    node = out.grad_fn
    vals = tuple(v._value if isinstance(v, funcgrad.Tensor) else _scalars.scalar_array(v) for v in (x, y))
    ref = _dispatch._record(node._op, (x, y), out._value, (), node._key[1], node._key[3], vals,
                            True).grad_fn
    assert type(node) is type(ref)
    assert node._key == ref._key and node._mask_pos == ref._mask_pos
    assert node._out_avals is ref._out_avals is None and node._freed is ref._freed is False
    assert type(node._saved) is type(ref._saved) and len(node._saved) == 2
    assert all(s is r for s, r in zip(node._saved, ref._saved, strict=True))
    assert node._versions == ref._versions
    assert node.next_functions == ref.next_functions
    assert ref._sequence_nr() > node._sequence_nr()
    out.sum().backward()
    ga = a.grad.numpy().copy()
    a.grad = None
    with pytest.warns(UserWarning, match="Anomaly Detection has been enabled"):
        with funcgrad.autograd.detect_anomaly():
            f(*operands(a, b, c)).sum().backward()
    assert a.grad.numpy().tobytes() == ga.tobytes()


def test_unrolled_recording_keeps_version_checks_and_inference_errors():
    """An operand saved by the unrolled recording is checked at backward like any saved
    tensor; an inference tensor cannot be saved (PyTorch's error), a linear op saves none."""
    w = funcgrad.ones(3, requires_grad=True)
    v = funcgrad.ones(3)
    for _ in range(2):  # remembered, then unrolled
        r = w * v
    v.add_(1)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        r.sum().backward()
    with funcgrad.inference_mode():
        i = funcgrad.ones(3)
    for _ in range(2):
        with pytest.raises(RuntimeError, match="Inference tensors cannot be saved for backward"):
            w * i
        with pytest.raises(RuntimeError, match="Inference tensors cannot be saved for backward"):
            i * w
        assert (w + i).grad_fn.name() == "AddBackward0"


def test_promotion_that_depends_on_more_than_dtypes_is_not_remembered():
    """A 0-dim operand, the default dtype: the full path decides each time (PyTorch's rules)."""
    x32 = funcgrad.ones(2, 2)
    s64 = funcgrad.tensor(2.0, dtype=funcgrad.float64)
    m64 = funcgrad.ones(2, 2, dtype=funcgrad.float64)
    i = funcgrad.tensor([1, 2])
    for _ in range(3):
        assert (x32 * s64).dtype is funcgrad.float32  # a 0-dim tensor does not promote
        assert (x32 * m64).dtype is funcgrad.float64
        assert (s64 * s64).dtype is funcgrad.float64
        assert (i * 2.5).dtype is funcgrad.float32
    funcgrad.set_default_dtype(funcgrad.float64)
    try:
        assert (i * 2.5).dtype is funcgrad.float64  # not the float32 decided before
        assert (i / i).dtype is funcgrad.float64
    finally:
        funcgrad.set_default_dtype(funcgrad.float32)
    assert (i * 2.5).dtype is funcgrad.float32


def test_value_checks_run_every_call():
    """Integer division checks the divisor's values: never a remembered call."""
    a, b = funcgrad.tensor([4, 6]), funcgrad.tensor([2, 3])
    for _ in range(3):
        assert (a // b).tolist() == [2, 2]
    with pytest.raises(RuntimeError, match="ZeroDivisionError"):
        a // funcgrad.tensor([0, 1])
    with pytest.raises(RuntimeError, match="ZeroDivisionError"):
        a // 0


def test_dtype_refusals_survive_remembering():
    x = funcgrad.ones(2)
    for _ in range(3):
        x.abs()
    for _ in range(2):
        with pytest.raises(NotImplementedError, match="\"abs_cpu\" not implemented for 'Bool'"):
            funcgrad.tensor([True, False]).abs()


def test_broadcast_error_from_the_fast_path():
    a, b = funcgrad.ones(3), funcgrad.ones(3)
    for _ in range(3):
        a * b
    for _ in range(2):
        with pytest.raises(RuntimeError, match=r"The size of tensor a \(3\) must match the size of "
                                               r"tensor b \(4\) at non-singleton dimension 0"):
            a * funcgrad.ones(4)


def test_modes_still_apply():
    x = funcgrad.ones(3, requires_grad=True)
    for _ in range(3):
        x * 2.0
    with funcgrad.inference_mode():
        r = x * 2.0
    assert r.is_inference() and not r.requires_grad
    with funcgrad.no_grad():
        assert not (x * 2.0).requires_grad
    with funcgrad.autocast("cpu", dtype=funcgrad.bfloat16):
        assert funcgrad.mm(x[None], x[:, None]).dtype is funcgrad.bfloat16


def test_views_and_leaf_errors_take_the_full_path():
    x = funcgrad.arange(6.0).reshape(2, 3)
    for _ in range(3):
        y = x.t() * 2.0  # a view operand: its value computed as a view
    assert y.tolist() == [[0.0, 6.0], [2.0, 8.0], [4.0, 10.0]]
    w = funcgrad.ones(2, requires_grad=True)
    with pytest.raises(RuntimeError, match="a leaf Variable that requires grad"):
        w.mul_(2.0)


def test_churning_shapes_drop_the_remembered_plain_kernel(monkeypatch):
    """A kernel that becomes per-shape (bounded) is not kept alive and called by the fast path."""
    monkeypatch.setattr(_cache, "CHURN", 2)
    traced = []

    def fn(x):
        traced.append(x.shape)
        return x * 3.0
    op = _dispatch.Op("fast_churn", fn, "FastChurnBackward0", promote="float")
    run = lambda n: _dispatch.apply(op, funcgrad.ones(n)).numpy()  # noqa: E731
    run(1), run(1)
    assert len(op._fast) == 1
    run(2), run(3)  # the third shape makes the kernel per-shape
    assert not op._fast
    run(1)
    assert type(next(iter(op._fwd.values()))) is _cache.ShapeKernel
    assert traced.count((1,)) == 2  # traced again per-shape: the plain kernel is not used
    assert not op._fast  # a per-shape kernel is never remembered


def test_static_callers_follow_the_fast_table(monkeypatch):
    """``Op.call_with``: the call for fixed static arguments (``x.sum(1)``) remembers through the
    op's table, keeps nothing once the kernel is per-shape, and differs by static arguments."""
    monkeypatch.setattr(_cache, "CHURN", 2)
    traced = []

    def fn(x, *, dim):
        traced.append((x.shape, dim))
        return x.sum(dim)
    op = _dispatch.Op("fast_static", fn, "FastStaticBackward0")
    s0, s1 = op.call_with(dim=0), op.call_with(dim=1)
    assert op.call_with(dim=0) is s0  # made once per static arguments
    x = funcgrad.ones(2, 3)
    assert s0(x).tolist() == [2.0] * 3 and s1(x).tolist() == [3.0] * 2
    assert s0(x).tolist() == [2.0] * 3 and s1(x).tolist() == [3.0] * 2
    assert len(op._static_calls[(("dim", 0),)][1]) == 1  # remembered by dtype
    assert traced == [((2, 3), 0), ((2, 3), 1)]

    def refuse(*args, **kw):
        raise AssertionError("the full path ran")
    with monkeypatch.context() as m:
        m.setattr(_dispatch, "_apply", refuse)
        r = s0(funcgrad.ones(2, 3, requires_grad=True))
        assert type(r.grad_fn).__name__ == "FastStaticBackward0"
    s0(funcgrad.ones(4, 3)), s0(funcgrad.ones(5, 3))  # per-shape from the third shape on
    assert not op._fast and not op._static_calls[(("dim", 0),)][1]
    assert s0(x).tolist() == [2.0] * 3
    assert not op._static_calls[(("dim", 0),)][1]  # a per-shape kernel is never remembered
    with pytest.raises(IndexError, match="Dimension out of range"):
        x.sum(2)
    assert x.sum(1, keepdim=True).shape == (2, 1) and x.sum(1).shape == (2,)


def test_scalar_arrays_are_reused_and_keep_signed_zero_apart():
    a = _scalars.scalar_array(2.5)
    assert _scalars.scalar_array(2.5) is a and a.dtype == np.float64 and a.weak_type
    assert _scalars.scalar_array(2) is not _scalars.scalar_array(2.0)  # 2 == 2.0, other types
    assert _scalars.scalar_array(True).dtype == np.bool_
    neg, pos = _scalars.scalar_array(-0.0), _scalars.scalar_array(0.0)
    assert math.copysign(1, float(neg)) == -1 and math.copysign(1, float(pos)) == 1
    assert _scalars.scalar_array(-0.0) is neg and _scalars.scalar_array(0.0) is pos
    nan, mnan = _scalars.scalar_array(float("nan")), _scalars.scalar_array(-float("nan"))
    assert math.isnan(float(nan)) and math.copysign(1, float(nan)) == 1
    assert math.copysign(1, float(mnan)) == -1 and _scalars.scalar_array(float("nan")) is nan
    big = 2 ** 63  # uint64's range, past int64's: left as it is (jax's own error follows)
    assert _scalars.scalar_array(big) is big
    with pytest.raises(OverflowError):
        funcgrad.ones(2) + big
    with pytest.raises(OverflowError, match="int too big to convert"):  # past uint64: PyTorch's
        _scalars.scalar_array(2 ** 70)
    assert _scalars.scalar_array(None) is None and _scalars.scalar_array("s") == "s"


def test_scalar_arrays_are_bounded(monkeypatch):
    monkeypatch.setattr(_scalars, "_SCALAR_ARRAYS", {})
    monkeypatch.setattr(_scalars, "SCALAR_ARRAYS_MAX", 8)
    x = funcgrad.ones(2)
    for i in range(1, 30):  # a scalar that changes every step (a schedule)
        assert (x * float(i)).tolist() == [float(i)] * 2
    assert len(_scalars._SCALAR_ARRAYS) <= 8


def test_scalar_operands_compile_once():
    """A scalar's new values, the fast path and later backward passes compile nothing more."""
    x = funcgrad.ones(5, 7, requires_grad=True)
    # compiled here; twice: where an earlier test left mul/add at their per-shape switch
    # (_cache.CHURN signatures), the first call finishes on the plain kernel and the second
    # compiles the same signature once more in the per-shape kernel (order-dependent: it failed
    # after tests/test_meta_device.py, and once in the suite on the GPU machine)
    for _ in range(2):
        (x * 1.25 + 0.5).sum().backward()
    with _COMPILES as c:
        for v in (2.0, 3.0, -1.0):
            for _ in range(2):
                x.grad = None
                (x * v + 0.5).sum().backward()
        with funcgrad.no_grad():
            x * 7.0
    assert c.n == 0
    assert x.grad.tolist() == [[-1.0] * 7] * 5


def test_scalar_saved_for_backward_engine_and_fused_agree():
    """A saved Python scalar reaches the backward kernel (engine, fused program) as its array."""
    x = funcgrad.tensor([1.0, 2.0, 3.0], requires_grad=True)
    for hooked in (False, True, False):
        x.grad = None
        y = x ** 3
        if hooked:  # a hook on a node: the graph runs by regions / the engine
            y.register_hook(lambda g: g)
        (y * 0.5).sum().backward()
        assert x.grad.tolist() == [1.5, 6.0, 13.5]


def test_no_warnings_and_repeatable():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        a, b = _inputs(funcgrad)
        outs = [((a * b + 1) ** 2 / 3.0 - a).detach().numpy().tobytes() for _ in range(4)]
    assert len(set(outs)) == 1


def test_default_alpha_is_a_two_operand_kernel_with_the_same_bits():
    """``x + y``, ``x - y``, ``1 - x`` (alpha 1) run a kernel without the alpha operand: the same
    bits as alpha given as 1.0 (the three-operand kernel), and a complex operand keeps PyTorch's
    product ``1 * y`` (``inf * (1+0j)`` has a nan imaginary part), eager and compiled alike."""
    from funcgrad._ops import OPS
    add, sub = OPS["add"], OPS["sub"]
    rng = np.random.default_rng(0)
    x = funcgrad.tensor(rng.standard_normal(64).astype(np.float32))
    y = funcgrad.tensor(rng.standard_normal(64).astype(np.float32))
    for _ in range(3):
        assert (x + y).numpy().tobytes() == funcgrad.add(x, y, alpha=1.0).numpy().tobytes()
        assert (x - y).numpy().tobytes() == funcgrad.sub(x, y, alpha=1.0).numpy().tobytes()
        assert (1.5 - x).numpy().tobytes() == funcgrad.sub(1.5, x, alpha=1.0).numpy().tobytes()
    # two-operand kernels (keyed by static arguments, cast, operand count; plain or per-shape)
    assert any(k[2] == 2 for k in add._fwd) and any(k[2] == 2 for k in sub._fwd)
    inf, one = funcgrad.tensor([complex(np.inf, 0)] * 16), funcgrad.tensor([complex(1, 0)] * 16)
    want = [complex(np.inf, np.nan), complex(np.inf, 0), complex(-np.inf, np.nan)]  # PyTorch 2.13's
    step = funcgrad.jit(lambda a, b: (b + a, a - b, b - a))
    for got in [(one + inf, inf - one, one - inf), step(inf, one), step(inf, one)]:
        for g, w in zip(got, want, strict=True):
            np.testing.assert_array_equal(g.numpy(), np.full(16, w))


def test_inference_mode_of_any_thread_reaches_the_fast_path():
    """The fast path reads a thread's inference mode only while some thread has it on (a global
    count, kept by every change of the thread-local state, however made)."""
    import threading

    from funcgrad._grad_mode import INFERENCE, _state
    x = funcgrad.ones(3)
    calls = lambda: [x * 2.0, x + x, x.exp(), x.sum(0), x.sum()]  # noqa: E731
    for _ in range(3):
        calls()  # remembered
    assert INFERENCE[0] == 0
    got = {}

    def worker():
        with funcgrad.inference_mode():
            got["in"] = calls()
        got["out"] = calls()
    t = threading.Thread(target=worker)
    t.start()
    t.join()
    assert all(r.is_inference() for r in got["in"]) and not any(r.is_inference() for r in got["out"])
    assert INFERENCE[0] == 0
    on, go, late = threading.Event(), threading.Event(), []

    def stays():  # modes set directly, as a DataLoader worker copies its parent's
        _state.enabled, _state.inference = False, True
        on.set()
        go.wait()
        late.extend(calls())
        _state.enabled, _state.inference = True, False
    t = threading.Thread(target=stays)
    t.start()
    on.wait()
    assert INFERENCE[0] == 1
    assert not any(r.is_inference() for r in calls())  # this thread's own mode
    go.set()
    t.join()
    assert all(r.is_inference() for r in late) and INFERENCE[0] == 0
    _state.inference = True  # grad mode on with it (never by the API): as the full path, plain results
    try:
        assert not any(r.is_inference() for r in calls() + [x.abs()])  # (abs: the full path)
        assert all((x > 0).is_inference() for _ in range(3))  # never differentiable: inference
    finally:
        _state.inference = False
    assert INFERENCE[0] == 0


# A float dim equals an int one as a kernel-cache key (1.0 == 1): it must be refused whatever ran
# before, and a refused call must leave nothing that a later valid call would reuse (PyTorch 2.13's
# messages; the ops whose dim reaches a kernel).
FLOAT_DIMS = {"cumsum": "cumsum(): argument 'dim' (position 1) must be int, not float",
              "cumprod": "cumprod(): argument 'dim' (position 1) must be int, not float",
              "log_softmax": "log_softmax(): argument 'dim' (position 1) must be int, not float",
              "softmax": "softmax(): argument 'dim' (position 1) must be int, not float",
              "logcumsumexp": "logcumsumexp(): argument 'dim' (position 1) must be int, not float"}


@pytest.mark.parametrize("name", FLOAT_DIMS)
def test_a_float_dim_is_refused_whatever_ran_before(name):
    x = funcgrad.randn(2, 3)
    want = getattr(x, name)(1).numpy()
    for _ in range(2):  # refused after a valid call, and a valid call after a refused one
        with pytest.raises(TypeError) as e:
            getattr(x, name)(1.0)
        assert str(e.value) == FLOAT_DIMS[name]
        assert np.array_equal(getattr(x, name)(1).numpy(), want)


def test_a_complex64_operand_warns_at_the_callers_line():  # (PyTorch reads it as a double: NumPy's warning)
    with pytest.warns(np.exceptions.ComplexWarning, match="Casting complex values to real discards") as w:
        r = funcgrad.tensor([1.0, 2.0]) + np.complex64(1 + 2j)
    assert r.tolist() == [2.0, 3.0] and w[0].filename == __file__
