"""Forward-mode AD (PyTorch's ``torch.autograd.forward_ad``): dual tensors carrying a tangent.

Inside ``dual_level()``, ``make_dual(x, t)`` gives a view of ``x`` whose tangent is ``t``; every op
applied to tensors with tangents gives its result the tangent ``J t`` (the Jacobian-vector
product), which ``unpack_dual`` returns. How it hooks into funcgrad:

* **Where.** While a level is active, ``_tensor.DUAL[0]`` is that level and ``_storage.ACTIVE`` is
  raised by one, so ``apply``'s fast paths (which decline while it is non-zero, as for a binding
  frame) leave every op to the full path ``_apply``, whose first line hands the call to
  ``_Level.apply``. Code that never enters a level runs the fast paths as before: nothing is added
  to them. ``Tensor._snapshot`` and ``Tensor._commit`` (in-place ops) ask the level too.
* **Tangents per op.** A view op gives the tangent the same view of the input's tangent (so an
  in-place write through either reaches its base's, as in PyTorch). Any other op's tangent is its
  jvp op's result: ``jax.jvp`` of the op's pure function (its cast and its ``Op.jvp`` slot, the
  derivative PyTorch states where it differs from jax's, included: ``Op.traced``), an ``Op`` of its
  own made once per (op, static arguments, cast, which inputs have tangents) and applied through
  dispatch: a cached ``jax.jit`` kernel, and a recorded node when a primal or a tangent requires
  grad, so ``backward`` through a tangent works. Complex tangents are the pushforward ``df``, as
  PyTorch's (no conjugation: that is the backward convention).
* **State.** A tangent is kept by the level (by the tensor's id, dropped when the tensor dies), not
  on the tensor, and all are dropped when the level exits. A view without one reads its base's,
  viewed (PyTorch's ``fw_grad`` of a view); an in-place op writes self's tangent in place, giving a
  view's base a zero tangent first (``AutogradMeta::set_fw_grad``).

>>> import funcgrad
>>> import funcgrad.autograd.forward_ad as fwAD
>>> with fwAD.dual_level():
...     x = fwAD.make_dual(funcgrad.tensor([1.0, 2.0]), funcgrad.tensor([1.0, 0.0]))
...     fwAD.unpack_dual(x * x).tangent
tensor([2., 0.])
"""

from __future__ import annotations

import weakref
from typing import NamedTuple

import jax

from .. import _dispatch, _dtype, _grad_mode, _storage, _tensor
from .._dispatch import Op, _apply, result_dtype
from .._factories import zeros as _zeros
from .._grad_mode import _GradModeBase
from .._ops import OPS
from .._tensor import Tensor

__all__ = ["UnpackedDualTensor", "enter_dual_level", "exit_dual_level", "make_dual", "unpack_dual",
           "dual_level"]

_current_level = [-1]  # PyTorch's module global of the same name: the level entered, -1 for none
_state = _grad_mode._state
_VIEW = OPS["view"]  # make_dual's result: a view of the primal (ViewBackward0, as PyTorch's)
_alias = OPS["getitem_alias"]
# unpack_dual's primal: PyTorch's _fw_primal, an alias view whose node is named Identity (its op key
# is the alias view's, whose stride rule it shares)
_FW_PRIMAL = Op(_alias.name, _alias.fn, "Identity", view=True, linear=True, diff=(0,), host=_alias.host)


