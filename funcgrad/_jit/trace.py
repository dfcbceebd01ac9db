"""Phase 3 of a call — tracing: ``jax.make_jaxpr`` of the step as a pure function of its state.

``_pure_body`` binds tracers to the state cells in this thread's ``_storage.Frame``, runs the
user's step, reads the cells back (``_collect``: what changed, new grads, tensors created,
outputs) and *always* drops the bindings, so an exception leaves no tracer behind; ``trace``
retries with more state lifted when the step read a tensor (``frame.reads``) or hyperparameter
that discovery missed, and jits the resulting program; ``lookup``/``store`` cache programs per
state structure. ``trace``/``scrub``/``walk_roots``/``lookup``/``store`` are
``CompiledFunction`` methods (``self`` is the step).
"""

from __future__ import annotations

import functools
import itertools
import os
import sys
import warnings
from typing import Callable

import jax
import jax.numpy as jnp
import numpy as np
from jax.extend.core import ClosedJaxpr, jaxpr_as_fun

from .. import _lift, _random, _storage
from .._storage import _TracedCell
from .._tensor import Tensor
from .._ops.pointwise import where
from . import pack as _pack
from .common import (_GEN, _SCALARS, NESTING, _Tracer, _get_cell_value, _leaf_key, _objects,
                     _scalar_key, structure_changed)
from .discover import _walk

_PKG_DIR = os.path.dirname(os.path.abspath(__file__)) + os.sep


class _Entry:
    """One compiled program and how to write its results back into the Python objects."""

    __slots__ = ("fn", "changed", "grad_none", "grad_new", "grad_objs", "new_tensors",
                 "inputs_written", "versions", "out_tree", "out_kinds", "n_changed", "one_shot",
                 "in_cells", "hyp_idx", "inp_idx", "packs", "in_packs", "tpl", "tick", "run",
                 "created")


# ---- programs shared by the layouts of one structure (CompiledFunction._lookup/_store) ----------
# An _Entry names the objects it writes back (cells, tensors, version counters). Its template
# names them by place instead: ("s", i) is layout.tensors[i], ("i", j) the j-th tensor argument
# of the call (so a call with other argument tensors writes back into those), cells by their
# index in layout.cells. One template serves every layout of its structure key (``skey``).
class _Template:
    __slots__ = ("same", "changed", "in_cells", "packs", "in_packs", "grad_none", "grad_new",
                 "grad_objs", "inputs_written", "versions", "per_call", "tick")


_SAME = ("fn", "out_tree", "out_kinds", "n_changed", "one_shot", "hyp_idx", "inp_idx")


def _encode(e: _Entry, layout, in_tensors):
    """``e``'s template, or None when it names an object that has no place in the layout."""
    ci = layout.cell_index
    ti = {id(t): i for i, t in enumerate(layout.tensors)}
    ii = {id(t): j for j, t in enumerate(in_tensors)}
    vi = {}
    for i, t in enumerate(layout.tensors):
        vi.setdefault(id(t._ver), i)

    def tref(t):
        if id(t) in ii:
            return ("i", ii[id(t)])
        return ("s", ti[id(t)])

    try:
        p = _Template()
        p.same = {k: getattr(e, k) for k in _SAME}  # (no object of the layout: kept alive)
        p.changed = [ci[id(c)] for c in e.changed]
        p.in_cells = [ci[id(c)] for c in e.in_cells]
        p.packs = [([ci[id(c)] for c in P.cells], P.shapes) for P in e.packs]
        p.in_packs = [next(k for k, P in enumerate(e.packs) if P is Q) for Q in e.in_packs]
        p.grad_none = list(map(tref, e.grad_none))
        p.grad_new = list(map(tref, e.grad_new))
        p.grad_objs = [(tref(t), ("s", ti[id(g)])) for t, g in e.grad_objs]
        p.inputs_written = [(ii[id(t)], d) for t, d in e.inputs_written]
        p.versions = [(vi[id(v)], d) for v, d in e.versions]
    except KeyError:
        return None
    p.per_call = any(r[0] == "i" for r in p.grad_none + p.grad_new + [a for a, _ in p.grad_objs]) \
        or bool(p.inputs_written)
    p.tick = 0
    return p


