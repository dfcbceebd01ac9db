"""Op table — complex numbers: ``complex``, ``polar``, ``view_as_real``, ``view_as_complex``,
``conj``/``conj_physical``, ``resolve_conj``/``resolve_neg``, ``is_conj``/``is_neg``, ``angle``.

PyTorch conjugates and negates lazily (a tensor's conj/neg bit, resolved by the next op) and
``view_as_real``/``view_as_complex`` alias their input. funcgrad's values are XLA arrays with no
such bits and no reinterpreting views: ``conj`` computes the conjugate (``is_conj()`` is always
False, ``resolve_conj`` returns its input), and the two ``view_as_*`` give new tensors with
PyTorch's values, shapes, dtypes, checks and node names whose writes do not reach the source
(README "What differs"). Gradients are jax's (``jax.vjp`` of each function); through real
inputs and outputs they are PyTorch's.
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp

from .. import _dtype
from .._tensor import _scalar_type_name
from ._registry import Tensor, apply, defop, export, inplace_method, noargs_method
from ._registry import write_out as _out


def _complex_fn(re, im):
    re, im = jnp.broadcast_arrays(re, im)
    return jax.lax.complex(re, im)


def _polar_fn(r, theta):
    r, theta = jnp.broadcast_arrays(r, theta)
    return jax.lax.complex(r * jnp.cos(theta), r * jnp.sin(theta))


def _view_as_real_fn(z):
    return jnp.stack([jnp.real(z), jnp.imag(z)], axis=-1)


def _view_as_complex_fn(x):
    return jax.lax.complex(x[..., 0], x[..., 1])


def _angle_real(x):
    # PyTorch's angle of a real number: nan stays nan, pi below zero, else 0 (-0.0 too)
    return jnp.where(jnp.isnan(x), x, jnp.where(x < 0, jnp.asarray(math.pi, x.dtype), jnp.zeros((), x.dtype)))


def _zero_jvp(primals, tangents, out):
    return jnp.zeros_like(out)


def _zero_vjp(primals, g, *, grad_mode):
    # PyTorch's angle_backward of a real input: zeros whatever the gradient (nan included)
    return (jnp.zeros_like(primals[0]),)


def _polar_jvp(primals, tangents, out):
    # PyTorch's polar_backward: d/d(abs) is sgn(result) (so -e^{i angle} for a negative abs, 0 at
    # abs 0), d/d(angle) is result * 1j
    t_abs, t_angle = (jnp.broadcast_to(t, out.shape) for t in tangents)
    sq = jnp.real(out) ** 2 + jnp.imag(out) ** 2  # (sgn as out / |out|: jnp.sign's derivative is 0)
    sgn = jnp.where(sq == 0, 0, out / jnp.sqrt(jnp.where(sq == 0, 1, sq)))
    return sgn * t_abs + out * 1j * t_angle


def _angle_complex_jvp(primals, tangents, out):
    # PyTorch's angle_backward of a complex z: Im(dz / z), and 0 at z == 0 (jax's atan2 gives nan)
    z, (t,) = primals[0], tangents
    sq = jnp.real(z) ** 2 + jnp.imag(z) ** 2
    return jnp.imag(t * jnp.conj(z)) / jnp.where(sq == 0, 1, sq)


def _angle_complex_vjp(primals, g, *, grad_mode):
    # PyTorch's formula itself, where(z == 0, 0, g * z / |z|^2 * 1j), so that its derivative, a
    # double backward, is PyTorch's too: nan at z == 0 (the 0/0 of the branch where() leaves out)
    (z,) = primals
    sq = jnp.real(z) ** 2 + jnp.imag(z) ** 2
    return (jnp.where(z == 0, jnp.zeros((), z.dtype), g * z / sq * 1j),)


_complex = defop("complex", _complex_fn, "ComplexBackward0")
_polar = defop("polar", _polar_fn, "PolarBackward0", jvp=_polar_jvp)
_view_as_real = defop("view_as_real", _view_as_real_fn, "ViewAsRealBackward0", linear=True)
_view_as_complex = defop("view_as_complex", _view_as_complex_fn, "ViewAsComplexBackward0", linear=True)
_conj = defop("conj", jnp.conj, "ConjBackward0", linear=True)
_conj_physical = defop("conj_physical", jnp.conj, "ConjPhysicalBackward0", linear=True)
_angle = defop("angle", _angle_real, "AngleBackward0", promote="float", jvp=_zero_jvp, vjp=_zero_vjp)
_angle_complex = defop("angle_complex", jnp.angle, "AngleBackward0", jvp=_angle_complex_jvp,
                       vjp=_angle_complex_vjp)


def _check_parts(a: Tensor, b: Tensor) -> None:
    """at::complex / at::polar's checks: both floating (Half, Float, Double), of one dtype."""
    if a.dtype not in (_dtype.float16, _dtype.float32, _dtype.float64) or \
            b.dtype not in (_dtype.float16, _dtype.float32, _dtype.float64):
        raise RuntimeError(f"Expected both inputs to be Half, Float or Double tensors but got "
                           f"{_scalar_type_name(a.dtype)} and {_scalar_type_name(b.dtype)}")
    if a.dtype is not b.dtype:
        raise RuntimeError(f"Expected object of scalar type {_scalar_type_name(a.dtype)} but got scalar type "
                           f"{_scalar_type_name(b.dtype)} for second argument")
    if a.dtype is _dtype.float16:
        raise NotImplementedError("funcgrad has no complex32 (ComplexHalf) dtype: make the parts float32")


