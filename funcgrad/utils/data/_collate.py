"""``default_collate`` / ``default_convert``: samples → batches, PyTorch's type mapping.

Mapping (as PyTorch): Tensors are stacked (one ``stack`` op per field); NumPy arrays are
stacked on the host with ``np.stack`` and moved to the device once; NumPy scalars become a
tensor of their dtype; Python floats a float64 tensor, ints an int64 tensor, bools a bool
tensor; strings and bytes stay as the batch sequence; dicts, namedtuples, lists and tuples
are collated field by field (tuples and lists come back as lists).
"""

from __future__ import annotations

import collections.abc
import copy
import re
from typing import Callable

import jax.numpy as jnp
import numpy as np

from ... import _dtype
from ..._factories import tensor
from ..._ops.shape import stack
from ..._tensor import Tensor

np_str_obj_array_pattern = re.compile(r"[SaUO]")

default_collate_err_msg_format = (
    "default_collate: batch must contain tensors, numpy arrays, numbers, dicts or lists; found {}")

__all__ = ["collate", "default_collate", "default_convert", "default_collate_fn_map"]


def _from_numpy(a: np.ndarray) -> Tensor:
    d = _dtype.from_np(a.dtype)  # TypeError for dtypes funcgrad lacks (uint16…)
    return Tensor._wrap(jnp.asarray(a, d.np))


def default_convert(data):
    """Convert NumPy arrays (also inside dicts, lists, tuples, namedtuples) to Tensors.

    The collate function a DataLoader uses when automatic batching is off (``batch_size=None``).

    >>> import numpy as np
    >>> from funcgrad.utils.data import default_convert
    >>> default_convert([np.array([0, 1]), 2])
    [tensor([0, 1]), 2]
    """
    elem_type = type(data)
    if isinstance(data, Tensor):
        return data
    if elem_type.__module__ == "numpy" and elem_type.__name__ not in ("str_", "string_", "bytes_"):
        if elem_type.__name__ == "ndarray" and np_str_obj_array_pattern.search(data.dtype.str):
            return data
        return _from_numpy(np.asarray(data))
    if isinstance(data, collections.abc.Mapping):
        try:
            if isinstance(data, collections.abc.MutableMapping):
                clone = copy.copy(data)
                clone.update({key: default_convert(data[key]) for key in data})
                return clone
            return elem_type({key: default_convert(data[key]) for key in data})
        except TypeError:
            return {key: default_convert(data[key]) for key in data}
    if isinstance(data, tuple) and hasattr(data, "_fields"):  # namedtuple
        return elem_type(*(default_convert(d) for d in data))
    if isinstance(data, tuple):
        return [default_convert(d) for d in data]  # as PyTorch: tuples become lists
    if isinstance(data, collections.abc.Sequence) and not isinstance(data, (str, bytes)):
        try:
            if isinstance(data, collections.abc.MutableSequence):
                clone = copy.copy(data)
                for i, d in enumerate(data):
                    clone[i] = default_convert(d)
                return clone
            return elem_type([default_convert(d) for d in data])
        except TypeError:
            return [default_convert(d) for d in data]
    return data


def collate(batch, *, collate_fn_map: dict | None = None):
    """Collate a list of samples, dispatching on the type of the first one through
    ``collate_fn_map`` (exact type first, then ``isinstance`` in insertion order), then
    recursing into mappings, namedtuples and sequences."""
    elem = batch[0]
    elem_type = type(elem)
    if collate_fn_map is not None:
        if elem_type in collate_fn_map:
            return collate_fn_map[elem_type](batch, collate_fn_map=collate_fn_map)
        for collate_type in collate_fn_map:
            if isinstance(elem, collate_type):
                return collate_fn_map[collate_type](batch, collate_fn_map=collate_fn_map)
    if isinstance(elem, collections.abc.Mapping):
        fields = {key: collate([d[key] for d in batch], collate_fn_map=collate_fn_map) for key in elem}
        try:
            if isinstance(elem, collections.abc.MutableMapping):
                clone = copy.copy(elem)
                clone.update(fields)
                return clone
            return elem_type(fields)
        except TypeError:
            return fields
    if isinstance(elem, tuple) and hasattr(elem, "_fields"):  # namedtuple
        return elem_type(*(collate(samples, collate_fn_map=collate_fn_map) for samples in zip(*batch)))
    if isinstance(elem, collections.abc.Sequence):
        it = iter(batch)
        elem_size = len(next(it))
        if not all(len(e) == elem_size for e in it):
            raise RuntimeError("each element in list of batch should be of equal size")
        transposed = list(zip(*batch))
        fields = [collate(samples, collate_fn_map=collate_fn_map) for samples in transposed]
        if isinstance(elem, tuple):
            return fields
        try:
            if isinstance(elem, collections.abc.MutableSequence):
                clone = copy.copy(elem)
                for i, f in enumerate(fields):
                    clone[i] = f
                return clone
            return elem_type(fields)
        except TypeError:
            return fields
    raise TypeError(default_collate_err_msg_format.format(elem_type))


def collate_tensor_fn(batch, *, collate_fn_map=None):
    return stack(list(batch), 0)


def collate_numpy_array_fn(batch, *, collate_fn_map=None):
    elem = batch[0]
    if np_str_obj_array_pattern.search(elem.dtype.str) is not None:
        raise TypeError(default_collate_err_msg_format.format(elem.dtype))
    shape = elem.shape
    for i, b in enumerate(batch):
        if b.shape != shape:
            raise RuntimeError(f"stack expects each tensor to be equal size, but got {list(shape)} "
                               f"at entry 0 and {list(b.shape)} at entry {i}")
    # one host-side stack, one transfer (not one device array per sample)
    return _from_numpy(np.stack(batch))


def collate_numpy_scalar_fn(batch, *, collate_fn_map=None):
    return _from_numpy(np.asarray(batch))


def collate_float_fn(batch, *, collate_fn_map=None):
    return Tensor._wrap(jnp.asarray(np.asarray(batch, dtype=np.float64)))


def collate_int_fn(batch, *, collate_fn_map=None):
    return tensor(list(batch))  # bools → bool, ints → int64 (PyTorch's inference)


def collate_str_fn(batch, *, collate_fn_map=None):
    return batch


default_collate_fn_map: dict[type | tuple[type, ...], Callable] = {
    Tensor: collate_tensor_fn,
    np.ndarray: collate_numpy_array_fn,
    (np.bool_, np.number, np.object_): collate_numpy_scalar_fn,
    float: collate_float_fn,
    int: collate_int_fn,
    str: collate_str_fn,
    bytes: collate_str_fn,
}


def default_collate(batch):
    """Stack a list of samples into a batch (PyTorch's ``default_collate``).

    >>> import funcgrad
    >>> from funcgrad.utils.data import default_collate
    >>> default_collate([(funcgrad.tensor([1., 2.]), 0), (funcgrad.tensor([3., 4.]), 1)])
    [tensor([[1., 2.],
            [3., 4.]]), tensor([0, 1])]
    >>> default_collate([{"x": 0.5, "name": "a"}, {"x": 1.5, "name": "b"}])
    {'x': tensor([0.5000, 1.5000], dtype=funcgrad.float64), 'name': ['a', 'b']}
    """
    return collate(batch, collate_fn_map=default_collate_fn_map)
