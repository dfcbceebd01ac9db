"""Variable-length sequences: ``pad_sequence``, ``PackedSequence``, ``pack_padded_sequence``,
``pad_packed_sequence``, ``pack_sequence`` (PyTorch's layout: ``data`` holds the valid steps
time-major, ``batch_sizes[t]`` the number of sequences longer than ``t``). Lengths are host data
(as in PyTorch, where they must be on the CPU); packing and unpacking are differentiable gathers.
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from ... import _factories, _lift
from ..._ops.shape import cat, stack
from ..._tensor import Tensor

__all__ = ["PackedSequence", "pad_sequence", "pack_padded_sequence", "pad_packed_sequence",
           "pack_sequence", "unpad_sequence", "unpack_sequence"]


class PackedSequence(NamedTuple):
    """``(data, batch_sizes, sorted_indices, unsorted_indices)`` as in PyTorch."""

    data: Tensor
    batch_sizes: Tensor
    sorted_indices: Tensor | None = None
    unsorted_indices: Tensor | None = None

    def to(self, *args, **kwargs) -> "PackedSequence":
        return self._replace(data=self.data.to(*args, **kwargs))

    @property
    def is_cuda(self) -> bool:
        return False

    def is_pinned(self) -> bool:
        return False


def _host(a: np.ndarray) -> Tensor:
    """A tensor of host data (batch sizes, sort orders, lengths): concrete also while a step is
    traced (``funcgrad.jit``), where it decides shapes and indices, as PyTorch's CPU tensors."""
    with jax.ensure_compile_time_eval():
        return _factories.tensor(a)


def _np(x, what: str = "a PackedSequence's batch_sizes") -> np.ndarray:
    if isinstance(x, Tensor):  # (inside funcgrad.jit: an argument whose values become static)
        return _lift.host_array(x, what)
    return np.asarray(x)


def pad_sequence(sequences, batch_first: bool = False, padding_value: float = 0.0,
                 padding_side: str = "right") -> Tensor:
    """Stack sequences of lengths ``L_i`` into ``(L_max, B, *)`` (or ``(B, L_max, *)``), padded.

    >>> import funcgrad
    >>> from funcgrad.nn.utils.rnn import pad_sequence
    >>> pad_sequence([funcgrad.tensor([1, 2, 3]), funcgrad.tensor([4])], batch_first=True)
    tensor([[1, 2, 3],
            [4, 0, 0]])
    """
    if padding_side not in ("left", "right"):
        raise ValueError(f"Expected padding_side to be one of left or right, but got {padding_side}.")
    sequences = list(sequences)
    if not sequences:
        raise RuntimeError("received an empty list of sequences")
    max_len = max(s.shape[0] for s in sequences)
    out = []
    for s in sequences:
        n = max_len - s.shape[0]
        if n:
            pad = _factories.full((n, *s.shape[1:]), padding_value, dtype=s.dtype)
            s = cat([s, pad]) if padding_side == "right" else cat([pad, s])
        out.append(s)
    return stack(out, dim=0 if batch_first else 1)


def _layout(lengths: np.ndarray):
    """Index arrays of the packed rows in a sorted (T, B) padded batch, and the batch sizes."""
    T = int(lengths[0]) if lengths.size else 0
    batch_sizes = np.array([(lengths > t).sum() for t in range(T)], np.int64)
    t_idx = np.concatenate([np.full(b, t) for t, b in enumerate(batch_sizes)]) if T else np.zeros(0, np.int64)
    b_idx = np.concatenate([np.arange(b) for b in batch_sizes]) if T else np.zeros(0, np.int64)
    return batch_sizes, t_idx.astype(np.int64), b_idx.astype(np.int64)


