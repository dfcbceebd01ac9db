"""Module hook plumbing: removable handles over hook dicts, and the full backward hook.

The full backward hook wraps a module call between two identity nodes (PyTorch's
``BackwardHookFunctionBackward``): the one on the outputs captures ``grad_output`` (and runs
backward pre-hooks, which may replace it); the one on the inputs sees ``grad_input`` and calls
``hook(module, grad_input, grad_output)``, which may replace ``grad_input``.
"""

from __future__ import annotations

from collections import OrderedDict

from .._tensor import Tensor
from ..autograd import grad_mode
from ..autograd.graph import Node



class RemovableHandle:
    """Returned by ``register_*_hook``; ``.remove()`` unregisters the hook (also a context manager).

    PyTorch's ``torch.utils.hooks.RemovableHandle``: ``hooks_dict`` maps hook ids to hooks and
    ``extra_dict`` (a dict or a list of dicts) holds per-hook flags removed with it.

    >>> from collections import OrderedDict
    >>> from funcgrad.utils.hooks import RemovableHandle
    >>> hooks = OrderedDict()
    >>> h = RemovableHandle(hooks); hooks[h.id] = print
    >>> h.remove(); len(hooks)
    0
    """

    id: int
    next_id: int = 0

    def __init__(self, hooks_dict, *, extra_dict=None) -> None:
        # Strong references (PyTorch keeps weak ones): a plain dict cannot be weakly referenced,
        # and a handle outliving its module only keeps the (emptied) dicts alive.
        self._hooks_dict = hooks_dict
        self.id = RemovableHandle.next_id
        RemovableHandle.next_id += 1
        if isinstance(extra_dict, dict):
            self._extra = (extra_dict,)
        elif isinstance(extra_dict, (list, tuple)):
            self._extra = tuple(extra_dict)
        else:
            self._extra = ()

    def remove(self) -> None:
        for d in (self._hooks_dict, *self._extra):
            d.pop(self.id, None)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.remove()


def add_hook(hooks: OrderedDict, hook, prepend: bool = False, extra: tuple = ()) -> RemovableHandle:
    handle = RemovableHandle(hooks, extra_dict=list(extra))
    hooks[handle.id] = hook
    if prepend:
        hooks.move_to_end(handle.id, last=False)
    return handle


class _IdentityNode(Node):
    """An identity node over several tensors; subclasses decide what happens to the gradients."""

    __slots__ = ("_n", "_fn")

    @property
    def num_outputs(self):
        return self._n

    def _apply(self, grads):
        return self._fn(list(grads))


_IdentityNode.__name__ = _IdentityNode.__qualname__ = "BackwardHookFunctionBackward"


def _wrap_through(node: _IdentityNode, tensors: list, fn) -> list:
    """New tensors with the same values whose grad_fn is ``node`` (one output per tensor)."""
    node._n, node._fn = len(tensors), fn
    node.next_functions = tuple(t._edge() for t in tensors)
    out = []
    for i, t in enumerate(tensors):
        o = Tensor._wrap(t._value)
        o._set_grad_fn(node, i)
        out.append(o)
    return out


