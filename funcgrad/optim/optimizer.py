"""``Optimizer``: PyTorch's optimizer API (param groups, per-parameter state, state_dict) whose
update is an optax ``GradientTransformation`` run by one jitted call per parameter group.

How a step flows (``Optimizer.step`` -> ``_step_group``):

1. the group's parameters with a ``.grad`` are collected (the others are skipped, as PyTorch);
2. their state (``self.state[p]``: funcgrad Tensors such as ``step``, ``exp_avg``) is created
   lazily on the first step;
3. one cached ``jax.jit`` kernel per (optimizer class, structural flags) takes the lists of
   parameter, gradient and state arrays plus the numeric hyperparameters as *dynamic* scalars
   (read through ``_lift.hyper`` so the jit bridge can trace them), builds the optax chain
   (``subclass._transform``) for each parameter and returns the new parameters and states;
   eagerly, the old parameter and state arrays are *donated* (XLA writes the new values into
   their buffers, as PyTorch updates in place) whenever nothing but their storage cell can still
   see them (``_donatable``); the others are passed as ordinary, kept arguments;
4. the results are written back into the same Tensor objects (parameters get a version bump,
   as PyTorch's in-place update does). State tensors are never rebound: the jit bridge finds
   them in ``self.state`` and lifts their storage.

Structural flags (``maximize``, ``amsgrad``, ``momentum != 0``…) pick the kernel; numbers such
as ``lr`` do not, so a scheduler changing ``lr`` never recompiles.
"""

from __future__ import annotations

import copy
import dis
import functools
import sys
import warnings
from collections import OrderedDict, defaultdict
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import optax

from .. import _ahead, _dtype, _lift, _meta, _storage, _tensor
from .._device import put_like
from .._tensor import Tensor
from ..autograd.grad_mode import enable_grad, no_grad
from ..autograd.graph import RemovableHandle


class _RequiredParameter:
    """Singleton marking a default that each param group must provide (SGD's ``lr`` once was)."""

    def __repr__(self) -> str:
        return "<required parameter>"


required = _RequiredParameter()

_global_pre_hooks: OrderedDict = OrderedDict()
_global_post_hooks: OrderedDict = OrderedDict()


def register_optimizer_step_pre_hook(hook: Callable) -> RemovableHandle:
    """Register ``hook(optimizer, args, kwargs)`` to run before every optimizer's ``step``."""
    return _add_hook(_global_pre_hooks, hook)


def register_optimizer_step_post_hook(hook: Callable) -> RemovableHandle:
    """Register ``hook(optimizer, args, kwargs)`` to run after every optimizer's ``step``."""
    return _add_hook(_global_post_hooks, hook)


class _DictHandle(RemovableHandle):
    def __init__(self, table, key):  # noqa: D401 - small private helper
        self._table, self._key = table, key

    def remove(self) -> None:
        self._table.pop(self._key, None)


_hook_ids = [0]


def _add_hook(table, hook) -> RemovableHandle:
    _hook_ids[0] += 1
    table[_hook_ids[0]] = hook
    return _DictHandle(table, _hook_ids[0])


def _typename(obj) -> str:
    if isinstance(obj, Tensor):
        return obj._type_name()
    t = type(obj)
    return t.__name__ if t.__module__ == "builtins" else f"{t.__module__}.{t.__qualname__}"


def _with_hooks(step):
    """Wrap a subclass's ``step`` with the step pre/post hooks (global then per-instance)."""
    @functools.wraps(step)
    def wrapper(self, *args, **kwargs):
        for hook in (*_global_pre_hooks.values(), *self._optimizer_step_pre_hooks.values()):
            res = hook(self, args, kwargs)
            if res is not None:
                if not (isinstance(res, tuple) and len(res) == 2):
                    raise RuntimeError(f"{hook} must return None or a tuple of (new_args, new_kwargs), "
                                       f"but got {res}.")
                args, kwargs = res
        out = step(self, *args, **kwargs)
        for hook in (*self._optimizer_step_post_hooks.values(), *_global_post_hooks.values()):
            hook(self, args, kwargs)
        return out
    wrapper._fg_hooked = True
    return wrapper


