"""The order libstdc++'s ``std::sort`` leaves (value, index) pairs in, compared by value with
``<``: PyTorch's CPU ``mode`` kernel sorts each row so and reports, for the most frequent value,
the index of the pair that ends its run. ``std::sort`` is an introsort (median-of-three
quicksort, heapsort past a depth limit, a final insertion sort), not stable, and a nan compares
false with everything, so which index (and with nan, which value) ``mode`` returns depends on
this exact algorithm; it is replayed here, step for step, on the host (a data-dependent
branching sort has no fast XLA form). Checked against PyTorch's mode on random rows with ties
and nan (tests/test_ops_math.py).
"""

from __future__ import annotations

import numpy as np


def _lt(a, b):
    return a[0] < b[0]


def _insertion_sort(v, first, last):
    if first == last:
        return
    for i in range(first + 1, last):
        val = v[i]
        if _lt(val, v[first]):
            v[first + 1:i + 1] = v[first:i]
            v[first] = val
        else:
            _unguarded_linear_insert(v, i)

def _unguarded_linear_insert(v, last):
    val = v[last]
    nxt = last - 1
    # (guarded: where a nan breaks the order PyTorch's unguarded loop reads before the buffer)
    while nxt >= 0 and _lt(val, v[nxt]):
        v[last] = v[nxt]
        last = nxt
        nxt -= 1
    v[last] = val

def _move_median_to_first(v, result, a, b, c):
    if _lt(v[a], v[b]):
        if _lt(v[b], v[c]):
            v[result], v[b] = v[b], v[result]
        elif _lt(v[a], v[c]):
            v[result], v[c] = v[c], v[result]
        else:
            v[result], v[a] = v[a], v[result]
    elif _lt(v[a], v[c]):
        v[result], v[a] = v[a], v[result]
    elif _lt(v[b], v[c]):
        v[result], v[c] = v[c], v[result]
    else:
        v[result], v[b] = v[b], v[result]

def _unguarded_partition(v, first, last, pivot):
    while True:
        while _lt(v[first], v[pivot]):
            first += 1
        last -= 1
        while _lt(v[pivot], v[last]):
            last -= 1
        if not first < last:
            return first
        v[first], v[last] = v[last], v[first]
        first += 1

def _adjust_heap(v, first, hole, length, value):
    top = hole
    child = hole
    while child < (length - 1) // 2:
        child = 2 * (child + 1)
        if _lt(v[first + child], v[first + child - 1]):
            child -= 1
        v[first + hole] = v[first + child]
        hole = child
    if (length & 1) == 0 and child == (length - 2) // 2:
        child = 2 * (child + 1)
        v[first + hole] = v[first + child - 1]
        hole = child - 1
    parent = (hole - 1) // 2
    while hole > top and _lt(v[first + parent], value):
        v[first + hole] = v[first + parent]
        hole = parent
        parent = (hole - 1) // 2
    v[first + hole] = value

def _heap_sort(v, first, last):
    n = last - first
    if n >= 2:  # make_heap
        parent = (n - 2) // 2
        while True:
            _adjust_heap(v, first, parent, n, v[first + parent])
            if parent == 0:
                break
            parent -= 1
    while last - first > 1:  # sort_heap
        last -= 1
        value = v[last]
        v[last] = v[first]
        _adjust_heap(v, first, 0, last - first, value)

def _introsort_loop(v, first, last, depth):
    while last - first > 16:
        if depth == 0:
            _heap_sort(v, first, last)
            return
        depth -= 1
        mid = first + (last - first) // 2
        _move_median_to_first(v, first, first + 1, mid, last - 1)
        cut = _unguarded_partition(v, first + 1, last, first)
        _introsort_loop(v, cut, last, depth)
        last = cut

def std_sort(v):
    n = len(v)
    if n == 0:
        return
    _introsort_loop(v, 0, n, 2 * (n.bit_length() - 1))  # 2 * floor(log2 n)
    if n > 16:
        _insertion_sort(v, 0, 16)
        for i in range(16, n):
            _unguarded_linear_insert(v, i)
    else:
        _insertion_sort(v, 0, n)


def std_sort_order(a: np.ndarray) -> np.ndarray:
    """The permutation ``std::sort`` gives each row (last axis) of ``a`` (int64, same shape)."""
    a = np.asarray(a)
    vals = a.astype(np.float64) if a.dtype.kind == "f" or a.dtype.name == "bfloat16" else a.astype(np.int64)
    rows = vals.reshape(-1, vals.shape[-1]) if vals.size else vals.reshape(0, vals.shape[-1])
    out = np.empty(rows.shape, np.int64)
    for r, row in enumerate(rows.tolist()):
        v = [(x, i) for i, x in enumerate(row)]
        std_sort(v)
        out[r] = [i for _, i in v]
    return out.reshape(a.shape)
