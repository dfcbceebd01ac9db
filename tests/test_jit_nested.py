"""A compiled function or module called while another compiled step is traced is inlined, as
``torch.compile`` inside ``torch.compile``: its Python function runs in the outer trace, so the
outer program reads and writes its state (parameters, ``.grad``, optimizer state, BatchNorm
running stats, the RNG) as eager execution of the same code would.

Each scenario of ``CASES`` builds its objects (same seed) and makes the same calls three ways:
*eager* (nothing compiled), *flat* (the outer compiled, the inner a plain function) and *nested*
(both compiled). Nested gives flat's bits (an inlined inner is the inner written in the outer),
eager's numbers (1e-6, as the other compiled-vs-eager tests) and PyTorch eager's (1e-5); the
inner compiles nothing on the nested path (its cache is unchanged by an outer call) and the
outer traces as often as flat's.
"""

import functools
import threading
import warnings

import jax
import numpy as np
import pytest

import funcgrad
from funcgrad._errors import TracedValueError
from funcgrad._jit.module import OptimizedModule


def _plain(obj):
    return obj


MODES = {"eager": (_plain, _plain), "flat": (_plain, funcgrad.compile),
         "nested": (funcgrad.compile, funcgrad.compile)}


def _mlp(lib, drop=0.2):
    nn = lib.nn
    # (no BatchNorm right after a bias: that bias's gradient is rounding noise, which Adam scales
    # to a full step of either sign)
    return nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.BatchNorm1d(8), nn.Dropout(drop),
                         nn.Linear(8, 3))


def _train(lib, model, opt, forward=None):
    forward = model if forward is None else forward

    def train_step(x, y):
        opt.zero_grad()
        loss = lib.nn.functional.cross_entropy(forward(x), y)
        loss.backward()
        opt.step()
        return loss
    return train_step


# ---- the scenarios: build(lib, inner, outer) -> (model, opt, inners, outer, {"o": fn, "i": fn}) ---
# (each call gets x: (3, 5, 4) floats and y: (3, 5) class indices; "o" calls the outer, "i" the
# inner directly)
def _module_in_train_step(lib, inner, outer):
    model = _mlp(lib)
    fast = inner(model)
    opt = lib.optim.Adam(model.parameters(), lr=0.05)
    step = outer(_train(lib, model, opt, fast))
    return model, opt, [fast], step, {"o": lambda x, y: step(x[0], y[0])}


def _compiled_in_place(lib, inner, outer):  # Module.compile(): the module itself compiled
    model = _mlp(lib)
    if inner is not _plain:
        model.compile()
    opt = lib.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    step = outer(_train(lib, model, opt))
    inners = [model._compiled_call_impl] if inner is not _plain else []
    return model, opt, inners, step, {"o": lambda x, y: step(x[1], y[1])}


def _train_step_in_a_loop(lib, inner, outer):
    nn = lib.nn
    model = nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 3))
    opt = lib.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    train_step = inner(_train(lib, model, opt))

    def epoch(x, y):
        return lib.stack([train_step(x[i], y[i]) for i in range(3)])
    epoch = outer(epoch)
    return model, opt, [train_step], epoch, {"o": epoch}


def _pure_function_inside(lib, inner, outer):
    nn = lib.nn
    model = nn.Sequential(nn.Linear(4, 8), nn.Linear(8, 3))
    act = inner(lambda h: h.tanh() * 2 + h.sigmoid() * h)
    opt = lib.optim.SGD(model.parameters(), lr=0.1)

    def step(x, y):
        opt.zero_grad()
        h = act(model[0](x))
        loss = lib.nn.functional.cross_entropy(model[1](h), y)
        loss.backward()
        opt.step()
        return {"loss": loss, "h": h.detach().mean(0)}
    step = outer(step)
    return model, opt, [act], step, {"o": lambda x, y: step(x[2], y[2])}


def _two_levels_deep(lib, inner, outer):
    model = _mlp(lib, drop=0.3)
    fast = inner(model)

    def loss_fn(x, y):
        return lib.nn.functional.cross_entropy(fast(x), y) + 0.01 * sum(
            (p * p).sum() for p in model.parameters())
    loss_fn = inner(loss_fn)
    opt = lib.optim.AdamW(model.parameters(), lr=0.02)

    def step(x, y):
        opt.zero_grad()
        loss = loss_fn(x, y)
        loss.backward()
        opt.step()
        return loss
    step = outer(step)
    return model, opt, [fast, loss_fn], step, {"o": lambda x, y: step(x[0], y[0])}


def _alternating(lib, inner, outer):
    nn = lib.nn
    model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 3))
    opt = lib.optim.Adam(model.parameters(), lr=0.05)
    raw = _train(lib, model, opt)
    train_step = inner(raw)
    direct = outer(raw) if inner is _plain else train_step  # (flat: the direct calls compiled too)

    def twice(x, y):
        return train_step(x[0], y[0]) + train_step(x[1], y[1])
    twice = outer(twice)
    return model, opt, [train_step], twice, {"o": twice, "i": lambda x, y: direct(x[2], y[2])}


