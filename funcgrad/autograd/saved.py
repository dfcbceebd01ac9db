"""``grad_fn._saved_<name>``: the values a node saved for backward, under PyTorch's names.

PyTorch's generated nodes expose each variable their ``derivatives.yaml`` formula saves
(``MulBackward0._saved_self``/``_saved_other``, ``ExpBackward0._saved_result``...). funcgrad's
``OpNode`` keeps the op's primal inputs (and, for the ops that read their result, the output's
storage cell, ``_dispatch.SavedOutput``); the table below maps PyTorch's names to those, with
the inputs whose gradient makes PyTorch save each one (a variable it did not save reads
``None``, as PyTorch's). Reading one after a backward freed the graph raises PyTorch's error;
reading one modified in place raises the version error, as PyTorch's unpack does.

Saved tensors hooks (``funcgrad.autograd.graph.saved_tensors_hooks``, ``save_on_cpu``,
``grad_fn._raw_saved_<name>.register_hooks``): dispatch calls ``_pack`` for each node it records
while hooks are entered (one check when none is); it packs what PyTorch saves (the table's
tensors; for a node not in the table, each tensor input it keeps), under ``no_grad``, and the
node's backward unpacks each one before it runs (``OpNode._unpacked_saved``), so the backward
computes with what ``unpack_hook`` returned. A saved *output* is packed and unpacked as in
PyTorch, but funcgrad's backward recomputes from the inputs: what its unpack returns is checked,
not used. A packed input leaves no reference in its node (``_Packed``: its place in the graph)
and, as in PyTorch, no version check. Nodes with packed tensors run in the engine, not in a fused
program.
"""

from __future__ import annotations

import math

from .. import _dtype, _graph
from .._dispatch import OpNode, SavedOutput, _version_msg
from .._factories import tensor as _tensor_of
from .._grad_mode import no_grad
from .._graph import FREED_MSG, SAVED_HOOKS, _callable_error, node_class
from .._tensor import Tensor

_WRAPPED = {bool: _dtype.bool_, int: _dtype.int64, float: _dtype.float64, complex: _dtype.complex128}

# node -> ((name, source, needed by), ...), in the order PyTorch packs them: source is an input's
# position, "result", or a number kept beside the tensors: ("key", name) (a static argument of the
# op), ("arg", i, default) (a Python number operand, absent: default), ("sizes", i) / ("numel", i)
# (input i's shape, kept by a linear op); "needed by": PyTorch saves the variable only when one of
# those inputs needs a gradient (None: always).
_DIM = ("dim", ("key", "dim"), None)
SAVED = {
    "MulBackward0": (("other", 1, (0,)), ("self", 0, (1,))),
    "PowBackward0": (("self", 0, None), ("exponent", ("arg", 1, None), None)),
    "DivBackward0": (("other", 1, (0, 1)), ("self", 0, (1,))),
    "PowBackward1": (("exponent", 1, None), ("self", 0, None), ("result", "result", None)),
    "PowBackward2": (("exponent", 0, None), ("self", ("arg", 1, None), None),
                     ("result", "result", None)),
    "MmBackward0": (("mat2", 1, (0,)), ("self", 0, (1,))),  # (PyTorch packs mat2 first)
    "AddmmBackward0": (("mat1", 1, (2,)), ("mat2", 2, (1,)), ("alpha", ("key", "alpha"), None),
                       ("beta", ("key", "beta"), None)),
    "AddBackward0": (("alpha", ("arg", 2, 1), None),),
    "SubBackward0": (("alpha", ("arg", 2, 1), None),),
    "RsubBackward1": (("alpha", ("arg", 2, 1), None),),
    "SumBackward0": (("self_sym_sizes", ("sizes", 0), None),),
    "MeanBackward0": (("self_sym_numel", ("numel", 0), None), ("self_sym_sizes", ("sizes", 0), None)),
    "ViewBackward0": (("self_sym_sizes", ("sizes", 0), None),),
    "ExpBackward0": (("result", "result", None),),
    "SoftmaxBackward0": (("result", "result", None), _DIM),
    "LogSoftmaxBackward0": (("result", "result", None), _DIM),
    "TanhBackward0": (("result", "result", None),),
    "SigmoidBackward0": (("result", "result", None),),
    "SqrtBackward0": (("result", "result", None),),
    "ReluBackward0": (("result", "result", None),),
    "SinBackward0": (("self", 0, None),),
    "CosBackward0": (("self", 0, None),),
    "LogBackward0": (("self", 0, None),),
    "AbsBackward0": (("self", 0, None),),
}
# the nodes that keep a dim and no tensor (a node in this table packs only the table's tensors under
# saved_tensors_hooks): the dim is funcgrad's, made non-negative (PyTorch's is the dim as given, a
# negative one read back as 2**64 + dim, and dims in the order given)
SAVED.update({name: (_DIM,) for name in (
    "SumBackward1", "MeanBackward1", "CumsumBackward0", "CatBackward0", "StackBackward0",
    "UnsqueezeBackward0", "SplitBackward0", "UnbindBackward0")})


