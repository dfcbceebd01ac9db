"""Storage cells and the per-thread binding frame.

A Tensor's array lives in a ``_Cell`` shared by its views and ``detach()``-ed aliases. A
:class:`Frame` is one thread's stack entry of cell → value bindings: a bound cell reads and
writes its binding on that thread only (its object's class is switched to a bound variant
while any frame binds it, as a packed cell's is; other threads read the cell's own array).
The jit bridge's trace, ``compile(module)``, ``func.functional_call`` and ``export`` all run
inside one: the trace binds the state cells to tracers; cells created under a trace frame are
``_TracedCell`` until it ends, then plain (the bridge tells state made by the step from older
state; a later frame treats them as any older cell); a view bound by a frame is bound in the
frame (``bind_view``; the view's ``gen``/``cache`` and its value read the binding on that
thread), never in the view's shared cache; reads of cells nobody bound are recorded
(``frame.reads``, with the Tensor read: the bridge lifts those that became constants, and
differentiates those that require grad) and writes to them are kept in the frame
(``frame.written``: dropped on leaving and lifted, or written through when concrete). Nothing
is patched on a class, so another thread creating, reading or writing tensors at the same
time, or tracing another step, is not affected.

>>> f = Frame(known=set())
>>> with f:
...     type(new_cell(1)).__name__
'_TracedCell'
>>> type(new_cell(1)).__name__
'_Cell'
"""

from __future__ import annotations

import itertools
import threading

from jax.core import Tracer as _Tracer

from ._meta import MetaArray

try:  # the concrete array type, whose aval gives shape and dtype without jax's Python properties
    from jax._src.array import ArrayImpl as _Array
except ImportError:  # (private in JAX: then every value takes the generic path)
    class _Array:  # type: ignore[no-redef]
        pass


class _Cell:
    __slots__ = ("value", "gen", "addr")  # (addr: set by ``address`` only, on first asking)

    def __init__(self, value):
        self.value, self.gen = value, 0


_NEXT_ADDRESS = [0x55D0_0000_0000]  # where the next storage asked for its address starts
_ADDRESS_LOCK = threading.Lock()


