"""The default device is the CPU, as in PyTorch, also where JAX sees an accelerator; a compiled
step makes no host-to-device copy per call.

On a GPU machine (H200, jax 0.11.2) JAX's own default put every new tensor on the GPU: reprs
printed ``device='cuda:0'``, seeded draws and last bits differed from a CPU machine's, and
``from_numpy`` lost its shared memory — none of which PyTorch does. funcgrad now passes the CPU
to JAX as its default device at import (``jax_default_device``), unless the user gave JAX one
first or ``JAX_PLATFORMS`` names no CPU. CI has no GPU: these tests check the setting, and that a
user's own choice is kept, in child processes."""

from __future__ import annotations

import os
import subprocess
import sys

import jax
import jax.numpy as jnp
import pytest

import funcgrad
from funcgrad import nn, optim

from ._rows import check_transcript, shower, torch_transcript

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _child(code: str, **env) -> str:
    e = {**os.environ, "PYTHONPATH": ROOT, **env}
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=e, timeout=120)
    assert r.returncode == 0, r.stderr[-2000:]
    return r.stdout.strip()


def test_import_makes_the_cpu_the_default_device():
    out = _child("import jax, funcgrad; print(jax.config.jax_default_device, funcgrad.get_default_device(),"
                 " funcgrad.randn(2).device, list(funcgrad.zeros(1).jax().devices())[0].platform)")
    assert out == "cpu cpu cpu cpu"


def test_a_default_device_given_to_jax_first_is_kept():
    code = ("import jax; d = jax.devices('cpu')[1]; jax.config.update('jax_default_device', d)\n"
            "import funcgrad\n"
            "print(jax.config.jax_default_device == d, list(funcgrad.randn(2).jax().devices()) == [d])")
    flags = (os.environ.get("XLA_FLAGS", "") + " --xla_force_host_platform_device_count=2").strip()
    assert _child(code, XLA_FLAGS=flags) == "True True"


def test_results_stay_on_a_committed_operands_device():
    """An op's result is where its operand is: a NumPy twin (``_host.forward``) of a view, a
    reshape, a slice, a cat, a mask, once it had run for the same shapes on the default device,
    used to put the result of a tensor on another device (cuda:0, here cpu:1) on the default one."""
    code = ("import funcgrad as fg\n"
            "b = fg.arange(6., device='cpu:1')\n"
            "fs = [lambda t: t.view(2, 3), lambda t: t.reshape(3, 2), lambda t: t[1:], lambda t: t.unsqueeze(0),\n"
            "      lambda t: t * 2, lambda t: fg.cat([t, t]), lambda t: t[t > 2], lambda t: t.flip(0)]\n"
            "print(sorted({d.id for f in fs for t in (fg.arange(6.), b, fg.arange(6.), b)\n"
            "              for d in f(t).jax().devices() if t is b}))")
    flags = (os.environ.get("XLA_FLAGS", "") + " --xla_force_host_platform_device_count=2").strip()
    assert _child(code, XLA_FLAGS=flags) == "[1]"


def test_set_default_device_none_is_the_cpu_again():
    try:
        funcgrad.set_default_device("cpu")
        assert funcgrad.get_default_device() == funcgrad.device("cpu")
    finally:
        funcgrad.set_default_device(None)
    assert jax.config.jax_default_device == "cpu"
    assert str(funcgrad.get_default_device()) == "cpu"


@pytest.mark.parametrize("make_opt", [lambda ps: optim.Adam(ps, lr=1e-3, weight_decay=0.01),
                                      lambda ps: optim.SGD(ps, lr=0.1, momentum=0.9)],
                         ids=["Adam", "SGD"])
