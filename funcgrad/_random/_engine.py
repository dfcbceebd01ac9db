"""PyTorch's CPU generator state: mt19937 as PyTorch seeds it, and its ``get_rng_state`` bytes.

PyTorch's ``at::mt19937`` is the standard 32-bit Mersenne Twister, so NumPy's ``MT19937`` bit
generator (C speed) runs it once its key and position are set. PyTorch keeps ``left_``/``next_``
where NumPy keeps ``pos``: after seeding PyTorch has ``left_ = 1, next_ = 0`` and NumPy ``pos =
624`` (both twist on the next draw); after ``j`` draws since a twist ``left_ = 625 - j`` and
``next_ = pos = j``. ``fresh`` remembers the just-seeded case, the one ``pos`` cannot tell apart
from "624 drawn", so the state bytes equal PyTorch's exactly.

The byte layout is ``CPUGeneratorImplState`` (aten/src/ATen/CPUGeneratorImpl.cpp): the legacy
POD (``uint64 the_initial_seed; int left; int seeded; uint64 next; uint64 state[624]; double
normal_x, normal_y, normal_rho; int normal_is_valid``), then ``float next_float_normal_sample;
bool is_next_float_normal_sample_valid``, padded to 5056 bytes.
"""

from __future__ import annotations

import struct

import numpy as np

N = 624
STATE_BYTES = 5056
_HEAD = struct.Struct("<QiiQ")          # the_initial_seed, left, seeded, next
_TAIL = struct.Struct("<dddi f ?")      # normal_x/y/rho, normal_is_valid, float sample, valid
_TAIL_AT = _HEAD.size + 8 * N           # 5016
DEFAULT_SEED = 67280421310721            # a new torch.Generator()'s seed (c10 default_rng_seed_val)
# the jit bridge sees the state as one uint32 vector: key[624], pos, fresh, then the two cached
# normal samples (double: valid, low word, high word; float: valid, bits)
WORDS = N + 7


def init_key(seed: int) -> np.ndarray:
    """``mt19937::init_with_uint32``: the key from the seed's low 32 bits (not yet twisted)."""
    key = np.empty(N, np.uint32)
    x = seed & 0xFFFFFFFF
    key[0] = x
    for j in range(1, N):
        x = (1812433253 * (x ^ (x >> 30)) + j) & 0xFFFFFFFF
        key[j] = x
    return key


class Engine:
    """One generator's mutable state: the mt19937 stream and the cached normal samples."""

    __slots__ = ("bitgen", "seed", "fresh", "normal_double", "normal_float")

    def __init__(self, seed: int = DEFAULT_SEED):
        self.bitgen = np.random.MT19937(0)
        self.reseed(seed)

    def reseed(self, seed: int) -> None:
        self.seed = seed
        self.fresh = True
        self.normal_double = self.normal_float = None
        self.bitgen.state = {"bit_generator": "MT19937", "state": {"key": init_key(seed), "pos": N}}

    def raw(self, n: int) -> np.ndarray:
        """The next ``n`` 32-bit outputs (``CPUGeneratorImpl::random()`` n times)."""
        if n <= 0:
            return np.empty(0, np.uint32)
        self.fresh = False
        return self.bitgen.random_raw(n).astype(np.uint32)

    # ---- the jit bridge's view: one uint32 vector ------------------------------------------
    def words(self) -> np.ndarray:
        st = self.bitgen.state["state"]
        w = np.zeros(WORDS, np.uint32)
        w[:N] = st["key"]
        w[N] = st["pos"]
        w[N + 1] = self.fresh
        if self.normal_double is not None:
            lo, hi = struct.unpack("<II", struct.pack("<d", self.normal_double))
            w[N + 2:N + 5] = 1, lo, hi
        if self.normal_float is not None:
            w[N + 5:N + 7] = 1, struct.unpack("<I", struct.pack("<f", self.normal_float))[0]
        return w

    def load_words(self, w) -> None:
        w = np.asarray(w, np.uint32)
        self.bitgen.state = {"bit_generator": "MT19937", "state": {"key": w[:N].copy(), "pos": int(w[N])}}
        self.fresh = bool(w[N + 1])
        self.normal_double = struct.unpack("<d", struct.pack("<II", int(w[N + 3]), int(w[N + 4])))[0] \
            if w[N + 2] else None
        self.normal_float = struct.unpack("<f", struct.pack("<I", int(w[N + 6])))[0] if w[N + 5] else None

    # ---- PyTorch's state bytes -----------------------------------------------------------------
    def to_bytes(self) -> bytes:
        st = self.bitgen.state["state"]
        pos = int(st["pos"])
        if pos >= N:
            left, nxt = 1, (0 if self.fresh else N)
        else:
            left, nxt = N + 1 - pos, pos
        head = _HEAD.pack(self.seed, left, 1, nxt)
        body = np.asarray(st["key"], np.uint32).astype("<u8").tobytes()
        dv, fv = self.normal_double is not None, self.normal_float is not None
        tail = _TAIL.pack(0.0, self.normal_double if dv else 0.0, 0.0, int(dv),
                          self.normal_float if fv else 0.0, fv)
        out = head + body + tail
        return out + bytes(STATE_BYTES - len(out))

    def from_bytes(self, b: bytes) -> None:
        seed, left, seeded, nxt = _HEAD.unpack_from(b, 0)
        if not seeded or not 0 < left <= N or nxt > N:
            raise RuntimeError("Invalid mt19937 state")
        key = np.frombuffer(b, "<u8", N, _HEAD.size).astype(np.uint32)  # PyTorch: std::copy to uint32
        _, ny, _, nvalid, fs, fvalid = _TAIL.unpack_from(b, _TAIL_AT)
        self.seed = seed
        self.fresh = left == 1 and nxt == 0
        pos = N if left == 1 else nxt
        self.bitgen.state = {"bit_generator": "MT19937", "state": {"key": key, "pos": pos}}
        self.normal_double = ny if nvalid else None
        self.normal_float = fs if fvalid else None
