"""funcgrad.optim: trajectories vs NumPy references of PyTorch's algorithms, the Optimizer API
(param groups, state, state_dict, errors, repr), dynamic hyperparameters (no recompiles), and
optional comparisons with torch.optim."""

import math
import warnings

import numpy as np
import pytest

import funcgrad
from funcgrad import optim
from funcgrad.optim.optimizer import _kernels

SHAPES = [(3,), (2, 4), ()]


def _init(seed=0):
    rng = np.random.default_rng(seed)
    return [rng.standard_normal(s) for s in SHAPES]


def _grad_np(i, x):
    """Gradient of 1.5|x0|^2 + 0.1 sum(x1^4) + 2 (x2 - 1)^2 (a fixed problem, no autograd)."""
    return [3.0 * x, 0.4 * x ** 3, 4.0 * (x - 1.0)][i]


def _has_grad(i, t):
    return not (i == 1 and t % 3 == 0)  # the second parameter has grad None every third step


# ---- NumPy references: PyTorch's documented single-tensor algorithms --------------------------------
def _lerp(a, b, w):
    return a + w * (b - a) if abs(w) < 0.5 else b - (b - a) * (1 - w)


def ref_step(name, c, p, g, s):
    """One step of optimizer ``name`` (options ``c``) on float64 arrays; ``s`` is the state dict."""
    g = -g if c.get("maximize") else g
    wd = c.get("weight_decay", 0)
    decoupled = c.get("decoupled_weight_decay", name == "AdamW")
    if wd and not decoupled:
        g = g + wd * p
    if wd and decoupled:
        p = p * (1 - c["lr"] * wd)
    lr = c.get("lr", 1.0)
    if name == "SGD":
        m, damp = c.get("momentum", 0), c.get("dampening", 0)
        if m:
            s["buf"] = g.copy() if "buf" not in s else m * s["buf"] + (1 - damp) * g
            g = g + m * s["buf"] if c.get("nesterov") else s["buf"]
        return p - lr * g
    s["t"] = t = s.get("t", 0) + 1
    if name in ("Adam", "AdamW", "NAdam", "RAdam", "Adamax"):
        b1, b2 = c.get("betas", (0.9, 0.999))
        eps = c.get("eps", 1e-8)
        m = s["m"] = _lerp(s.get("m", 0 * p), g, 1 - b1)
        if name == "Adamax":
            u = s["u"] = np.maximum(s.get("u", 0 * p) * b2, np.abs(g) + eps)
            return p - lr / (1 - b1 ** t) * m / u
        v = s["v"] = s.get("v", 0 * p) * b2 + (1 - b2) * g * g
        bc1, bc2 = 1 - b1 ** t, 1 - b2 ** t
        if name in ("Adam", "AdamW"):
            if c.get("amsgrad"):
                v = s["vmax"] = np.maximum(s.get("vmax", 0 * p), v)
            return p - lr / bc1 * m / (np.sqrt(v) / math.sqrt(bc2) + eps)
        if name == "NAdam":
            psi = c.get("momentum_decay", 4e-3)
            mu = b1 * (1 - 0.5 * 0.96 ** (t * psi))
            mu_next = b1 * (1 - 0.5 * 0.96 ** ((t + 1) * psi))
            s["mp"] = mp = s.get("mp", 1.0) * mu
            denom = np.sqrt(v / bc2) + eps
            return p - lr * (1 - mu) / (1 - mp) * g / denom - lr * mu_next / (1 - mp * mu_next) * m / denom
        rho_inf = 2 / (1 - b2) - 1
        rho_t = rho_inf - 2 * t * b2 ** t / bc2
        if rho_t > 5:
            rect = math.sqrt((rho_t - 4) * (rho_t - 2) * rho_inf / ((rho_inf - 4) * (rho_inf - 2) * rho_t))
            return p - m / bc1 * lr * math.sqrt(bc2) / (np.sqrt(v) + eps) * rect
        return p - m / bc1 * lr
    if name == "RMSprop":
        a, eps = c.get("alpha", 0.99), c.get("eps", 1e-8)
        sq = s["sq"] = s.get("sq", 0 * p) * a + (1 - a) * g * g
        if c.get("centered"):
            ga = s["ga"] = _lerp(s.get("ga", 0 * p), g, 1 - a)
            avg = np.sqrt(sq - ga * ga) + eps
        else:
            avg = np.sqrt(sq) + eps
        if c.get("momentum", 0) > 0:
            s["buf"] = s.get("buf", 0 * p) * c["momentum"] + g / avg
            return p - lr * s["buf"]
        return p - lr * g / avg
    if name == "Adagrad":
        clr = lr / (1 + (t - 1) * c.get("lr_decay", 0))
        acc = s["sum"] = s.get("sum", 0 * p + c.get("initial_accumulator_value", 0)) + g * g
        return p - clr * g / (np.sqrt(acc) + c.get("eps", 1e-10))
    if name == "Adadelta":
        rho, eps = c.get("rho", 0.9), c.get("eps", 1e-6)
        sq = s["sq"] = s.get("sq", 0 * p) * rho + (1 - rho) * g * g
        delta = np.sqrt(s.get("acc", 0 * p) + eps) / np.sqrt(sq + eps) * g
        s["acc"] = s.get("acc", 0 * p) * rho + (1 - rho) * delta * delta
        return p - lr * delta
    raise AssertionError(name)


