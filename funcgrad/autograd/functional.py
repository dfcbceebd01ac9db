"""``funcgrad.autograd.functional``: ``jacobian``, ``hessian``, ``vjp``, ``jvp``, ``hvp``, ``vhp``
with PyTorch's signatures, checks and return structures (a Tensor where PyTorch gives a Tensor,
tuples, or tuples of tuples, following whether ``inputs`` / the outputs were tuples).

Complex numbers follow PyTorch's convention (``_dispatch._conj``): a gradient is the conjugate of
JAX's and ``vᵀ J`` is ``conj(pullback(conj(v)))``; forward mode (``jvp``) is the same in both. So the
pure path conjugates around ``jax.vjp``, builds complex Jacobians from the standard basis as
PyTorch does (``_basis_jac``: JAX's ``jacrev``/``jacfwd`` refuse complex outputs/inputs), and leaves
to the engine what PyTorch refuses (an implicit gradient of a complex output).

Two ways to compute them:
  * **pure** (``create_graph=False``, ``strict=False``, the common case): ``func`` is run on JAX
    tracers wrapped as funcgrad Tensors under ``no_grad`` — every funcgrad op is a jax function,
    so ``jax.vjp`` / ``jax.jvp`` / ``jax.jacrev`` / ``jax.jacfwd`` / ``jax.hessian`` differentiate
    it directly, vectorised, with no funcgrad graph recorded. (Not cached across calls: ``func``
    usually closes over tensors whose values change, e.g. a model's parameters.)
  * **engine** (``create_graph=True``, ``strict=True``, or a ``func`` that JAX cannot trace,
    e.g. one calling ``.item()``): PyTorch's algorithm on funcgrad's autograd engine, so the
    results carry a graph when asked.
"""

from __future__ import annotations

import types
import weakref
from typing import Callable

import jax
import jax.numpy as jnp

from .._dispatch import _conj
from .._factories import zeros_like
from .._ops.shape import stack
from .._tensor import Tensor
from . import grad_mode

__all__ = ["vjp", "jvp", "jacobian", "hessian", "hvp", "vhp"]
_grad = None  # funcgrad.autograd.grad: the package __init__ defines it after importing this module


def register_grad(grad) -> None:
    """Called once by funcgrad/autograd/__init__.py at import, with ``funcgrad.autograd.grad``."""
    global _grad
    _grad = grad


def _T():
    return Tensor


# ---- PyTorch's argument handling --------------------------------------------------------------
def _as_tuple(inp, arg_name, fn_name):
    is_tuple = True
    if not isinstance(inp, tuple):
        inp = (inp,)
        is_tuple = False
    T = _T()
    for i, el in enumerate(inp):
        if not isinstance(el, T):
            if is_tuple:
                raise TypeError(f"The {arg_name} given to {fn_name} must be either a Tensor or a tuple "
                                f"of Tensors but the value at index {i} has type {type(el)}.")
            raise TypeError(f"The {arg_name} given to {fn_name} must be either a Tensor or a tuple of "
                            f"Tensors but the given {arg_name} has type {type(el)}.")
    return is_tuple, inp


def _tuple_postprocess(res, to_unpack):
    if isinstance(to_unpack, tuple):
        if not to_unpack[1]:
            res = tuple(el[0] for el in res)
        if not to_unpack[0]:
            res = res[0]
    elif not to_unpack:
        res = res[0]
    return res


def _check_float(inputs):
    for t in inputs:
        if not (t.dtype.is_floating_point or t.dtype.is_complex):
            raise RuntimeError("only Tensors of floating point and complex dtype can require gradients")


def _validate_v(v, other, is_other_tuple):
    if len(other) != len(v):
        if is_other_tuple:
            raise RuntimeError(f"v is a tuple of invalid length: should be {len(other)} but got "
                               f"{len(v)}.")
        raise RuntimeError("The given v should contain a single Tensor.")
    for idx, (a, b) in enumerate(zip(v, other)):
        if a.size() != b.size():
            prepend = f"Entry {idx} in " if is_other_tuple else ""
            raise RuntimeError(f"{prepend}v has invalid size: should be {b.size()} but got "
                               f"{a.size()}.")


def _prep_v(v, ref, is_ref_tuple, fn_name, none_msg, need_single):
    if v is not None:
        _, v = _as_tuple(v, "v", fn_name)
        v = tuple(x.detach() for x in v)
        _validate_v(v, ref, is_ref_tuple)
        return v
    if need_single(ref):
        raise RuntimeError(none_msg)
    return None


