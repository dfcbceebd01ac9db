"""``grad_fn._saved_<name>``: the values a node saved for backward, under PyTorch's names.

PyTorch's generated nodes expose each variable their ``derivatives.yaml`` formula saves
(``MulBackward0._saved_self``/``_saved_other``, ``ExpBackward0._saved_result``...). funcgrad's
``OpNode`` keeps the op's primal inputs (and, for the ops that read their result, the output's
storage cell, ``_dispatch.SavedOutput``); the table below maps PyTorch's names to those, with
the inputs whose gradient makes PyTorch save each one (a variable it did not save reads
``None``, as PyTorch's). Reading one after a backward freed the graph raises PyTorch's error;
reading one modified in place raises the version error, as PyTorch's unpack does.
"""

from __future__ import annotations

from .. import _dtype
from .._dispatch import OpNode, SavedOutput, _version_msg
from .._graph import FREED_MSG, node_class
from .._tensor import Tensor

_WRAPPED = {bool: _dtype.bool_, int: _dtype.int64, float: _dtype.float64, complex: _dtype.complex128}

# node -> ((name, source, needed by), ...): source is an input's position, "result", or
# ("key", name) (a static argument of the op); "needed by": PyTorch saves the variable only
# when one of those inputs needs a gradient (None: always).
SAVED = {
    "MulBackward0": (("self", 0, (1,)), ("other", 1, (0,))),
    "DivBackward0": (("self", 0, (1,)), ("other", 1, (0, 1))),
    "PowBackward1": (("self", 0, None), ("exponent", 1, None), ("result", "result", None)),
    "MmBackward0": (("self", 0, (1,)), ("mat2", 1, (0,))),
    "AddmmBackward0": (("mat1", 1, (2,)), ("mat2", 2, (1,)), ("alpha", ("key", "alpha"), None),
                       ("beta", ("key", "beta"), None)),
    "ExpBackward0": (("result", "result", None),),
    "TanhBackward0": (("result", "result", None),),
    "SigmoidBackward0": (("result", "result", None),),
    "SqrtBackward0": (("result", "result", None),),
    "ReluBackward0": (("result", "result", None),),
    "SinBackward0": (("self", 0, None),),
    "CosBackward0": (("self", 0, None),),
    "LogBackward0": (("self", 0, None),),
    "AbsBackward0": (("self", 0, None),),
}


def _unpack_input(node, i):
    if node._freed:
        raise RuntimeError(FREED_MSG)
    s = node._saved[i]
    if type(s) in _WRAPPED:  # a Python number: PyTorch's wrapped-number tensor
        from .._factories import tensor
        return tensor(s, dtype=_WRAPPED[type(s)])
    for t, v in node._versions:
        if t is s and t._ver[0] != v:
            raise RuntimeError(_version_msg(t, v))
    return s


def _unpack_result(node):
    if node._freed:
        raise RuntimeError(FREED_MSG)
    for so, v in node._versions:
        if type(so) is SavedOutput:
            if so._ver[0] != v:
                raise RuntimeError(_version_msg(so, v))
            t = object.__new__(Tensor)  # a new tensor on the output's storage, as PyTorch's unpack
            t._cell, t._viewinfo, t._ver, t._requires_grad, t._grad_fn = so.cell, None, so._ver, True, node
            return t
    raise AssertionError(f"{type(node).__name__} recorded no saved output")  # (the table is wrong)


def _getter(source, needed):
    def get(node):
        if needed is not None and not any(node._key[3][i] for i in needed):
            return None  # PyTorch did not save it: no input that needs it requires grad
        if source == "result":
            return _unpack_result(node)
        if type(source) is tuple:
            return dict(node._key[0])[source[1]]
        return _unpack_input(node, source)
    return property(get)


for _name, _entries in SAVED.items():
    _cls = node_class(_name, OpNode)
    for _attr, _source, _needed in _entries:
        setattr(_cls, "_saved_" + _attr, _getter(_source, _needed))
