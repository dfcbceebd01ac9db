"""``autograd.gradcheck`` / ``gradgradcheck`` over every layer of ``funcgrad.nn`` in float64.

Each case builds a tiny module with ``.double()`` and checks the Jacobians of its output with
respect to the (floating) inputs AND every parameter: the parameters are passed to gradcheck as
fresh float64 leaves and substituted with ``funcgrad.func.functional_call``, so gradcheck's
in-place finite-difference perturbations reach the forward. Inputs are drawn away from points of
non-differentiability (ReLU at 0, Hardtanh at ±1, shrink thresholds, max-pool ties).

Slow mode (full Jacobians) is used unless a case says ``fast=True`` (``vᵀ J u`` for random
``u``, ``v``): the multi-layer/bidirectional/projected recurrent variants, MultiheadAttention
(gradcheck and gradgradcheck) and the transformer layers, whose parameter counts make full
finite-difference Jacobians slow. ``slow=True`` cases carry ``@pytest.mark.slow`` (deselect with
``-m "not slow"``): the 3-d convolutions/pools/norms, the wider recurrent and attention variants,
the second transformer encoder variant, the decoder layer, reflect-padded Conv2d and
LocalResponseNorm. Every case also asserts that each checked leaf is reached by the graph, so a
parameter the forward ignored cannot pass vacuously.
"""

from __future__ import annotations

from typing import Callable, NamedTuple

import numpy as np
import pytest

import funcgrad
from funcgrad import nn
from funcgrad.autograd import gradcheck, gradgradcheck
from funcgrad.func import functional_call

F64 = funcgrad.float64


class Case(NamedTuple):
    id: str
    make: Callable  # () -> module (float32; the test converts with .double())
    inputs: Callable  # (rng) -> tuple of Tensors (float ones require grad unless nograd)
    out: Callable | None = None  # module output -> Tensor or tuple of Tensors
    gg: bool = False  # also gradgradcheck
    fast: bool = False  # fast_mode gradcheck
    slow: bool = False
    train: bool = True
    setup: Callable | None = None  # (module) -> None, after .double()
    params: bool = True  # check w.r.t. the parameters too
    pack: Callable | None = None  # inputs tuple -> the module's positional arguments
    xfail: str | None = None


def _t(a, grad=True):
    return funcgrad.tensor(np.asarray(a, dtype=np.float64), dtype=F64, requires_grad=grad)


def X(*shape, lo=-2.0, hi=2.0, kinks=(0.0,), grad=True):
    """Input maker: uniform values in [lo, hi) at least 0.05 away from every kink."""
    def make(rng):
        a = rng.uniform(lo, hi, shape)
        for k in kinks:
            near = np.abs(a - k) < 0.05
            a[near] = k + np.where(a[near] >= k, 0.1, -0.1)
        return _t(a, grad)
    return make


def DISTINCT(*shape, grad=True):
    """Input maker for max-type ops: a shuffled grid of values 0.1 apart (no ties)."""
    def make(rng):
        n = int(np.prod(shape))
        return _t((rng.permutation(n) * 0.1 - n * 0.05).reshape(shape), grad)
    return make


def IDX(high, *shape):
    return lambda rng: funcgrad.tensor(rng.integers(0, high, shape), dtype=funcgrad.int64)


def _deprecated(cls):
    """``cls()`` without its FutureWarning (the deprecated NLLLoss2d: tests/test_nn_more_modules.py
    checks the warning)."""
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        return cls()


def ins(*makers):
    return lambda rng: tuple(m(rng) for m in makers)


def PROB(*shape, grad=True, log=False):
    """Rows of probabilities along dim 1 (or their logs)."""
    def make(rng):
        a = rng.uniform(0.2, 1.0, shape)
        a = a / a.sum(axis=1, keepdims=True)
        return _t(np.log(a) if log else a, grad)
    return make


def _set_bn_stats(m):
    with funcgrad.no_grad():
        m.running_mean.copy_(funcgrad.linspace(-0.5, 0.5, m.running_mean.numel(), dtype=F64))
        m.running_var.copy_(funcgrad.linspace(0.5, 1.5, m.running_var.numel(), dtype=F64))


def _lstm_out(y):
    out, (h, c) = y
    return out, h, c


def _i(a):
    return funcgrad.tensor(a, dtype=funcgrad.int64)


def _u(*shape):
    return funcgrad.tensor(np.random.default_rng(7).uniform(0, 1, shape), dtype=funcgrad.float32)


def _first(y):
    return y[0]


def _pair(y):
    return y[0], y[1]


