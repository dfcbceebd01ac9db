"""funcgrad: PyTorch's autograd semantics, computed by JAX.

``import funcgrad as torch`` gives ``Tensor``, ``requires_grad``, ``backward()``, ``no_grad`` and
the op library, with every op a jitted XLA kernel and every derivative a jitted ``jax.vjp``.
"""

from __future__ import annotations

import jax as _jax
import warnings as _warnings

from . import _xla_flags  # noqa: E402,F401  (before anything starts JAX's backend: see there)

# PyTorch has int64/float64; JAX needs x64 mode for them. The *default* dtypes stay PyTorch's
# (float32 for floats), applied by funcgrad's factories and type promotion.
_jax.config.update("jax_enable_x64", True)

from . import _ops  # noqa: E402  (installs Tensor methods)
from . import autograd as autograd  # noqa: E402
from ._device import cuda_device_count as _cuda_device_count  # noqa: E402
from ._device import cuda_is_available as _cuda_is_available  # noqa: E402
from . import _device  # noqa: E402
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
from . import utils as utils  # noqa: E402
from .serialization import load as load, save as save  # noqa: E402

# ---- the op library (generated from the op table; see funcgrad/_ops) ----------------------------
from ._ops.linalg import bmm as bmm, dot as dot, matmul as matmul, mm as mm, mv as mv  # noqa: E402
from ._ops.pointwise import (abs as abs, absolute as absolute, add as add, bitwise_and as bitwise_and,  # noqa: E402,A004
                             bitwise_not as bitwise_not, bitwise_or as bitwise_or,
                             bitwise_xor as bitwise_xor, clamp as clamp, cos as cos, div as div,
                             eq as eq, exp as exp, float_power as float_power,
                             floor_divide as floor_divide, ge as ge, greater as greater,
                             greater_equal as greater_equal, gt as gt, le as le, less as less,
                             less_equal as less_equal, log as log, lt as lt, maximum as maximum,
                             minimum as minimum, mul as mul, ne as ne, not_equal as not_equal,
                             neg as neg, negative as negative, pow as pow, relu as relu,
                             remainder as remainder, rsub as rsub, sigmoid as sigmoid, sin as sin,
                             sqrt as sqrt, sub as sub, tanh as tanh, where as where)
from ._ops.reduce import (amax as amax, amin as amin, argmax as argmax, argmin as argmin,  # noqa: E402
                          max as max, mean as mean, min as min, sum as sum)
from ._ops.shape import (broadcast_to as broadcast_to, cat as cat, clone as clone,  # noqa: E402
                         flatten as flatten, nonzero as nonzero, permute as permute,
                         reshape as reshape, squeeze as squeeze, stack as stack, t as t,
                         transpose as transpose, unflatten as unflatten, unsqueeze as unsqueeze)

# elementwise math, more reductions, sorting (funcgrad/_ops/math.py, reduce.py, sort.py)
from ._ops.math import (acos as acos, acosh as acosh, addcdiv as addcdiv, addcmul as addcmul,  # noqa: E402,A004
                        allclose as allclose, arccos as arccos, arccosh as arccosh,
                        arcsin as arcsin, arcsinh as arcsinh, arctan as arctan, arctanh as arctanh,
                        asin as asin, asinh as asinh, atan as atan, atan2 as atan2, atanh as atanh,
                        ceil as ceil, clamp_max as clamp_max, clamp_min as clamp_min,
                        copysign as copysign, cosh as cosh, deg2rad as deg2rad, digamma as digamma,
                        equal as equal, erf as erf, erfc as erfc, erfinv as erfinv, exp2 as exp2,
                        expm1 as expm1, fix as fix, floor as floor, fmod as fmod, frac as frac,
                        heaviside as heaviside, hypot as hypot, isclose as isclose,
                        isfinite as isfinite, isinf as isinf, isnan as isnan, isneginf as isneginf,
                        isposinf as isposinf, isreal as isreal, lerp as lerp, lgamma as lgamma,
                        log10 as log10, log1p as log1p, log2 as log2, logaddexp as logaddexp,
                        logaddexp2 as logaddexp2, logical_and as logical_and,
                        logical_not as logical_not, logical_or as logical_or,
                        logical_xor as logical_xor, nan_to_num as nan_to_num, rad2deg as rad2deg,
                        reciprocal as reciprocal, round as round, rsqrt as rsqrt, sgn as sgn,
                        sign as sign, signbit as signbit, sinc as sinc, sinh as sinh,
                        square as square, tan as tan, trunc as trunc, xlogy as xlogy)
