"""``functional_call``: PyTorch 2.0's deprecated name for ``funcgrad.func.functional_call``."""

from __future__ import annotations

from ..._errors import warn_at_user

__all__ = ["functional_call"]

_MSG = ("`torch.nn.utils.stateless.functional_call` is deprecated as of PyTorch 2.0 and will be removed in a "
        "future version of PyTorch. Please use `torch.func.functional_call` instead which is a drop-in "
        "replacement.")


def functional_call(module, parameters_and_buffers, args=None, kwargs=None, *, tie_weights: bool = True,
                    strict: bool = False):
    """Deprecated (PyTorch's ``FutureWarning``): ``funcgrad.func.functional_call``."""
    from ... import func
    warn_at_user(_MSG, FutureWarning)
    return func.functional_call(module, parameters_and_buffers, args, kwargs, tie_weights=tie_weights,
                                strict=strict)
