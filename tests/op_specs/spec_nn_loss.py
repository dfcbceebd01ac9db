"""Spec rows for the loss, recurrent and attention ops (funcgrad/_ops/nn_loss.py, nn_rnn.py).

References are plain ``jax.numpy`` written here, independently of the kernels.
"""

import math

import jax
import jax.numpy as jnp
import numpy as np

from funcgrad.nn import _functional_loss as F
from funcgrad.nn import _functional_attention as FA

from . import Spec, ints, pos, unit

S = (4, 3)


def _red(x, r):
    return jnp.mean(x) if r == "mean" else jnp.sum(x) if r == "sum" else x


def prob(*shape):
    return lambda rng: rng.uniform(0.05, 0.95, shape)


def sign(*shape):
    return lambda rng: np.where(rng.standard_normal(shape) > 0, 1.0, -1.0)


def _ce_ref(x, t, w, r, ls=0.0, ignore=-100, logits=True):
    logp = jax.nn.log_softmax(x, axis=1) if logits else x
    n, c = x.shape[0], x.shape[1]
    keep = t != ignore
    safe = jnp.where(keep, t, 0)
    wv = jnp.ones(c) if w is None else w
    rows = jnp.arange(n)
    wt = jnp.where(keep, wv[safe], 0.0)
    nll = -logp[rows, safe] * wt
    smooth = jnp.where(keep, -(logp * wv).sum(1), 0.0)
    if r == "mean":
        nll, smooth = nll.sum() / wt.sum(), smooth.sum() / wt.sum()
    elif r == "sum":
        nll, smooth = nll.sum(), smooth.sum()
    return (1 - ls) * nll + ls / c * smooth


_T = np.array([0, 2, -100, 1])
_W = np.array([0.5, 1.5, 2.0])

SPECS = []
for r in ("mean", "sum", "none"):
    SPECS += [
        Spec("mse_loss", lambda x, y, r=r: F.mse_loss(x, y, reduction=r),
             lambda x, y, r=r: _red((x - y) ** 2, r), [S, S], grad_fn="MseLossBackward0", id=f"mse_{r}"),
        Spec("smooth_l1_loss", lambda x, y, r=r: F.smooth_l1_loss(x, y, reduction=r, beta=0.5),
             lambda x, y, r=r: _red(jnp.where(jnp.abs(x - y) < 0.5, (x - y) ** 2, jnp.abs(x - y) - 0.25), r),
             [S, S], grad_fn="SmoothL1LossBackward0", id=f"smooth_l1_{r}"),
        Spec("huber_loss", lambda x, y, r=r: F.huber_loss(x, y, reduction=r, delta=0.5),
             lambda x, y, r=r: _red(jnp.where(jnp.abs(x - y) < 0.5, 0.5 * (x - y) ** 2,
                                              0.5 * (jnp.abs(x - y) - 0.25)), r),
             [S, S], grad_fn="HuberLossBackward0", id=f"huber_{r}"),
        Spec("soft_margin_loss", lambda x, y, r=r: F.soft_margin_loss(x, y, reduction=r),
             lambda x, y, r=r: _red(jnp.log1p(jnp.exp(-y * x)), r), [S, sign(*S)], grad=(0,),
             grad_fn="SoftMarginLossBackward0", id=f"soft_margin_{r}"),
        Spec("binary_cross_entropy", lambda x, y, w, r=r: F.binary_cross_entropy(x, y, w, reduction=r),
             lambda x, y, w, r=r: _red(-w * (y * jnp.log(x) + (1 - y) * jnp.log(1 - x)), r),
             [prob(*S), prob(*S), pos(3)], grad=(0, 1), grad_fn="BinaryCrossEntropyBackward0",
             id=f"bce_{r}"),
        Spec("binary_cross_entropy_with_logits",
             lambda x, y, w, pw, r=r: F.binary_cross_entropy_with_logits(x, y, w, reduction=r, pos_weight=pw),
             lambda x, y, w, pw, r=r: _red(-w * (pw * y * jnp.log(jax.nn.sigmoid(x))
                                                 + (1 - y) * jnp.log(1 - jax.nn.sigmoid(x))), r),
             [S, prob(*S), pos(3), pos(3)], grad=(0, 1), grad_fn="BinaryCrossEntropyWithLogitsBackward0",
             id=f"bce_logits_{r}"),
        Spec("nll_loss", lambda x, t, w, r=r: F.nll_loss(x, t, w, reduction=r),
             lambda x, t, w, r=r: _ce_ref(x, t, w, r, logits=False),
             [S, _T, _W], grad=(0,), grad_fn="NllLossBackward0", id=f"nll_{r}"),
        Spec("nll_loss", lambda x, t, w, r=r: F.cross_entropy(x, t, w, reduction=r),
             lambda x, t, w, r=r: _ce_ref(x, t, w, r), [S, _T, _W], grad=(0,),
             grad_fn="NllLossBackward0", id=f"ce_{r}"),
        Spec("cross_entropy_smooth",
             lambda x, t, w, r=r: F.cross_entropy(x, t, w, reduction=r, label_smoothing=0.2),
             lambda x, t, w, r=r: _ce_ref(x, t, w, r, 0.2), [S, _T, _W], grad=(0,),
             grad_fn="AddBackward0", id=f"ce_smooth_{r}"),
        Spec("cross_entropy_prob_mean" if r == "mean" else "cross_entropy_prob",
             lambda x, p, r=r: F.cross_entropy(x, p, reduction=r, label_smoothing=0.1),
             lambda x, p, r=r: (lambda l: l.mean() if r == "mean" else l.sum() if r == "sum" else l)(
                 -(jax.nn.log_softmax(x, 1) * (p * 0.9 + 0.1 / 3)).sum(1)),
             [S, prob(*S)], grad_fn="DivBackward1" if r == "mean" else "NegBackward0", id=f"ce_prob_{r}"),
        Spec("multi_margin_loss", lambda x, t, r=r: F.multi_margin_loss(x, t, reduction=r, margin=0.7),
             lambda x, t, r=r: _red(jnp.sum(jnp.where(jax.nn.one_hot(t, 3) > 0, 0.0, jnp.maximum(
                 0.7 - x[jnp.arange(4), t][:, None] + x, 0.0)), 1) / 3, r),
             [S, ints(4)], grad=(0,), grad_fn="MultiMarginLossBackward0", id=f"multi_margin_{r}"),
    ]