CASES = [
    ("SGD", dict(lr=0.05)),
    ("SGD", dict(lr=0.02, momentum=0.9, dampening=0.2, weight_decay=0.1)),
    ("SGD", dict(lr=0.02, momentum=0.9, nesterov=True, maximize=True)),
    ("Adam", dict(lr=0.05)),
    ("Adam", dict(lr=0.05, betas=(0.8, 0.99), weight_decay=0.1, amsgrad=True)),
    ("Adam", dict(lr=0.05, weight_decay=0.1, decoupled_weight_decay=True, maximize=True)),
    ("AdamW", dict(lr=0.05, weight_decay=0.1)),
    ("Adamax", dict(lr=0.05, weight_decay=0.05)),
    ("NAdam", dict(lr=0.05, weight_decay=0.05)),
    ("NAdam", dict(lr=0.05, weight_decay=0.05, decoupled_weight_decay=True)),
    ("RAdam", dict(lr=0.05, weight_decay=0.05)),
    ("RAdam", dict(lr=0.05, weight_decay=0.05, decoupled_weight_decay=True)),
    ("RMSprop", dict(lr=0.01)),
    ("RMSprop", dict(lr=0.01, momentum=0.5, centered=True, weight_decay=0.1, alpha=0.9)),
    ("Adagrad", dict(lr=0.1, lr_decay=0.01, initial_accumulator_value=0.1, weight_decay=0.1)),
    ("Adadelta", dict(lr=1.0, rho=0.8, weight_decay=0.1)),
    ("Adadelta", dict(maximize=True)),
]


@pytest.mark.parametrize("name,cfg", CASES, ids=[f"{n}-{i}" for i, (n, _) in enumerate(CASES)])
def test_trajectory_matches_numpy_reference(name, cfg):
    funcgrad.set_default_dtype(funcgrad.float64)
    init = _init()
    params = [funcgrad.tensor(a, requires_grad=True) for a in init]
    opt = getattr(optim, name)(params, **cfg)
    ref, states = [a.copy() for a in init], [{} for _ in init]
    sign = -1.0 if cfg.get("maximize") else 1.0  # maximize the negated problem: still converges
    for t in range(100):
        for i, p in enumerate(params):
            if _has_grad(i, t):
                p.grad = funcgrad.tensor(sign * _grad_np(i, p.detach().numpy()))
            else:
                p.grad = None
        opt.step()
        for i in range(3):
            if _has_grad(i, t):
                ref[i] = ref_step(name, cfg, ref[i], sign * _grad_np(i, ref[i]), states[i])
    for p, r in zip(params, ref):
        assert p.dtype is funcgrad.float64
        np.testing.assert_allclose(p.detach().numpy(), r, rtol=1e-6, atol=1e-12)
    # PyTorch's per-parameter step counts: the parameter skipped every third step has fewer
    if "step" in opt.state[params[0]]:
        assert [opt.state[p]["step"].item() for p in params] == [100.0, 66.0, 100.0]


