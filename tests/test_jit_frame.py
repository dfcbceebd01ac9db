"""The jit bridge on its binding frame (issue 16 leftovers): packed RNNs inside a compiled step
(lengths as static host data), ``compile(module)`` reading tensors discovery missed, cells made
under a trace becoming plain cells again, views read from two threads while one traces, view
arguments the backward reads, and missed tensors that require grad (their gradient flows).

Each case compares the compiled numbers with eager funcgrad (1e-6) and, where meaningful, with
PyTorch eager; trace counts are asserted.
"""

import functools
import sys
import threading
import time

import jax
import numpy as np
import pytest

import funcgrad
from funcgrad import _storage, nn
from funcgrad.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

# ---- 1. pack_padded_sequence -> LSTM/GRU -> pad_packed_sequence inside funcgrad.jit -------------
# lengths per call: the second and fourth repeat the first (no retrace), the third is new
LENGTHS = [[5, 3, 4], [5, 3, 4], [2, 5, 1], [5, 3, 4]]
RNNS = {  # name: (layer, kwargs)
    "lstm": ("LSTM", dict(batch_first=True)),
    "gru_2layers": ("GRU", dict(batch_first=True, num_layers=2)),
}


def _rnn_data():
    g = np.random.default_rng(0)
    return [g.standard_normal((3, 5, 3)).astype("float32") for _ in LENGTHS]


def _rnn_step(lib, rnn, opt):
    nn_ = lib.nn

    def step(x, lengths):
        pk = nn_.utils.rnn.pack_padded_sequence(x, lengths, batch_first=True, enforce_sorted=False)
        out, _ = rnn(pk)
        y, lens = nn_.utils.rnn.pad_packed_sequence(out, batch_first=True, total_length=5)
        loss = (y * y).sum() / lens.sum()
        loss.backward()
        opt.step()
        opt.zero_grad()
        return loss
    return step


def _rnn_run(lib, name, compiled, lengths_as="tensor"):
    kind, kw = RNNS[name]
    lib.manual_seed(0)
    rnn = getattr(lib.nn, kind)(3, 4, **kw)
    if lib is not funcgrad:  # the same weights as funcgrad's
        funcgrad.manual_seed(0)
        ref = getattr(nn, kind)(3, 4, **kw)
        with lib.no_grad():
            for n, p in rnn.named_parameters():
                p.copy_(lib.tensor(np.asarray(getattr(ref, n)._value)))
    opt = lib.optim.SGD(rnn.parameters(), lr=0.5)
    step = _rnn_step(lib, rnn, opt)
    if compiled:
        step = funcgrad.jit(step)
    losses = []
    for x, lengths in zip(_rnn_data(), LENGTHS):
        ln = lib.tensor(lengths) if lengths_as == "tensor" else list(lengths)
        losses.append(float(step(lib.tensor(x), ln).detach()))
    params = {n: np.asarray(p.detach().numpy()) for n, p in rnn.named_parameters()}
    return losses, params, getattr(step, "num_traces", None), getattr(step, "retrace_reasons", None)


_compiled_run = functools.lru_cache(maxsize=None)(  # (shared by the two tests: compiles are slow)
    lambda name, lengths_as: _rnn_run(funcgrad, name, True, lengths_as))


@pytest.mark.parametrize("name,lengths_as", [("lstm", "tensor"), ("gru_2layers", "list")])
def test_packed_rnn_compiled_equals_eager(name, lengths_as):
    el, ep, _, _ = _rnn_run(funcgrad, name, False, lengths_as)
    cl, cp, traces, reasons = _compiled_run(name, lengths_as)
    np.testing.assert_allclose(cl, el, rtol=1e-6, atol=1e-6)
    for n in ep:
        np.testing.assert_allclose(cp[n], ep[n], rtol=1e-6, atol=1e-6, err_msg=n)
    assert traces == 2, reasons  # one program per distinct lengths
    if lengths_as == "tensor":
        assert "pack_padded_sequence's lengths" in reasons[1], reasons
        assert "[5, 3, 4] -> [2, 5, 1]" in reasons[1], reasons


