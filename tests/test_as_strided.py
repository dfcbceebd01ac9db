"""``funcgrad.as_strided`` / ``Tensor.as_strided`` / ``as_strided_`` / ``as_strided_scatter`` against
PyTorch 2.13: views reading the storage at ``offset + Σ i·stride`` (from a root or any view, its
strides and offset absolute), writes through them reaching the base, the gradient of PyTorch's
``as_strided_backward`` (overlapping results accumulate, an overlapping input averages, storage
outside the input gets none), the in-place form (``AsStridedBackward1``), the scatter's gradients
as PyTorch computes them, and PyTorch's errors, each leaving its inputs as they were. Recorded in
tests/fixtures/spectral/as_strided.json (make_fixtures.py there), compared with live PyTorch too."""

from __future__ import annotations

import json
import pathlib

import pytest

import funcgrad

from . import _spectral_cases as cases

ROWS = cases.as_strided_rows()
RECORDED = json.loads((pathlib.Path(__file__).parent / "fixtures" / "spectral" / "as_strided.json").read_text())


def test_recorded_rows_are_the_rows():
    assert sorted(RECORDED) == sorted(ROWS), "rerun tests/fixtures/spectral/make_fixtures.py"


@pytest.mark.parametrize("name", list(ROWS))
def test_as_strided_row_is_pytorchs(name):
    cases.compare(cases.outcome(funcgrad, ROWS[name]), RECORDED[name], 0, 0)


@pytest.mark.torch
@pytest.mark.parametrize("name", list(ROWS))
def test_recorded_row_is_pytorchs(name):
    torch = pytest.importorskip("torch")
    cases.compare(cases.outcome(torch, ROWS[name]), RECORDED[name], 0, 0)


def test_refused_calls_leave_the_input():
    x = funcgrad.arange(10.0)
    v = x[2:]
    for f in (lambda: v.as_strided((9,), (1,)), lambda: v.as_strided_((3,), (-1,)),
              lambda: x.as_strided_scatter(funcgrad.ones(3), (3,), (0,))):
        with pytest.raises(RuntimeError):
            f()
    assert x.tolist() == list(range(10)) and v.shape == (8,) and v.storage_offset() == 2 and x._version == 0
