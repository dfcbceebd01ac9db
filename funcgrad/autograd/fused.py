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

Only plain graphs qualify: one root, recorded ops with one output, no hooks,
``retain_grad``, ``create_graph``, ``autograd.grad`` captures or anomaly mode; everything else
(and graphs larger than ``MAX_NODES``) runs through the engine as before. Version checks and
freeing of saved inputs are the same as the engine's.
"""

from __future__ import annotations

import collections
import threading

from .. import _cache
from .._dispatch import OpNode
from .._tensor import Tensor, _apply_chain
from .engine import _accumulate, _no_leak, register_fast_path
from .graph import AccumulateGrad

MAX_NODES = 512          # beyond this, compile time outweighs the saved dispatch
_SEEN: collections.OrderedDict = collections.OrderedDict()  # structure key -> program, LRU order
# a structure holds the shapes of linear ops' inputs: a new batch size is a new program (each of
# some MiB), so the bound is what keeps a loop over changing shapes flat
_CACHE_SIZE = 4 * _cache.MAX_PROGRAMS
_LOCK = threading.Lock()  # guards _SEEN's updates: one program per structure, even from threads


def _plan(root):
    """Topological order of the graph below ``root`` if it qualifies, else None."""
    deps, stack, seen = {}, [root], {root}
    n = 0
    while stack:
        node = stack.pop()
        n += 1
        if n > MAX_NODES:
            return None
        if type(node) is AccumulateGrad:
            v = node.variable
            if v is None or v._hooks or v._post_hooks:
                return None
            continue
        if not isinstance(node, OpNode) or node._out_avals is not None or node._freed or \
                node._hooks or node._pre_hooks or node._tensor_pre_hooks or node._retain:
            return None
        for child, _ in node.next_functions:
            if child is not None:
                deps[child] = deps.get(child, 0) + 1
                if child not in seen:
                    seen.add(child)
                    stack.append(child)
    order, ready = [], [root]
    while ready:
        node = ready.pop()
        order.append(node)
        if type(node) is not AccumulateGrad:
            for child, _ in node.next_functions:
                if child is not None:
                    deps[child] -= 1
                    if deps[child] == 0:
                        ready.append(child)
    return order


def _program(struct):
    """One jitted function replaying the vjp kernels of ``struct`` (see ``try_run``); per-shape
    LRU once its shapes keep changing (``_cache.kernel``)."""
    return _cache.kernel(lambda: _replay(struct), f"fused backward of {len(struct[0])} ops",
                         swap=(_SEEN, struct))


def _replay(struct):
    fns = [(op.vjp_fn(*key), edges) for op, key, edges in struct[0]]
    n_leaves, lazy = struct[1], struct[2]

    def run(saved, root_grad):
        for i, j, chain in lazy:  # views passed as their base's array: take the view here
            saved[i][j] = _apply_chain(chain, saved[i][j])
        bufs = [None] * len(fns)
        leaves = [None] * n_leaves
        bufs[0] = root_grad
        for i, (bwd, edges) in enumerate(fns):
            res = iter(bwd(saved[i], (bufs[i],)))
            for kind, j in edges:
                g = next(res)
                target = leaves if kind else bufs
                target[j] = g if target[j] is None else target[j] + g
        return leaves
    return run


_WARNED: list = []


def _describe(struct) -> str:
    names = [op.name for op, _, _ in struct[0]]
    shapes = sorted({tuple(s) for _, key, _ in struct[0] for _, (s, _) in key[4]}, key=str)
    return (f"the backward of {len(names)} ops ({', '.join(names[:8])}{'…' if len(names) > 8 else ''})"
            f" with shapes {', '.join(map(str, shapes[:6]))}")


def _saved_values(ops):
    """The nodes' saved inputs as arrays, and ``(node, slot, view chain)`` of each saved view
    whose value is not computed (e.g. ``nn.Linear``'s lazy ``weight.t()``): that one is passed
    as its base's array and the program applies the chain (static chains only: a chain with
    dynamic indices would bake them into the program)."""
    saved, lazy = [], []
    for i, n in enumerate(ops):
        row = []
        for j, s in enumerate(n._saved):
            if isinstance(s, Tensor):
                vi = s._viewinfo
                if vi is not None and vi.gen != s._cell.gen and not any(d for _, _, d in vi.chain):
                    row.append(s._cell.value)
                    lazy.append((i, j, vi.chain))
                    continue
                s = s._value
            row.append(s)
        saved.append(row)
    return saved, tuple(lazy)


def try_run(roots, grads, retain_graph) -> bool:
    """Run the backward pass fused if it qualifies; False: the caller runs the engine."""
    if len(roots) != 1 or roots[0][1] != 0:
        return False
    order = _plan(roots[0][0])
    if order is None or type(order[0]) is AccumulateGrad:
        return False
    index, leaf_index, leaves = {}, {}, []
    for node in order:
        if type(node) is AccumulateGrad:
            leaf_index[node] = len(leaves)
            leaves.append(node)
        else:
            index[node] = len(index)
    ops = [n for n in order if type(n) is not AccumulateGrad]
    for n in ops:
        n._check_saved()
    saved, lazy = _saved_values(ops)
    struct = (tuple((n._op, n._key, tuple((1, leaf_index[c]) if type(c) is AccumulateGrad else (0, index[c])
                                          for c, _ in n.next_functions if c is not None))
                    for n in ops), len(leaves), lazy)
    entry = _SEEN.get(struct)
    if entry is None:
        with _LOCK:  # another thread may be here with the same structure
            entry = _SEEN.get(struct)
            if entry is None:
                entry = _SEEN[struct] = _program(struct)
                if len(_SEEN) > _CACHE_SIZE:  # evicted: rebuilt on its next sighting, same bits
                    old = _SEEN.popitem(last=False)[0]
                    _cache.warn_evicted(_CACHE_SIZE, "fused backward programs", _describe(struct),
                                        _describe(old), _WARNED)
    else:
        try:
            _SEEN.move_to_end(struct)  # least recently used goes first
        except KeyError:  # evicted by another thread meanwhile
            pass
    out = entry(saved, grads[0]._value)  # jax traces a new program once, even from two threads
    if not retain_graph:
        for n in ops:
            n._release()
    for node, g in zip(leaves, out):
        if g is not None:
            var = node.variable
            if var is not None and var._grad is None and not var._post_hooks:
                _no_leak(var, g)
                var._grad = Tensor._wrap(g)  # a fresh array: no detach/copy needed
            else:
                _accumulate(node, Tensor._wrap(g), False)
    return True


register_fast_path(try_run)
