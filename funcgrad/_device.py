"""Devices: PyTorch's ``device`` names mapped onto JAX devices ('cuda' = JAX's GPU platform)."""

from __future__ import annotations

import functools

import jax

from . import _meta


# PyTorch's device types, in the order its error lists them (funcgrad runs on cpu and cuda, and
# JAX's tpu; a device of another type can be named, not used: jax_device refuses it)
_TYPES = ("cpu", "cuda", "ipu", "xpu", "mkldnn", "opengl", "opencl", "ideep", "hip", "ve", "fpga", "maia",
          "xla", "lazy", "vulkan", "mps", "meta", "hpu", "mtia", "privateuseone")


class device:
    """``funcgrad.device('cpu')``, ``device('cuda', 0)``, ``device('cuda:1')``."""
    __module__ = "funcgrad"  # (PyTorch's public path: type(x) prints funcgrad.device)

    __slots__ = ("type", "index")

    def __init__(self, type: "str | device", index: int | None = None):
        if isinstance(type, device):
            type, index = type.type, type.index if index is None else index
        if ":" in type:
            type, idx = type.split(":")
            index = int(idx)
        if type not in _TYPES and type != "tpu":
            raise RuntimeError(f"Expected one of {', '.join(_TYPES)} device type at start of device "
                               f"string: {type}")
        self.type = type
        self.index = index

    def __repr__(self) -> str:
        return f"device(type='{self.type}')" if self.index is None else \
            f"device(type='{self.type}', index={self.index})"

    def __str__(self) -> str:
        return self.type if self.index is None else f"{self.type}:{self.index}"

    def __eq__(self, other) -> bool:
        if isinstance(other, str):
            other = device(other)
        return isinstance(other, device) and (self.type, self.index) == (other.type, other.index)

    def __hash__(self) -> int:
        return hash((self.type, self.index))


_PLATFORM = {"cpu": "cpu", "cuda": "gpu", "tpu": "tpu"}


@functools.lru_cache(maxsize=None)
def _devices(platform: str):
    try:
        return tuple(jax.devices(platform))
    except RuntimeError:
        return ()


def jax_device(d) -> "jax.Device":
    """The JAX device for a funcgrad device spec; PyTorch-like error if absent."""
    d = device(d) if not isinstance(d, device) else d
    if d.type not in _PLATFORM:
        if d.type == "meta":  # (no JAX device: a meta tensor holds no data, funcgrad/_meta.py)
            return _meta.DEVICE
        raise RuntimeError(f"funcgrad does not support the '{d.type}' device")
    devs = _devices(_PLATFORM[d.type])
    if not devs:
        if d.type == "cuda":
            raise RuntimeError(
                "Found no NVIDIA driver on your system: JAX sees no GPU. Install a CUDA build "
                "of jax (pip install 'jax[cuda12]') on a machine with a GPU, or use device='cpu'.")
        raise RuntimeError(f"JAX sees no {d.type.upper()} device")
    index = d.index or 0
    if index >= len(devs):
        raise RuntimeError(
            f"{d.type} device index {index} is out of range: {len(devs)} device(s) visible")
    return devs[index]


def put(host):
    """A fresh NumPy array (or scalar) as a ``jax.Array`` on the default device, uncompiled.

    ``jnp.asarray`` of a NumPy array stages it through a jitted identity that XLA compiles once
    per shape and dtype (30-100 ms each, the bulk of a model's construction cold); a transfer
    compiles nothing and gives the same array. On CPU the result may share ``host``'s memory,
    so ``host`` must be the caller's own, never written again (a copy, or a kernel's output).

    >>> import numpy as np
    >>> put(np.arange(3)).tolist()
    [0, 1, 2]
    """
    return jax.device_put(host)


def put_like(values: list, like) -> "list | None":
    """Python scalars as arrays on the one device that holds ``like`` (a concrete
    ``jax.Array``), committed as ``like`` is; None where ``like`` spans several devices.

    An uncommitted array stays uncommitted there (under ``jax.default_device``): a committed
    argument commits a program's outputs, and an array fed back (a parameter, an optimizer's
    state) would then call it with another signature, compiling it again. A float keeps its
    weak type, so a program traced for the Python scalars takes the arrays as they are."""
    sh = like.sharding
    if len(sh.device_set) != 1:
        return None
    if like.committed:
        return jax.device_put(values, sh)
    with jax.default_device(next(iter(sh.device_set))):
        return jax.device_put(values)


# JAX platform -> PyTorch device type
_TYPE = {"cpu": "cpu", "gpu": "cuda", "cuda": "cuda", "rocm": "cuda", "tpu": "tpu"}


def from_platform(platform: str) -> device:
    """The device (index 0 for an accelerator) of a JAX platform name (``"gpu"`` -> ``cuda:0``)."""
    t = _TYPE.get(platform, platform)
    return device("cpu") if t == "cpu" else device(t, 0)


