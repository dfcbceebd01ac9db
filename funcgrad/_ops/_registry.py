"""The op table's registry: every differentiable op is declared once with ``defop``; public
functions and Tensor methods are registered with ``export`` and installed on ``Tensor``."""

from __future__ import annotations

import functools
import inspect
import numbers
import sys
import types
import warnings

import jax.numpy as jnp
import numpy as np

from .. import _dtype, _grad_mode
from .._dispatch import Op, apply
from .._errors import RESIZED_OUTPUT, warn_at_user
from .._tensor import Tensor, _dtype_cname, _scalar_type_name
from . import _parser

OPS: dict[str, Op] = {}        # op table: key → Op (the spec-table test covers every key)
FUNCTIONS: dict[str, object] = {}  # funcgrad.<name>
METHODS: dict[str, object] = {}    # Tensor.<name>


def defop(key: str, fn, grad_name: str | None = None, *, accepts: str | None = None,
          kernel: str | None = None, errors: dict | None = None, **kw) -> Op:
    """Declare an op: a pure ``jax.numpy`` fn and its PyTorch node name (see ``Op``).

    ``accepts``: the dtype kinds PyTorch's kernel takes ('b' bool, 'i' integer, 'f' float,
    'c' complex; None: all); any other dtype raises PyTorch's ``NotImplementedError: "<kernel>"
    not implemented for '<Type>'``. ``errors``: kind -> ``(exception type, message)`` where
    PyTorch raises something else for that kind, or a check ``f(vals)`` run for it.
    """
    if key in OPS:
        raise ValueError(f"op {key!r} declared twice")
    if accepts is not None or errors:
        kw["reject"] = _reject_table(accepts, kernel, errors or {})
    op = OPS[key] = Op(key, fn, grad_name, **kw)
    return op


def kernel_error(kernel: str, d) -> NotImplementedError:
    """PyTorch's error for a dtype its kernel ``kernel`` has no instance for."""
    return NotImplementedError(f'"{kernel}" not implemented for \'{_scalar_type_name(d)}\'')


class NotImplementedGrad:
    """What an op's ``vjp`` slot gives for an input whose derivative ``derivatives.yaml`` states as
    ``not_implemented(what)``: the backward kernel raises PyTorch's NotImplementedError when it is
    traced for that input, which the engine asks for only where its gradient is needed (PyTorch's
    ``task_should_compute_output``)."""

    def __init__(self, what: str):
        self.what = what

    def astype(self, dtype):
        raise NotImplementedError(f"the derivative for '{self.what}' is not implemented.")


def _reject_table(accepts, kernel, errors):
    table = {}
    for d in _dtype.ALL:
        if d._kind in errors:
            table[d.np] = errors[d._kind]
        elif accepts is not None and d._kind not in accepts:
            table[d.np] = (NotImplementedError, kernel_error(kernel, d).args[0])
    return table


MISSING = _MISSING = object()  # (an argument not given)


def _where(f, params):
    """``(position, name)`` of ``f``'s parameters ``params``."""
    names = list(inspect.signature(f).parameters)
    return [(names.index(p), p) for p in params]


def _at(i, args, method):
    """PyTorch's " (position n)" for a parameter given positionally (a method counts its
    positions after ``self``), "" for one given by keyword."""
    return f" (position {i + 1 - method})" if i < len(args) else ""


def _given(where, args, kwargs, method):
    """``(position, name, value, _at(...))`` of each parameter of ``where`` the call gave."""
    for i, p in where:
        if i < len(args) or p in kwargs:
            yield i, p, args[i] if i < len(args) else kwargs[p], _at(i, args, method)


def _require_tensors(f, name: str, params: tuple, method: bool):
    """``f`` refusing a non-Tensor for the named parameters, with PyTorch's argument-parser
    TypeError (a method counts its positions after ``self``)."""
    where = _where(f, params)

    @functools.wraps(f)
    def g(*args, **kwargs):
        for i, p in where:  # (_given's loop inlined: this check runs on every call)
            v = args[i] if i < len(args) else kwargs.get(p, _MISSING)
            if not isinstance(v, Tensor) and v is not _MISSING:
                _refuse_method(method, name, args, kwargs)
                raise TypeError(f"{name}(): argument '{p}'{_at(i, args, method)} must be Tensor, not "
                                f"{_parser.type_name(v)}")
        try:
            return f(*args, **kwargs)
        except TypeError:
            _refuse_method(method, name, args, kwargs)
            raise
    return g


