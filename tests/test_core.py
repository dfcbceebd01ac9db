"""The core contract (DESIGN §1): the seed tutorials' examples with their exact printed values,
PyTorch's errors, engine parity with jax.grad, deep graphs, memory release, grad modes."""

from __future__ import annotations

import gc
import threading
import warnings
import weakref

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import funcgrad as torch
from funcgrad import autograd


def close(t, v, **kw):
    np.testing.assert_allclose(np.asarray(t.detach()._value), np.asarray(v), **kw)


# ---------------------------------------------------------------- seed examples
def test_seed_sigmoid_repr():
    x = torch.ones(2, 2, requires_grad=True)
    assert repr(torch.sigmoid(x)) == ("tensor([[0.7311, 0.7311],\n        [0.7311, 0.7311]], "
                                      "grad_fn=<SigmoidBackward0>)")
    assert repr(x) == "tensor([[1., 1.],\n        [1., 1.]], requires_grad=True)"


def test_seed_mean_of_square_accumulates():
    x = torch.ones(2, 2, requires_grad=True)
    y = x + 2
    z = y * y * 3
    out = z.mean()
    assert repr(out) == "tensor(27., grad_fn=<MeanBackward0>)"
    out.backward()
    close(x.grad, np.full((2, 2), 4.5))
    x.sum().backward()
    close(x.grad, np.full((2, 2), 5.5))
    x.grad.data.zero_()
    x.sum().backward()
    close(x.grad, np.ones((2, 2)))


def test_seed_backward_with_vector():
    x = torch.tensor([1.0, 2.0, 3.0, 4.0], requires_grad=True)
    z = (2 * x).view(2, 2)
    z.backward(torch.tensor([[1.0, 0.1], [0.01, 0.001]]))
    close(x.grad, [2.0, 0.2, 0.02, 0.002], rtol=1e-6)
    assert repr(x.grad) == "tensor([2.0000, 0.2000, 0.0200, 0.0020])"


def test_seed_retain_graph_accumulates_twice():
    inp = torch.eye(5, requires_grad=True)
    out = (inp + 1).pow(2)
    out.backward(torch.ones_like(inp), retain_graph=True)
    close(inp.grad, np.eye(5) * 2 + 2)
    out.backward(torch.ones_like(inp), retain_graph=True)
    close(inp.grad, np.eye(5) * 4 + 4)
    inp.grad.zero_()
    out.backward(torch.ones_like(inp), retain_graph=True)
    close(inp.grad, np.eye(5) * 2 + 2)


def test_seed_no_grad_block():
    x = torch.tensor(1.0, requires_grad=True)
    y1 = x ** 2
    with torch.no_grad():
        y2 = x ** 3
    y3 = y1 + y2
    y3.backward()
    assert x.grad.item() == 2.0
    assert y2.requires_grad is False
    with pytest.raises(RuntimeError, match="element 0 of tensors does not require grad and does not have a grad_fn"):
        y2.backward()


def test_seed_data_is_untracked():
    x = torch.ones(1, requires_grad=True)
    y = 2 * x
    x.data *= 100
    y.backward()
    close(x, [100.0])
    close(x.grad, [2.0])


def test_seed_detach_shares_storage_and_version():
    x = torch.tensor([1.0, 2.0], requires_grad=True)
    y = x * x
    u = y.detach()
    z = y * x
    u[0] = 5.0
    assert repr(y) == "tensor([5., 4.], grad_fn=<MulBackward0>)"
    with pytest.raises(RuntimeError, match=r"one of the variables needed for gradient computation has been "
                       r"modified by an inplace operation: \[funcgrad.FloatTensor \[2\]\], which is output 0 of "
                       r"Mul, is at version 1; expected version 0 instead"):
        z.sum().backward()


def test_seed_detach_cuts_path():
    x = torch.tensor([1.0, 2.0], requires_grad=True)
    y = x * x
    z = y.detach() * x
    z.sum().backward()
    close(x.grad, y.detach())


def test_seed_linear_layer_flags():
    x = torch.ones(5)
    y = torch.zeros(3)
    w = torch.randn(5, 3, requires_grad=True)
    b = torch.randn(3, requires_grad=True)
    z = torch.matmul(x, w) + b
    assert z.grad_fn.name() == "AddBackward0" and z.requires_grad
    loss = ((z - y) ** 2).mean()
    loss.backward()
    assert w.grad.shape == (5, 3) and b.grad.shape == (3,)
    with torch.no_grad():
        assert not (torch.matmul(x, w) + b).requires_grad
    assert not z.detach().requires_grad