PACK_IN_PLACE_MSG = (
    "A saved tensor pack hook is modifying its input in place. Tensors provided as input to pack "
    "hook cannot be modified by in-place operations as this can lead to unexpected side-effects. "
    "Please open an issue if you need to perform in-place operations on the input to a pack hook.")
FREED_HOOKS_MSG = (
    "Calling register_hooks on a saved tensor after it has been freed. Saved intermediate values "
    "of the graph are freed when you call .backward() or autograd.grad(). Specify "
    "retain_graph=True if you need to backward through the graph a second time or if you need to "
    "access saved variables after calling backward.")


def _wrapped(s):
    return _tensor_of(s, dtype=_WRAPPED[type(s)])  # PyTorch's wrapped-number tensor


def _check_version(node, s):
    for t, v in node._versions:
        if t is s and t._ver[0] != v:
            raise RuntimeError(_version_msg(t, v))


def _result(node):
    """The node's saved output, as PyTorch unpacks it: a new tensor on its storage."""
    for so, v in node._versions:
        if type(so) is SavedOutput:
            if so._ver[0] != v:
                raise RuntimeError(_version_msg(so, v))
            t = object.__new__(Tensor)
            t._cell, t._viewinfo, t._ver, t._requires_grad, t._grad_fn = so.cell, None, so._ver, True, node
            return t
    raise AssertionError(f"{type(node).__name__} recorded no saved output")  # (the table is wrong)


def _unpack(packed, source):
    p, unpack = packed[source]
    v = unpack(p)
    if not isinstance(v, Tensor):
        raise TypeError(f"Output of saved tensor unpack_hook expected to be a Tensor but got result "
                        f"of type {type(v).__name__}")
    return v


def _rewrap(v, orig):
    """What PyTorch's unpack makes of ``unpack_hook``'s tensor ``v`` for the saved ``orig``: ``v``
    itself where ``orig`` needs no gradient, else a new tensor on ``v``'s data with ``orig``'s
    place in the graph (its node, or the leaf's AccumulateGrad)."""
    if not orig._requires_grad:
        return v
    if v._viewinfo is None:
        t = object.__new__(Tensor)
        t._cell, t._viewinfo, t._ver = v._cell, None, v._ver
    else:
        t = Tensor._wrap(v._value)
    t._requires_grad, t._grad_fn = True, orig._grad_fn
    if orig._grad_fn is None:
        t._accum = orig._edge()[0]
    elif orig._output_nr:
        t._output_nr = orig._output_nr
    return t


def _orig(node, source):
    return _result(node) if source == "result" else node._saved[source]


def _value(node, source):
    """What ``grad_fn._saved_<name>`` reads (the node saved it: ``source`` passed its condition)."""
    if node._freed:
        raise RuntimeError(FREED_MSG)
    if node._packed is not None and source in node._packed:
        return _rewrap(_unpack(node._packed, source), _orig(node, source))
    if source == "result":
        return _result(node)
    s = node._saved[source]
    if type(s) in _WRAPPED:
        return _wrapped(s)
    _check_version(node, s)
    return s


def _is_saved(node, needed):
    return needed is None or any(node._key[3][i] for i in needed)


def _sources(node, out):
    """The saved tensors PyTorch would pack for ``node``, in its order: (source, tensor)."""
    entries = SAVED.get(type(node).__name__)
    if entries is None:
        return [(i, s) for i, s in enumerate(node._saved) if isinstance(s, Tensor)]
    res = []
    for _attr, source, needed in entries:
        if type(source) is tuple or not _is_saved(node, needed):
            continue
        if source == "result":
            if out is not None:
                res.append((source, out))
        elif isinstance(node._saved[source], Tensor):
            res.append((source, node._saved[source]))
    return res


class _Packed:
    """What a packed input leaves in its node in place of the tensor (PyTorch keeps no reference
    to it either): its place in the graph."""

    __slots__ = ("_requires_grad", "_grad_fn", "_output_nr", "_edge_")

    def __init__(self, t):
        self._requires_grad, self._grad_fn, self._output_nr = t._requires_grad, t._grad_fn, t._output_nr
        self._edge_ = t._edge() if t._requires_grad else None

    def _edge(self):
        return self._edge_


def _drop_packed(saved, versions, positions):
    """``saved`` with each tensor at ``positions`` replaced by its ``_Packed``, and ``versions``
    without the tensors no longer saved: PyTorch checks no version of a packed tensor."""
    saved, packed = list(saved), {}
    for i in positions:
        t = saved[i]
        if id(t) not in packed:
            packed[id(t)] = (t, _Packed(t))
        saved[i] = packed[id(t)][1]
    kept = {id(s) for s in saved}
    return saved, [(t, v) for t, v in versions if id(t) not in packed or id(t) in kept]


