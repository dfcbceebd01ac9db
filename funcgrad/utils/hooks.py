"""``funcgrad.utils.hooks``: PyTorch's ``torch.utils.hooks`` import path for ``RemovableHandle``
(the handle every ``Module.register_*_hook`` returns)."""

from ..nn._hooks import RemovableHandle as RemovableHandle

__all__ = ["RemovableHandle"]