def _dropout_and_batchnorm_forward(lib, inner, outer):
    nn = lib.nn
    model = nn.Sequential(nn.Linear(4, 6), nn.BatchNorm1d(6), nn.Dropout(0.5))
    fast = inner(model)

    def forward(x, y):
        with lib.no_grad():
            return fast(x[0]) * fast(x[1])
    forward = outer(forward)
    return model, None, [fast], forward, {"o": forward}


def _jit_inside_compiled_module(lib, inner, outer):  # the outer: compile(module), trained eagerly
    nn = lib.nn
    act = inner(lambda h: h * h.sigmoid())

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.a, self.bn, self.b = nn.Linear(4, 8), nn.BatchNorm1d(8), nn.Linear(8, 3)

        def forward(self, x):
            return self.b(act(self.bn(self.a(x))))

    net = Net()
    fast = outer(net)
    opt = lib.optim.SGD(net.parameters(), lr=0.1)
    step = _train(lib, net, opt, fast)
    return net, opt, [act], fast, {"o": lambda x, y: step(x[0], y[0])}


def _module_inside_compiled_module(lib, inner, outer):
    nn = lib.nn
    block = nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.BatchNorm1d(8), nn.Dropout(0.25))
    fast_block = inner(block)
    model = nn.Sequential(fast_block, nn.Linear(8, 3))
    fast = outer(model)
    opt = lib.optim.Adam(model.parameters(), lr=0.05)
    step = _train(lib, model, opt, fast)
    return model, opt, [fast_block], fast, {"o": lambda x, y: step(x[1], y[1])}


# name: (build, which callable each call makes: "o" the outer, "i" the inner directly)
CASES = {
    "compiled_module_in_train_step": (_module_in_train_step, "oooo"),
    "module_compile_in_place_in_train_step": (_compiled_in_place, "oooo"),
    "train_step_called_in_a_loop": (_train_step_in_a_loop, "ooo"),
    "pure_function_inside": (_pure_function_inside, "ooo"),
    "two_levels_deep": (_two_levels_deep, "oooo"),
    "inner_also_called_directly_inner_first": (_alternating, "ioioio"),
    "inner_also_called_directly_outer_first": (_alternating, "oioioi"),
    "dropout_and_batchnorm_forward": (_dropout_and_batchnorm_forward, "ooo"),
    "jit_inside_compiled_module": (_jit_inside_compiled_module, "ooo"),
    "compiled_module_inside_compiled_module": (_module_inside_compiled_module, "ooo"),
}


def _np(x):
    if x is None:
        return None
    # (a copy: .numpy() shares the tensor's memory, which a later step overwrites, as PyTorch's)
    return np.array(x.detach().numpy() if hasattr(x, "detach") else x)


def _programs(c):
    """(traces, cached programs) of a compiled function or module (its forward without
    gradients, and its differentiable forward ops)."""
    if isinstance(c, OptimizedModule):
        f, diff = c.__dict__["_fwd"], len(c.__dict__["_diff"])
        return f.num_traces + diff, len(f._entries) + diff
    return c.num_traces, len(c._entries)


def _run(case, lib, mode):
    build, schedule = CASES[case]
    inner, outer = MODES[mode] if lib is funcgrad else (_plain, _plain)
    lib.manual_seed(0)
    model, opt, inners, outer_obj, calls = build(lib, inner, outer)
    g = np.random.default_rng(1)
    history, counts = [], []
    for which in schedule:
        x = lib.tensor(g.standard_normal((3, 5, 4)).astype("float32"))
        y = lib.tensor(g.integers(0, 3, (3, 5)))
        before = [_programs(c) for c in inners] if mode == "nested" else None
        out = calls[which](x, y)
        if which == "o" and before is not None:  # the outer call compiled nothing of the inner's
            assert [_programs(c) for c in inners] == before, (case, which)
        flat = jax.tree.leaves(out, is_leaf=lambda t: hasattr(t, "detach"))
        history.append([_np(o) for o in flat] + [_np(p) for p in model.parameters()])
    final = [_np(p.grad) for p in model.parameters()] + [_np(b) for b in model.buffers()]
    if opt is not None:
        final += [_np(v) for _, st in sorted(opt.state_dict()["state"].items())
                  for _, v in sorted(st.items())]
    final.append(_np(lib.rand(4)))  # the generator advanced as eagerly (dropout's draws)
    if mode != "eager":
        counts = {"inner": [_programs(c)[0] for c in inners] if mode == "nested" else None,
                  "outer": _programs(outer_obj)[0]}
    return history + [final], counts


_compiled = functools.lru_cache(maxsize=None)(lambda case, mode: _run(case, funcgrad, mode))


def _bits(runs):
    return [[None if a is None else (a.dtype, a.shape, a.tobytes()) for a in r] for r in runs]


def _close(got, want, rtol, atol, case):
    assert len(got) == len(want), case
    for i, (g, w) in enumerate(zip(got, want, strict=True)):
        assert len(g) == len(w), (case, i)
        for j, (a, b) in enumerate(zip(g, w, strict=True)):
            assert (a is None) == (b is None), (case, i, j)
            if a is not None:
                np.testing.assert_allclose(a, b, rtol=rtol, atol=atol, err_msg=f"{case}: call {i}, value {j}")


