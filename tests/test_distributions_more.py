"""PyTorch parity of ``Exponential``, ``Laplace``, ``Cauchy``, ``Geometric``, ``LogNormal`` and
``TransformedDistribution`` with the common transforms: samples drawn from the same seeded stream
are torch's, and ``log_prob``/``cdf``/``icdf``/``entropy``/moments and their gradients match."""

from __future__ import annotations

import numpy as np
import pytest

import funcgrad
from funcgrad import distributions as D

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.torch

TD = torch.distributions


def _params(lib, spec):
    return [lib.tensor(np.asarray(v, np.float32), requires_grad=True) if isinstance(v, list) else v for v in spec]


# (name, parameters: a list is a tensor requiring grad, a float stays a number, values to score)
CASES = [
    ("Exponential", [[0.5, 2.0, 3.0]], [0.3, 1.0, 2.5]),
    ("Exponential", [1.5], [0.3, 1.0, 2.5]),
    ("Laplace", [[0.0, 1.0, -1.0], [1.0, 2.0, 0.5]], [0.3, -1.0, 2.5]),
    ("Laplace", [0.5, 2.0], [0.3, -1.0, 2.5]),
    ("Cauchy", [[0.0, 1.0, -1.0], [1.0, 2.0, 0.5]], [0.3, -1.0, 2.5]),
    ("Geometric", [[0.3, 0.7, 0.05]], [0.0, 2.0, 5.0]),
    ("LogNormal", [[0.0, 1.0, -0.5], [1.0, 0.5, 0.3]], [0.3, 1.0, 2.5]),
    ("LogNormal", [0.2, 0.7], [0.3, 1.0, 2.5]),
]
METHODS = ["log_prob", "cdf", "icdf", "entropy", "mean", "mode", "variance", "stddev"]


def _eval(d, m, value):
    if m in ("log_prob", "cdf"):
        return getattr(d, m)(value)
    if m == "icdf":
        return d.icdf(value.sigmoid() * 0.98 + 0.01)
    if m == "entropy":
        return d.entropy()
    return getattr(d, m)


