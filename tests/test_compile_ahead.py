"""Issue 17 (cold first step): the optimizer's first update is compiled on a background thread
from the first ``zero_grad()``/``backward()``, so ``step()`` finds its program compiled. The
program is the one ``step()`` would compile: the same bits, and never a second compile."""

import copy
import hashlib

import numpy as np
import pytest

import funcgrad
from funcgrad import _ahead, nn

from .test_caches import _COMPILES


def _digest(model, opt):
    h = hashlib.sha256()
    for p in model.parameters():
        h.update(np.asarray(p.detach()).tobytes())
    for st in opt.state.values():
        for v in st.values():
            h.update(np.asarray(v).tobytes())
    return h.hexdigest()


def _train(monkeypatch, ahead, opt_cls, sizes, trigger, steps=3, **kw):
    """``steps`` updates of a small MLP (``sizes``: shapes no other test uses); returns the
    digest of parameters and state, and the XLA compiles the first ``step()`` itself made."""
    monkeypatch.setattr(_ahead, "enabled", ahead)
    funcgrad.manual_seed(0)
    a, b, c = sizes
    model = nn.Sequential(nn.Linear(a, b), nn.Tanh(), nn.Linear(b, c))
    x, y = funcgrad.randn(5, a), funcgrad.randn(5, c)
    opt = opt_cls(model.parameters(), **kw)
    first = None
    for i in range(steps):
        if trigger == "zero_grad":
            opt.zero_grad()
        loss = ((model(x) - y) ** 2).mean()
        loss.backward()
        if i == 0:
            assert (opt in _ahead._running) == ahead  # started, not finished-and-forgotten
            _ahead.finish(opt)  # (its compile done: only the step's own compiles are counted)
            with _COMPILES as cnt:
                opt.step()
            first = cnt.n
        else:
            opt.step()
        if trigger != "zero_grad":
            opt.zero_grad()
    return _digest(model, opt), first


OPTIMIZERS = [  # (class, options, layer sizes no other test of this file uses)
    (funcgrad.optim.Adam, {"lr": 1e-2}, (19, 23, 6)),
    (funcgrad.optim.AdamW, {"lr": 1e-2, "weight_decay": 0.1, "amsgrad": True}, (19, 25, 6)),
    (funcgrad.optim.SGD, {"lr": 0.1, "momentum": 0.9}, (19, 27, 6)),
    (funcgrad.optim.NAdam, {"lr": 1e-2}, (19, 29, 6)),
    (funcgrad.optim.Adagrad, {"lr": 0.1}, (19, 31, 6)),
    (funcgrad.optim.RMSprop, {"lr": 1e-2, "centered": True}, (19, 33, 6)),
]


@pytest.mark.parametrize("trigger", ["zero_grad", "backward"])
@pytest.mark.parametrize("opt_cls,kw,sizes", OPTIMIZERS, ids=lambda v: getattr(v, "__name__", ""))
def test_first_step_compiles_nothing_and_gives_the_same_bits(monkeypatch, opt_cls, kw, sizes, trigger):
    sizes = (sizes[0] + (trigger == "backward"), *sizes[1:])  # each case new shapes
    ahead, compiles = _train(monkeypatch, True, opt_cls, sizes, trigger, **kw)
    assert compiles == 0  # the background compile was the step's program
    # the same run without compiling ahead (the step compiles it: a new process's view)
    funcgrad.optim.optimizer._kernels.clear()
    import jax
    jax.clear_caches()
    plain, compiles_plain = _train(monkeypatch, False, opt_cls, sizes, trigger, **kw)
    assert compiles_plain >= 1
    assert ahead == plain


def test_a_wrong_guess_costs_a_compile_and_changes_nothing(monkeypatch):
    """A parameter that requires grad but gets none (not in the loss): the guess had it; the
    step compiles its own program and updates as it would have."""
    results = []
    for ahead in (True, False):
        monkeypatch.setattr(_ahead, "enabled", ahead)
        funcgrad.manual_seed(0)
        used, unused = nn.Linear(17, 3), nn.Linear(4, 4)
        opt = funcgrad.optim.Adam([*used.parameters(), *unused.parameters()], lr=0.1)
        used(funcgrad.randn(2, 17)).sum().backward()
        opt.step()
        assert unused.weight.grad is None and len(opt.state) == 2
        results.append([np.asarray(p.detach()) for p in (*used.parameters(), *unused.parameters())])
    for a, b in zip(*results):
        np.testing.assert_array_equal(a, b)


def test_nothing_is_tried_in_a_trace_after_a_step_or_for_a_copy(monkeypatch):
    monkeypatch.setattr(_ahead, "enabled", True)
    model = nn.Linear(11, 13)
    opt = funcgrad.optim.Adam(model.parameters())
    clone = copy.deepcopy(opt)  # a copy made before the first step: its own, plain optimizer
    assert clone not in _ahead.pending

    @funcgrad.jit
    def step(x):
        opt.zero_grad()
        model(x).sum().backward()
        opt.step()
    step(funcgrad.randn(3, 11))
    assert opt not in _ahead.pending and opt not in _ahead._running  # claimed in the trace: none

    opt2 = funcgrad.optim.SGD(model.parameters(), lr=0.1, momentum=0.5)
    model(funcgrad.randn(3, 11)).sum().backward()
    opt2.step()  # grads set, no zero_grad first: started at the backward, finished by step
    assert opt2 not in _ahead.pending and opt2 not in _ahead._running
    model(funcgrad.randn(3, 11)).sum().backward()
    opt2.zero_grad()
    assert opt2 not in _ahead._running  # after a step nothing more is compiled ahead


def test_lbfgs_and_custom_steps_are_left_alone():
    w = funcgrad.zeros(3, requires_grad=True)
    assert funcgrad.optim.LBFGS([w]) not in _ahead.pending

    class Mine(funcgrad.optim.Optimizer):
        def __init__(self, params):
            super().__init__(params, {})

        def step(self, closure=None):
            pass
    assert Mine([w]) not in _ahead.pending


_EXIT_SCRIPT = r"""
import sys
import funcgrad
from funcgrad import _ahead, nn
m = nn.Sequential(nn.Linear(300, 300), nn.Linear(300, 7))
opt = funcgrad.optim.Adam(m.parameters())
m(funcgrad.randn(2, 300)).sum().backward()
print(_ahead.enabled, opt in _ahead._running)
sys.exit(0)  # leaves while the update may still be compiling: the process must end cleanly
"""


@pytest.mark.parametrize("env,expect", [({}, "True True"), ({"FUNCGRAD_COMPILE_AHEAD": "0"}, "False False")])
def test_switch_and_a_clean_exit_with_a_compile_in_flight(env, expect):
    import os
    import subprocess
    import sys
    e = dict(os.environ, FUNCGRAD_CACHE="0", **env)
    r = subprocess.run([sys.executable, "-c", _EXIT_SCRIPT], capture_output=True, text=True, env=e,
                       timeout=300)
    assert r.returncode == 0, r.stderr[-2000:]
    assert r.stdout.split() == expect.split()
    assert "Traceback" not in r.stderr and "Fatal" not in r.stderr
