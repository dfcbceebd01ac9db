"""``gradcheck`` / ``gradgradcheck``: analytical (engine) Jacobians vs central finite differences.

As in PyTorch: the numerical Jacobian perturbs each element of each input that requires grad
*in place* by ±eps (so closures over the inputs see the perturbation) and takes
``(f(x+eps) - f(x-eps)) / 2eps``; the analytical Jacobian is built row by row from
``autograd.grad`` with one-hot ``grad_outputs``, twice (the second time checks that backward is
deterministic within ``nondet_tol``). Both are ``[input numel, output numel]`` matrices, printed
in the ``GradcheckError`` message on mismatch. ``fast_mode`` compares ``vᵀ J u`` for random
``u``, ``v`` instead of the whole matrices.
"""

from __future__ import annotations

import warnings
from typing import Callable

import jax.numpy as jnp
import numpy as np

from .._factories import rand, tensor, zeros_like
from .._tensor import Tensor
from . import forward_ad as fwAD


class GradcheckError(RuntimeError):
    """Error raised by :func:`gradcheck` and :func:`gradgradcheck`."""


FAILED_NONDET_MSG = """

NOTE: If your op relies on non-deterministic operations i.e., it is listed here:
https://pytorch.org/docs/stable/generated/torch.use_deterministic_algorithms.html
this failure might be expected.

If you are adding a new operator, please file an issue and then use one of the
workarounds. The workaround depends on how your test invokes gradcheck/gradgradcheck.
If the test
- manually invokes gradcheck/gradgradcheck, then call gradcheck/gradgradcheck
  with `nondet_tol=<tol>` as a keyword argument.
- is OpInfo-based (e.g., in test_ops_gradients.py), then modify the OpInfo for the test
  to have `gradcheck_nondet_tol=<tol>`.
- is a Module test (e.g., in common_nn.py), then modify the corresponding
  module_test entry to have `gradcheck_nondet_tol=<tol>`
"""

FAST_MODE_NOTE = (
    "\nThe above quantities relating the numerical and analytical jacobians are computed \n"
    "in fast mode. See: https://github.com/pytorch/pytorch/issues/53876 for more background \n"
    "about fast mode. Below, we recompute numerical and analytical jacobians in slow mode:\n\n")


FAST_FAIL_SLOW_OK_MSG = """
Fast gradcheck failed but element-wise differences are small. This means that the
test might've passed in slow_mode!

If you are adding a new operator, please file an issue and then use one of the
workarounds. The workaround depends on how your test invokes gradcheck/gradgradcheck:

If the test
- manually invokes gradcheck/gradgradcheck, then call gradcheck/gradgradcheck
  with `fast_mode=False` as a keyword argument.
"""


_grad = None  # funcgrad.autograd.grad: the package __init__ defines it after importing this module


def register_grad(grad) -> None:
    """Called once by funcgrad/autograd/__init__.py at import, with ``funcgrad.autograd.grad``."""
    global _grad
    _grad = grad


def _T():
    return Tensor


def _as_tuple(x) -> tuple:
    if isinstance(x, tuple):
        return x
    if isinstance(x, list):
        return tuple(x)
    return (x,)


def _diff_outputs(x) -> tuple:
    return tuple(o for o in _as_tuple(x) if isinstance(o, _T()) and o.requires_grad)


def _check_inputs(inputs) -> list[int]:
    T = _T()
    idx = []
    for i, inp in enumerate(inputs):
        if isinstance(inp, T) and inp.requires_grad:
            if inp.dtype.name not in ("float64", "complex128"):
                warnings.warn(f"Input #{i} requires gradient and is not a double precision floating "
                              f"point or complex. This check will likely fail if all the inputs are "
                              f"not of double precision floating point or complex. ", stacklevel=3)
            if inp.dtype.is_complex:
                raise NotImplementedError("funcgrad's gradcheck does not support complex inputs yet")
            idx.append(i)
    if not idx:
        raise ValueError("gradcheck expects at least one input tensor to require gradient, but none "
                         "of them have requires_grad=True.")
    return idx


