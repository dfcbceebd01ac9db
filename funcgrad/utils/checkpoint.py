"""``funcgrad.utils.checkpoint``: activation checkpointing, PyTorch's API.

``checkpoint(fn, *args)`` runs ``fn`` without recording a graph and saves only its inputs; the
backward recomputes ``fn`` (with grad mode on and the forward's RNG state, so dropout masks
repeat) and backpropagates through the recomputed graph, as PyTorch's reentrant variant does.
Parameters that ``fn`` uses receive their gradients from that inner backward.

Inside ``funcgrad.jit`` the same recompute runs on tracers: the step's XLA program computes
``fn`` again in its backward part. As ``jax.checkpoint`` does (its ``prevent_cse``), the saved
inputs and the incoming gradients pass through ``jax.lax.optimization_barrier`` first, so XLA
cannot merge the recomputation back into the forward (which would keep the activations alive). ``use_reentrant=False`` uses the same mechanism; its node is then named
``CheckpointFunctionBackward`` where PyTorch's non-reentrant variant leaves the inner nodes, and
when no input requires grad it runs ``fn`` plainly (without recompute) so that the parameters
still get their gradients, as in PyTorch.
"""

from __future__ import annotations

import warnings

import jax

from .. import _random
from .._tensor import Tensor
from ..autograd import backward as _backward
from ..autograd.function import Function
from ..autograd.grad_mode import enable_grad, is_grad_enabled, no_grad

__all__ = ["checkpoint", "checkpoint_sequential"]


class CheckpointFunction(Function):
    """Forward under ``no_grad`` saving inputs; backward recomputes and backpropagates."""

    @staticmethod
    def forward(ctx, run_function, preserve_rng_state, *args):
        if not any(isinstance(a, Tensor) and a.requires_grad for a in args):
            warnings.warn("None of the inputs have requires_grad=True. Gradients will be None", stacklevel=5)
        ctx.run_function = run_function
        ctx.preserve_rng_state = preserve_rng_state
        if preserve_rng_state:  # the state vector (a tracer inside a compiled step), not its bytes
            ctx.fwd_rng_state = _random.default_generator._cell.value
        ctx.inputs, ctx.tensor_indices, tensors = [], [], []
        for i, a in enumerate(args):
            if isinstance(a, Tensor):
                tensors.append(a)
                ctx.tensor_indices.append(i)
                ctx.inputs.append(None)
            else:
                ctx.inputs.append(a)
        ctx.save_for_backward(*tensors)
        with no_grad():
            return run_function(*args)

    @staticmethod
    def backward(ctx, *grads):
        inputs = list(ctx.inputs)
        for i, t in zip(ctx.tensor_indices, ctx.saved_tensors):
            inputs[i] = t
        detached = _barrier([_detach(a) for a in inputs], grads)
        cell = _random.default_generator._cell
        state = cell.value if ctx.preserve_rng_state else None
        try:
            if state is not None:
                cell.value = ctx.fwd_rng_state
            with enable_grad():
                outputs = ctx.run_function(*detached)
        finally:
            if state is not None:
                cell.value = state
        if isinstance(outputs, Tensor):
            outputs = (outputs,)
        outs, gs = [], []
        for o, g in zip(outputs, grads):
            if isinstance(o, Tensor) and o.requires_grad:
                outs.append(o)
                gs.append(g)
        if not outs:
            raise RuntimeError("none of output has requires_grad=True, this checkpoint() is not necessary")
        _backward(outs, gs)
        return (None, None) + tuple(a.grad if isinstance(a, Tensor) else None for a in detached)


