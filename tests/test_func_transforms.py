"""``funcgrad.func``'s transforms as ``torch.func``'s: jacrev/jacfwd/hessian/jvp/linearize/vmap/
grad and stack_module_state, run as the torch.func tutorials use them (per-sample gradients, model
ensembling, Jacobians and Hessians). Each case runs the same code on ``funcgrad`` and, where it is
installed, on PyTorch 2.13, and the results are compared; without torch the cases are checked
against their closed forms (``EXPECTED``), so the check stays meaningful."""

import copy
import warnings

import numpy as np
import pytest

import funcgrad


def _predict(lib):
    def predict(weight, bias, x):
        return lib.nn.functional.linear(x, weight, bias).tanh()
    return predict


def _wbx(lib):
    rng = np.random.default_rng(0)
    w, b, x = (lib.tensor(rng.normal(size=s).astype(np.float32)) for s in ((4, 4), (4,), (4,)))
    return w, b, x


def _closed_jac(w, b, x):  # d tanh(Wx + b) / dx = diag(1 - y^2) W
    y = np.tanh(w @ x + b)
    return (1 - y ** 2)[:, None] * w


def _closed_hess(w, b, x):  # d2 y_i / dx_j dx_k = -2 y_i (1 - y_i^2) W_ij W_ik
    y = np.tanh(w @ x + b)
    return (-2 * y * (1 - y ** 2))[:, None, None] * w[:, :, None] * w[:, None, :]


# label -> fn(lib, func) giving a list of tensors
def _jacrev(lib, func):
    return [func.jacrev(_predict(lib), argnums=2)(*_wbx(lib))]


def _jacfwd(lib, func):
    return [func.jacfwd(_predict(lib), argnums=2)(*_wbx(lib))]


def _jac_two_args(lib, func):
    return list(func.jacrev(_predict(lib), argnums=(0, 1))(*_wbx(lib)))


def _batched_jac(lib, func):
    w, b, x = _wbx(lib)
    xs = lib.stack([x, 2 * x, -x])
    return [func.vmap(func.jacrev(_predict(lib), argnums=2), in_dims=(None, None, 0))(w, b, xs)]


def _hessian(lib, func):
    return [func.hessian(_predict(lib), argnums=2)(*_wbx(lib))]


def _hvp(lib, func):
    _, _, x = _wbx(lib)
    return [func.jvp(func.grad(lambda t: t.sin().sum()), (x,), (lib.ones(4),))[1]]


def _jvp_two(lib, func):
    _, _, x = _wbx(lib)
    out, tan = func.jvp(lambda a, b: a * b, (x, x.cos()), (lib.ones(4), lib.ones(4)))
    return [out, tan]


def _jvp_aux(lib, func):
    _, _, x = _wbx(lib)
    out, tan, aux = func.jvp(lambda a: (a.exp(), a * 2), (x,), (x,), has_aux=True)
    return [out, tan, aux]


def _jvp_independent(lib, func):
    _, _, x = _wbx(lib)
    return [func.jvp(lambda a: lib.ones(2), (x,), (x,))[1]]


def _linearize(lib, func):
    _, _, x = _wbx(lib)
    out, jvp_fn = func.linearize(lambda t: t.sin() * t, x)
    return [out, jvp_fn(lib.ones(4)), jvp_fn(x)]


def _mlp_class(lib):
    class MLP(lib.nn.Module):
        def __init__(self):
            super().__init__()
            self.fc1, self.fc2 = lib.nn.Linear(6, 5), lib.nn.Linear(5, 3)

        def forward(self, x):
            return self.fc2(lib.nn.functional.relu(self.fc1(x)))
    return MLP


def _models(lib, n=3):
    rng = np.random.default_rng(1)
    cls = _mlp_class(lib)
    models = [cls() for _ in range(n)]
    with lib.no_grad():
        for m in models:
            for p in m.parameters():
                p.copy_(lib.tensor(rng.normal(size=tuple(p.shape)).astype(np.float32)))
    return models


def _ensemble(lib, func):
    models = _models(lib)
    params, buffers = func.stack_module_state(models)
    base = copy.deepcopy(models[0])
    x = lib.tensor(np.random.default_rng(2).normal(size=(3, 4, 6)).astype(np.float32))

    def fmodel(params, buffers, x):
        return func.functional_call(base, (params, buffers), (x,))
    loop = lib.stack([m(xi) for m, xi in zip(models, x, strict=True)])
    return [func.vmap(fmodel)(params, buffers, x), loop, func.vmap(fmodel, in_dims=(0, 0, None))(params, buffers, x[0]),
            *params.values()]


