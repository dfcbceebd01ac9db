"""Custom ``autograd.Function``: the PyTorch tutorial's Legendre fit, ctx API, node naming and
wiring, gradient validation messages, saved-tensor checks, double backward."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

import funcgrad
from funcgrad.autograd import Function, gradcheck
from funcgrad.autograd.function import once_differentiable

from ._rows import check_transcript, shower, torch_transcript


class LegendrePolynomial3(Function):
    @staticmethod
    def forward(ctx, input):
        ctx.save_for_backward(input)
        return 0.5 * (5 * input ** 3 - 3 * input)

    @staticmethod
    def backward(ctx, grad_output):
        (input,) = ctx.saved_tensors
        return grad_output * 1.5 * (5 * input ** 2 - 1)


# PyTorch 2 (CPU, float32) losses of the tutorial at steps 99, 199, 299
TORCH_LOSSES = [209.95834350585938, 144.66018676757812, 100.70249938964844]


def test_legendre_tutorial_matches_pytorch():
    x = funcgrad.linspace(-math.pi, math.pi, 2000)
    y = funcgrad.sin(x)
    a = funcgrad.full((), 0.0, requires_grad=True)
    b = funcgrad.full((), -1.0, requires_grad=True)
    c = funcgrad.full((), 0.0, requires_grad=True)
    d = funcgrad.full((), 0.3, requires_grad=True)
    losses = []
    for t in range(300):
        y_pred = a + b * LegendrePolynomial3.apply(c + d * x)
        loss = (y_pred - y).pow(2).sum()
        if t % 100 == 99:
            losses.append(loss.item())
        loss.backward()
        with funcgrad.no_grad():
            for p in (a, b, c, d):
                p -= 5e-6 * p.grad
                p.grad = None
    np.testing.assert_allclose(losses, TORCH_LOSSES, rtol=1e-5)
    assert losses[0] > losses[1] > losses[2]


def test_node_name_next_functions_and_repr():
    x = funcgrad.randn(3, requires_grad=True)
    y = LegendrePolynomial3.apply(x * 2)
    node = y.grad_fn
    assert type(node).__name__ == "LegendrePolynomial3Backward"
    assert node.name() == "LegendrePolynomial3Backward"
    assert repr(y).endswith("grad_fn=<LegendrePolynomial3Backward>)")
    assert node.next_functions[0][0].name() == "MulBackward0"
    assert not y.is_leaf and y.requires_grad


def _node_repr_transcript(torch):
    """A Function's node prints as a Python class of torch.autograd.function, a built-in node
    by its name alone (the "Double Backward with Custom Functions" tutorial prints both)."""
    import re
    out = []
    show = shower(out)

    class Exp(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            result = torch.exp(x)
            ctx.save_for_backward(result)
            return result

        @staticmethod
        def backward(ctx, grad_out):
            result, = ctx.saved_tensors
            return result * grad_out

    def masked(r):
        return re.sub(r"0x[0-9a-f]+", "0x...", repr(r))
    x = torch.tensor(1., requires_grad=True, dtype=torch.double).clone()
    out_ = Exp.apply(x)
    grad_x, = torch.autograd.grad(out_, x, create_graph=True)
    show(lambda: masked(out_.grad_fn))
    show(lambda: masked(grad_x.grad_fn.next_functions))
    show(lambda: (type(out_.grad_fn).__module__, type(out_.grad_fn).__qualname__, out_.grad_fn.name()))
    show(lambda: repr(Exp._backward_cls))
    show(lambda: repr(out_))
    return out


NODE_REPR_EXPECTED = [
    "<torch.autograd.function.ExpBackward object at 0x...>",
    "((<torch.autograd.function.ExpBackward object at 0x...>, 0), (None, 0))",
    "('torch.autograd.function', 'ExpBackward', 'ExpBackward')",
    "<class 'torch.autograd.function.ExpBackward'>",
    "tensor(2.7183, dtype=torch.float64, grad_fn=<ExpBackward>)",
]


def test_a_function_node_repr_is_pytorchs():
    check_transcript(_node_repr_transcript(funcgrad), NODE_REPR_EXPECTED)


@pytest.mark.torch
def test_node_repr_transcript_is_pytorchs():
    check_transcript(torch_transcript(_node_repr_transcript), NODE_REPR_EXPECTED)


def test_gradient_values_and_gradcheck():
    x = funcgrad.tensor([0.3, -0.7, 1.2], dtype=funcgrad.float64, requires_grad=True)
    LegendrePolynomial3.apply(x).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), 1.5 * (5 * x.detach().numpy() ** 2 - 1))
    assert gradcheck(LegendrePolynomial3.apply, (x,))


class Scale(Function):
    @staticmethod
    def forward(ctx, x, y, k):
        ctx.save_for_backward(x, y)
        ctx.k = k  # arbitrary attributes on ctx
        return x * y * k

    @staticmethod
    def backward(ctx, g):
        x, y = ctx.saved_tensors
        return g * y * ctx.k, g * x * ctx.k, None


def test_non_tensor_args_needs_input_grad_and_edges():
    x = funcgrad.randn(2, requires_grad=True)
    y = funcgrad.randn(2)
    z = Scale.apply(x, y, 3.0)
    assert z.grad_fn.needs_input_grad == (True, False, False)
    nf = z.grad_fn.next_functions
    assert len(nf) == 2 and nf[0][0].name() == "torch::autograd::AccumulateGrad" and nf[1] == (None, 0)
    z.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), 3 * y.numpy(), rtol=1e-6)
    assert y.grad is None


def test_no_graph_when_nothing_requires_grad_or_under_no_grad():
    x = funcgrad.randn(2, requires_grad=True)
    assert Scale.apply(funcgrad.randn(2), funcgrad.randn(2), 2.0).grad_fn is None
    with funcgrad.no_grad():
        z = Scale.apply(x, x, 2.0)
    assert z.grad_fn is None and not z.requires_grad


def _backward_returning(*grads):
    class Bad(Function):
        @staticmethod
        def forward(ctx, x, y, k):
            return x * 2

        @staticmethod
        def backward(ctx, g):
            return grads if len(grads) != 1 else grads[0]
    Bad.__name__ = "Foo"
    Bad._backward_cls.__name__ = "FooBackward"
    return Bad


def test_backward_validation_messages():
    x = funcgrad.randn(2, requires_grad=True)
    y = funcgrad.randn(2)
    cases = [
        ((funcgrad.ones(2),), "function FooBackward returned an incorrect number of gradients "
                              "(expected 3, got 1)"),
        ((funcgrad.ones(2), None, 1.0), "function FooBackward returned a gradient different than None "
                                        "at position 3, but the corresponding forward input was not a "
                                        "Variable"),
        ((funcgrad.ones(3), None, None), "Function FooBackward returned an invalid gradient at index 0 "
                                         "- got [3] but expected shape compatible with [2]"),
        ((1.0, None, None), "expected Variable or None (got float)"),
    ]
    for grads, msg in cases:
        F = _backward_returning(*grads)
        with pytest.raises(RuntimeError) as e:
            F.apply(x, y, 1).sum().backward()
        assert str(e.value) == msg


def test_backward_gradient_is_summed_cast_and_extra_nones_allowed():
    x = funcgrad.randn(2, requires_grad=True)
    F = _backward_returning(funcgrad.ones(3, 2, dtype=funcgrad.float64), None, None, None)
    F.apply(x, funcgrad.randn(2), 1).sum().backward()
    assert x.grad.dtype is funcgrad.float32
    np.testing.assert_allclose(x.grad.numpy(), [3.0, 3.0])


class Square(Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * x

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return 2 * g * x


def test_saved_tensors_freed_and_version_checked():
    x = funcgrad.randn(3, requires_grad=True)
    a = x * 1
    z = Square.apply(a)
    z.sum().backward()
    with pytest.raises(RuntimeError, match="Trying to backward through the graph a second time"):
        z.grad_fn.saved_tensors
    with pytest.raises(RuntimeError, match="Trying to backward through the graph a second time"):
        z.sum().backward()
    z = Square.apply(a)
    with funcgrad.no_grad():
        a.add_(1)
    with pytest.raises(RuntimeError, match=r"one of the variables needed for gradient computation has "
                                           r"been modified by an inplace operation: .* is at version 1; "
                                           r"expected version 0 instead"):
        z.sum().backward()
    x.grad = None
    z = Square.apply(x * 1)
    z.sum().backward(retain_graph=True)
    assert len(z.grad_fn.saved_tensors) == 1
    z.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), 4 * x.detach().numpy(), rtol=1e-6)


def test_function_without_saved_tensors_can_backward_twice():
    x = funcgrad.randn(2, requires_grad=True)
    z = _backward_returning(funcgrad.ones(2), None, None).apply(x, x, 1)
    z.sum().backward()
    z.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [2.0, 2.0])


def test_double_backward_through_function_with_create_graph():
    x = funcgrad.tensor([0.5, -1.0], dtype=funcgrad.float64, requires_grad=True)
    (g,) = funcgrad.autograd.grad(LegendrePolynomial3.apply(x).sum(), x, create_graph=True)
    np.testing.assert_allclose(g.detach().numpy(), 1.5 * (5 * np.array([0.5, -1.0]) ** 2 - 1))
    (gg,) = funcgrad.autograd.grad(g.sum(), x)
    np.testing.assert_allclose(gg.numpy(), 15 * np.array([0.5, -1.0]))
    assert funcgrad.autograd.gradgradcheck(LegendrePolynomial3.apply, (x,))


def test_once_differentiable():
    class Once(Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x ** 2

        @staticmethod
        @once_differentiable
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            assert not funcgrad.is_grad_enabled()
            return 2 * g * x

    x = funcgrad.tensor([1.0, 2.0], requires_grad=True)
    Once.apply(x).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [2.0, 4.0])
    v = funcgrad.ones(2, requires_grad=True)
    (g,) = funcgrad.autograd.grad(Once.apply(x), x, v, create_graph=True)
    assert g.grad_fn.name() == "DelayedError"
    with pytest.raises(RuntimeError, match="trying to differentiate twice a function that was marked "
                                           "with @once_differentiable"):
        g.sum().backward()


def test_setup_context_style_and_defaults():
    class Mul(Function):
        @staticmethod
        def forward(x, k=2.0):
            return x * k

        @staticmethod
        def setup_context(ctx, inputs, output):
            x, k = inputs
            ctx.k = k
            ctx.save_for_backward(x, output)

        @staticmethod
        def backward(ctx, g):
            x, out = ctx.saved_tensors
            assert out.grad_fn is ctx  # a saved output is the returned output
            return g * ctx.k, None

    x = funcgrad.ones(2, requires_grad=True)
    y = Mul.apply(x)
    assert y.grad_fn.name() == "MulBackward"
    y.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [2.0, 2.0])


def test_multiple_outputs_non_differentiable_and_materialize():
    seen = {}

    class Split(Function):
        @staticmethod
        def forward(ctx, x):
            idx = x.argmax()
            ctx.mark_non_differentiable(idx)
            return x * 2, x * 3, idx

        @staticmethod
        def backward(ctx, g1, g2, g3):
            seen["grads"] = (g1, g2, g3)
            return g1 * 2 + g2 * 3

    x = funcgrad.tensor([1.0, 3.0], requires_grad=True)
    a, b, i = Split.apply(x)
    assert a.grad_fn is b.grad_fn and b.grad_fn.name() == "SplitBackward"
    assert not i.requires_grad and i.grad_fn is None
    a.sum().backward()
    g1, g2, g3 = seen["grads"]
    np.testing.assert_allclose(g2.numpy(), [0.0, 0.0])  # materialized zeros
    np.testing.assert_allclose(x.grad.numpy(), [2.0, 2.0])

    class NoMat(Split):
        @staticmethod
        def forward(ctx, x):
            ctx.set_materialize_grads(False)
            idx = x.argmax()
            ctx.mark_non_differentiable(idx)
            return x * 2, x * 3, idx

        @staticmethod
        def backward(ctx, g1, g2, g3):
            seen["grads"] = (g1, g2, g3)
            return g1 * 2

    a, b, _ = NoMat.apply(x)
    a.sum().backward()
    assert seen["grads"][1] is None


def test_returning_an_input_and_mark_dirty():
    class Ident(Function):
        @staticmethod
        def forward(ctx, x):
            return x

        @staticmethod
        def backward(ctx, g):
            return g * 5

    x = funcgrad.ones(2, requires_grad=True)
    y = Ident.apply(x)
    assert y is not x and x.is_leaf and y.grad_fn.name() == "IdentBackward"
    y.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [5.0, 5.0])

    class AddOne_(Function):
        @staticmethod
        def forward(ctx, x):
            x.add_(1)
            ctx.mark_dirty(x)
            return x

        @staticmethod
        def backward(ctx, g):
            return g

    a = x * 1
    out = AddOne_.apply(a)
    assert out is a and a.grad_fn.name() == "AddOne_Backward"
    np.testing.assert_allclose(a.detach().numpy(), [2.0, 2.0])
    with pytest.raises(RuntimeError, match="a leaf Variable that requires grad"):
        AddOne_.apply(funcgrad.ones(2, requires_grad=True))


def test_misuse_errors():
    with pytest.raises(TypeError, match="save_for_backward can only save variables, but argument 1 "
                                        "is of type int"):
        class S(Function):
            @staticmethod
            def forward(ctx, x):
                ctx.save_for_backward(x, 3)
                return x
        S.apply(funcgrad.ones(1, requires_grad=True))
    with pytest.raises(NotImplementedError, match="You must implement the forward function"):
        class N(Function):
            pass
        N.apply(funcgrad.ones(1))

    class NB(Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2
    with pytest.raises(NotImplementedError, match="You must implement either the backward or vjp"):
        NB.apply(funcgrad.ones(1, requires_grad=True)).sum().backward()
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        inst = NB()
    assert "should not be instantiated" in str(w[0].message) and w[0].category is DeprecationWarning
    with pytest.raises(RuntimeError, match="Legacy autograd function with non-static forward method"):
        inst(funcgrad.ones(1))