def from_jax(jd) -> device:
    t = _TYPE.get(jd.platform, jd.platform)
    if t == "cpu" or t == "meta":
        return device(t)
    return device(t, jd.id if hasattr(jd, "id") else 0)


def cuda_is_available() -> bool:
    return bool(_devices("gpu"))


def cuda_device_count() -> int:
    return len(_devices("gpu"))


# ---- torch.cuda's queries: JAX's GPU devices, or what PyTorch's CPU build answers --------------
NO_CUDA_MSG = "Torch not compiled with CUDA enabled"


def _gpu(dev):
    """The JAX GPU device ``dev`` names (None: the current one, 0), or PyTorch's AssertionError."""
    gpus = _devices("gpu")
    if not gpus:
        raise AssertionError(NO_CUDA_MSG)
    if dev is None:
        return gpus[0]
    if isinstance(dev, str):
        dev = device(dev)
    i = dev.index if isinstance(dev, device) else int(dev)
    return gpus[i or 0]


def _stat(key: str, dev) -> int:
    """``memory_stats()[key]`` of the GPU (0 without one: PyTorch's CPU build answers 0 too)."""
    if not _devices("gpu"):
        return 0
    stats = _gpu(dev).memory_stats() or {}
    return int(stats.get(key, stats.get("bytes_in_use", 0)))


def cuda_memory_allocated(device=None) -> int:
    """Bytes of GPU memory held by arrays (JAX's ``bytes_in_use``); 0 without a GPU.

    >>> import funcgrad
    >>> funcgrad.cuda.memory_allocated() >= 0
    True
    """
    return _stat("bytes_in_use", device)


def cuda_max_memory_allocated(device=None) -> int:
    peak = _stat("peak_bytes_in_use", device)
    if _PEAK_AT_RESET and _devices("gpu") and _PEAK_AT_RESET.get(id(_gpu(device)), -1) >= peak:
        return _stat("bytes_in_use", device)  # (no new peak since reset_peak_memory_stats)
    return peak


def cuda_memory_reserved(device=None) -> int:
    return _stat("bytes_reserved", device)


def cuda_max_memory_reserved(device=None) -> int:
    return _stat("peak_bytes_reserved", device)


def _no_cuda_c(name: str) -> AttributeError:
    """What PyTorch's CPU build raises for a torch.cuda call that reaches its missing C binding."""
    return AttributeError(f"module 'torch._C' has no attribute '{name}'")


def cuda_reset_peak_memory_stats(device=None) -> None:
    """Without a GPU: PyTorch's CPU build's AttributeError. With one, XLA keeps its own peak,
    which cannot be reset: the peak reported after this is XLA's where it grew since, else the
    memory in use (a lower bound of the peak since the reset)."""
    if not _devices("gpu"):
        raise _no_cuda_c("_cuda_resetPeakMemoryStats")
    _PEAK_AT_RESET[id(_gpu(device))] = _stat("peak_bytes_in_use", device)


_PEAK_AT_RESET: dict = {}


def cuda_reset_accumulated_memory_stats(device=None) -> None:
    """Without a GPU: PyTorch's CPU build's AttributeError; with one, nothing (XLA's counters are
    not resettable)."""
    if not _devices("gpu"):
        raise _no_cuda_c("_cuda_resetAccumulatedMemoryStats")
    _gpu(device)


def cuda_memory_stats(device=None) -> dict:
    """PyTorch's ``torch.cuda.memory_stats`` keys for what XLA's allocator reports (an empty
    OrderedDict without a GPU, as PyTorch's CPU build answers).

    >>> import funcgrad
    >>> funcgrad.cuda.memory_stats() if not funcgrad.cuda.is_available() else {}
    OrderedDict()
    """
    import collections
    if not _devices("gpu"):
        return collections.OrderedDict()
    names = {"allocated_bytes.all.current": "bytes_in_use", "allocated_bytes.all.peak": "peak_bytes_in_use",
             "reserved_bytes.all.current": "bytes_reserved", "reserved_bytes.all.peak": "peak_bytes_reserved",
             "allocation.all.allocated": "num_allocs", "max_split_size": "largest_alloc_size"}
    stats = _gpu(device).memory_stats() or {}
    return collections.OrderedDict(sorted((k, int(stats[v])) for k, v in names.items() if v in stats))


def cuda_empty_cache() -> None:
    """Nothing to do: XLA's allocator keeps its pool (PyTorch's call is a no-op without CUDA too)."""


def cuda_current_device() -> int:
    _gpu(None)
    return 0


def cuda_get_device_name(device=None) -> str:
    return _gpu(device).device_kind


def cuda_is_bf16_supported(including_emulation: bool = True) -> bool:
    return bool(_devices("gpu"))

# doctest collects a module's classes by __module__ (now funcgrad's): list these here
__test__ = {"device": device}