def _loss(lib, ps, t, sign=1.0):
    loss = (ps[0] ** 2).sum() * 1.5 + ((ps[2] - 1) ** 2) * 2
    if t % 3:
        loss = loss + (ps[1] ** 4).sum() * 0.1
    return loss * sign


TORCH_CASES = [(n, c, "float64") for n, c in CASES] + [
    (n, c, "float32") for n, c in (CASES[2], CASES[4], CASES[13])]


@pytest.mark.torch
@pytest.mark.parametrize("name,cfg,dtype", TORCH_CASES,
                         ids=[f"{n}-{i}-{d}" for i, (n, _, d) in enumerate(TORCH_CASES)])
def test_against_torch(name, cfg, dtype):
    torch = pytest.importorskip("torch")
    # float64 runs with float64 as both libraries' default dtype (so ``step`` is float64 in both)
    # and reuses the kernels compiled by the NumPy-reference test
    check_against_torch(torch, name, cfg, dtype, f32_tol=dict(rtol=1e-4, atol=1e-5))


def check_against_torch(torch, name, cfg, dtype, f32_tol, key_order=False):
    """50 steps of optimizer ``name`` in both libraries: parameters, state (``key_order``: each
    state's keys in torch's order) and param_groups equal; float64 runs as both defaults."""
    dflt = torch.get_default_dtype()
    if dtype == "float64":
        torch.set_default_dtype(torch.float64)
        funcgrad.set_default_dtype(funcgrad.float64)
    try:
        (a, sa), (b, sb) = _run_both(torch, name, cfg, dtype)
    finally:
        torch.set_default_dtype(dflt)
    tol = dict(rtol=1e-10, atol=1e-12) if dtype == "float64" else f32_tol
    for x, y in zip(a, b):
        np.testing.assert_allclose(y, x, **tol)
    assert sorted(sa["state"]) == sorted(sb["state"])
    order = list if key_order else sorted
    for k in sa["state"]:
        assert order(sa["state"][k]) == order(sb["state"][k])
        for key, v in sa["state"][k].items():
            assert sb["state"][k][key].dtype.name == str(v.dtype).split(".")[-1], key
            np.testing.assert_allclose(sb["state"][k][key].numpy(), v.numpy(), **tol)
    assert sa["param_groups"] == sb["param_groups"]


def _run_both(torch, name, cfg, dtype):
    def run(lib):
        ps = [lib.tensor(a, dtype=getattr(lib, dtype), requires_grad=True) for a in _init(1)]
        opt = getattr(lib.optim, name)(ps, **cfg)
        for t in range(50):
            opt.zero_grad()
            _loss(lib, ps, t, -1.0 if cfg.get("maximize") else 1.0).backward()
            opt.step()
        return [p.detach().numpy() for p in ps], opt.state_dict()

    return run(torch), run(funcgrad)


# ---- dynamic hyperparameters --------------------------------------------------------------------------
@pytest.mark.parametrize("name", ["SGD", "Adam", "RMSprop", "NAdam"])
def test_changing_lr_does_not_recompile(name):
    w = funcgrad.randn(4, requires_grad=True)
    b = funcgrad.randn(2, 3, requires_grad=True)
    kw = {"momentum": 0.9} if name in ("SGD", "RMSprop") else {}
    opt = getattr(optim, name)([w, b], lr=0.1, **kw)

    def step():
        opt.zero_grad()
        ((w ** 2).sum() + (b ** 2).sum()).backward()
        opt.step()

    step(), step()
    kernel = _kernels[(type(opt), opt._static(opt.param_groups[0]))]
    size = kernel._cache_size()
    sched = optim.lr_scheduler.ExponentialLR(opt, gamma=0.5)
    for _ in range(3):
        before = w.detach().numpy().copy()
        step()
        sched.step()
        assert not np.allclose(before, w.detach().numpy())
    opt.param_groups[0]["lr"] = 1  # an int by hand: still the same kernel
    if "betas" in opt.param_groups[0]:
        opt.param_groups[0]["betas"] = (0.5, 0.9)
    else:
        opt.param_groups[0]["momentum"] = 0.5
    step()
    assert kernel._cache_size() == size


