"""Computational-graph pictures: leaves blue, the root green, backward nodes grey.

``make_dot(root, params=dict(model.named_parameters()))`` walks ``grad_fn.next_functions`` (the
graph ``backward()`` runs) and returns a ``Graph``: its ``.source`` is Graphviz DOT; ``.svg()``
renders with the ``dot`` program when it is installed and otherwise with a small built-in
layered layout, so pictures work on a fresh machine; ``.render(path)`` writes ``.svg``/``.dot``
(``.png`` needs ``dot``); in Jupyter the graph displays inline.

>>> import funcgrad
>>> x = funcgrad.ones(2, requires_grad=True)
>>> g = make_dot((x * 2).sum(), params={"x": x})
>>> [n["label"].split("\\n")[0] for n in g.nodes]
['SumBackward0', 'MulBackward0', 'x']
"""

from __future__ import annotations

import html
import os
import re
import shutil
import subprocess

from ._tensor import Tensor
from .autograd.graph import AccumulateGrad

LEAF, ROOT, OP, SAVED = "lightblue", "darkolivegreen1", "lightgrey", "orange"


def _shape(t) -> str:
    return "(" + ", ".join(map(str, t.shape)) + ")"


class Graph:
    """A drawn autograd graph: ``nodes`` (dicts with id/label/color) and ``edges`` (id pairs)."""

    def __init__(self, nodes: list[dict], edges: list[tuple[str, str]], title: str = ""):
        self.nodes, self.edges, self.title = nodes, edges, title

    @property
    def source(self) -> str:
        """The graph in Graphviz DOT."""
        lines = ["digraph {", '  graph [rankdir=BT, size="12,12"]',
                 '  node [shape=box, style=filled, fontname=monospace, fontsize=10]']
        for n in self.nodes:
            label = n["label"].replace('"', '\\"').replace("\n", "\\n")
            lines.append(f'  "{n["id"]}" [label="{label}", fillcolor={n["color"]}]')
        for a, b in self.edges:
            lines.append(f'  "{a}" -> "{b}"')
        lines.append("}")
        return "\n".join(lines)

    def svg(self) -> str:
        """SVG text: via the ``dot`` program if installed, else the built-in layout."""
        if shutil.which("dot"):
            try:
                return subprocess.run(["dot", "-Tsvg"], input=self.source.encode(), check=True,
                                      capture_output=True, timeout=60).stdout.decode()
            except (subprocess.SubprocessError, OSError):
                pass
        return self._builtin_svg()

    def _builtin_svg(self) -> str:
        # Layered layout: a node's layer is its longest distance from a source of the edges
        # (leaves at the top, the root at the bottom, as `rankdir=BT` draws it).
        ids = [n["id"] for n in self.nodes]
        preds = {i: [] for i in ids}
        for a, b in self.edges:
            preds[b].append(a)
        layer = {}
        order = list(ids)
        for _ in range(len(ids)):
            changed = False
            for i in order:
                lv = max((layer.get(p, 0) + 1 for p in preds[i]), default=0)
                if layer.get(i) != lv:
                    layer[i], changed = lv, True
            if not changed:
                break
        rows: dict[int, list[str]] = {}
        for i in ids:
            rows.setdefault(layer[i], []).append(i)
        w, h, gx, gy = 170, 40, 30, 40
        width = max(len(r) for r in rows.values()) * (w + gx) + gx
        height = len(rows) * (h + gy) + gy
        pos = {}
        for lv, r in rows.items():
            off = (width - len(r) * (w + gx) + gx) / 2
            for k, i in enumerate(r):
                pos[i] = (off + k * (w + gx), gy + lv * (h + gy))
        out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
               f'font-family="monospace" font-size="11">']
        colors = {LEAF: "#add8e6", ROOT: "#caff70", OP: "#d3d3d3", SAVED: "#ffa500"}
        for a, b in self.edges:
            (x1, y1), (x2, y2) = pos[a], pos[b]
            out.append(f'<line x1="{x1 + w / 2}" y1="{y1 + h}" x2="{x2 + w / 2}" y2="{y2}" '
                       f'stroke="black" marker-end="url(#a)"/>')
        out.insert(1, '<defs><marker id="a" markerWidth="8" markerHeight="8" refX="8" refY="4" '
                      'orient="auto"><path d="M0,0 L8,4 L0,8 z"/></marker></defs>')
        for n in self.nodes:
            x, y = pos[n["id"]]
            out.append(f'<rect x="{x}" y="{y}" width="{w}" height="{h}" fill="{colors[n["color"]]}" '
                       f'stroke="black"/>')
            for k, line in enumerate(n["label"].split("\n")[:2]):
                out.append(f'<text x="{x + w / 2}" y="{y + 16 + 14 * k}" text-anchor="middle">'
                           f'{html.escape(line[:26])}</text>')
        out.append("</svg>")
        return "\n".join(out)

    def _repr_svg_(self) -> str:
        return self.svg()

    def render(self, path: str) -> str:
        """Write the picture; the extension picks the format (.svg, .dot, .png with ``dot``)."""
        ext = os.path.splitext(path)[1].lower()
        if ext == ".dot":
            data = self.source.encode()
        elif ext == ".svg":
            data = self.svg().encode()
        elif ext in (".png", ".pdf"):
            if not shutil.which("dot"):
                raise RuntimeError(f"rendering {ext} needs the Graphviz 'dot' program (apt-get install "
                                   f"graphviz); .svg and .dot work without it")
            data = subprocess.run(["dot", "-T" + ext[1:]], input=self.source.encode(), check=True,
                                  capture_output=True, timeout=60).stdout
        else:
            raise ValueError(f"unknown picture format {ext!r}: use .svg, .dot, .png or .pdf")
        with open(path, "wb") as f:
            f.write(data)
        return path

    def __repr__(self) -> str:
        return f"<funcgrad.viz.Graph: {len(self.nodes)} nodes, {len(self.edges)} edges>"


