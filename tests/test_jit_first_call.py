"""Issue 17 ("fewer compilations"): a compiled training step compiles once. Its first call makes
the optimizer's state and the ``.grad`` slots; the bridge makes them before tracing that call
(``trace.prime``), so the first call's program is the later calls' one. The numbers are bitwise
those of the step traced without that (each call as the objects are: ``_prime`` off), and
the objects show between calls what PyTorch shows."""

import numpy as np
import pytest

import funcgrad
from funcgrad import nn
from funcgrad._jit.compiled import CompiledFunction

from .test_caches import _COMPILES

OPTS = [("SGD", {}), ("SGD", {"momentum": 0.9, "dampening": 0.3}), ("SGD", {"momentum": 0.9}),
        ("SGD", {"momentum": 0.9, "nesterov": True, "weight_decay": 0.01}), ("Adam", {}),
        ("AdamW", {"weight_decay": 0.1}), ("Adam", {"amsgrad": True}), ("RMSprop", {"momentum": 0.5})]
LOOPS = ["start", "end", "start_zeros", "accumulate"]


def _model(arch):
    if arch == "mlp":
        return nn.Sequential(nn.Linear(20, 16), nn.ReLU(), nn.Linear(16, 4)), (8, 20)
    return nn.Sequential(nn.Conv2d(3, 4, 3), nn.BatchNorm2d(4), nn.ReLU(), nn.MaxPool2d(2),
                         nn.Flatten(), nn.Linear(36, 4)), (8, 3, 8, 8)


def _setup(opt, kw, loop, arch="mlp", unused=False):
    funcgrad.manual_seed(0)
    m, shape = _model(arch)
    extra = nn.Linear(3, 3) if unused else None  # optimized, never used: no .grad, no state
    params = list(m.parameters()) + (list(extra.parameters()) if unused else [])
    o = getattr(funcgrad.optim, opt)(params, 1e-2, **kw)
    lf = nn.CrossEntropyLoss()

    def step(x, y):
        if loop == "start":
            o.zero_grad()
        elif loop == "start_zeros":
            o.zero_grad(set_to_none=False)
        loss = lf(m(x), y)
        loss.backward()
        o.step()
        if loop == "end":
            o.zero_grad()
        return loss
    return m, o, step, shape, params


def _bits(t):
    if t is None:
        return None
    a = np.asarray(t.detach()._value)
    return a.dtype.str, a.shape, a.tobytes()


def _snapshot(loss, m, o, params):
    sd = o.state_dict()
    return ([_bits(loss)] + [_bits(p) for p in params] + [_bits(p.grad) for p in params]
            + [_bits(b) for b in m.buffers()]
            + [(i, k, _bits(v)) for i, st in sorted(sd["state"].items()) for k, v in sorted(st.items())])


def _run(opt, kw, loop, arch="mlp", compiled=True, prime=True, unused=False, n=4):
    m, o, step, shape, params = _setup(opt, kw, loop, arch, unused)
    if compiled:
        step = funcgrad.jit(step)
        if not prime:
            step._prime = lambda *a, **k: None  # each call traced as the objects are
    g = np.random.RandomState(1)
    out = []
    for _ in range(n):
        x = funcgrad.tensor(g.standard_normal(shape).astype("float32"))
        y = funcgrad.tensor(g.randint(0, 4, shape[0]))
        out.append(_snapshot(step(x, y), m, o, params))
    return out, step, o, params


@pytest.mark.parametrize("arch", ["mlp", "cnn"])
@pytest.mark.parametrize("loop", LOOPS)
@pytest.mark.parametrize("opt,kw", OPTS)
def test_first_call_gives_the_bits_of_the_step_traced_as_the_objects_are(opt, kw, loop, arch):
    got, step, _, _ = _run(opt, kw, loop, arch)
    want, ref, _, _ = _run(opt, kw, loop, arch, prime=False)
    assert got == want  # losses, parameters, .grad, buffers, optimizer state: every bit
    assert step.num_traces <= ref.num_traces
    if arch == "cnn":  # (Adam's compiled CNN step differs from eager by more, as before)
        return
    eager, _, _, _ = _run(opt, kw, loop, arch, compiled=False)
    for a, b in zip(got, eager, strict=True):
        for x, y in zip(a, b, strict=True):
            if x is not None and isinstance(x[0], int):  # (an optimizer state entry)
                x, y = x[2], y[2]
            assert (x is None) == (y is None)
            if x is not None:
                u, v = np.frombuffer(x[2], x[0]), np.frombuffer(y[2], y[0])
                np.testing.assert_allclose(u, v, rtol=2e-4, atol=1e-5)