def _scalar_dtype():
    """dtype of ``state['step']``: float32, or float64 when that is the default (as PyTorch)."""
    return jnp.float64 if _dtype.get_default_dtype() is _dtype.float64 else jnp.float32


def _dyn(v):
    """A hyperparameter as a jit argument: Python numbers become floats (weakly typed, so a new
    value never retraces and never promotes a float32 parameter), Tensors their array."""
    if isinstance(v, Tensor):
        return v._value
    if isinstance(v, (tuple, list)):
        return tuple(_dyn(x) for x in v)
    if isinstance(v, (int, float)) and not isinstance(v, bool):
        return float(v)
    return v


_kernels: dict = {}


def _group_update(cls, static):
    """The pure group update: new parameters and states from the old ones and the gradients.

    One parameter's update is a jitted function of its own, called per parameter inside the
    group's program: JAX traces and lowers it once per parameter signature (shape, dtype, state
    avals), not once per parameter (a Transformer's dozens of parameters have a few shapes), and
    XLA inlines the calls before it optimizes, so the program computes what the unrolled loop did."""
    def one(p, g, s, f, h):
        parts = cls._transform(h, static, p.dtype, f)
        core = next((i for i, t in enumerate(parts) if isinstance(t, StatefulTransform)), None)
        tx = optax.chain(*parts)
        st = tuple(s if i == core else t.init(p) for i, t in enumerate(parts))
        updates, st = tx.update(g, st, p)
        return optax.apply_updates(p, updates), (st[core] if core is not None else {})
    one = jax.jit(one)

    def run(params, grads, states, fresh, h):
        new_params, new_states = [], []
        for p, g, s, f in zip(params, grads, states, fresh):
            np_, ns = one(p, g, s, f, h)
            new_params.append(np_)
            new_states.append(ns)
        return new_params, new_states
    return run


def _kernel(cls, static):
    """The jitted group update of optimizer class ``cls`` for structural flags ``static``.

    Called as ``kernel(donate, dparams, dstates, kparams, kstates, grads, fresh, h)``: ``donate``
    (static; one ``(param, state)`` pair of bools per parameter) says which old parameter and
    state arrays come in ``dparams``/``dstates``, donated to XLA so that the new values are
    written into the old buffers (an in-place update, as PyTorch's: allocating fresh
    megabyte-sized outputs costs more than the update itself), and which in ``kparams``/
    ``kstates``, kept. A training loop uses one mask (all True eagerly, all False under the
    jit bridge, where the arrays are tracers), so it traces once.
    """
    key = (cls, static)
    k = _kernels.get(key)
    if k is None:
        run = _group_update(cls, static)

        def run_masked(donate, dparams, dstates, kparams, kstates, grads, fresh, h):
            dp, ds, kp, ks = iter(dparams), iter(dstates), iter(kparams), iter(kstates)
            params = [next(dp) if d else next(kp) for d, _ in donate]
            states = [next(ds) if d else next(ks) for _, d in donate]
            new_params, new_states = run(params, grads, states, fresh, h)
            # PyTorch updates its state in place, so a state keeps its dtype (a no-op for the
            # built-in optimizers); that also keeps every donated buffer usable for an output
            # (else jax warns "Some donated buffers were not usable")
            new_states = [{n: v.astype(old[n].dtype) if n in old and v.dtype != old[n].dtype else v
                           for n, v in new.items()} for new, old in zip(new_states, states)]
            return new_params, new_states
        k = _kernels[key] = jax.jit(run_masked, static_argnums=0, donate_argnums=(1, 2))
    return k


def _spec(v) -> jax.ShapeDtypeStruct:
    return jax.ShapeDtypeStruct(v.shape, v.dtype, weak_type=getattr(v, "weak_type", False))


# (type, value's bits, sharding) -> that Python scalar as an array there (_scalars_there)
_SCALARS: dict = {}
_CPU_TOO = False  # tests: take the path on the CPU as well