# ---------------------------------------------------------------- errors of §1
def test_second_backward_raises():
    x = torch.ones(2, requires_grad=True)
    y = (x * x).sum()
    y.backward()
    with pytest.raises(RuntimeError, match="Trying to backward through the graph a second time"):
        y.backward()


def test_requires_grad_only_on_leaves():
    x = torch.ones(2, requires_grad=True)
    y = x * 2
    with pytest.raises(RuntimeError, match="you can only change requires_grad flags of leaf variables. If you "
                       "want to use a computed variable in a subgraph that doesn't require differentiation "
                       "use var_no_grad = var.detach()."):
        y.requires_grad = False
    with pytest.raises(RuntimeError, match="only Tensors of floating point dtype can require gradients"):
        torch.tensor([1, 2]).requires_grad_()
    with pytest.raises(RuntimeError, match="Only Tensors of floating point and complex dtype can require"):
        torch.tensor([1, 2], requires_grad=True)
    with pytest.raises(RuntimeError, match="only Tensors of floating point and complex dtype can require"):
        torch.tensor([1, 2]).requires_grad = True


def test_non_leaf_grad_warns_and_retain_grad():
    x = torch.ones(2, requires_grad=True)
    y = x * 3
    (y * y).sum().backward(retain_graph=True)
    with pytest.warns(UserWarning, match="The .grad attribute of a Tensor that is not a leaf Tensor is being accessed"):
        assert y.grad is None
    y2 = x * 3
    y2.retain_grad()
    (y2 * y2).sum().backward()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        close(y2.grad, [6.0, 6.0])


def test_non_scalar_backward_needs_gradient():
    x = torch.ones(2, requires_grad=True)
    with pytest.raises(RuntimeError, match="grad can be implicitly created only for scalar outputs"):
        (x * 2).backward()
    with pytest.raises(RuntimeError, match="Mismatch in shape"):
        (x * 2).backward(torch.ones(3))


def test_numpy_requires_grad():
    x = torch.ones(2, requires_grad=True)
    with pytest.raises(RuntimeError, match=r"Can't call numpy\(\) on Tensor that requires grad. Use "
                       r"tensor.detach\(\).numpy\(\) instead."):
        x.numpy()
    np.testing.assert_array_equal(x.detach().numpy(), [1.0, 1.0])


def test_inplace_on_leaf_requiring_grad():
    x = torch.ones(2, requires_grad=True)
    with pytest.raises(RuntimeError, match="a leaf Variable that requires grad is being used in an in-place operation."):
        x.add_(1)
    close(x, [1.0, 1.0])  # unchanged
    assert x._ver[0] == 0
    with torch.no_grad():
        x.add_(1)
    close(x, [2.0, 2.0])
    with pytest.raises(RuntimeError, match="a view of a leaf Variable that requires grad"):
        x[0].mul_(2)


def test_inplace_result_type_error_leaves_tensor_unchanged():
    x = torch.tensor([1, 2])
    with pytest.raises(RuntimeError, match="result type Float can't be cast to the desired output type Long"):
        x.add_(1.5)
    assert x.tolist() == [1, 2] and x._ver[0] == 0


# ---------------------------------------------------------------- in-place, views, versions
def test_inplace_rebases_grad_fn():
    x = torch.tensor([1.0, 2.0], requires_grad=True)
    y = x * 2
    y.add_(1)
    assert y.grad_fn.name() == "AddBackward0"
    y.mul_(3)
    y.sum().backward()
    close(x.grad, [6.0, 6.0])
    y2 = x * 2
    y2.mul_(y2)  # saves y2 and then modifies it: PyTorch's version error too
    with pytest.raises(RuntimeError, match="is at version 1; expected version 0 instead"):
        y2.sum().backward()


def test_writes_through_views_reach_base():
    base = torch.zeros(2, 3)
    v = base.view(3, 2)
    v[0, 1] = 7.0
    t = base.t()
    t[2].fill_(1.0)
    s = base[:, 1:]
    s.mul_(2)
    np.testing.assert_array_equal(base.numpy(), [[0, 14, 2], [0, 0, 2]])
    assert base._ver[0] == v._ver[0] == 3


