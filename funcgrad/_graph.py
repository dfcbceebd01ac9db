"""Backward graph nodes (PyTorch's ``grad_fn`` objects).

A node is created by dispatch for each differentiable op. It saves the op's *primal inputs*
(and their versions), not residuals: its backward kernel recomputes what it needs inside one
jitted XLA program. ``type(node).__name__`` is PyTorch's name (``MulBackward0``…).
"""

from __future__ import annotations

import contextlib
import itertools
import threading
import weakref
from heapq import heappop, heappush
from typing import NamedTuple

from ._device import cuda_is_available

_CLASSES: dict = {}

FREED_MSG = (
    "Trying to backward through the graph a second time (or directly access saved tensors after "
    "they have already been freed). Saved intermediate values of the graph are freed when you "
    "call .backward() or autograd.grad(). Specify retain_graph=True if you need to backward "
    "through the graph a second time or if you need to access saved tensors after calling "
    "backward.")


class RemovableHandle:
    """Returned by ``register_hook``; ``.remove()`` unregisters the hook."""

    def __init__(self, hooks: list, hook):
        self._hooks, self._hook = hooks, hook

    def remove(self) -> None:
        try:
            self._hooks.remove(self._hook)
        except ValueError:
            pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.remove()


_CPP_NAMES = {n: "torch::autograd::" + n for n in ("AccumulateGrad", "CopySlices", "CopyBackwards")}


# PyTorch's sequence numbers: each node takes the next at its creation (dispatch's _record takes
# it directly), and the engine runs, of the nodes ready, the one made last first; an
# AccumulateGrad node has the highest (UINT64_MAX), so a leaf's gradient is added into .grad as
# soon as it is complete. The order in which a node's gradients arrive is the order in which
# they are added: PyTorch's order, so PyTorch's sums (a + b + c rounds differently from b + a + c).
SEQUENCE = itertools.count()
LEAF_SEQUENCE_NR = (1 << 64) - 1


class ReadyQueue:
    """PyTorch's ReadyQueue (``CompareNodeTaskTime`` in its engine.h): ``pop`` gives, of the nodes
    pushed, the one made last (the highest sequence number) first; equal numbers (AccumulateGrad
    nodes) in the order pushed."""

    __slots__ = ("_heap", "_tick")

    def __init__(self):
        self._heap, self._tick = [], itertools.count()

    def __bool__(self) -> bool:
        return bool(self._heap)

    def push(self, node) -> None:
        heappush(self._heap, (-node._seq, next(self._tick), node))

    def pop(self):
        return heappop(self._heap)[2]

    def top(self):
        """The node ``pop`` would give (the queue is not empty)."""
        return self._heap[0][2]


