"""Op table — the top-level names tutorials and scripts reached for next: ``finfo``/``iinfo``,
``fmax``/``fmin``, ``nextafter``, bit shifts, ``block_diag``, ``isin``, ``renorm``, ``cov``,
``corrcoef``, ``quantile``, ``histogram`` (``gradient``, ``vander``…: more3.py).

Composites are written over existing ops where PyTorch's are too, so their node names and
gradients are PyTorch's (``cartesian_prod`` and ``combinations`` end in ``StackBackward0``,
``cov`` in ``SqueezeBackward0``, ``corrcoef`` in ``ClampBackward1``). ``quantile`` is one op named
after PyTorch's last node (``SqueezeBackward4``) whose forward is PyTorch's algorithm (sort,
ranks, gather, lerp), so its gradient is PyTorch's too.
"""

from __future__ import annotations

import itertools
import warnings

import jax
import jax.numpy as jnp
import numpy as np

from .. import _dtype
from .._factories import tensor, zeros
from .._tensor import _scalar_type_name, _wrap_dim
from ._registry import Tensor, apply, defop, export, inplace_method
from .decomp import _result_type
from .linalg import diag_embed
from ._registry import write_out as _out
from .shape import stack
from .shape_more import meshgrid


# ================================ dtype information ===============================================
class finfo:
    """Machine limits of a floating dtype (PyTorch's ``torch.finfo``; default: the default dtype).

    >>> import funcgrad
    >>> funcgrad.finfo(funcgrad.float32)
    finfo(resolution=1e-06, min=-3.40282e+38, max=3.40282e+38, eps=1.19209e-07, ...dtype=float32)
    >>> funcgrad.finfo(funcgrad.float16).eps
    0.0009765625
    """

    def __init__(self, type=None):  # noqa: A002  (PyTorch's parameter name)
        d = _dtype.get_default_dtype() if type is None else type
        if not isinstance(d, _dtype.dtype) or d._kind not in "fc":
            raise TypeError("funcgrad.finfo() requires a floating point input type. Use funcgrad.iinfo to "
                            "handle 'funcgrad.finfo'")
        d = d.to_real()
        fi = jnp.finfo(d.np)
        self.bits = int(fi.bits)
        self.eps = float(fi.eps)
        self.max = float(fi.max)
        self.min = float(fi.min)
        self.tiny = self.smallest_normal = float(fi.smallest_normal)
        self.resolution = 10.0 ** -int(fi.precision)  # PyTorch's: a power of ten, not rounded to d
        self.dtype = d.name

    def __repr__(self):
        return (f"finfo(resolution={self.resolution:g}, min={self.min:g}, max={self.max:g}, eps={self.eps:g}, "
                f"smallest_normal={self.smallest_normal:g}, tiny={self.tiny:g}, dtype={self.dtype})")


class iinfo:
    """Limits of an integer dtype (PyTorch's ``torch.iinfo``).

    >>> import funcgrad
    >>> funcgrad.iinfo(funcgrad.uint8)
    iinfo(min=0, max=255, dtype=uint8)
    >>> funcgrad.iinfo(funcgrad.int32).max
    2147483647
    """

    def __init__(self, type):  # noqa: A002
        if isinstance(type, _dtype.dtype) and type._kind == "b":
            raise TypeError("funcgrad.bool is not supported by funcgrad.iinfo")
        if not isinstance(type, _dtype.dtype) or type._kind != "i":
            raise TypeError("funcgrad.iinfo() requires an integer input type. Use funcgrad.finfo to handle "
                            "'funcgrad.iinfo'")
        ii = np.iinfo(type.np)
        self.bits, self.min, self.max, self.dtype = int(ii.bits), int(ii.min), int(ii.max), type.name

    def __repr__(self):
        return f"iinfo(min={self.min:g}, max={self.max:g}, dtype={self.dtype})"


