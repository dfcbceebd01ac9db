"""Learning-rate schedulers with PyTorch's semantics (``funcgrad.optim.lr_scheduler``).

A scheduler only writes ``param_groups[i]['lr']`` (and ``momentum``/``betas`` for OneCycleLR);
the optimizers read those numbers as dynamic arguments of their jitted update, so a schedule
never recompiles anything. The chainable (recursive) forms are PyTorch's, so sequences match
PyTorch's floating-point values, and ``step(epoch)`` uses the closed forms as PyTorch does.
"""

from __future__ import annotations

import math
import types
import warnings
import weakref
from bisect import bisect_right
from collections import Counter
from collections.abc import Iterable, Sequence
from functools import wraps
from typing import Any

from ._lr_cyclic import _CyclicMixin
from .optimizer import Optimizer

__all__ = ["LRScheduler", "LambdaLR", "MultiplicativeLR", "StepLR", "MultiStepLR", "ConstantLR",
           "LinearLR", "ExponentialLR", "SequentialLR", "CosineAnnealingLR", "ChainedScheduler",
           "ReduceLROnPlateau", "CosineAnnealingWarmRestarts", "OneCycleLR", "PolynomialLR"]

EPOCH_DEPRECATION_WARNING = (
    "The epoch parameter in `scheduler.step()` was not necessary and is being deprecated where "
    "possible. Please use `scheduler.step()` to step the scheduler. During the deprecation, if epoch "
    "is different from None, the closed form is used instead of the new chainable form, where "
    "available. Please open an issue if you are unable to replicate your use case: "
    "https://github.com/pytorch/pytorch/issues/new/choose.")
_OVERRIDDEN = (
    "Seems like `optimizer.step()` has been overridden after learning rate scheduler initialization. "
    "Please, make sure to call `optimizer.step()` before `lr_scheduler.step()`. See more details at "
    "https://pytorch.org/docs/stable/optim.html#how-to-adjust-learning-rate")
_ORDER = (
    "Detected call of `lr_scheduler.step()` before `optimizer.step()`. In PyTorch 1.1.0 and later, "
    "you should call them in the opposite order: `optimizer.step()` before `lr_scheduler.step()`.  "
    "Failure to do this will result in PyTorch skipping the first value of the learning rate "
    "schedule. See more details at "
    "https://pytorch.org/docs/stable/optim.html#how-to-adjust-learning-rate")


def _lrs(optimizer: Optimizer, key: str = "lr") -> list:
    return [group[key] for group in optimizer.param_groups]


def _format_param(name: str, optimizer: Optimizer, param) -> list:
    if isinstance(param, (list, tuple)):
        if len(param) != len(optimizer.param_groups):
            raise ValueError(f"{name} must have the same length as optimizer.param_groups. {name} has "
                             f"{len(param)} values, param_groups has {len(optimizer.param_groups)}.")
        return list(param)
    return [param] * len(optimizer.param_groups)


