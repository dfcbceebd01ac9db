"""``funcgrad.nn``: ``Module``, ``Parameter``, the layers, ``init``, ``functional`` and ``utils``
(``from funcgrad import nn`` works as ``from torch import nn``)."""

from __future__ import annotations

from . import functional as functional  # noqa: F401
from . import init as init  # noqa: F401
from .layers.activation import (CELU as CELU, ELU as ELU, GELU as GELU, GLU as GLU,  # noqa: F401
                                Hardshrink as Hardshrink, Hardsigmoid as Hardsigmoid,
                                Hardswish as Hardswish, Hardtanh as Hardtanh, LeakyReLU as LeakyReLU,
                                LogSigmoid as LogSigmoid, LogSoftmax as LogSoftmax, Mish as Mish,
                                PReLU as PReLU, ReLU as ReLU, ReLU6 as ReLU6, SELU as SELU, SiLU as SiLU,
                                Sigmoid as Sigmoid, Softmax as Softmax, Softmax2d as Softmax2d,
                                Softmin as Softmin, Softplus as Softplus, Softshrink as Softshrink,
                                Softsign as Softsign, Tanh as Tanh, Tanhshrink as Tanhshrink,
                                Threshold as Threshold)
from .layers.container import (ModuleDict as ModuleDict, ModuleList as ModuleList,  # noqa: F401
                               ParameterDict as ParameterDict, ParameterList as ParameterList,
                               Sequential as Sequential)
from .layers.conv import (Conv1d as Conv1d, Conv2d as Conv2d, Conv3d as Conv3d,  # noqa: F401
                          ConvTranspose1d as ConvTranspose1d, ConvTranspose2d as ConvTranspose2d,
                          ConvTranspose3d as ConvTranspose3d)
from .layers.dropout import (AlphaDropout as AlphaDropout, Dropout as Dropout,  # noqa: F401
                             Dropout1d as Dropout1d, Dropout2d as Dropout2d, Dropout3d as Dropout3d)
from .layers.linear import (Bilinear as Bilinear, Flatten as Flatten, Identity as Identity,  # noqa: F401
                            Linear as Linear, Unflatten as Unflatten)
from .layers.normalization import (BatchNorm1d as BatchNorm1d, BatchNorm2d as BatchNorm2d,  # noqa: F401
                                   BatchNorm3d as BatchNorm3d, GroupNorm as GroupNorm,
                                   InstanceNorm1d as InstanceNorm1d, InstanceNorm2d as InstanceNorm2d,
                                   InstanceNorm3d as InstanceNorm3d, LayerNorm as LayerNorm,
                                   LocalResponseNorm as LocalResponseNorm)
from .layers.pooling import (AdaptiveAvgPool1d as AdaptiveAvgPool1d,  # noqa: F401
                             AdaptiveAvgPool2d as AdaptiveAvgPool2d, AdaptiveAvgPool3d as AdaptiveAvgPool3d,
                             AdaptiveMaxPool1d as AdaptiveMaxPool1d, AdaptiveMaxPool2d as AdaptiveMaxPool2d,
                             AvgPool1d as AvgPool1d, AvgPool2d as AvgPool2d, AvgPool3d as AvgPool3d,
                             CircularPad1d as CircularPad1d, CircularPad2d as CircularPad2d,
                             CircularPad3d as CircularPad3d, ConstantPad1d as ConstantPad1d,
                             ConstantPad2d as ConstantPad2d, ConstantPad3d as ConstantPad3d,
                             MaxPool1d as MaxPool1d, MaxPool2d as MaxPool2d, MaxPool3d as MaxPool3d,
                             PixelShuffle as PixelShuffle, PixelUnshuffle as PixelUnshuffle,
                             ReflectionPad1d as ReflectionPad1d, ReflectionPad2d as ReflectionPad2d,
                             ReflectionPad3d as ReflectionPad3d, ReplicationPad1d as ReplicationPad1d,
                             ReplicationPad2d as ReplicationPad2d, ReplicationPad3d as ReplicationPad3d,
                             Upsample as Upsample, ZeroPad1d as ZeroPad1d, ZeroPad2d as ZeroPad2d,
                             ZeroPad3d as ZeroPad3d)
from .layers.sparse import Embedding as Embedding  # noqa: F401
from .module import Module as Module  # noqa: F401
from .parameter import Buffer as Buffer, Parameter as Parameter  # noqa: F401
from . import utils as utils  # noqa: F401,E402