@pytest.mark.parametrize("name,spec,values", CASES, ids=[f"{c[0]}-{i}" for i, c in enumerate(CASES)])
def test_matches_torch(name, spec, values):
    pa, pb = _params(funcgrad, spec), _params(torch, spec)
    da, db = getattr(D, name)(*pa), getattr(TD, name)(*pb)
    assert repr(da) == repr(db).replace("torch.", "funcgrad.")
    assert tuple(da.batch_shape) == tuple(db.batch_shape)
    va, vb = funcgrad.tensor(values), torch.tensor(values)
    for m in METHODS:
        try:
            rb = _eval(db, m, vb)
        except NotImplementedError:
            with pytest.raises(NotImplementedError):
                _eval(da, m, va)
            continue
        ra = _eval(da, m, va)
        np.testing.assert_allclose(ra.detach().numpy(), rb.detach().numpy(), rtol=2e-5, atol=1e-6, err_msg=m)
        if rb.requires_grad:
            for p in (*pa, *pb):
                if isinstance(p, (funcgrad.Tensor, torch.Tensor)):
                    p.grad = None
            ra.sum().backward()
            rb.sum().backward()
            for a, b in zip(pa, pb):
                if isinstance(b, torch.Tensor):
                    assert (a.grad is None) == (b.grad is None), m
                    if b.grad is not None:
                        np.testing.assert_allclose(a.grad.numpy(), b.grad.numpy(), rtol=2e-5, atol=1e-6, err_msg=m)
    # samples: the same numbers from the same seed, and the stream left where torch leaves it
    funcgrad.manual_seed(11)
    torch.manual_seed(11)
    sa, sb = da.sample((4, 2)), db.sample((4, 2))
    assert tuple(sa.shape) == tuple(sb.shape)
    np.testing.assert_allclose(sa.numpy(), sb.numpy(), rtol=1e-6, atol=1e-6)
    if db.has_rsample:
        ra, rb = da.rsample((3,)), db.rsample((3,))
        np.testing.assert_allclose(ra.detach().numpy(), rb.detach().numpy(), rtol=1e-6, atol=1e-6)
        assert ra.requires_grad == rb.requires_grad
    np.testing.assert_array_equal(funcgrad.rand(2).numpy(), torch.rand(2).numpy())
    # expand
    ea, eb = da.expand((2, *da.batch_shape)), db.expand((2, *db.batch_shape))
    assert tuple(ea.batch_shape) == tuple(eb.batch_shape)
    xa, xb = ea.sample(), eb.sample()
    np.testing.assert_allclose(xa.numpy(), xb.numpy(), rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(ea.log_prob(xa).detach().numpy(), eb.log_prob(xb).detach().numpy(), rtol=2e-5)


def _transforms(lib):
    T = lib.distributions.transforms
    return {
        "affine_tanh": [T.AffineTransform(1.0, 2.0), T.TanhTransform()],
        "sigmoid": [T.SigmoidTransform()],
        "affine_event_exp": [T.AffineTransform(lib.tensor([1.0, 2.0, 0.0], dtype=lib.float64),
                                               lib.tensor([-1.0, 3.0, 0.5], dtype=lib.float64), event_dim=1),
                             T.ExpTransform()],
        "inverse_exp": T.ExpTransform().inv,
        "compose": [T.ComposeTransform([T.AffineTransform(0.5, -2.0), T.ExpTransform()])],
    }


@pytest.mark.parametrize("key", ["affine_tanh", "sigmoid", "affine_event_exp", "inverse_exp", "compose"])
def test_transformed_distribution_matches_torch(key):
    def build(lib):
        # float64: atanh/log near the ends of the support amplify float32 rounding of the sample
        loc = lib.tensor([0.1, -0.3, 0.7], dtype=lib.float64, requires_grad=True)
        scale = lib.tensor([0.5, 1.0, 0.8], dtype=lib.float64, requires_grad=True)
        base = lib.distributions.Normal(loc, scale)
        if key == "inverse_exp":
            base = lib.distributions.LogNormal(loc, scale)
        return lib.distributions.TransformedDistribution(base, _transforms(lib)[key]), (loc, scale)

    (da, pa), (db, pb) = build(funcgrad), build(torch)
    assert tuple(da.batch_shape) == tuple(db.batch_shape) and tuple(da.event_shape) == tuple(db.event_shape)
    assert repr(da.support) == repr(db.support)
    assert da.has_rsample == db.has_rsample
    funcgrad.manual_seed(5)
    torch.manual_seed(5)
    sa, sb = da.rsample((4,)), db.rsample((4,))
    np.testing.assert_allclose(sa.detach().numpy(), sb.detach().numpy(), rtol=1e-12, atol=1e-12)
    la, lb = da.log_prob(sa.detach()), db.log_prob(sb.detach())
    np.testing.assert_allclose(la.detach().numpy(), lb.detach().numpy(), rtol=1e-9, atol=1e-9)
    (la.sum() + sa.sum()).backward()
    (lb.sum() + sb.sum()).backward()
    for a, b in zip(pa, pb):
        np.testing.assert_allclose(a.grad.numpy(), b.grad.numpy(), rtol=1e-9, atol=1e-9)
    if not da.event_shape:
        u = [0.2, 0.5, 0.9]
        np.testing.assert_allclose(da.cdf(da.icdf(funcgrad.tensor(u, dtype=funcgrad.float64))).detach().numpy(),
                                   db.cdf(db.icdf(torch.tensor(u, dtype=torch.float64))).detach().numpy(),
                                   rtol=1e-9, atol=1e-9)


def test_transform_reprs_and_algebra_match_torch():
    ta, tb = _transforms(funcgrad), _transforms(torch)
    for k in ta:
        assert repr(ta[k]) == repr(tb[k])
    Ta, Tb = D.transforms, TD.transforms
    assert Ta.ExpTransform() == Ta.ExpTransform() and Tb.ExpTransform() == Tb.ExpTransform()
    assert (Ta.AffineTransform(1.0, 2.0) == Ta.AffineTransform(1.0, 2.0)) == (
        Tb.AffineTransform(1.0, 2.0) == Tb.AffineTransform(1.0, 2.0))
    assert Ta.AffineTransform(1.0, -2.0).sign == Tb.AffineTransform(1.0, -2.0).sign == -1
    ca, cb = Ta.ComposeTransform([Ta.ExpTransform(), Ta.TanhTransform()]), Tb.ComposeTransform(
        [Tb.ExpTransform(), Tb.TanhTransform()])
    assert repr(ca.inv) == repr(cb.inv) and ca.inv.inv is ca
    x = [0.1, 0.5, -2.0]
    np.testing.assert_allclose(ca.log_abs_det_jacobian(funcgrad.tensor(x), ca(funcgrad.tensor(x))).numpy(),
                               cb.log_abs_det_jacobian(torch.tensor(x), cb(torch.tensor(x))).numpy(), rtol=1e-5)
    cached = Ta.ExpTransform().with_cache()
    y = cached(funcgrad.tensor(x))
    assert cached.inv(y) is not None and cached._cached_x_y[1] is y
    for lib in (Ta, Tb):
        with pytest.raises(ValueError, match="cache_size must be 0 or 1"):
            lib.ExpTransform(cache_size=2)


@pytest.mark.parametrize("text", ["Geometric()", "Geometric(probs=lib.tensor(0.5), logits=lib.tensor(0.0))",
                                  "TransformedDistribution(Normal(0.0, 1.0), 3)",
                                  "TransformedDistribution(Normal(0.0, 1.0), [3])",
                                  "Exponential(lib.tensor([-1.0]))", "Laplace(0.0, lib.tensor([0.0]))",
                                  "Geometric(lib.tensor([0.0]))"])
def test_errors_match_torch(text):
    msgs = []
    for lib in (torch, funcgrad):
        ns = {"lib": lib, **{k: getattr(lib.distributions, k) for k in
                             ("Geometric", "TransformedDistribution", "Normal", "Exponential", "Laplace")}}
        with pytest.raises(ValueError) as e:
            eval(text, ns)
        msgs.append(str(e.value).replace("torch.", "funcgrad."))
    assert msgs[1] == msgs[0]


@pytest.mark.parametrize("event", [False, True])
def test_mixture_same_family_matches_torch(event):
    def build(lib):
        M = lib.distributions
        logits = lib.tensor([[0.2, -0.5, 1.0], [0.0, 0.3, -0.1]], requires_grad=True)
        loc = lib.tensor(np.linspace(-1, 1, 12, dtype=np.float32).reshape(2, 3, 2), requires_grad=True)
        scale = lib.tensor(np.linspace(0.5, 2, 12, dtype=np.float32).reshape(2, 3, 2), requires_grad=True)
        comp = M.Independent(M.Normal(loc, scale), 1) if event else M.Normal(loc[..., 0], scale[..., 0])
        return M.MixtureSameFamily(M.Categorical(logits=logits), comp), (logits, loc, scale)

    (da, pa), (db, pb) = build(funcgrad), build(torch)
    assert repr(da) == repr(db).replace("torch.", "funcgrad.")
    assert repr(da.support) == repr(db.support)
    assert tuple(da.batch_shape) == tuple(db.batch_shape) and tuple(da.event_shape) == tuple(db.event_shape)
    funcgrad.manual_seed(2)
    torch.manual_seed(2)
    sa, sb = da.sample((5,)), db.sample((5,))
    np.testing.assert_array_equal(sa.numpy(), sb.numpy())
    np.testing.assert_array_equal(funcgrad.rand(2).numpy(), torch.rand(2).numpy())
    outs = [(da.log_prob(sa), db.log_prob(sb)), (da.mean, db.mean), (da.variance, db.variance)]
    if not event:
        outs.append((da.cdf(sa), db.cdf(sb)))
    total_a, total_b = 0, 0
    for a, b in outs:
        np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=1e-5, atol=1e-6)
        total_a, total_b = total_a + a.sum(), total_b + b.sum()
    total_a.backward()
    total_b.backward()
    for a, b in zip(pa, pb):
        np.testing.assert_allclose(a.grad.numpy(), b.grad.numpy(), rtol=1e-5, atol=1e-6)
    ea, eb = da.expand((3, 2)), db.expand((3, 2))
    assert tuple(ea.batch_shape) == tuple(eb.batch_shape)
    with pytest.raises(ValueError) as e1:
        torch.distributions.MixtureSameFamily(torch.distributions.Categorical(logits=torch.zeros(4)),
                                              torch.distributions.Normal(torch.zeros(3), torch.ones(3)))
    with pytest.raises(ValueError) as e2:
        D.MixtureSameFamily(D.Categorical(logits=funcgrad.zeros(4)), D.Normal(funcgrad.zeros(3), funcgrad.ones(3)))
    assert str(e1.value) == str(e2.value)


