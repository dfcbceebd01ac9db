"""PyTorch's CPU samplers over a generator's 32-bit words (``Generator._raw``).

Each follows the PyTorch 2.13 kernel it names (aten/src/ATen/core/DistributionsHelper.h,
TransformationHelper.h, native/cpu/DistributionTemplates.h, DistributionKernels.cpp):

- uniform: float32 takes the low 24 bits of one word, ``u = bits * 2**-24``; float64 the low 53
  bits of ``random64() = word1 << 32 | word2``; then ``u * (to - from) + from``, which PyTorch's
  compiler fuses into one multiply-add (so does XLA here).
- normal, at least 16 elements: all uniforms first, then Box-Muller on blocks of 16 (``u1 = 1 - d[j]``,
  ``u2 = d[j + 8]`` for j < 8; a tail ``n % 16`` redraws 16 fresh uniforms for the last 16
  elements). float32 follows ``normal_fill_AVX2`` — PyTorch's AVX2 kernel, which it also uses on
  AVX-512 CPUs — with the Cephes ``log256_ps``/``sincos256_ps`` polynomials and their fused
  multiply-adds as GCC emits them; float64 ``normal_fill`` with libm ``log``/``cos``/``sin``.
- normal, under 16 elements: ``normal_distribution<double>`` per element, two uniforms per pair,
  the second value cached in the generator for the next draw (also across calls).
- bernoulli with a scalar ``p`` (``bernoulli_(p)``, dropout masks): ``uniform64 < p``. PyTorch
  2.13 takes this default kernel here (it consumes two words per element); builds whose Intel
  MKL path (``viRngBernoulli``) is active draw other masks, and funcgrad follows the default.
- bernoulli with tensor probabilities: ``uniform < p`` in the probabilities' precision.
- randint / ``random_(from, to)``: ``word % range + from`` (``random64()`` when ``range >= 2**32``).
- randperm (``n < 2**32 / 20``): forward Fisher-Yates, ``z = word % (n - i)`` (its swaps
  computed without a sequential loop, ``fisher_yates``); beyond it the inside-out variant with
  ``random64()``.
- exponential: ``-1 / lambda * log1p(-uniform64)`` in double, then cast.
- complex (uniform, normal; ``uniform_impl_``/``normal_impl_`` in native/DistributionTemplates.h):
  the tensor viewed as real (``view_as_real``: the last dim doubled, real and imaginary parts
  interleaved) is filled by the real kernel, normal with ``std / sqrt(2)`` (each part carries half
  the variance) and the mean added to both parts; so ``randn(3, dtype=cfloat)`` draws 6 floats,
  on the scalar path, and ``randn(8, dtype=cfloat)`` 16, on the vectorised one.

float16/bfloat16 follow the same kernels in float32 (PyTorch's op-math type), then round: uniform
clamps a value rounded up to ``to`` back to ``from``; normal at least 16 elements draws only the
whole blocks' words plus the tail's; double results (the scalar normal path, exponential) round
twice, double -> float -> half, as ``static_cast`` does.
"""

from __future__ import annotations

import math
from fractions import Fraction
from functools import partial

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from .._device import put
from . import Generator, generator_or_default

f32, f64 = np.float32, np.float64
_MASK53 = (1 << 53) - 1


# ---- words to uniforms ---------------------------------------------------------------------------
def _u24(r):
    return (r & jnp.uint32(0xFFFFFF)).astype(jnp.float32) * jnp.float32(2.0 ** -24)


def _bits64(r):
    r = r.astype(jnp.uint64).reshape(-1, 2)
    return (r[:, 0] << 32) | r[:, 1]


def _u53(r):
    return (_bits64(r) & jnp.uint64(_MASK53)).astype(jnp.float64) * 2.0 ** -53


@partial(jax.jit, static_argnums=(3,))
def _uniform_kernel(r, lo, hi, dtype):
    """``uniform_kernel``: in the op-math type (float32 for half types), cast, and a value that
    the cast (or the multiply-add) rounded up to ``to`` becomes ``from``."""
    if dtype == np.float64:
        v = _u53(r) * (hi - lo) + lo
        return jnp.where(v == hi, lo, v)
    lo, hi = lo.astype(jnp.float32), hi.astype(jnp.float32)
    v = (_u24(r) * (hi - lo) + lo).astype(dtype)
    return jnp.where(v == hi.astype(dtype), lo.astype(dtype), v)