_FWD_CREATE_GRAPH = ("torch.autograd.functional.jacobian: `create_graph=True` and "
                     "`strategy=\"forward-mode\"` are not supported together (yet). Please either set "
                     "`create_graph=False` or `strategy=\"reverse-mode\"`.")
_FWD_STRICT = ("torch.autograd.functional.jacobian: `strict=True` and `strategy=\"forward-mode\"` are "
               "not supported together (yet). Please either set `strict=False` or "
               "`strategy=\"reverse-mode\"`.")
_FWD_VECTORIZE = ("Computing Jacobian using forward-AD or forward-over-reverse Hessian isonly implemented "
                  "for `vectorize=True`.")  # (sic: PyTorch's message)
_V_NONE_IN = ("The vector v can only be None if the input to the user-provided function is a single "
              "Tensor with a single element.")
_V_NONE_OUT = ("The vector v can only be None if the user-provided function returns a single Tensor "
               "with a single element.")


def _single(ts) -> bool:
    """True when v may NOT be omitted (not exactly one single-element tensor)."""
    return len(ts) != 1 or ts[0].numel() != 1


# ---- the pure (JAX) path ----------------------------------------------------------------------
class _NotTraceable(Exception):
    """``func`` cannot run on tracers (``.item()``, data-dependent shapes…): use the engine."""


def _pure(func, fn_name, info, scalar=False):
    """``func`` as a function of jax arrays returning a tuple of arrays (or a scalar array)."""
    T = _T()

    def pf(*vals):
        with grad_mode.no_grad():
            out = func(*[T._wrap(v) for v in vals])
        is_tuple, outs = _as_tuple(out, "outputs of the user-provided function", fn_name)
        info["is_tuple"] = is_tuple
        if scalar:
            _check_single(is_tuple, outs, fn_name)
            info["shape"] = tuple(outs[0].shape)
            return outs[0]._value.reshape(())
        return tuple(o._value for o in outs)
    return pf


def _check_single(is_tuple, outs, fn_name):
    if is_tuple or not isinstance(outs[0], _T()):
        raise RuntimeError(f"The function given to {fn_name} should return a single Tensor")
    if outs[0].numel() != 1:
        raise RuntimeError(f"The Tensor returned by the function given to {fn_name} should contain "
                           f"a single element")


def _run_pure(thunk):
    """Run a JAX transformation of ``func``; a failure to trace means: use the engine instead."""
    try:
        return thunk()
    except (TypeError, RuntimeError) as e:
        if isinstance(e, (jax.errors.ConcretizationTypeError, jax.errors.TracerArrayConversionError,
                          jax.errors.TracerIntegerConversionError,
                          jax.errors.TracerBoolConversionError)):
            raise _NotTraceable() from e
        if "The vector v can only be None" in str(e) or "must be either a Tensor or a tuple of Tensors" in str(e) or \
                "should return a single" in str(e) or "should contain a single element" in str(e) \
                or "v has invalid size" in str(e) or "v is a tuple of invalid length" in str(e) or \
                "The given v should contain" in str(e):
            raise
        raise _NotTraceable() from e
    except Exception as e:
        # an error that has nothing to do with tracing reappears on the engine path
        raise _NotTraceable() from e


def _wrap(x):
    return _T()._wrap(x)


def _vals(ts):
    return tuple(t.detach()._value for t in ts)


# ---- PyTorch's complex convention over JAX's transforms ------------------------------------------
def _is_c(x) -> bool:
    return jnp.issubdtype(x.dtype, jnp.complexfloating)


def _implicit(outs) -> None:
    """An implicit gradient (``v=None``) is PyTorch's only for real outputs: a complex one is left
    to the engine, whose ``autograd.grad`` raises PyTorch's error."""
    if any(_is_c(o) and o.size for o in outs):
        raise RuntimeError("grad can be implicitly created only for real scalar outputs")


def _pt_vjp(pull, cots):
    """``vᵀ J`` in PyTorch's convention: ``conj(pullback(conj(v)))`` (a zero imaginary part +0.0)."""
    return tuple(_conj(g, True) for g in pull(tuple(_conj(c) for c in cots)))


def _pt_grad(f, argnums):
    """PyTorch's gradient of the real scalar ``f``: the conjugate of ``jax.grad``'s (differentiable:
    no +0.0 fix-up, which ``where`` would give a zero derivative)."""
    g = jax.grad(f, argnums=argnums)
    return lambda *a: tuple(_conj(x) for x in g(*a))