class _Level:
    """The active dual level: the tangents set at it, and the hooks dispatch and Tensor call."""

    def __init__(self):
        self.tangents: dict = {}  # id(tensor) -> (weakref to it, its tangent)
        # views that never read their base's tangent (detach(), .data, unpack_dual's primal and
        # views of it: PyTorch's views without forward view info)
        self.opaques: dict = {}

    # ---- tangents --------------------------------------------------------------------------
    def direct(self, t):
        e = self.tangents.get(id(t))
        return e[1] if e is not None and e[0]() is t else None

    def tangent(self, t):
        """``t``'s tangent at this level: its own, or for a view its base's, viewed (then kept)."""
        e = self.tangents.get(id(t))
        if e is not None and e[0]() is t:
            return e[1]
        vi = t._viewinfo
        if vi is None or self._opaque(t):
            return None
        bt = self.direct(vi.base)
        if bt is None:
            return None
        for op, skey, dyn in vi.chain:
            bt = _apply(op, (bt, *dyn), dict(skey), False)
        self.set(t, bt)
        return bt

    def set(self, t, tangent) -> None:
        _remember(self.tangents, t, tangent)

    def opaque(self, t) -> None:
        _remember(self.opaques, t, None)

    def _opaque(self, t) -> bool:
        e = self.opaques.get(id(t))
        return e is not None and e[0]() is t or any(op is _FW_PRIMAL for op, _, _ in t._viewinfo.chain)

    # ---- dispatch ---------------------------------------------------------------------------
    def apply(self, op, args, static):
        """``_apply(op, args, static)``, its results given their tangents."""
        out = _apply(op, args, static, False)
        if op.grad_name is None or _state.inference:  # (inference mode: no forward AD, as PyTorch)
            return out
        n = len(args)
        tans = None
        for i in op.positions(n):
            a = args[i]
            if isinstance(a, Tensor):
                t = self.tangent(a)
                if t is not None:
                    if tans is None:
                        tans = [None] * n
                    tans[i] = t
        if tans is None:
            return out
        single = type(out) is not tuple
        outs = (out,) if single else out
        douts = range(len(outs)) if op.diff_outputs is None else op.diff_outputs
        pick = tuple(j for j in douts if outs[j].dtype.is_floating_point or outs[j].dtype.is_complex)
        if not pick:  # (integer results: no tangent)
            return out
        if op.view:  # the same view of the input's tangent
            if tans[0] is None:
                return out
            res = _apply(op, (tans[0], *args[1:]), static, False)
            res = (res,) if single else tuple(res[j] for j in pick)
        else:
            mask = tuple(t is not None for t in tans)
            jop = _jvp_op(op, tuple(static.items()), _cast(op, args), n, mask, None if single else pick)
            res = _apply(jop, (*args, *[t for t in tans if t is not None]), {}, False)
            res = (res,) if single else res
        for j, r in zip(pick, res, strict=True):
            self.set(outs[j], r)
        return out

    # ---- in-place ops (Tensor._snapshot, Tensor._commit) ------------------------------------
    def snapshot(self, src, snap) -> None:
        """``snap`` (``src``'s value, computed on in place) carries ``src``'s tangent."""
        t = self.tangent(src)
        if t is not None:
            self.set(snap, t)

    def commit(self, t, out) -> None:
        """``out`` is about to be written into ``t``: ``t``'s tangent becomes ``out``'s (zeros if it
        has none), written in place, so the views of it and its base see it; a ``t`` without one
        gets a copy of ``out``'s, and a view without one a view of a zero tangent given to its base
        (``AutogradMeta::set_fw_grad``)."""
        ot = self.tangent(out)
        st = self.tangent(t)
        if st is None and ot is None:
            return
        if st is not None:
            if ot is None:
                st.zero_()
            else:
                st.copy_(ot)
            return
        vi = t._viewinfo
        if vi is None or self._opaque(t):
            self.set(t, ot.clone())
            return
        bt = _zeros(vi.base.shape, dtype=ot.dtype)
        self.set(vi.base, bt)
        self.tangent(t).copy_(ot)  # (t's: the view of bt)


def _remember(table, t, value) -> None:
    """``table[id(t)] = (weakref to t, value)``, dropped when ``t`` dies (its id may be reused)."""
    key = id(t)

    def gone(_):
        table.pop(key, None)
    table[key] = (weakref.ref(t, gone), value)


