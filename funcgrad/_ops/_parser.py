"""PyTorch's Python argument parser, for the calls it refuses: which of an op's overloads a call
could mean, and the TypeError PyTorch raises when it means none (torch/csrc/utils/
python_arg_parser.cpp: ``FunctionSignature::parse``, ``PythonArgParser::print_error``, and
invalid_arguments.cpp's ``format_invalid_args``, ported line for line).

``SCHEMAS`` declares the overloads of the ops it covers, as PyTorch's generated bindings declare
them (the function form; a method drops ``input`` and ``out``). ``export`` wraps each such op with
``checked``: a call that passes a non-bool where PyTorch takes only a bool, ``keepdims=``, a
``keepdim`` without a dim, or more positional arguments than the frontend has is parsed here
first; any other call runs the frontend at once, and only a TypeError it raises is looked at (a
call that works pays two comparisons). A keyword the frontend does not take under that name
(NumPy's: ``axis=`` for ``dim``, ``keepdims=``, ``a=``/``x=``/``x1=`` for ``input``, ``x2=`` for
``other``; a method's ``out=``) is bound by the parser, as PyTorch's takes it. A frontend taking
``**`` itself gets no wrapper (its hot calls pay no frame): ``sum`` and ``mean`` call
``_registry.keepdim`` / ``numpy_call`` / ``refuse`` off their fast paths; the hot ops with a dim or
an ``other`` (cumsum, softmax, squeeze, unsqueeze, cat, stack, topk, movedim, the comparisons...)
call ``rerun`` for a call giving their ``*`` or ``**`` anything, and ``refuse`` for a TypeError.

Every Tensor method's own signature is recorded from PyTorch in ``_method_schemas`` (``NOARGS``,
``METHOD_SCHEMAS``): ``method_error`` gives the TypeError PyTorch's binding raises for a method call,
or None where it takes the call. It is asked only once a call has failed, where a frame already
catches the failure: ``_registry.inplace_method`` (before anything is written), ``_require_tensors``,
``_take_operands``, and ``noargs_method``'s methods (generated for the no-argument ops of the table
factories, calling the same kernel as the function). A method that is its function's frontend
(no frame of its own) still gives Python's binding errors, which count ``self``.
"""

from __future__ import annotations

import dis
import functools
import inspect
import numbers
import operator
import os
import sys

import numpy as np

from .. import _device, _dtype, _strides
from .._random import Generator
from .._tensor import Tensor
from ._method_schemas import METHOD_SCHEMAS, NOARGS, NUMBERS_AS_TENSORS

_UNSET = object()  # (a parameter the call did not give)

# ---- the overloads --------------------------------------------------------------------------------
# One string per overload, PyTorch's own order: ``type name[=default]``, ``*`` before the keyword-only
# ones; ``int[1]`` a list of ints that also takes one int, ``int[]`` one that does not, ``?`` takes
# None. A default is written as PyTorch prints it in its "expected one of" listing.
_STD = ("Tensor input, int[1]? dim, bool unbiased=True, bool keepdim=False{out}",
        "Tensor input, int[1]? dim=None, *, Scalar? correction=None, bool keepdim=False{kout}",
        "Tensor input, bool unbiased=True")
_MAXMIN = ("Tensor input, *, Tensor out=None", "Tensor input, Tensor other, *, Tensor out=None",
           "Tensor input, int dim, bool keepdim=False, *, Tensor[] out=None")
_MEDIAN = ("Tensor input", "Tensor input, int dim, bool keepdim=False, *, Tensor[] out=None")
_ANYALL = ("Tensor input, *, Tensor out=None",
           "Tensor input, int[1]? dim=None, bool keepdim=False, *, Tensor out=None",
           "Tensor input, int dim, bool keepdim=False, *, Tensor out=None")
_QUANTILE = tuple(f"Tensor input, {q} q, int? dim=None, bool keepdim=False, *, str interpolation=\"linear\", "
                  f"Tensor out=None" for q in ("Tensor", "float"))