# ---- Cephes log / sincos as avx_mathfun.h computes them (float32) ------------------------------
def _log_ps(x):
    invalid = x <= 0
    x = jnp.maximum(x, lax.bitcast_convert_type(jnp.int32(0x00800000), jnp.float32))
    xi = lax.bitcast_convert_type(x, jnp.int32)
    imm0 = lax.shift_right_logical(xi, jnp.int32(23))
    x = lax.bitcast_convert_type((xi & ~0x7F800000) | 0x3F000000, jnp.float32)
    e = (imm0 - 0x7F).astype(jnp.float32) + 1.0
    mask = x < jnp.float32(0.707106781186547524)
    tmp = jnp.where(mask, x, jnp.float32(0))
    x = x - 1.0
    e = e - jnp.where(mask, jnp.float32(1), jnp.float32(0))
    x = x + tmp
    z = x * x
    y = jnp.full_like(x, 7.0376836292E-2)
    for p in (-1.1514610310E-1, 1.1676998740E-1, -1.2420140846E-1, 1.4249322787E-1, -1.6668057665E-1,
              2.0000714765E-1, -2.4999993993E-1, 3.3333331174E-1):
        y = y * x + jnp.float32(p)          # fused, as GCC fuses the mul/add intrinsics
    y = y * x
    y = y * z + e * jnp.float32(-2.12194440e-4)   # GCC fuses the first product
    y = y - z * jnp.float32(0.5)
    x = x + y
    x = x + e * jnp.float32(0.693359375)
    return jnp.where(invalid, jnp.float32(jnp.nan), x)


def _sincos_ps(x):
    sign_sin = jnp.signbit(x)
    x = jnp.abs(x)
    j = (x * jnp.float32(1.27323954473516)).astype(jnp.int32)
    j = (j + 1) & ~1
    y = j.astype(jnp.float32)
    swap_sin = (j & 4) != 0
    poly = (j & 2) == 0
    x = x + y * jnp.float32(-0.78515625)
    x = x + y * jnp.float32(-2.4187564849853515625e-4)
    x = x + y * jnp.float32(-3.77489497744594108e-8)
    sign_cos = (~(j - 2) & 4) != 0
    sign_sin = sign_sin ^ swap_sin
    z = x * x
    yc = jnp.full_like(x, 2.443315711809948E-005) * z + jnp.float32(-1.388731625493765E-003)
    yc = yc * z + jnp.float32(4.166664568298827E-002)
    yc = yc * z
    yc = yc * z - z * jnp.float32(0.5)     # GCC fuses the first product
    yc = yc + 1.0
    ys = jnp.full_like(x, -1.9515295891E-4) * z + jnp.float32(8.3321608736E-3)
    ys = ys * z + jnp.float32(-1.6666654611E-1)
    ys = ys * z
    ys = ys * x + x
    s = jnp.where(poly, ys, yc)
    c = jnp.where(poly, yc, ys)
    return jnp.where(sign_sin, -s, s), jnp.where(sign_cos, -c, c)


def _box_muller16_f32(d, mean, std):
    d = d.reshape(-1, 2, 8)
    u1, u2 = 1.0 - d[:, 0], d[:, 1]
    radius = jnp.sqrt(jnp.float32(-2.0) * _log_ps(u1))
    s, c = _sincos_ps(jnp.float32(2.0 * math.pi) * u2)
    return jnp.stack([radius * c * std + mean, radius * s * std + mean], 1).reshape(-1)


def _box_muller16_f64(d, mean, std):
    d = d.reshape(-1, 2, 8)
    u1, u2 = 1.0 - d[:, 0], d[:, 1]
    radius = jnp.sqrt(-2.0 * jnp.log(u1))
    theta = (2.0 * math.pi) * u2
    return jnp.stack([radius * jnp.cos(theta) * std + mean, radius * jnp.sin(theta) * std + mean],
                     1).reshape(-1)


@partial(jax.jit, static_argnums=(1, 2, 3))
def _normal_blocks_kernel(r, mean, std, dtype):
    """Box-Muller on whole blocks of 16 uniforms (``normal_fill_16``).

    ``mean``/``std`` are compile-time constants: traced scalars make XLA's CPU fusion of this
    kernel some 30x slower (and ``randn`` is always 0/1).
    """
    if dtype == np.float64:
        return _box_muller16_f64(_u53(r), mean, std)
    return _box_muller16_f32(_u24(r), np.float32(mean), np.float32(std))