def _basis_jac(f, vals, forward: bool):
    """``f``'s Jacobian (``J[i][k]``: ``out_i.shape + in_k.shape``) from the standard basis, as
    PyTorch's vectorized ``jacobian`` builds it: rows ``vᵀ J`` for each output's basis vectors
    (reverse, in PyTorch's convention), or columns ``J e`` for each input's (forward). Unlike
    ``jax.jacrev``/``jax.jacfwd`` it takes complex outputs (reverse) and inputs (forward)."""
    if forward:
        outs = jax.eval_shape(f, *vals)
        cols = [_basis_cols(f, vals, k) for k in range(len(vals))]
        return tuple(tuple(cols[k][i] for k in range(len(vals))) for i in range(len(outs)))
    outs, pull = jax.vjp(f, *vals)
    return tuple(_basis_rows(pull, outs, i, vals) for i in range(len(outs)))


def _basis_cols(f, vals, k):
    """``J e`` for the standard basis of input ``k``: per output, ``out.shape + in_k.shape``."""
    x = vals[k]

    def push(t):
        tans = tuple(t.reshape(x.shape) if j == k else jnp.zeros_like(y) for j, y in enumerate(vals))
        return jax.jvp(f, vals, tans)[1]
    r = jax.vmap(push)(jnp.eye(x.size, dtype=x.dtype))  # per output: (in numel, *out shape)
    return tuple(jnp.moveaxis(o, 0, -1).reshape(o.shape[1:] + x.shape) for o in r)


def _basis_rows(pull, outs, i, vals):
    """``vᵀ J`` (PyTorch's convention) for the standard basis of output ``i``: per input,
    ``out_i.shape + in.shape``."""
    o = outs[i]

    def back(e):
        return _pt_vjp(pull, tuple(e.reshape(o.shape) if j == i else jnp.zeros_like(p)
                                   for j, p in enumerate(outs)))
    r = jax.vmap(back)(jnp.eye(o.size, dtype=o.dtype))
    return tuple(g.reshape(o.shape + x.shape) for g, x in zip(r, vals, strict=True))


# ---- cache of jitted transforms ----------------------------------------------------------------
# A transform of ``func`` is jitted and reused only when that is safe: the traced program must
# capture no arrays (``func`` reads no tensor it closes over, e.g. a model's parameters, whose
# values may change), and Python scalars that ``func`` reads from its globals/closure are part of
# the key. First call: trace once and evaluate eagerly; second call with the same key: jit.
_CACHE: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()
_SCALARS = (int, float, bool, complex, str, type(None))


def _scalar_env(func):
    code = getattr(func, "__code__", None)
    if code is None:
        return None
    g = getattr(func, "__globals__", {})
    env = [(n, g[n]) for n in code.co_names if n in g and isinstance(g[n], _SCALARS)]
    for c in getattr(func, "__closure__", None) or ():
        try:
            v = c.cell_contents
        except ValueError:
            continue
        env.append(("<cell>", v if isinstance(v, _SCALARS) else id(v)))
    env.append(("<defaults>", tuple(d if isinstance(d, _SCALARS) else id(d)
                                    for d in (func.__defaults__ or ()))))
    return tuple(env)


def _pure_call(func, kind, opts, build, args):
    """Run ``build(info)(*args)`` (a JAX transform of ``func``), through the jit cache if safe."""
    env = _scalar_env(func) if isinstance(func, types.FunctionType) else None
    per_func = None
    if env is not None:
        try:
            per_func = _CACHE.setdefault(func, {})
        except TypeError:
            per_func = None
    key = (kind, opts, tuple((a.shape, a.dtype) for a in jax.tree.leaves(args)),
           jax.tree.structure(args), env)
    entry = per_func.get(key) if per_func is not None else None
    try:
        if entry is None:
            info = {}
            tf = build(info)
            if per_func is None:
                return _run_pure(lambda: tf(*args)), info
            closed, shape = _run_pure(lambda: jax.make_jaxpr(tf, return_shape=True)(*args))
            flat = jax.core.eval_jaxpr(closed.jaxpr, closed.consts, *jax.tree.leaves(args))
            per_func[key] = {"jit": None, "info": info, "ok": not closed.consts}
            return jax.tree.unflatten(jax.tree.structure(shape), flat), info
        if not entry["ok"]:
            info = {}
            return _run_pure(lambda: build(info)(*args)), info
        if entry["jit"] is None:
            entry["jit"] = jax.jit(build({}))
        return _run_pure(lambda: entry["jit"](*args)), entry["info"]
    except _NotTraceable:
        if per_func is not None:
            per_func.pop(key, None)
        raise