def _per_sample_grads(lib, func):
    model = _models(lib, 1)[0]
    rng = np.random.default_rng(3)
    data = lib.tensor(rng.normal(size=(5, 6)).astype(np.float32))
    targets = lib.tensor(rng.integers(0, 3, size=5))
    params = {k: v.detach() for k, v in model.named_parameters()}

    def loss(params, sample, target):
        out = func.functional_call(model, params, (sample.unsqueeze(0),))
        return lib.nn.functional.cross_entropy(out, target.unsqueeze(0))
    grads = func.vmap(func.grad(loss), in_dims=(None, 0, 0))(params, data, targets)
    loop = [lib.autograd.grad(loss(dict(model.named_parameters()), data[i], targets[i]), list(model.parameters()))
            for i in range(5)]
    return [*grads.values(), *(lib.stack(g) for g in zip(*loop, strict=True))]


CASES = {"jacrev": _jacrev, "jacfwd": _jacfwd, "jacrev of two arguments": _jac_two_args,
         "vmap of jacrev": _batched_jac, "hessian": _hessian, "hvp (jvp of grad)": _hvp,
         "jvp of two inputs": _jvp_two, "jvp has_aux": _jvp_aux, "jvp of a constant": _jvp_independent,
         "linearize": _linearize, "ensemble (stack_module_state)": _ensemble,
         "per-sample grads (vmap of grad)": _per_sample_grads}


def _expected(label):
    """The closed form of a case, from its inputs (NumPy), where it has one."""
    w, b, x = (t.numpy().astype(np.float64) for t in _wbx(funcgrad))
    if label in ("jacrev", "jacfwd"):
        return [_closed_jac(w, b, x)]
    if label == "jacrev of two arguments":
        d = 1 - np.tanh(w @ x + b) ** 2
        return [np.einsum("i,ij,k->ijk", d, np.eye(4), x), np.diag(d)]
    if label == "vmap of jacrev":
        return [np.stack([_closed_jac(w, b, s * x) for s in (1, 2, -1)])]
    if label == "hessian":
        return [_closed_hess(w, b, x)]
    if label == "hvp (jvp of grad)":
        return [-np.sin(x)]
    if label == "jvp of two inputs":
        return [x * np.cos(x), np.cos(x) + x]
    if label == "jvp has_aux":
        return [np.exp(x), np.exp(x) * x, 2 * x]
    if label == "jvp of a constant":
        return [np.zeros(2)]
    if label == "linearize":
        d = np.cos(x) * x + np.sin(x)
        return [np.sin(x) * x, d, d * x]
    return None


@pytest.mark.parametrize("label", CASES)
def test_transform_matches_its_closed_form_or_the_loop(label):
    out = CASES[label](funcgrad, funcgrad.func)
    exp = _expected(label)
    if exp is not None:
        assert len(out) == len(exp)
        for a, e in zip(out, exp, strict=True):
            np.testing.assert_allclose(a.numpy(), e, rtol=1e-5, atol=1e-5)
    elif label.startswith("ensemble"):  # the vmapped ensemble is the loop over the models
        np.testing.assert_allclose(out[0].detach().numpy(), out[1].detach().numpy(), rtol=1e-5, atol=1e-5)
        assert all(p.requires_grad and p.is_leaf and p.shape[0] == 3 for p in out[3:])
    else:  # per-sample grads: vmap(grad) is the loop of autograd.grad, parameter by parameter in order
        n = len(out) // 2
        for a, e in zip(out[:n], out[n:], strict=True):
            np.testing.assert_allclose(a.numpy(), e.numpy(), rtol=1e-4, atol=1e-5)


@pytest.mark.torch
@pytest.mark.parametrize("label", CASES)
def test_transform_matches_torch(label):
    torch = pytest.importorskip("torch")
    pytest.importorskip("torch.func")
    ours = CASES[label](funcgrad, funcgrad.func)
    with warnings.catch_warnings():  # (torch.func's forward mode and linearize warn of their own internals)
        warnings.simplefilter("ignore")
        theirs = CASES[label](torch, torch.func)
    assert len(ours) == len(theirs)
    for a, e in zip(ours, theirs, strict=True):
        assert tuple(a.shape) == tuple(e.shape) and str(a.dtype).split(".")[1] == str(e.dtype).split(".")[1]
        np.testing.assert_allclose(a.detach().numpy(), e.detach().numpy(), rtol=1e-4, atol=1e-5)