def _np(t) -> np.ndarray:
    return np.asarray(t.detach()._value)


def _numerical(func, inputs, diff_idx, n_out, eps) -> list[list[np.ndarray]]:
    """``J[out][inp]`` of shape ``[inp.numel(), out.numel()]`` by central differences."""
    T = _T()
    jac = [[None] * len(diff_idx) for _ in range(n_out)]
    for k, i in enumerate(diff_idx):
        x = inputs[i]
        orig = x._value
        flat = np.array(orig, dtype=np.asarray(orig).dtype).reshape(-1)
        cols = []
        try:
            for e in range(flat.size):
                outs = []
                for sign in (-1.0, 1.0):
                    p = flat.copy()
                    p[e] += sign * eps
                    x._set_value(jnp.asarray(p.reshape(orig.shape)))
                    outs.append([_np(o).astype(np.float64) if isinstance(o, T) else None
                                 for o in _as_tuple(func(*inputs))])
                cols.append([None if a is None else ((b - a) / (2 * eps)).reshape(-1)
                             for a, b in zip(*outs)])
        finally:
            x._set_value(orig)
        for j in range(n_out):
            jac[j][k] = np.stack([c[j] for c in cols]) if cols and cols[0][j] is not None \
                else np.zeros((flat.size, 0))
    return jac


def _analytical(output, inputs, diff_idx) -> tuple[list[np.ndarray], bool]:
    """Rows ``e_jᵀ J`` for each output element: ``[inp.numel(), out.numel()]`` per input."""
    diff = [inputs[i] for i in diff_idx]
    n = output.numel()
    jac = [np.zeros((d.numel(), n)) for d in diff]
    sizes_ok = True
    for j in range(n):
        onehot = np.zeros(n)
        onehot[j] = 1.0
        go = tensor(onehot.reshape(tuple(output.shape)), dtype=output.dtype)
        gs = _grad(output, diff, go, retain_graph=True, allow_unused=True)
        for k, (g, d) in enumerate(zip(gs, diff)):
            if g is None:
                continue
            if tuple(g.shape) != tuple(d.shape):
                sizes_ok = False
                continue
            jac[k][:, j] = _np(g).astype(np.float64).reshape(-1)
    return jac, sizes_ok


def _allclose(a, n, rtol, atol) -> bool:
    return a.shape == n.shape and bool(np.allclose(a, n, rtol=rtol, atol=atol))


def _fmt(a: np.ndarray, dtype) -> str:
    return repr(tensor(a, dtype=dtype))


def _slow(func, inputs, diff_idx, func_out, outputs, eps, rtol, atol, nondet_tol):
    T = _T()
    all_out = _as_tuple(func_out)
    numerical = _numerical(func, inputs, diff_idx, len(all_out), eps)
    if not outputs:
        for per_out in numerical:
            for n in per_out:
                if np.any(n != 0):
                    raise GradcheckError("Numerical gradient for function expected to be zero")
        return True
    numerical = [nj for o, nj in zip(all_out, numerical) if isinstance(o, T) and o.requires_grad]
    for i, o in enumerate(outputs):
        a1, sizes_ok = _analytical(o, inputs, diff_idx)
        a2, _ = _analytical(o, inputs, diff_idx)
        if not sizes_ok:
            raise GradcheckError("Analytical gradient has incorrect size")
        if not all(np.all(np.abs(x - y) <= nondet_tol) for x, y in zip(a1, a2)):
            raise GradcheckError(
                "Backward is not reentrant, i.e., running backward with same input and grad_output "
                "multiple times gives different values, although analytical gradient matches "
                f"numerical gradient.The tolerance for nondeterminism was {nondet_tol}."
                + FAILED_NONDET_MSG)
        for j, (a, n) in enumerate(zip(a1, numerical[i])):
            if not _allclose(a, n, rtol, atol):
                dt = inputs[diff_idx[j]].dtype
                raise GradcheckError(f"Jacobian mismatch for output {i:d} with respect to input {j:d},\n"
                                     f"numerical:{_fmt(n, dt)}\nanalytical:{_fmt(a, dt)}\n")
    return True


