"""The jit bridge: an unmodified PyTorch-style step as one XLA program (``funcgrad.jit``).

(Module named ``_jit`` so that importing it can never shadow the ``funcgrad.jit`` function.)

Design note — the phases of a call:

1. **Discover** (``_walk``, only when the cached layout is invalid). State is every Tensor
   storage cell reachable from the step's arguments and from what the function captures
   (closure cells, the globals its code names, recursively through Modules, Optimizers,
   containers and object ``__dict__``s), the ``.grad`` slots of those tensors, every
   ``Generator`` key (the global RNG always), and the numeric hyperparameters of optimizer
   param groups that the optimizer reads through ``_lift.hyper`` (learned: a read of a key
   not lifted yet aborts the trace and it is traced again with the key lifted). Tensors that
   are arguments are *inputs*: read-only unless the step writes them.
2. **Validate** (every call, C-speed ``map`` comparisons): the cached layout still holds if
   no module ``__dict__`` changed since discovery (one global counter, ``_STRUCTURE``, bumped
   by ``Module.__setattr__``/``__delattr__``: covers ``training`` and other attributes), every
   state tensor has the same cell, every grad slot the same object, and every other watched
   container (``_parameters``/``_buffers``/``_modules`` dicts, optimizer state dicts and
   lists) the same values. Otherwise: rediscover. Entries are found per layout by the inputs'
   (tree, shapes/dtypes) only.
3. **Trace** (once per layout × input shapes/dtypes/static args): ``jax.make_jaxpr`` of a
   pure function ``(state, hypers, inputs) -> (changed state, new grads, new tensors,
   outputs)`` that swaps tracers into the cells, runs the user function, reads the cells
   back and *always* restores the concrete values (so an exception leaves no tracer behind).
   Arrays captured as constants are checked: a pre-existing Tensor cell read but not
   discovered is lifted and the step traced again (it is never silently frozen).
4. **Run**: ``jax.jit`` of the jaxpr without the inputs it never reads (a ``.grad`` that
   ``zero_grad()`` clears before ``backward()``, an unused RNG key: only written, so not
   passed), donating exactly the state buffers it overwrites; the
   new arrays are written into the cells (views and ``detach()``-ed aliases see them), grad
   slots set as the trace left them, version counters advanced as eagerly.

Differences from eager (documented in ``jit``'s docstring): Python side effects happen at
trace time only; tensors returned from the step are detached (no ``grad_fn``); a ``.grad``
rebound inside the step reuses the previous ``.grad`` object when there was one.
"""

from __future__ import annotations

import functools
import gc
import itertools
import operator
import types
import threading
import warnings
from collections import deque
from typing import Any, Callable

import jax
import jax.numpy as jnp
import numpy as np
from jax.extend.core import ClosedJaxpr, jaxpr_as_fun

from . import _lift, _random
from . import _tensor as _tensor_mod
from ._tensor import Tensor, _Cell

_Tracer = jax.core.Tracer
_GEN = itertools.count(1 << 48, 1 << 32)  # unique storage generations (never reached eagerly)
_get_cell = Tensor._cell.__get__
_get_grad = operator.attrgetter("_grad")
_set_cell_value = _Cell.value.__set__
_get_cell_value = _Cell.value.__get__
_set_cell_gen = _Cell.gen.__set__
_ORIG_SET_VALUE = Tensor._set_value
_SCALARS = (bool, int, float, complex, str, bytes, type(None))
_LIBS = ("jax", "jaxlib", "numpy", "optax", "funcgrad", "builtins", "functools", "typing",
         "collections", "abc", "torch", "tqdm", "warnings", "math")
_MAX_OBJ_DEPTH = 4
_CALL_LOCK = threading.RLock()  # see CompiledFunction.__call__
# bumped by Module.__setattr__/__delattr__ when a module's own __dict__ changes: cached layouts
# check this one counter instead of comparing every module __dict__ value on every call
_STRUCTURE = [0]


def structure_changed() -> None:
    """Tell compiled steps that a module attribute changed (their cached layouts rediscover)."""
    _STRUCTURE[0] += 1


class _TracedCell(_Cell):
    """The class of storage cells created while a step is traced (told apart from older ones)."""

    __slots__ = ()


# ---- 1. discovery ------------------------------------------------------------------------------
def _is_lib(obj) -> bool:
    mod = getattr(obj, "__module__", None) or ""
    return mod.split(".")[0] in _LIBS and not mod.startswith("funcgrad.examples")


def _is_module(obj) -> bool:
    d = getattr(obj, "__dict__", None)
    return d is not None and "_parameters" in d and "_modules" in d


def _is_optimizer(obj) -> bool:
    d = getattr(obj, "__dict__", None)
    return d is not None and "param_groups" in d and "state" in d


