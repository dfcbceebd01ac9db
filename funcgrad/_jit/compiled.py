"""Phases 2 and 4 of a call — validate and run: ``CompiledFunction``, what :func:`jit` returns.

A call flattens its arguments, checks the cached layout (rediscovering when it is stale),
finds the program compiled for these inputs (tracing one when there is none), runs it and
writes the new arrays back into the Python objects. ``lower`` stops before running.
"""

from __future__ import annotations

import functools
import itertools
import sys
import threading
from typing import Callable

import jax
import jax.numpy as jnp
import numpy as np

from .. import _cache, _meta, _random
from ..amp.autocast_mode import state_key as _autocast_key
from .._device import put_like
from .._storage import ACTIVE as _FRAMES  # binding frames entered (all threads)
from .._tensor import Tensor
from . import trace as _trace_mod
from .common import (_GEN, NESTING, _flatten_args, _get_cell_value, _is_fast_leaf,
                     _leaf_key, _objects, structure_changed)
from .discover import _WRAPPERS, _Layout, _walk
from .trace import _Entry


_OWNED_REFS = 3  # sys.getrefcount of a state array held only by its cell (+ list, + argument)
_getrefcount = sys.getrefcount
_copy = jnp.copy  # a fresh buffer (a jitted identity may hand back its input)
_LEAF_TREE = jax.tree.structure(0)


class _RunPlan:
    """What ``_run`` precomputes once per program (``_Entry.run``)."""

    __slots__ = ("donated", "grads", "single")

    def __init__(self, e: _Entry):
        changed = {id(c) for c in e.changed}
        # positions in the state list of the plain cells whose buffers the program donates
        self.donated = [i for i, c in enumerate(e.in_cells) if id(c) in changed]
        self.grads = bool(e.grad_none or e.grad_objs or e.grad_new)
        self.single = e.out_kinds == ["t"] and e.out_tree == _LEAF_TREE


def _run_plan(e: _Entry) -> _RunPlan:
    run = getattr(e, "run", None)
    if run is None:
        run = e.run = _RunPlan(e)
    return run