def make_dot(root, params: dict | None = None, show_saved: bool = False) -> Graph:
    """Draw the backward graph of ``root`` (a Tensor, or a tuple/list of Tensors).

    Args:
        root: the output(s) whose ``grad_fn`` graph is drawn (green).
        params: ``{name: tensor}`` to label leaves (e.g. ``dict(model.named_parameters())``).
        show_saved: also draw the tensors each node saved for backward (orange).
    """
    roots = [root] if isinstance(root, Tensor) else list(root)
    names = {id(t): n for n, t in (params or {}).items()}
    nodes, edges, seen = [], [], {}

    def add(key, label, color):
        if key not in seen:
            seen[key] = f"n{len(seen)}"
            nodes.append(dict(id=seen[key], label=label, color=color))
        return seen[key]

    stack = []
    for r in roots:
        if r.grad_fn is None:
            add(id(r), f"{names.get(id(r), 'tensor')}\n{_shape(r)}", ROOT)
            continue
        rid = add(id(r.grad_fn), f"{r.grad_fn.name()}\n{_shape(r)}", ROOT)
        stack.append((r.grad_fn, rid))
    done = set()
    while stack:
        fn, fid = stack.pop()
        if id(fn) in done:
            continue
        done.add(id(fn))
        if show_saved:
            for t in getattr(fn, "_saved", None) or ():
                if isinstance(t, Tensor):
                    sid = add(("saved", id(t)), f"saved\n{_shape(t)}", SAVED)
                    edges.append((sid, fid))
        for child, _ in fn.next_functions:
            if child is None:
                continue
            if isinstance(child, AccumulateGrad):
                v = child.variable
                label = f"{names.get(id(v), '')}\n{_shape(v)}".lstrip("\n") if v is not None else "(freed)"
                cid = add(id(child), label, LEAF)
            else:
                cid = add(id(child), child.name(), OP)
                stack.append((child, cid))
            edges.append((cid, fid))
    return Graph(nodes, edges)


# one StableHLO/MHLO/CHLO operation per line: optional results (``%3 =``, ``%0:2 =``), then the
# op name, in the pretty (``stablehlo.add %1, %2``) or the generic (``"stablehlo.while"(...)``) form;
# attribute lines (``module @m attributes {mhlo.num_partitions = 1 : i32}``) do not start so
_HLO_OP = re.compile(r'^\s*(?:%[\w#:.$-]+(?:\s*,\s*%[\w#:.$-]+)*\s*=\s*)?'  # results
                     r'"?((?:stablehlo|mhlo|chlo)\.[A-Za-z_][\w.]*)')  # the op name
_TERMINATORS = ("stablehlo.return", "mhlo.return")


def compiled_summary(fn, *args, **kwargs) -> dict:
    """Op counts of a compiled step's XLA program: ``{'ops': total, 'by_op': {name: count}}``.

    ``fn`` is a ``funcgrad.jit``-compiled step (uses its ``lower``, which traces without running
    the step) or any jax-traceable function. Counts the StableHLO operations of every function of
    the lowered module (region terminators such as ``stablehlo.return`` are not counted), most
    frequent first.

    >>> import jax.numpy as jnp
    >>> s = compiled_summary(lambda x, y: jnp.tanh(x @ y), jnp.ones((2, 3)), jnp.ones((3, 4)))
    >>> s["by_op"]["stablehlo.dot_general"], s["by_op"]["stablehlo.tanh"], s["ops"]
    (1, 1, 2)
    """
    lower = getattr(fn, "lower", None)
    if lower is None:
        import jax
        lowered = jax.jit(fn).lower(*args, **kwargs)
    else:
        lowered = lower(*args, **kwargs)
    counts: dict[str, int] = {}
    for line in lowered.as_text().splitlines():
        m = _HLO_OP.match(line)
        if m is not None and m.group(1) not in _TERMINATORS:
            counts[m.group(1)] = counts.get(m.group(1), 0) + 1
    return {"ops": sum(counts.values()), "by_op": dict(sorted(counts.items(), key=lambda kv: -kv[1]))}
