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
    terminalreporter.write_line(
        f"OpInfo sweep vs PyTorch: {len(rows)} families, {tot['ops']} op keys swept, {tot['samples']} "
        f"samples, {tot['mismatches']} mismatches ({tot['allowlisted']} allowlisted, "
        f"{tot['failing']} failing)")