from ._ops.math import positive as positive  # noqa: E402
from ._ops.reduce import (all as all, aminmax as aminmax, any as any,  # noqa: E402,A004
                          count_nonzero as count_nonzero, cumprod as cumprod, cumsum as cumsum,
                          logcumsumexp as logcumsumexp, logsumexp as logsumexp, nanmean as nanmean,
                          nansum as nansum, prod as prod, std as std, std_mean as std_mean,
                          var as var, var_mean as var_mean)
from ._ops.sort import (argsort as argsort, cummax as cummax, cummin as cummin,  # noqa: E402
                        kthvalue as kthvalue, median as median, mode as mode, msort as msort,
                        nanmedian as nanmedian, sort as sort, topk as topk)

# linear algebra, shape/indexing breadth (funcgrad/_ops/linalg.py, decomp.py, indexing.py, shape_more.py)
from . import linalg as linalg  # noqa: E402
from . import functional as functional  # noqa: E402  (torch.functional: einsum, norm, split... again)
from ._ops.creation import tril_indices as tril_indices, triu_indices as triu_indices  # noqa: E402
from ._ops.decomp import (_det_alias as det, _inverse_alias as inverse,  # noqa: E402
                          _matrix_power_alias as matrix_power, _pinverse_alias as pinverse,
                          _slogdet_alias as slogdet, cholesky_legacy as cholesky, qr_legacy as qr,
                          svd_legacy as svd, tensor_norm as norm)
from ._ops.indexing import (argwhere as argwhere, gather as gather, index_add as index_add,  # noqa: E402
                            index_copy as index_copy, index_fill as index_fill,
                            index_select as index_select, masked_fill as masked_fill,
                            masked_select as masked_select, scatter as scatter,
                            scatter_add as scatter_add, scatter_reduce as scatter_reduce, take as take,
                            take_along_dim as take_along_dim, unique as unique,
                            unique_consecutive as unique_consecutive)
from ._ops.linalg import (addbmm as addbmm, addmm as addmm, addmv as addmv,  # noqa: E402
                          baddbmm as baddbmm, cross as cross, diag as diag, diag_embed as diag_embed,
                          diagonal as diagonal, einsum as einsum, kron as kron, outer as outer,
                          tensordot as tensordot, trace as trace, tril as tril, triu as triu,
                          vdot as vdot)
from ._ops.shape_more import (atleast_1d as atleast_1d, atleast_2d as atleast_2d,  # noqa: E402
                              atleast_3d as atleast_3d, broadcast_shapes as broadcast_shapes,
                              broadcast_tensors as broadcast_tensors, chunk as chunk,
                              column_stack as column_stack, dsplit as dsplit, dstack as dstack,
                              flip as flip, fliplr as fliplr, flipud as flipud, hsplit as hsplit,
                              hstack as hstack, meshgrid as meshgrid, movedim as movedim,
                              narrow as narrow, repeat_interleave as repeat_interleave, roll as roll,
                              rot90 as rot90, select as select, split as split,
                              split_with_sizes as split_with_sizes, tensor_split as tensor_split,
                              tile as tile, unbind as unbind, vsplit as vsplit, vstack as vstack)

# the aliases as the op table exports them: each names itself in PyTorch's and Python's messages
from ._ops import FUNCTIONS as _FUNCTIONS  # noqa: E402
ger, row_stack, clip = _FUNCTIONS["ger"], _FUNCTIONS["row_stack"], _FUNCTIONS["clip"]
concat, concatenate, moveaxis = _FUNCTIONS["concat"], _FUNCTIONS["concatenate"], _FUNCTIONS["moveaxis"]
divide, true_divide = _FUNCTIONS["divide"], _FUNCTIONS["true_divide"]
multiply, subtract = _FUNCTIONS["multiply"], _FUNCTIONS["subtract"]
swapaxes, swapdims = _FUNCTIONS["swapaxes"], _FUNCTIONS["swapdims"]

float = float32  # noqa: A001  (torch.float)
double = float64
half = float16
long = int64
int = int32  # noqa: A001
short = int16
cfloat = complex64
cdouble = complex128


from .amp import _compat as _amp_compat  # noqa: E402


