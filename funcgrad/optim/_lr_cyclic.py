"""The schedule of ``lr_scheduler.CyclicLR`` (PyTorch's formulas): its scale functions, ``get_lr``
and ``state_dict`` handling, as a mixin the class in ``lr_scheduler`` (which holds the
constructor and the base class) puts before ``LRScheduler``."""

from __future__ import annotations

import functools
import math
import types
from typing import Any


class _CyclicMixin:
    def _init_scale_fn(self) -> None:
        if self._scale_fn_custom is not None:
            return
        if self.mode == "exp_range":
            self._scale_fn_ref, self.scale_mode = functools.partial(self._exp_range_scale_fn, self.gamma), "iterations"
        elif self.mode in ("triangular", "triangular2"):
            self._scale_fn_ref = getattr(self, f"_{self.mode}_scale_fn")
            self.scale_mode = "cycle"

    def scale_fn(self, x) -> float:
        return self._scale_fn_custom(x) if self._scale_fn_custom is not None else self._scale_fn_ref(x)

    @staticmethod
    def _triangular_scale_fn(x: float) -> float:
        return 1.0

    @staticmethod
    def _triangular2_scale_fn(x: float) -> float:
        return 1 / (2.0 ** (x - 1))

    @staticmethod
    def _exp_range_scale_fn(gamma: float, x: float) -> float:
        return gamma ** x

    def get_lr(self) -> list:
        self._warn_get_lr()
        cycle = math.floor(1 + self.last_epoch / self.total_size)
        x = 1.0 + self.last_epoch / self.total_size - cycle
        scale_factor = x / self.step_ratio if x <= self.step_ratio else (x - 1) / (self.step_ratio - 1)
        at = cycle if self.scale_mode == "cycle" else self.last_epoch
        lrs = [b + (m - b) * scale_factor * self.scale_fn(at) for b, m in zip(self.base_lrs, self.max_lrs)]
        if self.cycle_momentum:
            for group, b, m in zip(self.optimizer.param_groups, self.base_momentums, self.max_momentums):
                momentum = m - (m - b) * scale_factor * self.scale_fn(at)
                if self.use_beta1:
                    group["betas"] = (momentum, *group["betas"][1:])
                else:
                    group["momentum"] = momentum
        return lrs

    def state_dict(self) -> dict[str, Any]:
        state = super().state_dict()
        state.pop("_scale_fn_ref", None)
        fn = state.pop("_scale_fn_custom")
        state["_scale_fn_custom"] = None
        if fn is not None and not isinstance(fn, types.FunctionType):
            state["_scale_fn_custom"] = fn.__dict__.copy()
        return state

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        fn = state_dict.pop("_scale_fn_custom")
        super().load_state_dict(state_dict)
        if fn is not None:
            self._scale_fn_custom.__dict__.update(fn)
        self._init_scale_fn()

