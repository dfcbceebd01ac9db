"""Phase 1 of a call — discovery: walk the object graph from the step's roots and flatten the
state found into a ``_Layout`` (the state cells, the watched containers and the cheap check
that they are still the same)."""

from __future__ import annotations

import functools
import itertools
import operator
import types
from collections import deque
from typing import Any

import jax
import numpy as np

from .. import _lift, _random
from .._tensor import Tensor
from .common import _SCALARS, _STRUCTURE, _get_cell, _get_grad, _get_requires_grad, _scalar_key

_LIBS = ("jax", "jaxlib", "numpy", "optax", "funcgrad", "builtins", "functools", "typing",
         "collections", "abc", "torch", "tqdm", "warnings", "math")
_MAX_OBJ_DEPTH = 4
# (class, attribute) of wrappers whose wrapped object is walked instead (CompiledFunction,
# compiled modules): registered by the modules that define them, which import this one
_WRAPPERS: list = []


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

    def __init__(self, parents: bool = False, dicts: bool = False):
        self.tensors: dict[int, Tensor] = {}
        self.generators: dict[int, Any] = {}
        self.groups: dict[int, dict] = {}
        self.watch_dicts: list = []
        self.watch_seqs: list = []
        self.seen: set = set()
        self.parents = {} if parents else None
        self._hit: set = set()
        self.covered: set = set()  # ids of module __dicts (validated by _STRUCTURE instead)
        self.dicts = [] if dicts else None  # (dict, its keys) of every dict seen, if asked
        self.names: list = []  # (globals dict, names) of every walked function, if dicts asked
        self.labels: dict = {}  # id(dict) -> how the user names it ("StepLR", "SGD.param_groups[0]")

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
            if self.dicts is not None:
                self.dicts.append((obj, dict.fromkeys(obj)))
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
        for cls, attr in _WRAPPERS:
            if isinstance(obj, cls):
                return self.visit(getattr(obj, attr), depth)
        d = getattr(obj, "__dict__", None)
        if not isinstance(d, dict):
            return False
        self.labels[id(d)] = type(obj).__name__
        if _is_optimizer(obj):
            return self._visit_optimizer(obj, d, depth)
        if _is_module(obj):
            self.covered.add(id(d))
            self.visit(d, -1)  # modules: watched always (their `training` flag is trace config)
            return True
        if depth >= _MAX_OBJ_DEPTH or _is_lib(type(obj)):
            if self.dicts is not None:  # not searched for state; its attributes still recorded
                self.dicts.append((d, dict.fromkeys(d)))
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
        if self.dicts is not None:
            self.names.append((g, _code_names(fn.__code__)))
        for name in _code_names(fn.__code__):
            if name in g:
                found |= self.visit(g[name], depth + 1)
        for v in fn.__defaults__ or ():
            found |= self.visit(v, depth + 1)
        return found

    def _visit_optimizer(self, opt, d, depth) -> bool:
        for i, g in enumerate(d["param_groups"]):
            self.groups[id(g)] = g
            self.labels[id(g)] = f"{type(opt).__name__}.param_groups[{i}]"
            if self.dicts is not None:
                self.dicts.append((g, dict.fromkeys(g)))
        found = self.visit(d["state"], depth)
        for g in d["param_groups"]:
            found |= self.visit(g["params"], depth)
        self.watch_seqs.append(d["param_groups"])
        # replacing a container (``opt.state = defaultdict(dict)``, ``opt.param_groups = [...]``,
        # what ``load_state_dict`` does) or filling an empty one (the first step, after
        # ``state.clear()``) changes the program: the optimizer's own attributes and its state
        # dict are watched even when they hold no tensor yet
        self.watch_dicts.append(d)
        if not any(x is d["state"] for x in self.watch_dicts):
            self.watch_dicts.append(d["state"])
        return found


@functools.lru_cache(maxsize=None)
def _code_names(code) -> tuple:
    names = list(code.co_names)
    for c in code.co_consts:
        if isinstance(c, types.CodeType):
            names.extend(_code_names(c))
    return tuple(dict.fromkeys(names))


def _walk(roots, parents: bool = False, dicts: bool = False) -> _Walk:
    w = _Walk(parents, dicts)
    for r in roots:
        w.visit(r)
    return w