# ---- the scalar normal path (under 16 elements) ----------------------------------------------------
def _fma(a: float, b: float, c: float) -> float:
    return float(Fraction(a) * Fraction(b) + Fraction(c))


def _normal_scalar(g: Generator, n: int, mean: float, std: float) -> list:
    out = []
    with g._lock:
        eng = g._cell.engine()
        for _ in range(n):
            z = eng.normal_double
            if z is not None:
                eng.normal_double = None
            else:
                r = eng.raw(4).astype(np.uint64)
                u1 = float(((int(r[0]) << 32 | int(r[1])) & _MASK53) * 2.0 ** -53)
                u2 = float(((int(r[2]) << 32 | int(r[3])) & _MASK53) * 2.0 ** -53)
                rad = math.sqrt(-2.0 * math.log1p(-u2))
                theta = 2.0 * math.pi * u1
                eng.normal_double = rad * math.sin(theta)
                z = rad * math.cos(theta)
            out.append(_fma(z, std, mean))
    return out


# ---- public samplers (jax arrays) -----------------------------------------------------------------
def _float_dtype(dtype):
    return np.float64 if dtype == np.float64 else np.float32


def _reduced(dtype) -> bool:
    return np.dtype(dtype).itemsize == 2


def from_double(x, dtype):
    """A double result as ``static_cast<scalar_t>(double)`` stores it: half types have only a
    float constructor, so they round twice (double -> float -> half)."""
    if _reduced(dtype):
        x = x.astype(np.float32)
    return x.astype(dtype)


_BUCKETS = (1 << 10, 1 << 15)  # eager draws run on words padded to one of these many elements
_CHUNKED = 1 << 20             # eager draws up to this size run in chunks of the larger one


def _call(kernel, r, per: int, n: int, *args):
    """``kernel(words, *args)`` for ``n`` elements (``per`` words each), flat.

    Eager draws run on words padded to one of two sizes (larger ones chunk by chunk) and are
    cut and joined on the host, so every parameter shape of a model (or sizes 1..40) shares two
    compiled kernels instead of one XLA compile each (the kernels are elementwise over blocks of
    16, so chunking changes no bit); very large draws and traced ones run at their exact size.
    """
    if isinstance(r, jax.core.Tracer) or n > _CHUNKED:
        return kernel(r, *args)
    b = _BUCKETS[0] if n <= _BUCKETS[0] else _BUCKETS[1]
    outs = []
    for i in range(0, max(n, 1), b):  # (n == 0: one chunk cut to nothing, of the kernel's dtype)
        part = r[i * per:(i + b) * per]
        padded = np.zeros(b * per, np.uint32)
        padded[:part.size] = part
        outs.append(np.asarray(kernel(padded, *args))[:min(b, n - i)])
    return outs[0] if len(outs) == 1 else np.concatenate(outs)


def _parts(dtype):
    """The real dtype of a complex ``dtype``'s parts, else None."""
    d = np.dtype(dtype)
    return np.dtype(f32 if d == np.complex64 else f64) if d.kind == "c" else None


def _finish(out, shape, dtype):
    part = _parts(dtype)
    if part is not None:  # ``out`` holds the interleaved parts (``view_as_real``'s layout)
        if isinstance(out, np.ndarray):
            return put(out.astype(part, copy=False).view(dtype).reshape(shape))
        out = out.astype(part).reshape(-1, 2)
        return lax.complex(out[:, 0], out[:, 1]).reshape(shape)
    if isinstance(out, np.ndarray):
        return put(out.astype(dtype, copy=False).reshape(shape))  # jnp.asarray would compile
    return out.astype(dtype).reshape(shape)


def uniform(generator, shape, dtype, low=0.0, high=1.0):
    g = generator_or_default(generator)
    part = _parts(dtype)
    n = math.prod(shape) * (1 if part is None else 2)
    real = np.dtype(dtype if part is None else part)
    dt = _float_dtype(real)
    k = 2 if dt == np.float64 else 1
    r = g._raw(n * k)
    out = _call(_uniform_kernel, r, k, n, np.float64(low), np.float64(high), real)
    return _finish(out, tuple(shape), dtype)


