"""``funcgrad.compile(module)``: a module whose forward is one compiled program (PyTorch's
``OptimizedModule``: the original is its submodule ``_orig_mod``).

Without gradients the forward is a :func:`jit` step; with them it is one recorded autograd op
(``CompiledFunctionBackward``) whose forward is the jitted program and whose backward is its
jitted vjp, so that an eager ``backward()`` reaches the module's parameters.
"""

from __future__ import annotations

import functools
import threading

import jax

from .. import _dispatch
from .. import _random
from .._storage import ACTIVE as _FRAMES  # binding frames entered (all threads)
from .._tensor import Tensor
from .. import _storage
from ..autograd import grad_mode
from ..autograd.grad_mode import no_grad
from ..nn.module import Module
from .common import _GEN, NESTING, _flatten_args, _leaf_key
from .compiled import jit
from .discover import _WRAPPERS, _is_module, _walk


def compile(model_or_fn=None, *, _call=None, **kwargs):  # noqa: A001  (funcgrad.compile, as torch.compile)
    """``compile(fn)`` is :func:`jit`; ``compile(module)`` returns a module whose forward is compiled.

    The compiled module (``OptimizedModule``, as PyTorch's) holds the original as ``_orig_mod``:
    it shares its parameters and buffers (training continues eagerly or compiled; its
    ``state_dict`` keys start with ``_orig_mod.``, as PyTorch's), other attributes read and
    write the original's; its forward is one XLA program and, when gradients are needed, one
    recorded autograd node whose backward is the jitted vjp of that program
    (``CompiledFunctionBackward``).

    >>> import funcgrad
    >>> from funcgrad import nn
    >>> lin = nn.Linear(2, 1)
    >>> fast = funcgrad.compile(lin)
    >>> bool((fast(funcgrad.ones(1, 2)) == lin(funcgrad.ones(1, 2))).all())
    True
    """
    if model_or_fn is None:
        return functools.partial(compile, _call=_call, **kwargs)
    kwargs.pop("mode", None), kwargs.pop("fullgraph", None), kwargs.pop("dynamic", None)
    kwargs.pop("backend", None)
    if _is_module(model_or_fn):  # (_call: Module.compile()'s, the module's call without its compiled one)
        return OptimizedModule(model_or_fn, _call)
    return jit(model_or_fn, **kwargs)


class OptimizedModule(Module):
    """What ``funcgrad.compile(module)`` returns: a module whose one submodule is the original,
    ``_orig_mod``; other attributes are the original's (read, written and deleted there), its
    ``training`` too. ``copy``/``pickle`` compile the copy of the original again."""

    _own = frozenset({"_orig_mod", "forward", "__dict__", "_call", "_fwd", "_diff", "_extra", "_extra_grad",
                      "_lock", "_ready"})

    def __init__(self, mod, call=None):
        object.__setattr__(self, "_ready", False)
        object.__setattr__(self, "_orig_mod", mod)  # (training reads it while Module.__init__ runs)
        super().__init__()
        object.__setattr__(self, "_ready", True)
        del self.__dict__["_orig_mod"]
        self._orig_mod = mod  # (the submodule: its parameters are ours, prefixed)
        call = mod.__call__ if call is None else call
        d = self.__dict__
        d["_call"], d["_fwd"], d["_diff"] = call, jit(call), {}
        d["_extra"] = []  # cells the forward read that discovery missed
        d["_extra_grad"] = []  # ...and tensors so read that require grad
        d["_lock"] = threading.RLock()

    @property
    def _module(self):
        return self._modules["_orig_mod"]

    @property
    def training(self) -> bool:
        return self.__dict__["_orig_mod"].training if not self._ready else self._modules["_orig_mod"].training

    @training.setter
    def training(self, value: bool) -> None:
        if self._ready:  # (Module.__init__'s default is not the original's)
            self._modules["_orig_mod"].training = value

    def __getattr__(self, name):
        if name == "_orig_mod":
            return self._modules["_orig_mod"]
        return getattr(self._modules["_orig_mod"], name)

    def __setattr__(self, name, value):
        if hasattr(type(self), name) or name in OptimizedModule._own:
            return super().__setattr__(name, value)
        setattr(self._modules["_orig_mod"], name, value)

    def __delattr__(self, name):
        if hasattr(type(self), name) or name in OptimizedModule._own:
            return super().__delattr__(name)
        delattr(self._modules["_orig_mod"], name)

    def __len__(self) -> int:
        return len(self._modules["_orig_mod"])

    def __dir__(self):
        own = self._modules["_orig_mod"].__dir__()
        return own + [a for a in super().__dir__() if a not in own]

    def __reduce__(self):
        return (OptimizedModule, (self._modules["_orig_mod"],))

    def forward(self, *args, **kwargs):
        if _FRAMES[0] and NESTING.depth:  # inside a funcgrad trace: inlined (CompiledFunction.__call__)
            return self._call(*args, **kwargs)
        if not (grad_mode._state.enabled and any(p._requires_grad for p in self._module.parameters())):
            return self._fwd(*args, **kwargs)
        with self._lock:  # one call of this module at a time (its program cache)
            return _differentiable_forward(self, args, kwargs)


