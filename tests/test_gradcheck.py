"""gradcheck / gradgradcheck: PyTorch's behaviour and messages, and a sweep over the op spec table
(every differentiable row's gradient vs float64 central finite differences, where PyTorch does not
check that gradient in the same run: see ``mirror.gradient_checked_by_torch``)."""

from __future__ import annotations

import importlib
import pkgutil

import numpy as np
import pytest

import funcgrad
from funcgrad.autograd import GradcheckError, gradcheck, gradgradcheck

from . import op_specs
from .opinfo.allowlist import gradient_checked_by_torch


def _specs():
    out = []
    for m in pkgutil.iter_modules(op_specs.__path__):
        mod = importlib.import_module(f"{op_specs.__name__}.{m.name}")
        out.extend(getattr(mod, "SPECS", []))
    return [s for s in out if not s.nondiff]


SPECS = _specs()
# rows where finite differences cannot agree with the (correct, PyTorch-defined) gradient
FD_INVALID = {
    "sparse_from_dense": "x.to_sparse() keeps x's nonzeros: a finite-difference step makes its zeros "
                         "nonzero, so the perturbed output has more entries; its gradient vs torch's is "
                         "tests/test_sparse_coo.py",
    "mode": "input built with ties: the selected element changes under perturbation",
    "fmax_nan_ties": "input built with ties and nan: the selected element changes under perturbation",
    "fmin_nan_ties": "as fmax_nan_ties",
    "nanquantile": "input built with nan: the quantile sits at a tie of the ranked elements under perturbation",
    "poisson": "a random draw at rate 0 (a perturbation below 0 is refused); its gradient is zero, as "
               "PyTorch's (tests/test_opinfo_derivatives.py)",
    "cross_map_lrn2d": "PyTorch's CrossMapLRN2d backward is hand-written and not the derivative of its forward "
                       "(its window is shifted, and the forward never drops channel 0); funcgrad reproduces "
                       "torch's (tests/test_opinfo_derivatives.py)",
    "embedding_padding_idx": "PyTorch defines the padding row's gradient as zero",
    "standard_gamma": "a random draw: every evaluation samples anew, so finite differences mean nothing; "
                      "the reparameterised gradient vs torch's is tests/test_distributions.py",
    "ctc_loss": "PyTorch's ctc_loss gradient is not the derivative in unnormalised log_probs (its extra "
                "exp(log_probs) term cancels only through log_softmax); funcgrad reproduces torch's "
                "(tests/test_ops_more2.py)",
    "ctc_loss_zero_infinity": "as ctc_loss (tests/test_ops_more2.py compares with torch)",
    "eigh": "PyTorch's eigh gradient is Hermitian (both triangles) while the forward reads one triangle, "
            "so it is not the derivative of that function (tests/test_opinfo_derivatives.py compares "
            "it with torch's)",
    "eigh_U_vectors": "as eigh",
    "eigvalsh": "as eigh",
    "cholesky": "as eigh (PyTorch's cholesky reads one triangle, its gradient is Hermitian)",
    "cholesky_upper": "as eigh (the upper triangle)",
    "cholesky_legacy": "as eigh",
    "pinv_hermitian": "PyTorch's pinv(hermitian=True) gradient is the general pseudo-inverse derivative at A "
                      "while the forward reads one triangle (tests/test_opinfo_derivatives.py compares it "
                      "with torch's)",
    "polar_negative_abs": "PyTorch's polar gradient in abs is sgn(result), -e^{i angle} for a negative abs, "
                          "not the derivative e^{i angle} (tests/test_opinfo_derivatives.py compares it with "
                          "torch's)",
    "as_strided_scatter": "PyTorch's as_strided_scatter gives input the gradient at the scattered positions, "
                          "not around them, so it is not the derivative (tests/test_opinfo_derivatives.py "
                          "compares it with torch's)",
}


def _id(s):
    return s.id or s.op


