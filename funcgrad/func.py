"""A funcgrad model as a pure JAX function (PyTorch's ``torch.func``).

``functional_call(module, params, args)`` runs ``module`` with the given parameter/buffer
values in place of its own, without changing the module. Values may be funcgrad Tensors
(then the result is Tensors, differentiable by funcgrad's autograd) or JAX arrays / tracers
(then the result is JAX arrays, so the call composes with ``jax.grad``, ``jax.vmap``,
``jax.jit``). ``Tensor`` is a JAX pytree (its leaf is its array), so dicts of Tensors pass
through JAX transformations as well. ``grad``, ``vjp``, ``jacrev`` and ``vmap`` are thin
wrappers over the JAX transformations that accept functions returning Tensors.
"""

from __future__ import annotations

from typing import Any, Callable

import jax

from . import _random, _storage
from ._tensor import Tensor
from .autograd.grad_mode import no_grad

__all__ = ["functional_call", "grad", "grad_and_value", "vjp", "jacrev", "vmap", "to_jax",
           "from_jax"]

_is_t = lambda x: isinstance(x, Tensor)  # noqa: E731


def to_jax(tree):
    """Replace every Tensor in ``tree`` by its ``jax.Array`` (no copy)."""
    return jax.tree.map(lambda x: x._value if isinstance(x, Tensor) else x, tree, is_leaf=_is_t)


def from_jax(tree):
    """Wrap every array in ``tree`` as a (leaf, not requiring grad) Tensor."""
    return jax.tree.map(lambda x: Tensor._wrap(x) if isinstance(x, (jax.Array, jax.core.Tracer))
                        else x, tree, is_leaf=_is_t)


def _owner(module, name: str):
    *path, attr = name.split(".")
    m = module
    for p in path:
        m = getattr(m, p)
    return m, attr


def _swap(owner, attr, value):
    """Put ``value`` where ``owner.attr`` is looked up; return a function restoring it."""
    d = owner.__dict__
    for store in ("_parameters", "_buffers"):
        s = d.get(store)
        if s is not None and attr in s:
            old = s[attr]
            s[attr] = value
            return lambda: s.__setitem__(attr, old)
    if attr in d:
        old = d[attr]
        d[attr] = value
        return lambda: d.__setitem__(attr, old)
    raise AttributeError(f"{type(owner).__name__} has no parameter or buffer '{attr}'")


