"""Fused backward: a plain graph's whole backward pass as ONE cached XLA program.

Eager training builds the same graph structure step after step. A backward pass compiles the
chain of the nodes' vjp kernels — the same traceable functions the node-by-node engine jits one
at a time — into one ``jax.jit`` program from the saved inputs and the root gradient to the
leaves' gradients, cached per structure (ops, static arguments, wiring; jax caches per shape
below that), and replays it afterwards: one XLA call instead of one per node, and no per-node
Python.

One backward (DESIGN §6): which path runs is decided by the graph alone, from its first
sighting on. XLA fuses across the kernels of one program (a ReLU mask into the next matmul, a
loss's multiply into the bias gradient's sum), so the program's last bits differ from the
engine's separate kernels; ``optimization_barrier`` does not stop that on CPU. Had the first
sighting run node by node and later ones fused (as before), training the same model twice in
one process, or from two threads, gave other numbers. A one-off graph compiles its whole
backward as one program instead of one kernel per op: no slower in practice (one larger compile
instead of several small ones; the autograd tour example and tests/test_core.py took no longer
with it), and a training loop no longer compiles both the per-op kernels and the program.

Only plain graphs qualify as a whole: one root, recorded ops (with one output or several), no
hooks, ``retain_grad``, ``create_graph``, ``autograd.grad`` captures or anomaly mode. In other
graphs without ``create_graph``, captures or anomaly mode (and in graphs larger than
``MAX_NODES``) the engine runs, and from each ready op node it runs the largest group of hook-free
op nodes it could run from there (each joins once all its consumers are in the group or ran) as
one program too (``run_region``): a custom ``Function`` or checkpoint node, a hooked node, a
second root, an op that never fuses (``Op.fuse``: a recurrent stack, whose lengths vary from
call to call) cuts the graph into groups, not back into single kernels. Version checks and
freeing of saved inputs are the same as the engine's. A graph that applies the same parameters
to samples of other shapes one by one (their losses summed: a batch of sequences of other
lengths) runs by regions too, one per sample (``_cut_varying``): one program over all of them
would have each batch's mix of shapes as its own, and compile anew every step.

A program's compile time grows with its size, its run time hardly: where its rows repeat one
block of nodes (an RNN cell unrolled over time, the same layer stacked), the blocks between the
first and the last run as one ``lax.scan`` of one block's backward (``_loops``), and an argument
saved by every block (a weight) is passed once. The backward of an ``LSTMCell`` unrolled over 40
steps compiled in 6.5 s as 40 copies, 0.4 s as a loop, and runs as fast (0.5 ms).
"""

from __future__ import annotations

import collections
import threading

import jax
import jax.numpy as jnp
from jax.core import Tracer

from .. import _cache, _grad_mode as grad_mode, _meta
from .._dispatch import OpNode, saved_nothing
from .._scalars import NUMBERS, scalar_array
from .._tensor import Tensor, _apply_chain, _Array
from .engine import _accumulate, _no_leak, register_fast_path
from .graph import AccumulateGrad, ReadyQueue

MAX_NODES = 512          # beyond this, compile time outweighs the saved dispatch
_SEEN: collections.OrderedDict = collections.OrderedDict()  # structure key -> program, LRU order
# a structure holds the shapes of linear ops' inputs: a new batch size is a new program (each of
# some MiB), so the bound is what keeps a loop over changing shapes flat
_CACHE_SIZE = 4 * _cache.MAX_PROGRAMS
_LOCK = threading.Lock()  # guards _SEEN's updates: one program per structure, even from threads


