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
# one worker compiles thousands of kernels over the suite: the compile-count bound (which clears
# JAX's caches with a warning, tests/test_caches.py) must not fire in unrelated tests
os.environ.setdefault("FUNCGRAD_MAX_EXECUTABLES", "1000000")
# likewise the fused-backward and compiled-step program bounds (their LRU tests set small ones)
os.environ.setdefault("FUNCGRAD_MAX_PROGRAMS", "1000000")

import funcgrad  # noqa: E402
from funcgrad.autograd import grad_mode  # noqa: E402

# helper scripts run in subprocesses (e.g. with simulated devices): not test modules
collect_ignore_glob = ["_*.py"]
# scripts run by tests/test_scripts.py, the sweep's helper modules and the scripts that record
# fixtures from PyTorch (importing one would re-record them): not doctest modules
collect_ignore = ["scripts", "opinfo", "fixtures"]


@pytest.fixture(autouse=True)
def _clean_state():
    funcgrad.manual_seed(0)
    funcgrad.set_default_dtype(funcgrad.float32)
    yield
    leaked = (grad_mode._state.enabled, grad_mode._state.inference, grad_mode._anomaly[0])
    grad_mode._state.enabled, grad_mode._state.inference = True, False
    grad_mode._anomaly[:] = [False, True]  # (the defaults: PyTorch starts with check_nan on)
    funcgrad.set_default_dtype(funcgrad.float32)
    assert leaked == (True, False, False), f"test leaked grad mode state {leaked}"


def pytest_sessionfinish(session):
    if not hasattr(session.config, "workerinput"):  # the controller (or a run without xdist)
        shutil.rmtree(_CACHE_DIR, ignore_errors=True)


def pytest_terminal_summary(terminalreporter):
    """The OpInfo sweep's totals (tests/test_opinfo_torch.py records them per family; the
    numbers travel with the reports, so this also works with pytest-xdist workers)."""
    import json

    rows = [json.loads(v) for reps in terminalreporter.stats.values() for r in reps
            if getattr(r, "when", None) == "call"
            for k, v in getattr(r, "user_properties", ()) if k == "opinfo_totals"]
    if not rows:
        return
    tot = {k: sum(r[k] for r in rows) for k in ("ops", "samples", "mismatches", "allowlisted", "failing")}
    families = len({r["family"] for r in rows})  # (the big families run in parts)
    terminalreporter.write_line(
        f"OpInfo sweep vs PyTorch: {families} families, {tot['ops']} op keys swept, {tot['samples']} "
        f"samples, {tot['mismatches']} mismatches ({tot['allowlisted']} allowlisted, "
        f"{tot['failing']} failing)")


@pytest.fixture
def node_runs(monkeypatch):
    """The names of the op nodes the engine runs one by one (``OpNode._apply``), in order: those
    not inside a fused program (tests/test_fused_regions.py, test_fused_varying_lengths.py)."""
    from funcgrad import _dispatch
    runs = []
    real = _dispatch.OpNode._apply

    def counted(self, grads, key=None):
        runs.append(self.name())
        return real(self, grads, key)
    monkeypatch.setattr(_dispatch.OpNode, "_apply", counted)
    return runs
