"""Normalisation layers: ``BatchNorm1d/2d/3d``, ``SyncBatchNorm``, ``InstanceNorm1d/2d/3d``,
``LayerNorm``, ``GroupNorm``, ``LocalResponseNorm``, ``CrossMapLRN2d``.

Running statistics are buffers updated *in place* (their storage is written, the buffer objects
stay the same), so optimizers, ``state_dict`` views and the jit bridge see the new values.
"""

from __future__ import annotations

import numbers

import jax
import numpy as np

from ... import _dtype, _factories
from ..._device import put
from ..._tensor import Tensor
from ...autograd import grad_mode
from .. import functional as F
from .._functional_extra import cross_map_lrn2d
from .. import init
from ..module import Module
from ..parameter import Parameter


def _affine_parameters(m: Module, shape, affine: bool, bias: bool, dt, device) -> None:
    """A norm layer's ``weight`` (ones) and ``bias`` (zeros) of ``shape``, or None as PyTorch."""
    m.register_parameter("weight", Parameter(_factories.ones(*shape, dtype=dt, device=device))
                         if affine else None)
    m.register_parameter("bias", Parameter(_factories.zeros(*shape, dtype=dt, device=device))
                         if affine and bias else None)


def _reset_affine(m: Module, affine: bool) -> None:
    if affine:
        init.ones_(m.weight)
        if m.bias is not None:
            init.zeros_(m.bias)


class _NormBase(Module):
    _version = 2

    def __init__(self, num_features: int, eps: float = 1e-5, momentum: float | None = 0.1,
                 affine: bool = True, track_running_stats: bool = True, device=None, dtype=None, *,
                 bias: bool = True) -> None:
        super().__init__()
        self.num_features, self.eps, self.momentum = num_features, eps, momentum
        self.affine, self.track_running_stats = affine, track_running_stats
        dt = dtype or _dtype.get_default_dtype()
        _affine_parameters(self, (num_features,), affine, bias, dt, device)
        if track_running_stats:
            self.register_buffer("running_mean", _factories.zeros(num_features, dtype=dt, device=device))
            self.register_buffer("running_var", _factories.ones(num_features, dtype=dt, device=device))
            self.register_buffer("num_batches_tracked", _factories.tensor(0, dtype=_dtype.int64, device=device))
        else:
            self.register_buffer("running_mean", None)
            self.register_buffer("running_var", None)
            self.register_buffer("num_batches_tracked", None)
        self.reset_parameters()

    def reset_running_stats(self) -> None:
        if self.track_running_stats:
            with grad_mode.no_grad():
                self.running_mean.zero_()
                self.running_var.fill_(1)
                self.num_batches_tracked.zero_()

    def reset_parameters(self) -> None:
        self.reset_running_stats()
        _reset_affine(self, self.affine)

    def _check_input_dim(self, input) -> None:
        raise NotImplementedError

    def extra_repr(self) -> str:
        return (f"{self.num_features}, eps={self.eps}, momentum={self.momentum}, affine={self.affine}, "
                f"bias={self.bias is not None}, track_running_stats={self.track_running_stats}")

    def _load_from_state_dict(self, state_dict, prefix, local_metadata, strict, missing_keys,
                              unexpected_keys, error_msgs) -> None:
        # checkpoints from before num_batches_tracked existed (or plain dicts without metadata)
        version = local_metadata.get("version", None)
        if (version is None or version < 2) and self.track_running_stats:
            key = prefix + "num_batches_tracked"
            if key not in state_dict:
                state_dict[key] = (self.num_batches_tracked if self.num_batches_tracked is not None
                                   else _factories.tensor(0, dtype=_dtype.int64))
        super()._load_from_state_dict(state_dict, prefix, local_metadata, strict, missing_keys,
                                      unexpected_keys, error_msgs)