def _setup(spec):
    arrs = spec.make_inputs()
    float_idx = [i for i, a in enumerate(arrs) if np.issubdtype(a.dtype, np.floating)]
    gidx = list(spec.grad if spec.grad is not None else float_idx)
    ts = [funcgrad.tensor(a, requires_grad=i in gidx) for i, a in enumerate(arrs)]

    def f(*diff):
        full = list(ts)
        for i, d in zip(gidx, diff):
            full[i] = d
        r = spec.fg(*full)
        return r[spec.out or 0] if isinstance(r, tuple) else r
    return f, tuple(ts[i] for i in gidx)


# with PyTorch installed, the rows whose gradient the mirror sweep compares with PyTorch's leave
FD_SPECS = [s for s in SPECS if not gradient_checked_by_torch(s)]


@pytest.mark.parametrize("spec", FD_SPECS, ids=[_id(s) for s in FD_SPECS])
@pytest.mark.slow
def test_gradcheck_op_table(spec):
    if _id(spec) in FD_INVALID:
        pytest.skip(FD_INVALID[_id(spec)])
    f, inputs = _setup(spec)
    if not inputs:
        pytest.skip("no differentiable input")
    out = f(*inputs)
    if out.dtype is not funcgrad.float64:
        pytest.skip(f"result is {out.dtype}: finite differences need float64")
    assert gradcheck(f, inputs, fast_mode=True)


GG_OPS = ["exp", "log", "sqrt", "sin", "tanh", "sigmoid", "mul", "div", "pow_scalar",
          "pow_tensor", "mean_dim", "sum_dim", "mm", "cat", "rpow"]


@pytest.mark.parametrize("name", GG_OPS)
def test_gradgradcheck_smooth_ops(name):
    rows = [s for s in SPECS if _id(s) == name]
    if not rows:
        pytest.skip(f"no spec row {name}")
    f, inputs = _setup(rows[0])
    assert gradgradcheck(f, inputs)


def _x():
    return funcgrad.tensor([0.5, -1.5, 2.0], dtype=funcgrad.float64, requires_grad=True)


