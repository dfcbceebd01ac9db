"""Grad modes: thread-local switches that are context managers and decorators at once."""

from __future__ import annotations

import functools
import inspect
import threading


class _State(threading.local):
    """This thread's grad mode. Every change of ``inference`` (whoever makes it) is counted in
    ``INFERENCE``: while no thread has it on, apply's fast path reads a global, not this thread's
    state. A thread that ends in inference mode stays counted (the fast path then reads its own
    state: only slower)."""

    def __init__(self):
        threading.local.__setattr__(self, "enabled", True)
        threading.local.__setattr__(self, "inference", False)

    def __setattr__(self, name, value):
        if name != "inference":
            return threading.local.__setattr__(self, name, value)
        with _lock:
            was = self.inference
            threading.local.__setattr__(self, name, value)
            if bool(value) != bool(was):
                INFERENCE[0] += 1 if value else -1


_lock = threading.Lock()
INFERENCE = [0]  # threads whose inference mode is on (see _State)
_state = _State()
_anomaly = [False, True]  # [enabled, check_nan] (PyTorch starts with check_nan on): autograd.anomaly_mode


def is_grad_enabled() -> bool:
    """Whether operations record a graph in this thread."""
    return _state.enabled


def is_inference_mode_enabled() -> bool:
    return _state.inference


class _GradModeBase:
    """A context manager that can also decorate functions (and generators), as in PyTorch."""

    def __new__(cls, orig_func=None, *args, **kwargs):
        # `@no_grad` (without parentheses) decorates directly, as PyTorch 2 allows.
        if orig_func is not None and callable(orig_func) and cls is not set_grad_enabled:
            return cls()(orig_func)
        return super().__new__(cls)

    def clone(self):
        return self.__class__()

    def __call__(self, func):
        if inspect.isgeneratorfunction(func):
            @functools.wraps(func)
            def gen_wrapper(*args, **kwargs):
                gen = func(*args, **kwargs)
                with self.clone():
                    response = gen.send(None)
                while True:
                    try:
                        request = yield response
                    except GeneratorExit:
                        with self.clone():
                            gen.close()
                        raise
                    try:
                        with self.clone():
                            response = gen.send(request)
                    except StopIteration as e:
                        return e.value
            return gen_wrapper

        @functools.wraps(func)
        def wrapper(*args, **kwargs):
            with self.clone():
                return func(*args, **kwargs)
        return wrapper

    def __enter__(self):
        self._prev = (_state.enabled, _state.inference)
        self._set()

    def __exit__(self, *exc):
        _state.enabled, _state.inference = self._prev
        return False


class no_grad(_GradModeBase):
    """Disable graph recording: results of ops never require grad.

    >>> import funcgrad
    >>> x = funcgrad.ones(2, requires_grad=True)
    >>> with funcgrad.no_grad():
    ...     y = x * 2
    >>> y.requires_grad
    False
    """

    def __init__(self, orig_func=None):
        pass

    def _set(self):
        _state.enabled = False


class enable_grad(_GradModeBase):
    """Enable graph recording inside a ``no_grad`` region."""

    def __init__(self, orig_func=None):
        pass

    def _set(self):
        _state.enabled = True


class set_grad_enabled(_GradModeBase):
    """``set_grad_enabled(False)``: takes effect at once (as a function) or for a ``with`` block."""

    def __init__(self, mode: bool):
        self.mode = bool(mode)
        self._prev = (_state.enabled, _state.inference)
        _state.enabled = self.mode

    def clone(self):
        return set_grad_enabled(self.mode)

    def __enter__(self):
        pass  # already applied in __init__, as PyTorch does

    def __exit__(self, *exc):
        _state.enabled, _state.inference = self._prev
        return False


class inference_mode(_GradModeBase):
    """Like ``no_grad``, and tensors made inside are inference tensors (``is_inference()``): they
    have no version counter, cannot be saved for backward, and cannot be changed in place outside
    the mode. ``inference_mode(False)`` is a no-op.

    >>> import funcgrad
    >>> with funcgrad.inference_mode():
    ...     x = funcgrad.ones(2) * 2
    >>> x.is_inference(), x.requires_grad
    (True, False)
    """

    def __init__(self, mode: bool = True):
        self.mode = mode if isinstance(mode, bool) else True

    def clone(self):
        return inference_mode(self.mode)

    def _set(self):
        if self.mode:
            _state.enabled = False
            _state.inference = True