_ONE_DIM = "Tensor input, int[1]? dim=None, bool keepdim=False, *, dtype? dtype=None, Tensor out=None"
SCHEMAS: dict[str, tuple] = {
    "sum": ("Tensor input, *, dtype? dtype=None",
            "Tensor input, int[1]? dim, bool keepdim=False, *, dtype? dtype=None, Tensor out=None"),
    "mean": ("Tensor input, *, dtype? dtype=None, Tensor out=None",
             "Tensor input, int[1]? dim, bool keepdim=False, *, dtype? dtype=None, Tensor out=None"),
    "nansum": (_ONE_DIM,),
    "nanmean": (_ONE_DIM,),
    "prod": ("Tensor input, *, dtype? dtype=None",
             "Tensor input, int dim, bool keepdim=False, *, dtype? dtype=None, Tensor out=None"),
    "max": _MAXMIN, "min": _MAXMIN,
    # (amax's dim=[] takes None too: PyTorch's binding declares it so)
    "amax": ("Tensor input, int[1]? dim=[], bool keepdim=False, *, Tensor out=None",),
    "amin": ("Tensor input, int[1]? dim=[], bool keepdim=False, *, Tensor out=None",),
    "argmax": ("Tensor input, int? dim=None, bool keepdim=False, *, Tensor out=None",),
    "argmin": ("Tensor input, int? dim=None, bool keepdim=False, *, Tensor out=None",),
    "aminmax": ("Tensor input, *, int? dim=None, bool keepdim=False, Tensor[] out=None",),
    "std": tuple(s.format(out=", *, Tensor out=None", kout=", Tensor out=None") for s in _STD),
    "var": tuple(s.format(out=", *, Tensor out=None", kout=", Tensor out=None") for s in _STD),
    "std_mean": tuple(s.format(out="", kout="") for s in _STD),
    "var_mean": tuple(s.format(out="", kout="") for s in _STD),
    "median": _MEDIAN, "nanmedian": _MEDIAN,
    "mode": ("Tensor input, int dim=-1, bool keepdim=False, *, Tensor[] out=None",),
    "kthvalue": ("Tensor input, int k, int dim=-1, bool keepdim=False, *, Tensor[] out=None",),
    "logsumexp": ("Tensor input, int[1] dim, bool keepdim=False, *, Tensor out=None",),
    "any": _ANYALL, "all": _ANYALL,
    "count_nonzero": ("Tensor input, int? dim=None", "Tensor input, int[] dim"),
    "quantile": _QUANTILE, "nanquantile": _QUANTILE,
    "linalg_vector_norm": ("Tensor input, Scalar ord=2, int[1]? dim=None, bool keepdim=False, *, "
                           "dtype? dtype=None, Tensor out=None",),
    "linalg_matrix_norm": tuple(f"Tensor input, {o}, int[] dim={{-2,-1}}, bool keepdim=False, *, "
                                f"dtype? dtype=None, Tensor out=None"
                                for o in ("Scalar ord", 'str ord="fro"')),
    "linalg_norm": tuple(f"Tensor input, {o}, int[1]? dim=None, bool keepdim=False, *, dtype? dtype=None, "
                         f"Tensor out=None" for o in ("Scalar? ord=None", "str ord")),
    "special_logsumexp": ("Tensor input, int[1] dim, bool keepdim=False, *, Tensor out=None",),
    "pairwise_distance": ("Tensor x1, Tensor x2, float p=2, float eps=1e-06, bool keepdim=False",),
    # (stable: only in the first, sort.stable, whose every other argument is a keyword too)
    "sort": ("Tensor input, *, bool? stable, int dim=-1, bool descending=False, Tensor[] out=None",
             "Tensor input, int dim=-1, bool descending=False, *, Tensor[] out=None"),
    "argsort": ("Tensor input, *, bool stable, int dim=-1, bool descending=False, Tensor out=None",
                "Tensor input, int dim=-1, bool descending=False"),
}
# ops with a dim outside the reductions (the parser takes axis= for it, as for every dim)
_CUM = "Tensor input, int dim, *, dtype? dtype=None, Tensor out=None"
SCHEMAS.update({
    "cumsum": (_CUM,), "cumprod": (_CUM,), "logcumsumexp": ("Tensor input, int dim, *, Tensor out=None",),
    "cummax": ("Tensor input, int dim, *, Tensor[] out=None",),
    "cummin": ("Tensor input, int dim, *, Tensor[] out=None",),
    "softmax": ("Tensor input, int dim, dtype? dtype=None, *, Tensor out=None",),
    "log_softmax": ("Tensor input, int dim, dtype? dtype=None, *, Tensor out=None",),
    "squeeze": ("Tensor input", "Tensor input, int dim", "Tensor input, int[] dim"),
    "unsqueeze": ("Tensor input, int dim",),
    "topk": ("Tensor input, int k, int dim=-1, bool largest=True, bool sorted=True, *, Tensor[] out=None",),
    **{n: ("Tensor[] tensors, int dim=0, *, Tensor out=None",)
       for n in ("cat", "concat", "concatenate", "stack")},
    **{n: ("Tensor[] tensors, *, Tensor out=None",) for n in ("hstack", "vstack", "row_stack", "dstack",
                                                               "column_stack")},
    "flip": ("Tensor input, int[] dims",),
    # (no axis= for movedim: its dims are named otherwise; the parser's error for it)
    **{n: ("Tensor input, int source, int destination", "Tensor input, int[] source, int[] destination")
       for n in ("movedim", "moveaxis")},
})
# the arithmetic aliases (their first names' errors are _registry._take_operands'); in-place alike
_BINARY = ("Tensor input, Tensor other, *, Tensor out=None", "Tensor input, Scalar other")
_ROUNDING = ("Tensor input, Tensor other, *, str? rounding_mode, Tensor out=None",
             "Tensor input, Scalar other, *, str? rounding_mode")