def can_cast(from_, to) -> bool:
    """Whether PyTorch's casting rules allow ``from_`` → ``to`` (no lower category: float → int,
    complex → float, anything → bool but bool).

    >>> import funcgrad
    >>> funcgrad.can_cast(funcgrad.float32, funcgrad.int32), funcgrad.can_cast(funcgrad.int32, funcgrad.float16)
    (False, True)
    """
    for n, d in (("from", from_), ("to", to)):
        if not isinstance(d, _dtype.dtype):
            raise TypeError(f"can_cast(): argument '{n}' (position {1 if n == 'from' else 2}) must be "
                            f"torch.dtype, not {type(d).__name__}")
    order = "bifc"
    return order.index(from_._kind) <= order.index(to._kind)


def typename(obj) -> str:
    """PyTorch's name of ``obj``'s type (``'torch.FloatTensor'`` for a float32 tensor).

    >>> import funcgrad
    >>> funcgrad.typename(funcgrad.zeros(2)), funcgrad.typename(1)
    ('torch.FloatTensor', 'int')
    """
    if isinstance(obj, Tensor):
        return obj.type()
    module = getattr(obj, "__module__", "") or ""
    if hasattr(obj, "__qualname__"):
        qualname = obj.__qualname__
    elif hasattr(obj, "__name__"):
        qualname = obj.__name__
    else:
        module = obj.__class__.__module__ or ""
        qualname = obj.__class__.__qualname__
    return qualname if module in ("", "builtins") else f"{module}.{qualname}"


# ================================ small tensor predicates and views ===============================
@export("is_nonzero", tensors=("input",))
def is_nonzero(input) -> bool:
    """The truth of a one-element tensor (PyTorch's error for none or several).

    >>> import funcgrad
    >>> funcgrad.is_nonzero(funcgrad.tensor([0.5]))
    True
    """
    n = input.numel()
    if n == 0:
        raise RuntimeError("Boolean value of Tensor with no values is ambiguous")
    if n > 1:
        raise RuntimeError("Boolean value of Tensor with more than one value is ambiguous")
    return bool(input.item())


@export("is_same_size", tensors=("input", "other"))
def is_same_size(input, other) -> bool:
    """Whether both tensors have the same shape."""
    return tuple(input.shape) == tuple(other.shape)


@export("ravel", tensors=("input",))
def ravel(input) -> Tensor:
    """The elements as a 1-D tensor (a view where the layout allows, as ``reshape(-1)``).

    >>> import funcgrad
    >>> funcgrad.ravel(funcgrad.tensor([[1, 2], [3, 4]]))
    tensor([1, 2, 3, 4])
    """
    return input.contiguous().view(-1)  # PyTorch: contiguous() then view (ViewBackward0 either way)


@export("adjoint", tensors=("input",))
def adjoint(input) -> Tensor:
    """The conjugate transpose of the last two dims (a view)."""
    if input.ndim == 0:
        warnings.warn("adjoint() is deprecated on 0-D tensors. Consider using x.conj().", UserWarning,
                      stacklevel=2)
        return input
    if input.ndim == 1:
        raise RuntimeError("tensor.adjoint() is only supported on matrices or batches of matrices. Got "
                           "1-D tensor.")
    t = input.transpose(-2, -1)
    return t.conj() if input.is_complex() else t


def detach(input) -> Tensor:
    """``input.detach()`` (PyTorch's function form)."""
    return input.detach()


def is_complex(input) -> bool:
    """Whether ``input``'s dtype is complex."""
    if not isinstance(input, Tensor):
        raise TypeError(f"is_complex(): argument 'input' (position 1) must be Tensor, not {type(input).__name__}")
    return input.is_complex()


# ================================ fmax / fmin / nextafter / shifts ================================
def _fminmax_jvp(cmp):
    # PyTorch: self takes the gradient where cmp(self, other) or other is nan, other elsewhere
    def jvp(primals, tangents, out):
        (x, y), (tx, ty) = primals, tangents
        take = cmp(x, y) | jnp.isnan(y)
        return jnp.where(take, tx, ty)
    return jvp


