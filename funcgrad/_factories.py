"""Tensor creation: ``tensor``, ``zeros``, ``arange``, random factories… (PyTorch's signatures)."""

from __future__ import annotations

import math
from fractions import Fraction

import jax
import jax.numpy as jnp
import numpy as np

from . import _cache, _dtype, _meta, _numpy_share, _strides, _tensor
from ._broadcast import infer_size
from ._random import _multinomial, _sample
from ._device import jax_device, put
from ._errors import RESIZED_OUTPUT, warn_at_user
from ._runtime import get_num_threads as _get_num_threads
from ._tensor import Size, Tensor, _scalar_type_name
from ._grad_mode import _state as _inference_mode


def _device_first(device) -> bool:
    """A sampler's ``device`` checked before it draws: a bad one (PyTorch's error) leaves the
    generator where it was, as PyTorch's parser refuses it before any kernel runs. True for the
    meta device (``device`` or the default): the sampler draws nothing, as PyTorch's meta ones."""
    if device is not None:
        jax_device(device)
    return _meta.wants(device)


def _filled(shape, fill, np_dtype, device):
    """``fill_array``'s array, or on the meta device its shape and dtype only (nothing made)."""
    if _meta.wants(device):
        return _meta.MetaArray(shape, np_dtype)
    return fill_array(shape, fill, np_dtype)


def _finish(value, requires_grad=False, device=None) -> Tensor:
    if device is not None:
        jd = jax_device(device)
        if jd is _meta.DEVICE:  # (a meta tensor: the shape and dtype, funcgrad/_meta.py)
            value = _meta.of(value)
        elif not isinstance(value, jax.core.Tracer) and jd not in value.devices():
            value = jax.device_put(value, jd)
    elif _meta.DEFAULT[0]:
        value = _meta.of(value)
    t = Tensor._wrap(value)
    if _inference_mode.inference:  # made under inference_mode: an inference tensor
        t._ver = None
    if requires_grad:
        if not (t.dtype.is_floating_point or t.dtype.is_complex):  # factories' capitalised wording
            raise RuntimeError("Only Tensors of floating point and complex dtype can require gradients")
        t.requires_grad = True
    return t


def _infer(data):
    """(numpy array, dtype) for nested Python data, honouring PyTorch's inference rules."""
    if isinstance(data, Tensor):
        return None, data.dtype
    if isinstance(data, (jax.Array, np.ndarray, np.generic)):
        return data, _dtype.from_np(data.dtype)
    flat = []

    def walk(x):
        if isinstance(x, (list, tuple)):
            for e in x:
                walk(e)
        else:
            flat.append(x)
    walk(data)
    kinds = set()
    for x in flat:
        if isinstance(x, Tensor):
            kinds.add(x.dtype._kind)
        elif isinstance(x, (bool, np.bool_)):
            kinds.add("b")
        elif isinstance(x, (int, np.integer)):
            kinds.add("i")
        elif isinstance(x, (float, np.floating)):
            kinds.add("f")
        elif isinstance(x, complex):
            kinds.add("c")
        else:
            raise TypeError(f"Could not infer dtype of {type(x).__name__}")
    if "c" in kinds:
        d = _dtype.get_default_dtype().to_complex()
    elif "f" in kinds:
        d = _dtype.get_default_dtype()
    elif "i" in kinds:
        d = _dtype.int64
    elif "b" in kinds:
        d = _dtype.bool_
    else:
        d = _dtype.get_default_dtype()  # empty list
    return None, d


def _to_array(data, d):
    if isinstance(data, Tensor):
        return data._value.astype(d.np)
    if isinstance(data, jax.Array):
        return data.astype(d.np)
    if isinstance(data, (list, tuple)) and any(isinstance(x, Tensor) for x in _iter_flat(data)):
        return jnp.asarray(_materialise(data), d.np)
    try:
        arr = np.array(data, dtype=d.np)  # a copy of its own: put() may share its memory
    except ValueError as e:
        raise ValueError(str(e).replace("setting an array element with a sequence.",
                                        "expected sequence of equal length")) from None
    return put(arr)


def _iter_flat(x):
    if isinstance(x, (list, tuple)):
        for e in x:
            yield from _iter_flat(e)
    else:
        yield x


