"""The deprecated spellings ``torch.cpu.amp.autocast`` / ``torch.cuda.amp.autocast`` /
``torch.cuda.amp.GradScaler``: the same objects with PyTorch's ``FutureWarning``."""

from __future__ import annotations

import warnings
from types import SimpleNamespace

from .autocast_mode import autocast as _autocast
from .grad_scaler import GradScaler as _GradScaler


def _autocast_for(device: str):
    class autocast(_autocast):
        """Deprecated: ``funcgrad.amp.autocast(device, ...)``."""

        def __init__(self, enabled: bool = True, dtype=None, cache_enabled: bool = True) -> None:
            warnings.warn(f"`torch.{device}.amp.autocast(args...)` is deprecated. Please use "
                          f"`torch.amp.autocast('{device}', args...)` instead.", FutureWarning, stacklevel=2)
            super().__init__(device, dtype=dtype, enabled=enabled, cache_enabled=cache_enabled)

        def __call__(self, func):
            return _autocast(self.device, dtype=self.fast_dtype, enabled=self._enabled)(func)
    autocast.__qualname__ = autocast.__name__ = "autocast"
    return autocast


def _scaler_for(device: str):
    class GradScaler(_GradScaler):
        """Deprecated: ``funcgrad.amp.GradScaler(device, ...)``."""

        def __init__(self, init_scale: float = 2.0 ** 16, growth_factor: float = 2.0,
                     backoff_factor: float = 0.5, growth_interval: int = 2000, enabled: bool = True) -> None:
            warnings.warn(f"`torch.{device}.amp.GradScaler(args...)` is deprecated. Please use "
                          f"`torch.amp.GradScaler('{device}', args...)` instead.", FutureWarning, stacklevel=2)
            super().__init__(device, init_scale=init_scale, growth_factor=growth_factor,
                             backoff_factor=backoff_factor, growth_interval=growth_interval, enabled=enabled)
    return GradScaler


cpu_amp = SimpleNamespace(autocast=_autocast_for("cpu"), GradScaler=_scaler_for("cpu"))
cuda_amp = SimpleNamespace(autocast=_autocast_for("cuda"), GradScaler=_scaler_for("cuda"))