def _spatial_ref(x, t, w, r, logits=True):
    """``_ce_ref`` of an (N, C, d...) input: each position a row."""
    rows = jnp.moveaxis(x, 1, -1).reshape(-1, x.shape[1])
    out = _ce_ref(rows, jnp.asarray(t).reshape(-1), w, r, logits=logits)
    return out if r != "none" else out.reshape(t.shape)


_T4 = np.array([[[0, 2], [-100, 1]], [[1, 1], [2, 0]]])
_T3 = np.array([[0, 2, -100, 1], [2, 2, 1, 0]])
SPECS += [
    # spatial inputs: PyTorch's nll_loss2d (an (N, C, H, W) input; any other viewed as (N, C, 1, -1))
    Spec("nll_loss2d", lambda x, t, w: F.nll_loss(x, t, w), lambda x, t, w: _spatial_ref(x, t, w, "mean", False),
         [(2, 3, 2, 2), _T4, _W], grad=(0,), grad_fn="NllLoss2DBackward0", id="nll2d_mean"),
    Spec("nll_loss2d", lambda x, t, w: F.cross_entropy(x, t, w, reduction="none"),
         lambda x, t, w: _spatial_ref(x, t, w, "none"), [(2, 3, 4), _T3, _W], grad=(0,), grad_fn="ViewBackward0",
         id="ce_3d_none"),
]