class _BatchNorm(_NormBase):
    def forward(self, input):
        self._check_input_dim(input)
        return self._normalize(input, self._average_factor())

    def _average_factor(self):
        """The running statistics' update factor, counting this batch first in training."""
        eaf = 0.0 if self.momentum is None else self.momentum
        if self.training and self.track_running_stats and self.num_batches_tracked is not None:
            nbt = self.num_batches_tracked
            with grad_mode.no_grad():
                _count_batch(nbt)  # in place: the buffer object (and its storage cell) stays the same
            if self.momentum is None:  # cumulative moving average
                eaf = 1.0 / float(nbt.item()) if not _traced(nbt) else 1.0 / nbt
            else:
                eaf = self.momentum
        return eaf

    def _batch_stats(self) -> bool:
        """Whether this call normalizes with the batch's statistics (training, or none tracked)."""
        return self.training or (self.running_mean is None and self.running_var is None)

    def _normalize(self, input, eaf):
        use_stats = not self.training or self.track_running_stats
        return F.batch_norm(input, self.running_mean if use_stats else None,
                            self.running_var if use_stats else None, self.weight, self.bias,
                            self._batch_stats(), eaf, self.eps)


def _count_batch(nbt) -> None:
    """``nbt.add_(1)``, on the host for a concrete int64 counter on the CPU: the add kernel was
    one XLA compile of the first training step, for one integer (the same value either way)."""
    v = nbt._value
    if _factories.is_host_cpu(v) and v.dtype == np.int64 and v.ndim == 0:
        n = int(v)
        if n < np.iinfo(np.int64).max:
            nbt._inplace(lambda t: Tensor._wrap(put(np.asarray(n + 1, np.int64))))
            return
    nbt.add_(1)


def _traced(t) -> bool:
    return isinstance(t._value, jax.core.Tracer)


class BatchNorm1d(_BatchNorm):
    """Batch normalisation over (N, C) or (N, C, L).

    >>> import funcgrad
    >>> from funcgrad import nn
    >>> bn = nn.BatchNorm1d(2)
    >>> _ = bn(funcgrad.tensor([[0., 1.], [2., 3.]]))
    >>> bn.running_mean, bn.num_batches_tracked
    (tensor([0.1000, 0.2000]), tensor(1))
    """

    def _check_input_dim(self, input) -> None:
        if input.dim() not in (2, 3):
            raise ValueError(f"expected 2D or 3D input (got {input.dim()}D input)")


class BatchNorm2d(_BatchNorm):
    """Batch normalisation over (N, C, H, W)."""

    def _check_input_dim(self, input) -> None:
        if input.dim() != 4:
            raise ValueError(f"expected 4D input (got {input.dim()}D input)")


class BatchNorm3d(_BatchNorm):
    def _check_input_dim(self, input) -> None:
        if input.dim() != 5:
            raise ValueError(f"expected 5D input (got {input.dim()}D input)")


def _process_group_initialized() -> bool:
    # (an upward call, as torch.nn's SyncBatchNorm asks torch.distributed: tests/test_import_dag.py)
    from ... import distributed
    return distributed.is_available() and distributed.is_initialized()


def _world_size(group) -> int:
    from ... import distributed
    return distributed.get_world_size(group)


