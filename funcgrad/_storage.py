"""Storage cells and the per-thread binding frame.

A Tensor's array lives in a ``_Cell`` shared by its views and ``detach()``-ed aliases. While
the jit bridge traces a step on a thread, that thread has a :class:`Frame`: cells created
under it are ``_TracedCell`` (the bridge tells state made by the step from older state), and
writes to cells the frame does not know are recorded (undone after the trace and lifted into
the program). The frame is consulted where cells are created and values set — nothing is
patched on a class, so another thread creating or writing tensors at the same time is not
affected.

>>> f = Frame(known=set())
>>> with f:
...     type(new_cell(1)).__name__
'_TracedCell'
>>> type(new_cell(1)).__name__
'_Cell'
"""

from __future__ import annotations

import threading

from jax.core import Tracer as _Tracer


class _Cell:
    __slots__ = ("value", "gen")

    def __init__(self, value):
        self.value, self.gen = value, 0


# the slots themselves, under the properties of _PackedCell; and the plain class
_raw_value, _raw_gen, _PlainCell = _Cell.value, _Cell.gen, _Cell


class _PackedCell(_Cell):
    """A cell whose array is one piece of a pack's flat buffer (``funcgrad._jit.pack``).

    A compiled step returns many small state arrays (parameters, ``.grad``, optimizer state)
    packed in one buffer, since each output array costs more than a small copy. The cells keep
    pointing at the pack: the ``value`` slot holds the pack, the ``gen`` slot the piece's index.
    Reading unpacks (once per pack generation); writing turns the cell back into a plain
    ``_Cell`` and marks the pack stale, so every other piece of code sees an ordinary cell.
    """

    __slots__ = ()

    @property
    def value(self):
        return _raw_value.__get__(self).get(_raw_gen.__get__(self))

    @value.setter
    def value(self, v):
        self._detach()
        _raw_value.__set__(self, v)

    @property
    def gen(self):
        return _raw_value.__get__(self).gen

    @gen.setter
    def gen(self, g):
        self._detach()
        _raw_gen.__set__(self, g)

    def _detach(self) -> None:
        pack, i = _raw_value.__get__(self), _raw_gen.__get__(self)
        v, g = pack.get(i), pack.gen
        pack.dirty = True
        self.__class__ = _PlainCell
        _raw_value.__set__(self, v)
        _raw_gen.__set__(self, g)


class _TracedCell(_Cell):
    """The class of storage cells created on a thread while it traces a step."""

    __slots__ = ()


# a training step under a raw jax.jit/grad/vmap would leave tracers in parameters and .grad
RAW_TRANSFORM_MSG = (
    "a parameter (a leaf tensor that requires grad) is being written with a JAX tracer: a "
    "funcgrad step that updates parameters, .grad or optimizer state is running under a raw "
    "JAX transformation (jax.jit, jax.grad, jax.vmap…), which would leave tracers in the "
    "objects. Compile the whole step with funcgrad.jit(step) instead, or make it pure with "
    "funcgrad.func.functional_call(model, params, x) and update the parameters outside.")


def is_tracer(v) -> bool:
    return isinstance(v, _Tracer)


class _Local(threading.local):
    frame = None  # a class default: every thread starts without a frame


_local = _Local()


def current():
    """This thread's binding frame (None outside a trace)."""
    return _local.frame


def new_cell(value) -> _Cell:
    """A storage cell for a new tensor (a ``_TracedCell`` under this thread's tracing frame)."""
    f = _local.frame
    return _Cell(value) if f is None or not f.mark_new else _TracedCell(value)


class Frame:
    """One trace's binding frame on this thread (a context manager; frames nest).

    ``written`` maps ``id(cell)`` to ``(cell, old value, old gen)`` for every pre-existing cell
    outside ``known`` written under the frame (the first write only), so that the trace can
    restore and lift them.
    """

    __slots__ = ("known", "written", "mark_new", "_prev")

    def __init__(self, known: set, mark_new: bool = True):
        # mark_new=False: a frame that only records writes (``functional_call`` under a JAX
        # transformation, whose new tensors are ordinary ones)
        self.known, self.written, self.mark_new, self._prev = known, {}, mark_new, None

    def write(self, cell) -> None:
        """Called before ``cell`` is written under this frame."""
        if type(cell) is not _TracedCell and id(cell) not in self.known \
                and id(cell) not in self.written:
            self.written[id(cell)] = (cell, cell.value, cell.gen)

    def restore(self) -> None:
        for c, v, g in self.written.values():
            c.value, c.gen = v, g

    def __enter__(self) -> "Frame":
        self._prev, _local.frame = _local.frame, self
        return self

    def __exit__(self, *exc) -> None:
        _local.frame, self._prev = self._prev, None
