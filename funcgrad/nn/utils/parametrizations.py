"""``nn.utils.parametrizations``: PyTorch's parametrizations ``orthogonal`` (``Q`` with orthonormal
columns or rows, by the matrix exponential, the Cayley map or Householder reflectors),
``spectral_norm`` (``W / σ(W)``, σ by power iteration on the buffers ``_u``/``_v``) and
``weight_norm`` (``weight = g · v / ‖v‖``, ``g`` in ``parametrizations.weight.original0`` and ``v``
in ``original1``), with the ``state_dict`` keys and initial values PyTorch gives."""

from __future__ import annotations

from enum import Enum, auto

import numpy as np

from ... import _factories, linalg
from ..._dispatch import apply
from ..._ops.linalg import mv as _mv
from ..._ops.shape import cat as _cat
from ..._tensor import Tensor
from ...autograd.grad_mode import no_grad
from .. import functional as F
from ..layers.conv import ConvTranspose1d, ConvTranspose2d, ConvTranspose3d
from ..module import Module
from . import parametrize
from .weight_norm import _norm_op, _weight_norm_all_op, _weight_norm_op

__all__ = ["orthogonal", "spectral_norm", "weight_norm"]


# ---- orthogonal ------------------------------------------------------------------------------------
def _geqrf(A: Tensor) -> tuple[Tensor, Tensor]:
    """LAPACK's ``geqrf`` (PyTorch's ``torch.geqrf``): R above the diagonal, the Householder
    reflectors below it, and their scales ``tau``. Not differentiable (used under ``no_grad``)."""
    a = A.detach().numpy()
    h, tau = np.linalg.qr(a, mode="raw")          # h is the factorisation transposed (Fortran order)
    return (_factories.tensor(np.ascontiguousarray(np.swapaxes(h, -1, -2)), dtype=A.dtype),
            _factories.tensor(tau, dtype=A.dtype))


def _is_orthogonal(Q: Tensor) -> bool:
    n, k = Q.size(-2), Q.size(-1)
    eye = _factories.eye(k, dtype=Q.dtype)
    return bool((Q.mH @ Q).allclose(eye, atol=10.0 * n * float(np.finfo(Q.dtype.np).eps)))


def _make_orthogonal(A: Tensor) -> Tensor:
    """The Q of A = QR (A tall) with diag(R) made non-negative."""
    X, tau = _geqrf(A)
    Q = linalg.householder_product(X, tau)
    return Q * X.diagonal(dim1=-2, dim2=-1).sgn().unsqueeze(-2)


class _OrthMaps(Enum):
    matrix_exp = auto()
    cayley = auto()
    householder = auto()


class _Orthogonal(Module):
    def __init__(self, weight: Tensor, orthogonal_map: _OrthMaps, *, use_trivialization: bool = True) -> None:
        super().__init__()
        # complex reflectors cannot carry the n² real parameters a unitary matrix needs
        if weight.is_complex() and orthogonal_map == _OrthMaps.householder:
            raise ValueError("The householder parametrization does not support complex tensors.")
        self.shape = weight.shape
        self.orthogonal_map = orthogonal_map
        if use_trivialization:
            self.register_buffer("base", None)

    def forward(self, X: Tensor) -> Tensor:
        n, k = X.size(-2), X.size(-1)
        transposed = n < k
        if transposed:
            X = X.mT
            n, k = k, n
        if self.orthogonal_map in (_OrthMaps.matrix_exp, _OrthMaps.cayley):
            X = X.tril()                  # n·k - k(k-1)/2 free entries
            if n != k:                    # embed into a square matrix
                X = _cat([X, X.new_zeros(n, n - k).expand(*X.shape[:-2], -1, -1)], dim=-1)
            A = X - X.mH                  # skew-symmetric (skew-Hermitian)
            if self.orthogonal_map == _OrthMaps.matrix_exp:
                Q = linalg.matrix_exp(A)
            else:                         # Cayley: (I + A/2)(I - A/2)^{-1}
                eye = _factories.eye(n, dtype=A.dtype)
                Q = linalg.solve(eye.add(A, alpha=-0.5), eye.add(A, alpha=0.5))
            if n != k:
                Q = Q[..., :k]
        else:
            A = X.tril(diagonal=-1)
            tau = 2.0 / (1.0 + (A * A).sum(dim=-2))
            Q = linalg.householder_product(A, tau)
            # the diagonal of X holds the signs ±1: not differentiated, not updated
            Q = Q * X.diagonal(dim1=-2, dim2=-1).int().unsqueeze(-2)
        if hasattr(self, "base"):
            Q = self.base @ Q
        if transposed:
            Q = Q.mT
        return Q

    def right_inverse(self, Q: Tensor) -> Tensor:
        with no_grad():
            return self._right_inverse(Q)

    def _right_inverse(self, Q: Tensor) -> Tensor:
        if Q.shape != self.shape:
            raise ValueError(f"Expected a matrix or batch of matrices of shape {self.shape}. "
                             f"Got a tensor of shape {Q.shape}.")
        Q_init = Q
        n, k = Q.size(-2), Q.size(-1)
        transpose = n < k
        if transpose:
            Q = Q.mT
            n, k = k, n
        if not hasattr(self, "base"):
            if self.orthogonal_map in (_OrthMaps.cayley, _OrthMaps.matrix_exp):
                raise NotImplementedError("It is not possible to assign to the matrix exponential or the "
                                          "Cayley parametrizations when use_trivialization=False.")
            # Householder: the reflectors of Q's QR, with the signs of R's diagonal (flipped where
            # LAPACK skipped a reflection, tau == 0) on the diagonal
            A, tau = _geqrf(Q)
            diag = A.diagonal(dim1=-2, dim2=-1)
            diag.sign_()
            diag[tau == 0.0] *= -1
            return A.mT if transpose else A
        if n == k:
            Q = Q.clone() if _is_orthogonal(Q) else _make_orthogonal(Q)
        else:                             # complete Q to an n×n orthogonal matrix
            N = _factories.randn(*(Q.size()[:-2] + (n, n - k)), dtype=Q.dtype)
            Q = _make_orthogonal(_cat([Q, N], dim=-1))
        self.base = Q
        # -Id: with it householder(0) is the identity, so forward gives back base
        neg_id = _factories.zeros_like(Q_init)
        neg_id.diagonal(dim1=-2, dim2=-1).fill_(-1.0)
        return neg_id