class cuda:  # noqa: N801  (torch.cuda namespace)
    """``funcgrad.cuda.is_available()`` / ``device_count()``: JAX's GPU platform."""

    amp = _amp_compat.cuda_amp  # deprecated torch.cuda.amp.autocast / GradScaler

    is_available = staticmethod(_cuda_is_available)
    device_count = staticmethod(_cuda_device_count)
    memory_allocated = staticmethod(_device.cuda_memory_allocated)
    max_memory_allocated = staticmethod(_device.cuda_max_memory_allocated)
    memory_reserved = staticmethod(_device.cuda_memory_reserved)
    max_memory_reserved = staticmethod(_device.cuda_max_memory_reserved)
    memory_stats = staticmethod(_device.cuda_memory_stats)
    reset_peak_memory_stats = staticmethod(_device.cuda_reset_peak_memory_stats)
    reset_accumulated_memory_stats = staticmethod(_device.cuda_reset_accumulated_memory_stats)

    @staticmethod
    def reset_max_memory_allocated(device=None) -> None:
        """Deprecated: ``reset_peak_memory_stats`` (PyTorch's FutureWarning first)."""
        _warnings.warn("torch.cuda.reset_max_memory_allocated now calls torch.cuda.reset_peak_memory_stats, "
                       "which resets /all/ peak memory stats.", FutureWarning, stacklevel=2)
        return _device.cuda_reset_peak_memory_stats(device)
    empty_cache = staticmethod(_device.cuda_empty_cache)
    current_device = staticmethod(_device.cuda_current_device)
    get_device_name = staticmethod(_device.cuda_get_device_name)
    is_bf16_supported = staticmethod(_device.cuda_is_bf16_supported)

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


from . import _dispatch as _dispatch, _dtype as _dtype  # noqa: E402


def result_type(tensor1, tensor2) -> dtype:
    return _dtype.result_type([_dispatch._operand_dtype(tensor1), _dispatch._operand_dtype(tensor2)])


def promote_types(type1: dtype, type2: dtype) -> dtype:
    return _dtype._np_promote(type1, type2)


from . import optim as optim  # noqa: E402
from . import nn as nn  # noqa: E402
# torch-level aliases of nn ops that PyTorch also exposes as torch.<name>
from ._ops.nn import log_softmax as log_softmax, softmax as softmax  # noqa: E402
from .nn.functional import (adaptive_avg_pool1d as adaptive_avg_pool1d,  # noqa: E402
                            avg_pool1d as avg_pool1d, batch_norm as batch_norm, bilinear as bilinear,
                            celu as celu, conv1d as conv1d, conv2d as conv2d, conv3d as conv3d,
                            conv_transpose1d as conv_transpose1d, conv_transpose2d as conv_transpose2d,
                            conv_transpose3d as conv_transpose3d, cosine_similarity as cosine_similarity,
                            dropout as dropout, embedding as embedding, group_norm as group_norm,
                            hardshrink as hardshrink, instance_norm as instance_norm,
                            layer_norm as layer_norm, max_pool1d as max_pool1d, max_pool2d as max_pool2d,
                            max_pool3d as max_pool3d, pairwise_distance as pairwise_distance,
                            pixel_shuffle as pixel_shuffle, pixel_unshuffle as pixel_unshuffle,
                            prelu as prelu, relu_ as relu_, selu as selu, threshold as threshold)
from . import func as func  # noqa: E402
from . import storage as storage  # noqa: E402  (Tensor.untyped_storage(), Tensor.storage())
from .storage import TypedStorage as TypedStorage, UntypedStorage as UntypedStorage  # noqa: E402
from . import special as special  # noqa: E402
from ._ops.decomp import logdet as logdet  # noqa: E402
from ._ops.special import (frexp as frexp, i0 as i0, igamma as igamma, igammac as igammac,  # noqa: E402
                           ldexp as ldexp, logit as logit, mvlgamma as mvlgamma, polygamma as polygamma)
from ._jit import compile as compile, cond as cond, jit as jit  # noqa: E402,A004
from . import distributed as distributed, parallel as parallel  # noqa: E402
from ._export import export as export, load_exported as load_exported  # noqa: E402

from ._version import __version__ as __version__  # noqa: E402

# torch.distributions (funcgrad/distributions)
from . import distributions as distributions  # noqa: E402
from .distributions._gamma import standard_gamma as _standard_gamma  # noqa: E402

# mixed precision (funcgrad/amp): torch.autocast, torch.amp, the deprecated torch.cpu.amp
from . import amp as amp  # noqa: E402
from .amp import autocast as autocast  # noqa: E402
from .amp import get_autocast_dtype as get_autocast_dtype  # noqa: E402
from .amp import is_autocast_available as is_autocast_available  # noqa: E402
from .amp import is_autocast_enabled as is_autocast_enabled  # noqa: E402


