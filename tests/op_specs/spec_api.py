"""Spec rows for the ops added for real scripts (issue 18): RNN result nodes, distances, trapezoid,
histc/searchsorted, put/index_put, FFTs, rms_norm and two losses (PyTorch parity: tests/test_ops_more.py)."""

from __future__ import annotations

import importlib

import jax
import jax.numpy as jnp
import numpy as np

import funcgrad as fg

from . import Spec


def _apply(name):
    def f(x):
        from funcgrad._dispatch import apply
        from funcgrad._ops import nn_rnn
        return apply(getattr(nn_rnn, name), x)
    return f


SPECS = [
    Spec("rnn_stacked_states", _apply("rnn_stacked_states"), lambda x: x, [(2, 3, 4)], grad_fn="StackBackward0"),
    Spec("rnn_cat_directions", _apply("rnn_cat_directions"), lambda x: x, [(5, 3, 4)], grad_fn="CatBackward0"),
]


def _pn(d, p, axis):
    a = jnp.abs(d)
    return jnp.sum(a ** p, axis=axis) ** (1.0 / p) if p not in (1, float("inf")) else \
        (jnp.sum(a, axis=axis) if p == 1 else jnp.max(a, axis=axis))


SPECS += [
    Spec("cdist", lambda a, b: fg.cdist(a, b), lambda a, b: _pn(a[:, None] - b[None], 2, -1), [(3, 4), (5, 4)],
         grad_fn="CdistBackward0"),
    Spec("cdist", lambda a, b: fg.cdist(a, b, p=1), lambda a, b: _pn(a[:, None] - b[None], 1, -1),
         [(3, 4), (5, 4)], id="cdist_p1"),
    Spec("cdist", lambda a, b: fg.cdist(a, b, p=3.0), lambda a, b: _pn(a[..., :, None, :] - b[..., None, :, :], 3, -1),
         [(2, 3, 4), (2, 5, 4)], id="cdist_p3_batched"),
    Spec("dist", lambda a, b: fg.dist(a, b), lambda a, b: _pn((a - b).ravel(), 2, 0), [(3, 4), (4,)],
         grad_fn="DistBackward0"),
    Spec("dist", lambda a, b: fg.dist(a, b, p=float("inf")), lambda a, b: _pn((a - b).ravel(), float("inf"), 0),
         [(3, 4), (3, 4)], id="dist_inf"),
    Spec("trapezoid_dx", lambda y: fg.trapezoid(y, dx=0.5, dim=0), lambda y: jnp.trapezoid(y, dx=0.5, axis=0),
         [(4, 3)], grad_fn="MulBackward1"),
    Spec("trapezoid_x", lambda y, x: fg.trapezoid(y, x), lambda y, x: jnp.trapezoid(y, x=x, axis=-1),
         [(3, 4), (4,)], grad_fn="DivBackward1"),
    Spec("histc", lambda x: fg.histc(x, bins=5, min=-1, max=1),
         lambda x: jnp.histogram(x.ravel(), 5, (-1.0, 1.0))[0].astype(x.dtype), [(4, 6)], nondiff=True),
    Spec("searchsorted", lambda s, v: fg.searchsorted(s, v), lambda s, v: jnp.searchsorted(s, v).astype(jnp.int64),
         [np.array([1, 3, 5, 7]), np.array([[0, 3], [6, 9]])], nondiff=True),
    Spec("searchsorted", lambda s, v: fg.searchsorted(s, v, right=True),
         lambda s, v: jax.vmap(lambda a, b: jnp.searchsorted(a, b, side="right"))(s, v).astype(jnp.int64),
         [np.array([[1, 3, 5], [2, 2, 4]]), np.array([[3, 5], [2, 0]])], nondiff=True, id="searchsorted_nd"),
    Spec("put", lambda x, s: x.put(fg.tensor([0, 5, -1]), s), lambda x, s: x.ravel().at[jnp.array([0, 5, 11])]
         .set(s).reshape(x.shape), [(3, 4), (3,)], grad_fn="PutBackward0"),
    Spec("put", lambda x, s: x.put(fg.tensor([0, 5, 0]), s, accumulate=True),
         lambda x, s: x.ravel().at[jnp.array([0, 5, 0])].add(s).reshape(x.shape), [(3, 4), (3,)], id="put_acc"),
    Spec("index_put_accumulate", lambda x, v: fg.index_put(x, (fg.tensor([0, 2, 0]),), v, accumulate=True),
         lambda x, v: x.at[jnp.array([0, 2, 0])].add(v), [(3, 4), (3, 4)], grad_fn="IndexPutBackward0"),
    Spec("fft_r2c", lambda x: fg.fft.rfft(x).abs(), lambda x: jnp.abs(jnp.fft.rfft(x)), [(3, 8)],
         grad_fn="AbsBackward0"),
    Spec("fft_r2c", lambda x: fg.fft.fft(x, norm="ortho").real, lambda x: jnp.fft.fft(x, norm="ortho").real,
         [(3, 8)], id="fft_real_input"),
    Spec("fft_c2c", lambda x: fg.fft.fft2(x).imag, lambda x: jnp.fft.fft2(x).imag, [(4, 6)], id="fft2"),
    Spec("fft_c2c", lambda x: fg.fft.ifft(fg.fft.fft(x)).real, lambda x: jnp.fft.ifft(jnp.fft.fft(x)).real,
         [(5,)], id="ifft"),
    Spec("fft_c2r", lambda x: fg.fft.irfft(fg.fft.rfft(x), n=8), lambda x: jnp.fft.irfft(jnp.fft.rfft(x), 8),
         [(2, 8)], grad_fn="FftC2RBackward0"),
    Spec("rms_norm", lambda x, w: fg.nn.functional.rms_norm(x, (4,), w, eps=1e-6),
         lambda x, w: x / jnp.sqrt(jnp.mean(x * x, -1, keepdims=True) + 1e-6) * w, [(3, 4), (4,)],
         grad_fn="MulBackward0"),
    Spec("hinge_embedding_loss", lambda x, t: fg.nn.functional.hinge_embedding_loss(x, t, reduction="none"),
         lambda x, t: jnp.where(t == 1, x, jnp.maximum(1.0 - x, 0)), [(3, 4), np.array([[1.0, -1.0, 1.0, -1.0]] * 3)],
         grad=(0,), grad_fn="AddBackward0"),
    Spec("multilabel_soft_margin_loss",
         lambda x, t: fg.nn.functional.multilabel_soft_margin_loss(x, t, reduction="none"),
         lambda x, t: jnp.mean(-(t * jax.nn.log_sigmoid(x) + (1 - t) * jax.nn.log_sigmoid(-x)), -1),
         [(3, 4), np.array([[1.0, 0.0, 1.0, 0.0]] * 3)], grad=(0,), grad_fn="DivBackward0"),
]
SPECS += [
    Spec("real", lambda x: fg.fft.rfft(x).real, lambda x: jnp.fft.rfft(x).real, [(2, 6)], grad_fn="SelectBackward0"),
    Spec("imag", lambda x: fg.fft.rfft(x).imag, lambda x: jnp.fft.rfft(x).imag, [(2, 6)], grad_fn="SelectBackward0"),
]


