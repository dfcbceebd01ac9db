"""``funcgrad.special``: PyTorch's ``torch.special`` names mapped onto the op table.

Most entries are the same functions as the top-level ones (``special.expit`` is ``sigmoid``,
``special.gammaln`` is ``lgamma``…) so they record the same nodes PyTorch records; the
``special``-only functions (``i0e``, ``ndtri``, ``erfcx``, ``zeta``…) live in
``funcgrad/_ops/special.py``.

>>> import funcgrad
>>> funcgrad.special.expit(funcgrad.tensor([0.0]))
tensor([0.5000])
"""

from __future__ import annotations

from ._ops.math import (digamma, erf, erfc, erfinv, exp2, expm1, lgamma,  # noqa: F401
                        log1p, sinc, xlogy)
from ._ops._registry import write_out as _out
from ._ops.math import _round1
from ._ops.math import round as _round
from ._ops.nn import log_softmax as _log_softmax, softmax as _softmax
from ._ops import reduce as _reduce
from ._ops._parser import checked as _checked
from ._ops.special import (entr, erfcx, i0, i0e, i1, i1e, log_ndtr, logit,  # noqa: F401
                           mvlgamma, ndtr, ndtri, polygamma, xlog1py, zeta)
from ._ops.special import igamma as _igamma, igammac as _igammac
from ._ops._registry import FUNCTIONS, Tensor, apply
from ._ops._registry import _require_tensors

_sigmoid = FUNCTIONS["sigmoid"]
# funcgrad.logsumexp's frontend under PyTorch's name for this one (special_logsumexp()'s errors)
logsumexp = _checked(_reduce.logsumexp.__wrapped__, "special_logsumexp", False)


def expit(input: Tensor, *, out=None) -> Tensor:
    """The logistic sigmoid ``1 / (1 + exp(-x))`` (``SigmoidBackward0``)."""
    return _sigmoid(input, out=out)


def gammaln(input: Tensor, *, out=None) -> Tensor:
    """``log|Γ(x)|`` (``LgammaBackward0``)."""
    return lgamma(input, out=out)


def psi(input: Tensor, *, out=None) -> Tensor:
    """The digamma function (``DigammaBackward0``)."""
    return digamma(input, out=out)


def multigammaln(input: Tensor, p: int, *, out=None) -> Tensor:
    """Multivariate log-gamma of dimension ``p`` (``MvlgammaBackward0``)."""
    return mvlgamma(input, p, out=out)


def round(input: Tensor, *, decimals: int = 0, out=None) -> Tensor:  # noqa: A001
    """Round half to even; always the ``decimals`` overload, as PyTorch (``RoundBackward1``)."""
    if input.dtype._kind in "bi":
        return _round(input, decimals=decimals, out=out)
    return _out(apply(_round1, input, decimals=int(decimals)), out)


def gammainc(input: Tensor, other: Tensor, *, out=None) -> Tensor:
    """The regularized lower incomplete gamma function (``funcgrad.igamma``, ``IgammaBackward0``).

    >>> import funcgrad
    >>> funcgrad.special.gammainc(funcgrad.tensor([1.0]), funcgrad.tensor([0.5]))
    tensor([0.3935])
    """
    return _igamma(input, other, out=out)


def gammaincc(input: Tensor, other: Tensor, *, out=None) -> Tensor:
    """The regularized upper incomplete gamma function (``funcgrad.igammac``, ``IgammacBackward0``)."""
    return _igammac(input, other, out=out)


# (PyTorch's parser names them special_gammainc / special_gammaincc)
gammainc = _require_tensors(gammainc, "special_gammainc", ("input", "other"), False)
gammaincc = _require_tensors(gammaincc, "special_gammaincc", ("input", "other"), False)


def softmax(input: Tensor, dim: int, *, dtype=None) -> Tensor:
    """``exp(x) / sum(exp(x))`` along ``dim`` (``SoftmaxBackward0``)."""
    return _softmax(input, dim, dtype=dtype)


def log_softmax(input: Tensor, dim: int, *, dtype=None) -> Tensor:
    """``log(softmax(x))`` along ``dim``, computed stably (``LogSoftmaxBackward0``)."""
    return _log_softmax(input, dim, dtype=dtype)


__all__ = ["digamma", "entr", "erf", "erfc", "erfcx", "erfinv", "exp2", "expit", "expm1",
           "gammainc", "gammaincc", "gammaln", "i0", "i0e", "i1", "i1e", "log1p", "log_ndtr", "log_softmax",
           "logit", "logsumexp", "multigammaln", "ndtr", "ndtri", "polygamma", "psi", "round", "sinc",
           "softmax", "xlog1py", "xlogy", "zeta"]
