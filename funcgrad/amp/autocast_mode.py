"""``funcgrad.autocast`` / ``funcgrad.amp.autocast``: PyTorch's mixed-precision casting policy.

While autocast is on (per thread, per device type), the ops of the *lower-precision* list
(matmul/mm/bmm/addmm/baddbmm/linear/convolution/…) cast their float32 operands to the autocast
dtype, and the ops of the *fp32* list (losses, linear algebra, reductions on CUDA…) cast
lower-precision operands to float32; everything else runs in the dtypes it is given. The casts
are ordinary ``.to(dtype)`` ops (``ToCopyBackward0``), so gradients reach float32 leaves in float32.

The hook sits in ``_dispatch.apply`` behind one list read, so the eager path pays nothing when
no thread has autocast on. Under ``funcgrad.jit`` the state at trace time is baked into the
program and is part of the trace cache key (``state_key()``).
"""

from __future__ import annotations

import functools
import threading
import warnings

from .. import _dispatch, _dtype
from .._device import cuda_is_available
from .._tensor import Tensor

__all__ = ["autocast", "is_autocast_available", "custom_fwd", "custom_bwd"]

# PyTorch's autocast op lists (aten/src/ATen/autocast_mode.cpp), as funcgrad op-table keys
_LOWER_COMMON = frozenset({"matmul", "mm", "mv", "vm", "dot", "bmm", "addmm", "addbmm", "baddbmm",
                           "convolution", "prelu", "scaled_dot_product_attention",
                           "attention_with_weights"})
_LOWER = {
    "cpu": _LOWER_COMMON,
    "cuda": _LOWER_COMMON | {"addmv", "einsum", "einsum_mul", "lstm_cell", "gru_cell", "rnn_tanh_cell",
                             "rnn_relu_cell"},
}
_FP32_COMMON = frozenset({
    "binary_cross_entropy_with_logits", "cosine_embedding_loss", "cross_entropy", "cross_entropy_prob",
    "cross_entropy_prob_mean", "cross_entropy_smooth", "huber_loss", "kl_div", "kl_div_log_target",
    "margin_ranking_loss", "mse_loss", "multi_margin_loss", "nll_loss", "nll_loss2d", "poisson_nll_loss",
    "smooth_l1_loss", "soft_margin_loss", "triplet_margin_loss"})
_FP32 = {
    "cpu": _FP32_COMMON | {"avg_pool3d", "binary_cross_entropy", "prod", "prod_dim", "trace", "cholesky",
                           "cholesky_legacy", "inv", "pinv", "max_pool3d", "adaptive_avg_pool3d",
                           "pad_reflect1d", "pad_reflect2d", "pad_replicate1d", "pad_replicate2d",
                           "pad_replicate3d", "solve", "eigh", "eigvalsh", "svd", "svdvals", "qr"},
    "cuda": _FP32_COMMON | {"acos", "asin", "cosh", "erfinv", "exp", "expm1", "log", "log10", "log2",
                            "log1p", "reciprocal", "rsqrt", "sinh", "tan", "pow_scalar", "pow_tensor",
                            "rpow", "softplus", "layer_norm", "group_norm", "vector_norm",
                            "matrix_norm_nuc", "cosine_similarity", "logsumexp", "sum", "sum_dim",
                            "prod", "prod_dim", "softmax", "log_softmax", "cumprod", "cumsum"},
}
_SUPPORTED = {"cpu": (_dtype.bfloat16, _dtype.float16), "cuda": (_dtype.bfloat16, _dtype.float16)}
_DEFAULT_DTYPE = {"cpu": _dtype.bfloat16, "cuda": _dtype.float16}
_DEVICE_TYPES = ("cpu", "cuda", "ipu", "xpu", "mkldnn", "opengl", "opencl", "ideep", "hip", "ve", "fpga",
                 "maia", "xla", "lazy", "vulkan", "mps", "meta", "hpu", "mtia", "privateuseone")


class _State(threading.local):
    def __init__(self):
        self.on = {}  # device_type -> autocast dtype, for the enabled ones
        self.dtype = dict(_DEFAULT_DTYPE)
        self.cache_enabled = True


_state = _State()
_active = [0]  # threads with autocast on (any device); the dispatch hook is installed while > 0
_lock = threading.Lock()
_F32 = _dtype.float32
_LOWER_DTYPES = frozenset({_dtype.bfloat16, _dtype.float16})


def state_key():
    """The calling thread's autocast state as a hashable key (None when off): part of the jit
    trace key, since the casts are baked into a traced program."""
    on = _state.on
    return tuple(sorted((k, v.name if hasattr(v, "name") else str(v)) for k, v in on.items())) if on else None


def _cast(op, args):
    """The dispatch hook: the operands ``op`` receives under this thread's autocast state."""
    on = _state.on
    if not on:
        return args
    name = op.name
    T = Tensor
    for dev, dt in on.items():
        if name in _LOWER[dev]:
            if any(isinstance(a, T) and a.dtype is _F32 and a.device.type == dev for a in args):
                return tuple(a.to(dt) if isinstance(a, T) and a.dtype is _F32 and a.device.type == dev
                             else a for a in args)
        elif name in _FP32[dev]:
            if any(isinstance(a, T) and a.dtype in _LOWER_DTYPES and a.device.type == dev for a in args):
                return tuple(a.to(_F32) if isinstance(a, T) and a.dtype in _LOWER_DTYPES else a
                             for a in args)
    return args