class Node:
    """Base of all backward nodes. Subclasses implement ``_apply(grads) -> grads``."""

    # Rarely-set attributes are class-level defaults (a node gets a __dict__ entry only when
    # one is set): creating a node is on every recorded op's path.
    __slots__ = ("next_functions", "_seq", "__weakref__", "__dict__")
    _pre_hooks = None         # node pre-hooks fn(grad_outputs)
    _hooks = None             # node hooks fn(grad_inputs, grad_outputs)
    _tensor_pre_hooks = None  # {output_nr: [fn(grad)]} from Tensor.register_hook
    _retain = None            # {output_nr: weakref(tensor)} from retain_grad()
    _trace = None             # creation stack under detect_anomaly

    def __init__(self, next_functions=()):
        self.next_functions = next_functions
        self._seq = next(SEQUENCE)

    def _sequence_nr(self) -> int:
        """PyTorch's ``grad_fn._sequence_nr()``: larger for a node made later (the engine runs
        it earlier); an ``AccumulateGrad`` node's is 2**64 - 1."""
        return self._seq

    @property
    def metadata(self) -> dict:
        """A dict for users' annotations, as PyTorch's ``grad_fn.metadata``."""
        d = self.__dict__
        if "_metadata" not in d:
            d["_metadata"] = {}
        return d["_metadata"]

    def name(self) -> str:
        """PyTorch's name of the node: its class's, or for the nodes PyTorch writes by hand in C++
        (``AccumulateGrad``, ``CopySlices``, ``CopyBackwards``) the demangled C++ one,
        ``torch::autograd::AccumulateGrad`` (their repr keeps the short name, as PyTorch's)."""
        n = type(self).__name__
        return _CPP_NAMES.get(n, n)

    def __repr__(self) -> str:
        return f"<{type(self).__name__} object at {hex(id(self))}>"

    num_outputs = 1

    def register_hook(self, fn) -> RemovableHandle:
        """``fn(grad_inputs, grad_outputs)`` runs after this node computed its input gradients."""
        if self._hooks is None:
            self._hooks = []
        self._hooks.append(fn)
        return RemovableHandle(self._hooks, fn)

    def register_prehook(self, fn) -> RemovableHandle:
        """``fn(grad_outputs)`` runs before this node; it may return replacement gradients."""
        if self._pre_hooks is None:
            self._pre_hooks = []
        self._pre_hooks.append(fn)
        return RemovableHandle(self._pre_hooks, fn)

    def _add_tensor_hook(self, output_nr: int, fn) -> RemovableHandle:
        if self._tensor_pre_hooks is None:
            self._tensor_pre_hooks = {}
        hooks = self._tensor_pre_hooks.setdefault(output_nr, [])
        hooks.append(fn)
        return RemovableHandle(hooks, fn)

    def _apply_some(self, grads, want):
        """``_apply`` where only the input gradients ``want`` marks are needed (one bool per edge):
        the others are dropped. A node that can skip computing them overrides this."""
        return [g if w else None for g, w in zip(self._apply(grads), want, strict=False)]

    def _release(self) -> None:
        """Free saved values (after a backward without retain_graph)."""

    def _check_saved(self) -> None:
        """Raise if saved values were freed or modified in place."""


class AccumulateGrad(Node):
    """The node of a leaf that requires grad: adds incoming gradients into ``.grad``."""

    __slots__ = ("_variable",)

    def __init__(self, variable):
        self.next_functions = ()
        self._seq = LEAF_SEQUENCE_NR
        # weak: the leaf keeps its node alive (tensor._accum), not the other way round, so a
        # leaf and its node form no reference cycle and the node is reused across graphs
        self._variable = weakref.ref(variable)

    @property
    def variable(self):
        """The leaf tensor whose ``.grad`` this node accumulates into (None once it is gone)."""
        return self._variable()


def node_class(name: str, base: type) -> type:
    """The node subclass named ``name`` (e.g. ``MulBackward0``), created once."""
    key = (name, base)
    cls = _CLASSES.get(key)
    if cls is None:
        cls = type(name, (base,), {"__slots__": ()})
        _CLASSES[key] = cls
    return cls


# ---- saved tensors hooks (torch.autograd.graph.saved_tensors_hooks) -----------------------------
class _SavedHooksState(threading.local):
    """This thread's stack of (pack, unpack) hooks, and disable_saved_tensors_hooks' message."""

    def __init__(self):
        self.stack, self.disabled = [], None


SAVED_HOOKS = _SavedHooksState()
# How many saved_tensors_hooks are entered, in all threads: the one check dispatch makes when it
# records a node (``PACK[0](node, args, out)`` then packs what the node saves, autograd/saved.py).
SAVED_HOOKS_ON = [0]
PACK = [None]


def _callable_error(fn_name, sig, args):
    return TypeError(f"{fn_name}(): incompatible function arguments. The following argument types "
                     f"are supported:\n    1. {sig} -> None\n\nInvoked with: "
                     + ", ".join(map(repr, args)))


