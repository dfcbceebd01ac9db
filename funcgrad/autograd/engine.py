"""The backward engine: iterative, dependency-counted, one gradient slot per node output.

1. Walk the graph from the roots' nodes (no recursion) counting, for each node, how many
   edges point at it. 2. Seed the roots' slots. 3. Pop ready nodes (all consumers done; of
   those, the one made last first, an ``AccumulateGrad`` before any: PyTorch's order by
   sequence number, so a node's gradients are summed in PyTorch's order), run
   tensor hooks / retain_grad on their slots, apply the node (its jitted vjp kernel), and add
   the results into the slots of ``next_functions``. Leaves' ``AccumulateGrad`` nodes add into
   ``.grad``. Saved inputs are freed as nodes run unless ``retain_graph``.
With ``create_graph`` grad mode stays on, so every kernel applied here is itself recorded.
Which input gradients a node computes is decided here, at backward time, as PyTorch's
``task_should_compute_output``: every edge that requires grad for a plain backward; under
``inputs`` only the edges that lead to one (a ``not_implemented`` derivative raises only there).
"""

from __future__ import annotations

from .. import _storage
from .._tensor import Tensor as _Tensor
from . import grad_mode
from .anomaly_mode import warn_error
from .graph import AccumulateGrad, ReadyQueue, enter_graph_task, leave_graph_task


_fused_run = None  # the fused-backward fast paths: fused.py builds on this engine and registers them
_region_run = None


def register_fast_path(try_run, run_region) -> None:
    """Called once by funcgrad/autograd/fused.py at import: ``try_run(roots, grads, retain_graph)``
    runs a plain graph's backward as one program and returns True, or returns False;
    ``run_region(node, buf, buffers, deps, retain_graph, ready)`` runs the ops the engine would
    run next from the ready ``node`` on as one program (``(grads, left)``), or returns None."""
    global _fused_run, _region_run
    _fused_run, _region_run = try_run, run_region


def _add(a, b):
    if a is None:
        return b
    return a + b


def _run_hooks(node, grads, node_hooks=True):
    """Tensor hooks and retain_grad on ``grads``, then (``node_hooks``: the node runs) pre-hooks."""
    th = node._tensor_pre_hooks
    if th:
        for nr, hooks in th.items():
            for h in list(hooks):
                if grads[nr] is not None:
                    r = h(grads[nr])
                    if r is not None:
                        grads[nr] = r
    if node._retain:
        for nr, ref in node._retain.items():
            t = ref()
            if t is not None and grads[nr] is not None:
                g = grads[nr] if grad_mode._state.enabled else grads[nr].detach()
                t._grad = g if t._grad is None else t._grad + g
    if node._pre_hooks and node_hooks:
        for h in list(node._pre_hooks):
            r = h(tuple(grads))
            if r is not None:
                grads[:] = list(r)


def _no_leak(var, g) -> None:
    """A traced gradient for a concrete leaf outside any funcgrad frame: a raw JAX transformation
    of a training step, which would leave a tracer in ``.grad``."""
    if _storage._local.frame is None and _storage.is_tracer(g) and not _storage.is_tracer(var._value):
        raise RuntimeError(_storage.RAW_TRANSFORM_MSG.replace("being written", "getting a .grad"))


def _accumulate(node, g, create_graph):
    """``AccumulateGrad``: add into ``.grad``, then post-accumulate hooks (tensor hooks already ran)."""
    var = node.variable
    if var is None:  # the leaf is gone: nobody can read its gradient
        return
    _no_leak(var, g._value)
    if var._grad is None:
        var._grad = g if create_graph else g.detach()
    elif create_graph or grad_mode._state.enabled:
        var._grad = var._grad + g
    else:
        var._grad.add_(g)  # in place, as PyTorch: the .grad object stays the same
    if var._post_hooks:
        for h in list(var._post_hooks):
            h(var)