def _decode_inputs(e: _Entry, p: _Template, tensors, in_tensors) -> None:
    def t(r):
        return tensors[r[1]] if r[0] == "s" else in_tensors[r[1]]
    e.grad_none = list(map(t, p.grad_none))
    e.grad_new = list(map(t, p.grad_new))
    e.grad_objs = [(t(a), t(b)) for a, b in p.grad_objs]
    e.inputs_written = [(in_tensors[j], d) for j, d in p.inputs_written]


def _decode(p: _Template, layout, in_tensors) -> _Entry:
    """An entry of ``p``'s program for ``layout`` (whose skey is the template's)."""
    e = _Entry()
    for k, v in p.same.items():
        setattr(e, k, v)
    e.new_tensors, e.created = [], ()  # (a trace that makes state tensors is never cached)
    cells, tensors = layout.cells, layout.tensors
    e.changed = [cells[i] for i in p.changed]
    e.in_cells = [cells[i] for i in p.in_cells]
    e.packs = [_pack.Pack([cells[i] for i in idx], shapes) for idx, shapes in p.packs]
    e.in_packs = [e.packs[k] for k in p.in_packs]
    e.versions = [(tensors[i]._ver, d) for i, d in p.versions]
    _decode_inputs(e, p, tensors, in_tensors)
    e.tpl, e.tick, e.run = p, 0, None  # (run: the call's plan, made on first use)
    return e


def lookup(self, layout, small, in_tensors):
    """The entry cached for ``layout`` and these arguments (``CompiledFunction._lookup``), or None.

    A layout met before (same cells) has its entries in ``layout.fast``; a new layout of a
    structure met before (``.grad`` tensors made anew) gets the template's program rebound.
    An entry whose write-back names tensor arguments is kept apart (``(small, 1)``: a call
    never finds it on the fast path) and rebound to each call's arguments.
    """
    e = layout.fast.get(small)
    if e is not None:
        return e
    e = layout.fast.get((small, 1))
    if e is None:
        p = self._entries.get((layout.skey,) + small)
        if p is None:
            p = self._entries.get((layout.key,) + small)
            if p is None:
                return None
        e = p if isinstance(p, _Entry) else _decode(p, layout, in_tensors)
        layout.fast[_fast_key(e, small)] = e
    p = e.tpl
    if p is not None and p.per_call:
        e = _copy(e)
        _decode_inputs(e, p, layout.tensors, in_tensors)
    return e


def store(self, layout, small, e: _Entry, in_tensors):
    """Cache a traced entry (``CompiledFunction._store``): for this layout and its structure.

    Returns its key in ``self._entries``."""
    e.tpl = p = _encode(e, layout, in_tensors)
    layout.fast[_fast_key(e, small)] = e
    # (an entry without a template is cached for this layout's cells only: its key names them)
    key = (layout.skey if p is not None else layout.key,) + small
    self._entries[key] = p if p is not None else e
    return key


def _fast_key(e: _Entry, small):
    return (small, 1) if e.tpl is not None and e.tpl.per_call else small


def _copy(e: _Entry) -> _Entry:
    c = _Entry()
    for k in _Entry.__slots__:
        setattr(c, k, getattr(e, k))
    return c


