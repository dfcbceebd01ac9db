"""funcgrad.distributions against torch.distributions: values (log_prob, entropy, mean, variance,
kl_divergence), their gradients, shapes of samples, rsample gradients, validation errors."""

from __future__ import annotations

import numpy as np
import pytest

import funcgrad
from funcgrad import distributions as D

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.torch

R = np.random.default_rng(0)
P3 = np.array([[0.2, 0.3, 0.5], [0.6, 0.1, 0.3]])
SPD = np.array([[[2.0, 0.3, 0.1], [0.3, 1.0, 0.2], [0.1, 0.2, 1.5]]])
TRIL = np.linalg.cholesky(SPD)

# (id, class, parameters {name: array}, value to score)
CASES = [
    ("normal", "Normal", {"loc": R.normal(size=4), "scale": R.uniform(0.5, 2, 4)}, R.normal(size=(2, 4))),
    ("uniform", "Uniform", {"low": np.zeros(3), "high": np.array([1.0, 2.0, 3.0])}, np.array([0.5, 1.0, 0.1])),
    ("bernoulli_probs", "Bernoulli", {"probs": np.array([0.2, 0.7, 0.5])}, np.array([1.0, 0.0, 1.0])),
    ("bernoulli_logits", "Bernoulli", {"logits": np.array([-1.0, 0.5, 2.0])}, np.array([0.0, 1.0, 1.0])),
    ("categorical_probs", "Categorical", {"probs": P3}, np.array([2, 0])),
    ("categorical_logits", "Categorical", {"logits": R.normal(size=(2, 3))}, np.array([1, 2])),
    ("onehot", "OneHotCategorical", {"probs": P3}, np.array([[0.0, 0.0, 1.0], [1.0, 0.0, 0.0]])),
    ("gamma", "Gamma", {"concentration": np.array([0.7, 2.0, 5.0]), "rate": np.array([1.0, 0.5, 3.0])},
     np.array([0.3, 2.0, 1.1])),
    ("beta", "Beta", {"concentration1": np.array([0.7, 2.0]), "concentration0": np.array([1.5, 3.0])},
     np.array([0.3, 0.8])),
    ("dirichlet", "Dirichlet", {"concentration": np.array([[0.7, 2.0, 3.0], [1.0, 1.0, 4.0]])},
     np.array([[0.2, 0.3, 0.5], [0.1, 0.1, 0.8]])),
    ("mvn_cov", "MultivariateNormal", {"loc": R.normal(size=(2, 3)), "covariance_matrix": SPD},
     R.normal(size=(2, 3))),
    ("mvn_tril", "MultivariateNormal", {"loc": R.normal(size=3), "scale_tril": TRIL[0]}, R.normal(size=(4, 3))),
    ("mvn_prec", "MultivariateNormal", {"loc": R.normal(size=3), "precision_matrix": SPD[0]},
     R.normal(size=3)),
]
VALUE_DTYPE = {"Categorical": "long"}


def _make(lib, cls, params, dtype, grad=True):
    mod = D if lib is funcgrad else torch.distributions
    ts = {k: lib.tensor(v, dtype=dtype, requires_grad=grad) for k, v in params.items()}
    return getattr(mod, cls)(**ts), ts


def _np(t):
    return np.asarray(t.detach().numpy() if hasattr(t, "detach") else t)


# float64 everywhere (tight tolerances; digamma/lgamma are different float64 approximations in
# JAX and PyTorch, hence 1e-8), float32 for two families (dtype propagation; compiles cost time)
DTYPES = [(c, "float64") for c in CASES] + [(c, "float32") for c in CASES if c[0] in ("normal", "categorical_logits")]


