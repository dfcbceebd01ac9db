"""Rprop and ASGD (PyTorch's single-tensor algorithms, as optax transforms over PyTorch's state)."""

from __future__ import annotations

import jax.numpy as jnp

from .._tensor import Tensor
from .optimizer import Optimizer, _scalar_dtype, f64, pre_transforms, scalar, state_step, state_zeros, stateful

__all__ = ["Rprop", "ASGD"]


def _rprop_core(h, dtype):
    (etaminus, etaplus), (smin, smax) = h["etas"], h["step_sizes"]

    def update(g, s, p):
        sign = jnp.sign(g * s["prev"])
        em = scalar(etaminus, dtype)
        factor = jnp.where(sign > 0, scalar(etaplus, dtype), jnp.where(sign < 0, em, jnp.ones((), dtype)))
        step_size = jnp.clip(s["step_size"] * factor, scalar(smin, dtype), scalar(smax, dtype))
        # a sign change: no step now, and no sign comparison at the next step (prev = 0)
        g = jnp.where(factor == em, jnp.zeros((), dtype), g)
        new = {**s, "step": s["step"] + 1, "prev": g, "step_size": step_size}
        return -(jnp.sign(g) * step_size), new
    return stateful(update)


class Rprop(Optimizer):
    """Resilient backpropagation: a per-element step size grown by ``etas[1]`` while the
    gradient keeps its sign and shrunk by ``etas[0]`` when it flips (PyTorch's ``Rprop``).

    >>> import funcgrad
    >>> w = funcgrad.tensor([1.0], requires_grad=True)
    >>> opt = funcgrad.optim.Rprop([w], lr=0.1)
    >>> w.sum().backward(); opt.step(); w
    tensor([0.9000], requires_grad=True)
    """

    _hypers = ("lr", "etas", "step_sizes")

    def __init__(self, params, lr: float = 1e-2, etas: tuple[float, float] = (0.5, 1.2),
                 step_sizes: tuple[float, float] = (1e-6, 50), *, capturable: bool = False,
                 foreach: bool | None = None, maximize: bool = False, differentiable: bool = False) -> None:
        if isinstance(lr, Tensor) and lr.numel() != 1:
            raise ValueError("Tensor lr must be 1-element")
        if not 0.0 <= lr:
            raise ValueError(f"Invalid learning rate: {lr}")
        if not 0.0 < etas[0] < 1.0 < etas[1]:
            raise ValueError(f"Invalid eta values: {etas[0]}, {etas[1]}")
        defaults = dict(lr=lr, etas=etas, step_sizes=step_sizes, foreach=foreach, maximize=maximize,
                        differentiable=differentiable, capturable=capturable)
        super().__init__(params, defaults)

    def _static(self, group):
        return (bool(group["maximize"]),)

    def _init_state(self, p, group):
        lr = group["lr"]
        lr = lr.item() if isinstance(lr, Tensor) else lr
        return {"step": state_step(), "prev": state_zeros(p),
                "step_size": state_zeros(p, lr)}

    @staticmethod
    def _transform(h, static, dtype, fresh):
        return [*pre_transforms(h, static[0], False, dtype), _rprop_core(h, dtype)]


def _asgd_core(h, dtype):
    lr, lambd, alpha, t0 = (f64(h[k]) for k in ("lr", "lambd", "alpha", "t0"))

    def update(g, s, p):
        sd = s["step"].dtype
        step = s["step"] + 1
        eta = f64(s["eta"])  # PyTorch reads eta with .item() and computes in double
        new_p = p * scalar(1 - lambd * eta, dtype)
        new_p = new_p + scalar(-eta, dtype) * g
        mu = s["mu"]
        ax = jnp.where(mu != 1, s["ax"] + (new_p - s["ax"]) * mu.astype(dtype), new_p)
        stepd = f64(step)
        new = {**s, "step": step, "ax": ax,
               "eta": (lr / ((1 + lambd * lr * stepd) ** alpha)).astype(sd),
               "mu": (1 / jnp.maximum(1.0, stepd - t0)).astype(sd)}
        return new_p - p, new
    return stateful(update)


class ASGD(Optimizer):
    """Averaged SGD (Polyak & Juditsky): SGD with a decaying step ``eta`` and a running average
    ``ax`` of the iterates once ``step > t0`` (PyTorch's ``ASGD``).

    >>> import funcgrad
    >>> w = funcgrad.tensor([1.0], requires_grad=True)
    >>> opt = funcgrad.optim.ASGD([w], lr=0.1)
    >>> w.sum().backward(); opt.step(); w
    tensor([0.9000], requires_grad=True)
    """

    _hypers = ("lr", "lambd", "alpha", "t0", "weight_decay")

    def __init__(self, params, lr: float = 1e-2, lambd: float = 1e-4, alpha: float = 0.75, t0: float = 1e6,
                 weight_decay: float = 0, foreach: bool | None = None, maximize: bool = False,
                 differentiable: bool = False, capturable: bool = False) -> None:
        if isinstance(lr, Tensor) and lr.numel() != 1:
            raise ValueError("Tensor lr must be 1-element")
        if not 0.0 <= lr:
            raise ValueError(f"Invalid learning rate: {lr}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        defaults = dict(lr=lr, lambd=lambd, alpha=alpha, t0=t0, weight_decay=weight_decay, foreach=foreach,
                        maximize=maximize, differentiable=differentiable, capturable=capturable)
        super().__init__(params, defaults)

    def _static(self, group):
        return (bool(group["maximize"]), group["weight_decay"] != 0)

    def _init_state(self, p, group):
        lr = group["lr"]
        lr = lr.item() if isinstance(lr, Tensor) else lr
        sd = _scalar_dtype()
        return {"step": state_step(), "eta": Tensor._wrap(jnp.asarray(lr, sd)),
                "mu": Tensor._wrap(jnp.ones((), sd)), "ax": state_zeros(p)}

    @staticmethod
    def _transform(h, static, dtype, fresh):
        return [*pre_transforms(h, static[0], static[1], dtype), _asgd_core(h, dtype)]
