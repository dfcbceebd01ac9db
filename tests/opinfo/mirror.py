"""The spec table's calls (tests/op_specs), each run on funcgrad and, unchanged, on PyTorch.

Every ``Spec.fg`` is a user-level funcgrad call (``lambda x: x.clamp(-0.5, 0.5)``,
``F.conv2d``…). ``to_torch`` rebinds it to PyTorch: a lambda gets a copy of its globals where each
funcgrad module and function is replaced by PyTorch's namesake (``fg`` → ``torch``, ``F`` →
``torch.nn.functional``), so one line of test code is the program for both libraries. This
gives every op of the table at least its spec rows' inputs against the oracle; the edge-value
families live beside (pointwise.py, reduce.py).
"""

from __future__ import annotations

import importlib
import pkgutil
import types

import numpy as np

import funcgrad
import funcgrad.linalg
import funcgrad.nn.functional
import funcgrad.special

from .. import op_specs
from . import Sample, allowlist

_NAMESPACES = [("funcgrad", funcgrad), ("funcgrad.nn.functional", funcgrad.nn.functional),
               ("funcgrad.linalg", funcgrad.linalg), ("funcgrad.special", funcgrad.special)]
# funcgrad module -> the dotted path of its PyTorch counterpart
_MODULES = {"funcgrad": "torch", "funcgrad.nn.functional": "torch.nn.functional",
            "funcgrad.nn._functional_loss": "torch.nn.functional",
            "funcgrad.nn._functional_attention": "torch.nn.functional",
            "funcgrad.linalg": "torch.linalg", "funcgrad.special": "torch.special"}
# spec-table calls into funcgrad internals with no PyTorch spelling (see EXCLUDED_SPECS)
_FUNCS = {"pad": "torch.nn.functional.pad"}


def _resolve(path):
    """The object at a dotted path (``torch.nn.functional`` or ``torch.nn.functional.pad``)."""
    try:
        return importlib.import_module(path)
    except ImportError:
        mod, _, name = path.rpartition(".")
        return getattr(importlib.import_module(mod), name)


class Untranslatable(Exception):
    pass


def _torch_value(name, v, memo):
    if isinstance(v, types.ModuleType):
        if v.__name__ in _MODULES:
            return _resolve(_MODULES[v.__name__])
        if v.__name__.startswith("funcgrad"):
            raise Untranslatable(f"module {v.__name__}")
        return v
    if name in _FUNCS and callable(v):
        return _resolve(_FUNCS[name])
    if isinstance(v, types.FunctionType) and v.__module__ and v.__module__.startswith("tests."):
        return to_torch(v, memo)
    if callable(v) and getattr(v, "__module__", "") and str(getattr(v, "__module__", "")).startswith("funcgrad"):
        return _torch_function(v)
    return v


def _torch_function(f):
    for path, ns in _NAMESPACES:
        names = [getattr(f, "__name__", None)] + [n for n, g in vars(ns).items() if g is f]
        for n in names:
            if n and getattr(ns, n, None) is f:
                try:
                    return _resolve(f"{_MODULES[path]}.{n}")
                except AttributeError:  # a helper the namespace imported (e.g. apply), not torch's
                    continue
    raise Untranslatable(f"{getattr(f, '__module__', '?')}.{getattr(f, '__name__', f)}")


def to_torch(f, memo=None):
    """The same call with PyTorch's functions (see the module docstring)."""
    memo = {} if memo is None else memo
    if f in memo:
        return memo[f]
    if not isinstance(f, types.FunctionType) or not (f.__module__ or "").startswith("tests."):
        memo[f] = g = _torch_function(f)
        return g
    names = set(f.__code__.co_names)
    for c in f.__code__.co_consts:  # nested lambdas / comprehensions read globals too
        if isinstance(c, types.CodeType):
            names |= set(c.co_names)
    glb = dict(f.__globals__)
    for n in names:
        if n in glb:
            glb[n] = _torch_value(n, glb[n], memo)
    g = types.FunctionType(f.__code__, glb, f.__name__, f.__defaults__, f.__closure__)
    if f.__closure__:
        cells = []
        for name, cell in zip(f.__code__.co_freevars, f.__closure__):
            cells.append(types.CellType(_torch_value(name, cell.cell_contents, memo)))
        g = types.FunctionType(f.__code__, glb, f.__name__, f.__defaults__, tuple(cells))
    memo[f] = g
    return g


def _specs():
    """(spec module name, spec) for every row of the spec table."""
    out = []
    for m in pkgutil.iter_modules(op_specs.__path__):
        mod = importlib.import_module(f"{op_specs.__name__}.{m.name}")
        out.extend((m.name, s) for s in getattr(mod, "SPECS", []))
    return out


def _sample(spec, n):
    try:
        tf = to_torch(spec.fg)
    except Untranslatable as e:
        return None, str(e)
    fgf = spec.fg

    def call(lib, *xs):
        return (tf if lib.__name__ == "torch" else fgf)(*xs)
    arrs = spec.make_inputs()
    floats = [i for i, a in enumerate(arrs) if np.issubdtype(a.dtype, np.floating)]
    grad = () if spec.nondiff else tuple(spec.grad if spec.grad is not None else floats)
    return Sample(spec.op, call, arrs, grad=grad, id=f"spec:{spec.id or spec.op}#{n}",
                  rtol=max(spec.rtol, 1e-7), atol=max(spec.atol, 1e-9)), None


def build():
    """Samples grouped by spec module (one sweep test each, so pytest-xdist spreads them)."""
    groups, untranslated, count = {}, {}, {}
    for mod, s in _specs():
        if s.op in allowlist.EXCLUDED:
            continue
        k = s.id or s.op
        count[k] = count.get(k, 0) + 1
        smp, why = _sample(s, count[k])
        if smp is None:
            untranslated[f"{s.op}/spec:{k}#{count[k]}"] = why
        else:
            groups.setdefault(mod, []).append(smp)
    return groups, untranslated


GROUPS, UNTRANSLATED = build()
SAMPLES = [s for g in GROUPS.values() for s in g]

