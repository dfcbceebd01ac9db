"""The Adam family: Adam, AdamW, Adamax, NAdam, RAdam (PyTorch's algorithms, step for step).

Each ``*_core`` is a small optax transform over PyTorch's per-parameter state dict; scalar
arithmetic (bias corrections, step sizes) is done in float64 like PyTorch's Python floats and
cast to the parameter dtype before it touches an array.
"""

from __future__ import annotations

import jax.numpy as jnp

from .optimizer import (Optimizer, _scalar_dtype, _host_full, decoupled_decay, f64, lerp,
                        pre_transforms, scalar, state_step, state_zeros, stateful)
from .._tensor import Tensor


def _check_betas_eps(lr, eps, betas, weight_decay) -> None:
    if not 0.0 <= lr:
        raise ValueError(f"Invalid learning rate: {lr}")
    if not 0.0 <= eps:
        raise ValueError(f"Invalid epsilon value: {eps}")
    if not 0.0 <= betas[0] < 1.0:
        raise ValueError(f"Invalid beta parameter at index 0: {betas[0]}")
    if not 0.0 <= betas[1] < 1.0:
        raise ValueError(f"Invalid beta parameter at index 1: {betas[1]}")
    if not 0.0 <= weight_decay:
        raise ValueError(f"Invalid weight_decay value: {weight_decay}")


def _moments(g, s, b1, b2, dtype):
    """``exp_avg.lerp_(g, 1 - b1)`` and ``exp_avg_sq.mul_(b2).addcmul_(g, g, 1 - b2)``."""
    m = lerp(s["exp_avg"], g, scalar(1.0 - f64(b1), dtype))
    v = s["exp_avg_sq"] * scalar(b2, dtype) + scalar(1.0 - f64(b2), dtype) * (g * g)
    return m, v


# ---- Adam / AdamW ---------------------------------------------------------------------------------
def _adam_core(h, amsgrad: bool, dtype):
    b1, b2 = h["betas"]

    def update(g, s, p):
        step = s["step"] + 1
        t = f64(step)
        m, v = _moments(g, s, b1, b2, dtype)
        bc1, bc2 = 1.0 - f64(b1) ** t, 1.0 - f64(b2) ** t
        step_size = f64(h["lr"]) / bc1
        new = {**s, "step": step, "exp_avg": m, "exp_avg_sq": v}
        if amsgrad:
            v = new["max_exp_avg_sq"] = jnp.maximum(s["max_exp_avg_sq"], v)
        denom = jnp.sqrt(v) / scalar(jnp.sqrt(bc2), dtype) + scalar(h["eps"], dtype)
        return scalar(-step_size, dtype) * m / denom, new
    return stateful(update)


class Adam(Optimizer):
    """Adam (Kingma & Ba), PyTorch's variant: ``eps`` added to ``sqrt(v) / sqrt(1 - beta2^t)``.

    Args:
        params: tensors or parameter-group dicts. lr: learning rate (1e-3).
        betas: coefficients of the running averages (0.9, 0.999). eps: denominator term (1e-8).
        weight_decay: L2 penalty (decoupled, as AdamW, if ``decoupled_weight_decay``).
        amsgrad: use the maximum of past squared-gradient averages. maximize: ascend instead.

    >>> import funcgrad
    >>> w = funcgrad.tensor([1.0, -1.0], requires_grad=True)
    >>> opt = funcgrad.optim.Adam([w], lr=0.1)
    >>> (w ** 2).sum().backward(); opt.step(); w
    tensor([ 0.9000, -0.9000], requires_grad=True)
    >>> opt.state[w]["step"]
    tensor(1.)
    """

    _hypers = ("lr", "betas", "eps", "weight_decay")

    def __init__(self, params, lr: float = 1e-3, betas: tuple[float, float] = (0.9, 0.999),
                 eps: float = 1e-8, weight_decay: float = 0, amsgrad: bool = False, *,
                 foreach: bool | None = None, maximize: bool = False, capturable: bool = False,
                 differentiable: bool = False, fused: bool | None = None,
                 decoupled_weight_decay: bool = False) -> None:
        _check_betas_eps(lr, eps, betas, weight_decay)
        defaults = dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay, amsgrad=amsgrad,
                        maximize=maximize, foreach=foreach, capturable=capturable,
                        differentiable=differentiable, fused=fused,
                        decoupled_weight_decay=decoupled_weight_decay)
        super().__init__(params, defaults)

    def _static(self, group):
        return (bool(group["maximize"]), group["weight_decay"] != 0,
                bool(group["decoupled_weight_decay"]), bool(group["amsgrad"]))

    def _init_state(self, p, group):
        st = {"step": state_step(), "exp_avg": state_zeros(p), "exp_avg_sq": state_zeros(p)}
        if group["amsgrad"]:
            st["max_exp_avg_sq"] = state_zeros(p)
        return st

    @staticmethod
    def _transform(h, static, dtype, fresh):
        maximize, wd, decoupled, amsgrad = static
        parts = [*pre_transforms(h, maximize, wd and not decoupled, dtype), _adam_core(h, amsgrad, dtype)]
        if wd and decoupled:
            parts.append(decoupled_decay(h, dtype))
        return parts


