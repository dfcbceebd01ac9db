"""Op table — names old and new scripts call that are not ops of their own:

* the ``funcgrad.<name>_`` in-place functions PyTorch exposes beside its Tensor methods
  (``torch.exp_(x)`` is ``x.exp_()``), generated here from the methods, as PyTorch generates both
  from one declaration. Each takes ``input`` (a Tensor, by position or keyword: PyTorch's parser
  error otherwise) and whatever the method takes, and is the method itself on it: the same
  result, version bump, ``grad_fn`` and errors (named as the function is, the method's name);
* legacy names: ``range`` (deprecated, ``end`` included), ``scalar_tensor``, ``Tensor.new``,
  ``get_device``, and the functions PyTorch 1.9 removed (``solve``, ``lstsq``, ``symeig``,
  ``eig``, ``matrix_rank``), which PyTorch keeps as names raising its migration messages.
"""

from __future__ import annotations

import numbers

import numpy as np

from .. import _dtype, _legacy
from .._device import put
from .._errors import warn_at_user
from .._factories import _finish, factory_out, full
from .._tensor import _scalar_type_name
from ._registry import FUNCTIONS, METHODS, REQUIRED, Tensor, _require_tensors, export

# PyTorch 2.13's torch.<name>_ functions whose method funcgrad has (the rest of its in-place
# functions are declared with their ops: gcd_, lcm_, relu_, ...)
INPLACE_FUNCTIONS = (
    "abs_", "acos_", "acosh_", "addmv_", "arccos_", "arccosh_", "arcsin_", "arcsinh_", "arctan_",
    "arctanh_", "as_strided_", "asin_", "asinh_", "atan_", "atanh_", "ceil_", "clamp_", "clamp_max_",
    "clamp_min_",
    "clip_", "cos_", "cosh_", "deg2rad_", "detach_", "erf_", "erfc_", "exp2_", "exp_", "expm1_",
    "fill_", "fix_", "floor_", "frac_", "i0_", "index_put_", "ldexp_", "log10_", "log1p_", "log2_",
    "log_", "logit_", "nan_to_num_", "neg_", "negative_", "rad2deg_", "reciprocal_", "resize_as_", "round_",
    "rsqrt_", "sigmoid_", "sin_", "sinc_", "sinh_", "sqrt_", "square_", "tan_", "tanh_", "trunc_",
    "xlogy_", "zero_")


def _inplace_function(name: str):
    def f(input, *args, **kwargs):
        return getattr(input, name)(*args, **kwargs)
    f.__name__ = f.__qualname__ = name
    f.__doc__ = f"``input.{name}(...)`` (``torch.{name}``)."
    return _require_tensors(f, name, ("input",), False)


def inplace_functions() -> dict:
    """The in-place functions by name, for ``funcgrad/__init__.py`` to export once every method
    is installed (also in ``FUNCTIONS``; a name some module declared as a function keeps it)."""
    for name in INPLACE_FUNCTIONS:
        if name not in FUNCTIONS and (name in METHODS or hasattr(Tensor, name)):
            FUNCTIONS[name] = _inplace_function(name)
    return {name: FUNCTIONS[name] for name in INPLACE_FUNCTIONS if name in FUNCTIONS}


# ================================ legacy names old scripts still call ============================
_RANGE_WARNING = ("torch.range is deprecated and will be removed in a future release because its behavior "
                  "is inconsistent with Python's range builtin. Instead, use torch.arange, which produces "
                  "values in [start, end).")


def _fmt(v) -> str:
    """A C++ stream's default printing of a double (PyTorch's error messages)."""
    return format(float(v), "g")