def _plan(root):
    """``(struct, args, op nodes, leaves)`` of the graph below ``root`` if it qualifies, else
    None. ``struct`` is the program's cache key: per op node in the engine's order (a
    dependency-counted walk from the root), its number, op, kernel key and the numbers of its
    inputs' nodes; the numbers of the leaves; the lazy views (see below); which argument each
    saved entry is. Nodes are numbered in the order a depth-first walk meets them, a function of
    the structure alone.

    The saved entries: the nodes' saved inputs as arrays, node after node (a node saves one
    entry per operand, its kernel key's ``nargs``), after their version checks. ``args``, the
    distinct ones (``_distinct``): the program takes them as positional arguments, JAX's
    fastest call. A saved view whose value is not computed (e.g.
    ``nn.Linear``'s lazy ``weight.t()``) is passed as its base's array, and the program applies
    the view's chain (static chains only: a chain with dynamic indices would bake them into the
    program).
    """
    if type(root) is AccumulateGrad or MAX_NODES < 1:
        return None
    acc, T, opnode = AccumulateGrad, Tensor, OpNode
    # One depth-first walk numbers the nodes and collects the op nodes as it pops them. Where
    # no op node has two consumers and no leaf three, that pop order runs each node once all
    # its consumers did, and sums every gradient as the engine does (two terms add the same
    # either way); otherwise the engine's order (by sequence number) is made below.
    ids, stack = {root: 0}, [root]
    rows, leaf_ids, leaves, ops, flat, lazy = [], [], [], [], [], []
    shared, hits = False, {}
    while stack:
        node = stack.pop()
        if type(node) is acc:
            v = node._variable()
            if v is None or v._hooks or v._post_hooks or node._pre_hooks:  # (the engine runs those)
                return None
            leaf_ids.append(ids[node])
            leaves.append(node)
            continue
        if not isinstance(node, opnode) or node._freed or node._hooks or node._pre_hooks or \
                node._tensor_pre_hooks or node._retain or node._packed is not None or not node._op.fuse:
            return None  # (saved tensors packed by hooks: the engine unpacks them, node by node)
        e = []
        for child, nr in node.next_functions:
            if child is not None:
                j = ids.get(child)
                if j is None:
                    j = ids[child] = len(ids)
                    if j >= MAX_NODES:
                        return None
                    stack.append(child)
                elif type(child) is not acc:
                    shared = True
                else:  # a leaf's second edge, or third
                    h = hits[child] = hits.get(child, 1) + 1
                    if h > 2:
                        shared = True
                e.append((j, nr))
        ops.append(node)
        rows.append((ids[node], node._op, node._key, tuple(e), node._out_avals))
        _saved_arrays(node, flat, lazy, T)
    if hits and _cut_varying(ops, flat, hits):
        return None  # (the engine runs it by regions, each ending with one of those users)
    if shared:
        deps = {}  # each node's consumers, counted only here: most graphs need no reordering
        for node in ops:
            for child, _ in node.next_functions:
                if child is not None:
                    deps[child] = deps.get(child, 0) + 1
        order = _kahn(root, deps)
        pos = {n: i for i, n in enumerate(ops)}
        perm = [pos[n] for n in order]
        offs = [0]  # where each node's saved entries start in flat (one per operand)
        for row in rows:
            offs.append(offs[-1] + row[2][2])
        new_offs, new_flat = {}, []
        for p in perm:  # each node's saved entries move with it
            new_offs[p] = len(new_flat) - offs[p]
            new_flat += flat[offs[p]:offs[p + 1]]
        owner = [p for p in range(len(ops)) for _ in range(offs[p + 1] - offs[p])]
        lazy = [(f + new_offs[owner[f]], c) for f, c in lazy]
        ops, rows, flat = order, [rows[p] for p in perm], new_flat
    args, amap = _distinct(flat)
    return (tuple(rows), tuple(leaf_ids), tuple(lazy), amap), args, ops, leaves


# A parameter used by many nodes of one op whose saved inputs differ in shape: the same model
# applied to samples of other sizes one by one, their losses summed (a batch of sequences of
# other lengths through a convolution). The shapes come from the data: one program over all of
# them would compile anew for each batch's mix. Decided by the graph alone, as the rest.
MIN_USES = 4