@pytest.mark.parametrize("case", list(CASES))
def test_nested_is_inlined_flat_bits_eager_numbers(case):
    eager, _ = _run(case, funcgrad, "eager")
    flat, flat_counts = _compiled(case, "flat")
    nested, counts = _compiled(case, "nested")
    assert _bits(nested) == _bits(flat), case  # the program of the inner written in the outer
    _close(nested, eager, 1e-6, 1e-6, case)
    # the inner compiles only for its own direct calls (once); the outer as often as flat's
    direct = "i" in CASES[case][1]
    assert counts["inner"] == [1 if direct else 0] * len(counts["inner"]), counts
    assert counts["outer"] == flat_counts["outer"] >= 1, (counts, flat_counts)


@pytest.mark.torch
@pytest.mark.parametrize("case", list(CASES))
def test_nested_equals_torch_eager(case):
    torch = pytest.importorskip("torch")
    want, _ = _run(case, torch, "eager")
    got, _ = _compiled(case, "nested")
    _close(got, want, 1e-5, 1e-6, case)


# ---- the inner's options, errors, threads ------------------------------------------------------
def test_options_of_the_inner_are_moot_when_inlined():
    w = funcgrad.ones(3, requires_grad=True)

    def f(x):
        return (w * x).sum()

    inners = [funcgrad.jit(f, warn_after=1),  # would warn at its first trace: it never traces
              funcgrad.compile(f, fullgraph=True, mode="max-autotune", dynamic=False, backend="inductor")]
    for inner in inners:
        @funcgrad.jit
        def outer(x, inner=inner):
            return inner(x) + inner(x * 2) + inner(x * 3)

        with warnings.catch_warnings():
            warnings.simplefilter("error")
            out = outer(funcgrad.ones(3))
        assert float(out) == 18.0
        assert inner.num_traces == 0 and not inner._entries
        assert "stablehlo.multiply" in outer.lower(funcgrad.ones(3)).as_text()
        assert inner.num_traces == 0 and not inner._entries


def test_item_in_a_nested_inner_names_its_line():
    @funcgrad.jit
    def inner(x):
        return x * x.sum().item()  # the line named

    outer = funcgrad.jit(lambda x: inner(x) + 1)
    with pytest.raises(TracedValueError, match=r"item\(\) needs a concrete value.*\n.*test_jit_nested\.py:\d+: return x \* x\.sum\(\)\.item\(\)"):
        outer(funcgrad.ones(3))
    assert inner.num_traces == 0


def test_error_in_a_nested_inner_leaves_the_state_as_it_was():
    funcgrad.manual_seed(0)
    model = _mlp(funcgrad)
    opt = funcgrad.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    inner = funcgrad.jit(_train(funcgrad, model, opt))
    fail = [True]

    @funcgrad.jit
    def outer(x, y):
        loss = inner(x, y)
        if fail[0]:
            raise ValueError("boom")
        return loss

    x, y = funcgrad.randn(5, 4), funcgrad.randint(0, 3, (5,))
    before = [_np(t).copy() for t in list(model.parameters()) + list(model.buffers())]
    rng = funcgrad.get_rng_state()
    with pytest.raises(ValueError, match="boom"):
        outer(x, y)
    after = list(model.parameters()) + list(model.buffers())
    assert not any(isinstance(t._value, jax.core.Tracer) for t in after)
    for a, b in zip(after, before, strict=True):
        np.testing.assert_array_equal(_np(a), b)
    assert all(p.grad is None for p in model.parameters())
    assert not any(opt.state.values())  # no momentum buffer (the trace's were dropped)
    assert bool((funcgrad.get_rng_state() == rng).all())
    fail[0] = False
    got = [float(outer(x, y)) for _ in range(2)] + [float(inner(x, y))]
    funcgrad.manual_seed(0)
    model_e = _mlp(funcgrad)
    eager = _train(funcgrad, model_e, funcgrad.optim.SGD(model_e.parameters(), lr=0.1, momentum=0.9))
    funcgrad.set_rng_state(rng)
    want = [float(eager(x, y)) for _ in range(3)]
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)
    for a, b in zip(model.parameters(), model_e.parameters(), strict=True):
        np.testing.assert_allclose(_np(a), _np(b), rtol=1e-6, atol=1e-6)


def test_inner_called_on_another_thread_during_the_outer_trace_is_compiled_there():
    w = funcgrad.ones(3, requires_grad=True)
    inner = funcgrad.jit(lambda x: (w * x).sum())
    seen = {}

    def other():
        seen["value"] = float(inner(funcgrad.ones(3) * 5))

    @funcgrad.jit
    def outer(x):
        th = threading.Thread(target=other)  # (this thread is tracing, that one is not)
        th.start()
        th.join(60)
        return inner(x)

    assert float(outer(funcgrad.ones(3))) == 3.0
    assert seen == {"value": 15.0}
    assert inner.num_traces == 1  # the other thread's call only
