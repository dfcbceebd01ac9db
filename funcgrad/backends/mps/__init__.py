"""``funcgrad.backends.mps``: JAX has no Metal backend funcgrad supports, so both answers are False."""


def is_available() -> bool:
    return False


def is_built() -> bool:
    return False