def _materialise(x):
    if isinstance(x, (list, tuple)):
        return [_materialise(e) for e in x]
    return np.asarray(x._value) if isinstance(x, Tensor) else x


def tensor(data, *, dtype=None, device=None, requires_grad=False, pin_memory=False) -> Tensor:
    """A new leaf tensor holding a copy of ``data`` (list, number, NumPy/JAX array, Tensor).

    >>> import funcgrad
    >>> funcgrad.tensor([1, 2]).dtype, funcgrad.tensor([1., 2.]).dtype
    (funcgrad.int64, funcgrad.float32)
    """
    if isinstance(data, Tensor):
        import warnings
        warnings.warn("To copy construct from a tensor, it is recommended to use sourceTensor.clone()."
                      "detach() or sourceTensor.clone().detach().requires_grad_(True), rather than "
                      "torch.tensor(sourceTensor).", UserWarning, stacklevel=2)
    _, inferred = _infer(data)
    d = _dtype.to_dtype(dtype) if dtype is not None else inferred
    return _finish(_to_array(data, d), requires_grad, device)


def as_tensor(data, dtype=None, device=None) -> Tensor:
    """Like ``tensor`` but returns ``data`` itself when it already is a matching Tensor."""
    if isinstance(data, Tensor) and (dtype is None or _dtype.to_dtype(dtype) is data.dtype) and device is None:
        return data
    if isinstance(data, Tensor):
        return data.to(device=device, dtype=dtype) if device is not None or dtype is not None else data
    _, inferred = _infer(data)
    d = _dtype.to_dtype(dtype) if dtype is not None else inferred
    return _finish(_to_array(data, d), False, device)


asarray = as_tensor


def from_numpy(ndarray: np.ndarray) -> Tensor:
    """A tensor sharing memory with a NumPy array, as PyTorch's: writes through either show in
    the other (on CPU; see funcgrad/_numpy_share.py for how, and what is not shared).

    >>> import numpy as np, funcgrad
    >>> a = np.ones(3)
    >>> t = funcgrad.from_numpy(a)
    >>> _ = np.add(a, 1, out=a)
    >>> t
    tensor([2., 2., 2.], dtype=funcgrad.float64)
    """
    if not isinstance(ndarray, np.ndarray):
        raise TypeError(f"expected np.ndarray (got {type(ndarray).__name__})")
    t = Tensor._wrap(put(ndarray.astype(_dtype.from_np(ndarray.dtype).np, copy=True)))
    return _numpy_share.share_numpy(t, ndarray)


_tensor.register_above(from_numpy=from_numpy)  # Tensor.__array_wrap__: a NumPy ufunc's result


def from_jax(array) -> Tensor:
    """Wrap a ``jax.Array`` (or tracer) as a leaf Tensor without copying."""
    return Tensor._wrap(jnp.asarray(array))


def _size(dims, **kw):
    size = dims
    if "size" in kw:  # zeros(size=(2, 3)), as PyTorch accepts
        if size:
            raise TypeError("size given both positionally and as a keyword")
        size = (kw.pop("size"),)
    if kw:
        raise TypeError(f"got an unexpected keyword argument '{next(iter(kw))}'")
    if len(size) == 1 and isinstance(size[0], (tuple, list, Size)):
        size = size[0]
    for s in size:
        if not isinstance(s, (int, np.integer)) and not (isinstance(s, Tensor) and s.numel() == 1):
            raise TypeError(f"zeros(): argument 'size' must be tuple of ints, but found element of "
                            f"type {type(s).__name__}")
        if int(s) < 0:
            raise RuntimeError(f"Trying to create tensor with negative dimension {int(s)}: "
                               f"[{', '.join(str(int(x)) for x in size)}]")
    return tuple(int(s) for s in size)


def _dt(dtype, default=None, out=None):
    """The dtype a factory makes: ``dtype``, else ``default`` or the default float; with ``out=``,
    out's own (a ``dtype`` other than out's is PyTorch's error)."""
    if out is not None:
        if dtype is not None and _dtype.to_dtype(dtype) is not out.dtype:
            raise RuntimeError(f"dtype {_scalar_type_name(_dtype.to_dtype(dtype))} does not match dtype of "
                               f"out parameter ({_scalar_type_name(out.dtype)})")
        return out.dtype
    return _dtype.to_dtype(dtype) if dtype is not None else (default or _dtype.get_default_dtype())