def test_lr_change_takes_effect():
    w = funcgrad.tensor([1.0], requires_grad=True)
    opt = optim.SGD([w], lr=0.1)
    w.grad = funcgrad.tensor([1.0])
    opt.step()
    opt.param_groups[0]["lr"] = 0.5
    opt.step()
    assert w.item() == pytest.approx(1.0 - 0.1 - 0.5)


# ---- the Optimizer API --------------------------------------------------------------------------------
def test_inplace_update_bumps_version_and_keeps_objects():
    w = funcgrad.randn(3, requires_grad=True)
    opt = optim.Adam([w], lr=0.1)
    v0 = w._ver[0]
    (w ** 2).sum().backward()
    opt.step()
    assert w._ver[0] == v0 + 1 and w.is_leaf and w.requires_grad
    st = opt.state[w]
    objs = {k: id(v) for k, v in st.items()}
    assert set(st) == {"step", "exp_avg", "exp_avg_sq"}
    assert st["step"].dtype is funcgrad.float32 and st["step"].shape == ()
    opt.step()
    assert {k: id(v) for k, v in st.items()} == objs and st["step"].item() == 2.0


def test_grad_none_params_are_skipped():
    a, b = funcgrad.ones(2, requires_grad=True), funcgrad.ones(2, requires_grad=True)
    opt = optim.SGD([a, b], lr=0.1, momentum=0.9)
    a.grad = funcgrad.ones(2)
    opt.step()
    assert b.tolist() == [1.0, 1.0] and b not in opt.state
    assert opt.state[a]["momentum_buffer"].tolist() == [1.0, 1.0]


def test_param_groups_have_their_own_options():
    a, b = funcgrad.ones(1, requires_grad=True), funcgrad.ones(1, requires_grad=True)
    opt = optim.SGD([{"params": [a]}, {"params": b, "lr": 0.5}], lr=0.1)
    assert [g["lr"] for g in opt.param_groups] == [0.1, 0.5]
    assert opt.param_groups[1]["params"] == [b] and opt.param_groups[1]["momentum"] == 0
    a.grad, b.grad = funcgrad.ones(1), funcgrad.ones(1)
    opt.step()
    assert a.item() == pytest.approx(0.9) and b.item() == pytest.approx(0.5)


def test_repr_matches_pytorch():
    opt = optim.Adam([funcgrad.zeros(1, requires_grad=True)])
    assert repr(opt) == (
        "Adam (\nParameter Group 0\n    amsgrad: False\n    betas: (0.9, 0.999)\n    capturable: False\n"
        "    decoupled_weight_decay: False\n    differentiable: False\n    eps: 1e-08\n    foreach: None\n"
        "    fused: None\n    lr: 0.001\n    maximize: False\n    weight_decay: 0\n)")