# ---- vjp / jvp --------------------------------------------------------------------------------
def vjp(func: Callable, inputs, v=None, create_graph: bool = False, strict: bool = False):
    """The vector-Jacobian product ``vᵀ J`` of ``func`` at ``inputs``.

    Returns:
        ``(func_output, vjp)``; ``vjp`` has the structure of ``inputs``.

    >>> import funcgrad
    >>> out, g = funcgrad.autograd.functional.vjp(lambda x: (x ** 2).sum(), funcgrad.tensor([1., 2.]))
    >>> out, g
    (tensor(5.), tensor([2., 4.]))
    """
    is_inputs_tuple, inputs = _as_tuple(inputs, "inputs", "vjp")
    _check_float(inputs)
    if not (create_graph or strict):
        vv = None if v is None else _as_tuple(v, "v", "vjp")[1]
        n = len(inputs)

        def build(info):
            pf = _pure(func, "vjp", info)

            def tf(*a):
                outs, pull = jax.vjp(pf, *a[:n])
                info["out_shapes"] = tuple(o.shape for o in outs)
                if len(a) == n:
                    if len(outs) != 1 or outs[0].size != 1:
                        raise RuntimeError(_V_NONE_OUT)
                    _implicit(outs)
                    cots = (jnp.ones(outs[0].shape, outs[0].dtype),)
                else:
                    cots = a[n:]
                    _validate_v(tuple(_wrap(c) for c in cots), tuple(_wrap(o) for o in outs),
                                info["is_tuple"])
                    cots = tuple(c.astype(o.dtype) for c, o in zip(cots, outs))
                return outs, _pt_vjp(pull, cots)
            return tf
        args = _vals(inputs) + (() if vv is None else _vals(vv))
        try:
            (outs, res), info = _pure_call(func, "vjp", (len(args),), build, args)
        except _NotTraceable:
            pass
        else:
            return (_tuple_postprocess(tuple(_wrap(o) for o in outs), info["is_tuple"]),
                    _tuple_postprocess(tuple(_wrap(g) for g in res), is_inputs_tuple))
    return _engine_vjp(func, inputs, is_inputs_tuple, v, create_graph, strict)


def jvp(func: Callable, inputs, v=None, create_graph: bool = False, strict: bool = False):
    """The Jacobian-vector product ``J v`` of ``func`` at ``inputs``.

    Returns:
        ``(func_output, jvp)``; ``jvp`` has the structure of the outputs.

    >>> import funcgrad
    >>> out, t = funcgrad.autograd.functional.jvp(lambda x: x ** 2, funcgrad.tensor([1., 2.]),
    ...                                            funcgrad.ones(2))
    >>> t
    tensor([2., 4.])
    """
    is_inputs_tuple, inputs = _as_tuple(inputs, "inputs", "jvp")
    _check_float(inputs)
    vv = _prep_v(v, inputs, is_inputs_tuple, "jvp", _V_NONE_IN, _single)
    if not (create_graph or strict):
        def build(info):
            pf = _pure(func, "jvp", info)
            return lambda vals, tans: jax.jvp(pf, vals, tans)
        vals = _vals(inputs)
        tans = tuple(jnp.ones(x.shape, x.dtype) if vv is None else vv[i]._value.astype(x.dtype)
                     for i, x in enumerate(vals))
        try:
            (outs, touts), info = _pure_call(func, "jvp", (), build, (vals, tans))
        except _NotTraceable:
            pass
        else:
            return (_tuple_postprocess(tuple(_wrap(o) for o in outs), info["is_tuple"]),
                    _tuple_postprocess(tuple(_wrap(t) for t in touts), info["is_tuple"]))
    return _engine_jvp(func, inputs, is_inputs_tuple, vv, create_graph, strict)


