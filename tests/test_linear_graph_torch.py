"""``F.linear`` on inputs of 3+ dims builds PyTorch's graph (``at::linear``: a contiguous input
with bias is flattened, ``_flatten_nd_linear``; otherwise ``matmul``'s fold to ``mm`` and an
in-place bias add), with the 2-D path's lazy ``weight.t()``. The expected graphs were recorded
from PyTorch 2.13 (``_graph`` below, run on torch); where torch is installed they are also
compared live, with the values and gradients."""

import numpy as np
import pytest

import funcgrad
import funcgrad.nn.functional as F

# label -> (input shape, transpose dims 0 and 1 first, weight requires grad, bias, PyTorch's graph
# as a depth-first list of node names)
CASES = {
    "3d bias": ((4, 3, 5), False, True, True,
                "ViewBackward0|AddmmBackward0|AccumulateGrad|ViewBackward0|AccumulateGrad|TBackward0|"
                "AccumulateGrad"),
    "3d bias, frozen weight": ((4, 3, 5), False, False, True,
                               "ViewBackward0|AddmmBackward0|AccumulateGrad|ViewBackward0|AccumulateGrad"),
    "3d no bias": ((4, 3, 5), False, True, False,
                   "UnsafeViewBackward0|MmBackward0|ViewBackward0|AccumulateGrad|TBackward0|AccumulateGrad"),
    "3d no bias, frozen weight": ((4, 3, 5), False, False, False,
                                  "UnsafeViewBackward0|MmBackward0|ViewBackward0|AccumulateGrad"),
    "4d no bias": ((2, 2, 3, 5), False, True, False,
                   "UnsafeViewBackward0|MmBackward0|ViewBackward0|AccumulateGrad|TBackward0|AccumulateGrad"),
    "transposed, bias": ((4, 3, 5), True, True, True,
                         "AddBackward0|UnsafeViewBackward0|MmBackward0|UnsafeViewBackward0|CloneBackward0|"
                         "TransposeBackward0|AccumulateGrad|TBackward0|AccumulateGrad|AccumulateGrad"),
    "transposed, no bias": ((4, 3, 5), True, True, False,
                            "UnsafeViewBackward0|MmBackward0|UnsafeViewBackward0|CloneBackward0|"
                            "TransposeBackward0|AccumulateGrad|TBackward0|AccumulateGrad"),
    # a vector: one row of the flattened path (nn.Linear on a single sample)
    "1d bias": ((5,), False, True, True,
                "ViewBackward0|AddmmBackward0|AccumulateGrad|ViewBackward0|AccumulateGrad|TBackward0|"
                "AccumulateGrad"),
    "1d bias, frozen weight": ((5,), False, False, True,
                               "ViewBackward0|AddmmBackward0|AccumulateGrad|ViewBackward0|AccumulateGrad"),
}
# Not yet PyTorch's: a vector without bias (PyTorch's SqueezeBackward4 of an mm of the unsqueezed
# vector; funcgrad's matmul node is one SqueezeBackward4 over the vector and weight.t()), and
# a non-contiguous input whose weight is frozen, which PyTorch's matmul does not
# fold (its bmm of expanded operands); funcgrad's generic matmul node stands for those nodes.


def _graph(fn, depth=0, out=None):
    out = [] if out is None else out
    if fn is None:
        return out
    out.append(fn.name().replace("torch::autograd::", ""))
    for child, _ in fn.next_functions:
        _graph(child, depth + 1, out)
    return out


def _run(lib, shape, transposed, w_grad, bias, seed=0):
    rng = np.random.default_rng(seed)
    x = lib.tensor(rng.normal(size=shape).astype(np.float32), requires_grad=True)
    w = lib.tensor(rng.normal(size=(6, shape[-1])).astype(np.float32), requires_grad=w_grad)
    b = lib.tensor(rng.normal(size=(6,)).astype(np.float32), requires_grad=True) if bias else None
    y = lib.nn.functional.linear(x.transpose(0, 1) if transposed else x, w, b)
    (y * y).sum().backward()
    return y, [t.grad for t in (x, w, b) if t is not None and t.requires_grad]


@pytest.mark.parametrize("label", CASES)
def test_graph_is_pytorchs(label):
    shape, transposed, w_grad, bias, graph = CASES[label]
    y, _ = _run(funcgrad, shape, transposed, w_grad, bias)
    assert "|".join(_graph(y.grad_fn)) == graph


@pytest.mark.torch
@pytest.mark.parametrize("label", CASES)
def test_values_gradients_and_graph_match_torch(label):
    torch = pytest.importorskip("torch")
    shape, transposed, w_grad, bias, graph = CASES[label]
    ty, tg = _run(torch, shape, transposed, w_grad, bias)
    fy, fg = _run(funcgrad, shape, transposed, w_grad, bias)
    assert "|".join(_graph(ty.grad_fn)) == graph  # the recorded table is still PyTorch's
    np.testing.assert_allclose(fy.detach().numpy(), ty.detach().numpy(), rtol=1e-5, atol=1e-5)
    assert len(fg) == len(tg)
    for a, b in zip(fg, tg):
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-5, atol=1e-4)