class LRScheduler:
    """Base class: ``step()`` advances ``last_epoch`` and writes ``get_lr()`` into the groups.

    The constructor records ``initial_lr`` in each group and performs the initial step (so
    ``last_epoch`` is 0 afterwards), as PyTorch does.

    >>> import funcgrad
    >>> w = funcgrad.zeros(1, requires_grad=True)
    >>> opt = funcgrad.optim.SGD([w], lr=1.0)
    >>> sched = funcgrad.optim.lr_scheduler.StepLR(opt, step_size=2, gamma=0.5)
    >>> lrs = []
    >>> for _ in range(5):
    ...     opt.step(); lrs.append(sched.get_last_lr()[0]); sched.step()
    >>> lrs
    [1.0, 1.0, 0.5, 0.5, 0.25]
    """

    _get_lr_called_within_step = False
    _is_initial = False

    def __init__(self, optimizer: Optimizer, last_epoch: int = -1) -> None:
        if not isinstance(optimizer, Optimizer):
            raise TypeError(f"{type(optimizer).__name__} is not an Optimizer")
        self.optimizer = optimizer
        if last_epoch == -1:
            for group in optimizer.param_groups:
                group.setdefault("initial_lr", group["lr"])
        else:
            for i, group in enumerate(optimizer.param_groups):
                if "initial_lr" not in group:
                    raise KeyError(
                        f"param 'initial_lr' is not specified in param_groups[{i}] when resuming "
                        "scheduler with last_epoch >= 0.\nThis typically happens when:\n1. You're "
                        "trying to resume training from a checkpoint but haven't properly loaded the "
                        "optimizer state\n2. You're using last_epoch >= 0 for a fresh training run "
                        "(not recommended)")
        self.base_lrs: list = _lrs(optimizer, "initial_lr")
        self.last_epoch = last_epoch
        _track_step_called(optimizer)
        self._initial_step()

    def _initial_step(self) -> None:
        self._step_count = 0
        self._is_initial = True
        try:
            self.step()
        finally:
            self._is_initial = False

    def state_dict(self) -> dict[str, Any]:
        """Everything but the optimizer (PyTorch's format)."""
        return {k: v for k, v in self.__dict__.items() if k != "optimizer"}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        self.__dict__.update(state_dict)

    def get_last_lr(self) -> list:
        """The learning rates the last ``step()`` set (one per param group)."""
        return self._last_lr

    def get_lr(self) -> list:
        raise NotImplementedError

    def _warn_get_lr(self) -> None:
        if not self._get_lr_called_within_step:
            warnings.warn("To get the last learning rate computed by the scheduler, please use "
                          "`get_last_lr()`.", UserWarning, stacklevel=3)

    def step(self, epoch: int | None = None) -> None:
        if self._step_count == 1:
            if not hasattr(self.optimizer.step, "_wrapped_by_lr_sched"):
                warnings.warn(_OVERRIDDEN, UserWarning, stacklevel=2)
            elif not getattr(self.optimizer, "_opt_called", False):
                warnings.warn(_ORDER, UserWarning, stacklevel=2)
        self._step_count += 1
        if epoch is not None:
            warnings.warn(EPOCH_DEPRECATION_WARNING, UserWarning, stacklevel=2)
        self._update_lr(epoch)

    def _update_lr(self, epoch: int | None = None) -> None:
        self._get_lr_called_within_step = True
        try:
            if epoch is None:
                self.last_epoch += 1
                values = self.get_lr()
            else:
                self.last_epoch = epoch
                closed = getattr(self, "_get_closed_form_lr", None)
                values = closed() if closed is not None else self.get_lr()
        finally:
            self._get_lr_called_within_step = False
        for group, lr in zip(self.optimizer.param_groups, values):
            group["lr"] = lr
        self._last_lr = _lrs(self.optimizer)


def _track_step_called(opt: Optimizer) -> None:
    """Wrap ``opt.step`` (on the instance) so the scheduler can tell whether it ran first."""
    if hasattr(opt.step, "_wrapped_by_lr_sched"):
        return
    func = opt.step.__func__
    opt_ref = weakref.ref(opt)

    @wraps(func)
    def wrapper(*args, **kwargs):
        o = opt_ref()
        o._opt_called = True
        return func.__get__(o, o.__class__)(*args, **kwargs)
    wrapper._wrapped_by_lr_sched = True
    opt.step = wrapper


_LRScheduler = LRScheduler


class _LambdaBase(LRScheduler):
    def __init__(self, optimizer, lr_lambda, last_epoch: int = -1) -> None:
        self.optimizer = optimizer
        if not isinstance(lr_lambda, (list, tuple)):
            self.lr_lambdas = [lr_lambda] * len(optimizer.param_groups)
        else:
            if len(lr_lambda) != len(optimizer.param_groups):
                raise ValueError(f"Expected {len(optimizer.param_groups)} lr_lambdas, but got "
                                 f"{len(lr_lambda)}")
            self.lr_lambdas = list(lr_lambda)
        super().__init__(optimizer, last_epoch)

    def state_dict(self) -> dict[str, Any]:
        sd = {k: v for k, v in self.__dict__.items() if k not in ("optimizer", "lr_lambdas")}
        sd["lr_lambdas"] = [None if isinstance(fn, types.FunctionType) else fn.__dict__.copy()
                            for fn in self.lr_lambdas]
        return sd

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        state_dict = dict(state_dict)
        lambdas = state_dict.pop("lr_lambdas")
        self.__dict__.update(state_dict)
        for fn, d in zip(self.lr_lambdas, lambdas):
            if d is not None:
                fn.__dict__.update(d)


class LambdaLR(_LambdaBase):
    """``lr = initial_lr * lr_lambda(epoch)``.

    >>> import funcgrad
    >>> opt = funcgrad.optim.SGD([funcgrad.zeros(1, requires_grad=True)], lr=0.5)
    >>> s = funcgrad.optim.lr_scheduler.LambdaLR(opt, lambda e: 0.9 ** e)
    >>> opt.step(); s.step(); s.get_last_lr()
    [0.45]
    """

    def get_lr(self) -> list:
        self._warn_get_lr()
        return [base * fn(self.last_epoch) for fn, base in zip(self.lr_lambdas, self.base_lrs)]


