"""Computational-graph pictures: leaves blue, the root green, backward nodes grey.

``make_dot(root, params=dict(model.named_parameters()))`` walks ``grad_fn.next_functions`` (the
graph ``backward()`` runs) and returns a ``Graph``: its ``.source`` is Graphviz DOT; ``.svg()``
renders with Graphviz's layout when the ``dot`` program is installed (through the optional
``graphviz`` package when present) and otherwise with a built-in layered (Sugiyama-style)
layout whose edges are routed around boxes through dummy nodes, each arrow at its own port,
labels whole, so pictures work on a fresh machine; ``.render(path)`` writes ``.svg``/``.dot``
(``.png``/``.pdf`` need ``dot``); in Jupyter the graph displays inline.

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

try:  # the optional ``graphviz`` package (``pip install 'funcgrad[graphviz]'``); it drives ``dot``
    import graphviz as _graphviz
except ImportError:  # pragma: no cover - depends on the environment
    _graphviz = None

LEAF, ROOT, OP, SAVED = "lightblue", "darkolivegreen1", "lightgrey", "orange"
_FILL = {LEAF: "#add8e6", ROOT: "#caff70", OP: "#d3d3d3", SAVED: "#ffa500"}
_NO_DOT = ("rendering .{} needs Graphviz's 'dot' program: apt-get install graphviz (or brew/conda "
           "install graphviz); .svg and .dot work without it")

# Geometry of the built-in layout (px); a monospace glyph of font-size 11 is ~6.6 px wide.
_CHAR_W, _LINE_H, _PAD_X, _PAD_Y = 7.0, 14, 10, 7
_GAP_X, _GAP_Y, _DUMMY_W, _MARGIN = 24, 46, 10, 12


def has_dot() -> bool:
    """Whether Graphviz's ``dot`` program is on ``PATH`` (then pictures use Graphviz's layout)."""
    return shutil.which("dot") is not None


def _run_dot(source: str, fmt: str) -> bytes:
    if not has_dot():
        raise RuntimeError(_NO_DOT.format(fmt))
    if _graphviz is not None:
        return _graphviz.Source(source).pipe(format=fmt)
    return subprocess.run(["dot", "-T" + fmt], input=source.encode(), check=True,
                          capture_output=True, timeout=60).stdout


def _layers(ids, edges):
    # A node's row is its longest path to a sink, counted from the bottom: the root is the
    # lowest row and each leaf sits just above the first operation that uses it.
    succ = {i: [] for i in ids}
    for a, b in edges:
        succ[a].append(b)
    depth: dict = {}

    def visit(i):
        stack = [(i, False)]
        while stack:
            v, expanded = stack.pop()
            if v in depth:
                continue
            if expanded or not succ[v]:
                depth[v] = 1 + max((depth[s] for s in succ[v]), default=-1)
                continue
            stack.append((v, True))
            stack.extend((s, False) for s in succ[v] if s not in depth)

    for i in ids:
        visit(i)
    top = max(depth.values(), default=0)
    return {i: top - d for i, d in depth.items()}


def _layout(nodes, edges):
    """Sugiyama-style layout: rows, dummy nodes on long edges, barycentre ordering, x placement.

    Returns (boxes, routes, size): boxes ``{id: (x, y, w, h)}``; routes one point list per edge,
    from a port on the bottom of its tail box to a port on the top of its head box, every
    segment either inside the gap between two rows or vertical through a dummy node's slot, so
    no edge crosses a box; and the canvas size.
    """
    ids = [n["id"] for n in nodes]
    row = _layers(ids, edges)
    width = {n["id"]: max(map(len, n["label"].split("\n"))) * _CHAR_W + 2 * _PAD_X for n in nodes}
    lines = {n["id"]: n["label"].count("\n") + 1 for n in nodes}
    # chains of dummy nodes: edge k from row r to row r + s gets dummies in rows r+1 .. r+s-1
    chains, nrows = [], max(row.values(), default=0) + 1
    for k, (a, b) in enumerate(edges):
        chain = [a]
        for r in range(row[a] + 1, row[b]):
            d = ("dummy", k, r)
            row[d], width[d] = r, _DUMMY_W
            chain.append(d)
        chains.append(chain + [b])
    rows = [[] for _ in range(nrows)]
    for v in list(ids) + [d for c in chains for d in c[1:-1]]:
        rows[row[v]].append(v)
    up, down = {v: [] for v in row}, {v: [] for v in row}
    for c in chains:
        for u, v in zip(c, c[1:]):
            down[u].append(v)
            up[v].append(u)
    # order each row by the barycentre of its neighbours' positions, sweeping down then up
    pos = {v: k for r in rows for k, v in enumerate(r)}
    for sweep in range(8):
        seq = range(1, nrows) if sweep % 2 == 0 else range(nrows - 2, -1, -1)
        for r in seq:
            nb = up if sweep % 2 == 0 else down
            key = {v: (sum(pos[u] for u in nb[v]) / len(nb[v]) if nb[v] else pos[v]) for v in rows[r]}
            rows[r].sort(key=lambda v: (key[v], pos[v]))
            pos.update({v: k for k, v in enumerate(rows[r])})
    # x: pack each row, then pull every node toward its neighbours' centres without breaking
    # the row's order or the minimum gaps (alternating directions, a few rounds)
    cx = {}
    for r in rows:
        x = 0.0
        for v in r:
            cx[v] = x + width[v] / 2
            x += width[v] + _GAP_X
    for sweep in range(12):
        nb = up if sweep % 2 == 0 else down
        for r in (rows if sweep % 2 == 0 else rows[::-1]):
            want = {v: (sum(cx[u] for u in nb[v]) / len(nb[v]) if nb[v] else cx[v]) for v in r}
            for k, v in enumerate(r):  # left to right: keep clear of the left neighbour
                lo = cx[r[k - 1]] + (width[r[k - 1]] + width[v]) / 2 + _GAP_X if k else -1e18
                cx[v] = max(want[v], lo)
            for k in range(len(r) - 2, -1, -1):  # right to left: and of the right one
                v, w = r[k], r[k + 1]
                cx[v] = min(cx[v], cx[w] - (width[v] + width[w]) / 2 - _GAP_X)
    left = min((cx[v] - width[v] / 2 for v in cx), default=0.0)
    for v in cx:
        cx[v] += _MARGIN - left
    row_h = [max((lines.get(v, 1) for v in r), default=1) * _LINE_H + 2 * _PAD_Y for r in rows]
    row_y = [_MARGIN + sum(row_h[:r]) + r * _GAP_Y for r in range(nrows)]
    boxes = {v: (cx[v] - width[v] / 2, row_y[row[v]], width[v], row_h[row[v]]) for v in ids}
    # ports: a box's outgoing edges leave its bottom side at distinct points, incoming edges
    # arrive on its top side at distinct points, each ordered by where the other end lies
    def spread(v, keys):
        x, _, w, _ = boxes[v]
        order = sorted(range(len(keys)), key=lambda j: keys[j])
        return {j: x + w * (rank + 1) / (len(keys) + 1) for rank, j in enumerate(order)}

    out_k, in_k = {}, {}
    for k, c in enumerate(chains):
        out_k.setdefault(c[0], []).append(k)
        in_k.setdefault(c[-1], []).append(k)
    out_x, in_x = {}, {}
    for v, ks in out_k.items():
        for j, px in spread(v, [cx[chains[k][1]] for k in ks]).items():
            out_x[ks[j]] = px
    for v, ks in in_k.items():
        for j, px in spread(v, [cx[chains[k][-2]] for k in ks]).items():
            in_x[ks[j]] = px
    routes = []
    for k, c in enumerate(chains):
        a, b = c[0], c[-1]
        pts = [(out_x[k], boxes[a][1] + boxes[a][3])]
        for d in c[1:-1]:  # straight down through the dummy's reserved slot in its row
            pts += [(cx[d], row_y[row[d]]), (cx[d], row_y[row[d]] + row_h[row[d]])]
        pts.append((in_x[k], boxes[b][1]))
        routes.append(pts)
    size = (max((x + w for x, _, w, _ in boxes.values()), default=0) + _MARGIN,
            (row_y[-1] + row_h[-1] + _MARGIN) if nrows else 2 * _MARGIN)
    return boxes, routes, size


def _layered_svg(nodes, edges) -> str:
    boxes, routes, (width, height) = _layout(nodes, edges)
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width:.0f}" height="{height:.0f}" '
           f'viewBox="0 0 {width:.1f} {height:.1f}" font-family="monospace" font-size="11">',
           '<defs><marker id="arrow" markerWidth="8" markerHeight="8" refX="7" refY="4" '
           'orient="auto" markerUnits="userSpaceOnUse"><path d="M0,0 L8,4 L0,8 z"/></marker></defs>',
           '<rect width="100%" height="100%" fill="white"/>']
    for (a, b), pts in zip(edges, routes):
        p = " ".join(f"{x:.1f},{y:.1f}" for x, y in pts)
        out.append(f'<polyline class="edge" data-from="{a}" data-to="{b}" points="{p}" fill="none" '
                   f'stroke="black" marker-end="url(#arrow)"/>')
    for n in nodes:
        x, y, w, h = boxes[n["id"]]
        out.append(f'<rect class="node" data-id="{n["id"]}" x="{x:.1f}" y="{y:.1f}" width="{w:.1f}" '
                   f'height="{h:.1f}" rx="3" fill="{_FILL[n["color"]]}" stroke="black"/>')
        label = n["label"].split("\n")
        top = y + (h - len(label) * _LINE_H) / 2 + _LINE_H - 3
        for k, line in enumerate(label):
            out.append(f'<text x="{x + w / 2:.1f}" y="{top + k * _LINE_H:.1f}" '
                       f'text-anchor="middle">{html.escape(line)}</text>')
    out.append("</svg>")
    return "\n".join(out)




def _shape(t) -> str:
    return "(" + ", ".join(map(str, t.shape)) + ")"


class Graph:
    """A drawn autograd graph: ``nodes`` (dicts with id/label/color) and ``edges`` (id pairs)."""

    def __init__(self, nodes: list[dict], edges: list[tuple[str, str]], title: str = ""):
        self.nodes, self.edges, self.title = nodes, edges, title

    @property
    def source(self) -> str:
        """The graph in Graphviz DOT."""
        # leaves on top, the root at the bottom (as torchviz draws it); arrows follow the data
        lines = ["digraph {", "  graph [rankdir=TB, ranksep=0.35, nodesep=0.25]",
                 '  node [shape=box, style=filled, fontname=monospace, fontsize=10, height=0.3]',
                 "  edge [arrowsize=0.7]"]
        for n in self.nodes:
            label = n["label"].replace('"', '\\"').replace("\n", "\\n")
            lines.append(f'  "{n["id"]}" [label="{label}", fillcolor={n["color"]}]')
        for a, b in self.edges:
            lines.append(f'  "{a}" -> "{b}"')
        lines.append("}")
        return "\n".join(lines)

    def svg(self, layout: str = "auto") -> str:
        """SVG text of the picture.

        Args:
            layout: ``"dot"`` (Graphviz's layout: needs the ``dot`` program), ``"builtin"`` (the
                pure-Python layered layout) or ``"auto"`` (``dot`` when installed, else builtin).
        """
        if layout not in ("auto", "dot", "builtin"):
            raise ValueError(f"layout must be 'auto', 'dot' or 'builtin', got {layout!r}")
        if layout == "builtin" or (layout == "auto" and not has_dot()):
            return self._builtin_svg()
        return _run_dot(self.source, "svg").decode()

    def _builtin_svg(self) -> str:
        return _layered_svg(self.nodes, self.edges)

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
            data = _run_dot(self.source, ext[1:])
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
        rid = add(id(r.grad_fn), f"{type(r.grad_fn).__name__}\n{_shape(r)}", ROOT)
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
                cid = add(id(child), type(child).__name__, OP)
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
