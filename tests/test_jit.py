"""funcgrad.jit: compiled steps give eager's numbers and leave every object as eager would."""

import jax
import numpy as np
import pytest

import funcgrad
from funcgrad import nn, optim
from funcgrad._errors import TracedValueError
import funcgrad.nn.functional as F


def _all_state(model, opt):
    out = [p.detach().numpy() for p in model.parameters()]
    out += [b.numpy() for b in model.buffers()]
    out += [v.numpy() for st in opt.state.values() for v in st.values() if isinstance(v, funcgrad.Tensor)]
    return out


def _make(seed=0):
    funcgrad.manual_seed(seed)
    model = nn.Sequential(nn.Linear(12, 16), nn.BatchNorm1d(16), nn.ReLU(), nn.Dropout(0.1),
                          nn.Linear(16, 5))
    opt = optim.AdamW(model.parameters(), lr=1e-2)
    sched = optim.lr_scheduler.CosineAnnealingLR(opt, T_max=10)
    return model, opt, sched


def _run(compiled, steps=20):
    model, opt, sched = _make()

    def train_step(x, y):
        opt.zero_grad()
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        return loss

    step = funcgrad.jit(train_step) if compiled else train_step
    funcgrad.manual_seed(1)
    data = [(funcgrad.randn(8, 12), funcgrad.randint(0, 5, (8,))) for _ in range(steps)]
    losses = []
    for x, y in data:
        losses.append(step(x, y).item())
        sched.step()
    return losses, _all_state(model, opt), step, model, opt


def test_compiled_equals_eager_20_steps():
    funcgrad.set_default_dtype(funcgrad.float64)
    le, se, *_ = _run(False)
    lc, sc, step, model, opt = _run(True)
    np.testing.assert_allclose(lc, le, rtol=1e-6)
    assert len(se) == len(sc)
    for a, b in zip(sc, se):
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-9)
    assert 1 <= step.num_traces <= 2  # lr changed every call by the scheduler: no retrace
    # no tracer anywhere afterwards
    for t in list(model.parameters()) + [p.grad for p in model.parameters()]:
        assert isinstance(t._value, jax.Array)


def test_fresh_dropout_mask_per_call():
    drop = nn.Dropout(0.5)

    @funcgrad.jit
    def f(x):
        return drop(x)

    x = funcgrad.ones(64)
    a, b, c = f(x), f(x), f(x)
    assert not np.array_equal(a.numpy(), b.numpy()) and not np.array_equal(b.numpy(), c.numpy())
    assert f.num_traces == 1


def test_retrace_count():
    w = funcgrad.ones(3, 2, requires_grad=True)

    @funcgrad.jit
    def step(x):
        loss = (x @ w).sum()
        loss.backward()
        with funcgrad.no_grad():
            w.sub_(0.1 * w.grad)
        w.grad = None
        return loss

    for _ in range(5):
        step(funcgrad.ones(4, 3))
    assert step.num_traces == 1
    step(funcgrad.ones(5, 3))
    assert step.num_traces == 2
    step(funcgrad.ones(4, 3))
    assert step.num_traces == 2


def test_closure_and_argument_state_agree():
    def body(model, opt, x):
        opt.zero_grad()
        loss = model(x).pow(2).mean()
        loss.backward()
        opt.step()
        return loss

    res = []
    for mode in ("eager", "closure", "argument"):
        funcgrad.manual_seed(0)
        model = nn.Linear(3, 2)
        opt = optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
        if mode == "closure":
            f = funcgrad.jit(lambda x: body(model, opt, x))
            call = f
        elif mode == "argument":
            f = funcgrad.jit(body)
            call = lambda x: f(model, opt, x)  # noqa: E731
        else:
            call = lambda x: body(model, opt, x)  # noqa: E731
        for i in range(4):
            call(funcgrad.ones(2, 3) * i)
        res.append(model.weight.detach().numpy())
    np.testing.assert_allclose(res[1], res[0], rtol=1e-6)
    np.testing.assert_allclose(res[2], res[0], rtol=1e-6)


SCALE = funcgrad.tensor([2.0])


class _UsesGlobal(nn.Module):
    def forward(self, x):
        return x * SCALE  # a global the step's code does not name: lifted, not frozen


def test_global_tensor_is_updated_not_frozen():
    @funcgrad.jit
    def f(x):
        return x * SCALE

    m = _UsesGlobal()
    g = funcgrad.jit(lambda x: m(x))
    assert f(funcgrad.ones(1)).item() == 2.0 and g(funcgrad.ones(1)).item() == 2.0
    with funcgrad.no_grad():
        SCALE.add_(1.0)
    assert f(funcgrad.ones(1)).item() == 3.0
    assert g(funcgrad.ones(1)).item() == 3.0
    SCALE.fill_(2.0) if hasattr(SCALE, "fill_") else None


