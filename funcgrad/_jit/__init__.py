"""The jit bridge: an unmodified PyTorch-style step as one XLA program (``funcgrad.jit``).

(Package named ``_jit`` so that importing it can never shadow the ``funcgrad.jit`` function.
Its modules follow the phases: ``common`` (shared counters, input keys),
``discover`` (1, and the layout that 2 checks), ``trace`` (3, and ``cond``), ``compiled``
(``CompiledFunction``: 2 and 4, ``lower``; ``jit``), ``pack`` (small state as one buffer, 4)
and ``module`` (``compile(module)``).)

Design note — the phases of a call:

1. **Discover** (``discover._walk``, only when the cached layout is invalid). State is every Tensor
   storage cell reachable from the step's arguments and from what the function captures
   (closure cells, the globals its code names, recursively through Modules, Optimizers,
   containers and object ``__dict__``s), the ``.grad`` slots of those tensors, every
   ``Generator``'s state (the global RNG always: its mt19937 words as one uint32 vector, advanced
   in the program by ``funcgrad._random._jax_mt`` so compiled draws equal eager and PyTorch's),
   and the numeric hyperparameters of optimizer param groups that the optimizer reads through
   ``_lift.hyper`` (learned: a read of a key not lifted yet aborts the trace and it is traced
   again with the key lifted). Tensors that are arguments are *inputs*: read-only unless the
   step writes them.
2. **Validate** (every call, C-speed ``map`` comparisons): the cached layout still holds if
   no module ``__dict__`` changed since discovery (one global counter, ``_STRUCTURE``, bumped
   by ``Module.__setattr__``/``__delattr__``: covers ``training`` and other attributes), every
   state tensor has the same cell, every grad slot the same object, and every other watched
   container (``_parameters``/``_buffers``/``_modules`` dicts, the optimizer's own ``__dict__``
   and ``state`` dict — even empty —, its ``param_groups`` list, each group's ``params`` list and
   keys) the same values, and the lifted hyperparameters the optimizer branches on in Python
   (all but ``lr``: ``momentum != 0`` picks the recipe) are zero or not as before. Otherwise:
   rediscover. The layout's key holds the cells, flags, grad-None pattern, static
   hyperparameters, group membership, the non-zero pattern and the watched containers'
   identities, so a rediscovered layout that differs in any of them is a new program. Entries
   are found per layout by the inputs' (tree, shapes/dtypes) only; a new layout finds the
   programs of its *structure* (``_Layout.skey``: the key with the cells held only by ``.grad``
   tensors named by place, shape and dtype) rebound to its cells (``trace.lookup``), so a
   step cycling through states (gradient accumulation: ``.grad`` None / set, a flag) traces
   each once although every ``backward()`` after ``zero_grad()`` makes new ``.grad`` tensors.
   Write-back to tensor arguments always goes to the call's own arguments.
3. **Trace** (once per layout × input shapes/dtypes/static args): ``jax.make_jaxpr`` of a
   pure function ``(state, hypers, inputs) -> (changed state, new grads, new tensors,
   outputs)`` that binds tracers to the state cells in this thread's binding frame
   (``funcgrad._storage.Frame``), runs the user function, reads the cells back and drops the
   bindings (so an exception leaves no tracer behind, and no other thread ever sees one:
   compiled steps on different threads trace and run concurrently; each step's own lock
   serializes its calls). Cells created under the frame are ``_TracedCell``; writes to
   undiscovered cells stay in the frame (``frame.written``, lifted). Public Python scalars of the
   objects the step reaches (a scheduler's ``last_epoch``, a group's ``lr``, a module counter,
   a global) that the trace changes are reported once in a ``UserWarning`` (they would change
   once per trace, not per call); an aborted attempt (a hyperparameter or tensor to lift)
   undoes them, so they change once. A trace that creates state (Adam's moments, reported by
   ``_lift.created``) or the ``.grad`` of parameters whose ``.grad`` was None is not compiled:
   ``trace.prime`` makes that state (initial values, zero-filled ``.grad`` slots) and traces
   again with it, the new ``.grad`` slots hidden, so the first call runs the later calls'
   program (the next trace, with the ``.grad`` set, finds it compiled when its jaxpr is the
   same). Other state a trace creates: run, not cached; the next call rediscovers.
   ``retrace_reasons`` says what differs from the previous trace and the calling line.
   Arrays captured as constants are checked: a pre-existing Tensor cell read but not
   discovered (``frame.reads``, whose value is a constant of the jaxpr) is lifted and the
   step traced again (it is never silently frozen); one that requires grad is lifted as a
   tensor (state with its ``.grad``, as a parameter is). Cells made under the frame are plain
   cells once it ends. A tensor argument whose values are host
   data that decides shapes (``pack_padded_sequence``'s lengths, read through
   ``_lift.host_array``) aborts the trace and becomes *static*: its values join the cache key
   (``CompiledFunction._static``), so each distinct value is one program and
   ``retrace_reasons`` names it; such data computed inside the step raises.
4. **Run**: ``jax.jit`` of the jaxpr without the inputs it never reads (a ``.grad`` that
   ``zero_grad()`` clears before ``backward()``, an unused RNG key: only written, so not
   passed, unless big: its buffer is donated to receive the new gradient), donating exactly
   the state buffers it overwrites, each output in its own cell's old buffer (an array that
   something else holds is copied first, never deleted under its holder); the
   new arrays are written into the cells (views and ``detach()``-ed aliases see them), grad
   slots set as the trace left them, version counters advanced as eagerly. Small state
   written by the program (at most ``pack.PACK_MAX`` elements: biases, norms, their
   ``.grad`` and optimizer state) goes in and out as one flat buffer per dtype, since each
   array of a call costs more than copying a few kilobytes; its cells become pieces of the
   buffer (``_tensor._PackedCell``), unpacked when read and plain again when written.

Nesting: a compiled function or module called while a trace runs on its thread (another compiled
step's, or a compiled module's forward: ``common.NESTING``) is inlined, as ``torch.compile``
inside ``torch.compile``: its Python function runs in the outer trace, so the outer program
reads and writes its state (discovery walks the wrapped function or module) and its own layout
and programs are neither used nor changed. Outside a trace the test costs one list index
(``_storage.ACTIVE``, the frames entered on any thread).

Differences from eager (documented in ``jit``'s docstring): Python side effects happen at
trace time only; tensors returned from the step are detached (no ``grad_fn``); a ``.grad``
rebound inside the step reuses the previous ``.grad`` object when there was one.
"""

from .common import _flatten_args as _flatten_args, _leaf_key as _leaf_key  # parallel.compiled_text
from .common import structure_changed as structure_changed
from .discover import _walk as _walk  # funcgrad.func / funcgrad.export find a module's tensors
from .trace import cond as cond
from .compiled import CompiledFunction as CompiledFunction, jit as jit
from .module import compile as compile  # noqa: A004

__all__ = ["CompiledFunction", "compile", "cond", "jit", "structure_changed"]
