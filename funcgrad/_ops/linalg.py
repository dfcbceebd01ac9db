"""Op table — linear algebra: matmul and its PyTorch-named special cases."""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np

from .. import _broadcast, _cache, _dispatch, _host, _meta
from .._tensor import _Array, _dtype_cname, _scalar_type_name, _wrap_dim
from ._registry import FUNCTIONS, Tensor, apply, defop, export, inplace_method, operand, same_dtype
from ._registry import write_out as _out
from .shape import _t

_mm = defop("mm", jnp.matmul, "MmBackward0", promote="binary")
_dot = defop("dot", jnp.dot, "DotBackward0", promote="binary")
_mv = defop("mv", jnp.matmul, "MvBackward0", promote="binary")
_bmm = defop("bmm", jnp.matmul, "BmmBackward0", promote="binary")
_matmul = defop("matmul", jnp.matmul, "UnsafeViewBackward0", promote="binary")
_vm = defop("vm", jnp.matmul, "SqueezeBackward4", promote="binary")  # 1-D @ 2-D


def _shape_str(t):
    return "x".join(map(str, t.shape))


@export("matmul")
def matmul(input, other, *, out=None) -> Tensor:
    """Matrix product with NumPy broadcasting: 2-D@2-D is ``MmBackward0``, 1-D@1-D ``DotBackward0``,
    2-D@1-D ``MvBackward0``.

    >>> import funcgrad
    >>> funcgrad.ones(2, 3) @ funcgrad.ones(3)
    tensor([3., 3.])
    """
    a, b = input.ndim, other.ndim
    if a == 0 or b == 0:
        raise RuntimeError(f"both arguments to matmul need to be at least 1D, but they are {a}D and {b}D")
    if a == 1 and b == 1 and input.dtype is not other.dtype:  # dot checks dtypes before sizes
        _dtype_mismatch(input, other)
    ka = input.shape[-1]
    kb = other.shape[0] if b == 1 else other.shape[-2]
    if ka != kb:
        if input.is_sparse or other.is_sparse:  # (a sparse operand: its kernel's errors, funcgrad/_sparse.py)
            return apply(_mm if b == 2 else _mv, input, other)
        if b > 2:  # the batched case runs as bmm on the broadcast batch
            batch = math.prod(_broadcast.infer_size(input.shape[:-2], other.shape[:-2]))  # (ATen's order)
            raise RuntimeError(f"Expected size for first two dimensions of batch2 tensor to be: "
                               f"[{batch}, {ka}] but got: [{batch}, {kb}].")
        if a == 1 and b == 1:
            raise RuntimeError(f"inconsistent tensor size, expected tensor [{ka}] and src [{kb}] to have "
                               f"the same number of elements, but got {ka} and {kb} elements respectively")
        if a == 2 and b == 1:
            raise RuntimeError(f"size mismatch, got input ({input.shape[0]}), mat ({_shape_str(input)}), "
                               f"vec ({kb})")
        raise RuntimeError(f"mat1 and mat2 shapes cannot be multiplied ({_shape_str(input.reshape(-1, ka))} "
                           f"and {kb}x{other.shape[-1] if b > 1 else 1})")
    if input.dtype is not other.dtype and _dispatch._amp_hook[0] is None:  # PyTorch does not promote
        # in products (under autocast the operands are cast to one dtype first)
        if input.is_sparse or other.is_sparse:  # (a sparse operand: its kernel's errors, funcgrad/_sparse.py)
            return apply(_mm if b == 2 else _mv, input, other)
        _dtype_mismatch(input, other)
    op = {(2, 2): _mm, (1, 1): _dot, (2, 1): _mv, (1, 2): _vm}.get((a, b), _matmul)
    try:
        r = apply(op, input, other)
    except ValueError:  # (jax's refusal of batch dims that do not broadcast: ATen's infer_size error)
        if a > 2 and b > 2:
            _broadcast.raise_mismatch((input.shape[:-2], other.shape[:-2]))
        raise
    return r if out is None else out.copy_(r)