class SyncBatchNorm(_BatchNorm):
    """Batch normalisation whose training statistics PyTorch reduces over the process group. With
    no process group initialized (``funcgrad.distributed``), or in eval mode, it is ``_BatchNorm``'s
    computation, as PyTorch's; with one initialized, PyTorch requires a GPU (or XPU) input in
    training. One process per host (JAX's model, ``funcgrad.distributed``) computes the same
    statistics as one device; across several processes the eager reduction is not implemented:
    under ``funcgrad.jit`` with ``funcgrad.parallel`` data parallelism a ``BatchNorm``'s statistics
    are the global batch's already.

    >>> from funcgrad import nn
    >>> nn.SyncBatchNorm(3)
    SyncBatchNorm(3, eps=1e-05, momentum=0.1, affine=True, bias=True, track_running_stats=True)
    """

    def __init__(self, num_features: int, eps: float = 1e-5, momentum: float | None = 0.1,
                 affine: bool = True, track_running_stats: bool = True, process_group=None, device=None,
                 dtype=None, *, bias: bool = True) -> None:
        super().__init__(num_features, eps, momentum, affine, track_running_stats, device, dtype, bias=bias)
        self.process_group = process_group

    def _check_input_dim(self, input) -> None:
        if input.dim() < 2:
            raise ValueError(f"expected at least 2D input (got {input.dim()}D input)")

    def forward(self, input):
        self._check_input_dim(input)
        if input.size(1) == 0:
            raise ValueError("SyncBatchNorm number of input channels should be non-zero")
        eaf = self._average_factor()  # (counted before the checks below, as PyTorch's)
        if self._batch_stats() and self.training and _process_group_initialized():
            if input.device.type not in ("cuda", "hpu", "xpu", "privateuseone"):
                raise ValueError("SyncBatchNorm expected input tensor to be on GPU or XPU or privateuseone")
            if _world_size(self.process_group) > 1:
                raise NotImplementedError(
                    "SyncBatchNorm: reducing batch statistics across processes eagerly is not implemented in "
                    "funcgrad; run the training step under funcgrad.jit with funcgrad.parallel data "
                    "parallelism, where BatchNorm's statistics are the global batch's")
        return self._normalize(input, eaf)

    @classmethod
    def convert_sync_batchnorm(cls, module, process_group=None):
        """``module`` with every ``_BatchNorm`` layer (itself or a descendant) replaced by a
        ``SyncBatchNorm`` sharing its parameters and running statistics, as PyTorch's."""
        out = module
        if isinstance(module, _BatchNorm):
            out = SyncBatchNorm(module.num_features, module.eps, module.momentum, module.affine,
                                module.track_running_stats, process_group, bias=module.bias is not None)
            if module.affine:
                with grad_mode.no_grad():
                    out.weight = module.weight
                    out.bias = module.bias
            out.running_mean = module.running_mean
            out.running_var = module.running_var
            out.num_batches_tracked = module.num_batches_tracked
            out.training = module.training
            if hasattr(module, "qconfig"):
                out.qconfig = module.qconfig
        for name, child in module.named_children():
            out.add_module(name, cls.convert_sync_batchnorm(child, process_group))
        del module
        return out


class _InstanceNorm(_NormBase):
    _nd = 2

    def __init__(self, num_features: int, eps: float = 1e-5, momentum: float = 0.1, affine: bool = False,
                 track_running_stats: bool = False, device=None, dtype=None, *, bias: bool = True) -> None:
        super().__init__(num_features, eps, momentum, affine, track_running_stats, device, dtype, bias=bias)

    def forward(self, input):
        nd = self._nd
        if input.dim() not in (nd + 1, nd + 2):
            raise ValueError(f"expected {nd + 1}D or {nd + 2}D input (got {input.dim()}D input)")
        unb = input.dim() == nd + 1
        x = input.unsqueeze(0) if unb else input
        out = F.instance_norm(x, self.running_mean, self.running_var, self.weight, self.bias,
                              self.training or not self.track_running_stats, self.momentum
                              if self.momentum is not None else 0.1, self.eps)
        return out.squeeze(0) if unb else out


class InstanceNorm1d(_InstanceNorm):
    _nd = 1


class InstanceNorm2d(_InstanceNorm):
    """Per-sample, per-channel normalisation over (N, C, H, W)."""

    _nd = 2


class InstanceNorm3d(_InstanceNorm):
    _nd = 3


def _trailing_norm_init(self, normalized_shape, eps, elementwise_affine, bias, device, dtype) -> None:
    """LayerNorm's and RMSNorm's shared setup: an int shape is ``(int,)``; affine parameters of that shape."""
    if isinstance(normalized_shape, numbers.Integral):
        normalized_shape = (normalized_shape,)
    self.normalized_shape = tuple(normalized_shape)
    self.eps, self.elementwise_affine = eps, elementwise_affine
    _affine_parameters(self, self.normalized_shape, elementwise_affine, bias,
                       dtype or _dtype.get_default_dtype(), device)