@pytest.mark.torch
@pytest.mark.parametrize("name,lengths_as", [("lstm", "tensor"), ("gru_2layers", "list")])
def test_packed_rnn_compiled_equals_torch(name, lengths_as):
    torch = pytest.importorskip("torch")
    tl, tp, _, _ = _rnn_run(torch, name, False, lengths_as)
    cl, cp, _, _ = _compiled_run(name, lengths_as)
    np.testing.assert_allclose(cl, tl, rtol=1e-5, atol=1e-6)
    for n in tp:
        np.testing.assert_allclose(cp[n], tp[n], rtol=1e-5, atol=1e-6, err_msg=n)


def test_packed_lengths_computed_in_the_step_raise():
    rnn = nn.GRU(3, 4, batch_first=True)
    x = funcgrad.tensor(_rnn_data()[0])
    w0 = np.asarray(rnn.weight_ih_l0._value)

    @funcgrad.jit
    def step(x, mask):
        lengths = mask.sum(1)  # data-dependent: not host data
        out, _ = rnn(pack_padded_sequence(x, lengths, batch_first=True, enforce_sorted=False))
        return pad_packed_sequence(out, batch_first=True)[0].sum()

    with pytest.raises(RuntimeError, match="pack_padded_sequence's lengths must be concrete host data"):
        step(x, funcgrad.ones(3, 5, dtype=funcgrad.int64))
    assert step.num_traces == 0
    np.testing.assert_array_equal(np.asarray(rnn.weight_ih_l0._value), w0)
    assert not isinstance(rnn.weight_ih_l0._value, jax.core.Tracer)


# ---- 2. compile(module): tensors discovery misses are inputs, not constants ----------------------
G = funcgrad.tensor(2.0)  # a global the forward reads (not reachable from the module)


class _Box:
    pass


def _deep(t, levels=6):
    """``t`` behind ``levels`` plain objects (deeper than discovery searches)."""
    box = top = _Box()
    for _ in range(levels - 1):
        box.next = _Box()
        box = box.next
    box.t = t
    return top


def _get_deep(top):
    while not hasattr(top, "t"):
        top = top.next
    return top.t


# where the extra tensor lives: (how the module finds it, how the test reaches it)
WHERE = {
    "attribute": (lambda m: m.extra, lambda m: m.extra),
    "list": (lambda m: m.lst[0], lambda m: m.lst[0]),
    "global": (lambda m: G, lambda m: G),
    "deep_object": (lambda m: _get_deep(m.deep), lambda m: _get_deep(m.deep)),
}


class _M(nn.Module):
    def __init__(self, where):
        super().__init__()
        self.lin = nn.Linear(2, 2)
        self.extra = funcgrad.tensor([1.5, -0.5])
        self.lst = [funcgrad.tensor([1.5, -0.5])]
        self.deep = _deep(funcgrad.tensor([1.5, -0.5]))
        self.where = where

    def forward(self, x):
        return (self.lin(x) * WHERE[self.where][0](self)).tanh()


@pytest.mark.parametrize("grad", [False, True])
@pytest.mark.parametrize("where", sorted(WHERE))
def test_compiled_module_sees_in_place_changes_of_undiscovered_tensors(where, grad):
    G.copy_(funcgrad.tensor(2.0))
    x = funcgrad.tensor([[0.3, -1.2], [0.7, 0.1]])
    results = []
    for compiled in (False, True):
        funcgrad.manual_seed(0)
        m = _M(where)
        fwd = funcgrad.compile(m) if compiled else m
        with funcgrad.set_grad_enabled(grad):
            out = [fwd(x)]
            WHERE[where][1](m).mul_(10.0)  # changed in place between calls
            out.append(fwd(x))
            if grad:
                out[1].sum().backward()
        G.copy_(funcgrad.tensor(2.0))
        results.append(([np.asarray(o.detach()._value) for o in out],
                        np.asarray(m.lin.weight.grad._value) if grad else None))
        if compiled and not grad:
            assert fwd._fwd.num_traces == 1, fwd._fwd.retrace_reasons
    (eo, eg), (co, cg) = results
    assert not np.allclose(eo[0], eo[1])  # the change matters
    for a, b in zip(co, eo):
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-6)
    if grad:
        np.testing.assert_allclose(cg, eg, rtol=1e-6, atol=1e-6)