class AdamW(Adam):
    """Adam with decoupled weight decay (``p *= 1 - lr * weight_decay`` before the update).

    >>> import funcgrad
    >>> w = funcgrad.tensor([1.0], requires_grad=True)
    >>> opt = funcgrad.optim.AdamW([w], lr=0.1, weight_decay=0.5)
    >>> w.sum().backward(); opt.step(); w
    tensor([0.8500], requires_grad=True)
    """

    def __init__(self, params, lr: float = 1e-3, betas: tuple[float, float] = (0.9, 0.999),
                 eps: float = 1e-8, weight_decay: float = 1e-2, amsgrad: bool = False, *,
                 maximize: bool = False, foreach: bool | None = None, capturable: bool = False,
                 differentiable: bool = False, fused: bool | None = None) -> None:
        super().__init__(params, lr, betas, eps, weight_decay, amsgrad, foreach=foreach,
                         maximize=maximize, capturable=capturable, differentiable=differentiable,
                         fused=fused, decoupled_weight_decay=True)


# ---- Adamax -------------------------------------------------------------------------------------------
def _adamax_core(h, dtype):
    b1, b2 = h["betas"]

    def update(g, s, p):
        step = s["step"] + 1
        m = lerp(s["exp_avg"], g, scalar(1.0 - f64(b1), dtype))
        u = jnp.maximum(s["exp_inf"] * scalar(b2, dtype), jnp.abs(g) + scalar(h["eps"], dtype))
        clr = f64(h["lr"]) / (1.0 - f64(b1) ** f64(step))
        return scalar(-clr, dtype) * m / u, {**s, "step": step, "exp_avg": m, "exp_inf": u}
    return stateful(update)


class Adamax(Optimizer):
    """Adamax: Adam with the infinity norm (PyTorch's ``Adamax``).

    >>> import funcgrad
    >>> w = funcgrad.tensor([1.0], requires_grad=True)
    >>> opt = funcgrad.optim.Adamax([w], lr=0.1)
    >>> w.sum().backward(); opt.step(); w
    tensor([0.9000], requires_grad=True)
    """

    _hypers = ("lr", "betas", "eps", "weight_decay")

    def __init__(self, params, lr: float = 2e-3, betas: tuple[float, float] = (0.9, 0.999),
                 eps: float = 1e-8, weight_decay: float = 0, foreach: bool | None = None, *,
                 maximize: bool = False, differentiable: bool = False,
                 capturable: bool = False) -> None:
        _check_betas_eps(lr, eps, betas, weight_decay)
        defaults = dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay, foreach=foreach,
                        maximize=maximize, differentiable=differentiable, capturable=capturable)
        super().__init__(params, defaults)

    def _static(self, group):
        return (bool(group["maximize"]), group["weight_decay"] != 0)

    def _init_state(self, p, group):
        return {"step": state_step(), "exp_avg": state_zeros(p), "exp_inf": state_zeros(p)}

    @staticmethod
    def _transform(h, static, dtype, fresh):
        return [*pre_transforms(h, static[0], static[1], dtype), _adamax_core(h, dtype)]


# ---- NAdam ---------------------------------------------------------------------------------------------
def _nadam_core(h, dtype):
    b1, b2 = h["betas"]

    def update(g, s, p):
        step = s["step"] + 1
        t = f64(step)
        bc2 = 1.0 - f64(b2) ** t
        psi = f64(h["momentum_decay"])
        mu = f64(b1) * (1.0 - 0.5 * 0.96 ** (t * psi))
        mu_next = f64(b1) * (1.0 - 0.5 * 0.96 ** ((t + 1.0) * psi))
        # ``mu_product *= mu`` happens in the state's own dtype (float32 by default), as PyTorch
        mp_t = s["mu_product"]
        mp_t = mp_t * mu.astype(mp_t.dtype)
        mp = f64(mp_t)
        mp_next = mp * mu_next
        m, v = _moments(g, s, b1, b2, dtype)
        denom = jnp.sqrt(v / scalar(bc2, dtype)) + scalar(h["eps"], dtype)
        lr = f64(h["lr"])
        upd = (scalar(-lr * (1.0 - mu) / (1.0 - mp), dtype) * g / denom
               + scalar(-lr * mu_next / (1.0 - mp_next), dtype) * m / denom)
        return upd, {**s, "step": step, "mu_product": mp_t, "exp_avg": m, "exp_avg_sq": v}
    return stateful(update)