@export("range", method=False)
def range(start, end=REQUIRED, step=1, *, out=None, dtype=None, layout=None, device=None,  # noqa: A001
          requires_grad=False) -> Tensor:
    """Deprecated: ``[start, end]`` with ``end`` included, in the default float dtype unless
    ``dtype`` says (PyTorch's ``range``: ``start + i * step`` computed in double, or float for
    half types, or int64, then cast).

    >>> import warnings, funcgrad
    >>> with warnings.catch_warnings():
    ...     warnings.simplefilter("ignore")
    ...     funcgrad.range(0, 1, 0.25)
    tensor([0.0000, 0.2500, 0.5000, 0.7500, 1.0000])
    """
    if end is REQUIRED:
        raise TypeError('range() missing 1 required positional arguments: "end"')
    warn_at_user(_RANGE_WARNING, UserWarning)
    d = _dtype.to_dtype(dtype) if dtype is not None else out.dtype if out is not None else \
        _dtype.get_default_dtype()
    if d._kind in "bc":
        raise NotImplementedError(f'"range_cpu" not implemented for \'{_scalar_type_name(d)}\'')
    vals = [v.item() if isinstance(v, Tensor) else v for v in (start, end, step)]
    acc = np.int64 if d._kind in "iu" else np.float32 if d.np.itemsize == 2 else np.float64
    xstart, xend, xstep = (acc(v) if acc is not np.int64 else np.int64(int(v)) for v in vals)
    if not (xstep > 0 or xstep < 0):
        raise RuntimeError("step must be nonzero")
    if not (np.isfinite(float(xstart)) and np.isfinite(float(xend))):
        raise RuntimeError(f"unsupported range: {_fmt(xstart)} -> {_fmt(xend)}")
    if not (xstep > 0 and xend >= xstart or xstep < 0 and xend <= xstart):
        raise RuntimeError("upper bound and lower bound inconsistent with step sign")
    with np.errstate(over="ignore"):
        size = int((xend - xstart) / xstep + 1) if acc is not np.int64 else int((xend - xstart) // xstep + 1)
        host = (xstart + np.arange(size).astype(acc) * xstep).astype(d.np)
    return factory_out(_finish(put(host), requires_grad, device), out, True)


@export("scalar_tensor", method=False)
def scalar_tensor(s, *, dtype=None, layout=None, device=None, pin_memory=None,
                  requires_grad=False) -> Tensor:
    """A 0-d tensor of the number ``s``, in the default float dtype unless ``dtype`` says.

    >>> import funcgrad
    >>> funcgrad.scalar_tensor(3)
    tensor(3.)
    """
    if isinstance(s, np.generic):
        s = s.item()
    if not isinstance(s, numbers.Number):
        raise TypeError(f"scalar_tensor(): argument 's' (position 1) must be Number, not {type(s).__name__}")
    d = _dtype.get_default_dtype() if dtype is None else _dtype.to_dtype(dtype)
    if isinstance(s, complex) and d._kind != "c":
        raise RuntimeError("value cannot be converted to type float without overflow")
    return full((), s, dtype=d, device=device, requires_grad=requires_grad)


def _new(self, *args, **kwargs):
    """``x.new(...)``: PyTorch's legacy constructor in ``x``'s dtype and device (sizes: zeros;
    data: a copy in that dtype; a Tensor of that dtype: an alias), never requiring grad."""
    device = kwargs.pop("device", None)
    v = _legacy.new(self.dtype, args, kwargs, device)
    if isinstance(v, Tensor):
        return v.detach() if v.requires_grad else v._share(v._ver)
    t = Tensor._wrap(v)
    if device is not None:
        return t.to(device)
    return t if self.device.type == "cpu" else t.to(self.device)


METHODS["new"] = _new


@export("get_device", method=False, tensors=("input",))
def get_device(input: Tensor) -> int:
    """``input.get_device()``: -1 on the CPU, else the device's index."""
    return input.get_device()


# ---- functions removed in PyTorch 1.9 (its names stay, raising its migration messages) ---------
_REMOVED = "This function was deprecated since version 1.9 and is now removed."
_SOLVE_MSG = (f"{_REMOVED}"
              ' `torch.solve` is deprecated in favor of `torch.linalg.solve`. `torch.linalg.solve` has '
              'its arguments reversed and does not return the LU factorization.\n\nTo get the LU '
              'factorization see `torch.lu`, which can be used with `torch.lu_solve` or '
              '`torch.lu_unpack`.\nX = torch.solve(B, A).solution should be replaced with:\nX = '
              'torch.linalg.solve(A, B)')
_LSTSQ_MSG = (f"{_REMOVED}"
              ' `torch.lstsq` is deprecated in favor of `torch.linalg.lstsq`.\n`torch.linalg.lstsq` has '
              'reversed arguments and does not return the QR decomposition in the returned tuple '
              '(although it returns other information about the problem).\n\nTo get the QR decomposition '
              'consider using `torch.linalg.qr`.\n\nThe returned solution in `torch.lstsq` stored the '
              'residuals of the solution in the last m - n columns of the returned value whenever m > n. '
              "In torch.linalg.lstsq, the residuals are in the field 'residuals' of the returned named "
              'tuple.\n\nThe unpacking of the solution, as in\nX, _ = torch.lstsq(B, '
              'A).solution[:A.size(1)]\nshould be replaced with:\nX = torch.linalg.lstsq(A, B).solution')
_SYMEIG_MSG = (f"{_REMOVED}"
               ' The default behavior has changed from using the upper triangular portion of the matrix '
               'by default to using the lower triangular portion.\n\nL, _ = torch.symeig(A, upper=upper) '
               "should be replaced with:\nL = torch.linalg.eigvalsh(A, UPLO='U' if upper else "
               "'L')\n\nand\n\nL, V = torch.symeig(A, eigenvectors=True) should be replaced with:\nL, V = "
               "torch.linalg.eigh(A, UPLO='U' if upper else 'L')")
_EIG_MSG = (f"{_REMOVED}"
            ' `torch.linalg.eig` returns complex tensors of dtype `cfloat` or `cdouble` rather than '
            'real tensors mimicking complex tensors.\n\nL, _ = torch.eig(A) should be replaced '
            'with:\nL_complex = torch.linalg.eigvals(A)\n\nand\n\nL, V = torch.eig(A, '
            'eigenvectors=True) should be replaced with:\nL_complex, V_complex = torch.linalg.eig(A)')
_MATRIX_RANK_MSG = (f"{_REMOVED}\nPlease use the `torch.linalg.matrix_rank` function instead. The parameter "
                    "'symmetric' was renamed in `torch.linalg.matrix_rank()` to 'hermitian'.")


@export("matrix_rank", method=False)
def matrix_rank(input, tol=None, symmetric=False, *, out=None):
    """Removed in PyTorch 1.9: raises its message (use ``linalg.matrix_rank``)."""
    raise RuntimeError(_MATRIX_RANK_MSG)


@export("solve")
def solve(input, A, *, out=None):
    """Removed in PyTorch 1.9: raises its message (use ``linalg.solve``)."""
    raise RuntimeError(_SOLVE_MSG)


@export("lstsq")
def lstsq(input, A, *, out=None):
    """Removed in PyTorch 1.9: raises its message (use ``linalg.lstsq``)."""
    raise RuntimeError(_LSTSQ_MSG)


def _symeig(input, eigenvectors=False, upper=True, *, out=None):
    """Removed in PyTorch 1.9: raises its message (use ``linalg.eigh``)."""
    raise RuntimeError(_SYMEIG_MSG)


symeig = export("symeig")(_symeig)


@export("eig")
def eig(self, eigenvectors=False, *, e=None, v=None):
    """Removed in PyTorch 1.9: raises its message (use ``linalg.eig``)."""
    raise RuntimeError(_EIG_MSG)