# ---- the trace (CompiledFunction._trace) -------------------------------------------------------
def trace(self, layout, args, kwargs, leaves, tree, in_tensors, hyp, _attempt=0) -> _Entry:
    """Trace and jit the step for these arguments (``CompiledFunction._trace``); count the trace."""
    reason = "first call" if not self.num_traces else _reason(
        self._last_trace, layout, tree, leaves, _static_values(self._static.get(tree, {}), leaves))
    plan: dict = {}
    arr_pos = [i for i, x in enumerate(leaves) if isinstance(x, (jax.Array, np.ndarray))]
    fn = self._fn
    n_state, n_hyp = len(layout.cells), len(hyp)

    # this thread's binding frame: the state cells are bound to the tracers (other threads
    # keep seeing their arrays), cells made by the step are _TracedCell, reads and writes of
    # tensors that are not state (not discovered) are recorded (the writes stay in the frame)
    frame = _storage.Frame(set(layout.cell_index) | {id(t._cell) for t in in_tensors})
    # tensor arguments that are host data (pack_padded_sequence's lengths) keep their values:
    # they are part of the cache key (CompiledFunction._with_static)
    static = self._static.get(tree, {})
    concrete = {id(leaves[i]): leaves[i]._value for i in static}

    primed = self._primed  # (.grad slots made before a first call, see prime)

    def pure(state, hypers, inputs):
        return _pure_body(fn, layout, plan, state, hypers, inputs, leaves, tree, in_tensors,
                          arr_pos, self._walk_roots(leaves), frame, concrete,
                          primed["hidden"] if primed else ())

    in_vals = [t._value for t in in_tensors] + [leaves[i] for i in arr_pos]
    state_vals = list(map(_get_cell_value, layout.cells))
    py = self._py_last = _py_snapshot(self._walk_roots(leaves))  # Python attributes the step may change
    try:
        with frame, NESTING:  # (a compiled function the step calls is inlined: NESTING)
            closed = jax.make_jaxpr(pure)(state_vals, hyp, in_vals)
    except _lift.Relift as r:
        _py_restore(py)  # the aborted attempt's side effects are undone: they run once
        if _attempt > 8:
            raise
        self._lifted_keys.add(r.key)
        return _again(self, args, kwargs, leaves, tree, _attempt)
    except _lift.StaticTensor as r:
        _py_restore(py)
        i = _static_position(leaves, in_tensors, r.tensor)
        if i is None or i in static or _attempt > 8:
            self._scrub(leaves)
            raise RuntimeError(
                f"funcgrad.jit: {r.what} must be concrete host data (PyTorch wants it on the CPU), "
                f"but it is computed inside the compiled step at\n  {r.where}\nPass it to the step "
                f"as a tensor argument (or a list of ints): the step is then compiled for its "
                f"values, and retraced when they change.") from None
        self._static.setdefault(tree, {})[i] = r.what
        return _again(self, args, kwargs, leaves, tree, _attempt)
    except BaseException:
        self._scrub(leaves)
        raise
    # arrays captured as constants: an older Tensor's storage read (or written) but not
    # discovered? (``frame.reads`` minus the layout: the frame knows the layout's cells)
    consts = {id(c) for c in closed.consts}
    baked = [c for c, v, _ in frame.baked.values() if id(v) in consts]
    if baked:
        _py_restore(py)
        self._scrub(leaves)
        i = next((i for i, x in enumerate(leaves) if isinstance(x, Tensor) and x._cell is baked[0]), "?")
        raise RuntimeError(
            f"funcgrad.jit: the step reads the storage of its tensor argument {i}, a view of a "
            f"larger tensor, other than through that view (the larger tensor itself, or another "
            f"view of it): those values would be constants of the compiled program, and a later "
            f"call would not see them. Pass a tensor with its own storage (x.clone()), or the "
            f"larger tensor itself.")
    missed, roots = list(frame.written.values()), []
    for c, v, t, g0 in frame.reads.values():
        if id(v) in consts:  # (a tensor that requires grad: found as state, with its .grad)
            if t is not None and t._requires_grad:
                roots.append(t)
            else:
                missed.append(c)
    if missed or roots:
        if _attempt > 8:
            raise RuntimeError("funcgrad.jit: could not lift tensors read by the step")
        _py_restore(py)
        for _, _, t, g0 in frame.reads.values():  # (the attempt's backward set their .grad)
            if t is not None and t._requires_grad and t._grad is not g0:
                t._grad = g0
        self._extra_cells.extend(missed)
        self._extra_roots.extend(roots)
        return _again(self, args, kwargs, leaves, tree, _attempt)
    self.num_traces += 1
    self.retrace_reasons.append(reason)
    # (the layout's key and names, not the layout: it would keep old tensors alive)
    self._last_trace = ((layout.key, layout.static_names, layout.nz_names), tree,
                        list(map(_leaf_key, leaves)), _static_values(static, leaves),
                        dict(state_views(leaves, layout)))
    _warn_side_effects(self, _py_changes(py))
    if self.num_traces >= self._warn_after and (self.num_traces & (self.num_traces - 1)) == 0:
        warnings.warn(
            f"funcgrad.jit: {getattr(fn, '__qualname__', fn)} has been traced "
            f"{self.num_traces} times: its input shapes/dtypes, Python-scalar arguments or "
            f"state structure (.grad None vs set, new optimizer state, module.train()/eval(), "
            f"non-lr hyperparameters) keep changing, and each trace compiles a new program. "
            f"Pad inputs to fixed shapes or move the changing part out of the step.",
            UserWarning, stacklevel=_user_stacklevel())
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
    if _devices(state_vals) <= 1:  # ...but a big one is still passed, donated (pack.py)
        keep[:n_state] = _pack.keep_overwritten(layout.cells, state_vals, keep, e.changed, jx.outvars)
    n_in = len(jx.invars) - n_state - n_hyp
    e.in_cells = [c for c, k in zip(layout.cells, keep) if k]
    read = {id(c) for c in e.in_cells}
    perm = _pack.alias_order(e.changed, layout.cell_index, read)  # each output in its own input
    e.changed = [e.changed[j] for j in perm]
    jx = jx.replace(outvars=[jx.outvars[j] for j in perm] + list(jx.outvars[len(perm):]))
    e.hyp_idx = None if all(keep[n_state:n_state + n_hyp]) else [
        i for i in range(n_hyp) if keep[n_state + i]]
    e.inp_idx = None if all(keep[n_state + n_hyp:]) else [
        i for i in range(n_in) if keep[n_state + n_hyp + i]]
    jx2 = jx.replace(constvars=[], invars=list(jx.constvars) + [v for v, k in zip(jx.invars, keep) if k])
    open_fn = jaxpr_as_fun(ClosedJaxpr(jx2, []))
    in_pos = {id(c): i for i, c in enumerate(e.in_cells)}
    aliases = tuple(in_pos.get(id(c), -1) for c in e.changed)  # (a key of the program, below)
    # state placed on several devices (funcgrad.parallel) keeps its sharding across steps
    out_sh = _state_out_shardings(layout, e, state_vals, len(jx.outvars))
    # (out_sh is set only for multi-device state, which _devices rules out for packing too)
    groups = [] if _devices(state_vals) > 1 else _pack.plan(
        e.changed, [v.aval for v in jx.outvars[:e.n_changed]],
        lambda c: state_vals[layout.cell_index[id(c)]] if id(c) in read else None)
    if groups:
        open_fn = _packed_program(open_fn, e, groups, len(consts), [v.aval for v in jx.outvars])
    else:
        e.packs = e.in_packs = ()
    new_pos = {id(c): i for i, c in enumerate(e.in_cells)}
    donate = tuple(len(consts) + new_pos[id(c)] for c in e.changed if id(c) in new_pos) + tuple(
        len(consts) + len(e.in_cells) + r for r in range(len(e.in_packs)))
    jitted = None
    if primed and out_sh is None and (primed["hidden"] or primed["fn"] is not None):
        # the program of a first call traced with its new .grad slots hidden (prime), and the
        # next trace's, with them set: the same program is compiled once
        key = (str(jx2), donate, len(consts), tuple((tuple(i), r) for i, r in groups), aliases)
        if primed["hidden"]:
            primed["key"], primed["packs"] = key, e.packs
        elif key == primed["key"]:
            jitted = primed["fn"]
            self.num_traces -= 1  # (not a new program: the first call's)
            self.retrace_reasons.pop()
            old = primed["packs"]
            if [list(map(id, P.cells)) for P in old] == [list(map(id, P.cells)) for P in e.packs]:
                # its packed buffers too (the cells are their pieces: nothing to gather)
                e.in_packs = [old[e.packs.index(P)] for P in e.in_packs]
                e.packs = old
        elif self.retrace_reasons[-1].startswith("state structure changed"):
            self.retrace_reasons[-1] = ("the step reads the .grad its first call set (accumulates "
                                        "into it, or zero_grad(set_to_none=False))"
                                        + self.retrace_reasons[-1][23:])
    if primed and not primed["hidden"]:
        self._primed = None  # (one comparison: the trace after the first call's)
    if jitted is None:
        jitted = jax.jit(open_fn, donate_argnums=donate, keep_unused=True,
                         **({} if out_sh is None else {"out_shardings": out_sh}))
        if primed and primed["hidden"]:
            primed["fn"] = jitted
    e.fn = functools.partial(jitted, *consts) if consts else jitted
    return e


