"""``funcgrad.backends.cudnn``: PyTorch's cuDNN flags (recorded; XLA picks the GPU kernels)."""

from __future__ import annotations

import contextlib
import sys

from ..._device import cuda_is_available

enabled = True
benchmark = False
benchmark_limit = 10
deterministic = False
allow_tf32 = True


def is_available() -> bool:
    """True where JAX runs on an NVIDIA GPU (XLA calls cuDNN there)."""
    return cuda_is_available()


def version() -> int | None:
    """PyTorch's CPU build answers ``None``; funcgrad does not link cuDNN itself."""
    return None


def is_acceptable(tensor) -> bool:
    return enabled and is_available() and tensor.is_cuda


@contextlib.contextmanager
def flags(enabled: bool = False, benchmark: bool = False, deterministic: bool = False,
          allow_tf32: bool = True, **_):
    """Set the flags inside a ``with`` block and restore them after (PyTorch's signature)."""
    mod = sys.modules[__name__]
    names = ("enabled", "benchmark", "deterministic", "allow_tf32")
    old = {n: getattr(mod, n) for n in names}
    for n, v in zip(names, (enabled, benchmark, deterministic, allow_tf32)):
        setattr(mod, n, v)
    try:
        yield
    finally:
        for n, v in old.items():
            setattr(mod, n, v)
