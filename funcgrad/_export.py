"""``funcgrad.export``: a model's inference forward as serialized StableHLO (the TorchScript story).

(Module named ``_export`` so that importing it can never shadow the ``funcgrad.export`` function.)

Design note. ``export(model, example_inputs)`` builds a pure function ``(weights, *inputs) ->
outputs`` (``funcgrad.func.functional_call`` with JAX arrays: the module's parameters and
buffers are swapped for tracers, nothing is recorded for autograd) and hands it to JAX's own
serialization, ``jax.export.export(jax.jit(pure_fn))``: the program is StableHLO, versioned
and backward compatible by JAX's guarantees, runnable without Python source for the model.
The module is put in ``eval()`` mode for the trace (every submodule's ``training`` flag is
restored afterwards) and runs under ``no_grad``. The weights are *arguments* of the program,
kept beside it (not folded in as constants), so the program is small and the weights are
stored in funcgrad's safe checkpoint format. With ``dynamic_batch`` the leading dimension of
the inputs is the symbolic dimension ``b`` (``jax.export.symbolic_shape``), so one program
serves every batch size. The program is exported for ``("cpu", "cuda")`` when JAX can lower
it for both (one artifact runs on either), else for the current backend only.

File format (version 1): a ZIP archive (stored) holding ``program.jaxexport`` (the bytes of
``jax.export.Exported.serialize()``; JAX needs the ``flatbuffers`` package for this),
``weights.ckpt`` (a ``funcgrad.save`` checkpoint of ``{name: Tensor}``) and, written last,
``funcgrad_export.json`` (format, version, funcgrad and JAX versions, platforms, the input
and output shapes/dtypes, the weight names). Nothing is unpickled on load. Saving to a path
is atomic (temporary file, ``fsync``, rename).
"""

from __future__ import annotations

import collections
import io
import json
import os
import re
import zipfile
from typing import IO, Any, Callable, Sequence, Union

import jax
import jax.numpy as jnp
import numpy as np

from . import _dtype, _storage
from ._errors import TracedValueError
from ._tensor import Tensor
from ._version import __version__
from .autograd.grad_mode import no_grad
from .func import from_jax, functional_call, to_jax
from .serialization import atomic_write, load, save

__all__ = ["export", "load_exported", "save_exported", "ExportedProgram", "ExportError"]

FORMAT = "funcgrad.exported_program"
VERSION = 1
MANIFEST = "funcgrad_export.json"
PROGRAM = "program.jaxexport"
WEIGHTS = "weights.ckpt"
_BATCH = "b"

FileLike = Union[str, os.PathLike, IO[bytes]]
_is_t = lambda x: isinstance(x, Tensor)  # noqa: E731
_OP_RE = re.compile(r"(?<![#!\w.])stablehlo\.([a-z_0-9]+)")


class ExportError(RuntimeError):
    """The model cannot be exported as one static program (the message names the cause)."""


# ---- export ------------------------------------------------------------------------------------
def _data_dependent_errors() -> tuple:
    errs = [TracedValueError, jax.errors.ConcretizationTypeError,
            jax.errors.TracerBoolConversionError, jax.errors.TracerIntegerConversionError,
            jax.errors.TracerArrayConversionError, jax.errors.NonConcreteBooleanIndexError]
    return tuple(errs)


def _is_shape_poly_error(e: BaseException) -> bool:
    return any(c.__name__ == "InconclusiveDimensionOperation" for c in type(e).__mro__)


def _explain(e: BaseException, what: str) -> ExportError | None:
    """A helpful ExportError for a failure caused by the model's code, or None."""
    first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
    if isinstance(e, _data_dependent_errors()):
        where = ""
        m = re.search(r"\bat\n  (.+)", str(e))
        if m:
            where = f" at\n  {m.group(1)}\n"
        return ExportError(
            f"funcgrad.export: cannot export {what}: it needs a concrete value from a tensor "
            f"({first if not isinstance(e, TracedValueError) else first.split(' needs ')[0]})"
            f"{where or '. '}An exported program is one static graph, so data-dependent shapes "
            "(boolean-mask indexing, nonzero, unique, masked_select), Python control flow on "
            "tensor values (`if tensor:`) and conversions (.item(), .tolist(), int(tensor)) "
            "cannot be exported. Fix: compute with tensor ops (funcgrad.where, masked_fill, "
            "multiplying by a mask) or move that code out of the exported forward.")
    if _is_shape_poly_error(e):
        return ExportError(
            f"funcgrad.export: cannot export {what} with a symbolic batch dimension: the forward "
            f"uses the batch size as a concrete number ({first}). Typical cause: "
            "x.view(x.size(0), -1) or x.flatten(1); write x.reshape(-1, features) instead, or "
            "export with dynamic_batch=False (the program then accepts only the example's "
            "batch size).")
    return None