# ---------------------------------------------------------------------------------------------
LAYERS = [
    # linear
    Case("Linear", lambda: nn.Linear(3, 2), ins(X(2, 3)), gg=True),
    Case("Linear_nobias", lambda: nn.Linear(3, 2, bias=False), ins(X(3)), gg=True),
    Case("Bilinear", lambda: nn.Bilinear(2, 3, 2), ins(X(2, 2), X(2, 3)), gg=True),
    Case("Identity", lambda: nn.Identity(), ins(X(2, 3))),
    Case("Flatten", lambda: nn.Flatten(), ins(X(2, 2, 2))),
    Case("Unflatten", lambda: nn.Unflatten(1, (2, 2)), ins(X(2, 4))),
    # convolutions
    Case("Conv1d", lambda: nn.Conv1d(2, 2, 3), ins(X(1, 2, 5)), gg=True),
    Case("Conv1d_stride_pad_dil", lambda: nn.Conv1d(2, 2, 2, stride=2, padding=1, dilation=2),
         ins(X(1, 2, 6))),
    Case("Conv1d_groups", lambda: nn.Conv1d(4, 2, 2, groups=2), ins(X(1, 4, 4))),
    Case("Conv1d_padding_same", lambda: nn.Conv1d(1, 1, 3, padding="same", bias=False),
         ins(X(1, 1, 4))),
    Case("Conv2d", lambda: nn.Conv2d(2, 2, 2), ins(X(1, 2, 3, 3)), gg=True),
    Case("Conv2d_stride_pad_dil", lambda: nn.Conv2d(1, 2, 2, stride=2, padding=1, dilation=2),
         ins(X(1, 1, 4, 4))),
    Case("Conv2d_groups", lambda: nn.Conv2d(2, 2, (1, 2), groups=2), ins(X(1, 2, 2, 3))),
    Case("Conv2d_reflect", lambda: nn.Conv2d(1, 1, 2, padding=1, padding_mode="reflect"),
         ins(X(1, 1, 3, 3)), slow=True),
    Case("Conv3d", lambda: nn.Conv3d(1, 1, 2), ins(X(1, 1, 3, 3, 2)), slow=True),
    Case("Conv3d_stride_pad_groups", lambda: nn.Conv3d(2, 2, 2, stride=2, padding=1, groups=2),
         ins(X(1, 2, 2, 2, 2)), slow=True),
    Case("ConvTranspose1d", lambda: nn.ConvTranspose1d(2, 2, 2, stride=2, padding=1), ins(X(1, 2, 3)),
         gg=True),
    Case("ConvTranspose1d_outpad_dil_groups",
         lambda: nn.ConvTranspose1d(2, 2, 2, stride=2, output_padding=1, dilation=2, groups=2),
         ins(X(1, 2, 3))),
    Case("ConvTranspose2d", lambda: nn.ConvTranspose2d(1, 2, 2, stride=2), ins(X(1, 1, 2, 2))),
    Case("ConvTranspose2d_pad_outpad", lambda: nn.ConvTranspose2d(2, 1, 3, stride=2, padding=1,
                                                                  output_padding=1),
         ins(X(1, 2, 2, 2))),
    Case("ConvTranspose3d", lambda: nn.ConvTranspose3d(1, 1, 2, stride=2), ins(X(1, 1, 2, 1, 2)),
         slow=True),
    # pooling
    Case("MaxPool1d", lambda: nn.MaxPool1d(2), ins(DISTINCT(1, 2, 6))),
    Case("MaxPool1d_stride_pad_dil", lambda: nn.MaxPool1d(2, stride=1, padding=1, dilation=2),
         ins(DISTINCT(1, 1, 6))),
    Case("MaxPool2d", lambda: nn.MaxPool2d(2), ins(DISTINCT(1, 1, 4, 4))),
    Case("MaxPool2d_overlap_ceil", lambda: nn.MaxPool2d(3, stride=2, ceil_mode=True),
         ins(DISTINCT(1, 1, 4, 4))),
    Case("MaxPool3d", lambda: nn.MaxPool3d(2), ins(DISTINCT(1, 1, 2, 2, 4)), slow=True),
    Case("AvgPool1d", lambda: nn.AvgPool1d(2, stride=1, padding=1), ins(X(1, 2, 4)), gg=True),
    Case("AvgPool1d_nopadcount", lambda: nn.AvgPool1d(3, stride=2, padding=1, count_include_pad=False),
         ins(X(1, 1, 5))),
    Case("AvgPool2d", lambda: nn.AvgPool2d(2), ins(X(1, 1, 4, 4)), gg=True),
    Case("AvgPool2d_ceil_divisor", lambda: nn.AvgPool2d(2, stride=2, ceil_mode=True, divisor_override=3),
         ins(X(1, 1, 3, 3))),
    Case("AvgPool3d", lambda: nn.AvgPool3d(2), ins(X(1, 1, 2, 2, 4)), slow=True),
    Case("AdaptiveAvgPool1d", lambda: nn.AdaptiveAvgPool1d(3), ins(X(1, 2, 5)), gg=True),
    Case("AdaptiveAvgPool2d", lambda: nn.AdaptiveAvgPool2d((2, 3)), ins(X(1, 1, 3, 4))),
    Case("AdaptiveAvgPool3d", lambda: nn.AdaptiveAvgPool3d(1), ins(X(1, 1, 2, 2, 2)), slow=True),
    Case("AdaptiveMaxPool1d", lambda: nn.AdaptiveMaxPool1d(2), ins(DISTINCT(1, 2, 5))),
    Case("AdaptiveMaxPool2d", lambda: nn.AdaptiveMaxPool2d((2, 2)), ins(DISTINCT(1, 1, 3, 5))),
    Case("AdaptiveMaxPool3d", lambda: nn.AdaptiveMaxPool3d((1, 2, 2)), ins(DISTINCT(1, 1, 2, 3, 3)), slow=True),
    Case("MaxUnpool1d", lambda: nn.MaxUnpool1d(2), lambda rng: (X(1, 2, 2)(rng), _i([[[1, 2], [0, 3]]]))),
    Case("MaxUnpool2d", lambda: nn.MaxUnpool2d(2), lambda rng: (X(1, 1, 2, 2)(rng), _i([[[[0, 3], [9, 14]]]]))),
    Case("MaxUnpool3d", lambda: nn.MaxUnpool3d(2), lambda rng: (X(1, 1, 1, 1, 2)(rng), _i([[[[[5, 14]]]]]))),
    Case("LPPool1d", lambda: nn.LPPool1d(2, 2), ins(X(1, 2, 4))),
    Case("LPPool2d", lambda: nn.LPPool2d(3, 2, 1), ins(X(1, 1, 3, 3, lo=0.2, kinks=()))),
    Case("LPPool3d", lambda: nn.LPPool3d(2, 2), ins(X(1, 1, 2, 2, 2)), slow=True),
    Case("FractionalMaxPool2d", lambda: nn.FractionalMaxPool2d(2, output_size=2, _random_samples=_u(1, 2, 2)),
         ins(DISTINCT(1, 2, 4, 5))),
    Case("FractionalMaxPool3d", lambda: nn.FractionalMaxPool3d(2, output_size=2, _random_samples=_u(1, 1, 3)),
         ins(DISTINCT(1, 1, 3, 3, 4)), slow=True),
    # normalization
    Case("BatchNorm1d_train", lambda: nn.BatchNorm1d(2), ins(X(4, 2)), gg=True),
    Case("BatchNorm1d_train_3d", lambda: nn.BatchNorm1d(2), ins(X(2, 2, 3))),
    Case("BatchNorm1d_eval", lambda: nn.BatchNorm1d(2), ins(X(3, 2)), train=False, setup=_set_bn_stats,
         gg=True),
    Case("BatchNorm2d_train", lambda: nn.BatchNorm2d(2), ins(X(2, 2, 2, 2)), gg=True),
    Case("BatchNorm2d_eval", lambda: nn.BatchNorm2d(2), ins(X(2, 2, 2, 2)), train=False,
         setup=_set_bn_stats),
    Case("SyncBatchNorm", lambda: nn.SyncBatchNorm(2), ins(X(2, 2, 2, 2))),  # (no process group: BatchNorm's)
    Case("BatchNorm2d_no_stats", lambda: nn.BatchNorm2d(2, track_running_stats=False),
         ins(X(2, 2, 1, 2)), train=False),
    Case("BatchNorm3d_train", lambda: nn.BatchNorm3d(1), ins(X(2, 1, 2, 1, 2))),
    Case("LayerNorm", lambda: nn.LayerNorm(3), ins(X(2, 3)), gg=True),
    Case("LayerNorm_2d_shape", lambda: nn.LayerNorm((2, 2)), ins(X(2, 2, 2)), gg=True),
    Case("RMSNorm", lambda: nn.RMSNorm(3), ins(X(2, 3))),
    Case("LayerNorm_noaffine", lambda: nn.LayerNorm(4, elementwise_affine=False), ins(X(2, 4))),
    Case("GroupNorm", lambda: nn.GroupNorm(2, 4), ins(X(2, 4, 2)), gg=True),
    Case("InstanceNorm1d", lambda: nn.InstanceNorm1d(2), ins(X(2, 2, 3))),
    Case("InstanceNorm2d", lambda: nn.InstanceNorm2d(2), ins(X(1, 2, 2, 2)), gg=True),
    Case("InstanceNorm2d_affine", lambda: nn.InstanceNorm2d(2, affine=True), ins(X(2, 2, 2, 2))),
    Case("InstanceNorm2d_tracked_eval", lambda: nn.InstanceNorm2d(2, track_running_stats=True),
         ins(X(1, 2, 2, 2)), train=False, setup=_set_bn_stats),
    Case("InstanceNorm3d", lambda: nn.InstanceNorm3d(1, affine=True), ins(X(1, 1, 2, 2, 2)),
         slow=True),
    Case("LocalResponseNorm", lambda: nn.LocalResponseNorm(2, alpha=0.5), ins(X(1, 3, 2)),
         slow=True),
    # embedding: gradient w.r.t. the weight only
    Case("Embedding", lambda: nn.Embedding(4, 3), ins(IDX(4, 2, 3)), gg=True),
    Case("EmbeddingBag", lambda: nn.EmbeddingBag(4, 3, mode="mean"), ins(IDX(4, 2, 3))),
    Case("Embedding_padding_idx", lambda: nn.Embedding(4, 2, padding_idx=0),
         lambda rng: (funcgrad.tensor([[1, 2, 3]]),)),
    # recurrent
    Case("RNN_tanh", lambda: nn.RNN(2, 2), ins(X(3, 1, 2)), out=_pair, gg=True),
    Case("RNN_relu_2layers_bidir", lambda: nn.RNN(2, 2, num_layers=2, nonlinearity="relu",
                                                  bidirectional=True),
         ins(X(2, 1, 2)), out=_pair, fast=True, slow=True),
    Case("LSTM", lambda: nn.LSTM(2, 2), ins(X(3, 1, 2)), out=_lstm_out, gg=True),
    Case("LSTM_batch_first_proj", lambda: nn.LSTM(2, 3, batch_first=True, proj_size=2),
         ins(X(2, 2, 2)), out=_lstm_out, fast=True, slow=True),
    Case("LSTM_2layers_bidir", lambda: nn.LSTM(2, 2, num_layers=2, bidirectional=True),
         ins(X(2, 1, 2)), out=_lstm_out, fast=True, slow=True),
    Case("GRU", lambda: nn.GRU(2, 2), ins(X(3, 1, 2)), out=_pair, gg=True),
    Case("GRU_2layers", lambda: nn.GRU(2, 2, num_layers=2, batch_first=True), ins(X(1, 2, 2)),
         out=_pair, fast=True, slow=True),
    Case("RNNCell", lambda: nn.RNNCell(2, 2), ins(X(2, 2), X(2, 2))),
    Case("LSTMCell", lambda: nn.LSTMCell(2, 2), ins(X(1, 2), X(1, 2), X(1, 2)),
         pack=lambda a: (a[0], (a[1], a[2]))),
    Case("GRUCell", lambda: nn.GRUCell(2, 2), ins(X(2, 2), X(2, 2)), gg=True),
    # attention / transformer
    Case("MultiheadAttention", lambda: nn.MultiheadAttention(4, 2), ins(X(3, 1, 4), X(2, 1, 4),
                                                                       X(2, 1, 4)),
         out=_pair, gg=True, fast=True),
    Case("MultiheadAttention_kv_dims_batch_first",
         lambda: nn.MultiheadAttention(4, 2, kdim=3, vdim=2, batch_first=True, add_bias_kv=True,
                                       add_zero_attn=True),
         ins(X(1, 2, 4), X(1, 3, 3), X(1, 3, 2)), out=_pair, fast=True, slow=True),
    Case("TransformerEncoderLayer", lambda: nn.TransformerEncoderLayer(4, 2, 6, dropout=0.0),
         ins(X(3, 1, 4)), fast=True),
    Case("TransformerEncoderLayer_gelu_normfirst",
         lambda: nn.TransformerEncoderLayer(4, 2, 6, dropout=0.0, activation="gelu", norm_first=True,
                                            batch_first=True),
         ins(X(1, 3, 4)), fast=True, slow=True),
    Case("TransformerDecoderLayer", lambda: nn.TransformerDecoderLayer(4, 2, 6, dropout=0.0),
         ins(X(2, 1, 4), X(3, 1, 4)), fast=True, slow=True),
    # shape / resampling / padding
    Case("PixelShuffle", lambda: nn.PixelShuffle(2), ins(X(1, 4, 1, 2))),
    Case("PixelUnshuffle", lambda: nn.PixelUnshuffle(2), ins(X(1, 1, 2, 4))),
    Case("Upsample_nearest", lambda: nn.Upsample(scale_factor=2), ins(X(1, 1, 2, 2))),
    Case("Upsample_bilinear", lambda: nn.Upsample(size=(3, 3), mode="bilinear"), ins(X(1, 1, 2, 2))),
    Case("Upsample_bilinear_ac", lambda: nn.Upsample(scale_factor=2, mode="bilinear",
                                                     align_corners=True), ins(X(1, 1, 2, 2))),
    Case("Upsample_linear", lambda: nn.Upsample(scale_factor=2, mode="linear"), ins(X(1, 1, 3))),
    Case("ZeroPad2d", lambda: nn.ZeroPad2d((1, 0, 2, 1)), ins(X(1, 1, 2, 2))),
    Case("ChannelShuffle", lambda: nn.ChannelShuffle(2), ins(X(1, 4, 2, 2))),
    Case("Unfold", lambda: nn.Unfold(kernel_size=2, padding=1, stride=2), ins(X(1, 2, 3, 3))),
    Case("Fold", lambda: nn.Fold(output_size=(3, 3), kernel_size=2), ins(X(1, 8, 4))),
    Case("UpsamplingNearest2d", lambda: nn.UpsamplingNearest2d(scale_factor=2), ins(X(1, 1, 2, 2))),
    Case("UpsamplingBilinear2d", lambda: nn.UpsamplingBilinear2d(size=(3, 4)), ins(X(1, 1, 2, 2))),
    Case("CosineSimilarity", lambda: nn.CosineSimilarity(dim=1), ins(X(2, 3), X(2, 3))),
    Case("PairwiseDistance", lambda: nn.PairwiseDistance(p=2.0), ins(X(2, 3), X(2, 3))),
    Case("ConstantPad1d", lambda: nn.ConstantPad1d(2, 3.5), ins(X(1, 2, 2))),
    Case("ReflectionPad1d", lambda: nn.ReflectionPad1d(2), ins(X(1, 1, 4))),
    Case("ReflectionPad2d", lambda: nn.ReflectionPad2d(1), ins(X(1, 1, 3, 3))),
    Case("ReplicationPad1d", lambda: nn.ReplicationPad1d((2, 1)), ins(X(1, 1, 3))),
    Case("ReplicationPad2d", lambda: nn.ReplicationPad2d(1), ins(X(1, 1, 2, 2))),
    Case("CircularPad1d", lambda: nn.CircularPad1d(1), ins(X(1, 1, 3))),
    Case("CircularPad2d", lambda: nn.CircularPad2d(1), ins(X(1, 1, 2, 2))),
    Case("Dropout_eval", lambda: nn.Dropout(0.5), ins(X(2, 3)), train=False),
    Case("Dropout_p0", lambda: nn.Dropout(0.0), ins(X(2, 3))),
]