def _kernel_dtypes(kernel: str, d, kinds: str):
    """PyTorch's NotImplementedError for a sampling kernel not made for ``d``'s kind (``kinds``:
    those it takes, of "bifc" plus "b" for bool: e.g. uniform and normal floats only)."""
    if d._kind not in kinds:
        raise NotImplementedError(f'"{kernel}" not implemented for \'{_scalar_type_name(d)}\'')


def factory_out(r: Tensor, out, keep_numel: bool = False) -> Tensor:
    """``r`` written into ``out`` as PyTorch's factory ``out=`` variants write it: ``out`` takes
    r's shape (resized in place, with no warning: ``resize_``), then r's values, and requires
    grad if ``r`` was made to (``requires_grad=True``); ``out`` is returned. With ``keep_numel``
    (``arange``, ``linspace``, ``logspace``, ``range``), an ``out`` of as many elements keeps
    its shape. ``r`` itself without ``out``."""
    if out is None:
        return r
    rg, r = r._requires_grad, r.detach()
    if out.shape != r.shape:
        if keep_numel and out.numel() == r.numel():
            r = r.reshape(out.shape)
        else:
            out.resize_(r.shape)
    out.copy_(r)
    return out.requires_grad_() if rg else out


# eager jnp.full costs ~300 µs a call; a jitted one specialised on shape/dtype ~5 µs
_full_jit = _cache.Kernel(lambda fill, shape, dtype: jnp.full(shape, fill, dtype), "full",
                          static_argnums=(1, 2))


# A fill of a (shape, dtype) seen fewer than HOST_FILLS times is made by NumPy and transferred
# (~0.1 ms, nothing compiled): a model's construction fills each parameter and buffer shape a
# few times (empty, zeros/ones, then zero_/fill_ per layer), and compiling a kernel for each cost
# 30-100 ms cold. A fill that keeps coming back (zeros() in a loop) compiles then and runs at the
# kernel's ~5 µs. Either way the same array: which path ran changes no bit.
# Only fills NumPy rounds as XLA does: a Python bool/int/float into bool, integer, float32 or
# float64 (ints into floats while exact; no subnormal float, which the kernel flushes to zero),
# outside any trace.
HOST_FILLS = 32
_HOST_MAX = 1 << 20  # elements: beyond, the host buffer and its copy cost more than a compile
_fills_seen: dict = {}
_HOST_FLOAT = (np.dtype(np.float32), np.dtype(np.float64))
_HOST_INT = tuple(np.dtype(t) for t in (np.int8, np.int16, np.int32, np.int64, np.uint8))


def host_full(shape: tuple, fill, np_dtype: np.dtype):
    """``jnp.full(shape, fill, np_dtype)`` made on the host, or None where the kernel must run
    (a fill that repeats, a traced or array fill, a rounding NumPy might do otherwise)."""
    t = type(fill)
    if t is bool:
        ok = np_dtype in _HOST_FLOAT or np_dtype in _HOST_INT or np_dtype == np.bool_
    elif t is int:
        if np_dtype in _HOST_FLOAT:
            ok = -(1 << 24) <= fill <= 1 << 24
        elif np_dtype in _HOST_INT:
            info = np.iinfo(np_dtype)
            ok = info.min <= fill <= info.max
        else:
            ok = False
    elif t is float:
        # not a value that is subnormal in the dtype: XLA:CPU's kernels flush those to zero
        ok = np_dtype in _HOST_FLOAT and not 0 < abs(np_dtype.type(fill)) < np.finfo(np_dtype).tiny
    else:
        return None
    if not ok or math.prod(shape) > _HOST_MAX or not _cache.trace_clean() \
            or not _host_turn(_fills_seen, (shape, np_dtype)):
        return None
    return put(np.full(shape, fill, np_dtype))


def _host_turn(seen: dict, key, limit: int = HOST_FILLS) -> bool:
    """Count one host-made array for ``key`` in ``seen``; False once it has had ``limit``
    (it keeps coming back: the kernel compiles and runs from then on)."""
    n = seen.get(key, 0)
    if n >= limit:
        return False
    if len(seen) >= 4096:  # bounded: a forgotten shape only gets its host arrays again
        seen.clear()
    seen[key] = n + 1
    return True