def normal(generator, shape, dtype, mean=0.0, std=1.0):
    part = _parts(dtype)
    if part is not None:  # real and imaginary parts interleaved, each N(mean, std² / 2)
        out = normal(generator, (2 * math.prod(shape),), part, mean, std / math.sqrt(2))
        if not isinstance(out, jax.core.Tracer):
            out = np.asarray(out)  # (the parts viewed as complex on the host: no compile per shape)
        return _finish(out, tuple(shape), dtype)
    g = generator_or_default(generator)
    n = math.prod(shape)
    dt = _float_dtype(dtype)
    if n < 16:
        if g._cell.traced() is not None:
            from ._jax_scalar import normal_scalar_traced
            vals = normal_scalar_traced(g, n, mean, std)
        else:
            # rounded by XLA's convert (which flushes subnormals, as NumPy would not)
            vals = put(np.asarray(_normal_scalar(g, n, float(mean), float(std)), np.float64))
        return from_double(vals, dtype).reshape(shape)
    k = 2 if dt == np.float64 else 1
    m = n // 16 * 16
    with g._lock:
        # float/double draw all n uniforms into the output first; half types fill a 16-float
        # buffer per whole block, so the words of the overwritten partial block are never drawn
        r = g._raw((m if _reduced(dtype) else n) * k)
        tail = g._raw(16 * k) if n % 16 else None
    args = (float(mean), float(std), dt)
    out = _call(_normal_blocks_kernel, r[:m * k], k, m, *args)
    if tail is not None:  # the last 16 elements come from 16 fresh uniforms
        last = _call(_normal_blocks_kernel, tail, k, 16, *args)
        cat = np.concatenate if isinstance(out, np.ndarray) else jnp.concatenate
        out = cat([out[:n - 16], last])
    return _finish(out, tuple(shape), dtype)


@partial(jax.jit, static_argnums=(3, 4))
def _int_kernel(r, rng, base, wide, dtype):
    v = _bits64(r) if wide else r.astype(jnp.uint64)
    return ((v % rng).astype(jnp.int64) + base).astype(dtype)


def random_int(generator, shape, dtype, low, high):
    """``randint``/``random_(from, to)``: integers in ``[low, high)``."""
    if _parts(dtype) is not None:  # ATen's check_from_to_in_range
        raise RuntimeError("check_random_bounds handles only integral, floating-point and boolean types")
    g = generator_or_default(generator)
    n, rng = math.prod(shape), int(high) - int(low)
    wide = rng >= (1 << 32) and np.dtype(dtype) in (np.int64, np.float64, np.float32)
    k = 2 if wide else 1
    r = g._raw(n * k)
    out = _call(_int_kernel, r, k, n, np.uint64(rng), np.int64(low), wide, np.dtype(dtype))
    return _finish(out, tuple(shape), dtype)


_FULL_MOD = {np.dtype(np.bool_): 2, np.dtype(np.uint8): 256, np.dtype(np.int8): 128,
             np.dtype(np.int16): 1 << 15, np.dtype(np.int32): 1 << 31, np.dtype(np.int64): 1 << 63,
             np.dtype(np.float32): (1 << 24) + 1, np.dtype(np.float64): (1 << 53) + 1,
             np.dtype(np.float16): (1 << 11) + 1}


def random_full(generator, shape, dtype):
    """``random_()``: ``[0, 2**mantissa]`` for floats, ``[0, max]`` for integers."""
    g = generator_or_default(generator)
    d = np.dtype(dtype)
    wide = d in (np.dtype(np.int64), np.dtype(np.float64))
    n = math.prod(shape)
    k = 2 if wide else 1
    r = g._raw(n * k)
    out = _call(_int_kernel, r, k, n, np.uint64(_FULL_MOD.get(d, (1 << 8) + 1)), np.int64(0), wide, d)
    return _finish(out, tuple(shape), d)


@jax.jit
def _bernoulli_scalar_kernel(r, p):
    return _u53(r) < p


def bernoulli_scalar(generator, shape, p, dtype=np.bool_, one=1):
    """PyTorch's ``bernoulli_(p)``: ``one`` with probability ``p``, else 0, as ``dtype``."""
    return _finish(_bernoulli_flat(generator, shape, p, dtype, one), tuple(shape), np.dtype(dtype))