ACTIVATIONS = [
    Case("ReLU", lambda: nn.ReLU(), ins(X(2, 3))),
    Case("LeakyReLU", lambda: nn.LeakyReLU(0.2), ins(X(2, 3))),
    Case("ELU", lambda: nn.ELU(), ins(X(2, 3)), gg=True),
    Case("ELU_alpha", lambda: nn.ELU(alpha=0.5), ins(X(2, 3))),
    Case("CELU", lambda: nn.CELU(0.7), ins(X(2, 3))),
    Case("SELU", lambda: nn.SELU(), ins(X(2, 3))),
    Case("GELU", lambda: nn.GELU(), ins(X(2, 3)), gg=True),
    Case("GELU_tanh", lambda: nn.GELU(approximate="tanh"), ins(X(2, 3)), gg=True),
    Case("SiLU", lambda: nn.SiLU(), ins(X(2, 3)), gg=True),
    Case("Mish", lambda: nn.Mish(), ins(X(2, 3)), gg=True),
    Case("Sigmoid", lambda: nn.Sigmoid(), ins(X(2, 3)), gg=True),
    Case("LogSigmoid", lambda: nn.LogSigmoid(), ins(X(2, 3)), gg=True),
    Case("Tanh", lambda: nn.Tanh(), ins(X(2, 3)), gg=True),
    Case("Tanhshrink", lambda: nn.Tanhshrink(), ins(X(2, 3))),
    Case("Softsign", lambda: nn.Softsign(), ins(X(2, 3))),
    Case("Softmax", lambda: nn.Softmax(dim=1), ins(X(2, 3)), gg=True),
    Case("Softmax_dim0", lambda: nn.Softmax(dim=0), ins(X(3, 2))),
    Case("Softmin", lambda: nn.Softmin(dim=1), ins(X(2, 3))),
    Case("Softmax2d", lambda: nn.Softmax2d(), ins(X(1, 3, 1, 2))),
    Case("LogSoftmax", lambda: nn.LogSoftmax(dim=1), ins(X(2, 3)), gg=True),
    Case("Softplus", lambda: nn.Softplus(), ins(X(2, 3)), gg=True),
    Case("Softplus_beta_threshold", lambda: nn.Softplus(beta=2.0, threshold=1.0),
         ins(X(2, 3, kinks=(0.5,)))),
    Case("Hardtanh", lambda: nn.Hardtanh(), ins(X(2, 3, kinks=(-1.0, 1.0)))),
    Case("Hardtanh_range", lambda: nn.Hardtanh(-0.5, 1.5), ins(X(2, 3, kinks=(-0.5, 1.5)))),
    Case("ReLU6", lambda: nn.ReLU6(), ins(X(2, 3, lo=-3, hi=8, kinks=(0.0, 6.0)))),
    Case("Hardsigmoid", lambda: nn.Hardsigmoid(), ins(X(2, 3, lo=-5, hi=5, kinks=(-3.0, 3.0)))),
    Case("Hardswish", lambda: nn.Hardswish(), ins(X(2, 3, lo=-5, hi=5, kinks=(-3.0, 3.0)))),
    Case("Hardshrink", lambda: nn.Hardshrink(), ins(X(2, 3, kinks=(-0.5, 0.5)))),
    Case("Softshrink", lambda: nn.Softshrink(0.3), ins(X(2, 3, kinks=(-0.3, 0.3)))),
    Case("Threshold", lambda: nn.Threshold(0.2, -1.0), ins(X(2, 3, kinks=(0.2,)))),
    Case("RReLU_eval", lambda: nn.RReLU(0.1, 0.3), ins(X(2, 3)), train=False),
    Case("FeatureAlphaDropout_eval", lambda: nn.FeatureAlphaDropout(0.5), ins(X(2, 3)), train=False),
    Case("PReLU", lambda: nn.PReLU(), ins(X(2, 3))),
    Case("PReLU_channels", lambda: nn.PReLU(3, init=0.1), ins(X(2, 3, 2))),
    Case("GLU", lambda: nn.GLU(), ins(X(2, 4)), gg=True),
    Case("GLU_dim0", lambda: nn.GLU(dim=0), ins(X(2, 3))),
]