@export("complex", method=False, tensors=("real", "imag"))
def complex(real: Tensor, imag: Tensor, *, out=None) -> Tensor:  # noqa: A001  (torch.complex)
    """The complex tensor ``real + imag * 1j`` (both parts float32 or both float64; broadcast).

    >>> import funcgrad
    >>> funcgrad.complex(funcgrad.tensor([1.0, 2.0]), funcgrad.tensor([3.0, -4.0]))
    tensor([1.+3.j, 2.-4.j])
    """
    _check_parts(real, imag)
    return _out(apply(_complex, real, imag), out)


@export("polar", method=False, tensors=("abs", "angle"))
def polar(abs: Tensor, angle: Tensor, *, out=None) -> Tensor:  # noqa: A002
    """The complex tensor ``abs * (cos(angle) + sin(angle) * 1j)``.

    >>> import funcgrad
    >>> funcgrad.polar(funcgrad.tensor([2.0]), funcgrad.tensor([0.0]))
    tensor([2.+0.j])
    """
    _check_parts(abs, angle)
    return _out(apply(_polar, abs, angle), out)


@export("view_as_real", method=False, tensors=("input",))
def view_as_real(input: Tensor) -> Tensor:
    """A complex tensor's real and imaginary parts along a new last dim of size 2 (a new tensor
    here, not a view: writes to it do not reach ``input``).

    >>> import funcgrad
    >>> funcgrad.view_as_real(funcgrad.tensor([1 + 2j, 3 - 4j]))
    tensor([[ 1.,  2.],
            [ 3., -4.]])
    """
    if not input.dtype.is_complex:
        raise RuntimeError("view_as_real is only supported for complex tensors")
    return apply(_view_as_real, input)


@export("view_as_complex", method=False, tensors=("input",))
def view_as_complex(input: Tensor) -> Tensor:
    """A float tensor whose last dim of size 2 holds (real, imaginary) parts, as a complex tensor
    (PyTorch's checks of the layout it would alias; a new tensor here, not a view).

    >>> import funcgrad
    >>> funcgrad.view_as_complex(funcgrad.tensor([[1.0, 2.0], [3.0, -4.0]]))
    tensor([1.+2.j, 3.-4.j])
    """
    if input.dtype not in (_dtype.float16, _dtype.float32, _dtype.float64):
        raise RuntimeError(f"view_as_complex is only supported for half, float and double tensors, but got a "
                           f"tensor of scalar type: {_scalar_type_name(input.dtype)}")
    if input.ndim == 0:
        raise RuntimeError("Input tensor must have one or more dimensions")
    if input.shape[-1] != 2:
        raise RuntimeError("Tensor must have a last dimension of size 2")
    st = input.stride()
    if st[-1] != 1:
        raise RuntimeError("Tensor must have a last dimension with stride 1")
    if any(s % 2 for s in st[:-1]):
        raise RuntimeError("Tensor must have a stride divisible by 2 for all but last dimension")
    if input.storage_offset() % 2:
        raise RuntimeError("Tensor must have a storage_offset divisible by 2")
    if input.dtype is _dtype.float16:
        raise NotImplementedError("funcgrad has no complex32 (ComplexHalf) dtype: view a float32 tensor")
    return apply(_view_as_complex, input)


@export("conj")
def conj(input: Tensor) -> Tensor:
    """The complex conjugate (``ConjBackward0``); a real tensor is returned as it is. Computed at
    once: funcgrad has no conjugate bit, so ``is_conj()`` stays False.

    >>> import funcgrad
    >>> funcgrad.tensor([1 + 2j]).conj()
    tensor([1.-2.j])
    """
    return apply(_conj, input) if input.dtype.is_complex else input


@export("conj_physical")
def conj_physical(input: Tensor, *, out=None) -> Tensor:
    """The complex conjugate, computed (``ConjPhysicalBackward0``); a real tensor as it is."""
    if not input.dtype.is_complex:
        return input if out is None else _out(input.clone(), out)
    return _out(apply(_conj_physical, input), out)


def _conj_physical_(self: Tensor) -> Tensor:
    return apply(_conj_physical, self) if self.dtype.is_complex else self


inplace_method("conj_physical_", _conj_physical_)


@export("conj_physical_", method=False, tensors=("input",))
def conj_physical_(input: Tensor) -> Tensor:
    """``input.conj_physical_()`` (``torch.conj_physical_``)."""
    return input.conj_physical_()


@export("resolve_conj", noargs=noargs_method())
def resolve_conj(input: Tensor) -> Tensor:
    """``input`` itself: funcgrad's conjugates are computed, never pending (no conjugate bit)."""
    return input


@export("resolve_neg", noargs=noargs_method())
def resolve_neg(input: Tensor) -> Tensor:
    """``input`` itself: funcgrad has no pending negation (no negative bit)."""
    return input


@export("is_conj", tensors=("input",))
def is_conj(input: Tensor) -> bool:
    """False: funcgrad's tensors never carry PyTorch's lazy conjugate bit."""
    return False


@export("is_neg", tensors=("input",))
def is_neg(input: Tensor) -> bool:
    """False: funcgrad's tensors never carry PyTorch's lazy negative bit."""
    return False


@export("angle")
def angle(input: Tensor, *, out=None) -> Tensor:
    """The argument of each element, in radians: of a complex number ``atan2(imag, real)``; of a
    real one 0, or pi below zero (nan stays nan), in a floating dtype, with PyTorch's zero gradient.

    >>> import funcgrad
    >>> funcgrad.angle(funcgrad.tensor([1.0, -2.0, 0.0]))
    tensor([0.0000, 3.1416, 0.0000])
    """
    return _out(apply(_angle_complex if input.dtype.is_complex else _angle, input), out)
