"""Adagrad and Adadelta (PyTorch's algorithms)."""

from __future__ import annotations

import jax.numpy as jnp

from .optimizer import Optimizer, f64, pre_transforms, scalar, state_step, state_zeros, stateful


def _adagrad_core(h, dtype):
    def update(g, s, p):
        step = s["step"] + 1
        clr = f64(h["lr"]) / (1.0 + (f64(step) - 1.0) * f64(h["lr_decay"]))
        acc = s["sum"] + g * g
        std = jnp.sqrt(acc) + scalar(h["eps"], dtype)
        return scalar(-clr, dtype) * g / std, {**s, "step": step, "sum": acc}
    return stateful(update)


class Adagrad(Optimizer):
    """Adagrad (Duchi et al.), PyTorch's ``Adagrad`` with ``lr_decay``.

    >>> import funcgrad
    >>> w = funcgrad.tensor([1.0], requires_grad=True)
    >>> opt = funcgrad.optim.Adagrad([w], lr=0.1)
    >>> w.sum().backward(); opt.step(); w
    tensor([0.9000], requires_grad=True)
    """

    _hypers = ("lr", "lr_decay", "eps", "weight_decay")

    def __init__(self, params, lr: float = 1e-2, lr_decay: float = 0, weight_decay: float = 0,
                 initial_accumulator_value: float = 0, eps: float = 1e-10,
                 foreach: bool | None = None, *, maximize: bool = False,
                 differentiable: bool = False, fused: bool | None = None) -> None:
        if not 0.0 <= lr:
            raise ValueError(f"Invalid learning rate: {lr}")
        if not 0.0 <= lr_decay:
            raise ValueError(f"Invalid lr_decay value: {lr_decay}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        if not 0.0 <= initial_accumulator_value:
            raise ValueError(f"Invalid initial_accumulator_value value: {initial_accumulator_value}")
        if not 0.0 <= eps:
            raise ValueError(f"Invalid epsilon value: {eps}")
        defaults = dict(lr=lr, lr_decay=lr_decay, eps=eps, weight_decay=weight_decay,
                        initial_accumulator_value=initial_accumulator_value, foreach=foreach,
                        maximize=maximize, differentiable=differentiable, fused=fused)
        super().__init__(params, defaults)
        # PyTorch creates Adagrad's state eagerly, in the constructor
        for group in self.param_groups:
            for p in group["params"]:
                self.state[p].update(self._init_state(p, group))

    def _static(self, group):
        return (bool(group["maximize"]), group["weight_decay"] != 0)

    def _init_state(self, p, group):
        v = group["initial_accumulator_value"]
        return {"step": state_step(), "sum": state_zeros(p, v)}

    @staticmethod
    def _transform(h, static, dtype, fresh):
        return [*pre_transforms(h, static[0], static[1], dtype), _adagrad_core(h, dtype)]


def _adadelta_core(h, dtype):
    rho = h["rho"]

    def update(g, s, p):
        eps = scalar(h["eps"], dtype)
        keep, new_w = scalar(rho, dtype), scalar(1.0 - f64(rho), dtype)
        sq = s["square_avg"] * keep + new_w * (g * g)
        std = jnp.sqrt(sq + eps)
        delta = jnp.sqrt(s["acc_delta"] + eps) / std * g
        acc = s["acc_delta"] * keep + new_w * (delta * delta)
        return -scalar(h["lr"], dtype) * delta, {**s, "step": s["step"] + 1, "square_avg": sq,
                                                 "acc_delta": acc}
    return stateful(update)


class Adadelta(Optimizer):
    """Adadelta (Zeiler), PyTorch's ``Adadelta``.

    >>> import funcgrad
    >>> w = funcgrad.tensor([1.0], requires_grad=True)
    >>> opt = funcgrad.optim.Adadelta([w])
    >>> w.sum().backward(); opt.step(); w
    tensor([0.9968], requires_grad=True)
    """

    _hypers = ("lr", "rho", "eps", "weight_decay")

    def __init__(self, params, lr: float = 1.0, rho: float = 0.9, eps: float = 1e-6,
                 weight_decay: float = 0, foreach: bool | None = None, *, capturable: bool = False,
                 maximize: bool = False, differentiable: bool = False) -> None:
        if not 0.0 <= lr:
            raise ValueError(f"Invalid learning rate: {lr}")
        if not 0.0 <= rho <= 1.0:
            raise ValueError(f"Invalid rho value: {rho}")
        if not 0.0 <= eps:
            raise ValueError(f"Invalid epsilon value: {eps}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        defaults = dict(lr=lr, rho=rho, eps=eps, weight_decay=weight_decay, maximize=maximize,
                        capturable=capturable, foreach=foreach, differentiable=differentiable)
        super().__init__(params, defaults)

    def _static(self, group):
        return (bool(group["maximize"]), group["weight_decay"] != 0)

    def _init_state(self, p, group):
        return {"step": state_step(), "square_avg": state_zeros(p), "acc_delta": state_zeros(p)}

    @staticmethod
    def _transform(h, static, dtype, fresh):
        return [*pre_transforms(h, static[0], static[1], dtype), _adadelta_core(h, dtype)]
