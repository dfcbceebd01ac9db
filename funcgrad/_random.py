"""The global random generator: a JAX PRNG key held as mutable state.

Each draw splits the key. The key lives in a storage cell (the same ``_Cell`` a Tensor
uses), so the jit bridge finds it like any other state, lifts it into a compiled step and
writes the advanced key back: dropout masks differ on every call of a compiled step. Values differ from
PyTorch's generator; the seeding API is PyTorch's.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from ._tensor import _Cell


@jax.jit
def _split(key):
    k1, k2 = jax.random.split(key)
    return k1, k2


class Generator:
    """PyTorch's ``torch.Generator`` over a JAX key: ``manual_seed``, ``get_state``, ``set_state``."""

    def __init__(self, device="cpu"):
        self.device = device
        self._seed = 0
        self._c = None

    @property
    def _cell(self) -> _Cell:
        # created on first use, so that `import funcgrad` does not start JAX's backend (a
        # multi-host job must call jax.distributed.initialize before the backend starts)
        if self._c is None:
            self._c = _Cell(jax.random.PRNGKey(self._seed & 0xFFFFFFFFFFFFFFFF))
        return self._c

    @property
    def key(self):
        """The current JAX key (a tracer while a compiled step is being traced)."""
        return self._cell.value

    @key.setter
    def key(self, value) -> None:
        self._cell.value = value
        self._cell.gen += 1

    def manual_seed(self, seed: int) -> "Generator":
        self._seed = int(seed)
        self.key = jax.random.PRNGKey(int(seed) & 0xFFFFFFFFFFFFFFFF)
        return self

    def seed(self) -> int:
        s = int(np.random.SeedSequence().entropy) & 0x7FFFFFFFFFFFFFFF
        self.manual_seed(s)
        return s

    def initial_seed(self) -> int:
        return self._seed

    def get_state(self):
        from ._tensor import Tensor
        return Tensor._wrap(jnp.asarray(self.key))

    def set_state(self, state) -> None:
        self.key = jnp.asarray(getattr(state, "_value", state), dtype=jnp.uint32)

    def next_key(self):
        """A fresh subkey; advances the generator."""
        self.key, sub = _split(self.key)
        return sub


default_generator = Generator()


def manual_seed(seed: int) -> Generator:
    """Seed the global generator (``funcgrad.manual_seed(0)``); returns it, as PyTorch does.

    The values are reproducible but are not PyTorch's (they come from JAX's PRNG).

    >>> import funcgrad
    >>> _ = funcgrad.manual_seed(0); a = funcgrad.randn(3)
    >>> _ = funcgrad.manual_seed(0); bool((funcgrad.randn(3) == a).all())
    True
    """
    return default_generator.manual_seed(seed)


def seed() -> int:
    return default_generator.seed()


def initial_seed() -> int:
    return default_generator.initial_seed()


def get_rng_state():
    return default_generator.get_state()


def set_rng_state(state) -> None:
    default_generator.set_state(state)


def next_key(generator: Generator | None = None):
    return (generator or default_generator).next_key()
