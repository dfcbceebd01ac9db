"""funcgrad.jit never runs a stale program: the Python objects around a compiled step change
(containers replaced, hyperparameters from 0 to non-zero, a checkpoint loaded, state cleared)
and each call still gives eager's numbers, with no needless retrace.

Each scenario of ``SCENARIOS`` builds a fresh model and optimizer twice (same seed), runs its
step eagerly on one and compiled on the other, applies the same change between calls to both,
and compares every parameter after every call (to 1e-6) and the trace count.
"""

import warnings
from collections import defaultdict

import numpy as np
import pytest

import funcgrad
from funcgrad import nn, optim
import funcgrad.nn.functional as F

N_CALLS = 6


def _model():
    return nn.Sequential(nn.Linear(4, 3), nn.Tanh(), nn.Linear(3, 2))


def _data(n=N_CALLS):
    g = np.random.default_rng(0)
    return [(funcgrad.tensor(g.standard_normal((5, 4)).astype("float32")),
             funcgrad.tensor(g.integers(0, 2, 5))) for _ in range(n)]


def _train(model, opt, zero=True, zero_at_end=False):
    def step(x, y):
        if zero:
            opt.zero_grad()
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        if zero_at_end:
            opt.zero_grad()
        return loss
    return step


def _sgd(**kw):
    def make():
        m = _model()
        return m, optim.SGD(m.parameters(), lr=0.1, **kw)
    return make


def _adam(**kw):
    def make():
        m = _model()
        return m, optim.Adam(m.parameters(), lr=0.05, **kw)
    return make


def _set(key, value, at=2):
    def between(i, model, opt, ctx):
        if i == at:
            for g in opt.param_groups:
                g[key] = value
    return between


def _load_ckpt(i, model, opt, ctx):
    if i == 1:
        ctx["ckpt"] = opt.state_dict()
    if i == 3:
        opt.load_state_dict(ctx["ckpt"])


def _load_fresh(i, model, opt, ctx):
    if i == 0:
        ctx["ckpt"] = opt.state_dict()
    if i == 3:
        opt.load_state_dict(ctx["ckpt"])


def _replace_params(i, model, opt, ctx):
    if i == 2:
        opt.param_groups[0]["params"] = [model[0].weight]


def _del_param(i, model, opt, ctx):
    if i == 2:
        del opt.param_groups[0]["params"][1]


def _new_state(i, model, opt, ctx):
    if i == 2:
        opt.state = defaultdict(dict)


def _clear_state(i, model, opt, ctx):
    if i == 2:
        opt.state.clear()


def _new_groups(i, model, opt, ctx):
    if i == 2:
        opt.param_groups = [dict(opt.param_groups[0], lr=1.0)]


def _zero_outside(i, model, opt, ctx):
    opt.zero_grad()


def _nothing(i, model, opt, ctx):
    pass


# name -> (make model+optimizer, step factory kwargs, change between calls, traces allowed)
SCENARIOS = {
    "load_state_dict": (_adam(), {}, _load_ckpt, 3),
    "params_list_replaced": (_adam(), {}, _replace_params, 3),
    "param_deleted": (_adam(), {}, _del_param, 3),
    "state_replaced": (_adam(), {}, _new_state, 4),
    "state_cleared": (_adam(), {}, _clear_state, 4),
    "param_groups_replaced": (_adam(), {}, _new_groups, 3),
    "sgd_momentum_0_to_0.9": (_sgd(momentum=0.0), {}, _set("momentum", 0.9), 4),
    "sgd_momentum_int0_to_0.9": (_sgd(), {}, _set("momentum", 0.9), 4),
    "sgd_weight_decay_0_to_0.1": (_sgd(weight_decay=0.0), {}, _set("weight_decay", 0.1), 3),
    "sgd_nesterov_on": (_sgd(momentum=0.9), {}, _set("nesterov", True), 4),
    "adam_weight_decay_0_to_0.1": (_adam(weight_decay=0.0), {}, _set("weight_decay", 0.1), 4),
    "adam_maximize_on": (_adam(), {}, _set("maximize", True), 4),
    "load_state_dict_of_fresh_optimizer": (_adam(), {}, _load_fresh, 4),
    "adam_lr_changes_no_retrace": (_adam(), {}, _set("lr", 0.01), 2),
    "zero_grad_outside": (_adam(), {"zero": False}, _zero_outside, 2),
    "zero_grad_at_end": (_adam(), {"zero": False, "zero_at_end": True}, _nothing, 2),
    "zero_grad_inside": (_adam(), {}, _nothing, 2),
}


def _params(model):
    return [p.detach().numpy().copy() for p in model.parameters()]


