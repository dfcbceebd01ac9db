"""``funcgrad.sparse``: PyTorch's ``torch.sparse`` for sparse COO tensors (funcgrad/_sparse.py).

>>> import funcgrad, warnings
>>> s = funcgrad.eye(2).to_sparse()
>>> funcgrad.sparse.mm(s, funcgrad.ones(2, 1))
tensor([[1.],
        [1.]])
>>> funcgrad.sparse.sum(s)
tensor(2.)
"""

from __future__ import annotations

import functools

from ._sparse import _CHECK
from ._sparse import mm as mm  # noqa: A004  (PyTorch's names)
from ._sparse import sum as sum

__all__ = ["check_sparse_tensor_invariants", "mm", "sum"]


class check_sparse_tensor_invariants:  # noqa: N801  (PyTorch's name)
    """``torch.sparse.check_sparse_tensor_invariants``: whether ``sparse_coo_tensor`` checks its
    indices against its size by default; ``enable()``/``disable()``, a context manager and a
    decorator (``check_sparse_tensor_invariants(enable=True)``).

    >>> import funcgrad
    >>> with funcgrad.sparse.check_sparse_tensor_invariants():
    ...     funcgrad.sparse_coo_tensor([[0, 5]], [1., 2.], (2,))
    Traceback (most recent call last):
    ...
    RuntimeError: size is inconsistent with indices: for dim 0, size is 2 but found index 5
    """

    @staticmethod
    def is_enabled() -> bool:
        return bool(_CHECK[0])

    @staticmethod
    def enable() -> None:
        _CHECK[0] = True

    @staticmethod
    def disable() -> None:
        _CHECK[0] = False

    def __init__(self, enable: bool = True):
        self.state, self.saved_state = enable, None

    def __enter__(self):
        if self.saved_state is not None:
            raise RuntimeError("This context manager instance is already activated. Use a different "
                               "context manager instance for context nesting.")
        self.saved_state = _CHECK[0]
        _CHECK[0] = self.state

    def __exit__(self, *exc):
        _CHECK[0], self.saved_state = self.saved_state, None

    def __call__(self, fn):
        @functools.wraps(fn)
        def call(*args, **kwargs):
            with check_sparse_tensor_invariants(self.state):
                return fn(*args, **kwargs)
        return call
