"""funcgrad.optim.lr_scheduler: lr sequences vs hand-computed values (and torch when installed),
PyTorch's warnings, state_dict, and OneCycleLR's momentum cycling."""

import math
import warnings

import pytest

import funcgrad
from funcgrad.optim import SGD, Adam, lr_scheduler as S


def _opt(lr=1.0, cls=SGD, **kw):
    return cls([funcgrad.zeros(1, requires_grad=True)], lr=lr, **kw)


def _seq(opt, sched, n, step=None):
    out = []
    for _ in range(n):
        out.append(opt.param_groups[0]["lr"])
        opt.step()
        (step or sched.step)()
    return out


def test_step_and_multistep():
    o = _opt()
    assert _seq(o, S.StepLR(o, step_size=2, gamma=0.5), 6) == [1.0, 1.0, 0.5, 0.5, 0.25, 0.25]
    o = _opt()
    seq = _seq(o, S.MultiStepLR(o, milestones=[1, 3, 3], gamma=0.1), 5)
    assert seq == pytest.approx([1.0, 0.1, 0.1, 0.001, 0.001])


def test_exponential_linear_constant_polynomial():
    o = _opt(0.5)
    assert _seq(o, S.ExponentialLR(o, gamma=0.9), 4) == pytest.approx([0.5, 0.45, 0.405, 0.3645])
    o = _opt()
    seq = _seq(o, S.LinearLR(o, start_factor=0.25, total_iters=3), 6)
    assert seq == pytest.approx([0.25, 0.5, 0.75, 1.0, 1.0, 1.0])
    o = _opt()
    assert _seq(o, S.ConstantLR(o, factor=0.5, total_iters=2), 4) == pytest.approx([0.5, 0.5, 1.0, 1.0])
    o = _opt()
    seq = _seq(o, S.PolynomialLR(o, total_iters=4, power=2.0), 6)
    assert seq == pytest.approx([1.0, 0.5625, 0.25, 0.0625, 0.0, 0.0], abs=1e-12)


def test_cosine_annealing_matches_closed_form():
    o = _opt(0.1)
    seq = _seq(o, S.CosineAnnealingLR(o, T_max=10, eta_min=0.01), 25)
    # within one period the recursive form equals the closed form; after T_max it goes back up
    closed = [0.01 + 0.09 * (1 + math.cos(math.pi * t / 10)) / 2 for t in range(25)]
    assert seq == pytest.approx(closed, abs=1e-12)


def test_cosine_warm_restarts():
    o = _opt(1.0)
    seq = _seq(o, S.CosineAnnealingWarmRestarts(o, T_0=2, T_mult=2), 7)
    expected = [1.0, 0.5, 1.0, (1 + math.cos(math.pi / 4)) / 2, 0.5, (1 + math.cos(3 * math.pi / 4)) / 2, 1.0]
    assert seq == pytest.approx(expected)


def test_lambda_and_multiplicative():
    o = _opt(2.0)
    assert _seq(o, S.LambdaLR(o, lambda e: 1 / (e + 1)), 3) == pytest.approx([2.0, 1.0, 2 / 3])
    o = _opt(2.0)
    assert _seq(o, S.MultiplicativeLR(o, lambda e: 0.5), 3) == pytest.approx([2.0, 1.0, 0.5])
    with pytest.raises(TypeError, match="lr_lambda should be a function, but got int"):
        S.MultiplicativeLR(_opt(), 3)


def test_reduce_on_plateau():
    o = _opt(1.0)
    s = S.ReduceLROnPlateau(o, mode="min", factor=0.5, patience=1, cooldown=1, min_lr=0.2)
    lrs = []
    for loss in [5, 4, 4, 4, 4, 4, 4, 4, 4]:
        s.step(loss)
        lrs.append(o.param_groups[0]["lr"])
    assert lrs == [1.0, 1.0, 1.0, 0.5, 0.5, 0.5, 0.25, 0.25, 0.25]
    s2 = S.ReduceLROnPlateau(_opt(), mode="max", threshold=0.1, threshold_mode="abs", patience=0)
    s2.step(1.0)
    s2.step(1.05)  # not better by more than 0.1
    assert s2.get_last_lr() == [0.1]
    with pytest.raises(ValueError, match="^Factor should be < 1.0.$"):
        S.ReduceLROnPlateau(_opt(), factor=1.0)
    with pytest.raises(ValueError, match="^mode avg is unknown!$"):
        S.ReduceLROnPlateau(_opt(), mode="avg")


def test_sequential_and_chained():
    o = _opt(1.0)
    s1 = S.ConstantLR(o, factor=0.1, total_iters=2)
    s2 = S.ExponentialLR(o, gamma=0.9)
    seq = _seq(o, S.SequentialLR(o, schedulers=[s1, s2], milestones=[2]), 5)
    assert seq == pytest.approx([0.1, 0.1, 1.0, 0.9, 0.81])
    o = _opt(1.0)
    c = S.ChainedScheduler([S.ConstantLR(o, factor=0.1, total_iters=2), S.ExponentialLR(o, gamma=0.9)])
    assert _seq(o, c, 4) == pytest.approx([0.1, 0.09, 0.81, 0.729])
    with pytest.raises(ValueError, match="expects at least one scheduler"):
        S.SequentialLR(o, schedulers=[], milestones=[])


