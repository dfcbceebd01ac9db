"""``funcgrad.backends.cpu``."""


def get_cpu_capability() -> str:
    """XLA compiles for the host CPU; PyTorch names its vector ISA (``'AVX2'``…). funcgrad says
    ``'DEFAULT'`` since it does not pick kernels by ISA."""
    return "DEFAULT"