for _n, _s in [("divide", (_BINARY[0], _ROUNDING[0], _BINARY[1], _ROUNDING[1])),
               ("true_divide", _BINARY), ("multiply", _BINARY), ("floor_divide", _BINARY),
               ("subtract", ("Tensor input, Tensor other, *, Scalar alpha=1, Tensor out=None",
                             "Tensor input, Scalar other, Scalar alpha=1"))]:
    SCHEMAS[_n] = SCHEMAS[_n + "_"] = _s
# the comparisons (and their aliases) and the bitwise ops: a Tensor or a Number other
for _n in ("eq", "ne", "not_equal", "lt", "less", "le", "less_equal", "gt", "greater", "ge", "greater_equal"):
    SCHEMAS[_n] = ("Tensor input, Tensor other, *, Tensor out=None",
                   "Tensor input, Scalar other, *, Tensor out=None")
for _n in ("bitwise_and", "bitwise_or", "bitwise_xor"):  # (the Number self overload: the function's only)
    SCHEMAS[_n] = ("Tensor input, Tensor other, *, Tensor out=None", "Scalar self, Tensor other",
                   "Tensor input, Scalar other, *, Tensor out=None")

_TYPE_NAMES = {"Tensor": "Tensor", "bool": "bool", "int": "int", "int[]": "tuple of ints", "float": "float",
               "Scalar": "Number", "dtype": "funcgrad.dtype", "str": "str", "Tensor[]": "tuple of Tensors",
               "Tensor?[]": "tuple of Tensors", "float[]": "tuple of floats", "Stream": "Stream",
               "Generator": "funcgrad.Generator", "layout": "funcgrad.layout", "device": "funcgrad.device",
               "memory_format": "funcgrad.memory_format"}
# NumPy's spellings, taken for these parameters by every op (python_arg_parser.cpp)
_NUMPY_NAMES = {"dim": ("axis",), "keepdim": ("keepdims",), "input": ("x", "a", "x1"), "other": ("x2",)}


class _Param:
    __slots__ = ("name", "kind", "size", "optional", "allow_none", "kwonly", "text")

    def __init__(self, spec: str, kwonly: bool):
        t, rest = spec.split(" ", 1)
        self.name, eq, default = rest.partition("=")
        nullable, t = t.endswith("?"), t.rstrip("?")
        self.kind, _, size = t.partition("[")
        self.size = int(size[:-1] or 0) if size else 0
        if size:
            self.kind += "[]"
        self.optional, self.allow_none, self.kwonly = bool(eq), nullable or default == "None", kwonly
        self.text = f"{_TYPE_NAMES[self.kind]} {self.name}" + (f" = {default}" if eq else "")


class _Signature:
    __slots__ = ("name", "params", "min_args", "max_args", "max_pos", "text", "hidden", "numbers")

    def __init__(self, name: str, spec: str, method: bool, numbers: bool = False):
        params, kwonly = [], False
        self.numbers = numbers  # (a Python number taken for a Tensor: should_allow_numbers_as_tensors)
        spec, bar, _ = spec.partition("|")  # ("|hidden": a deprecated overload, never listed)
        self.hidden = bool(bar)
        for s in spec.split(", ") if spec else ():
            if s == "*":
                kwonly = True
            else:
                params.append(_Param(s, kwonly))
        if method:  # self is the input; a method has no out=
            params = [p for p in params[1:] if p.name != "out"]
        self.name, self.params = name, params
        self.min_args = len([p for p in params if not p.optional])
        self.max_args = len(params)
        self.max_pos = len([p for p in params if not p.kwonly])
        parts, star = [], False
        for p in params:
            if p.kwonly and not star:
                parts.append("*")
                star = True
            parts.append(p.text)
        self.text = f"({', '.join(parts)})"


