"""More of ``funcgrad.nn.functional`` (issue 18): ``grid_sample``, ``affine_grid`` and ``ctc_loss``
(PyTorch's signatures, warnings, node names and messages; kernels in ``_ops/nn_sample.py`` and
``_ops/nn_ctc.py``)."""

from __future__ import annotations

import warnings

import jax.numpy as jnp
import numpy as np

from .._dispatch import apply
from .._ops import nn_ctc as _ctc, nn_sample as _k
from .._ops.reduce import mean as _mean, sum as _sum
from .._tensor import Tensor, _scalar_type_name

__all__ = ["grid_sample", "affine_grid", "ctc_loss"]

_ALIGN_MSG = ("Default grid_sample and affine_grid behavior has changed to align_corners=False since 1.3.0. "
              "Please specify align_corners=True if the old behavior is desired. See the documentation of "
              "grid_sample for details.")


def grid_sample(input: Tensor, grid: Tensor, mode: str = "bilinear", padding_mode: str = "zeros",
                align_corners: bool | None = None) -> Tensor:
    """Sample ``input`` (N, C, H, W) at the normalised ``(x, y)`` locations of ``grid`` (N, Ho, Wo, 2).

    >>> import funcgrad
    >>> import funcgrad.nn.functional as F
    >>> img = funcgrad.arange(4.0).view(1, 1, 2, 2)
    >>> F.grid_sample(img, funcgrad.zeros(1, 1, 1, 2), align_corners=True)
    tensor([[[[1.5000]]]])
    """
    if mode not in ("bilinear", "nearest", "bicubic"):
        raise ValueError(f"nn.functional.grid_sample(): expected mode to be 'bilinear', 'nearest' or "
                         f"'bicubic', but got: '{mode}'")
    if padding_mode not in ("zeros", "border", "reflection"):
        raise ValueError(f"nn.functional.grid_sample(): expected padding_mode to be 'zeros', 'border', "
                         f"or 'reflection', but got: '{padding_mode}'")
    if align_corners is None:
        warnings.warn(_ALIGN_MSG, UserWarning, stacklevel=2)
        align_corners = False
    # PyTorch's order: batch size, grid's last dim, then the ranks
    if input.shape[0] != grid.shape[0]:
        raise RuntimeError(f"grid_sampler(): expected grid and input to have same batch size, but got input "
                           f"with sizes {list(input.shape)} and grid with sizes {list(grid.shape)}")
    if grid.shape[-1] != input.ndim - 2:
        raise RuntimeError(f"grid_sampler(): expected grid to have size {input.ndim - 2} in last dimension, "
                           f"but got grid with sizes {list(grid.shape)}")
    if input.ndim != grid.ndim or input.ndim not in (4, 5):
        raise RuntimeError(f"grid_sampler(): expected 4D or 5D input and grid with same number of "
                           f"dimensions, but got input with sizes {list(input.shape)} and grid with sizes "
                           f"{list(grid.shape)}")
    if input.dtype is not grid.dtype:
        raise RuntimeError(f"expected scalar type {_scalar_type_name(input.dtype)} but found "
                           f"{_scalar_type_name(grid.dtype)}")
    if input.ndim == 5 or mode == "bicubic":
        raise NotImplementedError(f"funcgrad's grid_sample supports 4-D input with mode 'bilinear' or "
                                  f"'nearest' (got {input.ndim}-D, mode '{mode}')")
    return apply(_k.grid_sampler_2d, input, grid, mode=mode, padding_mode=padding_mode,
                 align_corners=bool(align_corners))


