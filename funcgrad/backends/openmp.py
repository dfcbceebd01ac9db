"""``funcgrad.backends.openmp``: XLA does not use openmp; ``is_available()`` is False."""


def is_available() -> bool:
    return False
