"""More of ``funcgrad.nn.functional``: ``unfold``/``fold`` (sliding blocks), ``channel_shuffle``,
``pdist`` and ``gumbel_softmax``, with PyTorch's signatures, node names, messages and (for
``gumbel_softmax``) its draws: ``exponential_`` on the global stream, then ``-log``."""

from __future__ import annotations

import warnings

from .._dispatch import apply
from .._factories import empty_like as _empty_like, zeros_like as _zeros_like
from .._ops import nn_fold as _k
from .._tensor import Tensor

__all__ = ["unfold", "fold", "channel_shuffle", "pdist", "gumbel_softmax"]


def _pair(v, name):
    t = tuple(v) if isinstance(v, (tuple, list)) else (v, v)
    if len(t) != 2:
        raise RuntimeError(f"It is expected {name} equals to 2, but got size {len(t)}")
    return tuple(int(i) for i in t)


def _args(kernel_size, dilation, padding, stride):
    return dict(kernel=_pair(kernel_size, "kernel_size"), dilation=_pair(dilation, "dilation"),
                padding=_pair(padding, "padding"), stride=_pair(stride, "stride"))


def _blocks(size, a):
    (kh, kw), (dh, dw), (ph, pw), (sh, sw) = a["kernel"], a["dilation"], a["padding"], a["stride"]
    return ((size[0] + 2 * ph - dh * (kh - 1) - 1) // sh + 1, (size[1] + 2 * pw - dw * (kw - 1) - 1) // sw + 1)


def unfold(input: Tensor, kernel_size, dilation=1, padding=0, stride=1) -> Tensor:
    """Sliding local blocks of a ``(N, C, H, W)`` (or ``(C, H, W)``) input as columns
    ``(N, C·kh·kw, L)`` (PyTorch's ``im2col``).

    >>> import funcgrad
    >>> x = funcgrad.arange(9.).reshape(1, 1, 3, 3)
    >>> funcgrad.nn.functional.unfold(x, 2)
    tensor([[[0., 1., 3., 4.],
             [1., 2., 4., 5.],
             [3., 4., 6., 7.],
             [4., 5., 7., 8.]]])
    """
    a = _args(kernel_size, dilation, padding, stride)
    if input.ndim in (1, 2):  # PyTorch reads the size of dim ``ndim`` first
        n = input.ndim
        raise IndexError(f"Dimension out of range (expected to be in range of [{-n}, {n - 1}], but got {n})")
    if input.ndim not in (3, 4) or any(s == 0 for s in input.shape[-3:]):
        raise RuntimeError("Expected 3D or 4D (batch mode) tensor with possibly 0 batch size and other "
                           f"non-zero dimensions for input, but got: {list(input.shape)}")
    oh, ow = _blocks(input.shape[-2:], a)
    if oh < 1 or ow < 1:
        raise RuntimeError(f"Given input with spatial size {tuple(input.shape[-2:])}, kernel_size={a['kernel']}, "
                           f"dilation={a['dilation']}, padding={a['padding']}, calculated shape of the array of "
                           f"sliding blocks as ({oh}, {ow}), but its components must be at least one.")
    return apply(_k.im2col, input, **a)


def fold(input: Tensor, output_size, kernel_size, dilation=1, padding=0, stride=1) -> Tensor:
    """Sum columns ``(N, C·kh·kw, L)`` back into ``(N, C, *output_size)`` (PyTorch's ``col2im``;
    the adjoint of :func:`unfold`).

    >>> import funcgrad
    >>> cols = funcgrad.ones(1, 4, 4)
    >>> funcgrad.nn.functional.fold(cols, (3, 3), 2)
    tensor([[[[1., 2., 1.],
              [2., 4., 2.],
              [1., 2., 1.]]]])
    """
    a = _args(kernel_size, dilation, padding, stride)
    out = _pair(output_size, "output_size")
    if input.ndim not in (2, 3) or any(s == 0 for s in input.shape[-2:]):
        raise RuntimeError("Expected 2D or 3D (batch mode) tensor for input with possibly 0 batch size and "
                           f"non-zero dimensions for input, but got: {list(input.shape)}")
    kh, kw = a["kernel"]
    if input.shape[-2] % (kh * kw):
        raise RuntimeError("Expected size of input's dimension 1 to be divisible by the product of kernel_size, "
                           f"but got input.size(1)={input.shape[-2]} and kernel_size={a['kernel']}.")
    oh, ow = _blocks(out, a)
    if oh * ow != input.shape[-1]:
        raise RuntimeError(f"Given output_size={out}, kernel_size={a['kernel']}, dilation={a['dilation']}, "
                           f"padding={a['padding']}, stride={a['stride']}, expected size of input's dimension 2 "
                           f"to match the calculated number of sliding blocks {oh} * {ow} = {oh * ow}, but got "
                           f"input.size(2)={input.shape[-1]}.")
    return apply(_k.col2im, input, output_size=out, **a)


def channel_shuffle(input: Tensor, groups: int) -> Tensor:
    """Split the channels (dim 1) into ``groups`` and interleave them.

    >>> import funcgrad
    >>> funcgrad.nn.functional.channel_shuffle(funcgrad.arange(4.).reshape(1, 4, 1), 2).flatten()
    tensor([0., 2., 1., 3.])
    """
    if input.ndim <= 2:
        raise RuntimeError(f"channel_shuffle expects input with > 2 dims, but got input with sizes {list(input.shape)}")
    if groups <= 0:
        raise RuntimeError(f"Number of groups to divide channels in must be positive. Value of groups:{groups}")
    if input.shape[1] % groups:
        raise RuntimeError(f"Number of channels must be divisible by groups. Got {input.shape[1]} channels and "
                           f"{groups} groups.")
    return apply(_k.channel_shuffle, input, groups=int(groups))


def pdist(input: Tensor, p: float = 2) -> Tensor:
    """p-norm distances between the rows of a 2-D input (the upper triangle, row-major).

    >>> import funcgrad
    >>> funcgrad.nn.functional.pdist(funcgrad.tensor([[0., 0.], [3., 4.], [0., 1.]]))
    tensor([5.0000, 1.0000, 4.2426])
    """
    if input.ndim != 2:
        raise RuntimeError(f"pdist only supports 2D tensors, got: {input.ndim}D")
    if not input.dtype.is_floating_point:
        raise RuntimeError("pdist only supports floating-point dtypes")
    if p < 0:
        raise RuntimeError("pdist only supports non-negative p values")
    return apply(_k.pdist, input, p=float(p))


def gumbel_softmax(logits: Tensor, tau: float = 1, hard: bool = False, eps: float = 1e-10, dim: int = -1) -> Tensor:
    """Samples from the Gumbel-softmax distribution (``hard=True``: one-hot in the forward pass,
    the soft sample's gradient in the backward pass). Draws as PyTorch: ``-log(Exp(1))`` noise.

    >>> import funcgrad
    >>> _ = funcgrad.manual_seed(0)
    >>> funcgrad.nn.functional.gumbel_softmax(funcgrad.zeros(4), hard=True)
    tensor([0., 0., 1., 0.])
    """
    if eps != 1e-10:
        warnings.warn("`eps` parameter is deprecated and has no effect.", stacklevel=2)
    gumbels = -_empty_like(logits).exponential_().log()
    gumbels = (logits + gumbels) / tau
    y_soft = gumbels.softmax(dim)
    if hard:
        index = y_soft.max(dim, keepdim=True)[1]
        y_hard = _zeros_like(logits).scatter_(dim, index, 1.0)
        return y_hard - y_soft.detach() + y_soft
    return y_soft
