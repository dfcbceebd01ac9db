"""A funcgrad model as a pure JAX function (PyTorch's ``torch.func``).

``functional_call(module, params, args)`` runs ``module`` with the given parameter/buffer
values in place of its own, without changing the module. Values may be funcgrad Tensors
(then the result is Tensors, differentiable by funcgrad's autograd) or JAX arrays / tracers
(then the result is JAX arrays, so the call composes with ``jax.grad``, ``jax.vmap``,
``jax.jit``). ``Tensor`` is a JAX pytree (its leaf is its array), so dicts of Tensors pass
through JAX transformations as well. ``grad``, ``vjp``, ``jacrev`` and ``vmap`` are thin
wrappers over the JAX transformations that accept functions returning Tensors.

Complex numbers follow PyTorch's convention, as ``.backward()`` does (``_dispatch._conj``): a
gradient is the conjugate of JAX's (``grad(lambda z: (z.abs() ** 2).sum())`` is ``2z``, JAX's
``2z̄``), and ``vjp_fn(v)`` is ``conj(pullback(conj(v)))``; forward mode (``jvp``, ``linearize``)
is the same in both. ``jacrev``/``jacfwd``/``hessian`` refuse complex inputs and outputs, as
PyTorch's do.
"""

from __future__ import annotations

from typing import Any, Callable

import jax
from jax.extend.core import Literal as _Literal

from . import _random, _storage
from ._dispatch import _conj
from ._ops.shape import stack as _stack
from ._tensor import Tensor
from .autograd.grad_mode import no_grad

__all__ = ["functional_call", "grad", "grad_and_value", "vjp", "jvp", "linearize", "jacrev", "jacfwd",
           "hessian", "vmap", "stack_module_state", "to_jax", "from_jax"]

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


def _array_fn(func, has_aux=False, check=None):
    def f(*a, **k):
        out = func(*a, **k)
        if has_aux:
            out, aux = out
            if check is not None:
                check(out)
            return to_jax(out), aux
        if check is not None:
            check(out)
        return to_jax(out)
    return f


def _pt(tree):
    """JAX's gradients in PyTorch's convention: complex ones conjugated (a zero imaginary part
    +0.0, as PyTorch's), Tensors and arrays alike; real ones as they are."""
    return jax.tree.map(lambda x: _conj(x, True), tree)


def _ct(tree):
    """A cotangent in PyTorch's convention as JAX's ``vjp`` takes it (its complex conjugate)."""
    return jax.tree.map(_conj, tree)


def _grad_output(out) -> None:
    """PyTorch's checks of what ``grad``'s function returned (``grad_and_value_impl``, then
    ``autograd.grad``'s implicit gradient, which must be of a real scalar)."""
    if not isinstance(out, (Tensor, jax.Array, jax.core.Tracer)):
        raise RuntimeError(f"grad_and_value(f)(*args): Expected f(*args) to return a Tensor, got "
                           f"{type(out)}")
    if out.ndim != 0:
        raise RuntimeError(f"grad_and_value(f)(*args): Expected f(*args) to return a scalar Tensor, got "
                           f"tensor with {out.ndim} dims. Maybe you wanted to use the vjp or jacrev APIs "
                           f"instead?")
    dt = out.dtype if isinstance(out, Tensor) else None
    if (dt.is_complex if dt is not None else jax.numpy.iscomplexobj(out)):
        raise RuntimeError(f"grad can be implicitly created only for real scalar outputs but got "
                           f"{dt or out.dtype}")


def _real_only(name: str, tree, what: str) -> None:
    """PyTorch's ``error_if_complex``: ``jacrev``/``jacfwd`` take and give real tensors only (the
    index counts every leaf, as PyTorch's flattening does; its message says "input" for both)."""
    for i, x in enumerate(jax.tree.leaves(tree, is_leaf=_is_t)):
        if isinstance(x, Tensor) and x.dtype.is_complex:
            raise RuntimeError(f"{name}: Expected all {what} to be real but received complex tensor at "
                               f"flattened input idx: {i}")