def prime(self, layout, args, kwargs, leaves, tree, e: _Entry):
    """After a first trace (``e``, not run yet) whose step makes state: an optimizer's first
    update (its state, reported by ``_lift.created``), ``.grad`` tensors of parameters whose
    ``.grad`` was None. When that is all it makes, make it now, concretely (the state's initial
    tensors, zero-filled ``.grad`` slots), and trace the step again with it as input and those
    ``.grad`` slots hidden (None while the step runs, as they were: only outputs). The numbers are
    the first trace's (the same update of the same initial state), the program is the one the
    later calls trace (same inputs and outputs): that trace finds it compiled (``trace``; a step
    that reads its ``.grad``, e.g. accumulating, makes another). ``e``'s program never compiles.

    Returns ``(layout, entry, undo)``, ``undo()`` dropping what was made (the call failed), or
    None (``e`` is run as it is)."""
    leaf_ids = {id(t) for t in layout.leaves}
    # (.grad slots only on the step's first trace: a step whose .grad is cleared between calls
    # would make them again on every call)
    hidden = [t for t in e.grad_new if id(t) in leaf_ids and t._grad is None] \
        if self.num_traces == 1 else []
    made = {id(v) for owner, key, _ in e.created for v in owner.get(key, {}).values()}
    if not (hidden or e.created) or any(id(t) not in made for t in e.new_tensors) \
            or _devices(list(map(_get_cell_value, layout.cells))) > 1:
        return None
    self.num_traces -= 1  # (its program is the one traced below)
    reason = self.retrace_reasons.pop()  # (and the cause of that trace: not "state created")
    _py_restore(self._py_last)  # the step's Python side effects happen once, in the trace below
    for owner, key, make in e.created:
        owner[key].update(make())  # (the trace's tensors, holding tracers, are replaced)
    for t in hidden:
        v = t._value
        t._grad = Tensor._wrap(jax.device_put(np.zeros(v.shape, v.dtype),
                                              v.sharding if v.committed else None))

    def undo():
        for owner, key, _ in e.created:
            owner.pop(key, None)
        for t in hidden:
            t._grad = None
    self._primed = {"hidden": {id(t) for t in hidden}, "key": None, "fn": None}
    try:
        layout = self._discover(leaves, _objects(leaves))
        e = self._trace(layout, args, kwargs, leaves, tree, self._in_tensors(leaves, layout),
                        layout.hyper_values())
    except BaseException:
        self._primed = None
        undo()
        raise
    self.retrace_reasons[-1] = reason
    if hidden:  # traced with them hidden: a program for this call (the next one traces anew)
        self._primed["hidden"] = ()
        e.one_shot = True
    return self._layout, e, undo


