"""Gradient clipping: ``clip_grad_norm_`` and ``clip_grad_value_``.

Each is ONE jitted computation over all the gradients (norms, total, scaling), cached per
structure of shapes/dtypes, whose results are written back into the existing ``.grad`` tensors.
"""

from __future__ import annotations

import math
from functools import partial

import jax
import jax.numpy as jnp

from ..._factories import tensor as _tensor_of
from ..._tensor import Tensor
from ...autograd import grad_mode


def _grads(parameters):
    if isinstance(parameters, Tensor):
        parameters = [parameters]
    return [p for p in parameters if p.grad is not None]


def _total_norm(gs, norm_type):
    if not gs:
        return jnp.zeros((), jnp.float32)
    dt = jnp.result_type(*gs)
    if norm_type == math.inf:
        norms = [jnp.max(jnp.abs(g)) if g.size else jnp.zeros((), g.dtype) for g in gs]
        return jnp.max(jnp.stack([n.astype(dt) for n in norms]))
    if norm_type == -math.inf:
        return jnp.min(jnp.stack([jnp.min(jnp.abs(g)).astype(dt) for g in gs]))
    norms = [jnp.linalg.norm(g.ravel(), ord=norm_type).astype(dt) for g in gs]
    return jnp.linalg.norm(jnp.stack(norms), ord=norm_type)


@partial(jax.jit, static_argnums=(2,))
def _clip_norm_kernel(gs, max_norm, norm_type):
    total = _total_norm(gs, norm_type)
    coef = jnp.minimum(max_norm / (total + 1e-6), 1.0)
    return total, [(g * coef.astype(g.dtype)).astype(g.dtype) for g in gs]


@partial(jax.jit, static_argnums=(1,))
def _norm_kernel(gs, norm_type):
    return _total_norm(gs, norm_type)


def _write(t: Tensor, value) -> None:
    t._set_value(value)
    t._ver[0] += 1


def _check_finite(total, norm_type, error_if_nonfinite):
    if error_if_nonfinite and not isinstance(total, jax.core.Tracer) and not bool(jnp.isfinite(total)):
        raise RuntimeError(f"The total norm of order {float(norm_type)} for gradients from `parameters` is "
                           f"non-finite, so it cannot be clipped. To disable this error and scale the "
                           f"gradients by the non-finite norm anyway, set `error_if_nonfinite=False`")


def clip_grad_norm_(parameters, max_norm: float, norm_type: float = 2.0, error_if_nonfinite: bool = False,
                    foreach: bool | None = None) -> Tensor:
    """Scale all gradients together so that their total ``norm_type``-norm is at most ``max_norm``;
    returns the total norm (before clipping). Gradients are modified in place.

    >>> import funcgrad
    >>> from funcgrad import nn
    >>> w = nn.Parameter(funcgrad.zeros(2)); w.grad = funcgrad.tensor([3., 4.])
    >>> nn.utils.clip_grad_norm_([w], max_norm=1.0)
    tensor(5.)
    >>> w.grad
    tensor([0.6000, 0.8000])
    """
    params = _grads(parameters)
    norm_type = float(norm_type)
    if not params:
        return _tensor_of(0.0)
    gs = [p.grad._value for p in params]
    total, new = _clip_norm_kernel(gs, float(max_norm), norm_type)
    _check_finite(total, norm_type, error_if_nonfinite)
    with grad_mode.no_grad():
        for p, g in zip(params, new):
            _write(p.grad, g)
    return Tensor._wrap(total)


def clip_grad_norm(parameters, max_norm, norm_type=2.0, error_if_nonfinite=False, foreach=None):
    import warnings
    warnings.warn("`torch.nn.utils.clip_grad_norm` is now deprecated in favor of "
                  "`torch.nn.utils.clip_grad_norm_`.", FutureWarning, stacklevel=2)
    return clip_grad_norm_(parameters, max_norm, norm_type, error_if_nonfinite, foreach)


def get_total_norm(tensors, norm_type: float = 2.0, error_if_nonfinite: bool = False,
                   foreach: bool | None = None) -> Tensor:
    """The ``norm_type``-norm of all ``tensors`` together (as if concatenated)."""
    if isinstance(tensors, Tensor):
        tensors = [tensors]
    vals = [t._value for t in tensors if t is not None]
    total = _norm_kernel(vals, float(norm_type))
    _check_finite(total, norm_type, error_if_nonfinite)
    return Tensor._wrap(total)


@jax.jit
def _scale_kernel(gs, max_norm, total):
    coef = jnp.minimum(max_norm / (total + 1e-6), 1.0)
    return [(g * coef.astype(g.dtype)).astype(g.dtype) for g in gs]


def clip_grads_with_norm_(parameters, max_norm: float, total_norm: Tensor, foreach=None) -> None:
    """Scale gradients by ``min(1, max_norm / (total_norm + 1e-6))`` in place."""
    params = _grads(parameters)
    if not params:
        return
    new = _scale_kernel([p.grad._value for p in params], float(max_norm), total_norm._value)
    with grad_mode.no_grad():
        for p, g in zip(params, new):
            _write(p.grad, g)


@jax.jit
def _clip_value_kernel(gs, v):
    return [jnp.clip(g, -v, v).astype(g.dtype) for g in gs]


def clip_grad_value_(parameters, clip_value: float, foreach: bool | None = None) -> None:
    """Clamp every gradient element into ``[-clip_value, clip_value]`` in place."""
    params = _grads(parameters)
    if not params:
        return
    new = _clip_value_kernel([p.grad._value for p in params], float(clip_value))
    with grad_mode.no_grad():
        for p, g in zip(params, new):
            _write(p.grad, g)