class saved_tensors_hooks:  # noqa: N801  (PyTorch's name)
    """Context manager: tensors an op saves for backward while it is active are passed to
    ``pack_hook`` when saved, and the backward uses ``unpack_hook`` of what it returned. Only the
    innermost pair applies.

    >>> import funcgrad
    >>> x = funcgrad.ones(2, requires_grad=True)
    >>> with funcgrad.autograd.graph.saved_tensors_hooks(lambda t: t * 4, lambda p: p / 4):
    ...     y = x.pow(2)
    >>> y.sum().backward()
    >>> x.grad
    tensor([2., 2.])
    """

    def __init__(self, pack_hook, unpack_hook) -> None:
        self.pack_hook, self.unpack_hook = pack_hook, unpack_hook

    def __enter__(self) -> None:
        if not (callable(self.pack_hook) and callable(self.unpack_hook)):
            raise _callable_error("_push_saved_tensors_default_hooks",
                                  "(arg0: collections.abc.Callable, arg1: collections.abc.Callable)",
                                  (self.pack_hook, self.unpack_hook))
        if SAVED_HOOKS.disabled is not None:
            raise RuntimeError(SAVED_HOOKS.disabled)
        SAVED_HOOKS.stack.append((self.pack_hook, self.unpack_hook))
        SAVED_HOOKS_ON[0] += 1

    def __exit__(self, *args: object) -> None:
        SAVED_HOOKS.stack.pop()
        SAVED_HOOKS_ON[0] -= 1


@contextlib.contextmanager
def disable_saved_tensors_hooks(error_message: str):
    """Within it, entering ``saved_tensors_hooks`` (or saving a tensor under hooks entered
    before) raises ``RuntimeError(error_message)``."""
    prev = SAVED_HOOKS.disabled
    try:
        SAVED_HOOKS.disabled = error_message
        yield
    finally:
        SAVED_HOOKS.disabled = prev


class save_on_cpu(saved_tensors_hooks):  # noqa: N801  (PyTorch's name)
    """Saved tensors go to the CPU when saved and back to their device for the backward (into
    pinned memory where the device type is available, as PyTorch's)."""

    def __init__(self, pin_memory: bool = False, device_type: str = "cuda") -> None:
        def pack_to_cpu(tensor):
            if not pin_memory:
                return (tensor.device, tensor.cpu())
            is_pinnable = device_type == "cuda" and cuda_is_available() and not tensor.is_sparse
            packed = tensor.new_empty(tuple(tensor.size()), dtype=tensor.dtype, device="cpu")
            packed.copy_(tensor, non_blocking=is_pinnable)
            return (tensor.device, packed)

        def unpack_from_cpu(packed):
            device, tensor = packed
            return tensor.to(device, non_blocking=pin_memory)

        super().__init__(pack_to_cpu, unpack_from_cpu)


save_on_cpu.__module__ = "funcgrad.autograd.graph"


# ================================ graph utilities (torch.autograd.graph) =========================
class _Tasks(threading.local):
    def __init__(self):
        self.running = []  # the backward calls running on this thread, innermost last


_TASKS = _Tasks()
_TASK_IDS = itertools.count()


def enter_graph_task(roots, capture) -> None:
    """The engine starts a backward: ``roots`` its root edges, ``capture`` the edges of ``inputs``
    (None: every node reachable from the roots executes). Hooks ask about it through
    ``current_graph_task_id`` and ``will_engine_execute_node``; ``leave_graph_task`` ends it."""
    _TASKS.running.append([roots, capture, None, next(_TASK_IDS)])


def leave_graph_task() -> None:
    _TASKS.running.pop()


def current_graph_task_id() -> int:
    """An id of the backward running on this thread (-1 outside one): PyTorch's
    ``torch._C._current_graph_task_id``."""
    return _TASKS.running[-1][3] if _TASKS.running else -1


def will_engine_execute_node(node) -> bool:
    """Whether the running backward executes ``node``: every node reachable from its roots, or
    under ``inputs`` those with a path to an input's node and the inputs' nodes themselves
    (PyTorch's ``exec_info`` ``should_execute``)."""
    if not _TASKS.running:
        raise RuntimeError("_will_engine_execute_node should only be called during the backward pass")
    task = _TASKS.running[-1]
    if task[2] is None:
        parents, stack = {}, list(dict.fromkeys(n for n, _ in task[0]))
        reached = set(stack)
        while stack:
            n = stack.pop()
            for child, _ in n.next_functions:
                if child is not None:
                    parents.setdefault(child, []).append(n)
                    if child not in reached:
                        reached.add(child)
                        stack.append(child)
        if task[1] is not None:  # the captured nodes and their ancestors
            reached = {n for n, _ in task[1]}
            stack = list(reached)
            while stack:
                for p in parents.get(stack.pop(), ()):
                    if p not in reached:
                        reached.add(p)
                        stack.append(p)
        task[2] = reached
    return node in task[2]


