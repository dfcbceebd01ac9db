"""``nn.parallel.DistributedDataParallel`` / ``nn.DataParallel`` mapped onto ``jax.sharding``.

PyTorch's DDP runs one process per GPU and all-reduces gradient buckets from backward hooks.
Here one process drives every local device: the wrapper places the module's parameters
replicated on a device mesh (:func:`funcgrad.parallel.shard_module`) and splits each input
along the batch dimension over the mesh's ``"data"`` axis; a :func:`funcgrad.jit` training
step is then one SPMD program in which XLA all-reduces the gradients. Eagerly it also works
(each op runs SPMD), just without the fusion.

Differences from PyTorch: no per-device process, no buckets/hooks (``bucket_cap_mb``,
``find_unused_parameters``, ``gradient_as_bucket_view``, ``static_graph`` are accepted and
ignored); ``no_sync()`` is a no-op context (gradient accumulation needs no communication
skipping: the all-reduce is part of the compiled step); the global batch must be divisible
by the number of devices on the ``"data"`` axis.
"""

from __future__ import annotations

import contextlib
from typing import Any

import jax

from .. import parallel as _par
from .._tensor import Tensor
from .module import Module

__all__ = ["DistributedDataParallel", "DataParallel"]


class DistributedDataParallel(Module):
    """Data parallelism over every device (of every host) through XLA's SPMD partitioner.

    Args:
        module: the model; its parameters/buffers are placed on ``mesh`` (in place).
        device_ids, output_device, broadcast_buffers, process_group, bucket_cap_mb,
            find_unused_parameters, ...: accepted for PyTorch compatibility, ignored.
        dim: the batch dimension of the inputs.
        mesh: the device mesh (default :func:`funcgrad.parallel.make_mesh` of all devices).
        rules: optional parameter-sharding rules (see :func:`funcgrad.parallel.shard_module`),
            e.g. FSDP-style ``[(".*", funcgrad.parallel.fsdp("model"))]`` on a 2-axis mesh.

    >>> import funcgrad
    >>> from funcgrad import nn
    >>> ddp = nn.parallel.DistributedDataParallel(nn.Linear(3, 1))
    >>> ddp(funcgrad.ones(4, 3)).shape, type(ddp.module).__name__
    (funcgrad.Size([4, 1]), 'Linear')
    """

    def __init__(self, module: Module, device_ids=None, output_device=None, dim: int = 0,
                 broadcast_buffers: bool = True, process_group=None, bucket_cap_mb=None,
                 find_unused_parameters: bool = False, check_reduction: bool = False,
                 gradient_as_bucket_view: bool = False, static_graph: bool = False, *,
                 mesh: Any = None, rules: Any = None, **kwargs) -> None:
        super().__init__()
        self.module = module
        self.dim = dim
        self.mesh = _par.make_mesh() if mesh is None else mesh
        _par.shard_module(module, self.mesh, rules)

    def _shard(self, x):
        if not isinstance(x, Tensor) or x._requires_grad or x.dim() <= self.dim:
            return x
        v = x._value
        sh = _par.batch_sharding(self.mesh, self.dim)
        if isinstance(v, jax.core.Tracer):  # inside a compiled step: a constraint for XLA
            n = _par._axis_size(self.mesh, "data")
            if v.shape[self.dim] % n:
                _par._place_batch(x, self.mesh, "data", self.dim)  # raises the clear error
            return Tensor._wrap(jax.lax.with_sharding_constraint(v, sh))
        if getattr(v, "sharding", None) == sh:
            return x
        return _par._place_batch(x, self.mesh, "data", self.dim)

    def forward(self, *inputs, **kwargs):
        inputs, kwargs = jax.tree.map(self._shard, (inputs, kwargs),
                                      is_leaf=lambda x: isinstance(x, Tensor))
        return self.module(*inputs, **kwargs)

    @contextlib.contextmanager
    def no_sync(self):
        """Accepted for PyTorch compatibility; nothing to skip (see the module docstring)."""
        yield


class DataParallel(DistributedDataParallel):
    """``nn.DataParallel(module, device_ids=None, output_device=None, dim=0)``: same as DDP here."""

    def __init__(self, module: Module, device_ids=None, output_device=None, dim: int = 0, *,
                 mesh: Any = None) -> None:
        super().__init__(module, dim=dim, mesh=mesh)