_fmax = defop("fmax", jnp.fmax, "FmaxBackward0", promote="binary", jvp=_fminmax_jvp(jnp.greater_equal))
_fmin = defop("fmin", jnp.fmin, "FminBackward0", promote="binary", jvp=_fminmax_jvp(jnp.less_equal))


# PyTorch's derivative passes the gradient to ``input`` where ``input != other`` (a nan counts as
# unequal) and zero where they are equal (the result is ``other`` there); none to ``other``
def _nextafter_jvp(primals, tangents, out):
    x, y = primals
    return jnp.where(x != y, tangents[0], 0).astype(out.dtype)


_nextafter = defop("nextafter", jnp.nextafter, "NextafterBackward0", promote="binary", accepts="f",
                   kernel="nextafter_cpu", jvp=_nextafter_jvp)


@export("fmax", tensors=("input", "other"))
def fmax(input, other, *, out=None) -> Tensor:
    """Elementwise maximum that ignores nan (nan only where both are nan).

    >>> import funcgrad
    >>> funcgrad.fmax(funcgrad.tensor([1.0, float("nan")]), funcgrad.tensor([float("nan"), 2.0]))
    tensor([1., 2.])
    """
    return _out(apply(_fmax, input, other), out)


@export("fmin", tensors=("input", "other"))
def fmin(input, other, *, out=None) -> Tensor:
    """Elementwise minimum that ignores nan (nan only where both are nan)."""
    return _out(apply(_fmin, input, other), out)


@export("nextafter", tensors=("input", "other"))
def nextafter(input, other, *, out=None) -> Tensor:
    """The next representable float after ``input`` towards ``other``."""
    return _out(apply(_nextafter, input, other), out)


inplace_method("nextafter_", nextafter)


def _shift(left):
    def fn(x, s):
        dt = jnp.result_type(x, s)
        x, s = jnp.asarray(x, dt), jnp.asarray(s, dt)
        bits = jnp.iinfo(dt).bits
        # PyTorch: a shift by a negative amount or by the width or more gives 0 (left) or the sign
        # fill (right); XLA leaves those undefined
        out_of_range = (s < 0) | (s >= bits)
        safe = jnp.where(out_of_range, 0, s)
        if left:
            return jnp.where(out_of_range, jnp.zeros_like(x), jax.lax.shift_left(x, safe))
        r = jnp.right_shift(x, safe)  # arithmetic for signed dtypes, logical for uint8
        return jnp.where(out_of_range, jnp.where(x < 0, -1, 0).astype(dt), r)
    return fn


_lshift = defop("bitwise_left_shift", _shift(True), None, promote="binary", accepts="i", kernel="lshift_cpu")
_rshift = defop("bitwise_right_shift", _shift(False), None, promote="binary", accepts="i", kernel="rshift_cpu")


def _shift_frontend(name, op):
    def f(input, other, *, out=None):
        if not isinstance(other, (Tensor, int, float, bool)):
            return NotImplemented
        return _out(apply(op, input, other), out, name)
    f.__name__ = f.__qualname__ = name
    f.__doc__ = f"Elementwise ``{name}`` of integer tensors (PyTorch's result at out-of-range shifts)."
    return f


bitwise_left_shift = export("bitwise_left_shift")(_shift_frontend("bitwise_left_shift", _lshift))
bitwise_right_shift = export("bitwise_right_shift")(_shift_frontend("bitwise_right_shift", _rshift))
export("__lshift__", function=False)(bitwise_left_shift)
export("__rshift__", function=False)(bitwise_right_shift)
export("__rlshift__", function=False)(lambda self, other: apply(_lshift, other, self))
export("__rrshift__", function=False)(lambda self, other: apply(_rshift, other, self))
inplace_method("bitwise_left_shift_", bitwise_left_shift)
inplace_method("bitwise_right_shift_", bitwise_right_shift)
export("__ilshift__", function=False)(lambda self, o: self._inplace(bitwise_left_shift, o))
export("__irshift__", function=False)(lambda self, o: self._inplace(bitwise_right_shift, o))