# ---- 3. cells made under a trace are plain cells once it ends ------------------------------------
def test_tensor_made_in_a_trace_is_a_plain_tensor_afterwards():
    made = {}

    @funcgrad.jit
    def make(x):
        made["t"] = x * 2  # state made by the step (kept after the call)
        return x.sum()

    make(funcgrad.ones(3))
    t = made["t"]
    assert type(t._cell) in (_storage._Cell, _storage._PackedCell), type(t._cell)
    np.testing.assert_array_equal(np.asarray(t._value), [2.0, 2.0, 2.0])
    # eager use: an ordinary tensor
    t.add_(1.0)
    np.testing.assert_array_equal(np.asarray((t * 1)._value), [3.0, 3.0, 3.0])
    # another compiled step that reaches it only through objects discovery does not search:
    # its reads are recorded (a later change shows), its writes stay out of the cell until written
    # back (no tracer left behind)
    deep = _deep(t)

    @funcgrad.jit
    def use(x):
        return x + _get_deep(deep)

    @funcgrad.jit
    def bump():
        _get_deep(deep).add_(1.0)

    np.testing.assert_array_equal(np.asarray(use(funcgrad.ones(3))._value), [4.0, 4.0, 4.0])
    t.mul_(10.0)
    np.testing.assert_array_equal(np.asarray(use(funcgrad.ones(3))._value), [31.0, 31.0, 31.0])
    bump()
    assert not isinstance(t._cell.value, jax.core.Tracer)
    np.testing.assert_array_equal(np.asarray(t._value), [31.0, 31.0, 31.0])
    bump()
    np.testing.assert_array_equal(np.asarray(t._value), [32.0, 32.0, 32.0])
    assert use.num_traces == 1 and bump.num_traces == 1, (use.retrace_reasons, bump.retrace_reasons)
    assert type(t._cell) in (_storage._Cell, _storage._PackedCell), type(t._cell)


def test_optimizer_state_made_in_a_trace_is_plain():
    w = nn.Parameter(funcgrad.ones(3))
    opt = funcgrad.optim.Adam([w], lr=0.1)

    @funcgrad.jit
    def step(x):
        opt.zero_grad()
        (w * x).sum().backward()
        opt.step()

    step(funcgrad.ones(3))
    for v in opt.state[w].values():
        assert type(v._cell) in (_storage._Cell, _storage._PackedCell), type(v._cell)


# ---- 4. views of one base read from two threads while one traces ---------------------------------
def test_view_read_by_another_thread_while_tracing():
    base = funcgrad.arange(6.0)
    view = base[2:]
    other = (funcgrad.arange(6.0) + 100.0)[2:]  # another view of the same shape (same program)
    expect = np.arange(2.0, 6.0)
    stop, bad = threading.Event(), []

    def reader():  # reads the shared view eagerly, in a tight loop
        while not stop.is_set():
            try:
                v = view._value
            except Exception as e:  # noqa: BLE001 - (a cell's class switched back mid-read)
                bad.append(e)
                continue
            if isinstance(v, jax.core.Tracer) or not np.array_equal(np.asarray(v), expect):
                bad.append(v)

    old = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)  # switch threads as often as possible
    th = threading.Thread(target=reader)
    th.start()
    stale = 0
    try:
        for _ in range(6):
            @funcgrad.jit
            def step(x):
                time.sleep(0.002)  # the step's other work before it reads x: the reader runs
                return x * 2

            np.testing.assert_array_equal(np.asarray(step(view)._value), expect * 2)
            if not np.array_equal(np.asarray(step(other)._value), (expect + 100.0) * 2):
                stale += 1  # the trace read the view's value as a constant
            assert step.num_traces == 1
    finally:
        stop.set()
        th.join()
        sys.setswitchinterval(old)
    assert stale == 0 and not bad, (stale, bad[:3])


