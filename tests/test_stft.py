"""``funcgrad.stft`` / ``istft`` (and the methods) against PyTorch 2.13: values (to float32 FFT
rounding, tests/_spectral_cases.compare), dtypes, shapes, node names, the gradients of the signal and
the window, every argument (hop/win lengths, centering and its pad modes, normalized, onesided,
return_complex, align_to_window, length), complex and batched input, and PyTorch's errors and
once-per-process warnings. Recorded in tests/fixtures/spectral/stft.json (make_fixtures.py there), and
compared with live PyTorch too where it is installed."""

from __future__ import annotations

import json
import pathlib

import numpy as np
import pytest

import funcgrad
from funcgrad._ops import spectral

from . import _spectral_cases as cases

ROWS = cases.stft_rows()
RECORDED = json.loads((pathlib.Path(__file__).parent / "fixtures" / "spectral" / "stft.json").read_text())


def _fresh_warnings():
    """PyTorch warns these once per process: the rows run in order from the first warning on."""
    for seen in (spectral._NO_WINDOW, spectral._NO_WINDOW_I, spectral._NOT_COMPLEX, spectral._SHORT):
        seen[0] = False


@pytest.fixture(scope="module")
def outcomes():
    _fresh_warnings()
    return {k: cases.outcome(funcgrad, f) for k, f in ROWS.items()}


def test_recorded_rows_are_the_rows():
    assert sorted(RECORDED) == sorted(ROWS), "rerun tests/fixtures/spectral/make_fixtures.py"


@pytest.mark.parametrize("name", list(ROWS))
def test_stft_row_is_pytorchs(name, outcomes):
    cases.compare(outcomes[name], RECORDED[name])


@pytest.mark.torch
def test_recorded_rows_are_pytorchs():
    torch = pytest.importorskip("torch")
    got = {k: cases.outcome(torch, f) for k, f in ROWS.items()}
    for k in ROWS:  # (torch's own once-warnings fired in make_fixtures' process only if run first)
        want = dict(RECORDED[k], warnings=got[k]["warnings"])
        cases.compare(got[k], want, 0, 0)


def test_round_trip_and_bitwise_repeat():
    x = funcgrad.tensor(cases.SIG, dtype=funcgrad.float32)
    w = funcgrad.hann_window(8)
    s = funcgrad.stft(x, 8, 2, window=w, return_complex=True)
    y = funcgrad.istft(s, 8, 2, window=w, length=40)
    np.testing.assert_allclose(y.numpy(), cases.SIG, rtol=1e-5, atol=1e-5)
    again = funcgrad.istft(funcgrad.stft(x, 8, 2, window=w, return_complex=True), 8, 2, window=w, length=40)
    assert again.numpy().tobytes() == y.numpy().tobytes()