# dict key order: JAX's pytrees sort dict keys; torch.func keeps the caller's (recorded from PyTorch 2.13)
def test_dict_key_order_is_the_callers():
    func = funcgrad.func
    d = {"b": funcgrad.ones(2), "a": funcgrad.ones(3)}
    assert list(func.jacrev(lambda d: d["b"].sum() * d["a"])(d)) == ["b", "a"]
    assert list(func.jacfwd(lambda d: {"z": d["a"], "y": d["b"]})(d)) == ["z", "y"]
    assert list(func.jacfwd(lambda d: {"z": d["a"], "y": d["b"]})(d)["z"]) == ["b", "a"]
    batched = {"b": funcgrad.ones(2, 2), "a": funcgrad.ones(2, 3)}
    assert list(func.vmap(lambda d: {"y": d["b"].sum(), "x": d["a"]})(batched)) == ["y", "x"]
    seen = []
    func.vmap(lambda d: seen.append(list(d)) or d["a"].sum())(batched)  # the function sees the caller's order
    assert seen == [["b", "a"]]
    assert list(func.grad(lambda d: d["a"].sum() + d["b"].sum())(d)) == ["b", "a"]
    assert list(func.vmap(func.grad(lambda d: (d["a"] ** 2).sum()))(batched)) == ["b", "a"]
    out, tan = func.jvp(lambda d: {"q": d["b"] * 2, "p": d["a"]}, (d,), (d,))
    assert list(out) == list(tan) == ["q", "p"]


# PyTorch 2.13's errors
def test_jvp_errors():
    x = funcgrad.ones(2)
    with pytest.raises(RuntimeError, match=r"^jvp\(f, primals, tangents\): Expected primals to be a tuple. "
                                           r"E.g. it should be valid to call f\(\*primals\).$"):
        funcgrad.func.jvp(lambda t: t, x, x)
    with pytest.raises(RuntimeError, match=r"^jvp\(f, primals, tangents\): Expected primals and tangents to "
                                           r"have the same python structure"):
        funcgrad.func.jvp(lambda t: t, (x,), [x])
    with pytest.raises(RuntimeError, match=r"^jvp\(f, primals, tangents, strict=True\): The output of f is "
                                           r"independent of the inputs. This is not allowed with strict=True.$"):
        funcgrad.func.jvp(lambda t: funcgrad.ones(2), (x,), (x,), strict=True)
    assert funcgrad.func.jvp(lambda t: t * 2, (x,), (x,), strict=True)[1].tolist() == [2.0, 2.0]
    with pytest.raises(RuntimeError, match=r"output of function f should be a tuple: \(output, aux\) "
                                           r"if has_aux is True"):
        funcgrad.func.jvp(lambda t: t, (x,), (x,), has_aux=True)


def test_stack_module_state_errors():
    lin = funcgrad.nn.Linear(2, 2)
    with pytest.raises(RuntimeError, match=r"^stack_module_state: Expected at least one model, got 0.$"):
        funcgrad.func.stack_module_state([])
    with pytest.raises(RuntimeError, match=r"^stack_module_state: Expected all models to have the same "
                                           r"training/eval mode.$"):
        funcgrad.func.stack_module_state([lin, copy.deepcopy(lin).eval()])
    with pytest.raises(RuntimeError, match=r"^stack_module_state: Expected all models to be of the same class.$"):
        funcgrad.func.stack_module_state([lin, funcgrad.nn.Bilinear(2, 2, 2)])
    frozen = copy.deepcopy(lin).requires_grad_(False)
    with pytest.raises(RuntimeError, match=r"^Expected weight from each model to have the same .requires_grad$"):
        funcgrad.func.stack_module_state([lin, frozen])
    params, buffers = funcgrad.func.stack_module_state([frozen, frozen])
    assert not params["weight"].requires_grad and buffers == {}
    bn = funcgrad.nn.BatchNorm1d(3)
    params, buffers = funcgrad.func.stack_module_state([bn, copy.deepcopy(bn)])
    assert list(buffers) == ["running_mean", "running_var", "num_batches_tracked"]
    assert buffers["num_batches_tracked"].shape == (2,) and not buffers["running_mean"].requires_grad