def _spec_shape(shape, batch_dim) -> tuple:
    return (batch_dim,) + tuple(shape[1:]) if batch_dim is not None and len(shape) else tuple(shape)


def _describe_aval(shape, dtype) -> dict:
    return {"shape": [d if isinstance(d, int) else str(d) for d in shape],
            "dtype": _dtype.from_np(np.dtype(dtype)).name}


def _leaf_names(tree_obj, prefix: str) -> list[str]:
    paths = jax.tree_util.tree_flatten_with_path(tree_obj, is_leaf=_is_t)[0]
    return [prefix + jax.tree_util.keystr(p) for p, _ in paths]


def _module_modes(model) -> list:
    mods = getattr(model, "modules", None)
    return [(m, m.training) for m in mods()] if callable(mods) else []


def export(model_or_fn: Callable, example_inputs: Any, *, dynamic_batch: bool | Sequence[bool] = True,
           platforms: Sequence[str] | None = None) -> ExportedProgram:
    """Export a model's inference forward as a serialized StableHLO program (``jax.export``).

    The module is traced in ``eval()`` mode (its submodules' ``training`` flags are restored
    afterwards) under ``no_grad``; its parameters and buffers become the program's weights,
    kept beside the program. The result runs without the model's Python class: save it with
    ``.save(path)`` and load it anywhere with :func:`load_exported` (also
    ``funcgrad.export.load``).

    Args:
        model_or_fn: an ``nn.Module`` or a function of Tensors (tensors it captures are baked
            into the program as constants).
        example_inputs: a Tensor / array, or a tuple of positional arguments (nested
            tuples/lists/dicts of Tensors are fine); only their shapes and dtypes are used.
        dynamic_batch: make the leading dimension of the inputs the symbolic size ``b`` (one
            program for every batch size). A sequence of bools chooses per positional input.
        platforms: the platforms to export for; default ``("cpu", "cuda")`` when JAX can
            lower the program for both, else the current backend.

    Returns:
        An :class:`ExportedProgram`.

    Raises:
        ExportError: the forward cannot be one static program (data-dependent shapes such as
            boolean-mask indexing, ``.item()``, Python ``if`` on a tensor, or a batch size used
            as a number with ``dynamic_batch``); the message names the cause and the fix.

    >>> import funcgrad
    >>> _ = funcgrad.manual_seed(0)
    >>> lin = funcgrad.nn.Linear(3, 2)
    >>> ep = funcgrad.export(lin, funcgrad.ones(4, 3))
    >>> ep(funcgrad.ones(5, 3)).shape
    funcgrad.Size([5, 2])
    >>> ep  # doctest: +ELLIPSIS
    ExportedProgram(Linear)
      inputs:    args[0]: float32[b, 3]
      outputs:   output: float32[b, 2]
      weights:   2 tensors, 8 elements
      platforms: ...
      ops:       ... StableHLO ops (...)
    """
    args = example_inputs if isinstance(example_inputs, tuple) else (example_inputs,)
    is_module = callable(getattr(model_or_fn, "named_parameters", None))
    what = type(model_or_fn).__name__ if is_module else getattr(model_or_fn, "__qualname__",
                                                                 repr(model_or_fn))
    flags = [dynamic_batch] * len(args) if isinstance(dynamic_batch, bool) else list(dynamic_batch)
    if len(flags) != len(args):
        raise ValueError(f"dynamic_batch has {len(flags)} entries for {len(args)} inputs")
    batch = jax.export.symbolic_shape(_BATCH)[0] if any(flags) else None

    def spec(x, flag):
        v = x._value if isinstance(x, Tensor) else x
        if not hasattr(v, "shape") or not hasattr(v, "dtype"):
            raise TypeError(f"funcgrad.export: example inputs must be Tensors or arrays, got "
                            f"{type(x).__name__}")
        return jax.ShapeDtypeStruct(_spec_shape(v.shape, batch if flag else None), v.dtype)

    arg_specs = tuple(jax.tree.map(lambda x, f=f: spec(x, f), a, is_leaf=_is_t)
                      for a, f in zip(args, flags))
    if is_module:
        weights = {k: v._value for k, v in model_or_fn.named_parameters()}
        weights.update({k: v._value for k, v in model_or_fn.named_buffers()})
    else:
        weights = {}
    w_specs = {k: jax.ShapeDtypeStruct(v.shape, v.dtype) for k, v in weights.items()}
    pure = _pure_fn(model_or_fn, is_module)

    modes = _module_modes(model_or_fn) if is_module else []
    try:
        if is_module:
            model_or_fn.eval()
        with no_grad():
            exported = _export(pure, w_specs, arg_specs, platforms, what)
    finally:
        for m, mode in modes:
            m.training = mode
    meta = {"model": what, "input_names": _leaf_names(args, "args"),
            "dynamic_batch": [bool(f) for f in flags]}
    return ExportedProgram(exported, weights, meta)


