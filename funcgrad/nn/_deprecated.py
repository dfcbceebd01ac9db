"""PyTorch's deprecated nn classes (``nn.Container``, ``nn.NLLLoss2d``): ``typing_extensions.
deprecated`` as PyTorch applies it, without the dependency. Creating an instance of the class
itself, or a subclass of it, warns ``FutureWarning`` at the user's line; a subclass's instances
do not."""

from __future__ import annotations

from .._errors import warn_at_user


def deprecated_class(message: str):
    """Class decorator: ``message`` as a ``FutureWarning`` on instantiation and subclassing."""
    def deco(cls):
        original_new = cls.__new__

        def __new__(c, *args, **kwargs):
            if c is cls:
                warn_at_user(message, FutureWarning)
            if original_new is object.__new__:
                return original_new(c)
            return original_new(c, *args, **kwargs)
        cls.__new__ = staticmethod(__new__)

        def __init_subclass__(sub, **kwargs):
            warn_at_user(message, FutureWarning)
            super(cls, sub).__init_subclass__(**kwargs)
        cls.__init_subclass__ = classmethod(__init_subclass__)
        cls.__deprecated__ = message
        return cls
    return deco