def _cast(op, args):
    """The dtype ``op`` computes in for these operands (``_apply``'s decision)."""
    if op.promote == "none":
        return None
    vals = [a._value if isinstance(a, Tensor) else a for a in args]
    if op.promote == "float":
        return None if vals[0].dtype in _dispatch._INEXACT else _dtype._default[0]
    return result_dtype(op, args, vals)


_JVP_OPS: dict = {}


def _jvp_op(op, skey, cast, nargs, mask, pick):
    """The op computing ``op``'s output tangent(s) from its operands and the tangents of the
    operands ``mask`` marks (``pick``: for a tuple-valued op, the outputs given a tangent)."""
    key = (op, skey, cast, nargs, mask, pick)
    jop = _JVP_OPS.get(key)
    if jop is not None:
        return jop
    f = op.traced(skey, cast, nargs)
    idx = [i for i in range(nargs) if mask[i]]

    def fn(*a):
        prim, tans = a[:nargs], a[nargs:]

        def g(*d):
            full = list(prim)
            for i, v in zip(idx, d, strict=True):
                full[i] = v
            return f(*full)
        p = [prim[i] for i in idx]
        _, t_out = jax.jvp(g, p, [t.astype(x.dtype) for t, x in zip(tans, p, strict=True)])
        return t_out if pick is None else tuple(t_out[j] for j in pick)
    diff = None if op.diff is None else tuple(op.diff) + tuple(range(nargs, nargs + len(idx)))
    jop = _JVP_OPS[key] = Op(op.name + "_jvp", fn, op.grad_name + "Jvp", diff=diff)
    return jop


# ---- the public API (PyTorch's torch/autograd/forward_ad.py) -----------------------------------
class UnpackedDualTensor(NamedTuple):
    """``unpack_dual``'s result: the primal (a view of the dual, without its tangent) and the
    tangent (``None`` for a tensor without one)."""

    primal: Tensor
    tangent: Tensor | None


def enter_dual_level() -> int:
    """Enter a forward-AD level (only one at a time, as in PyTorch) and return it (0)."""
    if _current_level[0] >= 0:  # (ForwardADLevel::get_next_idx)
        raise RuntimeError("Nested forward mode AD is not supported at the moment")
    # every op takes dispatch's full path while a level is active (see the module's docstring)
    with _storage._bind_lock:
        _storage.ACTIVE[0] += 1
    _tensor.DUAL[0] = _Level()
    _current_level[0] = 0
    return 0


def exit_dual_level(*, level: int | None = None) -> None:
    """Exit the level ``level`` (the current one by default): every tangent set at it is gone."""
    if level is None:
        level = _current_level[0]
    if level != _current_level[0]:
        raise RuntimeError("Trying to exit a forward AD level that was not the last one that was "
                           "created. This is not supported.")
    if level < 0:
        raise RuntimeError("Dual level must be a positive number.")
    lvl, _tensor.DUAL[0] = _tensor.DUAL[0], None
    _current_level[0] = -1
    with _storage._bind_lock:
        _storage.ACTIVE[0] -= 1
    lvl.tangents.clear()
    lvl.opaques.clear()