def _refuse(kernel: str, dtype) -> None:
    """ATen's dispatch error for ``kernel`` on a complex ``dtype``."""
    name = "ComplexFloat" if np.dtype(dtype) == np.complex64 else "ComplexDouble"
    raise NotImplementedError(f"\"{kernel}\" not implemented for '{name}'")


def _bernoulli_flat(generator, shape, p, dtype, one):
    """``bernoulli_scalar``'s draws, flat: a NumPy array where they were made on the host."""
    if _parts(dtype) is not None and math.prod(shape):
        _refuse("bernoulli_scalar_cpu_", dtype)
    g = generator_or_default(generator)
    n = math.prod(shape)
    r = g._raw(2 * n)
    keep = _call(_bernoulli_scalar_kernel, r, 2, n, np.float64(p))
    dt = np.dtype(dtype)
    if dt != np.bool_ or one != 1:
        xp = np if isinstance(keep, np.ndarray) else jnp
        keep = xp.where(keep, np.asarray(one, dt), np.asarray(0, dt))
    return keep


def _memory_order(shape, strides):
    """The dims from outermost to innermost in storage when ``strides`` lay ``shape`` out densely
    but not row-major (a transposed view), else None. ``empty_like`` keeps such a layout and
    a nullary kernel fills it in storage order, so the draws follow this order."""
    if strides is None:
        return None
    dims = [d for d in range(len(shape)) if shape[d] != 1]
    perm = sorted(dims, key=lambda d: -strides[d])
    if perm == dims:
        return None
    acc = 1
    for d in reversed(perm):
        if strides[d] != acc:
            return None
        acc *= shape[d]
    return perm + [d for d in range(len(shape)) if shape[d] == 1]


def dropout_noise(generator, shape, p: float, dtype, strides=None):
    """PyTorch's ``_dropout_impl`` noise: ``bernoulli_(1 - p)`` of ``empty_like(input)`` divided
    by ``1 - p`` (``div_`` by a scalar: for half types in float32, then rounded, so ``p = 0.3``
    scales by ``half(1 / float32(0.7))``). With the input's ``strides``, a dense transposed
    layout is filled in storage order. ``p == 1`` and empty shapes draw nothing (all zeros)."""
    dt = np.dtype(dtype)
    shape = tuple(shape)
    if p == 1.0 or math.prod(shape) == 0:
        return jnp.zeros(shape, dt)
    op = np.dtype(_float_dtype(dt))
    scale = (np.asarray(1, op) / np.asarray(1.0 - p, op)).astype(dt)
    perm = _memory_order(shape, strides)
    if perm is None:
        return bernoulli_scalar(generator, shape, 1.0 - p, dt, scale)
    stored = tuple(shape[d] for d in perm)
    noise = _bernoulli_flat(generator, stored, 1.0 - p, dt, scale)
    if isinstance(noise, np.ndarray):  # transposed on the host: jnp.transpose compiles per shape
        noise = noise.astype(dt, copy=False).reshape(stored)
        return put(np.ascontiguousarray(np.transpose(noise, np.argsort(perm))))
    return jnp.transpose(noise.astype(dt).reshape(stored), np.argsort(perm))


@jax.jit
def _bernoulli_tensor_kernel(r, p):
    if p.dtype == jnp.float64:
        return (_u53(r) < p.ravel()).reshape(p.shape)
    return (_u24(r) < p.ravel().astype(jnp.float32)).reshape(p.shape)  # (probabilities' shape)


def bernoulli_tensor(generator, probs):
    """A bool mask with per-element probabilities (a jax array) for a tensor of their dtype."""
    if _parts(probs.dtype) is not None and probs.size:
        _refuse("bernoulli_tensor_cpu_self_", probs.dtype)
    g = generator_or_default(generator)
    r = g._raw(probs.size * (2 if probs.dtype == jnp.float64 else 1))
    return _bernoulli_tensor_kernel(r, probs)