def _pack(node, args, out):
    """Dispatch's call for a node recorded while saved_tensors_hooks are entered (in any thread)."""
    stack = SAVED_HOOKS.stack
    if not stack:  # (entered in another thread only)
        return
    sources = _sources(node, out)
    if not sources:
        return
    node._packed = packed = _pack_all(stack, sources)
    node._saved, node._versions = _drop_packed(node._saved, node._versions,
                                               [i for i in packed if i != "result"])


def _pack_all(stack, items) -> dict:
    """``{key: (pack_hook(t), unpack_hook)}`` for ``items`` of ``(key, tensor)``, by the innermost
    hooks entered, under no_grad (PyTorch's errors: hooks disabled, pack writing its input)."""
    if SAVED_HOOKS.disabled is not None:
        raise RuntimeError(SAVED_HOOKS.disabled)
    pack, unpack = stack[-1]
    packed = {}
    with no_grad():
        for key, t in items:
            ver = t._ver[0]
            p = pack(t)
            if t._ver[0] != ver:
                raise RuntimeError(PACK_IN_PLACE_MSG)
            packed[key] = (p, unpack)
    return packed


def _unpacked_saved(self):
    """The node's saved inputs for its backward, each packed one as ``unpack_hook`` returns it
    (PyTorch unpacks every saved variable when the node runs, a saved output too)."""
    saved = list(self._saved)
    for source in self._packed:
        v = _unpack(self._packed, source)
        if source != "result":
            saved[source] = _rewrap(v, saved[source])
    return saved


def pack_ctx(ctx):
    """A custom Function's ``save_for_backward`` tensors, packed as PyTorch packs them (each one
    not None, after the forward; ``ctx.saved_tensors`` unpacks them at each read)."""
    stack = SAVED_HOOKS.stack
    items = [(i, t) for i, t in enumerate(ctx._saved) if t is not None]
    if not stack or not items:
        return
    ctx._packed = packed = _pack_all(stack, items)
    saved, versions = _drop_packed(ctx._saved, ctx._saved_versions, list(packed))
    ctx._saved, ctx._saved_versions = tuple(saved), tuple(versions)


def unpack_ctx(ctx):
    saved = list(ctx._saved)
    for i in ctx._packed:
        saved[i] = _rewrap(_unpack(ctx._packed, i), saved[i])
    return tuple(saved)


OpNode._unpacked_saved = _unpacked_saved
_graph.PACK[0] = _pack


class SavedTensor:
    """``grad_fn._raw_saved_<name>``: one saved variable, whose ``register_hooks(pack, unpack)``
    packs it now and has the backward (and ``_saved_<name>``) unpack it, as PyTorch's."""

    __slots__ = ("_node", "_source", "_needed")

    def __init__(self, node, source, needed):
        self._node, self._source, self._needed = node, source, needed

    def register_hooks(self, pack_hook, unpack_hook) -> None:
        if not (callable(pack_hook) and callable(unpack_hook)):
            raise _callable_error("register_hooks", "(self: funcgrad._C._autograd.SavedTensor, arg0: "
                                  "collections.abc.Callable, arg1: collections.abc.Callable)",
                                  (self, pack_hook, unpack_hook))
        node, source = self._node, self._source
        if node._packed is not None and source in node._packed:
            raise RuntimeError("Calling register_hooks on a saved tensor whose hooks have already been "
                               "set. Hint: only one pair of hooks is allowed at a time.")
        if not _is_saved(node, self._needed):
            raise RuntimeError("Calling register_hooks on a saved tensor with value None is forbidden")
        if node._freed:
            raise RuntimeError(FREED_HOOKS_MSG)
        t = _result(node) if source == "result" else node._saved[source]
        t = _wrapped(t) if type(t) in _WRAPPED else t.detach()
        with no_grad():
            p = pack_hook(t)
        if node._packed is None:
            node._packed = {}
        node._packed[source] = (p, unpack_hook)


SavedTensor.__module__, SavedTensor.__qualname__ = "funcgrad._C._autograd", "SavedTensor"


def _number(node, kind, key, default=None):
    if kind == "key":
        return dict(node._key[0])[key]
    if kind == "arg":  # (an op that keeps only numbers is never freed: saved_nothing)
        if node._saved is None:  # (freed with the node's tensors: PyTorch keeps its numbers)
            raise RuntimeError(FREED_MSG)
        return node._saved[key] if len(node._saved) > key else default
    shape = dict(node._key[4])[key][0]  # (a linear op's avals: kept after the graph is freed)
    return tuple(shape) if kind == "sizes" else math.prod(shape)


def _getters(source, needed):
    def get(node):
        if not _is_saved(node, needed):
            return None  # PyTorch did not save it: no input that needs it requires grad
        if type(source) is tuple:
            return _number(node, *source)
        return _value(node, source)
    return property(get), property(lambda node: SavedTensor(node, source, needed))


for _name, _entries in SAVED.items():
    _cls = node_class(_name, OpNode)
    for _attr, _source, _needed in _entries:
        _get, _raw = _getters(_source, _needed)
        setattr(_cls, "_saved_" + _attr, _get)
        if type(_source) is not tuple:
            setattr(_cls, "_raw_saved_" + _attr, _raw)