@functools.cache
def signatures(name: str, method: bool) -> tuple:
    """The overloads of ``name`` (``SCHEMAS``) as its function or its Tensor method (which has none
    whose first argument is not a Tensor)."""
    return tuple(_Signature(name, s, method) for s in SCHEMAS[name]
                 if not (method and not s.startswith("Tensor")))


@functools.cache
def method_signatures(name: str) -> tuple:
    """The overloads of ``Tensor.<name>`` as recorded from PyTorch (``_method_schemas``)."""
    return tuple(_Signature(name, s, False, name in NUMBERS_AS_TENSORS) for s in METHOD_SCHEMAS[name])


def method_error(name: str, args: tuple, kwargs: dict) -> TypeError | None:
    """PyTorch's TypeError for ``Tensor.<name>(*args, **kwargs)`` (``args`` without self) when its
    binding refuses the call: CPython's own for a method taking no arguments (``METH_NOARGS``), its
    parser's for a generated one; None when PyTorch takes the call, or has no record of it. For a
    method's call that has failed (raise it ``from None`` in place of the error it gave)."""
    if name in NOARGS:
        if kwargs:
            return TypeError(f"Tensor.{name}() takes no keyword arguments")
        if args:
            return TypeError(f"Tensor.{name}() takes no arguments ({len(args)} given)")
    elif name in METHOD_SCHEMAS:
        try:
            parse(name, True, args, kwargs, method_signatures(name))
        except TypeError as e:
            return e
    return None


# ---- the parser's type checks ---------------------------------------------------------------------
def type_name(v) -> str:
    """CPython's ``tp_name`` of ``v``'s type, as PyTorch's messages print it: a class defined in
    Python by its name, a C type by its dotted path (``numpy.bool``); funcgrad's stand-ins for
    PyTorch's C types as ``funcgrad.<name>``."""
    t = type(v)
    if t.__module__.startswith("funcgrad") and t.__name__ in ("dtype", "device", "Size"):
        return f"funcgrad.{t.__name__}"
    if t.__flags__ & (1 << 9) or t.__module__ == "builtins":  # Py_TPFLAGS_HEAPTYPE: the bare name
        return t.__name__
    return f"{t.__module__}.{t.__qualname__}"


def _is_long(v) -> bool:  # THPUtils_checkLong
    return type(v) is not bool and isinstance(v, (int, np.integer))


def _is_index(v) -> bool:  # THPUtils_checkIndex
    if type(v) is bool:
        return False
    if _is_long(v):
        return True
    try:
        operator.index(v)
    except Exception:
        return False
    return True


def _int_list(v, size: int) -> bool:  # is_int_list: its first element decides
    if isinstance(v, (tuple, list)):
        return not v or _is_index(v[0])
    return size > 0 and _is_long(v)


def _scalar_tensor(v) -> bool:
    return isinstance(v, Tensor) and v.ndim == 0 and not v.requires_grad


def _check(p: _Param, v, number_ok: bool = False) -> bool:  # FunctionParameter::check
    k = p.kind
    if k == "bool":
        return type(v) is bool
    if k == "Tensor":
        return isinstance(v, Tensor) or number_ok and isinstance(v, (numbers.Number, np.number, np.bool_))
    if k == "int":
        return _is_long(v) or _scalar_tensor(v) and v.dtype._kind == "i"
    if k == "int[]":
        return _int_list(v, p.size)
    if k in ("Scalar", "float"):  # (a Scalar: a complex too)
        if k == "Scalar" and isinstance(v, (numbers.Number, np.number, np.bool_)):
            return True
        return isinstance(v, (float, int, np.number, np.bool_)) or _scalar_tensor(v)
    if k == "dtype":
        return isinstance(v, _dtype.dtype) or any(v is t for t in (float, int, bool, complex))
    if k == "str":
        return isinstance(v, str)
    if k == "Tensor[]":
        return isinstance(v, (tuple, list)) and all(isinstance(t, Tensor) for t in v)
    if k == "Tensor?[]":
        return isinstance(v, (tuple, list)) and all(t is None or isinstance(t, Tensor) for t in v)
    if k == "float[]":  # (is_float_or_complex_list: its first element decides)
        return isinstance(v, (tuple, list)) and (not v or isinstance(v[0], (float, int, complex)))
    if k == "Generator":
        return isinstance(v, Generator)
    if k == "layout":
        return isinstance(v, _strides.layout)
    if k == "memory_format":
        return isinstance(v, _strides.memory_format)
    if k == "device":  # (a device, its string or its index)
        return isinstance(v, (_device.device, str)) or _is_long(v)
    if k == "Stream":
        return False
    raise AssertionError(k)