def _dtype_mismatch(input, other):
    """PyTorch's error for ``input @ other`` of two dtypes: the kernel the product lowers to
    (dot, addmv, mm, or bmm for the batched case) words it."""
    a, b = input.ndim, other.ndim
    if a == 1 and b == 1:
        raise RuntimeError(f"dot : expected both vectors to have same dtype, but found "
                           f"{_scalar_name(input)} and {_scalar_name(other)}")
    if b == 1:  # addmv's result takes the vector's dtype
        raise RuntimeError(f"addmv input tensors must have the same dtype, but got {_scalar_name(other)}, "
                           f"{_scalar_name(input)}, and {_scalar_name(other)}")
    if b == 2:
        raise RuntimeError(f"expected m1 and m2 to have the same dtype, but got: "
                           f"{_dtype_cname(input.dtype)} != {_dtype_cname(other.dtype)}")
    raise RuntimeError(f"expected scalar type {_scalar_name(input)} but found {_scalar_name(other)}")


def check_addmm_dtypes(input, mat1, mat2):
    """addmm's dtype checks, in PyTorch's order (before any size check); none under autocast."""
    if _dispatch._amp_hook[0] is not None:
        return
    if input.dtype is not mat2.dtype:
        raise RuntimeError(f"self and mat2 must have the same dtype, but got {_scalar_name(input)} and "
                           f"{_scalar_name(mat2)}")
    if mat1.dtype is not mat2.dtype:
        raise RuntimeError(f"mat1 and mat2 must have the same dtype, but got {_scalar_name(mat1)} and "
                           f"{_scalar_name(mat2)}")


@export("__matmul__", function=False)
def _matmul_dunder(self, other):
    if (other := operand(other, numbers_too=False)) is NotImplemented:
        return NotImplemented  # (Python's "unsupported operand type(s) for @", as PyTorch's)
    return matmul(self, other)


@export("__rmatmul__", function=False)
def _rmatmul(self, other):
    if (other := operand(other, numbers_too=False)) is NotImplemented:
        return NotImplemented
    return matmul(other, self)


@export("mm")
def mm(input, mat2, *, out=None) -> Tensor:
    if input.ndim != 2 or mat2.ndim != 2:
        raise RuntimeError("self must be a matrix" if input.ndim != 2 else "mat2 must be a matrix")
    return matmul(input, mat2, out=out)


@export("bmm")
def bmm(input, mat2, *, out=None) -> Tensor:
    if input.ndim != 3 or mat2.ndim != 3:
        raise RuntimeError("batch1 must be a 3D tensor" if input.ndim != 3 else "batch2 must be a 3D tensor")
    if input.shape[0] != mat2.shape[0] or input.shape[2] != mat2.shape[1]:
        raise RuntimeError(f"Expected size for first two dimensions of batch2 tensor to be: "
                           f"[{input.shape[0]}, {input.shape[2]}] but got: [{mat2.shape[0]}, {mat2.shape[1]}].")
    if input.dtype is not mat2.dtype and _dispatch._amp_hook[0] is None:
        _dtype_mismatch(input, mat2)
    r = apply(_bmm, input, mat2)
    return r if out is None else out.copy_(r)


@export("dot")
def dot(input, other, *, out=None) -> Tensor:
    if input.ndim != 1 or other.ndim != 1:
        raise RuntimeError(f"1D tensors expected, but got {input.ndim}D and {other.ndim}D tensors")
    if input.dtype is not other.dtype:
        raise RuntimeError(f"dot : expected both vectors to have same dtype, but found "
                           f"{_scalar_name(input)} and {_scalar_name(other)}")
    return matmul(input, other, out=out)


@export("mv")
def mv(input, vec, *, out=None) -> Tensor:
    return matmul(input, vec, out=out)


# ================================ products ===================================================


def _scalar_name(t) -> str:
    return _scalar_type_name(t.dtype)


_vdot = defop("vdot", jnp.vdot, "VdotBackward0", promote="binary")
_outer = defop("outer", jnp.outer, "MulBackward0", promote="binary")


def _addmm_fn(i, a, b, *, beta, alpha, kind):
    if kind == "addbmm":
        prod = jnp.einsum("bij,bjk->ik", a, b)
    else:
        prod = jnp.matmul(a, b)
    prod = prod if alpha == 1 else alpha * prod
    if beta == 0:  # beta=0: input is ignored (nan/inf in it do not propagate), as PyTorch
        return jnp.broadcast_to(prod, jnp.broadcast_shapes(i.shape, prod.shape)).astype(prod.dtype)
    return (i if beta == 1 else beta * i) + prod


