"""``nn.utils.spectral_norm`` / ``remove_spectral_norm``: PyTorch's hook-based spectral
normalisation ``W / σ(W)``, σ estimated by power iteration on the buffers ``<name>_u`` and
``<name>_v`` (drawn at registration as PyTorch draws them: ``normal_`` for ``u`` then ``v``),
recomputed by a forward pre-hook from the parameter ``<name>_orig``."""

from __future__ import annotations

from ... import _factories
from ..._ops.linalg import mv as _mv
from ...autograd.grad_mode import no_grad
from .. import functional as F
from ..layers.conv import ConvTranspose1d, ConvTranspose2d, ConvTranspose3d
from ..parameter import Parameter, UninitializedParameter

__all__ = ["SpectralNorm", "spectral_norm", "remove_spectral_norm"]


class SpectralNorm:
    """The forward pre-hook: ``module.<name> = <name>_orig / σ`` (power iteration in training)."""

    _version: int = 1

    def __init__(self, name: str = "weight", n_power_iterations: int = 1, dim: int = 0, eps: float = 1e-12) -> None:
        self.name = name
        self.dim = dim
        if n_power_iterations <= 0:
            raise ValueError("Expected n_power_iterations to be positive, but got "
                             f"n_power_iterations={n_power_iterations}")
        self.n_power_iterations = n_power_iterations
        self.eps = eps

    def reshape_weight_to_matrix(self, weight):
        weight_mat = weight
        if self.dim != 0:
            weight_mat = weight_mat.permute(self.dim, *[d for d in range(weight_mat.dim()) if d != self.dim])
        return weight_mat.reshape(weight_mat.size(0), -1)

    def compute_weight(self, module, do_power_iteration: bool):
        weight = getattr(module, self.name + "_orig")
        u = getattr(module, self.name + "_u")
        v = getattr(module, self.name + "_v")
        weight_mat = self.reshape_weight_to_matrix(weight)
        if do_power_iteration:
            with no_grad():
                for _ in range(self.n_power_iterations):
                    # PyTorch normalises into the buffers (``out=``): they carry the iterate over
                    v.copy_(F.normalize(_mv(weight_mat.t(), u), dim=0, eps=self.eps))
                    u.copy_(F.normalize(_mv(weight_mat, v), dim=0, eps=self.eps))
                u = u.clone()
                v = v.clone()
        sigma = u.dot(_mv(weight_mat, v))
        return weight / sigma

    def remove(self, module) -> None:
        with no_grad():
            weight = self.compute_weight(module, do_power_iteration=False)
        delattr(module, self.name)
        delattr(module, self.name + "_u")
        delattr(module, self.name + "_v")
        delattr(module, self.name + "_orig")
        module.register_parameter(self.name, Parameter(weight.detach()))

    def __call__(self, module, inputs) -> None:
        setattr(module, self.name, self.compute_weight(module, do_power_iteration=module.training))

    @staticmethod
    def apply(module, name: str, n_power_iterations: int, dim: int, eps: float) -> "SpectralNorm":
        for hook in module._forward_pre_hooks.values():
            if isinstance(hook, SpectralNorm) and hook.name == name:
                raise RuntimeError(f"Cannot register two spectral_norm hooks on the same parameter {name}")
        fn = SpectralNorm(name, n_power_iterations, dim, eps)
        weight = module._parameters[name]
        if weight is None:
            raise ValueError(f"`SpectralNorm` cannot be applied as parameter `{name}` is None")
        if isinstance(weight, UninitializedParameter):
            raise ValueError("The module passed to `SpectralNorm` can't have uninitialized parameters. "
                             "Make sure to run the dummy forward before applying spectral normalization")
        with no_grad():
            weight_mat = fn.reshape_weight_to_matrix(weight)
            h, w = weight_mat.size()
            u = F.normalize(_factories.empty(h, dtype=weight.dtype).normal_(0, 1), dim=0, eps=fn.eps)
            v = F.normalize(_factories.empty(w, dtype=weight.dtype).normal_(0, 1), dim=0, eps=fn.eps)
        delattr(module, fn.name)
        module.register_parameter(fn.name + "_orig", weight)
        setattr(module, fn.name, weight.data)
        module.register_buffer(fn.name + "_u", u)
        module.register_buffer(fn.name + "_v", v)
        module.register_forward_pre_hook(fn)
        return fn


def spectral_norm(module, name: str = "weight", n_power_iterations: int = 1, eps: float = 1e-12, dim=None):
    """Spectrally normalise ``module.<name>`` (a forward pre-hook; ``dim`` 1 for transposed convs).

    >>> import funcgrad
    >>> from funcgrad import nn
    >>> m = nn.utils.spectral_norm(nn.Linear(4, 3))
    >>> sorted(m.state_dict())
    ['bias', 'weight_orig', 'weight_u', 'weight_v']
    """
    if dim is None:
        dim = 1 if isinstance(module, (ConvTranspose1d, ConvTranspose2d, ConvTranspose3d)) else 0
    SpectralNorm.apply(module, name, n_power_iterations, dim, eps)
    return module


def remove_spectral_norm(module, name: str = "weight"):
    """Undo :func:`spectral_norm`: ``<name>`` becomes a plain parameter holding ``W / σ``."""
    for k, hook in module._forward_pre_hooks.items():
        if isinstance(hook, SpectralNorm) and hook.name == name:
            hook.remove(module)
            del module._forward_pre_hooks[k]
            break
    else:
        raise ValueError(f"spectral_norm of '{name}' not found in {module}")
    return module