def functional_call(module, parameter_and_buffer_dicts, args: Any = None, kwargs: dict | None = None,
                    *, tie_weights: bool = True, strict: bool = False, rng=None):
    """Call ``module(*args, **kwargs)`` with its parameters and buffers replaced (PyTorch's signature).

    Args:
        module: an ``nn.Module``.
        parameter_and_buffer_dicts: ``{name: value}`` or a tuple of such dicts; names as in
            ``named_parameters()`` / ``named_buffers()``; values Tensors or JAX arrays.
        args: a single argument or a tuple of positional arguments.
        kwargs: keyword arguments.
        tie_weights: a value given for one name of a tied (shared) parameter is used for all.
        strict: every parameter and buffer must be given, and nothing else.
        rng: a JAX PRNG key (``jax.random.key``/``PRNGKey``, traced or not) or a
            ``funcgrad.Generator`` for the random numbers the forward draws (dropout); a key seeds a
            fresh mt19937 stream. Under ``jax.jit`` it is needed: the global generator's stream
            cannot advance inside a staged function (the program would reuse one mask on every
            call), so a forward drawing from it raises there and leaves the generator as it was
            (under ``jax.grad`` alone the forward runs each call and draws eagerly).

    Returns:
        The module's output; with JAX-array values (no Tensor among values and args) the
        Tensors in it are converted to JAX arrays, so it can be used under ``jax.grad``.
        Buffers updated in place by the forward (BatchNorm running stats) are updated in the
        given Tensors; with JAX arrays such updates are dropped (arrays are immutable).

    >>> import funcgrad, jax, jax.numpy as jnp
    >>> from funcgrad import nn
    >>> lin = nn.Linear(2, 1)
    >>> p = {"weight": jnp.ones((1, 2), "float32"), "bias": jnp.zeros(1, "float32")}
    >>> jax.grad(lambda p: functional_call(lin, p, jnp.ones((1, 2), "float32")).sum())(p)["weight"]
    Array([[1., 1.]], dtype=float32)
    """
    dicts = parameter_and_buffer_dicts if isinstance(parameter_and_buffer_dicts, (tuple, list)) \
        else (parameter_and_buffer_dicts,)
    merged: dict = {}
    for d in dicts:
        for k, v in d.items():
            if k in merged:
                raise ValueError(f"{k} appeared in multiple dictionaries; behavior of functional "
                                 f"call is ambiguous")
            merged[k] = v
    if args is None:
        args = ()
    elif not isinstance(args, tuple):
        args = (args,)
    kwargs = kwargs or {}
    names = dict(module.named_parameters(remove_duplicate=False))
    names.update(dict(module.named_buffers(remove_duplicate=False)))
    if strict:
        missing = [k for k in names if k not in merged]
        unexpected = [k for k in merged if k not in names]
        if missing or unexpected:
            msg = f"Error(s) in reparametrizing for {type(module).__name__}:"
            if unexpected:
                msg += "\n\tUnexpected key(s): " + ", ".join(f"'{k}'" for k in unexpected) + "."
            if missing:
                msg += "\n\tMissing key(s): " + ", ".join(f"'{k}'" for k in missing) + "."
            raise RuntimeError(msg)
    leaves = jax.tree.leaves((merged, args, kwargs), is_leaf=_is_t)
    array_mode = not any(isinstance(x, Tensor) for x in leaves)
    values = {k: v if isinstance(v, Tensor) else Tensor._wrap(v) for k, v in merged.items()}
    if tie_weights:
        by_obj: dict = {}
        for k, t in names.items():
            by_obj.setdefault(id(t), []).append(k)
        for k in list(values):
            if k in names:
                for alias in by_obj[id(names[k])]:
                    values.setdefault(alias, values[k])
    if array_mode:
        args, kwargs = from_jax((args, kwargs))
    gen = _random.default_generator
    state0, gen0 = gen._cell.value, gen._cell.gen  # the global stream's state vector
    # rng=: this thread's draws come from that stream (a Generator, or a fresh one seeded from
    # the key); the global generator, and other threads drawing from it meanwhile, are untouched
    stream = None
    if isinstance(rng, _random.Generator):
        stream, rng0 = rng, rng._cell.value
    elif rng is not None:
        stream = _random.Generator()
        stream._cell.value = _random.state_from_key(getattr(rng, "_value", rng))
    staging = rng is None and isinstance(_staging_probe(), jax.core.Tracer)  # inside jax.jit & co.
    restores = []
    # this thread's binding frame: a write to an existing tensor (a buffer that was not
    # replaced: BatchNorm stats under jax.grad) is kept in the frame and written through on
    # leaving only if concrete, so no tracer is left in the module (nor seen by other threads)
    frame = _storage.Frame(mark_new=False)
    failure = None
    try:
        frame.__enter__()
        for k, v in values.items():
            restores.append(_swap(*_owner(module, k), v))
        with _random.default_stream(stream):
            if array_mode:
                with no_grad():
                    out = module(*args, **kwargs)
            else:
                out = module(*args, **kwargs)
    except Exception as e:  # re-raised below, unless it came from a draw that needed rng=
        failure = e
    finally:
        frame.release(commit=lambda v: not isinstance(v, jax.core.Tracer))
        frame.__exit__()
        for r in reversed(restores):
            r()
        # a draw from the concrete global stream while tracing bakes one mask into the program
        leaked = staging and not isinstance(state0, jax.core.Tracer) and gen._cell.value is not state0
        if leaked or isinstance(gen._cell.value, jax.core.Tracer) and not isinstance(state0, jax.core.Tracer):
            gen._cell.value, gen._cell.gen = state0, gen0
        # a Generator advances as it would eagerly, but cannot inside a traced function: use a key
        if stream is not None and stream is rng and isinstance(rng._cell.traced(), jax.core.Tracer) \
                and not isinstance(rng0, jax.core.Tracer):
            rng._cell.value = rng0
            leaked = True
    if leaked:
        raise RuntimeError(
            "functional_call: the module drew random numbers (e.g. dropout) from the global "
            "generator inside jax.jit (a staged JAX transformation): the traced program would "
            "reuse one mask on every call. Pass a key: functional_call(module, params, args, "
            "rng=key) with a fresh jax.random key per call (e.g. an argument of the jitted "
            "function), call module.eval(), or compile the step with funcgrad.jit.") from failure
    if failure is not None:
        raise failure
    return to_jax(out) if array_mode else out