# ---- 5. view arguments whose saved value the backward reads --------------------------------------
# The fused backward reads a saved view lazily (from its base) when the view's cache is stale by
# the base cell's generation: inside a trace the frame binds the view argument (and its base, to
# the base's own array), so the view's generation must be the frame's, or the backward reads the
# base's array: a constant of the program, and every later call's gradient is the traced call's.
VIEW_ARGS = {  # how the argument is made from a flat base: (base size, view)
    "view": (24, lambda b: b.view(1, 2, 3, 4)),
    "slice": (30, lambda b: b[6:].view(1, 2, 3, 4)),
}
SAVED_VIEW_STEPS = {  # name: the loss of (lib, x, w)
    "mul": lambda lib, x, w: (x * w[0]).sum(),
    "matmul": lambda lib, x, w: (x @ w.view(4, 3)).tanh().sum(),
    "conv2d": lambda lib, x, w: lib.nn.functional.conv2d(x, w.view(2, 2, 1, 3)).pow(2).sum(),
}


def _saved_view_run(lib, step_name, view_name, compiled):
    g = np.random.default_rng(1)
    n, make = VIEW_ARGS[view_name]
    bases = [lib.tensor(g.standard_normal(n).astype("float32")) for _ in range(4)]
    w = lib.tensor(g.standard_normal(12).astype("float32"), requires_grad=True)
    loss_of = SAVED_VIEW_STEPS[step_name]

    def step(x):
        w.grad = None
        loss = loss_of(lib, x, w)
        loss.backward()
        return loss

    if compiled:
        step = funcgrad.jit(step)
    out = []
    for b in bases:
        loss = step(make(b))
        out.append((loss.detach().numpy().copy(), w.grad.numpy().copy()))
    if compiled:  # (the first call's program has the .grad slot: every call runs it)
        assert step.num_traces == 1, step.retrace_reasons
    return out


@pytest.mark.parametrize("view_name", sorted(VIEW_ARGS))
@pytest.mark.parametrize("step_name", sorted(SAVED_VIEW_STEPS))
def test_view_argument_saved_for_backward_is_not_a_constant(step_name, view_name):
    eager = _saved_view_run(funcgrad, step_name, view_name, False)
    comp = _saved_view_run(funcgrad, step_name, view_name, True)
    assert not np.allclose(eager[2][1], eager[1][1])  # the gradients differ per call
    for (el, eg), (cl, cg) in zip(eager, comp):
        np.testing.assert_allclose(cl, el, rtol=1e-6, atol=1e-6)
        np.testing.assert_allclose(cg, eg, rtol=1e-6, atol=1e-6)


@pytest.mark.torch
@pytest.mark.parametrize("step_name", sorted(SAVED_VIEW_STEPS))
def test_view_argument_saved_for_backward_matches_torch(step_name):
    torch = pytest.importorskip("torch")
    ref = _saved_view_run(torch, step_name, "slice", False)
    comp = _saved_view_run(funcgrad, step_name, "slice", True)
    for (tl, tg), (cl, cg) in zip(ref, comp):
        np.testing.assert_allclose(cl, tl, rtol=1e-5, atol=1e-5)
        np.testing.assert_allclose(cg, tg, rtol=1e-5, atol=1e-5)


