"""PyTorch's argument errors for every Tensor method: each method is called on a 2×2 float
tensor with an argument of the wrong type (``x.name('a')``) and with too many (``x.name(1, 2, 3,
4, 5)``), and must give what PyTorch 2.13 gives: its exception type and whole message (or a
result where PyTorch gives one), leaving ``x`` as it was when it refuses.

The outcomes are recorded from PyTorch in ``tests/fixtures/arg_errors/arg_errors.json`` by
``make_fixtures.py`` there (re-checked against torch where it is installed). ``KNOWN`` lists the
rows where funcgrad still differs (most: a message worded by Python, NumPy or JAX instead of
PyTorch's parser): the test fails for any other row that differs, and for a listed row that no
longer differs (remove it), so the list only shrinks."""

from __future__ import annotations

import json
import pathlib
import re
import warnings

import pytest

import funcgrad

HERE = pathlib.Path(__file__).parent / "fixtures" / "arg_errors"
FIXTURE = HERE / "arg_errors.json"
KNOWN_FILE = HERE / "known.json"

# methods left out: they hang on a device, start a backward, or take any argument by design
SKIP = frozenset({
    "backward", "register_hook", "share_memory_", "pin_memory", "cuda", "numpy", "apply_", "map_",
    "map2_", "record_stream", "resize_", "set_", "storage", "untyped_storage", "requires_grad_",
    "retain_grad", "register_post_accumulate_grad_hook", "xpu", "mtia", "ipu", "to_mkldnn",
    "detach_", "new_empty", "new_zeros", "new_ones", "new_full", "new_tensor", "new_empty_strided",
    "repeat", "expand", "tile", "view", "reshape", "resize_as_", "random_", "uniform_", "normal_",
    "cauchy_", "exponential_", "geometric_", "log_normal_", "bernoulli_"})
CALLS = {"str": ("a",), "many": (1, 2, 3, 4, 5)}


def _message(e: BaseException) -> str:
    text = str(e).replace("funcgrad", "torch")
    return f"{type(e).__name__}: {re.sub(r'0x[0-9a-f]+', '0x...', text)}"


def _outcome(lib, name: str, call: str) -> str:
    x = lib.tensor([[0.5, -1.5], [2.0, 1.0]])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            getattr(x, name)(*CALLS[call])
        except Exception as e:  # noqa: BLE001  (the error is the outcome)
            if x.tolist() != [[0.5, -1.5], [2.0, 1.0]] or x._version != 0:
                return "refused, and changed its input"
            return _message(e)
    return "ok"


def outcomes(torch) -> dict:
    """PyTorch's outcome of each row: the methods PyTorch's Tensor has, but ``SKIP``."""
    names = sorted(n for n in dir(torch.Tensor) if not n.startswith("_") and n not in SKIP
                   and callable(getattr(torch.Tensor, n, None)))
    return {f"{n}/{c}": _outcome(torch, n, c) for n in names for c in CALLS}


def _recorded() -> dict:
    return json.loads(FIXTURE.read_text())


def _known() -> set:
    return set(json.loads(KNOWN_FILE.read_text()))


def test_argument_errors_are_pytorchs():
    expected, known = _recorded(), _known()
    got = {k: _outcome(funcgrad, *k.split("/")) for k in expected}
    differ = {k for k in expected if got[k] != expected[k]}
    new = sorted(differ - known)
    fixed = sorted(known - differ)
    assert not new, "differs from PyTorch:\n" + "\n".join(
        f"{k}\n  torch:    {expected[k][:300]}\n  funcgrad: {got[k][:300]}" for k in new[:20])
    assert not fixed, f"now as PyTorch (remove from {KNOWN_FILE.name}): {fixed}"


def test_known_rows_are_rows():
    assert _known() <= set(_recorded())


@pytest.mark.torch
def test_recorded_outcomes_are_pytorchs():
    torch = pytest.importorskip("torch")
    assert outcomes(torch) == _recorded()