class _Walk:
    """One traversal of the object graph from the roots, collecting state and watch lists."""

    def __init__(self, parents: bool = False):
        self.tensors: dict[int, Tensor] = {}
        self.generators: dict[int, Any] = {}
        self.groups: dict[int, dict] = {}
        self.watch_dicts: list = []
        self.watch_seqs: list = []
        self.seen: set = set()
        self.parents = {} if parents else None
        self._hit: set = set()
        self.covered: set = set()  # ids of module __dicts (validated by _STRUCTURE instead)

    def visit(self, obj, depth: int = 0, parent=None) -> bool:
        """Visit ``obj``; True if state was found under it (then its container is watched)."""
        if isinstance(obj, Tensor):
            if self.parents is not None:
                self.parents.setdefault(id(obj), (obj, parent))
            if id(obj) not in self.tensors:
                self.tensors[id(obj)] = obj
                g = obj._grad
                if g is not None:
                    self.visit(g, depth, (obj, "_grad"))
                vi = obj._viewinfo
                if vi is not None:
                    self.visit(vi.base, depth)
            return True
        if isinstance(obj, _SCALARS) or isinstance(obj, (jax.Array, np.ndarray, np.generic)):
            return False
        oid = id(obj)
        if oid in self.seen:
            return oid in self._hit
        self.seen.add(oid)
        found = self._visit(obj, depth)
        if found:
            self._hit.add(oid)
        return found

    def _visit(self, obj, depth) -> bool:
        if isinstance(obj, _random.Generator):
            self.generators[id(obj)] = obj
            return True
        if isinstance(obj, (types.ModuleType, type)) or callable(obj) and isinstance(
                obj, (types.BuiltinFunctionType, types.BuiltinMethodType)):
            return False
        if isinstance(obj, dict):
            force, depth = depth == -1, max(depth, 0)  # -1: a module's own __dict__
            found = False
            for k, v in list(obj.items()):
                if isinstance(k, Tensor):
                    found |= self.visit(k, depth)
                found |= self.visit(v, depth, (obj, k))
            if found or force:
                self.watch_dicts.append(obj)
            return found
        if isinstance(obj, (list, tuple, set, frozenset, deque)):
            found = False
            for i, v in enumerate(list(obj)):
                found |= self.visit(v, depth, (obj, i))
            if found and not isinstance(obj, (set, frozenset)):
                self.watch_seqs.append(obj)
            return found
        if isinstance(obj, types.FunctionType):
            return self._visit_function(obj, depth)
        if isinstance(obj, types.MethodType):
            return self.visit(obj.__self__, depth) | self.visit(obj.__func__, depth)
        if isinstance(obj, functools.partial):
            return (self.visit(obj.func, depth) | self.visit(obj.args, depth)
                    | self.visit(obj.keywords, depth))
        if isinstance(obj, _CompiledModule):
            return self.visit(obj._module, depth)
        if isinstance(obj, CompiledFunction):
            return self.visit(obj._fn, depth)
        d = getattr(obj, "__dict__", None)
        if not isinstance(d, dict):
            return False
        if _is_optimizer(obj):
            return self._visit_optimizer(obj, d, depth)
        if _is_module(obj):
            self.covered.add(id(d))
            self.visit(d, -1)  # modules: watched always (their `training` flag is trace config)
            return True
        if depth >= _MAX_OBJ_DEPTH or _is_lib(type(obj)):
            return False
        return self.visit(d, depth + 1)

    def _visit_function(self, fn, depth) -> bool:
        if depth >= _MAX_OBJ_DEPTH or depth and _is_lib(fn):  # the step itself: always
            return False
        found = False
        for c in fn.__closure__ or ():
            try:
                found |= self.visit(c.cell_contents, depth + 1)
            except ValueError:  # empty cell
                pass
        g = fn.__globals__
        for name in _code_names(fn.__code__):
            if name in g:
                found |= self.visit(g[name], depth + 1)
        for v in fn.__defaults__ or ():
            found |= self.visit(v, depth + 1)
        return found

    def _visit_optimizer(self, opt, d, depth) -> bool:
        for g in d["param_groups"]:
            self.groups[id(g)] = g
        found = self.visit(d["state"], depth)
        for g in d["param_groups"]:
            found |= self.visit(g["params"], depth)
        self.watch_seqs.append(d["param_groups"])
        return found



@functools.lru_cache(maxsize=None)
def _code_names(code) -> tuple:
    names = list(code.co_names)
    for c in code.co_consts:
        if isinstance(c, types.CodeType):
            names.extend(_code_names(c))
    return tuple(dict.fromkeys(names))


def _walk(roots, parents: bool = False) -> _Walk:
    w = _Walk(parents)
    for r in roots:
        w.visit(r)
    return w