# ---- losses, recurrent layers, attention/transformer (their own modules) -----------------------
from .layers.attention import MultiheadAttention as MultiheadAttention  # noqa: F401,E402
from .layers.loss import (BCELoss as BCELoss, BCEWithLogitsLoss as BCEWithLogitsLoss,  # noqa: F401,E402
                          CosineEmbeddingLoss as CosineEmbeddingLoss, CrossEntropyLoss as CrossEntropyLoss,
                          GaussianNLLLoss as GaussianNLLLoss, HuberLoss as HuberLoss, KLDivLoss as KLDivLoss,
                          L1Loss as L1Loss, MarginRankingLoss as MarginRankingLoss, MSELoss as MSELoss,
                          MultiMarginLoss as MultiMarginLoss, NLLLoss as NLLLoss,
                          PoissonNLLLoss as PoissonNLLLoss, SmoothL1Loss as SmoothL1Loss,
                          SoftMarginLoss as SoftMarginLoss, TripletMarginLoss as TripletMarginLoss)
from .layers.rnn import (GRU as GRU, GRUCell as GRUCell, LSTM as LSTM, LSTMCell as LSTMCell,  # noqa: F401,E402
                         RNN as RNN, RNNBase as RNNBase, RNNCell as RNNCell, RNNCellBase as RNNCellBase)
from .layers.transformer import Transformer as Transformer  # noqa: F401,E402
from .layers.transformer import (TransformerDecoder as TransformerDecoder,  # noqa: F401,E402
                                 TransformerDecoderLayer as TransformerDecoderLayer,
                                 TransformerEncoder as TransformerEncoder,
                                 TransformerEncoderLayer as TransformerEncoderLayer)
from . import parallel as parallel  # noqa: F401,E402
from .parallel import DataParallel as DataParallel  # noqa: F401,E402
from . import modules as modules  # noqa: F401,E402  (torch.nn.modules.* import paths)
from .layers.normalization import RMSNorm as RMSNorm  # noqa: F401,E402
from .layers.sparse import EmbeddingBag as EmbeddingBag  # noqa: F401,E402
from .layers.ctc import CTCLoss as CTCLoss  # noqa: F401,E402
from .layers.extra import (ChannelShuffle as ChannelShuffle, CosineSimilarity as CosineSimilarity,  # noqa: F401,E402
                           Fold as Fold, HingeEmbeddingLoss as HingeEmbeddingLoss, LazyLinear as LazyLinear,
                           MultiLabelSoftMarginLoss as MultiLabelSoftMarginLoss,
                           PairwiseDistance as PairwiseDistance, Unfold as Unfold,
                           UpsamplingBilinear2d as UpsamplingBilinear2d,
                           UpsamplingNearest2d as UpsamplingNearest2d)
from .parameter import UninitializedParameter as UninitializedParameter  # noqa: F401,E402
from .layers.extra import UninitializedBuffer as UninitializedBuffer  # noqa: F401,E402
from .layers.lazy import (LazyBatchNorm1d as LazyBatchNorm1d,  # noqa: F401,E402
                          LazyBatchNorm2d as LazyBatchNorm2d, LazyBatchNorm3d as LazyBatchNorm3d,
                          LazyConv1d as LazyConv1d, LazyConv2d as LazyConv2d, LazyConv3d as LazyConv3d,
                          LazyConvTranspose1d as LazyConvTranspose1d,
                          LazyConvTranspose2d as LazyConvTranspose2d,
                          LazyConvTranspose3d as LazyConvTranspose3d,
                          LazyInstanceNorm1d as LazyInstanceNorm1d, LazyInstanceNorm2d as LazyInstanceNorm2d,
                          LazyInstanceNorm3d as LazyInstanceNorm3d)
from .layers.activation import RReLU as RReLU  # noqa: F401,E402
from .layers.adaptive import AdaptiveLogSoftmaxWithLoss as AdaptiveLogSoftmaxWithLoss  # noqa: F401,E402
from .layers.dropout import FeatureAlphaDropout as FeatureAlphaDropout  # noqa: F401,E402
from .layers.extra import (MultiLabelMarginLoss as MultiLabelMarginLoss,  # noqa: F401,E402
                           TripletMarginWithDistanceLoss as TripletMarginWithDistanceLoss)
from .layers.pooling import (AdaptiveMaxPool3d as AdaptiveMaxPool3d, LPPool1d as LPPool1d,  # noqa: F401,E402
                             LPPool2d as LPPool2d, LPPool3d as LPPool3d, MaxUnpool1d as MaxUnpool1d,
                             MaxUnpool2d as MaxUnpool2d, MaxUnpool3d as MaxUnpool3d)
from .layers.pooling import (FractionalMaxPool2d as FractionalMaxPool2d,  # noqa: F401,E402
                             FractionalMaxPool3d as FractionalMaxPool3d)
from .layers.container import Container as Container  # noqa: F401,E402
from .layers.loss import NLLLoss2d as NLLLoss2d  # noqa: F401,E402
from .layers.normalization import (CrossMapLRN2d as CrossMapLRN2d,  # noqa: F401,E402
                                   SyncBatchNorm as SyncBatchNorm)