def _play(name, compiled):
    make, kw, between, _ = SCENARIOS[name]
    funcgrad.manual_seed(0)
    model, opt = make()
    step = _train(model, opt, **kw)
    if compiled:
        step = funcgrad.jit(step)
    ctx: dict = {}
    history = []
    for i, (x, y) in enumerate(_data()):
        between(i, model, opt, ctx)
        loss = step(x, y)
        history.append([float(loss.item())] + _params(model))
    return history, step


@pytest.mark.parametrize("name", list(SCENARIOS))
def test_compiled_equals_eager_after_the_change(name):
    eager, _ = _play(name, False)
    comp, step = _play(name, True)
    for i, (e, c) in enumerate(zip(eager, comp)):
        for a, b in zip(c, e):
            np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-6, err_msg=f"{name}: call {i}")
    assert step.num_traces <= SCENARIOS[name][3], (name, step.retrace_reasons)


# ---- the tracing frame is per thread ---------------------------------------------------------
def test_tensor_made_on_another_thread_during_a_trace_is_not_frozen():
    import threading
    import weakref
    started, go = threading.Event(), threading.Event()

    @funcgrad.jit
    def slow(x):
        started.set()
        go.wait(30)
        return x * 2

    th = threading.Thread(target=slow, args=(funcgrad.ones(2),))
    th.start()
    assert started.wait(30)
    t = funcgrad.ones(1) * 3  # made here while the other thread traces
    go.set()
    th.join(30)
    assert type(t._cell).__name__ == "_Cell"
    ref = weakref.ref(t)  # not found by discovery: the trace must lift it, not freeze it
    step = funcgrad.jit(lambda x: (x.sum(), ref().sum()))
    assert [float(v) for v in step(funcgrad.ones(3))] == [3.0, 3.0]
    t.mul_(10)
    assert [float(v) for v in step(funcgrad.ones(3))] == [3.0, 30.0]


def _sgd_step(model, opt, hold=None):
    def step(x, y):
        if hold is not None and hold[0]:  # (Python: runs while the step is traced)
            hold[0] = False
            hold[1]()
        opt.zero_grad()
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        return loss
    return step


def test_two_compiled_steps_trace_and_run_concurrently_on_two_threads():
    import threading
    import jax
    data = _data(4)
    barrier = threading.Barrier(3, timeout=60)
    seen = {}

    def inside():  # both steps are tracing now: their tracers are bound on their own threads
        barrier.wait()
        barrier.wait()  # (the main thread looks at the parameters in between)

    runs = []
    for k in range(2):
        funcgrad.manual_seed(k)
        m, o = _sgd()()
        runs.append((m, o, funcgrad.jit(_sgd_step(m, o, [True, inside]))))
    errors = []

    def work(k):
        try:
            for x, y in data:
                runs[k][2](x, y)
        except BaseException as e:  # noqa: BLE001 (reported below)
            errors.append(e)

    ths = [threading.Thread(target=work, args=(k,)) for k in range(2)]
    for t in ths:
        t.start()
    barrier.wait()
    seen["tracer"] = any(isinstance(p._value, jax.core.Tracer) for m, _, _ in runs
                         for p in m.parameters())
    seen["rng"] = isinstance(funcgrad._random.default_generator._cell.value, jax.core.Tracer)
    barrier.wait()
    for t in ths:
        t.join(120)
    assert not errors, errors
    assert seen == {"tracer": False, "rng": False}  # another thread sees concrete arrays
    for k, (m, o, step) in enumerate(runs):
        funcgrad.manual_seed(k)
        me, oe = _sgd()()
        eager = _sgd_step(me, oe)
        for x, y in data:
            eager(x, y)
        for a, b in zip(_params(m), _params(me)):
            np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-6)
        assert step.num_traces == 1, step.retrace_reasons  # (the .grad slots made before the first)


def test_one_compiled_step_called_from_two_threads_is_serialized_and_correct():
    import threading
    x, y = _data(1)[0]
    funcgrad.manual_seed(0)
    m, o = _sgd()()
    step = funcgrad.jit(_sgd_step(m, o))
    ths = [threading.Thread(target=lambda: [step(x, y) for _ in range(5)]) for _ in range(2)]
    for t in ths:
        t.start()
    for t in ths:
        t.join(120)
    funcgrad.manual_seed(0)
    me, oe = _sgd()()
    eager = _sgd_step(me, oe)
    for _ in range(10):  # the same batch each call: the order of the calls does not matter
        eager(x, y)
    for a, b in zip(_params(m), _params(me)):
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-6)
    assert step.num_traces == 1, step.retrace_reasons