_ADD_PRODUCTS = {k: defop(k, _addmm_fn, g, promote="binary")
                 for k, g in [("addmm", "AddmmBackward0"), ("addmv", "AddmvBackward0"),
                              ("addbmm", "AddbmmBackward0"), ("baddbmm", "BaddbmmBackward0")]}


@export("vdot")
def vdot(input, other, *, out=None) -> Tensor:
    """Dot product conjugating the first argument (``VdotBackward0``)."""
    if input.ndim != 1 or other.ndim != 1:
        raise RuntimeError(f"1D tensors expected, but got {input.ndim}D and {other.ndim}D tensors")
    if input.shape != other.shape:
        raise RuntimeError(f"inconsistent tensor size, expected tensor [{input.shape[0]}] and src "
                           f"[{other.shape[0]}] to have the same number of elements, but got "
                           f"{input.shape[0]} and {other.shape[0]} elements respectively")
    return _out(apply(_vdot, input, other), out)


@export("outer", "ger")
def outer(input, vec2, *, out=None) -> Tensor:
    """Outer product of two vectors (PyTorch computes it as a broadcast multiply: ``MulBackward0``).

    >>> import funcgrad
    >>> funcgrad.outer(funcgrad.tensor([1., 2.]), funcgrad.tensor([1., 10.]))
    tensor([[ 1., 10.],
            [ 2., 20.]])
    """
    if input.ndim != 1 or vec2.ndim != 1:
        bad, n = ("self", input.ndim) if input.ndim != 1 else ("vec2", vec2.ndim)
        raise RuntimeError(f"outer: Expected 1-D argument {bad}, but got {n}-D")
    return _out(apply(_outer, input, vec2), out, name="mul")


def _add_product(kind, input, a, b, beta, alpha, out):
    if input.ndim > _PRODUCT_RANKS[kind]:  # (jax would broadcast the product up to input's dims)
        _product_input_error(kind, input, a, b)
    try:
        r = apply(_ADD_PRODUCTS[kind], input, a, b, beta=beta, alpha=alpha, kind=kind)
    except RuntimeError:  # (ATen expands input to the product's shape: expand's error)
        _product_input_error(kind, input, a, b)
        raise
    return _out(r, out, kind)


# the shape of the product an add-product op adds its input to (the shape ATen expands input to)
_PRODUCT_SHAPES = {"addmm": lambda a, b: (a.shape[0], b.shape[1]), "addmv": lambda a, b: (a.shape[0],),
                   "addbmm": lambda a, b: (a.shape[1], b.shape[2]),
                   "baddbmm": lambda a, b: (a.shape[0], a.shape[1], b.shape[2])}
_PRODUCT_RANKS = {"addmm": 2, "addmv": 1, "addbmm": 2, "baddbmm": 3}


def _product_input_error(kind, input, a, b) -> None:
    try:
        _broadcast.expand_size(input.shape, _PRODUCT_SHAPES[kind](a, b), input.type())
    except RuntimeError as e:
        raise e from None


_ADDMM_KEY = (("beta", 1), ("alpha", 1), ("kind", "addmm"))
_linear_kernels: dict = {}  # (op, cast) -> kernel
# (op, *operand dtypes, default dtype) -> (cast, plain kernel); emptied when a kernel goes per-shape
_linear_hits: dict = {}


def _aval(v):
    return v.aval if type(v) is _Array else v  # (a tracer or NumPy array: shape and dtype as is)