class GradientEdge(NamedTuple):
    """Where a tensor's gradient is computed in the graph: its node (its ``grad_fn``, or a leaf's
    ``AccumulateGrad``) and which output of it the tensor is. ``autograd.grad`` and ``backward``
    take it in ``inputs`` in place of the tensor."""

    node: Node
    output_nr: int
    ownership_token: Node | None = None

    def _edge(self):
        return (self.node, self.output_nr)


def get_gradient_edge(tensor) -> GradientEdge:
    """The ``GradientEdge`` where ``tensor``'s gradient is computed:
    ``autograd.grad(loss, get_gradient_edge(x))`` is ``autograd.grad(loss, x)``."""
    if not tensor.requires_grad:
        raise RuntimeError("It is not possible to get the gradient edge for a Tensor that does not require "
                           "gradients")
    node, nr = tensor._edge()
    return GradientEdge(node, nr)


def increment_version(tensor) -> None:
    """Bump the version counter of ``tensor`` (or of each of an iterable of tensors), as an in-place
    change the autograd could not see would have: a later backward that saved it then raises.
    Inference tensors have no counter and are skipped."""
    try:
        tensors = (tensor,) if hasattr(tensor, "_ver") else tuple(tensor)
    except TypeError:
        tensors = None
    if tensors is None or not all(hasattr(t, "_ver") for t in tensors):
        raise RuntimeError("increment_version expect a Iterable[Tensor] as input")
    for t in tensors:
        if t._ver is not None:
            t._ver[0] += 1


class _MultiHandle(RemovableHandle):
    """The handle of a multi-grad hook: removes the hook from every tensor."""

    def __init__(self, handles):
        self.handles = tuple(handles)

    def remove(self) -> None:
        for h in self.handles:
            h.remove()


def register_multi_grad_hook(tensors, fn, *, mode: str = "all") -> RemovableHandle:
    """A hook over several tensors' gradients within one backward.

    ``mode="all"``: ``fn(grads)`` once the gradients of all the tensors this backward computes
    are ready (``None`` for the others: outside the graph, or not needed for its ``inputs``).
    ``mode="any"``: ``fn(grad)`` with the first of them computed, once per backward.

    >>> import funcgrad
    >>> a, b = funcgrad.ones(2, requires_grad=True), funcgrad.ones(2, requires_grad=True)
    >>> G = funcgrad.autograd.graph
    >>> h = G.register_multi_grad_hook((a, b), lambda gs: print([g is None for g in gs]))
    >>> (a * 2).sum().backward()
    [False, True]
    """
    supported_modes = ("all", "any")
    if mode not in supported_modes:
        raise ValueError(f"Expects mode to be one of {supported_modes} but got {mode}")
    lock = threading.Lock()
    if mode == "all":
        count, buffer, nb_calls = {}, {}, [None]
        grad_fns = [t._edge()[0] for t in tensors]
        n = len(tensors)

        def get_inner_hook(idx):
            def inner_hook(grad):
                task = current_graph_task_id()
                with lock:
                    curr = count.get(task, 0)
                    count[task] = curr + 1
                    if curr == 0:  # (at the first call: how many calls this backward makes)
                        nb_calls[0] = sum(map(will_engine_execute_node, grad_fns))
                    buf = buffer.setdefault(task, [None] * n)
                buf[idx] = grad
                if curr == nb_calls[0] - 1:
                    fn(buf)
                    del count[task], buffer[task]
            return inner_hook

        handles = [t.register_hook(get_inner_hook(i)) for i, t in enumerate(tensors)]
    else:
        ran = set()

        def wrapped_fn(grad):
            task = current_graph_task_id()
            with lock:
                if task in ran:
                    return
                ran.add(task)
            fn(grad)

        handles = [t.register_hook(wrapped_fn) for t in tensors if t.requires_grad]
    return _MultiHandle(handles)


GradientEdge.__module__ = "funcgrad.autograd.graph"