def _activate(delta: int) -> None:
    with _lock:
        _active[0] += delta
        _dispatch._amp_hook[0] = _cast if _active[0] > 0 else None


def is_autocast_available(device_type: str) -> bool:
    """True for the device types autocast supports (``cpu``, ``cuda``)."""
    return device_type in _SUPPORTED


def is_autocast_enabled(device_type: str = "cuda") -> bool:
    """Whether autocast is on for ``device_type`` in this thread (``cuda`` when not given, as PyTorch)."""
    return device_type in _state.on


def get_autocast_dtype(device_type: str):
    """The dtype autocast casts to for ``device_type`` (its default unless set by a context)."""
    return _state.on.get(device_type, _state.dtype.get(device_type, _dtype.float16))


class autocast:
    """Mixed precision region: context manager and decorator, nestable, thread-local.

    Args:
        device_type: ``"cpu"`` or ``"cuda"``.
        dtype: ``funcgrad.bfloat16`` (CPU default) or ``funcgrad.float16`` (CUDA default).
        enabled: ``False`` turns autocast off inside (also nested in an enabled region).
        cache_enabled: accepted for compatibility (casts are not cached).

    >>> import funcgrad
    >>> a = funcgrad.ones(2, 2)
    >>> with funcgrad.autocast("cpu", dtype=funcgrad.bfloat16):
    ...     (a @ a).dtype, (a + a).dtype
    (funcgrad.bfloat16, funcgrad.float32)
    """

    def __init__(self, device_type: str, dtype=None, enabled: bool = True, cache_enabled=None) -> None:
        if not isinstance(device_type, str):
            raise ValueError(f"Expected `device_type` of type `str`, got: `{type(device_type)}`")
        if device_type not in _DEVICE_TYPES:
            raise RuntimeError("Expected one of " + ", ".join(_DEVICE_TYPES) + " device type at start of "
                               f"device string: {device_type}")
        self.device = device_type
        self.fast_dtype = dtype if dtype is not None else get_autocast_dtype(device_type)
        self._enabled = bool(enabled)
        self._cache_enabled = cache_enabled
        if device_type == "cuda" and enabled and not cuda_is_available():
            warnings.warn("CUDA is not available or torch_xla is imported. Disabling autocast.", stacklevel=2)
            self._enabled = False
        elif device_type not in _SUPPORTED:
            if enabled:
                warnings.warn(f"User specified an unsupported autocast device_type '{device_type}'",
                              stacklevel=2)
            self._enabled = False
        elif self._enabled and self.fast_dtype not in _SUPPORTED[device_type]:
            names = ", ".join(repr(d) for d in _SUPPORTED[device_type])
            label = "CPU" if device_type == "cpu" else "CUDA"
            warnings.warn(f"In {label} autocast, but the target dtype is not supported. Disabling autocast.\n"
                          f"{label} Autocast only supports dtypes of {names} currently.", stacklevel=2)
            self._enabled = False

    def __enter__(self):
        on = _state.on
        self._prev = on.get(self.device)
        self._prev_dtype = _state.dtype.get(self.device)
        was_on = bool(on)
        if self._enabled:
            on[self.device] = self.fast_dtype
            _state.dtype[self.device] = self.fast_dtype
        else:
            on.pop(self.device, None)
        if bool(on) != was_on:
            _activate(1 if on else -1)
        return self

    def __exit__(self, *exc):
        on = _state.on
        was_on = bool(on)
        if self._prev is None:
            on.pop(self.device, None)
        else:
            on[self.device] = self._prev
        if self._prev_dtype is not None:
            _state.dtype[self.device] = self._prev_dtype
        if bool(on) != was_on:
            _activate(1 if on else -1)
        return False

    def __call__(self, func):
        @functools.wraps(func)
        def wrapper(*args, **kwargs):
            with autocast(self.device, dtype=self.fast_dtype, enabled=self._enabled,
                          cache_enabled=self._cache_enabled):
                return func(*args, **kwargs)
        return wrapper


def custom_fwd(fwd=None, *, device_type: str = "cpu", cast_inputs=None):
    """``torch.amp.custom_fwd``: run a custom Function's forward with ``cast_inputs`` (or as is)."""
    if fwd is None:
        return functools.partial(custom_fwd, device_type=device_type, cast_inputs=cast_inputs)

    @functools.wraps(fwd)
    def wrapper(*args, **kwargs):
        if cast_inputs is None or not is_autocast_enabled(device_type):
            return fwd(*args, **kwargs)
        T = Tensor
        args = [a.to(cast_inputs) if isinstance(a, T) and a.is_floating_point() else a for a in args]
        with autocast(device_type, enabled=False):
            return fwd(*args, **kwargs)
    return wrapper


def custom_bwd(bwd=None, *, device_type: str = "cpu"):
    """``torch.amp.custom_bwd``: the backward runs under no autocast change here."""
    if bwd is None:
        return functools.partial(custom_bwd, device_type=device_type)
    return bwd