# ---- the cached layout --------------------------------------------------------------------
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
        self.flags = list(map(_get_requires_grad, tensors))  # a frozen/unfrozen parameter: new layout
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
        # which parameters each group holds, and which keys: ``group['params'] = [w]`` or a
        # key added is a new program (the lifted values themselves may change freely)
        self.groups = list(walk.groups.values())
        self.group_ids = [(id(g.get("params")), len(g)) for g in self.groups]
        members = tuple(tuple(self.cell_index.get(id(p._cell), -1) for p in g.get("params", ()))
                        for g in self.groups)
        # a lifted hyperparameter is traced, but the optimizer also branches on it in Python
        # (``momentum != 0`` picks the recipe): which ones are zero is part of the program
        # (``lr`` only scales the update: a scheduler reaching 0 keeps the program)
        flat_keys = [k for _, k, kind in self.hyper_slots
                     for _ in range(kind[1] if isinstance(kind, tuple) else 1)]
        nz = [i for i, k in enumerate(flat_keys) if k != "lr"]
        self._nz_get = (operator.itemgetter(*nz) if len(nz) > 1 else
                        (lambda h, i=nz[0]: (h[i],)) if nz else (lambda h: ()))
        self.hyper_nonzero = self.nonzero(self.hyper_values())
        # for retrace_reasons: how the user names the key's parts
        gname = {id(g): f"param_groups[{i}]" for i, g in enumerate(self.groups)}
        self.static_names = [f"{gname.get(id(g), 'param_group')}[{k!r}]" for g, k in static]
        flat_names = [f"{gname.get(id(g), 'param_group')}[{k!r}]" for g, k, kind in self.hyper_slots
                      for _ in range(kind[1] if isinstance(kind, tuple) else 1)]
        self.nz_names = [flat_names[i] for i in nz]
        scalars = tuple(_scalar_key(v) for d in walk.watch_dicts for v in d.values()
                        if isinstance(v, _SCALARS))
        self.key = (tuple(map(id, cells)), tuple(self.flags),
                    tuple(g is None for g in map(_get_grad, self.leaves)),
                    tuple(_scalar_key(g[k]) for g, k in static), scalars,
                    tuple(t for _, _, t in self.hyper_slots), members,
                    tuple(self.hyper_nonzero), tuple(self.watch_ids))
        self.skey = self._structure_key()

    def _structure_key(self) -> tuple:
        """The key of the programs this layout shares with others of the same structure.

        ``key`` names every state cell by identity, but a ``.grad`` that ``zero_grad()`` drops
        comes back from the next ``backward()`` as a new tensor: gradient accumulation cycles
        through layouts that differ only in those objects. Here a cell held only by ``.grad``
        tensors (not a view, not shared with a parameter) is named by its place, shape and
        dtype, so each structure the step cycles through is traced once and its program is
        rebound to the new cells (``trace.lookup``); every other cell keeps its identity.
        """
        grads = {id(t._grad) for t in self.leaves if t._grad is not None}
        anon = {}
        for t in self.tensors:
            c = id(t._cell)
            anon[c] = anon.get(c, True) and id(t) in grads and t._viewinfo is None
        cells = []
        for c in self.cells:
            v = c.value if anon.get(id(c)) else None
            cells.append(("g", v.shape, v.dtype) if v is not None else id(c))
        index = {id(t): i for i, t in enumerate(self.tensors)}
        links = tuple(self.cell_index[id(t._cell)] for t in self.tensors) + tuple(
            index.get(id(t._grad), -1) for t in self.leaves)
        return (tuple(cells), links) + self.key[1:]

    def _ids(self):
        return list(map(id, itertools.chain(
            itertools.chain.from_iterable(map(dict.values, self.watch_dicts)),
            itertools.chain.from_iterable(self.watch_seqs))))

    def valid(self) -> bool:
        return (_STRUCTURE[0] == self.struct_gen
                and list(map(_get_cell, self.tensors)) == self.tcells
                and list(map(_get_requires_grad, self.tensors)) == self.flags
                and list(map(id, map(_get_grad, self.leaves))) == self.grad_ids
                and self._ids() == self.watch_ids
                and [id(g[k]) for g, k in self.static_slots] == self.static_ids
                and [(id(g.get("params")), len(g)) for g in self.groups] == self.group_ids)

    def nonzero(self, hyp: list) -> list:
        """Which of the lifted hyperparameters the optimizer branches on are non-zero."""
        return list(map(bool, self._nz_get(hyp)))

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