def test_error_leaves_state_untouched_and_no_tracer_leaks():
    model = nn.Linear(3, 2)
    opt = optim.Adam(model.parameters(), lr=0.1)
    before = [p.detach().numpy().copy() for p in model.parameters()]

    @funcgrad.jit
    def step(x):
        opt.zero_grad()
        loss = model(x).sum()
        loss.backward()
        opt.step()
        if loss > 0:  # data-dependent Python control flow: not compilable
            pass
        return loss

    with pytest.raises(TracedValueError, match="funcgrad.where"):
        step(funcgrad.ones(1, 3))
    for p, b in zip(model.parameters(), before):
        assert isinstance(p._value, jax.Array)
        np.testing.assert_array_equal(p.detach().numpy(), b)
        assert p.grad is None
    for st in opt.state.values():
        for v in st.values():
            assert not isinstance(v._value, jax.core.Tracer)
    assert not isinstance(funcgrad.default_generator._cell.value, jax.core.Tracer)
    # the objects still work eagerly
    model(funcgrad.ones(1, 3)).sum().backward()
    opt.step()


def test_item_inside_step_names_the_line():
    w = funcgrad.ones(2)
    f = funcgrad.jit(lambda: (w * 2).sum().item())
    with pytest.raises(TracedValueError, match="test_jit.py"):
        f()


def test_gradient_penalty_compiles():
    funcgrad.set_default_dtype(funcgrad.float64)

    def run(compiled):
        funcgrad.manual_seed(0)
        model = nn.Sequential(nn.Linear(3, 8), nn.Tanh(), nn.Linear(8, 1))
        opt = optim.SGD(model.parameters(), lr=0.05)

        def step(x):
            opt.zero_grad()
            x = x.detach().requires_grad_()
            out = model(x).sum()
            (gx,) = funcgrad.autograd.grad(out, x, create_graph=True)
            loss = out + (gx.pow(2).sum() - 1) ** 2
            loss.backward()
            opt.step()
            return loss

        f = funcgrad.jit(step) if compiled else step
        funcgrad.manual_seed(3)
        xs = [funcgrad.randn(4, 3) for _ in range(3)]
        ls = [f(x).item() for x in xs]
        return ls, [p.detach().numpy() for p in model.parameters()]

    le, pe = run(False)
    lc, pc = run(True)
    np.testing.assert_allclose(lc, le, rtol=1e-7)
    for a, b in zip(pc, pe):
        np.testing.assert_allclose(a, b, rtol=1e-7, atol=1e-12)


def test_print_inside_step_shows_placeholder(capsys):
    f = funcgrad.jit(lambda x: print(x * 2) or x)
    f(funcgrad.ones(2))
    assert "<traced float32[2]>" in capsys.readouterr().out


def test_cond_inside_step():
    f = funcgrad.jit(lambda x: funcgrad.cond(x.sum() > 0, lambda v: v * 2, lambda v: -v, x))
    assert f(funcgrad.tensor([1.0, 2.0])).tolist() == [2.0, 4.0]
    assert f(funcgrad.tensor([-1.0, -2.0])).tolist() == [1.0, 2.0]
    assert f.num_traces == 1


def test_compile_module_forward_and_backward():
    funcgrad.set_default_dtype(funcgrad.float64)
    funcgrad.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 6), nn.BatchNorm1d(6), nn.ReLU(), nn.Linear(6, 2))
    fast = funcgrad.compile(model)
    x = funcgrad.randn(5, 4)
    ref = model(x)
    rm = model[1].running_mean.numpy().copy()
    out = fast(x)
    np.testing.assert_allclose(out.detach().numpy(), ref.detach().numpy(), rtol=1e-10)
    assert out.grad_fn.name() == "CompiledFunctionBackward"
    assert not np.allclose(model[1].running_mean.numpy(), rm)  # buffers still updated
    out.sum().backward()
    g_fast = [p.grad.numpy().copy() for p in model.parameters()]
    model.zero_grad()
    model(x).sum().backward()
    for a, p in zip(g_fast, model.parameters()):
        np.testing.assert_allclose(a, p.grad.numpy(), rtol=1e-10, atol=1e-12)
    model.eval()
    with funcgrad.no_grad():
        np.testing.assert_allclose(fast(x).numpy(), model(x).numpy(), rtol=1e-10)