# ---- 6. tensors that require grad, read through a global or a deep object -----------------------
# Discovery misses them; eagerly their gradient flows (a global Parameter gets .grad). The
# compiled forward (compile(module)) and the compiled step (jit) differentiate them as inputs
# instead of baking them in as constants (which drops their gradient silently, or leaks a tracer
# into .grad).
def _missed_grad_case(lib, where, compiled_module):
    g = np.random.default_rng(2)
    p = lib.nn.Parameter(lib.tensor(g.standard_normal(2).astype("float32")))
    holder = {"global": {"p": p}, "deep_object": _deep(p)}[where]
    get = (lambda: holder["p"]) if where == "global" else (lambda: _get_deep(holder))

    class M(lib.nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = lib.nn.Linear(2, 2)

        def forward(self, x):
            return (self.lin(x) * get()).tanh()

    lib.manual_seed(0)
    m = M()
    with lib.no_grad():
        m.lin.weight.copy_(lib.tensor([[0.5, -0.25], [0.75, 1.0]]))
        m.lin.bias.copy_(lib.tensor([0.1, -0.2]))
    x = lib.tensor([[0.3, -1.2], [0.7, 0.1]])
    fwd = funcgrad.compile(m) if compiled_module else m
    out = []
    for _ in range(2):
        p.grad, m.lin.weight.grad = None, None
        fwd(x).pow(2).sum().backward()
        out.append((p.grad.numpy().copy(), m.lin.weight.grad.numpy().copy()))
        with lib.no_grad():
            p.mul_(-2.0)  # changed in place between calls: the next call sees it
    return out


def _missed_grad_step(lib, where, compiled):
    g = np.random.default_rng(3)
    p = lib.nn.Parameter(lib.tensor(g.standard_normal(2).astype("float32")))
    holder = {"global": {"p": p}, "deep_object": _deep(p)}[where]
    get = (lambda: holder["p"]) if where == "global" else (lambda: _get_deep(holder))
    opt = lib.optim.SGD([lib.nn.Parameter(lib.zeros(1))], lr=0.1)  # (a step with some state)

    def step(x):  # (reaches p only through get(): p itself is not captured)
        opt.zero_grad()
        loss = (get() * x).sin().sum()
        loss.backward()
        return loss

    if compiled:
        step = funcgrad.jit(step)
    out = []
    for i in range(3):
        if i == 2:
            p.grad = None  # (else accumulated)
        loss = step(lib.tensor([0.3 + i, -1.2]))
        out.append((loss.detach().numpy().copy(), p.grad.numpy().copy()))
        with lib.no_grad():
            p.mul_(-2.0)
    return out


# (a step's globals and closures are discovered: for jit only a deep object is missed)
@pytest.mark.parametrize("kind,where", [("compile_module", "global"), ("compile_module", "deep_object"),
                                        ("jit_step", "deep_object")])
def test_missed_tensor_that_requires_grad_gets_its_gradient(kind, where):
    run = _missed_grad_case if kind == "compile_module" else _missed_grad_step
    eager, comp = run(funcgrad, where, False), run(funcgrad, where, True)
    for e, c in zip(eager, comp):
        for a, b in zip(c, e):
            np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-6)


@pytest.mark.torch
@pytest.mark.parametrize("kind", ["compile_module", "jit_step"])
def test_missed_tensor_that_requires_grad_matches_torch(kind):
    torch = pytest.importorskip("torch")
    run = _missed_grad_case if kind == "compile_module" else _missed_grad_step
    ref, comp = run(torch, "deep_object", False), run(funcgrad, "deep_object", True)
    for r, c in zip(ref, comp):
        for a, b in zip(c, r):
            np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-5)


# what the compiled forward reads through a global: (the tensor, from the parameter p)
MISSED_FORMS = {
    "non_leaf": lambda p: p * 2,
    "view_of_leaf": lambda p: p[1:],
}