@pytest.mark.parametrize("case,dt", DTYPES, ids=[f"{c[0]}-{d}" for c, d in DTYPES])
def test_values_and_grads_match_torch(case, dt):
    cid, cls, params, value = case
    tol = dict(rtol=2e-5, atol=2e-5) if dt == "float32" else dict(rtol=1e-8, atol=1e-9)
    fd, fp = _make(funcgrad, cls, params, getattr(funcgrad, dt))
    td, tp = _make(torch, cls, params, getattr(torch, dt))
    assert tuple(fd.batch_shape) == tuple(td.batch_shape) and tuple(fd.event_shape) == tuple(td.event_shape)
    vdt = VALUE_DTYPE.get(cls)
    fv = funcgrad.tensor(value, dtype=funcgrad.int64 if vdt else getattr(funcgrad, dt))
    tv = torch.tensor(value, dtype=torch.int64 if vdt else getattr(torch, dt))
    flp, tlp = fd.log_prob(fv), td.log_prob(tv)
    assert flp.dtype.np == np.dtype(dt) and tuple(flp.shape) == tuple(tlp.shape)
    np.testing.assert_allclose(_np(flp), _np(tlp), **tol)
    np.testing.assert_allclose(_np(fd.entropy()), _np(td.entropy()), **tol)
    for prop in ("mean", "variance"):
        np.testing.assert_allclose(_np(getattr(fd, prop)), _np(getattr(td, prop)), **tol)
    # gradient of a combination through log_prob and entropy
    (flp.sum() + 0.5 * fd.entropy().sum()).backward()
    (tlp.sum() + 0.5 * td.entropy().sum()).backward()
    for k in params:
        np.testing.assert_allclose(_np(fp[k].grad), _np(tp[k].grad), **tol, err_msg=k)
    # expand and sample shapes
    fe, te = fd.expand((5,) + tuple(fd.batch_shape)), td.expand((5,) + tuple(td.batch_shape))
    assert (tuple(fe.batch_shape), tuple(fe.event_shape)) == (tuple(te.batch_shape), tuple(te.event_shape))
    assert tuple(fd.sample((6,)).shape) == tuple(td.sample((6,)).shape)
    assert fd.has_rsample == td.has_rsample
    if fd.has_rsample:
        s = fd.rsample((2,))
        assert tuple(s.shape) == tuple(td.rsample((2,)).shape) and s.requires_grad
    assert repr(fd.support) == repr(td.support).replace("torch.", "funcgrad.")


PAIRS = [
    ("normal", ("Normal", {"loc": np.array([0.0, 1.0]), "scale": np.array([1.0, 2.0])}),
     ("Normal", {"loc": np.array([0.5, -1.0]), "scale": np.array([0.7, 1.5])})),
    ("uniform", ("Uniform", {"low": np.array([0.2, 0.0]), "high": np.array([0.8, 2.0])}),
     ("Uniform", {"low": np.array([0.0, 0.5]), "high": np.array([1.0, 3.0])})),
    ("bernoulli", ("Bernoulli", {"probs": np.array([0.2, 0.7])}), ("Bernoulli", {"probs": np.array([0.5, 0.1])})),
    ("categorical", ("Categorical", {"probs": P3}), ("Categorical", {"logits": R.normal(size=(2, 3))})),
    ("onehot", ("OneHotCategorical", {"probs": P3}), ("OneHotCategorical", {"probs": P3[::-1].copy()})),
    ("gamma", ("Gamma", {"concentration": np.array([0.7, 2.0]), "rate": np.array([1.0, 3.0])}),
     ("Gamma", {"concentration": np.array([1.5, 1.0]), "rate": np.array([2.0, 0.5])})),
    ("beta", ("Beta", {"concentration1": np.array([0.7, 2.0]), "concentration0": np.array([1.5, 3.0])}),
     ("Beta", {"concentration1": np.array([1.0, 4.0]), "concentration0": np.array([2.0, 0.5])})),
    ("dirichlet", ("Dirichlet", {"concentration": np.array([0.7, 2.0, 3.0])}),
     ("Dirichlet", {"concentration": np.array([1.0, 1.0, 4.0])})),
    ("mvn", ("MultivariateNormal", {"loc": np.array([0.0, 1.0, 2.0]), "covariance_matrix": SPD[0]}),
     ("MultivariateNormal", {"loc": np.zeros(3), "scale_tril": np.diag([1.0, 2.0, 0.5])})),
    ("beta_normal", ("Beta", {"concentration1": np.array([0.7]), "concentration0": np.array([1.5])}),
     ("Normal", {"loc": np.array([0.3]), "scale": np.array([2.0])})),
    ("gamma_normal", ("Gamma", {"concentration": np.array([0.7]), "rate": np.array([1.5])}),
     ("Normal", {"loc": np.array([0.3]), "scale": np.array([2.0])})),
    ("uniform_normal", ("Uniform", {"low": np.array([0.0]), "high": np.array([2.0])}),
     ("Normal", {"loc": np.array([0.3]), "scale": np.array([2.0])})),
    ("uniform_gamma", ("Uniform", {"low": np.array([0.5]), "high": np.array([2.0])}),
     ("Gamma", {"concentration": np.array([2.0]), "rate": np.array([1.5])})),
    ("uniform_beta", ("Uniform", {"low": np.array([0.2]), "high": np.array([0.6])}),
     ("Beta", {"concentration1": np.array([2.0]), "concentration0": np.array([1.5])})),
    ("beta_gamma", ("Beta", {"concentration1": np.array([2.0]), "concentration0": np.array([1.5])}),
     ("Gamma", {"concentration": np.array([2.0]), "rate": np.array([1.5])})),
    ("normal_gamma_inf", ("Normal", {"loc": np.array([0.0]), "scale": np.array([1.0])}),
     ("Gamma", {"concentration": np.array([2.0]), "rate": np.array([1.5])})),
]


