"""funcgrad's import graph is a DAG whose layers point one way (DESIGN §6, issue 16 item 5):

    _dtype, _device, _storage, graph, grad_mode → _tensor → _factories → _dispatch → _ops
    → autograd → nn/optim → _jit → parallel/export

Every module of the package is parsed with ``ast`` (module-level and function-level imports,
relative imports resolved, and the parent packages an import runs); the test fails on a cycle among
module-level imports, on a function-local import of a funcgrad module that is not in ``ALLOWED_LOCAL``
(with its reason), on an import of a higher layer from a lower one, and on a module attribute of
another funcgrad module assigned from outside it (``_dispatch._Tensor = Tensor``-style injection).
"""

from __future__ import annotations

import ast
import importlib
import sys
from pathlib import Path

import pytest

PKG = Path(__file__).resolve().parent.parent / "funcgrad"

# (rank, module-name prefixes relative to ``funcgrad``): a module may import its own rank or lower.
# The longest matching prefix decides; "" is the package's __init__ (the public namespace, on top).
LAYERS = [
    (0, ["_xla_flags", "_atomic", "_broadcast", "_dtype", "_meta", "_device", "_storage", "_graph", "_grad_mode", "_structure", "_errors", "_cache",
         "_compile_cache", "_ahead", "_lift", "_strides", "_tensor_str", "_runtime", "_version", "_scalars",
         "_random._engine",
         "_random._jax_mt", "_random._jax_scalar", "backends", "accelerator"]),
    (1, ["_tensor", "_numpy_share", "_random"]),   # the Generator and samplers hand out Tensors
    (2, ["_factories", "_legacy"]),
    (3, ["_dispatch", "_host", "amp.autocast_mode"]),       # autocast sets its cast hook in dispatch's slot
    # the op table and its public namespaces; sparse COO tensors, whose kernels are ops of the table
    (4, ["_ops", "linalg", "special", "fft", "functional", "_sparse", "sparse"]),
    (5, ["autograd", "amp"]),
    # parallel's sharding helpers are the base of nn.parallel (DistributedDataParallel), so the
    # module sits with nn (its one call into _jit, compiled_text, is in ALLOWED_LOCAL)
    (6, ["nn", "optim", "utils", "distributions", "serialization", "_serialization", "testing", "viz",
         "parallel"]),
    (7, ["_jit"]),
    (8, ["func", "_export", "onnx", "distributed"]),
    (9, ["", "bench", "examples"]),
]

# modules reachable under a second name (the same module object; see funcgrad/autograd/__init__.py)
ALIASES = {"funcgrad.autograd.graph": "funcgrad._graph",
           "funcgrad.autograd.grad_mode": "funcgrad._grad_mode"}

# function-local imports of funcgrad modules that stay, (importer, imported): reason. An importer
# "pkg.*" with "*" covers every function-local import in that package.
ALLOWED_LOCAL = {
    ("funcgrad.nn.utils.stateless", "funcgrad.func"):
        "the deprecated nn.utils.stateless.functional_call calls funcgrad.func.functional_call (an upward "
        "call, as its FutureWarning says: torch.func's is the implementation now)",
    ("funcgrad.nn.layers.normalization", "funcgrad.distributed"):
        "SyncBatchNorm's training forward asks whether a process group is initialized and its size (an "
        "upward call, as torch.nn.SyncBatchNorm asks torch.distributed)",
    ("funcgrad.nn.module", "funcgrad._jit"):
        "Module.compile() compiles the module's own calls (an upward call, as torch.nn.Module.compile "
        "calls torch.compile)",
    ("funcgrad.parallel", "funcgrad._jit"):
        "compiled_text inspects a funcgrad.jit step (an upward call); the rest of parallel.py, the "
        "sharding helpers, is the base of nn.parallel, which nn imports, and nn must not import _jit",
    ("funcgrad._random", "funcgrad._random._jax_mt"):
        "the traced MT19937 kernels, needed only by the first draw inside a compiled step",
    ("funcgrad._random._sample", "funcgrad._random._jax_scalar"):
        "the traced scalar samplers, needed only by draws inside a compiled step",
    ("funcgrad._serialization._torch_names", "funcgrad.nn"):
        "a checkpoint's pickled torch.nn.parameter.Parameter, resolved by name when a file names it "
        "(as pickle resolves globals); serialization is imported before nn and does not need it",
    ("funcgrad._serialization._torch_names", "funcgrad.nn.parameter"): "as the entry above",
    ("funcgrad.bench.*", "*"):
        "benchmark scripts, on top of every layer and imported by nothing in the package: each "
        "benchmark function imports what it times",
}