# ---- FunctionSignature::parse -----------------------------------------------------------------------
def _parse(sig: _Signature, args: tuple, kwargs: dict, raise_: bool):
    """The arguments ``sig`` binds (name -> value; None given for a nullable one is None), or None
    when it does not take the call; ``raise_``: PyTorch's TypeError instead of None."""
    nargs, remaining, pos, bound = len(args), len(kwargs), 0, {}
    # count_nonzero(0, 1) is count_nonzero((0, 1)): a lone int-list parameter takes int varargs
    varargs = sig.max_pos == 1 and sig.params[0].kind == "int[]" and _int_list(args, sig.params[0].size)
    if nargs > sig.max_pos and not varargs:
        return _extra_args(sig, nargs) if raise_ else None
    for i, p in enumerate(sig.params):
        is_kw = pos >= nargs
        if not is_kw:
            if p.kwonly:
                return _extra_args(sig, nargs) if raise_ else None
            v = args[pos]
        else:
            v = kwargs.get(p.name, _UNSET)
            for alias in _NUMPY_NAMES.get(p.name, ()):
                if v is not _UNSET:
                    break
                v = kwargs.get(alias, _UNSET)
        if (v is _UNSET and p.optional) or (v is None and p.allow_none):
            if v is None:
                bound[p.name] = None
        elif v is _UNSET:
            if not raise_:
                return None
            missing = [f'"{q.name}"' for q in sig.params[i:] if not q.optional]
            # ("argument%s" with "s" for one: PyTorch's wording)
            raise TypeError(f"{sig.name}() missing {len(missing)} required positional argument"
                            f"{'s' if len(missing) == 1 else ''}: {', '.join(missing)}")
        elif _check(p, v, sig.numbers):
            bound[p.name] = v
        elif varargs and pos == 0 and not is_kw and _int_list(args, p.size):
            bound[p.name], pos = tuple(args), nargs
            continue
        elif raise_:
            if is_kw:
                raise TypeError(f"{sig.name}(): argument '{p.name}' must be {_TYPE_NAMES[p.kind]}, not "
                                f"{type_name(v)}")
            if p.kind == "int[]" and isinstance(v, (tuple, list)):  # (its first element decided)
                raise TypeError(f"{sig.name}(): argument '{p.name}' (position {pos + 1}) must be tuple of "
                                f"ints, but found element of type {type_name(v[0])} at pos 0")
            raise TypeError(f"{sig.name}(): argument '{p.name}' (position {pos + 1}) must be "
                            f"{_TYPE_NAMES[p.kind]}, not {type_name(v)}")
        else:
            return None
        if not is_kw:
            pos += 1
        elif v is not _UNSET:
            remaining -= 1
    if remaining > 0:
        if not raise_:
            return None
        names = [p.name for p in sig.params]
        for k in kwargs:
            if k not in names:
                raise TypeError(f"{sig.name}() got an unexpected keyword argument '{k}'")
            if names.index(k) < nargs:
                raise TypeError(f"{sig.name}() got multiple values for argument '{k}'")
        raise TypeError("invalid keyword arguments")
    return bound


def _extra_args(sig: _Signature, nargs: int):
    if sig.min_args != sig.max_pos:
        raise TypeError(f"{sig.name}() takes from {sig.min_args} to {sig.max_pos} positional arguments "
                        f"but {nargs} were given")
    raise TypeError(f"{sig.name}() takes {sig.max_pos} positional argument{'' if sig.max_pos == 1 else 's'} "
                    f"but {nargs} {'was' if nargs == 1 else 'were'} given")