def _forward_analytical(func, inputs, diff_idx, n_out) -> list[list[np.ndarray]]:
    """The Jacobians by forward mode, ``[output][input]`` each ``[inp.numel(), out.numel()]`` (as
    ``_numerical``'s): one dual evaluation per input element, its tangent a one-hot."""
    T = _T()
    jac = [[None] * len(diff_idx) for _ in range(n_out)]
    for k, i in enumerate(diff_idx):
        d = inputs[i]
        rows = []
        for e in range(d.numel()):
            onehot = np.zeros(d.numel())
            onehot[e] = 1.0
            with fwAD.dual_level():
                duals = list(inputs)
                duals[i] = fwAD.make_dual(d, tensor(onehot.reshape(tuple(d.shape)), dtype=d.dtype))
                outs = _as_tuple(func(*duals))
                rows.append([None if not isinstance(o, T) else
                             np.zeros(o.numel()) if (t := fwAD.unpack_dual(o).tangent) is None else
                             _np(t).astype(np.float64).reshape(-1) for o in outs])
        for j in range(n_out):
            jac[j][k] = np.stack([r[j] for r in rows]) if rows and rows[0][j] is not None \
                else np.zeros((d.numel(), 0))
    return jac


def _slow_forward(func, inputs, diff_idx, func_out, eps, rtol, atol) -> None:
    """``check_forward_ad``: forward mode's Jacobians against the numerical ones (PyTorch's
    message for a mismatch, "Jacobian computed with forward mode mismatch ...")."""
    T = _T()
    all_out = _as_tuple(func_out)
    numerical = _numerical(func, inputs, diff_idx, len(all_out), eps)
    analytical = _forward_analytical(func, inputs, diff_idx, len(all_out))
    pos = [p for p, o in enumerate(all_out)
           if isinstance(o, T) and (o.dtype.is_floating_point or o.dtype.is_complex)]
    for i, p in enumerate(pos):
        for j, (a, n) in enumerate(zip(analytical[p], numerical[p], strict=True)):
            if not _allclose(a, n, rtol, atol):
                dt = inputs[diff_idx[j]].dtype
                raise GradcheckError(f"Jacobian computed with forward mode mismatch for output {i:d} with "
                                     f"respect to input {j:d},\nnumerical:{_fmt(n, dt)}\nanalytical:"
                                     f"{_fmt(a, dt)}\n")


def _fast(func, inputs, diff_idx, func_out, outputs, eps, rtol, atol, nondet_tol):
    """``vᵀ J u`` with random unit-ish ``u`` (inputs) and ``v`` (outputs), both ways."""
    rng = np.random.default_rng(0)
    T = _T()
    all_out = _as_tuple(func_out)
    diff = [inputs[i] for i in diff_idx]
    us = [rng.uniform(0, 1, d.numel()) for d in diff]
    us = [u / (np.linalg.norm(u) or 1.0) for u in us]
    # numerical J u per input (directional central difference)
    num = []  # num[k][out] = flat J_out,k u_k
    for d, u in zip(diff, us):
        orig = d._value
        base = np.asarray(orig).astype(np.float64).reshape(-1)
        outs = []
        try:
            for sign in (-1.0, 1.0):
                d._set_value(jnp.asarray((base + sign * eps * u).reshape(orig.shape),
                                         dtype=orig.dtype))
                outs.append([_np(o).astype(np.float64).reshape(-1) if isinstance(o, T) else None
                             for o in _as_tuple(func(*inputs))])
        finally:
            d._set_value(orig)
        num.append([None if a is None else (b - a) / (2 * eps) for a, b in zip(*outs)])
    if not outputs:
        if any(np.any(x != 0) for per in num for x in per if x is not None):
            raise GradcheckError("Numerical gradient for function expected to be zero")
        return True
    out_pos = [p for p, o in enumerate(all_out) if isinstance(o, T) and o.requires_grad]
    for i, (o, p) in enumerate(zip(outputs, out_pos)):
        v = rng.uniform(0, 1, o.numel())
        v = v / (np.linalg.norm(v) or 1.0)
        vt = tensor(v.reshape(tuple(o.shape)), dtype=o.dtype)
        res = []
        for _ in range(2):
            gs = _grad(o, diff, vt, retain_graph=True, allow_unused=True)
            res.append([0.0 if g is None else float(_np(g).astype(np.float64).reshape(-1) @ u)
                        for g, u in zip(gs, us)])
        if any(abs(x - y) > nondet_tol for x, y in zip(*res)):
            raise GradcheckError(
                "Backward is not reentrant, i.e., running backward with same input and grad_output "
                "multiple times gives different values, although analytical gradient matches "
                f"numerical gradient.The tolerance for nondeterminism was {nondet_tol}."
                + FAILED_NONDET_MSG)
        for j, a in enumerate(res[0]):
            n = float(v @ num[j][p])
            # PyTorch scales atol by the norms of u and v (both 1 here)
            if not abs(a - n) <= atol + rtol * abs(n):
                msg = (f"Jacobian mismatch for output {i:d} with respect to input {j:d},\n"
                       f"numerical:{n}\nanalytical:{a}\n")
                raise GradcheckError(msg + _slow_report(func, inputs, diff_idx, func_out, o, j,
                                                        p, eps, rtol, atol))
    return True