# ---- jacobian / hessian -----------------------------------------------------------------------
def jacobian(func: Callable, inputs, create_graph: bool = False, strict: bool = False,
             vectorize: bool = False, strategy: str = "reverse-mode"):
    """The Jacobian of ``func`` at ``inputs``: ``J[i][j]`` has shape ``out_i.shape + in_j.shape``.

    A single Tensor is returned when ``inputs`` is a Tensor and ``func`` returns a Tensor.

    >>> import funcgrad
    >>> funcgrad.autograd.functional.jacobian(lambda x: x ** 2, funcgrad.tensor([1., 2.]))
    tensor([[2., 0.],
            [0., 4.]])
    """
    if strategy not in ("forward-mode", "reverse-mode"):
        raise AssertionError('Expected strategy to be either "forward-mode" or "reverse-mode". Hint: '
                             'If your function has more outputs than inputs, "forward-mode" tends to '
                             'be more performant. Otherwise, prefer to use "reverse-mode".')
    if strategy == "forward-mode":
        if create_graph:
            raise NotImplementedError(_FWD_CREATE_GRAPH)
        if strict:
            raise RuntimeError(_FWD_STRICT)
    if vectorize and strict:
        raise RuntimeError("torch.autograd.functional.jacobian: `strict=True` and `vectorized=True` "
                           "are not supported together. Please either set `strict=False` or "
                           "`vectorize=False`.")
    is_inputs_tuple, inputs = _as_tuple(inputs, "inputs", "jacobian")
    if strategy == "forward-mode" and not vectorize:
        raise NotImplementedError(_FWD_VECTORIZE)
    _check_float(inputs)
    if not (create_graph or strict):
        forward = strategy == "forward-mode"
        argnums = tuple(range(len(inputs)))

        def build(info):
            pf = _pure(func, "jacobian", info)

            def tf(*vals):
                outs = jax.eval_shape(pf, *vals)
                if not any(_is_c(x) for x in vals + tuple(outs)):
                    return (jax.jacfwd if forward else jax.jacrev)(pf, argnums=argnums)(*vals)
                if not (vectorize or forward):  # vᵀ J row by row: PyTorch's implicit gradients
                    _implicit(outs)
                return _basis_jac(pf, vals, forward)
            return tf
        try:
            jac, info = _pure_call(func, "jacobian", (strategy, vectorize), build, _vals(inputs))
        except _NotTraceable:
            if forward:
                raise
        else:
            res = tuple(tuple(_wrap(j) for j in row) for row in jac)
            return _tuple_postprocess(res, (info["is_tuple"], is_inputs_tuple))
    return _engine_jacobian(func, inputs, is_inputs_tuple, create_graph, strict)


def hessian(func: Callable, inputs, create_graph: bool = False, strict: bool = False,
            vectorize: bool = False, outer_jacobian_strategy: str = "reverse-mode"):
    """The Hessian of the scalar function ``func`` at ``inputs`` (``H[i][j]``: ``in_i.shape +
    in_j.shape``; a single Tensor for a single input).

    >>> import funcgrad
    >>> funcgrad.autograd.functional.hessian(lambda x: (x ** 3).sum(), funcgrad.tensor([1., 2.]))
    tensor([[ 6.,  0.],
            [ 0., 12.]])
    """
    is_inputs_tuple, inputs = _as_tuple(inputs, "inputs", "hessian")
    if outer_jacobian_strategy not in ("forward-mode", "reverse-mode"):
        raise AssertionError('Expected strategy to be either "forward-mode" or "reverse-mode".')
    forward = outer_jacobian_strategy == "forward-mode"
    if forward:  # the outer jacobian's checks
        if create_graph:
            raise NotImplementedError(_FWD_CREATE_GRAPH)
        if strict:
            raise RuntimeError(_FWD_STRICT)
        if not vectorize:
            raise NotImplementedError(_FWD_VECTORIZE)
    _check_float(inputs)
    # complex inputs: the outer jacobian differentiates complex gradients, which PyTorch does only
    # vectorized (from the basis); row by row the engine raises its implicit-gradient error
    cplx = any(x.dtype.is_complex for x in inputs)
    if not (create_graph or strict or cplx and not vectorize):
        argnums = tuple(range(len(inputs)))
        outer = jax.jacfwd if forward else jax.jacrev

        def build(info):
            pf = _pure(func, "hessian", info, scalar=True)
            if cplx:
                g = _pt_grad(pf, argnums)
                return lambda *vals: _basis_jac(g, vals, forward)
            return outer(jax.jacrev(pf, argnums=argnums), argnums=argnums)
        try:
            h, _ = _pure_call(func, "hessian", (outer_jacobian_strategy, vectorize), build, _vals(inputs))
        except _NotTraceable:
            pass
        else:
            res = tuple(tuple(_wrap(x) for x in row) for row in h)
            return _tuple_postprocess(res, (is_inputs_tuple, is_inputs_tuple))
    return _engine_hessian(func, inputs, is_inputs_tuple, create_graph, strict,
                           outer_jacobian_strategy)