def _differentiable_forward(cm, args, kwargs):
    """The module's forward as one recorded op: forward = jitted program, backward = its vjp."""
    leaves, tree = _flatten_args(args, kwargs)
    for _ in range(8):
        entry = _forward_op(cm, leaves, tree)
        if entry is not None:
            break
    else:
        raise RuntimeError("funcgrad.compile: could not lift the tensors read by the forward")
    op, n_out, out_tree, params, others = entry
    tpos = [i for i, x in enumerate(leaves) if isinstance(x, (Tensor, jax.Array))]
    ins = [leaves[i] if isinstance(leaves[i], Tensor) else Tensor._wrap(leaves[i]) for i in tpos]
    # (params: the discovered parameters, then the missed tensors that require grad)
    res = _dispatch.apply(op, *params, *[Tensor._wrap(c.value) for c in others], *ins)
    g = next(_GEN)
    for c, r in zip(others, res[n_out:]):
        c.value, c.gen = r._value, g
    return jax.tree.unflatten(out_tree, list(res[:n_out]))


def _forward_op(cm, leaves, tree):
    """``(op, n_out, out_tree, params, others)`` for this call; None when tracing it found tensors
    the forward reads that discovery missed (a global, an object deeper than discovery
    searches): they are added to ``cm._extra`` (inputs of the program from then on, so an
    in-place change of them shows, as eagerly; those that require grad to ``cm._extra_grad``:
    differentiable inputs, so that their gradient flows as eagerly) and the caller asks again."""
    module = cm._module
    w = _walk([module, _random.default_generator])
    params = [t for t in w.tensors.values() if t._requires_grad and t._grad_fn is None
              and t._viewinfo is None]
    n_disc = len(params)  # (the discovered ones bind their cells; a missed one may be a view)
    pids = {id(p) for p in params}
    params += [t for t in cm._extra_grad if id(t) not in pids]
    pcells = {id(p._cell) for p in params}
    others, seen = [], set(pcells)
    for c in [t._cell for t in w.tensors.values()] + [g._cell for g in w.generators.values()] + cm._extra:
        if id(c) not in seen:
            seen.add(id(c))
            others.append(c)
    tpos = [i for i, x in enumerate(leaves) if isinstance(x, (Tensor, jax.Array))]
    key = (tuple(map(id, (p._cell for p in params))), tuple(map(id, params[n_disc:])),
           tuple(map(id, others)), tree, tuple(map(_leaf_key, leaves)), module.training)
    op = cm._diff.get(key)
    if op is None:
        n_p, n_o = len(params), len(others)
        info = {}

        def fn(*arrays):
            cells = [p._cell for p in params[:n_disc]] + others
            gen = next(_GEN)
            # the module's cells read the traced arrays on this thread only, for this trace
            # (a write to another tensor stays in the frame: no tracer left behind)
            probe = info.pop("probe", False)  # the first trace: its reads are checked below
            with _storage.Frame(mark_new=False, record=probe) as frame, NESTING:
                if probe:
                    info["frame"] = frame
                for c, v in zip(cells, arrays[:n_disc] + arrays[n_p:n_p + n_o]):
                    frame.bind(c, v, gen)
                for t, v in zip(params[n_disc:], arrays[n_disc:n_p]):
                    if t._viewinfo is None:
                        frame.bind(t._cell, v, gen)
                    else:
                        frame.bind_view(t, v, gen)
                call = list(leaves)
                for i, v in zip(tpos, arrays[n_p + n_o:]):
                    call[i] = Tensor._wrap(v)
                a, kw = jax.tree.unflatten(tree, call)
                with no_grad():
                    out = cm._call(*a, **kw)
                flat, info["tree"] = jax.tree.flatten(out, is_leaf=lambda x: isinstance(x, Tensor))
                info["n"] = len(flat)
                return tuple(x._value if isinstance(x, Tensor) else x for x in flat) + tuple(
                    c.value for c in others)

        vals = [p._value for p in params] + [c.value for c in others] + [
            leaves[i]._value if isinstance(leaves[i], Tensor) else leaves[i] for i in tpos]
        info["probe"] = True
        closed = jax.make_jaxpr(fn)(*vals)
        # an older tensor read but not discovered became a constant of the program (a later
        # in-place change would be ignored), or was written (the write stayed in the frame)
        frame, consts = info.pop("frame"), {id(c) for c in closed.consts}
        missed, grads = [c for c in frame.written.values() if id(c) not in seen], []
        for c, v, t, _ in frame.reads.values():
            if id(v) in consts and id(c) not in seen:
                if t is not None and t._requires_grad:  # (eagerly its gradient flows)
                    grads.append(t)
                else:
                    missed.append(c)
        if missed or grads:
            cm._extra.extend(missed)
            cm._extra_grad.extend(grads)
            return None
        n_out = info["n"]
        op = _dispatch.Op("compiled_forward", fn, "CompiledFunctionBackward",
                          diff=tuple(range(n_p)) + tuple(range(n_p + n_o, n_p + n_o + len(tpos))),
                          diff_outputs=tuple(range(n_out)))
        op = cm._diff[key] = (op, n_out, info["tree"], others)
    return op[:3] + (params, op[3])


_WRAPPERS.append((OptimizedModule, "_module"))  # discovery walks the wrapped module
