"""``nn.init``: in-place initialisers (PyTorch's names, gains and fan rules).

Each writes new values into the tensor's storage under ``no_grad`` (so a Parameter keeps its
identity), drawing from the global generator (or ``generator=``) exactly as PyTorch's
``torch.nn.init`` does: the same calls (``uniform_``, ``normal_``, ``randperm``...) in the same
order, so ``manual_seed(0); nn.Linear(784, 256)`` holds PyTorch's weights bit for bit.
``trunc_normal_`` and ``orthogonal_`` draw the same numbers but then use XLA's ``erfinv``/QR,
which may differ from PyTorch's in the last bits.
"""

from __future__ import annotations

import math
import warnings

import jax
import jax.numpy as jnp
import numpy as np

from .._errors import warn_at_user
from .._random import _sample
from .._tensor import Tensor
from ..autograd import grad_mode


@jax.jit
def _orthogonal(flat, gain):
    rows, cols = flat.shape
    if rows < cols:
        flat = flat.T
    q, r = jnp.linalg.qr(flat)
    q = q * jnp.sign(jnp.diagonal(r))
    if rows < cols:
        q = q.T
    return (gain * q).astype(flat.dtype)


def _write(tensor: Tensor, value) -> Tensor:
    """Store ``value`` in ``tensor`` in place, without autograd (PyTorch's ``no_grad`` init)."""
    with grad_mode.no_grad():
        tensor.copy_(Tensor._wrap(value))
    return tensor


def _spec(tensor):
    return tuple(tensor.shape), np.dtype(tensor.dtype.np)


# ---- gains and fans -----------------------------------------------------------------------------
def calculate_gain(nonlinearity: str, param: float | None = None) -> float:
    """The recommended gain for a nonlinearity (PyTorch's table).

    >>> from funcgrad import nn
    >>> nn.init.calculate_gain('relu')
    1.4142135623730951
    """
    linear_fns = ["linear", "conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d",
                  "conv_transpose3d"]
    if nonlinearity in linear_fns or nonlinearity == "sigmoid":
        return 1
    if nonlinearity == "tanh":
        return 5.0 / 3
    if nonlinearity == "relu":
        return math.sqrt(2.0)
    if nonlinearity == "leaky_relu":
        if param is None:
            negative_slope = 0.01
        elif not isinstance(param, bool) and isinstance(param, (int, float)):
            negative_slope = param
        else:
            raise ValueError(f"negative_slope {param} not a valid number")
        return math.sqrt(2.0 / (1 + negative_slope ** 2))
    if nonlinearity == "selu":
        return 3.0 / 4
    raise ValueError(f"Unsupported nonlinearity {nonlinearity}")


def _calculate_fan_in_and_fan_out(tensor: Tensor) -> tuple[int, int]:
    dims = tensor.dim()
    if dims < 2:
        raise ValueError("Fan in and fan out can not be computed for tensor with fewer than 2 dimensions")
    receptive = math.prod(tensor.shape[2:]) if dims > 2 else 1
    return tensor.shape[1] * receptive, tensor.shape[0] * receptive


def _calculate_correct_fan(tensor: Tensor, mode: str) -> int:
    mode = mode.lower()
    if mode not in ("fan_in", "fan_out"):
        raise ValueError(f"Mode {mode} not supported, please use one of fan_in, fan_out")
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    return fan_in if mode == "fan_in" else fan_out


# ---- initialisers ---------------------------------------------------------------------------------
def uniform_(tensor: Tensor, a: float = 0.0, b: float = 1.0, generator=None) -> Tensor:
    """Fill with U(a, b).

    >>> import funcgrad
    >>> w = funcgrad.empty(3, 5)
    >>> bool(((funcgrad.nn.init.uniform_(w) >= 0) & (w < 1)).all())
    True
    """
    with grad_mode.no_grad():
        return tensor.uniform_(a, b, generator=generator)


def normal_(tensor: Tensor, mean: float = 0.0, std: float = 1.0, generator=None) -> Tensor:
    """Fill with N(mean, std²)."""
    with grad_mode.no_grad():
        return tensor.normal_(mean, std, generator=generator)


