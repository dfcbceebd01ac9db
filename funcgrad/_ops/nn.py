"""Op table — neural-network ops: activations, softmax, convolution, pooling, normalisation,
dropout, embedding, resampling. Each is one ``defop`` with PyTorch's node name; the frontends
(argument checking, PyTorch signatures) live in ``funcgrad/nn/functional.py``.

Numerics: ``log_softmax``/``softplus``/``logsigmoid`` use the stable ``jax.nn`` forms; piecewise
activations use ``jnp.where`` so the gradient at the kinks is PyTorch's one-sided value.
Pooling and resampling build their static index/weight tables with NumPy at trace time.
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from .._host import host_exact
from .._tensor import _wrap_dim
from ._registry import REQUIRED, Tensor, apply, defop, export, kernel_error, refuse, rerun
from ._sums import acc_broadcast, acc_sum
from .pointwise import true_divide

# ================================ activations ===================================================


def _leaky_relu(x, *, slope):
    return jnp.where(x > 0, x, x * slope)


def _elu(x, *, alpha, scale, input_scale):
    neg = jnp.expm1(jnp.minimum(x, 0) * input_scale) * (alpha * scale)
    return jnp.where(x > 0, x * scale, neg)


def _elu_jvp(primals, tangents, out, *, alpha, scale, input_scale):
    # PyTorch's elu_backward as its vectorized CPU loop computes it (contiguous tensors, every CPU;
    # its scalar remainder loop differs at nan only): x > 0 takes the linear branch, anything else
    # the exponential one (x == 0 included; nan too, giving nan). Its second derivative
    # (elu_double_backward) is masked by x < 0: 0 at x == 0, hence the exponent's input is x only
    # where x < 0 (or nan).
    (x,), (t,) = primals, tangents
    neg = (input_scale * alpha * scale) * jnp.exp(jnp.where(_neg_or_nan(x), x, 0) * input_scale)
    return t * jnp.where(x > 0, scale, neg).astype(x.dtype)


def _neg_or_nan(x):
    return (x < 0) | jnp.isnan(x)


def _celu(x, *, alpha):
    return jnp.where(x > 0, x, alpha * jnp.expm1(jnp.minimum(x, 0) / alpha))


def _celu_jvp(primals, tangents, out, *, alpha):
    return _elu_jvp(primals, tangents, out, alpha=alpha, scale=1.0, input_scale=_celu_inv(alpha))


# PyTorch's elu_backward (elu, selu, celu and their in-place forms), as its vectorized kernel
# computes it: the coefficients in the computing type (float for half types), ``g * poscoef`` where
# x > 0 and ``((g * negiptcoef) * negcoef) * exp(x * negiptcoef)`` elsewhere (nan at nan; the
# scalar loop PyTorch runs on a short tail passes ``g * poscoef`` there). The in-place forms' formula
# reads the result instead (derivatives.yaml's ``is_result``; nodes ``*Backward1``), and refuses a
# negative slope at backward. As a ``vjp`` the formula is exact at every order (its derivative,
# PyTorch's elu_double_backward, is masked by x < 0: the exponent's input is x only there).
_INPLACE_NEG = ("In-place {} backward calculation is triggered with a negative slope which is not "
                "supported. This is caused by calling in-place forward function with a negative "
                "slope, please call out-of-place version instead.")


def _opmath(x):
    return jnp.float32 if x.dtype in (jnp.float16, jnp.bfloat16) else x.dtype


def _elu_grad(x, g, alpha, scale, input_scale, result=None):
    ct = _opmath(x)
    xo, go = x.astype(ct), g.astype(ct)
    neg_coef = jnp.asarray(alpha, ct) * jnp.asarray(scale, ct)
    pos, nip = go * jnp.asarray(scale, ct), go * jnp.asarray(input_scale, ct)
    if result is None:
        neg = nip * neg_coef * jnp.exp(jnp.where(_neg_or_nan(xo), xo, 0) * jnp.asarray(input_scale, ct))
        linear = xo > 0
    else:  # r > 0 is linear, the rest takes the result's branch; its derivative in r is masked by
        # r < 0, as PyTorch's elu_double_backward with is_result (at r == 0 the same value, held
        # constant)
        r = result.astype(ct)
        neg_r = _neg_or_nan(r)  # (elsewhere r is 0 here: an inf result gives no nan derivative)
        neg = jnp.where(neg_r, nip * (jnp.where(neg_r, r, 0) + neg_coef), nip * neg_coef)
        linear = r > 0
    return (jnp.where(linear, pos, neg).astype(x.dtype),)


def _result(fwd, alpha, scale, input_scale):
    """``fwd`` (an in-place activation's result) whose derivative is PyTorch's ``*Backward1``
    formula (``_elu_grad`` on the result): what its double backward differentiates through."""
    f = jax.custom_jvp(fwd)

    @f.defjvp
    def _jvp(primals, tangents):
        (x,), (t,) = primals, tangents
        r = f(x)
        return r, _elu_grad(x, t, alpha, scale, input_scale, r)[0]
    return f


def _elu_vjp(primals, g, *, grad_mode, alpha, scale, input_scale):
    return _elu_grad(primals[0], g, alpha, scale, input_scale)


def _elu_result_vjp(primals, g, *, grad_mode, alpha, scale, input_scale):
    return _from_result(primals[0], g, alpha, scale, input_scale,
                        lambda v: _elu(v, alpha=alpha, scale=scale, input_scale=input_scale))


def _from_result(x, g, alpha, scale, input_scale, fwd):
    """The in-place forms' ``elu_backward(..., is_result=true, result)``, ``fwd`` their forward."""
    if alpha < 0:
        raise RuntimeError(_INPLACE_NEG.format("elu"))
    r = _result(fwd, alpha, scale, input_scale)(x)
    return _elu_grad(x, g, alpha, scale, input_scale, r)


def _celu_inv(alpha):
    # derivatives.yaml: elu_backward(grad, alpha, 1, 1.0/alpha.toFloat(), ...): the derivative's
    # input scale is 1 over alpha rounded to float (the forward divides by alpha itself)
    return 1.0 / float(np.float32(alpha))


def _celu_vjp(primals, g, *, grad_mode, alpha):
    return _elu_grad(primals[0], g, alpha, 1.0, _celu_inv(alpha))


def _celu_result_vjp(primals, g, *, grad_mode, alpha):
    return _from_result(primals[0], g, alpha, 1.0, _celu_inv(alpha), lambda v: _celu(v, alpha=alpha))


def _leaky_relu_result_vjp(primals, g, *, grad_mode, slope):
    if slope < 0:
        raise RuntimeError(_INPLACE_NEG.format("leakyReLu") + " File an issue at "
                           "https://github.com/pytorch/pytorch if you do require supporting in-place "
                           "leakRelu backward calculation with negative slope")
    (x,) = primals
    r = _leaky_relu(x, slope=slope)
    return (jnp.where(r > 0, g, g * jnp.asarray(slope, x.dtype)).astype(x.dtype),)


def _hardtanh(x, *, lo, hi):
    return jnp.where(x <= lo, jnp.asarray(lo, x.dtype), jnp.where(x >= hi, jnp.asarray(hi, x.dtype), x))


def _hardtanh_jvp(primals, tangents, out, *, lo, hi):
    # PyTorch: the gradient passes strictly inside (lo, hi) only (not at the bounds, not nan)
    (x,), (t,) = primals, tangents
    return jnp.where((x > lo) & (x < hi), t, jnp.zeros_like(t))


def _softplus(x, *, beta, threshold):
    bx = x * beta
    # linear above the threshold (PyTorch's rule); logaddexp is stable for any magnitude
    return jnp.where(bx > threshold, x, jnp.logaddexp(bx, 0.0).astype(x.dtype) / beta)


def _hardswish(x):
    # PyTorch's formula: nan at nan and at -inf (-inf * 0)
    return x * jnp.clip(x + 3, 0, 6) / 6


def _hardswish_jvp(primals, tangents, out):
    # PyTorch's vectorized hardswish_backward: 0 up to -3, 1 from 3, x / 3 + 0.5 elsewhere (nan at
    # nan; the scalar loop PyTorch runs on a short tail gives the gradient itself there). Its
    # derivative in x is masked by -3 < x < 3 (derivatives.yaml): 0 at nan.
    (x,), (t,) = primals, tangents
    xs = jnp.where((x > -3) & (x < 3), x, jax.lax.stop_gradient(x))
    return t * jnp.where(x <= -3, 0, jnp.where(x >= 3, 1, xs / 3 + 0.5)).astype(x.dtype)


def _hardsigmoid(x):
    return jnp.where(x <= -3, jnp.zeros((), x.dtype), jnp.where(x >= 3, jnp.ones((), x.dtype), x / 6 + 0.5))


def _hardsigmoid_jvp(primals, tangents, out):
    # PyTorch: grad * one_sixth strictly inside (-3, 3), else (nan too) 0; its kernel's constant
    # is the float literal 1.0f / 6.0f, also for float64
    (x,), (t,) = primals, tangents
    return jnp.where((x > -3) & (x < 3), t * jnp.asarray(jnp.float32(1 / 6), t.dtype), jnp.zeros_like(t))


def _mish(x):
    return x * jnp.tanh(jax.nn.softplus(x))


def _glu(x, *, dim):
    a, b = jnp.split(x, 2, axis=dim)
    return a * jax.nn.sigmoid(b)


def _prelu(x, w):
    if w.size > 1 and x.ndim > 1:
        w = w.reshape((1, -1) + (1,) * (x.ndim - 2))
    return jnp.where(x > 0, x, w * x)


def _threshold(x, threshold, value):
    # PyTorch: x <= threshold ? value : x (nan keeps x); float16/bfloat16 compare in float32.
    # The numbers are operands, not static arguments: one kernel serves every threshold
    xo = x.astype(_opmath(x))
    return jnp.where(xo <= jnp.asarray(threshold, xo.dtype), jnp.asarray(value, x.dtype), x)


# the C++ type names c10's overflow check prints
_C_TYPE = {"uint8": "uint8_t", "int8": "int8_t", "int16": "int16_t", "int32": "int", "int64": "int64_t",
           "float16": "c10::Half", "bfloat16": "c10::BFloat16", "float32": "float", "float64": "double"}


def _parsed_number(v):
    """``v`` as PyTorch's argument parser takes a Python number (a bool is an int)."""
    if isinstance(v, bool):
        return int(v)
    if isinstance(v, int):
        if v > 2 ** 64 - 1:
            raise OverflowError("int too big to convert")
        if v < -2 ** 63:
            raise OverflowError("can't convert negative int to unsigned")
    return v


def checked_scalar(v, dt):
    """Python number ``v`` as PyTorch's ``Scalar::to<T>()`` for numpy dtype ``dt``: its argument
    parser's OverflowError for an int outside int64/uint64, c10's ``checked_convert`` RuntimeError
    for a value ``dt`` cannot hold, else the value ``dt`` computes with (a negative int wraps into
    an unsigned type as two's complement; a float truncates toward zero)."""
    v = _parsed_number(v)
    err = RuntimeError(f"value cannot be converted to type {_C_TYPE[dt.name]} without overflow")
    if isinstance(v, complex):
        if v.imag != 0:
            raise err
        v = v.real
    if jnp.issubdtype(dt, jnp.integer):
        lo, hi = int(jnp.iinfo(dt).min), int(jnp.iinfo(dt).max)
        if isinstance(v, int):
            if v > hi or v < lo and not (lo == 0 and -v <= hi):
                raise err
            return v % (hi + 1) if lo == 0 else v
        f = float(v)
        if f != f or f < lo or f > float(hi):  # compared in double, as C++ does
            raise err
        r = math.trunc(f)
        return r if r <= hi else lo  # 2**63 into int64: x86's conversion gives the lowest value
    f = float(v)
    if math.isfinite(f) and abs(f) > float(jnp.finfo(dt).max):
        raise err
    return f


def threshold_scalars(x, threshold, value):
    """``(threshold, value)`` converted as PyTorch's threshold kernel does: the threshold to the
    type it compares in (float for float16/bfloat16), the value to the tensor's type."""
    dt = np.dtype(x.dtype.np)
    threshold, value = _parsed_number(threshold), _parsed_number(value)
    if dt.name not in _C_TYPE:  # bool/complex: the op's dtype check raises
        return threshold, value
    op = np.dtype(np.float32) if dt.name in ("float16", "bfloat16") else dt
    return checked_scalar(threshold, op), checked_scalar(value, dt)


def _hardshrink(x, *, lambd):
    return jnp.where((x >= -lambd) & (x <= lambd), 0, x).astype(x.dtype)


def _softshrink(x, *, lambd):
    # nan stays nan (and passes the gradient), as PyTorch's kernel
    inner = jnp.where(jnp.isnan(x), x, 0)
    return jnp.where(x > lambd, x - lambd, jnp.where(x < -lambd, x + lambd, inner)).astype(x.dtype)


def _shrink_jvp(primals, tangents, out, *, lambd):
    # PyTorch: the gradient passes only outside [-lambd, lambd] (not at nan)
    (x,), (t,) = primals, tangents
    return jnp.where((x > lambd) | (x < -lambd), t, jnp.zeros_like(t))


def _floats(kernel, complex_too=False):
    """``defop`` dtype rule of a floating-point-only PyTorch kernel."""
    return dict(accepts="fc" if complex_too else "f", kernel=kernel)


_BOOL_HARDTANH = {"b": (RuntimeError, "Bool inputs not supported for hardtanh"),
                  "c": (NotImplementedError, "clamp is not supported for complex types")}
_ACT = {
    "gelu": defop("gelu", lambda x, approximate: jax.nn.gelu(x, approximate=approximate == "tanh"),
                  "GeluBackward0", promote="float", **_floats("GeluKernelImpl")),
    "silu": defop("silu", jax.nn.silu, "SiluBackward0", promote="float", **_floats("silu_cpu", True)),
    "mish": defop("mish", _mish, "MishBackward0", promote="float", **_floats("mish_cpu")),
    "leaky_relu": defop("leaky_relu", _leaky_relu, "LeakyReluBackward0", **_floats("leaky_relu_cpu")),
    "elu": defop("elu", _elu, "EluBackward0", promote="float", jvp=_elu_jvp, vjp=_elu_vjp, **_floats("elu_cpu")),
    "celu": defop("celu", _celu, "CeluBackward0", promote="float", jvp=_celu_jvp, vjp=_celu_vjp,
                  **_floats("elu_cpu")),
    "hardtanh": defop("hardtanh", _hardtanh, "HardtanhBackward0", jvp=_hardtanh_jvp, errors=_BOOL_HARDTANH),
    "softplus": defop("softplus", _softplus, "SoftplusBackward0", promote="float", **_floats("softplus_cpu")),
    "hardswish": defop("hardswish", _hardswish, "HardswishBackward0", promote="float", jvp=_hardswish_jvp,
                       **_floats("hardswish_cpu")),
    "hardsigmoid": defop("hardsigmoid", _hardsigmoid, "HardsigmoidBackward0", promote="float",
                         jvp=_hardsigmoid_jvp, **_floats("hardsigmoid_cpu")),
    "log_sigmoid": defop("log_sigmoid", jax.nn.log_sigmoid, "LogSigmoidBackward0", promote="float",
                         **_floats("log_sigmoid_cpu")),
    "threshold": defop("threshold", _threshold, "ThresholdBackward0", diff=(0,), accepts="if",
                       kernel="threshold_cpu"),
    # the in-place forms' nodes (F.elu(x, inplace=True), nn.LeakyReLU(0.2, inplace=True)...)
    "leaky_relu_": defop("leaky_relu_", _leaky_relu, "LeakyReluBackward1", vjp=_leaky_relu_result_vjp,
                         **_floats("leaky_relu_cpu")),
    "elu_": defop("elu_", _elu, "EluBackward1", promote="float", vjp=_elu_result_vjp, **_floats("elu_cpu")),
    "celu_": defop("celu_", _celu, "CeluBackward1", promote="float", vjp=_celu_result_vjp,
                   **_floats("elu_cpu")),
    "threshold_": defop("threshold_", _threshold, "ThresholdBackward1", diff=(0,), accepts="if",
                        kernel="threshold_cpu"),
    "glu": defop("glu", _glu, "GluBackward0", promote="float"),
    "prelu": defop("prelu", _prelu, "PreluKernelBackward0", promote="binary"),
    "hardshrink": defop("hardshrink", _hardshrink, "HardshrinkBackward0", jvp=_shrink_jvp,
                        **_floats("hardshrink_cpu")),
    "softshrink": defop("softshrink", _softshrink, "SoftshrinkBackward0", jvp=_shrink_jvp,
                        **_floats("softshrink_check")),
}


def act(name: str, x, *args, **static):
    """Apply activation op ``name`` (used by ``nn.functional``)."""
    return apply(_ACT[name], x, *args, **static)


# ================================ softmax ========================================================
_softmax = defop("softmax", lambda x, dim: jax.nn.softmax(x, axis=dim), "SoftmaxBackward0", promote="float")
_log_softmax = defop("log_softmax", lambda x, dim: jax.nn.log_softmax(x, axis=dim),
                     "LogSoftmaxBackward0", promote="float")


def _softmax_dim(input, dim, name):
    """The wrapped ``dim`` (``()`` for a 0-d tensor); PyTorch's kernel error for a non-float
    input (its kernel name says whether ``dim`` is the last one)."""
    ndim = input.ndim
    if dim is None:  # PyTorch's legacy implicit choice (with a warning in nn.functional)
        dim = 0 if ndim in (0, 1, 3) else 1
    d = _wrap_dim(dim, ndim)
    if input.dtype._kind != "f" and input.numel():
        last = "lastdim_" if d == max(ndim - 1, 0) else ""
        raise kernel_error(f"{name}_{last}kernel_impl", input.dtype)
    return d if ndim else ()


@export("softmax")
def softmax(input: Tensor = REQUIRED, dim: int | None = None, dtype=None, *args, **numpy) -> Tensor:
    """``exp(x) / sum(exp(x))`` along ``dim`` (``SoftmaxBackward0``).

    >>> import funcgrad
    >>> funcgrad.tensor([1., 2., 3.]).softmax(0)
    tensor([0.0900, 0.2447, 0.6652])
    """
    if args or numpy:  # (NumPy's names, more arguments: as PyTorch's parser reads the call, _parser.rerun)
        return rerun(softmax)
    try:
        x = input if dtype is None else input.to(dtype)
        d = _softmax_dim(x, dim, "softmax")
        if x.dtype._kind not in "fc":  # (empty: _softmax_dim refuses the others) PyTorch keeps its dtype
            return x.clone()
        return apply(_softmax, x, dim=d)
    except TypeError:  # (PyTorch's, where its parser refuses the call)
        refuse(softmax)
        raise


@export("log_softmax")
def log_softmax(input: Tensor = REQUIRED, dim: int | None = None, dtype=None, *args, **numpy) -> Tensor:
    """``log(softmax(x))`` computed stably (``LogSoftmaxBackward0``)."""
    if args or numpy:  # (NumPy's names, more arguments: as PyTorch's parser reads the call, _parser.rerun)
        return rerun(log_softmax)
    try:
        x = input if dtype is None else input.to(dtype)
        d = _softmax_dim(x, dim, "log_softmax")
        if x.dtype._kind not in "fc":  # (empty: _softmax_dim refuses the others) PyTorch keeps its dtype
            return x.clone()
        return apply(_log_softmax, x, dim=d)
    except TypeError:  # (PyTorch's, where its parser refuses the call)
        refuse(log_softmax)
        raise


# ================================ convolution ====================================================
_DIMNUMS = {1: ("NCH", "OIH", "NCH"), 2: ("NCHW", "OIHW", "NCHW"), 3: ("NCDHW", "OIDHW", "NCDHW")}


def _conv(x, w, b, *, stride, padding, dilation, groups, transposed, output_padding):
    nd = x.ndim - 2
    if not transposed:
        y = lax.conv_general_dilated(x, w, window_strides=stride, padding=padding,
                                     rhs_dilation=dilation, feature_group_count=groups,
                                     dimension_numbers=_DIMNUMS[nd])
    else:
        # the gradient of a convolution: dilate the input by the stride, pad by d(k-1)-p, and
        # convolve with the flipped kernel whose in/out channels are swapped (per group)
        cin, cout_g = w.shape[0], w.shape[1]
        k = w.shape[2:]
        wg = w.reshape((groups, cin // groups, cout_g) + k)
        wg = jnp.swapaxes(wg, 1, 2).reshape((groups * cout_g, cin // groups) + k)
        wg = jnp.flip(wg, axis=tuple(range(2, 2 + nd)))
        pads = [(dilation[i] * (k[i] - 1) - padding[i][0],
                 dilation[i] * (k[i] - 1) - padding[i][1] + output_padding[i]) for i in range(nd)]
        y = lax.conv_general_dilated(x, wg, window_strides=(1,) * nd, padding=pads,
                                     lhs_dilation=stride, rhs_dilation=dilation,
                                     feature_group_count=groups, dimension_numbers=_DIMNUMS[nd])
    if b is not None:
        y = y + b.reshape((1, -1) + (1,) * nd)
    return y


_convolution = defop("convolution", _conv, "ConvolutionBackward0")


def convolution(x, w, b, *, stride, padding, dilation, groups, transposed=False, output_padding=None):
    """Run the convolution op; ``padding`` is a tuple of (low, high) pairs."""
    nd = x.ndim - 2
    return apply(_convolution, x, w, b, stride=tuple(stride), padding=tuple(tuple(p) for p in padding),
                 dilation=tuple(dilation), groups=int(groups), transposed=bool(transposed),
                 output_padding=tuple(output_padding) if output_padding is not None else (0,) * nd)


# ================================ pooling ========================================================
def _pool_geometry(size, k, s, p, d, ceil_mode):
    """(out, extra right padding) for one spatial dim, PyTorch's formula incl. ceil_mode."""
    eff = d * (k - 1) + 1
    num = size + 2 * p - eff
    out = (-(-num // s) if ceil_mode else num // s) + 1
    if ceil_mode and (out - 1) * s >= size + p:
        out -= 1
    extra = max((out - 1) * s + eff - (size + 2 * p), 0)
    return out, extra


def _max_pool(x, *, kernel, stride, padding, dilation, ceil_mode):
    if any(d != 1 for d in dilation):  # XLA has no VJP for dilated max windows: gather them
        return _max_pool_indices(x, kernel=kernel, stride=stride, padding=padding, dilation=dilation,
                                 ceil_mode=ceil_mode)[0]
    nd = len(kernel)
    pads = [(0, 0), (0, 0)]
    for i in range(nd):
        _, extra = _pool_geometry(x.shape[2 + i], kernel[i], stride[i], padding[i], dilation[i], ceil_mode)
        pads.append((padding[i], padding[i] + extra))
    # Python-scalar init values: lax recognises the max/add monoids (and differentiates them)
    # only for a concrete init, which an array created inside the trace is not
    init = -math.inf if jnp.issubdtype(x.dtype, jnp.floating) else int(jnp.iinfo(x.dtype).min)
    return lax.reduce_window(x, init, lax.max, (1, 1) + kernel, (1, 1) + stride,
                             pads, window_dilation=(1, 1) + dilation)


def _window_index(size, k, s, p, d, ceil_mode):
    """(out, k) source indices per output position (-1 where the window is in the padding)."""
    out, _ = _pool_geometry(size, k, s, p, d, ceil_mode)
    idx = np.arange(out)[:, None] * s - p + np.arange(k)[None, :] * d
    return np.where((idx >= 0) & (idx < size), idx, -1)


def _gather_windows(x, tables):
    """x (N, C, *S) → (N, C, *out, K) values (−inf outside), flat source indices, and which are
    inside the input."""
    nd = len(tables)
    spatial = x.shape[2:]
    grids = np.meshgrid(*[np.arange(t.shape[0]) for t in tables], *[np.arange(t.shape[1]) for t in tables],
                        indexing="ij")
    outs, ks = grids[:nd], grids[nd:]
    src = [tables[i][outs[i], ks[i]] for i in range(nd)]
    valid = np.all([s >= 0 for s in src], axis=0)
    flat = np.zeros_like(src[0])
    for i in range(nd):
        flat = flat * spatial[i] + np.clip(src[i], 0, None)
    # reorder to (*out, *k) → (*out, K)
    out_shape = tuple(t.shape[0] for t in tables)
    flat = flat.reshape(out_shape + (-1,))
    valid = valid.reshape(out_shape + (-1,))
    xf = x.reshape(x.shape[:2] + (-1,))
    vals = jnp.take(xf, jnp.asarray(flat.reshape(-1)), axis=2).reshape(x.shape[:2] + flat.shape)
    vals = jnp.where(jnp.asarray(valid), vals, -jnp.inf)
    return vals, flat, jnp.asarray(valid)


def _max_pool_indices(x, *, kernel, stride, padding, dilation, ceil_mode):
    tables = [_window_index(x.shape[2 + i], kernel[i], stride[i], padding[i], dilation[i], ceil_mode)
              for i in range(len(kernel))]
    vals, flat, valid = _gather_windows(x, tables)
    am = _torch_pick(vals, valid)
    idx = jnp.take_along_axis(jnp.broadcast_to(jnp.asarray(flat), vals.shape), am[..., None], -1)[..., 0]
    out = jnp.take_along_axis(vals, am[..., None], -1)[..., 0]
    return out, idx.astype(jnp.int64)


def _torch_pick(vals, valid=None):
    """The window element PyTorch's CPU max-pool kernels pick along the last axis: each element
    replaces the chosen one when ``val > max || isnan(val)``, so the last NaN, else the first of
    the tied maxima (jnp.argmax takes the first NaN; XLA's select rule moves past a NaN)."""
    if not jnp.issubdtype(vals.dtype, jnp.floating):
        return jnp.argmax(vals, axis=-1)
    isn = jnp.isnan(vals)
    last_nan = vals.shape[-1] - 1 - jnp.argmax(isn[..., ::-1], axis=-1)
    # the first maximum among the window's own elements: the padding (-inf) never wins, not
    # even over a window whose elements are all -inf (PyTorch starts at its first element)
    m = jnp.max(jnp.where(isn, -jnp.inf, vals), axis=-1, keepdims=True)
    hit = vals == m if valid is None else (vals == m) & valid
    return jnp.where(isn.any(-1), last_nan, jnp.argmax(hit, axis=-1))


def _max_pool_jvp(primals, tangents, out, *, kernel, stride, padding, dilation, ceil_mode):
    """PyTorch's max-pool derivative: the gradient goes to the element its kernel picks (the last
    NaN of a window, else the first of the tied maxima: ``_torch_pick``), the rule behind
    ``MaxPool2DWithIndicesBackward0``'s indices. jax's rule (``select_and_scatter_add``) moves
    past a NaN, so it is not used; it also takes XLA:CPU over a second to compile for a small
    CNN's backward. Windows that tile the input (stride == kernel, no padding or dilation:
    ``nn.MaxPool2d(2)``) are a reshape; others are gathered (``_gather_windows``). The tangent
    map gathers the picked element's tangent; its transpose adds into zeros.
    """
    (x,), (t,) = primals, tangents
    outs = tuple(s // k for s, k in zip(x.shape[2:], kernel))
    if (tuple(stride) != tuple(kernel) or any(padding) or any(d != 1 for d in dilation)
            or tuple(out.shape[2:]) != outs):
        tables = [_window_index(x.shape[2 + i], kernel[i], stride[i], padding[i], dilation[i], ceil_mode)
                  for i in range(len(kernel))]
        vals, flat, valid = _gather_windows(x, tables)
        src = jnp.take_along_axis(jnp.broadcast_to(jnp.asarray(flat), vals.shape),
                                  _torch_pick(vals, valid)[..., None], -1)[..., 0]
        tf = t.reshape(t.shape[:2] + (-1,))
        return jnp.take_along_axis(tf, src.reshape(src.shape[:2] + (-1,)), -1).reshape(out.shape)
    nd = len(kernel)

    def windows(v):  # (N, C, *S) -> (N, C, *out, prod(kernel)), window elements in row-major order
        v = v[(slice(None), slice(None)) + tuple(slice(0, o * k) for o, k in zip(outs, kernel))]
        v = v.reshape(v.shape[:2] + tuple(d for o, k in zip(outs, kernel) for d in (o, k)))
        v = v.transpose((0, 1) + tuple(range(2, 2 + 2 * nd, 2)) + tuple(range(3, 3 + 2 * nd, 2)))
        return v.reshape(v.shape[:2 + nd] + (-1,))
    pick = _torch_pick(windows(x))
    return jnp.take_along_axis(windows(t), pick[..., None], -1)[..., 0]


_max_pool2d = defop("max_pool2d", _max_pool, "MaxPool2DWithIndicesBackward0", jvp=_max_pool_jvp)
_max_pool3d = defop("max_pool3d", _max_pool, "MaxPool3DWithIndicesBackward0", jvp=_max_pool_jvp)
_max_pool2d_idx = defop("max_pool2d_with_indices", _max_pool_indices, "MaxPool2DWithIndicesBackward0",
                        diff_outputs=(0,))


def _avg_pool(x, *, kernel, stride, padding, ceil_mode, count_include_pad, divisor_override):
    nd = len(kernel)
    pads, spatial = [(0, 0), (0, 0)], x.shape[2:]
    for i in range(nd):
        _, extra = _pool_geometry(spatial[i], kernel[i], stride[i], padding[i], 1, ceil_mode)
        pads.append((padding[i], padding[i] + extra))
    win, strides = (1, 1) + kernel, (1, 1) + stride
    total = lax.reduce_window(x, 0.0 if jnp.issubdtype(x.dtype, jnp.floating) else 0, lax.add, win,
                              strides, pads)
    if divisor_override:
        return total / divisor_override
    # divisor per output position (static): windows clipped to the input (+ its padding if
    # count_include_pad), never counting the extra ceil_mode padding
    if count_include_pad:  # the window may cover the zero padding p but not the ceil_mode extra
        ones = np.ones((1, 1) + tuple(n + 2 * p for n, p in zip(spatial, padding)), np.float64)
        cpads = [(0, 0), (0, 0)] + [(0, hi - p) for (_, hi), p in zip(pads[2:], padding)]
    else:
        ones, cpads = np.ones((1, 1) + spatial, np.float64), pads
    cnt = lax.reduce_window(jnp.asarray(ones), 0.0, lax.add, win, strides, cpads)
    return (total / cnt.astype(x.dtype)).astype(x.dtype)


_avg_pool2d = defop("avg_pool2d", _avg_pool, "AvgPool2DBackward0", promote="none")
_avg_pool3d = defop("avg_pool3d", _avg_pool, "AvgPool3DBackward0", promote="none")


def _adaptive_bins(size, out):
    starts = [(i * size) // out for i in range(out)]
    ends = [-(-((i + 1) * size) // out) for i in range(out)]
    return starts, ends


def _adaptive_matrix(size, out):
    m = np.zeros((out, size))
    for i, (s, e) in enumerate(zip(*_adaptive_bins(size, out))):
        m[i, s:e] = 1.0 / (e - s)
    return m


def _adaptive_avg(x, *, output_size):
    # separable: each spatial dim is averaged over its bins by a static (out, in) matrix
    for i, o in enumerate(output_size):
        ax = 2 + i
        m = jnp.asarray(_adaptive_matrix(x.shape[ax], o), x.dtype)
        x = jnp.moveaxis(jnp.tensordot(x, m, axes=[[ax], [1]]), -1, ax)
    return x


_adaptive_avg_pool2d = defop("adaptive_avg_pool2d", _adaptive_avg, "AdaptiveAvgPool2DBackward0")
_adaptive_avg_pool3d = defop("adaptive_avg_pool3d", _adaptive_avg, "AdaptiveAvgPool3DBackward0")


def _adaptive_table(size, out):
    starts, ends = _adaptive_bins(size, out)
    kmax = max(e - s for s, e in zip(starts, ends))
    idx = np.full((out, kmax), -1)
    for i, (s, e) in enumerate(zip(starts, ends)):
        idx[i, :e - s] = np.arange(s, e)
    return idx


def _adaptive_max(x, *, output_size):
    tables = [_adaptive_table(x.shape[2 + i], o) for i, o in enumerate(output_size)]
    vals, flat, valid = _gather_windows(x, tables)
    am = _torch_pick(vals, valid)
    out = jnp.take_along_axis(vals, am[..., None], -1)[..., 0]
    idx = jnp.take_along_axis(jnp.broadcast_to(jnp.asarray(flat), vals.shape), am[..., None], -1)[..., 0]
    return out, idx.astype(jnp.int64)


_adaptive_max_pool2d = defop("adaptive_max_pool2d", _adaptive_max, "AdaptiveMaxPool2DBackward0",
                             diff_outputs=(0,))

# ================================ normalisation ==================================================


def _bcast(v, ndim):
    return v.reshape((1, -1) + (1,) * (ndim - 2))


def _batch_norm(x, rm, rv, w, b, momentum, *, training, eps, tile):
    """→ (y, new running mean, new running var). ``tile`` > 1: instance norm over a (1, N*C, ...)
    view, with per-channel parameters/stats repeated ``tile`` times (stats averaged back).

    A channel's sums in float64, as PyTorch's CPU kernel (batch_norm_kernel.cpp) adds them
    (``_sums``' ``wide``): the statistics here, and the backward's sums of dy and dy * x_hat,
    which jax.vjp makes of the ``spread`` broadcasts below (XLA's float32 sum over the batch axes
    was 500x less accurate than PyTorch's on 32x64x56x56)."""
    if tile > 1:
        w = None if w is None else jnp.tile(w, tile)
        b = None if b is None else jnp.tile(b, tile)
        rm_t = None if rm is None else jnp.tile(rm, tile)
        rv_t = None if rv is None else jnp.tile(rv, tile)
    else:
        rm_t, rv_t = rm, rv
    axes = (0,) + tuple(range(2, x.ndim))
    n = x.size // x.shape[1]

    def spread(v):  # a per-channel value over x's shape (its transpose: a per-channel acc_sum)
        return acc_broadcast(v, x.shape, axes, wide=True)
    if training:
        # statistics in at least float32 (PyTorch accumulates half-precision batch stats in float)
        xc = x.astype(jnp.promote_types(x.dtype, jnp.float32))
        mean = true_divide(acc_sum(xc, axes, wide=True), n)
        d = xc - spread(mean)
        var_sum = acc_sum(jnp.square(d), axes, wide=True)
        y = d * spread(lax.rsqrt(true_divide(var_sum, n) + eps))
        y = y.astype(x.dtype)
    else:
        mean, var = rm_t, rv_t
        y = (x - _bcast(mean, x.ndim).astype(x.dtype)) * _bcast(lax.rsqrt(var + eps), x.ndim).astype(x.dtype)
    if w is not None:
        y = y * spread(w)
    if b is not None:
        y = y + spread(b)
    new_rm, new_rv = rm, rv
    if training and rm is not None:
        unbiased = true_divide(var_sum, max(n - 1, 1))  # (PyTorch: var_sum / (n - 1))
        mean_s, var_s = lax.stop_gradient(mean), lax.stop_gradient(unbiased)
        if tile > 1:
            mean_s, var_s = mean_s.reshape(tile, -1).mean(0), var_s.reshape(tile, -1).mean(0)
        new_rm = ((1 - momentum) * rm + momentum * mean_s).astype(rm.dtype)
        new_rv = ((1 - momentum) * rv + momentum * var_s).astype(rv.dtype)
    return y, new_rm, new_rv


_batch_norm_op = defop("batch_norm", _batch_norm, "NativeBatchNormBackward0", diff=(0, 3, 4),
                       diff_outputs=(0,))


def batch_norm_op(x, rm, rv, w, b, momentum, training, eps, tile=1):
    """``(y, new_running_mean, new_running_var)``; the running stats are not written here."""
    return apply(_batch_norm_op, x, rm, rv, w, b, momentum, training=bool(training), eps=float(eps),
                 tile=int(tile))


def _layer_norm(x, w, b, *, n, eps):
    # (acc_sum / acc_broadcast: over several axes, sums structured as PyTorch's, see _sums.py;
    # XLA's own were 300x less accurate for LayerNorm([64, 56, 56]))
    axes = tuple(range(x.ndim - n, x.ndim))
    lead = tuple(range(x.ndim - n))
    count = int(np.prod(x.shape[x.ndim - n:]))
    xc = x.astype(jnp.promote_types(x.dtype, jnp.float32))
    mean = acc_sum(xc, axes, keepdims=True) / count
    d = xc - acc_broadcast(mean, x.shape, axes)
    var = acc_sum(jnp.square(d), axes, keepdims=True) / count
    y = (d * acc_broadcast(lax.rsqrt(var + eps), x.shape, axes)).astype(x.dtype)
    if w is not None:
        y = y * acc_broadcast(w, x.shape, lead)
    if b is not None:
        y = y + acc_broadcast(b, x.shape, lead)
    return y


_layer_norm_op = defop("layer_norm", _layer_norm, "NativeLayerNormBackward0")


def _group_norm(x, w, b, *, groups, eps):
    n, c = x.shape[:2]
    xg = x.reshape((n, groups, -1)).astype(jnp.promote_types(x.dtype, jnp.float32))
    mean = jnp.mean(xg, axis=-1, keepdims=True)
    var = jnp.mean(jnp.square(xg - mean), axis=-1, keepdims=True)
    y = ((xg - mean) * lax.rsqrt(var + eps)).reshape(x.shape).astype(x.dtype)
    axes = (0,) + tuple(range(2, x.ndim))  # (the parameters' gradients: sums as _sums.py's)
    if w is not None:
        y = y * acc_broadcast(w, x.shape, axes)
    if b is not None:
        y = y + acc_broadcast(b, x.shape, axes)
    return y


_group_norm_op = defop("group_norm", _group_norm, "NativeGroupNormBackward0")


def _normalize(x, *, p, dim, eps):
    if p == 2:
        nrm = jnp.sqrt(jnp.sum(jnp.square(x), axis=dim, keepdims=True))
    elif p == math.inf:
        nrm = jnp.max(jnp.abs(x), axis=dim, keepdims=True)
    else:
        nrm = jnp.sum(jnp.abs(x) ** p, axis=dim, keepdims=True) ** (1.0 / p)
    return x / jnp.maximum(nrm, eps)


_normalize_op = defop("normalize", _normalize, "DivBackward0", promote="float")


def _cosine_similarity(x1, x2, *, dim, eps):
    # PyTorch: sum(x1*x2) / sqrt(clamp_min(|x1|² * |x2|², eps²))
    w12 = jnp.sum(x1 * x2, axis=dim)
    n12 = jnp.sum(jnp.square(x1), axis=dim) * jnp.sum(jnp.square(x2), axis=dim)
    return w12 / jnp.sqrt(jnp.maximum(n12, eps * eps))


# one kernel named as PyTorch's composite's last node: ((x1 / |x1|) * (x2 / |x2|)).sum(dim)
_cosine_op = defop("cosine_similarity", _cosine_similarity, "SumBackward1", promote="binary_float")


def _pairwise_distance(x1, x2, *, p, eps, keepdim):
    d = x1 - x2 + eps
    if p == math.inf:
        return jnp.max(jnp.abs(d), axis=-1, keepdims=keepdim)
    if p == 2:  # safe at 0: the gradient of sqrt(sum d²) is 0 there, as PyTorch's norm
        s = jnp.sum(jnp.square(d), axis=-1, keepdims=keepdim)
        safe = jnp.where(s > 0, s, 1.0)
        return jnp.where(s > 0, jnp.sqrt(safe), 0.0)
    return jnp.sum(jnp.abs(d) ** p, axis=-1, keepdims=keepdim) ** (1.0 / p)


_pairwise_op = defop("pairwise_distance", _pairwise_distance, "NormBackward1", promote="binary_float")

# ================================ dropout, embedding =============================================


def _dropout(x, noise):
    # PyTorch's CPU dropout: noise = bernoulli_(1 - p) / (1 - p) in x's dtype, then x * noise
    return x * noise


_dropout_op = defop("dropout", _dropout, "MulBackward0", diff=(0,))


def dropout_op(x, noise):
    """``x * noise`` (the scaled keep mask; no gradient flows to it)."""
    return apply(_dropout_op, x, noise)


def _embedding(w, idx, *, padding_idx):
    out = jnp.take(w, idx, axis=0)
    if padding_idx is not None:  # the padding row gets no gradient
        out = jnp.where((idx == padding_idx)[..., None], lax.stop_gradient(out), out)
    return out


def _embedding_host(w, idx, *, padding_idx):
    # (the padding row differs in its gradient only; an index out of range is the kernel's)
    if idx.dtype.kind not in "iu" or idx.size and not (0 <= idx.min() and idx.max() < w.shape[0]):
        raise IndexError("the kernel's indices")
    host_exact(w)
    return np.take(w, idx, axis=0)


_embedding_op = defop("embedding", _embedding, "EmbeddingBackward0", diff=(0,), host=_embedding_host)


def embedding_op(weight, idx, padding_idx):
    return apply(_embedding_op, weight, idx, padding_idx=padding_idx)


# ================================ resampling ======================================================


def _linear_matrix(size, out, align_corners, scale):
    m = np.zeros((out, size))
    for i in range(out):
        if align_corners:
            src = i * (size - 1) / (out - 1) if out > 1 else 0.0
        else:
            src = max((i + 0.5) * scale - 0.5, 0.0)
        i0 = min(int(math.floor(src)), size - 1)
        i1 = min(i0 + 1, size - 1)
        lam = src - i0
        m[i, i0] += 1 - lam
        m[i, i1] += lam
    return m


def _upsample_linear(x, *, size, align_corners, scales):
    for i, o in enumerate(size):
        ax = 2 + i
        m = jnp.asarray(_linear_matrix(x.shape[ax], o, align_corners, scales[i]), x.dtype)
        x = jnp.moveaxis(jnp.tensordot(x, m, axes=[[ax], [1]]), -1, ax)
    return x


def _upsample_nearest(x, *, size, scales):
    for i, o in enumerate(size):
        ax = 2 + i
        idx = np.minimum(np.floor(np.arange(o) * scales[i]).astype(np.int64), x.shape[ax] - 1)
        x = jnp.take(x, jnp.asarray(idx), axis=ax)
    return x


_UPSAMPLE = {
    ("nearest", 1): defop("upsample_nearest1d", _upsample_nearest, "UpsampleNearest1DBackward0"),
    ("nearest", 2): defop("upsample_nearest2d", _upsample_nearest, "UpsampleNearest2DBackward0"),
    ("nearest", 3): defop("upsample_nearest3d", _upsample_nearest, "UpsampleNearest3DBackward0"),
    ("linear", 1): defop("upsample_linear1d", _upsample_linear, "UpsampleLinear1DBackward0"),
    ("bilinear", 2): defop("upsample_bilinear2d", _upsample_linear, "UpsampleBilinear2DBackward0"),
    ("trilinear", 3): defop("upsample_trilinear3d", _upsample_linear, "UpsampleTrilinear3DBackward0"),
}


def upsample_op(x, mode, size, scales, align_corners):
    op = _UPSAMPLE[(mode, x.ndim - 2)]
    if mode == "nearest":
        return apply(op, x, size=tuple(size), scales=tuple(scales))
    return apply(op, x, size=tuple(size), align_corners=bool(align_corners), scales=tuple(scales))


def _pixel_shuffle(x, *, r):
    *lead, c, h, w = x.shape
    x = x.reshape(tuple(lead) + (c // (r * r), r, r, h, w))
    n = len(lead)
    x = jnp.transpose(x, tuple(range(n)) + (n, n + 3, n + 1, n + 4, n + 2))
    return x.reshape(tuple(lead) + (c // (r * r), h * r, w * r))


def _pixel_unshuffle(x, *, r):
    *lead, c, h, w = x.shape
    x = x.reshape(tuple(lead) + (c, h // r, r, w // r, r))
    n = len(lead)
    x = jnp.transpose(x, tuple(range(n)) + (n, n + 2, n + 4, n + 1, n + 3))
    return x.reshape(tuple(lead) + (c * r * r, h // r, w // r))


_pixel_shuffle_op = defop("pixel_shuffle", _pixel_shuffle, "PixelShuffleBackward0", linear=True)
_pixel_unshuffle_op = defop("pixel_unshuffle", _pixel_unshuffle, "PixelUnshuffleBackward0", linear=True)


def _bilinear(x1, x2, w):
    return jnp.einsum("...i,oij,...j->...o", x1, w, x2)


_bilinear_op = defop("bilinear", _bilinear, "TrilinearBackward0", promote="binary")
