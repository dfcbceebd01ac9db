"""Spec rows for funcgrad/_ops/nn.py: each op vs a hand-written jax.numpy / lax reference."""

import math

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

import funcgrad as fg
import funcgrad.nn.functional as F
from funcgrad._ops import nn as _nn

from . import Spec, ints

X = (2, 3, 5, 4)
KEY = jax.random.PRNGKey(7)


def _bc(v, nd):
    return v.reshape((1, -1) + (1,) * (nd - 2))


def _bn_ref(x, w, b):
    m = x.mean((0, 2, 3))
    v = ((x - _bc(m, 4)) ** 2).mean((0, 2, 3))
    return (x - _bc(m, 4)) / jnp.sqrt(_bc(v, 4) + 1e-5) * _bc(w, 4) + _bc(b, 4)


def _ln_ref(x, w, b):
    m = x.mean((-2, -1), keepdims=True)
    v = ((x - m) ** 2).mean((-2, -1), keepdims=True)
    return (x - m) / jnp.sqrt(v + 1e-5) * w + b


def _gn_ref(x, w, b):
    g = x.reshape(2, 3, -1)[:, :, :]  # 3 groups of 1 channel: per (n, c) stats
    m = g.mean(-1, keepdims=True)
    v = ((g - m) ** 2).mean(-1, keepdims=True)
    return ((g - m) / jnp.sqrt(v + 1e-5)).reshape(x.shape) * _bc(w, 4) + _bc(b, 4)


def _conv_ref(x, w, b):
    y = lax.conv_general_dilated(x, w, (2, 1), [(1, 1), (0, 0)], rhs_dilation=(1, 2),
                                 dimension_numbers=("NCHW", "OIHW", "NCHW"))
    return y + b[None, :, None, None]


def _conv_t_ref(x, w):
    # the transposed conv is the vjp of the plain conv w.r.t. its input
    def fwd(z):
        return lax.conv_general_dilated(z, w, (2, 2), [(1, 1), (1, 1)],
                                        dimension_numbers=("NCHW", "OIHW", "NCHW"))
    z0 = jnp.zeros((2, 3, 10, 8), x.dtype)  # (in - 1) * s - 2p + k + output_padding
    return jax.vjp(fwd, z0)[1](x)[0]


def _window_ref(x, k, s, reduce):
    n, c, h, w = x.shape
    oh, ow = (h - k) // s + 1, (w - k) // s + 1
    rows = []
    for i in range(oh):
        cols = [reduce(x[:, :, i * s:i * s + k, j * s:j * s + k], axis=(2, 3)) for j in range(ow)]
        rows.append(jnp.stack(cols, -1))
    return jnp.stack(rows, -2)


def _max3d_ref(x):
    return jnp.max(x.reshape(1, 2, 2, 2, 2, 2, 2, 2), axis=(3, 5, 7))


def _adaptive_ref(x):  # 5x4 → 3x2: rows [0,2),[1,4),[3,5); cols [0,2),[2,4)
    rb, cb = [(0, 2), (1, 4), (3, 5)], [(0, 2), (2, 4)]
    return jnp.stack([jnp.stack([x[:, :, a:b, c:d].mean((2, 3)) for c, d in cb], -1) for a, b in rb], -2)


def _adaptive_max_ref(x):
    rb, cb = [(0, 2), (1, 4), (3, 5)], [(0, 2), (2, 4)]
    return jnp.stack([jnp.stack([x[:, :, a:b, c:d].max((2, 3)) for c, d in cb], -1) for a, b in rb], -2)


def _bilinear_up_ref(x):  # align_corners=True, 5x4 → 9x7
    def axis_w(n, o):
        src = np.arange(o) * (n - 1) / (o - 1)
        i0 = np.minimum(np.floor(src).astype(int), n - 2)
        lam = src - i0
        m = np.zeros((o, n))
        m[np.arange(o), i0] = 1 - lam
        m[np.arange(o), i0 + 1] += lam
        return jnp.asarray(m)
    return jnp.einsum("nchw,oh,pw->ncop", x, axis_w(5, 9), axis_w(4, 7))


def _drop_noise(shape, dtype):
    return jnp.where(jax.random.bernoulli(KEY, 0.6, shape), 1 / 0.6, 0.0).astype(dtype)


def _dropout_ref(x):
    return x * _drop_noise(x.shape, x.dtype)


def _upsample(mode, nd, **kw):
    return lambda x: _nn.upsample_op(x, mode, tuple(2 * s for s in x.shape[2:]), (0.5,) * nd,
                                     kw.get("align_corners", False))