def vhp(func: Callable, inputs, v=None, create_graph: bool = False, strict: bool = False):
    """``vᵀ H`` of the scalar function ``func`` at ``inputs``: ``(func_output, vhp)``.

    >>> import funcgrad
    >>> funcgrad.autograd.functional.vhp(lambda x: (x ** 3).sum(), funcgrad.tensor([1., 2.]),
    ...                                   funcgrad.ones(2))
    (tensor(9.), tensor([ 6., 12.]))
    """
    return _hv(func, inputs, v, create_graph, strict, "vhp")


def hvp(func: Callable, inputs, v=None, create_graph: bool = False, strict: bool = False):
    """``H v`` of the scalar function ``func`` at ``inputs``: ``(func_output, hvp)``.

    >>> import funcgrad
    >>> funcgrad.autograd.functional.hvp(lambda x: (x ** 3).sum(), funcgrad.tensor([1., 2.]),
    ...                                   funcgrad.ones(2))
    (tensor(9.), tensor([ 6., 12.]))
    """
    return _hv(func, inputs, v, create_graph, strict, "hvp")


def _hv(func, inputs, v, create_graph, strict, name):
    is_inputs_tuple, inputs = _as_tuple(inputs, "inputs", name)
    _check_float(inputs)
    vv = _prep_v(v, inputs, is_inputs_tuple, name, _V_NONE_IN, _single)
    if not (create_graph or strict):
        argnums = tuple(range(len(inputs)))
        vals = _vals(inputs)
        tans = tuple(jnp.ones(x.shape, x.dtype) if vv is None else vv[i]._value.astype(x.dtype)
                     for i, x in enumerate(vals))

        def build(info):
            vg = jax.value_and_grad(_pure(func, name, info, scalar=True), argnums=argnums)
            if any(_is_c(x) for x in vals):  # PyTorch's double backward in its convention
                def tf(vals, tans):
                    c = tuple(_conj(t) for t in tans)
                    def vcg(*a):  # (value, gradient) in PyTorch's convention
                        o, g = vg(*a)
                        return o, tuple(_conj(x) for x in g)
                    (o, _), pull = jax.vjp(vcg, *vals)
                    if name == "vhp":  # vᵀ H: the gradient's vjp
                        return o, tuple(_conj(r, True) for r in pull((jnp.zeros_like(o), c)))

                    def back(*u):  # H v: d/du of the gradient's vjp of u, at v (backward twice)
                        return tuple(_conj(r) for r in pull((jnp.zeros_like(o), tuple(_conj(x) for x in u))))
                    _, pull2 = jax.vjp(back, *(jnp.zeros_like(x) for x in vals))
                    return o, tuple(_conj(r, True) for r in pull2(c))
                return tf
            if name == "hvp":  # forward-over-reverse: H v
                def tf(vals, tans):
                    (out, _), (_, res) = jax.jvp(vg, vals, tans)
                    return out, res
            else:  # reverse-over-reverse: vᵀ H, as PyTorch's double backward
                def tf(vals, tans):
                    (o, _), pull = jax.vjp(vg, *vals)
                    return o, pull((jnp.zeros_like(o), tans))
            return tf
        try:
            (out, res), info = _pure_call(func, name, (), build, (vals, tans))
        except _NotTraceable:
            pass
        else:
            o = _wrap(out.reshape(info["shape"]))
            return o, _tuple_postprocess(tuple(_wrap(r) for r in res), is_inputs_tuple)
    return _engine_hv(func, inputs, is_inputs_tuple, vv, create_graph, strict, name)


# ---- the engine path (PyTorch's algorithms on funcgrad's autograd) -----------------------------
def _grad_preprocess(inputs, create_graph, need_graph):
    # always new Tensor objects, so inputs captured by func are told apart from the arguments
    return tuple(inp.view_as(inp) if create_graph and inp.requires_grad
                 else inp.detach().requires_grad_(need_graph) for inp in inputs)


def _grad_postprocess(inputs, create_graph):
    if isinstance(inputs[0], _T()):
        return inputs if create_graph else tuple(i.detach() for i in inputs)
    return tuple(_grad_postprocess(i, create_graph) for i in inputs)