# ================================ diagflat / block_diag / cartesian_prod / combinations ==========
@export("diagflat")
def diagflat(input, offset: int = 0) -> Tensor:
    """A square matrix with the flattened input on its ``offset`` diagonal (``DiagEmbedBackward0``).

    >>> import funcgrad
    >>> funcgrad.diagflat(funcgrad.tensor([[1, 2]]))
    tensor([[1, 0],
            [0, 2]])
    """
    return diag_embed(input.reshape(-1), offset, 0, 1)


def _block_diag_fn(*xs):
    dt = xs[0].dtype
    rows = sum(x.shape[0] for x in xs)
    cols = sum(x.shape[1] for x in xs)
    out = jnp.zeros((rows, cols), dt)
    r = c = 0
    for x in xs:
        out = jax.lax.dynamic_update_slice(out, x.astype(dt), (r, c))
        r, c = r + x.shape[0], c + x.shape[1]
    return out


_block_diag = defop("block_diag", _block_diag_fn, "BlockDiagBackward0", promote="binary", linear=True)


def block_diag(*tensors) -> Tensor:
    """The block-diagonal matrix of the given 0-, 1- or 2-D tensors (a 1-D one is a row).

    >>> import funcgrad
    >>> funcgrad.block_diag(funcgrad.tensor([[1, 2]]), funcgrad.tensor(3))
    tensor([[1, 2, 0],
            [0, 0, 3]])
    """
    mats = []
    for i, t in enumerate(tensors):
        if t.ndim > 2:
            raise RuntimeError(f"torch.block_diag: Input tensors must have 2 or fewer dimensions. Input {i} has "
                               f"{t.ndim} dimensions")
        mats.append(t.reshape(1, -1) if t.ndim < 2 else t)
    if not mats:
        return zeros(1, 0)
    return apply(_block_diag, *mats)


def cartesian_prod(*tensors) -> Tensor:
    """The Cartesian product of 1-D tensors, one row per combination (``StackBackward0``).

    >>> import funcgrad
    >>> funcgrad.cartesian_prod(funcgrad.tensor([1, 2]), funcgrad.tensor([3, 4]))
    tensor([[1, 3],
            [1, 4],
            [2, 3],
            [2, 4]])
    """
    for t in tensors:
        if t.ndim != 1:
            raise RuntimeError(f"Expect a 1D vector, but got shape {list(t.shape)}")
    if len(tensors) == 1:
        return tensors[0]
    grids = meshgrid(*tensors, indexing="ij")
    return stack([g.reshape(-1) for g in grids], 1)


def combinations(input, r: int = 2, with_replacement: bool = False) -> Tensor:
    """Length-``r`` combinations of a 1-D tensor's elements, as rows (``StackBackward0``).

    >>> import funcgrad
    >>> funcgrad.combinations(funcgrad.tensor([1, 2, 3]))
    tensor([[1, 2],
            [1, 3],
            [2, 3]])
    """
    if input.ndim != 1:
        raise RuntimeError(f"Expect a 1D vector, but got shape {list(input.shape)}")
    if r < 0:
        raise RuntimeError(f"Expect a non-negative number, but got {r}")
    if r == 0:
        return tensor([], dtype=input.dtype)
    pick = itertools.combinations_with_replacement if with_replacement else itertools.combinations
    idx = np.array(list(pick(range(input.shape[0]), r)), np.int64).reshape(-1, r)
    return stack([input[tensor(idx[:, k])] for k in range(r)], 1)


