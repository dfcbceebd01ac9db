"""``funcgrad.optim.swa_utils``: stochastic weight averaging and EMA (PyTorch's ``AveragedModel``,
``SWALR``, ``update_bn`` and the averaging functions), with PyTorch's CPU update order."""

from __future__ import annotations

import itertools
import math
import warnings
from copy import deepcopy
from typing import Any

from .. import _factories, _dtype
from .._tensor import Tensor
from ..autograd.grad_mode import no_grad
from ..nn.layers.normalization import _BatchNorm
from ..nn.module import Module
from .lr_scheduler import LRScheduler, _format_param

__all__ = ["AveragedModel", "update_bn", "SWALR", "get_ema_multi_avg_fn", "get_swa_multi_avg_fn",
           "get_ema_avg_fn", "get_swa_avg_fn"]


def _check_decay(decay):
    if decay < 0.0 or decay > 1.0:
        raise ValueError(f"Invalid decay value {decay} provided. Please provide a value in [0,1] range.")


def get_ema_multi_avg_fn(decay=0.999):
    """In-place EMA over lists of tensors: ``ema.lerp_(current, 1 - decay)``."""
    _check_decay(decay)

    @no_grad()
    def ema_update(ema_param_list, current_param_list, _):
        if ema_param_list[0].is_floating_point() or ema_param_list[0].is_complex():
            for p_ema, p_model in zip(ema_param_list, current_param_list):
                p_ema.lerp_(p_model, 1 - decay)
        else:
            for p_ema, p_model in zip(ema_param_list, current_param_list):
                p_ema.copy_(p_ema * decay + p_model * (1 - decay))
    return ema_update


def get_swa_multi_avg_fn():
    """In-place running mean over lists of tensors: ``avg.lerp_(current, 1 / (n + 1))``."""
    @no_grad()
    def swa_update(averaged_param_list, current_param_list, num_averaged):
        if averaged_param_list[0].is_floating_point() or averaged_param_list[0].is_complex():
            w = float(1 / (num_averaged + 1))
            for p_avg, p_model in zip(averaged_param_list, current_param_list):
                p_avg.lerp_(p_model, w)
        else:
            for p_avg, p_model in zip(averaged_param_list, current_param_list):
                diff = p_model - p_avg
                if isinstance(num_averaged, Tensor):
                    p_avg.addcdiv_(diff, num_averaged + 1)
                else:
                    p_avg.add_(diff, alpha=1.0 / (num_averaged + 1))
    return swa_update


def get_ema_avg_fn(decay=0.999):
    """``decay * ema + (1 - decay) * current``."""
    _check_decay(decay)

    @no_grad()
    def ema_update(ema_param, current_param, num_averaged):
        return decay * ema_param + (1 - decay) * current_param
    return ema_update


def get_swa_avg_fn():
    """``avg + (current - avg) / (n + 1)`` (the running mean)."""
    @no_grad()
    def swa_update(averaged_param, current_param, num_averaged):
        return averaged_param + (current_param - averaged_param) / (num_averaged + 1)
    return swa_update


class AveragedModel(Module):
    """A copy of ``model`` whose parameters are the running average (SWA, or EMA through
    ``avg_fn``/``multi_avg_fn``) of ``model``'s over ``update_parameters`` calls.

    >>> import funcgrad
    >>> from funcgrad import nn
    >>> from funcgrad.optim.swa_utils import AveragedModel
    >>> m = nn.Linear(1, 1, bias=False)
    >>> swa = AveragedModel(m)
    >>> for v in (1.0, 2.0, 6.0):
    ...     with funcgrad.no_grad(): _ = m.weight.fill_(v)
    ...     swa.update_parameters(m)
    >>> swa.module.weight.item(), swa.n_averaged
    (3.0, tensor(3))
    """

    def __init__(self, model: Module, device=None, avg_fn=None, multi_avg_fn=None, use_buffers=False) -> None:
        super().__init__()
        if avg_fn is not None and multi_avg_fn is not None:
            raise AssertionError("Only one of avg_fn and multi_avg_fn should be provided")
        self.module = deepcopy(model)
        if device is not None:
            self.module = self.module.to(device)
        self.register_buffer("n_averaged", _factories.tensor(0, dtype=_dtype.int64))
        self.avg_fn = avg_fn
        self.multi_avg_fn = multi_avg_fn
        self.use_buffers = use_buffers

    def forward(self, *args, **kwargs):
        return self.module(*args, **kwargs)

    def update_parameters(self, model: Module) -> None:
        """Fold ``model``'s current parameters (and buffers, see ``use_buffers``) into the average."""
        if self.use_buffers:
            self_param = itertools.chain(self.module.parameters(), self.module.buffers())
            model_param = itertools.chain(model.parameters(), model.buffers())
        else:
            self_param, model_param = self.parameters(), model.parameters()
        self_detached, model_detached = [], []
        copy_param = bool(self.n_averaged == 0)
        for p_averaged, p_model in zip(self_param, model_param):
            p_model_ = p_model.detach()
            self_detached.append(p_averaged.detach())
            model_detached.append(p_model_)
            if copy_param:
                p_averaged.detach().copy_(p_model_)
        if self.n_averaged > 0:
            if self.multi_avg_fn is not None:
                # PyTorch groups by device and dtype first; one group per dtype here
                groups: dict = {}
                for a, b in zip(self_detached, model_detached):
                    ga = groups.setdefault(a.dtype, ([], []))
                    ga[0].append(a)
                    ga[1].append(b)
                for a_list, b_list in groups.values():
                    self.multi_avg_fn(a_list, b_list, self.n_averaged)
            else:
                # PyTorch's CPU path (no foreach kernels on CPU): the default is get_swa_avg_fn
                avg_fn = self.avg_fn if self.avg_fn is not None else get_swa_avg_fn()
                for p_averaged, p_model in zip(self_detached, model_detached):
                    p_averaged.detach().copy_(avg_fn(p_averaged.detach(), p_model, self.n_averaged))
        if not self.use_buffers:
            for b_swa, b_model in zip(self.module.buffers(), model.buffers()):
                b_swa.detach().copy_(b_model.detach())
        with no_grad():
            self.n_averaged += 1