class CompiledFunction:
    """A step compiled by :func:`jit`; call it like the original function.

    Attributes:
        num_traces: how many programs the step was traced into (each compiles once; a trace
            that only gives a program already compiled, as the second call's after
            ``trace.prime``, is not counted).
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
        self._extra_roots: list = []  # tensors that require grad the step read but discovery missed
        self._trees: dict = {}
        self._static: dict = {}  # input tree -> {leaf position: what}: host-data tensor arguments
        self._warned_attrs: set = set()  # Python attributes a trace changed (warned once)
        self._warned_evict: list = []  # a program was evicted (warned once)
        self._last_trace = None  # (layout, tree, leaf keys, static values, state views) of the last trace
        self._py_last = None  # the Python attributes before the last trace (trace._py_snapshot)
        self._primed = None  # what trace.prime made before a first call, until the next trace
        self._lock = threading.RLock()  # see __call__
        self._hyp_last = None  # (hyperparameter values, sharding, their arrays there): _device_hyp
        self.num_traces = 0
        self.retrace_reasons: list[str] = []
        functools.update_wrapper(self, fn, updated=())

    def __repr__(self) -> str:
        return f"<funcgrad.jit({getattr(self._fn, '__qualname__', self._fn)}), {self.num_traces} traces>"

    def __get__(self, obj, objtype=None):
        return self if obj is None else functools.partial(self, obj)

    def reset(self) -> None:
        """Forget the cached layout and programs (the next call rediscovers and retraces)."""
        self._layout, self._entries, self._primed = None, {}, None
        structure_changed()

    # -- the call ---------------------------------------------------------------------------
    def __call__(self, *args, **kwargs):
        if _FRAMES[0] and NESTING.depth:
            # called while another compiled step (or module) is traced on this thread: inlined,
            # as torch.compile inside torch.compile. The function runs in the outer trace, whose
            # program then reads and writes its state (the outer's discovery walks ``_fn``), and
            # this step's own layout and programs are neither used nor changed
            return self._fn(*args, **kwargs)
        # one call of this step at a time (its caches and layout are per step); other steps
        # run concurrently on other threads: a trace binds its tracers in this thread's frame
        # (funcgrad._storage.Frame), so no other thread ever sees them
        if _meta_args(args, kwargs):
            # meta tensors hold no data: the step runs eagerly, shapes only, as torch.compile's
            # result on meta inputs is eager's (funcgrad/_meta.py)
            return self._fn(*args, **kwargs)
        with self._lock:
            try:
                return self._call(args, kwargs)
            except TypeError as e:
                if "MetaArray" not in str(e):
                    raise
                raise NotImplementedError(_meta.UNSUPPORTED_MSG.format(
                    "a compiled step whose state (parameters, buffers) is on the meta device but "
                    "not its tensor arguments")) from e

    def _call(self, args, kwargs):
        if not kwargs and all(map(_is_fast_leaf, args)):  # the common f(x, y): no tree walk
            leaves, tree = list(args), self._trees.get(len(args))
            if tree is None:
                tree = self._trees[len(args)] = _flatten_args(args, kwargs)[1]
            objs = []  # (such leaves are never objects to search for state)
        else:
            leaves, tree = _flatten_args(args, kwargs)
            objs = _objects(leaves)
        layout = self._layout
        if layout is None or list(map(id, objs)) != self._layout_args or not layout.valid():
            layout = self._discover(leaves, objs)
        hyp = layout.hyper_values()
        if layout.nonzero(hyp) != layout.hyper_nonzero:  # e.g. momentum 0 -> 0.9: new recipe
            layout = self._discover(leaves, objs)
            hyp = layout.hyper_values()
        in_tensors = [x for x in leaves if isinstance(x, Tensor) and id(x._cell) not in layout.cell_index]
        small = _call_key(tree, leaves, layout, len(in_tensors))
        if self._static:
            small = self._with_static(small, tree, leaves)
        entry, undo = layout.fast.get(small), None  # per layout: no hashing of the long layout key per call
        if entry is None:
            entry = self._lookup(layout, small, in_tensors)  # (trace.lookup)
            if entry is None:
                entry = self._trace(layout, args, kwargs, leaves, tree, in_tensors, hyp)
                primed = self._prime(layout, args, kwargs, leaves, tree, entry)
                entry.created = ()
                if primed is not None:  # the state the step makes was made: its first update
                    _, entry, undo = primed
                if self._static:  # the trace may have made an argument static
                    small = self._with_static(small[:3], tree, leaves)
                if layout is not self._layout:  # the trace lifted more state: a new layout
                    layout = self._layout
                    in_tensors = [x for x in leaves if isinstance(x, Tensor)
                                  and id(x._cell) not in layout.cell_index]
                    hyp = layout.hyper_values()
                    small = _call_key(tree, leaves, layout, len(in_tensors)) + small[3:]
                if not entry.one_shot:
                    key = self._store(layout, small, entry, in_tensors)
                    if len(self._entries) > _cache.MAX_PROGRAMS:
                        self._evict(key)
                else:  # the state it creates is found by the next call's discovery, then cached
                    self._layout = None
        entry.tick = t = next(_TICK)  # (least recently used programs are evicted)
        if entry.tpl is not None:
            entry.tpl.tick = t
        if undo is None:
            out = self._run(entry, layout, leaves, in_tensors, hyp)
        else:
            try:
                out = self._run(entry, layout, leaves, in_tensors, hyp)
            except BaseException:
                self._layout = self._primed = None
                undo()
                raise
        if _cache._sweep["due"]:
            # a safe point (the program has compiled, no funcgrad trace is running here: a step
            # called inside one is inlined): the eager sweep's safe point, backward(), runs
            # inside the trace
            _cache.maybe_sweep()
        return out

    def _with_static(self, small, tree, leaves):
        """``small`` with the values of the static tensor arguments (host data such as
        ``pack_padded_sequence``'s lengths: each distinct value is its own program)."""
        pos = self._static.get(tree)
        if not pos:
            return small
        return small + (tuple(_static_value(leaves[i]) for i in pos),)

    def _evict(self, new_key) -> None:
        """Drop the least recently used program (bounded memory when input shapes keep changing)."""
        # (a value is an _Entry or a _Template shared by a structure's layouts: both carry ticks)
        old = min((k for k in self._entries if k != new_key), key=lambda k: self._entries[k].tick)
        gone = self._entries.pop(old)
        if self._layout is not None:  # the current layout's fast path must not keep it alive
            fast = self._layout.fast
            for k in [k for k, e in fast.items() if e is gone or e.tpl is gone]:
                del fast[k]
        name = getattr(self._fn, "__qualname__", repr(self._fn))
        _cache.warn_evicted(_cache.MAX_PROGRAMS, f"programs of the compiled step {name}",
                            f"the one for inputs {_inputs(new_key)}", f"the one for {_inputs(old)}",
                            self._warned_evict, stacklevel=5)

    def _discover(self, leaves, objs) -> _Layout:
        w = _walk([self._fn, _random.default_generator] + self._extra_roots + objs)
        input_ids = {id(x) for x in leaves if isinstance(x, Tensor)}
        layout = _Layout(w, input_ids, self._extra_cells, self._lifted_keys)
        self._layout, self._layout_args = layout, list(map(id, objs))
        return layout

    @staticmethod
    def _program_inputs(e: _Entry, leaves, in_tensors, hyp):
        """The program's arguments, as three lists: state, hyperparameters, inputs."""
        run = _run_plan(e)
        # only what the program reads goes in (e.g. not .grad slots that zero_grad() clears)
        state = list(map(_get_cell_value, e.in_cells))
        for i in run.donated:
            if _getrefcount(state[i]) != _OWNED_REFS:
                # something besides its cell holds the array (``a = p.jax()``, a saved graph,
                # a second cell): donating would delete it under that reference, so a copy
                # is donated instead (as the eager optimizer's ``_donatable`` decides)
                state[i] = _copy(state[i])
        state += [p.input() for p in e.in_packs]  # small state, packed (see pack.py)
        if e.hyp_idx is not None:
            hyp = [hyp[i] for i in e.hyp_idx]
        inputs = [t._value for t in in_tensors] + [
            x for x in leaves if isinstance(x, (jax.Array, np.ndarray))]
        if e.inp_idx is not None:
            inputs = [inputs[i] for i in e.inp_idx]
        return state, hyp, inputs

    def _device_hyp(self, hyp: list, state: list) -> list:
        """The hyperparameters as arrays already where the program runs (``_device.put_like``
        its first state array), remade when a value changes.

        A Python float argument is copied to the device on every call (a host-to-device
        transfer: about a microsecond on the CPU, ~60 µs each on an H200 machine, the bulk of
        a small step's overhead there). A program on several devices takes the floats."""
        if not hyp or not state or isinstance(state[0], jax.core.Tracer):
            # (state bound to tracers: the step runs under a binding frame that is no funcgrad
            # trace, functional_call or export inside a JAX transformation; a tracer has no
            # device to put the floats on. Inside another step's trace a step is inlined)
            return hyp
        sh = getattr(state[0], "sharding", None)
        last = self._hyp_last
        if last is not None and last[0] == hyp and last[1] == sh:
            return last[2]
        arrs = None if sh is None else put_like(hyp, state[0])
        if arrs is None:
            return hyp
        self._hyp_last = (list(hyp), sh, arrs)
        return arrs

    def _run(self, e: _Entry, layout: _Layout, leaves, in_tensors, hyp):
        state, hyp, inputs = self._program_inputs(e, leaves, in_tensors, hyp)
        outs = e.fn(*state, *self._device_hyp(hyp, state), *inputs)
        # ---- write back (the donated buffers are gone: every changed cell gets its new array)
        run = e.run
        gen = next(_GEN)
        for c, v in zip(e.changed, outs):
            c.value = v
            c.gen = gen
        i = e.n_changed
        for p in e.packs:
            p.set(outs[i], gen)
            i += 1
        if run.grads:
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
        for t, d in e.inputs_written:
            t._set_value(outs[i])
            t._ver[0] += d
            i += 1
        for ver, d in e.versions:
            ver[0] += d
        if run.single:  # the common ``return loss``: one tensor, no tree to rebuild
            return Tensor._wrap(outs[i])
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

    # phase 3, tracing (funcgrad/_jit/trace.py): plain functions of the step, used as methods
    _trace = _trace_mod.trace
    _lookup = _trace_mod.lookup
    _store = _trace_mod.store
    _walk_roots = _trace_mod.walk_roots
    _scrub = _trace_mod.scrub
    _prime = _trace_mod.prime

    # -- inspection ---------------------------------------------------------------------------
    def lower(self, *args, **kwargs) -> jax.stages.Lowered:
        """The XLA program this step runs on these arguments, lowered (a ``jax.stages.Lowered``).

        Nothing runs: parameters, ``.grad``, optimizer state and RNG keys are left as they are.
        When no program is cached for these arguments the step is traced (``num_traces``
        counts it, and the program is cached for the next call, unless the trace created state,
        e.g. Adam's moments on its first step: that state is dropped again and the next call
        traces anew). ``.as_text()`` is the StableHLO; ``.compile().as_text()`` the optimized HLO.

        >>> import funcgrad
        >>> w = funcgrad.ones(3, requires_grad=True)
        >>> step = funcgrad.jit(lambda x: (w * x).sum())
        >>> "stablehlo.multiply" in step.lower(funcgrad.ones(3)).as_text(), step.num_traces
        (True, 1)
        >>> step(funcgrad.ones(3)), step.num_traces
        (tensor(3.), 1)
        """
        with self._lock:  # as __call__
            leaves, tree = _flatten_args(args, kwargs)
            objs = _objects(leaves)
            layout = self._layout
            if layout is None or list(map(id, objs)) != self._layout_args or not layout.valid():
                layout = self._discover(leaves, objs)
            small = self._with_static(_call_key(tree, leaves, layout, len(self._in_tensors(leaves, layout))),
                                      tree, leaves)
            entry = self._lookup(layout, small, self._in_tensors(leaves, layout))
            if entry is None:
                before = _walk(self._walk_roots(leaves), dicts=True).dicts
                entry = self._trace(layout, args, kwargs, leaves, tree, self._in_tensors(leaves, layout),
                                    layout.hyper_values())
                small = self._with_static(small[:3], tree, leaves)
                layout = self._layout  # a new one if the trace lifted more state
                if entry.one_shot:
                    # its new state tensors would get their values from the run: drop them (and
                    # the dict entries the trace added) so that the objects are as they were
                    self._scrub(leaves)
                    for d, keys in before:
                        for k in [k for k in d if k not in keys]:
                            del d[k]
                else:
                    self._store(layout, small, entry, self._in_tensors(leaves, layout))
            state, hyp, inputs = self._program_inputs(entry, leaves, self._in_tensors(leaves, layout),
                                                      layout.hyper_values())
            fn, consts = entry.fn, ()
            if isinstance(fn, functools.partial):  # functools.partial(jitted, *jaxpr constants)
                fn, consts = fn.func, fn.args
            return fn.lower(*consts, *state, *hyp, *inputs)

    @staticmethod
    def _in_tensors(leaves, layout: _Layout) -> list:
        """The tensor arguments that are inputs (not state found elsewhere)."""
        return [x for x in leaves if isinstance(x, Tensor) and id(x._cell) not in layout.cell_index]


_TICK = itertools.count(1)


def _call_key(tree, leaves, layout, n_in: int) -> tuple:
    """A call's program key for ``layout``: the argument tree, each leaf's key and autocast's.

    A tensor argument that is a view of a state tensor (``step(w[1])``) is no input: the
    program computes it from the state, by the view of its trace. Which view it is (its chain,
    with the indices) is then part of the key: ``step(w[0])`` and ``step(w[1])`` are two
    programs. (Checked only when some tensor argument is not an input.)"""
    keys = tuple(map(_leaf_key, leaves))
    ac = _autocast_key()
    if n_in == len(keys) or n_in == sum(isinstance(x, Tensor) for x in leaves):
        return (tree, keys, ac)
    views = _trace_mod.state_views(leaves, layout)
    return (tree, keys, (ac, views) if views else ac)


def _static_value(x):
    """A static tensor argument's values, as part of a cache key."""
    return np.asarray(x._value).tobytes() if isinstance(x, Tensor) else None


def _inputs(key) -> str:
    """The input shapes/dtypes of a program's cache key, for the eviction warning."""
    parts = [f"{k[2]}[{', '.join(map(str, k[1]))}]" if k[0] in "ta" else repr(k[1:]) for k in key[2]]
    s = "(" + ", ".join(parts) + ")"
    return s if len(s) < 200 else s[:200] + "…"


_WRAPPERS.append((CompiledFunction, "_fn"))  # discovery walks what a nested step captures


def _meta_args(args, kwargs) -> bool:
    """Whether a tensor argument (at the top level) is a meta tensor."""
    for a in (*args, *kwargs.values()):
        if isinstance(a, Tensor) and type(a._cell.value) is _meta.MetaArray:
            return True
    return False


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
    are detached from the step's graph. Host data that decides shapes (the ``lengths`` of
    ``nn.utils.rnn.pack_padded_sequence``, a tensor argument or a list) is static: one program
    per distinct value (``retrace_reasons`` names it). A compiled function or module called
    inside a compiled step is inlined (its function becomes part of the step's one program, as
    ``torch.compile`` nested in ``torch.compile``); it compiles nothing of its own there.

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