def _scalars_there(fresh: list, h: dict, v) -> tuple[list, dict]:
    """The update's Python scalars (``fresh`` flags, hyperparameters) as arrays already on the
    accelerator that holds the parameters, each made once per value.

    The kernel takes them as dynamic arguments, and jax copies a Python scalar to the device on
    every call: nothing on the CPU, ~60 µs each on an H200 machine (an Adam step over 6
    parameters passes 11). The arrays are what jax's own conversion makes (a float weakly
    typed), placed as ``_device.put_like`` places them, so the kernel is the one compiled for
    the scalars. Only for parameters on one non-CPU device; elsewhere the scalars go as they are."""
    sh = getattr(v, "sharding", None)
    if sh is None or len(sh.device_set) != 1:
        return fresh, h
    dev = next(iter(sh.device_set))
    if dev.platform == "cpu" and not _CPU_TOO:
        return fresh, h

    def there(x):
        if isinstance(x, tuple):
            return tuple(map(there, x))
        t = type(x)
        if t is not float and t is not bool:
            return x
        k = (t, x.hex() if t is float else x, dev, v.committed)
        a = _SCALARS.get(k)
        if a is None:
            if len(_SCALARS) >= 4096:  # a schedule of ever-new values: bounded
                _SCALARS.clear()
            a = _SCALARS[k] = put_like([x], v)[0]
        return a
    return [there(f) for f in fresh], {k: there(x) for k, x in h.items()}


def _kernel_args(donate, pvals, svals, gvals, fresh, h) -> tuple:
    """``_kernel``'s arguments: the parameter and state arrays split by the donation mask."""
    dp = [v for v, (d, _) in zip(pvals, donate) if d]
    ds = [v for v, (_, d) in zip(svals, donate) if d]
    kp = [v for v, (d, _) in zip(pvals, donate) if not d]
    ks = [v for v, (_, d) in zip(svals, donate) if not d]
    return donate, dp, ds, kp, ks, gvals, fresh, h


def _states_donatable(st: dict, keys, sv: dict) -> bool:
    """May all of one parameter's old state arrays ``sv`` (``st``'s entries ``keys``) be donated?"""
    return all(_donatable(st[k], sv, k) for k in keys)


_PlainCell = _tensor._PlainCell  # not _tensor._Cell: the jit bridge swaps a subclass in while tracing


def _owned_refs() -> int:
    """``sys.getrefcount(vals[i])`` of an array held only by a storage cell and by ``vals``:
    the cell, the list, and getrefcount's own argument (3 on CPython 3.11). Measured rather
    than assumed, so that a Python version counting differently only turns donation off."""
    cell = _PlainCell(object())
    vals = [cell.value]
    return sys.getrefcount(vals[0])


_OWNED_REFS = _owned_refs()


_concrete_types: set = set()  # array classes seen to be concrete (an isinstance on jax.Array is slow)


def _is_concrete(v) -> bool:
    if type(v) in _concrete_types:
        return True
    if isinstance(v, jax.Array) and not isinstance(v, jax.core.Tracer):
        _concrete_types.add(type(v))
        return True
    return False


def _donatable(t: Tensor, vals, i) -> bool:
    """May ``vals[i]`` (``t``'s array, about to be replaced by the kernel's output) be donated?

    Only a concrete array (a tracer under the jit bridge is never donated), stored in a plain
    cell of its own (not a view's cached value, not a packed piece), and referenced by nothing
    but that cell and ``vals``: the count rules out a user's ``a = p.jax()``, autograd's saved
    inputs (so backward through an old graph still reports the in-place version error instead
    of reading a deleted buffer), an array shared by two cells (``b.data = a``, a loaded
    ``state_dict``) or passed twice (a duplicate parameter). A NumPy view
    (``p.detach().numpy()``) also holds the array, and PJRT itself would copy rather than
    reuse a buffer with an external reference.
    """
    return (t._viewinfo is None and type(t._cell) is _PlainCell and _is_concrete(vals[i])
            and sys.getrefcount(vals[i]) == _OWNED_REFS)