def trunc_normal_(tensor: Tensor, mean: float = 0.0, std: float = 1.0, a: float = -2.0, b: float = 2.0,
                  generator=None) -> Tensor:
    """Fill with N(mean, std²) truncated to [a, b]."""
    if (mean < a - 2 * std) or (mean > b + 2 * std):
        warnings.warn("mean is more than 2 std from [a, b] in nn.init.trunc_normal_. The distribution "
                      "of values may be incorrect.", stacklevel=2)
    norm_cdf = lambda x: (1.0 + math.erf(x / math.sqrt(2.0))) / 2.0  # noqa: E731
    lo, hi = norm_cdf((a - mean) / std), norm_cdf((b - mean) / std)
    with grad_mode.no_grad():  # PyTorch's steps: uniform, erfinv, scale, shift, clamp
        tensor.uniform_(2 * lo - 1, 2 * hi - 1, generator=generator)
        if tensor.is_meta:  # (no data: the steps after the draw change nothing)
            return tensor
        v = jax.scipy.special.erfinv(tensor._value) * (std * math.sqrt(2.0)) + mean
        return _write(tensor, jnp.clip(v, a, b).astype(tensor._value.dtype))


def constant_(tensor: Tensor, val: float) -> Tensor:
    """Fill with ``val``."""
    with grad_mode.no_grad():
        return tensor.fill_(val)


def zeros_(tensor: Tensor) -> Tensor:
    with grad_mode.no_grad():
        return tensor.zero_()


def ones_(tensor: Tensor) -> Tensor:
    return constant_(tensor, 1.0)


def eye_(tensor: Tensor) -> Tensor:
    """The identity matrix (2-D tensors only)."""
    if tensor.ndimension() != 2:
        raise ValueError("Only tensors with 2 dimensions are supported")
    shape, dt = _spec(tensor)
    return _write(tensor, jnp.eye(*shape, dtype=dt))


