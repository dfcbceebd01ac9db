"""Scale-out on ``jax.sharding``: data-parallel and sharded compiled steps on many devices.

funcgrad does not hand-write collectives. It *places* arrays on a device mesh — the batch
sharded along a ``"data"`` axis, parameters replicated or sharded along a ``"model"`` axis by
name rules — and the unchanged :func:`funcgrad.jit` step is compiled by ``jax.jit``, whose
SPMD partitioner (GSPMD/Shardy) propagates the input shardings through the whole step and
inserts the all-reduces / reduce-scatters / all-gathers. Because a loss such as
``mse_loss(..., reduction="mean")`` is a mean over the *global* batch, the gradients are the
single-device gradients: no averaging hook is needed.

Typical use (one host)::

    mesh = funcgrad.parallel.make_mesh(data=8)            # or make_mesh(data=4, model=2)
    funcgrad.parallel.shard_module(model, mesh)           # replicate (data parallel) ...
    funcgrad.parallel.shard_module(model, mesh, rules=[(r"weight$", P("model", None))])  # ... or shard
    loader = funcgrad.parallel.shard_loader(DataLoader(ds, batch_size=64), mesh)

    @funcgrad.jit
    def step(x, y):
        opt.zero_grad()
        loss = loss_fn(model(x), y)
        loss.backward()
        opt.step()
        return loss

    for x, y in loader:                                   # batches arrive sharded on the mesh
        step(x, y)

PyTorch mapping: ``DistributedDataParallel(model)`` → :func:`shard_module` with no rules
(:class:`funcgrad.nn.parallel.DistributedDataParallel` does exactly that); ``DistributedSampler``
+ per-rank loader → :func:`shard_loader` over the global batch; FSDP / ZeRO → ``rules`` (or
:func:`fsdp`) sharding parameters, whose optimizer state then inherits the sharding.

Several hosts (each host runs the same script; see :mod:`funcgrad.distributed`)::

    import jax
    jax.distributed.initialize(coordinator_address="10.0.0.1:1234",
                               num_processes=4, process_id=RANK)   # before any computation
    # or: funcgrad.distributed.init_process_group(init_method="tcp://10.0.0.1:1234",
    #                                             world_size=4, rank=RANK)
    mesh = funcgrad.parallel.make_mesh(data=jax.device_count())   # all hosts' devices

Each host then feeds its own slice of the global batch: :func:`shard_batch` builds the global
array with ``jax.make_array_from_process_local_data`` when ``jax.process_count() > 1``.

Checkpoints: :func:`gather` turns sharded tensors (a ``state_dict``, a tensor, any container)
into host-local, unsharded tensors (``process_allgather`` across hosts) for
``funcgrad.save``; save on rank 0 only. To resume, ``load_state_dict`` then call
:func:`shard_module` / :func:`shard_optimizer` again to place the loaded state on the mesh.
"""

from __future__ import annotations

import collections
import functools
import re
from typing import Any, Callable, Iterable, Sequence

import jax
import numpy as np
from jax.sharding import AxisType, Mesh, NamedSharding, PartitionSpec

from .amp.autocast_mode import state_key as _autocast_key
from ._tensor import Tensor

P = PartitionSpec

__all__ = ["Mesh", "NamedSharding", "P", "PartitionSpec", "make_mesh", "batch_sharding",
           "shard_batch", "shard_module", "shard_optimizer", "shard_loader", "fsdp", "gather",
           "param_specs", "compiled_text"]

Rules = Sequence[tuple[str, "PartitionSpec | Callable[[tuple], PartitionSpec]"]]


# ---- the mesh -------------------------------------------------------------------------------------
def make_mesh(data: int | None = None, model: int = 1, *, devices: Sequence | None = None) -> Mesh:
    """A 2-D device mesh with axes ``("data", "model")`` (auto-partitioned by XLA).

    Args:
        data: devices along the batch axis; default: all devices not used by ``model``.
        model: devices along the parameter-sharding axis (1: pure data parallel).
        devices: the devices to use (default ``jax.devices()``, every host's devices).

    >>> import funcgrad
    >>> mesh = funcgrad.parallel.make_mesh()
    >>> dict(mesh.shape) == {"data": len(jax.devices()), "model": 1}
    True
    """
    devs = list(jax.devices() if devices is None else devices)
    if model < 1 or len(devs) % model:
        raise ValueError(f"make_mesh: model={model} does not divide the {len(devs)} devices")
    if data is None:
        data = len(devs) // model
    if data < 1 or data * model > len(devs):
        raise ValueError(f"make_mesh: data={data} x model={model} needs {data * model} devices, "
                         f"but only {len(devs)} are available (on CPU, simulate more with "
                         f"XLA_FLAGS=--xla_force_host_platform_device_count=N set before jax starts)")
    grid = np.array(devs[:data * model], dtype=object).reshape(data, model)
    # Auto axes: shardings are propagated by XLA's SPMD partitioner (not sharding-in-types)
    return Mesh(grid, ("data", "model"), axis_types=(AxisType.Auto, AxisType.Auto))