# ================================ isin / renorm ===================================================
_isin = defop("isin", lambda e, t, invert: jnp.isin(e, t, invert=invert), None, promote="binary")


@export("isin", method=False)
def isin(elements, test_elements, *, assume_unique: bool = False, invert: bool = False) -> Tensor:
    """Whether each element of ``elements`` is in ``test_elements`` (either may be a number).

    >>> import funcgrad
    >>> funcgrad.isin(funcgrad.tensor([1, 2, 3]), funcgrad.tensor([2, 5]))
    tensor([False,  True, False])
    """
    if not isinstance(elements, Tensor) and not isinstance(test_elements, Tensor):
        raise TypeError("isin() received an invalid combination of arguments - got (int, int), but expected "
                        "one of: (Tensor elements, Tensor test_elements)")
    return apply(_isin, elements, test_elements, invert=bool(invert))


def _renorm_fn(x, p, dim, maxnorm):
    axes = tuple(i for i in range(x.ndim) if i != dim)
    a = jnp.abs(x)
    if p == float("inf"):
        norm = jnp.max(a, axis=axes, keepdims=True)
    elif p == 1:
        norm = jnp.sum(a, axis=axes, keepdims=True)
    else:
        s = jnp.sum(jnp.where(a > 0, a, 1) ** p * (a > 0), axis=axes, keepdims=True)
        norm = jnp.where(s > 0, jnp.where(s > 0, s, 1) ** (1.0 / p), 0)
    # PyTorch's renorm: factor maxnorm / (norm + 1e-7) on the slices over maxnorm, 1 elsewhere
    factor = jnp.where(norm > maxnorm, maxnorm / (norm + 1e-7), 1.0).astype(x.dtype)
    return x * factor


_renorm = defop("renorm", _renorm_fn, "RenormBackward0", accepts="fc", kernel="renorm_cpu")


@export("renorm")
def renorm(input, p, dim: int, maxnorm) -> Tensor:
    """Each slice along ``dim`` with ``p``-norm over ``maxnorm`` scaled down to norm ``maxnorm``.

    >>> import funcgrad
    >>> funcgrad.renorm(funcgrad.tensor([[3.0, 4.0], [0.1, 0.1]]), 2, 0, 1.0)
    tensor([[0.6000, 0.8000],
            [0.1000, 0.1000]])
    """
    if input.ndim < 2:
        raise RuntimeError(f"renorm: input needs at least 2 dimensions, got {input.ndim} dimensions")
    if p <= 0:
        raise RuntimeError("renorm: non-positive-norm not supported")
    if maxnorm < 0:
        raise RuntimeError(f"renorm: expected maxnorm to be >= 0 but got {maxnorm}")
    if input.dtype._kind not in "fc":
        raise RuntimeError(f"linalg.vector_norm: Expected a floating point or complex tensor as input. Got "
                           f"{_scalar_type_name(input.dtype)}")
    d = _wrap_dim(dim, input.ndim)
    return apply(_renorm, input, p=float(p), dim=d, maxnorm=float(maxnorm))


inplace_method("renorm_", renorm)


