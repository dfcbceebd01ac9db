"""Op table — short-time Fourier transforms: ``stft`` and ``istft`` (functions and methods).

Both follow PyTorch 2.13 step by step (``torch/functional.py``'s ``stft`` pads a centered signal;
``aten/src/ATen/native/SpectralOps.cpp`` does the rest), so their checks come in PyTorch's order
with its messages and their graphs hold PyTorch's nodes: ``stft`` frames the signal with
``as_strided``, multiplies by the window, runs the r2c/c2c FFT over the last dim and transposes
(then squeezes a 1-D input's batch) in place, PyTorch's ``TransposeBackward1``/``SqueezeBackward4``;
``istft`` inverts each frame, windows it, overlap-adds the frames and the squared window
(``unfold_backward``, ``UnfoldBackwardBackward0``) and divides, after the NOLA check.
"""

from __future__ import annotations

import jax.numpy as jnp

from .. import _dtype
from .._errors import warn_at_user
from .._factories import ones
from .._runtime import warn_once
from ._registry import Tensor, apply, defop, export
from .complex import view_as_real
from .fft import fft_c2c, fft_c2r, fft_r2c
from .shape_more import pad as _pad
from .strided import as_strided

_transpose_ = defop("stft_transpose", lambda x: jnp.swapaxes(x, 1, 2), "TransposeBackward1", linear=True)
_squeeze_ = defop("stft_squeeze", lambda x: jnp.squeeze(x, 0), "SqueezeBackward4", linear=True)


def _overlap_add(frames, length, hop):
    """``unfold_backward(frames, (B, length), 1, n_fft, hop)``: frame m added at ``m * hop``."""
    n_frames, n_fft = frames.shape[1], frames.shape[2]
    idx = (jnp.arange(n_frames)[:, None] * hop + jnp.arange(n_fft)[None, :]).reshape(-1)
    out = jnp.zeros((frames.shape[0], length), frames.dtype)
    return out.at[:, idx].add(frames.reshape(frames.shape[0], -1))


_unfold_backward = defop("unfold_backward", _overlap_add, "UnfoldBackwardBackward0", linear=True)

_NO_WINDOW = [False]
_NO_WINDOW_I = [False]
_NOT_COMPLEX = [False]
_SHORT = [False]


def _type_string(t: Tensor) -> str:
    """``Tensor::toString()``: ``torch.FloatTensor``, but ``CPUComplexFloatType`` for complex."""
    if t.dtype.is_complex:
        return "CPUComplex" + ("Float" if t.dtype is _dtype.complex64 else "Double") + "Type"
    return t.type()


def _opt(v) -> str:
    return "None" if v is None else str(int(v))


def _window_repr(w) -> str:
    return "None" if w is None else f"{_type_string(w)}{{{list(w.shape)}}}"


def _fft_last(x: Tensor, normalized: bool, onesided: bool) -> Tensor:
    norm = "ortho" if normalized else "backward"
    axes = (x.ndim - 1,)
    if x.dtype.is_complex:
        return apply(fft_c2c, x, s=None, axes=axes, norm=norm, inverse=False)
    return apply(fft_r2c, x, s=None, axes=axes, norm=norm, inverse=False, onesided=onesided)


def _centered(window, n_fft: int, win_length: int, like: Tensor) -> Tensor | None:
    """The window zero-padded on both sides to ``n_fft`` (ones where none was given)."""
    if win_length >= n_fft:
        return window
    left = (n_fft - win_length) // 2
    if window is None:
        window = ones(win_length, dtype=like.dtype)
    return _pad(window, (left, n_fft - win_length - left))