def _pure_fn(model_or_fn, is_module: bool) -> Callable:

    if is_module:
        def pure(w, *xs):
            return functional_call(model_or_fn, w, xs)
        return pure

    def pure_plain(w, *xs):
        # a forward writing a captured tensor (BatchNorm stats) must leave no tracer behind:
        # the write is kept in this thread's binding frame, dropped on leaving
        with _storage.Frame(mark_new=False):
            return to_jax(model_or_fn(*from_jax(xs)))
    return pure_plain


def _export(pure, w_specs, arg_specs, platforms, what):
    ex = jax.export.export
    tries = [tuple(platforms)] if platforms is not None else []
    if not tries:
        here = jax.default_backend()
        here = "cuda" if here == "gpu" else here
        tries = [(here,) + tuple(p for p in ("cpu", "cuda") if p != here), (here,)]
    err = None
    for plats in dict.fromkeys(tries):
        try:
            return ex(jax.jit(pure), platforms=plats)(w_specs, *arg_specs)
        except Exception as e:  # noqa: BLE001 (classified below)
            helpful = _explain(e, what)
            if helpful is not None:
                raise helpful from e
            err = e  # e.g. no lowering for one of the platforms: try fewer
    raise ExportError(f"funcgrad.export: cannot export {what}: {type(err).__name__}: {err}") from err


# ---- the program --------------------------------------------------------------------------------
def _fmt(desc: dict) -> str:
    return f"{desc['dtype']}[{', '.join(map(str, desc['shape']))}]"