def test_one_cycle_lr_and_momentum():
    o = _opt(0.1, momentum=0.9)
    s = S.OneCycleLR(o, max_lr=1.0, total_steps=10, anneal_strategy="linear")
    lrs, moms = [], []
    for _ in range(10):
        lrs.append(o.param_groups[0]["lr"])
        moms.append(o.param_groups[0]["momentum"])
        o.step()
        s.step()
    # warm-up over pct_start * total - 1 = 2 steps from max_lr/25, then down to initial/1e4
    assert lrs[:3] == pytest.approx([0.04, 0.52, 1.0])
    assert lrs[-1] == pytest.approx(0.04 / 1e4)
    assert moms[:3] == pytest.approx([0.95, 0.9, 0.85]) and moms[-1] == pytest.approx(0.95)
    o = _opt(0.1, cls=Adam)
    S.OneCycleLR(o, max_lr=0.01, total_steps=5, three_phase=True)
    assert o.param_groups[0]["betas"] == (0.95, 0.999)
    with pytest.raises(ValueError, match="You must define either total_steps OR"):
        S.OneCycleLR(_opt(), max_lr=1.0)


def test_warns_when_stepped_before_optimizer():
    o = _opt()
    s = S.StepLR(o, step_size=1)
    with pytest.warns(UserWarning, match=r"Detected call of `lr_scheduler.step\(\)` before "
                                         r"`optimizer.step\(\)`\. In PyTorch 1\.1\.0 and later"):
        s.step()
    o = _opt()
    s = S.StepLR(o, step_size=1)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        o.step()
        s.step()


def test_get_lr_outside_step_warns():
    s = S.StepLR(_opt(), step_size=1)
    with pytest.warns(UserWarning, match="please use `get_last_lr\\(\\)`"):
        s.get_lr()


def test_state_dict_roundtrip():
    o = _opt()
    s = S.StepLR(o, step_size=2, gamma=0.5)
    _seq(o, s, 3)
    sd = s.state_dict()
    assert "optimizer" not in sd and sd["last_epoch"] == 3 and sd["base_lrs"] == [1.0]
    o2 = _opt(0.5)
    s2 = S.StepLR(o2, step_size=7)
    s2.load_state_dict(sd)
    assert (s2.last_epoch, s2.step_size, s2.get_last_lr()) == (3, 2, [0.5])


def test_initial_lr_required_when_resuming():
    with pytest.raises(KeyError, match="param 'initial_lr' is not specified in param_groups\\[0\\]"):
        S.StepLR(_opt(), step_size=1, last_epoch=3)


def test_not_an_optimizer():
    with pytest.raises(TypeError, match="^int is not an Optimizer$"):
        S.StepLR(3, step_size=1)


# ---- against torch --------------------------------------------------------------------------------------
SCHEDS = [
    ("StepLR", dict(step_size=3, gamma=0.7)),
    ("MultiStepLR", dict(milestones=[2, 5, 5, 9], gamma=0.5)),
    ("ExponentialLR", dict(gamma=0.93)),
    ("CosineAnnealingLR", dict(T_max=7, eta_min=0.001)),
    ("CosineAnnealingWarmRestarts", dict(T_0=3, T_mult=2, eta_min=0.01)),
    ("LinearLR", dict(start_factor=0.2, end_factor=0.9, total_iters=6)),
    ("ConstantLR", dict(factor=0.3, total_iters=4)),
    ("PolynomialLR", dict(total_iters=8, power=1.5)),
    ("OneCycleLR", dict(max_lr=0.5, total_steps=25)),
    ("OneCycleLR", dict(max_lr=[0.5, 0.2], total_steps=25, three_phase=True, anneal_strategy="linear")),
]


@pytest.mark.torch
@pytest.mark.parametrize("name,kw", SCHEDS, ids=[f"{n}-{i}" for i, (n, _) in enumerate(SCHEDS)])
def test_against_torch(name, kw):
    torch = pytest.importorskip("torch")

    def run(lib):
        a, b = lib.zeros(1, requires_grad=True), lib.zeros(1, requires_grad=True)
        opt = lib.optim.SGD([{"params": [a]}, {"params": [b], "lr": 0.3}], lr=0.1, momentum=0.9)
        s = getattr(lib.optim.lr_scheduler, name)(opt, **kw)
        out = []
        for _ in range(24):
            opt.step()
            s.step()
            out.append((s.get_last_lr(), [g["momentum"] for g in opt.param_groups]))
        return out, s.state_dict()

    (a, sa), (b, sb) = run(torch), run(funcgrad)
    assert a == b
    assert sorted(sa) == sorted(sb)


@pytest.mark.torch
def test_plateau_and_composites_against_torch():
    torch = pytest.importorskip("torch")
    metrics = [3, 2, 2, 2.5, 2, 2, 2, 1.9999, 1, 1, 1, 1, 1, 1]

    def run(lib):
        L = lib.optim.lr_scheduler
        opt = lib.optim.SGD([lib.zeros(1, requires_grad=True)], lr=1.0)
        p = L.ReduceLROnPlateau(opt, factor=0.5, patience=1, cooldown=2, threshold=1e-3)
        out = []
        for m in metrics:
            opt.step()
            p.step(m)
            out.append(p.get_last_lr())
        opt2 = lib.optim.SGD([lib.zeros(1, requires_grad=True)], lr=1.0)
        seq = L.SequentialLR(opt2, [L.LinearLR(opt2, 0.1, total_iters=3), L.CosineAnnealingLR(opt2, 5)],
                             milestones=[3])
        opt3 = lib.optim.SGD([lib.zeros(1, requires_grad=True)], lr=1.0)
        ch = L.ChainedScheduler([L.StepLR(opt3, 2, 0.5), L.ExponentialLR(opt3, 0.9)])
        for _ in range(12):
            opt2.step(), opt3.step()
            seq.step(), ch.step()
            out.append((seq.get_last_lr(), ch.get_last_lr()))
        return out

    assert run(torch) == run(funcgrad)