# ---- 2. the cached layout --------------------------------------------------------------------
class _Layout:
    """The flattened state of one object-graph structure, and its cheap validity check."""

    def __init__(self, walk: _Walk, input_ids: set, extra_cells: list, lifted_keys: set):
        # tensor arguments found from the other roots (e.g. in an optimizer) are state too
        tensors = list(walk.tensors.values())
        self.tensors = tensors
        self.tcells = [t._cell for t in tensors]
        cells, seen = [], set()
        for c in self.tcells + [g._cell for g in walk.generators.values()] + extra_cells:
            if id(c) not in seen:
                seen.add(id(c))
                cells.append(c)
        self.cells = cells
        self.cell_index = {id(c): i for i, c in enumerate(cells)}
        self.leaves = [t for t in tensors if t._requires_grad]
        self.grad_ids = [id(t._grad) for t in self.leaves]
        self.struct_gen = _STRUCTURE[0]
        self.fast: dict = {}  # (input tree, leaf keys) -> _Entry, for this layout
        # module __dicts are covered by the structure counter; their _parameters/_buffers/
        # _modules dicts (written directly by containers and register_*) stay watched
        self.watch_dicts = [d for d in walk.watch_dicts if id(d) not in walk.covered]
        self.watch_seqs = walk.watch_seqs
        self.watch_ids = self._ids()
        # optimizer hyperparameters: lifted (traced inputs) or static (part of the key)
        self.hyper_slots, static = [], []
        for g in walk.groups.values():
            for k, v in g.items():
                if k == "params":
                    continue
                if k in lifted_keys and _lift.is_liftable(v):
                    self.hyper_slots.append((g, k, type(v) if not isinstance(v, (tuple, list))
                                             else (type(v), len(v))))
                else:
                    static.append((g, k))
        self.static_slots = static
        self.static_ids = [id(g[k]) for g, k in static]
        scalars = tuple(_scalar_key(v) for d in walk.watch_dicts for v in d.values()
                        if isinstance(v, _SCALARS))
        self.key = (tuple(map(id, cells)), tuple(g is None for g in map(_get_grad, self.leaves)),
                    tuple(_scalar_key(g[k]) for g, k in static), scalars,
                    tuple(t for _, _, t in self.hyper_slots))

    def _ids(self):
        return list(map(id, itertools.chain(
            itertools.chain.from_iterable(map(dict.values, self.watch_dicts)),
            itertools.chain.from_iterable(self.watch_seqs))))

    def valid(self) -> bool:
        return (_STRUCTURE[0] == self.struct_gen
                and list(map(_get_cell, self.tensors)) == self.tcells
                and list(map(id, map(_get_grad, self.leaves))) == self.grad_ids
                and self._ids() == self.watch_ids
                and [id(g[k]) for g, k in self.static_slots] == self.static_ids)

    def hyper_values(self) -> list:
        """The lifted hyperparameters, flat (a tuple such as ``betas`` gives one per item)."""
        out = []
        for g, k, _ in self.hyper_slots:
            v = g[k]
            if isinstance(v, (tuple, list)):
                out.extend(map(float, v))
            else:
                out.append(float(v))
        return out


def _scalar_key(v):
    return (type(v), v) if not isinstance(v, float) or v == v else (float, "nan")


# ---- 3. tracing --------------------------------------------------------------------------------
class _Entry:
    """One compiled program and how to write its results back into the Python objects."""

    __slots__ = ("fn", "changed", "grad_reuse", "grad_none", "grad_new", "grad_objs", "new_cells",
                 "new_tensors", "inputs_written", "versions", "out_tree", "out_kinds", "n_changed",
                 "one_shot", "in_cells", "hyp_idx", "inp_idx")


def _flatten_args(args, kwargs):
    leaves, tree = jax.tree.flatten((args, kwargs), is_leaf=lambda x: isinstance(x, Tensor))
    return leaves, tree


_FAST_LEAVES = (Tensor, jax.Array, np.ndarray, bool, int, float, complex, str, bytes)


def _is_fast_leaf(x) -> bool:
    return isinstance(x, _FAST_LEAVES)


def _leaf_key(x):
    if isinstance(x, Tensor):
        v = x._value
        return ("t", v.shape, v.dtype, x._requires_grad, x._grad is None)
    if isinstance(x, (jax.Array, np.ndarray)):
        return ("a", x.shape, x.dtype)
    if isinstance(x, _SCALARS):
        return ("s",) + _scalar_key(x)
    return ("o", id(x))


