"""Which of several equal values an index-returning op picks, as PyTorch's CPU kernels pick it:
``topk`` (``std::partial_sort`` / ``std::nth_element`` + ``std::sort``) and ``kthvalue`` (TH's
quickselect) do not break ties by position, and funcgrad replays their algorithms
(``funcgrad._ops._stl``). One script shows indices, values and gradients for inputs full of ties
(small integers as floats and ints, nan, ``-0.0``/``0.0``; sizes on both sides of topk's
``64·k <= n`` switch and of std::sort's 16-element blocks; dims, largest, sorted); its transcript
was recorded from PyTorch 2.13 into tests/fixtures/ties/transcript.json (make_fixtures.py there) and
is checked live where torch is installed."""

# ruff: noqa: B023  (show() calls each lambda at once, inside its loop iteration)
import json
import os

import numpy as np
import pytest

import funcgrad

from ._rows import check_transcript, shower, torch_transcript

FIXTURE = os.path.join(os.path.dirname(__file__), "fixtures", "ties", "transcript.json")


def _recorded():
    with open(FIXTURE) as f:
        return json.load(f)


def _rows(seed, shape, high, nan=0.0, zeros=False):
    """Small integers (as nested lists), some nan, or -0.0/0.0/1.0."""
    rng = np.random.default_rng(seed)
    a = rng.integers(0, high, shape).astype(np.float64)
    if zeros:
        a = np.where(a == 0, -0.0, np.where(a == 1, 0.0, 1.0))
    if nan:
        a = np.where(rng.random(shape) < nan, np.nan, a)
    return a.tolist()


# (seed, rows, n, high): sizes around topk's partial_sort switch (64·k <= n) and std::sort's blocks
SIZES = [(1, 3, 5, 2), (2, 3, 17, 3), (3, 2, 40, 3), (4, 2, 130, 3), (5, 1, 300, 4)]


def outcomes(torch):
    out = []
    show = shower(out)
    x = torch.tensor([1., 2, 2, 2, 1, 3])
    show(lambda: torch.topk(x, 3))
    show(lambda: torch.kthvalue(x, 2))
    show(lambda: torch.ones(5).topk(2).indices)
    for seed, r, n, high in SIZES:
        x = torch.tensor(_rows(seed, (r, n), high))
        for k in sorted({2, n // 3}):
            show(lambda: torch.topk(x, k).indices.tolist())
            show(lambda: torch.topk(x, k, largest=False, sorted=False).indices.tolist())
            show(lambda: torch.kthvalue(x, k).indices.tolist())
        show(lambda: torch.topk(x.t(), 2, dim=0).indices.tolist())
        show(lambda: torch.kthvalue(x.t(), 1, dim=0, keepdim=True).indices.tolist())
    # nan (above everything) and -0.0 == 0.0
    for seed, kw in [(6, dict(nan=0.3)), (7, dict(zeros=True)), (8, dict(nan=0.2, zeros=True))]:
        x = torch.tensor(_rows(seed, (3, 20), 3, **kw))
        for k in (1, 10):
            show(lambda: torch.topk(x, k))
            show(lambda: torch.topk(x, k, largest=False).indices.tolist())
            show(lambda: torch.kthvalue(x, k))
    # other dtypes
    base = _rows(9, (2, 24), 3)
    for dtype in (torch.float64, torch.int16, torch.bool):
        x = torch.tensor(base).to(dtype)
        show(lambda: torch.topk(x, 5, largest=False, sorted=False).indices.tolist())
        show(lambda: torch.kthvalue(x, 7).indices.tolist())
    # the gradient goes to the chosen entries
    x = torch.tensor(_rows(10, (2, 12), 2), requires_grad=True)
    w = torch.arange(1., 5.)
    (torch.topk(x, 4).values * w).sum().backward()
    show(lambda: x.grad)
    x.grad = None
    torch.kthvalue(x, 5).values.sum().backward()
    show(lambda: x.grad)
    x.grad = None
    (torch.topk(x, 9, largest=False, sorted=False).values * torch.arange(1., 10.)).sum().backward()
    show(lambda: x.grad)
    return out


def test_ties_as_pytorch():
    check_transcript(outcomes(funcgrad), _recorded())


@pytest.mark.torch
def test_recorded_transcript_is_pytorchs():
    check_transcript(torch_transcript(outcomes), _recorded())


@pytest.mark.parametrize("k, largest, sorted", [(3, True, True), (7, False, False)])
def test_compiled_picks_as_eager(k, largest, sorted):
    """Under funcgrad.jit the values are not known when tracing: the replay is chosen in the
    program (a lax.cond on the ties), with the eager frontend's answer."""
    rows = [[1., 2, 2, 2, 1, 3, 0, 2], [0., 0, 0, 0, 0, 0, 0, 0], [5., 4, 3, 2, 1, 0, 7, 6]]
    x = funcgrad.tensor(rows)

    @funcgrad.jit
    def f(x):
        return (funcgrad.topk(x, k, largest=largest, sorted=sorted).indices,
                funcgrad.kthvalue(x, k).indices)

    want = (funcgrad.topk(x, k, largest=largest, sorted=sorted).indices.tolist(),
            funcgrad.kthvalue(x, k).indices.tolist())
    got = f(x)
    assert (got[0].tolist(), got[1].tolist()) == want