def _refuse_method(method: bool, name: str, args: tuple, kwargs: dict) -> None:
    """For a failed call of method ``name`` (``args`` with self): PyTorch's error where its binding
    refuses the call (``_parser.method_error``), raised in place of the failure."""
    err = _parser.method_error(name, args[1:], kwargs) if method else None
    if err is not None:
        raise err from None


def operand(v, numbers_too: bool = True):
    """``v`` as PyTorch's argument parser takes a ``Tensor other`` with a Scalar overload: a
    Tensor or a Python number as it is, a NumPy number as its Python number; anything else
    ``NotImplemented`` (an operator returns it; a function raises the parser's TypeError).
    ``numbers_too=False``: a Tensor only (``@``)."""
    if isinstance(v, Tensor):
        return v
    if isinstance(v, np.generic):
        if v.dtype.kind not in "biufc":
            return NotImplemented
        # PyTorch's parser takes a NumPy integer as an int, a complex128 (a Python complex) as a
        # complex, and reads any other NumPy number as a double: np.bool_ is 1.0, complex64 its
        # real part (with NumPy's ComplexWarning, at the caller's line)
        if v.dtype.kind in "iu" or isinstance(v, (float, complex)):
            v = v.item()
        else:
            if v.dtype.kind == "c":
                warn_at_user("Casting complex values to real discards the imaginary part",
                             np.exceptions.ComplexWarning)
            v = float(v.real)
    if numbers_too and isinstance(v, numbers.Number):
        return v
    return NotImplemented


def _take_operands(f, name: str, params: tuple, method: bool):
    """``f`` whose named parameters take an ``operand``; anything else is PyTorch's argument
    parser's TypeError (``add(): argument 'other' (position 2) must be Tensor, not str``).
    Checked only once ``f`` has raised a TypeError (nothing changed by then), so a call that
    works pays no check."""
    where = _where(f, params)

    @functools.wraps(f)
    def g(*args, **kwargs):
        try:
            return f(*args, **kwargs)
        except TypeError:
            _refuse_method(method, name, args, kwargs)
            args, kwargs, fixed = list(args), dict(kwargs), False
            for i, p, v, at in _given(where, args, kwargs, method):
                w = operand(v)
                if w is NotImplemented:
                    raise TypeError(f"{name}(): argument '{p}'{at} must be Tensor, not "
                                    f"{_parser.type_name(v)}") from None
                if w is not v:  # a NumPy number: the call again with its Python number
                    fixed = True
                    if i < len(args):
                        args[i] = w
                    else:
                        kwargs[p] = w
            if not fixed:
                raise
        return f(*args, **kwargs)
    return g


# PyTorch's argument parser takes NumPy's ``keepdims=`` for every native op with ``keepdim``;
# ``norm`` is Python-level in PyTorch (torch.functional.norm, Tensor.norm) and refuses it: Python's
# own TypeError, naming the function ``norm()`` and the method ``Tensor.norm()``.
_PYTHON_LEVEL = frozenset({"norm"})


def _renamed(f, qualname: str):
    """``f``'s code under another ``__qualname__`` (the name Python's own TypeErrors print), as
    a function of its own: no wrapper frame."""
    g = types.FunctionType(f.__code__, f.__globals__, f.__name__, f.__defaults__, f.__closure__)
    functools.update_wrapper(g, f)
    g.__kwdefaults__, g.__qualname__ = f.__kwdefaults__, qualname
    return g


class _Default:
    """A parameter's default that the frontend tells apart from the same value given; it shows
    as the value (``keepdim=False`` in the signature)."""

    __slots__ = ("value",)

    def __init__(self, value):
        self.value = value

    def __repr__(self):
        return repr(self.value)


KEEPDIM = _Default(False)  # keepdim left out
DIM = _Default(None)  # dim left out (a reduction over all: PyTorch's no-dim overload, SumBackward0)
class _Required:
    """A required argument left out: PyTorch requires it, but under NumPy's names too (torch.sum(a=x)),
    which a frontend taking them itself (``**numpy``) takes by keyword, so its parameter has this
    default (its signature shows it required). Using it is a TypeError, which the frontend's fallback
    words as PyTorch's parser does (``_parser.rerun``)."""

    __slots__ = ()

    def __getattr__(self, name):
        if name.startswith("__"):  # (introspection: hasattr(v, "__wrapped__") stays False)
            raise AttributeError(name)
        raise TypeError("a required argument was left out")


REQUIRED = _Required()
_HIDDEN_OUT = "out "  # (a method's out parameter renamed away: no call spells it)