def test_setitem_on_nonleaf_is_differentiable():
    x = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
    w = torch.tensor(5.0, requires_grad=True)
    y = x * 1
    y[1] = w * 2
    assert y.grad_fn.name() == "torch::autograd::CopySlices"
    (y * torch.tensor([1.0, 10.0, 100.0])).sum().backward()
    close(x.grad, [1.0, 0.0, 100.0])
    close(w.grad, 20.0)


def test_inplace_on_view_of_nonleaf_rebases_base():
    x = torch.tensor([1.0, 2.0, 3.0, 4.0], requires_grad=True)
    y = x * 1
    v = y[1:3]
    v.mul_(10)
    assert y.grad_fn.name() == "torch::autograd::CopySlices"
    close(y, [1.0, 20.0, 30.0, 4.0])
    y.sum().backward()
    close(x.grad, [1.0, 10.0, 10.0, 1.0])


# ---------------------------------------------------------------- graph structure
def test_next_functions_and_accumulate_grad():
    x = torch.ones(2, requires_grad=True)
    y = x * 2
    fns = y.grad_fn.next_functions
    assert fns[0][0].name() == "torch::autograd::AccumulateGrad" and fns[0][0].variable is x and fns[1] == (None, 0)
    assert repr(y.grad_fn).startswith("<MulBackward0 object at 0x")
    z = x + x
    assert z.grad_fn.next_functions[0][0] is z.grad_fn.next_functions[1][0]


@pytest.mark.parametrize("expr,name", [
    (lambda x: x.mean(), "MeanBackward0"), (lambda x: x.mean(0), "MeanBackward1"),
    (lambda x: x.sum(), "SumBackward0"), (lambda x: x.sum(1), "SumBackward1"),
    (lambda x: x.max(), "MaxBackward1"), (lambda x: x.max(0)[0], "MaxBackward0"),
    (lambda x: x ** 2, "PowBackward0"), (lambda x: x ** x, "PowBackward1"),
    (lambda x: x.reshape(4), "ViewBackward0"), (lambda x: x.t(), "TBackward0"),
    (lambda x: x[0], "SelectBackward0"), (lambda x: x[[0, 1]], "IndexBackward0"),
    (lambda x: x @ x, "MmBackward0"), (lambda x: x[0] @ x[1], "DotBackward0"),
    (lambda x: x.double(), "ToCopyBackward0"), (lambda x: x.clamp(0, 1), "ClampBackward1"),
])
def test_grad_fn_names(expr, name):
    x = torch.ones(2, 2, requires_grad=True)
    assert expr(x).grad_fn.name() == name


# ---------------------------------------------------------------- parity with jax.grad
def _parity(fg_fn, jax_fn, *shapes, seed=0):
    rng = np.random.default_rng(seed)
    arrs = [rng.uniform(0.5, 1.5, s) for s in shapes]
    ts = [torch.tensor(a, requires_grad=True) for a in arrs]
    fg_fn(*ts).backward()
    want = jax.grad(jax_fn, argnums=tuple(range(len(arrs))))(*[jnp.asarray(a) for a in arrs])
    for t, w in zip(ts, want):
        np.testing.assert_allclose(np.asarray(t.grad._value), np.asarray(w), rtol=1e-10, atol=1e-12)


def test_parity_shared_subexpression():
    _parity(lambda x: ((x * x) * x).sum(), lambda x: ((x * x) * x).sum(), (3,))


def test_parity_broadcasting():
    _parity(lambda a, b, c: ((a * b + c).tanh() / b).mean(),
            lambda a, b, c: (jnp.tanh(a * b + c) / b).mean(), (4, 3), (3,), (4, 1))


def test_parity_detach_and_no_grad():
    def f(x, w):
        h = x @ w
        with torch.no_grad():
            scale = h.abs().max()
        return (h / scale + h.detach() * h).sum()

    def g(x, w):
        h = x @ w
        scale = jax.lax.stop_gradient(jnp.abs(h).max())
        return (h / scale + jax.lax.stop_gradient(h) * h).sum()
    _parity(f, g, (2, 3), (3, 4))


