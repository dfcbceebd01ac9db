"""``funcgrad.autograd``: ``backward``, ``grad`` and the grad-mode switches."""

from __future__ import annotations

import math as _math
import sys as _sys

# graph nodes and grad modes sit at the bottom of the import DAG (the Tensor and dispatch build
# on them), so they live outside this package, whose __init__ imports the engine:
# ``funcgrad.autograd.graph`` and ``funcgrad.autograd.grad_mode`` are those same module objects.
from .. import _grad_mode as grad_mode, _graph as graph
_sys.modules[__name__ + ".grad_mode"] = grad_mode
_sys.modules[__name__ + ".graph"] = graph

from . import engine  # noqa: E402
from . import fused as _fused  # noqa: E402  (registers the fused backward with the engine)
from . import view_rebase as _view_rebase  # noqa: E402, F401  (registers a view's rebase)
from . import saved as _saved  # noqa: E402, F401  (grad_fn._saved_<name> on the nodes)
from .. import _ahead, _cache, _dtype, _tensor  # noqa: E402
from .._factories import tensor as _tensor_of, zeros_like as _zeros_like  # noqa: E402
from .._tensor import Tensor as _Tensor, _Array  # noqa: E402
from .._meta import MetaArray as _MetaArray  # noqa: E402
from .._cache import _sweep  # noqa: E402
from .._ahead import active as _ahead_active  # noqa: E402
from .._grad_mode import _anomaly  # noqa: E402
from .grad_mode import (enable_grad as enable_grad, inference_mode as inference_mode,
                        is_grad_enabled as is_grad_enabled, no_grad as no_grad,
                        set_grad_enabled as set_grad_enabled)
from .graph import Node as Node
from . import graph as graph  # noqa: E402
from .anomaly_mode import (detect_anomaly as detect_anomaly,  # noqa: E402
                           is_anomaly_check_nan_enabled as is_anomaly_check_nan_enabled,
                           is_anomaly_enabled as is_anomaly_enabled,
                           set_detect_anomaly as set_detect_anomaly)
from .function import Function as Function, once_differentiable as once_differentiable  # noqa: E402
from . import function as function  # noqa: E402
from . import functional as functional  # noqa: E402
from . import forward_ad as forward_ad  # noqa: E402  (torch.autograd.forward_ad)
from .gradcheck import (GradcheckError as GradcheckError, gradcheck as gradcheck,  # noqa: E402
                        gradgradcheck as gradgradcheck)
from .gradcheck import register_grad as _gradcheck_register_grad  # noqa: E402


def _as_list(x):
    if x is None:
        return []
    if isinstance(x, (_Tensor, graph.GradientEdge)):
        return [x]
    return list(x)


def _root_grads(outputs, grad_outputs, create_graph):
    roots, grads = [], []
    for i, (out, g) in enumerate(zip(outputs, grad_outputs)):
        if out._viewinfo is not None:
            out._fresh()  # (a view: its node made anew if stale; one made under no_grad has none)
        if not out._requires_grad:
            raise RuntimeError(f"element {i} of tensors does not require grad and does not have a grad_fn")
        if g is None:
            if out.numel() != 1:
                raise RuntimeError("grad can be implicitly created only for scalar outputs")
            if not out.dtype.is_floating_point:
                raise RuntimeError(f"grad can be implicitly created only for real scalar outputs but got "
                                   f"{out.dtype}")
            g = _ones(out)
        else:
            if not isinstance(g, _Tensor):
                g = _tensor_of(g, dtype=out.dtype)
            if g.shape != out.shape:
                raise RuntimeError(f"Mismatch in shape: grad_output[{i}] has a shape of {g.shape} and "
                                   f"output[{i}] has a shape of {out.shape}.")
            if not create_graph:
                g = g.detach()
        roots.append(out._edge())
        grads.append(g)
    return roots, grads


def _float_dtypes():
    import numpy as np
    return frozenset(np.dtype(d.np) for d in _dtype.ALL if d._kind == "f")


_ONES: dict = {}
_FLOATS = _float_dtypes()  # the real floating dtypes


def _ones(out):
    """The implicit root gradient: a cached constant 1 of the output's shape and dtype."""
    v = out._value
    if type(v) is _MetaArray:  # (a meta root: its gradient is meta too)
        return _Tensor._wrap(v)
    key = (v.shape, v.dtype)
    one = _ONES.get(key)
    if one is None:
        import jax
        import numpy as np
        with jax.ensure_compile_time_eval():  # concrete even while funcgrad.jit traces a step
            # a host buffer put on the device: jnp.ones would compile a broadcast per shape
            one = _ONES[key] = jax.device_put(np.ones(v.shape, v.dtype))
    return _Tensor._wrap(one)


