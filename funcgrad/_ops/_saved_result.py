"""Ops whose PyTorch derivative formula reads the op's *result* (``derivatives.yaml``: ``result``).

PyTorch saves their output for backward, so changing that output in place before backward
raises the version-counter error ("... which is output 0 of Exp, is at version 1"). funcgrad
saves the inputs and recomputes, but records the output's version for these ops and checks it
at backward (``_dispatch.SavedOutput``), so the same mistake raises the same error. The list was
found by running, in PyTorch 2.13, ``y = op(x); y.add_(1); y.sum().backward()`` for every op key
(tests/test_saved_output.py checks each against torch).
"""

from __future__ import annotations

from ._registry import OPS

SAVES_RESULT = (
    "exp", "exp2", "expm1", "sqrt", "rsqrt", "tanh", "sigmoid", "relu", "tan", "reciprocal",
    "pow_tensor", "rpow", "hypot", "softmax", "log_softmax", "logsumexp", "prod", "prod_dim",
    "max", "min", "amax", "amin", "std", "vector_norm", "cumprod", "logcumsumexp", "sgn",
    "special_erfcx", "det", "inv", "cholesky", "median", "nanmedian", "pinv", "solve",
    "special_i0e", "special_i1", "special_i1e", "special_ndtri", "special_log_ndtr", "eigvalsh",
    "pairwise_distance",
)

for _k in SAVES_RESULT:
    OPS[_k].saves_result = True
