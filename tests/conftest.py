"""Fixtures: every test starts and ends in the default state (grad mode on, float32 default,
a fixed seed); a test that leaks grad mode fails."""

import os
import shutil
import tempfile

import pytest

# The suite never reads or writes the user's persistent compilation cache: one fresh directory per
# run, shared by the run's xdist workers (they compile many of the same kernels). Results never
# depend on it (a cache hit loads the executable a compile would have produced).
_CACHE_DIR = os.path.join(tempfile.gettempdir(),
                          f"funcgrad-test-cache-{os.environ.get('PYTEST_XDIST_TESTRUNUID', os.getpid())}")
os.environ.setdefault("FUNCGRAD_CACHE_DIR", _CACHE_DIR)

import funcgrad  # noqa: E402
from funcgrad.autograd import grad_mode  # noqa: E402

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


def pytest_sessionfinish(session):
    if not hasattr(session.config, "workerinput"):  # the controller (or a run without xdist)
        shutil.rmtree(_CACHE_DIR, ignore_errors=True)
