"""``torch.nn.modules.loss`` import path: re-exports of funcgrad's layers (defined in ``funcgrad/nn/layers``)."""

from ..layers.loss import _Loss as _Loss  # noqa: F401
from ..layers.loss import _WeightedLoss as _WeightedLoss  # noqa: F401
from ..layers.loss import L1Loss as L1Loss  # noqa: F401
from ..layers.loss import NLLLoss as NLLLoss  # noqa: F401
from ..layers.loss import PoissonNLLLoss as PoissonNLLLoss  # noqa: F401
from ..layers.loss import GaussianNLLLoss as GaussianNLLLoss  # noqa: F401
from ..layers.loss import KLDivLoss as KLDivLoss  # noqa: F401
from ..layers.loss import MSELoss as MSELoss  # noqa: F401
from ..layers.loss import BCELoss as BCELoss  # noqa: F401
from ..layers.loss import BCEWithLogitsLoss as BCEWithLogitsLoss  # noqa: F401
from ..layers.loss import SmoothL1Loss as SmoothL1Loss  # noqa: F401
from ..layers.loss import HuberLoss as HuberLoss  # noqa: F401
from ..layers.loss import SoftMarginLoss as SoftMarginLoss  # noqa: F401
from ..layers.loss import CrossEntropyLoss as CrossEntropyLoss  # noqa: F401
from ..layers.loss import CosineEmbeddingLoss as CosineEmbeddingLoss  # noqa: F401
from ..layers.loss import MarginRankingLoss as MarginRankingLoss  # noqa: F401
from ..layers.loss import MultiMarginLoss as MultiMarginLoss  # noqa: F401
from ..layers.loss import TripletMarginLoss as TripletMarginLoss  # noqa: F401
from ..layers.ctc import CTCLoss as CTCLoss  # noqa: F401,E402
from ..layers.loss import NLLLoss2d as NLLLoss2d  # noqa: F401


__all__ = ['NLLLoss2d', 'L1Loss', 'NLLLoss', 'PoissonNLLLoss', 'GaussianNLLLoss', 'KLDivLoss', 'MSELoss', 'BCELoss', 'BCEWithLogitsLoss', 'SmoothL1Loss', 'HuberLoss', 'SoftMarginLoss', 'CrossEntropyLoss', 'CosineEmbeddingLoss', 'MarginRankingLoss', 'MultiMarginLoss', 'TripletMarginLoss', 'CTCLoss']
from ..layers.extra import HingeEmbeddingLoss as HingeEmbeddingLoss  # noqa: F401,E402
from ..layers.extra import MultiLabelMarginLoss as MultiLabelMarginLoss  # noqa: F401,E402
from ..layers.extra import MultiLabelSoftMarginLoss as MultiLabelSoftMarginLoss  # noqa: F401,E402
from ..layers.extra import TripletMarginWithDistanceLoss as TripletMarginWithDistanceLoss  # noqa: F401,E402
__all__ += ['HingeEmbeddingLoss', 'MultiLabelSoftMarginLoss', 'MultiLabelMarginLoss',
            'TripletMarginWithDistanceLoss']