# ================================ cov / corrcoef ==================================================
@export("cov")
def cov(input, *, correction: int = 1, fweights=None, aweights=None) -> Tensor:
    """Covariance of the rows (variables) over the columns (observations); PyTorch's algorithm,
    so the node is its final ``squeeze`` (``SqueezeBackward0``).

    >>> import funcgrad
    >>> funcgrad.cov(funcgrad.tensor([[0.0, 1.0, 2.0], [2.0, 1.0, 0.0]]))
    tensor([[ 1., -1.],
            [-1.,  1.]])
    """
    if input.ndim > 2:
        raise RuntimeError(f"cov(): expected input to have two or fewer dimensions but got an input with "
                           f"{input.ndim} dimensions")
    if input.dtype._kind == "b":
        raise RuntimeError("cov(): bool dtype is not supported for input")
    x = input.reshape(1, -1) if input.ndim < 2 else input
    n = x.shape[1]
    w = None
    for name, wt in (("fweights", fweights), ("aweights", aweights)):
        if wt is None:
            continue
        if wt.ndim > 1:
            raise RuntimeError(f"cov(): expected {name} to have one or fewer dimensions but got {name} with "
                               f"{wt.ndim} dimensions")
        if wt.numel() != n:
            raise RuntimeError(f"cov(): expected {name} to have the same numel as there are observations in "
                               f"the input but got {wt.numel()} != {n}")
        if name == "fweights" and wt.dtype._kind != "i":
            raise RuntimeError(f"cov(): expected fweights to have integral dtype but got fweights with "
                               f"{_scalar_type_name(wt.dtype)} dtype")
        if name == "aweights" and wt.dtype._kind not in "fc":
            raise RuntimeError(f"cov(): expected aweights to have floating point dtype but got aweights with "
                               f"{_scalar_type_name(wt.dtype)} dtype")
        if bool((wt < 0).any()):
            raise RuntimeError(f"cov(): {name} cannot be negative")
        w = wt if w is None else w * wt
    w_sum = w.sum() if w is not None else tensor(n)
    if w is not None and not bool(w_sum != 0):
        raise RuntimeError("cov(): weights sum to zero, can't be normalized")
    avg = (x * w if w is not None else x).sum(1) / w_sum
    if w is not None and correction != 0:
        norm = w_sum - correction * ((w * aweights).sum() / w_sum if aweights is not None else 1)
    else:
        norm = w_sum - correction
    if bool(norm <= 0):
        warnings.warn("cov(): degrees of freedom is <= 0. Correction should be strictly less than the number "
                      "of observations.", UserWarning, stacklevel=2)
        norm = norm * 0
    x = x - avg.unsqueeze(1)
    c = x.mm((x * w if w is not None else x).t())
    return c.div(norm).squeeze()


@export("corrcoef")
def corrcoef(input) -> Tensor:
    """Pearson correlation coefficients of the rows, clipped to [-1, 1] (``ClampBackward1``).

    >>> import funcgrad
    >>> funcgrad.corrcoef(funcgrad.tensor([[0.0, 1.0, 2.0], [2.0, 1.0, 0.0]]))
    tensor([[ 1., -1.],
            [-1.,  1.]])
    """
    if input.ndim > 2:
        raise RuntimeError(f"corrcoef(): expected input to have two or fewer dimensions but got an input with "
                           f"{input.ndim} dimensions")
    c = cov(input)
    if c.ndim == 0:
        return c / c
    sd = c.diagonal().sqrt()
    c = c / sd.reshape(-1, 1)
    c = c / sd.reshape(1, -1)
    return c.clip(-1, 1)


# ================================ quantile / nanquantile ==========================================
_MODES = ("linear", "lower", "higher", "midpoint", "nearest")


def _quantile_fn(x, q, dim, keepdim, mode, ignore_nan):
    # PyTorch's quantile_compute: sort, ranks from q, gather below/above, lerp
    if dim is None:
        s = jnp.sort(x.ravel()).reshape(((1,) * x.ndim if keepdim else ()) + (x.size,))
    else:
        s = jnp.sort(jnp.moveaxis(x, dim, -1), axis=-1)
        if keepdim:
            s = jnp.expand_dims(s, dim)
    scalar_q = q.ndim == 0
    q = q.reshape(-1)
    nan = jnp.isnan(s)
    if ignore_nan:
        ranks = q * (jnp.sum(~nan, -1, keepdims=True) - 1).astype(s.dtype)
        ranks = jnp.where(ranks < 0, 0, ranks)
    else:
        last = s.shape[-1] - 1
        ranks = jnp.where(jnp.any(nan, -1, keepdims=True), jnp.asarray(last, s.dtype), q * last)
    if mode == "lower":
        ranks = jnp.floor(ranks)
    elif mode == "higher":
        ranks = jnp.ceil(ranks)
    elif mode == "nearest":
        ranks = jnp.round(ranks)  # half to even, as PyTorch's round_
    below_i = jax.lax.stop_gradient(ranks).astype(jnp.int64)
    vals = jnp.take_along_axis(s, below_i, -1)
    if mode in ("linear", "midpoint"):
        w = jnp.full_like(ranks, 0.5) if mode == "midpoint" else ranks - below_i.astype(ranks.dtype)
        above = jnp.take_along_axis(s, jnp.ceil(jax.lax.stop_gradient(ranks)).astype(jnp.int64), -1)
        # PyTorch's lerp: the two-sided formula
        vals = jnp.where(w < 0.5, vals + w * (above - vals), above - (above - vals) * (1 - w))
    return vals[..., 0] if scalar_q else jnp.moveaxis(vals, -1, 0)