def backward(tensors, grad_tensors=None, retain_graph=None, create_graph=False, inputs=None,
             grad_variables=None) -> None:
    """Accumulate d(tensors)/d(leaves) into the leaves' ``.grad`` (see ``Tensor.backward``)."""
    if _sweep["due"]:
        _cache.maybe_sweep()  # bounded compile caches: a safe point once per backward
    if _ahead_active[0]:  # an optimizer's first update, compiled ahead (_ahead.py)
        _ahead.at_backward()
    if grad_tensors is None and grad_variables is None and inputs is None and not create_graph:
        if isinstance(tensors, _Tensor) and tensors._viewinfo is not None:
            tensors._fresh()  # (a view whose storage was written since: its node made anew)
        node = getattr(tensors, "_grad_fn", None)
        if node is not None:
            # the common `loss.backward()`: a scalar non-leaf root, implicit gradient 1
            v = tensors._value
            a = v.aval if type(v) is _Array else v  # (shape and dtype without jax's properties)
            key = (a.shape, a.dtype)
            one = _ONES.get(key) if type(v) is not _MetaArray else None  # (only ever holds real
            # floating scalars' ones; a meta root's is made by _ones)
            if one is None and _math.prod(key[0]) == 1 and key[1] in _FLOATS:
                one = _ones(tensors)._value
            if one is not None:
                retain, nr = bool(retain_graph), tensors._output_nr
                # a plain graph straight to its fused program (what engine.execute tries first)
                if not _anomaly[0] and _fused.run_root(node, nr, one, retain):
                    return
                engine.execute([(node, nr)], [_Tensor._wrap(one)], retain, False,
                               fused=False)
                return
    tensors = _as_list(tensors)
    grad_tensors = _as_list(grad_tensors if grad_tensors is not None else grad_variables)
    if not grad_tensors:
        grad_tensors = [None] * len(tensors)
    if len(grad_tensors) != len(tensors):
        raise RuntimeError(f"got {len(grad_tensors)} tensors and {len(tensors)} gradients")
    if retain_graph is None:
        retain_graph = create_graph
    roots, grads = _root_grads(tensors, grad_tensors, create_graph)
    if inputs is not None:
        inputs = _as_list(inputs)
        if not inputs:
            raise RuntimeError("'inputs' argument to backward() cannot be empty.")
        for t in inputs:  # as PyTorch's: a non-leaf input keeps its .grad from now on
            if type(t) is not graph.GradientEdge:  # (a non-leaf's edge: its node runs, no .grad)
                t.retain_grad()
        # the inputs' nodes run (a leaf's AccumulateGrad adds into .grad, a non-leaf's retain_grad
        # fills it), and of the rest only what leads to them
        engine.execute(roots, grads, retain_graph, create_graph,
                       capture=[t._edge() for t in inputs], run_captured=True)
        return
    engine.execute(roots, grads, retain_graph, create_graph)


_tensor.register_above(backward=backward)  # Tensor.backward() (funcgrad/_tensor.py)


def grad(outputs, inputs, grad_outputs=None, retain_graph=None, create_graph=False,
         only_inputs=True, allow_unused=None, is_grads_batched=False, materialize_grads=False):
    """Gradients of ``outputs`` w.r.t. ``inputs`` (a tuple); ``.grad`` is not touched.

    >>> import funcgrad
    >>> x = funcgrad.tensor(3.0, requires_grad=True)
    >>> (g,) = funcgrad.autograd.grad(x ** 3, x, create_graph=True)
    >>> g, funcgrad.autograd.grad(g, x)[0]
    (tensor(27., grad_fn=<PowBackward0Backward>), tensor(18.))
    """
    outputs = _as_list(outputs)
    inputs = _as_list(inputs)
    if allow_unused is None:
        allow_unused = materialize_grads
    grad_outputs = _as_list(grad_outputs) or [None] * len(outputs)
    if len(grad_outputs) != len(outputs):
        raise RuntimeError(f"grad requires one grad_output per output: got {len(grad_outputs)} and "
                           f"{len(outputs)}")
    for t in inputs:  # (a GradientEdge stands for a tensor that requires grad)
        if type(t) is not graph.GradientEdge and not t.requires_grad:
            raise RuntimeError("One of the differentiated Tensors does not require grad")
    if retain_graph is None:
        retain_graph = create_graph
    roots, grads = _root_grads(outputs, grad_outputs, create_graph)
    res = engine.execute(roots, grads, retain_graph, create_graph,
                         capture=[t._edge() for t in inputs], accumulate=False)
    out = []
    for i, (t, g) in enumerate(zip(inputs, res)):
        if g is None:
            if not allow_unused:  # PyTorch 2.13's wording, naming the first unused input
                raise RuntimeError(f"The differentiated Tensor at index {i} appears to not have been "
                                   f"used in the graph. Set allow_unused=True if this is the desired "
                                   f"behavior.")
            if materialize_grads:
                if type(t) is graph.GradientEdge:
                    raise RuntimeError("materialize_grads cannot be used when the given input is a "
                                       "GradientEdge")
                g = _zeros_like(t)
        elif not create_graph:
            g = g.detach()
        out.append(g)
    return tuple(out)


# autograd.functional and gradcheck call grad; this package imports them above
functional.register_grad(grad)
_gradcheck_register_grad(grad)


__all__ = ["backward", "grad", "no_grad", "enable_grad", "set_grad_enabled", "inference_mode",
           "is_grad_enabled", "Node", "Function", "once_differentiable", "function", "functional",
           "gradcheck", "gradgradcheck", "GradcheckError", "detect_anomaly", "set_detect_anomaly",
           "is_anomaly_enabled", "is_anomaly_check_nan_enabled", "graph"]

from . import variable as variable  # noqa: E402
from .variable import Variable as Variable  # noqa: E402  (legacy wrapper)