def linear_2d(input, weight, bias):
    """``addmm(bias, input, weight.t())`` (``nn.Linear`` on a batch), or ``mm(input, weight.t())``
    when ``bias`` is None, without materialising ``weight.t()``; None when the operands do not
    fit that path (the caller falls back).

    The graph is PyTorch's, ``AddmmBackward0`` (``MmBackward0``) whose ``mat2`` is the
    ``TBackward0`` view ``weight.t()``, but that view is lazy (computed only if something reads
    it) and the kernel contracts ``weight``'s last dimension directly: a transposed copy of the
    weight on every forward cost as much as the matmul itself. The fused backward applies the
    lazy view inside its program, where XLA folds the transpose into the matmuls.
    """
    if _dispatch._amp_hook[0] is not None or weight._viewinfo is not None or _dispatch._dual[0] is not None:
        return None  # (autocast: the general path casts the operands; forward AD: it gives tangents)
    iv, wv = input._value, weight._value
    ia, wa = _aval(iv), _aval(wv)  # shapes and dtypes without the Tensor properties
    if not (len(ia.shape) == 2 and len(wa.shape) == 2 and ia.shape[1] == wa.shape[1]):
        return None
    if bias is None:  # mm: PyTorch does not promote (the general path raises its error)
        if ia.dtype != wa.dtype:
            return None
        op, skey = _mm, ()
        args = (input, weight)
        vals = [iv, wv]
        mask = (input._requires_grad, weight._requires_grad)
        kkey = (op, ia.dtype, wa.dtype)
    else:
        if not isinstance(bias, Tensor):
            return None
        bv = bias._value
        ba = _aval(bv)
        if not (len(ba.shape) == 1 and ba.shape[0] == wa.shape[0] and ba.dtype == ia.dtype == wa.dtype):
            return None  # (mixed dtypes: the caller raises PyTorch's error)
        op, skey = _ADD_PRODUCTS["addmm"], _ADDMM_KEY
        args = (bias, input, weight)
        vals = [bv, iv, wv]
        mask = (bias._requires_grad, input._requires_grad, weight._requires_grad)
        kkey = (op, ba.dtype, ia.dtype, wa.dtype)
    # the cast and kernel by the operands' dtypes (none is 0-dim: result_dtype's answer is theirs,
    # but for integers the default dtype's, in the key too)
    hit = _linear_hits.get(kkey + (_dispatch._dtype._default[0],))
    if hit is None:
        cast = _dispatch.result_dtype(op, args, vals)
        key = (op, cast)
        k = _linear_kernels.get(key)
        if k is None:
            def make(op=op, skey=skey, cast=cast):  # (no operand in the closure: it would stay alive)
                f = op.traced(skey, cast, 2 if op is _mm else 3)
                if op is _mm:
                    return lambda x, w: f(x, w.T)
                return lambda b, x, w: f(b, x, w.T)
            k = _linear_kernels[key] = _cache.kernel(
                make, "linear", swap=(_linear_kernels, key, _linear_hits.clear))
        if type(k) is not _cache.ShapeKernel:
            _linear_hits[kkey + (_dispatch._dtype._default[0],)] = (cast, k)
    else:
        cast, k = hit
    try:
        out = k(*vals)
    except Exception:
        sparse = _dispatch.SPARSE_HOLDS[0]
        if not (_meta.holds(vals) or sparse is not None and sparse(vals)):
            raise
        return None  # (a meta operand: the general path gives its shape, funcgrad/_meta.py; a sparse
        # one: the general path's mm/addmm, funcgrad/_sparse.py)
    if not (_dispatch._state.enabled and True in mask and _dispatch._inexact(out, None)):
        r = Tensor._wrap(out)
        if _dispatch._state.inference:
            r._ver = None  # an inference tensor, as apply makes them
        return r
    if weight._requires_grad:
        wt = _dispatch._record(_t, (weight,), None, (), None, (True,))
    else:
        wt = Tensor._make_view(weight, None, _t, ())
    wt._viewinfo.cg = (None, -1)  # no value yet: computed from the weight when read
    return _dispatch._record(op, args[:-1] + (wt,), out, skey, cast, mask)


@export("addmm")
def addmm(input, mat1, mat2, *, beta=1, alpha=1, out=None) -> Tensor:
    """``beta * input + alpha * (mat1 @ mat2)`` (``AddmmBackward0``, the node of ``nn.Linear``)."""
    check_addmm_dtypes(input, mat1, mat2)
    if mat1.ndim != 2 or mat2.ndim != 2:
        raise RuntimeError(f"mat1 must be a matrix, got {mat1.ndim}-D tensor" if mat1.ndim != 2
                           else f"mat2 must be a matrix, got {mat2.ndim}-D tensor")
    if mat1.shape[1] != mat2.shape[0]:
        raise RuntimeError(f"mat1 and mat2 shapes cannot be multiplied ({mat1.shape[0]}x{mat1.shape[1]} "
                           f"and {mat2.shape[0]}x{mat2.shape[1]})")
    return _add_product("addmm", input, mat1, mat2, beta, alpha, out)


