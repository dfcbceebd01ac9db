"""Numerics at extreme inputs: stable log_softmax, logsumexp, BCEWithLogits, softplus,
cross-entropy with huge logits, saturated sigmoid/tanh, norms of tiny vectors, var of constants.

No Inf/NaN where PyTorch gives finite values: values and gradients are compared with PyTorch when
it is importable, and always with the known finite answers."""

import math

import numpy as np
import pytest

import funcgrad
import funcgrad.nn.functional  # noqa: F401

try:
    import torch
except Exception:  # pragma: no cover - torch is optional
    torch = None

BIG = 1e4
CASES = {
    # name: (fn(lib, x) -> scalar-or-tensor, input, known value or None)
    "log_softmax": (lambda lib, x: lib.nn.functional.log_softmax(x, dim=0), [BIG, 0.0, -BIG],
                    [0.0, -BIG, -2 * BIG]),
    "logsumexp_equal": (lambda lib, x: x.logsumexp(0), [BIG, BIG], BIG + math.log(2)),
    "logsumexp_neg": (lambda lib, x: x.logsumexp(0), [-BIG, -BIG], -BIG + math.log(2)),
    "softmax": (lambda lib, x: x.softmax(0), [BIG, 0.0, -BIG], [1.0, 0.0, 0.0]),
    "softplus_big": (lambda lib, x: lib.nn.functional.softplus(x), [BIG, -BIG, 30.0], [BIG, 0.0, 30.0]),
    "bce_logits": (lambda lib, x: lib.nn.functional.binary_cross_entropy_with_logits(
        x, lib.tensor([0.0, 1.0, 1.0, 0.0], dtype=x.dtype), reduction="none"),
        [BIG, -BIG, BIG, -BIG], [BIG, BIG, 0.0, 0.0]),
    "bce_logits_pos_weight": (lambda lib, x: lib.nn.functional.binary_cross_entropy_with_logits(
        x, lib.tensor([1.0, 0.0], dtype=x.dtype), pos_weight=lib.tensor([3.0, 3.0], dtype=x.dtype),
        reduction="none"), [-BIG, BIG], [3 * BIG, BIG]),
    "cross_entropy_huge": (lambda lib, x: lib.nn.functional.cross_entropy(
        x.view(2, 3), lib.tensor([2, 0])), [BIG, 0.0, -BIG, -BIG, 0.0, BIG], 2 * BIG),
    "cross_entropy_smoothing": (lambda lib, x: lib.nn.functional.cross_entropy(
        x.view(1, 3), lib.tensor([0]), label_smoothing=0.1), [BIG, -BIG, 0.0], None),
    "sigmoid_sat": (lambda lib, x: x.sigmoid(), [BIG, -BIG, 100.0, -100.0], None),
    "tanh_sat": (lambda lib, x: x.tanh(), [BIG, -BIG, 50.0], [1.0, -1.0, 1.0]),
    "log_sigmoid": (lambda lib, x: lib.nn.functional.logsigmoid(x), [BIG, -BIG], [0.0, -BIG]),
    # regression: float32 squares underflowed (value 0, gradient 0 instead of [0.6, 0.8])
    "norm_tiny": (lambda lib, x: x.norm(), [3e-20, 4e-20], 5e-20),
    "norm_zero": (lambda lib, x: x.norm(), [0.0, 0.0], 0.0),
    "var_constant": (lambda lib, x: x.var(), [5.0, 5.0, 5.0, 5.0], 0.0),
    "var_constant_big": (lambda lib, x: x.var(), [1e6 + 0.5] * 4, 0.0),
    "mse_huge_equal": (lambda lib, x: lib.nn.functional.mse_loss(x, x.detach()), [BIG, -BIG], 0.0),
}


def _run(lib, name, dtype):
    fn, data, _ = CASES[name]
    x = lib.tensor(data, dtype=getattr(lib, dtype), requires_grad=True)
    y = fn(lib, x)
    y.sum().backward()
    val = np.asarray(y.detach().numpy(), dtype=np.float64)
    return val, np.asarray(x.grad.numpy(), dtype=np.float64)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("name", sorted(CASES))
def test_extreme_inputs_are_finite_and_correct(name, dtype):
    val, grad = _run(funcgrad, name, dtype)
    known = CASES[name][2]
    if known is not None:
        np.testing.assert_allclose(val, np.asarray(known, np.float64), rtol=1e-6, atol=1e-30)
    if torch is not None:
        tval, tgrad = _run(torch, name, dtype)
        # finite wherever PyTorch is finite (and the same non-finite values where it is not)
        assert np.array_equal(np.isfinite(val), np.isfinite(tval)), (val, tval)
        assert np.array_equal(np.isfinite(grad), np.isfinite(tgrad)), (grad, tgrad)
        # float32 near 1e4 has a spacing of 1e-3: PyTorch rounds its intermediate logsumexp
        tol = 1e-3 if dtype == "float32" else 1e-10
        np.testing.assert_allclose(val, tval, rtol=tol, atol=1e-30)
        np.testing.assert_allclose(grad, tgrad, rtol=tol, atol=tol)
    else:
        assert np.isfinite(val).all() and np.isfinite(grad).all()


def test_norm_of_zero_vector_has_zero_gradient():
    """PyTorch's subgradient at 0 (not 0/0 = NaN), also for p-norms and dims."""
    x = funcgrad.zeros(3, requires_grad=True)
    (x.norm() + funcgrad.linalg.vector_norm(x, 3) + x.view(1, 3).norm(dim=1).sum()).backward()
    assert x.grad.tolist() == [0.0, 0.0, 0.0]


def test_sigmoid_and_tanh_gradients_saturate_to_zero_not_nan():
    x = funcgrad.tensor([BIG, -BIG], requires_grad=True)
    (x.sigmoid() + x.tanh()).sum().backward()
    assert x.grad.tolist() == [0.0, 0.0]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_cross_entropy_gradient_with_huge_logits(dtype):
    x = funcgrad.tensor([[BIG, -BIG, 0.0]], dtype=getattr(funcgrad, dtype), requires_grad=True)
    funcgrad.nn.functional.cross_entropy(x, funcgrad.tensor([1])).backward()
    np.testing.assert_allclose(x.grad.numpy(), [[1.0, -1.0, 0.0]], atol=1e-6)
