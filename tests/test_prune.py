"""``funcgrad.nn.utils.prune`` against PyTorch 2.13: the masks each method draws for a seed (ties
included: PyTorch's CPU topk picks tied entries by its selection algorithm, not by index), pruned
values, gradients through the mask, parameter/buffer/state_dict names and hooks through iterative
pruning and ``remove``, global pruning, errors, and the Pruning Tutorial's printed lines. The cases
live in tests/_prune_cases.py; their PyTorch outcomes are recorded in tests/fixtures/prune/cases.json
(make_fixtures.py there) so the checks run without torch, and are checked live where it is installed."""

from __future__ import annotations

import json
import os

import numpy as np
import pytest

import funcgrad
from funcgrad.nn.utils import prune
from funcgrad.nn.utils._select import topk_set

from ._outcomes import assert_same, decode
from ._prune_cases import CASES

with open(os.path.join(os.path.dirname(__file__), "fixtures", "prune", "cases.json")) as _f:
    RECORDED = json.load(_f)


def test_every_case_is_recorded():
    assert sorted(RECORDED) == sorted(CASES)


@pytest.mark.parametrize("name", sorted(CASES))
def test_matches_recorded_torch(name):
    assert_same(CASES[name](funcgrad), decode(RECORDED[name]))


@pytest.mark.torch
@pytest.mark.parametrize("name", sorted(CASES))
def test_matches_live_torch(name):
    torch = pytest.importorskip("torch")
    assert_same(CASES[name](funcgrad), CASES[name](torch))


@pytest.mark.torch
@pytest.mark.parametrize("seed", range(6))
def test_topk_set_is_torch_topk_on_ties(seed):
    """The selection replay against torch.topk itself on tie-heavy inputs, both of its paths
    (partial_sort when 64·k <= n, nth_element otherwise) and NaN/±0."""
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(seed)
    for _ in range(150):
        n = int(rng.choice([1, 3, 5, 17, 64, 65, 130, 500, 2000]))
        v = rng.integers(0, int(rng.integers(1, 5)), n).astype(np.float32) * rng.choice([1.0, -1.0])
        if rng.random() < 0.2:
            v[rng.integers(0, n, 2)] = np.nan
        k = int(rng.integers(1, n + 1)) if rng.random() < 0.6 else max(1, n // 64 - int(rng.integers(0, 2)))
        for largest in (True, False):
            want = np.sort(torch.topk(torch.from_numpy(v), k, largest=largest).indices.numpy())
            np.testing.assert_array_equal(topk_set(v, k, largest), want)


def test_hook_recomputes_before_forward():
    m = funcgrad.nn.Linear(3, 2)
    prune.l1_unstructured(m, "weight", amount=2)
    with funcgrad.no_grad():
        m.weight_orig.fill_(3.0)
    assert float(m.weight.abs().sum()) != 12.0      # not yet recomputed
    m(funcgrad.ones(1, 3))
    assert float(m.weight.sum()) == 12.0            # 4 of 6 entries kept, each 3.0


def test_optimizer_keeps_training_the_original_parameter():
    """The parameter object moves to weight_orig (an optimizer built before pruning still holds
    it), pruned entries get zero gradient, and remove() gives back the same object."""
    m = funcgrad.nn.Linear(4, 2)
    opt = funcgrad.optim.SGD(m.parameters(), lr=0.1)
    w = m.weight
    prune.random_unstructured(m, "weight", amount=3)
    m(funcgrad.randn(5, 4)).sum().backward()
    assert m.weight_orig is w
    assert bool((w.grad[m.weight_mask == 0] == 0).all())
    opt.step()
    prune.remove(m, "weight")
    assert m.weight is w and bool((m.weight[m.weight == 0] == 0).all())
    assert "weight" in dict(m.named_parameters())