def execute(roots, grads, retain_graph, create_graph, capture=None, accumulate=True, fused=True,
            run_captured=False):
    """Backpropagate ``grads`` (Tensors) from ``roots`` (edges ``(node, output_nr)``).

    ``capture``: edges whose incoming gradient is returned (``autograd.grad``), in order;
    only nodes that lead to them run, each computing only the gradients of its edges that lead
    to them, and ``.grad`` is not touched unless ``accumulate``. ``run_captured``: the captured
    nodes run too (``backward(inputs=...)``, whose inputs PyTorch reaches through their nodes).
    ``fused=False``: the caller already tried the fused path (it did not qualify).
    """
    if fused and capture is None and not create_graph and accumulate and not grad_mode._anomaly[0]:
        # a plain graph: one cached XLA program, from its first sighting (fused.py; it turns
        # grad mode off where it adds into an existing .grad, as the loop below does)
        if _fused_run(roots, grads, retain_graph):
            return []
    # 1. dependency counts (and parents, to prune when capturing)
    deps, parents = {}, {}
    stack = list(dict.fromkeys(n for n, _ in roots))  # two roots on one node: count its edges once
    seen = set(stack)
    while stack:
        node = stack.pop()
        for child, _ in node.next_functions:
            if child is None:
                continue
            deps[child] = deps.get(child, 0) + 1
            if capture is not None:
                parents.setdefault(child, []).append(node)
            if child not in seen:
                seen.add(child)
                stack.append(child)
    # capturing: PyTorch's exec_info. ``lead``: the nodes with a path to a captured node (they
    # run); ``wanted``: those and the captured ones (an edge to one gets its gradient computed)
    needed = wanted = None
    targets = {}
    if capture is not None:
        for i, (n, nr) in enumerate(capture):
            targets.setdefault(n, []).append((nr, i))
        lead, stack = set(), list(targets)
        while stack:
            for p in parents.get(stack.pop(), ()):
                if p not in lead:
                    lead.add(p)
                    stack.append(p)
        wanted = lead | targets.keys()
        needed = wanted if run_captured else lead
    results = [None] * (len(capture) if capture is not None else 0)

    # 2. seed
    buffers = {}
    for (node, nr), g in zip(roots, grads):
        buf = buffers.setdefault(node, [None] * node.num_outputs)
        buf[nr] = _add(buf[nr], g)
    ready = ReadyQueue()
    for n in dict.fromkeys(n for n, _ in roots):
        if deps.get(n, 0) == 0:
            ready.push(n)

    # 3. run
    anomaly = grad_mode._anomaly[0]
    # where the whole graph did not qualify, the ops that can run together still run as one
    # program each (fused.run_region), under the same conditions
    regions = capture is None and not create_graph and accumulate and not anomaly
    state = grad_mode._state
    prev, state.enabled = state.enabled, bool(create_graph)
    enter_graph_task(roots, capture)  # (what hooks ask: autograd.graph.register_multi_grad_hook)
    try:
        while ready:
            node = ready.pop()
            buf = buffers.pop(node, None)
            if regions and buf is not None and type(node) is not AccumulateGrad:
                got = _region_run(node, buf, buffers, deps, retain_graph, ready)
                if got is not None:
                    for child, nr, g in got[0]:  # (what the slot held, and the region's)
                        cbuf = buffers.get(child)
                        if cbuf is None:
                            cbuf = buffers[child] = [None] * child.num_outputs
                        cbuf[nr] = _Tensor._wrap(g)
                    for child, left in got[1].items():
                        deps[child] = left
                        if left == 0:
                            ready.push(child)
                    continue
            outs = None
            if buf is not None and (wanted is None or node in wanted):
                runs = needed is None or node in needed
                if targets and runs:
                    # PyTorch captures a node that also runs before its hooks (evaluate_function)
                    for nr, i in targets.get(node, ()):
                        results[i] = buf[nr]
                if node._tensor_pre_hooks or node._retain or node._pre_hooks:
                    _run_hooks(node, buf, runs)
                is_leaf = type(node) is AccumulateGrad
                if is_leaf and buf[0] is not None and getattr(node.variable, "_hooks", None):
                    # a leaf's tensor hooks run before capture too (autograd.grad sees them)
                    for h in list(node.variable._hooks):
                        r = h(buf[0])
                        if r is not None:
                            buf[0] = r
                if targets and not runs:
                    for nr, i in targets.get(node, ()):
                        results[i] = buf[nr]
                if not runs:  # captured, leading to no other captured node: PyTorch skips it
                    pass
                elif is_leaf:
                    if accumulate and buf[0] is not None:
                        _accumulate(node, buf[0], create_graph)
                elif buf[0] is not None or any(g is not None for g in buf):
                    want = None if wanted is None else _wanted_edges(node, wanted)
                    if anomaly:
                        outs = _run_node_anomaly(node, buf, want)
                    elif node._hooks or want is not None:
                        outs = _run_node(node, buf, want)
                    else:  # the common case, inlined
                        node._check_saved()
                        outs = node._apply(buf)
                    if not retain_graph:
                        node._release()
            for k, (child, nr) in enumerate(node.next_functions):
                if child is None:
                    continue
                if outs is not None and outs[k] is not None:
                    cbuf = buffers.get(child)
                    if cbuf is None:
                        cbuf = buffers[child] = [None] * child.num_outputs
                    cbuf[nr] = _add(cbuf[nr], outs[k])
                deps[child] -= 1
                if deps[child] == 0:
                    ready.push(child)
    finally:
        state.enabled = prev
        leave_graph_task()
    return results


def _wanted_edges(node, wanted):
    """Which of ``node``'s input gradients to compute (PyTorch's ``task_should_compute_output``
    under ``inputs``): those whose edge leads to a captured node; None where that is all of them."""
    want = tuple(c is not None and c in wanted for c, _ in node.next_functions)
    if all(w or c is None for w, (c, _) in zip(want, node.next_functions, strict=True)):
        return None
    return want


def _run_node(node, buf, want=None):
    node._check_saved()
    outs = node._apply(buf) if want is None else node._apply_some(buf, want)
    if node._hooks:
        for h in list(node._hooks):
            r = h(tuple(outs), tuple(buf))
            if r is not None:
                outs = list(r)
    return outs


def _run_node_anomaly(node, buf, want=None):
    """Under detect_anomaly: NaN check, and PyTorch's warning naming the failing node's forward."""
    try:
        outs = _run_node(node, buf, want)
        if grad_mode._anomaly[1]:
            _check_nan(node, outs)
    except Exception:
        warn_error(node)
        raise
    return outs


def _check_nan(node, outs):
    import numpy as np
    for i, g in enumerate(outs):
        if g is not None and np.any(np.isnan(np.asarray(g._value))):
            raise RuntimeError(f"Function '{node.name()}' returned nan values in its {i}th output.")