def _barrier(detached, grads):
    """Under tracing (a compiled step): the inputs through ``lax.optimization_barrier`` together
    with the gradients, so the recompute depends on the backward and is not CSE'd with the forward."""
    pos = [i for i, a in enumerate(detached) if isinstance(a, Tensor)]
    gvals = [g._value for g in grads if isinstance(g, Tensor)]
    vals = [detached[i]._value for i in pos]
    if not any(isinstance(v, jax.core.Tracer) for v in vals + gvals):
        return detached
    fenced = jax.lax.optimization_barrier((vals, gvals))[0]
    out = list(detached)
    for i, v in zip(pos, fenced):
        t = Tensor._wrap(v)
        t.requires_grad = detached[i].requires_grad
        out[i] = t
    return out


def _detach(a):
    if not isinstance(a, Tensor):
        return a
    d = a.detach()
    d.requires_grad = a.requires_grad
    return d


_REENTRANT_MSG = ("torch.utils.checkpoint: the use_reentrant parameter should be passed explicitly. Starting "
                  "in PyTorch 2.9, calling checkpoint without use_reentrant will raise an exception. "
                  "use_reentrant=False is recommended, but if you need to preserve the current default "
                  "behavior, you can pass use_reentrant=True. Refer to docs for more details on the "
                  "differences between the two variants.")


def checkpoint(function, *args, use_reentrant: bool | None = None, context_fn=None,
               determinism_check: str = "default", debug: bool = False, **kwargs):
    """Run ``function(*args)`` saving only its inputs; recompute it in the backward pass.

    >>> import funcgrad
    >>> from funcgrad.utils.checkpoint import checkpoint
    >>> x = funcgrad.tensor([1.0, 2.0], requires_grad=True)
    >>> y = checkpoint(lambda a: (a * a).sin(), x, use_reentrant=True)
    >>> y.sum().backward()
    >>> x.grad
    tensor([ 1.0806, -2.6146])
    """
    if use_reentrant is None:
        warnings.warn(_REENTRANT_MSG, stacklevel=2)
        use_reentrant = True
    preserve = kwargs.pop("preserve_rng_state", True)
    if kwargs and use_reentrant:
        raise ValueError("Unexpected keyword arguments: " + ",".join(arg for arg in kwargs))
    if use_reentrant and (context_fn is not None or debug is not False):
        raise ValueError("Passing `context_fn` or `debug` is only supported when use_reentrant=False.")
    if not use_reentrant and (kwargs or not is_grad_enabled()
                              or not any(isinstance(a, Tensor) and a.requires_grad for a in args)):
        # the non-reentrant variant gives parameters their gradients even when no input requires
        # grad; the recompute node could not (its output would not require grad): run plainly
        return function(*args, **kwargs)
    return CheckpointFunction.apply(function, preserve, *args)


_SEQ_MSG = ("torch.utils.checkpoint.checkpoint_sequential: the use_reentrant parameter should be passed "
            "explicitly. In version 2.9 we will raise an exception if use_reentrant is not passed. "
            "use_reentrant=False is recommended, but if you need to preserve the current default behavior, "
            "you can pass use_reentrant=True. Refer to docs for more details on the differences between "
            "the two variants.")


def checkpoint_sequential(functions, segments: int, input, use_reentrant: bool | None = None, **kwargs):
    """Checkpoint a ``Sequential`` (or list of callables) in ``segments`` chunks; the last chunk
    runs normally, as in PyTorch."""
    if use_reentrant is None:
        warnings.warn(_SEQ_MSG, stacklevel=2)
        use_reentrant = True
    preserve = kwargs.pop("preserve_rng_state", True)
    if kwargs:
        raise ValueError("Unexpected keyword arguments: " + ",".join(arg for arg in kwargs))

    def run_function(start, end, functions):
        def forward(input):
            for j in range(start, end + 1):
                input = functions[j](input)
            return input
        return forward

    if hasattr(functions, "children"):
        functions = list(functions.children())
    segment_size = len(functions) // segments
    end = -1
    for start in range(0, segment_size * (segments - 1), segment_size):
        end = start + segment_size - 1
        input = checkpoint(run_function(start, end, functions), input, use_reentrant=use_reentrant,
                           preserve_rng_state=preserve)
    return run_function(end + 1, len(functions) - 1, functions)(input)
