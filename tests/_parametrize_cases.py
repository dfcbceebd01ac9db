"""Cases recorded from PyTorch for tests/test_parametrizations.py (each ``case(lib)`` returns a list
of outcomes, NumPy arrays or normalised strings, for ``lib`` funcgrad or torch):
``nn.utils.parametrize`` (registration, identity of the original, ``cached``, chaining,
``right_inverse``, removal, errors), ``parametrizations.orthogonal`` (each map, with and without the
trivialization, tall/wide/batched, its initial value and gradients) and
``parametrizations.spectral_norm`` (``_u``/``_v`` draws and power iteration, train/eval, ``dim``,
gradients), and the Parametrizations Tutorial's printed lines."""

from __future__ import annotations

import warnings

import numpy as np

from ._prune_cases import err, norm_text


def _P(lib):
    return __import__(lib.__name__ + ".nn.utils.parametrize", fromlist=["parametrize"])


def _Z(lib):
    return __import__(lib.__name__ + ".nn.utils.parametrizations", fromlist=["parametrizations"])


def _a(t) -> np.ndarray:
    return t.detach().numpy().copy()


def _names(m) -> list:
    return [norm_text([n for n, _ in m.named_parameters()]), norm_text([n for n, _ in m.named_buffers()]),
            norm_text(list(m.state_dict().keys()))]


def _modules(lib):
    nn = lib.nn

    class Symmetric(nn.Module):
        def forward(self, X):
            return X.triu() + X.triu(1).transpose(-1, -2)

    class Skew(nn.Module):
        def forward(self, X):
            A = X.triu(1)
            return A - A.transpose(-1, -2)

        def right_inverse(self, A):
            return A.triu(1)

    class CayleyMap(nn.Module):
        def __init__(self, n):
            super().__init__()
            self.register_buffer("Id", lib.eye(n))

        def forward(self, X):
            return lib.linalg.solve(self.Id - X, self.Id + X)

        def right_inverse(self, A):
            return lib.linalg.solve(A + self.Id, A - self.Id)

    class RankOne(nn.Module):
        def forward(self, x, y):
            return x.unsqueeze(-1) @ y.unsqueeze(-2)

        def right_inverse(self, Z):
            return Z[:, 0], Z[0, :] / Z[0, 0]

    return Symmetric, Skew, CayleyMap, RankOne


# ---- parametrize ------------------------------------------------------------------------------------
def _identity_module(lib):
    class Id(lib.nn.Module):
        def forward(self, X):
            return X * 1.0
    return Id()


def register_and_remove(lib):
    P = _P(lib)
    Symmetric, Skew, CayleyMap, RankOne = _modules(lib)
    lib.manual_seed(0)
    m = lib.nn.Linear(3, 3)
    w = m.weight
    P.register_parametrization(m, "weight", Symmetric())
    out = [_a(m.weight), norm_text(type(m).__name__), norm_text(m), *_names(m),
           norm_text(m.parametrizations.weight.original is w), norm_text(P.is_parametrized(m)),
           norm_text((P.is_parametrized(m, "weight"), P.is_parametrized(m, "bias"))),
           norm_text(P.type_before_parametrizations(m).__name__)]
    m(lib.ones(2, 3)).sum().backward()
    out.append(_a(w.grad))
    P.remove_parametrizations(m, "weight")
    out += [_a(m.weight), norm_text(m.weight is w), norm_text(type(m).__name__), *_names(m)]
    # a buffer stays a buffer, leave_parametrized=False gives back the original values
    b = lib.nn.BatchNorm1d(3)
    with lib.no_grad():
        b.running_var.copy_(lib.tensor([1.0, 2.0, 3.0]))
    P.register_parametrization(b, "running_var", _identity_module(lib))
    out += _names(b)
    P.remove_parametrizations(b, "running_var", leave_parametrized=False)
    out += _names(b) + [_a(b.running_var)]
    # several originals (RankOne), then left parametrized: a new Parameter
    r = lib.nn.Linear(3, 2, bias=False)
    P.register_parametrization(r, "weight", RankOne())
    out += _names(r) + [_a(r.weight), _a(r.parametrizations.weight.original0),
                        _a(r.parametrizations.weight.original1)]
    out.append(err(lambda: P.remove_parametrizations(r, "weight", leave_parametrized=False)))
    P.remove_parametrizations(r, "weight")
    out += _names(r) + [_a(r.weight), norm_text(type(r.weight).__name__)]
    return out