_quantile = defop("quantile", _quantile_fn, "SqueezeBackward4")


def _quantile_dtype(r, o):
    return None if r.dtype is o.dtype else "quantile() out tensor must be same dtype as the input tensor"


def _quantile_frontend(name, ignore_nan):
    def f(input, q, dim=None, keepdim: bool = False, *, interpolation: str = "linear", out=None):
        if isinstance(q, Tensor):
            qt = q
        else:
            if not 0 <= q <= 1:
                raise RuntimeError(f"quantile() q must be in the range [0, 1] but got {q}")
            qt = tensor(float(q), dtype=input.dtype)
        if input.numel() == 0:
            raise RuntimeError("quantile() input tensor must be non-empty")
        if qt.ndim > 1:
            raise RuntimeError("quantile() q must be a scalar or 1D tensor")
        if input.dtype.name not in ("float32", "float64"):
            raise RuntimeError("quantile() input tensor must be either float or double dtype")
        if qt.dtype is not input.dtype:
            raise RuntimeError("quantile() q tensor must be same dtype as the input tensor")
        if interpolation not in _MODES:
            raise RuntimeError(f"quantile() interpolation must be one of linear, lower, higher, midpoint or "
                               f"nearest, but got {interpolation}")
        if isinstance(q, Tensor) and not bool(((qt >= 0) & (qt <= 1)).all()):
            raise RuntimeError("quantile() q values must be in the range [0, 1]")
        d = None if dim is None else _wrap_dim(dim, input.ndim)
        if input.ndim == 0:  # (dim 0 / -1 of a 0-d tensor: its one element)
            d = None
        r = apply(_quantile, input, qt, dim=d, keepdim=bool(keepdim), mode=interpolation,
                  ignore_nan=ignore_nan)
        return _out(r, out, name, _quantile_dtype, refuse_grad=False)
    f.__name__ = f.__qualname__ = name
    f.__doc__ = (f"The ``q``-th quantiles of ``input`` along ``dim`` (flattened when None), "
                 f"{'ignoring nan' if ignore_nan else 'nan where a slice has nan'}; ``interpolation`` "
                 f"between the two nearest ranks as PyTorch's.")
    return f


quantile = export("quantile")(_quantile_frontend("quantile", False))
nanquantile = export("nanquantile")(_quantile_frontend("nanquantile", True))


# ================================ histogram =======================================================
def _torch_linspace(lo, hi, steps, np_dtype):
    """PyTorch's CPU linspace (each half stepped from its own end) in ``np_dtype``."""
    lo_, hi_ = np_dtype.type(lo), np_dtype.type(hi)
    step = (hi_ - lo_) / np_dtype.type(max(steps - 1, 1))
    i = np.arange(steps)
    half = steps // 2
    out = np.where(i < half, lo_ + step * i.astype(np_dtype), hi_ - step * (steps - i - 1).astype(np_dtype))
    return out.astype(np_dtype)


