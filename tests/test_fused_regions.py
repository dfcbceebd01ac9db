"""Fused regions: where a backward graph does not qualify as a whole (a custom ``Function`` or
a checkpoint in it, hooks or ``retain_grad`` on some nodes, several roots), the engine still
runs each group of ops it can run together as ONE program (``fused.run_region``) and only the
rest node by node. Spec table: each row builds the same graph in funcgrad and in PyTorch (the
oracle), and states how many op nodes still run one by one."""

import numpy as np
import pytest

import funcgrad
from funcgrad.autograd import fused


def _double(lib):
    class Double(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, g):
            return g * 2
    return Double.apply


def _custom_in_the_middle(lib, x):
    c = x.exp()
    u = _double(lib)(c)
    return [(u.sin() * (c * 3).cos()).sum()]


def _partial_slot(lib, x):  # the second region starts at cos; exp joins it holding the Function's gradient
    d = _double(lib)
    c = x.exp()
    return [(d(c.cos()) + d(c)).sum()]


def _hook_on_an_intermediate(lib, x):
    y = x.sin()
    y.register_hook(lambda g: g * 2)
    return [(y.exp() * 3).sum()]


def _retain_grad(lib, x):
    y = x * 2
    y.retain_grad()
    _retain_grad.kept = y
    return [y.tanh().pow(2).sum()]


def _two_roots(lib, x):
    h = x.tanh()
    return [(h * 2).sum(), h.exp().mean()]


def _checkpoint(lib, x):
    w = _checkpoint.w[lib.__name__]
    y = lib.utils.checkpoint.checkpoint(lambda t: (t @ w).relu().sin(), x.exp(), use_reentrant=False)
    return [(y * y).mean()]


def _multi_output(lib, x):
    a, b = _double(lib)(x).chunk(2, dim=1)
    return [(a.sin() * 2).sum()]


def _grad_tensors(lib, x):
    y = _double(lib)(x.cos()).exp()
    _grad_tensors.gt = lib.ones_like(y) * 0.5
    return [y * 3]


# label -> (builder, op nodes the engine still runs one by one)
CASES = {
    "custom Function in the middle": (_custom_in_the_middle, 1),  # exp: its other consumer is the Function
    "a region slot already holding a gradient": (_partial_slot, 0),
    "hook on an intermediate": (_hook_on_an_intermediate, 1),  # the hooked sin
    "retain_grad on an intermediate": (_retain_grad, 1),  # the retaining mul
    "two roots": (_two_roots, 0),
    "checkpoint": (_checkpoint, 1),  # exp below the checkpoint node (the inner graph is fused whole)
    "multi-output op with an unused output": (_multi_output, 0),
    "grad_tensors": (_grad_tensors, 1),  # cos below the Function
}


def _x(lib):
    return lib.tensor(np.random.default_rng(0).normal(size=(3, 4)).astype(np.float32), requires_grad=True)


def _backward(lib, build, x):
    roots = build(lib, x)
    gt = getattr(build, "gt", None)
    if gt is not None:
        lib.autograd.backward(roots, [gt])
        build.gt = None
    else:
        lib.autograd.backward(roots)


_checkpoint.w = {"funcgrad": funcgrad.tensor(np.random.default_rng(1).normal(size=(4, 4)).astype(np.float32),
                                             requires_grad=True)}


@pytest.mark.parametrize("label", CASES)
def test_regions_run_as_programs_with_the_same_bits_every_time(label, node_runs):
    build, one_by_one = CASES[label]
    grads = []
    for _ in range(3):  # first sighting compiles, later ones replay: the same bits
        node_runs.clear()
        x = _x(funcgrad)
        _backward(funcgrad, build, x)
        grads.append(x.grad.numpy())
        # the inner backward of a checkpoint runs fused whole; only the outer nodes count here
        assert len(node_runs) == one_by_one, node_runs
    for g in grads[1:]:
        assert np.array_equal(g, grads[0])


@pytest.mark.torch
@pytest.mark.parametrize("label", CASES)
def test_gradients_match_torch(label):
    torch = pytest.importorskip("torch")
    build, _ = CASES[label]
    _checkpoint.w["torch"] = torch.tensor(_checkpoint.w["funcgrad"].detach().numpy(), requires_grad=True)
    _checkpoint.w["funcgrad"].grad = None
    tx, fx = _x(torch), _x(funcgrad)
    _backward(torch, build, tx)
    t_kept = getattr(build, "kept", None)
    _backward(funcgrad, build, fx)
    np.testing.assert_allclose(fx.grad.numpy(), tx.grad.numpy(), rtol=1e-5, atol=1e-6)
    if t_kept is not None:  # retain_grad's .grad, filled by the engine beside the region
        np.testing.assert_allclose(build.kept.grad.numpy(), t_kept.grad.numpy(), rtol=1e-5, atol=1e-6)
    if label == "checkpoint":
        np.testing.assert_allclose(_checkpoint.w["funcgrad"].grad.numpy(), _checkpoint.w["torch"].grad.numpy(),
                                   rtol=1e-5, atol=1e-6)


def test_the_region_takes_a_gradient_already_in_its_slots():
    fused._SEEN.clear()
    _backward(funcgrad, _partial_slot, _x(funcgrad))
    regions = [s for s in fused._SEEN if len(s) == 5]
    names = sorted(tuple(r[1].name for r in s[0]) for s in regions)
    assert names == [("cos", "exp"), ("sum", "add")]
    seeds = {tuple(r[1].name for r in s[0]): s[4] for s in regions}
    assert seeds[("cos", "exp")] == ((0, 0), (1, 0))  # exp's slot: the Function's gradient


def test_retain_graph_twice_accumulates_and_a_third_time_raises():
    x = _x(funcgrad)
    (loss,) = _custom_in_the_middle(funcgrad, x)
    loss.backward(retain_graph=True)
    g = x.grad.numpy().copy()
    loss.backward()
    np.testing.assert_allclose(x.grad.numpy(), 2 * g, rtol=1e-6)
    with pytest.raises(RuntimeError, match="Trying to backward through the graph a second time"):
        loss.backward()


def test_inplace_change_of_a_saved_tensor_raises_pytorchs_error_in_a_region():
    msgs = []
    for lib in (funcgrad, pytest.importorskip("torch")):
        x = _x(lib)
        c = x.exp()
        u = _double(lib)(c)
        loss = (u.sin() * c.cos()).sum()
        with lib.no_grad():
            c.add_(1)
        with pytest.raises(RuntimeError) as e:
            loss.backward()
        msgs.append(str(e.value).replace("funcgrad.", "").replace("torch.", "").split(" Hint:")[0])
        assert x.grad is None
    assert msgs[0] == msgs[1]