def is_host_cpu(v) -> bool:
    """``v`` is a concrete, uncommitted ``jax.Array`` on the CPU: a NumPy-made replacement,
    transferred by ``put``, lands where the kernel's result would."""
    return (isinstance(v, jax.Array) and not isinstance(v, jax.core.Tracer) and not v.committed
            and next(iter(v.devices())).platform == "cpu")


_copies_seen: dict = {}


def host_copy(src, dst):
    """``copy_``'s result, ``src`` into ``dst``'s place, made on the host while the (shape, dtype)
    is new (as ``host_full``: ``load_state_dict`` copies each parameter shape once, and a
    kernel per shape cost 20-70 ms cold), or None where the kernel must run: other shapes or
    dtypes (a broadcast or cast), committed or non-CPU arrays (the kernel's result keeps their
    placement), tracers, large arrays, a copy that keeps coming back. The same bits either way."""
    if (type(src) is not type(dst) or not is_host_cpu(src) or dst.committed
            or src.shape != dst.shape or src.dtype != dst.dtype
            or src.size > _HOST_MAX or not _cache.trace_clean()
            or not _host_turn(_copies_seen, (src.shape, src.dtype))):
        return None
    return put(np.array(src))


def fill_array(shape, fill, np_dtype):
    """``jnp.full(shape, fill, np_dtype)``: made on the host where that gives the same array
    (``host_full``), else by the fill kernel."""
    if isinstance(fill, Tensor):
        fill = fill._value
    shape, np_dtype = tuple(shape), np.dtype(np_dtype)
    v = host_full(shape, fill, np_dtype)
    return _full_jit(fill, shape, np_dtype) if v is None else v


def _constant(fill):
    def f(*size, dtype=None, device=None, requires_grad=False, out=None, layout=None, pin_memory=False,
          **kw):
        d = _dt(dtype, _dtype.scalar_dtype(fill) if isinstance(fill, bool) else None, out)
        r = _finish(_filled(_size(size, **kw), fill, d.np, device), requires_grad, device)
        return factory_out(r, out)
    return f


zeros = _constant(0)
zeros.__name__ = "zeros"
zeros.__doc__ = "A tensor of zeros of the given size (default dtype float32)."
ones = _constant(1)
ones.__name__ = "ones"
ones.__doc__ = "A tensor of ones of the given size."
empty = _constant(0)
empty.__name__ = "empty"
empty.__doc__ = "An 'uninitialised' tensor: zeros (XLA has no uninitialised memory)."


def full(size, fill_value, *, out=None, dtype=None, device=None, requires_grad=False) -> Tensor:
    kind = fill_value.dtype if isinstance(fill_value, Tensor) else _dtype.scalar_dtype(fill_value)
    d = _dt(dtype, kind, out)
    if out is not None and d._kind in "bi" and type(fill_value) is float:  # (out's fill_: truncated)
        fill_value = int(fill_value) if d._kind == "i" else bool(fill_value)
    shape = _size((size,) if isinstance(size, int) else size)
    return factory_out(_finish(_filled(shape, fill_value, d.np, device), requires_grad, device), out)


def _like(fn):
    def f(input, *args, dtype=None, device=None, requires_grad=False, memory_format=None, layout=None):
        _strides.check_memory_format(memory_format, f.__name__, input.ndim)  # (the result is row-major)
        if device is None and type(input._value) is _meta.MetaArray:  # (a meta input's device)
            device = "meta"
        return fn(*((input.shape,) + args), dtype=dtype or input.dtype, device=device,
                  requires_grad=requires_grad)
    return f


zeros_like = _like(zeros)
ones_like = _like(ones)
empty_like = _like(empty)
full_like = _like(lambda shape, v, **k: full(shape, v, **k))
for _f, _n in [(zeros_like, "zeros_like"), (ones_like, "ones_like"), (empty_like, "empty_like"),
               (full_like, "full_like")]:
    _f.__name__ = _f.__qualname__ = _n


def eye(n, m=None, *, out=None, dtype=None, device=None, requires_grad=False) -> Tensor:
    return factory_out(_finish(jnp.eye(n, n if m is None else m, dtype=_dt(dtype, None, out).np),
                         requires_grad, device), out)