def _again(self, args, kwargs, leaves, tree, attempt) -> _Entry:
    """Drop what the failed trace created, rediscover (with more state lifted) and trace anew."""
    self._scrub(leaves)
    layout = self._discover(leaves, _objects(leaves))
    return self._trace(layout, args, kwargs, leaves, tree, self._in_tensors(leaves, layout),
                       layout.hyper_values(), attempt + 1)


def state_views(leaves, layout) -> tuple:
    """``(position, view chain)`` of each tensor argument that is a view of a state cell (no
    input: the program computes it from the state, so which view it is keys the program)."""
    ci = layout.cell_index
    return tuple((i, x._viewinfo.chain) for i, x in enumerate(leaves) if isinstance(x, Tensor)
                 and x._viewinfo is not None and id(x._cell) in ci)


def _static_position(leaves, in_tensors, t):
    """The leaf position of the tensor argument ``t`` (or one sharing its storage) is, or None."""
    ins = {id(x) for x in in_tensors}
    for i, x in enumerate(leaves):
        if id(x) in ins and (x is t or x._cell is t._cell and x._viewinfo is None
                             and t._viewinfo is None):
            return i
    return None


def _static_values(static, leaves) -> dict:
    """``{position: (what, values as a list)}`` of the static tensor arguments (retrace_reasons)."""
    return {i: (what, np.asarray(leaves[i]._value).tolist()) for i, what in static.items()
            if isinstance(leaves[i], Tensor)}


def _devices(values) -> int:
    """How many devices the state arrays live on (packing needs one)."""
    devs = set()
    for v in values:
        sh = getattr(v, "sharding", None)
        if sh is not None:
            devs |= sh.device_set
    return len(devs)