def _slow_report(func, inputs, diff_idx, func_out, output, j, p, eps, rtol, atol) -> str:
    """Fast mode failed: the slow-mode matrices of this input/output pair, as PyTorch prints."""
    n = _numerical(func, inputs, diff_idx, len(_as_tuple(func_out)), eps)[p][j]
    a = _analytical(output, inputs, diff_idx)[0][j]
    dt = inputs[diff_idx[j]].dtype
    diff = np.abs(n - a).max() if n.size else 0.0
    msg = (FAST_MODE_NOTE + f"Numerical:\n {_fmt(n, dt)}\nAnalytical:\n{_fmt(a, dt)}\n\n"
           f"The max per-element difference (slow mode) is: {diff}.\n")
    if _allclose(a, n, rtol, atol):
        msg += FAST_FAIL_SLOW_OK_MSG
    return msg


def _check_backward_zero(outputs, inputs, diff_idx, check_undefined_grad) -> None:
    """Backward must be linear in grad_output: zero grad_outputs give zero (or no) gradients."""
    diff = [inputs[i] for i in diff_idx]
    gs = _grad(outputs, diff, [zeros_like(o) for o in outputs], retain_graph=True,
               allow_unused=True)
    for g, d in zip(gs, diff):
        if g is None:
            continue
        if np.any(_np(g) != 0):
            if check_undefined_grad:
                raise GradcheckError(
                    "Expected all input grads to be undefined or zero when all output grads are "
                    "undefined or zero. Please look at \"Notes about undefined output gradients\" in "
                    "\"tools/autograd/derivatives.yaml\"")
            raise GradcheckError("backward not multiplied by grad_output")
        if g.dtype is not d.dtype:
            raise GradcheckError("grad is incorrect type")
        if tuple(g.shape) != tuple(d.shape):
            raise GradcheckError("grad is incorrect size")


def gradcheck(func: Callable, inputs, *, eps: float = 1e-6, atol: float = 1e-5, rtol: float = 1e-3,
              raise_exception: bool = True, nondet_tol: float = 0.0,
              check_undefined_grad: bool = True, check_grad_dtypes: bool = False,
              check_batched_grad: bool = False, check_batched_forward_grad: bool = False,
              check_forward_ad: bool = False, check_backward_ad: bool = True,
              fast_mode: bool = False, masked: bool | None = None) -> bool:
    """Check the gradients of ``func`` at ``inputs`` against central finite differences.

    Args:
        func: takes the tensors ``inputs`` and returns a Tensor or a tuple of Tensors.
        inputs: a Tensor or tuple of Tensors (use float64 ones that require grad).
        eps: finite-difference step. atol, rtol: tolerances of the comparison.
        raise_exception: raise ``GradcheckError`` on failure (else return ``False``).
        nondet_tol: tolerance of two backward runs disagreeing.
        fast_mode: compare ``vᵀ J u`` for random ``u``, ``v`` instead of whole Jacobians.

    Returns:
        ``True`` when the gradients match.

    >>> import funcgrad
    >>> x = funcgrad.tensor([0.5, 1.5], dtype=funcgrad.float64, requires_grad=True)
    >>> funcgrad.autograd.gradcheck(lambda t: (t * t).sin(), (x,))
    True
    """
    if not (check_forward_ad or check_backward_ad):
        raise AssertionError("Expected at least one of check_forward_ad or check_backward_ad to be "
                             "True")
    try:
        return _gradcheck(func, inputs, eps, atol, rtol, nondet_tol, check_undefined_grad,
                          check_backward_ad, fast_mode, check_forward_ad)
    except GradcheckError:
        if raise_exception:
            raise
        return False