SPECS += [
    Spec("kl_div", lambda x, y: F.kl_div(x, y, reduction="none"), lambda x, y: y * (jnp.log(y) - x),
         [S, prob(*S)], grad_fn="SubBackward0"),
    Spec("kl_div_log_target", lambda x, y: F.kl_div(x, y, reduction="none", log_target=True),
         lambda x, y: jnp.exp(y) * (y - x), [S, S], grad_fn="MulBackward0"),
    Spec("cosine_embedding_loss", lambda a, b, y: F.cosine_embedding_loss(a, b, y, margin=-0.5, reduction="none"),
         lambda a, b, y: jnp.where(y > 0, 1 - (a * b).sum(1) / jnp.linalg.norm(a, axis=1) / jnp.linalg.norm(b, axis=1),
                                   jnp.maximum((a * b).sum(1) / jnp.linalg.norm(a, axis=1)
                                               / jnp.linalg.norm(b, axis=1) + 0.5, 0)),
         [S, S, np.array([1, -1, 1, -1])], grad=(0, 1), grad_fn="AddBackward0", atol=1e-8, rtol=1e-6),
    Spec("margin_ranking_loss", lambda a, b, y: F.margin_ranking_loss(a, b, y, margin=0.3, reduction="none"),
         lambda a, b, y: jnp.maximum(-y * (a - b) + 0.3, 0), [(5,), (5,), sign(5)], grad=(0, 1),
         grad_fn="ClampMinBackward0"),
    Spec("triplet_margin_loss", lambda a, p, n: F.triplet_margin_loss(a, p, n, reduction="none"),
         lambda a, p, n: jnp.maximum(1.0 + jnp.linalg.norm(a - p + 1e-6, axis=-1)
                                     - jnp.linalg.norm(a - n + 1e-6, axis=-1), 0),
         [S, S, S], grad_fn="ClampMinBackward0", rtol=1e-6),
    Spec("gaussian_nll_loss", lambda x, t, v: F.gaussian_nll_loss(x, t, v, reduction="none"),
         lambda x, t, v: 0.5 * (jnp.log(v) + (x - t) ** 2 / v), [S, S, pos(*S)], grad_fn="MulBackward0"),
    Spec("poisson_nll_loss", lambda x, t: F.poisson_nll_loss(x, t, reduction="none", full=True),
         lambda x, t: jnp.exp(x) - t * x + jnp.where(t > 1, t * jnp.log(t) - t + 0.5 * jnp.log(2 * math.pi * t), 0),
         [S, pos(*S, low=0.5, high=3.0)], grad=(0,), grad_fn="AddBackward0"),
]


# ---- recurrent ---------------------------------------------------------------------------------------
def _ref_lstm_cell(x, h, c, wi, wh, bi, bh):
    g = x @ wi.T + bi + h @ wh.T + bh
    i, f, gg, o = jnp.split(g, 4, -1)
    c = jax.nn.sigmoid(f) * c + jax.nn.sigmoid(i) * jnp.tanh(gg)
    return jax.nn.sigmoid(o) * jnp.tanh(c), c


def _ref_gru_cell(x, h, wi, wh, bi, bh):
    a, b = x @ wi.T + bi, h @ wh.T + bh
    r = jax.nn.sigmoid(a[:, :2] + b[:, :2])
    z = jax.nn.sigmoid(a[:, 2:4] + b[:, 2:4])
    n = jnp.tanh(a[:, 4:] + r * b[:, 4:])
    return (1 - z) * n + z * h


def _ref_scan(cell, xs, h, *w):
    outs = []
    for t in range(xs.shape[0]):
        h = cell(xs[t], h, *w)
        outs.append(h)
    return jnp.stack(outs), h


def _fg_ops():
    from funcgrad._ops import nn_rnn
    from funcgrad._dispatch import apply
    return nn_rnn, apply


def _fg_lstm(x, h, c, wi, wh, bi, bh):
    k, apply = _fg_ops()
    return apply(k.lstm, x, h[None], c[None], None, None, wi, wh, bi, bh, num_layers=1, bidirectional=False,
                 has_bias=True, has_proj=False, dropout=0.0, train=False)


def _ref_lstm(x, h, c, wi, wh, bi, bh):
    outs = []
    for t in range(x.shape[0]):
        h, c = _ref_lstm_cell(x[t], h, c, wi, wh, bi, bh)
        outs.append(h)
    return jnp.stack(outs), h[None], c[None]


def _fg_gru(x, h, wi, wh, bi, bh):
    k, apply = _fg_ops()
    return apply(k.gru, x, h[None], None, None, wi, wh, bi, bh, num_layers=1, bidirectional=False,
                 has_bias=True, has_proj=False, dropout=0.0, train=False)


def _fg_rnn(x, h, wi, wh):
    k, apply = _fg_ops()
    return apply(k.rnn, x, h[None], None, None, wi, wh, nonlinearity="tanh", num_layers=1, bidirectional=False,
                 has_bias=False, has_proj=False, dropout=0.0, train=False)