NOSAMPLE = [
    ("StudentT", lambda lib: ([lib.tensor([0.5, 1.5, 3.0], requires_grad=True),
                               lib.tensor([0.0, 1.0, 2.0], requires_grad=True),
                               lib.tensor([1.0, 2.0, 0.5], requires_grad=True)], {})),
    ("Poisson", lambda lib: ([lib.tensor([0.5, 2.0, 3.0], requires_grad=True)], {})),
    ("Binomial", lambda lib: ([5], dict(probs=lib.tensor([0.2, 0.5, 0.9], requires_grad=True)))),
    ("Binomial", lambda lib: ([lib.tensor([3.0, 5.0, 2.0])], dict(logits=lib.tensor([0.2, -0.5, 1.9],
                                                                                     requires_grad=True)))),
]


@pytest.mark.parametrize("name,make", NOSAMPLE, ids=[f"{n}-{i}" for i, (n, _) in enumerate(NOSAMPLE)])
def test_log_prob_and_moments_match_torch_without_sampling(name, make):
    (aa, ak), (ba, bk) = make(funcgrad), make(torch)
    da, db = getattr(D, name)(*aa, **ak), getattr(TD, name)(*ba, **bk)
    assert repr(da) == repr(db).replace("torch.", "funcgrad.")
    v = [0.0, 1.0, 2.0]
    ta, tb = da.log_prob(funcgrad.tensor(v)), db.log_prob(torch.tensor(v))
    for m in ("mean", "mode", "variance", "entropy"):
        try:
            rb = db.entropy() if m == "entropy" else getattr(db, m)
        except NotImplementedError:
            with pytest.raises(NotImplementedError):
                da.entropy() if m == "entropy" else getattr(da, m)
            continue
        ra = da.entropy() if m == "entropy" else getattr(da, m)
        np.testing.assert_allclose(ra.detach().numpy(), rb.detach().numpy(), rtol=1e-5, atol=1e-6, err_msg=m)
        ta, tb = ta + ra.nan_to_num(0.0, 0.0, 0.0), tb + rb.nan_to_num(0.0, 0.0, 0.0)
    np.testing.assert_allclose(ta.detach().numpy(), tb.detach().numpy(), rtol=1e-5, atol=1e-5)
    ta.sum().backward()
    tb.sum().backward()
    params_a = [p for p in (*aa, *ak.values()) if isinstance(p, funcgrad.Tensor) and p.requires_grad]
    params_b = [p for p in (*ba, *bk.values()) if isinstance(p, torch.Tensor) and p.requires_grad]
    for a, b in zip(params_a, params_b):
        np.testing.assert_allclose(a.grad.numpy(), b.grad.numpy(), rtol=1e-5, atol=1e-5)
    if name == "Poisson":  # funcgrad.poisson is PyTorch's CPU sampler: the same draws and stream after
        funcgrad.manual_seed(3)
        torch.manual_seed(3)
        for shape in ((), (4,), (2, 3)):
            np.testing.assert_array_equal(da.sample(shape).numpy(), db.sample(shape).numpy())
        np.testing.assert_array_equal(funcgrad.rand(5).numpy(), torch.rand(5).numpy())
        return
    # no sampling: PyTorch's gamma/binomial streams are not reproduced, so it refuses
    with pytest.raises(NotImplementedError, match="does not sample"):
        da.sample()