class MultiplicativeLR(_LambdaBase):
    """``lr *= lr_lambda(epoch)`` at each step after the first."""

    def __init__(self, optimizer, lr_lambda, last_epoch: int = -1) -> None:
        fns = lr_lambda if isinstance(lr_lambda, (list, tuple)) else [lr_lambda]
        for fn in fns:
            if not callable(fn):
                raise TypeError(f"lr_lambda should be a function, but got {type(fn).__name__}")
        super().__init__(optimizer, lr_lambda, last_epoch)

    def get_lr(self) -> list:
        self._warn_get_lr()
        if self._is_initial:
            return _lrs(self.optimizer)
        return [g["lr"] * fn(self.last_epoch) for fn, g in zip(self.lr_lambdas, self.optimizer.param_groups)]


class StepLR(LRScheduler):
    """Multiply the lr by ``gamma`` every ``step_size`` epochs."""

    def __init__(self, optimizer, step_size: int, gamma: float = 0.1, last_epoch: int = -1) -> None:
        self.step_size, self.gamma = step_size, gamma
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list:
        self._warn_get_lr()
        if self.last_epoch == 0 or self.last_epoch % self.step_size != 0:
            return _lrs(self.optimizer)
        return [g["lr"] * self.gamma for g in self.optimizer.param_groups]

    def _get_closed_form_lr(self) -> list:
        return [b * self.gamma ** (self.last_epoch // self.step_size) for b in self.base_lrs]


class MultiStepLR(LRScheduler):
    """Multiply the lr by ``gamma`` at each milestone epoch."""

    def __init__(self, optimizer, milestones: Iterable[int], gamma: float = 0.1,
                 last_epoch: int = -1) -> None:
        self.milestones, self.gamma = Counter(milestones), gamma
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list:
        self._warn_get_lr()
        if self.last_epoch not in self.milestones:
            return _lrs(self.optimizer)
        return [g["lr"] * self.gamma ** self.milestones[self.last_epoch] for g in self.optimizer.param_groups]

    def _get_closed_form_lr(self) -> list:
        ms = sorted(self.milestones.elements())
        return [b * self.gamma ** bisect_right(ms, self.last_epoch) for b in self.base_lrs]


class ConstantLR(LRScheduler):
    """``lr * factor`` until ``total_iters``, then the base lr."""

    def __init__(self, optimizer, factor: float = 1.0 / 3, total_iters: int = 5,
                 last_epoch: int = -1) -> None:
        if factor > 1.0 or factor < 0:
            raise ValueError("Constant multiplicative factor expected to be between 0 and 1.")
        self.factor, self.total_iters = factor, total_iters
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list:
        self._warn_get_lr()
        if self.last_epoch == 0:
            return [g["lr"] * self.factor for g in self.optimizer.param_groups]
        if self.last_epoch != self.total_iters:
            return _lrs(self.optimizer)
        return [g["lr"] * (1.0 / self.factor) for g in self.optimizer.param_groups]

    def _get_closed_form_lr(self) -> list:
        return [b * (self.factor + (self.last_epoch >= self.total_iters) * (1 - self.factor))
                for b in self.base_lrs]


class LinearLR(LRScheduler):
    """Linear ramp of the factor from ``start_factor`` to ``end_factor`` over ``total_iters``."""

    def __init__(self, optimizer, start_factor: float = 1.0 / 3, end_factor: float = 1.0,
                 total_iters: int = 5, last_epoch: int = -1) -> None:
        if start_factor > 1.0 or start_factor <= 0:
            raise ValueError("Starting multiplicative factor expected to be greater than 0 and less or "
                             "equal to 1.")
        if end_factor > 1.0 or end_factor < 0:
            raise ValueError("Ending multiplicative factor expected to be between 0 and 1.")
        self.start_factor, self.end_factor, self.total_iters = start_factor, end_factor, total_iters
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list:
        self._warn_get_lr()
        if self.last_epoch == 0:
            return [g["lr"] * self.start_factor for g in self.optimizer.param_groups]
        if self._is_initial or self.last_epoch > self.total_iters:
            return _lrs(self.optimizer)
        d = self.end_factor - self.start_factor
        f = 1.0 + d / (self.total_iters * self.start_factor + (self.last_epoch - 1) * d)
        return [g["lr"] * f for g in self.optimizer.param_groups]

    def _get_closed_form_lr(self) -> list:
        return [b * (self.start_factor + (self.end_factor - self.start_factor)
                     * min(self.total_iters, self.last_epoch) / self.total_iters) for b in self.base_lrs]


class ExponentialLR(LRScheduler):
    """Multiply the lr by ``gamma`` every epoch."""

    def __init__(self, optimizer, gamma: float, last_epoch: int = -1) -> None:
        self.gamma = gamma
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list:
        self._warn_get_lr()
        if self._is_initial:
            return _lrs(self.optimizer)
        return [g["lr"] * self.gamma for g in self.optimizer.param_groups]

    def _get_closed_form_lr(self) -> list:
        return [b * self.gamma ** self.last_epoch for b in self.base_lrs]


class PolynomialLR(LRScheduler):
    """Polynomial decay of the lr to 0 over ``total_iters``."""

    def __init__(self, optimizer, total_iters: int = 5, power: float = 1.0, last_epoch: int = -1) -> None:
        self.total_iters, self.power = total_iters, power
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list:
        self._warn_get_lr()
        if self._is_initial or self.last_epoch > self.total_iters:
            return _lrs(self.optimizer)
        f = ((1.0 - self.last_epoch / self.total_iters)
             / (1.0 - (self.last_epoch - 1) / self.total_iters)) ** self.power
        return [g["lr"] * f for g in self.optimizer.param_groups]

    def _get_closed_form_lr(self) -> list:
        return [b * (1.0 - min(self.total_iters, self.last_epoch) / self.total_iters) ** self.power
                for b in self.base_lrs]


class CosineAnnealingLR(LRScheduler):
    """Cosine annealing to ``eta_min`` over ``T_max`` epochs (PyTorch's recursive form)."""

    def __init__(self, optimizer, T_max: int, eta_min: float = 0.0, last_epoch: int = -1) -> None:  # noqa: N803
        self.T_max, self.eta_min = T_max, eta_min
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list:
        self._warn_get_lr()
        e, T, lo = self.last_epoch, self.T_max, self.eta_min
        if self._is_initial:
            return _lrs(self.optimizer)
        if self._step_count == 1 and e > 0:
            return [lo + (b - lo) * (1 + math.cos(e * math.pi / T)) / 2 for b in self.base_lrs]
        if (e - 1 - T) % (2 * T) == 0:
            return [g["lr"] + (b - lo) * (1 - math.cos(math.pi / T)) / 2
                    for b, g in zip(self.base_lrs, self.optimizer.param_groups)]
        return [(1 + math.cos(math.pi * e / T)) / (1 + math.cos(math.pi * (e - 1) / T)) * (g["lr"] - lo) + lo
                for g in self.optimizer.param_groups]

    def _get_closed_form_lr(self) -> list:
        return [self.eta_min + (b - self.eta_min) * (1 + math.cos(math.pi * self.last_epoch / self.T_max)) / 2
                for b in self.base_lrs]


class CosineAnnealingWarmRestarts(LRScheduler):
    """Cosine annealing restarted every ``T_i`` epochs (``T_i`` grows by ``T_mult``)."""

    def __init__(self, optimizer, T_0: int, T_mult: int = 1, eta_min: float = 0.0,  # noqa: N803
                 last_epoch: int = -1) -> None:
        if T_0 <= 0 or not isinstance(T_0, int):
            raise ValueError(f"Expected positive integer T_0, but got {T_0}")
        if T_mult < 1 or not isinstance(T_mult, int):
            raise ValueError(f"Expected integer T_mult >= 1, but got {T_mult}")
        if not isinstance(eta_min, (float, int)):
            raise ValueError(f"Expected float or int eta_min, but got {eta_min} of type {type(eta_min)}")
        self.T_0, self.T_i, self.T_mult, self.eta_min, self.T_cur = T_0, T_0, T_mult, eta_min, last_epoch
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list:
        self._warn_get_lr()
        return [self.eta_min + (b - self.eta_min) * (1 + math.cos(math.pi * self.T_cur / self.T_i)) / 2
                for b in self.base_lrs]

    def step(self, epoch=None) -> None:
        if epoch is None and self.last_epoch < 0:
            epoch = 0
        if epoch is None:
            epoch = self.last_epoch + 1
            self.T_cur += 1
            if self.T_cur >= self.T_i:
                self.T_cur, self.T_i = self.T_cur % self.T_i, self.T_i * self.T_mult
        else:
            if epoch < 0:
                raise ValueError(f"Expected non-negative epoch, but got {epoch}")
            if epoch >= self.T_0:
                if self.T_mult == 1:
                    self.T_cur = epoch % self.T_0
                else:
                    n = int(math.log(epoch / self.T_0 * (self.T_mult - 1) + 1, self.T_mult))
                    self.T_cur = epoch - self.T_0 * (self.T_mult ** n - 1) / (self.T_mult - 1)
                    self.T_i = self.T_0 * self.T_mult ** n
            else:
                self.T_i, self.T_cur = self.T_0, epoch
        self.last_epoch = math.floor(epoch)
        self._get_lr_called_within_step = True
        try:
            values = self.get_lr()
        finally:
            self._get_lr_called_within_step = False
        for group, lr in zip(self.optimizer.param_groups, values):
            group["lr"] = lr
        self._last_lr = _lrs(self.optimizer)


class OneCycleLR(LRScheduler):
    """The 1cycle policy (Smith): warm up to ``max_lr`` then anneal, cycling momentum inversely.

    >>> import funcgrad
    >>> opt = funcgrad.optim.SGD([funcgrad.zeros(1, requires_grad=True)], lr=0.1, momentum=0.9)
    >>> s = funcgrad.optim.lr_scheduler.OneCycleLR(opt, max_lr=1.0, total_steps=10)
    >>> round(s.get_last_lr()[0], 6), opt.param_groups[0]["momentum"]
    (0.04, 0.95)
    """

    def __init__(self, optimizer, max_lr, total_steps: int | None = None, epochs: int | None = None,
                 steps_per_epoch: int | None = None, pct_start: float = 0.3, anneal_strategy: str = "cos",
                 cycle_momentum: bool = True, base_momentum=0.85, max_momentum=0.95,
                 div_factor: float = 25.0, final_div_factor: float = 1e4, three_phase: bool = False,
                 last_epoch: int = -1) -> None:
        if not isinstance(optimizer, Optimizer):
            raise TypeError(f"{type(optimizer).__name__} is not an Optimizer")
        self.optimizer = optimizer
        if total_steps is not None:
            if total_steps <= 0 or not isinstance(total_steps, int):
                raise ValueError(f"Expected positive integer total_steps, but got {total_steps}")
            self.total_steps = total_steps
        elif epochs is not None and steps_per_epoch is not None:
            if not isinstance(epochs, int) or epochs <= 0:
                raise ValueError(f"Expected positive integer epochs, but got {epochs}")
            if not isinstance(steps_per_epoch, int) or steps_per_epoch <= 0:
                raise ValueError(f"Expected positive integer steps_per_epoch, but got {steps_per_epoch}")
            self.total_steps = epochs * steps_per_epoch
        else:
            raise ValueError("You must define either total_steps OR (epochs AND steps_per_epoch)")
        n = self.total_steps
        if three_phase:
            self._schedule_phases = [
                _phase(float(pct_start * n) - 1, "initial_lr", "max_lr", "max_momentum", "base_momentum"),
                _phase(float(2 * pct_start * n) - 2, "max_lr", "initial_lr", "base_momentum", "max_momentum"),
                _phase(n - 1, "initial_lr", "min_lr", "max_momentum", "max_momentum")]
        else:
            self._schedule_phases = [
                _phase(float(pct_start * n) - 1, "initial_lr", "max_lr", "max_momentum", "base_momentum"),
                _phase(n - 1, "max_lr", "min_lr", "base_momentum", "max_momentum")]
        if pct_start < 0 or pct_start > 1 or not isinstance(pct_start, float):
            raise ValueError(f"Expected float between 0 and 1 pct_start, but got {pct_start}")
        if anneal_strategy not in ["cos", "linear"]:
            raise ValueError("anneal_strategy must be one of 'cos' or 'linear', instead got "
                             f"{anneal_strategy}")
        self._anneal_func_type = anneal_strategy
        max_lrs = _format_param("max_lr", optimizer, max_lr)
        if last_epoch == -1:
            for m, group in zip(max_lrs, optimizer.param_groups):
                group["initial_lr"] = m / div_factor
                group["max_lr"] = m
                group["min_lr"] = group["initial_lr"] / final_div_factor
        self.cycle_momentum = cycle_momentum
        if cycle_momentum:
            if "momentum" not in optimizer.defaults and "betas" not in optimizer.defaults:
                raise ValueError("optimizer must support momentum or beta1 with `cycle_momentum` option "
                                 "enabled")
            self.use_beta1 = "betas" in optimizer.defaults
            maxm = _format_param("max_momentum", optimizer, max_momentum)
            basem = _format_param("base_momentum", optimizer, base_momentum)
            if last_epoch == -1:
                for mm, bm, group in zip(maxm, basem, optimizer.param_groups):
                    if self.use_beta1:
                        group["betas"] = (mm, *group["betas"][1:])
                    else:
                        group["momentum"] = mm
                    group["max_momentum"], group["base_momentum"] = mm, bm
        super().__init__(optimizer, last_epoch)

    def _anneal(self, start, end, pct):
        if self._anneal_func_type == "cos":
            return end + (start - end) / 2.0 * (math.cos(math.pi * pct) + 1)
        return (end - start) * pct + start

    def get_lr(self) -> list:
        self._warn_get_lr()
        step = self.last_epoch
        if step > self.total_steps:
            raise ValueError(f"Tried to step {step} times. The specified number of total steps is "
                             f"{self.total_steps}")
        lrs = []
        for group in self.optimizer.param_groups:
            start = 0.0
            for i, ph in enumerate(self._schedule_phases):
                end = ph["end_step"]
                if step <= end or i == len(self._schedule_phases) - 1:
                    pct = (step - start) / (end - start)
                    lr = self._anneal(group[ph["start_lr"]], group[ph["end_lr"]], pct)
                    if self.cycle_momentum:
                        mom = self._anneal(group[ph["start_momentum"]], group[ph["end_momentum"]], pct)
                    break
                start = ph["end_step"]
            lrs.append(lr)
            if self.cycle_momentum:
                if self.use_beta1:
                    group["betas"] = (mom, *group["betas"][1:])
                else:
                    group["momentum"] = mom
        return lrs


def _phase(end_step, start_lr, end_lr, start_momentum, end_momentum) -> dict:
    return {"end_step": end_step, "start_lr": start_lr, "end_lr": end_lr,
            "start_momentum": start_momentum, "end_momentum": end_momentum}


def _check_members(owner: str, optimizer, schedulers) -> None:
    for i, s in enumerate(schedulers):
        if not hasattr(s, "optimizer"):
            raise TypeError(f"{owner} at index {i} should have `optimizer` as its attribute.")
        if isinstance(s, ReduceLROnPlateau):
            raise ValueError(f"{owner} does not support `ReduceLROnPlateau` scheduler as it requires "
                             "additional kwargs to be specified when calling `step`, but got one at index "
                             f"{i} in the given schedulers sequence.")
        if optimizer is not s.optimizer:
            raise ValueError(f"{owner} expects all schedulers to belong to the same optimizer, but got "
                             f"scheduler {s.__class__.__name__} at index {i} has {s.optimizer}, which is "
                             f"different from {optimizer.__class__.__name__}.")


class _Composite(LRScheduler):
    def state_dict(self) -> dict[str, Any]:
        sd = {k: v for k, v in self.__dict__.items() if k not in ("optimizer", "_schedulers")}
        sd["_schedulers"] = [s.state_dict() for s in self._schedulers]
        return sd

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        state_dict = dict(state_dict)
        subs = state_dict.pop("_schedulers")
        self.__dict__.update(state_dict)
        for s, d in zip(self._schedulers, subs):
            s.load_state_dict(d)


class SequentialLR(_Composite):
    """Run ``schedulers`` one after another, switching at the ``milestones``."""

    def __init__(self, optimizer, schedulers: list[LRScheduler], milestones: list[int],
                 last_epoch: int = -1) -> None:
        name = type(self).__name__
        if len(schedulers) < 1:
            raise ValueError(f"{name} expects at least one scheduler, but got no scheduler.")
        _check_members(name, optimizer, schedulers)
        if len(milestones) != len(schedulers) - 1:
            raise ValueError(
                "Sequential Schedulers expects number of schedulers provided to be one more than the "
                f"number of milestone points, but got number of schedulers {len(schedulers)} and the "
                f"number of milestones to be equal to {len(milestones)}")
        self._schedulers, self._milestones = schedulers, milestones
        self.last_epoch = last_epoch + 1
        self.optimizer = optimizer
        for group in optimizer.param_groups:
            group["lr"] = group["initial_lr"]
        self._undo(self)
        idx = bisect_right(milestones, 0)
        schedulers[idx]._initial_step()
        self._last_lr = schedulers[idx].get_last_lr()

    def _undo(self, sched) -> None:
        # undo the initial steps the members (and their members) took when they were built
        if hasattr(sched, "_schedulers"):
            for s in sched._schedulers:
                self._undo(s)
        elif hasattr(sched, "last_epoch"):
            sched.last_epoch -= 1

    def step(self) -> None:
        self.last_epoch += 1
        idx = bisect_right(self._milestones, self.last_epoch)
        s = self._schedulers[idx]
        if idx > 0 and self._milestones[idx - 1] == self.last_epoch:
            s._update_lr(0)
        else:
            s.step()
        self._last_lr = s.get_last_lr()


class ChainedScheduler(_Composite):
    """Step several schedulers together (their effects compose)."""

    def __init__(self, schedulers: Sequence[LRScheduler], optimizer: Optimizer | None = None) -> None:
        name = type(self).__name__
        if len(schedulers) < 1:
            raise ValueError(f"{name} expects at least one scheduler to be chained, but got no scheduler.")
        optimizer = optimizer or schedulers[0].optimizer
        _check_members(name, optimizer, schedulers)
        self._schedulers, self.optimizer = schedulers, optimizer
        self._last_lr = _lrs(schedulers[-1].optimizer)

    def step(self) -> None:
        for s in self._schedulers:
            s.step()
        self._last_lr = _lrs(self._schedulers[-1].optimizer)


class ReduceLROnPlateau(LRScheduler):
    """Reduce the lr by ``factor`` when a metric stopped improving for ``patience`` epochs.

    >>> import funcgrad
    >>> opt = funcgrad.optim.SGD([funcgrad.zeros(1, requires_grad=True)], lr=1.0)
    >>> s = funcgrad.optim.lr_scheduler.ReduceLROnPlateau(opt, patience=1)
    >>> for loss in [1.0, 1.0, 1.0]:
    ...     s.step(loss)
    >>> s.get_last_lr()
    [0.1]
    """

    def __init__(self, optimizer, mode: str = "min", factor: float = 0.1, patience: int = 10,
                 threshold: float = 1e-4, threshold_mode: str = "rel", cooldown: int = 0,
                 min_lr: list[float] | float = 0, eps: float = 1e-8) -> None:
        if factor >= 1.0:
            raise ValueError("Factor should be < 1.0.")
        self.factor = factor
        if not isinstance(optimizer, Optimizer):
            raise TypeError(f"{type(optimizer).__name__} is not an Optimizer")
        self.optimizer = optimizer
        if isinstance(min_lr, (list, tuple)):
            if len(min_lr) != len(optimizer.param_groups):
                raise ValueError(f"expected {len(optimizer.param_groups)} min_lrs, got {len(min_lr)}")
            self.default_min_lr, self.min_lrs = None, list(min_lr)
        else:
            self.default_min_lr, self.min_lrs = min_lr, [min_lr] * len(optimizer.param_groups)
        self.patience, self.cooldown, self.eps = patience, cooldown, eps
        self.last_epoch = 0
        self._last_lr = _lrs(optimizer)
        self._init_is_better(mode, threshold, threshold_mode)
        self._reset()

    def _reset(self) -> None:
        self.best, self.cooldown_counter, self.num_bad_epochs = self.mode_worse, 0, 0

    def step(self, metrics, epoch=None) -> None:  # type: ignore[override]
        current = float(metrics)
        if epoch is None:
            epoch = self.last_epoch + 1
        else:
            warnings.warn(EPOCH_DEPRECATION_WARNING, UserWarning, stacklevel=2)
        self.last_epoch = epoch
        if self._is_better(current, self.best):
            self.best, self.num_bad_epochs = current, 0
        else:
            self.num_bad_epochs += 1
        if self.in_cooldown:
            self.cooldown_counter -= 1
            self.num_bad_epochs = 0  # bad epochs during cooldown do not count
        if self.num_bad_epochs > self.patience:
            self._reduce_lr()
            self.cooldown_counter, self.num_bad_epochs = self.cooldown, 0
        self._last_lr = _lrs(self.optimizer)

    def _reduce_lr(self) -> None:
        groups = self.optimizer.param_groups
        if len(groups) != len(self.min_lrs):
            if self.default_min_lr is None:
                raise RuntimeError(
                    f"The number of param groups in the `optimizer` ({len(groups)}) differs from when "
                    f"`ReduceLROnPlateau` was initialized ({len(self.min_lrs)}), usually due to a new "
                    "param group being added to the optimizer. Please modify the `min_lrs` field to "
                    "match the length of the `optimizer` param groups.")
            self.min_lrs = [self.default_min_lr] * len(groups)
        for i, group in enumerate(groups):
            old = float(group["lr"])
            new = max(old * self.factor, self.min_lrs[i])
            if old - new > self.eps:
                group["lr"] = new

    @property
    def in_cooldown(self) -> bool:
        return self.cooldown_counter > 0

    def _is_better(self, a, best) -> bool:
        if self.mode == "min" and self.threshold_mode == "rel":
            return a < best * (1.0 - self.threshold)
        if self.mode == "min":
            return a < best - self.threshold
        if self.threshold_mode == "rel":
            return a > best * (self.threshold + 1.0)
        return a > best + self.threshold

    def _init_is_better(self, mode, threshold, threshold_mode) -> None:
        if mode not in {"min", "max"}:
            raise ValueError("mode " + mode + " is unknown!")
        if threshold_mode not in {"rel", "abs"}:
            raise ValueError("threshold mode " + threshold_mode + " is unknown!")
        self.mode_worse = math.inf if mode == "min" else -math.inf
        self.mode, self.threshold, self.threshold_mode = mode, threshold, threshold_mode

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        self.__dict__.update(state_dict)
        self._init_is_better(self.mode, self.threshold, self.threshold_mode)




class CyclicLR(_CyclicMixin, LRScheduler):
    """Cyclical learning rate (Smith): ``lr`` (and, inversely, momentum or ``beta1``) cycles
    between ``base_lr`` and ``max_lr``; ``mode`` triangular / triangular2 / exp_range or ``scale_fn``.

    >>> import funcgrad
    >>> opt = funcgrad.optim.SGD([funcgrad.zeros(1, requires_grad=True)], lr=0.1, momentum=0.9)
    >>> s = funcgrad.optim.lr_scheduler.CyclicLR(opt, 0.1, 1.0, step_size_up=2)
    >>> lrs = []
    >>> for _ in range(5):
    ...     opt.step(); s.step(); lrs.append(round(s.get_last_lr()[0], 6))
    >>> lrs
    [0.55, 1.0, 0.55, 0.1, 0.55]
    """

    def __init__(self, optimizer, base_lr, max_lr, step_size_up: int = 2000, step_size_down: int | None = None,
                 mode: str = "triangular", gamma: float = 1.0, scale_fn=None, scale_mode: str = "cycle",
                 cycle_momentum: bool = True, base_momentum=0.8, max_momentum=0.9, last_epoch: int = -1) -> None:
        if not isinstance(optimizer, Optimizer):
            raise TypeError(f"{type(optimizer).__name__} is not an Optimizer")
        self.optimizer = optimizer
        base_lrs = _format_param("base_lr", optimizer, base_lr)
        if last_epoch == -1:
            for lr, group in zip(base_lrs, optimizer.param_groups):
                group["lr"] = lr
        self.max_lrs = _format_param("max_lr", optimizer, max_lr)
        step_size_up = float(step_size_up)
        step_size_down = float(step_size_down) if step_size_down is not None else step_size_up
        self.total_size = step_size_up + step_size_down
        self.step_ratio = step_size_up / self.total_size
        if mode not in ["triangular", "triangular2", "exp_range"] and scale_fn is None:
            raise ValueError("mode is invalid and scale_fn is None")
        self.mode, self.gamma, self._scale_fn_custom, self.scale_mode = mode, gamma, scale_fn, scale_mode
        self._init_scale_fn()
        self.cycle_momentum = cycle_momentum
        if cycle_momentum:
            if "momentum" not in optimizer.defaults and "betas" not in optimizer.defaults:
                raise ValueError("optimizer must support momentum or beta1 with `cycle_momentum` option enabled")
            self.use_beta1 = "betas" in self.optimizer.defaults
            self.base_momentums = _format_param("base_momentum", optimizer, base_momentum)
            self.max_momentums = _format_param("max_momentum", optimizer, max_momentum)
            if last_epoch == -1:
                for m, b, group in zip(self.max_momentums, self.base_momentums, optimizer.param_groups):
                    if self.use_beta1:
                        group["betas"] = (m, *group["betas"][1:])
                    else:
                        group["momentum"] = m
                    group["max_momentum"], group["base_momentum"] = m, b
        super().__init__(optimizer, last_epoch)
        self.base_lrs = base_lrs


__all__ += ["CyclicLR"]
