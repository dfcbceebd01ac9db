"""Attention: scaled_dot_product_attention and MultiheadAttention vs jax.numpy written here,
TransformerEncoder shapes/training; optional PyTorch comparison."""

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import funcgrad
import funcgrad.nn.functional as F
from funcgrad import nn

RNG = np.random.default_rng(0)


def test_sdpa_matches_jnp_with_causal_and_bool_mask():
    q = RNG.standard_normal((2, 4, 3)).astype(np.float32)
    mask = np.tril(np.ones((4, 4), bool))

    def ref(q):
        s = q @ q.swapaxes(-1, -2) / math.sqrt(3)
        s = jnp.where(mask, s, -jnp.inf)
        return (jax.nn.softmax(s, -1) @ q).sum()
    t = funcgrad.tensor(q, requires_grad=True)
    a = F.scaled_dot_product_attention(t, t, t, is_causal=True)
    b = F.scaled_dot_product_attention(t, t, t, attn_mask=funcgrad.tensor(mask))
    np.testing.assert_allclose(np.asarray(a._value), np.asarray(b._value), atol=1e-6)
    a.sum().backward()
    np.testing.assert_allclose(a.sum().item(), ref(q), rtol=1e-5)
    np.testing.assert_allclose(np.asarray(t.grad._value), jax.grad(ref)(q), atol=1e-5)
    with pytest.raises(RuntimeError, match="Explicit attn_mask should not be set"):
        F.scaled_dot_product_attention(t, t, t, attn_mask=funcgrad.tensor(mask), is_causal=True)


def test_sdpa_dropout_is_random_and_scaled():
    q = funcgrad.ones(1, 4, 2)
    v = funcgrad.ones(1, 4, 2)
    a = F.scaled_dot_product_attention(q, q, v, dropout_p=0.5)
    vals = set(np.round(np.asarray(a._value).ravel(), 4).tolist())
    assert vals <= {0.0, 0.5, 1.0, 1.5, 2.0}


def test_mha_matches_jnp():
    mha = nn.MultiheadAttention(4, 2)
    assert [n for n, _ in mha.named_parameters()] == ["in_proj_weight", "in_proj_bias", "out_proj.weight",
                                                     "out_proj.bias"]
    x = RNG.standard_normal((3, 1, 4)).astype(np.float32)
    W, b = np.asarray(mha.in_proj_weight._value), np.asarray(mha.in_proj_bias._value)
    Wo, bo = np.asarray(mha.out_proj.weight._value), np.asarray(mha.out_proj.bias._value)
    qkv = x[:, 0] @ W.T + b
    q, k, v = qkv[:, :4], qkv[:, 4:8], qkv[:, 8:]
    outs, ws = [], []
    for h in range(2):
        s = q[:, 2 * h:2 * h + 2] @ k[:, 2 * h:2 * h + 2].T / math.sqrt(2)
        w = jax.nn.softmax(s, -1)
        ws.append(w)
        outs.append(w @ v[:, 2 * h:2 * h + 2])
    want = jnp.concatenate(outs, -1) @ Wo.T + bo
    out, w = mha(*(funcgrad.tensor(x),) * 3)
    np.testing.assert_allclose(np.asarray(out._value)[:, 0], want, atol=1e-5)
    np.testing.assert_allclose(np.asarray(w._value)[0], (ws[0] + ws[1]) / 2, atol=1e-6)
    assert mha(*(funcgrad.tensor(x),) * 3, need_weights=False)[1] is None


def test_transformer_encoder_trains():
    # same configuration and shapes as test_against_torch (the kernels compile once)
    layer = nn.TransformerEncoderLayer(d_model=8, nhead=2, dim_feedforward=16, dropout=0.0)
    enc = nn.TransformerEncoder(layer, num_layers=2)
    assert "layers.1.self_attn.in_proj_weight" in dict(enc.named_parameters())
    out = enc(funcgrad.randn(5, 2, 8))
    assert out.shape == (5, 2, 8)
    out.pow(2).mean().backward()
    assert all(p.grad is not None for p in enc.parameters())


def test_against_torch():
    torch = pytest.importorskip("torch")
    tl = torch.nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0)
    fl = nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0)
    for n, p in tl.named_parameters():
        fl.get_parameter(n)._set_value(funcgrad.tensor(p.detach().numpy())._value)
    x = RNG.standard_normal((5, 2, 8)).astype(np.float32)
    kpm = np.zeros((2, 5), bool)
    kpm[1, 3:] = True
    a = tl(torch.tensor(x), src_key_padding_mask=torch.tensor(kpm))
    b = fl(funcgrad.tensor(x), src_key_padding_mask=funcgrad.tensor(kpm))
    np.testing.assert_allclose(a.detach().numpy(), np.asarray(b._value), atol=1e-5)
