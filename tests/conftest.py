"""Fixtures: every test starts and ends in the default state (grad mode on, float32 default,
a fixed seed); a test that leaks grad mode fails."""

import pytest

import funcgrad
from funcgrad.autograd import grad_mode

# helper scripts run in subprocesses (e.g. with simulated devices): not test modules
collect_ignore_glob = ["_*.py"]


@pytest.fixture(autouse=True)
def _clean_state():
    funcgrad.manual_seed(0)
    funcgrad.set_default_dtype(funcgrad.float32)
    yield
    leaked = (grad_mode._state.enabled, grad_mode._state.inference, grad_mode._anomaly[0])
    grad_mode._state.enabled, grad_mode._state.inference = True, False
    grad_mode._anomaly[:] = [False, False]
    funcgrad.set_default_dtype(funcgrad.float32)
    assert leaked == (True, False, False), f"test leaked grad mode state {leaked}"