def _packed_program(open_fn, e, groups, n_consts, out_avals):
    """Wrap ``open_fn`` so that each group of small state cells travels as one flat buffer.

    The wrapper takes ``(*consts, *plain state, *packed inputs, *hyperparameters, *inputs)``
    and returns ``(*plain changed, *packed groups, *the rest)``; ``e`` is rewritten to match
    (``in_cells``/``changed`` keep the unpacked cells, ``in_packs``/``packs`` the groups).
    """
    in_all, changed_all, n_changed_all = e.in_cells, e.changed, e.n_changed
    pos = {id(c): i for i, c in enumerate(in_all)}
    packed_j = {j for idx, _ in groups for j in idx}
    read_groups = [idx for idx, read in groups if read]
    read_ids = {id(changed_all[j]) for idx in read_groups for j in idx}
    plain_in = [k for k, c in enumerate(in_all) if id(c) not in read_ids]
    group_pos = [[pos[id(changed_all[j])] for j in idx] for idx in read_groups]
    group_shapes = [[tuple(out_avals[j].shape) for j in idx] for idx in read_groups]
    plain_out = [j for j in range(n_changed_all) if j not in packed_j]
    n_plain, n_groups, n_all = len(plain_in), len(read_groups), len(in_all)

    def packed(*a):
        cs, a = a[:n_consts], a[n_consts:]
        full = [None] * n_all
        for k, v in zip(plain_in, a[:n_plain]):
            full[k] = v
        for p, shapes, buf in zip(group_pos, group_shapes, a[n_plain:n_plain + n_groups]):
            for k, v in zip(p, _pack.unpack_traced(buf, shapes)):
                full[k] = v
        outs = open_fn(*cs, *full, *a[n_plain + n_groups:])
        return ([outs[j] for j in plain_out] + [_pack.pack_traced([outs[j] for j in idx])
                                                for idx, _ in groups] + list(outs[n_changed_all:]))

    e.packs = [_pack.Pack([changed_all[j] for j in idx], [out_avals[j].shape for j in idx])
               for idx, _ in groups]
    e.in_packs = [P for P, (_, read) in zip(e.packs, groups) if read]
    e.in_cells = [in_all[k] for k in plain_in]
    e.changed = [changed_all[j] for j in plain_out]
    e.n_changed = len(e.changed)
    return packed


def walk_roots(self, leaves) -> list:
    """What ``_collect`` and ``scrub`` walk: the step, the global RNG and the object arguments."""
    return [self._fn, _random.default_generator] + [
        x for x in leaves if not isinstance(x, (jax.Array, np.ndarray) + _SCALARS)]


def scrub(self, leaves) -> None:
    """After a trace that does not run (failed, or ``lower``): drop the state it created."""
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


def _arg_change(i, a, b) -> str:
    """How argument leaf ``i`` differs between two calls, from its ``_leaf_key``s."""
    if a[0] != b[0]:
        return f"argument {i} is now a {_KIND[b[0]]} (was a {_KIND[a[0]]})"
    if a[0] == "t":
        for j, what in ((1, "shape"), (2, "dtype"), (3, "requires_grad"), (4, ".grad is None")):
            if a[j] != b[j]:
                old, new = (tuple(a[j]), tuple(b[j])) if j == 1 else (a[j], b[j])
                return f"tensor argument {i}: {what} {old} -> {new}"
    if a[0] == "a":
        return f"array argument {i}: shape/dtype {tuple(a[1])} {a[2]} -> {tuple(b[1])} {b[2]}"
    if a[0] == "s":
        return f"Python argument {i} (static): {a[2]!r} -> {b[2]!r}"
    return f"argument {i} is another object"


_KIND = {"t": "tensor", "a": "array", "s": "Python scalar", "o": "object"}