def chain_and_right_inverse(lib):
    P = _P(lib)
    Symmetric, Skew, CayleyMap, RankOne = _modules(lib)
    lib.manual_seed(1)
    m = lib.nn.Linear(3, 3)
    P.register_parametrization(m, "weight", Skew())
    P.register_parametrization(m, "weight", CayleyMap(3))
    X = m.weight
    out = [_a(X), _a(X.T @ X), norm_text(m), *_names(m)]
    Q = lib.empty(3, 3)
    lib.nn.init.orthogonal_(Q)
    if Q.det() < 0.0:
        Q[0].neg_()
    m.weight = Q
    out += [_a(m.weight), _a(m.parametrizations.weight.original)]
    m.train(False)
    s = lib.nn.Linear(2, 2)
    s.eval()
    sym = Symmetric()
    P.register_parametrization(s, "weight", sym)
    out.append(norm_text((sym.training, m.parametrizations.weight[1].training)))
    out.append(err(lambda: setattr(s, "weight", lib.eye(2))))
    return out


def cached(lib):
    P = _P(lib)
    calls = []

    class Counting(lib.nn.Module):
        def forward(self, X):
            calls.append(1)
            return X * 2

    lib.manual_seed(2)
    m = lib.nn.Linear(4, 4)
    P.register_parametrization(m, "weight", Counting())
    n0 = len(calls)
    _ = m.weight + m.weight.T
    n1 = len(calls)
    with P.cached():
        a = m.weight
        _ = m.weight.sum()
        with P.cached():
            b = m.weight
        c = m.weight
    n2 = len(calls)
    d = m.weight
    return [norm_text((n0, n1 - n0, n2 - n1, a is b, a is c, d is a, len(calls) - n2))]


def errors(lib):
    P = _P(lib)
    Symmetric, Skew, CayleyMap, RankOne = _modules(lib)
    nn = lib.nn

    class Shrink(nn.Module):
        def forward(self, X):
            return X[:1]

    class Half(nn.Module):
        def forward(self, X):
            return X.double()

    class BadInverse(nn.Module):
        def forward(self, X):
            return X

        def right_inverse(self, X):
            return X.double()

    class NotTensor(nn.Module):
        def forward(self, X):
            return X

        def right_inverse(self, X):
            return 3

    def appended(par):
        m = nn.Linear(3, 3)
        P.register_parametrization(m, "weight", Symmetric())
        P.register_parametrization(m, "weight", par)

    return [
        err(lambda: P.register_parametrization(nn.Linear(3, 3), "foo", Symmetric())),
        err(lambda: P.register_parametrization(nn.Linear(3, 2), "weight", Shrink())),
        err(lambda: P.register_parametrization(nn.Linear(3, 2), "weight", Half())),
        err(lambda: P.register_parametrization(nn.Linear(3, 2), "weight", BadInverse())),
        err(lambda: P.register_parametrization(nn.Linear(3, 2), "weight", NotTensor())),
        err(lambda: appended(Shrink())),
        err(lambda: appended(Half())),
        err(lambda: appended(BadInverse())),
        err(lambda: P.remove_parametrizations(nn.Linear(3, 3), "weight")),
        err(lambda: P.ParametrizationList([], lib.ones(2))),
    ]