def fisher_yates(j, xp=np):
    """The permutation PyTorch's forward Fisher-Yates makes (``swap(a[i], a[j[i]])`` for ``i =
    0, 1, ...``, ``j[i] >= i``; ``j`` has ``n`` entries, the last ``n - 1``), without the
    sequential loop. Position ``i`` is final after step ``i``. Let ``e[i]`` be the element at
    position ``i`` just before step ``i``: step ``k`` moves ``e[k]`` to ``j[k]``, so ``e[i] =
    e[prev(i)]`` for the last step ``prev(i) < i`` that targeted ``i``, or ``i`` if none did;
    ``e`` is then the root of a forest, found by pointer jumping (``ceil(log2 n)`` gathers). The
    result at ``i`` is what sits at ``j[i]`` before step ``i``: ``e`` of the last earlier step
    that targeted ``j[i]``, or ``j[i]`` itself. "Last earlier step with the same target" is the
    predecessor in the steps sorted by ``(target, step)``. ``xp``: ``numpy`` or ``jax.numpy``."""
    n = j.shape[0]
    t = xp.arange(n, dtype=xp.int64)
    keys = xp.sort(j * n + t)                       # steps ordered by (target, step)
    ts, js = keys % n, keys // n
    same = js[1:] == js[:-1]
    pred = xp.concatenate([xp.full((1,), -1, xp.int64), xp.where(same, ts[:-1], -1)])
    if xp is np:
        rank = np.empty(n, np.int64)
        rank[ts] = t
    else:
        rank = xp.zeros(n, xp.int64).at[ts].set(t)
    src = pred[rank]                                 # last earlier step with target j[i]
    counts = xp.bincount(j, length=n) if xp is not np else np.bincount(j, minlength=n)
    end = xp.maximum(xp.cumsum(counts) - 1, 0)       # each target's last step
    prev = xp.where(counts == 0, -1, xp.where(ts[end] == t, pred[end], ts[end]))
    ptr = xp.where(prev >= 0, prev, t)
    if xp is np:
        while True:
            nxt = ptr[ptr]
            if np.array_equal(nxt, ptr):
                break
            ptr = nxt
    else:
        ptr = lax.fori_loop(0, max(n - 1, 1).bit_length(), lambda _, p: p[p], ptr)
    return xp.where(src >= 0, ptr[xp.maximum(src, 0)], j)


def randperm(generator, n: int) -> np.ndarray:
    """PyTorch's ``randperm`` (int64 NumPy array, or a traced array in a compiled step)."""
    g = generator_or_default(generator)
    if n < (1 << 32) // 20:
        r = g._raw(max(n - 1, 0))
        if n <= 1:
            return np.arange(n, dtype=np.int64)
        xp = jnp if isinstance(r, jax.core.Tracer) else np
        i = xp.arange(n - 1, dtype=xp.int64)
        z = (r % xp.arange(n, 1, -1, dtype=xp.uint32)).astype(xp.int64)
        if xp is np and n <= 256:  # a short Python loop beats the vectorised passes' overhead
            a = list(range(n))
            for k, zk in enumerate(z.tolist()):
                a[k], a[k + zk] = a[k + zk], a[k]
            return np.asarray(a, np.int64)
        return fisher_yates(xp.concatenate([z + i, xp.full((1,), n - 1, xp.int64)]), xp)
    r = np.asarray(g._raw(2 * n)).astype(np.uint64).reshape(-1, 2)  # inside-out, random64
    v = (r[:, 0] << np.uint64(32)) | r[:, 1]
    a = np.empty(n, np.int64)
    for i in range(n):
        z = int(v[i] % np.uint64(i + 1))
        a[i] = a[z]
        a[z] = i
    return a


def exponential(generator, shape, dtype, lambd=1.0):
    g = generator_or_default(generator)
    n = math.prod(shape)
    r = g._raw(2 * n)
    if isinstance(r, jax.core.Tracer):
        u = _u53(r)
        return from_double(-1.0 / lambd * jnp.log1p(-u), dtype).reshape(shape)
    r = r.astype(np.uint64).reshape(-1, 2)
    u = ((r[:, 0] << np.uint64(32) | r[:, 1]) & np.uint64(_MASK53)).astype(np.float64) * 2.0 ** -53
    c = -1.0 / float(lambd)
    # libm's log1p per element (NumPy's vectorised log1p differs in the last bit)
    out = np.fromiter((c * math.log1p(-x) for x in u.tolist()), np.float64, n)
    return jnp.asarray(from_double(out, dtype).reshape(shape))