def _check_requires_grad(inputs, input_type, strict):
    if not strict:
        return
    for i, inp in enumerate(inputs):
        if inp is None:
            raise RuntimeError(f"The output of the user-provided function is independent of input {i}."
                               " This is not allowed in strict mode.")
        if not inp.requires_grad:
            if input_type == "hessian":
                raise RuntimeError(
                    f"The hessian of the user-provided function with respect to input {i} is "
                    "independent of the input. This is not allowed in strict mode. You should ensure "
                    "that your function is thrice differentiable and that the hessian depends on the "
                    "inputs.")
            if input_type == "jacobian":
                raise RuntimeError(
                    "While computing the hessian, found that the jacobian of the user-provided "
                    f"function with respect to input {i} is independent of the input. This is not "
                    "allowed in strict mode. You should ensure that your function is twice "
                    "differentiable and that the jacobian depends on the inputs (this would be "
                    "violated by a linear function for example).")
            if input_type == "grad_inputs":
                raise RuntimeError(f"The gradient with respect to input {i} is independent of the "
                                   "inputs of the user-provided function. This is not allowed in "
                                   "strict mode.")
            raise RuntimeError(f"Output {i} of the user-provided function does not require gradients."
                               " The outputs must be computed in a differentiable manner from the "
                               "input when running in strict mode.")


def _autograd_grad(outputs, inputs, grad_outputs=None, create_graph=False, retain_graph=None):
    if grad_outputs is None:
        grad_outputs = (None,) * len(outputs)
    new_o, new_g = [], []
    for out, g in zip(outputs, grad_outputs):
        if out is not None and out.requires_grad:
            new_o.append(out)
            new_g.append(g)
    if not new_o:
        return (None,) * len(inputs)
    return _grad(new_o, inputs, new_g, allow_unused=True, create_graph=create_graph,
                 retain_graph=retain_graph)


_STRICT_MSGS = {
    "back": "The output of the user-provided function is independent of input {i}. This is not "
            "allowed in strict mode.",
    "back_trick": "The gradient with respect to the input is independent of entry {i} in the "
                  "grad_outputs when using the double backward trick to compute forward mode "
                  "gradients. This is not allowed in strict mode.",
    "double_back": "The jacobian of the user-provided function is independent of input {i}. This is "
                   "not allowed in strict mode.",
    "double_back_trick": "The hessian of the user-provided function is independent of entry {i} in "
                         "the grad_jacobian. This is not allowed in strict mode as it prevents from "
                         "using the double backward trick to replace forward mode AD.",
}


def _fill_in_zeros(grads, refs, strict, create_graph, stage):
    res = []
    for i, g in enumerate(grads):
        if g is None:
            if strict:
                raise RuntimeError(_STRICT_MSGS[stage].format(i=i))
            g = zeros_like(refs[i])
        elif strict and create_graph and not g.requires_grad:
            what = "hessian" if "double" in stage else "jacobian"
            raise RuntimeError(f"The {what} of the user-provided function is independent of input "
                               f"{i}. This is not allowed in strict mode when create_graph=True.")
        res.append(g)
    return tuple(res)


def _call(func, inputs, fn_name, strict):
    outputs = func(*inputs)
    is_tuple, outputs = _as_tuple(outputs, "outputs of the user-provided function", fn_name)
    _check_requires_grad(outputs, "outputs", strict)
    return is_tuple, outputs


def _engine_vjp(func, inputs, is_inputs_tuple, v, create_graph, strict):
    with grad_mode.enable_grad():
        inputs = _grad_preprocess(inputs, create_graph, True)
        is_outputs_tuple, outputs = _call(func, inputs, "vjp", strict)
        if v is not None:
            _, v = _as_tuple(v, "v", "vjp")
            v = _grad_preprocess(v, create_graph, False)
            _validate_v(v, outputs, is_outputs_tuple)
        elif len(outputs) != 1 or outputs[0].nelement() != 1:
            raise RuntimeError(_V_NONE_OUT)
    with grad_mode.set_grad_enabled(True if create_graph else grad_mode.is_grad_enabled()):
        res = _autograd_grad(outputs, inputs, v, create_graph=create_graph)
        res = _fill_in_zeros(res, inputs, strict, create_graph, "back")
    return (_tuple_postprocess(_grad_postprocess(outputs, create_graph), is_outputs_tuple),
            _tuple_postprocess(_grad_postprocess(res, create_graph), is_inputs_tuple))


