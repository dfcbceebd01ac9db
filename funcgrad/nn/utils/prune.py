"""``nn.utils.prune``: PyTorch's pruning as a reparametrization. Pruning ``module.<name>`` moves the
parameter to ``<name>_orig``, stores a 0/1 mask in the buffer ``<name>_mask`` and makes
``module.<name>`` the plain attribute ``mask * <name>_orig``, recomputed before every forward by
the pruning method itself, registered as a forward pre-hook. Pruning the same tensor again
combines the masks through a :class:`PruningContainer` (the new method acting only on what is still
unpruned); :func:`remove` makes the pruned value the parameter again.

Masks are PyTorch's for the same seed: random methods draw ``rand_like``/``rand`` from the shared
generator as PyTorch does, and where the k smallest (or largest) scores tie, the entries chosen are
those PyTorch's CPU ``topk`` chooses (:mod:`._select`), not the lowest indices."""

from __future__ import annotations

import numbers
from abc import ABC, abstractmethod
from collections.abc import Iterable

import numpy as np

from ... import _factories
from ..._tensor import Tensor
from ...autograd.grad_mode import no_grad
from ..module import Module
from ._select import topk_set
from .convert_parameters import parameters_to_vector

__all__ = ["BasePruningMethod", "PruningContainer", "Identity", "RandomUnstructured", "L1Unstructured",
           "RandomStructured", "LnStructured", "CustomFromMask", "identity", "random_unstructured",
           "l1_unstructured", "random_structured", "ln_structured", "global_unstructured", "custom_from_mask",
           "remove", "is_pruned"]


class BasePruningMethod(ABC):
    """A pruning technique: subclasses set ``PRUNING_TYPE`` (``"unstructured"``, ``"structured"``
    with a ``dim`` attribute, or ``"global"``) and implement :meth:`compute_mask`; the base class
    does the reparametrization (:meth:`apply`), the pre-hook (``__call__``) and :meth:`remove`."""

    _tensor_name: str

    def __call__(self, module: Module, inputs) -> None:
        """The forward pre-hook: ``module.<name> = <name>_mask * <name>_orig``."""
        setattr(module, self._tensor_name, self.apply_mask(module))

    @abstractmethod
    def compute_mask(self, t: Tensor, default_mask: Tensor) -> Tensor:
        """The mask for importance scores ``t``, on top of ``default_mask`` (ones if unpruned)."""

    def apply_mask(self, module: Module) -> Tensor:
        """The pruned tensor ``mask * orig`` (mask cast to the original's dtype)."""
        if self._tensor_name is None:
            raise AssertionError(f"Module {module} has to be pruned")
        mask = getattr(module, self._tensor_name + "_mask")
        orig = getattr(module, self._tensor_name + "_orig")
        return mask.to(dtype=orig.dtype) * orig

    @classmethod
    def apply(cls, module: Module, name: str, *args, importance_scores: Tensor | None = None, **kwargs):
        """Prune ``module.<name>`` with ``cls(*args, **kwargs)``, on top of any earlier pruning of
        the same tensor; returns the method (or the container) now registered as its hook."""
        method = _combined_method(cls, module, name, *args, **kwargs)
        orig = getattr(module, name)
        if importance_scores is not None:
            if importance_scores.shape != orig.shape:
                raise AssertionError(f"importance_scores should have the same shape as parameter {name} of "
                                     f"{module}, got {importance_scores.shape} vs {orig.shape}")
        else:
            importance_scores = orig
        first_time = not isinstance(method, PruningContainer)
        if first_time:                   # the parameter itself becomes <name>_orig (same object)
            module.register_parameter(name + "_orig", orig)
            del module._parameters[name]
            default_mask = _factories.ones_like(orig)
        else:
            default_mask = getattr(module, name + "_mask").detach().clone()
        try:
            mask = method.compute_mask(importance_scores, default_mask=default_mask)
            module.register_buffer(name + "_mask", mask)
            setattr(module, name, method.apply_mask(module))
            module.register_forward_pre_hook(method)
        except Exception:
            if first_time:               # put the parameter back as it was
                orig = getattr(module, name + "_orig")
                module.register_parameter(name, orig)
                del module._parameters[name + "_orig"]
            raise
        return method

    def prune(self, t: Tensor, default_mask: Tensor | None = None,
              importance_scores: Tensor | None = None) -> Tensor:
        """``t`` times the mask this method computes for it (no module involved)."""
        if importance_scores is not None:
            if importance_scores.shape != t.shape:
                raise AssertionError(f"importance_scores should have the same shape as tensor t, got "
                                     f"{importance_scores.shape} vs {t.shape}")
        else:
            importance_scores = t
        default_mask = default_mask if default_mask is not None else _factories.ones_like(t)
        return t * self.compute_mask(importance_scores, default_mask=default_mask)

    def remove(self, module: Module) -> None:
        """Make the pruning permanent: ``<name>`` is the ``<name>_orig`` parameter again, holding
        the pruned values; ``<name>_orig`` and ``<name>_mask`` are gone."""
        if self._tensor_name is None:
            raise AssertionError(f"Module {module} has to be pruned before pruning can be removed")
        weight = self.apply_mask(module)
        if hasattr(module, self._tensor_name):
            delattr(module, self._tensor_name)
        orig = module._parameters[self._tensor_name + "_orig"]
        orig.data = weight.data
        del module._parameters[self._tensor_name + "_orig"]
        del module._buffers[self._tensor_name + "_mask"]
        setattr(module, self._tensor_name, orig)


