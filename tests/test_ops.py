"""The op table against its spec table (see tests/op_specs): coverage, forward, gradient.

Each row's forward is compared with its jnp reference. Its gradient is compared with
``jax.grad`` of the reference only where PyTorch does not check it in the same run: the mirror
sweep (tests/test_opinfo_torch.py, ``mirror:*``) runs every row unchanged on PyTorch and compares
the float64 gradient with PyTorch's, which is the oracle; ``jax.grad`` of a jnp reference is not
(and it took more than half of this file's time). With PyTorch installed, a row still runs its
backward here, in its own dtype, and checks each gradient's shape and dtype.
"""

from __future__ import annotations

import importlib
import pkgutil

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import funcgrad
from funcgrad._ops import OPS

from . import op_specs
from .opinfo.allowlist import TORCH, gradient_checked_by_torch


def _all_specs():
    specs = []
    for m in pkgutil.iter_modules(op_specs.__path__):
        mod = importlib.import_module(f"{op_specs.__name__}.{m.name}")
        specs.extend(getattr(mod, "SPECS", []))
    return specs


SPECS = _all_specs()
# Ops exercised through other ops' specs (internal kernels with their own tests).
INTERNAL = {"copy_slices", "to_device"}


def test_every_op_has_a_spec():
    covered = {s.op for s in SPECS}
    missing = sorted(set(OPS) - covered - INTERNAL)
    assert not missing, f"ops without a spec row in tests/op_specs: {missing}"
    unknown = sorted(covered - set(OPS))
    assert not unknown, f"spec rows naming ops that are not in the op table: {unknown}"


def test_rows_whose_gradient_torch_checks_are_mirrored():
    """The premise of skipping jax.grad: every such row is a mirror-sweep sample with the same
    differentiated inputs."""
    if not TORCH:
        pytest.skip("PyTorch is not installed: every row's gradient is compared with jax.grad here")
    from .opinfo import mirror
    mirrored = {(s.op, tuple(s.grad)) for g in mirror.GROUPS.values() for s in g}
    for spec in SPECS:
        if gradient_checked_by_torch(spec) and not spec.nondiff:
            floats = [i for i, a in enumerate(spec.make_inputs()) if np.issubdtype(a.dtype, np.floating)]
            gidx = tuple(spec.grad if spec.grad is not None else floats)
            assert (spec.op, gidx) in mirrored, (spec.op, gidx)


def _pick(r, out):
    if isinstance(r, tuple):
        return r[out or 0]
    return r


def _ids():
    seen = {}
    out = []
    for s in SPECS:
        k = s.id or s.op
        seen[k] = seen.get(k, 0) + 1
        out.append(k if seen[k] == 1 else f"{k}-{seen[k]}")
    return out


@pytest.mark.parametrize("spec", SPECS, ids=_ids())
def test_op(spec):
    arrs = spec.make_inputs()
    float_idx = [i for i, a in enumerate(arrs) if np.issubdtype(a.dtype, np.floating)]
    gidx = list(spec.grad if spec.grad is not None else float_idx)
    if spec.nondiff:
        gidx = []
    ts = [funcgrad.tensor(a, requires_grad=i in gidx) for i, a in enumerate(arrs)]
    got = _pick(spec.fg(*ts), spec.out)
    want = _pick(spec.ref(*[jnp.asarray(a) for a in arrs]), spec.out)
    np.testing.assert_allclose(np.asarray(got.detach()._value), np.asarray(want),
                               rtol=spec.rtol, atol=spec.atol)
    assert got.dtype.np == np.asarray(want).dtype, (got.dtype, np.asarray(want).dtype)
    if not gidx:
        assert got.grad_fn is None and not got.requires_grad
        return
    if spec.grad_fn is not None:
        assert type(got.grad_fn).__name__ == spec.grad_fn  # (the class: name() of a hand-written node is namespaced)
    cot = np.random.default_rng(1).standard_normal(got.shape)
    gs = funcgrad.autograd.grad(got, [ts[i] for i in gidx], funcgrad.tensor(cot), allow_unused=True)
    if gradient_checked_by_torch(spec):  # (values: the mirror sweep's, against PyTorch)
        for i, g in zip(gidx, gs, strict=True):
            if g is not None:
                assert g.shape == ts[i].shape and g.dtype == ts[i].dtype, (i, g.shape, g.dtype)
        return

    def loss(*diff):
        full = [jnp.asarray(a) for a in arrs]
        for i, d in zip(gidx, diff):
            full[i] = d
        return jnp.sum(_pick(spec.ref(*full), spec.out) * cot)

    want_g = jax.grad(loss, argnums=tuple(range(len(gidx))))(*[jnp.asarray(arrs[i]) for i in gidx])
    for i, g, w in zip(gidx, gs, want_g):
        g = np.zeros_like(arrs[i]) if g is None else np.asarray(g._value)
        np.testing.assert_allclose(g, np.asarray(w), rtol=spec.rtol, atol=spec.atol,
                                   err_msg=f"gradient of input {i}")
