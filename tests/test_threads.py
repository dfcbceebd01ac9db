"""Threads: grad mode is per thread; independent models trained from two threads at once give
the sequential results, eagerly and as compiled steps (``funcgrad.jit``)."""

import threading

import jax
import numpy as np

import funcgrad
from funcgrad import nn, optim

STEPS = 10


def _run_threads(*fns):
    """Run ``fns`` in threads started together; re-raise the first exception."""
    barrier = threading.Barrier(len(fns))
    errors, results = [], [None] * len(fns)

    def wrap(i, fn):
        try:
            barrier.wait()
            results[i] = fn()
        except BaseException as e:  # noqa: BLE001 - reported in the main thread
            errors.append(e)

    threads = [threading.Thread(target=wrap, args=(i, f)) for i, f in enumerate(fns)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    if errors:
        raise errors[0]
    assert not any(t.is_alive() for t in threads)
    return results


def test_grad_mode_is_per_thread():
    inside, release = threading.Event(), threading.Event()
    seen = {}

    def a():
        with funcgrad.no_grad():
            inside.set()
            release.wait(30)
            seen["a"] = funcgrad.is_grad_enabled()
        seen["a_after"] = funcgrad.is_grad_enabled()

    def b():
        inside.wait(30)
        seen["b"] = funcgrad.is_grad_enabled()
        x = funcgrad.ones(2, requires_grad=True)
        seen["b_req"] = (x * 2).requires_grad
        with funcgrad.inference_mode():
            seen["b_inf"] = funcgrad.is_inference_mode_enabled()
        release.set()

    _run_threads(a, b)
    assert seen == {"a": False, "a_after": True, "b": True, "b_req": True, "b_inf": True}
    assert funcgrad.is_grad_enabled() and not funcgrad.is_inference_mode_enabled()


def test_set_grad_enabled_in_a_thread_does_not_leak():
    def off():
        funcgrad.set_grad_enabled(False)
        return funcgrad.is_grad_enabled()

    assert _run_threads(off) == [False]
    assert funcgrad.is_grad_enabled()


def _setup(seed, width):
    funcgrad.manual_seed(seed)
    model = nn.Sequential(nn.Linear(4, width), nn.Tanh(), nn.Linear(width, 1))
    opt = optim.Adam(model.parameters(), lr=1e-2)
    x, t = funcgrad.randn(16, 4), funcgrad.randn(16, 1)
    return model, opt, x, t


def _params(model):
    return [np.asarray(p.detach()._value).copy() for p in model.parameters()]


def _eager_train(model, opt, x, t):
    losses = []
    for _ in range(STEPS):
        opt.zero_grad()
        loss = ((model(x) - t) ** 2).mean()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return losses


def test_two_threads_train_eagerly_like_sequentially():
    seq = [_setup(1, 8), _setup(2, 12)]
    seq_losses = [_eager_train(*s) for s in seq]
    par = [_setup(1, 8), _setup(2, 12)]
    par_losses = _run_threads(lambda: _eager_train(*par[0]), lambda: _eager_train(*par[1]))
    assert par_losses == seq_losses
    for s, p in zip(seq, par):
        for a, b in zip(_params(s[0]), _params(p[0])):
            np.testing.assert_array_equal(a, b)


def _compiled_train(model, opt, x, t):
    @funcgrad.jit
    def step(x, t):
        opt.zero_grad()
        loss = ((model(x) - t) ** 2).mean()
        loss.backward()
        opt.step()
        return loss

    return [step(x, t).item() for _ in range(STEPS)]


def test_two_compiled_steps_from_two_threads():
    """Regression: without the bridge's call lock, two steps traced at the same moment swapped
    tracers into the shared global RNG cell and restored each other's tracer (a leaked tracer,
    then ``UnexpectedTracerError``); a fresh pair of steps each trial traces concurrently."""
    seq = [_setup(1, 8), _setup(2, 12)]
    seq_losses = [_compiled_train(*s) for s in seq]
    for _ in range(2):
        par = [_setup(1, 8), _setup(2, 12)]
        par_losses = _run_threads(lambda: _compiled_train(*par[0]), lambda: _compiled_train(*par[1]))
        np.testing.assert_allclose(par_losses, seq_losses, rtol=1e-6)
        for s, p in zip(seq, par):
            for a, b in zip(_params(s[0]), _params(p[0])):
                np.testing.assert_allclose(a, b, rtol=1e-6)
        assert not isinstance(funcgrad.default_generator._cell.value, jax.core.Tracer)
    funcgrad.randn(2)  # the global RNG still works eagerly
