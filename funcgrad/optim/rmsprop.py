"""RMSprop (PyTorch's algorithm: optional centering, momentum, L2 weight decay)."""

from __future__ import annotations

import jax.numpy as jnp

from .optimizer import (Optimizer, f64, lerp, pre_transforms, scalar, state_step, state_zeros,
                        stateful)


def _rmsprop_core(h, centered: bool, use_momentum: bool, dtype):
    alpha = h["alpha"]

    def update(g, s, p):
        new = {**s, "step": s["step"] + 1}
        sq = s["square_avg"] * scalar(alpha, dtype) + scalar(1.0 - f64(alpha), dtype) * (g * g)
        new["square_avg"] = sq
        if centered:
            ga = new["grad_avg"] = lerp(s["grad_avg"], g, scalar(1.0 - f64(alpha), dtype))
            avg = jnp.sqrt(sq - ga * ga)
        else:
            avg = jnp.sqrt(sq)
        avg = avg + scalar(h["eps"], dtype)
        lr = scalar(h["lr"], dtype)
        if use_momentum:
            buf = new["momentum_buffer"] = s["momentum_buffer"] * scalar(h["momentum"], dtype) + g / avg
            return -lr * buf, new
        return -lr * g / avg, new
    return stateful(update)


class RMSprop(Optimizer):
    """RMSprop (Hinton), PyTorch's ``RMSprop``.

    >>> import funcgrad
    >>> w = funcgrad.tensor([1.0], requires_grad=True)
    >>> opt = funcgrad.optim.RMSprop([w], lr=0.01)
    >>> w.sum().backward(); opt.step(); w
    tensor([0.9000], requires_grad=True)
    """

    _hypers = ("lr", "alpha", "eps", "weight_decay", "momentum")

    def __init__(self, params, lr: float = 1e-2, alpha: float = 0.99, eps: float = 1e-8,
                 weight_decay: float = 0, momentum: float = 0, centered: bool = False,
                 capturable: bool = False, foreach: bool | None = None, maximize: bool = False,
                 differentiable: bool = False) -> None:
        if not 0.0 <= lr:
            raise ValueError(f"Invalid learning rate: {lr}")
        if not 0.0 <= eps:
            raise ValueError(f"Invalid epsilon value: {eps}")
        if not 0.0 <= momentum:
            raise ValueError(f"Invalid momentum value: {momentum}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        if not 0.0 <= alpha:
            raise ValueError(f"Invalid alpha value: {alpha}")
        defaults = dict(lr=lr, momentum=momentum, alpha=alpha, eps=eps, centered=centered,
                        weight_decay=weight_decay, capturable=capturable, foreach=foreach,
                        maximize=maximize, differentiable=differentiable)
        super().__init__(params, defaults)

    def _static(self, group):
        return (bool(group["maximize"]), group["weight_decay"] != 0, bool(group["centered"]),
                group["momentum"] > 0)

    def _init_state(self, p, group):
        st = {"step": state_step(), "square_avg": state_zeros(p)}
        if group["momentum"] > 0:
            st["momentum_buffer"] = state_zeros(p)
        if group["centered"]:
            st["grad_avg"] = state_zeros(p)
        return st

    @staticmethod
    def _transform(h, static, dtype, fresh):
        maximize, wd, centered, use_momentum = static
        return [*pre_transforms(h, maximize, wd, dtype), _rmsprop_core(h, centered, use_momentum, dtype)]
