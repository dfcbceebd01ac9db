"""Changing an op's output in place before backward: an error exactly where PyTorch saves the
output for its derivative (``result`` in derivatives.yaml), with PyTorch's message; no error for
ops whose derivative reads only the inputs. Each row runs on torch (when installed) and funcgrad.
"""

import pytest

import funcgrad
import funcgrad.nn.functional  # noqa: F401
from funcgrad._ops._saved_result import SAVES_RESULT


def _sq(lib, x):
    return x[:, :3]


ROWS = {  # op key -> the call, written for either library
    "exp": lambda lib, x: x.exp(), "exp2": lambda lib, x: lib.exp2(x), "expm1": lambda lib, x: x.expm1(),
    "sqrt": lambda lib, x: x.sqrt(), "rsqrt": lambda lib, x: x.rsqrt(), "tanh": lambda lib, x: x.tanh(),
    "sigmoid": lambda lib, x: x.sigmoid(), "relu": lambda lib, x: x.relu(), "tan": lambda lib, x: x.tan(),
    "reciprocal": lambda lib, x: x.reciprocal(), "pow_tensor": lambda lib, x: x ** (x.detach() + 1),
    "rpow": lambda lib, x: 2.0 ** x, "hypot": lambda lib, x: lib.hypot(x, x.detach() + 1),
    "softmax": lambda lib, x: x.softmax(-1), "log_softmax": lambda lib, x: x.log_softmax(-1),
    "logsumexp": lambda lib, x: x.logsumexp(-1), "prod": lambda lib, x: x.prod(),
    "prod_dim": lambda lib, x: x.prod(-1), "max": lambda lib, x: x.max(), "min": lambda lib, x: x.min(),
    "amax": lambda lib, x: x.amax(-1), "amin": lambda lib, x: x.amin(-1), "std": lambda lib, x: x.std(-1),
    "vector_norm": lambda lib, x: lib.linalg.vector_norm(x, dim=-1), "cumprod": lambda lib, x: x.cumprod(-1),
    "logcumsumexp": lambda lib, x: x.logcumsumexp(-1), "sgn": lambda lib, x: x.sgn(),
    "special_erfcx": lambda lib, x: lib.special.erfcx(x), "det": lambda lib, x: lib.linalg.det(_sq(lib, x)),
    "inv": lambda lib, x: lib.linalg.inv(_sq(lib, x) + 3 * lib.eye(3, dtype=x.dtype)),
    "cholesky": lambda lib, x: lib.linalg.cholesky(_sq(lib, x) @ _sq(lib, x).mT + lib.eye(3, dtype=x.dtype)),
    "median": lambda lib, x: x.median(), "nanmedian": lambda lib, x: x.nanmedian(),
    "pinv": lambda lib, x: lib.linalg.pinv(x),
    "solve": lambda lib, x: lib.linalg.solve(_sq(lib, x) + 3 * lib.eye(3, dtype=x.dtype), x[:, 3]),
    "special_i0e": lambda lib, x: lib.special.i0e(x), "special_i1": lambda lib, x: lib.special.i1(x),
    "special_i1e": lambda lib, x: lib.special.i1e(x),
    "special_ndtri": lambda lib, x: lib.special.ndtri(x * 0.1 + 0.3),
    "special_log_ndtr": lambda lib, x: lib.special.log_ndtr(x),
    "eigvalsh": lambda lib, x: lib.linalg.eigvalsh(_sq(lib, x) + _sq(lib, x).mT),
    "pairwise_distance": lambda lib, x: lib.nn.functional.pairwise_distance(x, x.detach() + 1),
    # derivatives that read only the inputs: no error in either library
    "pow_scalar": lambda lib, x: x ** 2.5, "elu": lambda lib, x: lib.nn.functional.elu(x),
    "mul": lambda lib, x: x * 2, "sin": lambda lib, x: x.sin(), "log": lambda lib, x: x.log(),
    "gelu": lambda lib, x: lib.nn.functional.gelu(x), "var": lambda lib, x: x.var(-1),
    "div": lambda lib, x: x / (x.detach() + 3), "silu": lambda lib, x: lib.nn.functional.silu(x),
}


def _run(lib, fn, nograd):
    lib.manual_seed(0)
    x = (lib.rand(3, 4, dtype=lib.float64) + 0.5).requires_grad_()
    y = fn(lib, x)
    if nograd:
        with lib.no_grad():
            y.mul_(2)
    else:
        y.add_(1)
    try:
        y.sum().backward()
    except RuntimeError as e:
        return str(e).replace("torch.", "funcgrad.")
    return None


def test_every_listed_op_has_a_row():
    assert set(SAVES_RESULT) <= set(ROWS)


@pytest.mark.torch
@pytest.mark.parametrize("nograd", [False, True], ids=["add_", "no_grad mul_"])
@pytest.mark.parametrize("key", list(ROWS))
def test_inplace_on_output_matches_torch(key, nograd):
    torch = pytest.importorskip("torch")
    want = _run(torch, ROWS[key], nograd)
    assert (want is not None) == (key in SAVES_RESULT), f"{key}: SAVES_RESULT disagrees with PyTorch"
    assert _run(funcgrad, ROWS[key], nograd) == want


@pytest.mark.parametrize("key", SAVES_RESULT[:4])
def test_unmodified_output_backward_still_works(key):
    lib = funcgrad
    x = (lib.rand(3, 4, dtype=lib.float64) + 0.5).requires_grad_()
    ROWS[key](lib, x).sum().backward()
    assert x.grad is not None


INPLACE = {  # an in-place op on a non-leaf that requires grad, from a source that does not
    "copy_": lambda lib, y: y.copy_(lib.zeros(2, 3, dtype=y.dtype)),
    "copy_ broadcast": lambda lib, y: y.copy_(lib.ones(3, dtype=y.dtype)),
    "zero_": lambda lib, y: y.zero_(),
    "fill_": lambda lib, y: y.fill_(2.0),
    "setitem": lambda lib, y: y.__setitem__(0, 5.0),
}


@pytest.mark.torch
@pytest.mark.parametrize("key", list(INPLACE))
def test_inplace_rebase_gradient_matches_torch(key):
    """The overwritten elements get no gradient: the tensor's node is rebased as in PyTorch."""
    torch = pytest.importorskip("torch")

    def run(lib):
        x = lib.ones(2, 3, dtype=lib.float64, requires_grad=True)
        y = x * 3
        INPLACE[key](lib, y)
        (y * y).sum().backward()
        return x.grad.tolist()
    assert run(funcgrad) == run(torch)