@pytest.mark.parametrize("bias", [True, False])
@pytest.mark.parametrize("shape", [(8, 16, 32), (3, 7, 5), (2, 3, 4, 9)])
def test_nd_input_gives_the_flattened_inputs_bits(shape, bias):
    """As PyTorch, which flattens: an input of 3+ dims gives the bits of its 2-D flattening,
    forward and backward (one kernel serves both, with the weight's transpose inside it)."""
    rng = np.random.default_rng(1)
    xs = rng.normal(size=shape).astype(np.float32)
    w = funcgrad.tensor(rng.normal(size=(11, shape[-1])).astype(np.float32), requires_grad=True)
    b = funcgrad.tensor(rng.normal(size=(11,)).astype(np.float32), requires_grad=True) if bias else None
    x = funcgrad.tensor(xs, requires_grad=True)
    y = F.linear(x, w, b)
    y.pow(2).sum().backward()
    g = w.grad.numpy().copy()
    w.grad = None
    x2 = funcgrad.tensor(xs.reshape(-1, shape[-1]), requires_grad=True)
    y2 = F.linear(x2, w, b)
    y2.pow(2).sum().backward()
    assert np.array_equal(y.detach().numpy().reshape(-1, 11), y2.detach().numpy())
    assert np.array_equal(x.grad.numpy().reshape(-1, shape[-1]), x2.grad.numpy())
    assert np.array_equal(g, w.grad.numpy())


@pytest.mark.parametrize("bias", [True, False])
def test_nd_input_never_materialises_the_weights_transpose(bias):
    lin = funcgrad.nn.Linear(5, 6, bias=bias)
    x = funcgrad.randn(4, 3, 5)
    for _ in range(2):
        out = lin(x)
        node = out.grad_fn.next_functions[0][0]  # the view's input: the addmm / mm
        assert node.name() == ("AddmmBackward0" if bias else "MmBackward0")
        wt = node._saved[-1]  # the saved mat2: weight.t(), lazy
        assert wt._viewinfo.base is lin.weight and wt._viewinfo.cache is None
        out.sum().backward()
        assert wt._viewinfo.cache is None
    with funcgrad.no_grad():
        y = lin(x)
    ref = x.numpy() @ lin.weight.detach().numpy().T + (lin.bias.detach().numpy() if bias else 0)
    np.testing.assert_allclose(y.numpy(), ref, rtol=1e-5, atol=1e-6)


# F.linear of a vector where PyTorch does not flatten it, recorded from PyTorch 2.13: (graph, value,
# input grad, weight grad) of `linear(x, w, b)` (backward of (y*y).sum(), or of y for a scalar)
VECTORS = {
    "1-D weight": ("AddBackward0|DotBackward0|AccumulateGrad|TBackward0|AccumulateGrad|AccumulateGrad",
                   5.0, [0.5, 0.5, 0.5, 0.5], [0.0, 1.0, 2.0, 3.0]),
    "non-contiguous, bias": (None, [13.0, 13.0, 13.0], [[78.0, 0.0]] * 4, [[0.0, 52.0, 104.0, 156.0]] * 3),
}


def _vector_case(lib, label):
    if label == "1-D weight":
        x = lib.arange(4.0, requires_grad=True)
        w = lib.full((4,), 0.5, requires_grad=True)
        y = lib.nn.functional.linear(x, w, lib.tensor(2.0, requires_grad=True))
        y.backward()
        return y, x.grad, w.grad
    base = lib.arange(8.0).reshape(4, 2).requires_grad_()
    w = lib.ones(3, 4, requires_grad=True)
    y = lib.nn.functional.linear(base.t()[0], w, lib.ones(3, requires_grad=True))
    (y * y).sum().backward()
    return y, base.grad, w.grad


@pytest.mark.parametrize("label", VECTORS)
def test_vector_input_as_pytorch(label):
    graph, value, xgrad, wgrad = VECTORS[label]
    y, xg, wg = _vector_case(funcgrad, label)
    if graph is not None:
        assert "|".join(_graph(y.grad_fn)) == graph
    else:  # PyTorch adds the bias in place onto matmul's result
        assert y.grad_fn.name() == "AddBackward0"
    assert y.tolist() == value and xg.tolist() == xgrad and wg.tolist() == wgrad


@pytest.mark.parametrize("args, msg", [
    (((), (3, 4), None), "both arguments to linear need to be at least 1D, but they are 0D and 2D"),
    (((), (3, 4), (3,)), "both arguments to linear need to be at least 1D, but they are 0D and 2D"),
    (((5,), (3, 4), (3,)), "mat1 and mat2 shapes cannot be multiplied (1x5 and 4x3)"),
    (((5,), (3, 4), None), "mat1 and mat2 shapes cannot be multiplied (1x5 and 4x3)"),
])
def test_vector_input_errors(args, msg):  # (PyTorch 2.13's messages)
    x, w, b = (None if s is None else funcgrad.ones(*s) for s in args)
    with pytest.raises(RuntimeError) as e:
        F.linear(x, w, b)
    assert str(e.value) == msg


@pytest.mark.torch
@pytest.mark.parametrize("label", VECTORS)
def test_vector_rows_are_pytorchs(label):
    torch = pytest.importorskip("torch")
    y, xg, wg = _vector_case(torch, label)
    graph, value, xgrad, wgrad = VECTORS[label]
    if graph is not None:
        assert "|".join(_graph(y.grad_fn)) == graph
    assert y.tolist() == value and xg.tolist() == xgrad and wg.tolist() == wgrad