@pytest.mark.parametrize("pid,p,q", PAIRS, ids=[c[0] for c in PAIRS])
def test_kl_divergence_matches_torch(pid, p, q):
    fdp, fpp = _make(funcgrad, *p, funcgrad.float64)
    fdq, _ = _make(funcgrad, *q, funcgrad.float64)
    tdp, tpp = _make(torch, *p, torch.float64)
    tdq, _ = _make(torch, *q, torch.float64)
    fk, tk = D.kl_divergence(fdp, fdq), torch.distributions.kl_divergence(tdp, tdq)
    np.testing.assert_allclose(_np(fk), _np(tk), rtol=1e-10)
    if np.isfinite(_np(tk)).all():
        fk.sum().backward()
        tk.sum().backward()
        for k in fpp:
            np.testing.assert_allclose(_np(fpp[k].grad), _np(tpp[k].grad), rtol=1e-8, atol=1e-10)  # digamma/trigamma approximations


def test_independent_matches_torch():
    loc, scale = R.normal(size=(2, 3)), R.uniform(0.5, 1.5, (2, 3))
    f = D.Independent(D.Normal(funcgrad.tensor(loc), funcgrad.tensor(scale)), 1)
    t = torch.distributions.Independent(torch.distributions.Normal(torch.tensor(loc), torch.tensor(scale)), 1)
    assert (tuple(f.batch_shape), tuple(f.event_shape)) == (tuple(t.batch_shape), tuple(t.event_shape)) == ((2,), (3,))
    v = R.normal(size=(2, 3))
    np.testing.assert_allclose(_np(f.log_prob(funcgrad.tensor(v))), _np(t.log_prob(torch.tensor(v))), rtol=1e-12)
    np.testing.assert_allclose(_np(f.entropy()), _np(t.entropy()), rtol=1e-12)
    f2 = D.Independent(D.Normal(funcgrad.tensor(loc[::-1].copy()), funcgrad.tensor(scale)), 1)
    t2 = torch.distributions.Independent(torch.distributions.Normal(torch.tensor(loc[::-1].copy()),
                                                                    torch.tensor(scale)), 1)
    np.testing.assert_allclose(_np(D.kl_divergence(f, f2)), _np(torch.distributions.kl_divergence(t, t2)))
    assert repr(f) == repr(t).replace("torch.", "funcgrad.")
    assert repr(f.support) == repr(t.support)


def test_reprs_match_torch():
    assert repr(D.Normal(0.0, 1.0)) == repr(torch.distributions.Normal(0.0, 1.0))
    assert repr(D.Normal(funcgrad.tensor([0.0]), 1.0)) == repr(torch.distributions.Normal(torch.tensor([0.0]), 1.0))
    assert repr(D.Categorical(probs=funcgrad.ones(2, 3))) == repr(torch.distributions.Categorical(
        probs=torch.ones(2, 3))).replace("torch.", "funcgrad.")