@export("addmv")
def addmv(input, mat, vec, *, beta=1, alpha=1, out=None) -> Tensor:
    """``beta * input + alpha * (mat @ vec)`` (``AddmvBackward0``)."""
    if mat.ndim != 2 or vec.ndim != 1 or input.ndim > 1:
        raise RuntimeError(f"vector + matrix @ vector expected, got {input.ndim}, {mat.ndim}, {vec.ndim}")
    if mat.shape[1] != vec.shape[0] or (input.numel() != mat.shape[0] and input.numel() != 1):
        raise RuntimeError(f"size mismatch, got input ({input.shape[0] if input.ndim else 1}), mat "
                           f"({mat.shape[0]}x{mat.shape[1]}), vec ({vec.shape[0]})")
    if not input.dtype is mat.dtype is vec.dtype:
        raise RuntimeError(f"addmv input tensors must have the same dtype, but got {_scalar_name(input)}, "
                           f"{_scalar_name(mat)}, and {_scalar_name(vec)}")
    return _add_product("addmv", input, mat, vec, beta, alpha, out)


def _check_batches(b1, b2):
    if b1.ndim != 3 or b2.ndim != 3:
        raise RuntimeError("batch1 must be a 3D tensor" if b1.ndim != 3 else "batch2 must be a 3D tensor")
    if b1.shape[0] != b2.shape[0] or b1.shape[2] != b2.shape[1]:
        raise RuntimeError(f"Expected size for first two dimensions of batch2 tensor to be: "
                           f"[{b1.shape[0]}, {b1.shape[2]}] but got: [{b2.shape[0]}, {b2.shape[1]}].")


@export("addbmm")
def addbmm(input, batch1, batch2, *, beta=1, alpha=1, out=None) -> Tensor:
    """``beta * input + alpha * sum_b(batch1[b] @ batch2[b])`` (``AddbmmBackward0``)."""
    _check_batches(batch1, batch2)
    return _add_product("addbmm", input, batch1, batch2, beta, alpha, out)


@export("baddbmm")
def baddbmm(input, batch1, batch2, *, beta=1, alpha=1, out=None) -> Tensor:
    """``beta * input + alpha * (batch1 @ batch2)`` per batch (``BaddbmmBackward0``)."""
    _check_batches(batch1, batch2)
    return _add_product("baddbmm", input, batch1, batch2, beta, alpha, out)


for _k in ("addmm", "addmv", "addbmm", "baddbmm"):
    inplace_method(_k + "_", FUNCTIONS[_k])


# ---- einsum: PyTorch's node depends on how it lowers the equation; mirror the common cases -------
def _einsum_fn(*xs, eq):
    return jnp.einsum(eq, *xs)


_EINSUM = {k: defop(k, _einsum_fn, g, promote="binary")
           for k, g in [("einsum", "ViewBackward0"), ("einsum_sum", "SumBackward1"),
                        ("einsum_permute", "PermuteBackward0"), ("einsum_mul", "MulBackward0")]}


def _einsum_kind(eq: str, n: int) -> str:
    lhs, _, rhs = eq.replace(" ", "").partition("->")
    ins = lhs.split(",")
    if not _:
        labels = [c for c in lhs if c.isalpha()]
        rhs = "".join(sorted(c for c in set(labels) if labels.count(c) == 1))
    out = set(rhs.replace(".", ""))
    used = set("".join(ins).replace(".", ""))
    if n == 1:
        return "einsum_permute" if used <= out else "einsum_sum"
    if n == 2 and used <= out:
        return "einsum_mul"
    return "einsum"


@export("einsum", method=False)
def einsum(equation: str, *operands) -> Tensor:
    """Einstein summation: ``einsum("ij,jk->ik", a, b)`` or ``einsum(eq, [a, b])``.

    >>> import funcgrad
    >>> funcgrad.einsum("ii", funcgrad.eye(3))
    tensor(3.)
    """
    if len(operands) == 1 and isinstance(operands[0], (list, tuple)):
        operands = tuple(operands[0])
    n_eq = len(equation.partition("->")[0].split(","))
    if len(operands) < n_eq:
        raise RuntimeError("einsum(): fewer operands were provided than specified in the equation")
    if len(operands) > n_eq:
        raise RuntimeError("einsum(): more operands were provided than specified in the equation")
    return apply(_EINSUM[_einsum_kind(equation, len(operands))], *operands, eq=equation)


