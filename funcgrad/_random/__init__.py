"""Random numbers: PyTorch's CPU generator (mt19937), bit for bit.

``funcgrad.manual_seed(0)`` followed by ``randn``, ``rand``, ``randint``, ``randperm``,
``bernoulli``, dropout, ``nn.init`` and a shuffled ``DataLoader`` gives PyTorch 2.13's numbers
(CPU). Each :class:`Generator` owns one mt19937 stream (``_engine.Engine``, run by NumPy's
``MT19937`` at C speed) and a lock: a draw takes its 32-bit words atomically, so threads never
see the same numbers. The transforms PyTorch applies to those words (``_sample``) are jitted
kernels that reproduce its float arithmetic, including the fused multiply-adds its compiler
emits.

The state is also a storage cell (``_GenCell``) that the jit bridge lifts like any tensor: read
as one uint32 vector (key, position, cached normal samples); inside ``funcgrad.jit`` draws advance
that vector with a ``jax.numpy`` mt19937 (``_jax_mt``), so a compiled step draws the same stream
as eager and as PyTorch. (That costs about what ``jax.random`` costs: a dropout mask on a 64x4096
activation inside a compiled step took 3.2 ms against 2.9 ms with ``jax.random.bernoulli`` here;
``python -m funcgrad.bench --only random`` shows both, so there is no opt-in to another PRNG.)

Not PyTorch's numbers: Gamma-family samples (``distributions._gamma``) draw with
``jax.random.gamma`` from a key made of two stream words (``next_key``).
"""

from __future__ import annotations

import secrets
import threading

import jax
import numpy as np

from .._tensor import Tensor, _Cell, _raw_value
from . import _engine
from ._engine import Engine

_Tracer = jax.core.Tracer


class _GenCell(_Cell):
    """A generator's state as the jit bridge sees it: a uint32 vector (``_engine.WORDS``).

    Eagerly the NumPy engine is authoritative and the vector is built only when read. A vector
    written in (a compiled step's result, or a tracer while one is traced) becomes authoritative
    until the next eager draw loads it back into the engine.
    """

    __slots__ = ("owner", "exported")

    def __init__(self, owner):
        super().__init__(None)
        self.owner, self.exported = owner, None

    @property
    def value(self):
        v = _raw_value.__get__(self)
        if v is None:  # concrete even if read while an outer jax.jit traces (staged otherwise)
            with jax.ensure_compile_time_eval():
                v = self.exported = jax.numpy.asarray(self.owner._engine.words())
            _raw_value.__set__(self, v)
        return v

    @value.setter
    def value(self, v):
        _raw_value.__set__(self, v)

    def engine(self) -> Engine:
        """The engine, loaded from a vector written since the last eager draw (lock held)."""
        v = _raw_value.__get__(self)
        eng = self.owner._engine
        if v is not None and v is not self.exported:
            eng.load_words(np.asarray(v))
        _raw_value.__set__(self, None)
        self.exported = None
        return eng

    def traced(self):
        """The traced state vector while a compiled step is traced, else None."""
        v = _raw_value.__get__(self)
        return v if isinstance(v, _Tracer) else None


class Generator:
    """PyTorch's ``torch.Generator``: one mt19937 stream (``manual_seed``, ``get_state``, ...).

    A new generator has PyTorch's default seed, so its draws equal a new ``torch.Generator()``'s.

    >>> import funcgrad
    >>> g = funcgrad.Generator().manual_seed(42)
    >>> funcgrad.randint(0, 100, (5,), generator=g)
    tensor([42, 67, 76, 14, 26])
    >>> g.initial_seed()
    42
    """

    def __init__(self, device="cpu"):
        self.device = device
        self._engine = Engine()
        self._lock = threading.RLock()
        self._cell = _GenCell(self)

    def manual_seed(self, seed) -> "Generator":
        """Seed the stream (negative seeds wrap to 64 bits, as PyTorch's)."""
        s = int(seed)
        if not -(1 << 63) <= s < (1 << 64):
            raise ValueError("Overflow when unpacking long long")
        with self._lock:
            self._cell.engine().reseed(s & 0xFFFFFFFFFFFFFFFF)
        return self

    def seed(self) -> int:
        """Seed from the OS (53 bits, as PyTorch's ``getNonDeterministicRandom``); returns it."""
        s = secrets.randbits(53)
        self.manual_seed(s)
        return s

    def initial_seed(self) -> int:
        with self._lock:
            return self._cell.engine().seed

    def get_state(self):
        """The state as PyTorch's uint8 tensor of 5056 bytes (``torch.get_rng_state()`` layout)."""
        with self._lock:
            b = self._cell.engine().to_bytes()
        return Tensor._wrap(jax.numpy.asarray(np.frombuffer(b, np.uint8)))

    def set_state(self, new_state) -> "Generator":
        """Restore a state from :meth:`get_state` (or from ``torch.get_rng_state()``'s bytes)."""
        if not isinstance(new_state, Tensor) or new_state.dtype.np != np.uint8:
            raise TypeError("RNG state must be a torch.ByteTensor")
        b = np.asarray(new_state._value).tobytes()
        if len(b) != _engine.STATE_BYTES:
            raise RuntimeError(f"Expected a CPUGeneratorImplState of size {_engine.STATE_BYTES} but found "
                               f"the input RNG state size to be {len(b)}")
        with self._lock:
            self._cell.engine().from_bytes(b)
        return self

    def __getstate__(self):
        return {"device": self.device, "state": self.get_state()}

    def __setstate__(self, d):
        self.__init__(d["device"])
        self.set_state(d["state"])

    def __repr__(self) -> str:
        return f"<funcgrad.Generator object at {hex(id(self))}>"

    # ---- draws (used by the samplers in _sample) ----------------------------------------------
    def _raw(self, n: int):
        """The next ``n`` 32-bit words: a NumPy array eagerly, a traced array in a compiled step."""
        with self._lock:
            t = self._cell.traced()
            if t is not None:
                from . import _jax_mt
                new, out = _jax_mt.draw(t, n)
                self._cell.value = new
                return out
            return self._cell.engine().raw(n)


