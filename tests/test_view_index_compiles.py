"""Reading and writing through a view made with integer indices (``t[i][0][j] = 1``,
``w[i].add_(1)``) compiles its kernels once per view *shape*, not once per index: the indices
are the kernels' arguments. Found in pytorch/tutorials' char-RNN classification, whose
``lineToTensor`` sets one letter at a time (``tensor[li][0][letterToIndex(letter)] = 1``):
55 of the script's 103 XLA compiles were these writes, one per (position, letter) met.

Each row warms up on the first half of the indices and counts compiles over the other half;
the values are NumPy's (the same writes on an array)."""

import numpy as np
import pytest

import funcgrad

from .test_caches import _COMPILES


def _one_hot(t, rows):
    for i in rows:
        for j in range(0, 30, 3):
            t[i][0][(i + j) % 30] = 1


def _row_add(t, rows):
    for i in rows:
        t[i].add_(i)


def _row_slice_set(t, rows):
    for i in rows:
        t[i, 0, 5:9] = float(i)


def _read_after_write(t, rows):
    views = [t[i][0] for i in rows]
    t.mul_(2)
    return [v.sum().item() for v in views]  # each view re-read from the written base


# NumPy's versions of add_ and of the read after a write (the one-hot and slice writes are
# written the same for an array: they are their own reference)
def _np_row_add(a, rows):
    for i in rows:
        a[i] += i


def _np_read_after_write(a, rows):
    views = [a[i][0] for i in rows]
    a *= 2
    return [float(v.sum()) for v in views]


CASES = {"one-hot letters, t[i][0][j] = 1": (_one_hot, _one_hot),
         "t[i].add_(i)": (_row_add, _np_row_add),
         "t[i, 0, 5:9] = ...": (_row_slice_set, _row_slice_set),
         "views re-read after the base changes": (_read_after_write, _np_read_after_write)}


@pytest.mark.parametrize("label", CASES)
def test_other_indices_compile_nothing(label):
    f, ref = CASES[label]
    t = funcgrad.zeros(16, 1, 30)
    a = np.zeros((16, 1, 30), np.float32)
    for _ in range(4):  # (past the views funcgrad makes on the host while they are new)
        f(t, range(8))
        ref(a, range(8))
    with _COMPILES as c:
        got = f(t, range(8, 16))
    want = ref(a, range(8, 16))
    assert c.n == 0, f"{c.n} XLA compiles for indices 8..15"
    assert got == want
    np.testing.assert_array_equal(t.numpy(), a)