def method_copy(f, name: str | None = None):
    """``f``'s Tensor method (or with ``name``: its function ``name``) as a function of its own with
    no wrapper frame, its code named ``Tensor.<name>`` (``<name>``): a frontend that reads its call
    back (``_parser.refuse``) knows from it which op it is and that it was called as the method. A
    method's ``out`` parameter is renamed away (PyTorch's methods take no ``out=``: it falls into the
    frontend's ``**``, whose slow path refuses it as PyTorch does)."""
    code, kwdefaults, qualname = f.__code__, f.__kwdefaults__, f.__qualname__
    if name is None:
        name = code.co_name
        code = code.replace(co_qualname=f"Tensor.{name}",
                            co_varnames=tuple(_HIDDEN_OUT if v == "out" else v for v in code.co_varnames))
        if kwdefaults and "out" in kwdefaults:
            kwdefaults = {_HIDDEN_OUT if k == "out" else k: v for k, v in kwdefaults.items()}
    else:
        code, qualname = code.replace(co_name=name, co_qualname=name), name
    m = types.FunctionType(code, f.__globals__, name, f.__defaults__, f.__closure__)
    m.__dict__.update(f.__dict__)  # (its __signature__: export's, PyTorch's names)
    m.__kwdefaults__, m.__qualname__, m.__doc__ = kwdefaults, qualname, f.__doc__
    m.__module__, m.__annotations__ = f.__module__, f.__annotations__
    return m


rerun, refuse = _parser.rerun, _parser.refuse  # (the frameless frontends' slow path, fallback)


def keepdim(f, dim, keepdim):
    """The ``keepdim`` of a frontend ``f`` (``sum``, ``mean``: ``input=REQUIRED, dim=DIM,
    keepdim=KEEPDIM, *, dtype=None, **numpy``, no wrapper on their hot calls; its method a
    ``method_copy``) called with ``keepdim`` and nothing in ``**numpy``: with a dim, the keepdim given
    (its type is checked off the fast path); with none, what PyTorch's parser makes of the call (its
    TypeError, see ``_parser.refuse``). As cheap as the plain check for ``x.sum(1, True)``."""
    if dim is not DIM:
        return keepdim
    return _parser.refuse(f, 2).get("keepdim", False)


def cast_dtype(r, o) -> str | None:
    """TensorIterator's check of an out= result ``r`` for ``o``: no lower category (float -> int,
    anything -> bool)."""
    a, b = r.dtype, o.dtype
    if "bifc".index(a._kind) > "bifc".index(b._kind):
        return (f"result type {_scalar_type_name(a)} can't be cast to the desired output type "
                f"{_scalar_type_name(b)}")
    return None


def same_dtype(r, o) -> str | None:
    """at::native::resize_output's ``check_out``: the result's dtype exactly."""
    if r.dtype is not o.dtype:
        return (f"Expected out tensor to have dtype {_dtype_cname(r.dtype)}, but got {_dtype_cname(o.dtype)} "
                f"instead")
    return None


def any_dtype(r, o) -> None:
    """The op computes in out's dtype, or casts to it (prod, cumsum, comparisons)."""
    return None


def out_grad_error(name: str) -> RuntimeError:
    return RuntimeError(f"{name}(): functions with out=... arguments don't support automatic "
                        f"differentiation, but one of the arguments requires grad.")


def check_out_grad(out, name: str, *inputs) -> None:
    """PyTorch's refusal of ``out=`` when an input requires grad (grad mode on), before the op runs
    (its own checks come after, or no result of it requires grad: an op computing in out's dtype)."""
    if out is not None and _grad_mode._state.enabled and any(isinstance(t, Tensor) and t._requires_grad
                                                             for t in inputs):
        raise out_grad_error(name)


def write_out(r, out, name: str | None = None, check=cast_dtype, refuse_grad: bool = True):
    """``r`` (a Tensor, or a tuple of them for ``out`` a tuple) written into ``out`` as PyTorch's
    ``out=`` variants write: refused (nothing written) when ``r`` requires grad (grad mode on, an
    input requiring grad: "<name>(): functions with out=... arguments don't support automatic
    differentiation", ``name`` PyTorch's out op, by default the caller's code name; not for
    ``refuse_grad=False``: a composite of PyTorch's whose out= copies the result, CopyBackwards) or
    when ``check(r, out)`` gives
    an error message (by default PyTorch's cast check; for a tuple, a check per output or one for
    all); an ``out`` of another shape is resized
    first (with PyTorch's deprecation UserWarning unless it was empty). Returns ``out``; ``r`` as it
    is when ``out`` is None."""
    if out is None:
        return r
    pairs = tuple(zip(out, r, strict=True)) if isinstance(r, tuple) else ((out, r),)
    if refuse_grad and _grad_mode._state.enabled and any(v._requires_grad or o._requires_grad
                                                         for o, v in pairs):
        raise out_grad_error(name or sys._getframe(1).f_code.co_name)
    for (o, v), c in zip(pairs, check if isinstance(check, tuple) else (check,) * len(pairs), strict=True):
        msg = c(v, o)
        if msg is not None:  # (a message: PyTorch's RuntimeError; else its own exception)
            raise msg if isinstance(msg, Exception) else RuntimeError(msg)
    for o, v in pairs:
        if o.shape != v.shape and o._viewinfo is None:
            if o.numel():
                warnings.warn(RESIZED_OUTPUT.format(list(o.shape), list(v.shape)), UserWarning, stacklevel=3)
            o._set_value(jnp.zeros(v.shape, o._value.dtype))
        o.copy_(v)
    return type(r)(*out) if isinstance(r, tuple) else out


