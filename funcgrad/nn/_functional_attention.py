"""``scaled_dot_product_attention`` and ``multi_head_attention_forward`` of
``funcgrad.nn.functional`` (kernels in ``funcgrad/_ops/nn_rnn.py``)."""

from __future__ import annotations

import math
import warnings

import jax.numpy as jnp

from .._broadcast import check_inplace, infer_size
from .._dispatch import apply
from .._factories import zeros
from .._ops import nn_rnn as _k
from .._ops.linalg import matmul
from .._ops.shape import cat
from .._random import _sample
from .._tensor import Tensor, _scalar_type_name
from ..backends.cuda import _sdp

__all__ = ["scaled_dot_product_attention", "multi_head_attention_forward"]


def _noise(p: float, q: Tensor, k: Tensor):
    """The attention weights' dropout noise, or None (no dropout): PyTorch's math path (and
    ``multi_head_attention_forward``) applies ``dropout`` to the softmax weights of shape
    ``batch (broadcast) + (L, S)``, so the mask is that shape's ``bernoulli_`` draw, row-major."""
    if p <= 0.0:
        return None
    shape = infer_size(q.shape[:-2], k.shape[:-2]) + (q.shape[-2], k.shape[-2])
    return _sample.dropout_noise(None, shape, p, q.dtype.np)


def scaled_dot_product_attention(query: Tensor, key: Tensor, value: Tensor,
                                 attn_mask: Tensor | None = None, dropout_p: float = 0.0,
                                 is_causal: bool = False, scale: float | None = None,
                                 enable_gqa: bool = False) -> Tensor:
    """``softmax(q kᵀ · scale + mask) v`` over ``(..., L, E)`` queries and ``(..., S, E)`` keys, in one
    kernel. ``attn_mask``: bool (True = attend) or float (added to the scores); ``is_causal`` masks
    the upper triangle; ``scale`` defaults to ``1/sqrt(E)``.

    >>> import funcgrad
    >>> import funcgrad.nn.functional as F
    >>> q = funcgrad.ones(1, 2, 4)
    >>> F.scaled_dot_product_attention(q, q, funcgrad.tensor([[[1.0], [3.0]]]))
    tensor([[[2.],
             [2.]]])
    """
    if is_causal and attn_mask is not None:
        raise RuntimeError("_scaled_dot_product_attention: Explicit attn_mask should not be set when "
                           "is_causal=True")
    if enable_gqa and query.ndim >= 3 and query.shape[-3] != key.shape[-3]:
        rep = query.shape[-3] // key.shape[-3]
        key = key.repeat_interleave(rep, dim=-3)
        value = value.repeat_interleave(rep, dim=-3)
    s = 1.0 / math.sqrt(query.shape[-1]) if scale is None else float(scale)
    p = float(dropout_p)
    kernel = _backend(query, key, value, attn_mask, p)
    if query.shape[-1] != key.shape[-1]:  # (the math composite's bmm of q and k's transpose)
        bh = math.prod(query.shape[:-2])
        raise RuntimeError(f"Expected size for first two dimensions of batch2 tensor to be: [{bh}, "
                           f"{query.shape[-1]}] but got: [{bh}, {key.shape[-1]}].")
    if not (query.dtype.is_floating_point or query.dtype.is_complex):  # (its float scale)
        raise RuntimeError(f"expected scalar type Float but found {_scalar_type_name(query.dtype)}")
    try:
        return apply(kernel, query, key, value, attn_mask,
                     _noise(p, query, key), scale=s, is_causal=bool(is_causal), dropout_p=p)
    except (ValueError, RuntimeError):
        _shape_error(query, key, value, attn_mask)
        raise


def _shape_error(q, k, v, mask) -> None:
    """PyTorch's error for operands whose batch dims do not broadcast, as its math composite meets
    them: ``q @ kᵀ`` (matmul's infer_size), the scores ``+= mask`` (in place), ``@ v``."""
    try:
        batch = infer_size(q.shape[:-2], k.shape[:-2])
        if mask is not None:
            check_inplace(batch + (q.shape[-2], k.shape[-2]), (mask.shape,))
        infer_size(batch, v.shape[:-2])
    except RuntimeError as e:
        raise e from None


