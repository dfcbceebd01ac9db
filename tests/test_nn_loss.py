"""Losses: values and gradients vs hand-written jax.numpy, PyTorch's node names, errors, warnings,
modules; optional comparison with PyTorch where it is installed."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import funcgrad
import funcgrad.nn.functional as F
from funcgrad import nn

RNG = np.random.default_rng(0)
X = RNG.standard_normal((5, 4)).astype(np.float32)
Y = RNG.standard_normal((5, 4)).astype(np.float32)
T = np.array([0, 1, 3, 2, -100])
W = np.array([0.5, 1.0, 2.0, 1.5], np.float32)


def _grad(f, *arrs):
    ts = [funcgrad.tensor(a, requires_grad=True) for a in arrs]
    out = f(*ts)
    out.backward()
    return out, [np.asarray(t.grad._value) for t in ts]


def test_cross_entropy_matches_jnp_weighted_ignore_smoothing():
    def ref(x):
        logp = jax.nn.log_softmax(x, 1)
        keep = T != -100
        safe = np.where(keep, T, 0)
        wt = np.where(keep, W[safe], 0)
        nll = -(logp[np.arange(5), safe] * wt).sum() / wt.sum()
        smooth = jnp.where(keep, -(logp * W).sum(1), 0).sum() / wt.sum()
        return 0.8 * nll + 0.2 / 4 * smooth
    out, (g,) = _grad(lambda x: F.cross_entropy(x, funcgrad.tensor(T), funcgrad.tensor(W),
                                                label_smoothing=0.2), X)
    np.testing.assert_allclose(out.item(), ref(X), rtol=1e-5)
    np.testing.assert_allclose(g, jax.grad(ref)(X), rtol=1e-5, atol=1e-6)
    assert out.grad_fn.name() == "AddBackward0"


def test_cross_entropy_names_and_shapes():
    x = funcgrad.tensor(X, requires_grad=True)
    t = funcgrad.tensor(np.abs(T) % 4)
    assert F.cross_entropy(x, t).grad_fn.name() == "NllLossBackward0"
    assert F.cross_entropy(x, t, reduction="none").shape == (5,)
    x3 = funcgrad.randn(2, 4, 3, requires_grad=True)
    t3 = funcgrad.tensor([[0, 1, 3], [2, 2, 1]])
    assert F.cross_entropy(x3, t3, reduction="none").shape == (2, 3)
    p = funcgrad.softmax(funcgrad.randn(5, 4), 1) if hasattr(funcgrad, "softmax") else F.softmax(funcgrad.randn(5, 4), 1)
    assert F.cross_entropy(x, p).grad_fn.name() == "DivBackward1"
    assert F.cross_entropy(funcgrad.randn(4), funcgrad.tensor(2)).shape == ()
    assert F.mse_loss(x, funcgrad.tensor(Y)).grad_fn.name() == "MseLossBackward0"
    assert F.l1_loss(x, funcgrad.tensor(Y)).grad_fn.name() == "MeanBackward0"
    assert F.kl_div(x, p, reduction="batchmean").grad_fn.name() == "DivBackward0"


def test_all_ignored_mean_is_nan_sum_is_zero():
    x = funcgrad.tensor(X)
    t = funcgrad.tensor([-100] * 5)
    assert np.isnan(F.cross_entropy(x, t).item())
    assert F.cross_entropy(x, t, reduction="sum").item() == 0.0


@pytest.mark.parametrize("target, exc, msg", [
    (np.array([0., 1, 2, 3, 0], np.float32), RuntimeError, "expected target dtype to be Long or Byte, but got Float"),
    (np.array([0, 1]), ValueError, r"Expected input batch_size \(5\) to match target batch_size \(2\)."),
    (np.array([0, 1, 5, 0, 0]), IndexError, "Target 5 is out of bounds."),
    (np.array([0, 1, -3, 0, 0]), IndexError, "Target -3 is out of bounds."),
])
def test_cross_entropy_errors(target, exc, msg):
    with pytest.raises(exc, match=msg):
        F.cross_entropy(funcgrad.tensor(X), funcgrad.tensor(target))


def test_other_errors():
    x = funcgrad.tensor(X)
    with pytest.raises(ValueError, match="foo is not a valid value for reduction"):
        F.mse_loss(x, x, reduction="foo")
    with pytest.raises(RuntimeError, match="weight tensor should be defined either for all 4 classes"):
        F.cross_entropy(x, funcgrad.tensor([0, 1, 2, 3, 0]), weight=funcgrad.ones(3))
    with pytest.raises(RuntimeError, match="all elements of input should be between 0 and 1"):
        F.binary_cross_entropy(funcgrad.tensor([1.5, 0.5]), funcgrad.tensor([1.0, 0.0]))
    with pytest.raises(ValueError, match="Target size"):
        F.binary_cross_entropy_with_logits(funcgrad.zeros(3), funcgrad.zeros(4))
    with pytest.raises(RuntimeError, match="label_smoothing must be between 0.0 and 1.0. Got: 1.5"):
        F.cross_entropy(x, funcgrad.tensor([0, 1, 2, 3, 0]), label_smoothing=1.5)


def test_broadcast_warning_and_kl_mean_warning():
    x = funcgrad.tensor(X)
    with pytest.warns(UserWarning, match="Using a target size"):
        F.mse_loss(x, funcgrad.tensor(Y[0]))
    with pytest.warns(UserWarning), pytest.raises(RuntimeError, match="must match the size"):
        F.l1_loss(x, funcgrad.zeros(2, 4))
    with pytest.warns(UserWarning, match="'batchmean' divides only by the batch size"):
        F.kl_div(x, funcgrad.tensor(np.abs(Y)))


def test_bce_clamped_log_and_logits_stable():
    out = F.binary_cross_entropy(funcgrad.tensor([1.0, 0.0]), funcgrad.tensor([0.0, 1.0]))
    assert out.item() == 100.0
    big = F.binary_cross_entropy_with_logits(funcgrad.tensor([200.0, -200.0]), funcgrad.tensor([0.0, 1.0]),
                                             reduction="none")
    np.testing.assert_allclose(np.asarray(big._value), [200.0, 200.0])


def test_bce_with_logits_pos_weight_grad():
    pw = np.array([1.0, 2.0, 3.0, 0.5], np.float32)
    y = (Y > 0).astype(np.float32)

    def ref(x):
        s = jax.nn.sigmoid(x)
        return jnp.mean(-(pw * y * jnp.log(s) + (1 - y) * jnp.log(1 - s)))
    out, (g,) = _grad(lambda x: F.binary_cross_entropy_with_logits(x, funcgrad.tensor(y),
                                                                     pos_weight=funcgrad.tensor(pw)), X)
    np.testing.assert_allclose(out.item(), ref(X), rtol=1e-5)
    np.testing.assert_allclose(g, jax.grad(ref)(X), rtol=1e-5, atol=1e-7)
    assert out.grad_fn.name() == "BinaryCrossEntropyWithLogitsBackward0"


def test_modules():
    x, y = funcgrad.tensor(X), funcgrad.tensor(Y)
    assert repr(nn.CrossEntropyLoss()) == "CrossEntropyLoss()"
    np.testing.assert_allclose(nn.MSELoss(reduction="sum")(x, y).item(), ((X - Y) ** 2).sum(), rtol=1e-5)
    np.testing.assert_allclose(nn.HuberLoss(delta=0.5)(x, y).item(),
                               F.huber_loss(x, y, delta=0.5).item())
    loss = nn.CrossEntropyLoss(weight=funcgrad.tensor(W), ignore_index=1)(x, funcgrad.tensor([0, 1, 3, 2, 1]))
    assert loss.shape == ()
    assert "weight" in dict(nn.NLLLoss(weight=funcgrad.tensor(W)).named_buffers())
    with pytest.warns(UserWarning, match="size_average and reduce args will be deprecated"):
        assert nn.L1Loss(size_average=False).reduction == "sum"


def test_against_torch():
    torch = pytest.importorskip("torch")
    tf = torch.nn.functional
    x, y, p = X, Y, np.abs(Y) / np.abs(Y).sum(1, keepdims=True)
    cases = [
        (tf.cross_entropy, F.cross_entropy, (x, T, W), dict(label_smoothing=0.1)),
        (tf.cross_entropy, F.cross_entropy, (x, p), dict(label_smoothing=0.1)),
        (tf.nll_loss, F.nll_loss, (x, np.abs(T) % 4), dict(reduction="sum")),
        (tf.smooth_l1_loss, F.smooth_l1_loss, (x, y), dict(beta=0.3)),
        (tf.kl_div, F.kl_div, (x, p), dict(reduction="batchmean")),
        (tf.triplet_margin_loss, F.triplet_margin_loss, (x, y, x * 2), dict(swap=True)),
        (tf.cosine_embedding_loss, F.cosine_embedding_loss, (x, y, np.array([1, -1, 1, -1, 1])), {}),
        (tf.gaussian_nll_loss, F.gaussian_nll_loss, (x, y, np.abs(y) + 0.1), dict(full=True)),
        (tf.poisson_nll_loss, F.poisson_nll_loss, (x, np.abs(y)), {}),
        (tf.multi_margin_loss, F.multi_margin_loss, (x, np.array([0, 1, 3, 2, 1])), dict(margin=0.5)),
    ]
    for tfn, ffn, args, kw in cases:
        ta = [torch.tensor(a, requires_grad=i == 0) for i, a in enumerate(args)]
        fa = [funcgrad.tensor(a, requires_grad=i == 0) for i, a in enumerate(args)]
        a, b = tfn(*ta, **kw), ffn(*fa, **kw)
        a.backward()
        b.backward()
        np.testing.assert_allclose(a.item(), b.item(), rtol=1e-5, err_msg=tfn.__name__)
        np.testing.assert_allclose(ta[0].grad.numpy(), np.asarray(fa[0].grad._value), rtol=1e-4, atol=1e-6)