@jax.jit
def _staging_probe():
    """A jitted constant: a tracer exactly when called while an outer ``jax.jit`` (or another
    staging transformation) traces, a concrete array otherwise (eager, or ``jax.grad`` alone)."""
    return jax.numpy.zeros((), jax.numpy.uint32)


def _array_fn(func, has_aux=False):
    def f(*a, **k):
        out = func(*a, **k)
        if has_aux:
            out, aux = out
            return to_jax(out), aux
        return to_jax(out)
    return f


def _detach(tree):
    return jax.tree.map(lambda x: Tensor._wrap(x._value) if isinstance(x, Tensor) else x, tree,
                        is_leaf=_is_t)


def _in_order(tree, like):
    """``tree`` with every plain dict in the key order of its counterpart in ``like``: JAX's
    pytrees sort dict keys, PyTorch's ``torch.func`` keeps the caller's order."""
    if type(tree) is dict and isinstance(like, dict) and tree.keys() == like.keys():
        return {k: _in_order(tree[k], like[k]) for k in like}
    if isinstance(tree, (list, tuple)) and isinstance(like, (list, tuple)) and len(tree) == len(like):
        items = [_in_order(t, lk) for t, lk in zip(tree, like)]
        return type(tree)(*items) if hasattr(tree, "_fields") else type(tree)(items)
    return tree


def _like_args(args, argnums):
    return args[argnums] if isinstance(argnums, int) else tuple(args[i] for i in argnums)


def grad(func: Callable, argnums: int | tuple[int, ...] = 0, has_aux: bool = False) -> Callable:
    """``torch.func.grad``: the gradient of a scalar-valued ``func`` w.r.t. its arguments.

    Arguments may be Tensors (gradients come back as Tensors) or JAX arrays.

    >>> import funcgrad
    >>> funcgrad.func.grad(lambda x: (x ** 2).sum())(funcgrad.tensor([1.0, 2.0]))
    tensor([2., 4.])
    """
    g = jax.grad(_array_fn(func, has_aux), argnums=argnums, has_aux=has_aux)

    def run(*a, **k):
        r = _detach(g(*a, **k))
        if has_aux:
            return _in_order(r[0], _like_args(a, argnums)), r[1]
        return _in_order(r, _like_args(a, argnums))
    return run


def grad_and_value(func: Callable, argnums: int | tuple[int, ...] = 0, has_aux: bool = False) -> Callable:
    """``torch.func.grad_and_value``: ``(gradient, value)``."""
    g = jax.value_and_grad(_array_fn(func, has_aux), argnums=argnums, has_aux=has_aux)

    def run(*a, **k):
        v, gr = g(*a, **k)
        return _in_order(_detach(gr), _like_args(a, argnums)), from_jax(v)
    return run


def vjp(func: Callable, *primals, has_aux: bool = False):
    """``torch.func.vjp``: ``(output, vjp_fn)`` with ``vjp_fn(cotangent) -> grads`` (a tuple)."""
    out = jax.vjp(_array_fn(func, has_aux), *primals, has_aux=has_aux)
    pull = out[1]

    def vjp_fn(ct):
        return _in_order(_detach(pull(to_jax(ct))), primals)
    if has_aux:
        return from_jax(out[0]), vjp_fn, out[2]
    return from_jax(out[0]), vjp_fn


def jacrev(func: Callable, argnums: int | tuple[int, ...] = 0, has_aux: bool = False) -> Callable:
    """``torch.func.jacrev``: the Jacobian by reverse mode."""
    j = jax.jacrev(_array_fn(func, has_aux), argnums=argnums, has_aux=has_aux)
    return lambda *a, **k: from_jax(_detach(j(*a, **k)))


def vmap(func: Callable, in_dims=0, out_dims=0, randomness: str = "error", *,
         chunk_size=None) -> Callable:
    """``torch.func.vmap``: map ``func`` over a batch dimension (``jax.vmap``; Tensors welcome).

    >>> import funcgrad
    >>> funcgrad.func.vmap(lambda r: r.sum())(funcgrad.ones(3, 2))
    tensor([2., 2., 2.])
    """
    return jax.vmap(func, in_axes=in_dims, out_axes=out_dims)