default_generator = Generator()
default_generator.manual_seed(secrets.randbits(53))  # PyTorch seeds its default generator from the OS


def manual_seed(seed) -> Generator:
    """Seed the global generator; returns it, as PyTorch does.

    The numbers are PyTorch's (CPU, mt19937): the same seed gives ``torch.randn``'s values.

    >>> import funcgrad
    >>> _ = funcgrad.manual_seed(0)
    >>> funcgrad.rand(3)
    tensor([0.4963, 0.7682, 0.0885])
    >>> funcgrad.initial_seed()
    0
    """
    return default_generator.manual_seed(seed)


def seed() -> int:
    """Seed the global generator from the OS; returns the seed."""
    return default_generator.seed()


def initial_seed() -> int:
    """The seed the global generator was last seeded with."""
    return default_generator.initial_seed()


def get_rng_state():
    """The global generator's state: a uint8 tensor with PyTorch's 5056-byte layout.

    >>> import funcgrad
    >>> _ = funcgrad.manual_seed(0)
    >>> s = funcgrad.get_rng_state(); a = funcgrad.randn(2)
    >>> funcgrad.set_rng_state(s); bool((funcgrad.randn(2) == a).all())
    True
    >>> s.dtype, tuple(s.shape)
    (funcgrad.uint8, (5056,))
    """
    return default_generator.get_state()


def set_rng_state(new_state) -> None:
    """Restore the global generator's state (from :func:`get_rng_state` or PyTorch's bytes)."""
    default_generator.set_state(new_state)


def state_from_key(key):
    """A generator state vector (``_engine.WORDS`` uint32) for a fresh mt19937 stream seeded from
    a JAX PRNG key (traced or not): 624 key words from ``jax.random.bits``, position 624 (the
    first draw twists), no cached normal samples. For ``func.functional_call(..., rng=key)``.
    """
    words = jax.random.bits(key, (_engine.N,), jax.numpy.uint32)
    tail = jax.numpy.zeros((_engine.WORDS - _engine.N,), jax.numpy.uint32).at[0].set(_engine.N)
    return jax.numpy.concatenate([words, tail])


class _Stream(threading.local):
    gen = None  # a class default: every thread draws from the default generator


_stream = _Stream()


def generator_or_default(generator) -> Generator:
    """``generator``, else this thread's stream (``default_stream``), else the default generator."""
    if generator is not None:
        return generator
    g = _stream.gen
    return default_generator if g is None else g


class default_stream:
    """Draws without ``generator=`` on this thread come from ``gen`` (``None``: the default
    generator) inside the ``with`` block; other threads keep drawing from theirs. For
    ``func.functional_call(..., rng=key)``: the call's stream never touches the global one.

    >>> import funcgrad
    >>> with default_stream(Generator().manual_seed(0)):
    ...     a = funcgrad.rand(2)
    >>> funcgrad.equal(a, funcgrad.rand(2, generator=Generator().manual_seed(0)))
    True
    """

    def __init__(self, gen: Generator | None):
        self.gen, self._prev = gen, None

    def __enter__(self):
        self._prev, _stream.gen = _stream.gen, self.gen
        return self.gen

    def __exit__(self, *exc) -> None:
        _stream.gen = self._prev


def next_key(generator: Generator | None = None):
    """A JAX PRNG key made from two words of the generator's stream.

    For the one sampler that still draws with ``jax.random`` (``distributions``' Gamma): it
    advances the same stream, but its values are not PyTorch's.
    """
    g = generator_or_default(generator)
    w = g._raw(2)
    return jax.numpy.asarray(w, jax.numpy.uint32)