class CompiledFunction:
    """A step compiled by :func:`jit`; call it like the original function.

    Attributes:
        num_traces: how many times the step was traced (each trace compiles a program).
        retrace_reasons: why each trace happened (``"first call"``, ``"new input shapes"``…).
    """

    def __init__(self, fn: Callable, warn_after: int = 8):
        self._fn = fn
        self._warn_after = warn_after
        self._layout: _Layout | None = None
        self._layout_args: list = []
        self._entries: dict = {}
        self._lifted_keys: set = {"lr"}
        self._extra_cells: list = []
        self._trees: dict = {}
        self.num_traces = 0
        self.retrace_reasons: list[str] = []
        functools.update_wrapper(self, fn, updated=())

    def __repr__(self) -> str:
        return f"<funcgrad.jit({getattr(self._fn, '__qualname__', self._fn)}), {self.num_traces} traces>"

    def __get__(self, obj, objtype=None):
        return self if obj is None else functools.partial(self, obj)

    def reset(self) -> None:
        """Forget the cached layout and programs (the next call rediscovers and retraces)."""
        self._layout, self._entries = None, {}
        structure_changed()

    # -- the call ---------------------------------------------------------------------------
    def __call__(self, *args, **kwargs):
        # one call at a time, process-wide: tracing swaps tracers into shared cells (the
        # global RNG key, Tensor._set_value, the _Cell class) that another thread's trace or
        # run would otherwise read or restore wrongly; running holds it only for the dispatch
        with _CALL_LOCK:
            return self._call(args, kwargs)

    def _call(self, args, kwargs):
        if not kwargs and all(map(_is_fast_leaf, args)):  # the common f(x, y): no tree walk
            leaves, tree = list(args), self._trees.get(len(args))
            if tree is None:
                tree = self._trees[len(args)] = _flatten_args(args, kwargs)[1]
        else:
            leaves, tree = _flatten_args(args, kwargs)
        objs = [x for x in leaves if not isinstance(x, (Tensor, jax.Array, np.ndarray) + _SCALARS)]
        layout = self._layout
        if layout is None or list(map(id, objs)) != self._layout_args or not layout.valid():
            layout = self._discover(leaves, objs)
        in_tensors = [x for x in leaves if isinstance(x, Tensor) and id(x._cell) not in layout.cell_index]
        small = (tree, tuple(map(_leaf_key, leaves)))
        entry = layout.fast.get(small)  # per layout: no hashing of the long layout key per call
        hyp = layout.hyper_values()
        if entry is None:
            key = (layout.key,) + small
            entry = self._entries.get(key)
            if entry is None:
                entry = self._trace(layout, args, kwargs, leaves, tree, in_tensors, hyp)
                if layout is not self._layout:  # the trace lifted more state: a new layout
                    layout = self._layout
                    in_tensors = [x for x in leaves if isinstance(x, Tensor)
                                  and id(x._cell) not in layout.cell_index]
                    hyp = layout.hyper_values()
                    key = (layout.key,) + small
            if not entry.one_shot:
                self._entries[key] = layout.fast[small] = entry
        return self._run(entry, layout, leaves, in_tensors, hyp)

    def _discover(self, leaves, objs) -> _Layout:
        w = _walk([self._fn, _random.default_generator] + objs)
        input_ids = {id(x) for x in leaves if isinstance(x, Tensor)}
        layout = _Layout(w, input_ids, self._extra_cells, self._lifted_keys)
        self._layout, self._layout_args = layout, list(map(id, objs))
        return layout

    def _run(self, e: _Entry, layout: _Layout, leaves, in_tensors, hyp):
        # only what the program reads goes in (e.g. not .grad slots that zero_grad() clears)
        state = list(map(_get_cell_value, e.in_cells))
        if e.hyp_idx is not None:
            hyp = [hyp[i] for i in e.hyp_idx]
        inputs = [t._value for t in in_tensors] + [x for x in leaves if isinstance(x, (jax.Array, np.ndarray))]
        if e.inp_idx is not None:
            inputs = [inputs[i] for i in e.inp_idx]
        outs = e.fn(*state, *hyp, *inputs)
        # ---- write back (the donated buffers are gone: every changed cell gets its new array)
        n = e.n_changed
        deque(map(_set_cell_value, e.changed, outs[:n]), 0)
        deque(map(_set_cell_gen, e.changed, itertools.repeat(next(_GEN), n)), 0)
        i = n
        for t in e.grad_none:
            t._grad = None
        for t, obj in e.grad_objs:
            t._grad = obj
        for t in e.grad_new:
            t._grad = Tensor._wrap(outs[i])
            i += 1
        for t in e.new_tensors:
            t._set_value(outs[i])
            i += 1
        for t in e.inputs_written:
            t._set_value(outs[i])
            t._ver[0] += 1
            i += 1
        for ver, d in e.versions:
            ver[0] += d
        res_it = iter(outs[i:])
        flat = []
        for k in e.out_kinds:
            if k == "t":
                flat.append(Tensor._wrap(next(res_it)))
            elif k == "a":
                flat.append(next(res_it))
            else:
                flat.append(k[1])
        return jax.tree.unflatten(e.out_tree, flat)

    # -- tracing --------------------------------------------------------------------------------
    def _trace(self, layout, args, kwargs, leaves, tree, in_tensors, hyp, _attempt=0) -> _Entry:
        reason = "first call" if not self.num_traces else "new input shapes/dtypes/static args or state structure"
        plan: dict = {}
        arr_pos = [i for i, x in enumerate(leaves) if isinstance(x, (jax.Array, np.ndarray))]
        fn = self._fn
        n_state, n_hyp = len(layout.cells), len(hyp)

        def pure(state, hypers, inputs):
            return _pure_body(fn, layout, plan, state, hypers, inputs, leaves, tree, in_tensors,
                              arr_pos, self._walk_roots(leaves))

        in_vals = [t._value for t in in_tensors] + [leaves[i] for i in arr_pos]
        state_vals = list(map(_get_cell_value, layout.cells))
        # storage writes to tensors that are not state (not discovered): recorded, undone, lifted
        written: dict = {}
        known = set(layout.cell_index) | {id(t._cell) for t in in_tensors}
        me = threading.get_ident()

        def recording_set_value(t, new, _orig=_ORIG_SET_VALUE):
            c = t._cell
            if type(c) is _Cell and id(c) not in known and id(c) not in written \
                    and threading.get_ident() == me:
                written[id(c)] = (c, c.value, c.gen)
            _orig(t, new)

        _tensor_mod._Cell = _TracedCell
        Tensor._set_value = recording_set_value
        try:
            closed = jax.make_jaxpr(pure)(state_vals, hyp, in_vals)
        except _lift.Relift as r:
            if _attempt > 8:
                raise
            self._lifted_keys.add(r.key)
            self._scrub(leaves)
            layout = self._discover(leaves, [x for x in leaves if not isinstance(
                x, (Tensor, jax.Array, np.ndarray) + _SCALARS)])
            return self._trace(layout, args, kwargs, leaves, tree,
                               [x for x in leaves if isinstance(x, Tensor)
                                and id(x._cell) not in layout.cell_index], layout.hyper_values(),
                               _attempt + 1)
        except BaseException:
            self._scrub(leaves)
            raise
        finally:
            _tensor_mod._Cell = _Cell
            Tensor._set_value = _ORIG_SET_VALUE
            for c, v, g in written.values():
                c.value, c.gen = v, g
        # arrays captured as constants: an older Tensor's storage read but not discovered?
        missed = _missed_cells(closed.consts, layout) + [c for c, _, _ in written.values()]
        if missed:
            if _attempt > 8:
                raise RuntimeError("funcgrad.jit: could not lift tensors read by the step")
            self._scrub(leaves)
            self._extra_cells.extend(missed)
            layout = self._discover(leaves, [x for x in leaves if not isinstance(
                x, (Tensor, jax.Array, np.ndarray) + _SCALARS)])
            return self._trace(layout, args, kwargs, leaves, tree,
                               [x for x in leaves if isinstance(x, Tensor)
                                and id(x._cell) not in layout.cell_index], layout.hyper_values(),
                               _attempt + 1)
        self.num_traces += 1
        self.retrace_reasons.append(reason)
        if self.num_traces >= self._warn_after and (self.num_traces & (self.num_traces - 1)) == 0:
            warnings.warn(
                f"funcgrad.jit: {getattr(fn, '__qualname__', fn)} has been traced "
                f"{self.num_traces} times: its input shapes/dtypes, Python-scalar arguments or "
                f"state structure (.grad None vs set, new optimizer state, module.train()/eval(), "
                f"non-lr hyperparameters) keep changing, and each trace compiles a new program. "
                f"Pad inputs to fixed shapes or move the changing part out of the step.",
                UserWarning, stacklevel=3)
        e = plan["entry"]
        # the jaxpr's constants become leading (non-donated) arguments: jit of a closed jaxpr
        # with both constants and donation miscounts its arguments
        consts = list(closed.consts)
        if any(isinstance(c, _Tracer) for c in consts):
            raise RuntimeError("funcgrad.jit: the step captured a tracer of an earlier trace (a "
                               "cache filled while tracing?); please report this as a bug")
        jx = closed.jaxpr
        # drop the inputs the program never reads (state only written, e.g. a .grad that
        # zero_grad() sets to None before backward() makes a new one; an unused RNG key)
        used = {id(v) for eqn in jx.eqns for v in eqn.invars} | {id(v) for v in jx.outvars}
        keep = [id(v) in used for v in jx.invars]
        n_in = len(jx.invars) - n_state - n_hyp
        e.in_cells = [c for c, k in zip(layout.cells, keep) if k]
        e.hyp_idx = None if all(keep[n_state:n_state + n_hyp]) else [
            i for i in range(n_hyp) if keep[n_state + i]]
        e.inp_idx = None if all(keep[n_state + n_hyp:]) else [
            i for i in range(n_in) if keep[n_state + n_hyp + i]]
        new_pos = {id(c): i for i, c in enumerate(e.in_cells)}
        open_fn = jaxpr_as_fun(ClosedJaxpr(jx.replace(constvars=[], invars=list(jx.constvars) + [
            v for v, k in zip(jx.invars, keep) if k], debug_info=None), []))
        donate = tuple(len(consts) + new_pos[id(c)] for c in e.changed if id(c) in new_pos)
        # state placed on several devices (funcgrad.parallel) keeps its sharding across steps
        out_sh = _state_out_shardings(layout, e, state_vals, len(jx.outvars))
        jitted = jax.jit(open_fn, donate_argnums=donate,
                         **({} if out_sh is None else {"out_shardings": out_sh}))
        e.fn = functools.partial(jitted, *consts) if consts else jitted
        return e

    def _walk_roots(self, leaves):
        return [self._fn, _random.default_generator] + [
            x for x in leaves if not isinstance(x, (jax.Array, np.ndarray) + _SCALARS)]

    def _scrub(self, leaves) -> None:
        """After a failed trace: drop state objects created during it (they hold tracers)."""
        structure_changed()  # it may pop entries from module __dicts
        w = _walk(self._walk_roots(leaves), parents=True)
        for tid, (t, parent) in list(w.parents.items()):
            if not isinstance(t._cell.value, _Tracer):
                continue
            if parent is None:
                t._cell.value = jnp.zeros(t._cell.value.shape, t._cell.value.dtype)
                continue
            box, k = parent
            if isinstance(box, Tensor) and k == "_grad":
                box._grad = None
            elif isinstance(box, dict):
                box.pop(k, None)
            elif isinstance(box, list):
                box[:] = [x for x in box if x is not t]
            else:
                t._cell.value = jnp.zeros(t._cell.value.shape, t._cell.value.dtype)


