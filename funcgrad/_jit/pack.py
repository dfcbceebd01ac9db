"""Packing: a compiled step's small state arrays travel as one flat buffer per dtype.

Each array a jitted program takes or returns costs a few microseconds of dispatch (a buffer to
allocate, a Python array object to make), more than copying a few kilobytes. A step over a
model with many small tensors (biases, norms, their ``.grad`` and optimizer state) would pay
that a hundred times per call. So ``plan`` groups the small state cells a program writes by
dtype (and by whether the program also reads them); the program unpacks its packed inputs
and returns each group concatenated, and the cells become :class:`funcgrad._tensor._PackedCell`
pieces of a :class:`Pack`: writing back a group is one assignment, and a piece is unpacked
only when something reads it. Large arrays are not packed (their copy would cost more).
"""

from __future__ import annotations


import jax
import jax.numpy as jnp
import numpy as np

from .._random import _GenCell
from .._storage import _BoundMixin
from .._tensor import _PackedCell, _raw_gen, _raw_value

PACK_MAX = 4096  # elements: state arrays at most this big are packed (16 KiB of float32)

_unpack_kernels: dict = {}


def _offsets(shapes):
    return np.cumsum([0] + [int(np.prod(s, dtype=np.int64)) for s in shapes]).tolist()


def unpack_traced(buf, shapes) -> list:
    """Inside a program: the pieces of a packed buffer."""
    offs = _offsets(shapes)
    return [buf[a:b].reshape(s) for a, b, s in zip(offs, offs[1:], shapes)]


def pack_traced(values) -> jax.Array:
    """Inside a program: pieces into one flat buffer."""
    return jnp.concatenate([jnp.ravel(v) for v in values])


def _unpack_kernel(shapes: tuple):
    k = _unpack_kernels.get(shapes)
    if k is None:
        k = _unpack_kernels[shapes] = jax.jit(lambda buf: tuple(unpack_traced(buf, shapes)))
    return k


_gather = jax.jit(pack_traced)  # eagerly: the cells' current arrays into a program input


class Pack:
    """One group of cells whose current arrays are the pieces of ``buf``.

    ``dirty`` means some cell is no longer attached (it was written, or another pack took it):
    the next program input is then gathered from the cells instead of passing ``buf``.
    """

    __slots__ = ("cells", "shapes", "buf", "gen", "unpacked", "dirty")

    def __init__(self, cells: list, shapes: list):
        self.cells, self.shapes = cells, tuple(map(tuple, shapes))
        self.buf, self.gen, self.unpacked, self.dirty = None, 0, None, True

    def get(self, i: int):
        """The current array of piece ``i`` (unpacking all pieces once per buffer)."""
        u = self.unpacked
        if u is None:
            u = self.unpacked = _unpack_kernel(self.shapes)(self.buf)
        return u[i]

    def input(self):
        """The packed buffer to pass to the program (gathered when a cell changed since)."""
        if not self.dirty:
            return self.buf
        return _gather([c.value for c in self.cells])

    def set(self, buf, gen: int) -> None:
        """The program's new buffer: every cell of the group is now a piece of it."""
        self.buf, self.gen, self.unpacked = buf, gen, None
        if self.dirty:
            bound = False
            for i, c in enumerate(self.cells):
                if type(c) is _PackedCell:
                    old = _raw_value.__get__(c)
                    if old is not self:
                        old.dirty = True
                elif not isinstance(c, _BoundMixin):
                    c.__class__ = _PackedCell
                else:  # bound by a frame (a step run inside another's trace): its own piece
                    c.value, c.gen = self.get(i), gen
                    bound = True
                    continue
                _raw_value.__set__(c, self)
                _raw_gen.__set__(c, i)
            self.dirty = bound


def _packable(aval, value) -> bool:
    if aval.size == 0 or aval.size > PACK_MAX or getattr(aval, "weak_type", False):
        return False
    if jax.dtypes.issubdtype(aval.dtype, jax.dtypes.extended):
        return False  # typed PRNG keys do not concatenate
    # (multi-device state is never packed: the caller checks the devices once for all cells)
    return value is None or not (getattr(value, "weak_type", False) or value.shape != aval.shape
                                 or value.dtype != aval.dtype)


def keep_overwritten(cells, values, keep, changed, outvars) -> list:
    """``keep`` (which state cells the program takes), also taking the big cells it overwrites
    without reading them.

    The old ``.grad`` of a parameter is such a cell when ``zero_grad()`` clears it before
    ``backward()``: the program never reads it, but passed and donated, its buffer receives the
    new gradient (XLA aliases a donated input to an output of the same shape and dtype) instead
    of a new allocation per call, as a hand-written step returning its gradients would do with
    the previous ones. (The caller copies a buffer that something else still holds, so it is
    never deleted under a user's reference; small cells are packed instead, see ``plan``.)
    """
    out_aval = {id(c): v.aval for c, v in zip(changed, outvars)}
    keep = list(keep[:len(cells)])
    for i, (c, v) in enumerate(zip(cells, values)):
        a = out_aval.get(id(c))
        if (not keep[i] and a is not None and a.size > PACK_MAX and isinstance(v, jax.Array)
                and v.shape == a.shape and v.dtype == a.dtype and not v.weak_type
                and not getattr(a, "weak_type", False) and not v.is_deleted()):
            keep[i] = True
    return keep


def alias_order(changed, cell_index, read) -> list[int]:
    """The order of ``changed`` (indices) in which the program returns the new arrays.

    ``jax.jit`` gives each output the buffer of the first donated input of the same shape and
    dtype not taken yet, in argument order; the state is passed in the layout's order. So the
    cells the program also reads (and donates) come first, in the layout's order, each output
    then reusing its own cell's old buffer; a pairing across cells (a parameter's output in
    its ``.grad``'s old buffer) would make XLA copy buffers that are still read.
    """
    donated = sorted((j for j, c in enumerate(changed) if id(c) in read),
                     key=lambda j: cell_index[id(changed[j])])
    return donated + [j for j, c in enumerate(changed) if id(c) not in read]


def plan(changed, out_avals, read_value) -> list[tuple[list[int], bool]]:
    """Groups of ``changed`` to pack: ``[(indices into changed, read?)]``.

    ``read_value(cell)`` is the cell's current array when the program reads the cell, else None.
    Each group has one dtype and at least two members.
    """
    groups: dict = {}
    for j, (c, aval) in enumerate(zip(changed, out_avals)):
        if isinstance(c, _GenCell):  # a generator's state: its cell class is its own
            continue
        v = read_value(c)
        if _packable(aval, v):
            groups.setdefault((np.dtype(aval.dtype), v is not None), []).append(j)
    return [(idx, read) for (_, read), idx in groups.items() if len(idx) >= 2]