# ---- orthogonal -------------------------------------------------------------------------------------
def _orth_case(lib, shape, orthogonal_map, use_trivialization, seed):
    Z = _Z(lib)
    lib.manual_seed(seed)
    m = lib.nn.Linear(shape[-1], shape[-2], bias=False)
    if len(shape) > 2:
        m.weight = lib.nn.Parameter(lib.randn(*shape))
    Z.orthogonal(m, orthogonal_map=orthogonal_map, use_trivialization=use_trivialization)
    Q = m.weight
    gram = Q @ Q.mT if shape[-2] < shape[-1] else Q.mT @ Q
    out = [_a(Q), _a(gram), *_names(m), norm_text(m)]
    (Q * lib.arange(float(Q.numel())).reshape(Q.shape)).sum().backward()
    out.append(_a(m.parametrizations.weight.original.grad))
    return out


def orthogonal_default(lib):
    out = []
    for shape, seed in (((4, 4), 0), ((5, 3), 1), ((3, 5), 2), ((2, 4, 3), 3)):
        out += _orth_case(lib, shape, None, True, seed)
    return out


def orthogonal_maps(lib):
    out = []
    for mp in ("matrix_exp", "cayley", "householder"):
        for shape, seed in (((4, 4), 4), ((5, 3), 5), ((2, 3, 4), 6)):
            out += _orth_case(lib, shape, mp, True, seed)
    return out


def orthogonal_no_trivialization(lib):
    out = []
    for mp in ("matrix_exp", "cayley", "householder"):
        for shape, seed in (((4, 4), 7), ((5, 3), 8), ((3, 5), 9)):
            out += _orth_case(lib, shape, mp, False, seed)
    return out


def orthogonal_assign_and_errors(lib):
    Z = _Z(lib)
    lib.manual_seed(10)
    out = []
    for mp, triv in (("householder", False), ("householder", True), ("matrix_exp", True), ("cayley", True)):
        m = Z.orthogonal(lib.nn.Linear(3, 4), orthogonal_map=mp, use_trivialization=triv)
        Q = lib.empty(4, 3)
        lib.nn.init.orthogonal_(Q)
        m.weight = Q
        out += [_a(m.weight), _a(m.parametrizations.weight.original)]
    m = Z.orthogonal(lib.nn.Linear(3, 3), orthogonal_map="matrix_exp", use_trivialization=False)
    out.append(err(lambda: setattr(m, "weight", lib.eye(3))))
    out.append(err(lambda: setattr(Z.orthogonal(lib.nn.Linear(3, 4)), "weight", lib.eye(3))))
    out.append(err(lambda: Z.orthogonal(lib.nn.Linear(3, 4), orthogonal_map="qr")))
    out.append(err(lambda: Z.orthogonal(lib.nn.Linear(3, 4), "bias")))
    out.append(err(lambda: Z.orthogonal(lib.nn.Linear(3, 4), "nope")))
    c = lib.nn.Linear(2, 2)
    c.weight = lib.nn.Parameter(lib.randn(2, 2, dtype=lib.complex64))
    out.append(err(lambda: Z.orthogonal(c, orthogonal_map="householder")))
    return out


# ---- spectral_norm ----------------------------------------------------------------------------------
def spectral_norm(lib):
    Z = _Z(lib)
    out = []
    for seed, make, kw, xshape in ((0, lambda: lib.nn.Linear(5, 3), {}, (2, 5)),
                                   (1, lambda: lib.nn.Conv2d(2, 4, 3), {"n_power_iterations": 3}, (2, 2, 5, 5)),
                                   (2, lambda: lib.nn.ConvTranspose2d(3, 2, 2), {}, (2, 3, 4, 4)),
                                   (3, lambda: lib.nn.Linear(4, 6), {"dim": 1, "eps": 1e-4}, (2, 4)),
                                   (4, lambda: lib.nn.Conv1d(3, 2, 2), {"dim": -1}, (2, 3, 5))):
        lib.manual_seed(seed)
        m = Z.spectral_norm(make(), **kw)
        sn = m.parametrizations.weight[0]
        out += [_a(sn._u), _a(sn._v), _a(m.weight), *_names(m), norm_text(m)]
        x = lib.randn(*xshape)
        y = m(x)
        y.pow(2).sum().backward()
        out += [_a(y), _a(m.parametrizations.weight.original.grad), _a(sn._u)]
        m.eval()
        w1, w2 = _a(m.weight), _a(m.weight)
        out += [w1, w2, _a(sn._u)]
    return out