def make_dual(tensor: Tensor, tangent: Tensor, *, level: int | None = None) -> Tensor:
    """A view of ``tensor`` whose tangent is ``tangent`` (as it is when it has the same layout,
    else a copy with ``tensor``'s). Differentiable by ``backward`` in both.

    >>> import funcgrad
    >>> import funcgrad.autograd.forward_ad as fwAD
    >>> with fwAD.dual_level():
    ...     fwAD.make_dual(funcgrad.tensor([1.0]), funcgrad.tensor([2.0]))
    tensor([1.], tangent=tensor([2.]))
    """
    if level is None:
        level = _current_level[0]
    if level < 0:
        raise RuntimeError("Trying to create a dual Tensor for forward AD but no level exists, make "
                           "sure to enter_dual_level() first.")
    if not (tensor.is_floating_point() or tensor.is_complex()):
        raise ValueError(f"Expected primal to be floating point or complex, but got: {tensor.dtype}")
    if not (tangent.is_floating_point() or tangent.is_complex()):
        raise ValueError(f"Expected tangent to be floating point or complex, but got: {tangent.dtype}")
    lvl = _tensor.DUAL[0]
    if lvl is not None and lvl.tangent(tensor) is not None:
        raise RuntimeError(f"Making a dual Tensor based on a Tensor that already has a forward "
                           f"gradient at the same level {level} is not supported.")
    if level != 0 or lvl is None:
        raise RuntimeError("Invalid level given to _make_dual")
    if lvl.tangent(tangent) is not None:  # (AutogradMeta::set_fw_grad's checks)
        raise RuntimeError(f"Setting a forward grad that itself has a forward gradient at the same "
                           f"level{level} is not supported.")
    if tangent.shape != tensor.shape:
        raise RuntimeError(f"Trying to set a forward gradient that has a different size than that of "
                           f"the original Tensor, this is not supported. Tensor is of size "
                           f"{list(tensor.shape)} while the given forward gradient is of size "
                           f"{list(tangent.shape)}.")
    dual = _apply(_VIEW, (tensor,), {"shape": tuple(tensor.shape)}, False)
    if not _same_layout(tangent, dual):
        # a copy laid out as the primal (_new_zeros_with_same_feature_meta): zeros shaped as its
        # storage, viewed as it is, the tangent copied in
        vi = tensor._viewinfo
        copy = _zeros((vi.base if vi is not None else tensor).shape, dtype=tangent.dtype)
        for op, skey, dyn in vi.chain if vi is not None else ():
            copy = _apply(op, (copy, *dyn), dict(skey), False)
        tangent = copy.copy_(tangent)
    lvl.set(dual, tangent)
    return dual


def _same_layout(a, b) -> bool:
    """PyTorch's ``has_same_meta``: storage offset, sizes and strides (of dims longer than 1)."""
    if a.storage_offset() != b.storage_offset():
        return False
    return all(sa == sb or n == 1 for n, sa, sb in zip(b.shape, a.stride(), b.stride(), strict=True))


def unpack_dual(tensor: Tensor, *, level: int | None = None) -> UnpackedDualTensor:
    """``(primal, tangent)`` of ``tensor``: the primal a view of it without its tangent, the
    tangent as it is (``None`` for a tensor without one; outside a level ``tensor`` itself)."""
    if level is None:
        level = _current_level[0]
    if level < 0:
        return UnpackedDualTensor(tensor, None)
    lvl = _tensor.DUAL[0]
    tangent = lvl.tangent(tensor) if lvl is not None else None
    if level != 0 and tangent is not None:
        raise RuntimeError("Invalid level given to _fw_primal")
    return UnpackedDualTensor(_apply(_FW_PRIMAL, (tensor,), {"idx": ()}, False), tangent)


class dual_level(_GradModeBase):
    """Context manager (and decorator) for forward AD: ``enter_dual_level`` on entering (its
    level is the ``as`` target), ``exit_dual_level`` on leaving, which drops every tangent.

    >>> import funcgrad
    >>> import funcgrad.autograd.forward_ad as fwAD
    >>> with fwAD.dual_level():
    ...     out = fwAD.make_dual(funcgrad.tensor([1.0]), funcgrad.tensor([2.0])).exp()
    ...     fwAD.unpack_dual(out).tangent
    tensor([5.4366])
    >>> fwAD.unpack_dual(out).tangent is None
    True
    """

    def __new__(cls, *args, **kwargs):  # (PyTorch's takes no function: @dual_level() decorates)
        return object.__new__(cls)

    def __enter__(self) -> int:
        return enter_dual_level()

    def __exit__(self, *exc) -> None:
        exit_dual_level()
