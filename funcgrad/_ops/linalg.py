"""Op table — linear algebra: matmul and its PyTorch-named special cases."""

from __future__ import annotations

import jax.numpy as jnp

from ._registry import Tensor, apply, defop, export

_mm = defop("mm", jnp.matmul, "MmBackward0", promote="binary")
_dot = defop("dot", jnp.dot, "DotBackward0", promote="binary")
_mv = defop("mv", jnp.matmul, "MvBackward0", promote="binary")
_bmm = defop("bmm", jnp.matmul, "BmmBackward0", promote="binary")
_matmul = defop("matmul", jnp.matmul, "UnsafeViewBackward0", promote="binary")
_vm = defop("vm", jnp.matmul, "SqueezeBackward4", promote="binary")  # 1-D @ 2-D


def _shape_str(t):
    return "x".join(map(str, t.shape))


@export("matmul", "__matmul__")
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
    ka = input.shape[-1]
    kb = other.shape[0] if b == 1 else other.shape[-2]
    if ka != kb:
        if a == 1 and b == 1:
            raise RuntimeError(f"inconsistent tensor size, expected tensor [{ka}] and src [{kb}] to have "
                               f"the same number of elements, but got {ka} and {kb} elements respectively")
        if a == 2 and b == 1:
            raise RuntimeError(f"size mismatch, got input ({input.shape[0]}), mat ({_shape_str(input)}), "
                               f"vec ({kb})")
        raise RuntimeError(f"mat1 and mat2 shapes cannot be multiplied ({_shape_str(input.reshape(-1, ka))} "
                           f"and {kb}x{other.shape[-1] if b > 1 else 1})")
    op = {(2, 2): _mm, (1, 1): _dot, (2, 1): _mv, (1, 2): _vm}.get((a, b), _matmul)
    r = apply(op, input, other)
    return r if out is None else out.copy_(r)


@export("__rmatmul__", function=False)
def _rmatmul(self, other):
    return matmul(other, self)


@export("mm")
def mm(input, mat2, *, out=None) -> Tensor:
    if input.ndim != 2 or mat2.ndim != 2:
        raise RuntimeError(f"self must be a matrix" if input.ndim != 2 else "mat2 must be a matrix")
    return matmul(input, mat2, out=out)


@export("bmm")
def bmm(input, mat2, *, out=None) -> Tensor:
    if input.ndim != 3 or mat2.ndim != 3:
        raise RuntimeError("batch1 must be a 3D tensor" if input.ndim != 3 else "batch2 must be a 3D tensor")
    if input.shape[0] != mat2.shape[0] or input.shape[2] != mat2.shape[1]:
        raise RuntimeError(f"Expected size for first two dimensions of batch2 tensor to be: "
                           f"[{input.shape[0]}, {input.shape[2]}] but got: [{mat2.shape[0]}, {mat2.shape[1]}].")
    r = apply(_bmm, input, mat2)
    return r if out is None else out.copy_(r)


@export("dot")
def dot(input, other, *, out=None) -> Tensor:
    if input.ndim != 1 or other.ndim != 1:
        raise RuntimeError(f"1D tensors expected, but got {input.ndim}D and {other.ndim}D tensors")
    return matmul(input, other, out=out)


@export("mv")
def mv(input, vec, *, out=None) -> Tensor:
    return matmul(input, vec, out=out)