class StatefulTransform(optax.GradientTransformation):
    """An optax ``GradientTransformation`` whose state is the dict of PyTorch's state entries
    for one parameter (``{'step': ..., 'exp_avg': ...}``); the optimizer owns that state, so
    ``init`` is never called by funcgrad."""


def stateful(update: Callable) -> StatefulTransform:
    """Make ``update(grad, state_dict, param) -> (update, new_state_dict)`` a transform."""
    def init(params):
        raise NotImplementedError("funcgrad optimizers create their state lazily in Python")
    return StatefulTransform(init, update)


def scalar(x, dtype):
    """A hyperparameter (possibly float64 / weakly typed) as a scalar of the parameter's dtype,
    so that mixing it with arrays never promotes them (PyTorch casts scalar operands too)."""
    return jnp.asarray(x).astype(dtype)


def f64(x):
    """Scalar arithmetic (bias corrections…) is done in double, as PyTorch does in Python."""
    return jnp.asarray(x).astype(jnp.float64)


def lerp(start, end, weight):
    """PyTorch's ``lerp``: the formula it picks depends on the weight, for accuracy."""
    return jnp.where(jnp.abs(weight) < 0.5, start + weight * (end - start),
                     end - (end - start) * (1 - weight))


class Optimizer:
    """Base class of all optimizers: PyTorch's API over optax transforms.

    Subclasses give ``defaults`` and, for the jitted update, ``_hypers`` (numeric options passed
    to the kernel), ``_static(group)`` (options that change the computation's structure),
    ``_init_state(p, group)`` and ``_transform(h, static, dtype, fresh)`` (the optax chain).

    >>> import funcgrad
    >>> w = funcgrad.ones(2, requires_grad=True)
    >>> opt = funcgrad.optim.SGD([w], lr=0.5)
    >>> (w * w).sum().backward()
    >>> opt.step(); w
    tensor([0., 0.], requires_grad=True)
    """

    _hypers: tuple[str, ...] = ()
    # whether ``_transform`` reads ``fresh`` (SGD's momentum buffer starts as the gradient): the
    # first update is then not the later ones' computation on the initial state. Read from the
    # code of a subclass's own ``_transform`` unless it says (any use of ``fresh`` counts)
    _fresh_update = False

    def _primable(self, group) -> bool:
        """Whether ``group``'s first update is the later ones' computation on ``_init_state``'s
        tensors, bit for bit, so that ``funcgrad.jit`` may run one program for both (the state
        is reported with ``_lift.created``): unless the update reads ``fresh``."""
        return not self._fresh_update

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        t = cls.__dict__.get("_transform")
        if t is not None and "_fresh_update" not in cls.__dict__:
            code = getattr(t, "__func__", t).__code__
            cls._fresh_update = any(i.argval == "fresh" for i in dis.get_instructions(code)
                                    if i.opname.startswith("LOAD_"))
        step = cls.__dict__.get("step")
        if step is not None and not getattr(step, "_fg_hooked", False):
            cls.step = _with_hooks(step)

    def __init__(self, params, defaults: dict[str, Any]) -> None:
        self.defaults = defaults
        self._optimizer_step_pre_hooks: OrderedDict = OrderedDict()
        self._optimizer_step_post_hooks: OrderedDict = OrderedDict()
        if isinstance(params, Tensor):
            raise TypeError("params argument given to the optimizer should be an iterable of Tensors "
                            "or dicts, but got " + _typename(params))
        self.state: defaultdict = defaultdict(dict)
        self.param_groups: list[dict[str, Any]] = []
        param_groups = list(params)
        if len(param_groups) == 0:
            raise ValueError("optimizer got an empty parameter list")
        if not isinstance(param_groups[0], dict):
            param_groups = [{"params": param_groups}]
        for group in param_groups:
            self.add_param_group(group)
        if _ahead.enabled and type(self)._step_group is Optimizer._step_group \
                and "step" not in type(self).__dict__:
            _ahead.wait_for_backward(self)  # the first update compiles ahead (_compile_ahead)

    # ---- param groups ------------------------------------------------------------------------
    def add_param_group(self, param_group: dict[str, Any]) -> None:
        """Add a parameter group (a dict with ``params`` and per-group options).

        >>> import funcgrad
        >>> a, b = funcgrad.zeros(1, requires_grad=True), funcgrad.zeros(1, requires_grad=True)
        >>> opt = funcgrad.optim.SGD([a], lr=0.1)
        >>> opt.add_param_group({"params": [b], "lr": 0.01})
        >>> [g["lr"] for g in opt.param_groups]
        [0.1, 0.01]
        """
        if not isinstance(param_group, dict):
            raise TypeError(f"param_group must be a dict, but got {type(param_group)}")
        param_group = dict(param_group)  # a failed call must leave the caller's dict unchanged
        params = param_group["params"]
        if isinstance(params, Tensor):
            params = [params]
        elif isinstance(params, set):
            raise TypeError("optimizer parameters need to be organized in ordered collections, but the "
                            "ordering of tensors in sets will change between runs. Please use a list "
                            "instead.")
        else:
            params = list(params)
        names = [p[0] for p in params if isinstance(p, tuple)]
        params = [p[1] if isinstance(p, tuple) else p for p in params]
        if names:
            if len(names) != len(params):
                raise ValueError("all optimizer params should be with/without names. Some param names "
                                 "are missing")
            param_group["param_names"] = names
        param_group["params"] = params
        for p in params:
            if not isinstance(p, Tensor):
                raise TypeError("optimizer can only optimize Tensors, but one of the params is "
                                + _typename(p))
            if not self.defaults.get("differentiable", None) and not (p.is_leaf or p.retains_grad):
                raise ValueError("can't optimize a non-leaf Tensor")
        for name, default in self.defaults.items():
            if default is required and name not in param_group:
                raise ValueError(f"parameter group didn't specify a value of required optimization "
                                 f"parameter {name}")
            param_group.setdefault(name, default)
        ids = {id(p) for p in params}
        if len(ids) != len(params):
            warnings.warn("optimizer contains a parameter group with duplicate parameters; in future, "
                          "this will cause an error; see github.com/pytorch/pytorch/issues/40967 for "
                          "more information", stacklevel=3)
        for group in self.param_groups:
            if ("param_names" in param_group) != ("param_names" in group):
                txt = "with names" if "param_names" in param_group else "without names"
                raise ValueError("all optimizer param groups should be with/without names. cannot add "
                                 f"param group {txt} to the optimizer")
            if any(id(p) in ids for p in group["params"]):
                raise ValueError("some parameters appear in more than one parameter group")
        self.param_groups.append(param_group)

    def __repr__(self) -> str:
        s = self.__class__.__name__ + " ("
        for i, group in enumerate(self.param_groups):
            s += f"\nParameter Group {i}\n"
            for key in sorted(group.keys()):
                if key != "params":
                    s += f"    {key}: {group[key]}\n"
        return s + ")"

    # ---- gradients ---------------------------------------------------------------------------
    def zero_grad(self, set_to_none: bool = True) -> None:
        """Reset the gradients of all optimized tensors (to ``None`` by default, as PyTorch 2)."""
        if _ahead.active[0] and self in _ahead.pending:
            self._compile_ahead()
        for group in self.param_groups:
            for p in group["params"]:
                g = p._grad
                if g is None:
                    continue
                if set_to_none:
                    p._grad = None
                else:
                    if g._grad_fn is not None:
                        g.detach_()
                    else:
                        g._requires_grad = False
                    g._set_value(jnp.zeros_like(g._value))
                    g._ver[0] += 1

    # ---- hooks -------------------------------------------------------------------------------
    def register_step_pre_hook(self, hook: Callable) -> RemovableHandle:
        """``hook(optimizer, args, kwargs)`` runs before ``step``; may return new (args, kwargs)."""
        return _add_hook(self._optimizer_step_pre_hooks, hook)

    def register_step_post_hook(self, hook: Callable) -> RemovableHandle:
        """``hook(optimizer, args, kwargs)`` runs after ``step``."""
        return _add_hook(self._optimizer_step_post_hooks, hook)

    # ---- the update --------------------------------------------------------------------------
    def step(self, closure: Callable[[], Any] | None = None):
        """One optimization step; ``closure`` (re-evaluating the loss) runs with grad enabled."""
        loss = None
        if closure is not None:
            with enable_grad():
                loss = closure()
        _ahead.finish(self)  # (the first step: its update compiled ahead, or compiling)
        with no_grad():
            for group in self.param_groups:
                self._step_group(group)
        return loss

    def _step_group(self, group: dict[str, Any]) -> None:
        params = [p for p in group["params"] if p._grad is not None]
        if not params:
            return
        static = self._static(group)
        fresh, states = [], []
        for p in params:
            st = self.state.get(p)
            fresh.append(not st)
            if not st:
                new = self._init_state(p, group)
                # like PyTorch, a stateless update (plain SGD) leaves ``self.state`` untouched
                st = self.state[p] if new else {}
                st.update(new)
                if new and self._primable(group):  # (under funcgrad.jit: see _lift.created)
                    _lift.created(self.state, p, functools.partial(self._init_state, p, group))
            states.append(st)
        keys = [self._state_keys(static, st) for st in states]
        h = {k: _dyn(_lift.hyper(group, k)) for k in self._hypers}
        pvals = [p._value for p in params]
        gvals = [p._grad._value for p in params]
        svals = [{k: st[k]._value for k in ks} for st, ks in zip(states, keys)]
        if any(isinstance(v, jax.core.Tracer) for v in gvals):
            # traced by the jit bridge: nothing is donated, not even an array created concretely
            # during the trace (the bridge donates the whole step's state itself)
            donate = tuple((False, False) for _ in params)
        else:
            donate = self._donation(params, pvals, states, keys, svals)
            fresh, h = _scalars_there(fresh, h, pvals[0])
        try:
            new_p, new_s = _kernel(type(self), static)(*_kernel_args(donate, pvals, svals, gvals, fresh, h))
        except Exception:
            if not _meta.holds(pvals):
                raise
            # meta parameters: no data to update, the shapes stay; the update runs on empty
            # stand-ins for the rest of the state (Adam's step counts, as PyTorch's)
            e = _meta.stand_in
            _, out_s = _kernel(type(self), static)(*_kernel_args(
                donate, [e(v) for v in pvals], [{k: e(v) for k, v in sv.items()} for sv in svals],
                [e(v) for v in gvals], fresh, h))
            new_p = pvals
            new_s = [{k: v if type(v) is _meta.MetaArray else o[k] for k, v in sv.items()}
                     for sv, o in zip(svals, out_s, strict=True)]
        for p, v in zip(params, new_p):
            p._set_value(v)
            p._ver[0] += 1
        for st, ks, new in zip(states, keys, new_s):
            for k in ks:
                st[k]._set_value(new[k])

    def _compile_ahead(self) -> None:
        """Compile the first ``step()``'s update on a background thread (``funcgrad._ahead``),
        at the first ``zero_grad()`` or ``backward()`` before any step: XLA compiles it while the
        forward and backward run, instead of after them.

        The arguments are the ones the first step will pass, as shapes: the parameters that
        require grad (each to get a gradient of its own shape and dtype), the state
        ``_init_state`` would create (evaluated abstractly: nothing is allocated) and the
        group's hyperparameters. Inside a ``funcgrad.jit`` trace, or for parameters placed on
        devices, nothing is tried. A state that already exists
        (Adagrad makes its own at construction; a loaded ``state_dict``) is used as it is."""
        if not _ahead.claim(self) or _storage.current() is not None:
            return
        calls = []
        try:
            for group in self.param_groups:
                params = [p for p in group["params"] if p._requires_grad]
                if not params:
                    continue
                pvals = [p._value for p in params]
                if not all(_is_concrete(v) and not v.committed for v in pvals):
                    return
                static = self._static(group)
                old = [self.state.get(p) for p in params]  # (Adagrad's, or a loaded state_dict's)
                fresh = [not st for st in old]

                def states(*vals, group=group, static=static):
                    out = []
                    for v in vals:
                        st = self._init_state(Tensor._wrap(v), group)
                        out.append({k: st[k]._value for k in self._state_keys(static, st)})
                    return out
                new = iter(jax.eval_shape(states, *[_spec(v) for v, f in zip(pvals, fresh) if f]))
                svals, donate = [], []
                for i, (p, st) in enumerate(zip(params, old)):
                    if st:
                        keys = self._state_keys(static, st)
                        sv = {k: st[k]._value for k in keys}
                        ok = _states_donatable(st, keys, sv)
                        svals.append({k: _spec(v) for k, v in sv.items()})
                    else:  # a fresh state's arrays are its own
                        ok = True
                        svals.append(next(new))
                    donate.append((_donatable(p, pvals, i), ok))
                h = {k: _dyn(_lift.hyper(group, k)) for k in self._hypers}
                specs = [_spec(v) for v in pvals]
                args = _kernel_args(tuple(donate), specs, svals, specs, fresh, h)
                calls.append((_kernel(type(self), static), args))
        except Exception:  # noqa: BLE001 - a guess that cannot be made: the step compiles itself
            return
        if calls:
            _ahead.start(self, lambda: [k.lower(*args).compile() for k, args in calls])

    @staticmethod
    def _donation(params, pvals, states, keys, svals) -> tuple:
        """Per parameter, whether its old array and its old state arrays can be donated to the
        update (``_donatable``)."""
        mask = []
        for i, p in enumerate(params):
            mask.append((_donatable(p, pvals, i), _states_donatable(states[i], keys[i], svals[i])))
        return tuple(mask)

    def _static(self, group: dict[str, Any]) -> tuple:
        return ()

    def _state_keys(self, static, state: dict) -> tuple[str, ...]:
        """The state entries the kernel reads and writes (all Tensors of the state by default)."""
        return tuple(k for k, v in state.items() if isinstance(v, Tensor))

    def _init_state(self, p: Tensor, group: dict[str, Any]) -> dict[str, Tensor]:
        return {}

    @staticmethod
    def _transform(h: dict, static: tuple, dtype, fresh) -> list:
        raise NotImplementedError

    # ---- checkpoints -------------------------------------------------------------------------
    def state_dict(self) -> dict[str, Any]:
        """``{'state': {index: {...}}, 'param_groups': [{..., 'params': [indices]}]}`` as PyTorch.

        >>> import funcgrad
        >>> w = funcgrad.ones(2, requires_grad=True)
        >>> opt = funcgrad.optim.Adam([w])
        >>> w.sum().backward(); opt.step()
        >>> sd = opt.state_dict()
        >>> sd["state"][0]["step"], sd["param_groups"][0]["params"]
        (tensor(1.), [0])
        """
        mapping: dict[int, int] = {}
        start = 0

        def pack(group):
            nonlocal start
            packed = {k: v for k, v in group.items() if k != "params"}
            for i, p in enumerate(group["params"], start):
                mapping.setdefault(id(p), i)
            packed["params"] = [mapping[id(p)] for p in group["params"]]
            start += len(packed["params"])
            return packed

        groups = [pack(g) for g in self.param_groups]
        state = {(mapping[id(k)] if isinstance(k, Tensor) else k): v for k, v in self.state.items()}
        return {"state": state, "param_groups": groups}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Load a ``state_dict()`` (deep-copied; floating state cast to its parameter's dtype)."""
        groups = self.param_groups
        saved_groups = copy.deepcopy(state_dict["param_groups"])
        if len(groups) != len(saved_groups):
            raise ValueError("loaded state dict has a different number of parameter groups")
        if any(len(g["params"]) != len(s["params"]) for g, s in zip(groups, saved_groups)):
            raise ValueError("loaded state dict contains a parameter group that doesn't match the size "
                             "of optimizer's group")
        id_map = {old: p for s, g in zip(saved_groups, groups) for old, p in zip(s["params"], g["params"])}

        def cast(param, value, key=None):
            if isinstance(value, Tensor):
                v = value._value
                if key != "step" and param.dtype.is_floating_point:
                    v = v.astype(param._value.dtype)
                return Tensor._wrap(v)  # a new Tensor object: the optimizer owns its state
            if isinstance(value, dict):
                return {k: cast(param, v, k) for k, v in value.items()}
            if isinstance(value, (list, tuple)):
                return type(value)(cast(param, v) for v in value)
            return copy.deepcopy(value)

        state: defaultdict = defaultdict(dict)
        for k, v in state_dict["state"].items():
            if k in id_map:
                state[id_map[k]] = cast(id_map[k], v)
            else:
                state[k] = copy.deepcopy(v)
        for g, s in zip(groups, saved_groups):
            s["params"] = g["params"]
            if "param_names" in g and "param_names" not in s:
                s["param_names"] = g["param_names"]
        self.state = state
        self.param_groups = saved_groups

    def __getstate__(self) -> dict[str, Any]:
        return {"defaults": self.defaults, "state": self.state, "param_groups": self.param_groups}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self.__dict__.setdefault("_optimizer_step_pre_hooks", OrderedDict())
        self.__dict__.setdefault("_optimizer_step_post_hooks", OrderedDict())


Optimizer.step = _with_hooks(Optimizer.step)


def check_nonneg(name: str, value, *, low: float = 0.0) -> None:
    """PyTorch's constructor checks: ``ValueError: Invalid <name>: <value>``."""
    if not low <= value:
        raise ValueError(f"Invalid {name}: {value}")


def state_zeros(p: Tensor, fill: float = 0.0) -> Tensor:
    """A state tensor like ``p`` filled with ``fill`` (zeros: ``-0.0`` is SGD's, see there)."""
    return Tensor._wrap(_zeros(p._value, fill))


def state_step() -> Tensor:
    return Tensor._wrap(_host_full((), _scalar_dtype()))


def _zeros(v, fill=0.0):
    """Zeros (or ``fill``) like ``v``. ``jnp.zeros_like`` runs (and first compiles) an XLA
    broadcast for each new shape: a first ``step()`` compiled one per parameter shape. A concrete
    array on the default device gets a host buffer put there instead; traced or placed: ``jnp``."""
    if type(v) is _meta.MetaArray:  # (a meta parameter's state: meta too)
        return v
    if isinstance(v, jax.core.Tracer) or v.committed:
        return jnp.full_like(v, fill)
    return _host_full(v.shape, v.dtype, fill)


def _host_full(shape, dtype, fill=0):
    """``fill`` of ``shape`` (zeros by default): a host buffer put on the default device, no XLA
    program (inside a ``funcgrad.jit`` trace: ``jnp.full``, part of the program)."""
    if _storage.current() is not None:  # inside a funcgrad.jit trace: part of the program
        return jnp.full(shape, fill, dtype)
    return jax.device_put(np.full(shape, fill, dtype))


def pre_transforms(h: dict, static_maximize: bool, l2: bool, dtype) -> list:
    """PyTorch's common prologue: negate the gradient if ``maximize``, then add L2 decay."""
    parts = []
    if static_maximize:
        parts.append(optax.scale(-1.0))
    if l2:
        parts.append(optax.add_decayed_weights(scalar(h["weight_decay"], dtype)))
    return parts


def decoupled_decay(h: dict, dtype) -> optax.GradientTransformation:
    """AdamW-style decay ``p *= 1 - lr * wd`` written as the update term ``-lr * wd * p``."""
    return optax.add_decayed_weights(scalar(-f64(h["lr"]) * f64(h["weight_decay"]), dtype))
