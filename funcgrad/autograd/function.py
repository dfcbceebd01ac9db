"""Custom autograd functions: ``class F(funcgrad.autograd.Function)`` with static ``forward`` and
``backward``, applied with ``F.apply(*args)``.

As in PyTorch, the ``ctx`` object *is* the graph node: ``F.apply`` creates an instance of
``FBackward`` (a ``graph.Node`` subclass made once per Function class), runs ``forward`` under
``no_grad``, and sets that node as the ``grad_fn`` of the outputs. The engine later calls the
node's ``_apply(grads)``, which calls the user's ``backward(ctx, *grads)`` and validates what it
returns (count, shapes, dtypes) with PyTorch's messages. When ``backward`` is written with
funcgrad ops and the engine runs with ``create_graph=True`` (grad mode on), those ops are
recorded, so double backward works without anything special here.
"""

from __future__ import annotations

import functools
import inspect
import warnings
from typing import Any, Callable

from .. import _dispatch
from .._factories import zeros as _zeros
from .._tensor import DUAL as _DUAL
from .._tensor import Tensor as _Tensor
from . import grad_mode
from . import saved as _saved_hooks
from .graph import FREED_MSG, Node
from .graph import SAVED_HOOKS_ON as _hooks_on

_state = grad_mode._state


def _tensor_cls():
    return _Tensor


class FunctionCtx:
    """The ``ctx`` methods users call inside ``forward`` / ``setup_context``."""

    def save_for_backward(self, *tensors) -> None:
        """Save tensors (or ``None``) for ``backward``; read them back with ``ctx.saved_tensors``."""
        T = _tensor_cls()
        for i, t in enumerate(tensors):
            if t is not None and not isinstance(t, T):
                raise TypeError(f"save_for_backward can only save variables, but argument {i} is of "
                                f"type {type(t).__name__}")
        self.to_save = tensors

    def save_for_forward(self, *tensors) -> None:
        T = _tensor_cls()
        for t in tensors:
            if not (isinstance(t, T) or t is None):
                raise AssertionError("save_for_forward expects all arguments to be tensors; you should "
                                     "save non-tensors as attributes on ctx.")
        self.saved_for_forward = tensors

    def mark_dirty(self, *args) -> None:
        """Declare inputs that ``forward`` modified in place (they are returned as outputs)."""
        self.dirty_tensors = args

    def mark_non_differentiable(self, *args) -> None:
        """Declare outputs that do not require grad (their incoming gradient is ``None``/zeros)."""
        self.non_differentiable = args

    def set_materialize_grads(self, value: bool) -> None:
        """``False``: ``backward`` receives ``None`` (not zeros) for outputs that got no gradient."""
        self.materialize_grads = value