@no_grad()
def update_bn(loader, model: Module, device=None) -> None:
    """Recompute BatchNorm running statistics with one pass over ``loader`` (the cumulative
    average: momentum ``None``), as needed after averaging weights."""
    momenta = {}
    for module in model.modules():
        if isinstance(module, _BatchNorm):
            module.reset_running_stats()
            momenta[module] = module.momentum
    if not momenta:
        return
    was_training = model.training
    model.train()
    for module in momenta:
        module.momentum = None
    for input in loader:
        if isinstance(input, (list, tuple)):
            input = input[0]
        if device is not None:
            input = input.to(device)
        model(input)
    for bn_module in momenta:
        bn_module.momentum = momenta[bn_module]
    model.train(was_training)


class SWALR(LRScheduler):
    """Anneal each group's ``lr`` to ``swa_lr`` over ``anneal_epochs`` (cosine or linear), then
    hold it.

    >>> import funcgrad
    >>> opt = funcgrad.optim.SGD([funcgrad.zeros(1, requires_grad=True)], lr=1.0)
    >>> s = funcgrad.optim.swa_utils.SWALR(opt, swa_lr=0.1, anneal_epochs=2, anneal_strategy="linear")
    >>> lrs = []
    >>> for _ in range(3):
    ...     opt.step(); s.step(); lrs.append(round(s.get_last_lr()[0], 6))
    >>> lrs
    [0.55, 0.1, 0.1]
    """

    def __init__(self, optimizer, swa_lr: float, anneal_epochs=10, anneal_strategy: str = "cos",
                 last_epoch=-1) -> None:
        swa_lrs = _format_param("swa_lr", optimizer, swa_lr)
        for lr, group in zip(swa_lrs, optimizer.param_groups):
            group["swa_lr"] = lr
        if anneal_strategy not in ["cos", "linear"]:
            raise ValueError(f"anneal_strategy must be one of 'cos' or 'linear', instead got {anneal_strategy}")
        self._set_anneal_func(anneal_strategy)
        if not isinstance(anneal_epochs, int) or anneal_epochs < 0:
            raise ValueError(f"anneal_epochs must be equal or greater than 0, got {anneal_epochs}")
        self.anneal_epochs = anneal_epochs
        super().__init__(optimizer, last_epoch)

    @staticmethod
    def _linear_anneal(t):
        return t

    @staticmethod
    def _cosine_anneal(t):
        return (1 - math.cos(math.pi * t)) / 2

    @staticmethod
    def _get_initial_lr(lr, swa_lr, alpha):
        if alpha == 1:
            return swa_lr
        return (lr - alpha * swa_lr) / (1 - alpha)

    def get_lr(self):
        if not self._get_lr_called_within_step:
            warnings.warn("To get the last learning rate computed by the scheduler, please use `get_last_lr()`.",
                          UserWarning, stacklevel=2)
        step = self._step_count - 1
        if self.anneal_epochs == 0:
            step = max(1, step)
        prev_t = max(0, min(1, (step - 1) / max(1, self.anneal_epochs)))
        prev_alpha = self.anneal_func(prev_t)
        prev_lrs = [self._get_initial_lr(group["lr"], group["swa_lr"], prev_alpha)
                    for group in self.optimizer.param_groups]
        t = max(0, min(1, step / max(1, self.anneal_epochs)))
        alpha = self.anneal_func(t)
        return [group["swa_lr"] * alpha + lr * (1 - alpha) for group, lr in zip(self.optimizer.param_groups, prev_lrs)]

    def _set_anneal_func(self, anneal_strategy: str) -> None:
        self._anneal_strategy = anneal_strategy
        self.anneal_func = self._cosine_anneal if anneal_strategy == "cos" else self._linear_anneal

    def state_dict(self) -> dict[str, Any]:
        return {key: value for key, value in self.__dict__.items() if key not in ("optimizer", "anneal_func")}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        self.__dict__.update(state_dict)
        self._set_anneal_func(self._anneal_strategy)
