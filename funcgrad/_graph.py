"""Backward graph nodes (PyTorch's ``grad_fn`` objects).

A node is created by dispatch for each differentiable op. It saves the op's *primal inputs*
(and their versions), not residuals: its backward kernel recomputes what it needs inside one
jitted XLA program. ``type(node).__name__`` is PyTorch's name (``MulBackward0``…).
"""

from __future__ import annotations

import contextlib
import threading
import weakref

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


class Node:
    """Base of all backward nodes. Subclasses implement ``_apply(grads) -> grads``."""

    # Rarely-set attributes are class-level defaults (a node gets a __dict__ entry only when
    # one is set): creating a node is on every recorded op's path.
    __slots__ = ("next_functions", "__weakref__", "__dict__")
    _pre_hooks = None         # node pre-hooks fn(grad_outputs)
    _hooks = None             # node hooks fn(grad_inputs, grad_outputs)
    _tensor_pre_hooks = None  # {output_nr: [fn(grad)]} from Tensor.register_hook
    _retain = None            # {output_nr: weakref(tensor)} from retain_grad()
    _trace = None             # creation stack under detect_anomaly

    def __init__(self, next_functions=()):
        self.next_functions = next_functions

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
        super().__init__(())
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
