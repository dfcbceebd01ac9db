"""Special functions: edge values and subgradients PyTorch defines, the ``funcgrad.special``
namespace, errors, logdet, scatter_reduce gradients with ties / zeros."""

import math

import numpy as np
import pytest

import funcgrad as fg

NAMES = ("expit logit erf erfc erfinv erfcx exp2 expm1 log1p gammaln digamma psi polygamma "
         "multigammaln i0 i0e i1 i1e ndtr ndtri log_ndtr logsumexp softmax log_softmax xlogy "
         "xlog1py sinc round entr zeta").split()


def _g(f, vals):
    x = fg.tensor(vals, dtype=fg.float64, requires_grad=True)
    f(x).sum().backward()
    return x.grad.numpy()


def test_namespace_complete():
    for n in NAMES:
        assert callable(getattr(fg.special, n)), n
    for n in ("logdet", "logit", "polygamma", "mvlgamma", "i0", "frexp", "ldexp"):
        assert callable(getattr(fg, n)), n


def test_logit_edges():
    np.testing.assert_array_equal(_g(fg.logit, [0.0, 1.0, -1.0, 2.0])[:2], [np.inf, np.inf])
    assert np.isnan(_g(fg.logit, [-1.0, 2.0])).all()
    g = _g(lambda x: x.logit(eps=0.1), [0.0, 0.1, 0.9, 1.0])
    np.testing.assert_allclose(g, [0.0, 1 / 0.09, 1 / 0.09, 0.0])


def test_i0_entr_xlog1py_edges():
    assert _g(fg.i0, [0.0])[0] == 0.0
    np.testing.assert_array_equal(_g(fg.special.entr, [0.0, 1.0])[:2], [np.inf, -1.0])
    a = fg.tensor(0.0, requires_grad=True)
    b = fg.tensor(-1.0, requires_grad=True)
    fg.special.xlog1py(a, b).backward()
    assert a.grad.item() == 0.0 and math.isnan(b.grad.item())


def test_zeta_grad_only_wrt_q():
    # PyTorch's backward raises for x's derivative (not implemented): tests/test_special_igamma.py
    x = fg.tensor([3.0], requires_grad=True)
    q = fg.tensor([2.0], requires_grad=True)
    with pytest.raises(NotImplementedError, match="the derivative for 'zeta' is not implemented"):
        fg.special.zeta(x, q).sum().backward()
    assert x.grad is None and q.grad is None
    fg.special.zeta(x.detach(), q).sum().backward()
    np.testing.assert_allclose(q.grad.numpy(), -3 * fg.special.zeta(4.0, q).detach().numpy())


def test_frexp_ldexp():
    m, e = fg.frexp(fg.tensor([0.0, 1.0, -3.0, math.inf]))
    np.testing.assert_array_equal(m.numpy(), [0.0, 0.5, -0.75, math.inf])
    assert e.dtype == fg.int32 and e.tolist() == [0, 1, 2, 0]
    with pytest.raises(RuntimeError, match=r"torch.frexp\(\) only supports floating-point dtypes"):
        fg.frexp(fg.tensor([1, 2]))
    assert fg.ldexp(fg.tensor([1, 2]), fg.tensor([1, 2])).tolist() == [2.0, 8.0]


def test_errors():
    with pytest.raises(RuntimeError, match="does not support negative n"):
        fg.polygamma(-1, fg.tensor([1.0]))
    with pytest.raises(RuntimeError, match="p has to be greater than or equal to 1"):
        fg.mvlgamma(fg.tensor([2.0]), 0)
    with pytest.raises(RuntimeError, match="logdet: A must be batches of square matrices"):
        fg.logdet(fg.zeros(2, 3))


def test_logdet_values():
    assert math.isnan(fg.logdet(fg.tensor([[1.0, 2.0], [3.0, 4.0]])).item())
    assert fg.logdet(fg.tensor([[1.0, 2.0], [2.0, 4.0]])).item() == -math.inf
    a = fg.tensor([[2.0, 1.0], [1.0, 3.0]], dtype=fg.float64, requires_grad=True)
    y = a.logdet()
    assert y.grad_fn.name() == "WhereBackward0"
    y.backward()
    np.testing.assert_allclose(a.grad.numpy(), np.linalg.inv(a.detach().numpy()).T)


def test_special_round_node():
    x = fg.tensor([0.5, 1.5], requires_grad=True)
    assert fg.special.round(x).grad_fn.name() == "RoundBackward1"
    assert fg.special.expit(x).grad_fn.name() == "SigmoidBackward0"


@pytest.mark.parametrize("reduce", ["sum", "mean", "amax", "amin", "prod"])
@pytest.mark.parametrize("include_self", [True, False])
def test_scatter_reduce_grads_vs_torch(reduce, include_self):
    torch = pytest.importorskip("torch")
    x = np.array([[0.0, 1, -1, 2], [1, 0, 2, 2], [-1, 1, 0, 1]])
    s = np.array([[0.0, 2, 0, 1, 1], [1, 2, 2, 0, 1], [-1, 1, 0, 1, 1]])
    i = np.array([[0, 1, 0, 2, 0], [1, 1, 3, 3, 1], [2, 0, 2, 0, 2]])
    g = np.arange(12.0).reshape(3, 4) - 5
    tx, ts = torch.tensor(x, requires_grad=True), torch.tensor(s, requires_grad=True)
    torch.scatter_reduce(tx, 1, torch.tensor(i), ts, reduce, include_self=include_self).backward(
        torch.tensor(g))
    fx, fs = fg.tensor(x, requires_grad=True), fg.tensor(s, requires_grad=True)
    fg.scatter_reduce(fx, 1, fg.tensor(i), fs, reduce, include_self=include_self).backward(fg.tensor(g))
    np.testing.assert_allclose(fx.grad.numpy(), tx.grad.numpy())
    np.testing.assert_allclose(fs.grad.numpy(), ts.grad.numpy())