def _state_out_shardings(layout, e, state_vals, n_out):
    """Pin each changed multi-device state cell's output to its input sharding (else: None)."""
    sh = []
    for c in e.changed:
        s = getattr(state_vals[layout.cell_index[id(c)]], "sharding", None)
        sh.append(s if s is not None and len(s.device_set) > 1 else None)
    if not any(s is not None for s in sh):
        return None  # single device: let jax choose, as before
    return sh + [None] * (n_out - len(sh))


def _missed_cells(consts, layout) -> list:
    """Storage cells of tensors that existed before the trace whose array became a constant."""
    out = []
    for c in consts:
        if not isinstance(c, jax.Array) or isinstance(c, _Tracer):
            continue
        for r in gc.get_referrers(c):
            if type(r) is _Cell and r.value is c and id(r) not in layout.cell_index:
                out.append(r)
    return out


def _pure_body(fn, layout, plan, state, hypers, inputs, leaves, tree, in_tensors, arr_pos, roots):
    """Run the user's step on tracers; fill ``plan['entry']``; always restore the objects."""
    cells = layout.cells
    saved = [(c.value, c.gen) for c in cells]
    gen = next(_GEN)
    grads0 = [t._grad for t in layout.leaves]
    in_saved = []
    in_leaves = [t for t in in_tensors if t._requires_grad]
    in_grads0 = [t._grad for t in in_leaves]
    ver0 = [(t, t._ver[0]) for t in layout.tensors]
    gfn0 = [(t, t._grad_fn, t._output_nr, t._requires_grad) for t in layout.tensors]
    ctx = _lift.TraceContext({}, set())
    it = iter(hypers)
    for g, k, kind in layout.hyper_slots:
        ctx.traced[(id(g), k)] = tuple(next(it) for _ in range(kind[1])) if isinstance(kind, tuple) \
            else next(it)
    ctx.lifted_keys = {k for _, k, _ in layout.hyper_slots}
    prev_ctx = getattr(_lift._local, "ctx", None)
    try:
        for c, v in zip(cells, state):
            c.value, c.gen = v, gen
        n_t = len(in_tensors)
        for t, v in zip(in_tensors, inputs[:n_t]):
            vi = t._viewinfo
            in_saved.append((t, t._cell, t._cell.value, t._cell.gen,
                             None if vi is None else (vi.cache, vi.gen)))
            if vi is None:
                t._cell.value, t._cell.gen = v, gen
            else:
                vi.cache, vi.gen = v, t._cell.gen
        call_leaves = list(leaves)
        for i, v in zip(arr_pos, inputs[n_t:]):
            call_leaves[i] = v
        a, kw = jax.tree.unflatten(tree, call_leaves)
        _lift._local.ctx = ctx
        out = fn(*a, **kw)
        _lift._local.ctx = prev_ctx
        return _collect(plan, layout, state, inputs, in_tensors, grads0, in_leaves, in_grads0,
                        ver0, out, roots)
    finally:
        _lift._local.ctx = prev_ctx
        for c, (v, g) in zip(cells, saved):
            c.value, c.gen = v, g
        for t, cell, v, g, vc in in_saved:
            cell.value, cell.gen = v, g
            if vc is not None:
                t._viewinfo.cache, t._viewinfo.gen = vc
        for t, g in zip(layout.leaves, grads0):
            t._grad = g
        for t, g in zip(in_leaves, in_grads0):
            t._grad = g
        for t, v in ver0:
            t._ver[0] = v
        for t, gf, nr, rg in gfn0:
            t._grad_fn, t._output_nr, t._requires_grad = gf, nr, rg