class BackwardCFunction(FunctionCtx, Node):
    """The node (and ``ctx``) of one ``Function.apply`` call. Subclassed per Function as
    ``<Name>Backward``; no ``__slots__``, so users may set arbitrary attributes on ``ctx``."""

    _forward_cls: type = None
    _packed = None  # {position: (packed, unpack_hook)} under saved_tensors_hooks (saved.py)

    def __init__(self):
        Node.__init__(self, ())
        self.to_save = None
        self.dirty_tensors = None
        self.non_differentiable = None
        self.materialize_grads = True
        self.needs_input_grad = ()
        self._saved = None
        self._saved_versions = ()
        self._freed = False
        self._out_meta = ()       # (shape, dtype) per output, None for non-tensor outputs
        self._in_meta = ()        # per forward input: (shape, dtype) for tensors, None otherwise
        self._tensor_pos = ()     # forward-input positions that are tensors (= next_functions)

    @property
    def num_outputs(self) -> int:
        return len(self._out_meta)

    def __repr__(self) -> str:
        return object.__repr__(self)

    # ---- saved tensors ------------------------------------------------------------------------
    @property
    def saved_tensors(self) -> tuple:
        """The tensors given to ``save_for_backward`` (version-checked; freed after backward);
        inside ``jvp``, those given to ``save_for_forward``."""
        fw = self.__dict__.get("_jvp_saved")
        if fw is not None:
            return fw
        if self._freed:
            raise RuntimeError(FREED_MSG)
        if self._saved is None:  # still inside forward / setup_context
            return tuple(self.to_save or ())
        for t, v in self._saved_versions:
            if t._ver[0] != v:
                raise RuntimeError(_dispatch._version_msg(t, v))
        if self._packed is not None:  # saved under saved_tensors_hooks: unpacked at each read
            return _saved_hooks.unpack_ctx(self)
        return self._saved

    saved_variables = saved_tensors

    def _check_saved(self) -> None:
        """As in PyTorch, saved tensors are checked when ``backward`` reads ``saved_tensors``."""

    def _release(self) -> None:
        if self._saved:  # a Function that saved nothing can be backpropagated again
            self._saved, self._saved_versions, self._freed = None, (), True
            self._packed = None

    # ---- backward -----------------------------------------------------------------------------
    def apply(self, *grads):
        """Call the Function's ``backward`` (PyTorch's ``grad_fn.apply``)."""
        cls = self._forward_cls
        bw = cls.backward
        if bw is Function.backward and cls.vjp is not Function.vjp:
            bw = cls.vjp
        return bw(self, *grads)

    def _apply(self, grads):
        grads = list(grads)
        if self.materialize_grads:
            for i, (g, meta) in enumerate(zip(grads, self._out_meta)):
                if g is None and meta is not None:
                    grads[i] = _zeros(meta[0], dtype=meta[1])
        res = self.apply(*grads)
        if not isinstance(res, tuple):
            res = (res,)
        return self._validate(res)

    def _validate(self, res) -> list:
        name, n_in = self.name(), len(self._in_meta)
        if len(res) != n_in:
            if len(res) < n_in or any(r is not None for r in res[n_in:]):
                raise RuntimeError(f"function {name} returned an incorrect number of gradients "
                                   f"(expected {n_in}, got {len(res)})")
            res = res[:n_in]
        T = _tensor_cls()
        out = []
        for i, (g, meta) in enumerate(zip(res, self._in_meta)):
            if meta is None:
                if g is not None:
                    raise RuntimeError(f"function {name} returned a gradient different than None at "
                                       f"position {i + 1}, but the corresponding forward input was not "
                                       f"a Variable")
                continue
            if g is not None:
                if not isinstance(g, T):
                    raise RuntimeError(f"expected Variable or None (got {type(g).__name__})")
                g = _conform(g, meta, name, len(out))
            out.append(g)
        # only tensor inputs that need a gradient have an edge; drop the rest
        return [g if edge[0] is not None else None for g, edge in zip(out, self.next_functions)]


def _conform(g, meta, name, index):
    """PyTorch's ``validate_outputs``: sum a broadcast gradient down to the input's shape, cast
    it to the input's dtype, or raise."""
    shape, dtype = meta
    if tuple(g.shape) != tuple(shape):
        gs = tuple(g.shape)
        lead = len(gs) - len(shape)
        ok = lead >= 0 and all(a == b or b == 1 for a, b in zip(shape, gs[lead:]))
        if not ok:
            raise RuntimeError(f"Function {name} returned an invalid gradient at index {index} - got "
                               f"{list(gs)} but expected shape compatible with {list(shape)}")
        if lead:
            g = g.sum(dim=tuple(range(lead)))
        dims = tuple(i for i, (a, b) in enumerate(zip(shape, g.shape)) if a == 1 and b != 1)
        if dims:
            g = g.sum(dim=dims, keepdim=True)
    if g.dtype is not dtype:
        g = g.to(dtype)
    return g


class _FunctionMeta(type):
    """Creates the ``<Name>Backward`` node class of each Function subclass."""

    def __init__(cls, name, bases, attrs):
        backward_cls = type(name + "Backward", (BackwardCFunction,), {"_forward_cls": cls})
        # made in this module, as PyTorch's FunctionMeta makes it in torch.autograd.function (so
        # its repr is <funcgrad.autograd.function.ExpBackward object at 0x...>, not a built-in
        # node's <MulBackward0 object at 0x...>)
        backward_cls.__module__ = __name__
        backward_cls.__qualname__ = name + "Backward"
        cls._backward_cls = backward_cls
        super().__init__(name, bases, attrs)