def pack_padded_sequence(input: Tensor, lengths, batch_first: bool = False,
                         enforce_sorted: bool = True) -> PackedSequence:
    """Pack a padded batch ``(T, B, *)`` (``(B, T, *)`` with ``batch_first``) of the given lengths.

    >>> import funcgrad
    >>> from funcgrad.nn.utils.rnn import pack_padded_sequence
    >>> p = pack_padded_sequence(funcgrad.tensor([[1, 2, 3], [4, 5, 0]]), [3, 2], batch_first=True)
    >>> p.data, p.batch_sizes
    (tensor([1, 4, 2, 5, 3]), tensor([2, 2, 1]))
    """
    lens = _np(lengths, "pack_padded_sequence's lengths").astype(np.int64).reshape(-1)
    if lens.size and lens.min() <= 0:
        raise RuntimeError("Length of all samples has to be greater than 0, but found an element in "
                           "'lengths' that is <= 0")
    if enforce_sorted:
        if np.any(np.diff(lens) > 0):
            raise RuntimeError("`lengths` array must be sorted in decreasing order when `enforce_sorted` "
                               "is True. You can pass `enforce_sorted=False` to pack_padded_sequence "
                               "and/or pack_sequence to sidestep this requirement if you do not need "
                               "ONNX exportability.")
        sorted_idx = None
        order = np.arange(lens.size)
    else:
        order = np.argsort(-lens, kind="stable")
        sorted_idx = _host(order)
    if batch_first:
        input = input.transpose(0, 1)
    if lens.size and lens.max() > input.shape[0]:
        raise RuntimeError(f"Expected sequence length to be larger than or equal to "
                           f"{int(lens.max())} but got {input.shape[0]}")  # PyTorch asserts similarly
    if sorted_idx is not None:
        input = input.index_select(1, sorted_idx)
    batch_sizes, t_idx, b_idx = _layout(lens[order])
    data = input[_factories.tensor(t_idx), _factories.tensor(b_idx)]
    unsorted = None if sorted_idx is None else _host(np.argsort(order))
    return PackedSequence(data, _host(batch_sizes), sorted_idx, unsorted)


def _lengths(pk: PackedSequence) -> np.ndarray:
    bs = _np(pk.batch_sizes)
    b = int(bs[0]) if bs.size else 0
    return np.array([(bs > i).sum() for i in range(b)], np.int64)


def _padded_sorted(pk: PackedSequence, padding_value=0.0, total_length=None):
    """(T, B, *) padded batch in sorted order, and the sorted lengths."""
    lens = _lengths(pk)
    bs = _np(pk.batch_sizes)
    T = len(bs) if total_length is None else int(total_length)
    B = int(bs[0]) if bs.size else 0
    rowmap = np.full((T, B), pk.data.shape[0], np.int64)  # the extra (padding) row
    _, t_idx, b_idx = _layout(lens)
    rowmap[t_idx, b_idx] = np.arange(t_idx.size)
    pad = _factories.full((1, *pk.data.shape[1:]), padding_value, dtype=pk.data.dtype)
    return cat([pk.data, pad])[_factories.tensor(rowmap)], lens


def pad_packed_sequence(sequence: PackedSequence, batch_first: bool = False,
                        padding_value: float = 0.0, total_length: int | None = None):
    """Inverse of ``pack_padded_sequence``: ``(padded, lengths)`` in the original batch order."""
    T = len(_np(sequence.batch_sizes))
    if total_length is not None and total_length < T:
        raise ValueError(f"Expected total_length to be at least the length of the longest sequence in "
                         f"input, but got total_length={total_length} and max sequence length being {T}")
    padded, lens = _padded_sorted(sequence, padding_value, total_length)
    lengths = _host(lens)
    if sequence.unsorted_indices is not None:
        padded = padded.index_select(1, sequence.unsorted_indices)
        lengths = _host(lens[_np(sequence.unsorted_indices, "a PackedSequence's unsorted_indices")])
    if batch_first:
        padded = padded.transpose(0, 1)
    return padded, lengths


def pack_sequence(sequences, enforce_sorted: bool = True) -> PackedSequence:
    """Pack a list of variable-length sequences."""
    lengths = [s.shape[0] for s in sequences]
    return pack_padded_sequence(pad_sequence(sequences), lengths, enforce_sorted=enforce_sorted)


def unpad_sequence(padded_sequences: Tensor, lengths, batch_first: bool = False):
    if not batch_first:
        padded_sequences = padded_sequences.transpose(0, 1)
    lens = _np(lengths, "unpad_sequence's lengths").reshape(-1)
    return [padded_sequences[i][:int(n)] for i, n in enumerate(lens)]


def unpack_sequence(packed_sequences: PackedSequence):
    padded, lengths = pad_packed_sequence(packed_sequences, batch_first=True)
    return unpad_sequence(padded, lengths, batch_first=True)


# ---- used by the recurrent layers ------------------------------------------------------------------
def _unpack_for_rnn(pk: PackedSequence):
    padded, lens = _padded_sorted(pk)
    return padded, jnp.asarray(lens), len(lens)


def _pack_like(out: Tensor, pk: PackedSequence) -> PackedSequence:
    _, t_idx, b_idx = _layout(_lengths(pk))
    data = out[_factories.tensor(t_idx), _factories.tensor(b_idx)]
    return PackedSequence(data, pk.batch_sizes, pk.sorted_indices, pk.unsorted_indices)
