"""``funcgrad.nn.utils.parametrize`` and ``parametrizations.orthogonal``/``spectral_norm`` against
PyTorch 2.13: registration (the original keeps its identity, the parametrization takes the module's
training mode), chained parametrizations and ``right_inverse`` assignment, ``cached()``, removal
(buffers stay buffers), PyTorch's errors; orthogonal's three maps with and without the
trivialization on tall, wide and batched weights (initial value, orthogonality, state_dict keys,
gradients); spectral_norm's ``_u``/``_v`` draws, power iteration in training mode only, ``dim``,
gradients, two forwards before one backward; and the Parametrizations Tutorial's printed lines.
The cases live in tests/_parametrize_cases.py; PyTorch's outcomes are recorded in
tests/fixtures/parametrize/cases.json (make_fixtures.py there) so the checks run without torch, and
are checked live where it is installed."""

from __future__ import annotations

import copy
import json
import os
import pickle

import pytest

import funcgrad
from funcgrad import nn
from funcgrad.nn.utils import parametrizations, parametrize

from ._outcomes import assert_same, decode
from ._parametrize_cases import CASES

with open(os.path.join(os.path.dirname(__file__), "fixtures", "parametrize", "cases.json")) as _f:
    RECORDED = json.load(_f)

# LAPACK QR / matrix_exp / solve in float32 (PyTorch's MKL/OpenBLAS and JAX's kernels round apart)
RTOL, ATOL = 1e-4, 1e-5


def test_every_case_is_recorded():
    assert sorted(RECORDED) == sorted(CASES)


@pytest.mark.parametrize("name", sorted(CASES))
def test_matches_recorded_torch(name):
    assert_same(CASES[name](funcgrad), decode(RECORDED[name]), rtol=RTOL, atol=ATOL)


@pytest.mark.torch
@pytest.mark.parametrize("name", sorted(CASES))
def test_matches_live_torch(name):
    torch = pytest.importorskip("torch")
    assert_same(CASES[name](funcgrad), CASES[name](torch), rtol=RTOL, atol=ATOL)


def test_orthogonal_stays_orthogonal_while_training():
    """A few Adam steps on an orthogonal layer: the weight remains orthogonal (the constraint is
    in the parametrization, the optimizer sees only the unconstrained original)."""
    funcgrad.manual_seed(0)
    for mp in ("matrix_exp", "cayley", "householder"):
        m = parametrizations.orthogonal(nn.Linear(4, 6), orthogonal_map=mp)
        opt = funcgrad.optim.Adam(m.parameters(), lr=0.05)
        for _ in range(5):
            opt.zero_grad()
            m(funcgrad.randn(8, 4)).pow(2).sum().backward()
            opt.step()
        Q = m.weight.detach()
        assert float(funcgrad.dist(Q.T @ Q, funcgrad.eye(4))) < 1e-4, mp


def test_spectral_norm_power_iteration_only_in_training():
    funcgrad.manual_seed(1)
    m = parametrizations.spectral_norm(nn.Linear(5, 4))
    sn = m.parametrizations.weight[0]
    u0 = sn._u.clone()
    m.eval()
    _ = m.weight
    assert bool((sn._u == u0).all())
    m.train()
    with funcgrad.no_grad():
        m.parametrizations.weight.original.mul_(-1.0)
    _ = m.weight
    assert not bool((sn._u == u0).all())


def test_parametrized_modules_deepcopy_but_do_not_pickle():
    m = parametrize.register_parametrization(nn.Linear(2, 2), "weight", nn.Identity())
    c = copy.deepcopy(m)
    assert type(c).__name__ == "ParametrizedLinear" and c.weight is not m.weight
    assert bool((c.weight == m.weight).all())
    with pytest.raises(RuntimeError, match="Serialization of parametrized modules is only supported"):
        pickle.dumps(m)


def test_transfer_parametrizations_and_params():
    funcgrad.manual_seed(2)
    a = parametrizations.orthogonal(nn.Linear(3, 3))
    b = nn.Linear(3, 3)
    parametrize.transfer_parametrizations_and_params(a, b)
    assert parametrize.is_parametrized(b, "weight")
    assert b.parametrizations.weight.original is a.parametrizations.weight.original
    assert bool((b.weight == a.weight).all())


def test_pruned_and_parametrized_training_step_compiles():
    """A training step over a pruned layer (forward pre-hook) and a spectral-normalised one (power
    iteration writing its buffers) gives the same losses, parameters and buffers under
    funcgrad.jit as eagerly."""
    from funcgrad.nn.utils import prune

    def run(compiled):
        funcgrad.manual_seed(0)
        m = nn.Sequential(nn.Linear(4, 5), nn.ReLU(), nn.Linear(5, 2))
        prune.l1_unstructured(m[0], "weight", amount=0.5)
        parametrizations.spectral_norm(m[2])
        opt = funcgrad.optim.SGD(m.parameters(), lr=0.1)

        def step(x):
            opt.zero_grad()
            loss = m(x).pow(2).sum()
            loss.backward()
            opt.step()
            return loss.detach()

        f = funcgrad.jit(step) if compiled else step
        funcgrad.manual_seed(1)
        losses = [float(f(funcgrad.randn(3, 4))) for _ in range(4)]
        return losses, m[0].weight_orig.detach(), m[2].parametrizations.weight[0]._u.clone()

    (l0, w0, u0), (l1, w1, u1) = run(False), run(True)
    assert l0 == pytest.approx(l1, rel=1e-5)
    assert bool(funcgrad.allclose(w0, w1, atol=1e-6)) and bool(funcgrad.allclose(u0, u1, atol=1e-6))
