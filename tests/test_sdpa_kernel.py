"""``funcgrad.nn.attention.sdpa_kernel`` / ``SDPBackend`` and PyTorch's global kernel switches acting on
``scaled_dot_product_attention`` as on PyTorch's CPU build: which calls run with only flash, only math,
or neither allowed, and PyTorch's warnings and errors. ``EXPECTED`` is the transcript of ``_transcript``
recorded from PyTorch 2.13 (run on torch too where it is installed)."""

import importlib
import warnings

import numpy as np
import pytest

import funcgrad

from ._rows import check_transcript, torch_transcript


def _transcript(torch):
    F = torch.nn.functional
    attention = importlib.import_module(torch.__name__ + ".nn.attention")
    SDPBackend, sdpa_kernel = attention.SDPBackend, attention.sdpa_kernel
    rng = np.random.default_rng(0)

    def t(*s):
        return torch.tensor(rng.normal(size=s).astype(np.float32))
    q4, out = t(1, 2, 4, 8), []
    cases = [("3d", (t(2, 4, 8),) * 3, {}), ("dropout", (q4,) * 3, {"dropout_p": 0.1}),
             ("mask3d", (q4,) * 3, {"attn_mask": torch.ones(2, 4, 4, dtype=torch.bool)}),
             ("heads", (q4, t(1, 1, 4, 8), t(1, 1, 4, 8)), {}), ("batch", (t(2, 2, 4, 8), q4, q4), {}),
             ("head dim", (q4, t(1, 2, 4, 6), q4), {}), ("v dim", (q4, q4, t(1, 2, 4, 6)), {}),
             ("zero seq", (t(1, 2, 0, 8), q4, q4), {}), ("stride", (t(1, 2, 8, 4).transpose(-1, -2), q4, q4), {}),
             ("int", (torch.ones(1, 2, 4, 8, dtype=torch.int64),) * 3, {}), ("eligible", (q4,) * 3, {}),
             ("mask grad", (q4,) * 3, {"attn_mask": torch.zeros(4, 4, requires_grad=True)}),
             ("gqa", (t(1, 4, 4, 8), q4, q4), {"enable_gqa": True})]
    for backends in [SDPBackend.FLASH_ATTENTION, SDPBackend.MATH, SDPBackend.EFFICIENT_ATTENTION,
                     SDPBackend.OVERRIDEABLE, [SDPBackend.CUDNN_ATTENTION, SDPBackend.MATH],
                     [SDPBackend.FLASH_ATTENTION, SDPBackend.MATH]]:
        for name, args, kw in cases:
            with warnings.catch_warnings(record=True) as w:
                warnings.simplefilter("always")
                try:
                    with sdpa_kernel(backends):
                        r = "ok " + str(tuple(F.scaled_dot_product_attention(*args, **kw).shape))
                except Exception as e:  # noqa: BLE001  (the error is the transcript's line)
                    r = f"ERR {type(e).__name__} {e}"
            out.append(f"{backends} {name} {r} {[str(x.message).split(' (Triggered')[0] for x in w]}")
    cuda = torch.backends.cuda
    out.append(f"{cuda.math_sdp_enabled()} {cuda.flash_sdp_enabled()} {cuda.mem_efficient_sdp_enabled()}")
    with sdpa_kernel([SDPBackend.MATH]):
        out.append(f"{cuda.math_sdp_enabled()} {cuda.flash_sdp_enabled()} {cuda.mem_efficient_sdp_enabled()}")
    try:
        with sdpa_kernel("math"):
            pass
    except AssertionError as e:
        out.append(f"E {e}")
    out.append(f"{SDPBackend.MATH} {SDPBackend.FLASH_ATTENTION!r} {int(SDPBackend.CUDNN_ATTENTION)} "
               f"{attention.WARN_FOR_UNFUSED_KERNELS}")
    qs, k = t(1, 2, 8, 4).transpose(-1, -2), t(1, 2, 4, 8)  # a query whose rows are not of stride 1: math
    d = F.scaled_dot_product_attention(qs, k, k)
    with sdpa_kernel(SDPBackend.MATH):
        out.append(f"noncontig default is math: {bool(torch.equal(d, F.scaled_dot_product_attention(qs, k, k)))}")
    d = F.scaled_dot_product_attention(q4, k, k)
    with sdpa_kernel(SDPBackend.FLASH_ATTENTION):
        out.append(f"default is flash: {bool(torch.equal(d, F.scaled_dot_product_attention(q4, k, k)))}")
    return out