def test_constructor_errors():
    w = funcgrad.zeros(2, requires_grad=True)
    with pytest.raises(ValueError, match="^optimizer got an empty parameter list$"):
        optim.SGD([], lr=0.1)
    with pytest.raises(TypeError, match="^params argument given to the optimizer should be an iterable "
                                        "of Tensors or dicts, but got funcgrad.FloatTensor$"):
        optim.SGD(w, lr=0.1)
    with pytest.raises(ValueError, match="^can't optimize a non-leaf Tensor$"):
        optim.SGD([w * 2], lr=0.1)
    with pytest.raises(TypeError, match="optimizer can only optimize Tensors, but one of the params is int"):
        optim.SGD([w, 3], lr=0.1)
    with pytest.raises(ValueError, match="^Invalid learning rate: -1$"):
        optim.Adam([w], lr=-1)
    with pytest.raises(ValueError, match=r"^Invalid beta parameter at index 1: 1.0$"):
        optim.Adam([w], betas=(0.9, 1.0))
    with pytest.raises(ValueError, match="^Nesterov momentum requires a momentum and zero dampening$"):
        optim.SGD([w], nesterov=True)
    with pytest.warns(UserWarning, match="optimizer contains a parameter group with duplicate parameters"):
        optim.SGD([w, w], lr=0.1)
    opt = optim.SGD([w], lr=0.1)
    with pytest.raises(ValueError, match="^some parameters appear in more than one parameter group$"):
        opt.add_param_group({"params": [w]})
    assert len(opt.param_groups) == 1


def test_zero_grad():
    w = funcgrad.ones(2, requires_grad=True)
    opt = optim.SGD([w], lr=0.1)
    (w * 3).sum().backward()
    g = w.grad
    opt.zero_grad(set_to_none=False)
    assert w.grad is g and g.tolist() == [0.0, 0.0]
    opt.zero_grad()
    assert w.grad is None


def test_closure_runs_with_grad_enabled():
    w = funcgrad.tensor([2.0], requires_grad=True)
    opt = optim.SGD([w], lr=0.25)

    def closure():
        opt.zero_grad()
        loss = (w ** 2).sum()
        loss.backward()
        return loss

    with funcgrad.no_grad():
        loss = opt.step(closure)
    assert loss.item() == 4.0 and w.item() == 1.0


def test_step_hooks():
    w = funcgrad.ones(1, requires_grad=True)
    opt = optim.SGD([w], lr=0.1)
    calls = []
    h1 = opt.register_step_pre_hook(lambda o, a, k: calls.append(("pre", w.item())))
    opt.register_step_post_hook(lambda o, a, k: calls.append(("post", round(w.item(), 4))))
    w.grad = funcgrad.ones(1)
    opt.step()
    h1.remove()
    opt.step()
    assert calls == [("pre", 1.0), ("post", 0.9), ("post", 0.8)]


def test_state_dict_roundtrip_and_resume():
    funcgrad.set_default_dtype(funcgrad.float64)

    def make():
        ps = [funcgrad.tensor(a, requires_grad=True) for a in _init()]
        return ps, optim.Adam([{"params": ps[:2]}, {"params": ps[2:], "lr": 0.01}], lr=0.1, amsgrad=True)

    def steps(ps, opt, n):
        for t in range(n):
            opt.zero_grad()
            _loss(funcgrad, ps, t).backward()
            opt.step()

    pa, oa = make()
    steps(pa, oa, 5)
    sd = oa.state_dict()
    assert sd["param_groups"][0]["params"] == [0, 1] and sd["param_groups"][1]["params"] == [2]
    assert sd["param_groups"][1]["lr"] == 0.01
    assert set(sd["state"]) == {0, 1, 2}
    assert set(sd["state"][0]) == {"step", "exp_avg", "exp_avg_sq", "max_exp_avg_sq"}
    pb, ob = make()
    for p, q in zip(pb, pa):
        p.data = q.detach().clone()
    ob.load_state_dict(sd)
    assert ob.param_groups[1]["params"] == [pb[2]] and ob.param_groups[1]["lr"] == 0.01
    # loaded state is a copy: stepping B leaves A's state untouched
    before = oa.state[pa[0]]["exp_avg"].numpy().copy()
    steps(pb, ob, 5)
    np.testing.assert_array_equal(oa.state[pa[0]]["exp_avg"].numpy(), before)
    steps(pa, oa, 5)
    for p, q in zip(pa, pb):
        np.testing.assert_array_equal(p.detach().numpy(), q.detach().numpy())