def parse(name: str, method: bool, args: tuple, kwargs: dict, sigs: tuple | None = None) -> dict:
    """What PyTorch's parser binds for ``name(*args, **kwargs)`` (a method: ``args`` without self),
    or its TypeError (``PythonArgParser::raw_parse`` and ``print_error``); ``sigs``: the overloads
    (by default ``signatures(name, method)``)."""
    sigs = signatures(name, method) if sigs is None else sigs
    for s in sigs:
        bound = _parse(s, args, kwargs, len(sigs) == 1)
        if bound is not None:
            for p in s.params:  # (then PythonArgs' unpacking of an int list checks every element)
                v = bound.get(p.name)
                if p.kind == "int[]" and isinstance(v, (tuple, list)):
                    for i, e in enumerate(v):
                        if not (isinstance(e, (int, np.integer)) or _is_index(e)):
                            raise TypeError(f"{name}(): argument '{p.name}' failed to unpack the object at "
                                            f"pos {i + 1} with error \"type must be tuple of ints,but got "
                                            f"{type_name(e)}\"")
            return bound
    n = len(args) + len(kwargs)
    plausible = [s for s in sigs if s.min_args <= n <= s.max_args and not s.hidden]
    if len(plausible) == 1:
        _parse(plausible[0], args, kwargs, True)
    raise TypeError(_invalid_combination(name, args, kwargs, [s for s in sigs if not s.hidden]))


# ---- format_invalid_args ----------------------------------------------------------------------------
def _option(text: str) -> list:
    """invalid_arguments.cpp's reading of a printed overload: ``(type, name)`` per ", "-separated
    part, the name being the last word (so ``bool keepdim = False`` is named "False")."""
    out = []
    for arg in text[1:-1].split(", "):
        cut = arg.rfind(" ")
        out.append((arg if cut < 0 else arg[:cut], arg[cut + 1:]))
    return out


def _matches(t: str, v) -> bool:
    name = type_name(v)
    return name in {"float": ("float", "int", "long"), "int": ("int", "long")}.get(t, (t,))


def _arg_desc(args, kw) -> str:
    s = "(" + "".join(type_name(a) + ", " for a in args) + "".join(f"{k}={type_name(v)}, " for k, v in kw)
    return (s[:-2] if args else s) + ")"


def _formatted_arg_desc(option, args, kw) -> str:
    red, green = ("\33[31;1m", "\33[32;1m") if os.isatty(1) and os.isatty(2) else ("!", "")
    reset_red, reset_green = ("\33[0m", "\33[0m") if green else ("!", "")
    kwd, s = dict(kw), "("
    for i in range(len(args) + len(kw)):
        is_kw = i >= len(args)
        v = kwd[option[i][1]] if is_kw else args[i]
        ok = i < len(option) and _matches(option[i][0], v)
        s += green if ok else red
        if is_kw:
            s += option[i][1] + "="
        if isinstance(v, (tuple, list)):
            items = ", ".join(type_name(e) for e in v)
            s += f"{type_name(v)} of " + (f"({items}{',' if len(v) == 1 else ''})" if isinstance(v, tuple)
                                          else f"[{items}]")
        else:
            s += type_name(v)
        s += (reset_green if ok else reset_red) + ", "
    return (s[:-2] if args else s) + ")"


def _invalid_combination(name: str, args: tuple, kwargs: dict, sigs) -> str:
    # the kwargs as PyTorch's std::unordered_map walks them: for a few names, last given first
    kw = list(reversed(kwargs.items()))
    if len(sigs) == 1:  # (the one overload, the arguments marked where their count fits it)
        option = _option(sigs[0].text)
        fits = len(args) + len(kw) == len(option)
        got = _formatted_arg_desc(option, args, kw) if fits else _arg_desc(args, kw)
        return (f"{name}() received an invalid combination of arguments - got {got}, but expected "
                f"{sigs[0].text}")
    msg = (f"{name}() received an invalid combination of arguments - got {_arg_desc(args, kw)}, but expected "
           f"one of:\n")
    for s in sigs:
        msg += f" * {s.text}\n"
        option = _option(s.text)
        if len(args) + len(kw) == len(option):
            start = max(len(option) - len(kw), 0)
            unmatched = [k for k, _ in kw if k not in [n for _, n in option[start:]]]
            kws = ", ".join(unmatched)
            if unmatched:
                msg += f"      didn't match because some of the keywords were incorrect: {kws}\n"
            else:
                msg += (f"      didn't match because some of the arguments have invalid types: "
                        f"{_formatted_arg_desc(option, args, kw)}\n")
    return msg


