"""Dispatch: one function, ``apply(op, *args, **static)``. Unwrap → forward kernel → wrap, and
only when grad mode is on and an input requires grad, record an ``OpNode``.

Kernels are cached per op and per static arguments (jax caches per shape/dtype below that):
  * forward  = ``jax.jit(fn)``;
  * backward = ``jax.jit`` of ``jax.vjp`` of the same fn, specialised on which inputs need a
    gradient, recomputing what it needs from the saved primal inputs in one XLA program.
With ``create_graph`` the backward kernel is itself applied through ``apply`` as an op, so its
derivative is ``jax.vjp`` of the vjp and higher orders need nothing more.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from . import _broadcast, _cache, _dtype, _grad_mode as grad_mode, _tensor
from . import _meta
from ._grad_mode import _anomaly
from ._graph import FREED_MSG, AccumulateGrad, Node, node_class  # noqa: F401
from ._graph import PACK as _PACK, SAVED_HOOKS_ON as _hooks_on, SEQUENCE as _SEQUENCE
from ._host import forward as _host_forward
from ._scalars import NUMBERS as _NUMBERS, scalar_array, scalar_arrays
from ._storage import ACTIVE as _active, _Cell
from ._tensor import Tensor as _Tensor
from ._tensor import _Array
from ._tensor import DUAL as _dual

_state = grad_mode._state
_inference = grad_mode.INFERENCE  # threads in inference mode (none: no thread-local read)
_new = object.__new__


class Op:
    """One entry of the op table: a pure ``jax.numpy`` function and how autograd treats it.

    Args:
        name: PyTorch's op name (``"mul"``).
        fn: pure function ``fn(*arrays, **static) -> array | tuple``.
        grad_name: PyTorch's node name (``"MulBackward0"``); ``None``: never differentiable.
        promote: dtype rule for the operands: ``none`` (as is), ``float`` (integers → default
            float), ``binary`` (PyTorch's result_type), ``binary_float`` (result_type, then
            integers → default float, e.g. true division), ``compare`` (result_type; bool out).
        diff: positions of the differentiable operands (default: every positional argument).
        linear: the vjp needs only shapes, not values, so nothing is saved (``add``, ``view``).
        diff_outputs: for tuple-valued fns, which outputs carry gradients.
        view: the result shares storage with input 0 (writes through it reach the base); for a
            tuple-valued fn, ``view(j, static) -> (op, static)`` gives output j's view step
            (one node with several view outputs, as PyTorch's SplitBackward0).
        saves_result: PyTorch's derivative reads the result, so changing the result in place
            before backward is an error there; its version is recorded and checked here too.
        jvp: the derivative slot, PyTorch's formula where it differs from what ``jax.vjp`` of
            ``fn`` gives (a ``derivatives.yaml`` entry): ``jvp(primals, tangents, out, **static)
            -> tangent of out``, linear in the tangents (jax transposes it into the vjp, and
            differentiates it again for double backward). Tangents of integer operands arrive
            as ``float0`` zeros. It is attached to ``fn`` as a ``jax.custom_jvp``, so the
            eager backward kernel, ``create_graph``, ``funcgrad.jit`` and ``jax.grad`` of a
            functional call all use the same formula.
        reject: PyTorch's refusals by the dtype the op computes in (the input's; for
            ``binary``/``compare`` promotion the operands' common dtype): numpy dtype ->
            ``(exception type, message)``, or a check ``f(vals)`` that raises where PyTorch does
            (integer division by zero); ``None``: every dtype is taken. Built by ``defop`` from
            the op's accepted dtype kinds; checked before the kernel runs, so nothing changes.
        vjp: PyTorch's backward formula itself, for a backward ``jvp`` cannot state: one not
            linear in the cotangent (logcumsumexp's ``log|grad|``: a nan cotangent counts as 0),
            or one PyTorch switches with grad mode (cumprod at zeros under ``create_graph``).
            ``vjp(primals, cot, *, grad_mode, **static) -> cotangent per primal``; every backward
            kernel (eager, ``create_graph``, ``funcgrad.jit``) evaluates it, ``grad_mode`` True
            when the backward is itself recorded, whose derivative is then jax's derivative of
            the formula (as PyTorch differentiates its formula's ops). Single-output ops.
            ``jax.grad`` of a functional call still uses ``jvp``.
        host: the forward's NumPy twin, for ops NumPy computes bit for bit as XLA:CPU does
            (views, slices, cat, clone; comparisons, selects, exact casts):
            ``host(*numpy_arrays, **static)`` gives the kernel's result. While an (op, static
            arguments, avals) is new, ``apply`` runs it instead of compiling a kernel (see
            ``_host.forward``); it raises where it cannot promise that (``host_exact``,
            ``host_scalar``), and the kernel then runs.
        fuse: False: its backward never joins a fused backward program (autograd/fused.py); the
            engine runs it as its own kernel, cached per shape. For ops whose kernel holds a loop
            over a length that changes from call to call (a recurrent stack's scan over the
            sequence): a program around several of them compiles anew for each combination of
            their lengths (a batch of names summed one by one, as pytorch/tutorials' char-RNN
            classification, compiled a new backward of 64 scans every step, 12 s each), the op
            alone once per length.
    """

    __slots__ = ("name", "fn", "grad_name", "promote", "diff", "linear", "diff_outputs",
                 "view", "saves_result", "jvp", "vjp", "reject", "_fwd", "_bwd", "_bwd_ops",
                 "_node_cls", "doc", "_same_ok", "host", "_host_seen", "_fast", "_call1", "_call2",
                 "_static_calls", "multi_view", "fuse")

    def __init__(self, name, fn, grad_name=None, promote="none", diff=None, linear=False,
                 diff_outputs=None, view=False, doc=None, saves_result=False, jvp=None,
                 vjp=None, reject=None, host=None, fuse=True):
        self.name, self.fn, self.grad_name, self.promote = name, fn, grad_name, promote
        self.fuse = fuse
        self.host, self._host_seen = host, {}
        self.reject = reject
        self.diff, self.linear, self.diff_outputs, self.view = diff, linear, diff_outputs, view
        self.saves_result = saves_result
        self.doc, self.jvp, self.vjp = doc, jvp, vjp
        # its results are views PyTorch makes as outputs of one multi-output node (CreationMeta
        # MULTI_OUTPUT_NODE: not to be written in place): a tuple-valued view op's, and unbind's
        # (one call per output here, funcgrad/_ops/shape_more.py)
        self.multi_view = callable(view) or (view is True and name == "unbind")
        self._fwd, self._bwd, self._bwd_ops = {}, {}, {}
        self._node_cls = node_class(grad_name, OpNode) if grad_name else None
        # two operands of one dtype compute as they are (apply checks it inline)
        self._same_ok = diff is None and promote != "binary_float"
        # calls apply decided once, by the operands' dtypes (a Python scalar's type): a dtype
        # (one operand) or a tuple of them -> (kernel, cast, result inexact, diff mask) (see
        # _remember). None where more decides a call's path (a NumPy twin's count, a view)
        self._fast = {} if host is None and not view else None
        # apply(op, a) and apply(op, a, b[, alpha]) with the fast path unrolled, which frontends
        # may call directly (_static_caller, binary_caller)
        self._static_calls = {}  # static arguments -> (the one-operand call with them, its table)
        self._call1, self._call2 = (_static_caller(self, (), {})[0], binary_caller(self)) \
            if self._fast is not None else (lambda a: _apply(self, (a,), {}), lambda *a: _apply(self, a, {}))

    def __repr__(self):
        return f"Op({self.name})"

    def positions(self, nargs):
        return range(nargs) if self.diff is None else self.diff

    # -- kernels ---------------------------------------------------------------------------
    def traced(self, static, cast, nargs):
        """The pure function with the dtype cast applied to the operands."""
        fn, kw = self.fn, dict(static)
        if self.jvp is not None:
            fn, kw = _with_jvp(fn, self.jvp, kw), {}
        if cast is None:
            return lambda *a: fn(*a, **kw)
        cast_all = self._cast(cast, nargs)
        return lambda *a: fn(*cast_all(a), **kw)

    def _cast(self, cast, nargs):
        pos = frozenset(self.positions(nargs))
        jt = cast.np
        # (an optional operand left out, clamp's min=None, stays None)
        return lambda a: [jnp.asarray(x, jt) if i in pos and x is not None else x for i, x in enumerate(a)]

    def forward(self, static, cast, nargs):
        key = (static, cast, nargs)
        k = self._fwd.get(key)
        if k is None:
            # a plain jax.jit until its shapes keep changing, then per-shape LRU (_cache.py)
            # (one per static arguments: past a few, per-shape as well, _cache.static_kernel)
            k = _cache.static_kernel(self._fwd, key, lambda: self.traced(static, cast, nargs),
                                     self.name, None if self._fast is None else self._forget)
        return k

    def _forget(self):
        """Drop the remembered fast-path decisions (a kernel became per-shape)."""
        self._fast.clear()
        for _, table in self._static_calls.values():
            table.clear()

    def call_with(self, **static):
        """``call(a)``: ``apply(self, a, **static)`` for these static arguments, made once per
        their values (a frontend keeps it for a hot call: ``x.sum(1)``), whose fast path looks
        up the remembered decision by ``a``'s dtype alone (see ``_static_caller``)."""
        skey = tuple(static.items())
        c = self._static_calls.get(skey)
        if c is None:
            c = self._static_calls[skey] = _static_caller(self, skey, static)
        return c[0]

    def vjp_fn(self, static, cast, nargs, mask, avals, graph=False):
        """``bwd(args, cots) -> grads`` for the masked positions (unjitted, traceable); ``graph``:
        this backward is itself recorded (``create_graph``; ``vjp``'s ``grad_mode``)."""
        f = self.traced(static, cast, nargs)
        idx = [i for i in range(nargs) if mask[i]]
        douts = self.diff_outputs
        stated = self.vjp
        cast_all = (lambda a: a) if cast is None else self._cast(cast, nargs)

        def bwd(args, cots):
            # a None cotangent: an output nothing used. It is left out of the vjp, as PyTorch's
            # undefined gradient (zeros would meet an infinite derivative there: 0 * inf = nan)
            keep = None if all(c is not None for c in cots) else [j for j, c in enumerate(cots) if c is not None]
            full = list(args)
            for i, (shape, dt) in avals:
                full[i] = jnp.zeros(shape, dt)
            if stated is not None:
                out = jax.eval_shape(f, *full)
                grads = stated(tuple(cast_all(full)), cots[0].astype(out.dtype), grad_mode=graph, **dict(static))
                return tuple(grads[i].astype(full[i].dtype) for i in idx)

            def g(*d):
                a = list(full)
                for i, v in zip(idx, d):
                    a[i] = v
                out = f(*a)
                out = out if douts is None else tuple(out[j] for j in douts)
                return out if keep is None else tuple(out[j] for j in keep)
            out, pull = jax.vjp(g, *[full[i] for i in idx])
            if keep is not None:
                cots = tuple(cots[j] for j in keep)
            # cotangents take the output's dtype (a float64 grad_output for a float32 output);
            # complex ones in PyTorch's convention: its gradient is the conjugate of jax.vjp's
            # (conj of the vjp of the conjugate cotangent; nothing for real dtypes)
            cots = jax.tree.map(lambda c, o: _conj(c.astype(o.dtype)), tuple(cots) if
                                douts is not None or type(out) is tuple else cots[0], out)
            return tuple(_conj(g, True) for g in pull(cots))
        return bwd

    def backward(self, static, cast, nargs, mask, avals):
        key = (static, cast, nargs, mask, avals)
        k = self._bwd.get(key)
        if k is None:
            k = _cache.static_kernel(self._bwd, key,
                                     lambda: self.vjp_fn(static, cast, nargs, mask, avals),
                                     self.name + " backward")
        return k

    def backward_op(self, static, cast, nargs, mask, avals):
        """The backward kernel as a differentiable Op (for ``create_graph=True``)."""
        key = (static, cast, nargs, mask, avals)
        op = self._bwd_ops.get(key)
        if op is None:
            bwd = self.vjp_fn(static, cast, nargs, mask, avals, graph=True)
            n_args = nargs
            aval_pos = {i for i, _ in avals}

            def fn(*a):
                args, j = [], 0
                for i in range(n_args):
                    if i in aval_pos:
                        args.append(None)
                    else:
                        args.append(a[j])
                        j += 1
                return tuple(bwd(args, tuple(a[j:])))
            op = self._bwd_ops[key] = Op(self.grad_name + "Backward", fn, self.grad_name + "Backward")
        return op


def _conj(x, positive_zero=False):
    """``x`` conjugated if complex (a traced dtype test: real arrays pass untouched);
    ``positive_zero``: a zero imaginary part +0.0 (PyTorch's gradient of a real cotangent, where the
    conjugate of jax's would be -0.0)."""
    if not jnp.iscomplexobj(x):
        return x
    if not positive_zero:
        return jnp.conj(x)
    return jax.lax.complex(jnp.real(x), _negate_to_positive_zero(jnp.imag(x)))


@jax.custom_jvp
def _negate_to_positive_zero(im):
    """``-im`` with +0.0 for a zero; its derivative is -1 everywhere (a ``where`` would give 0 at the
    zeros, and a double backward through a zero cotangent lost its imaginary part; ``-im + 0.0``
    is simplified back to ``-im`` by XLA)."""
    return jnp.where(im == 0, jnp.zeros_like(im), -im)


@_negate_to_positive_zero.defjvp
def _negate_to_positive_zero_jvp(primals, tangents):
    return _negate_to_positive_zero(primals[0]), -tangents[0]


def _with_jvp(fn, rule, kw):
    """``fn(*a, **kw)`` whose derivative is the op's stated formula ``rule`` (see ``Op.jvp``)."""
    f = jax.custom_jvp(lambda *a: fn(*a, **kw))

    @f.defjvp
    def _jvp(primals, tangents):
        out = f(*primals)
        return out, rule(primals, tangents, out, **kw)
    return f


# ---- dtype of an op's result ------------------------------------------------------------------
def _operand_dtype(a):
    if isinstance(a, _Tensor):
        return a.dtype, (2 if a._value.ndim else 1)
    return _dtype.scalar_dtype(a), 0


_promo_memo: dict = {}


def _operand_key(v):
    dt = getattr(v, "dtype", None)
    if dt is not None:
        return (dt, v.ndim == 0)
    return type(v)


def result_dtype(op, args, vals):
    """The dtype PyTorch would compute ``op`` in (None: leave the operands as they are).

    Memoised on the operands' (dtype, is-0-dim) / Python types, so the promotion rules run
    once per combination, not per call.
    """
    mode = op.promote
    if mode == "float":  # integer/bool inputs of float ops compute in the default float
        return None if vals[0].dtype in _INEXACT else _dtype._default[0]
    if len(vals) == 2 and op.diff is None and mode != "binary_float":
        # fast path: two arrays of one dtype need no cast (the kernel computes in that dtype)
        a, b = vals
        dt = getattr(a, "dtype", None)
        if dt is not None and dt is getattr(b, "dtype", None) and not isinstance(b, np.generic) \
                and not isinstance(a, np.generic):  # (a NumPy number: a Python one to PyTorch, see operand)
            return None
    pos = range(len(vals)) if op.diff is None else op.diff
    key = (mode, _dtype._default[0]) + tuple(_operand_key(vals[i]) for i in pos if vals[i] is not None)
    d = _promo_memo.get(key, _MISSING)
    if d is _MISSING:
        ops = [args[i] for i in pos if args[i] is not None]
        d = _dtype.result_type([_operand_dtype(a) for a in ops])
        if mode == "binary_float" and d._kind in "bi":
            d = _dtype.get_default_dtype()
        _promo_memo[key] = d
    return d


_MISSING = object()


# ---- apply ----------------------------------------------------------------------------------
_amp_hook = [None]  # funcgrad.amp's autocast cast, installed only while some thread has autocast on
# funcgrad/_sparse.py's ``holds(vals)`` and ``on_kernel_error(op, args, static)``, asked only after a
# kernel refused its operands (a sparse tensor's storage is no JAX type): the dense path pays nothing
SPARSE_HOLDS = [None]
SPARSE_HOOK = [None]


def apply(op: Op, *args, **static):
    """Run ``op`` on Tensors/scalars/arrays; record a graph node when needed."""
    if op._fast is not None:
        if not static:
            n = len(args)
            if n == 2 or n == 3 and type(args[2]) in _NUMBERS:  # (a third only as a number: alpha)
                return op._call2(*args)
            if n == 1:
                return op._call1(args[0])
        elif len(args) == 1 and _amp_hook[0] is None and not _active[0]:
            # one operand with static arguments (reductions): as _static_caller, keyed by both
            a = args[0]
            if isinstance(a, _Tensor) and a._viewinfo is None and type(v0 := a._cell.value) is _Array \
                    and (e := op._fast.get((v0.aval.dtype, skey := tuple(static.items())))) is not None:
                out = e[0](v0)
                if a._requires_grad and e[2]:
                    if _state.enabled:
                        return _record(op, args, out, skey, e[1], (True,) if e[3] is None else e[3],
                                       (v0,), True)
                    if _state.inference:
                        return _inference_result(op, args, out, skey)
                elif _inference[0] and _state.inference and not (op.grad_name is not None and _state.enabled):
                    return _inference_result(op, args, out, skey)
                t = _new(_Tensor)  # Tensor._wrap(out), inlined
                c = t._cell = _new(_Cell)
                c.value, c.gen = out, 0
                t._viewinfo, t._ver, t._requires_grad, t._grad_fn = None, [0], False, None
                return t
    return _apply(op, args, static)


def binary_caller(op: Op, slow=None):
    """``call(a, b[, alpha])``: ``apply(op, a, b[, alpha])`` (a third operand only as a Python
    number) with apply's fast path unrolled, so a frontend that calls it directly pays no
    packing of arguments either; where that path does not apply, ``slow(a, b[, alpha])``
    (default: the full path). An arithmetic operator is one of these itself, whose ``slow``
    declines what PyTorch's declines (``NotImplemented``).

    The fast path runs a call whose decisions are remembered (``_remember``): its kernel and
    dtype cast by the operands' dtypes (a Python scalar's type, its reused 0-d array the
    operand), nothing else redone; then the same recording and wrapping as the full path. Not
    while autocast or a binding frame is active, nor for views, traced values or a key not
    remembered: those take the full path (``_apply``). (It and ``_static_caller`` inline
    ``Tensor._wrap`` and the recording choice as ``apply`` does: a helper's frame would cost
    each call more than the rest of the path. For the same reason it records the node itself,
    ``_record`` unrolled, where ``_remember`` found the op simple enough (``how``): ``x * y``,
    ``x + y`` with an operand that requires grad cost 0.5-0.6 µs less than through ``_record``;
    tests/test_fast_dispatch.py checks the node is ``_record``'s.)"""
    fast, T = op._fast, _Tensor
    if slow is None:
        def slow(*args):
            return _apply(op, args, {})

    def call(a, b, *alpha):
        if _amp_hook[0] is None and not _active[0]:
            if isinstance(a, T):
                if a._viewinfo is not None or type(v0 := a._cell.value) is not _Array:
                    return slow(a, b, *alpha)
                k0, g0 = v0.aval.dtype, a._requires_grad
            else:  # a Python scalar: its type is the key, its reused 0-d array the operand
                k0, g0, v0 = type(a), False, scalar_array(a)
            if isinstance(b, T):
                if b._viewinfo is not None or type(v1 := b._cell.value) is not _Array:
                    return slow(a, b, *alpha)
                k1, g1 = v1.aval.dtype, b._requires_grad
            else:
                k1, g1, v1 = type(b), False, scalar_array(b)
            if (e := fast.get((k0, k1, type(alpha[0])) if alpha else (k0, k1))) is not None:
                try:
                    out = e[0](v0, v1, scalar_array(alpha[0])) if alpha else e[0](v0, v1)
                except (ValueError, TypeError) as exc:  # jax's broadcasting error -> PyTorch's
                    _raise_broadcast_error((v0, v1), exc)
                    raise
                if (g0 or g1) and e[2]:
                    if _state.enabled:
                        if (how := e[4]) and not alpha and not _anomaly[0] and not _hooks_on[0]:
                            # _record(op, (a, b), out, (), e[1], (g0, g1), (v0, v1), True) unrolled
                            # (its branches decided, no frame) for an op that saves its operands as
                            # they are (how 1), or a linear one that keeps their shapes (how 2)
                            if how == 1:
                                saved, versions, avals = (a, b), [], ()
                                if isinstance(a, T):
                                    if (ver := a._ver) is None:  # an inference tensor: _record raises
                                        return _record(op, (a, b), out, (), e[1], (g0, g1), (v0, v1), True)
                                    versions.append((a, ver[0]))
                                if isinstance(b, T):
                                    if (ver := b._ver) is None:
                                        return _record(op, (a, b), out, (), e[1], (g0, g1), (v0, v1), True)
                                    versions.append((b, ver[0]))
                            else:
                                saved, versions, avals = [a, b], [], []
                                if isinstance(a, T):
                                    saved[0], av = None, v0.aval
                                    avals.append((0, (av.shape, av.dtype)))
                                if isinstance(b, T):
                                    saved[1], av = None, v1.aval
                                    avals.append((1, (av.shape, av.dtype)))
                                avals = tuple(avals)
                            e0 = ((g, a._output_nr) if (g := a._grad_fn) is not None else a._edge()) \
                                if g0 else _NO_EDGE
                            e1 = ((g, b._output_nr) if (g := b._grad_fn) is not None else b._edge()) \
                                if g1 else _NO_EDGE
                            node = _new(op._node_cls)
                            node._seq = next(_SEQUENCE)
                            node._op, node._key = op, ((), e[1], 2, (g0, g1), avals)
                            node._saved, node._versions, node._freed = saved, versions, False
                            node.next_functions, node._mask_pos, node._out_avals = (e0, e1), _PAIR, None
                            t = _new(T)  # Tensor._wrap(out), inlined, its grad_fn the node
                            c = t._cell = _new(_Cell)
                            c.value, c.gen = out, 0
                            t._viewinfo, t._ver, t._requires_grad, t._grad_fn = None, [0], True, node
                            return t
                        d = e[3]
                        mask = (g0, g1) if d is None else (g0 and d[0], g1 and d[1])
                        if alpha:
                            return _record(op, (a, b, *alpha), out, (), e[1], mask + (False,),
                                           (v0, v1, scalar_array(alpha[0])), True)
                        return _record(op, (a, b), out, (), e[1], mask, (v0, v1), True)
                    if _state.inference:
                        return _inference_result(op, (a, b, *alpha), out, ())
                elif _inference[0] and _state.inference and not (op.grad_name is not None and _state.enabled):
                    return _inference_result(op, (a, b, *alpha), out, ())
                t = _new(T)  # Tensor._wrap(out), inlined
                c = t._cell = _new(_Cell)
                c.value, c.gen = out, 0
                t._viewinfo, t._ver, t._requires_grad, t._grad_fn = None, [0], False, None
                return t
        return slow(a, b, *alpha)
    return call


def _static_caller(op: Op, skey: tuple, static: dict):
    """``(call, table)``: ``call(a)`` is ``apply(op, a, **static)`` with the fast path unrolled
    (see ``binary_caller``), ``table`` ``op._fast``'s entries for ``skey`` by dtype (``Op._forget``
    clears it with them; without static arguments, ``op._fast`` itself). ``Op._call1`` and
    ``Op.call_with``'s calls."""
    fast, T = op._fast, _Tensor
    table = fast if not skey else {}

    def call(a):
        if fast is not None and _amp_hook[0] is None and not _active[0] and isinstance(a, T) \
                and a._viewinfo is None and type(v0 := a._cell.value) is _Array:
            e = table.get(dt := v0.aval.dtype)
            if e is None and (e := fast.get((dt, skey))) is not None:
                table[dt] = e
            if e is not None:
                out = e[0](v0)
                if a._requires_grad and e[2]:
                    if _state.enabled:
                        return _record(op, (a,), out, skey, e[1], (True,) if e[3] is None else e[3],
                                       (v0,), True)
                    if _state.inference:
                        return _inference_result(op, (a,), out, skey)
                elif _inference[0] and _state.inference and not (op.grad_name is not None and _state.enabled):
                    return _inference_result(op, (a,), out, skey)
                t = _new(T)  # Tensor._wrap(out), inlined
                c = t._cell = _new(_Cell)
                c.value, c.gen = out, 0
                t._viewinfo, t._ver, t._requires_grad, t._grad_fn = None, [0], False, None
                return t
        return _apply(op, (a,), static)
    return call, table


def _apply(op: Op, args: tuple, static: dict, dual: bool = True):
    """``apply``'s full path: every decision made for this call (``dual``: a forward-AD level, if
    active, gives the results their tangents: funcgrad/autograd/forward_ad.py)."""
    if dual and _dual[0] is not None:
        return _dual[0].apply(op, args, static)
    if _amp_hook[0] is not None:
        args = _amp_hook[0](op, args)
    T = _Tensor
    nargs = len(args)
    # no binding frame in any thread: a plain tensor's array is its cell's (what the ``_value``
    # property gives, without the call), and results get plain cells (``Tensor._wrap`` inlined)
    direct = not _active[0]
    # unrolled for one and two operands (most calls): a comprehension is a call of its own
    if nargs == 2:
        a, b = args
        v0 = (a._cell.value if direct and a._viewinfo is None else a._value) if isinstance(a, T) else a
        v1 = (b._cell.value if direct and b._viewinfo is None else b._value) if isinstance(b, T) else b
        vals = (v0, v1)
    elif nargs == 1:
        a = args[0]
        v0 = (a._cell.value if direct and a._viewinfo is None else a._value) if isinstance(a, T) else a
        vals = (v0,)
    else:
        vals = tuple([a._value if isinstance(a, T) else a for a in args])
    promote = op.promote
    if promote == "none":
        cast = None
    elif promote == "float":  # integer/bool inputs compute in the default float
        v0 = vals[0]
        cast = None if (v0.aval.dtype if type(v0) is _Array else v0.dtype) in _INEXACT \
            else _dtype._default[0]
    elif nargs == 2 and op._same_ok and type(v0) is _Array and type(v1) is _Array \
            and v0.aval.dtype is v1.aval.dtype:
        cast = None  # two arrays of one dtype need no cast (result_dtype's first answer)
    else:
        cast = result_dtype(op, args, vals)
    if op.reject is not None:  # one dict lookup on the computing dtype (most ops: skipped)
        _check_dtype(op, vals, cast)
    skey = tuple(static.items()) if static else ()
    if op.host is None or (out := _host_forward(op, vals, static, skey, cast)) is None:
        k = op._fwd.get((skey, cast, nargs))
        new = k is None
        if new:
            k = op.forward(skey, cast, nargs)
        try:
            out = k(*scalar_arrays(vals))
        except Exception as e:
            if new:  # a kernel whose first call failed is not kept: a valid call's key may equal its
                op._fwd.pop((skey, cast, nargs), None)  # own (dim=1 after a refused dim=1.0: 1 == 1.0)
            if SPARSE_HOLDS[0] is not None and SPARSE_HOLDS[0](vals):  # a sparse COO operand: PyTorch's
                return SPARSE_HOOK[0](op, args, static)  # sparse kernel or its error (funcgrad/_sparse.py)
            if not _meta.holds(vals):
                if isinstance(e, (ValueError, TypeError)):  # jax's broadcasting error -> PyTorch's
                    _raise_broadcast_error(vals, e)
                raise
            # a meta tensor's value is no JAX type: the result's shape and dtype (funcgrad/_meta.py)
            out = _meta_forward(op, args, vals, skey, cast)
        if op._fast is not None and direct and (nargs == 1 or not static):
            _remember(op, args, vals, cast, k, out, skey)
    if op.grad_name is not None and _state.enabled:
        for a in args:  # a view's node made anew where its storage changed since (Tensor._fresh)
            if isinstance(a, T) and a._viewinfo is not None:
                a._fresh()
        for a in args:  # cheap scan first: most calls have no input that requires grad
            if isinstance(a, T) and a._requires_grad:
                diff = op.diff
                if diff is None and nargs == 1:
                    mask = (True,)
                elif diff is None and nargs == 2:
                    a, b = args
                    mask = (isinstance(a, T) and a._requires_grad, isinstance(b, T) and b._requires_grad)
                elif diff is None:
                    mask = tuple([isinstance(a, T) and a._requires_grad for a in args])
                else:
                    mask = tuple([isinstance(a, T) and a._requires_grad and i in diff
                                  for i, a in enumerate(args)])
                if type(out) is not tuple:
                    if (out.aval.dtype if type(out) is _Array else out.dtype) in _INEXACT:
                        return _record(op, args, out, skey, cast, mask, vals, direct)
                elif _inexact(out, op.diff_outputs):
                    return _record(op, args, out, skey, cast, mask, vals, direct)
                break
    elif _state.inference:
        return _inference_result(op, args, out, skey)
    if op.view and isinstance(args[0], T):
        if type(out) is tuple:
            return tuple(T._make_view(args[0], o, *op.view(j, skey), multi=True) for j, o in enumerate(out))
        return T._make_view(args[0], out, op, skey, args[1:], op.multi_view)
    if type(out) is tuple:
        return tuple(T._wrap(o) for o in out)
    if direct:  # Tensor._wrap(out), inlined
        t = _new(T)
        c = t._cell = _new(_Cell)
        c.value, c.gen = out, 0
        t._viewinfo, t._ver, t._requires_grad, t._grad_fn = None, [0], False, None
        return t
    return T._wrap(out)


def _meta_forward(op, args, vals, skey, cast):
    """``op``'s result where some operand is a meta tensor: its shape and dtype, from the kernel's
    function (``_meta.forward``); PyTorch's errors for mixed devices and refused shapes."""
    if op.name in _meta.ANY_DEVICE and not _meta.is_meta(args[0]):  # (a write into a meta tensor
        raise NotImplementedError(_meta.COPY_OUT_MSG)  # is a no-op; out of one, PyTorch's error)
    if op.name not in _meta.ANY_DEVICE:  # (an index operand may lie on the CPU, as in PyTorch)
        order = _meta.DEVICE_ORDER.get(op.name, op.positions(len(args)))
        ts = [i for i in order if isinstance(args[i], _Tensor)]
        _meta.check_devices([args[i] for i in ts], [vals[i] for i in ts])
    try:
        return _meta.forward(op, skey, cast, scalar_arrays(vals))
    except (ValueError, TypeError) as e:
        if "broadcast" in str(e):  # (PyTorch's meta kernels: torch._refs' message)
            _broadcast.broadcast_shapes(*[a.shape for a in args if isinstance(a, _Tensor)])
        _raise_broadcast_error(vals, e)
        raise


_SCALARS = (*_NUMBERS, type(None))


def _remember(op, args, vals, cast, k, out, skey=()) -> None:
    """Let ``apply``'s fast path run calls like this one (no binding frame; static arguments
    ``skey`` only with one operand) from now on, where its operands' dtypes (a Python scalar's
    type) and the static arguments decide all that the full path decided: the kernel (a plain
    one: a per-shape kernel keys on shapes), the cast (none, or the one dtype of the Tensor
    operands, whatever the default dtype and their dimensions), no dtype refusal (nor a check
    of values), and whether the result can carry a gradient. A kernel made per-shape later
    drops them (``Op.forward``).
    """
    if type(out) is tuple or type(k) is _cache.ShapeKernel or _amp_hook[0] is not None \
            or len(args) > 3 or len(args) == 3 and type(args[2]) not in _NUMBERS:
        return  # (a third operand only as a number: the fast path looks no further)
    keys = []
    for a, v in zip(args, vals):
        if isinstance(a, _Tensor):
            if a._viewinfo is not None or type(v) is not _Array:
                return
            keys.append(v.aval.dtype)
        elif type(a) in _SCALARS:
            keys.append(type(a))
        else:
            return
    dts = [kk for kk in keys if type(kk) is not type]
    if not dts or cast is not None and any(d is not cast.np for d in dts):
        return
    if op.reject is not None:
        dt = cast.np if cast is not None and op.promote != "float" else vals[0].dtype
        if op.reject.get(dt) is not None:
            return
    diff = None if op.diff is None else tuple(i in op.diff for i in range(len(args)))
    out_dt = out.aval.dtype if type(out) is _Array else out.dtype
    key = (keys[0] if len(keys) == 1 else tuple(keys)) if not skey else (keys[0], skey)
    # (whether a node may be recorded: a differentiable op with an inexact result; how the binary
    # caller records it unrolled: 1 every operand saved as it is; 2 a linear op, differentiable
    # in both, keeps their shapes; 0 not unrolled)
    how = 0 if op.view or op.saves_result or len(args) != 2 else \
        1 if diff is None and not op.linear else 2 if op.linear and (diff is None or all(diff)) else 0
    op._fast[key] = (k, cast, op.grad_name is not None and out_dt in _INEXACT, diff, how)


def _check_dtype(op, vals, cast):
    """Raise PyTorch's error where its kernel refuses the dtype ``op`` computes in."""
    # "float" ops compute integers in the default float, but PyTorch's kernel sees the input's
    dt = cast.np if cast is not None and op.promote != "float" else getattr(vals[0], "dtype", None)
    e = op.reject.get(dt)
    if e is not None:
        if type(e) is tuple:
            raise e[0](e[1])
        e(vals)


def _inference_result(op, args, out, skey):
    """Results computed under ``inference_mode`` are inference tensors: no version counter."""
    T = _Tensor
    if op.view and isinstance(args[0], T) and type(out) is tuple:
        res = tuple(T._make_view(args[0], o, *op.view(j, skey), multi=True) for j, o in enumerate(out))
    elif op.view and isinstance(args[0], T):
        res = (T._make_view(args[0], out, op, skey, args[1:], op.multi_view),)
    else:
        res = tuple(T._wrap(o) for o in out) if type(out) is tuple else (T._wrap(out),)
    for t in res:
        t._ver = None
    return res if type(out) is tuple else res[0]


def _raise_broadcast_error(vals, exc):
    """PyTorch's message for operands whose shapes do not broadcast (else: return): ATen's
    ``infer_size`` folded over the operands in order, as TensorIterator."""
    if "broadcast" not in str(exc):
        return
    _broadcast.raise_mismatch([v.shape for v in vals if getattr(v, "ndim", 0)])


INFERENCE_SAVED_MSG = (
    "Inference tensors cannot be saved for backward. Please do not use Tensors created in inference "
    "mode in computation tracked by autograd. To work around this, you can make a clone to get a "
    "normal tensor and use it in autograd, or use `funcgrad.no_grad()` instead of "
    "`funcgrad.inference_mode()`.")
_INEXACT = frozenset(d.np for d in _dtype.ALL if d._kind in "fc")


def _inexact(out, douts) -> bool:
    if type(out) is tuple:
        return any(out[j].dtype in _INEXACT for j in (range(len(out)) if douts is None else douts))
    return out.dtype in _INEXACT


def _record(op, args, out, skey, cast, mask, vals=None, direct=False):
    """The result of ``op`` with its ``OpNode`` (``vals``: the operands' arrays, where known;
    ``direct``: no binding frame in any thread, so the result gets a plain cell)."""
    node = _new(op._node_cls)  # Node.__init__ sets next_functions and the number: set below
    node._seq = next(_SEQUENCE)
    nargs = len(args)
    diff = op.diff
    T = _Tensor
    if not direct:  # (apply's paths pass direct: their operands are no views, or were refreshed)
        for a in args:
            if isinstance(a, T) and a._viewinfo is not None:
                a._fresh()
    if diff is None and not op.linear:  # the common case: every input saved as it is
        saved, avals, versions = args, (), []  # (never changed in place: the tuple itself)
        for a in args:
            if isinstance(a, T):
                ver = a._ver
                if ver is None:  # an inference tensor (no version counter) cannot be saved
                    raise RuntimeError(INFERENCE_SAVED_MSG)
                versions.append((a, ver[0]))
    elif diff is None and nargs == 1 and isinstance(args[0], T):  # a linear op of one tensor
        v = args[0]._value if vals is None else vals[0]
        if type(v) is _Array:
            v = v.aval  # (its shape and dtype, without the properties)
        saved, avals, versions = [None], ((0, (v.shape, v.dtype)),), []
    else:
        saved, avals, versions = [], [], []
        for i, a in enumerate(args):
            if isinstance(a, T):
                if op.linear and (diff is None or i in diff):
                    v = a._value if vals is None else vals[i]
                    if type(v) is _Array:
                        v = v.aval  # (its shape and dtype, without the properties)
                    avals.append((i, (v.shape, v.dtype)))
                    saved.append(None)
                elif diff is not None and i not in diff:
                    saved.append(a._value)  # non-differentiable operand (e.g. an index): its value
                else:
                    if a._ver is None:
                        raise RuntimeError(INFERENCE_SAVED_MSG)
                    saved.append(a)
                    versions.append((a, a._ver[0]))
            else:
                saved.append(a)
        avals = tuple(avals)
    node._op, node._key = op, (skey, cast, nargs, mask, avals)
    node._saved, node._versions, node._freed = saved, versions, False
    if diff is None and nargs < 3:  # unrolled: Tensor._edge inlined for a non-leaf
        a = args[0]
        if mask[0] and isinstance(a, T):
            g = a._grad_fn
            e = (g, a._output_nr) if g is not None else a._edge()
        else:
            e = (None, 0)
        if nargs == 1:
            node.next_functions = (e,)
        else:
            a = args[1]
            if mask[1] and isinstance(a, T):
                g = a._grad_fn
                node.next_functions = (e, (g, a._output_nr) if g is not None else a._edge())
            else:
                node.next_functions = (e, (None, 0))
        node._mask_pos = _RANGES[nargs]
    else:
        pos = range(nargs) if diff is None else diff
        edges = []
        for i in pos:
            a = args[i]
            if mask[i] and isinstance(a, T):
                g = a._grad_fn  # Tensor._edge, inlined for the non-leaf case
                edges.append((g, a._output_nr) if g is not None else a._edge())
            else:
                edges.append((None, 0))
        node.next_functions = tuple(edges)
        node._mask_pos = _RANGES[nargs] if diff is None and nargs < 8 else tuple(pos)
    if _anomaly[0]:
        import traceback
        node._trace = "".join(traceback.format_stack()[:-3])
    if type(out) is tuple:
        douts = op.diff_outputs if op.diff_outputs is not None else range(len(out))
        node._out_avals = tuple((out[j].shape, out[j].dtype) for j in douts)
        res = [T._make_view(args[0], o, *op.view(j, skey), multi=True) if op.view else T._wrap(o)
               for j, o in enumerate(out)]
        for nr, j in enumerate(douts):
            res[j]._set_grad_fn(node, nr)
        if _hooks_on[0]:  # saved_tensors_hooks entered (in some thread): pack what the node saves
            _PACK[0](node, args, None)
        return tuple(res)
    node._out_avals = None
    if op.view:
        t = T._make_view(args[0], out, op, skey, args[1:], op.multi_view)
        t._grad_fn, t._requires_grad = node, True
    elif direct:  # Tensor._wrap(out) inlined, with _set_grad_fn(node, 0) of a fresh tensor
        t = _new(T)
        c = t._cell = _new(_Cell)
        c.value, c.gen = out, 0
        t._viewinfo, t._ver, t._requires_grad, t._grad_fn = None, [0], True, node
    else:
        t = T._wrap(out)
        t._grad_fn, t._requires_grad = node, True
    if op.saves_result:  # checked at backward like a saved input (PyTorch saves this output)
        versions.append((SavedOutput(t._ver, out.shape, out.dtype, op.grad_name, t._cell), 0))
    if _hooks_on[0]:  # saved_tensors_hooks entered (in some thread): pack what the node saves
        _PACK[0](node, args, t)
    return t


_RANGES = [tuple(range(n)) for n in range(8)]  # shared _mask_pos tuples
_PAIR, _NO_EDGE = _RANGES[2], (None, 0)



class SavedOutput:
    """What the version check needs of a saved output: its version counter, shape and dtype,
    the name of the node that made it, and its storage cell (``grad_fn._saved_result`` is a tensor
    made anew on it, as PyTorch unpacks a saved output; not the tensor or node: that would be a
    cycle)."""

    __slots__ = ("_ver", "shape", "dtype", "node_name", "cell")

    def __init__(self, ver, shape, dtype, node_name, cell=None):
        self._ver, self.shape, self.dtype, self.node_name = ver, shape, dtype, node_name
        self.cell = cell

    def _type_name(self):
        return _Tensor._wrap(jnp.zeros((), self.dtype))._type_name()


class OpNode(Node):
    """A node recorded by ``apply``: saved primal inputs + which of them need a gradient."""

    __slots__ = ("_op", "_key", "_saved", "_versions", "_freed", "_out_avals", "_mask_pos")
    _packed = None  # {source: (packed, unpack_hook)} under saved_tensors_hooks (autograd/saved.py)
    _ends = False  # True: a fused region that takes this node ends with it (autograd/fused.py)

    @property
    def num_outputs(self):
        return 1 if self._out_avals is None else len(self._out_avals)

    def _check_saved(self):
        if self._freed:
            raise RuntimeError(FREED_MSG)
        for t, v in self._versions:
            if t._ver[0] != v:
                raise RuntimeError(_version_msg(t, v))

    def _release(self):
        if not saved_nothing(self):  # (a node that saved no tensor can run again, as PyTorch's)
            self._saved = self._versions = None
            self._freed = True
            if self._packed is not None:  # (what pack_hook returned goes now, as in PyTorch)
                self._packed = None

    def _apply_some(self, grads, want):
        """The backward kernel specialised on the inputs whose gradient is wanted (PyTorch's
        ``task_should_compute_output``): an unwanted one's is not computed, so a derivative
        ``derivatives.yaml`` states ``not_implemented`` raises only where it is needed."""
        key = self._key
        mask = list(key[3])
        for w, i in zip(want, self._mask_pos, strict=True):
            if not w:
                mask[i] = False
        if not any(mask):  # (PyTorch's NotImplemented node raises whenever it runs)
            return self._apply(grads) if op_raises(self._op) else [None] * len(self._mask_pos)
        return self._apply(grads, (*key[:3], tuple(mask), key[4]))

    def _apply(self, grads, key=None):
        op = self._op
        key = self._key if key is None else key
        if self._out_avals is None:
            cots = (grads[0],)
        elif _state.enabled:  # (a recorded backward takes every cotangent as an operand)
            cots = tuple(g if g is not None else _Tensor._wrap(jnp.zeros(s, d))
                         for g, (s, d) in zip(grads, self._out_avals))
        else:  # an output nothing used gets no cotangent (see Op.vjp_fn)
            cots = tuple(grads)
        mask = key[3]
        saved = self._saved if self._packed is None else self._unpacked_saved()
        if _state.enabled:  # create_graph: the backward kernel is itself a recorded op
            bop = op.backward_op(*key)
            aval_pos = {i for i, _ in key[4]}
            ins = [s for i, s in enumerate(saved) if i not in aval_pos]
            res = apply(bop, *ins, *cots)
        else:
            k = op._bwd.get(key)
            if k is None:
                k = op.backward(*key)
            T = _Tensor
            vals = scalar_arrays([s._value if isinstance(s, T) else s for s in saved])
            cv = tuple([None if c is None else c._value for c in cots])
            try:
                res = [T._wrap(r) for r in k(vals, cv)]
            except Exception:
                if not (_meta.holds(vals) or _meta.holds(cv)):
                    raise
                # a meta graph: the gradients' shapes and dtypes (funcgrad/_meta.py)
                res = [T._wrap(r) for r in _meta.backward(op, key, vals, cv)]
        if len(res) == len(self._mask_pos):
            return res
        it = iter(res)
        return [next(it) if mask[i] else None for i in self._mask_pos]


_PY_NUMBERS = frozenset((int, float, bool, complex))


def op_raises(op) -> bool:
    """Whether ``op``'s node is PyTorch's ``NotImplemented`` (an op without derivatives.yaml entry,
    heaviside, histogram): its backward raises whenever the node runs, whichever inputs it serves."""
    return op.grad_name == "NotImplemented"


def saved_nothing(node) -> bool:
    """Whether ``node`` saved no tensor: PyTorch frees a node's saved variables after a backward
    without ``retain_graph`` and raises only when a later backward unpacks a freed one, so a node
    that saved none (``add``, ``sub``, ``neg``, ``sum``, ``mean``, views, ``cat``, ``clone``,
    ``to``: linear ops, keeping shapes and Python numbers) runs again. A non-differentiable
    operand kept as an array (an index, a mask) counts as saved, as in PyTorch."""
    if node._versions:
        return False
    for s in node._saved:
        if s is not None and type(s) not in _PY_NUMBERS:
            return False
    return True


def _version_msg(t, expected):
    desc = f"[{t._type_name()} [{', '.join(map(str, t.shape))}]]"
    if type(t) is SavedOutput:  # PyTorch names the node that saved it
        desc += f", which is output 0 of {_short_name(t.node_name)},"
    elif t._grad_fn is not None:
        desc += f", which is output {t._output_nr} of {_short_node_name(t)},"
    return (f"one of the variables needed for gradient computation has been modified by an "
            f"inplace operation: {desc} is at version {t._ver[0]}; expected version {expected} "
            f"instead. Hint: enable anomaly detection to find the operation that failed to "
            f"compute its gradient, with funcgrad.autograd.set_detect_anomaly(True, check_nan=False).")


def _short_node_name(t):
    """The node name PyTorch's version error prints: its C++ class name, where generated nodes
    drop ``Backward`` and a trailing overload ``0`` (``MulBackward0`` -> ``Mul``, ``ClampBackward1``
    -> ``Clamp1``) and the hand-written ones keep their namespace. A modified view's node is the
    ``AsStridedBackward0`` PyTorch regenerates for it."""
    if t._viewinfo is not None:
        return "AsStrided"
    return _short_name(t._grad_fn.name())


def _short_name(name):
    if name.startswith("torch::autograd::"):  # (a hand-written node's name())
        return name
    head, sep, nr = name.rpartition("Backward")
    if sep and nr.isdigit():
        return head + ("" if nr == "0" else nr)
    return name



_tensor.register_above(apply=apply)
