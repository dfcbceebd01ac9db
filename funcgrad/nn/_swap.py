"""``swap_tensors`` (PyTorch's ``torch.utils.swap_tensors``) and the conversion switches of
``funcgrad.__future__``, which decide how ``Module._apply`` (``.to()``, ``.double()``, ``.to_empty()``)
changes parameters: by default each keeps its object and takes the new storage (``.data``); with
``set_swap_module_params_on_conversion(True)`` the converted tensor's contents are swapped into the
parameter object; with ``set_overwrite_module_params_on_conversion(True)`` new ``Parameter`` objects
replace them.

A funcgrad Tensor is a Python object through and through (its storage cell, version counter and
autograd state are its slots and ``__dict__``), so swapping those swaps the tensors as PyTorch's
``_swap_tensor_impl`` does.
"""

from __future__ import annotations

import copyreg
import weakref

_FUTURE = {"overwrite": False, "swap": False}


def set_overwrite_module_params_on_conversion(value: bool) -> None:
    """Whether converting a module assigns new parameter objects instead of changing them in place."""
    _FUTURE["overwrite"] = value


def get_overwrite_module_params_on_conversion() -> bool:
    """See ``set_overwrite_module_params_on_conversion`` (default False)."""
    return _FUTURE["overwrite"]


def set_swap_module_params_on_conversion(value: bool) -> None:
    """Whether converting a module swaps each parameter's contents with its converted copy
    (``swap_tensors``); it takes precedence over ``set_overwrite_module_params_on_conversion``."""
    _FUTURE["swap"] = value


def get_swap_module_params_on_conversion() -> bool:
    """See ``set_swap_module_params_on_conversion`` (default False)."""
    return _FUTURE["swap"]


_POISONED = ("Trying to execute AccumulateGrad node that was poisoned by swap_tensors this can happen when "
             "you try to run backward on a tensor that was swapped. For a module m with "
             "`torch.__future__.set_swap_module_params_on_conversion(True)` you should not change the device "
             "or dtype of the module (e.g. `m.cpu()` or `m.half()`) between running forward and backward. To "
             "resolve this, please only change the device/dtype before running forward (or after both "
             "forward and backward).")


def _error_pre_hook(grad_outputs):
    raise RuntimeError(_POISONED)


def _own_weakrefs(t) -> list:
    """The weak references funcgrad itself keeps to ``t`` (its leaf node's, a retained grad's)."""
    own = []
    node = t.__dict__.get("_accum")
    if node is not None:
        own.append(node._variable)
    retain = t._grad_fn._retain if t._grad_fn is not None else None
    if retain:
        own.append(retain.get(t._output_nr))
    return own


def swap_tensors(t1, t2) -> None:
    """Swap the contents of the tensor objects ``t1`` and ``t2`` (class, ``__dict__``, slots: value,
    version counter, autograd state), keeping each object's identity.

    >>> import funcgrad
    >>> a, b = funcgrad.ones(2), funcgrad.zeros(3, dtype=funcgrad.int64)
    >>> ida = id(a)
    >>> funcgrad.utils.swap_tensors(a, b)
    >>> a, id(a) == ida
    (tensor([0, 0, 0]), True)
    """
    for t, name in ((t1, "t1"), (t2, "t2")):
        own = _own_weakrefs(t)
        if any(r not in own for r in weakref.getweakrefs(t)):
            raise RuntimeError(f"Cannot swap {name} because it has weakref associated with it")
    t1_slots = set(copyreg._slotnames(t1.__class__))
    t2_slots = set(copyreg._slotnames(t2.__class__))
    if t1_slots != t2_slots:
        raise RuntimeError("Cannot swap t1 and t2 if they have different slots")
    for t in (t1, t2):
        # a leaf's node may still be in a graph made before (PyTorch: the AccumulateGrad holding the
        # tensor): backward through it would reach the other tensor's contents, so it raises; the
        # tensor gets a fresh node for the graphs made after
        node = t.__dict__.pop("_accum", None)
        if node is not None:
            node.register_prehook(_error_pre_hook)

    def swap_attr(name):
        tmp = getattr(t1, name)
        setattr(t1, name, getattr(t2, name))
        setattr(t2, name, tmp)

    swap_attr("__class__")
    swap_attr("__dict__")
    for slot in t1_slots:
        if hasattr(t1, slot) and hasattr(t2, slot):
            swap_attr(slot)
        elif hasattr(t1, slot):
            setattr(t2, slot, getattr(t1, slot))
            delattr(t1, slot)
        elif hasattr(t2, slot):
            setattr(t1, slot, getattr(t2, slot))
            delattr(t2, slot)
