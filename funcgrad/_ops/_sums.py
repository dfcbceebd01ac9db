"""Float32 sums as accurate as PyTorch's CPU kernels: the one place that shapes them.

XLA:CPU sums a reduction over one axis as a tree (its TreeReductionRewriter: windows of 32
elements, then windows of their sums, ...), as accurate as PyTorch's ``cascade_sum``
(aten/src/ATen/native/cpu/SumKernel.cpp: partial sums kept a few levels deep). Over several axes
it takes windows of 32 along *each* reduced axis, so ``x.sum((0, 2, 3))`` of an NCHW tensor adds
32 * 32 * 32 elements one after another into each partial sum: measured on 32x64x56x56 float32,
relative error 3e-6 against 2e-7 for PyTorch, 7.6e-6 for ``x.sum()`` of it (PyTorch 7e-9).

``acc_sum`` therefore reduces a run of adjacent reduced axes as one axis (a free reshape), one run
after another, innermost first, as PyTorch sums a contiguous inner block and then adds the blocks'
sums; each reduction behind an optimization barrier, without which XLA folds the reshape back
into a reduction over several axes and merges successive reductions into one. (Faster too: XLA's
windows over several axes are slow; the 32x64x56x56 ``sum((0, 2, 3))`` takes 1.5 ms, not 6.)

``wide=True`` is batch norm's: PyTorch's contiguous kernels (aten/src/ATen/native/cpu/
batch_norm_kernel.cpp) accumulate a channel's statistics in float64 (``acc_type<float, false>``),
and its backward's sums of float32 planes likewise. Here every stage sums in float64, one reduced
axis at a time, outermost first (XLA:CPU's float64 sum is vectorized along a kept minor axis, and
15x slower than float32's along the minor axis itself, which is so reduced last, when small),
then rounded once to float32.

``acc_broadcast`` is the transpose: a per-channel value spread over the reduced axes, whose
derivative is spread stage by stage behind barriers, so that the reductions ``jax.vjp`` makes of
it (batch norm's backward: sum(dy), sum(dy * x_hat) per channel) are ``acc_sum``'s. Conversely
``acc_sum``'s barriers are on its value only: its transpose is a plain broadcast, fused by XLA.

Float32 and complex64 only (float16/bfloat16 sum in float32): float64 and integer sums are
``jnp.sum`` as they were, and so is a reduction over one axis (already a tree, as its own kernel;
inside a larger program, ``funcgrad.jit``'s, XLA may still fold a reshape that makes its operand,
``x.flatten().sum()``, into a sum over several axes).
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np

_ACC = frozenset((np.dtype(np.float32), np.dtype(np.complex64)))
_HALF = frozenset((np.dtype(jnp.float16), np.dtype(jnp.bfloat16)))


@functools.lru_cache(maxsize=1024)
def _plan(shape, axes, wide):
    """How to sum ``shape`` over ``axes`` (sorted, non-negative): ``(grouped shape, stages)``, each
    stage ``(axis of the grouped shape, dtype to accumulate in or None)``, reduced in turn with
    ``keepdims``; None where one ``jnp.sum`` is as accurate (fewer than two axes of size > 1)."""
    if sum(shape[d] != 1 for d in axes) < 2:
        return None
    kinds, sizes = [], []  # runs of adjacent dims of one kind: "r" reduced, "k" kept
    for d, n in enumerate(shape):
        if n == 1:
            continue
        kind = "r" if d in axes else "k"
        # (wide: each reduced dim apart, so that all but the last run along XLA's vector lanes)
        if kinds and kinds[-1] == kind and not (wide and kind == "r"):
            sizes[-1] *= n
        else:
            kinds.append(kind)
            sizes.append(n)
    red = [i for i, k in enumerate(kinds) if k == "r"]
    if wide:  # in float64, outermost first: XLA:CPU's float64 sum along the minor axis is slow
        stages = tuple((i, np.dtype(np.float64)) for i in red)
    else:  # one run at a time, innermost first
        stages = tuple((i, None) for i in reversed(red))
    return tuple(sizes), stages


@jax.custom_jvp
def _fence(x):
    """An optimization barrier on the value; the identity on its derivative, so that the
    transpose of ``acc_sum`` is a plain broadcast XLA fuses into what reads it."""
    return jax.lax.optimization_barrier(x)


@_fence.defjvp
def _fence_jvp(primals, tangents):
    return _fence(*primals), tangents[0]


def _axes(axis, ndim):
    if axis is None:
        return tuple(range(ndim))
    return tuple(sorted(a % ndim for a in ((axis,) if isinstance(axis, int) else axis))) if ndim else ()


def acc_sum(x, axis=None, keepdims=False, dtype=None, *, wide=False):
    """``jnp.sum(x, axis, keepdims=keepdims, dtype=dtype)``, float32 sums structured as
    PyTorch's CPU kernels (see the module's docstring); ``wide``: batch norm's structure."""
    acc = np.dtype(dtype) if dtype is not None else np.dtype(jnp.float32) if x.dtype in _HALF else x.dtype
    axes = _axes(axis, x.ndim)
    plan = _plan(tuple(x.shape), axes, wide) if acc in _ACC else None
    if plan is None:
        return jnp.sum(x, axis=axis, keepdims=keepdims, dtype=dtype)
    gshape, stages = plan
    y = x.astype(acc).reshape(gshape)
    for i, dt in stages:
        y = jnp.sum(_fence(y).astype(dt or y.dtype), axis=i, keepdims=True)  # (converted after
        # the barrier, so that the conversion is fused into the sum: no float64 copy of y)
    out = tuple(1 if d in axes else n for d, n in enumerate(x.shape)) if keepdims else \
        tuple(n for d, n in enumerate(x.shape) if d not in axes)
    return y.astype(x.dtype if dtype is None else dtype).reshape(out)


def acc_broadcast(v, shape, axis, *, wide=False):
    """``v``, the shape of a sum over ``axis`` of an array of ``shape`` (keepdims or not),
    broadcast to ``shape``; its transpose, the backward's reduction, is ``acc_sum(ct, axis,
    wide=wide)`` (see the module's docstring)."""
    shape = tuple(shape)
    axes = _axes(axis, len(shape))
    kshape = tuple(1 if d in axes else n for d, n in enumerate(shape))
    plan = _plan(shape, axes, wide) if v.dtype in _ACC else None
    if plan is None:
        return jnp.broadcast_to(v.reshape(kshape), shape)

    @jax.custom_jvp
    def spread(v):
        return jnp.broadcast_to(v.reshape(kshape), shape)

    @spread.defjvp
    def _spread_jvp(primals, tangents):
        return spread(*primals), _staged_broadcast(tangents[0], shape, plan)
    return spread(v)


def _staged_broadcast(t, shape, plan):
    """The transpose of ``acc_sum``'s stages, written forward: ``jax`` transposes it back into
    them, barriers included (a barrier's transpose is a barrier)."""
    gshape, stages = plan
    cur = list(gshape)
    for i, _ in stages:
        cur[i] = 1
    dts = [t.dtype]  # the dtype each stage reduces in acc_sum (its input's, or its own)
    for _, dt in stages:
        dts.append(dts[-1] if dt is None else dt)
    t = t.astype(dts[-1]).reshape(cur)
    for k in reversed(range(len(stages))):
        cur[stages[k][0]] = gshape[stages[k][0]]
        t = jax.lax.optimization_barrier(jnp.broadcast_to(t, tuple(cur)).astype(dts[k]))
    return t.reshape(shape)