def _cut_varying(ops, flat, hits) -> bool:
    """Where the graph (``ops``, their saved entries ``flat`` in that order) uses a leaf in ``hits``
    (its edge count) ``MIN_USES`` times or more from nodes of one op whose saved inputs' shapes
    differ, mark those nodes ``_ends`` (a region ends with each, ``run_region``) and say True: a
    sample's nodes from its loss down to such a node run as one program, which depends on that
    sample's shapes alone and so compiles once per sample shape."""
    heavy = {leaf for leaf, n in hits.items() if n >= MIN_USES}
    if not heavy:
        return False
    users: dict = {}  # (leaf, op, edge position) -> [nodes, the first's saved shapes, any differ]
    off = 0
    for node in ops:
        n = node._key[2]
        for pos, (child, _) in enumerate(node.next_functions):
            if child in heavy:  # (grouped by its first such edge)
                shapes = [v.aval.shape if type(v) is _Array else None for v in flat[off:off + n]]
                g = users.get((child, node._op, pos))
                if g is None:
                    users[(child, node._op, pos)] = [[node], shapes, False]
                else:
                    g[0].append(node)
                    g[2] = g[2] or shapes != g[1]
                break
        off += n
    found = False
    for nodes, _, differ in users.values():
        if differ and len(nodes) >= MIN_USES:
            for node in nodes:
                node._ends = True
            found = True
    return found


def _distinct(flat):
    """``(args, amap)``: the distinct objects of ``flat`` (a weight saved by every step of a
    loop is one argument) and, per entry, its argument's number (-1: None)."""
    first, args, amap = {}, [], []
    for v in flat:
        if v is None:
            amap.append(-1)
            continue
        a = first.get(id(v))
        if a is None:
            a = first[id(v)] = len(args)
            args.append(v)
        amap.append(a)
    return args, tuple(amap)


def _saved_arrays(node, flat, lazy, T=Tensor):
    """Append ``node``'s saved inputs to ``flat`` as arrays, after their version checks; a saved
    view whose value is not computed goes in as its base's array, its (static) chain in ``lazy``;
    a saved Python scalar as its reused 0-d array (``_scalars.scalar_array``) outside a trace."""
    for t, v in node._versions:
        if t._ver[0] != v:
            node._check_saved()  # raises PyTorch's message
    for s in node._saved:
        if type(s) in NUMBERS and _cache.trace_clean():
            s = scalar_array(s)
        elif isinstance(s, T):
            vi = s._viewinfo
            if vi is None:
                s = s._cell.value
            elif vi.gen != s._cell.gen and not any(d for _, _, d in vi.chain):
                lazy.append((len(flat), vi.chain))
                s = s._cell.value
            else:
                s = s._value
        flat.append(s)


def _kahn(root, deps):
    """The op nodes in the engine's order: of those whose consumers all ran (``deps`` counts),
    the one made last first (PyTorch's order by sequence number)."""
    order, ready = [], ReadyQueue()
    ready.push(root)
    while ready:
        node = ready.pop()
        if type(node) is AccumulateGrad:
            continue
        order.append(node)
        for child, _ in node.next_functions:
            if child is not None:
                d = deps[child] - 1
                deps[child] = d
                if d == 0:
                    ready.push(child)
    return order


def _program(struct):
    """One jitted function replaying the vjp kernels of ``struct`` (see ``_plan``); per-shape
    LRU once its shapes keep changing (``_cache.kernel``)."""
    return _cache.kernel(lambda: _replay(struct), f"fused backward of {len(struct[0])} ops",
                         swap=(_SEEN, struct))