class ExportedProgram:
    """A model's forward as a serialized StableHLO program plus its weights.

    Call it like the model: on funcgrad Tensors it returns Tensors (leaves without
    ``grad_fn``), on NumPy arrays NumPy arrays, on JAX arrays JAX arrays (the kind of the
    first input decides). It runs on the CPU or a GPU, whichever holds the inputs /
    JAX's default device, among the exported ``platforms``.

    Attributes:
        exported: the ``jax.export.Exported`` (``.mlir_module()``, ``.in_avals``…).
        weights: ``{name: jax.Array}``, the program's first argument.
        inputs, outputs: ``[{"shape": [...], "dtype": name}]``; ``"b"`` is the symbolic batch.
    """

    def __init__(self, exported, weights: dict, meta: dict):
        self.exported = exported
        self.weights = dict(weights)
        n_w = len(self.weights)
        self.inputs = [_describe_aval(a.shape, a.dtype) for a in exported.in_avals[n_w:]]
        self.outputs = [_describe_aval(a.shape, a.dtype) for a in exported.out_avals]
        self.meta = dict(meta)
        names = self.meta.get("input_names") or []
        self.input_names = names if len(names) == len(self.inputs) else \
            [f"args[{i}]" for i in range(len(self.inputs))]
        out_tree = exported.out_tree.unflatten(list(range(len(self.outputs))))
        self.output_names = (["output"] if len(self.outputs) == 1 and out_tree == 0
                             else _leaf_names(out_tree, "output"))
        self._call = jax.jit(exported.call)

    @property
    def platforms(self) -> tuple:
        return tuple(self.exported.platforms)

    def mlir_module(self) -> str:
        """The program as StableHLO text."""
        return self.exported.mlir_module()

    def op_counts(self) -> dict[str, int]:
        """How many times each StableHLO op occurs in the program (most frequent first)."""
        return dict(collections.Counter(_OP_RE.findall(self.mlir_module())).most_common())

    @property
    def num_ops(self) -> int:
        return sum(self.op_counts().values())

    def serialize(self) -> bytes:
        """The program's bytes (``jax.export`` serialization; needs ``flatbuffers``)."""
        try:
            return bytes(self.exported.serialize())
        except ImportError as e:
            raise ImportError(f"saving an exported program needs the 'flatbuffers' package "
                              f"(pip install flatbuffers): {e}") from e

    def state_dict(self) -> dict:
        """The weights as ``{name: Tensor}``."""
        return {k: Tensor._wrap(v) for k, v in self.weights.items()}

    def save(self, f: FileLike) -> None:
        """Save program, weights and manifest to one file (see :func:`save_exported`)."""
        save_exported(self, f)

    # -- calling -------------------------------------------------------------------------------
    def _check(self, leaves) -> None:
        if len(leaves) != len(self.inputs):
            raise TypeError(f"exported program takes {len(self.inputs)} input tensor(s), got "
                            f"{len(leaves)}")
        batch = None
        for name, x, want in zip(self.input_names, leaves, self.inputs):
            shape, dt = tuple(x.shape), np.dtype(x.dtype)
            try:
                got = _dtype.from_np(dt).name
            except TypeError:
                got = str(dt)
            ok = len(shape) == len(want["shape"])
            for s, w in zip(shape, want["shape"]):
                if isinstance(w, str):
                    batch = s if batch is None else batch
                    ok &= s == batch and s >= 1
                else:
                    ok &= s == w
            if not ok or got != want["dtype"]:
                raise (TypeError if ok else ValueError)(
                    f"exported program input {name} expects {_fmt(want)}, got "
                    f"{got}[{', '.join(map(str, shape))}]")

    def __call__(self, *args):
        leaves = jax.tree.leaves(args, is_leaf=_is_t)
        kind = "jax"
        if leaves and isinstance(leaves[0], Tensor):
            kind = "tensor"
        elif leaves and isinstance(leaves[0], (np.ndarray, np.generic)):
            kind = "numpy"
        arrays = jax.tree.map(lambda x: x._value if isinstance(x, Tensor) else jnp.asarray(x),
                              args, is_leaf=_is_t)
        self._check(jax.tree.leaves(arrays))
        out = self._call(self.weights, *arrays)
        if kind == "tensor":
            return jax.tree.map(Tensor._wrap, out)
        if kind == "numpy":
            return jax.tree.map(np.asarray, out)
        return out

    def __repr__(self) -> str:
        n_el = sum(int(np.prod(v.shape)) for v in self.weights.values())
        counts = self.op_counts()
        top = ", ".join(f"{k} {v}" for k, v in list(counts.items())[:4])
        more = ", …" if len(counts) > 4 else ""
        lines = [f"ExportedProgram({self.meta.get('model', '?')})",
                 "  inputs:    " + ", ".join(f"{n}: {_fmt(d)}" for n, d in
                                             zip(self.input_names, self.inputs)),
                 "  outputs:   " + ", ".join(f"{n}: {_fmt(d)}" for n, d in
                                             zip(self.output_names, self.outputs)),
                 f"  weights:   {len(self.weights)} tensors, {n_el} elements",
                 f"  platforms: {', '.join(self.platforms)}",
                 f"  ops:       {sum(counts.values())} StableHLO ops ({top}{more})"]
        return "\n".join(lines)


# ---- save / load -----------------------------------------------------------------------------------
def save_exported(program: ExportedProgram, f: FileLike) -> None:
    """Write an :class:`ExportedProgram` to a path (atomically) or a binary file object.

    >>> import io, funcgrad
    >>> ep = funcgrad.export(funcgrad.nn.Linear(2, 2), funcgrad.ones(1, 2))
    >>> buf = io.BytesIO(); ep.save(buf); _ = buf.seek(0)
    >>> funcgrad.load_exported(buf)(funcgrad.ones(3, 2)).shape
    funcgrad.Size([3, 2])
    """
    program_bytes = program.serialize()
    wbuf = io.BytesIO()
    save(program.state_dict(), wbuf)
    manifest = {"format": FORMAT, "version": VERSION, "funcgrad_version": __version__,
                "jax_version": jax.__version__, "platforms": list(program.platforms),
                "inputs": program.inputs, "outputs": program.outputs,
                "input_names": program.input_names, "output_names": program.output_names,
                "weights": list(program.weights), "model": program.meta.get("model"),
                "dynamic_batch": program.meta.get("dynamic_batch")}

    def write(fh):
        with zipfile.ZipFile(fh, "w", compression=zipfile.ZIP_STORED, allowZip64=True) as zf:
            zf.writestr(PROGRAM, program_bytes)
            zf.writestr(WEIGHTS, wbuf.getvalue())
            # the manifest last: a file cut short lacks it (and the zip directory) and is refused
            zf.writestr(MANIFEST, json.dumps(manifest, indent=1))

    if not isinstance(f, (str, os.PathLike)):
        write(f)
        return
    atomic_write(os.fspath(f), write)