@export("stft")
def stft(
    input: Tensor,
    n_fft: int,
    hop_length: int | None = None,
    win_length: int | None = None,
    window: Tensor | None = None,
    center: bool = True,
    pad_mode: str = "reflect",
    normalized: bool = False,
    onesided: bool | None = None,
    return_complex: bool | None = None,
    align_to_window: bool | None = None,
) -> Tensor:
    """Short-time Fourier transform, as ``torch.stft``: frames of ``n_fft`` samples every
    ``hop_length`` (default ``n_fft // 4``), each windowed and Fourier transformed; result
    ``(B?, N, T)`` complex (``return_complex=True``, required for real input).

    >>> import funcgrad
    >>> x = funcgrad.arange(8.0)
    >>> funcgrad.stft(x, 4, 2, window=funcgrad.ones(4), center=False, return_complex=True).shape
    funcgrad.Size([3, 3])
    """
    if center and align_to_window is not None:
        raise RuntimeError("stft align_to_window should only be set when center = false")
    if center:  # (torch/functional.py: the signal padded as a batch of one channel)
        signal_dim = input.dim()
        extended = [1] * (3 - signal_dim) + list(input.shape)
        p = int(n_fft // 2)
        input = _pad(input.view(extended), [p, p], pad_mode)
        input = input.view(input.shape[-signal_dim:])
    if window is None and warn_once(_NO_WINDOW):
        warn_at_user(
            "A window was not provided. A rectangular window will be applied,which is known to cause "
            "spectral leakage. Other windows such as torch.hann_window or torch.hamming_window are "
            "recommended to reduce spectral leakage.To suppress this warning and use a rectangular "
            "window, explicitly set `window=torch.ones(n_fft, device=<device>)`.",
            UserWarning,
        )
    hop = n_fft >> 2 if hop_length is None else hop_length
    win = n_fft if win_length is None else win_length

    def error(msg):
        return RuntimeError(
            f"stft({_type_string(input)}{list(input.shape)}, n_fft={n_fft}, hop_length={hop}, "
            f"win_length={win}, "
            f"window={_window_repr(window)}, normalized={int(normalized)}, onesided={_opt(onesided)}, "
            f"return_complex={_opt(return_complex)}, align_to_window={_opt(align_to_window)}) : {msg}"
        )

    complex_out = (
        return_complex
        if return_complex is not None
        else (input.dtype.is_complex or (window is not None and window.dtype.is_complex))
    )
    if not complex_out:
        if return_complex is None:
            raise RuntimeError(
                "stft requires the return_complex parameter be given for real inputs, and will "
                "further require that return_complex=True in a future PyTorch release."
            )
        if warn_once(_NOT_COMPLEX):
            warn_at_user(
                "stft with return_complex=False is deprecated. In a future pytorch release, stft will "
                "return complex tensors for all inputs, and return_complex=False will raise an error.\n"
                "Note: you can still call torch.view_as_real on the complex output to recover the old "
                "return format.",
                UserWarning,
            )
    if input.dtype._kind not in "fc":
        raise error("expected a tensor of floating point or complex values")
    if input.dim() not in (1, 2):
        raise error("expected a 1D or 2D tensor")
    x = input.unsqueeze(0) if input.dim() == 1 else input
    batch, length = x.shape
    if n_fft <= 0 or n_fft > length:
        raise error(f"expected 0 < n_fft < {length}, but got n_fft={win}")
    if hop <= 0:
        raise error(f"expected hop_length > 0, but got hop_length={hop}")
    if win <= 0 or win > n_fft:
        raise error(f"expected 0 < win_length <= n_fft, but got win_length={win}")
    if window is not None and (window.dim() != 1 or window.shape[0] != win):
        raise error(
            f"expected a 1D window tensor of size equal to win_length={win}, but got window with size "
            f"{list(window.shape)}"
        )
    window_ = _centered(window, n_fft, win, input)
    if align_to_window and win < n_fft:  # frames begin with the window: each starts left earlier
        left = (n_fft - win) // 2
        x = _pad(x, (left, n_fft - win - left))
        n_frames = 1 + (length - win) // hop
    else:
        n_frames = 1 + (length - n_fft) // hop
    s0, s1 = x.stride()
    frames = as_strided(x, (batch, n_frames, n_fft), (s0, hop * s1, s1))
    if window_ is not None:
        frames = frames * window_
    complex_fft = frames.dtype.is_complex
    one = (not complex_fft) if onesided is None else onesided
    if complex_fft and one:
        raise RuntimeError("Cannot have onesided output if window or input is complex")
    out = apply(_transpose_, _fft_last(frames, normalized, one))
    if input.dim() == 1:
        out = apply(_squeeze_, out)
    return out if complex_out else view_as_real(out)


@export("istft")
def istft(
    input: Tensor,
    n_fft: int,
    hop_length: int | None = None,
    win_length: int | None = None,
    window: Tensor | None = None,
    center: bool = True,
    normalized: bool = False,
    onesided: bool | None = None,
    length: int | None = None,
    return_complex: bool = False,
) -> Tensor:
    """Inverse short-time Fourier transform, as ``torch.istft``: each frame inverted, windowed and
    overlap-added, divided by the overlap-added squared window (which must not vanish: NOLA).

    >>> import funcgrad
    >>> x = funcgrad.arange(8.0)
    >>> w = funcgrad.hann_window(4)
    >>> s = funcgrad.stft(x, 4, 1, window=w, return_complex=True)
    >>> funcgrad.istft(s, 4, 1, window=w, length=8).round(decimals=4)  # (x, up to rounding)
    tensor([0., 1., 2., 3., 4., 5., 6., 7.])
    """
    if window is None and warn_once(_NO_WINDOW_I):
        warn_at_user(
            "A window was not provided. A rectangular window will be applied.Please provide the same "
            "window used by stft to make the inversion lossless.To suppress this warning and use a "
            "rectangular window, explicitly set `window=torch.ones(n_fft, device=<device>)`.",
            UserWarning,
        )
    hop = n_fft >> 2 if hop_length is None else hop_length
    win = n_fft if win_length is None else win_length

    def error(msg):
        return RuntimeError(
            f"istft({_type_string(input)}{list(input.shape)}, n_fft={n_fft}, hop_length={hop}, "
            f"win_length={win}, "
            f"window={_window_repr(window)}, center={int(center)}, normalized={int(normalized)}, "
            f"onesided={_opt(onesided)}, length={_opt(length)}, return_complex={int(return_complex)}) {msg}"
        )

    if not input.dtype.is_complex:
        raise RuntimeError(
            "istft requires a complex-valued input tensor matching the output from stft with "
            "return_complex=True."
        )
    real_dim = input.dim() + 1
    if real_dim < 3:  # (PyTorch reads input.size(-3) of the real view first)
        raise IndexError(
            f"Dimension out of range (expected to be in range of [{-real_dim}, {real_dim - 1}], but got -3)"
        )
    n_frames, fft_size = input.shape[-1], input.shape[-2]
    expected = n_fft + hop * (n_frames - 1)
    if input.numel() == 0:
        raise error(": input tensor cannot be empty.")
    if real_dim not in (3, 4):
        raise error(f": expected a tensor with 3 or 4 dimensions, but got {real_dim}")
    one = (fft_size != n_fft) if onesided is None else onesided
    if one and n_fft // 2 + 1 != fft_size:
        raise error(
            ": expected the frequency dimension (3rd to the last) of the input tensor to match n_fft / 2 + "
            f"1 when onesided=True, but got {fft_size}"
        )
    if not one and n_fft != fft_size:
        raise error(
            ": expected the frequency dimension (3rd to the last) of the input tensor to match n_fft when "
            f"onesided=False, but got {fft_size}"
        )
    if not 0 < hop <= win:
        raise error(": expected 0 < hop_length <= win_length")
    if not 0 < win <= n_fft:
        raise error(": expected 0 < win_length <= n_fft")
    if window is not None and (window.dim() != 1 or window.shape[0] != win):
        raise error(": Invalid window shape. window has to be 1D and length of `win_length`")
    real = _dtype.float32 if input.dtype is _dtype.complex64 else _dtype.float64
    if window is None:
        window = ones(win, dtype=real)
        given = False
    else:
        given = True
    w = _pad(window, ((n_fft - win) // 2, n_fft - win - (n_fft - win) // 2)) if win != n_fft else window
    x = input.unsqueeze(0) if input.dim() == 2 else input
    x = x.transpose(1, 2)  # (channel, n_frames, fft_size)
    norm = "ortho" if normalized else "backward"
    if return_complex:
        if one:
            raise RuntimeError("Cannot have onesided output if window or input is complex")
        x = apply(fft_c2c, x, s=None, axes=(2,), norm=norm, inverse=True)
    else:
        if given and window.dtype.is_complex:
            raise RuntimeError("Complex windows are incompatible with return_complex=False")
        if not one:
            x = x[..., : n_fft // 2 + 1]
        x = apply(fft_c2r, x, s=(n_fft,), axes=(2,), norm=norm)
    y = apply(_unfold_backward, x * w.view(1, 1, n_fft), length=expected, hop=hop)
    env = apply(_unfold_backward, w.pow(2).expand(1, n_frames, n_fft), length=expected, hop=hop)
    start = n_fft // 2 if center else 0
    end = start + length if length is not None else (-(n_fft // 2) if center else expected)
    y, env = y[:, start:end], env[:, start:end]
    if bool(env.abs().min() < 1e-11):
        raise error("window overlap add min: 1\n[ CPUBoolType{} ]")
    y = y / env
    if input.dim() == 2:
        y = y.squeeze(0)
    if end > expected:
        if warn_once(_SHORT):
            warn_at_user(
                "The length of signal is shorter than the length parameter. Result is being padded with "
                "zeros in the tail. Please check your center and hop_length settings.",
                UserWarning,
            )
        y = _pad(y, (0, end - expected))
    return y


__all__ = ["stft", "istft"]
