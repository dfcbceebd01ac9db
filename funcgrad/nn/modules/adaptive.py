"""``torch.nn.modules.adaptive`` import path: a re-export of ``funcgrad/nn/layers/adaptive.py``."""

from ..layers.adaptive import AdaptiveLogSoftmaxWithLoss as AdaptiveLogSoftmaxWithLoss  # noqa: F401
from ..layers.adaptive import _ASMoutput as _ASMoutput  # noqa: F401

__all__ = ['AdaptiveLogSoftmaxWithLoss']