def _combined_method(cls, module, name, *args, **kwargs):
    """``cls(*args, **kwargs)`` for ``module.<name>``, folded with the tensor's existing pruning hook
    (which is taken off the module) into a :class:`PruningContainer` when there is one."""
    old_keys = [k for k, hook in module._forward_pre_hooks.items()
                if isinstance(hook, BasePruningMethod) and hook._tensor_name == name]
    if len(old_keys) > 1:
        raise AssertionError(f"Avoid adding multiple pruning hooks to the same tensor {name} of module "
                             f"{module}. Use a PruningContainer.")
    old = module._forward_pre_hooks[old_keys[0]] if old_keys else None
    for k in old_keys:
        del module._forward_pre_hooks[k]
    method = cls(*args, **kwargs)
    method._tensor_name = name
    if old is None:
        return method
    if isinstance(old, PruningContainer):
        old.add_pruning_method(method)
        return old
    container = PruningContainer(old)
    container.add_pruning_method(method)
    return container


class PruningContainer(BasePruningMethod):
    """The pruning history of one tensor: each new method computes its mask on the part the
    earlier masks left (the nonzero entries, the nonzero channels along its ``dim``, or everything
    for ``"global"`` methods)."""

    def __init__(self, *args) -> None:
        self._pruning_methods: tuple = ()
        if len(args) == 1:
            self._tensor_name = args[0]._tensor_name
            self.add_pruning_method(args[0])
        else:
            for method in args:
                self.add_pruning_method(method)

    def add_pruning_method(self, method) -> None:
        """Append ``method`` (a :class:`BasePruningMethod` acting on the same tensor)."""
        if not isinstance(method, BasePruningMethod) and method is not None:
            raise TypeError(f"{type(method)} is not a BasePruningMethod subclass")
        if method is not None and self._tensor_name != method._tensor_name:
            raise ValueError(f"Can only add pruning methods acting on the parameter named "
                             f"'{self._tensor_name}' to PruningContainer {self}. "
                             f"Found '{method._tensor_name}'")
        self._pruning_methods += (method,)

    def __len__(self) -> int:
        return len(self._pruning_methods)

    def __iter__(self):
        return iter(self._pruning_methods)

    def __getitem__(self, idx):
        return self._pruning_methods[idx]

    def compute_mask(self, t: Tensor, default_mask: Tensor) -> Tensor:
        """The latest method's mask, computed on the still-unpruned part of ``t`` and written into
        (a copy in ``t``'s dtype of) ``default_mask``."""
        method = self._pruning_methods[-1]
        new_mask = default_mask.to(dtype=t.dtype)
        kind = method.PRUNING_TYPE
        if kind == "unstructured":
            part = default_mask == 1
        elif kind == "structured":
            if not hasattr(method, "dim"):
                raise AttributeError('Pruning methods of PRUNING_TYPE "structured" need to have the '
                                     'attribute `dim` defined.')
            n_dims = t.dim()
            dim = method.dim + n_dims if method.dim < 0 else method.dim
            if dim < 0:
                raise IndexError(f"Index is out of bounds for tensor with dimensions {n_dims}")
            alive = default_mask.sum(dim=[d for d in range(n_dims) if d != dim]) != 0
            if alive.dim() == 0:
                return _combine_on_scalar_mask(method, t, default_mask, new_mask, bool(alive))
            part = tuple(alive if d == dim else slice(None) for d in range(n_dims))
        elif kind == "global":
            part = (slice(None),) * len(t.shape)
        else:
            raise ValueError(f"Unrecognized PRUNING_TYPE {kind}")
        partial = method.compute_mask(t[part], default_mask=default_mask[part])
        new_mask[part] = partial.to(dtype=new_mask.dtype)
        return new_mask