def _math(q, v):
    return _k.scaled_dot_product_attention_math_2d if q.ndim <= 2 and v.ndim <= 2 else \
        _k.scaled_dot_product_attention_math


def _backend(q, k, v, mask, p):
    """The kernel named as the backend PyTorch's CPU build selects (sdp_utils_cpp): flash for
    4-D float inputs of one batch size, head count and head dim, rows of stride 1, no dropout and
    a 2-D/4-D mask that does not require grad; else the math composite. PyTorch's switches
    (``nn.attention.sdpa_kernel``, ``backends.cuda.enable_*_sdp``) choose as on a CPU: flash if on
    and possible, else math if on, else PyTorch's warnings and error."""
    flash_on, math_on = _sdp["flash"], _sdp["math"]
    if not (q.numel() and k.numel() and v.numel()):  # (PyTorch gives empty inputs their empty result first)
        flash_on, math_on = False, True
    if not (flash_on or math_on):
        raise RuntimeError("No viable backend for scaled_dot_product_attention was found. This is likely "
                           "due to turning off both the math kernel and the fused kernels.")
    if flash_on:
        why = _not_flash(q, k, v, mask, p)
        if why == "" and q.shape[-2] > 0 and k.shape[-2] > 0:
            return _k.scaled_dot_product_attention
        if not math_on:
            if why != "":  # (PyTorch's zero-length sequences: flash, no different from math for them)
                warnings.warn("Flash attention kernel not used because:", UserWarning, stacklevel=3)
                if why is not None:
                    warnings.warn(why, UserWarning, stacklevel=3)
                raise RuntimeError("No available kernel.  Aborting execution.")
    elif not math_on:
        warnings.warn("Flash attention kernel not used because:", UserWarning, stacklevel=3)
        warnings.warn("Flash attention has been runtime disabled.", UserWarning, stacklevel=3)
        raise RuntimeError("No available kernel.  Aborting execution.")
    return _math(q, v)


_FLASH_DTYPES = ("float32", "float64", "bfloat16", "float16")
_C_NAMES = {"int64": "long int", "int32": "int", "int16": "short int", "int8": "signed char",
            "uint8": "unsigned char", "bool": "bool", "complex64": "c10::complex<float>",
            "complex128": "c10::complex<double>"}


def _sizes(t) -> str:
    return "[" + ", ".join(map(str, t.shape)) + "]"


