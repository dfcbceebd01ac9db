"""``torch.distributed``-style process helpers over ``jax.distributed`` (multi-host launch).

A JAX program is *one* SPMD program over every device of every host: there is one process
per host (not per device), and collectives are inserted by XLA, not called by hand (see
:mod:`funcgrad.parallel`). So ``rank``/``world_size`` here are the JAX process index/count.

Launch on N hosts — run the same script on each, with its own ``RANK``::

    # host i of N (e.g. from torchrun-style env vars MASTER_ADDR/MASTER_PORT/WORLD_SIZE/RANK)
    import funcgrad.distributed as dist
    dist.init_process_group(init_method="tcp://10.0.0.1:1234", world_size=N, rank=i)
    # ... which calls jax.distributed.initialize(coordinator_address="10.0.0.1:1234",
    #                                            num_processes=N, process_id=i)
    mesh = funcgrad.parallel.make_mesh(data=jax.device_count())  # the global device count

``jax.distributed.initialize`` must run before JAX starts its backend, and ``import funcgrad``
starts it (it creates the default RNG key): so in a multi-host script call it first::

    import jax
    jax.distributed.initialize(coordinator_address="10.0.0.1:1234", num_processes=N,
                               process_id=i)   # or no arguments on TPU pods / SLURM / Open MPI
    import funcgrad, funcgrad.distributed as dist
    dist.is_initialized(), dist.get_rank(), dist.get_world_size()   # True, i, N

``init_process_group`` is for code written against ``torch.distributed``: with ``world_size=1``
and no coordinator it only marks the group initialized; otherwise it calls
``jax.distributed.initialize`` and explains the ordering if the backend is already running.

>>> import funcgrad.distributed as dist
>>> dist.is_available(), dist.get_rank(), dist.get_world_size()
(True, 0, 1)
"""

from __future__ import annotations

import os
from datetime import timedelta

import jax

__all__ = ["is_available", "is_initialized", "init_process_group", "get_rank", "get_world_size",
           "get_backend", "barrier", "destroy_process_group"]

_state = {"initialized": False, "jax_initialized": False}


def is_available() -> bool:
    """True: multi-process support comes with JAX."""
    return True


def is_initialized() -> bool:
    """Whether :func:`init_process_group` (or ``jax.distributed.initialize``) has run."""
    if _state["initialized"]:
        return True
    return jax.distributed.is_initialized()  # initialize() called directly by the user


def _coordinator(init_method: str | None) -> str | None:
    if init_method:
        if init_method.startswith("tcp://"):
            return init_method[len("tcp://"):]
        if init_method == "env://":
            init_method = None
        else:
            raise ValueError(f"init_process_group: unsupported init_method {init_method!r} "
                             f"(use 'tcp://host:port' or 'env://')")
    addr, port = os.environ.get("MASTER_ADDR"), os.environ.get("MASTER_PORT")
    return f"{addr}:{port}" if addr and port else None


def init_process_group(backend: str | None = None, init_method: str | None = None,
                       timeout: timedelta | None = None, world_size: int = -1, rank: int = -1,
                       store=None, group_name: str = "", pg_options=None, *,
                       coordinator_address: str | None = None, **kwargs) -> None:
    """Join the multi-host job: ``jax.distributed.initialize(coordinator, world_size, rank)``.

    ``backend`` (``"nccl"``, ``"gloo"``…) is accepted and ignored: XLA picks the transport.
    ``world_size``/``rank`` default to the ``WORLD_SIZE``/``RANK`` environment variables and
    the coordinator to ``init_method="tcp://host:port"`` or ``MASTER_ADDR:MASTER_PORT``.

    Raises:
        RuntimeError: called twice (PyTorch's message).
    """
    del backend, store, group_name, pg_options
    if is_initialized():
        raise RuntimeError("trying to initialize the default process group twice!")
    if world_size == -1 and "WORLD_SIZE" in os.environ:
        world_size = int(os.environ["WORLD_SIZE"])
    if rank == -1 and "RANK" in os.environ:
        rank = int(os.environ["RANK"])
    addr = coordinator_address or _coordinator(init_method)
    if world_size == 1 and addr is None:
        _state["initialized"] = True  # a single process: nothing to connect
        return
    init_kw = dict(kwargs)
    if timeout is not None:
        init_kw["initialization_timeout"] = int(timeout.total_seconds())
    try:
        jax.distributed.initialize(coordinator_address=addr,
                                   num_processes=None if world_size == -1 else world_size,
                                   process_id=None if rank == -1 else rank, **init_kw)
    except RuntimeError as e:
        # JAX refuses once its backend runs ("must be called before any JAX calls that might
        # initialise the XLA backend"); say why that is always so after `import funcgrad`
        if "must be called before" not in str(e):
            raise
        raise RuntimeError(
            "init_process_group: JAX's backend is already initialized (importing funcgrad creates "
            "the default RNG key), and jax.distributed.initialize must run before that. In a "
            "multi-host script call jax.distributed.initialize(coordinator_address=..., "
            "num_processes=..., process_id=...) before `import funcgrad`; funcgrad.distributed "
            "then reports the job (is_initialized(), get_rank(), get_world_size()).") from e
    _state["initialized"] = _state["jax_initialized"] = True


def _check_init(fn: str) -> None:
    if not is_initialized():
        raise ValueError("Default process group has not been initialized, please make sure to "
                         "call init_process_group.")


def get_rank(group=None) -> int:
    """This process's index (``jax.process_index()``); 0 when running alone."""
    return jax.process_index()


def get_world_size(group=None) -> int:
    """The number of processes (``jax.process_count()``); 1 when running alone."""
    return jax.process_count()


def get_backend(group=None) -> str:
    """The platform XLA runs on (``"cpu"``, ``"gpu"``, ``"tpu"``)."""
    return jax.default_backend()


def barrier(group=None, async_op: bool = False, device_ids=None) -> None:
    """Block until every process reaches this point (``sync_global_devices``)."""
    if jax.process_count() > 1:
        from jax.experimental import multihost_utils
        multihost_utils.sync_global_devices("funcgrad.distributed.barrier")


def destroy_process_group(group=None) -> None:
    """Leave the job (``jax.distributed.shutdown()`` if :func:`init_process_group` connected)."""
    _check_init("destroy_process_group")
    if _state["jax_initialized"] or is_initialized() and not _state["initialized"]:
        jax.distributed.shutdown()
    _state["initialized"] = _state["jax_initialized"] = False