# ---- the wrapper export puts on an op of SCHEMAS ----------------------------------------------------
def checked(f, name: str, method: bool):
    """``f`` (an ``export``ed frontend) refusing what PyTorch's parser refuses, with its message: a
    suspect call (see the module's docstring) is parsed first and runs with what the parser bound;
    a TypeError of any other call is replaced by PyTorch's when its parser refuses the call too."""
    sigs = signatures(name, method)
    fparams = inspect.signature(f).parameters
    names = list(fparams)
    bools = tuple((names.index(n), n) for n in dict.fromkeys(p.name for s in sigs for p in s.params
                                                             if p.kind == "bool") if n in names)
    npos = len([p for p in fparams.values() if p.kind == p.POSITIONAL_OR_KEYWORD])
    # the keywords the parser takes that f does not (NumPy's names: axis=, keepdims=, a=..., PyTorch's where
    # f names a parameter otherwise) and a method's out= (no method takes one): the parser binds them
    taken = {n for s in signatures(name, False) for p in s.params
             for n in (p.name, *_NUMPY_NAMES.get(p.name, ()))}
    routed = frozenset(taken - set(names) | ({"out"} if method else set()))
    # ... and f's own keywords no overload takes (true_divide is div, whose rounding_mode it has not)
    routed |= frozenset(names[1:]) - taken
    # the keywords every overload taking them takes with fewer positional arguments than f (sort's stable=,
    # keyword-only with its dim): how many (self counted), for a call giving more to be parsed
    most = {}
    for s in sigs:
        for p in s.params:
            most[p.name] = max(most.get(p.name, 0), s.max_pos + method)
    most = {k: m for k, m in most.items() if m < npos}
    lo = min([i for i, _ in bools] + [npos])
    dpos, kpos = (names.index(p) if p in names else len(names) for p in ("dim", "keepdim"))
    # the dims, left out (_UNSET) or None, that an overload taking keepdim takes too: f runs them
    dims = [p for s in sigs if "keepdim" in [q.name for q in s.params] for p in s.params if p.name == "dim"]
    free = tuple(v for v, ok in ((_UNSET, any(p.optional for p in dims)),
                                 (None, any(p.allow_none for p in dims))) if ok or "dim" not in names)

    def call(args, kwargs):
        bound = parse(name, method, args[1:] if method else args, kwargs)
        if method:
            return f(args[0], **bound)
        if "input" in bound:  # (f may name it otherwise: linalg's x, A)
            bound[names[0]] = bound.pop("input")
        return f(**bound)

    @functools.wraps(f)
    def g(*args, **kwargs):
        n = len(args)
        if kwargs or n > lo:
            if n > npos or not routed.isdisjoint(kwargs) or most and any(n > most.get(k, n) for k in kwargs):
                return call(args, kwargs)
            for i, p in bools:
                v = args[i] if n > i else kwargs.get(p, _UNSET)
                if type(v) is not bool and v is not _UNSET:
                    return call(args, kwargs)
            d = args[dpos] if n > dpos else kwargs.get("dim", _UNSET)
            if type(d) is bool or (d is None or d is _UNSET) and d not in free \
                    and (n > kpos or "keepdim" in kwargs):
                return call(args, kwargs)  # (a keepdim with no dim that no overload takes)
        try:
            return f(*args, **kwargs)
        except TypeError:
            parse(name, method, args[1:] if method else args, kwargs)  # (raises PyTorch's error if any)
            raise
    return g


# ---- sum and mean: the call read back from the caller's frame ---------------------------------------
def _call_site(frame):
    """``(number of positional arguments, keyword names)`` of the call ``frame`` is making, read
    from its bytecode; None when that is not a plain call (``f(*a, **k)``, or a call from C)."""
    code, ins = frame.f_code, list(dis.get_instructions(frame.f_code))
    at = [i for i, x in enumerate(ins) if x.offset <= frame.f_lasti]
    if not at:
        return None
    i, kw = at[-1], ()
    op = ins[i]
    if op.opname == "CALL":  # 3.11, 3.12: KW_NAMES (then 3.11's PRECALL) before it
        j = i - 1
        while j >= 0 and ins[j].opname in ("PRECALL", "CACHE"):
            j -= 1
        if j >= 0 and ins[j].opname == "KW_NAMES":
            kw = code.co_consts[ins[j].arg]
    elif op.opname == "CALL_KW" and i and isinstance(ins[i - 1].argval, tuple):  # 3.13: the names pushed
        kw = ins[i - 1].argval
    else:
        return None
    return op.arg - len(kw), tuple(kw)