def _as_called(func, args):
    """``func`` seeing its arguments' dicts in the caller's key order (``args``: the call's), which
    a JAX transformation's flattening sorts."""
    like = _skeleton(args)
    return lambda *a, **k: func(*_in_order(a, like), **k)


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
    def run(*a, **k):
        g = jax.grad(_array_fn(_as_called(func, a), has_aux, _grad_output), argnums=argnums, has_aux=has_aux)
        r = g(*a, **k)
        r = _detach((_pt(r[0]), r[1]) if has_aux else _pt(r))
        if has_aux:
            return _in_order(r[0], _like_args(a, argnums)), r[1]
        return _in_order(r, _like_args(a, argnums))
    return run


def grad_and_value(func: Callable, argnums: int | tuple[int, ...] = 0, has_aux: bool = False) -> Callable:
    """``torch.func.grad_and_value``: ``(gradient, value)``."""
    def run(*a, **k):
        g = jax.value_and_grad(_array_fn(_as_called(func, a), has_aux, _grad_output), argnums=argnums,
                               has_aux=has_aux)
        v, gr = g(*a, **k)
        return _in_order(_detach(_pt(gr)), _like_args(a, argnums)), from_jax(v)
    return run


def vjp(func: Callable, *primals, has_aux: bool = False):
    """``torch.func.vjp``: ``(output, vjp_fn)`` with ``vjp_fn(cotangent) -> grads`` (a tuple)."""
    out = jax.vjp(_array_fn(_as_called(func, primals), has_aux), *primals, has_aux=has_aux)
    pull = out[1]

    def vjp_fn(ct):
        return _in_order(_detach(_pt(pull(_ct(to_jax(ct))))), primals)
    if has_aux:
        return from_jax(out[0]), vjp_fn, out[2]
    return from_jax(out[0]), vjp_fn


def _skeleton(tree):
    """``tree``'s containers, leaves None: the dict key order a JAX transformation's result lost."""
    if type(tree) is dict:
        return {k: _skeleton(v) for k, v in tree.items()}
    if isinstance(tree, (list, tuple)):
        return [_skeleton(v) for v in tree]
    return None


def _graft(skel, inner):
    """``skel`` with each leaf replaced by ``inner``: a Jacobian's structure (outputs over inputs)."""
    if type(skel) is dict:
        return {k: _graft(v, inner) for k, v in skel.items()}
    if isinstance(skel, list):
        return [_graft(v, inner) for v in skel]
    return inner


def _jac(transform, func, argnums, has_aux, name):
    """``jacrev``/``jacfwd``: ``transform`` (``jax.jacrev``/``jax.jacfwd``) of ``func``, its result
    as Tensors with dicts in the caller's key order (outputs', then arguments')."""
    seen = []

    def run(*a, **k):
        def f(*a, **k):
            out = g(*a, **k)
            seen[:] = [_skeleton(out[0] if has_aux else out)]
            _real_only(name, out[0] if has_aux else out, "outputs")
            return _array_fn(lambda: out, has_aux)()
        _real_only(name, a, "inputs")
        g = _as_called(func, a)
        r = _detach(transform(f, argnums=argnums, has_aux=has_aux)(*a, **k))
        like = _graft(seen[0], _skeleton(_like_args(a, argnums)))
        return (_in_order(r[0], like), r[1]) if has_aux else _in_order(r, like)
    return run


def jacrev(func: Callable, argnums: int | tuple[int, ...] = 0, has_aux: bool = False, *,
           chunk_size=None) -> Callable:
    """``torch.func.jacrev``: the Jacobian by reverse mode (``jax.jacrev``): for each output, its
    derivative w.r.t. each of the arguments ``argnums``, of shape ``output.shape + input.shape``."""
    return _jac(jax.jacrev, func, argnums, has_aux, "jacrev")