def _gradcheck(func, inputs, eps, atol, rtol, nondet_tol, check_undefined_grad, check_backward,
               fast_mode, check_forward=False) -> bool:
    inputs = _as_tuple(inputs)
    diff_idx = _check_inputs(inputs)
    func_out = func(*inputs)
    outputs = _diff_outputs(func_out)
    if any(o.dtype.is_complex for o in outputs):
        raise NotImplementedError("funcgrad's gradcheck does not support complex outputs yet")
    if check_backward:
        check = _fast if fast_mode else _slow
        check(func, inputs, diff_idx, func_out, outputs, eps, rtol, atol, nondet_tol)
    if check_forward:  # (whole Jacobians by forward mode, also in fast mode)
        _slow_forward(func, inputs, diff_idx, func_out, eps, rtol, atol)
    if check_backward and outputs:
        _check_backward_zero(list(outputs), inputs, diff_idx, check_undefined_grad)
    return True


def gradgradcheck(func: Callable, inputs, grad_outputs=None, *, eps: float = 1e-6,
                  atol: float = 1e-5, rtol: float = 1e-3, gen_non_contig_grad_outputs: bool = False,
                  raise_exception: bool = True, nondet_tol: float = 0.0,
                  check_undefined_grad: bool = True, check_grad_dtypes: bool = False,
                  check_batched_grad: bool = False, check_fwd_over_rev: bool = False,
                  check_rev_over_rev: bool = True, fast_mode: bool = False,
                  masked: bool = False) -> bool:
    """Check second derivatives: ``gradcheck`` of ``(inputs, v) -> grad(func(inputs), inputs, v)``.

    ``grad_outputs`` (the ``v``) default to random tensors in [-1, 1) that require grad.

    >>> import funcgrad
    >>> x = funcgrad.tensor([0.5, 1.5], dtype=funcgrad.float64, requires_grad=True)
    >>> funcgrad.autograd.gradgradcheck(lambda t: t ** 3, (x,))
    True
    """
    inputs = _as_tuple(inputs)
    T = _T()
    if grad_outputs is None:
        outs = _diff_outputs(func(*inputs))
        grad_outputs = tuple(
            (rand(*o.shape, dtype=o.dtype if o.dtype.is_floating_point else None) * 2 - 1)
            .requires_grad_() for o in outs)
    else:
        grad_outputs = _as_tuple(grad_outputs)
    n_out = len(grad_outputs)
    diff_in = [i for i, x in enumerate(inputs) if isinstance(x, T) and x.requires_grad]

    def new_func(*args):
        ins = args[:-n_out] if n_out else args
        gos = args[-n_out:] if n_out else ()
        outs = _diff_outputs(func(*ins))
        gi = _grad(outs, [ins[i] for i in diff_in], list(gos), create_graph=True,
                   allow_unused=True)
        return tuple(g for g in gi if g is not None)

    return gradcheck(new_func, inputs + tuple(grad_outputs), eps=eps, atol=atol, rtol=rtol,
                     raise_exception=raise_exception, nondet_tol=nondet_tol,
                     check_undefined_grad=check_undefined_grad, fast_mode=fast_mode,
                     check_forward_ad=check_fwd_over_rev, check_backward_ad=check_rev_over_rev)


__all__ = ["gradcheck", "gradgradcheck", "GradcheckError"]