def _collect(plan, layout, state, inputs, in_tensors, grads0, in_leaves, in_grads0, ver0, out, roots):
    """Read the effects of the traced step into an ``_Entry`` and the flat traced outputs."""
    e = _Entry()
    cells = layout.cells
    changed, vals = [], []
    for c, v in zip(cells, state):
        if c.value is not v:
            changed.append(c)
            vals.append(c.value)
    e.grad_none, e.grad_objs, e.grad_new = [], [], []
    extra = []
    state_ids = layout.cell_index
    for t, g0 in list(zip(layout.leaves, grads0)) + list(zip(in_leaves, in_grads0)):
        g = t._grad
        if g is g0:
            continue
        if g is None:
            e.grad_none.append(t)
        elif id(g._cell) in state_ids and not isinstance(g._cell, _TracedCell):
            e.grad_objs.append((t, g))
        elif g0 is not None and id(g0._cell) in state_ids and g0._viewinfo is None:
            # a new .grad object: reuse the previous one's storage (cheaper than a new Tensor);
            # `t._grad = g0` at run time is a no-op (the layout checks .grad identities)
            c = g0._cell
            gv = g._value
            if gv.dtype != c.value.dtype or gv.shape != c.value.shape:
                e.grad_new.append(t)
                extra.append(gv)
                continue
            if c in changed:
                vals[changed.index(c)] = gv
            else:
                changed.append(c)
                vals.append(gv)
        else:
            e.grad_new.append(t)
            extra.append(g._value)
    # tensors created during the trace and still reachable (e.g. lazily created optimizer state)
    e.new_tensors = []
    in_cells = {id(t._cell) for t in in_tensors}
    w = _walk(roots)
    grad_new_ids = {id(t._grad) for t in itertools.chain(layout.leaves, in_leaves)}
    for t in w.tensors.values():
        if id(t._cell) in state_ids or id(t._cell) in in_cells or id(t) in grad_new_ids:
            continue
        if isinstance(t._cell.value, _Tracer):
            e.new_tensors.append(t)
            extra.append(t._value)
    e.one_shot = bool(e.new_tensors)
    e.inputs_written = []
    for t, v in zip(in_tensors, inputs):
        if t._value is not v:
            e.inputs_written.append(t)
            extra.append(t._value)
    e.versions = [(t._ver, t._ver[0] - v) for t, v in ver0 if t._ver[0] != v]
    e.changed, e.n_changed = changed, len(changed)
    # the user's return value
    flat, e.out_tree = jax.tree.flatten(out, is_leaf=lambda x: isinstance(x, Tensor))
    kinds, outs = [], []
    for x in flat:
        if isinstance(x, Tensor):
            kinds.append("t")
            outs.append(x._value)
        elif isinstance(x, (jax.Array, _Tracer)):
            kinds.append("a")
            outs.append(x)
        else:
            kinds.append(("c", x))
    e.out_kinds = kinds
    plan["entry"] = e
    # every output gets its own buffer: an array returned twice (or an input returned) would
    # otherwise be aliased, and a later call donating one alias would delete the other
    flat_out, seen = vals + extra + outs, {id(v) for v in state} | {id(v) for v in inputs}
    for i, v in enumerate(flat_out):
        if id(v) in seen:
            flat_out[i] = jnp.copy(v)
        seen.add(id(v))
    return flat_out