def jacfwd(func: Callable, argnums: int | tuple[int, ...] = 0, has_aux: bool = False, *,
           randomness: str = "error") -> Callable:
    """``torch.func.jacfwd``: the Jacobian by forward mode (``jax.jacfwd``), as ``jacrev``'s.

    >>> import funcgrad
    >>> funcgrad.func.jacfwd(lambda t: t.sin())(funcgrad.zeros(2))
    tensor([[1., 0.],
            [0., 1.]])
    """
    return _jac(jax.jacfwd, func, argnums, has_aux, "jacfwd")


def hessian(func: Callable, argnums: int | tuple[int, ...] = 0) -> Callable:
    """``torch.func.hessian``: ``jacfwd(jacrev(func, argnums), argnums)``, as PyTorch computes it.

    >>> import funcgrad
    >>> funcgrad.func.hessian(lambda t: (t ** 3).sum())(funcgrad.tensor([1.0, 2.0]))
    tensor([[ 6.,  0.],
            [ 0., 12.]])
    """
    return jacfwd(jacrev(func, argnums), argnums)


_JVP = "jvp(f, primals, tangents)"


def _independent(fn, primals, tangents) -> list:
    """Which outputs of ``jax.jvp(fn, primals, tangents)``'s tangents do not depend on the
    tangents (PyTorch's ``strict=True`` refuses them): read from the jaxpr, nothing computed."""
    jaxpr = jax.make_jaxpr(lambda *t: jax.jvp(fn, primals, t)[1])(*tangents).jaxpr
    live = set(jaxpr.invars)
    for eqn in jaxpr.eqns:
        if any(not isinstance(v, _Literal) and v in live for v in eqn.invars):
            live.update(eqn.outvars)
    return [isinstance(v, _Literal) or v not in live for v in jaxpr.outvars]


def jvp(func: Callable, primals: Any, tangents: Any, *, strict: bool = False, has_aux: bool = False):
    """``torch.func.jvp``: ``(func(*primals), J @ tangents)`` by forward mode (``jax.jvp``), and
    ``func``'s auxiliary output with ``has_aux``. An output that does not depend on the primals
    gets a zero tangent (``strict=True``: PyTorch's RuntimeError instead).

    >>> import funcgrad
    >>> x = funcgrad.tensor([0.0, 1.0])
    >>> funcgrad.func.jvp(lambda t: t * t, (x,), (funcgrad.ones(2),))
    (tensor([0., 1.]), tensor([0., 2.]))
    """
    if not isinstance(primals, tuple):
        raise RuntimeError(f"{_JVP}: Expected primals to be a tuple. E.g. it should be valid to call "
                           f"f(*primals).")
    p_leaves, p_spec = jax.tree.flatten(primals, is_leaf=_is_t)
    t_leaves, t_spec = jax.tree.flatten(tangents, is_leaf=_is_t)
    if p_spec != t_spec:
        raise RuntimeError(
            f"{_JVP}: Expected primals and tangents to have the same python structure. For example, if "
            f"primals is a tuple of 3 tensors, tangents also must be. Got primals with structure {p_spec} "
            f"and tangents with structure {t_spec}")
    for what, leaves in (("primals", p_leaves), ("tangents", t_leaves)):
        if not leaves:
            raise RuntimeError(f"{_JVP}: Expected {what} to be a non-empty list of Tensors.")
        if not all(isinstance(v, Tensor) for v in leaves):
            raise RuntimeError(f"{_JVP}: Expected {what} to only contain Tensors.")
    seen = []

    g = _as_called(func, primals)

    def f(*a):
        out = g(*a)
        if has_aux and not (isinstance(out, tuple) and len(out) == 2):
            raise RuntimeError(f"{_JVP}: output of function f should be a tuple: (output, aux) if has_aux "
                               f"is True")
        seen[:] = [_skeleton(out[0] if has_aux else out)]
        return _array_fn(lambda: out, has_aux)()
    tangents = jax.tree.unflatten(p_spec, t_leaves)  # (as primals' containers)
    res = jax.jvp(f, primals, tangents, has_aux=has_aux)
    if strict and any(_independent(lambda *a: f(*a)[0] if has_aux else f(*a), primals, tangents)):
        raise RuntimeError("jvp(f, primals, tangents, strict=True): The output of f is independent of the "
                           "inputs. This is not allowed with strict=True.")
    out, tan = (_in_order(from_jax(_detach(r)), seen[0]) for r in res[:2])
    return (out, tan, res[2]) if has_aux else (out, tan)