def _allowed(m: str, t: str):
    """The ALLOWED_LOCAL key covering the function-local import ``m -> t``, or None."""
    for key in ((m, t), *((p + ".*", "*") for p in _parents(m))):
        if key in ALLOWED_LOCAL:
            return key
    return None


def _parents(m: str) -> list:
    parts = m.split(".")
    return [".".join(parts[:i]) for i in range(len(parts), 0, -1)]


def _layer(mod: str) -> int:
    rel = mod[len("funcgrad."):] if mod.startswith("funcgrad.") else ""
    best, rank = -1, None
    for r, prefixes in LAYERS:
        for p in prefixes:
            if (rel == p or rel.startswith(p + ".") or p == "") and len(p) > best:
                best, rank = len(p), r
    return rank


def _modules() -> dict:
    mods = {}
    for p in sorted(PKG.rglob("*.py")):
        parts = list(p.relative_to(PKG.parent).with_suffix("").parts)
        is_pkg = parts[-1] == "__init__"
        mods[".".join(parts[:-1] if is_pkg else parts)] = (p, is_pkg)
    return mods


MODULES = _modules()


class _Imports(ast.NodeVisitor):
    """Collect (target module, function-local?, line) for one module, plus injections."""

    def __init__(self, mod: str, is_pkg: bool):
        self.mod, self.is_pkg, self.depth = mod, is_pkg, 0
        self.edges: list = []
        self.module_names: set = set()  # local names bound to funcgrad modules
        self.injections: list = []

    def visit_FunctionDef(self, node):
        self.depth += 1
        self.generic_visit(node)
        self.depth -= 1

    visit_AsyncFunctionDef = visit_Lambda = visit_FunctionDef

    def visit_If(self, node):
        test = node.test
        if getattr(test, "id", None) == "TYPE_CHECKING" or getattr(test, "attr", None) == "TYPE_CHECKING":
            for stmt in node.orelse:
                self.visit(stmt)
            return
        self.generic_visit(node)

    def _add(self, target: str, line: int, importer_needs_init: bool = False) -> None:
        parts = target.split(".")
        for i in range(1, len(parts) + 1):
            name = ".".join(parts[:i])
            ancestor = self.mod == name or self.mod.startswith(name + ".")
            if ancestor and not (importer_needs_init and i == len(parts)):
                continue  # a parent package is already being imported (and imports this module)
            self.edges.append((ALIASES.get(name, name), self.depth > 0, line))

    def visit_Import(self, node):
        for a in node.names:
            if a.name.split(".")[0] == "funcgrad":
                # ``import funcgrad.x`` binds ``funcgrad``: the code then reads the package namespace
                self._add(a.name, node.lineno, importer_needs_init=a.asname is None)
                if a.asname:
                    self.module_names.add(a.asname)

    def visit_ImportFrom(self, node):
        if node.level:
            base = self.mod.split(".")
            if not self.is_pkg:
                base = base[:-1]
            base = base[:len(base) - (node.level - 1)]
            target = ".".join(base + ([node.module] if node.module else []))
        else:
            target = node.module or ""
            if target.split(".")[0] != "funcgrad":
                return
        names_only = True
        for a in node.names:
            sub = f"{target}.{a.name}"
            if ALIASES.get(sub, sub) in MODULES:
                self._add(sub, node.lineno)
                self.module_names.add(a.asname or a.name)
            else:
                names_only = False
        # ``from package import name`` where name is not a submodule reads the package's __init__
        self._add(target, node.lineno, importer_needs_init=not names_only)

    def visit_Assign(self, node):
        for t in node.targets:
            if isinstance(t, ast.Attribute) and isinstance(t.value, ast.Name) and \
                    t.value.id in self.module_names:
                self.injections.append((node.lineno, f"{t.value.id}.{t.attr} = ..."))
        self.generic_visit(node)

    def visit_Call(self, node):
        f = node.func
        if getattr(f, "attr", getattr(f, "id", None)) == "import_module" and node.args and \
                isinstance(node.args[0], ast.Constant) and str(node.args[0].value).startswith("funcgrad"):
            self._add(node.args[0].value, node.lineno)  # importlib.import_module("funcgrad.x")
        if isinstance(f, ast.Name) and f.id == "setattr" and node.args and \
                isinstance(node.args[0], ast.Name) and node.args[0].id in self.module_names:
            self.injections.append((node.lineno, f"setattr({node.args[0].id}, ...)"))
        self.generic_visit(node)


def _scan() -> dict:
    out = {}
    for mod, (path, is_pkg) in MODULES.items():
        v = _Imports(mod, is_pkg)
        v.visit(ast.parse(path.read_text(), str(path)))
        out[mod] = v
    return out