def arange(start, end=None, step=1, *, out=None, dtype=None, device=None, requires_grad=False) -> Tensor:
    """``arange(end)``, ``arange(start, end, step)``: int64 for integer args, else default float
    (with ``out=``, out's dtype; an ``out`` of as many elements keeps its shape, as PyTorch's)."""
    if out is not None:
        r = arange(start, end, step, dtype=_dt(dtype, None, out), device=device, requires_grad=requires_grad)
        if out.numel() != r.numel():
            warn_at_user(f"The number of elements in the out tensor of shape {list(out.shape)} is "
                         f"{out.numel()} which does not match the computed number of elements {r.numel()}. "
                         "Note that this may occur as a result of rounding error. The out tensor will be "
                         f"resized to a tensor of shape ({r.numel()},).", UserWarning)
        return factory_out(r, out, True)
    if end is None:
        start, end = 0, start
    vals = [v.item() if isinstance(v, Tensor) else v for v in (start, end, step)]
    if step == 0:
        raise RuntimeError("step must be nonzero")
    if dtype is None:
        d = _dtype.int64 if all(isinstance(v, (int, np.integer)) for v in vals) else _dtype.get_default_dtype()
    else:
        d = _dtype.to_dtype(dtype)
    if (vals[1] - vals[0]) * vals[2] < 0:
        raise RuntimeError("upper bound and lower bound inconsistent with step sign")
    if d._kind in "bi" and int(vals[2]) == 0:
        raise ValueError("step must be nonzero")  # a fractional step truncated by an integer dtype
    n = max(0, math.ceil((vals[1] - vals[0]) / vals[2]))
    ints = all(isinstance(v, (int, np.integer)) for v in vals)
    host = _host_arange(vals, n, ints, d.np)
    if host is not None:
        return _finish(host, requires_grad, device)
    # compute in float64 then cast, as PyTorch does, so that e.g. arange(0, 1, 0.1) has 10 items
    return _finish(jnp.asarray(_float_arange(vals, n, d.np), d.np)
                   if d._kind != "i" or not ints
                   else jnp.arange(vals[0], vals[1], vals[2], dtype=d.np), requires_grad, device)


def _float_arange(vals, n, np_dtype) -> np.ndarray:
    """The values of a non-integer arange: PyTorch's bits for float32/float64, else computed in
    float64 and cast."""
    if np.dtype(np_dtype) in (np.dtype(np.float32), np.dtype(np.float64)):
        return _arange_values(float(vals[0]), float(vals[2]), n, np_dtype)
    return (vals[0] + vals[2] * np.arange(n, dtype=np.float64)).astype(np_dtype)


def _host_arange(vals, n, ints, np_dtype):
    """``arange``'s array made by NumPy (nothing compiled: the device version compiled four
    programs per length), or None where NumPy might round otherwise: integers into int32/int64
    while they fit, and float32/float64 values of which none is subnormal (XLA:CPU's convert
    flushes those to zero), outside any trace."""
    if n > _HOST_MAX or not _cache.trace_clean():
        return None
    if ints and np_dtype in (np.dtype(np.int32), np.dtype(np.int64)):
        info = np.iinfo(np_dtype)
        start, step = int(vals[0]), int(vals[2])
        span = max(n - 1, 0) * step  # (and the length from a float division is exact below 2**52)
        if not (info.min <= start <= info.max and info.min <= start + span <= info.max
                and abs(int(vals[1]) - start) < 1 << 52 and abs(step) < 1 << 52):
            return None
        return put((start + step * np.arange(n, dtype=np.int64)).astype(np_dtype))
    if np_dtype not in _HOST_FLOAT:
        return None
    a = _float_arange(vals, n, np_dtype)
    if np.any((a != 0) & (np.abs(a) < np.finfo(np_dtype).tiny)):
        return None
    return put(a)


