"""``funcgrad.backends.mkldnn``: XLA does not use mkldnn; ``is_available()`` is False."""


def is_available() -> bool:
    return False
