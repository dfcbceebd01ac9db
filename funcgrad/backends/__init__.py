"""``funcgrad.backends``: PyTorch's backend switches (``cudnn``, ``cuda``, ``mps``…).

The flags keep PyTorch's names and defaults so scripts that set them (``cudnn.benchmark = True``,
``cuda.matmul.allow_tf32 = True``) run; XLA chooses its own kernels, so only the matmul
precision (shared with ``funcgrad.set_float32_matmul_precision``) changes what runs.

>>> import funcgrad.backends.cudnn as cudnn
>>> cudnn.benchmark = True
>>> cudnn.deterministic, cudnn.enabled
(False, True)
>>> cudnn.benchmark = False
"""

from . import cpu as cpu, cuda as cuda, cudnn as cudnn, mkl as mkl, mkldnn as mkldnn  # noqa: F401
from . import mps as mps, openmp as openmp  # noqa: F401

__all__ = ["cpu", "cuda", "cudnn", "mkl", "mkldnn", "mps", "openmp"]