def _histogram_fn(x, edges, w, density):
    nb = edges.shape[0] - 1
    v = x.ravel()
    idx = jnp.searchsorted(edges, v, side="right") - 1
    idx = jnp.where(v == edges[-1], nb - 1, idx)  # the last bin is closed on the right
    inside = (v >= edges[0]) & (v <= edges[-1])
    wt = jnp.ones_like(v) if w is None else w.ravel().astype(v.dtype)
    hist = jnp.zeros((nb,), v.dtype).at[jnp.where(inside, idx, 0)].add(jnp.where(inside, wt, 0))
    if density:
        hist = hist / (jnp.sum(hist) * jnp.diff(edges))
    return hist, edges


def _histogram_jvp(primals, tangents, out, **static):
    # PyTorch records a NotImplemented node whose backward raises (as heaviside's)
    raise RuntimeError("derivative for aten::histogram is not implemented")


_histogram = defop("histogram", _histogram_fn, "NotImplemented", diff=(0, 1, 2),
                   jvp=_histogram_jvp)


@export("histogram")
def histogram(input, bins=100, *, range=None, weight=None, density: bool = False):  # noqa: A002
    """Histogram of ``input``: ``bins`` equal bins over ``range`` (the data's when None) or the
    given bin edges; a ``(hist, bin_edges)`` named tuple.

    >>> import funcgrad
    >>> funcgrad.histogram(funcgrad.tensor([1.0, 2.0, 1.0]), bins=2, range=(0.0, 2.0)).hist
    tensor([0., 3.])
    """
    if not input.dtype.is_floating_point:
        raise NotImplementedError(f"\"histogramdd\" not implemented for '{_scalar_type_name(input.dtype)}'")
    if weight is not None and tuple(weight.shape) != tuple(input.shape):
        raise RuntimeError("torch.histogramdd: if weight tensor is provided it should have the same shape as "
                           "the input tensor excluding its innermost dimension")
    if isinstance(bins, Tensor):
        if bins.ndim != 1:
            raise RuntimeError(f"torch.histogramdd: bins tensor should have one dimension, but got "
                               f"{bins.ndim} dimensions in the bins tensor for dimension 0")
        if bins.dtype is not input.dtype:
            raise RuntimeError(f"torch.histogramdd: input tensor and bins tensors should have the same dtype, "
                               f"but got input with dtype {_c_name(input.dtype)} and bins for dimension 0 with "
                               f"dtype {_c_name(bins.dtype)}")
        edges = bins.detach()
    else:
        nb = int(bins)
        if nb <= 0:
            raise RuntimeError(f"torch.histogram(): bins must be > 0, but got {nb} for dimension 0")
        if range is not None:
            lo, hi = float(range[0]), float(range[1])
        else:
            v = np.asarray(input._concrete("histogram() over the data's range"))
            lo, hi = (float(v.min()), float(v.max())) if v.size else (0.0, 0.0)
        if lo > hi:
            raise RuntimeError(f"torch.histogramdd: min should not exceed max, but got min {lo:g} max {hi:g} for "
                               f"dimension 0")
        if not (np.isfinite(lo) and np.isfinite(hi)):
            raise RuntimeError(f"torch.histogramdd: dimension 0's range [{lo}, {hi}] is not finite")
        if lo == hi:
            lo, hi = lo - 0.5, hi + 0.5
        edges = tensor(_torch_linspace(lo, hi, nb + 1, input.dtype.np))
    hist, edges_out = apply(_histogram, input, edges, weight, density=bool(density))
    return _histogram_result(hist, edges_out)


_C_NAMES = {"float32": "float", "float64": "double", "float16": "c10::Half", "bfloat16": "c10::BFloat16"}


def _c_name(d):
    return _C_NAMES.get(d.name, d.name)


_histogram_result = _result_type("funcgrad.return_types", "histogram", ["hist", "bin_edges"])