def test_parity_hooks_and_inplace():
    def f(x):
        y = x * 2
        y.register_hook(lambda g: g * 3)
        z = y.exp() * 1  # not exp's own output: PyTorch saves that one for backward
        z.add_(1)
        return (z * x).sum()

    def g(x):
        y = x * 2
        z = jnp.exp(y) + 1
        # the hook triples the gradient flowing into y
        return (z * x).sum() + 2 * jax.lax.stop_gradient(jnp.exp(y) * x * 2 * 1.0).sum() * 0 + \
            (jnp.exp(y) * jax.lax.stop_gradient(x) * 2).sum() * 0
    x = torch.tensor([0.1, 0.2], dtype=torch.float64, requires_grad=True)
    f(x).backward()
    xa = np.array([0.1, 0.2])
    # d/dx [(e^{2x}+1) x] with the y-path gradient tripled: 3*2*x*e^{2x} + (e^{2x}+1)
    np.testing.assert_allclose(x.grad.numpy(), 6 * xa * np.exp(2 * xa) + np.exp(2 * xa) + 1, rtol=1e-12)


def test_parity_indexing_and_setitem():
    def f(x):
        y = x * 1
        y[0, :] = x[1, :] ** 2
        return (y[[1, 0]] * torch.tensor([[1.0], [3.0]], dtype=torch.float64)).sum()

    def g(x):
        y = x.at[0, :].set(x[1, :] ** 2)
        return (y[jnp.array([1, 0])] * jnp.array([[1.0], [3.0]])).sum()
    _parity(f, g, (2, 3))


# ---------------------------------------------------------------- higher order
def test_create_graph_second_and_third_derivative():
    x = torch.tensor(2.0, requires_grad=True)
    y = x ** 3 + torch.sin(x)
    (g,) = autograd.grad(y, x, create_graph=True)
    (gg,) = autograd.grad(g, x, create_graph=True)
    (ggg,) = autograd.grad(gg, x)
    np.testing.assert_allclose(g.item(), 12 + np.cos(2.0), rtol=1e-6)
    np.testing.assert_allclose(gg.item(), 12 - np.sin(2.0), rtol=1e-6)
    np.testing.assert_allclose(ggg.item(), 6 - np.cos(2.0), rtol=1e-5)


def test_gradient_penalty_backward():
    w = torch.tensor([1.0, -2.0], requires_grad=True)
    x = torch.tensor([0.5, 0.3], requires_grad=True)
    out = (torch.tanh(w * x)).sum()
    (gx,) = autograd.grad(out, x, create_graph=True)
    (gx.pow(2).sum()).backward()
    wa, xa = jnp.array([1.0, -2.0]), jnp.array([0.5, 0.3])
    want = jax.grad(lambda w: (jax.grad(lambda x: jnp.tanh(w * x).sum())(xa) ** 2).sum())(wa)
    np.testing.assert_allclose(w.grad.numpy(), np.asarray(want), rtol=1e-5)


def test_autograd_grad_does_not_touch_grad_and_allow_unused():
    x = torch.ones(2, requires_grad=True)
    u = torch.ones(2, requires_grad=True)
    (g,) = autograd.grad((x * 3).sum(), x)
    close(g, [3.0, 3.0])
    assert x.grad is None
    with pytest.raises(RuntimeError, match="appears to not have been used in the graph"):
        autograd.grad((x * 3).sum(), [x, u])
    assert autograd.grad((x * 3).sum(), [x, u], allow_unused=True)[1] is None


def test_backward_inputs_restricts_accumulation():
    x = torch.ones(2, requires_grad=True)
    w = torch.ones(2, requires_grad=True)
    (x * w).sum().backward(inputs=[w])
    assert x.grad is None and w.grad is not None


# ---------------------------------------------------------------- scale and memory
def test_100k_op_chain():
    x = torch.tensor(1.0, requires_grad=True)
    y = x
    for _ in range(100_000):
        y = y * 1.0
    y.backward()
    assert x.grad.item() == 1.0


def test_saved_inputs_released_after_backward():
    x = torch.ones(3, requires_grad=True)
    h = x * 2
    ref = weakref.ref(h)
    y = (h * h).sum()
    del h
    gc.collect()
    assert ref() is not None  # kept alive by the graph (saved for MulBackward0)
    y.backward()
    gc.collect()
    assert ref() is None  # freed by backward


def test_dropped_graph_is_collected():
    x = torch.ones(3, requires_grad=True)
    h = x.exp()
    ref = weakref.ref(h)
    y = (h * h).sum()
    y.register_hook(lambda g: g)
    del h, y
    gc.collect()
    assert ref() is None


