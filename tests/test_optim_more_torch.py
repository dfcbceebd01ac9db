"""PyTorch parity of ``optim.Rprop``, ``optim.ASGD``, ``lr_scheduler.CyclicLR`` and
``optim.swa_utils`` (``AveragedModel``, ``SWALR``, ``update_bn``): trajectories, states and
schedules over several steps, against real torch."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import funcgrad
from funcgrad import optim

from .test_optim import check_against_torch

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.torch

CASES = [
    ("Rprop", dict(lr=0.05)),
    ("Rprop", dict(lr=0.01, etas=(0.3, 1.5), step_sizes=(1e-3, 0.2), maximize=True)),
    ("ASGD", dict(lr=0.05)),
    ("ASGD", dict(lr=0.05, t0=10, lambd=1e-2, weight_decay=0.1, alpha=0.6)),
    ("ASGD", dict(lr=0.02, t0=0, maximize=True)),
]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("name,cfg", CASES, ids=[f"{n}-{i}" for i, (n, _) in enumerate(CASES)])
def test_trajectory_and_state_match_torch(name, cfg, dtype):
    check_against_torch(torch, name, cfg, dtype, f32_tol=dict(rtol=1e-5, atol=1e-6), key_order=True)


def test_repr_and_errors_match_torch():
    for name, kw in [("Rprop", {}), ("ASGD", dict(weight_decay=0.1))]:
        pa, pb = funcgrad.zeros(2, requires_grad=True), torch.zeros(2, requires_grad=True)
        assert repr(getattr(optim, name)([pa], **kw)) == repr(getattr(torch.optim, name)([pb], **kw))
    for name, kw in [("Rprop", dict(lr=-1)), ("Rprop", dict(etas=(1.5, 1.2))), ("ASGD", dict(lr=-1)),
                     ("ASGD", dict(weight_decay=-1))]:
        with pytest.raises(ValueError) as eb:
            getattr(torch.optim, name)([torch.zeros(1, requires_grad=True)], **kw)
        with pytest.raises(ValueError) as ea:
            getattr(optim, name)([funcgrad.zeros(1, requires_grad=True)], **kw)
        assert str(ea.value) == str(eb.value)


def _cyclic(lib, opt_name, okw, kw, n=25):
    p = lib.zeros(1, requires_grad=True)
    opt = getattr(lib.optim, opt_name)([p], **okw)
    s = lib.optim.lr_scheduler.CyclicLR(opt, **kw)
    out = [(s.get_last_lr()[0], opt.param_groups[0].get("momentum"), opt.param_groups[0].get("betas"))]
    for _ in range(n):
        opt.step()
        s.step()
        g = opt.param_groups[0]
        out.append((s.get_last_lr()[0], g.get("momentum"), g.get("betas")))
    sd = s.state_dict()
    return out, sorted(sd), sd["_scale_fn_custom"]


CYCLIC = [
    ("SGD", dict(lr=0.1, momentum=0.9), dict(base_lr=0.01, max_lr=0.1, step_size_up=4)),
    ("SGD", dict(lr=0.1, momentum=0.9), dict(base_lr=0.01, max_lr=0.1, step_size_up=3, step_size_down=5,
                                             mode="triangular2")),
    ("Adam", dict(lr=0.1), dict(base_lr=0.01, max_lr=0.1, step_size_up=3, mode="exp_range", gamma=0.9)),
    ("SGD", dict(lr=0.1), dict(base_lr=0.01, max_lr=0.1, step_size_up=3, cycle_momentum=False,
                               scale_fn=lambda x: 0.5 ** x, scale_mode="iterations")),
]


@pytest.mark.parametrize("opt_name,okw,kw", CYCLIC, ids=[str(i) for i in range(len(CYCLIC))])
def test_cyclic_lr_matches_torch(opt_name, okw, kw):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert _cyclic(funcgrad, opt_name, okw, kw) == _cyclic(torch, opt_name, okw, kw)


def test_cyclic_lr_errors_match_torch():
    for lib_kw in [dict(mode="nope"), dict(cycle_momentum=True)]:
        msgs = []
        for lib in (torch, funcgrad):
            opt = lib.optim.Adagrad([lib.zeros(1, requires_grad=True)]) if "cycle_momentum" in lib_kw else \
                lib.optim.SGD([lib.zeros(1, requires_grad=True)], lr=0.1, momentum=0.9)
            with pytest.raises(ValueError) as e:
                lib.optim.lr_scheduler.CyclicLR(opt, 0.01, 0.1, **lib_kw)
            msgs.append(str(e.value))
        assert msgs[0] == msgs[1]


@pytest.mark.parametrize("avg,strategy", [("swa", "cos"), ("swa", "linear"), ("ema_multi", "cos"),
                                          ("ema_fn", "linear"), ("swa_multi", "cos"), ("swa_buffers", "linear")])
def test_swa_training_matches_torch(avg, strategy):
    rs = np.random.RandomState(0)
    xs = [rs.randn(8, 3).astype(np.float32) for _ in range(6)]
    ys = [rs.randn(8, 1).astype(np.float32) for _ in range(6)]

    def run(lib):
        lib.manual_seed(0)
        nn, su = lib.nn, lib.optim.swa_utils
        model = nn.Sequential(nn.Linear(3, 4), nn.BatchNorm1d(4), nn.ReLU(), nn.Linear(4, 1))
        kw = {"swa": {}, "ema_multi": dict(multi_avg_fn=su.get_ema_multi_avg_fn(0.9)),
              "ema_fn": dict(avg_fn=su.get_ema_avg_fn(0.8)),
              "swa_multi": dict(multi_avg_fn=su.get_swa_multi_avg_fn()),
              "swa_buffers": dict(use_buffers=True)}[avg]
        swa_model = su.AveragedModel(model, **kw)
        opt = lib.optim.SGD(model.parameters(), lr=0.1, momentum=0.5)
        sched = su.SWALR(opt, swa_lr=0.02, anneal_epochs=3, anneal_strategy=strategy)
        lrs = []
        for epoch in range(4):
            for x, y in zip(xs, ys):
                opt.zero_grad()
                ((model(lib.tensor(x)) - lib.tensor(y)) ** 2).mean().backward()
                opt.step()
            if epoch >= 1:
                swa_model.update_parameters(model)
                sched.step()
            lrs.append(sched.get_last_lr()[0])
        su.update_bn([(lib.tensor(x), lib.tensor(y)) for x, y in zip(xs, ys)], swa_model)
        out = swa_model(lib.tensor(xs[0]))
        sd = {k: v.detach().numpy().copy() for k, v in swa_model.state_dict().items()}
        return lrs, sd, out.detach().numpy(), sorted(sched.state_dict())

    (la, sa, oa, ka), (lb, sb, ob, kb) = run(torch), run(funcgrad)
    assert la == lb and ka == kb
    assert list(sa) == list(sb)
    for k in sa:
        assert sb[k].dtype == sa[k].dtype, k
        np.testing.assert_allclose(sb[k], sa[k], rtol=1e-5, atol=1e-6, err_msg=k)
    np.testing.assert_allclose(ob, oa, rtol=1e-5, atol=1e-6)


def test_swa_errors_match_torch():
    for lib in (torch, funcgrad):
        su = lib.optim.swa_utils
        opt = lib.optim.SGD([lib.zeros(1, requires_grad=True)], lr=0.1)
        for bad, msg in [(dict(anneal_strategy="step"), "anneal_strategy must be one of 'cos' or 'linear', "
                                                        "instead got step"),
                         (dict(anneal_epochs=-1), "anneal_epochs must be equal or greater than 0, got -1")]:
            with pytest.raises(ValueError) as e:
                su.SWALR(opt, 0.01, **bad)
            assert str(e.value) == msg
        with pytest.raises(ValueError, match=r"Invalid decay value 2 provided. Please provide a value in \[0,1\]"):
            su.get_ema_avg_fn(2)
        with pytest.raises(AssertionError, match="Only one of avg_fn and multi_avg_fn should be provided"):
            su.AveragedModel(lib.nn.Linear(1, 1), avg_fn=su.get_swa_avg_fn(), multi_avg_fn=su.get_swa_multi_avg_fn())
