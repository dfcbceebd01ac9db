"""The XLA option funcgrad's numbers depend on, set before JAX starts its backend.

XLA:CPU hands a reduction to YNNPACK by default, and YNNPACK splits it among the threads it has,
so a sum's bits depend on the machine's core count: ``jnp.sum`` of 1e6 float32, and a small
CNN's parameters after 20 Adam steps, differ between 1 and 2 cores (measured with jaxlib 0.10.2
on an AMD EPYC). XLA's own reduction emitter gives the same bits on any core count, so funcgrad
keeps YNNPACK for what it did not make core-dependent (dots and convolutions: the same bits on 1
and 2 cores) and gives it reductions no more: ``--xla_cpu_experimental_ynn_fusion_type`` without
``REDUCE``. (Eager steps with large reductions run slower that way, compiled ones as fast or
faster: see the closing note of the change.)

jaxlib 0.11.2 knows the flag too. Its reductions gave the same bits on 1, 2 and 16 cores without
it, but other bits than 0.10.2's; with it, 0.10.2 and 0.11.2 give the same bits (measured: the
sums and variances of ``tests/test_determinism.py``), so funcgrad sets it there as well.

XLA reads ``XLA_FLAGS`` once, when JAX starts its backend; a per-program option cannot do it
(``jax.jit`` takes ``compiler_options`` only at the top level, and funcgrad's kernels also run
inside other programs). So ``funcgrad`` adds the flag to ``XLA_FLAGS`` as it is imported:

* unless ``XLA_FLAGS`` already names that flag (the user's choice stands);
* only with a jaxlib the flag is known in (an unknown flag aborts the process): for another,
  nothing is set, and ``tests/test_determinism.py`` shows whether bits depend on the cores;
* if JAX's backend started before funcgrad was imported (the flag can no longer take effect),
  funcgrad warns once: its results may then depend on the core count.
"""

from __future__ import annotations

import os

FLAG = "--xla_cpu_experimental_ynn_fusion_type"
VALUE = "LIBRARY_FUSION_TYPE_INDIVIDUAL_DOT,LIBRARY_FUSION_TYPE_INDIVIDUAL_CONVOLUTION"
TESTED_JAXLIB = ("0.10.", "0.11.")  # jaxlib versions whose XLA knows the flag (checked: 0.10.2, 0.11.2)

LATE_MSG = ("funcgrad was imported after JAX started its backend, so XLA cannot take funcgrad's "
            f"option {FLAG}={VALUE}: its CPU reductions may then give different bits on machines "
            "with different core counts. Import funcgrad before running any JAX computation, or set "
            "that option in XLA_FLAGS yourself.")


def apply() -> str:
    """Add the flag to ``XLA_FLAGS`` where it can take effect; what happened: ``"set"``,
    ``"user"`` (``XLA_FLAGS`` names it), ``"untested"`` (another jaxlib), ``"late"`` (JAX's
    backend had started: warned)."""
    flags = os.environ.get("XLA_FLAGS", "")
    if FLAG in flags:
        return "user"
    from importlib.metadata import PackageNotFoundError, version
    try:
        jaxlib = version("jaxlib")
    except PackageNotFoundError:
        return "untested"
    if not jaxlib.startswith(TESTED_JAXLIB):
        return "untested"
    from jax._src import xla_bridge
    if xla_bridge.backends_are_initialized():
        import warnings
        warnings.warn(LATE_MSG, UserWarning, stacklevel=3)
        return "late"
    os.environ["XLA_FLAGS"] = f"{flags} {FLAG}={VALUE}".strip()
    return "set"


STATE = apply()