class _Wrong(funcgrad.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x ** 2

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return g * x  # should be 2 * g * x


def test_gradcheck_passes_and_multiple_outputs():
    x = _x()
    y = funcgrad.tensor([[1.0, 2.0, 3.0]], dtype=funcgrad.float64, requires_grad=True)
    assert gradcheck(lambda a, b: ((a * b).sin(), (a + b).sum(1)), (x, y)) is True
    assert gradcheck(lambda a: a.exp(), x, fast_mode=True) is True


def test_gradcheck_mismatch_message():
    with pytest.raises(GradcheckError) as e:
        gradcheck(_Wrong.apply, (_x(),))
    msg = str(e.value)
    assert msg.startswith("Jacobian mismatch for output 0 with respect to input 0,\nnumerical:tensor(")
    assert "\nanalytical:tensor([[ 0.5000,  0.0000,  0.0000]," in msg
    assert "numerical:tensor([[ 1.0000,  0.0000,  0.0000]," in msg
    assert isinstance(e.value, RuntimeError)
    assert gradcheck(_Wrong.apply, (_x(),), raise_exception=False) is False
    with pytest.raises(GradcheckError, match="computed \nin fast mode"):
        gradcheck(_Wrong.apply, (_x(),), fast_mode=True)


def test_gradcheck_input_checks():
    with pytest.raises(ValueError, match="gradcheck expects at least one input tensor to require "
                                         "gradient, but none of them have requires_grad=True."):
        gradcheck(lambda a: a * 2, (funcgrad.ones(2, dtype=funcgrad.float64),))
    x32 = funcgrad.tensor([0.5, 1.0], requires_grad=True)
    with pytest.warns(UserWarning, match=r"Input #0 requires gradient and is not a double precision "
                                         r"floating point or complex\. This check will likely fail"):
        gradcheck(lambda a: a * 2, (x32,), eps=1e-3, atol=1e-3)


def test_gradcheck_nondeterministic_backward():
    calls = [0]

    class Noisy(funcgrad.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, g):
            calls[0] += 1
            return g * (2 + calls[0] * 1e-9)

    with pytest.raises(GradcheckError, match="Backward is not reentrant"):
        gradcheck(Noisy.apply, (_x(),))
    assert gradcheck(Noisy.apply, (_x(),), nondet_tol=1e-6, check_undefined_grad=False)


def test_gradcheck_perturbs_inputs_in_place_and_restores():
    x = _x()
    before = x.detach().numpy().copy()
    assert gradcheck(lambda a: a.sin() * 2, (x,))
    # as in PyTorch the perturbation is in place: a closure over the input sees it too
    assert gradcheck(lambda a: a * x.detach().sum(), (x,), raise_exception=False) is False
    np.testing.assert_array_equal(x.detach().numpy(), before)
    assert x._ver[0] == 0


def test_gradgradcheck_detects_wrong_double_backward():
    class BadSecond(funcgrad.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x ** 3

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return g * 3 * x.detach() ** 2  # first derivative right, not differentiable in x

    x = _x()
    assert gradcheck(BadSecond.apply, (x,))
    with pytest.raises(GradcheckError, match="Jacobian mismatch for output 0 with respect to input 0"):
        gradgradcheck(BadSecond.apply, (x,))
    assert gradgradcheck(lambda a: a ** 3, (x,))



def _exp_fn(lib, backward_scale, jvp_scale=1.0):
    class Exp(lib.autograd.Function):  # the backward off by backward_scale, the jvp by jvp_scale
        @staticmethod
        def forward(ctx, x):
            ctx.result = lib.exp(x)
            return ctx.result

        @staticmethod
        def backward(ctx, g):
            return g * ctx.result * backward_scale

        @staticmethod
        def jvp(ctx, gi):
            return gi * ctx.result * jvp_scale
    return Exp.apply


_FWD = dict(check_forward_ad=True, check_backward_ad=False, check_undefined_grad=False, check_batched_grad=False)


def _cases(lib):
    x = lib.tensor([[0.3, -0.2], [1.1, 0.4]], dtype=lib.float64, requires_grad=True)
    return [(lambda: lib.autograd.gradcheck(_exp_fn(lib, 1.0), (x,), **_FWD)),
            # forward mode only: the wrong backward is not run
            (lambda: lib.autograd.gradcheck(_exp_fn(lib, 1.5), (x,), **_FWD)),
            (lambda: lib.autograd.gradcheck(_exp_fn(lib, 1.5), (x,), raise_exception=False)),
            # a tangent that does not flow (detach): forward mode's Jacobian is zero
            (lambda: lib.autograd.gradcheck(lambda t: t.detach().exp() + 0 * t, (x,), raise_exception=False,
                                            **_FWD)),
            (lambda: lib.autograd.gradcheck(lambda t: t.detach().exp() + 0 * t, (x,), **_FWD)),
            (lambda: lib.autograd.gradcheck(_exp_fn(lib, 1.0), (x,), check_forward_ad=False,
                                            check_backward_ad=False)),
            # forward mode through a Function is its jvp (a wrong one is seen)
            (lambda: lib.autograd.gradcheck(_exp_fn(lib, 1.0, 1.5), (x,), raise_exception=False, **_FWD))]


def _outcomes(lib):
    out = []
    for f in _cases(lib):
        try:
            out.append(repr(f()))
        except Exception as e:  # noqa: BLE001  (the outcome is the row)
            out.append(f"{type(e).__name__}: {str(e).splitlines()[0]}")
    return out


# recorded from PyTorch 2.13
_FWD_EXPECTED = ["True", "True", "False", "False",
                 "GradcheckError: Jacobian computed with forward mode mismatch for output 0 with respect to input 0,",
                 "AssertionError: Expected at least one of check_forward_ad or check_backward_ad to be True",
                 "False"]


def test_check_forward_ad_checks_forward_mode():
    """``gradcheck(check_forward_ad=True, check_backward_ad=False)`` checks the Jacobians forward
    mode gives, and runs no backward (the PyTorch tutorial "Forward-mode Automatic
    Differentiation" checks this way). funcgrad ran the backward check instead and never checked
    forward mode: a wrong backward failed it, a wrong forward mode passed."""
    assert _outcomes(funcgrad) == _FWD_EXPECTED


@pytest.mark.torch
def test_check_forward_ad_is_pytorchs():
    import warnings
    torch = pytest.importorskip("torch")
    with warnings.catch_warnings():  # (torch's gradcheck warns of its own internals)
        warnings.simplefilter("ignore")
        assert _outcomes(torch) == _FWD_EXPECTED
