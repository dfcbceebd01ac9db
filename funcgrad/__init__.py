"""funcgrad: PyTorch's autograd semantics, computed by JAX.

``import funcgrad as torch`` gives ``Tensor``, ``requires_grad``, ``backward()``, ``no_grad`` and
the op library, with every op a jitted XLA kernel and every derivative a jitted ``jax.vjp``.
"""

from __future__ import annotations

import jax as _jax

# PyTorch has int64/float64; JAX needs x64 mode for them. The *default* dtypes stay PyTorch's
# (float32 for floats), applied by funcgrad's factories and type promotion.
_jax.config.update("jax_enable_x64", True)

from . import _ops  # noqa: E402  (installs Tensor methods)
from . import autograd as autograd  # noqa: E402
from ._device import cuda_device_count as _cuda_device_count  # noqa: E402
from ._device import cuda_is_available as _cuda_is_available  # noqa: E402
from ._device import device as device  # noqa: E402
from ._dtype import bfloat16 as bfloat16  # noqa: E402
from ._dtype import bool_ as bool  # noqa: E402,A001
from ._dtype import complex64 as complex64, complex128 as complex128  # noqa: E402
from ._dtype import dtype as dtype  # noqa: E402
from ._dtype import float16 as float16, float32 as float32, float64 as float64  # noqa: E402
from ._dtype import get_default_dtype as get_default_dtype  # noqa: E402
from ._dtype import int8 as int8, int16 as int16, int32 as int32, int64 as int64  # noqa: E402
from ._dtype import set_default_dtype as set_default_dtype, uint8 as uint8  # noqa: E402
from ._factories import (arange as arange, as_tensor as as_tensor, asarray as asarray,  # noqa: E402
                         bernoulli as bernoulli, empty as empty, empty_like as empty_like, eye as eye,
                         from_jax as from_jax, from_numpy as from_numpy, full as full,
                         full_like as full_like, linspace as linspace, logspace as logspace,
                         multinomial as multinomial, normal as normal, ones as ones,
                         ones_like as ones_like, rand as rand, rand_like as rand_like, randint as randint,
                         randint_like as randint_like, randn as randn, randn_like as randn_like,
                         randperm as randperm, tensor as tensor, zeros as zeros, zeros_like as zeros_like)
from ._random import Generator as Generator  # noqa: E402
from ._random import default_generator as default_generator  # noqa: E402
from ._random import get_rng_state as get_rng_state, initial_seed as initial_seed  # noqa: E402
from ._random import manual_seed as manual_seed, seed as seed  # noqa: E402
from ._random import set_rng_state as set_rng_state  # noqa: E402
from ._tensor import Size as Size, Tensor as Tensor  # noqa: E402
from ._tensor_str import get_printoptions as get_printoptions  # noqa: E402
from ._tensor_str import set_printoptions as set_printoptions  # noqa: E402
from .autograd.grad_mode import enable_grad as enable_grad  # noqa: E402
from .autograd.grad_mode import inference_mode as inference_mode  # noqa: E402
from .autograd.grad_mode import is_grad_enabled as is_grad_enabled  # noqa: E402
from .autograd.grad_mode import is_inference_mode_enabled as is_inference_mode_enabled  # noqa: E402
from .autograd.grad_mode import no_grad as no_grad  # noqa: E402
from .autograd.grad_mode import set_grad_enabled as set_grad_enabled  # noqa: E402

# ---- the op library (generated from the op table; see funcgrad/_ops) ----------------------------
from ._ops.linalg import bmm as bmm, dot as dot, matmul as matmul, mm as mm, mv as mv  # noqa: E402
from ._ops.pointwise import (abs as abs, absolute as absolute, add as add, bitwise_and as bitwise_and,  # noqa: E402,A004
                             bitwise_not as bitwise_not, bitwise_or as bitwise_or,
                             bitwise_xor as bitwise_xor, clamp as clamp, cos as cos, div as div,
                             eq as eq, exp as exp, float_power as float_power,
                             floor_divide as floor_divide, ge as ge, gt as gt, le as le, log as log,
                             lt as lt, maximum as maximum, minimum as minimum, mul as mul, ne as ne,
                             neg as neg, negative as negative, pow as pow, relu as relu,
                             remainder as remainder, rsub as rsub, sigmoid as sigmoid, sin as sin,
                             sqrt as sqrt, sub as sub, tanh as tanh, where as where)
from ._ops.reduce import (amax as amax, amin as amin, argmax as argmax, argmin as argmin,  # noqa: E402
                          max as max, mean as mean, min as min, sum as sum)
from ._ops.shape import (broadcast_to as broadcast_to, cat as cat, clone as clone,  # noqa: E402
                         flatten as flatten, nonzero as nonzero, permute as permute,
                         reshape as reshape, squeeze as squeeze, stack as stack, t as t,
                         transpose as transpose, unflatten as unflatten, unsqueeze as unsqueeze)

clip = clamp
concat = concatenate = cat
divide = true_divide = div
multiply = mul
subtract = sub
swapaxes = swapdims = transpose
greater, greater_equal, less, less_equal, not_equal = gt, ge, lt, le, ne

float = float32  # noqa: A001  (torch.float)
double = float64
half = float16
long = int64
int = int32  # noqa: A001
short = int16
cfloat = complex64
cdouble = complex128


class cuda:  # noqa: N801  (torch.cuda namespace)
    """``funcgrad.cuda.is_available()`` / ``device_count()``: JAX's GPU platform."""

    is_available = staticmethod(_cuda_is_available)
    device_count = staticmethod(_cuda_device_count)

    @staticmethod
    def manual_seed(seed_: int) -> None:
        manual_seed(seed_)

    manual_seed_all = manual_seed

    @staticmethod
    def synchronize(device_=None) -> None:
        (_jax.device_put(0.0) + 0).block_until_ready()


def is_tensor(obj) -> bool:
    """True if ``obj`` is a funcgrad Tensor."""
    return isinstance(obj, Tensor)


def numel(input: Tensor) -> int:
    return input.numel()


def is_floating_point(input: Tensor) -> bool:
    return input.is_floating_point()


def result_type(tensor1, tensor2) -> dtype:
    from ._dispatch import _operand_dtype
    from ._dtype import result_type as _rt
    return _rt([_operand_dtype(tensor1), _operand_dtype(tensor2)])


def promote_types(type1: dtype, type2: dtype) -> dtype:
    from ._dtype import _np_promote
    return _np_promote(type1, type2)


__version__ = "0.1.0"
