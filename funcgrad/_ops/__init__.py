"""The op table. Each module declares its ops once (``defop``) with their frontends (``export``);
importing this package installs the Tensor methods and dunders generated from them."""

from __future__ import annotations

from . import linalg, pointwise, reduce, shape  # noqa: F401  (declare the ops)
from . import nn_loss, nn_rnn  # noqa: F401  (losses; recurrent + attention)
from . import creation, decomp, indexing, shape_more  # noqa: F401  (linalg/shape breadth)
from . import math, sort  # noqa: F401  (elementwise math; sorting reductions)
from . import nn  # noqa: F401  (activations, softmax, conv, pool, norm, dropout, embedding)
from . import special  # noqa: F401  (logit, polygamma, Bessel, ndtr, zeta, frexp…)
from . import random  # noqa: F401  (in-place random fills: uniform_, normal_, bernoulli_…)
from . import fft, more, nn_more  # noqa: F401  (issue 18: diff, cdist, bincount, searchsorted…; funcgrad.fft)
from . import nn_ctc, nn_sample  # noqa: F401  (issue 18: grid_sample, affine_grid, bicubic, ctc_loss)
from . import more2, more3  # noqa: F401  (finfo, fmax, isin, renorm, cov, quantile, histogram, gradient…)
from . import linalg2  # noqa: F401  (linalg: matrix_exp, solve_triangular, lu, lstsq, cond…)
from . import poisson  # noqa: F401  (funcgrad.poisson: PyTorch's CPU sampler, draw for draw)
from . import complex, windows  # noqa: F401  (complex/polar/view_as_real/conj/angle; hann_window…)
from . import more4  # noqa: F401  (gcd/lcm, inner, scatters, sum_to_size, fill_diagonal_, unravel_index)
from . import more5  # noqa: F401  (torch.<name>_ functions, range, scalar_tensor, Tensor.new, removed names)
from . import strided, spectral  # noqa: F401  (as_strided, as_strided_, as_strided_scatter; stft, istft)
from . import inplace_shape  # noqa: F401  (t_, transpose_, squeeze_, unsqueeze_, resize_, resize_as_)
from ._registry import FUNCTIONS, METHODS, OPS, apply, install
from . import _saved_result  # noqa: F401,E402  (ops whose output is version-checked at backward)

install()

__all__ = ["OPS", "FUNCTIONS", "METHODS", "apply"]
from . import nn_fold  # noqa: F401,E402  (unfold/fold, channel_shuffle, pdist)