class _Corrupt(Exception):
    pass


def load_exported(f: FileLike) -> ExportedProgram:
    """Load a program saved by :meth:`ExportedProgram.save` (no model class needed, no pickle).

    Raises:
        RuntimeError: ``f`` is not a funcgrad exported program or is corrupted (truncated,
            bad checksum, inconsistent manifest).
    """
    desc = repr(os.fspath(f)) if isinstance(f, (str, os.PathLike)) else "the file object"
    try:
        if isinstance(f, (str, os.PathLike)):
            with open(os.fspath(f), "rb") as fh:
                return _load(fh)
        if not (hasattr(f, "seekable") and f.seekable()):
            f = io.BytesIO(f.read())
        return _load(f)
    except _Corrupt as e:
        raise RuntimeError(f"{desc} is not a funcgrad exported program or is corrupted: {e}") from None


def _read(zf, name: str) -> bytes:
    try:
        return zf.read(name)  # checks the CRC
    except KeyError:
        raise _Corrupt(f"the archive has no {name}") from None
    except (zipfile.BadZipFile, OSError, EOFError, ValueError) as e:
        raise _Corrupt(f"cannot read {name} ({e})") from None


def _load(fh) -> ExportedProgram:
    try:
        zf = zipfile.ZipFile(fh, "r")
    except (zipfile.BadZipFile, OSError, ValueError, EOFError) as e:
        raise _Corrupt(f"not a valid archive ({e}); the file may be truncated") from None
    with zf:
        if MANIFEST not in zf.namelist():
            raise _Corrupt(f"no {MANIFEST} manifest in the archive")
        try:
            manifest = json.loads(_read(zf, MANIFEST).decode("utf-8"))
        except (UnicodeDecodeError, ValueError) as e:
            raise _Corrupt(f"unreadable manifest ({e})") from None
        if not isinstance(manifest, dict) or manifest.get("format") != FORMAT:
            raise _Corrupt("the manifest does not declare the funcgrad exported-program format")
        if manifest.get("version") != VERSION:
            raise _Corrupt(f"unsupported exported-program version {manifest.get('version')!r} "
                           f"(this funcgrad reads version {VERSION})")
        program_bytes = _read(zf, PROGRAM)
        weight_bytes = _read(zf, WEIGHTS)
    try:
        exported = jax.export.deserialize(bytearray(program_bytes))
    except ImportError as e:
        raise ImportError(f"loading an exported program needs the 'flatbuffers' package "
                          f"(pip install flatbuffers): {e}") from e
    except Exception as e:  # noqa: BLE001 (flatbuffers raises assorted errors on bad bytes)
        raise _Corrupt(f"the program cannot be deserialized ({type(e).__name__}: {e})") from None
    try:
        tensors = load(io.BytesIO(weight_bytes), map_location=lambda t, loc: t)
    except RuntimeError as e:
        raise _Corrupt(f"bad weights ({e})") from None
    names = manifest.get("weights")
    if not isinstance(tensors, dict) or list(tensors) != names:
        raise _Corrupt("the weights do not match the manifest")
    weights = {k: v._value for k, v in tensors.items()}
    w_avals = exported.in_avals[:len(weights)]
    if len(exported.in_avals) - len(weights) != len(manifest.get("inputs") or ()) or any(
            tuple(a.shape) != tuple(w.shape) or a.dtype != w.dtype
            for a, w in zip(w_avals, jax.tree.leaves(weights))):
        raise _Corrupt("the weights do not match the program's signature")
    meta = {"model": manifest.get("model"), "input_names": manifest.get("input_names"),
            "dynamic_batch": manifest.get("dynamic_batch")}
    return ExportedProgram(exported, weights, meta)


# ``funcgrad.export.load(path)`` / ``funcgrad.export.save(ep, path)``, as ``torch.export`` spells them
export.load = load_exported  # type: ignore[attr-defined]
export.save = save_exported  # type: ignore[attr-defined]
export.ExportedProgram = ExportedProgram  # type: ignore[attr-defined]
export.ExportError = ExportError  # type: ignore[attr-defined]