# ---- linspace: PyTorch's CPU kernel's values, bit for bit ---------------------------------------
# Its kernel computes, in the dtype, step = (end - start) / (steps - 1), then element i as
# start + step * i below steps // 2 and end - step * (steps - 1 - i) from there, each one fused
# multiply-add (one rounding; the kernel is built with FMA contraction). jnp.linspace rounds
# otherwise: linspace(-pi, pi, 2000) differed from PyTorch's in 1206 of its 2000 values. The fused
# multiply-add is exact here: an error-free product and sum in float64, rounded to odd so that the
# final rounding (to float32, or of the double-double sum to float64) is the correctly rounded one.
def _two_sum(a, b):
    s = a + b
    bb = s - a
    return s, (a - (s - bb)) + (b - bb)


def _two_prod(a, b):
    p = a * b
    ca, cb = a * 134217729.0, b * 134217729.0   # Dekker's split (2**27 + 1)
    ah, bh = ca - (ca - a), cb - (cb - b)
    al, bl = a - ah, b - bh
    return p, ((ah * bh - p) + ah * bl + al * bh) + al * bl


def _round_to_odd(s, err):
    """``s`` (the nearest float64 to ``s + err``) rounded to odd instead: err's sign is kept."""
    fix = (err != 0) & ((s.view(np.int64) & 1) == 0)
    return np.where(fix, np.nextafter(s, np.where(err > 0, np.inf, -np.inf)), s)


def _linspace_values(start: float, end: float, steps: int, np_dtype) -> np.ndarray:
    dt = np.dtype(np_dtype)
    s, e = dt.type(start), dt.type(end)
    if steps <= 1:
        return np.full(steps, s, dt)
    with np.errstate(all="ignore"):   # inf/nan ends give PyTorch's inf/nan values
        step = np.float64(dt.type((e - s) / dt.type(steps - 1)))
        i = np.arange(steps)
        low = i < steps // 2
        k = np.where(low, i, steps - 1 - i).astype(np.float64)
        a, c = np.where(low, step, -step), np.where(low, np.float64(s), np.float64(e))
        if dt == np.float32:     # the product is exact in float64 (24 + 29 bits)
            return _round_to_odd(*_two_sum(c, a * k)).astype(np.float32)
    return _fma64(a, k, c)


def _fma64(a, k, c):
    """``a * k + c`` with one rounding to float64 (a, c float64 arrays, k integers as float64)."""
    with np.errstate(all="ignore"):
        p, pe = _two_prod(a, k)
        hi, lo = _two_sum(c, p)
        out = np.where(np.isfinite(p) & np.isfinite(c), hi + _round_to_odd(*_two_sum(lo, pe)), c + p)
    for j in np.flatnonzero(~np.isfinite(out) & np.isfinite(c + p)):  # Dekker's split overflowed
        exact = Fraction(float(c[j])) + Fraction(float(a[j])) * int(k[j])
        out[j] = exact.numerator / exact.denominator
    return out


