"""``funcgrad.amp.GradScaler``: PyTorch's dynamic loss scaling.

``scale(loss)`` multiplies by the current scale; ``unscale_(opt)`` divides the gradients by it
and records whether any is inf/NaN (a tensor op, no ``.item()``); ``step(opt)`` skips the
update when one was; ``update()`` backs the scale off after a skipped step or grows it after
``growth_interval`` clean ones. The skip is decided in Python from a concrete flag in eager
mode; inside ``funcgrad.jit`` the flag is a tracer, so ``step`` runs the optimizer and then
selects, per parameter and optimizer-state tensor, the old or new value with ``where`` (the
same result as skipping, as one program).
"""

from __future__ import annotations

import warnings
from enum import Enum
from functools import partial

import jax
import jax.numpy as jnp

from .._device import cuda_is_available
from .._factories import fill_array as _full
from .._tensor import Tensor
from ..autograd.grad_mode import no_grad

__all__ = ["GradScaler", "OptState"]


class OptState(Enum):
    READY = 0
    UNSCALED = 1
    STEPPED = 2


def _refresh():
    return {"stage": OptState.READY, "found_inf": None}


class GradScaler:
    """Dynamic loss scaling for mixed-precision training (PyTorch's ``torch.amp.GradScaler``).

    >>> import funcgrad
    >>> w = funcgrad.nn.Parameter(funcgrad.tensor([1.0, 2.0]))
    >>> opt = funcgrad.optim.SGD([w], lr=0.1)
    >>> scaler = funcgrad.amp.GradScaler("cpu", init_scale=4.0)
    >>> scaler.scale((w * 3).sum()).backward()
    >>> scaler.step(opt); scaler.update()
    >>> w
    Parameter containing:
    tensor([0.7000, 1.7000], requires_grad=True)
    """

    def __init__(self, device: str = "cuda", init_scale: float = 2.0 ** 16, growth_factor: float = 2.0,
                 backoff_factor: float = 0.5, growth_interval: int = 2000, enabled: bool = True) -> None:
        self._device = device
        self._enabled = enabled
        if self._device == "cuda" and enabled and not cuda_is_available():
            warnings.warn("torch.cuda.amp.GradScaler is enabled, but CUDA is not available.  Disabling.",
                          stacklevel=2)
            self._enabled = False
        if self._enabled:
            if growth_factor <= 1.0:
                raise AssertionError("The growth factor must be > 1.0.")
            if backoff_factor >= 1.0:
                raise AssertionError("The backoff factor must be < 1.0.")
            self._init_scale = init_scale
            self._scale = None
            self._growth_factor = growth_factor
            self._backoff_factor = backoff_factor
            self._growth_interval = growth_interval
            self._init_growth_tracker = 0
            self._growth_tracker = None
            self._per_optimizer_states: dict = {}
            # created now, not on the first scale() as PyTorch does (a device detail there): a
            # step compiled by funcgrad.jit then finds them as state instead of creating them
            self._lazy_init()

    def _lazy_init(self) -> None:
        self._scale = Tensor._wrap(_full((), self._init_scale, jnp.float32))
        self._growth_tracker = Tensor._wrap(_full((), self._init_growth_tracker, jnp.int32))

    def _state(self, optimizer):
        return self._per_optimizer_states.setdefault(id(optimizer), _refresh())

    def scale(self, outputs):
        """``outputs * scale`` (tensors, or nested lists/tuples of them)."""
        if not self._enabled:
            return outputs
        if self._scale is None:
            self._lazy_init()
        if isinstance(outputs, Tensor):
            return outputs * self._scale.to(outputs.dtype) if outputs.dtype.is_floating_point else outputs
        if isinstance(outputs, (list, tuple)):
            return type(outputs)(self.scale(o) for o in outputs)
        raise ValueError("outputs must be a Tensor or an iterable of Tensors")

    def unscale_(self, optimizer) -> None:
        """Divide ``optimizer``'s gradients by the scale (in place) and record inf/NaN."""
        if not self._enabled:
            return
        st = self._state(optimizer)
        if st["stage"] is OptState.UNSCALED:
            raise RuntimeError("unscale_() has already been called on this optimizer since the last update().")
        if st["stage"] is OptState.STEPPED:
            raise RuntimeError("unscale_() is being called after step().")
        if self._scale is None:
            raise AssertionError("Attempted unscale_ but _scale is None.  This may indicate your script "
                                 "did not use scaler.scale(loss or outputs) earlier in the iteration.")
        grads = [p.grad for group in optimizer.param_groups for p in group["params"] if p.grad is not None]
        found, new = _unscale_kernel(self._scale._value, [g._value for g in grads])
        with no_grad():
            for g, v in zip(grads, new):
                g._set_value(v)
        st["found_inf"] = found
        st["stage"] = OptState.UNSCALED

    def step(self, optimizer, *args, **kwargs):
        """Unscale (if not done yet) and ``optimizer.step()`` unless a gradient was inf/NaN."""
        if not self._enabled:
            return optimizer.step(*args, **kwargs)
        if "closure" in kwargs:
            raise RuntimeError("Closure use is not currently supported if GradScaler is enabled.")
        st = self._state(optimizer)
        if st["stage"] is OptState.STEPPED:
            raise RuntimeError("step() has already been called since the last update().")
        if st["stage"] is OptState.READY:
            self.unscale_(optimizer)
        found = st["found_inf"]
        retval = None
        if isinstance(found, jax.core.Tracer):
            retval = _masked_step(optimizer, found, args, kwargs)
        elif not float(found):
            retval = optimizer.step(*args, **kwargs)
        st["stage"] = OptState.STEPPED
        return retval

    def update(self, new_scale=None) -> None:
        """Back off the scale after a skipped step, grow it after ``growth_interval`` clean steps."""
        if not self._enabled:
            return
        if new_scale is not None:
            v = new_scale._value if isinstance(new_scale, Tensor) else new_scale
            self._scale._set_value(jnp.asarray(v, jnp.float32).reshape(()))
        else:
            founds = [s["found_inf"] for s in self._per_optimizer_states.values() if s["found_inf"] is not None]
            if not founds:
                raise AssertionError("No inf checks were recorded prior to update.")
            new_scale, new_tracker = _update_kernel(
                founds, self._scale._value, self._growth_tracker._value, self._growth_interval,
                self._backoff_factor, self._growth_factor)
            self._scale._set_value(new_scale)
            self._growth_tracker._set_value(new_tracker)
        self._per_optimizer_states = {}

    def get_scale(self) -> float:
        """The current scale as a Python float (1.0 when disabled)."""
        if not self._enabled:
            return 1.0
        return self._init_scale if self._scale is None else float(self._scale._value)

    def get_growth_factor(self) -> float:
        return self._growth_factor

    def set_growth_factor(self, new_factor: float) -> None:
        self._growth_factor = new_factor

    def get_backoff_factor(self) -> float:
        return self._backoff_factor

    def set_backoff_factor(self, new_factor: float) -> None:
        self._backoff_factor = new_factor

    def get_growth_interval(self) -> int:
        return self._growth_interval

    def set_growth_interval(self, new_interval: int) -> None:
        self._growth_interval = new_interval

    def is_enabled(self) -> bool:
        return self._enabled

    def state_dict(self) -> dict:
        """``scale``, factors, interval and growth tracker (empty when disabled), as PyTorch's."""
        if not self._enabled:
            return {}
        return {"scale": self.get_scale(), "growth_factor": self._growth_factor,
                "backoff_factor": self._backoff_factor, "growth_interval": self._growth_interval,
                "_growth_tracker": (self._init_growth_tracker if self._growth_tracker is None
                                    else int(self._growth_tracker._value))}

    def load_state_dict(self, state_dict: dict) -> None:
        if not self._enabled:
            return
        if len(state_dict) == 0:
            raise RuntimeError("The source state dict is empty, possibly because it was saved from a "
                               "disabled instance of GradScaler.")
        self._init_scale = state_dict["scale"]
        if self._scale is not None:
            self._scale._set_value(jnp.full((), state_dict["scale"], jnp.float32))
        self._growth_factor = state_dict["growth_factor"]
        self._backoff_factor = state_dict["backoff_factor"]
        self._growth_interval = state_dict["growth_interval"]
        self._init_growth_tracker = state_dict["_growth_tracker"]
        if self._growth_tracker is not None:
            self._growth_tracker._set_value(jnp.full((), state_dict["_growth_tracker"], jnp.int32))


