"""Op table — recurrent layers (RNN/LSTM/GRU, whole stacks and single cells) and attention.

A recurrent stack is ONE op: every layer and direction runs as a ``jax.lax.scan`` inside one pure
function of all the weights, so the forward is one jitted XLA call and the backward one jitted
``jax.vjp``, whatever the sequence length (a new length is a new trace, cached by jax). PyTorch's
gate order: LSTM ``i, f, g, o``; GRU ``r, z, n`` with ``n = tanh(W_in x + b_in + r * (W_hn h + b_hn))``.
Dropout noise (between layers, on attention weights) is drawn from the generator's stream by the
caller, as PyTorch draws it, and passed as a plain array operand, so the kernels stay pure.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from ._registry import defop

_GATES = {"lstm": 4, "gru": 3, "rnn_tanh": 1, "rnn_relu": 1}


def _cell(mode, xw, h, c, w_hh, b_hh, w_hr):
    """One time step given the input projection ``xw = x W_ih^T + b_ih``; returns ``(h, c)``."""
    hw = h @ w_hh.T
    if b_hh is not None:
        hw = hw + b_hh
    if mode == "lstm":
        i, f, g, o = jnp.split(xw + hw, 4, axis=-1)
        c = jax.nn.sigmoid(f) * c + jax.nn.sigmoid(i) * jnp.tanh(g)
        h = jax.nn.sigmoid(o) * jnp.tanh(c)
        if w_hr is not None:
            h = h @ w_hr.T
        return h, c
    if mode == "gru":
        xr, xz, xn = jnp.split(xw, 3, axis=-1)
        hr, hz, hn = jnp.split(hw, 3, axis=-1)
        r = jax.nn.sigmoid(xr + hr)
        z = jax.nn.sigmoid(xz + hz)
        n = jnp.tanh(xn + r * hn)
        return (1.0 - z) * n + z * h, c
    pre = xw + hw
    return (jnp.tanh(pre) if mode == "rnn_tanh" else jax.nn.relu(pre)), c


def _layer(mode, x, h0, c0, w_ih, w_hh, b_ih, b_hh, w_hr, reverse, lengths):
    """One layer, one direction over x (L, N, H_in): ``(outputs (L, N, H_out), h_n, c_n)``.
    With ``lengths`` (N,) (packed sequences) steps past a sequence's end keep its state and output
    zeros, so the reverse direction starts at each sequence's own last step."""
    xw = x @ w_ih.T  # all time steps' input projections in one matmul
    if b_ih is not None:
        xw = xw + b_ih

    def step(carry, inp):
        xw_t, t = inp
        h, c = _cell(mode, xw_t, carry[0], carry[1], w_hh, b_hh, w_hr)
        if lengths is not None:
            valid = (t < lengths)[:, None]
            h = jnp.where(valid, h, carry[0])
            c = jnp.where(valid, c, carry[1]) if mode == "lstm" else c
            return (h, c), jnp.where(valid, h, 0.0)
        return (h, c), h

    steps = jnp.arange(x.shape[0])
    (h, c), ys = jax.lax.scan(step, (h0, c0), (xw, steps), reverse=reverse)
    return ys, h, c


def _stack(x, h0, c0, noise, lengths, *weights, mode, num_layers, bidirectional, has_bias, has_proj, dropout,
           train):
    """The whole stack. ``weights`` in PyTorch's ``_flat_weights`` order: per layer, per direction
    ``w_ih, w_hh, [b_ih, b_hh], [w_hr]``. x: (L, N, H_in); h0: (layers*dirs, N, H_out); noise:
    the inter-layer dropout noise ``(layers - 1, L, N, H_out*dirs)`` or None."""
    per = 2 + 2 * has_bias + has_proj
    dirs = 2 if bidirectional else 1
    hs, cs = [], []
    inp = x
    for layer in range(num_layers):
        outs = []
        for d in range(dirs):
            k = layer * dirs + d
            w = list(weights[k * per:(k + 1) * per])
            w_ih, w_hh = w[0], w[1]
            b_ih, b_hh = (w[2], w[3]) if has_bias else (None, None)
            w_hr = w[-1] if has_proj else None
            c_init = c0[k] if c0 is not None else jnp.zeros((), x.dtype)
            ys, h, c = _layer(mode, inp, h0[k], c_init, w_ih, w_hh, b_ih, b_hh, w_hr, d == 1,
                               lengths)
            outs.append(ys)
            hs.append(h)
            cs.append(c)
        inp = outs[0] if dirs == 1 else jnp.concatenate(outs, axis=-1)
        if noise is not None and layer < num_layers - 1:
            inp = inp * noise[layer]  # PyTorch's dropout: input * (bernoulli(1 - p) / (1 - p))
    if mode == "lstm":
        return inp, jnp.stack(hs), jnp.stack(cs)
    return inp, jnp.stack(hs)


