"""Which entries PyTorch's CPU ``topk`` picks when values tie at the k-th place.

``torch.topk`` on CPU does not break ties by index: it runs the C++ standard library's selection
on ``(value, index)`` pairs compared by value only — ``std::partial_sort`` (a heap of the k best)
when ``64·k <= n``, ``std::nth_element`` (introselect) otherwise — so which of several equal entries
lands in the top k follows from those algorithms' swaps (``topk(ones(5), 2)`` is ``[2, 4]``).
Pruning masks are built from that set, so :func:`topk_set` replays libstdc++'s heap and
introselect steps (the GCC library PyTorch's Linux wheels use) where ties straddle the k-th
place; without such ties the set is unambiguous and NumPy gives it directly. Only the *set* is
reproduced, not topk's order within it (masks do not depend on it)."""

from __future__ import annotations

import numpy as np

__all__ = ["topk_set"]


def _ranks(values: np.ndarray, largest: bool) -> np.ndarray:
    """Integer keys whose ``<`` is topk's comparator: NaN counts as the largest value, equal
    values (``-0.0`` and ``0.0`` too) share a key."""
    uniq, inv = np.unique(values, return_inverse=True, equal_nan=True)
    inv = inv.reshape(-1).astype(np.int64)
    return (len(uniq) - 1 - inv) if largest else inv


def topk_set(values: np.ndarray, k: int, largest: bool = True) -> np.ndarray:
    """The indices (ascending) of the ``k`` entries of the 1-D ``values`` that PyTorch 2.13's CPU
    ``topk(values, k, largest=largest)`` returns, ties resolved as PyTorch resolves them.

    >>> topk_set(np.ones(5, np.float32), 2).tolist()
    [2, 4]
    >>> topk_set(np.array([3., 1., 2.]), 2, largest=False).tolist()
    [1, 2]
    """
    n = values.shape[0]
    if k <= 0:
        return np.zeros(0, np.int64)
    key = _ranks(values, largest)
    kth = np.partition(key, k - 1)[k - 1]
    below = int((key < kth).sum())
    if below + int((key == kth).sum()) == k:      # no tie straddles the k-th place
        return np.flatnonzero(key <= kth)
    keys = key.tolist()
    if 64 * k <= n:
        chosen = _heap_select(keys, k)
    else:
        chosen = _introselect(keys, k)
    return np.sort(np.asarray(chosen, np.int64))


# ---- libstdc++'s heap primitives over parallel lists (key, index); ``a < b`` is ``comp(a, b)`` ----
def _adjust_heap(key, idx, first, hole, length, vk, vi):
    """std::__adjust_heap on the range starting at ``first`` (positions relative to it)."""
    top = hole
    child = hole
    while child < (length - 1) // 2:
        child = 2 * (child + 1)
        if key[first + child] < key[first + child - 1]:
            child -= 1
        key[first + hole], idx[first + hole] = key[first + child], idx[first + child]
        hole = child
    if length % 2 == 0 and child == (length - 2) // 2:
        child = 2 * (child + 1)
        key[first + hole], idx[first + hole] = key[first + child - 1], idx[first + child - 1]
        hole = child - 1
    # __push_heap, relative to ``first``
    parent = (hole - 1) // 2
    while hole > top and key[first + parent] < vk:
        key[first + hole], idx[first + hole] = key[first + parent], idx[first + parent]
        hole = parent
        parent = (hole - 1) // 2
    key[first + hole], idx[first + hole] = vk, vi


def _make_heap(key, idx, first, length):
    if length < 2:
        return
    parent = (length - 2) // 2
    while True:
        _adjust_heap(key, idx, first, parent, length, key[first + parent], idx[first + parent])
        if parent == 0:
            return
        parent -= 1


def _pop_heap_into(key, idx, first, length, result):
    """std::__pop_heap(first, first + length, result): the top goes to ``result``, whose old
    entry sifts down from the root."""
    vk, vi = key[result], idx[result]
    key[result], idx[result] = key[first], idx[first]
    _adjust_heap(key, idx, first, 0, length, vk, vi)


def _heap_select(keys, k):
    """topk's ``64·k <= n`` path, ``std::partial_sort``'s selection: a heap of the first k entries;
    each later entry that beats the heap's worst takes the root's place and sifts down."""
    key, idx = list(keys), list(range(len(keys)))
    _make_heap(key, idx, 0, k)
    for i in range(k, len(key)):
        if key[i] < key[0]:
            _pop_heap_into(key, idx, 0, k, i)
    return idx[:k]


def _introselect(keys, k):
    """std::nth_element(begin, begin + k - 1, end): introselect with median-of-three pivots,
    heap_select past the depth limit, insertion sort for the last three or fewer."""
    key = list(keys)
    idx = list(range(len(keys)))
    first, last, nth = 0, len(key), k - 1
    depth = 2 * (len(key).bit_length() - 1)
    while last - first > 3:
        if depth == 0:
            middle = nth + 1
            _make_heap(key, idx, first, middle - first)
            for i in range(middle, last):
                if key[i] < key[first]:
                    _pop_heap_into(key, idx, first, middle - first, i)
            key[first], key[nth] = key[nth], key[first]
            idx[first], idx[nth] = idx[nth], idx[first]
            return idx[:k]
        depth -= 1
        cut = _partition_pivot(key, idx, first, last)
        if cut <= nth:
            first = cut
        else:
            last = cut
    _insertion_sort(key, idx, first, last)
    return idx[:k]


def _swap(key, idx, a, b):
    key[a], key[b] = key[b], key[a]
    idx[a], idx[b] = idx[b], idx[a]


def _partition_pivot(key, idx, first, last):
    mid = first + (last - first) // 2
    a, b, c = first + 1, mid, last - 1
    if key[a] < key[b]:
        if key[b] < key[c]:
            _swap(key, idx, first, b)
        elif key[a] < key[c]:
            _swap(key, idx, first, c)
        else:
            _swap(key, idx, first, a)
    elif key[a] < key[c]:
        _swap(key, idx, first, a)
    elif key[b] < key[c]:
        _swap(key, idx, first, c)
    else:
        _swap(key, idx, first, b)
    # __unguarded_partition(first + 1, last, pivot=first)
    pivot = key[first]
    lo, hi = first + 1, last
    while True:
        while key[lo] < pivot:
            lo += 1
        hi -= 1
        while pivot < key[hi]:
            hi -= 1
        if not lo < hi:
            return lo
        _swap(key, idx, lo, hi)
        lo += 1


def _insertion_sort(key, idx, first, last):
    if first == last:
        return
    for i in range(first + 1, last):
        vk, vi = key[i], idx[i]
        if vk < key[first]:
            key[first + 1:i + 1] = key[first:i]
            idx[first + 1:i + 1] = idx[first:i]
            key[first], idx[first] = vk, vi
        else:
            j = i
            while vk < key[j - 1]:
                key[j], idx[j] = key[j - 1], idx[j - 1]
                j -= 1
            key[j], idx[j] = vk, vi