EXPECTED = [
    "SDPBackend.FLASH_ATTENTION 3d ERR RuntimeError No available kernel.  Aborting execution. ['Flash attention kernel not used because:', 'All fused kernels requires query, key and value to be 4 dimensional, but got Query dim: 3, Key dim: 3, Value dim: 3 instead.']",
    "SDPBackend.FLASH_ATTENTION dropout ERR RuntimeError No available kernel.  Aborting execution. ['Flash attention kernel not used because:', 'Both fused kernels do not support non-zero dropout.']",
    "SDPBackend.FLASH_ATTENTION mask3d ERR RuntimeError No available kernel.  Aborting execution. ['Flash attention kernel not used because:', 'Please use the following attn mask shapes: 2d - ({Q_seq_len, 1}  x {KV_seq_len, 1}); 4d - ({Batch, 1} x {Num_heads, 1} x {Q_seq_len, 1}  x {KV_seq_len, 1})']",
    "SDPBackend.FLASH_ATTENTION heads ERR RuntimeError No available kernel.  Aborting execution. ['Flash attention kernel not used because:', 'For dense input, both fused kernels require query, key and value to have the same num_heads. Query.sizes(): [1, 2, 4, 8], Key sizes(): [1, 1, 4, 8], Value sizes(): [1, 1, 4, 8] instead. To broadcast dense inputs, try using unsqueeze and expand_to before passing them into the kernel.']",
    "SDPBackend.FLASH_ATTENTION batch ERR RuntimeError No available kernel.  Aborting execution. ['Flash attention kernel not used because:', 'For dense inputs, both fused kernels require query, key and value to have the same batch_size. Query.sizes(): [2, 2, 4, 8], Key.sizes(): [1, 2, 4, 8], Value.sizes(): [1, 2, 4, 8] instead. To broadcast dense inputs, try using unsqueeze and expand_to before passing them into the kernel.']",
    "SDPBackend.FLASH_ATTENTION head dim ERR RuntimeError No available kernel.  Aborting execution. ['Flash attention kernel not used because:', 'Flash attention requires q,k,v to have the same last dimension. Got Query.size(-1): 8, Key.size(-1): 6, Value.size(-1): 8 instead.']",
    "SDPBackend.FLASH_ATTENTION v dim ERR RuntimeError No available kernel.  Aborting execution. ['Flash attention kernel not used because:', 'Flash attention requires q,k,v to have the same last dimension. Got Query.size(-1): 8, Key.size(-1): 8, Value.size(-1): 6 instead.']",
    'SDPBackend.FLASH_ATTENTION zero seq ok (1, 2, 0, 8) []',
    "SDPBackend.FLASH_ATTENTION stride ERR RuntimeError No available kernel.  Aborting execution. ['Flash attention kernel not used because:', 'All fused kernels require the last dimension of the input to have stride 1. Got Query.stride(-1): 4, Key.stride(-1): 1, Value.stride(-1): 1']",
    "SDPBackend.FLASH_ATTENTION int ERR RuntimeError No available kernel.  Aborting execution. ['Flash attention kernel not used because:', 'Expected query, key and value to all be of dtype: {Float, Double, BFloat16, Half}. Got Query dtype: long int, Key dtype: long int, and Value dtype: long int instead.']",
    'SDPBackend.FLASH_ATTENTION eligible ok (1, 2, 4, 8) []',
    "SDPBackend.FLASH_ATTENTION mask grad ERR RuntimeError No available kernel.  Aborting execution. ['Flash attention kernel not used because:']",
    'SDPBackend.FLASH_ATTENTION gqa ok (1, 4, 4, 8) []',
    'SDPBackend.MATH 3d ok (2, 4, 8) []',
    'SDPBackend.MATH dropout ok (1, 2, 4, 8) []',
    'SDPBackend.MATH mask3d ok (1, 2, 4, 8) []',
    'SDPBackend.MATH heads ok (1, 2, 4, 8) []',
    'SDPBackend.MATH batch ok (2, 2, 4, 8) []',
    'SDPBackend.MATH head dim ERR RuntimeError Expected size for first two dimensions of batch2 tensor to be: [2, 8] but got: [2, 6]. []',
    'SDPBackend.MATH v dim ok (1, 2, 4, 6) []',
    'SDPBackend.MATH zero seq ok (1, 2, 0, 8) []',
    'SDPBackend.MATH stride ok (1, 2, 4, 8) []',
    'SDPBackend.MATH int ERR RuntimeError expected scalar type Float but found Long []',
    'SDPBackend.MATH eligible ok (1, 2, 4, 8) []',
    'SDPBackend.MATH mask grad ok (1, 2, 4, 8) []',
    'SDPBackend.MATH gqa ok (1, 4, 4, 8) []',
    'SDPBackend.EFFICIENT_ATTENTION 3d ERR RuntimeError No viable backend for scaled_dot_product_attention was found. This is likely due to turning off both the math kernel and the fused kernels. []',
    'SDPBackend.EFFICIENT_ATTENTION dropout ERR RuntimeError No viable backend for scaled_dot_product_attention was found. This is likely due to turning off both the math kernel and the fused kernels. []',
    'SDPBackend.EFFICIENT_ATTENTION mask3d ERR RuntimeError No viable backend for scaled_dot_product_attention was found. This is likely due to turning off both the math kernel and the fused kernels. []',
    'SDPBackend.EFFICIENT_ATTENTION heads ERR RuntimeError No viable backend for scaled_dot_product_attention was found. This is likely due to turning off both the math kernel and the fused kernels. []',
    'SDPBackend.EFFICIENT_ATTENTION batch ERR RuntimeError No viable backend for scaled_dot_product_attention was found. This is likely due to turning off both the math kernel and the fused kernels. []',
    'SDPBackend.EFFICIENT_ATTENTION head dim ERR RuntimeError No viable backend for scaled_dot_product_attention was found. This is likely due to turning off both the math kernel and the fused kernels. []',
    'SDPBackend.EFFICIENT_ATTENTION v dim ERR RuntimeError No viable backend for scaled_dot_product_attention was found. This is likely due to turning off both the math kernel and the fused kernels. []',
    'SDPBackend.EFFICIENT_ATTENTION zero seq ok (1, 2, 0, 8) []',
    'SDPBackend.EFFICIENT_ATTENTION stride ERR RuntimeError No viable backend for scaled_dot_product_attention was found. This is likely due to turning off both the math kernel and the fused kernels. []',
    'SDPBackend.EFFICIENT_ATTENTION int ERR RuntimeError No viable backend for scaled_dot_product_attention was found. This is likely due to turning off both the math kernel and the fused kernels. []',
    'SDPBackend.EFFICIENT_ATTENTION eligible ERR RuntimeError No viable backend for scaled_dot_product_attention was found. This is likely due to turning off both the math kernel and the fused kernels. []',
    'SDPBackend.EFFICIENT_ATTENTION mask grad ERR RuntimeError No viable backend for scaled_dot_product_attention was found. This is likely due to turning off both the math kernel and the fused kernels. []',
    'SDPBackend.EFFICIENT_ATTENTION gqa ERR RuntimeError No viable backend for scaled_dot_product_attention was found. This is likely due to turning off both the math kernel and the fused kernels. []',
    'SDPBackend.OVERRIDEABLE 3d ERR RuntimeError No viable backend for scaled_dot_product_attention was found. This is likely due to turning off both the math kernel and the fused kernels. []',
    'SDPBackend.OVERRIDEABLE dropout ERR RuntimeError No viable backend for scaled_dot_product_attention was found. This is likely due to turning off both the math kernel and the fused kernels. []',
    'SDPBackend.OVERRIDEABLE mask3d ERR RuntimeError No viable backend for scaled_dot_product_attention was found. This is likely due to turning off both the math kernel and the fused kernels. []',
    'SDPBackend.OVERRIDEABLE heads ERR RuntimeError No viable backend for scaled_dot_product_attention was found. This is likely due to turning off both the math kernel and the fused kernels. []',
    'SDPBackend.OVERRIDEABLE batch ERR RuntimeError No viable backend for scaled_dot_product_attention was found. This is likely due to turning off both the math kernel and the fused kernels. []',
    'SDPBackend.OVERRIDEABLE head dim ERR RuntimeError No viable backend for scaled_dot_product_attention was found. This is likely due to turning off both the math kernel and the fused kernels. []',
    'SDPBackend.OVERRIDEABLE v dim ERR RuntimeError No viable backend for scaled_dot_product_attention was found. This is likely due to turning off both the math kernel and the fused kernels. []',
    'SDPBackend.OVERRIDEABLE zero seq ok (1, 2, 0, 8) []',
    'SDPBackend.OVERRIDEABLE stride ERR RuntimeError No viable backend for scaled_dot_product_attention was found. This is likely due to turning off both the math kernel and the fused kernels. []',
    'SDPBackend.OVERRIDEABLE int ERR RuntimeError No viable backend for scaled_dot_product_attention was found. This is likely due to turning off both the math kernel and the fused kernels. []',
    'SDPBackend.OVERRIDEABLE eligible ERR RuntimeError No viable backend for scaled_dot_product_attention was found. This is likely due to turning off both the math kernel and the fused kernels. []',
    'SDPBackend.OVERRIDEABLE mask grad ERR RuntimeError No viable backend for scaled_dot_product_attention was found. This is likely due to turning off both the math kernel and the fused kernels. []',
    'SDPBackend.OVERRIDEABLE gqa ERR RuntimeError No viable backend for scaled_dot_product_attention was found. This is likely due to turning off both the math kernel and the fused kernels. []',
    '[<SDPBackend.CUDNN_ATTENTION: 3>, <SDPBackend.MATH: 0>] 3d ok (2, 4, 8) []',
    '[<SDPBackend.CUDNN_ATTENTION: 3>, <SDPBackend.MATH: 0>] dropout ok (1, 2, 4, 8) []',
    '[<SDPBackend.CUDNN_ATTENTION: 3>, <SDPBackend.MATH: 0>] mask3d ok (1, 2, 4, 8) []',
    '[<SDPBackend.CUDNN_ATTENTION: 3>, <SDPBackend.MATH: 0>] heads ok (1, 2, 4, 8) []',
    '[<SDPBackend.CUDNN_ATTENTION: 3>, <SDPBackend.MATH: 0>] batch ok (2, 2, 4, 8) []',
    '[<SDPBackend.CUDNN_ATTENTION: 3>, <SDPBackend.MATH: 0>] head dim ERR RuntimeError Expected size for first two dimensions of batch2 tensor to be: [2, 8] but got: [2, 6]. []',
    '[<SDPBackend.CUDNN_ATTENTION: 3>, <SDPBackend.MATH: 0>] v dim ok (1, 2, 4, 6) []',
    '[<SDPBackend.CUDNN_ATTENTION: 3>, <SDPBackend.MATH: 0>] zero seq ok (1, 2, 0, 8) []',
    '[<SDPBackend.CUDNN_ATTENTION: 3>, <SDPBackend.MATH: 0>] stride ok (1, 2, 4, 8) []',
    '[<SDPBackend.CUDNN_ATTENTION: 3>, <SDPBackend.MATH: 0>] int ERR RuntimeError expected scalar type Float but found Long []',
    '[<SDPBackend.CUDNN_ATTENTION: 3>, <SDPBackend.MATH: 0>] eligible ok (1, 2, 4, 8) []',
    '[<SDPBackend.CUDNN_ATTENTION: 3>, <SDPBackend.MATH: 0>] mask grad ok (1, 2, 4, 8) []',
    '[<SDPBackend.CUDNN_ATTENTION: 3>, <SDPBackend.MATH: 0>] gqa ok (1, 4, 4, 8) []',
    '[<SDPBackend.FLASH_ATTENTION: 1>, <SDPBackend.MATH: 0>] 3d ok (2, 4, 8) []',
    '[<SDPBackend.FLASH_ATTENTION: 1>, <SDPBackend.MATH: 0>] dropout ok (1, 2, 4, 8) []',
    '[<SDPBackend.FLASH_ATTENTION: 1>, <SDPBackend.MATH: 0>] mask3d ok (1, 2, 4, 8) []',
    '[<SDPBackend.FLASH_ATTENTION: 1>, <SDPBackend.MATH: 0>] heads ok (1, 2, 4, 8) []',
    '[<SDPBackend.FLASH_ATTENTION: 1>, <SDPBackend.MATH: 0>] batch ok (2, 2, 4, 8) []',
    '[<SDPBackend.FLASH_ATTENTION: 1>, <SDPBackend.MATH: 0>] head dim ERR RuntimeError Expected size for first two dimensions of batch2 tensor to be: [2, 8] but got: [2, 6]. []',
    '[<SDPBackend.FLASH_ATTENTION: 1>, <SDPBackend.MATH: 0>] v dim ok (1, 2, 4, 6) []',
    '[<SDPBackend.FLASH_ATTENTION: 1>, <SDPBackend.MATH: 0>] zero seq ok (1, 2, 0, 8) []',
    '[<SDPBackend.FLASH_ATTENTION: 1>, <SDPBackend.MATH: 0>] stride ok (1, 2, 4, 8) []',
    '[<SDPBackend.FLASH_ATTENTION: 1>, <SDPBackend.MATH: 0>] int ERR RuntimeError expected scalar type Float but found Long []',
    '[<SDPBackend.FLASH_ATTENTION: 1>, <SDPBackend.MATH: 0>] eligible ok (1, 2, 4, 8) []',
    '[<SDPBackend.FLASH_ATTENTION: 1>, <SDPBackend.MATH: 0>] mask grad ok (1, 2, 4, 8) []',
    '[<SDPBackend.FLASH_ATTENTION: 1>, <SDPBackend.MATH: 0>] gqa ok (1, 4, 4, 8) []',
    'True True True',
    'True False False',
    'E Backend must be an instance of SDPBackend or a list of SDPBackend instances, got str',
    'SDPBackend.MATH <SDPBackend.FLASH_ATTENTION: 1> 3 False',
    'noncontig default is math: True',
    'default is flash: True',
]


def test_switches_act_as_on_pytorchs_cpu():
    check_transcript(_transcript(funcgrad), EXPECTED)


@pytest.mark.torch
def test_recorded_transcript_is_pytorchs():
    check_transcript(torch_transcript(_transcript), EXPECTED)