class BackwardHook:
    """One module call's full backward hooks (see the module docstring)."""

    def __init__(self, module, hooks: list, pre_hooks: list):
        self.module, self.hooks, self.pre_hooks = module, hooks, pre_hooks
        self.grad_output = None
        self.n_inputs = 0
        self.input_pos: list = []

    def setup_input_hook(self, args: tuple) -> tuple:
        if not grad_mode.is_grad_enabled():
            return args
        pos = [i for i, a in enumerate(args) if isinstance(a, Tensor) and a.requires_grad]
        self.n_inputs = sum(isinstance(a, Tensor) for a in args)
        self.input_pos = pos
        if not pos:
            return args
        tensor_index = {i: k for k, i in enumerate(i for i, a in enumerate(args) if isinstance(a, Tensor))}

        def on_grad_input(grads):
            full = [None] * self.n_inputs
            for p, g in zip(pos, grads):
                full[tensor_index[p]] = g
            res = self._call_hooks(tuple(full))
            if res is not None:
                return [res[tensor_index[p]] for p in pos]
            return grads
        new = _wrap_through(_IdentityNode(), [args[i] for i in pos], on_grad_input)
        args = list(args)
        for i, t in zip(pos, new):
            args[i] = t
        return tuple(args)

    def _call_hooks(self, grad_input):
        out = None
        for h in self.hooks:
            r = h(self.module, grad_input, self.grad_output)
            if r is not None:
                r = tuple(r) if isinstance(r, (tuple, list)) else (r,)
                if len(r) != len(grad_input):
                    raise RuntimeError(f"Backward hook returned an invalid number of grad_input, got "
                                       f"{len(r)}, but expected {len(grad_input)}")
                grad_input = out = r
        return out

    def setup_output_hook(self, result):
        if not grad_mode.is_grad_enabled():
            return result
        single = isinstance(result, Tensor)
        outs = (result,) if single else tuple(result) if isinstance(result, (tuple, list)) else None
        if outs is None:
            return result
        pos = [i for i, o in enumerate(outs) if isinstance(o, Tensor) and o.requires_grad]
        if not pos:
            return result

        def on_grad_output(grads):
            full = [None] * len(outs)
            for p, g in zip(pos, grads):
                full[p] = g
            self.grad_output = tuple(full)
            for h in self.pre_hooks:
                r = h(self.module, self.grad_output)
                if r is not None:
                    r = tuple(r) if isinstance(r, (tuple, list)) else (r,)
                    self.grad_output = r
            if not self.input_pos and self.hooks:  # no input needs a grad: hooks run now
                self._call_hooks((None,) * max(self.n_inputs, 1))
            return [self.grad_output[p] for p in pos]
        new = _wrap_through(_IdentityNode(), [outs[i] for i in pos], on_grad_output)
        lst = list(outs)
        for i, t in zip(pos, new):
            lst[i] = t
        if single:
            return lst[0]
        return type(result)(lst) if isinstance(result, list) else tuple(lst)


# ---- the deprecated non-full backward hooks (Module.register_backward_hook) ---------------------
_NON_FULL = "Please use register_full_backward_hook to get the documented behavior."


def non_full_backward_hooks(module, args: tuple, result, hooks: list) -> None:
    """PyTorch's non-full backward hooks of one call: each ``hook(module, grad_input,
    grad_output)`` a hook of the node that made the output's first tensor (a dict's first tensor
    value, else the first element, depth first), ``grad_input`` being that node's input
    gradients; then its FutureWarning where the hook cannot be what the module's documented one
    would be (outputs or inputs that are no tensors or tuples of them, outputs from several nodes
    or nested, a forward of several nodes: e.g. any layer with parameters)."""
    import weakref

    var = result
    while not isinstance(var, Tensor):
        var = next(v for v in var.values() if isinstance(v, Tensor)) if isinstance(var, dict) else var[0]
    grad_fn = var.grad_fn
    if grad_fn is None:
        return
    ref = weakref.ref(module)
    for hook in hooks:
        def on_node(grad_inputs, grad_outputs, hook=hook):
            m = ref()
            if m is None:
                raise RuntimeError("You are trying to call the hook of a dead Module!")
            return hook(m, grad_inputs, grad_outputs)
        grad_fn.register_hook(on_node)
    _warn_non_full(args, result, grad_fn)


def _warn_non_full(inputs, result, grad_fn) -> None:
    import warnings

    def warn(msg):
        warnings.warn(msg, FutureWarning, stacklevel=4)

    def tensors(x):
        return isinstance(x, tuple) and all(isinstance(t, Tensor) for t in x)

    removed = "is deprecated and will be removed in future versions. This hook will be missing some "
    if not isinstance(result, Tensor):
        if not tensors(result):
            return warn("Using non-full backward hooks on a Module that does not return a single Tensor or a "
                        f"tuple of Tensors {removed}of the grad_output. {_NON_FULL}")
    else:
        result = (result,)
    if not isinstance(inputs, Tensor):
        if not tensors(inputs):
            return warn("Using non-full backward hooks on a Module that does not take as input a single "
                        f"Tensor or a tuple of Tensors {removed}of the grad_input. {_NON_FULL}")
    else:
        inputs = (inputs,)
    out_fns = {r.grad_fn for r in result if r.grad_fn is not None}
    if not out_fns or (len(out_fns) == 1 and grad_fn not in out_fns):
        warn(f"Using a non-full backward hook when outputs are nested in python data structure {removed}"
             "grad_output.")
    elif len(out_fns) > 1:
        warn("Using a non-full backward hook when outputs are generated by different autograd Nodes "
             f"{removed}grad_output. {_NON_FULL}")
    elif {i.grad_fn for i in inputs if i.grad_fn is not None} != {n for n, _ in grad_fn.next_functions}:
        warn(f"Using a non-full backward hook when the forward contains multiple autograd Nodes {removed}"
             f"grad_input. {_NON_FULL}")