def test_a_compiled_step_copies_nothing_to_the_device(make_opt):
    """The hyperparameters (lr, betas, eps...) were Python floats, copied host-to-device on every
    call: ~60 µs each on an H200 machine, 2.8x a hand-written jax.jit step's time there."""
    funcgrad.manual_seed(0)
    model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 3))
    opt = make_opt(model.parameters())
    x, y = funcgrad.randn(4, 8), funcgrad.randint(0, 3, (4,))

    @funcgrad.jit
    def step(x, y):
        opt.zero_grad()
        loss = nn.functional.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        return loss

    for _ in range(3):
        step(x, y)
    with jax.transfer_guard_host_to_device("disallow"):
        for _ in range(2):
            step(x, y)
    opt.param_groups[0]["lr"] *= 0.5  # a new value is one copy, then none again
    step(x, y)
    with jax.transfer_guard_host_to_device("disallow"):
        loss = step(x, y)
    assert step.num_traces == 1
    assert bool(jnp.isfinite(loss.jax()))


@pytest.mark.parametrize("commit", [False, True], ids=["default-device", "moved"])
def test_an_eager_optimizer_step_copies_nothing_to_an_accelerator(monkeypatch, commit):
    """The eager update passed its hyperparameters and per-parameter ``fresh`` flags as Python
    scalars (11 copies per Adam step over 6 parameters, ~60 µs each on an H200 machine). On an
    accelerator they are now arrays kept there; CI has no accelerator, so the CPU takes that
    path here (``_CPU_TOO``) and must give the same bits as the plain path."""
    from funcgrad.optim import optimizer as O

    def run(there: bool):
        monkeypatch.setattr(O, "_CPU_TOO", there)
        funcgrad.manual_seed(0)
        model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 3))
        if commit:  # as .to("cuda") leaves them: committed to their device
            for p in model.parameters():
                p.data = funcgrad.Tensor._wrap(jax.device_put(p.jax(), jax.devices("cpu")[0]))
        opt = optim.Adam(model.parameters(), lr=1e-3, weight_decay=0.01, amsgrad=True)
        x, y = funcgrad.randn(4, 8), funcgrad.randint(0, 3, (4,))
        for i in range(5):
            opt.zero_grad()
            nn.functional.cross_entropy(model(x), y).backward()
            if there and i >= 2:
                with jax.transfer_guard_host_to_device("disallow"):
                    opt.step()
            else:
                opt.step()
        return [p.detach().numpy().tobytes() for p in model.parameters()]

    assert run(True) == run(False)


def _device_block_transcript(torch):
    """``with torch.device(...)``, as the "Tips for Loading an nn.Module from a Checkpoint" and
    "Changing Default Device" recipes use it (their 'meta' device aside: funcgrad has none)."""
    out = []
    show = shower(out, warns=True)
    d = torch.device("cpu")

    def entered():
        with d as r:
            return r is d, r, torch.get_default_device(), torch.ones(1).device, torch.zeros(2, device="cpu").device
    show(entered)
    show(lambda: torch.get_default_device())

    def set_inside():
        with torch.device("cpu"):
            torch.set_default_device("cpu")
            inside = torch.get_default_device()
        return inside, torch.get_default_device(), torch.randn(1).device

    show(set_inside)

    def nested_and_raising():
        try:
            with torch.device("cpu"), torch.device("cpu:0") as e:
                raise ValueError(str(e))
        except ValueError as err:
            return str(err), torch.get_default_device()
    show(nested_and_raising)
    return out


DEVICE_BLOCK_EXPECTED = [
    "(True, device(type='cpu'), device(type='cpu'), device(type='cpu'), device(type='cpu'))",
    "device(type='cpu')",
    "(device(type='cpu'), device(type='cpu'), device(type='cpu'))",
    "('cpu:0', device(type='cpu'))",
]


def test_a_device_is_a_context_manager_as_pytorchs():
    before = jax.config.jax_default_device
    check_transcript(_device_block_transcript(funcgrad), DEVICE_BLOCK_EXPECTED)
    assert jax.config.jax_default_device == before


@pytest.mark.torch
def test_device_block_transcript_is_pytorchs():
    check_transcript(torch_transcript(_device_block_transcript), DEVICE_BLOCK_EXPECTED)