# ---------------------------------------------------------------- grad modes
def test_grad_modes_nest_and_decorate():
    x = torch.ones(1, requires_grad=True)
    with torch.no_grad():
        assert not torch.is_grad_enabled()
        with torch.enable_grad():
            assert (x * 2).requires_grad
        assert not (x * 2).requires_grad
    assert torch.is_grad_enabled()

    @torch.no_grad()
    def f():
        return x * 2

    @torch.no_grad
    def g():
        return x * 2
    assert not f().requires_grad and not g().requires_grad
    torch.set_grad_enabled(False)
    assert not torch.is_grad_enabled()
    torch.set_grad_enabled(True)
    with torch.set_grad_enabled(False):
        assert not (x * 2).requires_grad
    with torch.inference_mode():
        assert not (x * 2).requires_grad
    assert torch.is_grad_enabled()


def test_grad_mode_is_thread_local():
    seen = []
    with torch.no_grad():
        t = threading.Thread(target=lambda: seen.append(torch.is_grad_enabled()))
        t.start()
        t.join()
    assert seen == [True]


# ---------------------------------------------------------------- dtypes and promotion
@pytest.mark.parametrize("make,dtype", [
    (lambda: torch.tensor([1, 2]), torch.int64),
    (lambda: torch.tensor([1.0, 2.0]), torch.float32),
    (lambda: torch.tensor([1, 2]) + 1.5, torch.float32),
    (lambda: torch.tensor([1.0]) + torch.tensor(1.0, dtype=torch.float64), torch.float32),
    (lambda: torch.tensor([1.0]) + torch.tensor([1.0], dtype=torch.float64), torch.float64),
    (lambda: torch.tensor([1], dtype=torch.int32) + torch.tensor(1), torch.int32),
    (lambda: torch.tensor([1], dtype=torch.int32) + torch.tensor([1]), torch.int64),
    (lambda: torch.tensor([1, 2]) / 2, torch.float32),
    (lambda: torch.tensor([True]) + 1, torch.int64),
    (lambda: torch.tensor([1]) + torch.tensor(2.5, dtype=torch.float64), torch.float64),
    (lambda: torch.tensor([1.0], dtype=torch.float16) * 2.0, torch.float16),
    (lambda: torch.ones(2).double(), torch.float64),
    (lambda: torch.tensor([1, 2]).exp(), torch.float32),
    (lambda: torch.arange(3), torch.int64),
    (lambda: torch.arange(0, 1, 0.25), torch.float32),
])
def test_dtype_rules(make, dtype):
    assert make().dtype is dtype


def test_default_dtype_switch():
    torch.set_default_dtype(torch.float64)
    assert torch.tensor([1.0]).dtype is torch.float64 and torch.zeros(2).dtype is torch.float64
    assert repr(torch.tensor([1.5])) == "tensor([1.5000])"
    torch.set_default_dtype(torch.float32)
    assert repr(torch.tensor([1.5], dtype=torch.float64)) == "tensor([1.5000], dtype=funcgrad.float64)"


def test_item_tolist_conversions():
    x = torch.tensor([[1.5, 2.0]])
    assert x.tolist() == [[1.5, 2.0]] and x[0, 0].item() == 1.5
    assert float(x[0, 1]) == 2.0 and int(torch.tensor(3)) == 3
    with pytest.raises(RuntimeError, match="Boolean value of Tensor with more than one value is ambiguous"):
        bool(x)
    with pytest.raises(RuntimeError, match="a Tensor with 2 elements cannot be converted to Scalar"):
        x.item()
    assert x.shape == (1, 2) and repr(x.shape) == "funcgrad.Size([1, 2])" and x.size(1) == 2
    assert np.asarray(x).shape == (1, 2) and jnp.asarray(x.jax()).shape == (1, 2)


def test_cuda_errors_clearly_without_gpu():
    if torch.cuda.is_available():
        pytest.skip("a GPU is visible")
    with pytest.raises(RuntimeError, match="Found no NVIDIA driver"):
        torch.ones(2).cuda()


def test_deepcopy_of_a_used_leaf_gets_its_own_gradient():
    import copy
    w = torch.ones(2, requires_grad=True)
    (w * 2).sum().backward()  # w now has an AccumulateGrad node
    w2 = copy.deepcopy(w)
    (w2 * 3).sum().backward()
    assert w.grad.tolist() == [2.0, 2.0] and w2.grad.tolist() == [5.0, 5.0]