def _wn(name):
    def f(*a, **kw):
        from funcgrad._dispatch import apply
        wn = importlib.import_module("funcgrad.nn.utils.weight_norm")  # the module, not the function
        return apply(getattr(wn, name), *a, **kw)
    return f


SPECS += [
    Spec("norm_except_dim", lambda v: _wn("_norm_op")(v, dim=0),
         lambda v: jnp.sqrt(jnp.sum(v * v, axis=(1, 2), keepdims=True)), [(3, 4, 2)], grad_fn="NormBackward1"),
    Spec("weight_norm_interface", lambda v, g: _wn("_weight_norm_op")(v, g, dim=1),
         lambda v, g: v * g / jnp.sqrt(jnp.sum(v * v, axis=0, keepdims=True)), [(3, 4), (1, 4)],
         grad_fn="WeightNormInterfaceBackward0"),
    Spec("weight_norm_all", lambda v, g: _wn("_weight_norm_all_op")(v, g),
         lambda v, g: v * g / jnp.sqrt(jnp.sum(v * v)), [(3, 4), ()], grad_fn="MulBackward0"),
]


def _bag(mode):
    def f(w):
        from funcgrad.nn.functional import embedding_bag
        return embedding_bag(fg.tensor([1, 2, 4, 0, 4]), w, fg.tensor([0, 2]), mode=mode)
    return f


_BAGS = np.array([0, 0, 1, 1, 1])
SPECS += [
    Spec("embedding_bag", _bag("mean"), lambda w: jax.ops.segment_sum(w[jnp.array([1, 2, 4, 0, 4])], _BAGS, 2)
         / jnp.array([[2.0], [3.0]]), [(5, 3)], grad_fn="EmbeddingBagBackward0"),
    Spec("embedding_bag", _bag("max"), lambda w: jax.ops.segment_max(w[jnp.array([1, 2, 4, 0, 4])], _BAGS, 2),
         [(5, 3)], id="embedding_bag_max"),
]