SPECS = [
    # ---- activations
    Spec("gelu", F.gelu, lambda x: jax.scipy.stats.norm.cdf(x) * x, [X], grad_fn="GeluBackward0"),
    Spec("gelu", lambda x: F.gelu(x, approximate="tanh"),
         lambda x: 0.5 * x * (1 + jnp.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x ** 3))), [X],
         id="gelu_tanh", rtol=1e-6),
    Spec("silu", F.silu, lambda x: x / (1 + jnp.exp(-x)), [X], grad_fn="SiluBackward0"),
    Spec("mish", F.mish, lambda x: x * jnp.tanh(jnp.log1p(jnp.exp(x))), [X], grad_fn="MishBackward0"),
    Spec("leaky_relu", lambda x: F.leaky_relu(x, 0.2), lambda x: jnp.where(x > 0, x, 0.2 * x), [X],
         grad_fn="LeakyReluBackward0"),
    Spec("elu", F.elu, lambda x: jnp.where(x > 0, x, jnp.exp(x) - 1), [X], grad_fn="EluBackward0"),
    Spec("elu", F.selu, lambda x: 1.0507009873554805 * jnp.where(x > 0, x, 1.6732632423543772 * (jnp.exp(x) - 1)),
         [X], id="selu", grad_fn="EluBackward0"),
    Spec("celu", lambda x: F.celu(x, 2.0), lambda x: jnp.where(x > 0, x, 2.0 * (jnp.exp(x / 2.0) - 1)), [X],
         grad_fn="CeluBackward0"),
    Spec("hardtanh", lambda x: F.hardtanh(x, -0.5, 0.7), lambda x: jnp.clip(x, -0.5, 0.7), [X],
         grad_fn="HardtanhBackward0"),
    Spec("hardtanh", F.relu6, lambda x: jnp.clip(x, 0, 6), [lambda r: r.standard_normal(X) * 4], id="relu6"),
    Spec("softplus", lambda x: F.softplus(x * 10, beta=2.0, threshold=15.0),
         lambda x: jnp.where(20 * x > 15, 10 * x, jnp.log1p(jnp.exp(20 * x)) / 2), [X],
         grad_fn="SoftplusBackward0"),
    Spec("hardswish", F.hardswish, lambda x: x * jnp.clip(x + 3, 0, 6) / 6,
         [lambda r: r.standard_normal(X) * 4], grad_fn="HardswishBackward0"),
    Spec("hardsigmoid", F.hardsigmoid, lambda x: jnp.clip(x / 6 + 0.5, 0, 1),
         [lambda r: r.standard_normal(X) * 4], grad_fn="HardsigmoidBackward0"),
    Spec("log_sigmoid", F.logsigmoid, lambda x: -jnp.log1p(jnp.exp(-x)), [X], grad_fn="LogSigmoidBackward0"),
    Spec("threshold", lambda x: F.threshold(x, 0.1, 2.0), lambda x: jnp.where(x > 0.1, x, 2.0), [X],
         grad_fn="ThresholdBackward0"),
    # the in-place forms, on a non-leaf: PyTorch's *Backward1 nodes
    Spec("leaky_relu_", lambda x: F.leaky_relu(x * 1, 0.2, inplace=True), lambda x: jnp.where(x > 0, x, 0.2 * x),
         [X], grad_fn="LeakyReluBackward1"),
    Spec("elu_", lambda x: F.elu(x * 1, inplace=True), lambda x: jnp.where(x > 0, x, jnp.exp(x) - 1), [X],
         grad_fn="EluBackward1"),
    Spec("celu_", lambda x: F.celu(x * 1, 2.0, inplace=True),
         lambda x: jnp.where(x > 0, x, 2.0 * (jnp.exp(x / 2.0) - 1)), [X], grad_fn="CeluBackward1"),
    Spec("threshold_", lambda x: F.threshold(x * 1, 0.1, 2.0, inplace=True), lambda x: jnp.where(x > 0.1, x, 2.0),
         [X], grad_fn="ThresholdBackward1"),
    Spec("glu", lambda x: F.glu(x, 3), lambda x: x[..., :2] / (1 + jnp.exp(-x[..., 2:])), [X],
         grad_fn="GluBackward0"),
    Spec("prelu", F.prelu, lambda x, w: jnp.where(x > 0, x, w[None, :, None, None] * x), [X, (3,)],
         grad_fn="PreluKernelBackward0"),
    Spec("hardshrink", F.hardshrink, lambda x: jnp.where(jnp.abs(x) > 0.5, x, 0.0), [X],
         grad_fn="HardshrinkBackward0"),
    Spec("softshrink", F.softshrink, lambda x: jnp.sign(x) * jnp.maximum(jnp.abs(x) - 0.5, 0.0), [X],
         grad_fn="SoftshrinkBackward0"),
    Spec("softmax", lambda x: F.softmax(x, dim=1),
         lambda x: jnp.exp(x) / jnp.exp(x).sum(1, keepdims=True), [X], grad_fn="SoftmaxBackward0"),
    Spec("log_softmax", lambda x: x.log_softmax(-1),
         lambda x: x - jnp.log(jnp.exp(x).sum(-1, keepdims=True)), [X], grad_fn="LogSoftmaxBackward0"),
    # ---- convolution / pooling
    Spec("convolution", lambda x, w, b: F.conv2d(x, w, b, stride=(2, 1), padding=(1, 0), dilation=(1, 2)),
         _conv_ref, [X, (4, 3, 3, 2), (4,)], grad_fn="ConvolutionBackward0"),
    Spec("convolution", lambda x, w: F.conv_transpose2d(x, w, stride=2, padding=1, output_padding=1),
         _conv_t_ref, [(2, 4, 5, 4), (4, 3, 3, 3)], id="conv_transpose2d"),
    Spec("max_pool2d", lambda x: F.max_pool2d(x, 2), lambda x: _window_ref(x, 2, 2, jnp.max), [X],
         grad_fn="MaxPool2DWithIndicesBackward0"),
    Spec("max_pool2d_with_indices", lambda x: F.max_pool2d(x, 2, return_indices=True),
         lambda x: (_window_ref(x, 2, 2, jnp.max),), [X], out=0, grad_fn="MaxPool2DWithIndicesBackward0"),
    Spec("max_pool3d", lambda x: F.max_pool3d(x, 2), _max3d_ref, [(1, 2, 4, 4, 4)],
         grad_fn="MaxPool3DWithIndicesBackward0"),
    Spec("avg_pool2d", lambda x: F.avg_pool2d(x, 2, 1), lambda x: _window_ref(x, 2, 1, jnp.mean), [X],
         grad_fn="AvgPool2DBackward0"),
    Spec("avg_pool3d", lambda x: F.avg_pool3d(x, 2),
         lambda x: jnp.mean(x.reshape(1, 2, 2, 2, 2, 2, 2, 2), axis=(3, 5, 7)), [(1, 2, 4, 4, 4)],
         grad_fn="AvgPool3DBackward0"),
    Spec("adaptive_avg_pool2d", lambda x: F.adaptive_avg_pool2d(x, (3, 2)), _adaptive_ref, [X],
         grad_fn="AdaptiveAvgPool2DBackward0"),
    Spec("adaptive_avg_pool3d", lambda x: F.adaptive_avg_pool3d(x, 2),
         lambda x: jnp.mean(x.reshape(1, 2, 2, 2, 2, 2, 2, 2), axis=(3, 5, 7)), [(1, 2, 4, 4, 4)],
         grad_fn="AdaptiveAvgPool3DBackward0"),
    Spec("adaptive_max_pool2d", lambda x: F.adaptive_max_pool2d(x, (3, 2), return_indices=True),
         lambda x: (_adaptive_max_ref(x),), [X], out=0, grad_fn="AdaptiveMaxPool2DBackward0"),
    # ---- normalisation
    Spec("batch_norm", lambda x, w, b: F.batch_norm(x, None, None, w, b, training=True), _bn_ref,
         [X, (3,), (3,)], grad_fn="NativeBatchNormBackward0", atol=1e-8),
    Spec("batch_norm", lambda x, w, b: F.batch_norm(x, fg.zeros(3, dtype=fg.float64) + 0.5,
                                                     fg.ones(3, dtype=fg.float64) * 2, w, b),
         lambda x, w, b: (x - 0.5) / jnp.sqrt(2 + 1e-5) * _bc(w, 4) + _bc(b, 4), [X, (3,), (3,)],
         id="batch_norm_eval"),
    Spec("layer_norm", lambda x, w, b: F.layer_norm(x, (5, 4), w, b), _ln_ref, [X, (5, 4), (5, 4)],
         grad_fn="NativeLayerNormBackward0", atol=1e-8),
    Spec("group_norm", lambda x, w, b: F.group_norm(x, 3, w, b), _gn_ref, [X, (3,), (3,)],
         grad_fn="NativeGroupNormBackward0", atol=1e-8),
    Spec("normalize", lambda x: F.normalize(x, dim=-1),
         lambda x: x / jnp.sqrt((x ** 2).sum(-1, keepdims=True)), [X], grad_fn="DivBackward0"),
    Spec("cosine_similarity", F.cosine_similarity,
         lambda a, b: (a * b).sum(1) / jnp.sqrt((a * a).sum(1) * (b * b).sum(1)), [(4, 5), (4, 5)]),
    Spec("pairwise_distance", F.pairwise_distance,
         lambda a, b: jnp.sqrt(((a - b + 1e-6) ** 2).sum(-1)), [(4, 5), (4, 5)], grad_fn="NormBackward1"),
    # ---- dropout, embedding, resampling
    Spec("dropout", lambda x: _nn.dropout_op(x, fg.from_jax(_drop_noise(tuple(x.shape), x.dtype.np))), _dropout_ref, [X], grad_fn="MulBackward0"),
    Spec("embedding", lambda w, i: F.embedding(i, w), lambda w, i: w[i], [(6, 3), ints(2, 4, high=6)],
         grad_fn="EmbeddingBackward0"),
    Spec("embedding", lambda w, i: F.embedding(i, w, padding_idx=1),
         lambda w, i: jnp.where((i == 1)[..., None], lax.stop_gradient(w[i]), w[i]),
         [(6, 3), lambda r: np.array([[1, 2, 1], [0, 5, 1]])], id="embedding_padding_idx"),
    Spec("upsample_nearest1d", lambda x: F.interpolate(x, scale_factor=2), lambda x: jnp.repeat(x, 2, -1),
         [(2, 3, 4)], grad_fn="UpsampleNearest1DBackward0"),
    Spec("upsample_nearest2d", lambda x: F.interpolate(x, scale_factor=2),
         lambda x: jnp.repeat(jnp.repeat(x, 2, -1), 2, -2), [X], grad_fn="UpsampleNearest2DBackward0"),
    Spec("upsample_nearest3d", lambda x: F.interpolate(x, scale_factor=2),
         lambda x: jnp.repeat(jnp.repeat(jnp.repeat(x, 2, -1), 2, -2), 2, -3), [(1, 2, 2, 3, 2)]),
    Spec("upsample_linear1d", lambda x: F.interpolate(x, size=7, mode="linear", align_corners=True),
         lambda x: jnp.stack([x[..., 0], (x[..., 0] + x[..., 1]) / 2, x[..., 1], (x[..., 1] + x[..., 2]) / 2,
                              x[..., 2], (x[..., 2] + x[..., 3]) / 2, x[..., 3]], -1), [(2, 3, 4)],
         grad_fn="UpsampleLinear1DBackward0"),
    Spec("upsample_bilinear2d", lambda x: F.interpolate(x, size=(9, 7), mode="bilinear", align_corners=True),
         _bilinear_up_ref, [X], grad_fn="UpsampleBilinear2DBackward0"),
    Spec("upsample_trilinear3d", lambda x: F.interpolate(x, size=(3, 3, 3), mode="trilinear", align_corners=True),
         lambda x: jnp.einsum("ncdhw,ad,bh,ew->ncabe", x, *[jnp.asarray([[1, 0], [.5, .5], [0, 1]])] * 3),
         [(1, 2, 2, 2, 2)]),
    Spec("pixel_shuffle", lambda x: F.pixel_shuffle(x, 2),
         lambda x: x.reshape(2, 2, 2, 2, 3, 3).transpose(0, 1, 4, 2, 5, 3).reshape(2, 2, 6, 6), [(2, 8, 3, 3)],
         grad_fn="PixelShuffleBackward0"),
    Spec("pixel_unshuffle", lambda x: F.pixel_unshuffle(x, 2),
         lambda x: x.reshape(2, 2, 2, 2, 3, 2).transpose(0, 1, 3, 5, 2, 4).reshape(2, 8, 2, 3), [(2, 2, 4, 6)],
         grad_fn="PixelUnshuffleBackward0"),
    Spec("bilinear", lambda a, b, w: F.bilinear(a, b, w), lambda a, b, w: jnp.einsum("bi,oij,bj->bo", a, w, b),
         [(4, 3), (4, 2), (5, 3, 2)], grad_fn="ViewBackward0"),
]
