"""``funcgrad.nn.attention``: PyTorch's ``SDPBackend`` and ``sdpa_kernel``, the switches of
``scaled_dot_product_attention``'s kernels.

funcgrad computes attention as PyTorch's CPU build does, with its two kernels: flash attention
where its constraints hold, else the math composite (``nn/_functional_attention.py``). The
switches are PyTorch's global ones (those of ``funcgrad.backends.cuda.enable_math_sdp`` & co.),
and they act as on a CPU: with only the math kernel on, it runs every call; with only flash on, a
call it cannot serve warns why and raises "No available kernel"; with neither, "No viable
backend". The other backends (memory-efficient, cuDNN, overrideable) are CUDA's and XPU's: they
are recorded and restored but never serve a call here, as in PyTorch's CPU build.

>>> import funcgrad
>>> import funcgrad.nn.functional as F
>>> from funcgrad.nn.attention import SDPBackend, sdpa_kernel
>>> q = funcgrad.ones(1, 1, 2, 4)
>>> with sdpa_kernel(SDPBackend.MATH):
...     F.scaled_dot_product_attention(q, q, q).shape
funcgrad.Size([1, 1, 2, 4])
"""

from __future__ import annotations

import contextlib
import enum

from ...backends.cuda import _sdp

__all__ = ["SDPBackend", "sdpa_kernel", "WARN_FOR_UNFUSED_KERNELS"]

WARN_FOR_UNFUSED_KERNELS = False


class SDPBackend(enum.IntEnum):
    """A kernel of ``scaled_dot_product_attention`` (PyTorch's numbering)."""

    ERROR = -1
    MATH = 0
    FLASH_ATTENTION = 1
    EFFICIENT_ATTENTION = 2
    CUDNN_ATTENTION = 3
    OVERRIDEABLE = 4

    __str__ = enum.Enum.__str__


# the switch of each backend (funcgrad.backends.cuda's names for PyTorch's global flags)
_SWITCH = {SDPBackend.MATH: "math", SDPBackend.FLASH_ATTENTION: "flash",
           SDPBackend.EFFICIENT_ATTENTION: "mem_efficient", SDPBackend.CUDNN_ATTENTION: "cudnn",
           SDPBackend.OVERRIDEABLE: "overrideable"}


def _enable_only(backends) -> None:
    for b, name in _SWITCH.items():
        _sdp[name] = b in backends


@contextlib.contextmanager
def sdpa_kernel(backends, set_priority: bool = False):
    """Within the block, only ``backends`` (an ``SDPBackend`` or a list of them) may serve
    ``scaled_dot_product_attention``; the switches are restored after it. ``set_priority`` orders
    CUDA's choice among them; a CPU's order is fixed (flash, then math), here as in PyTorch."""
    if not isinstance(backends, (list, SDPBackend)):
        raise AssertionError(f"Backend must be an instance of SDPBackend or a list of SDPBackend instances, "
                             f"got {type(backends).__name__}")
    if isinstance(backends, SDPBackend):
        backends = [backends]
    previous = [b for b, name in _SWITCH.items() if _sdp[name]]
    try:
        _enable_only(set(backends))
        yield {}
    finally:
        _enable_only(set(previous))
