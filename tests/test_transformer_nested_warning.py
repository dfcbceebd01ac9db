"""``nn.TransformerEncoder`` (and ``nn.Transformer``, which builds one) warns as PyTorch's does
when its encoder layer would not take PyTorch's nested-tensor fast path, with PyTorch's first
reason in PyTorch's order, and keeps ``enable_nested_tensor``/``use_nested_tensor``/``mask_check``
and the layer's ``activation_relu_or_gelu``. Before, it warned nothing: pytorch/examples'
word_language_model (``--model Transformer``) printed PyTorch's UserWarning, funcgrad did not.
``EXPECTED`` recorded from PyTorch 2.13 (re-run on torch where it is installed)."""

import pytest

import funcgrad

from ._rows import check_transcript, shower, torch_transcript


def _transcript(torch):
    out = []
    show = shower(out, warns=True)
    nn = torch.nn
    cases = [dict(), dict(batch_first=True), dict(batch_first=True, nhead=1),
             dict(batch_first=True, norm_first=True), dict(batch_first=True, activation="gelu"),
             dict(batch_first=True, activation=torch.tanh), dict(batch_first=True, bias=False),
             dict(batch_first=True, activation=nn.GELU()), dict(batch_first=True, layer_norm_eps=1e-6)]
    for kw in cases:
        for nested in (True, False):
            def build(kw=kw, nested=nested):
                layer = nn.TransformerEncoderLayer(**{"d_model": 8, "nhead": 2, **kw})
                enc = nn.TransformerEncoder(layer, 2, enable_nested_tensor=nested)
                return (enc.use_nested_tensor, enc.enable_nested_tensor, enc.mask_check,
                        enc.layers[0].activation_relu_or_gelu)
            show(build)
    show(lambda: nn.TransformerEncoder(nn.Linear(2, 2), 1, mask_check=False).mask_check)
    show(lambda: nn.Transformer(d_model=8, nhead=2, num_encoder_layers=1, num_decoder_layers=1,
                                dim_feedforward=16).encoder.use_nested_tensor)
    return out


EXPECTED = [
    "(False, True, True, 1) ['UserWarning: enable_nested_tensor is True, but self.use_nested_tensor is False because encoder_layer.self_attn.batch_first was not True(use batch_first for better inference performance)']",
    '(False, False, True, 1)',
    '(True, True, True, 1)',
    '(False, False, True, 1)',
    "(False, True, True, 1) ['UserWarning: enable_nested_tensor is True, but self.use_nested_tensor is False because encoder_layer.self_attn.num_heads is odd']",
    '(False, False, True, 1)',
    "(False, True, True, 1) ['UserWarning: enable_nested_tensor is True, but self.use_nested_tensor is False because encoder_layer.norm_first was True']",
    '(False, False, True, 1)',
    '(True, True, True, 2)',
    '(False, False, True, 2)',
    "(False, True, True, 0) ['UserWarning: enable_nested_tensor is True, but self.use_nested_tensor is False because encoder_layer.activation_relu_or_gelu was not True']",
    '(False, False, True, 0)',
    "(False, True, True, 1) ['UserWarning: enable_nested_tensor is True, but self.use_nested_tensor is False because encoder_layer.self_attn was passed bias=False']",
    '(False, False, True, 1)',
    '(True, True, True, 2)',
    '(False, False, True, 2)',
    '(True, True, True, 1)',
    '(False, False, True, 1)',
    "False ['UserWarning: enable_nested_tensor is True, but self.use_nested_tensor is False because encoder_layer was not TransformerEncoderLayer']",
    "False ['UserWarning: enable_nested_tensor is True, but self.use_nested_tensor is False because encoder_layer.self_attn.batch_first was not True(use batch_first for better inference performance)']",
]


def test_encoder_nested_tensor_warning_is_pytorchs():
    check_transcript(_transcript(funcgrad), EXPECTED)


@pytest.mark.torch
def test_recorded_transcript_is_pytorchs():
    check_transcript(torch_transcript(_transcript), EXPECTED)
