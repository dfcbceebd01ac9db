"""SGD with momentum, dampening, Nesterov, L2 weight decay and ``maximize`` (PyTorch's algorithm)."""

from __future__ import annotations

import math

import jax.numpy as jnp

from .optimizer import (Optimizer, check_nonneg, pre_transforms, scalar, state_zeros, stateful)


def _sgd_core(h, nesterov: bool, use_momentum: bool, dtype, fresh):
    """``buf = grad`` on the first step, else ``momentum * buf + (1 - dampening) * grad``;
    the update is ``-lr * (grad + momentum * buf if nesterov else buf)``."""
    lr = scalar(h["lr"], dtype)
    mom = scalar(h["momentum"], dtype)
    keep = scalar(1.0 - jnp.asarray(h["dampening"]).astype(jnp.float64), dtype)

    def update(g, s, p):
        if not use_momentum:
            return -lr * g, s
        buf = jnp.where(fresh, g, s["momentum_buffer"] * mom + keep * g)
        d = g + mom * buf if nesterov else buf
        return -lr * d, {**s, "momentum_buffer": buf}
    return stateful(update)


class SGD(Optimizer):
    """Stochastic gradient descent, optionally with (Nesterov) momentum — PyTorch's ``SGD``.

    Args:
        params: tensors or parameter-group dicts to optimize.
        lr: learning rate (default 1e-3).
        momentum: momentum factor; dampening: dampening for momentum;
        weight_decay: L2 penalty added to the gradient; nesterov: Nesterov momentum;
        maximize: ascend the objective instead.

    >>> import funcgrad
    >>> w = funcgrad.tensor([1.0, -2.0], requires_grad=True)
    >>> opt = funcgrad.optim.SGD([w], lr=0.1, momentum=0.9)
    >>> for _ in range(2):
    ...     opt.zero_grad(); (w ** 2).sum().backward(); opt.step()
    >>> w
    tensor([ 0.4600, -0.9200], requires_grad=True)
    """

    _hypers = ("lr", "momentum", "dampening", "weight_decay")
    _fresh_update = True

    def __init__(self, params, lr: float = 1e-3, momentum: float = 0, dampening: float = 0,
                 weight_decay: float = 0, nesterov: bool = False, *, maximize: bool = False,
                 foreach: bool | None = None, differentiable: bool = False,
                 fused: bool | None = None) -> None:
        if lr < 0.0:
            raise ValueError(f"Invalid learning rate: {lr}")
        check_nonneg("momentum value", momentum)
        check_nonneg("weight_decay value", weight_decay)
        defaults = dict(lr=lr, momentum=momentum, dampening=dampening, weight_decay=weight_decay,
                        nesterov=nesterov, maximize=maximize, foreach=foreach,
                        differentiable=differentiable, fused=fused)
        if nesterov and (momentum <= 0 or dampening != 0):
            raise ValueError("Nesterov momentum requires a momentum and zero dampening")
        super().__init__(params, defaults)

    def __setstate__(self, state):
        super().__setstate__(state)
        for group in self.param_groups:
            group.setdefault("nesterov", False)
            group.setdefault("maximize", False)

    def _static(self, group):
        return (bool(group["maximize"]), group["weight_decay"] != 0, group["momentum"] != 0,
                bool(group["nesterov"]))

    def _state_keys(self, static, state):
        return ("momentum_buffer",) if static[2] else ()

    def _init_state(self, p, group):
        # PyTorch stores the buffer only once momentum is used; the first step sets it to grad.
        # It starts as -0.0, so that the later update, momentum * buf + 1 * grad, gives grad
        # itself, every bit (-0.0 + -0.0 is -0.0, -0.0 + x is x): see _primable
        return {"momentum_buffer": state_zeros(p, -0.0)} if group["momentum"] != 0 else {}

    def _primable(self, group) -> bool:
        # the first update sets buf = grad; from the -0.0 buffer the later update gives
        # momentum * -0.0 + (1 - dampening) * grad, which is grad bit for bit when dampening is 0
        # and momentum finite (so funcgrad.jit compiles one program for both)
        return float(group["dampening"]) == 0.0 and math.isfinite(float(group["momentum"]))

    @staticmethod
    def _transform(h, static, dtype, fresh):
        maximize, l2, use_momentum, nesterov = static
        return [*pre_transforms(h, maximize, l2, dtype),
                _sgd_core(h, nesterov, use_momentum, dtype, fresh)]