def linearize(func: Callable, *primals):
    """``torch.func.linearize``: ``(func(*primals), jvp_fn)``, ``jvp_fn(*tangents)`` the tangent
    ``J @ tangents`` of the linearization at ``primals`` (``jax.linearize``: evaluated once,
    applied as often as wanted).

    >>> import funcgrad
    >>> out, jvp_fn = funcgrad.func.linearize(lambda t: t.sin(), funcgrad.zeros(2))
    >>> jvp_fn(funcgrad.ones(2))
    tensor([1., 1.])
    """
    seen, g = [], _as_called(func, primals)

    def f(*a):
        out = g(*a)
        seen[:] = [_skeleton(out)]
        return to_jax(out)
    out, lin = jax.linearize(f, *primals)

    def jvp_fn(*tangents):
        return _in_order(from_jax(_detach(lin(*tangents))), seen[0])
    return _in_order(from_jax(_detach(out)), seen[0]), jvp_fn


def vmap(func: Callable, in_dims=0, out_dims=0, randomness: str = "error", *,
         chunk_size=None) -> Callable:
    """``torch.func.vmap``: map ``func`` over a batch dimension (``jax.vmap``; Tensors welcome),
    dicts in its result in ``func``'s key order (JAX's pytrees sort them).

    >>> import funcgrad
    >>> funcgrad.func.vmap(lambda r: r.sum())(funcgrad.ones(3, 2))
    tensor([2., 2., 2.])
    """
    seen = []

    def run(*a, **k):
        def f(*a, **k):
            out = g(*a, **k)
            seen[:] = [_skeleton(out)]
            return out
        g = _as_called(func, a)
        return _in_order(jax.vmap(f, in_axes=in_dims, out_axes=out_dims)(*a, **k), seen[0])
    return run


def stack_module_state(models) -> tuple[dict, dict]:
    """``torch.func.stack_module_state``: the parameters and buffers of ``models`` (modules of one
    class, in one training mode) stacked along a new first dimension, as two dicts by name: an
    ensemble's state for ``vmap(functional_call ...)``. Stacked parameters are new leaves that
    require grad where the models' do.

    >>> import funcgrad
    >>> params, buffers = funcgrad.func.stack_module_state([funcgrad.nn.Linear(3, 2) for _ in range(4)])
    >>> params["weight"].shape, params["weight"].requires_grad
    (funcgrad.Size([4, 2, 3]), True)
    """
    if len(models) == 0:
        raise RuntimeError("stack_module_state: Expected at least one model, got 0.")
    if not (all(m.training for m in models) or all(not m.training for m in models)):
        raise RuntimeError("stack_module_state: Expected all models to have the same training/eval mode.")
    if not all(type(m) is type(models[0]) for m in models):
        raise RuntimeError("stack_module_state: Expected all models to be of the same class.")
    def stacked(named):
        all_ = [dict(n) for n in named]
        out = {}
        for k in all_[0]:
            ts = tuple(d[k] for d in all_)
            grads = {t.requires_grad for t in ts}
            if len(grads) > 1:
                raise RuntimeError(f"Expected {k} from each model to have the same .requires_grad")
            r = _stack(ts)
            out[k] = r.detach().requires_grad_() if grads == {True} else r
        return out
    return stacked(m.named_parameters() for m in models), stacked(m.named_buffers() for m in models)