def _combine_on_scalar_mask(method, t, default_mask, new_mask, alive: bool):
    """A structured method after another on a 1-D tensor: the channel test sums over no dim and
    is one bool, and PyTorch indexes with it, ``t[(b,)]``, which adds a leading dim of size 1
    (True) or 0 (False); the method then sees a 2-D tensor (and prunes all of it if it prunes)."""
    take = (lambda x: x.unsqueeze(0)) if alive else (lambda x: x.unsqueeze(0)[:0])
    partial = method.compute_mask(take(t), default_mask=take(default_mask))
    if alive:
        new_mask.copy_(partial.to(dtype=new_mask.dtype).reshape(new_mask.shape))
    return new_mask


class Identity(BasePruningMethod):
    """Prunes nothing: the reparametrization with a mask of ones."""

    PRUNING_TYPE = "unstructured"

    def compute_mask(self, t, default_mask):
        return default_mask

    @classmethod
    def apply(cls, module, name):
        return super().apply(module, name)


def _smallest_k(scores: Tensor, k: int, largest: bool = False) -> np.ndarray:
    """Flat indices of the k smallest (largest) ``scores``, as PyTorch's CPU ``topk`` picks them."""
    with no_grad():
        values = scores.detach().reshape(-1).numpy()
    return topk_set(values, k, largest=largest)


def _zero_flat(mask: Tensor, where: np.ndarray) -> None:
    mask.view(-1)[_factories.tensor(where)] = 0


class _Unstructured(BasePruningMethod):
    """Prunes ``amount`` of the unpruned entries with the smallest ``_scores`` (the largest with
    ``_largest``)."""

    PRUNING_TYPE = "unstructured"
    _largest = False

    def __init__(self, amount) -> None:
        _check_amount(amount)
        self.amount = amount

    def compute_mask(self, t, default_mask):
        size = t.nelement()
        k = _amount_to_count(self.amount, size)
        _check_amount_fits(k, size)
        mask = default_mask.clone()
        if k != 0:
            _zero_flat(mask, _smallest_k(self._scores(t), k, largest=self._largest))
        return mask


class RandomUnstructured(_Unstructured):
    """Prunes ``amount`` of the unpruned entries chosen at random (the largest of ``rand_like``)."""

    _largest = True

    @staticmethod
    def _scores(t):
        return _factories.rand_like(t)

    @classmethod
    def apply(cls, module, name, amount):
        return super().apply(module, name, amount=amount)


