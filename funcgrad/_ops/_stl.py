"""Which of several equal entries PyTorch's CPU selection kernels pick, replayed in JAX.

``torch.topk`` and ``torch.kthvalue`` on CPU do not break ties by index: they run a selection
algorithm on ``(value, index)`` pairs compared by value only, so which of several equal entries
comes out follows from that algorithm's swaps (``topk(tensor([1., 2, 2, 2, 1, 3]), 3).indices`` is
``[5, 3, 1]``, ``kthvalue(..., 2)`` index 0):

- ``topk`` (``aten/src/ATen/native/TopKImpl.h``): ``std::partial_sort`` when ``64·k <= n`` (a heap
  of the k best, then ``sort_heap``), else ``std::nth_element`` (introselect) followed, when
  ``sorted``, by ``std::sort`` of the first ``k - 1`` entries; libstdc++'s (the GCC library
  PyTorch's Linux wheels use).
- ``kthvalue`` (``Sorting.cpp``): TH's Sedgewick quickselect, ``quick_select_template``.

Each function here takes ``keys``, integer ranks whose ``<`` is the kernel's comparator (equal values,
``-0.0`` and ``0.0`` too, share a rank), as one row, and returns the permutation the kernel leaves
(positions into the row); vmap it over rows. Both partitions (Hoare's and Sedgewick's) are computed
at once per step, as vector operations (which entries the scans stop at, paired up), not one swap
at a time; only the heap steps run one element at a time. A row without ties that matter gives the
same answer as a stable sort, so callers run these only when some row has such ties.
"""

from __future__ import annotations

import jax.numpy as jnp
from jax import lax

__all__ = ["comparator_ranks", "topk_order", "quickselect_order"]

_BIG = 1 << 40


def comparator_ranks(x, axis: int, descending: bool):
    """Dense ranks along ``axis`` (int64) ordered as PyTorch's CPU comparators order values: nan
    above everything (first when ``descending``), equal values (``-0.0``/``0.0``, all nans) one rank."""
    n = x.shape[axis]
    if n <= 1:
        return jnp.zeros(x.shape, jnp.int64)
    s = jnp.sort(x, axis=axis)  # (nan last)
    a, b = lax.slice_in_dim(s, 1, n, axis=axis), lax.slice_in_dim(s, 0, n - 1, axis=axis)
    new = a != b
    if jnp.issubdtype(x.dtype, jnp.inexact):
        new = new & ~(jnp.isnan(a) & jnp.isnan(b))
    first = jnp.zeros_like(lax.slice_in_dim(new, 0, 1, axis=axis))
    dense = jnp.cumsum(jnp.concatenate([first, new], axis=axis).astype(jnp.int64), axis=axis)
    # each element's rank: where it lands among the sorted values (any equal entry carries it)
    order = jnp.argsort(x, axis=axis, stable=True)
    ranks = jnp.zeros_like(dense)
    ranks = jnp.put_along_axis(ranks, order, dense, axis=axis, inplace=False)
    if descending:
        ranks = jnp.max(ranks, axis=axis, keepdims=True) - ranks
    return ranks


# ---- one row: ``v`` packs (key << 32) | position, so moving an entry moves both -----------------
def _key(v, i):
    return v[i] >> 32


def _swap(v, a, b):
    va, vb = v[a], v[b]
    return v.at[a].set(vb).at[b].set(va)