# ---- public API ----------------------------------------------------------------------------------
def jit(fn: Callable | None = None, *, warn_after: int = 8):
    """Compile a PyTorch-style step (forward, ``backward``, ``optimizer.step``) into one XLA program.

    State is found without a variable list: parameters, buffers, ``.grad``, optimizer state
    and hyperparameters, and the global RNG key reachable from the arguments and from what
    ``fn`` captures (closures, globals) are fed to the program and written back, so after each
    call every object looks as if the step had run eagerly. Traces are cached per input
    shapes/dtypes, Python-scalar arguments and state structure; ``step.num_traces`` counts them.

    Inside the step: ``.item()``, ``.tolist()``, ``.numpy()``, ``if tensor:`` and boolean-mask
    indexing raise :class:`funcgrad._errors.TracedValueError` naming the line (use
    ``funcgrad.where``/``funcgrad.cond`` or move the line out); ``print(tensor)`` prints
    ``tensor(<traced float32[3]>)``; Python side effects run once per trace; returned tensors
    are detached from the step's graph.

    Args:
        fn: the step. Tensor arguments are inputs (traced per shape/dtype); Python scalars
            are static; other objects (modules, optimizers) are searched for state.
        warn_after: warn when the step has been traced this many times (then at doublings).

    >>> import funcgrad
    >>> w = funcgrad.ones(3, requires_grad=True)
    >>> @funcgrad.jit
    ... def step(x):
    ...     loss = (w * x).sum()
    ...     loss.backward()
    ...     with funcgrad.no_grad():
    ...         w.sub_(0.5 * w.grad)
    ...         w.grad = None
    ...     return loss
    >>> step(funcgrad.ones(3)), w
    (tensor(3.), tensor([0.5000, 0.5000, 0.5000], requires_grad=True))
    """
    if fn is None:
        return functools.partial(jit, warn_after=warn_after)
    return CompiledFunction(fn, warn_after)


def compile(model_or_fn=None, **kwargs):  # noqa: A001  (funcgrad.compile, as torch.compile)
    """``compile(fn)`` is :func:`jit`; ``compile(module)`` returns a module whose forward is compiled.

    The compiled module shares the original's parameters and buffers (training continues
    eagerly or compiled); its forward is one XLA program and, when gradients are needed, one
    recorded autograd node whose backward is the jitted vjp of that program
    (``CompiledFunctionBackward``).

    >>> import funcgrad
    >>> from funcgrad import nn
    >>> lin = nn.Linear(2, 1)
    >>> fast = funcgrad.compile(lin)
    >>> bool((fast(funcgrad.ones(1, 2)) == lin(funcgrad.ones(1, 2))).all())
    True
    """
    if model_or_fn is None:
        return functools.partial(compile, **kwargs)
    kwargs.pop("mode", None), kwargs.pop("fullgraph", None), kwargs.pop("dynamic", None)
    kwargs.pop("backend", None)
    if _is_module(model_or_fn):
        return _CompiledModule(model_or_fn)
    return jit(model_or_fn, **kwargs)