class L1Unstructured(_Unstructured):
    """Prunes ``amount`` of the unpruned entries with the smallest absolute value."""

    @staticmethod
    def _scores(t):
        return t.abs()

    @classmethod
    def apply(cls, module, name, amount, importance_scores=None):
        return super().apply(module, name, amount=amount, importance_scores=importance_scores)


def _structured_count(method, t: Tensor) -> tuple[int, int]:
    """A structured ``method``'s channels of ``t`` along its ``dim`` and how many of them it prunes
    (PyTorch's checks of the tensor, the dim and the amount, in its order)."""
    _check_structured(t)
    _check_dim(t, method.dim)
    channels = t.shape[method.dim]
    k = _amount_to_count(method.amount, channels)
    _check_amount_fits(k, channels)
    return channels, k


def _channel_mask(t: Tensor, dim: int, keep: Tensor, default_mask: Tensor) -> Tensor:
    """``default_mask`` with zeros beyond the channels ``keep`` (bool or indices) along ``dim``."""
    mask = _factories.zeros_like(t)
    mask[tuple(keep if d == (dim % t.dim()) else slice(None) for d in range(t.dim()))] = 1
    mask *= default_mask.to(dtype=mask.dtype)
    return mask


class RandomStructured(BasePruningMethod):
    """Prunes ``amount`` of the channels along ``dim`` chosen at random."""

    PRUNING_TYPE = "structured"

    def __init__(self, amount, dim: int = -1) -> None:
        _check_amount(amount)
        self.amount = amount
        self.dim = dim

    def compute_mask(self, t, default_mask):
        channels, k = _structured_count(self, t)
        if k == 0:
            return default_mask
        prob = _factories.rand(channels)
        return _channel_mask(t, self.dim, prob > prob.kthvalue(k).values, default_mask)

    @classmethod
    def apply(cls, module, name, amount, dim=-1):
        return super().apply(module, name, amount=amount, dim=dim)


class LnStructured(BasePruningMethod):
    """Prunes ``amount`` of the channels along ``dim`` with the smallest L\\ ``n`` norm (``n`` as
    ``p`` of :func:`funcgrad.norm`: a number, ``inf``, ``-inf``, ``'fro'``, ``'nuc'``)."""

    PRUNING_TYPE = "structured"

    def __init__(self, amount, n, dim: int = -1) -> None:
        _check_amount(amount)
        self.amount = amount
        self.n = n
        self.dim = dim

    def compute_mask(self, t, default_mask):
        channels, k = _structured_count(self, t)
        norm = _channel_norm(t, self.n, self.dim)
        keep = _smallest_k(norm, channels - k, largest=True)   # PyTorch computes this even for k == 0
        if k == 0:
            return default_mask
        return _channel_mask(t, self.dim, _factories.tensor(keep), default_mask)

    @classmethod
    def apply(cls, module, name, amount, n, dim, importance_scores=None):
        return super().apply(module, name, amount=amount, n=n, dim=dim, importance_scores=importance_scores)


class CustomFromMask(BasePruningMethod):
    """Prunes with a given mask (multiplied into the existing one)."""

    PRUNING_TYPE = "global"

    def __init__(self, mask: Tensor) -> None:
        self.mask = mask

    def compute_mask(self, t, default_mask):
        if default_mask.shape != self.mask.shape:
            raise AssertionError(f"default_mask shape {default_mask.shape} must match self.mask shape "
                                 f"{self.mask.shape}")
        return default_mask * self.mask.to(dtype=default_mask.dtype)

    @classmethod
    def apply(cls, module, name, mask):
        return super().apply(module, name, mask=mask)


# ---- the functional forms -----------------------------------------------------------------------
def identity(module: Module, name: str) -> Module:
    """Reparametrize ``module.<name>`` with a mask of ones (prunes nothing).

    >>> from funcgrad import nn
    >>> from funcgrad.nn.utils import prune
    >>> prune.identity(nn.Linear(2, 3), "bias").bias_mask
    tensor([1., 1., 1.])
    """
    Identity.apply(module, name)
    return module