def _missed_form_case(lib, form, compiled_module):
    p = lib.nn.Parameter(lib.tensor([1.5, -0.5]))
    box = {}

    class M(lib.nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = lib.nn.Linear(2, 2)

        def forward(self, x):
            return (self.lin(x) * box["t"]).tanh()

    lib.manual_seed(0)
    m = M()
    with lib.no_grad():
        m.lin.weight.copy_(lib.tensor([[0.5, -0.25], [0.75, 1.0]]))
        m.lin.bias.copy_(lib.tensor([0.1, -0.2]))
    fwd = funcgrad.compile(m) if compiled_module else m
    box["t"] = MISSED_FORMS[form](p)
    fwd(lib.tensor([[0.3, -1.2], [0.7, 0.1]])).pow(2).sum().backward()
    return p.grad.numpy().copy(), m.lin.weight.grad.numpy().copy()


@pytest.mark.torch
@pytest.mark.parametrize("form", sorted(MISSED_FORMS))
def test_compiled_module_differentiates_missed_non_leaves_and_views(form):
    eager, comp = _missed_form_case(funcgrad, form, False), _missed_form_case(funcgrad, form, True)
    for c, e in zip(comp, eager):
        np.testing.assert_allclose(c, e, rtol=1e-6, atol=1e-6)
    torch = pytest.importorskip("torch")  # (the eager comparison above runs without it)
    for c, r in zip(comp, _missed_form_case(torch, form, False)):
        np.testing.assert_allclose(c, r, rtol=1e-5, atol=1e-5)


# ---- 7. the base of a view argument read other than through the view -----------------------------
# The frame binds a view argument's base cell to the base's own array (the argument is the view's
# value): reading that base directly (here through an object deeper than discovery searches)
# would make its values constants of the program, and a later in-place change would not show.
def test_view_argument_base_read_directly_raises_instead_of_baking():
    base = funcgrad.arange(6.0)
    deep = _deep(base)

    @funcgrad.jit
    def step(x):
        return x.sum() + _get_deep(deep).sum()

    with pytest.raises(RuntimeError, match="reads the storage of its tensor argument 0, a view of a larger"):
        step(base[2:])
    np.testing.assert_array_equal(base.numpy(), np.arange(6.0))  # left as it was
    assert step.num_traces == 0
    # through the view only (or with a copy), fine and not stale
    own = base[2:].clone()
    assert float(step(own)) == 14.0 + 15.0
    base.mul_(2.0)
    assert float(step(base[2:].clone())) == 28.0 + 30.0


# ---- 8. a view of a state tensor as the argument ---------------------------------------------------
# ``step(w[1])`` with ``w`` state (captured): the argument is no input of the program, which
# computes it from ``w``: which view it is must be part of the program's key, or every later call
# computes the first call's view (step(w[1]) silently gave step(w[0])'s numbers).
STATE_VIEWS = {  # name: the views passed, one per call
    "rows": lambda w: [w[0], w[1], w[0], w[2]],
    "columns": lambda w: [w[:, 0], w[:, 1]],
    "slices": lambda w: [w[0:2], w[1:3]],
}


def _state_view_run(lib, name, compiled):
    w = lib.arange(6.0).view(3, 2) * 0.5 - 1.0
    p = lib.tensor([2.0, -1.0], requires_grad=True)

    def step(x):
        loss = (x.sum() * p).sin().sum() * w.sum()
        loss.backward()
        return loss

    if compiled:
        step = funcgrad.jit(step)
    out = []
    for x in STATE_VIEWS[name](w):
        p.grad = None
        out.append((step(x).detach().numpy().copy(), p.grad.numpy().copy()))
    return out


@pytest.mark.torch
@pytest.mark.parametrize("name", sorted(STATE_VIEWS))
def test_view_of_state_tensor_as_argument(name):
    eager, comp = _state_view_run(funcgrad, name, False), _state_view_run(funcgrad, name, True)
    assert not np.allclose(eager[0][0], eager[1][0])  # the views differ
    for e, c in zip(eager, comp):
        for a, b in zip(c, e):
            np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-6)
    torch = pytest.importorskip("torch")  # (the eager comparison above runs without it)
    for r, c in zip(_state_view_run(torch, name, False), comp):
        for a, b in zip(c, r):
            np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-5)