@pytest.mark.parametrize("loop", ["start", "end"])
@pytest.mark.parametrize("opt,kw", [("SGD", {}), ("Adam", {}), ("AdamW", {}), ("RMSprop", {})])
def test_standard_loop_compiles_once(opt, kw, loop):
    m, o, step, shape, params = _setup(opt, kw, loop)
    step = funcgrad.jit(step)
    programs = []  # the jitted program each call runs

    def run(e, *a):
        programs.append(getattr(e.fn, "func", e.fn))
        return CompiledFunction._run(step, e, *a)
    step._run = run
    x, y = funcgrad.randn(*shape), funcgrad.randint(0, 4, (shape[0],))
    assert not o.state and all(p.grad is None for p in params)
    step(x, y)
    assert step.num_traces == 1 and step.retrace_reasons == ["first call"]
    assert len(o.state) == (0 if opt == "SGD" else len(params))  # as PyTorch after one step
    assert all((p.grad is None) == (loop == "end") for p in params)
    with _COMPILES as c:
        for _ in range(3):
            step(x, y)
    # the later calls run the first call's program, compiled once, and its packed buffers
    # (what may compile: the small kernel unpacking them, once per shapes, for the next trace)
    assert len({id(f) for f in programs}) == 1 and programs[0]._cache_size() == 1
    assert c.n <= 2, c.n
    assert step.num_traces == 1, step.retrace_reasons


def test_sgd_momentum_compiles_once_unless_dampened():
    """SGD's momentum buffer starts as the gradient. From a -0.0 buffer the later update gives
    that, bit for bit, without dampening (one program; the bits are checked above); with
    dampening its first update is another computation, and a step accumulating into .grad
    reads what the first call set: two programs."""
    for kw in [{"momentum": 0.9}, {"momentum": 0.9, "nesterov": True}]:
        _, step, _, _ = _run("SGD", kw, "start")
        assert step.num_traces == 1, step.retrace_reasons
    for opt, kw, loop in [("SGD", {"momentum": 0.9, "dampening": 0.3}, "start"), ("Adam", {}, "accumulate")]:
        _, step, _, _ = _run(opt, kw, loop)
        assert step.num_traces == 2, step.retrace_reasons
    assert ".grad its first call set" in step.retrace_reasons[1]


def test_sgd_first_update_from_the_primed_buffer_is_the_gradient():
    """The identity the priming relies on, on the values where a +0.0 buffer would fail it."""
    g = funcgrad.tensor([-0.0, 0.0, 1.5, -2.0, float("inf"), float("nan")])
    p = funcgrad.zeros(6, requires_grad=True)
    opt = funcgrad.optim.SGD([p], lr=0.1, momentum=0.9)
    buf = opt._init_state(p, opt.param_groups[0])["momentum_buffer"]
    got = np.asarray((buf * 0.9 + 1.0 * g)._value)
    assert got.tobytes() == np.asarray(g._value).tobytes()


def test_parameters_without_grad_get_no_state():
    _, step, o, params = _run("Adam", {}, "start", unused=True, n=2)
    assert step.num_traces == 1
    assert [p in o.state for p in params] == [True] * 4 + [False] * 2
    assert all(p.grad is None for p in params[4:])


def test_a_first_call_that_fails_leaves_no_state():
    m, o, step, shape, params = _setup("Adam", {}, "start")
    calls = []

    def failing(x, y):
        loss = step(x, y)
        calls.append(1)
        if len(calls) == 2:  # the second trace of the first call (after the state was made)
            raise ValueError("boom")
        return loss
    f = funcgrad.jit(failing)
    with pytest.raises(ValueError, match="boom"):
        f(funcgrad.randn(*shape), funcgrad.randint(0, 4, (shape[0],)))
    assert not o.state and all(p.grad is None for p in params)
    assert isinstance(f, CompiledFunction)


def test_a_subclass_reading_fresh_is_not_primed():
    """An optimizer subclass whose update reads ``fresh`` (its first update differs from the later
    ones) is found from its code, so funcgrad.jit does not prime its state; one that does not is."""
    from funcgrad import optim

    class Reads(optim.SGD):
        @staticmethod
        def _transform(h, static, dtype, fresh):
            return optim.SGD._transform(h, static, dtype, fresh)

    class Ignores(optim.Adam):
        @staticmethod
        def _transform(h, static, dtype, fresh):
            return optim.Adam._transform(h, static, dtype, False)

    assert Reads._fresh_update and not Ignores._fresh_update
    assert optim.SGD._fresh_update and not optim.Adam._fresh_update