def test_load_state_dict_errors():
    a, b = funcgrad.zeros(1, requires_grad=True), funcgrad.zeros(1, requires_grad=True)
    sd = optim.SGD([a, b], lr=0.1).state_dict()
    opt = optim.SGD([a], lr=0.5)
    with pytest.raises(ValueError, match="^loaded state dict contains a parameter group that doesn't "
                                         "match the size of optimizer's group$"):
        opt.load_state_dict(sd)
    sd2 = optim.SGD([{"params": [a]}, {"params": [b]}], lr=0.1).state_dict()
    with pytest.raises(ValueError, match="^loaded state dict has a different number of parameter groups$"):
        opt.load_state_dict(sd2)
    assert opt.param_groups[0]["lr"] == 0.5


def test_float32_params_stay_float32():
    w = funcgrad.randn(3, requires_grad=True)
    for cls in (optim.Adam, optim.NAdam, optim.RAdam, optim.Adagrad, optim.Adadelta, optim.Adamax):
        opt = cls([w], lr=0.01, weight_decay=0.1)
        (w ** 2).sum().backward()
        opt.step()
        assert w.dtype is funcgrad.float32
        assert all(v.dtype is funcgrad.float32 for v in opt.state[w].values())
        w.grad = None


# ---- L-BFGS ---------------------------------------------------------------------------------------------
def _rosen(lib, x, w):
    return (100 * (x[1:] - x[:-1] ** 2) ** 2).sum() + ((1 - x[:-1]) ** 2).sum() + (w ** 2).sum() * 0.5


@pytest.mark.parametrize("line_search", [None, "strong_wolfe"])
def test_lbfgs_converges(line_search):
    x = funcgrad.tensor([-1.2, 1.0, 0.5], dtype=funcgrad.float64, requires_grad=True)
    w = funcgrad.tensor([[0.3, -2.0]], dtype=funcgrad.float64, requires_grad=True)
    opt = optim.LBFGS([x, w], max_iter=20, line_search_fn=line_search)
    scale = funcgrad.tensor([1.0, 3.0, 10.0], dtype=funcgrad.float64)

    def closure():
        opt.zero_grad()
        loss = (scale * (x - 1.0) ** 2).sum() + (w ** 2).sum()
        loss.backward()
        return loss

    for _ in range(2):
        opt.step(closure)
    np.testing.assert_allclose(x.detach().numpy(), [1.0, 1.0, 1.0], atol=1e-6)
    np.testing.assert_allclose(w.detach().numpy(), [[0.0, 0.0]], atol=1e-6)
    assert opt.state[x]["n_iter"] >= 2 and isinstance(opt.state[x]["d"], funcgrad.Tensor)


@pytest.mark.torch
@pytest.mark.parametrize("line_search", [None, "strong_wolfe"])
def test_lbfgs_against_torch(line_search):
    torch = pytest.importorskip("torch")

    def run(lib):
        x = lib.tensor([-1.2, 1.0, 0.5], dtype=lib.float64, requires_grad=True)
        w = lib.tensor([[0.3]], dtype=lib.float64, requires_grad=True)
        opt = lib.optim.LBFGS([x, w], lr=1 if line_search else 0.2, max_iter=10, history_size=5,
                              line_search_fn=line_search)

        def closure():
            opt.zero_grad()
            loss = _rosen(lib, x, w)
            loss.backward()
            return loss

        for _ in range(3):
            opt.step(closure)
        return x.detach().numpy(), opt.state[x]["func_evals"], opt.state[x]["n_iter"]

    (a, fa, na), (b, fb, nb) = run(torch), run(funcgrad)
    np.testing.assert_allclose(b, a, rtol=1e-8)
    assert (fa, na) == (fb, nb)


def test_no_warnings_in_plain_training_loop():
    w = funcgrad.randn(3, requires_grad=True)
    opt = optim.AdamW([w])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for _ in range(3):
            opt.zero_grad()
            (w ** 2).sum().backward()
            opt.step()