LOSSES = [
    Case("MSELoss", lambda: nn.MSELoss(), ins(X(2, 3), X(2, 3)), gg=True),
    Case("MSELoss_sum", lambda: nn.MSELoss(reduction="sum"), ins(X(2, 3), X(2, 3)), gg=True),
    Case("MSELoss_none", lambda: nn.MSELoss(reduction="none"), ins(X(2, 3), X(2, 3))),
    Case("L1Loss", lambda: nn.L1Loss(), ins(X(2, 3), X(2, 3, lo=3, hi=4))),
    Case("L1Loss_none", lambda: nn.L1Loss(reduction="none"), ins(X(2, 3), X(2, 3, lo=3, hi=4))),
    # the kink |x - y| = beta is avoided: x in [-1, 0), y in [0.3, 0.7) or [3, 4)
    Case("SmoothL1Loss", lambda: nn.SmoothL1Loss(), ins(X(2, 3, lo=-1, hi=0), X(2, 3, lo=3, hi=4))),
    Case("SmoothL1Loss_quadratic", lambda: nn.SmoothL1Loss(beta=2.0),
         ins(X(2, 3, lo=-1, hi=0), X(2, 3, lo=0.3, hi=0.7)), gg=True),
    Case("HuberLoss", lambda: nn.HuberLoss(delta=0.5), ins(X(2, 3, lo=-1, hi=0), X(2, 3, lo=1, hi=2))),
    Case("HuberLoss_quadratic", lambda: nn.HuberLoss(reduction="sum", delta=3.0),
         ins(X(2, 3, lo=-1, hi=0), X(2, 3, lo=0.3, hi=0.7)), gg=True),
    Case("CrossEntropyLoss", lambda: nn.CrossEntropyLoss(), ins(X(3, 4), IDX(4, 3)), gg=True),
    Case("CrossEntropyLoss_label_smoothing", lambda: nn.CrossEntropyLoss(label_smoothing=0.2),
         ins(X(3, 4), IDX(4, 3)), gg=True),
    Case("CrossEntropyLoss_probs", lambda: nn.CrossEntropyLoss(), ins(X(3, 4), PROB(3, 4)), gg=True),
    Case("CrossEntropyLoss_probs_smoothing", lambda: nn.CrossEntropyLoss(label_smoothing=0.1),
         ins(X(3, 4), PROB(3, 4))),
    Case("CrossEntropyLoss_weight_ignore",
         lambda: nn.CrossEntropyLoss(weight=funcgrad.tensor([0.5, 1.0, 2.0]), ignore_index=1),
         lambda rng: (X(4, 3)(rng), funcgrad.tensor([0, 1, 2, 2]))),
    Case("CrossEntropyLoss_spatial_none", lambda: nn.CrossEntropyLoss(reduction="none"),
         ins(X(2, 3, 2), IDX(3, 2, 2))),
    Case("NLLLoss", lambda: nn.NLLLoss(), ins(PROB(3, 4, log=True), IDX(4, 3)), gg=True),
    Case("NLLLoss_weight_sum", lambda: nn.NLLLoss(weight=funcgrad.tensor([0.5, 1.0, 2.0]),
                                                  reduction="sum"),
         ins(X(4, 3), IDX(3, 4))),
    Case("NLLLoss2d", lambda: _deprecated(nn.NLLLoss2d), ins(PROB(2, 3, 2, 2, log=True), IDX(3, 2, 2, 2)), gg=True),
    Case("BCELoss", lambda: nn.BCELoss(), ins(X(2, 3, lo=0.1, hi=0.9, kinks=()),
                                              X(2, 3, lo=0, hi=1, kinks=())), gg=True),
    Case("BCELoss_weight", lambda: nn.BCELoss(weight=funcgrad.tensor([1.0, 2.0, 0.5])),
         ins(X(2, 3, lo=0.1, hi=0.9, kinks=()), X(2, 3, lo=0, hi=1, kinks=(), grad=False))),
    Case("BCEWithLogitsLoss", lambda: nn.BCEWithLogitsLoss(), ins(X(2, 3), X(2, 3, lo=0, hi=1)),
         gg=True),
    Case("BCEWithLogitsLoss_pos_weight",
         lambda: nn.BCEWithLogitsLoss(pos_weight=funcgrad.tensor([1.0, 2.0, 0.5])),
         ins(X(2, 3), X(2, 3, lo=0, hi=1))),
    Case("KLDivLoss", lambda: nn.KLDivLoss(reduction="batchmean"),
         ins(PROB(2, 3, log=True), PROB(2, 3)), gg=True),
    Case("KLDivLoss_log_target", lambda: nn.KLDivLoss(reduction="sum", log_target=True),
         ins(PROB(2, 3, log=True), PROB(2, 3, log=True))),
    Case("CosineEmbeddingLoss", lambda: nn.CosineEmbeddingLoss(margin=-0.9),
         lambda rng: (X(3, 4)(rng), X(3, 4)(rng), funcgrad.tensor([1.0, -1.0, 1.0], dtype=F64))),
    Case("MarginRankingLoss", lambda: nn.MarginRankingLoss(margin=0.1),
         lambda rng: (_t([0.5, -1.0, 2.0, 0.3]), _t([1.0, 1.5, 0.2, -0.4]),
                      funcgrad.tensor([1.0, -1.0, 1.0, -1.0], dtype=F64))),
    Case("TripletMarginLoss", lambda: nn.TripletMarginLoss(margin=5.0),
         ins(X(2, 3), X(2, 3), X(2, 3))),
    Case("TripletMarginLoss_swap_p1", lambda: nn.TripletMarginLoss(margin=5.0, p=1.0, swap=True),
         lambda rng: (_t([[0.1, 0.2, 0.3]]), _t([[0.5, -0.4, 0.6]]), _t([[1.5, 1.2, -1.3]]))),
    Case("SoftMarginLoss", lambda: nn.SoftMarginLoss(),
         lambda rng: (X(2, 3)(rng), funcgrad.tensor([[1.0, -1.0, 1.0], [-1.0, -1.0, 1.0]], dtype=F64))),
    Case("MultiMarginLoss", lambda: nn.MultiMarginLoss(margin=10.0), ins(X(3, 4), IDX(4, 3))),
    Case("MultiLabelMarginLoss", lambda: nn.MultiLabelMarginLoss(),
         lambda rng: (X(2, 4, lo=-0.3, hi=0.3)(rng), _i([[3, 0, -1, 1], [1, 2, 3, 0]]))),
    Case("TripletMarginWithDistanceLoss", lambda: nn.TripletMarginWithDistanceLoss(margin=5.0, swap=True),
         ins(X(2, 3), X(2, 3), X(2, 3))),
    Case("AdaptiveLogSoftmaxWithLoss", lambda: nn.AdaptiveLogSoftmaxWithLoss(4, 6, [2, 4], div_value=2.0),
         lambda rng: (X(3, 4)(rng), _i([0, 3, 5])), out=lambda y: (y.output, y.loss), fast=True),
    Case("HingeEmbeddingLoss", lambda: nn.HingeEmbeddingLoss(margin=1.0),
         lambda rng: (X(2, 3, kinks=(1.0,))(rng), funcgrad.tensor([[1.0, -1.0, 1.0], [-1.0, -1.0, 1.0]], dtype=F64))),
    Case("MultiLabelSoftMarginLoss", lambda: nn.MultiLabelSoftMarginLoss(),
         lambda rng: (X(2, 3)(rng), funcgrad.tensor([[1.0, 0.0, 1.0], [0.0, 0.0, 1.0]], dtype=F64))),
    Case("GaussianNLLLoss", lambda: nn.GaussianNLLLoss(),
         ins(X(2, 3), X(2, 3), X(2, 3, lo=0.5, hi=1.5, kinks=())), gg=True),
    Case("PoissonNLLLoss", lambda: nn.PoissonNLLLoss(), ins(X(2, 3), X(2, 3, lo=0, hi=3, kinks=()))),
    Case("PoissonNLLLoss_full_nolog", lambda: nn.PoissonNLLLoss(log_input=False, full=True),
         ins(X(2, 3, lo=0.5, hi=2, kinks=()), X(2, 3, lo=2, hi=3, kinks=()))),
]