def _not_flash(q, k, v, mask, p):
    """Why PyTorch's CPU flash kernel cannot serve the call (sdp_utils_cpp's checks, in order): its
    warning, None for a check that gives none (a mask requiring grad), "" when it can after all
    (a zero-length sequence, which funcgrad's flash kernel does not take)."""
    if p > 0.0:
        return "Both fused kernels do not support non-zero dropout."
    if not q.ndim == k.ndim == v.ndim == 4:
        return (f"All fused kernels requires query, key and value to be 4 dimensional, but got Query "
                f"dim: {q.ndim}, Key dim: {k.ndim}, Value dim: {v.ndim} instead.")
    if not q.shape[0] == k.shape[0] == v.shape[0]:
        return (f"For dense inputs, both fused kernels require query, key and value to have the same "
                f"batch_size. Query.sizes(): {_sizes(q)}, Key.sizes(): {_sizes(k)}, Value.sizes(): "
                f"{_sizes(v)} instead. To broadcast dense inputs, try using unsqueeze and expand_to before "
                f"passing them into the kernel.")
    if not q.shape[1] == k.shape[1] == v.shape[1]:
        return (f"For dense input, both fused kernels require query, key and value to have the same "
                f"num_heads. Query.sizes(): {_sizes(q)}, Key sizes(): {_sizes(k)}, Value sizes(): "
                f"{_sizes(v)} instead. To broadcast dense inputs, try using unsqueeze and expand_to before "
                f"passing them into the kernel.")
    if mask is not None and mask.ndim not in (2, 4):
        return ("Please use the following attn mask shapes: 2d - ({Q_seq_len, 1}  x {KV_seq_len, 1}); "
                "4d - ({Batch, 1} x {Num_heads, 1} x {Q_seq_len, 1}  x {KV_seq_len, 1})")
    if not q.shape[-1] == k.shape[-1] == v.shape[-1]:
        return (f"Flash attention requires q,k,v to have the same last dimension. Got Query.size(-1): "
                f"{q.shape[-1]}, Key.size(-1): {k.shape[-1]}, Value.size(-1): {v.shape[-1]} instead.")
    if q.shape[-2] == 0 or k.shape[-2] == 0:
        return ""
    if not q.stride(-1) == k.stride(-1) == v.stride(-1) == 1:
        return (f"All fused kernels require the last dimension of the input to have stride 1. Got "
                f"Query.stride(-1): {q.stride(-1)}, Key.stride(-1): {k.stride(-1)}, Value.stride(-1): "
                f"{v.stride(-1)}")
    if mask is not None and mask.requires_grad:
        return None
    if q.dtype.np.name not in _FLASH_DTYPES:
        names = [_C_NAMES.get(t.dtype.np.name, t.dtype.np.name) for t in (q, k, v)]
        return (f"Expected query, key and value to all be of dtype: {{Float, Double, BFloat16, Half}}. Got "
                f"Query dtype: {names[0]}, Key dtype: {names[1]}, and Value dtype: {names[2]} instead.")
    return ""


def _linear(x, w, b):
    y = matmul(x, w.t())
    return y if b is None else y + b


def multi_head_attention_forward(query, key, value, embed_dim_to_check, num_heads, in_proj_weight,
                                 in_proj_bias, bias_k, bias_v, add_zero_attn, dropout_p,
                                 out_proj_weight, out_proj_bias, training=True, key_padding_mask=None,
                                 need_weights=True, attn_mask=None, use_separate_proj_weight=False,
                                 q_proj_weight=None, k_proj_weight=None, v_proj_weight=None,
                                 static_k=None, static_v=None, average_attn_weights=True,
                                 is_causal=False):
    """PyTorch's ``F.multi_head_attention_forward`` on sequence-first inputs ``(L, N, E)`` or
    unbatched ``(L, E)``; returns ``(attn_output, attn_weights or None)``."""
    unbatched = query.ndim == 2
    if unbatched:
        query, key, value = query.unsqueeze(1), key.unsqueeze(1), value.unsqueeze(1)
        if key_padding_mask is not None:
            key_padding_mask = key_padding_mask.unsqueeze(0)
    tgt_len, bsz, embed_dim = query.shape
    if embed_dim != embed_dim_to_check:
        raise AssertionError(f"was expecting embedding dimension of {embed_dim_to_check}, but got "
                             f"{embed_dim}")
    head_dim = embed_dim // num_heads
    if head_dim * num_heads != embed_dim:
        raise AssertionError(f"embed_dim {embed_dim} not divisible by num_heads {num_heads}")
    if is_causal and attn_mask is None:
        raise RuntimeError("Need attn_mask if specifying the is_causal hint. You may use the Transformer "
                           "module method `generate_square_subsequent_mask` to create this mask.")
    if not use_separate_proj_weight:
        e = embed_dim
        wq, wk, wv = in_proj_weight[:e], in_proj_weight[e:2 * e], in_proj_weight[2 * e:]
    else:
        wq, wk, wv = q_proj_weight, k_proj_weight, v_proj_weight
    if in_proj_bias is not None:
        e = embed_dim
        bq, bk, bv = in_proj_bias[:e], in_proj_bias[e:2 * e], in_proj_bias[2 * e:]
    else:
        bq = bk = bv = None
    q, k, v = _linear(query, wq, bq), _linear(key, wk, bk), _linear(value, wv, bv)
    if bias_k is not None:
        k = cat([k, bias_k.repeat(1, bsz, 1)])
        v = cat([v, bias_v.repeat(1, bsz, 1)])
        if attn_mask is not None:
            attn_mask = _pad_last(attn_mask)
        if key_padding_mask is not None:
            key_padding_mask = _pad_last(key_padding_mask)
    # (L, N, E) -> (N, heads, L, head_dim)
    src_len = k.shape[0]
    q = q.reshape(tgt_len, bsz, num_heads, head_dim).permute(1, 2, 0, 3)
    k = k.reshape(src_len, bsz, num_heads, head_dim).permute(1, 2, 0, 3)
    v = v.reshape(src_len, bsz, num_heads, head_dim).permute(1, 2, 0, 3)
    if add_zero_attn:
        z = zeros(bsz, num_heads, 1, head_dim, dtype=k.dtype)
        k, v = cat([k, z], dim=2), cat([v, z], dim=2)
        src_len += 1
        if attn_mask is not None:
            attn_mask = _pad_last(attn_mask)
        if key_padding_mask is not None:
            key_padding_mask = _pad_last(key_padding_mask)
    mask = _merge_masks(attn_mask, key_padding_mask, bsz, num_heads, tgt_len, src_len, q.dtype)
    p = float(dropout_p) if training else 0.0
    out, w = apply(_k.attention_with_weights, q, k, v, mask, _noise(p, q, k), scale=1.0 / math.sqrt(head_dim),
                   is_causal=False, dropout_p=p)
    out = out.permute(2, 0, 1, 3).reshape(tgt_len * bsz, embed_dim)
    out = _linear(out, out_proj_weight, out_proj_bias).view(tgt_len, bsz, embed_dim)
    if unbatched:
        out = out.squeeze(1)
    if not need_weights:
        return out, None
    if average_attn_weights:
        w = w.mean(dim=1)
    if unbatched:
        w = w.squeeze(0)
    return out, w