def test_compile_fn_is_jit():
    f = funcgrad.compile(lambda x: x + 1)
    assert f(funcgrad.ones(1)).item() == 2.0 and f.num_traces == 1


def test_parity_mlp_backward_vs_jax_grad():
    """Gradients from loss.backward() (eager and compiled) equal jax.grad of the functional form."""
    funcgrad.set_default_dtype(funcgrad.float64)
    funcgrad.manual_seed(0)
    model = nn.Sequential(nn.Linear(5, 7), nn.Tanh(), nn.Linear(7, 3))
    x, y = funcgrad.randn(6, 5), funcgrad.randint(0, 3, (6,))
    params = {k: v.detach().jax() for k, v in model.named_parameters()}

    def loss_fn(p):
        return F.cross_entropy(funcgrad.func.functional_call(model, p, x.jax()), y).jax()

    ref = jax.grad(loss_fn)(params)
    F.cross_entropy(model(x), y).backward()
    eager = {k: v.grad.numpy().copy() for k, v in model.named_parameters()}
    model.zero_grad()

    @funcgrad.jit
    def step(x, y):
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        return loss

    step(x, y)
    for k, v in model.named_parameters():
        np.testing.assert_allclose(eager[k], np.asarray(ref[k]), rtol=1e-10, atol=1e-14)
        np.testing.assert_allclose(v.grad.numpy(), np.asarray(ref[k]), rtol=1e-10, atol=1e-14)


HIDDEN = funcgrad.zeros(2)


class _WritesGlobal(nn.Module):
    def forward(self, x):
        with funcgrad.no_grad():
            HIDDEN.add_(x.sum())  # a tensor the step's code does not name, written: lifted
        return x * 2


def test_undiscovered_written_tensor_is_lifted():
    HIDDEN.zero_()
    m = _WritesGlobal()
    f = funcgrad.jit(lambda x: m(x))
    for _ in range(3):
        f(funcgrad.ones(2))
    assert HIDDEN.tolist() == [6.0, 6.0] and f.num_traces == 1


def test_replacing_submodule_parameter_or_attribute_retraces():
    # the cached layout is validated cheaply (module __dict__s by a structure counter that
    # Module.__setattr__/__delattr__ bump; _parameters/_modules dicts by identity)
    def run(compiled):
        funcgrad.manual_seed(0)
        model = nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 2))
        model.scale = 1.0

        def body(x):
            model.zero_grad()
            loss = model(x).pow(2).sum() * model.scale
            loss.backward()
            return loss

        step = funcgrad.jit(body) if compiled else body
        x = funcgrad.ones(5, 3)
        out = []

        def record():
            out.append(step(x).item())
            out.extend(p.grad.numpy().copy() for p in model.parameters())

        record()
        record()
        funcgrad.manual_seed(1)
        model[2] = nn.Linear(4, 2)  # a container writes its _modules dict directly
        record()
        model[0].weight = nn.Parameter(funcgrad.full((4, 3), 0.25))
        record()
        record()  # the .grad slots are stable from here: only the counter can tell
        model.scale = 2.0  # a plain attribute: baked into the trace, so it must retrace
        record()
        return out, step

    eager, _ = run(False)
    comp, step = run(True)
    assert len(eager) == len(comp)
    for a, b in zip(comp, eager):
        np.testing.assert_allclose(a, b, rtol=1e-6)
    assert step.num_traces >= 4


def test_freezing_a_parameter_between_calls_is_seen():
    """``requires_grad_(False)`` on a parameter after compiling: the next call retraces and the
    frozen weight is neither updated nor given a ``.grad`` (it was silently trained before)."""
    funcgrad.manual_seed(0)
    m = nn.Sequential(nn.Linear(3, 3), nn.Linear(3, 3))
    opt = optim.SGD(m.parameters(), lr=0.1)

    @funcgrad.jit
    def step(x):
        opt.zero_grad()
        loss = m(x).sum()
        loss.backward()
        opt.step()
        return loss
    x = funcgrad.randn(2, 3)
    step(x), step(x)
    n = step.num_traces
    m[0].weight.requires_grad_(False)
    w0 = m[0].weight.detach().clone()
    step(x), step(x)
    assert step.num_traces == n + 1
    assert m[0].weight.grad is None
    np.testing.assert_array_equal(m[0].weight.detach().numpy(), w0.numpy())
    m[0].weight.requires_grad_(True)  # unfrozen again: trained again, the first program reused
    step(x)
    assert m[0].weight.grad is not None and step.num_traces <= n + 2
    assert not np.array_equal(m[0].weight.detach().numpy(), w0.numpy())