def affine_grid(theta: Tensor, size, align_corners: bool | None = None) -> Tensor:
    """The sampling grid (N, H, W, 2) of the affine maps ``theta`` (N, 2, 3) for an output of ``size``.

    >>> import funcgrad
    >>> import funcgrad.nn.functional as F
    >>> F.affine_grid(funcgrad.tensor([[[1.0, 0, 0], [0, 1, 0]]]), (1, 1, 1, 2), align_corners=True)
    tensor([[[[-1.,  0.],
              [ 1.,  0.]]]])
    """
    if align_corners is None:
        warnings.warn(_ALIGN_MSG, UserWarning, stacklevel=2)
        align_corners = False
    if not theta.dtype.is_floating_point:
        raise ValueError(f"Expected theta to have floating point type, but got {theta.dtype}")
    size = tuple(int(s) for s in size)
    if len(size) != 4:
        raise NotImplementedError(f"affine_grid only supports 4D and 5D sizes, for 2D and 3D affine "
                                  f"transforms, respectively. Got size {size}.")
    if theta.ndim != 3 or tuple(theta.shape[-2:]) != (2, 3):
        raise ValueError(f"Expected a batch of 2D affine matrices of shape Nx2x3 for size {size}. Got "
                         f"{theta.shape}.")
    if min(size) <= 0:
        raise ValueError(f"Expected non-zero, positive output size. Got {size}")
    return apply(_k.affine_grid_generator, theta, size=size, align_corners=bool(align_corners))


def _lengths(x, name):
    if isinstance(x, Tensor):
        return np.asarray(x._concrete(f"ctc_loss {name}")).astype(np.int64).reshape(-1)
    return np.asarray(list(x) if not isinstance(x, int) else [x], np.int64)


def ctc_loss(log_probs: Tensor, targets: Tensor, input_lengths, target_lengths, blank: int = 0,
             reduction: str = "mean", zero_infinity: bool = False) -> Tensor:
    """Connectionist temporal classification loss of ``log_probs`` (T, N, C) against ``targets``
    ((N, S) padded, or 1-D concatenated). ``mean`` divides each loss by its target length, then
    averages over the batch.

    >>> import funcgrad
    >>> import funcgrad.nn.functional as F
    >>> lp = funcgrad.zeros(2, 1, 2).log_softmax(2)
    >>> F.ctc_loss(lp, funcgrad.tensor([[1]]), [2], [1], reduction="sum")
    tensor(0.2877)
    """
    if reduction not in ("none", "mean", "sum"):
        raise ValueError(f"{reduction} is not a valid value for reduction")
    unbatched = log_probs.ndim == 2
    if unbatched:
        log_probs = log_probs.unsqueeze(1)
        targets = targets.unsqueeze(0) if targets.ndim == 1 else targets
    t_max, n, c = log_probs.shape
    il, tl = _lengths(input_lengths, "input_lengths"), _lengths(target_lengths, "target_lengths")
    if not 0 <= blank < c:
        raise RuntimeError("blank must be in label range")
    if il.size != n:
        raise RuntimeError("input_lengths must be of size batch_size")
    if tl.size != n:
        raise RuntimeError("target_lengths must be of size batch_size")
    tv = np.asarray(targets._concrete("ctc_loss targets")).astype(np.int64)
    if targets.ndim == 1:  # concatenated targets → padded (N, max length)
        s = int(tl.max()) if tl.size else 0
        pad = np.zeros((n, s), np.int64)
        off = np.concatenate([[0], np.cumsum(tl)])
        for i in range(n):
            pad[i, :tl[i]] = tv[off[i]:off[i + 1]]
        tv = pad
    else:
        for i in range(n):
            if tl[i] > tv.shape[1]:
                raise RuntimeError(f"Expected tensor to have size at least {tl[i]} at dimension 1, but got "
                                   f"size {tv.shape[1]} for argument #2 'targets' (while checking arguments "
                                   f"for ctc_loss_allocate_outputs)")
    for i in range(n):
        if il[i] > t_max:
            raise RuntimeError(f"Expected input_lengths to have value at most {t_max}, but got value {il[i]} "
                               f"(while checking arguments for ctc_loss_allocate_outputs)")
    op = _ctc.ctc_loss_zero_inf if zero_infinity else _ctc.ctc_loss
    loss = apply(op, log_probs, Tensor._wrap(jnp.asarray(tv)), Tensor._wrap(jnp.asarray(il)),
                 Tensor._wrap(jnp.asarray(tl)), blank=int(blank), zero_infinity=bool(zero_infinity))
    if reduction == "mean":
        return _mean(loss / Tensor._wrap(jnp.asarray(np.maximum(tl, 1), log_probs.dtype.np)))
    if reduction == "sum":
        return _sum(loss)
    return loss.squeeze(0) if unbatched else loss
