"""A view's node made anew once its storage was written through its base or another view:
PyTorch's ``VariableHooks::grad_fn`` and ``handle_view_on_rebase``
(torch/csrc/autograd/variable.cpp).

A view keeps the version its node was made at (``_tensor._View.ver``). Whatever reads a view's
node for autograd (``grad_fn``, ``is_leaf``, ``_edge``, dispatch's recording) calls
``Tensor._fresh`` first; where the version moved on, ``rebase_view`` gives the view an
``AsStridedBackward0`` node whose input is its base's current node, so a gradient through the
view sees the write (its old node still reads the base's old node). Views PyTorch made with a
``CreationMeta`` other than DEFAULT (under ``no_grad``; outputs of ``unbind``/``split``/
``chunk``) refuse both the write through them and, once their storage was written, the reading
of their node: ``refuse_rebase``. Registered with the Tensor at import (``register_above``).
"""

from __future__ import annotations

import weakref

from .. import _dispatch, _tensor
from .._tensor import NO_GRAD_VIEW, _apply_chain


def _view_steps(x, *, chain):
    return _apply_chain(chain, x)


# the node PyTorch makes for a view whose storage changed since its own node was made: the view's
# elements read from its base's current value (its gradient: the cotangent put back in place)
_VIEW_AGAIN = _dispatch.Op("as_strided", _view_steps, "AsStridedBackward0", linear=True)


def rebase_view(t, base=None, chain=None) -> None:
    """Give the view ``t``, whose storage's version moved on since its node was set, a node made
    from its base's current one: ``AsStridedBackward0`` over the view steps ``chain`` from
    ``base`` (``Tensor._rebase_chain``; given by ``_commit``, which rebased the base just now).
    As PyTorch's: nothing where neither the view nor its base requires grad; a view made under
    ``no_grad`` or as one output of a multi-output view op refuses; ``retain_grad`` moves to the
    new node (tensor hooks stay on the old one)."""
    vi = t._viewinfo
    if base is None:
        if t._grad_fn is None and not t._base.requires_grad:
            return  # (its version stays behind: the base may come to require grad later)
        if vi.meta is not None:
            refuse_rebase(t, True)
        base, chain = t._rebase_chain()
        if base is None:  # (a resize_ gave it a storage of its own)
            vi.ver = t._ver[0]
            return
    # (its edge: the base's node, its AccumulateGrad, or none where the base requires no grad:
    # a leaf that is itself a view of a plain tensor, whose views' base is that tensor)
    node = _dispatch._record(_VIEW_AGAIN, (base,), None, (("chain", chain),), None,
                             (base._requires_grad,), (base._value,), True)._grad_fn
    old = t._grad_fn
    if t._retains_grad and old is not None and old._retain:
        old._retain.pop(t._output_nr, None)
        node._retain = {0: weakref.ref(t)}
    t._grad_fn, t._requires_grad = node, True
    if t._output_nr:
        t._output_nr = 0
    vi.ver = t._ver[0]


def refuse_rebase(t, indirect: bool) -> None:
    """PyTorch's ``handle_view_on_rebase`` error for a view made under ``no_grad`` or by a
    multi-output op (``_View.meta``): written in place (``indirect``: its base or another view of
    it written) where grad mode records it."""
    g, meta = t._grad_fn, t._viewinfo.meta
    what = "its base or another view of its base has been" if indirect else "is being"
    if g is not None:  # (unbind's outputs are of one node each here: PyTorch's output number)
        op = getattr(g, "_op", None)
        unbind = op is not None and op.view is True and op.multi_view
        nr = dict(g._key[0])["i"] if unbind else t._output_nr
        out = f"Output {nr} of {_dispatch._short_name(g.name())} is a view"
    if meta is NO_GRAD_VIEW or g is None:
        head = "A view was created in" if g is None else out + " of a view which was created in"
        msg = f"{head} no_grad mode and {what} modified inplace with grad mode enabled."
    else:
        msg = f"{out} and {what} modified inplace."
    if meta is NO_GRAD_VIEW:
        msg += (" Given that this use case is ambiguous and error-prone, it is forbidden. You can "
                "clarify your code by moving both the view and the inplace either both inside the "
                "no_grad block (if you don't want the inplace to be tracked) or both outside (if you "
                "want the inplace to be tracked).")
    else:
        msg += (" This view is the output of a function that returns multiple views. Such functions "
                "do not allow the output views to be modified inplace. You should replace the "
                "inplace operation by an out-of-place one.")
    raise RuntimeError(msg)


_tensor.register_above(rebase_view=rebase_view, refuse_rebase=refuse_rebase)