def _axis_size(mesh: Mesh, axis) -> int:
    if axis is None:
        return 1
    names = axis if isinstance(axis, tuple) else (axis,)
    n = 1
    for a in names:
        if a not in mesh.shape:
            raise ValueError(f"mesh has no axis {a!r} (axes: {tuple(mesh.shape)})")
        n *= mesh.shape[a]
    return n


def _check_spec(spec: PartitionSpec, shape: tuple, mesh: Mesh, what: str) -> None:
    if len(spec) > len(shape):
        raise ValueError(f"{what}: PartitionSpec {spec} has {len(spec)} entries for a "
                         f"{len(shape)}-d tensor of shape {tuple(shape)}")
    for d, axis in enumerate(spec):
        n = _axis_size(mesh, axis)
        if shape[d] % n:
            raise ValueError(f"{what}: dimension {d} of size {shape[d]} is not divisible by "
                             f"mesh axis {axis!r} of size {n} (PartitionSpec {spec})")


# ---- the batch ------------------------------------------------------------------------------------
def batch_sharding(mesh: Mesh, batch_dim: int = 0, ndim: int | None = None,
                   axis: str = "data") -> NamedSharding:
    """The sharding that splits dimension ``batch_dim`` over mesh axis ``axis``."""
    return NamedSharding(mesh, P(*([None] * batch_dim), axis))


def _place_batch(x, mesh: Mesh, axis: str, batch_dim: int):
    if isinstance(x, Tensor):
        if x._requires_grad:
            raise ValueError("shard_batch: a batch tensor that requires grad cannot be moved "
                             "across devices without leaving its graph; detach() it first")
        v = x._value
    elif isinstance(x, (jax.Array, np.ndarray)):
        v = x
    else:
        return x
    n = _axis_size(mesh, axis)
    if v.ndim <= batch_dim:
        raise ValueError(f"shard_batch: a {v.ndim}-d input has no batch dimension {batch_dim}")
    size = v.shape[batch_dim]
    if size % n:
        raise ValueError(
            f"shard_batch: batch size {size} (dimension {batch_dim} of an input of shape "
            f"{tuple(v.shape)}) is not divisible by the {axis!r} mesh axis of size {n}; use a "
            f"global batch size that is a multiple of {n} (e.g. DataLoader(..., drop_last=True))")
    sh = batch_sharding(mesh, batch_dim, axis=axis)
    if jax.process_count() > 1:  # each host holds its slice of the global batch
        out = jax.make_array_from_process_local_data(sh, np.asarray(v))
    else:
        out = jax.device_put(v, sh)
    return Tensor._wrap(out) if isinstance(x, Tensor) else out


def shard_batch(batch: Any, mesh: Mesh, *, axis: str = "data", batch_dim: int = 0) -> Any:
    """Place a batch (a tensor, or any container of tensors/arrays) split along ``axis``.

    Raises:
        ValueError: the batch size is not divisible by the size of the mesh axis.

    >>> import funcgrad
    >>> mesh = funcgrad.parallel.make_mesh()
    >>> x, y = funcgrad.parallel.shard_batch((funcgrad.ones(8, 3), funcgrad.zeros(8)), mesh)
    >>> x.shape, x._value.sharding.spec
    (funcgrad.Size([8, 3]), P('data',))
    """
    return jax.tree.map(lambda x: _place_batch(x, mesh, axis, batch_dim), batch,
                        is_leaf=lambda x: isinstance(x, Tensor))