def address(cell) -> int:
    """The storage address of ``cell`` (``Tensor.data_ptr()``): funcgrad's arrays are immutable
    and an in-place write replaces the cell's array, so the address is the cell's, not its
    buffer's: given on first asking from one address space (64-byte aligned, each storage its
    extent, never reused), kept for the cell's life, shared by every view of it. An empty
    storage's is 0, as PyTorch's null allocation."""
    try:
        return cell.addr
    except AttributeError:
        pass
    v = cell.value
    nbytes = 0 if type(v) is MetaArray else v.size * v.dtype.itemsize  # (a meta tensor's: 0, no data)
    with _ADDRESS_LOCK:
        try:
            return cell.addr  # (another thread was first)
        except AttributeError:
            a = 0 if nbytes == 0 else _NEXT_ADDRESS[0]
            _NEXT_ADDRESS[0] += -(-nbytes // 64) * 64
            cell.addr = a
            return a


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
# how many frames are entered, all threads together: Tensor._value records reads only while
# some thread has one (eagerly the check is one list index)
ACTIVE = [0]


def current():
    """This thread's binding frame (None outside a trace)."""
    return _local.frame


def new_cell(value) -> _Cell:
    """A storage cell for a new tensor (a ``_TracedCell`` under this thread's tracing frame;
    under another frame a plain cell the frame knows: writes to it are the tensor's own)."""
    f = _local.frame
    if f is None:
        return _Cell(value)
    if f.mark_new:
        c = _TracedCell(value)
        f.created.append(c)  # (a plain cell again when the frame ends)
        return c
    c = _Cell(value)
    f.known.add(id(c))
    return c


def view_binding(vi):
    """This thread's binding of the view info ``vi``: ``(value, base generation, vi)`` or None."""
    f = _local.frame
    while f is not None:
        b = f.views.get(id(vi))
        if b is not None:
            return b
        f = f._prev
    return None


# ---- bindings ------------------------------------------------------------------------------------
def _binding(cell):
    """This thread's binding of ``cell`` (innermost frame first): ``[cell, value, gen]`` or None."""
    f = _local.frame
    while f is not None:
        b = f.bound.get(id(cell))
        if b is not None:
            return b
        f = f._prev
    return None


class _BoundMixin:
    """Cells bound by some thread's frame: that thread reads and writes its binding, every other
    thread the cell's own value. The properties are made per cell class (``_bound_class``) over
    that class's own descriptors, not looked up on ``type(self)`` when called: another thread
    may switch the cell's class back (its frame ended) between the lookup and the call."""

    __slots__ = ()


def _bound_property(orig, i: int) -> property:
    """``value`` (``i=1``) or ``gen`` (``i=2``) of a bound cell class; ``orig``: the plain class's."""
    def get(self):
        b = _binding(self)
        return orig.__get__(self) if b is None else b[i]

    def put(self, v):
        b = _binding(self)
        if b is None:
            orig.__set__(self, v)
        else:
            b[i] = v
    return property(get, put)


def _bound_traced(orig):
    """``traced()`` of a bound generator cell: the state vector a draw advances while tracing."""
    def traced(self):
        b = _binding(self)
        if b is None:
            return orig(self)
        return b[1] if is_tracer(b[1]) else None
    return traced


_bound_classes: dict = {}
_bind_lock = threading.Lock()
_attached: dict = {}  # id(cell) -> [cell, its class, how many frames (all threads) bind it]


def _attach(cell) -> None:
    with _bind_lock:
        a = _attached.get(id(cell))
        if a is not None:
            a[2] += 1
            return
        if type(cell) is _PackedCell:  # a piece of a pack: a plain cell again while bound
            cell._detach()
        cls = type(cell)
        _attached[id(cell)] = [cell, cls, 1]
        cell.__class__ = _bound_class(cls)


def _bound_class(cls):
    """The bound variant of the cell class ``cls`` (call with ``_bind_lock`` held)."""
    b = _bound_classes.get(cls)
    if b is None:
        ns = {"__slots__": (), "value": _bound_property(cls.value, 1),
              "gen": _bound_property(cls.gen, 2)}
        if hasattr(cls, "traced"):
            ns["traced"] = _bound_traced(cls.traced)
        b = _bound_classes[cls] = type(f"_Bound{cls.__name__}", (_BoundMixin, cls), ns)
    return b


def _unmark(cell) -> None:
    """Make a cell created under a trace frame a plain ``_Cell`` (the frame ended): later frames
    treat it as any older cell (its reads recorded, its writes kept in the frame)."""
    if type(cell) is _TracedCell:
        cell.__class__ = _PlainCell
        return
    with _bind_lock:  # bound meanwhile (by a frame still open): plain once unbound
        a = _attached.get(id(cell))
        if a is not None and a[0] is cell and a[1] is _TracedCell:
            a[1] = _PlainCell
            if type(cell) is _bound_classes[_TracedCell]:
                cell.__class__ = _bound_class(_PlainCell)


def _detach_binding(cell) -> None:
    with _bind_lock:
        a = _attached[id(cell)]
        a[2] -= 1
        if not a[2]:
            del _attached[id(cell)]
            if type(cell) is _bound_classes[a[1]]:  # (not re-packed meanwhile by another thread)
                cell.__class__ = a[1]


class Frame:
    """A binding frame on this thread (a context manager; frames nest).

    ``bind(cell, value)`` makes ``value`` the cell's value for this thread until the frame is
    left (other threads keep seeing the cell's own value; nothing is patched on a class: the
    bound cell's own class is switched while bound). Under the frame:

    - ``reads``: ``id(cell) -> (cell, value read, the Tensor read, its .grad then)`` for every
      pre-existing cell
      read through a Tensor that is neither bound nor ``known`` (the jit bridge lifts those whose value became
      a constant of the program);
    - ``written``: ``id(cell) -> cell`` for every such cell written (``capture=True``: the write
      binds the cell, so it is undone on leaving and lifted; otherwise it goes to an outer
      frame, or to the cell);
    - cells made are ``_TracedCell`` (``mark_new=True``) until the frame ends, then plain cells;
    - ``record`` (default: ``mark_new``): whether ``reads`` are recorded.

    >>> c = _Cell(1)
    >>> with Frame() as f:
    ...     f.bind(c, 2); c.value
    2
    >>> c.value, type(c).__name__
    (1, '_Cell')
    """

    __slots__ = ("known", "written", "reads", "bound", "mark_new", "capture", "views", "_prev",
                 "created", "record", "bases", "baked")

    def __init__(self, known=(), mark_new: bool = True, capture: bool = True, record=None):
        self.known, self.written, self.reads, self.bound = set(known), {}, {}, {}
        self.mark_new, self.capture, self.views, self._prev = mark_new, capture, {}, None
        self.created, self.record = [], mark_new if record is None else record
        # base cells ``bind_view`` bound to their own arrays, and concrete values read from them
        # other than through a bound view (``id(cell) -> (cell, value, tensor)``): constants
        self.bases, self.baked = set(), {}

    def bind(self, cell, value, gen=None) -> None:
        """Bind ``cell`` to ``value`` (and ``gen``: by default a new generation) for this thread."""
        b = self.bound.get(id(cell))
        if gen is None:
            gen = next(_BIND_GEN)
        if b is not None:
            b[1], b[2] = value, gen
            return
        _attach(cell)
        self.bound[id(cell)] = [cell, value, gen]
        self.known.add(id(cell))

    def bind_view(self, t, value, gen) -> None:
        """Make the view tensor ``t`` read ``value`` for this thread (its base cell bound at ``gen``).

        The binding is the frame's (``views``), not the view's shared cache: another thread
        reading the same view meanwhile recomputes that cache from its own value of the base,
        which must neither show it the tracer nor take the binding away from this thread."""
        vi = t._viewinfo
        cell = t._cell
        if id(cell) not in self.bound:
            self.bind(cell, cell.value, gen)
            self.bases.add(id(cell))
        self.views[id(vi)] = (value, self.bound[id(cell)][2], vi)

    def cache_view(self, vi, cell, value, gen) -> bool:
        """Keep ``value`` (the view ``vi`` of ``cell`` at ``gen``) in this frame when a frame of
        this thread binds ``cell``; False (the caller caches it in the view) otherwise."""
        if _binding(cell) is None:
            return False
        self.views[id(vi)] = (value, gen, vi)
        return True

    def share_view(self, vi, new) -> None:
        """``new`` is a copy of the view info ``vi`` (``detach()``...): it reads what ``vi`` reads."""
        f = self
        while f is not None:
            b = f.views.get(id(vi))
            if b is not None:
                f.views[id(new)] = (b[0], b[1], new)
                return
            f = f._prev

    def read(self, cell, value, tensor=None) -> None:
        """Called when ``tensor``'s value (``value``, from ``cell``) is read under this frame."""
        f = self
        while f is not None:
            if id(cell) in f.known or type(cell) is _TracedCell:
                if f.bases and id(cell) in f.bases and not isinstance(value, _Tracer):
                    f.baked.setdefault(id(cell), (cell, value, tensor))  # (the base's own array)
                return
            if f.record:  # (the jit bridge's frames: the others need no reads)
                r = f.reads.get(id(cell))
                # a reader that requires grad is kept over one that does not (``p.detach()``
                # read first, then ``p``): the bridge must differentiate it, as eagerly; its
                # .grad as it was (a trace the bridge redoes must not leave its gradient there)
                if r is None or r[2] is not tensor and getattr(tensor, "_requires_grad", False) \
                        and not getattr(r[2], "_requires_grad", False):
                    f.reads[id(cell)] = (cell, value, tensor, getattr(tensor, "_grad", None))
            f = f._prev

    def write(self, cell) -> None:
        """Called before ``cell`` is written under this frame: a cell no frame of this thread
        binds is bound by the innermost capturing frame (and recorded), so the write stays in it."""
        if type(cell) is _TracedCell:
            return
        f = self
        while f is not None:
            if id(cell) in f.bound or id(cell) in f.known:
                return
            if f.capture:
                f.written[id(cell)] = cell
                f.bind(cell, cell.value, cell.gen)
                return
            f = f._prev

    def release(self, commit=None) -> None:
        """Drop every binding (the cells read their own values again). ``commit(value)``: bound
        values for which it is true are written into their cells (e.g. concrete ones)."""
        self.views = {}
        bound, self.bound = self.bound, {}
        for cell, v, g in bound.values():
            _detach_binding(cell)
            if commit is not None and commit(v) and v is not cell.value:
                if self._prev is not None:
                    self._prev.write(cell)
                cell.value, cell.gen = v, g

    def __enter__(self) -> "Frame":
        self._prev, _local.frame = _local.frame, self
        with _bind_lock:
            ACTIVE[0] += 1
        return self

    def __exit__(self, *exc) -> None:
        try:
            self.release()
            created, self.created = self.created, []
            for c in created:
                _unmark(c)
        finally:
            with _bind_lock:
                ACTIVE[0] -= 1
            _local.frame, self._prev = self._prev, None


_BIND_GEN = itertools.count(1 << 60, 1 << 32)  # generations of bound values (never reached otherwise)