class NAdam(Optimizer):
    """Adam with Nesterov momentum (Dozat), PyTorch's ``NAdam`` with its momentum schedule.

    >>> import funcgrad
    >>> w = funcgrad.tensor([1.0], requires_grad=True)
    >>> opt = funcgrad.optim.NAdam([w], lr=0.1)
    >>> w.sum().backward(); opt.step(); w
    tensor([0.8944], requires_grad=True)
    """

    _hypers = ("lr", "betas", "eps", "weight_decay", "momentum_decay")

    def __init__(self, params, lr: float = 2e-3, betas: tuple[float, float] = (0.9, 0.999),
                 eps: float = 1e-8, weight_decay: float = 0, momentum_decay: float = 4e-3,
                 decoupled_weight_decay: bool = False, *, foreach: bool | None = None,
                 maximize: bool = False, capturable: bool = False,
                 differentiable: bool = False) -> None:
        _check_betas_eps(lr, eps, betas, weight_decay)
        if not 0.0 <= momentum_decay:
            raise ValueError(f"Invalid momentum_decay value: {momentum_decay}")
        defaults = dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay,
                        momentum_decay=momentum_decay, decoupled_weight_decay=decoupled_weight_decay,
                        maximize=maximize, foreach=foreach, capturable=capturable,
                        differentiable=differentiable)
        super().__init__(params, defaults)

    def _static(self, group):
        return (bool(group["maximize"]), group["weight_decay"] != 0,
                bool(group["decoupled_weight_decay"]))

    def _init_state(self, p, group):
        return {"step": state_step(), "mu_product": Tensor._wrap(_host_full((), _scalar_dtype(), 1)),
                "exp_avg": state_zeros(p), "exp_avg_sq": state_zeros(p)}

    @staticmethod
    def _transform(h, static, dtype, fresh):
        maximize, wd, decoupled = static
        parts = [*pre_transforms(h, maximize, wd and not decoupled, dtype), _nadam_core(h, dtype)]
        if wd and decoupled:
            parts.append(decoupled_decay(h, dtype))
        return parts


# ---- RAdam ---------------------------------------------------------------------------------------------
def _radam_core(h, dtype):
    b1, b2 = h["betas"]

    def update(g, s, p):
        step = s["step"] + 1
        t = f64(step)
        m, v = _moments(g, s, b1, b2, dtype)
        bc1, bc2 = 1.0 - f64(b1) ** t, 1.0 - f64(b2) ** t
        corrected = m / scalar(bc1, dtype)
        rho_inf = 2.0 / (1.0 - f64(b2)) - 1.0
        rho_t = rho_inf - 2.0 * t * (f64(b2) ** t) / bc2
        # rect is only used where rho_t > 5; clamp its radicand so the other branch stays finite
        rect = jnp.sqrt(jnp.maximum((rho_t - 4) * (rho_t - 2) * rho_inf
                                    / ((rho_inf - 4) * (rho_inf - 2) * rho_t), 0.0))
        adaptive = scalar(jnp.sqrt(bc2), dtype) / (jnp.sqrt(v) + scalar(h["eps"], dtype))
        lr = scalar(h["lr"], dtype)
        upd = jnp.where(rho_t > 5.0, corrected * lr * adaptive * scalar(rect, dtype), corrected * lr)
        return -upd, {**s, "step": step, "exp_avg": m, "exp_avg_sq": v}
    return stateful(update)


class RAdam(Optimizer):
    """Rectified Adam (Liu et al.), PyTorch's ``RAdam``.

    >>> import funcgrad
    >>> w = funcgrad.tensor([1.0], requires_grad=True)
    >>> opt = funcgrad.optim.RAdam([w], lr=0.1)
    >>> w.sum().backward(); opt.step(); w
    tensor([0.9000], requires_grad=True)
    """

    _hypers = ("lr", "betas", "eps", "weight_decay")

    def __init__(self, params, lr: float = 1e-3, betas: tuple[float, float] = (0.9, 0.999),
                 eps: float = 1e-8, weight_decay: float = 0, decoupled_weight_decay: bool = False, *,
                 foreach: bool | None = None, maximize: bool = False, capturable: bool = False,
                 differentiable: bool = False) -> None:
        _check_betas_eps(lr, eps, betas, weight_decay)
        defaults = dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay, maximize=maximize,
                        foreach=foreach, capturable=capturable,
                        decoupled_weight_decay=decoupled_weight_decay, differentiable=differentiable)
        super().__init__(params, defaults)

    _static = NAdam._static

    def _init_state(self, p, group):
        return {"step": state_step(), "exp_avg": state_zeros(p), "exp_avg_sq": state_zeros(p)}

    @staticmethod
    def _transform(h, static, dtype, fresh):
        maximize, wd, decoupled = static
        parts = [*pre_transforms(h, maximize, wd and not decoupled, dtype), _radam_core(h, dtype)]
        if wd and decoupled:
            parts.append(decoupled_decay(h, dtype))
        return parts