class shard_loader:  # noqa: N801 (a function-like wrapper, as DataLoader wrappers are)
    """Iterate a loader, placing each batch on the mesh with :func:`shard_batch`.

    ``prefetch`` batches are placed ahead of the one returned: ``device_put`` is asynchronous,
    so their host-to-device copies overlap the running step.

    >>> import funcgrad
    >>> from funcgrad.utils.data import DataLoader, TensorDataset
    >>> ds = TensorDataset(funcgrad.arange(16.0).reshape(8, 2))
    >>> mesh = funcgrad.parallel.make_mesh()
    >>> [b.shape for (b,) in funcgrad.parallel.shard_loader(DataLoader(ds, batch_size=4), mesh)]
    [funcgrad.Size([4, 2]), funcgrad.Size([4, 2])]
    """

    def __init__(self, loader: Iterable, mesh: Mesh, *, axis: str = "data", batch_dim: int = 0,
                 prefetch: int = 2):
        self.loader, self.mesh, self.axis, self.batch_dim = loader, mesh, axis, batch_dim
        self.prefetch = max(0, int(prefetch))

    def __len__(self) -> int:
        return len(self.loader)

    def __iter__(self):
        q: collections.deque = collections.deque()
        it = iter(self.loader)
        for b in it:
            q.append(shard_batch(b, self.mesh, axis=self.axis, batch_dim=self.batch_dim))
            if len(q) > self.prefetch:
                yield q.popleft()
        while q:
            yield q.popleft()


# ---- parameters and optimizer state ------------------------------------------------------------
def fsdp(axis: str = "model", min_size: int = 1024) -> Callable[[tuple], PartitionSpec]:
    """A rule value for FSDP/ZeRO-style sharding: split a tensor's largest divisible dimension.

    Use as ``rules=[(".*", fsdp("model"))]``; tensors smaller than ``min_size`` elements, or
    with no dimension divisible by the axis size, stay replicated.
    """
    def spec(shape: tuple, mesh: Mesh) -> PartitionSpec:
        n = _axis_size(mesh, axis)
        if int(np.prod(shape, dtype=np.int64)) < min_size or n == 1:
            return P()
        dims = sorted(range(len(shape)), key=lambda d: -shape[d])
        for d in dims:
            if shape[d] % n == 0:
                return P(*([None] * d), axis)
        return P()
    spec.__name__ = f"fsdp({axis!r})"
    return spec


def _resolve(name: str, shape: tuple, rules: Rules | None, mesh: Mesh) -> PartitionSpec:
    for pattern, spec in (rules.items() if isinstance(rules, dict) else rules or ()):
        if re.search(pattern, name):
            s = spec(tuple(shape), mesh) if callable(spec) else spec
            if not isinstance(s, PartitionSpec):
                s = P(*s)
            _check_spec(s, shape, mesh, f"rule {pattern!r} for {name!r}")
            return s
    return P()


def param_specs(module, mesh: Mesh, rules: Rules | None = None) -> dict[str, PartitionSpec]:
    """The ``PartitionSpec`` each parameter/buffer of ``module`` gets: first matching rule wins.

    Rules are ``(regex, spec)`` pairs (or a dict) matched with ``re.search`` against the names of
    ``module.named_parameters()``/``named_buffers()``; ``spec`` is a ``PartitionSpec`` or a
    callable ``(shape, mesh) -> PartitionSpec`` such as :func:`fsdp`. Unmatched: replicated.
    """
    out = {}
    for name, t in list(module.named_parameters()) + list(module.named_buffers()):
        out[name] = _resolve(name, tuple(t.shape), rules, mesh)
    return out


def _place(t: Tensor, sharding) -> None:
    """Move ``t``'s storage onto ``sharding`` in place (no version bump: it is the same value)."""
    if t._viewinfo is not None:
        return
    t._cell.value = jax.device_put(t._cell.value, sharding)
    g = t._grad
    if g is not None and g._viewinfo is None and tuple(g.shape) == tuple(t.shape):
        g._cell.value = jax.device_put(g._cell.value, sharding)


def shard_module(module, mesh: Mesh, rules: Rules | None = None):
    """Place ``module``'s parameters and buffers on ``mesh`` (replicated unless a rule matches).

    With no rules this is data parallelism (DDP): every device holds the whole model and a
    compiled step on a batch from :func:`shard_batch` all-reduces the gradients. Rules shard
    matching tensors (tensor/FSDP-style parallelism). Returns ``module``.

    >>> import funcgrad
    >>> from funcgrad import nn
    >>> mesh = funcgrad.parallel.make_mesh()
    >>> lin = funcgrad.parallel.shard_module(nn.Linear(4, 2), mesh)
    >>> lin.weight._value.sharding.spec
    P()
    """
    specs = param_specs(module, mesh, rules)
    named = dict(module.named_parameters())
    named.update(dict(module.named_buffers()))
    for name, spec in specs.items():
        _place(named[name], NamedSharding(mesh, spec))
    return module