class cpu:  # noqa: N801  (torch.cpu namespace)
    """``funcgrad.cpu.amp`` (deprecated autocast/GradScaler spellings), ``is_available()``."""

    amp = _amp_compat.cpu_amp

    @staticmethod
    def is_available() -> bool:
        return True

# ---- legacy names and runtime switches real scripts use (issue 18) ------------------------------
from . import _legacy  # noqa: E402  (FloatTensor… and the Tensor(2, 3) constructor forms)
from ._legacy import CPU_TYPES as _LEGACY_TYPES, CUDA_TYPES as _LEGACY_CUDA_TYPES  # noqa: E402
from ._legacy import tensortype as tensortype  # noqa: E402
FloatTensor, DoubleTensor, HalfTensor = (_LEGACY_TYPES[n] for n in ("FloatTensor", "DoubleTensor", "HalfTensor"))
BFloat16Tensor, LongTensor, IntTensor = (_LEGACY_TYPES[n] for n in ("BFloat16Tensor", "LongTensor", "IntTensor"))
ShortTensor, CharTensor, ByteTensor = (_LEGACY_TYPES[n] for n in ("ShortTensor", "CharTensor", "ByteTensor"))
BoolTensor = _LEGACY_TYPES["BoolTensor"]
for _n, _t in _LEGACY_CUDA_TYPES.items():
    setattr(cuda, _n, _t)  # funcgrad.cuda.FloatTensor… (cuda is this module's own namespace class)
del _n, _t
from ._runtime import (are_deterministic_algorithms_enabled as are_deterministic_algorithms_enabled,  # noqa: E402
                       get_default_device as get_default_device,
                       get_deterministic_debug_mode as get_deterministic_debug_mode,
                       get_float32_matmul_precision as get_float32_matmul_precision,
                       get_num_interop_threads as get_num_interop_threads,
                       get_num_threads as get_num_threads,
                       is_deterministic_algorithms_warn_only_enabled as is_deterministic_algorithms_warn_only_enabled,
                       set_default_device as set_default_device,
                       set_deterministic_debug_mode as set_deterministic_debug_mode,
                       set_float32_matmul_precision as set_float32_matmul_precision,
                       set_num_interop_threads as set_num_interop_threads,
                       set_num_threads as set_num_threads,
                       use_deterministic_algorithms as use_deterministic_algorithms)
from . import accelerator as accelerator, backends as backends, onnx as onnx  # noqa: E402
from . import testing as testing  # noqa: E402
from . import fft as fft  # noqa: E402  (torch.fft)
from ._ops.more import (bincount as bincount, bucketize as bucketize, cdist as cdist,  # noqa: E402
                        diff as diff, dist as dist, histc as histc, index_put as index_put, put as put,
                        searchsorted as searchsorted, trapezoid as trapezoid, trapz as trapz)
from ._ops.fft import imag as imag, real as real  # noqa: E402

# ---- persistent compilation cache: on by default (config only; see funcgrad/_compile_cache.py) ---
from ._compile_cache import compilation_cache_dir as compilation_cache_dir  # noqa: E402
from ._compile_cache import set_compilation_cache as set_compilation_cache  # noqa: E402
from ._compile_cache import setup as _setup_compile_cache  # noqa: E402

_setup_compile_cache()
from . import random as random  # noqa: E402  (torch.random: fork_rng, seeds, RNG state)

# ---- more top-level tensor functions real scripts use (funcgrad/_ops/more2.py) -------------------
arctan2 = _FUNCTIONS["arctan2"]  # (export's copy, naming itself)
from ._ops.more2 import (adjoint as adjoint, bitwise_left_shift as bitwise_left_shift,  # noqa: E402
                         bitwise_right_shift as bitwise_right_shift, block_diag as block_diag,
                         can_cast as can_cast, cartesian_prod as cartesian_prod, combinations as combinations,
                         corrcoef as corrcoef, cov as cov, detach as detach, diagflat as diagflat,
                         finfo as finfo, fmax as fmax, fmin as fmin, histogram as histogram, iinfo as iinfo,
                         is_complex as is_complex, is_nonzero as is_nonzero, is_same_size as is_same_size,
                         isin as isin, nanquantile as nanquantile, nextafter as nextafter, quantile as quantile,
                         ravel as ravel, renorm as renorm, typename as typename)