@pytest.mark.parametrize("writes", [1, 2])
def test_input_written_in_place_bumps_its_version_as_eagerly(writes):
    def f(x):
        for _ in range(writes):
            x.add_(1)
        return x.sum()

    step = funcgrad.jit(f)
    xs, xe = funcgrad.zeros(3), funcgrad.zeros(3)
    for call in range(3):
        step(xs)
        f(xe)
        assert xs._ver[0] == xe._ver[0] == writes * (call + 1)
        np.testing.assert_array_equal(xs.numpy(), xe.numpy())


# ---- Python side effects inside a compiled step: warned, not silent ---------------------------
_counter = 0


def _sched_inside():
    funcgrad.manual_seed(0)
    model, opt = _sgd()()
    sched = optim.lr_scheduler.StepLR(opt, step_size=1, gamma=0.5)

    def step(x, y):
        opt.zero_grad()
        F.cross_entropy(model(x), y).backward()
        opt.step()
        sched.step()
    return step, "StepLR.last_epoch"


def _module_counter():
    funcgrad.manual_seed(0)
    model = _model()
    model.calls = 0

    def step(x, y):
        model.calls += 1
        return model(x).sum()
    return step, "Sequential.calls"


def _global_counter():
    funcgrad.manual_seed(0)
    model, opt = _sgd()()

    def step(x, y):
        global _counter
        F.cross_entropy(model(x), y).backward()
        _counter += 1
        if _counter % 2 == 0:
            opt.step()
            opt.zero_grad()
    return step, "the global _counter"


@pytest.mark.parametrize("make", [_sched_inside, _module_counter, _global_counter])
def test_python_state_changed_by_a_trace_warns_once_naming_it(make):
    step, attr = make()
    step = funcgrad.jit(step)
    x, y = _data(1)[0]
    with warnings.catch_warnings():  # (pytest.warns re-emits jax's own DeprecationWarnings)
        warnings.simplefilter("ignore", DeprecationWarning)
        pattern = r"changed .*" + attr.replace(".", r"\.") + r" .*sched\.step\(\)"
        with pytest.warns(UserWarning, match=pattern):
            step(x, y)
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)
        step(x, y)  # once per attribute
        step(x, y)


def test_scheduler_lr_written_by_the_trace_runs_once_not_per_attempt():
    step, _ = _sched_inside()
    opt_lr = step.__closure__  # the closure holds opt: read its lr after one compiled call
    opt = [c.cell_contents for c in opt_lr if isinstance(c.cell_contents, optim.SGD)][0]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        with pytest.warns(UserWarning, match="param_groups"):
            funcgrad.jit(step)(*_data(1)[0])
    assert opt.param_groups[0]["lr"] == 0.05  # stepped once (0.1 * 0.5), not once per relift


# ---- tracers never escape into Tensors or the global generator --------------------------------
def test_dropout_under_raw_jax_jit_needs_a_key_and_leaves_no_tracer():
    import jax
    import jax.numpy as jnp
    from funcgrad.func import functional_call
    m = nn.Sequential(nn.Linear(4, 8), nn.Dropout(0.5))
    p = {k: v.detach()._value for k, v in m.named_parameters()}
    x = jnp.ones((2, 4), "float32")
    f = jax.jit(jax.grad(lambda p, x: functional_call(m, p, x).sum()))
    with pytest.raises(RuntimeError, match=r"rng=key"):
        f(p, x)
    assert funcgrad.randn(2).shape == (2,)  # the global key is still a concrete key
    g = jax.jit(lambda p, x, k: functional_call(m, p, x, rng=k))
    a, b = g(p, x, jax.random.PRNGKey(1)), g(p, x, jax.random.PRNGKey(2))
    assert bool((a != b).any())  # a fresh mask per key, not one mask per trace
    assert not isinstance(funcgrad._random.default_generator._cell.value, jax.core.Tracer)


def test_raw_jax_jit_of_a_train_step_raises_and_leaves_no_tracer():
    import jax
    m = nn.Linear(4, 2)
    opt = optim.SGD(m.parameters(), lr=0.1)

    def step(x):
        opt.zero_grad()
        loss = m(x).sum()
        loss.backward()
        opt.step()
        return loss

    with pytest.raises(RuntimeError, match=r"funcgrad\.jit\(step\)"):
        jax.jit(step)(funcgrad.ones(3, 4))
    assert not isinstance(m.weight._value, jax.core.Tracer)
    assert m.weight.grad is None or not isinstance(m.weight.grad._value, jax.core.Tracer)


