"""``nn.utils.weight_norm`` / ``remove_weight_norm``: PyTorch's (deprecated, still common) weight
normalisation ``w = g · v / ‖v‖``, recomputed by a forward pre-hook from the parameters
``<name>_g`` (magnitude) and ``<name>_v`` (direction)."""

from __future__ import annotations

import warnings

import jax.numpy as jnp

from ..._dispatch import apply
from ..._ops._registry import defop
from ..parameter import Parameter

DEPRECATED_MSG = ("`torch.nn.utils.weight_norm` is deprecated in favor of "
                  "`torch.nn.utils.parametrizations.weight_norm`.")


def _norm_except_dim(v, dim):
    if dim == -1:
        return jnp.sqrt(jnp.sum(jnp.square(v)))
    axes = tuple(k for k in range(v.ndim) if k != dim)
    return jnp.sqrt(jnp.sum(jnp.square(v), axis=axes, keepdims=True))


_norm_op = defop("norm_except_dim", lambda v, dim: _norm_except_dim(v, dim), "NormBackward1")
_weight_norm_op = defop("weight_norm_interface", lambda v, g, dim: v * (g / _norm_except_dim(v, dim)),
                        "WeightNormInterfaceBackward0")
# over the whole tensor (dim=None) PyTorch composes it from ops, the last a mul
_weight_norm_all_op = defop("weight_norm_all", lambda v, g: v * (g / _norm_except_dim(v, -1)), "MulBackward0")


class WeightNorm:
    """The forward pre-hook that recomputes ``module.<name>`` from ``<name>_g`` and ``<name>_v``."""

    def __init__(self, name: str, dim: int | None) -> None:
        self.name, self.dim = name, -1 if dim is None else dim

    def compute_weight(self, module):
        v, g = getattr(module, self.name + "_v"), getattr(module, self.name + "_g")
        if self.dim == -1:
            return apply(_weight_norm_all_op, v, g)
        return apply(_weight_norm_op, v, g, dim=self.dim)

    @staticmethod
    def apply(module, name: str, dim: int | None) -> "WeightNorm":
        warnings.warn(DEPRECATED_MSG, FutureWarning, stacklevel=3)
        for hook in module._forward_pre_hooks.values():
            if isinstance(hook, WeightNorm) and hook.name == name:
                raise RuntimeError(f"Cannot register two weight_norm hooks on the same parameter {name}")
        fn = WeightNorm(name, dim)
        weight = getattr(module, name)
        del module._parameters[name]
        d = fn.dim if fn.dim < 0 else fn.dim % max(weight.ndim, 1)
        fn.dim = -1 if fn.dim == -1 else d
        module.register_parameter(name + "_g", Parameter(apply(_norm_op, weight.detach(), dim=fn.dim)))
        module.register_parameter(name + "_v", Parameter(weight.data))
        setattr(module, name, fn.compute_weight(module))
        module.register_forward_pre_hook(fn)
        return fn

    def remove(self, module) -> None:
        weight = self.compute_weight(module)
        delattr(module, self.name)
        del module._parameters[self.name + "_g"]
        del module._parameters[self.name + "_v"]
        setattr(module, self.name, Parameter(weight.detach()))

    def __call__(self, module, inputs) -> None:
        setattr(module, self.name, self.compute_weight(module))


def weight_norm(module, name: str = "weight", dim: int | None = 0):
    """Replace ``module.<name>`` by ``<name>_g · <name>_v / ‖<name>_v‖`` (norm over every dim but
    ``dim``; over all with ``dim=None``). Warns ``FutureWarning`` as PyTorch 2.13 does.

    >>> import warnings
    >>> from funcgrad import nn
    >>> with warnings.catch_warnings():
    ...     warnings.simplefilter("ignore", FutureWarning)
    ...     m = nn.utils.weight_norm(nn.Linear(20, 40))
    >>> m.weight_g.size(), m.weight_v.size()
    (funcgrad.Size([40, 1]), funcgrad.Size([40, 20]))
    """
    WeightNorm.apply(module, name, dim)
    return module


def remove_weight_norm(module, name: str = "weight"):
    """Undo :func:`weight_norm`: ``<name>`` becomes a plain parameter again."""
    for k, hook in module._forward_pre_hooks.items():
        if isinstance(hook, WeightNorm) and hook.name == name:
            hook.remove(module)
            del module._forward_pre_hooks[k]
            return module
    raise ValueError(f"weight_norm of '{name}' not found in {module}")


__all__ = ["WeightNorm", "weight_norm", "remove_weight_norm"]