def _replay(struct):
    rows, leaf_ids, lazy, amap = struct[:4]
    # the (node, slot) pairs the program's first arguments seed: the root's one slot, or a
    # region's slots already holding a gradient (run_region)
    seeds = struct[4] if len(struct) > 4 else ((0, 0),)
    fns = [(n, op.vjp_fn(*key), edges, avals) for n, op, key, edges, avals in rows]
    offs = [0]  # where each node's saved entries start: one per operand (its key's nargs)
    for row in rows:
        offs.append(offs[-1] + row[2][2])
    n_nodes = len(rows) + len(leaf_ids)
    # nodes with several outputs (``_out_avals``): one gradient slot per output, None for the
    # outputs nothing used (left out of the vjp, as the engine's OpNode._apply)
    multi = {n: len(avals) for n, _, _, _, avals in rows if avals is not None}
    runs = _loops(rows, amap, lazy, offs)

    def run(*args):
        grads, uniq = args[:len(seeds)], args[len(seeds):]
        flat = [None if a < 0 else uniq[a] for a in amap]
        for f, chain in lazy:  # views passed as their base's array: take the view here
            flat[f] = _apply_chain(chain, flat[f])
        saved = [flat[offs[i]:offs[i + 1]] for i in range(len(rows))]
        bufs = _empty_bufs(n_nodes, multi)
        for (n, slot), g in zip(seeds, grads):
            _put(bufs, multi, n, slot, g)
        i = 0
        for loop in runs:
            while i < loop.body:  # the rows before the loop, and its first block
                _step(fns[i], saved[i], bufs, multi)
                i += 1
            if not loop.run(fns, flat, bufs, multi, n_nodes):
                continue  # (not a scan after all: its rows run one after another)
            i = loop.after
        while i < len(fns):
            _step(fns[i], saved[i], bufs, multi)
            i += 1
        return [bufs[j] for j in leaf_ids]
    return run


def _empty_bufs(n_nodes, multi):
    bufs = [None] * n_nodes
    for n, k in multi.items():
        bufs[n] = [None] * k
    return bufs


def _step(fn, saved, bufs, multi):
    """One node's vjp: its gradient slots in ``bufs`` in, its inputs' slots added to."""
    n, bwd, edges, avals = fn
    cots = (bufs[n],) if avals is None else tuple(bufs[n])
    res = iter(bwd(saved, cots))
    for j, nr in edges:
        g = next(res)
        if j in multi:
            b = bufs[j]
            b[nr] = g if b[nr] is None else b[nr] + g
        else:
            bufs[j] = g if bufs[j] is None else bufs[j] + g


def _put(bufs, multi, n, s, v):
    if n in multi:
        bufs[n][s] = v
    else:
        bufs[n] = v


def _get(bufs, multi, n, s):
    return bufs[n][s] if n in multi else bufs[n]


# A loop: where a graph repeats one block of nodes m times (an RNN cell unrolled over time, the
# layers of a deep stack), the program runs blocks 1 .. m-2 as a ``lax.scan`` over one block's
# backward instead of m-2 copies of it. XLA:CPU's compile time grows with a program's size (the
# backward of 40 LSTM cells as one unrolled program: 6.5 s here), hardly its run time. Which rows
# loop is decided by the structure alone (``_loops``), as everything else in the program.
MIN_BLOCKS = 4    # blocks 0 and m-1 run as they are, the others are scanned: at least two
MAX_PERIOD = 128  # the longest block looked for, in nodes