class LayerNorm(Module):
    """Normalise over the trailing ``normalized_shape`` dims, with elementwise affine.

    >>> from funcgrad import nn
    >>> nn.LayerNorm(4)
    LayerNorm((4,), eps=1e-05, elementwise_affine=True, bias=True)
    """

    def __init__(self, normalized_shape, eps: float = 1e-5, elementwise_affine: bool = True, bias: bool = True,
                 device=None, dtype=None) -> None:
        super().__init__()
        _trailing_norm_init(self, normalized_shape, eps, elementwise_affine, bias, device, dtype)

    def reset_parameters(self) -> None:
        _reset_affine(self, self.elementwise_affine)

    def forward(self, input):
        return F.layer_norm(input, self.normalized_shape, self.weight, self.bias, self.eps)

    def extra_repr(self) -> str:
        return (f"{self.normalized_shape}, eps={self.eps}, elementwise_affine={self.elementwise_affine}, "
                f"bias={self.bias is not None}")


class GroupNorm(Module):
    """Normalise over groups of channels."""

    def __init__(self, num_groups: int, num_channels: int, eps: float = 1e-5, affine: bool = True,
                 device=None, dtype=None, *, bias: bool = True) -> None:
        super().__init__()
        if num_channels % num_groups != 0:
            raise ValueError("num_channels must be divisible by num_groups")
        self.num_groups, self.num_channels, self.eps, self.affine = num_groups, num_channels, eps, affine
        _affine_parameters(self, (num_channels,), affine, bias, dtype or _dtype.get_default_dtype(),
                           device)

    def reset_parameters(self) -> None:
        _reset_affine(self, self.affine)

    def forward(self, input):
        return F.group_norm(input, self.num_groups, self.weight, self.bias, self.eps)

    def extra_repr(self) -> str:
        return (f"{self.num_groups}, {self.num_channels}, eps={self.eps}, affine={self.affine}, "
                f"bias={self.bias is not None}")


class LocalResponseNorm(Module):
    def __init__(self, size: int, alpha: float = 1e-4, beta: float = 0.75, k: float = 1.0) -> None:
        super().__init__()
        self.size, self.alpha, self.beta, self.k = size, alpha, beta, k

    def forward(self, input):
        return F.local_response_norm(input, self.size, self.alpha, self.beta, self.k)

    def extra_repr(self) -> str:
        return f"{self.size}, alpha={self.alpha}, beta={self.beta}, k={self.k}"


class CrossMapLRN2d(Module):
    """Legacy cross-channel local response normalisation of (N, C, H, W) inputs (Lua Torch's
    ``SpatialCrossMapLRN``), with PyTorch's windows and hand-written backward
    (``CrossMapLRN2dBackward``; see ``nn/_functional_extra.py``).

    >>> from funcgrad import nn
    >>> nn.CrossMapLRN2d(5)
    CrossMapLRN2d(5, alpha=0.0001, beta=0.75, k=1)
    """

    def __init__(self, size: int, alpha: float = 1e-4, beta: float = 0.75, k: float = 1) -> None:
        super().__init__()
        self.size, self.alpha, self.beta, self.k = size, alpha, beta, k

    def forward(self, input):
        return cross_map_lrn2d(input, self.size, self.alpha, self.beta, self.k)

    def extra_repr(self) -> str:
        return f"{self.size}, alpha={self.alpha}, beta={self.beta}, k={self.k}"


class RMSNorm(Module):
    """Root-mean-square normalisation over the trailing ``normalized_shape`` dims (a ``weight``,
    no bias; ``eps=None`` is the dtype's machine epsilon, as in PyTorch).

    >>> from funcgrad import nn
    >>> nn.RMSNorm(4)
    RMSNorm((4,), eps=None, elementwise_affine=True)
    """

    def __init__(self, normalized_shape, eps: float | None = None, elementwise_affine: bool = True,
                 device=None, dtype=None) -> None:
        super().__init__()
        _trailing_norm_init(self, normalized_shape, eps, elementwise_affine, False, device, dtype)

    def reset_parameters(self) -> None:
        _reset_affine(self, self.elementwise_affine)

    def forward(self, input):
        return F.rms_norm(input, self.normalized_shape, self.weight, self.eps)

    def extra_repr(self) -> str:
        return f"{self.normalized_shape}, eps={self.eps}, elementwise_affine={self.elementwise_affine}"