_tensordot = defop("tensordot", lambda a, b, axes: jnp.tensordot(a, b, axes), "ViewBackward0",
                   promote="binary")
_kron = defop("kron", jnp.kron, "UnsafeViewBackward0", promote="binary")


def _tensordot_out(r, o):
    if r.dtype is not o.dtype:
        return (f"tensordot: Expected the output tensor to have dtype {_scalar_type_name(r.dtype)}, but got "
                f"an output tensor with dtype {_scalar_type_name(o.dtype)}")
    return None


@export("tensordot", method=False)
def tensordot(a, b, dims=2, out=None) -> Tensor:
    """Contract ``dims`` trailing dims of ``a`` with leading dims of ``b`` (or explicit lists)."""
    if isinstance(dims, Tensor):
        dims = dims.tolist()
    if isinstance(dims, int):
        if dims < 0:
            raise RuntimeError(f"tensordot expects dims >= 0, but got dims={dims}")
        if isinstance(a, Tensor) and isinstance(b, Tensor) and dims > min(a.ndim, b.ndim):
            raise RuntimeError(f"tensordot expects dims < ndim_a or ndim_b, but got dims={dims}")
        axes = dims
    else:
        da, db = dims
        da = (da,) if isinstance(da, int) else tuple(da)
        db = (db,) if isinstance(db, int) else tuple(db)
        if len(da) != len(db):
            raise RuntimeError("both dimension lists should have same length")
        axes = (tuple(d % max(a.ndim, 1) for d in da), tuple(d % max(b.ndim, 1) for d in db))
    if isinstance(a, Tensor) and isinstance(b, Tensor):
        if a.dtype is not b.dtype:  # (no promotion)
            raise RuntimeError("both inputs should have same dtype")
        # (the dims as PyTorch's tensordot names them: an int n is a's last n, b's first n)
        named = (range(-axes, 0), range(axes)) if isinstance(axes, int) else (da, db)
        for d1, d2 in zip(*named, strict=True):
            s1, s2 = a.shape[_wrap_dim(d1, a.ndim)], b.shape[_wrap_dim(d2, b.ndim)]
            if s1 != s2 and 1 not in (s1, s2):
                raise RuntimeError(f"contracted dimensions need to match, but first has size {s1} in dim "
                                   f"{d1} and second has size {s2} in dim {d2}")
    return _out(apply(_tensordot, a, b, axes=axes), out, refuse_grad=False, check=_tensordot_out)


@export("kron")
def kron(input, other, *, out=None) -> Tensor:
    """Kronecker product (``UnsafeViewBackward0``)."""
    return _out(apply(_kron, input, other), out, name="mul")


# ================================ triangles and diagonals ======================================
_tril = defop("tril", lambda x, k: jnp.tril(x, k), "TrilBackward0", linear=True,
              host=lambda x, k: _host.host_exact(x) or np.tril(x, k))
_triu = defop("triu", lambda x, k: jnp.triu(x, k), "TriuBackward0", linear=True,
              host=lambda x, k: _host.host_exact(x) or np.triu(x, k))


@export("tril")
def tril(input, diagonal=0, *, out=None) -> Tensor:
    """Lower triangle of the last two dims (``diagonal`` shifts it).

    >>> import funcgrad
    >>> funcgrad.ones(2, 2).tril()
    tensor([[1., 0.],
            [1., 1.]])
    """
    if input.ndim < 2:
        raise RuntimeError("tril: input tensor must have at least 2 dimensions")
    return _out(apply(_tril, input, k=int(diagonal)), out, check=same_dtype)


@export("triu")
def triu(input, diagonal=0, *, out=None) -> Tensor:
    """Upper triangle of the last two dims."""
    if input.ndim < 2:
        raise RuntimeError("triu: input tensor must have at least 2 dimensions")
    return _out(apply(_triu, input, k=int(diagonal)), out, check=same_dtype)


inplace_method("tril_", tril)
inplace_method("triu_", triu)