ALL = LAYERS + ACTIVATIONS + LOSSES


def _param(c: Case, kind: str):
    marks = []
    if c.slow:
        marks.append(pytest.mark.slow)
    if c.xfail:
        marks.append(pytest.mark.xfail(strict=True, reason=c.xfail))
    return pytest.param(c, id=f"{kind}-{c.id}" if kind else c.id, marks=marks)


def _build(c: Case, seed: int = 0):
    """The module (float64), its inputs, and ``fn(*inputs, *params)`` for gradcheck."""
    funcgrad.manual_seed(seed)
    m = c.make().double()
    if c.setup is not None:
        c.setup(m)
    m.train(c.train)
    inputs = c.inputs(np.random.default_rng(seed))
    named = [(n, p) for n, p in m.named_parameters() if p.is_floating_point()] if c.params else []
    names = [n for n, _ in named]
    # fresh float64 leaves: gradcheck perturbs these in place, functional_call substitutes them
    params = [p.detach().clone().requires_grad_() for _, p in named]
    k = len(inputs)
    out = c.out or (lambda y: y)
    pack = c.pack or (lambda a: a)

    def fn(*args):
        return out(functional_call(m, dict(zip(names, args[k:])), pack(args[:k])))

    return m, inputs + tuple(params), fn


def _kw(c: Case) -> dict:
    return {"fast_mode": True} if c.fast else {}