def _adjust_heap(v, first, hole, length, value):
    """libstdc++'s ``__adjust_heap`` on ``[first, first + length)``, then ``__push_heap``."""
    top = hole

    def down(s):
        v, hole, child = s
        child = 2 * (child + 1)
        child = jnp.where(_key(v, first + child) < _key(v, first + child - 1), child - 1, child)
        return v.at[first + hole].set(v[first + child]), child, child

    v, hole, child = lax.while_loop(lambda s: s[2] < (length - 1) // 2, down, (v, hole, hole))
    odd = (length % 2 == 0) & (child == (length - 2) // 2)
    c2 = 2 * (child + 1)
    v = v.at[first + hole].set(jnp.where(odd, v[first + c2 - 1], v[first + hole]))
    hole = jnp.where(odd, c2 - 1, hole)
    vk = value >> 32

    def up_cond(s):
        v, hole = s
        return (hole > top) & (_key(v, first + jnp.maximum(hole - 1, 0) // 2) < vk)

    def up(s):
        v, hole = s
        parent = (hole - 1) // 2
        return v.at[first + hole].set(v[first + parent]), parent

    v, hole = lax.while_loop(up_cond, up, (v, hole))
    return v.at[first + hole].set(value)


def _pop_into(v, first, length, result):
    """``__pop_heap(first, first + length, result)``: the root goes to ``result``, whose old entry
    sifts down from the root."""
    value = v[result]
    return _adjust_heap(v.at[result].set(v[first]), first, 0, length, value)


def _heap_select(v, first, middle, last):
    """``__heap_select``: a heap of ``[first, middle)``; each later entry that beats the root
    replaces it. Empty ranges do nothing (so a vmapped row can skip it)."""
    length = middle - first

    def build(s):
        v, parent = s
        return _adjust_heap(v, first, parent, length, v[first + parent]), parent - 1

    v, _ = lax.while_loop(lambda s: s[1] >= 0, build, (v, (length - 2) // 2))

    def scan(s):
        v, i = s
        v = lax.cond(_key(v, i) < _key(v, first), lambda v: _pop_into(v, first, length, i), lambda v: v, v)
        return v, i + 1

    v, _ = lax.while_loop(lambda s: s[1] < last, scan, (v, middle))
    return v


def _sort_heap(v, first, last):
    def body(s):
        v, last = s
        return _pop_into(v, first, last - 1 - first, last - 1), last - 1

    return lax.while_loop(lambda s: s[1] - first > 1, body, (v, last))[0]


def _stable_range(v, first, last):
    """The range ``[first, last)`` sorted stably by key: what libstdc++'s insertion sorts leave
    (each entry goes after the equal ones before it), the rest in place."""
    pos = jnp.arange(v.shape[0])
    k = jnp.where(pos < first, -_BIG, jnp.where(pos >= last, _BIG, v >> 32))
    return v[jnp.argsort(k, stable=True)]


def _ranked(mask, pos, n, reverse=False):
    """For the positions where ``mask`` holds: their 1-based rank (from the right if ``reverse``)
    and the table rank -> position (``fill`` past the last)."""
    c = jnp.cumsum(mask[::-1])[::-1] if reverse else jnp.cumsum(mask)
    fill = -1 if reverse else _BIG
    table = jnp.full(n + 2, fill, jnp.int64).at[jnp.where(mask, c, n + 5)].set(pos, mode="drop")
    return c, table


def _exchange(v, pos, n, inl, rl, inr, rr, lpos, rpos, count):
    """Swap the ``t``-th left stop with the ``t``-th right stop for ``t <= count``."""
    src = jnp.where(inl & (rl <= count), rpos[jnp.clip(rl, 0, n + 1)], pos)
    src = jnp.where(inr & (rr <= count), lpos[jnp.clip(rr, 0, n + 1)], src)
    return v[src]


def _partition_pivot(v, first, last):
    """``__unguarded_partition_pivot``: median of three moved to ``first``, then Hoare's partition
    of ``[first + 1, last)`` → (v, cut). The scans' stops are the entries not below the pivot
    (left) and not above it (right); the t-th pair swaps while left < right."""
    n = v.shape[0]
    mid = first + (last - first) // 2
    a, b, c = first + 1, mid, last - 1
    ka, kb, kc = _key(v, a), _key(v, b), _key(v, c)
    pick = jnp.where(ka < kb, jnp.where(kb < kc, b, jnp.where(ka < kc, c, a)),
                     jnp.where(ka < kc, a, jnp.where(kb < kc, c, b)))
    v = _swap(v, first, pick)
    piv = _key(v, first)
    pos = jnp.arange(n)
    keys = v >> 32
    inl = (pos > first) & (pos < last) & ~(keys < piv)
    inr = (pos >= first) & (pos < last) & ~(piv < keys)
    rl, lpos = _ranked(inl, pos, n)
    rr, rpos = _ranked(inr, pos, n, reverse=True)
    t = jnp.arange(n + 2)
    count = jnp.sum((t >= 1) & (lpos < rpos))
    v = _exchange(v, pos, n, inl, rl, inr, rr, lpos, rpos, count)
    cut = jnp.where(count == 0, lpos[1], jnp.minimum(lpos[count + 1], rpos[count]))
    return v, cut


def _lg(m):
    """``std::__lg``: floor(log2 m) for m >= 1."""
    return 63 - lax.clz(jnp.maximum(m, 1).astype(jnp.int64))


def _nth_element(v, nth, last):
    """``std::nth_element(begin, begin + nth, begin + last)`` (introselect)."""
    def cond(s):
        v, first, end, depth = s
        return (end - first > 3) & (depth > 0)

    def body(s):
        v, first, end, depth = s
        v, cut = _partition_pivot(v, first, end)
        return v, jnp.where(cut <= nth, cut, first), jnp.where(cut <= nth, end, cut), depth - 1

    v, first, end, depth = lax.while_loop(cond, body, (v, jnp.int64(0), jnp.int64(last), 2 * _lg(last)))
    fallback = end - first > 3  # depth limit reached: heap_select, then the nth entry to its place
    v = _heap_select(v, first, jnp.where(fallback, nth + 1, first), jnp.where(fallback, end, first))
    v = jnp.where(fallback, _swap(v, first, nth), v)
    return _stable_range(v, first, jnp.where(fallback, first, end))


def _introsort(v, last):
    """``std::sort(begin, begin + last)``: introsort down to blocks of 16 (ranges on an explicit
    stack: disjoint, so the order they are taken in does not matter), heapsort past the depth
    limit, then the final insertion sort (stable on that arrangement)."""
    size = 2 * 64 + 2
    stack = jnp.zeros((size, 3), jnp.int64).at[0].set(jnp.stack([jnp.int64(0), jnp.int64(last),
                                                               2 * _lg(last)]))
    heaps = jnp.zeros((size, 2), jnp.int64)

    def body(s):
        v, stack, top, heaps, nh = s
        f, l, d = stack[top - 1, 0], stack[top - 1, 1], stack[top - 1, 2]
        top = top - 1
        big = l - f > 16
        part = big & (d > 0)
        w, cut = _partition_pivot(v, f, l)
        v = jnp.where(part, w, v)
        stack = stack.at[top].set(jnp.where(part, jnp.stack([cut, l, d - 1]), stack[top]))
        stack = stack.at[top + 1].set(jnp.where(part, jnp.stack([f, cut, d - 1]), stack[top + 1]))
        top = jnp.where(part, top + 2, top)
        heap = big & (d == 0)
        heaps = heaps.at[nh].set(jnp.where(heap, jnp.stack([f, l]), heaps[nh]))
        return v, stack, top, heaps, nh + heap

    init = (v, stack, jnp.int64(1), heaps, jnp.int64(0))
    v, _, _, heaps, nh = lax.while_loop(lambda s: s[2] > 0, body, init)

    def heapsort(s):
        v, i = s
        f, l = heaps[i, 0], heaps[i, 1]
        return _sort_heap(_heap_select(v, f, l, l), f, l), i + 1

    v, _ = lax.while_loop(lambda s: s[1] < nh, heapsort, (v, jnp.int64(0)))
    return _stable_range(v, 0, last)


def _pack(keys):
    return (keys.astype(jnp.int64) << 32) | jnp.arange(keys.shape[0], dtype=jnp.int64)


def _unpack(v):
    return v & 0xFFFFFFFF


def topk_order(keys, k: int, sorted: bool = True):
    """Positions of the row's entries in the order PyTorch 2.13's CPU ``topk`` leaves them (the
    first ``k`` are its result); ``keys`` rank best first (``comparator_ranks``)."""
    n = keys.shape[0]
    v = _pack(keys)
    if k == 0:
        return _unpack(v)
    if 64 * k <= n:
        return _unpack(_sort_heap(_heap_select(v, 0, k, n), 0, k))
    v = _nth_element(v, k - 1, n)
    if sorted and k - 1 > 1:
        v = _introsort(v, k - 1)
    return _unpack(v)


def quickselect_order(keys, k: int):
    """Positions in the order TH's ``quick_select_template(arr, k)`` leaves them (``kthvalue``'s
    answer is at ``k``, 0-based): median-of-three into ``L``, ``L+1``, ``R``, Sedgewick's partition
    of ``(L+1, R)``, the pivot swapped to ``j``."""
    n = keys.shape[0]
    pos = jnp.arange(n)

    def cond(s):
        return s[2] > s[1] + 1

    def body(s):
        v, lo, hi = s
        v = _swap(v, (lo + hi) >> 1, lo + 1)
        v = jnp.where(_key(v, lo + 1) > _key(v, hi), _swap(v, lo + 1, hi), v)
        v = jnp.where(_key(v, lo) > _key(v, hi), _swap(v, lo, hi), v)
        v = jnp.where(_key(v, lo + 1) > _key(v, lo), _swap(v, lo + 1, lo), v)
        piv = _key(v, lo)
        keys = v >> 32
        ina = (pos >= lo + 2) & (pos <= hi) & ~(piv > keys)    # where ``i`` stops
        inb = (pos >= lo + 1) & (pos <= hi - 1) & ~(keys > piv)  # where ``j`` stops
        ra, apos = _ranked(ina, pos, n)
        rb, bpos = _ranked(inb, pos, n, reverse=True)
        t = jnp.arange(n + 2)
        count = jnp.sum((t >= 1) & (apos <= bpos) & (bpos >= 0))
        v = _exchange(v, pos, n, ina, ra, inb, rb, apos, bpos, count)
        aT, bT = apos[count], bpos[count]
        prev_b = jnp.where(count >= 2, bpos[jnp.maximum(count - 1, 0)], _BIG)
        prev_a = jnp.where(count >= 2, apos[jnp.maximum(count - 1, 0)], -_BIG)
        i = jnp.where(count == 0, apos[1], jnp.minimum(apos[count + 1], jnp.where(bT > aT, bT, prev_b)))
        j = jnp.where(count == 0, bpos[1], jnp.maximum(bpos[count + 1], jnp.where(aT < bT, aT, prev_a)))
        v = _swap(v, lo, j)
        return v, jnp.where(j <= k, i, lo), jnp.where(j >= k, j - 1, hi)

    v, lo, hi = lax.while_loop(cond, body, (_pack(keys), jnp.int64(0), jnp.int64(n - 1)))
    v = jnp.where((hi == lo + 1) & (_key(v, lo) > _key(v, hi)), _swap(v, lo, jnp.minimum(hi, n - 1)), v)
    return _unpack(v)


def rows(fn, keys, axis: int, lo: int, hi: int, stable, need):
    """``fn(row_keys)[lo:hi]`` along ``axis`` for the rows where ``need`` (``keys``' shape without
    ``axis``) holds, ``stable``'s row elsewhere: one row at a time (``lax.map``), so a row without
    ties costs nothing and each replay updates its row in place."""
    moved = jnp.moveaxis(keys, axis, -1)
    flat = moved.reshape(-1, moved.shape[-1])
    fb = jnp.moveaxis(stable, axis, -1).reshape(-1, hi - lo)
    out = lax.map(lambda a: lax.cond(a[2], lambda: fn(a[0])[lo:hi].astype(a[1].dtype), lambda: a[1]),
                  (flat, fb, need.reshape(-1)))
    return jnp.moveaxis(out.reshape(moved.shape[:-1] + (hi - lo,)), -1, axis)