def test_retrace_reasons_name_the_cause():
    m = nn.Linear(4, 2)
    opt = optim.SGD(m.parameters(), lr=0.1)

    @funcgrad.jit
    def step(x):
        opt.zero_grad()
        m(x).sum().backward()
        opt.step()

    step(funcgrad.ones(3, 4))
    step(funcgrad.ones(5, 4))
    opt.param_groups[0]["momentum"] = 0.9
    step(funcgrad.ones(5, 4))
    step(funcgrad.ones(5, 4))
    opt.param_groups[0]["nesterov"] = True
    step(funcgrad.ones(5, 4))
    m.eval()
    step(funcgrad.ones(5, 4))
    r = step.retrace_reasons
    assert r[0] == "first call"
    assert r[1].startswith("tensor argument 0: shape (3, 4) -> (5, 4)") and "test_jit_stale.py:" in r[1]
    # (the momentum buffers it makes are made before its program is traced: one trace, whose
    # cause is the momentum; before SGD's first update was primed, a second one followed)
    assert r[2].startswith("param_groups[0]['momentum'] went from 0 to non-zero")
    assert r[3].startswith("param_groups[0]['nesterov']: False -> True")
    assert r[4].startswith("a module attribute changed")
    assert len(r) == step.num_traces == 5


def test_result_of_raw_jax_jit_does_not_claim_a_graph_it_lacks():
    import jax
    w = funcgrad.ones(3, requires_grad=True)
    out = jax.jit(lambda w: w * 2)(w)
    assert out.requires_grad is False and out.grad_fn is None  # detached, not a fake leaf
    with pytest.raises(RuntimeError, match="does not require grad"):
        out.sum().backward()
    assert jax.tree.map(lambda x: x, {"w": w})["w"].requires_grad  # leaves keep the flag


def _accumulate(compiled, calls=40, every=4):
    funcgrad.manual_seed(0)
    model, opt = _adam()()

    def step(x, y, do_step):
        (F.cross_entropy(model(x), y) / every).backward()
        if do_step:
            opt.step()
            opt.zero_grad()

    step = funcgrad.jit(step) if compiled else step
    data = _data(calls)
    traces = []
    for i, (x, y) in enumerate(data):
        step(x, y, i % every == every - 1)
        traces.append(getattr(step, "num_traces", 0))
    return _params(model), step, traces


def test_flag_based_gradient_accumulation_gives_eager_numbers_and_traces_each_pattern_once():
    pe, _, _ = _accumulate(False)
    pc, step, traces = _accumulate(True)
    for a, b in zip(pc, pe):
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-6)
    # .grad None / set x the flag, before and after Adam's state exists (its first step is
    # traced with the state made before, trace.prime: the program of the later steps): 5
    # programs, then every cycle reuses them although each cycle's backward() after
    # zero_grad() makes new .grad tensors
    assert step.num_traces == 5, step.retrace_reasons
    assert traces[8:] == [5] * (len(traces) - 8), traces


def test_tensor_arguments_written_by_a_cached_program_are_this_calls():
    def f(x, w):
        x.add_(1)
        (w * 2).sum().backward()
        return x.sum()

    step = funcgrad.jit(f)
    for _ in range(2):  # the second round: each program found cached, with new argument tensors
        xs, ws = [funcgrad.zeros(3) for _ in range(2)], [funcgrad.ones(3, requires_grad=True)
                                                          for _ in range(2)]
        for x, w in zip(xs, ws):
            assert float(step(x, w)) == 3.0
        for x, w in zip(xs, ws):
            assert x._version == 1 and x.tolist() == [1.0, 1.0, 1.0]
            assert w.grad.tolist() == [2.0, 2.0, 2.0]
    assert step.num_traces == 1, step.retrace_reasons


def test_compiled_step_called_inside_another_compiled_step_leaves_no_tracer():
    import jax
    x = funcgrad.ones(2, 3)

    def make():
        funcgrad.manual_seed(0)
        m = nn.Sequential(nn.Linear(3, 3), nn.Linear(3, 1))
        opt = optim.SGD(m.parameters(), lr=0.1)

        def step(x):
            opt.zero_grad()
            loss = m(x).sum()
            loss.backward()
            opt.step()
            return loss
        return m, step

    m, inner = make()
    inner_c = funcgrad.jit(inner)
    inner_c(x), inner_c(x)  # (its small state is packed now: the outer trace binds those cells)
    outer = funcgrad.jit(lambda x: inner_c(x) + inner_c(x))
    for _ in range(3):
        outer(x)
    me, eager = make()
    for _ in range(8):
        eager(x)
    assert not any(isinstance(p._value, jax.core.Tracer) for p in m.parameters())
    for a, b in zip(_params(m), _params(me)):
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-6)