def _engine_jvp(func, inputs, is_inputs_tuple, v, create_graph, strict):
    with grad_mode.enable_grad():
        inputs = _grad_preprocess(inputs, create_graph, True)
        if v is not None:
            v = _grad_preprocess(v, create_graph, False)
        is_outputs_tuple, outputs = _call(func, inputs, "jvp", strict)
        # double-backward trick: the backward is linear in grad_outputs, so J v = d/du (uᵀ J) v
        grad_outputs = tuple(zeros_like(o, requires_grad=True) for o in outputs)
        grad_inputs = _autograd_grad(outputs, inputs, grad_outputs, create_graph=True)
        _check_requires_grad(grad_inputs, "grad_inputs", strict)
    with grad_mode.set_grad_enabled(True if create_graph else grad_mode.is_grad_enabled()):
        res = _autograd_grad(grad_inputs, grad_outputs, v, create_graph=create_graph)
        res = _fill_in_zeros(res, outputs, strict, create_graph, "back_trick")
    return (_tuple_postprocess(_grad_postprocess(outputs, create_graph), is_outputs_tuple),
            _tuple_postprocess(_grad_postprocess(res, create_graph), is_outputs_tuple))


def _engine_jacobian(func, inputs, is_inputs_tuple, create_graph, strict, fn_name="jacobian"):
    with grad_mode.enable_grad():
        inputs = _grad_preprocess(inputs, create_graph, True)
        is_outputs_tuple, outputs = _call(func, inputs, fn_name, strict)
        jacobian = []
        for i, out in enumerate(outputs):
            rows = [[] for _ in inputs]
            flat = out.reshape(-1)
            for j in range(out.nelement()):
                vj = _autograd_grad((flat[j],), inputs, retain_graph=True, create_graph=create_graph)
                for k, (row, g, inp) in enumerate(zip(rows, vj, inputs)):
                    if g is not None:
                        if strict and create_graph and not g.requires_grad:
                            raise RuntimeError(
                                "The jacobian of the user-provided function is independent of "
                                f"input {i}. This is not allowed in strict mode when "
                                "create_graph=True.")
                        row.append(g)
                    else:
                        if strict:
                            raise RuntimeError(f"Output {i} of the user-provided function is "
                                               f"independent of input {k}. This is not allowed in "
                                               "strict mode.")
                        row.append(zeros_like(inp))
            jacobian.append(tuple(
                (stack(row, 0) if row else zeros_like(inp).reshape(0, *inp.shape))
                .view(tuple(out.shape) + tuple(inp.shape)) for row, inp in zip(rows, inputs)))
        jacobian = _grad_postprocess(tuple(jacobian), create_graph)
        return _tuple_postprocess(jacobian, (is_outputs_tuple, is_inputs_tuple))


def _engine_hessian(func, inputs, is_inputs_tuple, create_graph, strict, strategy):
    def ensure_single_output_function(*inp):
        out = func(*inp)
        is_out_tuple, t_out = _as_tuple(out, "outputs of the user-provided function", "hessian")
        _check_requires_grad(t_out, "outputs", strict)
        _check_single(is_out_tuple, t_out, "hessian")
        return out.squeeze()

    def jac_func(*inp):
        jac = _engine_jacobian(ensure_single_output_function, inp, True, True, False)
        _check_requires_grad(jac, "jacobian", strict)
        return jac

    res = _engine_jacobian(jac_func, inputs, True, create_graph, strict)
    return _tuple_postprocess(res, (is_inputs_tuple, is_inputs_tuple))


def _engine_hv(func, inputs, is_inputs_tuple, v, create_graph, strict, name):
    with grad_mode.enable_grad():
        inputs = _grad_preprocess(inputs, create_graph, True)
        if v is not None:
            v = _grad_preprocess(v, create_graph, False)
        is_outputs_tuple, outputs = _call(func, inputs, name, strict)
        _check_single(is_outputs_tuple, outputs, name)
        jac = _autograd_grad(outputs, inputs, create_graph=True)
        _check_requires_grad(jac, "jacobian", strict)
        if name == "hvp":
            grad_jac = tuple(zeros_like(inp, requires_grad=True) for inp in inputs)
            double_back = _autograd_grad(jac, inputs, grad_jac, create_graph=True)
            _check_requires_grad(jac, "hessian", strict)
    with grad_mode.set_grad_enabled(True if create_graph else grad_mode.is_grad_enabled()):
        if name == "hvp":
            res = _autograd_grad(double_back, grad_jac, v, create_graph=create_graph)
            res = _fill_in_zeros(res, inputs, strict, create_graph, "double_back_trick")
        else:
            res = _autograd_grad(jac, inputs, v, create_graph=create_graph)
            res = _fill_in_zeros(res, inputs, strict, create_graph, "double_back")
    return (_tuple_postprocess(_grad_postprocess(outputs, create_graph), is_outputs_tuple),
            _tuple_postprocess(_grad_postprocess(res, create_graph), is_inputs_tuple))