class _CompiledModule:
    """What ``funcgrad.compile(module)`` returns; attribute access reaches the module."""

    def __init__(self, module):
        object.__setattr__(self, "_module", module)
        object.__setattr__(self, "_fwd", jit(module.__call__))
        object.__setattr__(self, "_diff", {})

    def __getattr__(self, name):
        return getattr(self._module, name)

    def __setattr__(self, name, value):
        setattr(self._module, name, value)

    def __repr__(self) -> str:
        return f"Compiled({self._module!r})"

    def __call__(self, *args, **kwargs):
        from .autograd import grad_mode
        if not (grad_mode._state.enabled and any(p._requires_grad for p in self._module.parameters())):
            return self._fwd(*args, **kwargs)
        with _CALL_LOCK:  # it swaps values into the module's cells while tracing, as jit does
            return _differentiable_forward(self, args, kwargs)


def _differentiable_forward(cm, args, kwargs):
    """The module's forward as one recorded op: forward = jitted program, backward = its vjp."""
    from . import _dispatch
    module = cm._module
    leaves, tree = _flatten_args(args, kwargs)
    w = _walk([module, _random.default_generator])
    params = [t for t in w.tensors.values() if t._requires_grad and t._grad_fn is None
              and t._viewinfo is None]
    pcells = {id(p._cell) for p in params}
    others, seen = [], set(pcells)
    for c in [t._cell for t in w.tensors.values()] + [g._cell for g in w.generators.values()]:
        if id(c) not in seen:
            seen.add(id(c))
            others.append(c)
    tpos = [i for i, x in enumerate(leaves) if isinstance(x, (Tensor, jax.Array))]
    key = (tuple(map(id, (p._cell for p in params))), tuple(map(id, others)), tree,
           tuple(map(_leaf_key, leaves)), module.training)
    op = cm._diff.get(key)
    if op is None:
        n_p, n_o = len(params), len(others)
        info = {}

        def fn(*arrays):
            cells = [p._cell for p in params] + others
            saved = [(c.value, c.gen) for c in cells]
            gen = next(_GEN)
            try:
                for c, v in zip(cells, arrays[:n_p + n_o]):
                    c.value, c.gen = v, gen
                call = list(leaves)
                for i, v in zip(tpos, arrays[n_p + n_o:]):
                    call[i] = Tensor._wrap(v)
                a, kw = jax.tree.unflatten(tree, call)
                from .autograd.grad_mode import no_grad
                with no_grad():
                    out = module(*a, **kw)
                flat, info["tree"] = jax.tree.flatten(out, is_leaf=lambda x: isinstance(x, Tensor))
                info["n"] = len(flat)
                return tuple(x._value if isinstance(x, Tensor) else x for x in flat) + tuple(
                    c.value for c in others)
            finally:
                for c, (v, g) in zip(cells, saved):
                    c.value, c.gen = v, g

        vals = [p._value for p in params] + [c.value for c in others] + [
            leaves[i]._value if isinstance(leaves[i], Tensor) else leaves[i] for i in tpos]
        jax.eval_shape(fn, *vals)
        n_out = info["n"]
        op = _dispatch.Op("compiled_forward", fn, "CompiledFunctionBackward",
                          diff=tuple(range(n_p)) + tuple(range(n_p + n_o, n_p + n_o + len(tpos))),
                          diff_outputs=tuple(range(n_out)))
        entry = cm._diff[key] = (op, n_out, info["tree"], others)
    else:
        entry = op
    op, n_out, out_tree, others = entry
    ins = [leaves[i] if isinstance(leaves[i], Tensor) else Tensor._wrap(leaves[i]) for i in tpos]
    res = _dispatch.apply(op, *params, *[Tensor._wrap(c.value) for c in others], *ins)
    g = next(_GEN)
    for c, r in zip(others, res[n_out:]):
        c.value, c.gen = r._value, g
    return jax.tree.unflatten(out_tree, list(res[:n_out]))


def cond(pred, true_fn: Callable, false_fn: Callable, *operands):
    """``true_fn(*operands)`` if ``pred`` else ``false_fn(*operands)``, also inside a compiled step.

    Eagerly (a concrete ``pred``) only the chosen branch runs. While tracing both branches run
    and their outputs are selected with ``funcgrad.where`` (differentiable; both branches must
    return tensors of the same shapes).

    >>> import funcgrad
    >>> x = funcgrad.tensor([1.0, -2.0])
    >>> funcgrad.cond(x.sum() > 0, lambda v: v * 2, lambda v: -v, x)
    tensor([-1.,  2.])
    """
    from . import _ops  # noqa: F401
    from ._ops.pointwise import where
    p = pred._value if isinstance(pred, Tensor) else pred
    if not isinstance(p, _Tracer):
        return true_fn(*operands) if bool(np.asarray(p)) else false_fn(*operands)
    a, b = true_fn(*operands), false_fn(*operands)
    pt = pred if isinstance(pred, Tensor) else Tensor._wrap(jnp.asarray(p))
    is_t = lambda x: isinstance(x, Tensor)  # noqa: E731
    return jax.tree.map(lambda x, y: where(pt, x, y), a, b, is_leaf=is_t)