def _err(fn):
    with pytest.raises(Exception) as e:
        fn()
    return type(e.value), str(e.value).replace("torch.", "funcgrad.")


BAD = [
    ("negative_scale", lambda m, lib: m.Normal(lib.tensor([0.0, 1.0]), lib.tensor([1.0, -1.0]))),
    ("scalar_scale", lambda m, lib: m.Normal(0.0, -1.0)),
    ("probs_out_of_range", lambda m, lib: m.Bernoulli(probs=lib.tensor([1.5]))),
    ("both_probs_logits", lambda m, lib: m.Categorical(probs=lib.ones(3), logits=lib.ones(3))),
    ("neither", lambda m, lib: m.Bernoulli()),
    ("probs_0d", lambda m, lib: m.Categorical(probs=lib.tensor(1.0))),
    ("log_prob_out_of_support", lambda m, lib: m.Categorical(probs=lib.ones(3)).log_prob(lib.tensor(3))),
    ("log_prob_not_tensor", lambda m, lib: m.Normal(0.0, 1.0).log_prob(0.5)),
    ("log_prob_bad_shape", lambda m, lib: m.Normal(lib.zeros(3), 1.0).log_prob(lib.zeros(2))),
    ("log_prob_event_shape", lambda m, lib: m.Dirichlet(lib.ones(3)).log_prob(lib.ones(2) / 2)),
    ("gamma_support", lambda m, lib: m.Gamma(1.0, 1.0).log_prob(lib.tensor(-1.0))),
    ("mvn_two_params", lambda m, lib: m.MultivariateNormal(lib.zeros(2), lib.eye(2), scale_tril=lib.eye(2))),
    ("mvn_not_pd", lambda m, lib: m.MultivariateNormal(lib.zeros(2), lib.tensor([[1.0, 2.0], [2.0, 1.0]]))),
    ("independent_ndims", lambda m, lib: m.Independent(m.Normal(lib.zeros(3), 1.0), 2)),
    ("kl_missing", lambda m, lib: m.kl_divergence(m.Categorical(probs=lib.ones(2)), m.Normal(0.0, 1.0))),
    ("uniform_low_high", lambda m, lib: m.Uniform(lib.tensor([1.0]), lib.tensor([0.0]))),
]


@pytest.mark.parametrize("bid,fn", BAD, ids=[b[0] for b in BAD])
def test_errors_match_torch(bid, fn):
    assert _err(lambda: fn(D, funcgrad)) == _err(lambda: fn(torch.distributions, torch))


def test_validate_args_false_skips_checks():
    d = D.Normal(0.0, -1.0, validate_args=False)
    assert float(d.scale) == -1.0


def test_reinforce_gradient_matches_torch():
    logits = R.normal(size=(5, 4))
    actions = np.array([0, 3, 1, 1, 2])
    returns = R.normal(size=5)
    grads = []
    for lib, mod in ((funcgrad, D), (torch, torch.distributions)):
        lg = lib.tensor(logits, requires_grad=True)
        dist = mod.Categorical(logits=lg)
        loss = -(dist.log_prob(lib.tensor(actions)) * lib.tensor(returns)).sum() - 0.01 * dist.entropy().sum()
        loss.backward()
        grads.append(_np(lg.grad))
    np.testing.assert_allclose(grads[0], grads[1], rtol=1e-12)


def test_normal_rsample_is_reparameterised():
    loc = funcgrad.tensor([0.5, -1.0], requires_grad=True)
    scale = funcgrad.tensor([2.0, 0.5], requires_grad=True)
    d = D.Normal(loc, scale)
    funcgrad.manual_seed(3)
    s = d.rsample((1000,))
    s.sum().backward()
    funcgrad.manual_seed(3)
    eps = funcgrad.randn(1000, 2, dtype=funcgrad.float32)
    np.testing.assert_allclose(_np(s), _np(loc + eps * scale), rtol=1e-6)
    np.testing.assert_allclose(_np(loc.grad), [1000.0, 1000.0])
    np.testing.assert_allclose(_np(scale.grad), _np(eps.sum(0)), rtol=1e-5)
    assert not d.sample().requires_grad