def random_unstructured(module: Module, name: str, amount) -> Module:
    """Prune ``amount`` (a fraction, or a count if an int) of ``module.<name>``'s unpruned entries
    at random.

    >>> import funcgrad
    >>> from funcgrad import nn
    >>> from funcgrad.nn.utils import prune
    >>> m = prune.random_unstructured(nn.Linear(2, 3), "weight", amount=1)
    >>> funcgrad.sum(m.weight_mask == 0)
    tensor(1)
    """
    RandomUnstructured.apply(module, name, amount)
    return module


def l1_unstructured(module: Module, name: str, amount, importance_scores: Tensor | None = None) -> Module:
    """Prune ``amount`` of ``module.<name>``'s unpruned entries with the smallest absolute value
    (of ``importance_scores`` if given).

    >>> from funcgrad import nn
    >>> from funcgrad.nn.utils import prune
    >>> m = prune.l1_unstructured(nn.Linear(2, 3), "weight", amount=0.2)
    >>> m.state_dict().keys()
    odict_keys(['bias', 'weight_orig', 'weight_mask'])
    """
    L1Unstructured.apply(module, name, amount=amount, importance_scores=importance_scores)
    return module


def random_structured(module: Module, name: str, amount, dim: int) -> Module:
    """Prune ``amount`` of ``module.<name>``'s unpruned channels along ``dim`` at random.

    >>> import funcgrad
    >>> from funcgrad import nn
    >>> from funcgrad.nn.utils import prune
    >>> m = prune.random_structured(nn.Linear(5, 3), "weight", amount=3, dim=1)
    >>> int(sum(funcgrad.sum(m.weight, dim=0) == 0))
    3
    """
    RandomStructured.apply(module, name, amount, dim)
    return module


def ln_structured(module: Module, name: str, amount, n, dim: int,
                  importance_scores: Tensor | None = None) -> Module:
    """Prune ``amount`` of ``module.<name>``'s channels along ``dim`` with the smallest
    L\\ ``n`` norm."""
    LnStructured.apply(module, name, amount, n, dim, importance_scores=importance_scores)
    return module


def global_unstructured(parameters, pruning_method, importance_scores: dict | None = None, **kwargs) -> None:
    """Prune the ``(module, name)`` tensors of ``parameters`` together: ``pruning_method`` (an
    ``"unstructured"`` method class, e.g. :class:`L1Unstructured`, built with ``**kwargs``) picks
    the entries across all of them, and each gets its slice of the mask by :func:`custom_from_mask`.

    >>> import funcgrad
    >>> from funcgrad import nn
    >>> from funcgrad.nn.utils import prune
    >>> net = nn.Sequential(nn.Linear(10, 4), nn.Linear(4, 1))
    >>> prune.global_unstructured([(net[0], "weight"), (net[1], "weight")],
    ...                           pruning_method=prune.L1Unstructured, amount=10)
    >>> print(sum(funcgrad.nn.utils.parameters_to_vector(net.buffers()) == 0))
    tensor(10)
    """
    if not isinstance(parameters, Iterable):
        raise TypeError("global_unstructured(): parameters is not an Iterable")
    importance_scores = importance_scores if importance_scores is not None else {}
    if not isinstance(importance_scores, dict):
        raise TypeError("global_unstructured(): importance_scores must be of type dict")
    scores = parameters_to_vector([importance_scores.get((module, name), getattr(module, name))
                                   for (module, name) in parameters])
    default_mask = parameters_to_vector([getattr(module, name + "_mask",
                                                 _factories.ones_like(getattr(module, name)))
                                         for (module, name) in parameters])
    container = PruningContainer()
    container._tensor_name = "temp"
    method = pruning_method(**kwargs)
    method._tensor_name = "temp"
    if method.PRUNING_TYPE != "unstructured":
        raise TypeError('Only "unstructured" PRUNING_TYPE supported for the `pruning_method`. Found method '
                        f"{pruning_method} of type {method.PRUNING_TYPE}")
    container.add_pruning_method(method)
    final_mask = container.compute_mask(scores, default_mask)
    start = 0
    for module, name in parameters:
        param = getattr(module, name)
        size = param.numel()
        custom_from_mask(module, name, mask=final_mask[start:start + size].view_as(param))
        start += size