def _stack_lstm(x, h0, c0, noise, lengths, *weights, **kw):
    return _stack(x, h0, c0, noise, lengths, *weights, mode="lstm", **kw)


def _stack_gru(x, h0, noise, lengths, *weights, **kw):
    return _stack(x, h0, None, noise, lengths, *weights, mode="gru", **kw)


def _stack_rnn(x, h0, noise, lengths, *weights, nonlinearity, **kw):
    return _stack(x, h0, None, noise, lengths, *weights, mode="rnn_" + nonlinearity, **kw)


# PyTorch's CPU node names for these outputs depend on its backend; these are the common ones.
# (fuse=False: a stack's backward runs as its own kernel, once per sequence length, never inside a
# fused backward program, which would compile anew for each mix of lengths: see Op's ``fuse``)
lstm = defop("lstm", _stack_lstm, "MkldnnRnnLayerBackward0", fuse=False)
gru = defop("gru", _stack_gru, "StackBackward0", fuse=False)
rnn = defop("rnn", _stack_rnn, "StackBackward0", fuse=False)
# PyTorch assembles an LSTM's h_n/c_n with ``stack`` of the per-layer states and a bidirectional
# output with ``cat`` of the two directions, and users print those nodes. The stack op above
# returns them assembled already; these identity ops give the graph PyTorch's nodes on top.
rnn_stacked_states = defop("rnn_stacked_states", lambda h: h, "StackBackward0", linear=True)
rnn_cat_directions = defop("rnn_cat_directions", lambda y: y, "CatBackward0", linear=True)


# ---- cells ---------------------------------------------------------------------------------------
def _proj(x, w_ih, b_ih):
    xw = x @ w_ih.T
    return xw if b_ih is None else xw + b_ih


def _lstm_cell(x, h, c, w_ih, w_hh, b_ih, b_hh):
    return _cell("lstm", _proj(x, w_ih, b_ih), h, c, w_hh, b_hh, None)


def _gru_cell(x, h, w_ih, w_hh, b_ih, b_hh):
    return _cell("gru", _proj(x, w_ih, b_ih), h, None, w_hh, b_hh, None)[0]


def _rnn_cell(x, h, w_ih, w_hh, b_ih, b_hh, *, nonlinearity):
    return _cell("rnn_" + nonlinearity, _proj(x, w_ih, b_ih), h, None, w_hh, b_hh, None)[0]


lstm_cell = defop("lstm_cell", _lstm_cell, "MulBackward0")
gru_cell = defop("gru_cell", _gru_cell, "AddBackward0")
rnn_tanh_cell = defop("rnn_tanh_cell", lambda *a: _rnn_cell(*a, nonlinearity="tanh"), "TanhBackward0")
rnn_relu_cell = defop("rnn_relu_cell", lambda *a: _rnn_cell(*a, nonlinearity="relu"), "ReluBackward0")


# ---- attention -----------------------------------------------------------------------------------
def _attention(q, k, v, mask, noise, *, scale, is_causal, dropout_p):
    """softmax(q kᵀ · scale + mask) v over (..., L, E) / (..., S, E); returns (out, weights)."""
    s = (q @ jnp.swapaxes(k, -1, -2)) * scale
    L, S = q.shape[-2], k.shape[-2]
    if is_causal:
        s = jnp.where(jnp.tril(jnp.ones((L, S), bool)), s, -jnp.inf)
    if mask is not None:
        s = jnp.where(mask, s, -jnp.inf) if mask.dtype == jnp.bool_ else s + mask
    w = jax.nn.softmax(s, axis=-1)
    if noise is not None:  # dropout of the weights: w * (bernoulli(1 - p) / (1 - p)), PyTorch's noise
        w = w * noise
    return w @ v, w


def _sdpa(q, k, v, mask, noise, **kw):
    return _attention(q, k, v, mask, noise, **kw)[0]


# one kernel, named as the PyTorch CPU backend that F.scaled_dot_product_attention picks for the
# call: its flash kernel, or its math composite, whose last node is matmul's (_unsafe_view of a
# bmm; mm for 2-D inputs)
scaled_dot_product_attention = defop("scaled_dot_product_attention", _sdpa,
                                     "ScaledDotProductFlashAttentionForCpuBackward0")
scaled_dot_product_attention_math = defop("scaled_dot_product_attention_math", _sdpa, "UnsafeViewBackward0")
scaled_dot_product_attention_math_2d = defop("scaled_dot_product_attention_math_2d", _sdpa, "MmBackward0")
# Attention that also returns its weights (MultiheadAttention with need_weights=True)
attention_with_weights = defop("attention_with_weights", _attention, "BmmBackward0")