def numpy_call(f, input, dim, keepdim, dtype, numpy):
    """A call of such an ``f`` (see ``keepdim``) that gave a keyword it takes in ``**numpy``:
    NumPy's names (``axis=`` for dim, ``keepdims=``, ``a=``/``x=``/``x1=`` for input), ``out=`` or
    any other, made again with PyTorch's names. ``x.sum(axis=1)`` and ``x.sum(1, keepdims=True)`` at
    once; anything else as PyTorch's parser binds the call (its TypeError when it refuses it, see
    ``_parser.refuse``); ``out=`` takes the result."""
    axis, keepdims = numpy.get("axis", _MISSING), numpy.get("keepdims", _MISSING)
    d = dim if axis is _MISSING else axis
    k = keepdim if keepdims is _MISSING else keepdims
    if len(numpy) == (axis is not _MISSING) + (keepdims is not _MISSING) and type(d) is int \
            and (axis is _MISSING or dim is DIM) and (keepdims is _MISSING or keepdim is KEEPDIM) \
            and (k is KEEPDIM or type(k) is bool) and isinstance(input, Tensor):
        return f(input, d, k, dtype=dtype)
    bound = _parser.refuse(f, 2)
    out, input = bound.pop("out", None), bound.pop("input", input)
    if out is None:
        return f(input, **bound)
    check_out_grad(out, f.__name__, input)  # (before sum's dtype: no result needs grad)
    if f.__name__ == "sum" and bound.get("dtype") is None:  # PyTorch's sum computes in out's dtype
        bound["dtype"] = out.dtype
    return write_out(f(input, **bound), out, f.__name__)


def noargs_method(call=None, *, op: Op | None = None):
    """For ``export``'s ``noargs``: ``name -> Tensor.<name>`` computing ``call(self)``, or
    ``apply(op, self)`` (the kernel the function calls, so no wrapper frame), or with neither returning
    self, for an op PyTorch binds as a method taking no argument (``_parser.NOARGS``): any argument is
    refused with its TypeError (CPython's wording for such a method, ``Tensor.abs() takes no arguments
    (1 given)``)."""
    def make(name: str):
        if call is op is None:
            def m(self, *args):
                if args:
                    raise _parser.method_error(name, args, {})
                return self
        elif op is not None:
            def m(self, *args):
                if args:
                    raise _parser.method_error(name, args, {})
                return apply(op, self)
        else:
            def m(self, *args):
                if args:
                    raise _parser.method_error(name, args, {})
                return call(self)
        m.__name__, m.__qualname__ = name, f"Tensor.{name}"
        return m
    return make