def _loops(rows, amap, lazy, offs):
    """The loops of a program's rows (engine order), as ``_Loop``s by start: each the longest
    run of rows repeating one block (same op, kernel key, outputs and edge slots as the row one
    block before, and edges that repeat, see ``_repeats``), none overlapping another."""
    n = len(rows)
    if n < 2 * MIN_BLOCKS:
        return []
    ids = {}
    sig = [ids.setdefault((op, key, avals, tuple(nr for _, nr in edges)), len(ids))
           for _, op, key, edges, avals in rows]
    if len(ids) == n:
        return []  # (no two rows alike)
    pos = {row[0]: i for i, row in enumerate(rows)}
    cands = []
    for p in range(1, min(MAX_PERIOD, n // MIN_BLOCKS) + 1):
        i = 0
        while i + p < n:
            if sig[i] != sig[i + p]:
                i += 1
                continue
            a = i
            while i + p < n and sig[i] == sig[i + p]:
                i += 1
            m = (i + p - a) // p  # rows a .. i + p - 1 repeat with period p
            if m >= MIN_BLOCKS:
                cands.append((-m * p, p, a, m))
    cands.sort()  # the most rows first; of those, the shortest block, then the earliest
    taken, loops = [], []
    for _, p, a, m in cands:
        m, kinds = _repeats(rows, pos, a, p, m)
        lo, hi = a, a + p * m
        if m >= MIN_BLOCKS and not any(lo < h and l < hi for l, h in taken):
            loop = _Loop(a, p, m, rows, amap, lazy, offs, kinds)
            if loop.outs is not None:
                taken.append((lo, hi))
                loops.append(loop)
    return sorted(loops, key=lambda lp: lp.start)


def _repeats(rows, pos, a, p, m):
    """``(blocks, kinds)``: how many of the blocks from row ``a`` (``m`` rows alike) also repeat
    their edges, and each edge's kind, by (row in the block, edge): ``abs``, where it goes
    where the same edge of the row one block before went (a leaf, an outside slot or a node
    after the loop, which accumulates over the blocks); ``rel``, to the node one block after
    (in the row's own block or the next); ``out``, to another target after the loop in each
    block (a gradient per block); the same kind for every block."""
    end, kinds = a + p * m, {}
    for b in range(m - 1):
        for j in range(p):
            i = a + b * p + j
            for e, ((t0, _), (t1, _)) in enumerate(zip(rows[i][3], rows[i + p][3], strict=True)):
                q0, q1 = pos.get(t0, end), pos.get(t1, end)
                if t0 == t1:
                    kind, ok = "abs", q0 >= end
                elif q0 >= end:
                    kind, ok = "out", q1 >= end
                else:
                    kind, ok = "rel", q1 == q0 + p and q0 < a + (b + 2) * p
                if not ok or kinds.setdefault((j, e), kind) != kind:
                    return b + 1, kinds
    return m, kinds


class _Loop:
    """Rows ``start .. start + period * blocks`` repeat one block (``_loops``). Block 0 runs as it
    is; blocks 1 .. m-2 are one ``lax.scan`` of block 1's rows, whose nodes stand for the block
    scanned and block 2's for the next one: the scan carries the gradient slots of the next
    block's nodes and the absolute targets' sums, and takes per block the saved entries that
    differ between blocks and the slots the rows before the loop filled; block m-1 runs as it
    is from the carried slots."""

    def __init__(self, start, period, blocks, rows, amap, lazy, offs, kinds):
        p, m = period, blocks
        self.start, self.period, self.blocks = start, p, m
        self.body, self.after = start + p, start + p * (m - 1)
        self.ids = [[rows[start + k * p + j][0] for j in range(p)] for k in range(m)]
        # a block's gradient slots, (row in the block, output)
        self.slots = [(j, s) for j in range(p) for s in range(_n_slots(rows[start + j]))]

        def edges(k, kind):  # block k's targets of one kind, (row in the block, edge) -> slot
            return {(j, e): rows[start + k * p + j][3][e] for (j, e), kd in kinds.items() if kd == kind}
        self.acc = sorted(set(edges(1, "abs").values()))
        # the "out" edges: block 1's target slots (the scan gives each block's gradients for
        # them), and each scanned block's slots in their place; None where the blocks group
        # their edges into slots differently, or one is also an absolute target
        out1 = edges(1, "out")
        self.out = sorted(set(out1.values()))
        self.outs = []
        for k in range(1, m - 1):
            outk, slot_of = edges(k, "out"), {}
            for je, t in out1.items():
                if slot_of.setdefault(t, outk[je]) != outk[je] or outk[je] in self.acc:
                    self.outs = None
                    return
            if len(set(slot_of.values())) != len(slot_of):
                self.outs = None
                return
            self.outs.append([slot_of[t] for t in self.out])
        # each saved entry of block 1's rows: the same argument in every scanned block (a weight:
        # taken once), or one per block (stacked)
        lz = dict(lazy)
        self.stride = stride = offs[start + p] - offs[start]
        self.entries = [(e, any(amap[e + k * stride] != amap[e] or lz.get(e + k * stride) != lz.get(e)
                                for k in range(1, m - 2)))
                        for e in range(offs[self.body], offs[self.body + p])]
        self.offs = [(offs[i], offs[i + 1]) for i in range(self.body, self.body + p)]

    def run(self, fns, flat, bufs, multi, n_nodes) -> bool:
        """Blocks 1 .. m-2's backward on ``bufs`` (block 0 ran). False, nothing done, where the
        blocks' slots or saved entries are not alike (shapes, dtypes, slots filled before the
        loop in some blocks only): the rows then run one by one."""
        p, m, ids, slots = self.period, self.blocks, self.ids, self.slots

        def block(k):
            return [_get(bufs, multi, ids[k][j], s) for j, s in slots]
        pre = [block(k) for k in range(2, m)]  # filled before the loop (block 1's includes block 0's)
        if any(not _alike(col) for col in zip(*pre, strict=True)):
            return False
        init, acc0 = block(1), [_get(bufs, multi, t, nr) for t, nr in self.acc]
        if any(v is None for v in acc0):
            return False
        xs_pre = [None if col[0] is None else jnp.stack(col) for col in zip(*pre, strict=True)]
        stacked = []
        for e, varies in self.entries:
            col = [flat[e + k * self.stride] for k in range(m - 2)] if varies else None
            if col is not None and not _alike(col):
                return False
            stacked.append(None if col is None or col[0] is None else jnp.stack(col))
        rows1, rows2 = ids[1], ids[2]
        fb = fns[self.body:self.body + p]
        acc, out, offs, entries = self.acc, self.out, self.offs, self.entries

        def body(carry, xs):
            c_in, a_in = carry
            nxt, sv = xs
            lb = _empty_bufs(n_nodes, multi)
            for (j, s), v, w in zip(slots, c_in, nxt, strict=True):
                _put(lb, multi, rows1[j], s, v)  # block 1's nodes: the block scanned
                _put(lb, multi, rows2[j], s, w)  # block 2's: the next one
            for (t, nr), v in zip(acc, a_in, strict=True):
                _put(lb, multi, t, nr, v)
            vals = {e: flat[e] if x is None else x for (e, _), x in zip(entries, sv, strict=True)}
            for fn, (o0, o1) in zip(fb, offs, strict=True):
                _step(fn, [vals[e] for e in range(o0, o1)], lb, multi)
            return ([_get(lb, multi, rows2[j], s) for j, s in slots],
                    [_get(lb, multi, t, nr) for t, nr in acc]), [_get(lb, multi, t, nr) for t, nr in out]
        try:
            (c_out, a_out), ys = jax.lax.scan(body, (init, acc0), (xs_pre, stacked), length=m - 2)
        except TypeError:  # the carry changed type between blocks (e.g. a weak type)
            return False
        for (j, s), v in zip(slots, c_out, strict=True):
            _put(bufs, multi, ids[m - 1][j], s, v)
        for (t, nr), v in zip(acc, a_out, strict=True):
            _put(bufs, multi, t, nr, v)
        for k, targets in enumerate(self.outs):  # each block's gradients for its outside slots
            for (t, nr), y in zip(targets, ys, strict=True):
                b = _get(bufs, multi, t, nr)
                _put(bufs, multi, t, nr, y[k] if b is None else b + y[k])
        return True


def _n_slots(row):
    return 1 if row[4] is None else len(row[4])


def _alike(col) -> bool:
    """All None, or all arrays of one shape and dtype."""
    v0 = col[0]
    if v0 is None:
        return all(v is None for v in col)
    sh, dt = jnp.shape(v0), jnp.result_type(v0)
    return all(v is not None and jnp.shape(v) == sh and jnp.result_type(v) == dt for v in col)


_WARNED: list = []


def _describe(struct) -> str:
    names = [row[1].name for row in struct[0]]
    shapes = sorted({tuple(s) for row in struct[0] for _, (s, _) in row[2][4]}, key=str)
    return (f"the backward of {len(names)} ops ({', '.join(names[:8])}{'…' if len(names) > 8 else ''})"
            f" with shapes {', '.join(map(str, shapes[:6]))}")


def _new_entry(struct):
    """The program of a structure first seen (or evicted): made once, even from two threads."""
    with _LOCK:  # another thread may be here with the same structure
        entry = _SEEN.get(struct)
        if entry is None:
            entry = _SEEN[struct] = _program(struct)
            if len(_SEEN) > _CACHE_SIZE:  # evicted: rebuilt on its next sighting, same bits
                old = _SEEN.popitem(last=False)[0]
                _cache.warn_evicted(_CACHE_SIZE, "fused backward programs", _describe(struct),
                                    _describe(old), _WARNED)
    return entry


def try_run(roots, grads, retain_graph) -> bool:
    """Run the backward pass fused if it qualifies; False: the caller runs the engine."""
    if len(roots) != 1:
        return False
    return run_root(roots[0][0], roots[0][1], grads[0]._value, retain_graph)


def run_root(root, nr, grad, retain_graph) -> bool:
    """``try_run`` for one root edge ``(root, nr)`` and its gradient's array ``grad``: the
    common ``loss.backward()`` calls it directly (``funcgrad.autograd.backward``), without
    wrapping the implicit 1 in a Tensor or building the engine's lists first."""
    if nr != 0:
        return False
    plan = _plan(root)
    if plan is None:
        return False
    struct, flat, ops, leaves = plan
    entry = _SEEN.get(struct)
    if entry is None:
        entry = _LAST[0] = _new_entry(struct)
    elif entry is not _LAST[0]:  # the last one used is the most recent already: no move
        try:
            _SEEN.move_to_end(struct)  # least recently used goes first
        except KeyError:  # evicted by another thread meanwhile
            pass
        _LAST[0] = entry
    try:
        out = entry(grad, *flat)  # jax traces a new program once, even from two threads
    except Exception:
        if not _meta.holds((grad, *flat)):
            raise
        out = _meta.program(struct, lambda: _replay(struct), (grad, *flat))  # (a meta graph: shapes)
    if not retain_graph:
        for n in ops:  # OpNode._release, inlined
            if n._versions or not saved_nothing(n):
                n._saved = n._versions = None
                n._freed = True
    state = None
    try:
        for node, g in zip(leaves, out):
            if g is not None:
                var = node._variable()
                if var is not None and var._grad is None and not var._post_hooks:
                    if isinstance(g, Tracer):
                        _no_leak(var, g)
                    var._grad = Tensor._wrap(g)  # a fresh array: no detach/copy needed
                else:
                    if state is None:  # adding into .grad runs with grad mode off, as the engine
                        state = grad_mode._state
                        prev, state.enabled = state.enabled, False
                    _accumulate(node, Tensor._wrap(g), False)
    finally:
        if state is not None:
            state.enabled = prev
    return True


_LAST: list = [None]  # the program of the last fused backward (the LRU's most recent entry)


def _fusable(node) -> bool:
    """May ``node`` run inside a program (``_plan`` inlines the same test in its walk)?"""
    return isinstance(node, OpNode) and not node._freed and node._op.fuse and not (
        node._hooks or node._pre_hooks or node._tensor_pre_hooks or node._retain
        or node._packed is not None)


def run_region(start, buf, buffers, deps, retain_graph, waiting=None):
    """The engine's fast path for a graph that does not qualify as a whole (a custom
    ``Function`` or checkpoint node in it, hooks on some nodes, several roots): from the ready
    op node ``start`` (gradient slots ``buf``), the ops it can run at once run as ONE program.

    The region grows as the engine would run it (``waiting``: the engine's ``ReadyQueue``): an
    op node joins once every consumer it still waits for (``deps``) is in the region, and while
    it is the one the engine would run next. Its inputs are the saved inputs and the gradients
    already in the region's slots (``start``'s, and those from consumers that ran before);
    its outputs, the gradients for every slot outside it (leaves, other nodes, ops still
    waiting for consumers outside it). Which ops fuse is decided by the graph alone, as for
    a whole graph. None (the engine runs ``start`` by itself) for a region of one op.

    Returns ``(grads, left)``: ``(node, output_nr, array)`` per slot outside the region (the
    slot's new gradient: what it held before, the region's added to it), and each outside node's
    consumers still to run (the engine's ``deps``, the region's edges counted off).
    """
    if not _fusable(start) or not any(g is not None for g in buf):
        return None
    # The region is the ops the engine would run next, in its order: of the nodes whose
    # consumers all ran (those it made ready, and those the engine holds, ``waiting``),
    # the last made first. It ends where the next cannot join: running a later node first would
    # sum some gradient in another order than PyTorch's.
    order, ids, pending, ready, taken = [start], {start: 0}, {}, ReadyQueue(), []
    node = start
    while True:
        for child, _ in node.next_functions:
            if child is not None:
                left = pending.get(child, deps.get(child, 0)) - 1
                pending[child] = left
                if left == 0 and type(child) is not AccumulateGrad:  # (leaves: the engine's)
                    ready.push(child)
        if node._ends:  # (one sample's nodes: see _cut_varying)
            break
        q = ready if not waiting or ready and ready.top()._seq > waiting.top()._seq else waiting
        if not q or len(order) >= MAX_NODES:
            break
        node = q.top()
        if not _fusable(node) or q is waiting and buffers.get(node) is None:
            break
        q.pop()
        if q is waiting:
            taken.append(node)
        ids[node] = len(order)
        order.append(node)
    if len(order) < 2:
        return None
    outs, out_ids = [], {}  # slots outside the region: (node, output_nr), numbered after it
    rows, flat, lazy, seeds, seed_vals, hits = [], [], [], [], [], {}
    k = len(order)
    for n, node in enumerate(order):
        b = buf if node is start else buffers.get(node)
        if b is not None:
            for slot, g in enumerate(b):
                if g is not None:
                    seeds.append((n, slot))
                    seed_vals.append(g._value)
        e = []
        for child, nr in node.next_functions:
            if child is not None:
                if type(child) is AccumulateGrad:
                    hits[child] = hits.get(child, 0) + 1
                j = ids.get(child)
                if j is None:
                    j = out_ids.get((child, nr))
                    if j is None:
                        j = out_ids[(child, nr)] = k + len(outs)
                        outs.append((child, nr))
                    nr = 0
                e.append((j, nr))
        rows.append((n, node._op, node._key, tuple(e), node._out_avals))
        _saved_arrays(node, flat, lazy)
    for i, (child, nr) in enumerate(outs):  # a gradient already there: the region adds to it,
        b = buffers.get(child)               # in the order the engine would (PyTorch's sums)
        if b is not None and b[nr] is not None:
            seeds.append((k + i, 0))
            seed_vals.append(b[nr]._value)
    if hits and _cut_varying(order, flat, hits) and any(node._ends for node in order[:-1]):
        for node in taken:  # the engine runs start, and regions after it end where marked
            waiting.push(node)
        return None
    flat, amap = _distinct(flat)
    struct = (tuple(rows), tuple(range(k, k + len(outs))), tuple(lazy), amap, tuple(seeds))
    entry = _SEEN.get(struct)
    if entry is None:
        entry = _new_entry(struct)
    else:
        try:
            _SEEN.move_to_end(struct)
        except KeyError:  # evicted by another thread meanwhile
            pass
    try:
        got = entry(*seed_vals, *flat)
    except Exception:
        if not _meta.holds((*seed_vals, *flat)):
            raise
        got = _meta.program(struct, lambda: _replay(struct), (*seed_vals, *flat))  # (a meta graph)
    for node in order[1:]:
        buffers.pop(node, None)
    if not retain_graph:
        for node in order:
            node._release()
    left = {c: v for c, v in pending.items() if c not in ids}
    return [(c, nr, g) for (c, nr), g in zip(outs, got)], left


register_fast_path(try_run, run_region)