def _reason(last, layout, tree, leaves, static) -> str:
    """``retrace_reasons``' entry: what differs from the previous trace, and the user's call."""
    f = sys._getframe(1)
    while f is not None and f.f_code.co_filename.startswith(_PKG_DIR):
        f = f.f_back
    at = f" (call at {f.f_code.co_filename}:{f.f_lineno})" if f is not None else ""
    if last is None:
        return "new trace" + at
    old, old_tree, old_keys, old_static, old_views = last
    keys = list(map(_leaf_key, leaves))
    why = []
    if old_tree != tree or len(old_keys) != len(keys):
        why.append("the arguments' structure changed")
    else:
        why += [_arg_change(i, a, b) for i, (a, b) in enumerate(zip(old_keys, keys)) if a != b]
        why += [f"tensor argument {i} ({what}, static: a program per value): {old_static[i][1]} -> {v}"
                for i, (what, v) in static.items() if i in old_static and old_static[i][1] != v]
        views = dict(state_views(leaves, layout))
        why += [f"tensor argument {i} is another view of a state tensor (a program per view)"
                for i in sorted(set(old_views) | set(views)) if old_views.get(i) != views.get(i)]
    (k0, static_names, nz_names), k1 = old, layout.key
    if k0 != k1:
        if k0[0] != k1[0]:
            n0, n1 = len(k0[0]), len(k1[0])
            why.append(f"the state tensors changed ({n0} -> {n1} arrays: state created, replaced "
                       f"or dropped, e.g. optimizer state or a module attribute)")
        elif k0[1] != k1[1]:
            why.append(f"requires_grad changed on {sum(a != b for a, b in zip(k0[1], k1[1]))} tensor(s)")
        if k0[2] != k1[2] and len(k0[2]) == len(k1[2]):
            n = sum(a != b for a, b in zip(k0[2], k1[2]))
            why.append(f".grad {'became None' if sum(k1[2]) > sum(k0[2]) else 'was None, now set'} "
                       f"on {n} tensor(s)")
        if k0[3] != k1[3] and static_names == layout.static_names:
            why += [f"{n}: {a[1]!r} -> {b[1]!r}" for n, a, b in zip(layout.static_names, k0[3], k1[3])
                    if a != b]
        if k0[7] != k1[7] and nz_names == layout.nz_names:
            why += [f"{n} went {'from 0 to non-zero' if b else 'to 0'}"
                    for n, a, b in zip(layout.nz_names, k0[7], k1[7]) if a != b]
        if k0[4] != k1[4]:
            why.append("a module attribute changed (e.g. train()/eval())")
        if k0[6] != k1[6] and k0[0] == k1[0]:
            why.append("the parameters of an optimizer's param groups changed")
        if k0[5] != k1[5]:
            why.append("the type of a lifted hyperparameter changed")
        if not why and k0[8] != k1[8]:
            why.append("a watched container was replaced (e.g. opt.state, opt.param_groups, "
                       "a module's _parameters)")
    return "; ".join(why or ["state structure changed"]) + at


_SKIP = object()


def _py_snapshot(roots) -> list:
    """``(label, container, key, value)`` of every public Python scalar attribute of the objects
    a step reaches (modules, optimizers and their param groups, schedulers, other objects) and
    of the globals its functions name: what a trace may change once and a program never."""
    w = _walk(roots, dicts=True)
    snap = []
    for d, _ in w.dicts:
        label = w.labels.get(id(d))
        if label is None:
            continue  # a plain container (optimizer state entries…): its tensors are state
        is_group = ".param_groups[" in label
        for k, v in d.items():
            if isinstance(k, str) and not k.startswith("_") and isinstance(v, _SCALARS):
                snap.append((f"{label}[{k!r}]" if is_group else f"{label}.{k}", d, k, v))
    for g, names in w.names:
        for n in names:
            v = g.get(n, _SKIP)
            if v is not _SKIP and isinstance(v, _SCALARS) and not n.startswith("__"):
                snap.append((f"the global {n}", g, n, v))
    return snap


def _py_changes(snap) -> list:
    return [(label, old, d.get(k, _SKIP)) for label, d, k, old in snap
            if _scalar_key(d.get(k, _SKIP)) != _scalar_key(old)]


def _py_restore(snap) -> None:
    for _, d, k, old in snap:
        if d.get(k, _SKIP) is not old:
            d[k] = old


def _warn_side_effects(self, changes) -> None:
    """Warn (once per attribute) that the trace changed Python state a program cannot change."""
    new = [c for c in changes if c[0] not in self._warned_attrs]
    if not new:
        return
    self._warned_attrs.update(c[0] for c in new)
    code = getattr(self._fn, "__code__", None)
    where = f" ({code.co_filename}:{code.co_firstlineno})" if code is not None else ""
    what = ", ".join(f"{label} ({old!r} -> {'deleted' if v is _SKIP else repr(v)})"
                     for label, old, v in new)
    warnings.warn(
        f"funcgrad.jit: tracing {getattr(self._fn, '__qualname__', self._fn)}{where} changed "
        f"{what}. Python side effects run once per trace, not once per call: the compiled "
        f"program will not change it again, so the numbers would differ from eager. Move this "
        f"code out of the compiled step (call sched.step() and Python counters between calls), "
        f"or keep the value in a tensor.", UserWarning, stacklevel=_user_stacklevel())


def _user_stacklevel() -> int:
    """The ``warnings`` stacklevel of the first frame outside this package (the user's call)."""
    f, level = sys._getframe(1), 1  # stacklevel 1: the function calling warnings.warn
    while f is not None and f.f_code.co_filename.startswith(_PKG_DIR):
        f, level = f.f_back, level + 1
    return level