def shard_optimizer(optimizer, mesh: Mesh | None = None):
    """Give each optimizer state tensor its parameter's sharding (scalars: replicated).

    Needed only for state created *eagerly* before the parameters were placed or loaded from a
    checkpoint: state created inside a compiled step inherits the parameter sharding.
    """
    for p, st in optimizer.state.items():
        if not isinstance(p, Tensor):
            continue
        psh = getattr(p._value, "sharding", None)
        m = mesh or getattr(psh, "mesh", None)
        if m is None:
            continue
        for v in st.values():
            if isinstance(v, Tensor):
                same = tuple(v.shape) == tuple(p.shape) and isinstance(psh, NamedSharding)
                _place(v, psh if same else NamedSharding(m, P()))
    return optimizer


# ---- checkpoints --------------------------------------------------------------------------------
def _gather_one(x):
    if isinstance(x, Tensor):
        v = x._value
        if not isinstance(v, jax.Array) or len(v.sharding.device_set) == 1:
            return x
        t = Tensor._wrap(jax.numpy.asarray(_to_host(v)))
        t._requires_grad = x._requires_grad and x._grad_fn is None
        return t
    if isinstance(x, jax.Array) and len(x.sharding.device_set) > 1:
        return jax.numpy.asarray(_to_host(x))
    return x


def _to_host(v: jax.Array) -> np.ndarray:
    if v.is_fully_addressable:
        return np.asarray(jax.device_get(v))
    from jax.experimental import multihost_utils
    return np.asarray(multihost_utils.process_allgather(v, tiled=True))


def gather(obj: Any) -> Any:
    """Unsharded, single-device copies of the sharded tensors in ``obj`` (for ``funcgrad.save``).

    ``obj`` may be a tensor, a ``state_dict`` (module or optimizer) or any container; other
    values pass through. Across hosts every process must call it (it is a collective).

    >>> import funcgrad
    >>> from funcgrad import nn
    >>> mesh = funcgrad.parallel.make_mesh()
    >>> lin = funcgrad.parallel.shard_module(nn.Linear(2, 2), mesh)
    >>> sd = funcgrad.parallel.gather(lin.state_dict())
    >>> len(sd["weight"]._value.sharding.device_set)
    1
    """
    if isinstance(obj, dict):
        return type(obj)((k, gather(v)) for k, v in obj.items()) if type(obj) is not dict else {
            k: gather(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        out = [gather(v) for v in obj]
        return type(obj)(out) if not hasattr(obj, "_fields") else type(obj)(*out)
    return _gather_one(obj)


# ---- inspection -----------------------------------------------------------------------------------
def compiled_text(step, *args, **kwargs) -> str:
    """The optimized HLO of the program ``step`` (a :func:`funcgrad.jit` step) runs on ``args``.

    Call the step once with the same arguments first. Useful to check which collectives XLA
    inserted (``"all-reduce" in text``).
    """
    from . import _jit
    if not isinstance(step, _jit.CompiledFunction):
        raise TypeError("compiled_text: expected a funcgrad.jit step")
    leaves, tree = _jit._flatten_args(args, kwargs)
    layout = step._layout
    if layout is None or not layout.valid():
        raise RuntimeError("compiled_text: call the step with these arguments first")
    in_tensors = [x for x in leaves if isinstance(x, Tensor) and id(x._cell) not in layout.cell_index]
    key = (layout.key, tree, tuple(map(_jit._leaf_key, leaves)), _autocast_key())  # as CompiledFunction._call
    e = step._lookup(layout, key[1:], in_tensors)
    if e is None:
        raise RuntimeError("compiled_text: no program compiled for these arguments; call the step first")
    # capture the exact arguments the bridge passes (it may prune unread state) without running
    captured: list = []

    class _Stop(Exception):
        pass

    def spy(*a):
        captured.extend(a)
        raise _Stop

    fn = e.fn
    e.fn = spy
    try:
        step._run(e, layout, leaves, in_tensors, layout.hyper_values())
    except _Stop:
        pass
    finally:
        e.fn = fn
    consts = ()
    if isinstance(fn, functools.partial):  # functools.partial(jitted, *consts)
        fn, consts = fn.func, fn.args
    return fn.lower(*consts, *captured).compile().as_text()