def _assert_all_used(args, fn):
    """Every leaf checked is reached by the graph: a parameter the forward ignored (say, a stale
    cached copy) would otherwise pass vacuously (zero numerical and analytical Jacobians)."""
    outs = fn(*args)
    outs = outs if isinstance(outs, tuple) else (outs,)
    total = sum(o.sum() for o in outs if o.requires_grad)
    leaves = [a for a in args if a.requires_grad]
    unused = [i for i, g in enumerate(funcgrad.autograd.grad(total, leaves, allow_unused=True))
              if g is None]
    assert unused == []


@pytest.mark.parametrize("case", [_param(c, "") for c in ALL])
def test_gradcheck(case):
    _, args, fn = _build(case)
    _assert_all_used(args, fn)
    assert gradcheck(fn, args, **_kw(case))


@pytest.mark.parametrize("case", [_param(c, "") for c in ALL if c.gg])
def test_gradgradcheck(case):
    _, args, fn = _build(case)
    assert gradgradcheck(fn, args, **_kw(case))


def test_every_layer_has_a_case():
    """Every public Module class of funcgrad.nn (containers and wrappers aside) has a row."""
    skip = {"Module", "Sequential", "ModuleList", "ModuleDict", "ParameterList", "ParameterDict",
            "Parameter", "Buffer", "DataParallel", "RNNBase", "RNNCellBase",
            "TransformerEncoder", "TransformerDecoder", "Transformer",  # stacks of the layers checked here
            "LazyLinear",  # becomes a Linear on its first call (checked as Linear)
            # (and the lazy conv/norm layers: each becomes the layer checked here on its first call)
            "LazyConv1d", "LazyConv2d", "LazyConv3d", "LazyConvTranspose1d", "LazyConvTranspose2d",
            "LazyConvTranspose3d", "LazyBatchNorm1d", "LazyBatchNorm2d", "LazyBatchNorm3d",
            "LazyInstanceNorm1d", "LazyInstanceNorm2d", "LazyInstanceNorm3d",
            "CTCLoss",  # PyTorch's gradient is not the derivative (tests/test_ops_more2.py compares it)
            "CrossMapLRN2d",  # likewise (its legacy backward: tests/test_nn_more_modules.py compares it)
            "Container",  # deprecated, a Module holding modules: no computation of its own
            "AlphaDropout", "Dropout1d", "Dropout2d", "Dropout3d",  # random masks
            "ZeroPad1d", "ZeroPad3d", "ConstantPad2d", "ConstantPad3d", "ReflectionPad3d",
            "ReplicationPad3d", "CircularPad3d"}  # same kernels as their checked 1-d/2-d kin
    covered = {type(c.make()).__name__ for c in ALL}
    classes = {n for n in dir(nn) if isinstance(getattr(nn, n), type)
               and issubclass(getattr(nn, n), nn.Module)}
    assert sorted(classes - covered - skip) == []


def test_parameters_really_perturbed():
    """The wrapper really routes the parameters: a wrong weight gradient would be caught."""
    c = Case("Linear", lambda: nn.Linear(2, 1), ins(X(1, 2)))
    m, args, fn = _build(c)
    y0 = fn(*args).item()
    with funcgrad.no_grad():
        args[1].add_(1.0)  # the weight leaf
    assert fn(*args).item() != y0
    assert m.weight.dtype is F64 and funcgrad.equal(m.weight, args[1] - 1.0)