_diagonal = defop("diagonal", lambda x, offset, d1, d2: jnp.diagonal(x, offset, d1, d2),
                  "DiagonalBackward0", linear=True, view=True)
_diag_copy = defop("diag_2d", lambda x, k: jnp.diagonal(x, k), "DiagonalBackward0_copy", linear=True)


def _diag_embed_fn(x, offset, d1, d2):
    n = x.shape[-1]
    m = n + abs(offset)
    rows = jnp.arange(n) + max(-offset, 0)
    cols = jnp.arange(n) + max(offset, 0)
    out = jnp.zeros(x.shape[:-1] + (m, m), x.dtype).at[..., rows, cols].set(x)
    return jnp.moveaxis(out, (-2, -1), (d1, d2))


_diag_embed = defop("diag_embed", _diag_embed_fn, "DiagEmbedBackward0", linear=True)
_trace = defop("trace", lambda x: jnp.trace(x), "TraceBackward0", linear=True)


@export("diagonal")
def diagonal(input, offset=0, dim1=0, dim2=1) -> Tensor:
    """A view of the diagonal w.r.t. ``dim1``, ``dim2``, appended as the last dim."""
    n = input.ndim
    d1, d2 = _wrap_dim(dim1, n), _wrap_dim(dim2, n)
    if d1 == d2:
        raise RuntimeError(f"diagonal dimensions cannot be identical {dim1}, {dim2}")
    return apply(_diagonal, input, offset=int(offset), d1=d1, d2=d2)


@export("diag_embed")
def diag_embed(input, offset=0, dim1=-2, dim2=-1) -> Tensor:
    """Matrices (in ``dim1``, ``dim2``) whose ``offset`` diagonals are the last dim of input."""
    n = input.ndim + 1
    d1, d2 = _wrap_dim(dim1, n), _wrap_dim(dim2, n)
    if d1 == d2:
        raise RuntimeError(f"diagonal dimensions cannot be identical {dim1}, {dim2}")
    return apply(_diag_embed, input, offset=int(offset), d1=d1, d2=d2)


@export("diag")
def diag(input, diagonal=0, *, out=None) -> Tensor:
    """1-D input: a square matrix with it on a diagonal; 2-D input: a diagonal as a copy."""
    if input.ndim == 1:
        return _out(diag_embed(input, diagonal, 0, 1), out, refuse_grad=False, check=same_dtype)
    if input.ndim != 2:
        raise RuntimeError(f"diag(): Supports 1D or 2D tensors. Got {input.ndim}D")
    return _out(apply(_diag_copy, input, k=int(diagonal)), out, refuse_grad=False, check=same_dtype)


@export("trace")
def trace(input) -> Tensor:
    """Sum of the main diagonal of a matrix (``TraceBackward0``)."""
    if input.ndim != 2:
        raise RuntimeError(f"trace: expected a matrix, but got tensor with dim {input.ndim}")
    return apply(_trace, input)


# ================================ cross ========================================================
_cross = defop("cross", lambda a, b, dim: jnp.cross(a, b, axis=dim), "LinalgCrossBackward0",
               promote="binary")


def _cross_impl(input, other, dim, out):
    if input.ndim != other.ndim:
        raise RuntimeError("linalg.cross: inputs must have the same number of dimensions.")
    shape = _broadcast.infer_size(input.shape, other.shape)
    d = _wrap_dim(dim, len(shape))
    if input.shape[d] != 3 or other.shape[d] != 3:
        raise RuntimeError(f"linalg.cross: inputs dimension {dim} must have length 3. Got "
                           f"{input.shape[d]} and {other.shape[d]}")
    return _out(apply(_cross, input, other, dim=d), out, "linalg_cross", same_dtype)


@export("cross")
def cross(input, other, dim=None, *, out=None) -> Tensor:
    """Cross product of 3-vectors along ``dim`` (default: the first dim of size 3, deprecated)."""
    if dim is None:
        import warnings
        warnings.warn("Using torch.cross without specifying the dim arg is deprecated.\nPlease either "
                      "pass the dim explicitly or simply use torch.linalg.cross.\nThe default value of "
                      "dim will change to agree with that of linalg.cross in a future release.",
                      UserWarning, stacklevel=2)
        dim = next((i for i, s in enumerate(input.shape) if s == 3), -1)
    return _cross_impl(input, other, dim, out)