def spectral_norm_vector_and_errors(lib):
    Z = _Z(lib)
    lib.manual_seed(5)
    m = lib.nn.Linear(3, 2)
    Z.spectral_norm(m, "bias")
    out = [_a(m.bias), *_names(m)]
    out.append(err(lambda: Z.spectral_norm(lib.nn.Linear(3, 2), dim=2)))
    out.append(err(lambda: Z.spectral_norm(lib.nn.Linear(3, 2), n_power_iterations=0)))
    out.append(err(lambda: Z.spectral_norm(lib.nn.Linear(3, 2), "nope")))
    # two forwards before one backward (a GAN's D(real) - D(fake)): the clones keep the graph valid
    d = Z.spectral_norm(lib.nn.Linear(3, 1))
    loss = d(lib.ones(1, 3)).sum() - d(lib.zeros(1, 3) + 0.5).sum()
    loss.backward()
    out.append(_a(d.parametrizations.weight.original.grad))
    return out


def weight_norm_old_checkpoint(lib):
    """A state_dict of the hook-based nn.utils.weight_norm (weight_g, weight_v) loads into the
    parametrization (PyTorch's compatibility pre-hook)."""
    Z = _Z(lib)
    lib.manual_seed(12)
    with warnings.catch_warnings():       # the hook-based form is deprecated (a FutureWarning)
        warnings.simplefilter("ignore", FutureWarning)
        old = lib.nn.utils.weight_norm(lib.nn.Linear(3, 2))
    with lib.no_grad():
        old.weight_g.mul_(3.0)
    sd = old.state_dict()
    new = Z.weight_norm(lib.nn.Linear(3, 2))
    res = new.load_state_dict(sd)
    return [norm_text(list(sd)), norm_text(res), _a(new.weight), _a(old.weight_g), *_names(new)]


