"""Recorded outcomes (tests/_prune_cases.py, tests/_parametrize_cases.py): a case returns a list
of NumPy arrays and strings; :func:`encode` makes it JSON, :func:`assert_same` compares a fresh
list with a recorded (or a live PyTorch) one."""

from __future__ import annotations

import numpy as np


def encode(outcomes: list) -> list:
    return [{"text": o} if isinstance(o, str) else {"dtype": str(o.dtype), "shape": list(o.shape),
                                                    "values": np.asarray(o).ravel().tolist()}
            for o in outcomes]


def decode(recorded: list) -> list:
    return [r["text"] if "text" in r else np.array(r["values"], dtype=r["dtype"]).reshape(r["shape"])
            for r in recorded]


def assert_same(got: list, want: list, rtol: float = 1e-5, atol: float = 1e-6) -> None:
    assert len(got) == len(want), (len(got), len(want))
    for i, (g, w) in enumerate(zip(got, want, strict=True)):
        if isinstance(w, str):
            assert g == w, f"outcome {i}:\n{g}\n!=\n{w}"
            continue
        assert not isinstance(g, str), f"outcome {i}: {g!r} where an array was expected"
        assert (g.dtype, g.shape) == (w.dtype, w.shape), f"outcome {i}: {g.dtype}{g.shape} != {w.dtype}{w.shape}"
        if g.dtype.kind in "biu":
            np.testing.assert_array_equal(g, w, err_msg=f"outcome {i}")
        else:
            np.testing.assert_allclose(g, w, rtol=rtol, atol=atol, equal_nan=True, err_msg=f"outcome {i}")