def custom_from_mask(module: Module, name: str, mask: Tensor) -> Module:
    """Prune ``module.<name>`` with the given ``mask``.

    >>> import funcgrad
    >>> from funcgrad import nn
    >>> from funcgrad.nn.utils import prune
    >>> prune.custom_from_mask(nn.Linear(5, 3), name="bias", mask=funcgrad.tensor([0, 1, 0])).bias_mask
    tensor([0., 1., 0.])
    """
    CustomFromMask.apply(module, name, mask)
    return module


def remove(module: Module, name: str) -> Module:
    """Make the pruning of ``module.<name>`` permanent and drop its hook, ``<name>_orig`` and
    ``<name>_mask`` (the pruned entries stay zero)."""
    for k, hook in module._forward_pre_hooks.items():
        if isinstance(hook, BasePruningMethod) and hook._tensor_name == name:
            hook.remove(module)
            del module._forward_pre_hooks[k]
            return module
    raise ValueError(f"Parameter '{name}' of module {module} has to be pruned before pruning can be removed")


def is_pruned(module: Module) -> bool:
    """Whether ``module`` or a submodule has a pruning pre-hook.

    >>> from funcgrad import nn
    >>> from funcgrad.nn.utils import prune
    >>> m = nn.Linear(5, 7)
    >>> prune.is_pruned(m), prune.is_pruned(prune.random_unstructured(m, name="weight", amount=0.2))
    (False, True)
    """
    return any(isinstance(hook, BasePruningMethod)
               for _, sub in module.named_modules() for hook in sub._forward_pre_hooks.values())


# ---- validation and helpers (PyTorch's messages) --------------------------------------------------
def _check_amount(amount) -> None:
    """``amount`` must be a fraction in [0, 1] or a non-negative int."""
    if not isinstance(amount, numbers.Real):
        raise TypeError(f"Invalid type for amount: {amount}. Must be int or float.")
    if (isinstance(amount, numbers.Integral) and amount < 0) or (
            not isinstance(amount, numbers.Integral) and (float(amount) > 1.0 or float(amount) < 0.0)):
        raise ValueError(f"amount={amount} should either be a float in the range [0, 1] or a "
                         f"non-negative integer")


def _check_amount_fits(amount, size: int) -> None:
    if isinstance(amount, numbers.Integral) and amount > size:
        raise ValueError(f"amount={amount} should be smaller than the number of parameters to prune={size}")


def _check_structured(t: Tensor) -> None:
    if len(t.shape) <= 1:
        raise ValueError("Structured pruning can only be applied to multidimensional tensors. Found "
                         f"tensor of shape {t.shape} with {len(t.shape)} dims")


def _check_dim(t: Tensor, dim: int) -> None:
    if dim >= t.dim():
        raise IndexError(f"Invalid index {dim} for tensor of size {t.shape}")


def _amount_to_count(amount, size: int) -> int:
    """A count stays a count; a fraction of ``size`` is rounded (half to even, as Python's round)."""
    return amount if isinstance(amount, numbers.Integral) else round(amount * size)


def _channel_norm(t: Tensor, n, dim: int) -> Tensor:
    """The L\\ ``n`` norm of each channel along ``dim`` (over all the other dims)."""
    dims = list(range(t.dim()))
    dims.remove(dims[dim] if dim < 0 else dim)
    return t.norm(p=n, dim=dims)