def orthogonal(module: Module, name: str = "weight", orthogonal_map: str | None = None, *,
               use_trivialization: bool = True) -> Module:
    """Parametrize ``module.<name>`` (a matrix or a batch of them) to be orthogonal (unitary):
    orthonormal columns if it is tall, rows if it is wide.

    ``orthogonal_map`` is ``"matrix_exp"`` (default for square or complex matrices), ``"cayley"``
    or ``"householder"`` (default otherwise). With ``use_trivialization`` (default) the map's
    output multiplies a buffer ``parametrizations.<name>[0].base``, initialised to the tensor itself
    if it is orthogonal and to the Q of its QR decomposition otherwise.

    >>> import funcgrad
    >>> from funcgrad import nn
    >>> m = nn.utils.parametrizations.orthogonal(nn.Linear(5, 3))
    >>> list(m.state_dict())
    ['bias', 'parametrizations.weight.original', 'parametrizations.weight.0.base']
    >>> bool(funcgrad.dist(m.weight @ m.weight.T, funcgrad.eye(3)) < 1e-5)
    True
    """
    weight = getattr(module, name, None)
    if not isinstance(weight, Tensor):
        raise ValueError(f"Module '{module}' has no parameter or buffer with name '{name}'")
    if weight.ndim < 2:
        raise ValueError(f"Expected a matrix or batch of matrices. Got a tensor of {weight.ndim} dimensions.")
    if orthogonal_map is None:
        square = weight.size(-2) == weight.size(-1)
        orthogonal_map = "matrix_exp" if square or weight.is_complex() else "householder"
    orth_enum = getattr(_OrthMaps, orthogonal_map, None)
    if orth_enum is None:
        raise ValueError('orthogonal_map has to be one of "matrix_exp", "cayley", "householder". '
                         f"Got: {orthogonal_map}")
    orth = _Orthogonal(weight, orth_enum, use_trivialization=use_trivialization)
    parametrize.register_parametrization(module, name, orth, unsafe=True)
    return module


class _WeightNorm(Module):
    def __init__(self, dim: int | None = 0) -> None:
        super().__init__()
        self.dim = -1 if dim is None else dim

    def forward(self, weight_g, weight_v):
        if self.dim == -1:
            return apply(_weight_norm_all_op, weight_v, weight_g)
        return apply(_weight_norm_op, weight_v, weight_g, dim=self.dim)

    def right_inverse(self, weight):
        return apply(_norm_op, weight, dim=self.dim), weight


def weight_norm(module: Module, name: str = "weight", dim: int | None = 0) -> Module:
    """Parametrize ``module.<name>`` as ``g · v / ‖v‖`` (norm over every dim but ``dim``; over all
    with ``dim=None``).

    >>> from funcgrad import nn
    >>> m = nn.utils.parametrizations.weight_norm(nn.Linear(20, 40))
    >>> list(m.state_dict())
    ['bias', 'parametrizations.weight.original0', 'parametrizations.weight.original1']
    >>> m.parametrizations.weight.original0.shape
    funcgrad.Size([40, 1])
    """
    if dim is not None and dim < -1:
        dim = dim % getattr(module, name).ndim
    parametrize.register_parametrization(module, name, _WeightNorm(dim), unsafe=True)

    def load_old_keys(mod, state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys,
                      error_msgs) -> None:
        """A checkpoint of the hook-based ``nn.utils.weight_norm`` (``<name>_g``, ``<name>_v``)
        loads into the parametrization's ``original0``/``original1``."""
        g_key, v_key = f"{prefix}{name}_g", f"{prefix}{name}_v"
        if g_key in state_dict and v_key in state_dict:
            state_dict[f"{prefix}parametrizations.{name}.original0"] = state_dict.pop(g_key)
            state_dict[f"{prefix}parametrizations.{name}.original1"] = state_dict.pop(v_key)

    module.register_load_state_dict_pre_hook(load_old_keys)
    return module