# ---- the tutorial -----------------------------------------------------------------------------------
def tutorial(lib):
    """The Parametrizations Tutorial (its Symmetric/Skew/Cayley/matrix-exponential examples,
    caching, initialisation, removal) plus orthogonal and spectral_norm, as printed lines."""
    nn, P, Z = lib.nn, _P(lib), _Z(lib)
    Symmetric, Skew, CayleyMap, _ = _modules(lib)
    lines = []

    def show(x):
        lines.append(norm_text(x))

    lib.manual_seed(0)
    layer = nn.Linear(3, 3)
    P.register_parametrization(layer, "weight", Symmetric())
    A = layer.weight
    show(bool(lib.allclose(A, A.T)))
    show(A)
    cnn = nn.Conv2d(in_channels=5, out_channels=8, kernel_size=3)
    P.register_parametrization(cnn, "weight", Skew())
    show(cnn.weight[0, 1])
    show(cnn.weight[2, 2])
    layer = nn.Linear(3, 3)
    show(f"Unparametrized:\n{layer}")
    P.register_parametrization(layer, "weight", Symmetric())
    show(f"\nParametrized:\n{layer}")
    show(layer.parametrizations)
    show(layer.parametrizations.weight)
    show(layer.parametrizations.weight[0])
    show(dict(layer.named_parameters()))
    show(layer.parametrizations.weight.original)
    show(lib.dist(layer.weight, Symmetric()(layer.parametrizations.weight.original)))

    class NoisyParametrization(nn.Module):
        def forward(self, X):
            show("Computing the Parametrization")
            return X

    layer = nn.Linear(4, 4)
    P.register_parametrization(layer, "weight", NoisyParametrization())
    show("Here, layer.weight is recomputed every time we call it")
    foo = layer.weight + layer.weight.T
    bar = layer.weight.sum()
    with P.cached():
        show("Here, it is computed just the first time layer.weight is called")
        foo = layer.weight + layer.weight.T
        bar = layer.weight.sum()
    show((foo.shape, bar.shape))

    layer = nn.Linear(3, 3)
    P.register_parametrization(layer, "weight", Skew())
    P.register_parametrization(layer, "weight", CayleyMap(3))
    X = layer.weight
    show(bool(lib.dist(X.T @ X, lib.eye(3)) < 1e-5))

    X = lib.rand(3, 3)
    X = X - X.T
    layer = nn.Linear(3, 3)
    P.register_parametrization(layer, "weight", Skew())
    layer.weight = X
    show(lib.dist(layer.weight, X))

    class MatrixExponential(nn.Module):   # the tutorial's torch.matrix_exp is torch.linalg.matrix_exp
        def forward(self, X):
            return lib.linalg.matrix_exp(X)

    layer_orthogonal = nn.Linear(3, 3)
    P.register_parametrization(layer_orthogonal, "weight", Skew())
    P.register_parametrization(layer_orthogonal, "weight", MatrixExponential())
    X = layer_orthogonal.weight
    show(bool(lib.dist(X.T @ X, lib.eye(3)) < 1e-5))
    layer_spd = nn.Linear(3, 3)
    P.register_parametrization(layer_spd, "weight", Symmetric())
    P.register_parametrization(layer_spd, "weight", MatrixExponential())
    X = layer_spd.weight
    show(bool(lib.dist(X, X.T) < 1e-5))
    show((lib.linalg.eigvalsh(X) > 0.0).all())

    layer_orthogonal = nn.Linear(3, 3)
    P.register_parametrization(layer_orthogonal, "weight", Skew())
    P.register_parametrization(layer_orthogonal, "weight", CayleyMap(3))
    X = lib.empty(3, 3)
    nn.init.orthogonal_(X)
    if X.det() < 0.0:
        X[0].neg_()
    layer_orthogonal.weight = X
    show(bool(lib.dist(layer_orthogonal.weight, X) < 1e-5))
    layer_orthogonal.weight = nn.init.orthogonal_(layer_orthogonal.weight)
    show(layer_orthogonal.parametrizations.weight.original)

    class PruningParametrization(nn.Module):
        def __init__(self, X, p_drop=0.2):
            super().__init__()
            self.mask = lib.bernoulli(lib.full_like(X, 1.0 - p_drop))

        def forward(self, X):
            return X * self.mask

        def right_inverse(self, A):
            return A

    layer = nn.Linear(3, 4)
    X = lib.rand_like(layer.weight)
    show(f"Initialization matrix:\n{X}")
    P.register_parametrization(layer, "weight", PruningParametrization(layer.weight))
    layer.weight = X
    show(f"\nInitialized weight:\n{layer.weight}")

    layer = nn.Linear(3, 3)
    show(layer.weight)
    P.register_parametrization(layer, "weight", Skew())
    show(layer)
    show(layer.weight)
    P.remove_parametrizations(layer, "weight")
    show(layer)
    show(layer.weight)
    layer = nn.Linear(3, 3)
    P.register_parametrization(layer, "weight", Skew())
    P.remove_parametrizations(layer, "weight", leave_parametrized=False)
    show(layer.weight)

    orth = Z.orthogonal(nn.Linear(20, 40))
    show(orth)
    Q = orth.weight
    show(bool(lib.dist(Q.T @ Q, lib.eye(20)) < 1e-5))
    show(Q[:2, :4])
    snm = Z.spectral_norm(nn.Linear(20, 40))
    show(snm)
    show(snm.weight[:2, :4])
    show(round(float(lib.linalg.matrix_norm(snm.weight.detach(), 2)), 3))
    return lines


CASES = {f.__name__: f for f in (register_and_remove, chain_and_right_inverse, cached, errors,
                                  orthogonal_default, orthogonal_maps, orthogonal_no_trivialization,
                                  orthogonal_assign_and_errors, spectral_norm, spectral_norm_vector_and_errors,
                                  weight_norm_old_checkpoint, tutorial)}