def _state_out_shardings(layout, e, state_vals, n_out):
    """Pin each changed multi-device state cell's output to its input sharding (else: None)."""
    sh = []
    for c in e.changed:
        s = getattr(state_vals[layout.cell_index[id(c)]], "sharding", None)
        sh.append(s if s is not None and len(s.device_set) > 1 else None)
    if not any(s is not None for s in sh):
        return None  # single device: let jax choose, as before
    return sh + [None] * (n_out - len(sh))


def _pure_body(fn, layout, plan, state, hypers, inputs, leaves, tree, in_tensors, arr_pos, roots,
               frame, concrete, hidden):
    """Run the user's step on tracers bound in ``frame``; fill ``plan['entry']``; always restore
    the objects (the bindings are dropped, the Python attributes put back). The ``.grad`` of the
    tensors in ``hidden`` is None while the step runs (see ``prime``)."""
    cells = layout.cells
    gen = next(_GEN)
    grads0 = [t._grad for t in layout.leaves]
    in_leaves = [t for t in in_tensors if t._requires_grad]
    in_grads0 = [t._grad for t in in_leaves]
    ver0 = [(t, t._ver[0]) for t in layout.tensors]
    in_ver0 = [t._ver[0] for t in in_tensors]  # restored too: the run bumps them (once)
    gfn0 = [(t, t._grad_fn, t._output_nr, t._requires_grad) for t in layout.tensors]
    ctx = _lift.TraceContext({}, set())
    it = iter(hypers)
    for g, k, kind in layout.hyper_slots:
        ctx.traced[(id(g), k)] = tuple(next(it) for _ in range(kind[1])) if isinstance(kind, tuple) \
            else next(it)
    ctx.lifted_keys = {k for _, k, _ in layout.hyper_slots}
    prev_ctx = getattr(_lift._local, "ctx", None)
    try:
        for t in layout.leaves:
            if id(t) in hidden:
                t._grad = None
        for c, v in zip(cells, state):
            frame.bind(c, v, gen)
        n_t = len(in_tensors)
        # (a static argument is bound to its own value: the program is compiled for it)
        inputs = [concrete.get(id(t), v) for t, v in zip(in_tensors, inputs[:n_t])] + list(
            inputs[n_t:])
        for t, v in zip(in_tensors, inputs[:n_t]):
            if t._viewinfo is None:
                frame.bind(t._cell, v, gen)
            else:
                frame.bind_view(t, v, gen)
        call_leaves = list(leaves)
        for i, v in zip(arr_pos, inputs[n_t:]):
            call_leaves[i] = v
        a, kw = jax.tree.unflatten(tree, call_leaves)
        _lift._local.ctx = ctx
        out = fn(*a, **kw)
        _lift._local.ctx = prev_ctx
        out = _collect(plan, layout, state, inputs, in_tensors, grads0, in_leaves, in_grads0,
                       ver0, in_ver0, out, roots)
        plan["entry"].created = ctx.created
        return out
    finally:
        _lift._local.ctx = prev_ctx
        frame.release()
        for t, g in zip(layout.leaves, grads0):
            t._grad = g
        for t, g in zip(in_leaves, in_grads0):
            t._grad = g
        for t, v in ver0:
            t._ver[0] = v
        for t, v in zip(in_tensors, in_ver0):
            t._ver[0] = v
        for t, gf, nr, rg in gfn0:
            t._grad_fn, t._output_nr, t._requires_grad = gf, nr, rg


def _collect(plan, layout, state, inputs, in_tensors, grads0, in_leaves, in_grads0, ver0, in_ver0,
             out, roots):
    """Read the effects of the traced step into an ``_Entry`` and the flat traced outputs."""
    e = _Entry()
    e.tpl, e.run = None, None  # (run: the call's plan, made on first use)
    e.tick = 0  # last use (CompiledFunction: least recently used programs are evicted)
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
    for t, v, v0 in zip(in_tensors, inputs, in_ver0):
        if t._value is not v:
            e.inputs_written.append((t, max(t._ver[0] - v0, 1)))  # as many bumps as eagerly
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
    p = pred._value if isinstance(pred, Tensor) else pred
    if not isinstance(p, _Tracer):
        return true_fn(*operands) if bool(np.asarray(p)) else false_fn(*operands)
    a, b = true_fn(*operands), false_fn(*operands)
    pt = pred if isinstance(pred, Tensor) else Tensor._wrap(jnp.asarray(p))
    is_t = lambda x: isinstance(x, Tensor)  # noqa: E731
    return jax.tree.map(lambda x, y: where(pt, x, y), a, b, is_leaf=is_t)