SCAN = _scan()


def test_every_module_has_a_layer():
    assert not [m for m in MODULES if _layer(m) is None]


def _cycles(graph: dict) -> list:
    """Cycles met by a depth-first walk of ``graph`` (module -> imported modules)."""
    state: dict = {}
    cycles = []

    def visit(m, path):  # recursion is fine: the package's import depth is small
        state[m] = 1
        path.append(m)
        for t in graph[m]:
            if state.get(t) == 1:
                cycles.append(path[path.index(t):] + [t])
            elif t not in state:
                visit(t, path)
        path.pop()
        state[m] = 2

    for m in graph:
        if m not in state:
            visit(m, [])
    return cycles


def test_no_cycle_among_module_level_imports():
    graph = {m: sorted({t for t, local, _ in v.edges if not local and t in MODULES and t != m})
             for m, v in SCAN.items()}
    cycles = _cycles(graph)
    assert not cycles, "import cycles:\n" + "\n".join(" -> ".join(c) for c in cycles)


def test_cycle_finder():
    assert _cycles({"a": ["b"], "b": ["c"], "c": ["a"], "d": ["a"]}) == [["a", "b", "c", "a"]]
    assert _cycles({"a": ["b", "c"], "b": ["c"], "c": []}) == []


def test_function_local_imports_are_allowlisted():
    found = {(m, t, line) for m, v in SCAN.items() for t, local, line in v.edges
             if local and t in MODULES and t != m}
    unexpected = sorted(f"{m}:{line} imports {t} inside a function" for m, t, line in found
                        if _allowed(m, t) is None)
    assert not unexpected, "\n".join(unexpected)
    used = {_allowed(m, t) for m, t, _ in found}
    stale = sorted(k for k in ALLOWED_LOCAL if k not in used)
    assert not stale, f"ALLOWED_LOCAL entries that match nothing (remove them): {stale}"
    assert all(reason.strip() for reason in ALLOWED_LOCAL.values())


def test_layers_point_one_way():
    bad = []
    for m, v in SCAN.items():
        for t, local, line in v.edges:
            if t in MODULES and not (local and _allowed(m, t)) and _layer(t) > _layer(m):
                bad.append(f"{m}:{line} (layer {_layer(m)}) imports {t} (layer {_layer(t)})"
                           + (" inside a function" if local else ""))
    assert not bad, "\n".join(sorted(bad))


def test_no_attribute_injection_into_other_modules():
    bad = [f"{m}:{line}: {what}" for m, v in SCAN.items() for line, what in v.injections]
    assert not bad, "\n".join(bad)


def test_aliases_are_the_same_module_objects():
    for alias, real in ALIASES.items():
        assert importlib.import_module(alias) is importlib.import_module(real) is sys.modules[alias]


@pytest.mark.parametrize("case", [
    # (source, module name, is package, expected (target, local) edges)
    ("from . import _dtype", "funcgrad._tensor", False, {("funcgrad._dtype", False)}),
    ("def f():\n    from .._tensor import Tensor", "funcgrad._ops.shape", False,
     {("funcgrad._tensor", True)}),
    ("from .autograd.graph import Node", "funcgrad._dispatch", False,
     {("funcgrad.autograd", False), ("funcgrad._graph", False)}),
    ("from .. import _cache", "funcgrad.autograd", True, {("funcgrad._cache", False)}),
    ("import funcgrad.nn as nn", "funcgrad._jit.trace", False,
     {("funcgrad.nn", False)}),
    ("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from . import nn", "funcgrad._jit", True,
     set()),
    ("def f():\n    return importlib.import_module('funcgrad.nn.parameter')", "funcgrad.serialization",
     False, {("funcgrad.nn", True), ("funcgrad.nn.parameter", True)}),
])
def test_scanner_resolves_imports(case):
    """The scanner itself: relative imports, parent packages, aliases, TYPE_CHECKING blocks."""
    src, mod, is_pkg, expected = case
    v = _Imports(mod, is_pkg)
    v.visit(ast.parse(src))
    assert {(t, local) for t, local, _ in v.edges} == expected


def test_scanner_sees_a_cycle_and_an_injection():
    v = _Imports("funcgrad._tensor", False)
    v.visit(ast.parse("from . import _dispatch\n_dispatch._Tensor = object\n"
                      "def f():\n    import funcgrad.autograd as m\n"))
    assert v.injections == [(2, "_dispatch._Tensor = ...")]
    assert ("funcgrad._dispatch", False, 1) in v.edges and ("funcgrad.autograd", True, 4) in v.edges
    assert _layer("funcgrad._dispatch") > _layer("funcgrad._tensor")