class Function(metaclass=_FunctionMeta):
    """Base class of custom differentiable operations.

    Subclass it with static ``forward`` and ``backward`` and call ``apply``:

    >>> import funcgrad
    >>> class Exp(funcgrad.autograd.Function):
    ...     @staticmethod
    ...     def forward(ctx, x):
    ...         y = x.exp()
    ...         ctx.save_for_backward(y)
    ...         return y
    ...     @staticmethod
    ...     def backward(ctx, grad):
    ...         (y,) = ctx.saved_tensors
    ...         return grad * y
    >>> x = funcgrad.zeros(2, requires_grad=True)
    >>> y = Exp.apply(x)
    >>> y
    tensor([1., 1.], grad_fn=<ExpBackward>)
    >>> y.sum().backward(); x.grad
    tensor([1., 1.])
    """

    def __init__(self, *args, **kwargs):
        warnings.warn(f"{type(self)} should not be instantiated. Methods on autograd functions are "
                      f"all static, so you should invoke them on the class itself. Instantiating an "
                      f"autograd function will raise an error in a future version of PyTorch.",
                      DeprecationWarning, stacklevel=2)

    def __call__(self, *args, **kwargs):
        raise RuntimeError(
            "Legacy autograd function with non-static forward method is deprecated. Please use "
            "new-style autograd function with static forward method. (Example: "
            "https://pytorch.org/docs/stable/autograd.html#torch.autograd.Function)")

    # user-overridable ---------------------------------------------------------------------
    @staticmethod
    def forward(*args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError("You must implement the forward function for custom "
                                  "autograd.Function.")

    @staticmethod
    def setup_context(ctx: Any, inputs: tuple, output: Any) -> Any:
        raise NotImplementedError("setup_context is not implemented.")

    @staticmethod
    def backward(ctx: Any, *grad_outputs: Any) -> Any:
        raise NotImplementedError("You must implement either the backward or vjp method for your "
                                  "custom autograd.Function to use it with backward mode AD.")

    vjp = backward

    @staticmethod
    def jvp(ctx: Any, *grad_inputs: Any) -> Any:
        raise NotImplementedError("You must implement the jvp function for custom autograd.Function "
                                  "to use it with forward mode AD.")

    @classmethod
    def apply(cls, *args, **kwargs):
        """Run ``forward`` and, if an input requires grad, record a ``<Name>Backward`` node."""
        T = _tensor_cls()
        has_setup = cls.setup_context is not Function.setup_context
        if has_setup:
            bound = inspect.signature(cls.forward).bind(*args, **kwargs)
            bound.apply_defaults()
            args, kwargs = bound.args, bound.kwargs
        ctx = cls._backward_cls()
        is_t = [isinstance(a, T) for a in args]
        if _state.enabled:  # (a view whose storage was written since: its node made anew)
            for t, a in zip(is_t, args):
                if t and a._viewinfo is not None:
                    a._fresh()
        ctx.needs_input_grad = tuple(t and a._requires_grad for t, a in zip(is_t, args))
        executable = _state.enabled and any(ctx.needs_input_grad)
        # forward mode (a dual level with an input's tangent): the forward runs without tangents and
        # the Function's jvp gives the outputs' (PyTorch's custom Function forward AD)
        level = _DUAL[0]
        tans = None if level is None else [level.tangent(a) if t else None
                                           for t, a in zip(is_t, args, strict=True)]
        if tans is not None and all(t is None for t in tans):
            tans = None
        if tans is not None:
            _DUAL[0] = None
        try:
            with grad_mode.no_grad():
                if has_setup:
                    output = cls.forward(*args, **kwargs)
                    cls.setup_context(ctx, args, output)
                else:
                    output = cls.forward(ctx, *args, **kwargs)
        finally:
            if tans is not None:
                _DUAL[0] = level
        is_tuple = isinstance(output, tuple)
        outs = output if is_tuple else (output,)
        if not executable:
            # PyTorch still lets forward see ctx, but nothing is recorded; outputs of the forward
            # are plain results (an input returned as is stays the input).
            if tans is not None:
                _forward_jvp(cls, ctx, args, is_t, tans, outs, level)
            return output
        ctx._in_meta = tuple((tuple(a.shape), a.dtype) if t else None for t, a in zip(is_t, args))
        ctx._tensor_pos = tuple(i for i, t in enumerate(is_t) if t)
        ctx.next_functions = tuple(args[i]._edge() if args[i]._requires_grad else (None, 0)
                                   for i in ctx._tensor_pos)
        if grad_mode._anomaly[0]:
            import traceback
            ctx._trace = "".join(traceback.format_stack()[:-1])
        new_outs = _wrap_outputs(ctx, args, outs)
        # saved tensors: an output saved in forward is replaced by the returned output (so
        # backward sees its grad_fn); versions are recorded now, after in-place forwards.
        remap = {id(o): n for o, n in zip(outs, new_outs) if isinstance(o, T)}
        saved = []
        for t in ctx.to_save or ():
            if t is not None and id(t) in remap:
                t = remap[id(t)]
            saved.append(t)
        ctx._saved = tuple(saved)
        ctx._saved_versions = tuple((t, t._ver[0]) for t in saved if t is not None)
        ctx.to_save = None
        if _hooks_on[0]:  # saved_tensors_hooks entered (in some thread): pack what it saved
            _saved_hooks.pack_ctx(ctx)
        if tans is not None:
            _forward_jvp(cls, ctx, args, is_t, tans, new_outs, level)
        return tuple(new_outs) if is_tuple else new_outs[0]


def _forward_jvp(cls, ctx, args, is_t, tans, outs, level) -> None:
    """``cls.jvp(ctx, *tangents)`` (an input tensor without a tangent gives zeros, or None without
    ``materialize_grads``; a non-tensor None), its results the float outputs' tangents; inside it
    ``ctx.saved_tensors`` are those given to ``save_for_forward``, as PyTorch's."""
    tg = [t if t is not None or not it else
          (_zeros(tuple(a.shape), dtype=a.dtype) if ctx.materialize_grads else None)
          for t, it, a in zip(tans, is_t, args, strict=True)]
    ctx._jvp_saved = tuple(getattr(ctx, "saved_for_forward", None) or ())
    try:
        res = cls.jvp(ctx, *tg)
    finally:
        del ctx._jvp_saved
    res = res if isinstance(res, tuple) else (res,)
    T = _tensor_cls()
    for o, t in zip(outs, res, strict=False):  # (extra jvp results: none)
        if isinstance(o, T) and t is not None and (o.dtype.is_floating_point or o.dtype.is_complex):
            level.set(o, t)


def _wrap_outputs(ctx, args, outs):
    T = _tensor_cls()
    dirty = {id(t) for t in ctx.dirty_tensors or ()}
    nondiff = {id(t) for t in ctx.non_differentiable or ()}
    inputs = {id(a) for a in args if isinstance(a, T)}
    meta, res = [], []
    for nr, o in enumerate(outs):
        if not isinstance(o, T):
            meta.append(None)
            res.append(o)
            continue
        meta.append((tuple(o.shape), o.dtype))
        if id(o) in nondiff:
            if id(o) in inputs and id(o) not in dirty:
                o = o.detach()
            else:
                o._requires_grad = False
            res.append(o)
            continue
        if id(o) in dirty:
            if o._grad_fn is None and o._requires_grad and o._viewinfo is None:
                raise RuntimeError("a leaf Variable that requires grad has been used in an in-place "
                                   "operation.")
            o._set_grad_fn(ctx, nr)  # the input itself now comes from this node
        elif id(o) in inputs or o._requires_grad or o._grad_fn is not None:
            o = o._share(o._ver)  # an alias: the caller's tensor keeps its own history
            o._set_grad_fn(ctx, nr)
        elif not (o.dtype.is_floating_point or o.dtype.is_complex):
            pass  # integer outputs are never differentiable
        else:
            o._set_grad_fn(ctx, nr)
        res.append(o)
    ctx._out_meta = tuple(meta)
    return res


class InplaceFunction(Function):
    """PyTorch's base for Functions with an ``inplace`` flag (kept for API compatibility)."""

    def __init__(self, inplace: bool = False):
        super().__init__()
        self.inplace = inplace


class _DelayedErrorNode(Node):
    """Raises when a ``@once_differentiable`` backward's result is differentiated again."""

    __slots__ = ("_msg", "_n")

    def _apply(self, grads):
        raise RuntimeError(self._msg)

    @property
    def num_outputs(self) -> int:
        return self._n


_DelayedErrorNode.__name__ = _DelayedErrorNode.__qualname__ = "DelayedError"


def once_differentiable(fn: Callable) -> Callable:
    """Decorate ``backward`` that is not itself differentiable: it runs under ``no_grad``, and
    double backward through it raises instead of silently giving wrong gradients."""
    @functools.wraps(fn)
    def wrapper(ctx, *args, **kwargs):
        with grad_mode.no_grad():
            outputs = fn(ctx, *args, **kwargs)
        if not _state.enabled:
            return outputs
        T = _tensor_cls()
        if not any(isinstance(a, T) and a._requires_grad for a in args):
            return outputs
        outs = outputs if isinstance(outputs, tuple) else (outputs,)
        node = _DelayedErrorNode(tuple(a._edge() for a in args
                                       if isinstance(a, T) and a._requires_grad))
        node._msg = ("trying to differentiate twice a function that was marked with "
                     "@once_differentiable")
        node._n = len(outs)
        res = []
        for nr, o in enumerate(outs):
            if isinstance(o, T):
                o = o.detach()
                o._set_grad_fn(node, nr)
            res.append(o)
        return tuple(res) if isinstance(outputs, tuple) else res[0]
    return wrapper


__all__ = ["Function", "FunctionCtx", "BackwardCFunction", "InplaceFunction", "once_differentiable"]
