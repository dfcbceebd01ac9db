"""``funcgrad.backends.mkl``: XLA does not use mkl; ``is_available()`` is False."""


def is_available() -> bool:
    return False