def _arange_values(start: float, step: float, n: int, np_dtype) -> np.ndarray:
    """PyTorch's CPU arange of float32/float64: start + step * i in double (fused), except in the
    vectorized part of each thread's chunk, where a 256-bit vector's lane k is base + k * step from
    its first element's value rounded to the dtype (so float32 values may differ from the plain
    formula's by an ulp). Checked against torch.arange, chunking across threads included."""
    dt = np.dtype(np_dtype)
    lanes = 32 // dt.itemsize
    i = np.arange(n, dtype=np.int64)
    threads = _get_num_threads()
    chunks = min(threads, -(-n // 32768)) if n > 32768 and threads > 1 else 1
    size = -(-n // chunks) if n else 0
    offset = i - (i // size) * size if n else i        # position within its thread's chunk
    chunk_len = np.minimum(size, n - (i - offset)) if n else i
    vec = offset < (chunk_len // (2 * lanes)) * (2 * lanes)
    first = i - offset % lanes                          # the vector's first element
    st = np.full(n, np.float64(step))
    base = _fma64(st, first.astype(np.float64), np.full(n, np.float64(start))).astype(dt).astype(np.float64)
    lane = _fma64(st, (offset % lanes).astype(np.float64), base)
    plain = _fma64(st, i.astype(np.float64), np.full(n, np.float64(start)))
    return np.where(vec, lane, plain).astype(dt)


def linspace(start, end, steps, *, out=None, dtype=None, device=None, requires_grad=False) -> Tensor:
    d = _dt(dtype, None, out)
    real = all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in (start, end))
    if real and d.np in (np.float32, np.float64) and 0 <= int(steps) < 2 ** 29:
        value = jnp.asarray(_linspace_values(float(start), float(end), int(steps), d.np))
    else:
        value = jnp.linspace(start, end, int(steps), dtype=d.np)
    return factory_out(_finish(value, requires_grad, device), out, True)


def logspace(start, end, steps, base=10.0, *, out=None, dtype=None, device=None,
             requires_grad=False) -> Tensor:
    d = _dt(dtype, None, out)
    return factory_out(_finish(jnp.logspace(start, end, int(steps), base=base, dtype=d.np),
                         requires_grad, device), out, True)


# ---- random: PyTorch's CPU generator, bit for bit (see funcgrad._random._sample) ----------------
def rand(*size, generator=None, out=None, dtype=None, device=None, requires_grad=False, **kw) -> Tensor:
    """Uniform on [0, 1): PyTorch's values for the same seed.

    >>> import funcgrad
    >>> _ = funcgrad.manual_seed(0)
    >>> funcgrad.rand(2, 2)
    tensor([[0.4963, 0.7682],
            [0.0885, 0.1320]])
    """
    d = _dt(dtype, None, out)
    _kernel_dtypes("check_uniform_bounds", d, "fc")
    shape = _size(size, **kw)
    v = _meta.MetaArray(shape, d.np) if _device_first(device) else _sample.uniform(generator, shape, d.np)
    return factory_out(_finish(v, requires_grad, device), out)


def randn(*size, generator=None, out=None, dtype=None, device=None, requires_grad=False, **kw) -> Tensor:
    """Standard normal samples (from the global generator unless ``generator``): PyTorch's values.

    >>> import funcgrad
    >>> _ = funcgrad.manual_seed(0)
    >>> funcgrad.randn(2, 3)
    tensor([[ 1.5410, -0.2934, -2.1788],
            [ 0.5684, -1.0845, -1.3986]])
    """
    d = _dt(dtype, None, out)
    _kernel_dtypes("normal_kernel_cpu", d, "fc")
    shape = _size(size, **kw)
    v = _meta.MetaArray(shape, d.np) if _device_first(device) else _sample.normal(generator, shape, d.np)
    return factory_out(_finish(v, requires_grad, device), out)


def randint(low, high=None, size=None, *, generator=None, out=None, dtype=None, device=None,
            requires_grad=False) -> Tensor:
    """Integers in [low, high) (``randint(high, size)`` too); int64 by default.

    >>> import funcgrad
    >>> _ = funcgrad.manual_seed(0)
    >>> funcgrad.randint(0, 10, (6,))
    tensor([4, 9, 3, 0, 3, 9])
    """
    if size is None:
        low, high, size = 0, low, high
    if high is None:
        low, high = 0, low
    d = _dt(dtype, _dtype.int64, out)
    low, high = int(low), int(high)
    if low >= high:
        raise RuntimeError(f"random_ expects 'from' to be less than 'to', but got from={low} >= to={high}")
    shape = _size((size,) if isinstance(size, int) else size)
    v = _meta.MetaArray(shape, d.np) if _device_first(device) else \
        _sample.random_int(generator, shape, d.np, low, high)
    return factory_out(_finish(v, requires_grad, device), out)


def rand_like(input, *, dtype=None, device=None, requires_grad=False, memory_format=None) -> Tensor:
    _strides.check_memory_format(memory_format, "rand_like", input.ndim)
    return rand(input.shape, dtype=dtype or input.dtype, device=input.device if device is None else device,
                requires_grad=requires_grad)


def randn_like(input, *, dtype=None, device=None, requires_grad=False, memory_format=None) -> Tensor:
    _strides.check_memory_format(memory_format, "randn_like", input.ndim)
    return randn(input.shape, dtype=dtype or input.dtype, device=input.device if device is None else device,
                 requires_grad=requires_grad)


def randint_like(input, low=0, high=None, *, dtype=None, device=None, memory_format=None) -> Tensor:
    _strides.check_memory_format(memory_format, "randint_like", input.ndim)
    if high is None:
        low, high = 0, low
    return randint(low, high, input.shape, dtype=dtype or input.dtype,
                   device=input.device if device is None else device)


def randperm(n, *, generator=None, out=None, dtype=None, device=None, requires_grad=False) -> Tensor:
    """A random permutation of ``0..n-1`` (PyTorch's Fisher-Yates over its stream).

    >>> import funcgrad
    >>> _ = funcgrad.manual_seed(0)
    >>> funcgrad.randperm(6)
    tensor([2, 5, 3, 0, 1, 4])
    """
    d = _dt(dtype, _dtype.int64, out)
    _kernel_dtypes("randperm", d, "if")
    meta = _device_first(device)
    n = int(n)
    if n < 0:
        raise RuntimeError(f"n must be non-negative, got{n}")
    v = _meta.MetaArray((n,), d.np) if meta else jnp.asarray(_sample.randperm(generator, n).astype(d.np))
    return factory_out(_finish(v, requires_grad, device), out)


def normal(mean=0.0, std=1.0, size=None, *, generator=None, dtype=None, device=None,
           requires_grad=False, out=None) -> Tensor:
    """Normal samples: ``normal(mean, std, size)`` or elementwise with tensor mean/std.

    As PyTorch: standard normals of the broadcast shape, then ``* std + mean``.
    """
    if isinstance(mean, Tensor) or isinstance(std, Tensor):
        ref = mean if isinstance(mean, Tensor) else std
        shape = infer_size(getattr(mean, "shape", ()), getattr(std, "shape", ()))
        both = isinstance(mean, Tensor) and isinstance(std, Tensor)
        if out is not None and _inference_mode.enabled and (getattr(mean, "_requires_grad", False)
                                                            or getattr(std, "_requires_grad", False)):
            raise RuntimeError("normal(): functions with out=... arguments don't support automatic "
                               "differentiation, but one of the arguments requires grad.")
        if out is not None and not both and isinstance(mean, Tensor):  # (PyTorch: mean's shape broadcast
            shape = infer_size(shape, out.shape)  # with out's before drawing; a tensor std keeps its own)
        m = mean._value if isinstance(mean, Tensor) else mean
        s = std._value if isinstance(std, Tensor) else std
        if type(m) is _meta.MetaArray or type(s) is _meta.MetaArray:  # (nothing drawn)
            r = _finish(_meta.MetaArray(shape, ref.dtype.np), requires_grad, "meta")
        else:
            z = _sample.normal(generator, shape, ref.dtype.np)
            r = _finish((z * s + m).astype(ref.dtype.np), requires_grad, device)
        if out is None:
            return r
        if out.shape != r.shape and out.numel():  # (PyTorch: resize_output, its warning)
            warn_at_user(RESIZED_OUTPUT.format(list(out.shape), list(r.shape)), UserWarning)
        return factory_out(r, out)
    shape = _size((size,) if isinstance(size, int) else size or ())
    _kernel_dtypes("normal_kernel_cpu", d := _dt(dtype, None, out), "fc")
    v = _meta.MetaArray(shape, d.np) if _device_first(device) else \
        _sample.normal(generator, shape, d.np, float(mean), float(std))
    return factory_out(_finish(v, requires_grad, device), out)


def bernoulli(input, p=None, *, generator=None, out=None) -> Tensor:
    """0/1 samples with probabilities ``input`` (or a scalar ``p``), of ``input``'s dtype."""
    if out is not None:
        return factory_out(bernoulli(input, p, generator=generator), out)
    if type(input._value) is _meta.MetaArray:  # (nothing drawn)
        return Tensor._wrap(input._value)
    if p is None:
        keep = _sample.bernoulli_tensor(generator, input._value)
    else:
        keep = _sample.bernoulli_scalar(generator, tuple(input.shape), float(p), input.dtype.np)
    return Tensor._wrap(keep if keep.dtype == input.dtype.np else keep.astype(input.dtype.np))


def multinomial(input, num_samples, replacement=False, *, generator=None, out=None) -> Tensor:
    """Sample category indices from (unnormalised) probabilities; rows for 2-D input."""
    if out is not None:
        return factory_out(multinomial(input, num_samples, replacement, generator=generator), out)
    if type(input._value) is _meta.MetaArray:  # (nothing drawn)
        return Tensor._wrap(_meta.MetaArray(tuple(input.shape[:-1]) + (int(num_samples),), np.int64))
    return _multinomial.multinomial(input, int(num_samples), bool(replacement), generator)