_PLAIN = (bool, int, float, str, type(None))


def refuse(f, depth: int = 1):
    """For ``f``, a frontend taking its parameters by name with no wrapper (``sum``, ``mean``, the
    frameless ops: see ``rerun``), called from the frame ``depth`` levels up (``f`` itself, or one of
    ``export``'s copies of it: its code names the op, ``Tensor.<name>`` for the method): the call its
    caller made (the method or the function, which arguments by position), recovered from the
    caller's bytecode and the frame's parameters (its ``*`` and ``**`` ones too: arguments it takes
    under any name) and ``f``'s sentinel defaults, parsed as PyTorch parses it. Raises PyTorch's
    TypeError when its parser refuses the call; otherwise returns what it bound. (The frontend must
    not have rebound a parameter by then: they are the call.)"""
    frame = sys._getframe(depth)
    code = frame.f_code
    method = code.co_qualname.startswith("Tensor.")
    nargs, nall = code.co_argcount, code.co_argcount + code.co_kwonlyargcount
    local = frame.f_locals
    # (a method copy's hidden out is no name a call spells: not a parameter of the method)
    names = [n for n in code.co_varnames[:nall] if n.isidentifier()]
    values = {n: local[n] for n in names}
    extra = local[code.co_varnames[nall]] if code.co_flags & inspect.CO_VARARGS else ()
    if code.co_flags & inspect.CO_VARKEYWORDS:
        values.update(local[code.co_varnames[nall + bool(code.co_flags & inspect.CO_VARARGS)]])
    positional = f.__defaults__ or ()
    defaults = dict(zip(names[nargs - len(positional):nargs], positional, strict=True))
    defaults.update(f.__kwdefaults__ or {})
    site, form = _call_site(frame.f_back), None
    if site is not None:
        npos, kw = site
        given = names[:min(npos + method, nargs)]
        rest = [n for n in names[len(given):] if n not in kw]
        # (a given argument is no sentinel default: the call read is the frame's; a plain one may be given)
        if npos + method == len(given) + len(extra) and not set(given) & set(kw) and set(kw) <= set(values) \
                and all(values[n] is not defaults.get(n, _UNSET) or type(values[n]) in _PLAIN
                        for n in given) \
                and all(values[n] is defaults.get(n) for n in rest):
            form = (*(values[n] for n in given[method:]), *extra), {k: values[k] for k in kw}
    if form is None:  # not readable (f(*args, **kw), map, partial): by position while it can be
        given = [n for n in values
                 if n in names[:nargs] and extra or values[n] is not defaults.get(n, _UNSET)]
        k = next((i for i, n in enumerate(given) if i >= nargs or n != names[i]), len(given))
        form = (*(values[n] for n in given[method:k]), *extra), {n: values[n] for n in given[k:]}
    return parse(code.co_name, method, *form)


def rerun(f):
    """The slow path of a frameless frontend ``f`` of ``SCHEMAS`` (``export`` puts no wrapper on one
    taking ``**``: its function and method pay no frame). Its hot calls run at once; one that gave
    what only PyTorch's parser takes or refuses (NumPy's names, ``out=`` to a method, an unknown
    keyword: its ``**``; more positional arguments than it has: its ``*``) calls this, which parses
    the call as PyTorch does (``refuse``: its TypeError) and makes it again with PyTorch's names. A
    TypeError of a hot call is PyTorch's when its parser refuses the call: ``f`` catches it and calls
    ``refuse``, then raises it again. ``f``'s required parameters default to ``REQUIRED``, any use of
    which is a TypeError, so a call leaving one out is refused so too."""
    frame = sys._getframe(1)
    bound = refuse(f, 2)
    code = f.__code__
    names = code.co_varnames[:code.co_argcount + code.co_kwonlyargcount]
    if "input" in bound:  # (f may name it otherwise)
        bound[names[0]] = bound.pop("input")
    for k in bound:  # (a keyword of PyTorch's that f does not take: Python's error for it)
        if k not in names:
            raise TypeError(f"{frame.f_code.co_name}() got an unexpected keyword argument '{k}'")
    if frame.f_code.co_qualname.startswith("Tensor."):
        return f(frame.f_locals[names[0]], **bound)
    return f(**bound)
