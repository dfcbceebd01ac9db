"""Broadcast shapes as PyTorch infers them, with its error messages: the one implementation every
op, loss, factory and ``funcgrad.broadcast_shapes`` uses.

ATen has two C++ routines and ``torch.broadcast_shapes`` has its own Python one; each reports a
mismatch differently, so a user sees a different message (and another dimension) by path:

- ``infer_size`` (ATen ``infer_size_impl``, ``aten/src/ATen/ExpandUtils.cpp``): two shapes,
  scanned from the last dim, the first mismatch found that way raised as "The size of tensor a
  (3) must match the size of tensor b (4) at non-singleton dimension 1". TensorIterator
  (``compute_shape``) and ``expand_outplace`` fold it over the operands in order, "a" being the
  shape of the operands so far (``infer_size_all``).
- ``expand_size`` (ATen ``inferExpandGeometry``): a tensor's shape expanded to target sizes, also
  from the last dim, "The expanded size of the tensor (5) must match the existing size (3) ...".
- ``check_inplace``: an in-place op (or ``out=`` that must not resize) whose broadcast shape is
  not self's: "output with shape [3] doesn't match the broadcast shape [2, 3]".
- ``broadcast_shapes``: ``torch._refs._broadcast_shapes`` (what ``torch.broadcast_shapes`` runs),
  "Attempting to broadcast a dimension of length 5 at -1! ...".

Only shapes (tuples of ints) come in, so this module imports nothing: it sits at the bottom of
the import DAG, below ``_tensor`` and ``_dispatch``. The eager success path never calls it for
an elementwise op (jax broadcasts); ``_dispatch`` asks it only for the message once jax refused.
"""

from __future__ import annotations

from collections.abc import Sequence


def infer_size(a, b) -> tuple:
    """The broadcast of shapes ``a`` and ``b``, or ATen's error for the last mismatching dim.

    >>> infer_size((2, 1), (3,))
    (2, 3)
    >>> infer_size((2, 3), (4, 5))
    Traceback (most recent call last):
    RuntimeError: The size of tensor a (3) must match the size of tensor b (5) at non-singleton dimension 1
    """
    na, nb = len(a), len(b)
    n = max(na, nb)
    out = [0] * n
    for i in range(n - 1, -1, -1):
        x = a[i - n + na] if i - n + na >= 0 else 1
        y = b[i - n + nb] if i - n + nb >= 0 else 1
        if x != y and x != 1 and y != 1:
            raise RuntimeError(f"The size of tensor a ({x}) must match the size of tensor b ({y}) at "
                               f"non-singleton dimension {i}")
        out[i] = y if x == 1 else x  # (a 1 takes the other size, even 0)
    return tuple(out)


def infer_size_all(shapes) -> tuple:
    """``infer_size`` folded over ``shapes`` in order, as TensorIterator and ``broadcast_tensors``
    do: the error's "tensor a" is the broadcast of the shapes before the one that mismatches.

    >>> infer_size_all([(2, 1), (1, 3), (4, 5)])
    Traceback (most recent call last):
    RuntimeError: The size of tensor a (3) must match the size of tensor b (5) at non-singleton dimension 1
    """
    out = None
    for s in shapes:
        s = tuple(s)
        out = s if out is None or out == s else infer_size(out, s)
    return () if out is None else out


def raise_mismatch(shapes) -> None:
    """For an ``except`` block whose error may be a broadcast failure: raise ``infer_size_all``'s
    error for ``shapes`` (PyTorch's operand order), not chained to the caught one; return when the
    shapes broadcast (the caller re-raises what it caught).

    Kernels see operands in funcgrad's order, which is not always ATen's (``masked_fill`` expands
    the mask first); asking here only once a kernel failed keeps the success path free of checks.
    """
    try:
        infer_size_all(shapes)
    except RuntimeError as e:
        raise e from None


def expand_size(have, sizes, type_name: str) -> tuple:
    """ATen's ``expand``: ``have`` expanded to ``sizes`` (``-1`` keeps a dim), its sizes as
    ``inferExpandGeometry`` checks them from the last dim. ``type_name`` names the tensor in the
    error for too few sizes (``torch.FloatTensor``, or ``CPUBoolType`` where ATen prints that).

    >>> expand_size((2, 3), (4, 5), "torch.FloatTensor")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    RuntimeError: The expanded size of the tensor (5) must match the existing size (3) at non-singleton...
    """
    have, sizes = tuple(have), tuple(sizes)
    n, nh = len(sizes), len(have)
    if n < nh:
        raise RuntimeError(f"expand({type_name}{{{list(have)}}}, size={list(sizes)}): the number of sizes "
                           f"provided ({n}) must be greater or equal to the number of dimensions in the "
                           f"tensor ({nh})")
    out = [0] * n
    for i in range(n - 1, -1, -1):
        dim = i - n + nh
        size = have[dim] if dim >= 0 else 1
        target = sizes[i]
        if target == -1:
            if dim < 0:
                raise RuntimeError(f"The expanded size of the tensor ({target}) isn't allowed in a "
                                   f"leading, non-existing dimension {i}")
            target = size
        if size != target and size != 1:
            raise RuntimeError(f"The expanded size of the tensor ({target}) must match the existing size "
                               f"({size}) at non-singleton dimension {i}.  Target sizes: {list(sizes)}.  "
                               f"Tensor sizes: {list(have)}")
        out[i] = target
    return tuple(out)


def check_inplace(self_shape, shapes) -> tuple:
    """An in-place op's shape check: the operands' broadcast (``infer_size_all``, self first) must
    be self's shape. Returns that shape."""
    self_shape = tuple(self_shape)
    full = infer_size_all((self_shape, *shapes))
    if full != self_shape:
        raise RuntimeError(f"output with shape {list(self_shape)} doesn't match the broadcast shape "
                           f"{list(full)}")
    return full


def broadcast_shapes(*shapes):
    """``torch._refs._broadcast_shapes`` for concrete sizes: the common shape as a list (None for
    no shapes), with its errors (an int is a 1-d shape, ``None`` is skipped).

    >>> broadcast_shapes((2,), (3, 1), (1, 1, 1))
    [1, 3, 2]
    """
    shapes = tuple((x,) if isinstance(x, int) else x for x in shapes if x is not None)
    if not shapes:
        return None
    for shape in shapes:
        if not isinstance(shape, Sequence):
            raise RuntimeError(f"Input shapes should be of type ints, a tuple of ints, or a list of ints, "
                               f"got {shape}")
    common = [1] * max(len(shape) for shape in shapes)
    for arg_idx, shape in enumerate(shapes):
        for idx in range(-1, -1 - len(shape), -1):
            if shape[idx] == common[idx]:
                continue
            if common[idx] == 1:
                if shape[idx] < 0:
                    raise ValueError("Attempting to broadcast a dimension with negative length!")
                common[idx] = shape[idx]
            if shape[idx] == 1:
                continue
            if common[idx] != shape[idx]:
                raise RuntimeError(f"Attempting to broadcast a dimension of length {shape[idx]} at {idx}! "
                                   f"Mismatching argument at index {arg_idx} had {shape}; but expected "
                                   f"shape should be broadcastable to {common}")
    return common