def dirac_(tensor: Tensor, groups: int = 1) -> Tensor:
    """The Dirac delta: a convolution with this weight preserves its input's channels."""
    dims = tensor.dim()
    if dims not in (3, 4, 5):
        raise ValueError("Only tensors with 3, 4, or 5 dimensions are supported")
    sizes = tuple(tensor.shape)
    if sizes[0] % groups != 0:
        raise ValueError("dim 0 must be divisible by groups")
    out_per = sizes[0] // groups
    n = min(out_per, sizes[1])
    w = np.zeros(sizes, np.dtype(tensor.dtype.np))
    centre = tuple(s // 2 for s in sizes[2:])
    for g in range(groups):
        for d in range(n):
            w[(g * out_per + d, d) + centre] = 1
    return _write(tensor, jnp.asarray(w))


def xavier_uniform_(tensor: Tensor, gain: float = 1.0, generator=None) -> Tensor:
    """Glorot uniform: U(-a, a) with ``a = gain * sqrt(6 / (fan_in + fan_out))``."""
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    a = math.sqrt(3.0) * gain * math.sqrt(2.0 / float(fan_in + fan_out))
    return uniform_(tensor, -a, a, generator)


def xavier_normal_(tensor: Tensor, gain: float = 1.0, generator=None) -> Tensor:
    """Glorot normal: N(0, std²) with ``std = gain * sqrt(2 / (fan_in + fan_out))``."""
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    return normal_(tensor, 0.0, gain * math.sqrt(2.0 / float(fan_in + fan_out)), generator)


def kaiming_uniform_(tensor: Tensor, a: float = 0, mode: str = "fan_in", nonlinearity: str = "leaky_relu",
                     generator=None) -> Tensor:
    """He uniform: U(-bound, bound), ``bound = gain * sqrt(3 / fan)`` (the default of Linear/Conv
    with ``a=sqrt(5)``)."""
    if 0 in tensor.shape:
        warnings.warn("Initializing zero-element tensors is a no-op", stacklevel=2)
        return tensor
    fan = _calculate_correct_fan(tensor, mode)
    bound = math.sqrt(3.0) * calculate_gain(nonlinearity, a) / math.sqrt(fan)
    return uniform_(tensor, -bound, bound, generator)


def kaiming_normal_(tensor: Tensor, a: float = 0, mode: str = "fan_in", nonlinearity: str = "leaky_relu",
                    generator=None) -> Tensor:
    """He normal: N(0, std²), ``std = gain / sqrt(fan)``."""
    if 0 in tensor.shape:
        warnings.warn("Initializing zero-element tensors is a no-op", stacklevel=2)
        return tensor
    fan = _calculate_correct_fan(tensor, mode)
    return normal_(tensor, 0.0, calculate_gain(nonlinearity, a) / math.sqrt(fan), generator)


def orthogonal_(tensor: Tensor, gain: float = 1.0, generator=None) -> Tensor:
    """A (semi-)orthogonal matrix (QR of a Gaussian matrix), trailing dims flattened."""
    if tensor.ndimension() < 2:
        raise ValueError("Only tensors with 2 or more dimensions are supported")
    if tensor.numel() == 0:
        return tensor
    rows = tensor.shape[0]
    cols = tensor.numel() // rows
    if tensor.is_meta:  # (PyTorch draws its Gaussian matrix on the meta device: nothing drawn)
        return tensor
    flat = _sample.normal(generator, (rows, cols), np.dtype(tensor.dtype.np))
    return _write(tensor, _orthogonal(flat, float(gain)).reshape(tuple(tensor.shape)))


def sparse_(tensor: Tensor, sparsity: float, std: float = 0.01, generator=None) -> Tensor:
    """Columns with a ``sparsity`` fraction of zeros, the rest N(0, std²)."""
    if tensor.ndimension() != 2:
        raise ValueError("Only tensors with 2 dimensions are supported")
    rows, cols = tensor.shape
    nz = int(math.ceil(sparsity * rows))
    normal_(tensor, 0, std, generator)
    mask = np.ones((rows, cols), bool)
    for c in range(cols):  # PyTorch draws these from the global generator, not `generator`
        mask[_sample.randperm(None, rows)[:nz], c] = False
    if tensor.is_meta:  # (PyTorch's CPU randperms drawn as above; the write changes nothing)
        return tensor
    return _write(tensor, jnp.where(jnp.asarray(mask), tensor._value, 0))


# deprecated names without the trailing underscore, as torch.nn.init still has (its _make_deprecate:
# each warns PyTorch's FutureWarning, then is the in-place function)
def _make_deprecate(meth):
    new_name = meth.__name__
    old_name = new_name[:-1]

    def deprecated_init(*args, **kwargs):
        warn_at_user(f"`nn.init.{old_name}` is now deprecated in favor of `nn.init.{new_name}`.",
                     FutureWarning)
        return meth(*args, **kwargs)

    deprecated_init.__doc__ = f"""{old_name}(...): deprecated, :func:`~funcgrad.nn.init.{new_name}`."""
    deprecated_init.__name__ = deprecated_init.__qualname__ = old_name
    return deprecated_init


uniform = _make_deprecate(uniform_)
normal = _make_deprecate(normal_)
constant = _make_deprecate(constant_)
eye = _make_deprecate(eye_)
dirac = _make_deprecate(dirac_)
xavier_uniform = _make_deprecate(xavier_uniform_)
xavier_normal = _make_deprecate(xavier_normal_)
kaiming_uniform = _make_deprecate(kaiming_uniform_)
kaiming_normal = _make_deprecate(kaiming_normal_)
orthogonal = _make_deprecate(orthogonal_)
sparse = _make_deprecate(sparse_)

__all__ = ["calculate_gain", "uniform_", "normal_", "trunc_normal_", "constant_", "zeros_", "ones_",
           "eye_", "dirac_", "xavier_uniform_", "xavier_normal_", "kaiming_uniform_", "kaiming_normal_",
           "orthogonal_", "sparse_"]