def export(*names: str, method: bool = True, function: bool = True, tensors: tuple = (),
           operands: tuple = (), noargs=None):
    """Register a frontend under ``names`` as ``funcgrad.<name>`` and/or ``Tensor.<name>``.

    ``tensors``: parameters that must be Tensors (PyTorch's ``Tensor other`` in the schema: a
    Python number there is its argument parser's TypeError, not a scalar overload).
    ``operands``: parameters taking a Tensor or a number (``_take_operands``), under the first
    name only (PyTorch's aliases raise its several-overloads error instead: their overloads are
    declared in ``_parser.SCHEMAS``). Every name gets a copy whose code names it, so Python's own
    errors (``absolute() takes 1 positional argument...``) name the alias called, not ``abs``.
    ``noargs``: a ``noargs_method``, the method of each name PyTorch's Tensor takes no argument for.
    """
    def deco(f):
        sig = inspect.signature(f)
        params = sig.parameters
        # (help() and inspect.signature show no sentinel, and no **numpy)
        shown = [p.replace(default=p.empty) if p.default is REQUIRED else p for p in params.values()
                 if p.default is not _MISSING and p.kind not in (p.VAR_KEYWORD, p.VAR_POSITIONAL)]
        if len(shown) < len(params) or any(p.default is REQUIRED for p in params.values()):
            f.__signature__ = sig.replace(parameters=shown)
        # PyTorch's parser checks an op's arguments (keepdim a bool, NumPy's names): the ops of
        # _parser.SCHEMAS get its checks, but for a frontend taking NumPy's names itself (sum, mean)
        own = any(p.kind == p.VAR_KEYWORD for p in params.values())
        if "keepdim" in params and not own and names[0] not in _parser.SCHEMAS \
                and names[0] not in _PYTHON_LEVEL:
            raise ValueError(f"{names[0]} takes keepdim: declare its PyTorch overloads in _parser.SCHEMAS")
        first = None
        for n in names:
            parsed = n in _parser.SCHEMAS and not own
            fn = f if own or n in _PYTHON_LEVEL or f.__code__.co_name == n else _renamed(f, n)
            ff = _parser.checked(fn, n, False) if parsed else fn
            mf = _parser.checked(fn, n, True) if parsed else fn
            if own and n in _parser.SCHEMAS:  # frameless (see _parser.rerun): copies naming the op
                ff = f if f.__code__.co_name == n else method_copy(f, n)
                mf = method_copy(ff)
            if n in _PYTHON_LEVEL:
                f.__qualname__, mf = n, _renamed(f, f"Tensor.{n}")
            ff = _require_tensors(ff, n, tensors, False) if tensors else ff
            mf = _require_tensors(mf, n, tensors, True) if tensors else mf
            if operands and n == names[0]:
                ff, mf = _take_operands(ff, n, operands, False), _take_operands(mf, n, operands, True)
            if noargs is not None and n in _parser.NOARGS:
                mf = noargs(n)
                mf.__doc__, mf.__module__ = f.__doc__, f.__module__
            first = ff if first is None else first
            if function:
                FUNCTIONS[n] = ff
            if method:
                METHODS[n] = mf
        return first  # funcgrad.<name> is re-exported from the module's global
    return deco


def inplace_method(name: str, fn, *, tensors: tuple = (), c_type_cast: bool = False,
                   operands: tuple = ()) -> None:
    """``Tensor.<name>_``: the out-of-place ``fn`` committed into self (version bump, rebase).

    ``tensors``: parameters that must be Tensors (as ``export``'s, in the in-place method's name
    and positions). ``c_type_cast``: PyTorch's Scalar overload of this op is a structured kernel,
    whose cast error names self's C++ type; it applies when no argument is a Tensor.
    """
    def m(self, *args, **kwargs):
        c = c_type_cast and not any(isinstance(a, Tensor) for a in (*args, *kwargs.values()))
        try:
            return self._inplace(fn, *args, _c_type_cast=c, **kwargs)
        except Exception:  # (nothing written yet) PyTorch's binding refuses the call first
            err = _parser.method_error(name, args, kwargs)
            if err is None:
                raise
        raise err from None
    m.__name__ = name
    m.__doc__ = f"In-place version of :func:`{fn.__name__}`."
    if tensors:  # checked against fn's parameters (self is fn's first)
        m.__wrapped__ = fn
        m = _require_tensors(m, name, tensors, True)
    if operands:  # (likewise: see _take_operands)
        m.__wrapped__ = fn
        m = _take_operands(m, name, operands, True)
    elif name in _parser.SCHEMAS:  # (an alias's: PyTorch's parser error for a call it refuses)
        m = _reparsed(m, name)
    METHODS[name] = m


def _reparsed(m, name: str):
    """In-place method ``m`` raising PyTorch's parser error, naming ``name``, for a call that raised
    a TypeError its parser refuses too (nothing is written by then)."""
    @functools.wraps(m)
    def g(self, *args, **kwargs):
        try:
            return m(self, *args, **kwargs)
        except TypeError:
            _parser.parse(name, True, args, kwargs)
            raise
    return g


def install() -> None:
    for name, f in METHODS.items():
        if not hasattr(Tensor, name) or name.startswith("__"):
            setattr(Tensor, name, f)


__all__ = ["OPS", "FUNCTIONS", "METHODS", "defop", "export", "inplace_method", "install", "apply",
           "Tensor", "kernel_error", "operand", "keepdim", "numpy_call", "method_copy", "KEEPDIM", "DIM",
           "MISSING", "REQUIRED", "rerun", "refuse", "write_out", "cast_dtype", "same_dtype", "any_dtype",
           "out_grad_error", "noargs_method",
           "check_out_grad"]