# ---- spectral_norm ---------------------------------------------------------------------------------
class _SpectralNorm(Module):
    def __init__(self, weight: Tensor, n_power_iterations: int = 1, dim: int = 0, eps: float = 1e-12) -> None:
        super().__init__()
        ndim = weight.ndim
        if dim >= ndim or dim < -ndim:
            raise IndexError("Dimension out of range (expected to be in range of "
                             f"[-{ndim}, {ndim - 1}] but got {dim})")
        if n_power_iterations <= 0:
            raise ValueError("Expected n_power_iterations to be positive, but "
                             f"got n_power_iterations={n_power_iterations}")
        self.dim = dim if dim >= 0 else dim + ndim
        self.eps = eps
        if ndim > 1:                      # a vector is just normalised (forward)
            self.n_power_iterations = n_power_iterations
            with no_grad():
                weight_mat = self._reshape_weight_to_matrix(weight)
                h, w = weight_mat.size()
                u = weight_mat.new_empty(h).normal_(0, 1)
                v = weight_mat.new_empty(w).normal_(0, 1)
                self.register_buffer("_u", F.normalize(u, dim=0, eps=self.eps))
                self.register_buffer("_v", F.normalize(v, dim=0, eps=self.eps))
                # start from singular vectors estimated, not sampled
                self._power_method(weight_mat, 15)

    def _reshape_weight_to_matrix(self, weight: Tensor) -> Tensor:
        if weight.ndim <= 1:
            raise AssertionError(f"Expected weight to have more than 1 dimension, got {weight.ndim}")
        if self.dim != 0:
            weight = weight.permute(self.dim, *(d for d in range(weight.dim()) if d != self.dim))
        return weight.flatten(1)

    def _power_method(self, weight_mat: Tensor, n_power_iterations: int) -> None:
        """``n_power_iterations`` steps u ← W v/‖W v‖, v ← Wᴴ u/‖Wᴴ u‖, written into the buffers
        in place (as PyTorch's ``out=``: replicas sharing them see the update)."""
        if weight_mat.ndim <= 1:
            raise AssertionError(f"Expected weight_mat to have more than 1 dimension, got {weight_mat.ndim}")
        with no_grad():
            for _ in range(n_power_iterations):
                self._u.copy_(F.normalize(_mv(weight_mat, self._v), dim=0, eps=self.eps))
                self._v.copy_(F.normalize(_mv(weight_mat.H, self._u), dim=0, eps=self.eps))

    def forward(self, weight: Tensor) -> Tensor:
        if weight.ndim == 1:
            return F.normalize(weight, dim=0, eps=self.eps)
        weight_mat = self._reshape_weight_to_matrix(weight)
        if self.training:
            self._power_method(weight_mat, self.n_power_iterations)
        # clones: a later in-place update of the buffers must not touch this graph (two forwards
        # before one backward, as a GAN's D(real) - D(fake))
        u = self._u.clone()
        v = self._v.clone()
        sigma = u.vdot(_mv(weight_mat, v))
        return weight / sigma

    def right_inverse(self, value: Tensor) -> Tensor:
        return value


def spectral_norm(module: Module, name: str = "weight", n_power_iterations: int = 1, eps: float = 1e-12,
                  dim: int | None = None) -> Module:
    """Parametrize ``module.<name>`` as ``W / σ(W)``, σ its largest singular value estimated by
    power iteration (``n_power_iterations`` steps at each access in training mode; 15 at
    registration) on the buffers ``parametrizations.<name>.0._u`` and ``._v``. ``dim`` (default 0,
    1 for transposed convolutions) is the output dimension; a vector is divided by its norm.

    >>> import funcgrad
    >>> from funcgrad import nn
    >>> m = nn.utils.parametrizations.spectral_norm(nn.Linear(4, 3))
    >>> list(m.state_dict())[2:]
    ['parametrizations.weight.0._u', 'parametrizations.weight.0._v']
    >>> bool(abs(funcgrad.linalg.matrix_norm(m.weight, 2) - 1) < 1e-3)
    True
    """
    weight = getattr(module, name, None)
    if not isinstance(weight, Tensor):
        raise ValueError(f"Module '{module}' has no parameter or buffer with name '{name}'")
    if dim is None:
        dim = 1 if isinstance(module, (ConvTranspose1d, ConvTranspose2d, ConvTranspose3d)) else 0
    parametrize.register_parametrization(module, name, _SpectralNorm(weight, n_power_iterations, dim, eps))
    return module