from ._ops.more3 import (chain_matmul as chain_matmul, cumulative_trapezoid as cumulative_trapezoid,  # noqa: E402
                         empty_strided as empty_strided, gradient as gradient, vander as vander)
from ._ops.poisson import poisson as poisson  # noqa: E402

# ---- constants, layouts and memory formats, switches and predicates (names3) --------------------
from math import e as e, inf as inf, nan as nan, pi as pi  # noqa: E402  (plain floats, as torch.pi)
newaxis = None  # (torch.newaxis: None, as NumPy's)
from ._strides import layout as layout, memory_format as memory_format, strided as strided  # noqa: E402
from ._sparse import sparse_coo as sparse_coo, sparse_coo_tensor as sparse_coo_tensor  # noqa: E402
from ._sparse import spmm as spmm  # noqa: E402
from . import sparse as sparse  # noqa: E402
from ._strides import (channels_last as channels_last, channels_last_3d as channels_last_3d,  # noqa: E402
                       contiguous_format as contiguous_format, preserve_format as preserve_format)
from ._runtime import is_warn_always_enabled as is_warn_always_enabled  # noqa: E402
from ._runtime import set_warn_always as set_warn_always  # noqa: E402
from .func import vmap as vmap  # noqa: E402  (torch.vmap is torch.func.vmap)
from ._ops.more3 import is_inference as is_inference, is_signed as is_signed  # noqa: E402
from ._ops.complex import (angle as angle, complex as complex, conj as conj,  # noqa: E402,A004
                           conj_physical as conj_physical, conj_physical_ as conj_physical_,
                           is_conj as is_conj, is_neg as is_neg,
                           polar as polar, resolve_conj as resolve_conj, resolve_neg as resolve_neg,
                           view_as_complex as view_as_complex, view_as_real as view_as_real)
from ._ops.windows import (bartlett_window as bartlett_window,  # noqa: E402
                           blackman_window as blackman_window, hamming_window as hamming_window,
                           hann_window as hann_window, kaiser_window as kaiser_window)
from ._ops.more4 import (diagonal_scatter as diagonal_scatter, gcd as gcd, gcd_ as gcd_,  # noqa: E402
                         inner as inner, lcm as lcm, lcm_ as lcm_, masked_scatter as masked_scatter,
                         matrix_exp as matrix_exp,
                         select_scatter as select_scatter, slice_scatter as slice_scatter,
                         unravel_index as unravel_index)
from ._ops.strided import as_strided as as_strided, as_strided_scatter as as_strided_scatter  # noqa: E402
from ._ops.spectral import istft as istft, stft as stft  # noqa: E402
from . import signal as signal  # noqa: E402  (torch.signal.windows)

# ---- torch.<name>_: the in-place functions, generated from the methods (funcgrad/_ops/more5.py) --
from ._ops.more5 import inplace_functions as _inplace_functions  # noqa: E402

globals().update(_inplace_functions())
# legacy names (funcgrad/_ops/more5.py...); ``range`` shadows the builtin here: nothing below calls it
from ._legacy import set_default_tensor_type as set_default_tensor_type  # noqa: E402
from ._ops.more5 import eig as eig  # noqa: E402
from ._ops.more5 import get_device as get_device  # noqa: E402
from ._ops.more5 import lstsq as lstsq  # noqa: E402
from ._ops.linalg2 import lu_legacy as lu, lu_solve_legacy as lu_solve, lu_unpack as lu_unpack  # noqa: E402
from ._ops.lowrank import pca_lowrank as pca_lowrank, svd_lowrank as svd_lowrank  # noqa: E402
from . import __future__ as __future__  # noqa: E402  (torch.__future__: nn.Module conversion switches)
from ._ops.more5 import matrix_rank as matrix_rank  # noqa: E402
from ._ops.more5 import range as range  # noqa: E402,A004
from ._ops.more5 import scalar_tensor as scalar_tensor  # noqa: E402
from ._ops.more5 import solve as solve  # noqa: E402
from ._ops.more5 import symeig as symeig  # noqa: E402
from ._runtime import set_flush_denormal as set_flush_denormal  # noqa: E402
from .autograd.anomaly_mode import is_anomaly_check_nan_enabled as is_anomaly_check_nan_enabled  # noqa: E402
from .autograd.anomaly_mode import is_anomaly_enabled as is_anomaly_enabled  # noqa: E402
from .autograd.anomaly_mode import set_anomaly_enabled as set_anomaly_enabled  # noqa: E402
from .storage import is_storage as is_storage  # noqa: E402