# one program each for unscale_ (all of an optimizer's gradients) and update: the same operations
# run one by one compiled an XLA program per operation and gradient shape (~25 for a 2-layer MLP)
@jax.jit
def _unscale_kernel(scale, grads):
    """``(found_inf, grads / scale)``: the division as a multiply by the float64 reciprocal
    rounded to each gradient's dtype (PyTorch's ``_amp_foreach_non_finite_check_and_unscale_``)."""
    inv = 1.0 / scale.astype(jnp.float64)
    found = jnp.zeros((), jnp.float32)
    out = []
    for g in grads:
        found = jnp.maximum(found, (~jnp.isfinite(g)).any().astype(jnp.float32))
        out.append((g * inv.astype(g.dtype)).astype(g.dtype))
    return found, out


@partial(jax.jit, static_argnums=(3, 4, 5))
def _update_kernel(founds, scale, tracker, growth_interval, backoff_factor, growth_factor):
    """The new ``(scale, growth tracker)`` (PyTorch's ``_amp_update_scale_``)."""
    found = founds[0]
    for f in founds[1:]:
        found = found + f
    bad = found > 0
    grown = tracker + 1
    grow_now = grown >= growth_interval
    new_scale = jnp.where(bad, scale * backoff_factor,
                          jnp.where(grow_now, scale * growth_factor, scale)).astype(jnp.float32)
    return new_scale, jnp.where(bad | grow_now, 0, grown).astype(jnp.int32)


def _masked_step(optimizer, found, args, kwargs):
    """``optimizer.step()`` whose effect is undone where ``found`` (a traced flag) is set."""
    params = [p for g in optimizer.param_groups for p in g["params"]]
    old_p = [p._value for p in params]
    old_s = {(id(p), k): v._value for p in params for k, v in optimizer.state.get(p, {}).items()
             if isinstance(v, Tensor)}
    retval = optimizer.step(*args, **kwargs)
    skip = found > 0
    with no_grad():
        for p, v in zip(params, old_p):
            p._set_value(jnp.where(skip, v, p._value))
        for p in params:
            for k, t in optimizer.state.get(p, {}).items():
                old = old_s.get((id(p), k))
                if old is not None and isinstance(t, Tensor):
                    t._set_value(jnp.where(skip, old, t._value))
    return retval