def _pad_last(m):
    return cat([m, zeros(*m.shape[:-1], 1, dtype=m.dtype)], dim=-1)


def _merge_masks(attn_mask, key_padding_mask, bsz, num_heads, tgt_len, src_len, dtype):
    """A float mask ``(N, heads, L, S)`` (or broadcastable) with -inf where attention is masked:
    bool masks are True where NOT allowed (MultiheadAttention's convention, the opposite of sdpa)."""
    m = None
    if attn_mask is not None:
        a = attn_mask._value
        if a.dtype == jnp.bool_:
            a = jnp.where(a, -jnp.inf, 0.0).astype(dtype.np)
        if a.ndim == 2:
            if a.shape != (tgt_len, src_len):
                raise RuntimeError(f"The shape of the 2D attn_mask is {tuple(a.shape)}, but should be "
                                   f"{(tgt_len, src_len)}.")
        elif a.ndim == 3:
            if a.shape != (bsz * num_heads, tgt_len, src_len):
                raise RuntimeError(f"The shape of the 3D attn_mask is {tuple(a.shape)}, but should be "
                                   f"{(bsz * num_heads, tgt_len, src_len)}.")
            a = a.reshape(bsz, num_heads, tgt_len, src_len)
        m = a
    if key_padding_mask is not None:
        kp = key_padding_mask._value
        if kp.shape != (bsz, src_len):
            raise AssertionError(f"expecting key_padding_mask shape of {(bsz, src_len)}, but got "
                                 f"{tuple(kp.shape)}")
        kp = jnp.where(kp, -jnp.inf, 0.0) if kp.dtype == jnp.bool_ else kp
        kp = kp.astype(dtype.np)[:, None, None, :]
        m = kp if m is None else m + kp
    if m is None:
        return None
    # a float attn_mask may require grad in PyTorch; here masks are constants
    return Tensor._wrap(m)