def _cellop(name, *extra, **kw):
    def f(*a):
        k, apply = _fg_ops()
        return apply(getattr(k, name), *a, *extra, **kw)
    return f


_H = 2
SPECS += [
    Spec("lstm", _fg_lstm, _ref_lstm, [(5, 3, 4), (3, _H), (3, _H), (4 * _H, 4), (4 * _H, _H), (4 * _H,), (4 * _H,)],
         grad_fn="MkldnnRnnLayerBackward0"),
    Spec("lstm", _fg_lstm, _ref_lstm, [(5, 3, 4), (3, _H), (3, _H), (4 * _H, 4), (4 * _H, _H), (4 * _H,), (4 * _H,)],
         out=2, id="lstm_c"),
    Spec("gru", _fg_gru, lambda x, h, *w: _ref_scan(_ref_gru_cell, x, h, *w),
         [(5, 3, 4), (3, _H), (3 * _H, 4), (3 * _H, _H), (3 * _H,), (3 * _H,)], grad_fn="StackBackward0"),
    Spec("rnn", _fg_rnn, lambda x, h, wi, wh: _ref_scan(lambda x, h: jnp.tanh(x @ wi.T + h @ wh.T), x, h),
         [(5, 3, 4), (3, _H), (_H, 4), (_H, _H)], grad_fn="StackBackward0"),
    Spec("lstm_cell", _cellop("lstm_cell"), _ref_lstm_cell,
         [(3, 4), (3, _H), (3, _H), (4 * _H, 4), (4 * _H, _H), (4 * _H,), (4 * _H,)], grad_fn="MulBackward0"),
    Spec("gru_cell", _cellop("gru_cell"), _ref_gru_cell,
         [(3, 4), (3, _H), (3 * _H, 4), (3 * _H, _H), (3 * _H,), (3 * _H,)], grad_fn="AddBackward0"),
    Spec("rnn_tanh_cell", lambda x, h, wi, wh: _cellop("rnn_tanh_cell")(x, h, wi, wh, None, None),
         lambda x, h, wi, wh: jnp.tanh(x @ wi.T + h @ wh.T), [(3, 4), (3, _H), (_H, 4), (_H, _H)],
         grad_fn="TanhBackward0"),
    Spec("rnn_relu_cell", _cellop("rnn_relu_cell"),
         lambda x, h, wi, wh, bi, bh: jax.nn.relu(x @ wi.T + bi + h @ wh.T + bh),
         [(3, 4), (3, _H), (_H, 4), (_H, _H), (_H,), (_H,)], grad_fn="ReluBackward0"),
]


# ---- attention ---------------------------------------------------------------------------------------
def _ref_attn(q, k, v, mask=None):
    s = q @ jnp.swapaxes(k, -1, -2) / math.sqrt(q.shape[-1])
    if mask is not None:
        s = s + mask
    w = jax.nn.softmax(s, -1)
    return w @ v, w


SPECS += [
    Spec("scaled_dot_product_attention", lambda q, k, v, m: FA.scaled_dot_product_attention(q, k, v, m),
         lambda q, k, v, m: _ref_attn(q, k, v, m)[0], [(1, 2, 3, 4), (1, 2, 5, 4), (1, 2, 5, 4), (3, 5)],
         grad=(0, 1, 2), grad_fn="ScaledDotProductFlashAttentionForCpuBackward0"),
    # PyTorch's math path (3-D inputs, a value head dim of its own): matmul's node
    Spec("scaled_dot_product_attention_math", lambda q, k, v, m: FA.scaled_dot_product_attention(q, k, v, m),
         lambda q, k, v, m: _ref_attn(q, k, v, m)[0], [(2, 3, 4), (2, 5, 4), (2, 5, 3), (3, 5)],
         grad_fn="UnsafeViewBackward0"),
    Spec("scaled_dot_product_attention_math_2d", lambda q, k, v: FA.scaled_dot_product_attention(q, k, v),
         lambda q, k, v: _ref_attn(q, k, v)[0], [(3, 4), (5, 4), (5, 2)], grad_fn="MmBackward0"),
    Spec("attention_with_weights", _cellop("attention_with_weights", None, None, scale=0.5, is_causal=False,
                                           dropout_p=0.0),
         lambda q, k, v: _ref_attn(q, k, v), [(2, 3, 4), (2, 5, 4), (2, 5, 3)], out=1),
]
_ = unit