def test_gamma_rsample_gradient_is_torchs_implicit_gradient():
    alpha = funcgrad.tensor([0.4, 1.0, 2.5, 7.0], dtype=funcgrad.float64, requires_grad=True)
    rate = funcgrad.tensor([1.0, 2.0, 0.5, 3.0], dtype=funcgrad.float64, requires_grad=True)
    x = D.Gamma(alpha, rate).rsample()
    assert x.grad_fn.name() == "DivBackward0"
    x.sum().backward()
    xs = _np(x) * _np(rate)  # the standard-gamma draw
    want = torch._standard_gamma_grad(torch.tensor(_np(alpha)), torch.tensor(xs)).numpy() / _np(rate)
    # PyTorch's _standard_gamma_grad is an approximation within ~5e-5 of the exact implicit
    # derivative; funcgrad's (lax.random_gamma_grad) is exact to float64 rounding (spec row in
    # tests/op_specs/spec_distributions.py checks it against the CDF's implicit derivative)
    np.testing.assert_allclose(_np(alpha.grad), want, rtol=1e-4)
    np.testing.assert_allclose(_np(rate.grad), -_np(x) / _np(rate), rtol=1e-12)


def test_gamma_family_sample_moments():
    funcgrad.manual_seed(0)
    for d, mean, var in [(D.Gamma(funcgrad.tensor(3.0), funcgrad.tensor(2.0)), 1.5, 0.75),
                         (D.Beta(funcgrad.tensor(2.0), funcgrad.tensor(3.0)), 0.4, 0.04)]:
        s = _np(d.sample((20000,)))
        assert abs(s.mean() - mean) < 0.03 and abs(s.var() - var) < 0.04
    s = _np(D.Dirichlet(funcgrad.tensor([1.0, 2.0, 3.0])).sample((20000,)))
    np.testing.assert_allclose(s.sum(-1), 1.0, rtol=1e-5)
    np.testing.assert_allclose(s.mean(0), [1 / 6, 2 / 6, 3 / 6], atol=0.01)


def test_categorical_and_bernoulli_sample_frequencies():
    funcgrad.manual_seed(0)
    s = _np(D.Categorical(probs=funcgrad.tensor([0.1, 0.2, 0.7])).sample((20000,)))
    assert s.dtype == np.int64
    np.testing.assert_allclose(np.bincount(s, minlength=3) / 20000, [0.1, 0.2, 0.7], atol=0.015)
    b = _np(D.Bernoulli(probs=funcgrad.tensor([0.3, 0.9])).sample((20000,)))
    np.testing.assert_allclose(b.mean(0), [0.3, 0.9], atol=0.015)


def test_register_kl_custom_pair():
    class MyNormal(D.Normal):
        pass

    @D.register_kl(MyNormal, D.Normal)
    def _kl(p, q):
        return (p.loc - q.loc).abs()

    assert float(D.kl_divergence(MyNormal(1.0, 1.0), D.Normal(3.0, 1.0))) == 2.0
    # the closed form still serves the base pair
    assert float(D.kl_divergence(D.Normal(1.0, 1.0), D.Normal(1.0, 1.0))) == 0.0


def test_distributions_inside_jit():
    w = funcgrad.nn.Parameter(funcgrad.zeros(3))
    opt = funcgrad.optim.SGD([w], lr=0.1)
    a, r = funcgrad.tensor([0, 2, 2]), funcgrad.tensor([1.0, -1.0, 2.0])

    def step():
        opt.zero_grad()
        dist = D.Categorical(logits=w.expand(3, 3))
        loss = -(dist.log_prob(a) * r).sum()
        loss.backward()
        opt.step()
        return loss

    eager_w = w.detach().clone()
    loss_c = funcgrad.jit(step)()
    wc = w.detach().clone()
    with funcgrad.no_grad():
        w.copy_(eager_w)
    loss_e = step()
    np.testing.assert_allclose(_np(loss_c), _np(loss_e), rtol=1e-6)
    np.testing.assert_allclose(_np(wc), _np(w), rtol=1e-6)
