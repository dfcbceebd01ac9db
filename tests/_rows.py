"""The recorded-row parity tests' runner (tests/test_dim_args.py, test_keepdim_args.py,
test_numpy_interop.py): each row is one expression, run with ``L`` (``torch`` or ``funcgrad``) on
fresh inputs; its outcome, the result described or the exception's type and message (PyTorch's
``torch.`` read as ``funcgrad.``), is recorded from PyTorch 2.13 in
``tests/fixtures/<name>/outcomes.json`` by ``tests/fixtures/<name>/make_fixtures.py`` and compared
live with PyTorch where it is installed. A refused call must leave its inputs as they were.
"""

from __future__ import annotations

import functools
import inspect
import json
import pathlib
import pydoc

try:
    import torch
except ImportError:  # the recorded outcomes stand alone
    torch = None

import funcgrad

FIXTURES = pathlib.Path(__file__).parent / "fixtures"


def _state(L, env):
    """What a refused call must leave as it was: every input tensor's values, version and grad."""
    return {k: (v.tolist(), v._version, v.requires_grad, v.grad) for k, v in env.items()
            if isinstance(v, L.Tensor)}


def run(L, expr, env, describe):
    """``expr`` evaluated in ``env`` (built with ``L``): ``[exception type, message]``, or ``["ok",
    *describe(result, env)]``; then whether a refused call left ``env``'s tensors as they were."""
    before = _state(L, env)
    try:
        r = eval(expr, env)
    except Exception as e:  # noqa: BLE001 (the row's outcome)
        return [type(e).__name__, str(e).replace("torch.", "funcgrad.")], _state(L, env) == before
    return ["ok", *describe(r, env)], True


def shown_signatures(name: str):
    """``inspect.signature`` of ``funcgrad.<name>`` and ``Tensor.<name>``, each checked to show no
    sentinel object (``object at``) there or in ``help()``: a frontend telling a left-out argument
    apart from the same value given shows PyTorch's default."""
    for f in (getattr(funcgrad, name), getattr(funcgrad.Tensor, name)):
        sig = inspect.signature(f)
        assert "object at" not in str(sig) + pydoc.render_doc(f, renderer=pydoc.plaintext), sig
        yield sig


class Recorded:
    """The rows of one test module and their recorded outcomes; ``run(L, expr)`` gives a row's
    outcome and whether a refused call left its inputs unchanged."""

    def __init__(self, name: str, rows: list[str], run):
        self.name, self.rows, self.run = name, rows, run
        self.fixture = FIXTURES / name / "outcomes.json"

    def outcomes(self, L) -> dict:
        """Every row's outcome on ``L``, by row (make_fixtures.py records PyTorch's)."""
        return {r: self.run(L, r)[0] for r in self.rows}

    @functools.cached_property
    def recorded(self) -> dict:
        out = json.loads(self.fixture.read_text())
        assert list(out) == sorted(self.rows), f"rerun tests/fixtures/{self.name}/make_fixtures.py"
        return out

    def check(self, expr: str) -> None:
        """funcgrad's outcome of ``expr`` is the recorded one (and PyTorch's, where installed)."""
        want = self.recorded[expr]
        if torch is not None:  # the record is PyTorch's still
            assert self.run(torch, expr)[0] == want, f"rerun tests/fixtures/{self.name}/make_fixtures.py"
        got, unchanged = self.run(funcgrad, expr)
        assert got == want
        assert unchanged, "a refused call changed its inputs"


# ---- transcripts: a script's lines, recorded from PyTorch 2.13 in the test module ----------------
def check_transcript(got: list, expected: list) -> None:
    """``got`` is ``expected`` line by line (the first line that differs is the failure's)."""
    assert len(got) == len(expected)
    for g, e in zip(got, expected, strict=True):
        assert g == e


def shower(out: list, warns: bool = False):
    """``show(f)``: appends ``f()``'s outcome to ``out`` as a transcript line: its repr (a str as
    it is), or ``ERR <type> <message>``, PyTorch's name for funcgrad's in either; with ``warns``,
    followed by the warnings it raised (without PyTorch's "(Triggered internally ...)" tail)."""
    import warnings

    def show(f):
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always" if warns else "ignore")
            try:
                r = f()
                line = r if isinstance(r, str) else repr(r)
            except Exception as e:  # noqa: BLE001  (the error is the transcript's line)
                line = f"ERR {type(e).__name__} {e}"
        seen = [f"{x.category.__name__}: {str(x.message).split(' (Triggered internally')[0]}" for x in w]
        out.append(line.replace("funcgrad", "torch") + (f" {seen}" if seen else ""))
    return show


def torch_transcript(script):
    """``script(torch)`` with PyTorch 2.13, its own warnings silenced (torch.compile and torch.func
    warn of their internals); the test is skipped where torch is not installed."""
    import warnings

    import pytest
    torch = pytest.importorskip("torch")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return script(torch)
