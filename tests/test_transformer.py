"""nn.Transformer (the full encoder-decoder) against torch.nn.Transformer: state_dict keys and
shapes, forward with the state_dict copied across (masks, batch_first, norm_first), gradients."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import funcgrad

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.torch

KW = dict(d_model=8, nhead=2, num_encoder_layers=2, num_decoder_layers=1, dim_feedforward=12, dropout=0.0)


def _pair(**extra):
    torch.manual_seed(0)
    with warnings.catch_warnings():
        # PyTorch's nested-tensor fast-path notice (funcgrad has no nested tensors; not emitted)
        warnings.filterwarnings("ignore", "enable_nested_tensor is True")
        t = torch.nn.Transformer(**KW, **extra)
    f = funcgrad.nn.Transformer(**KW, **extra)
    f.load_state_dict({k: funcgrad.tensor(v.detach().numpy()) for k, v in t.state_dict().items()})
    return f, t


def test_state_dict_keys_and_shapes_match_torch():
    f, t = _pair()
    assert [(k, tuple(v.shape)) for k, v in f.state_dict().items()] == \
        [(k, tuple(v.shape)) for k, v in t.state_dict().items()]


@pytest.mark.parametrize("extra", [{}, {"batch_first": True, "norm_first": True}], ids=["default", "bf_nf"])
def test_forward_and_grads_match_torch(extra):
    f, t = _pair(**extra)
    rng = np.random.default_rng(0)
    src, tgt = rng.normal(size=(5, 3, 8)), rng.normal(size=(4, 3, 8))
    if extra.get("batch_first"):
        src, tgt = src.transpose(1, 0, 2).copy(), tgt.transpose(1, 0, 2).copy()
    pad = np.zeros((3, 5), bool)
    pad[1, 3:] = True
    outs = []
    for lib, m in ((funcgrad, f), (torch, t)):
        s = lib.tensor(src, dtype=lib.float32, requires_grad=True)
        y = m(s, lib.tensor(tgt, dtype=lib.float32), tgt_mask=m.generate_square_subsequent_mask(4),
              src_key_padding_mask=lib.tensor(pad), memory_key_padding_mask=lib.tensor(pad))
        (y ** 2).sum().backward()
        outs.append([y.detach().numpy(), s.grad.numpy(),
                     m.encoder.layers[0].self_attn.in_proj_weight.grad.numpy()])
    for a, b in zip(*outs):
        np.testing.assert_allclose(a, b, rtol=2e-4, atol=2e-5)


def test_mask_and_errors_match_torch():
    np.testing.assert_array_equal(funcgrad.nn.Transformer.generate_square_subsequent_mask(3).numpy(),
                                  torch.nn.Transformer.generate_square_subsequent_mask(3).numpy())
    f, t = _pair()
    for src, tgt in [((5, 3, 8), (4, 2, 8)), ((5, 3, 8), (4, 3, 6))]:
        errs = []
        for lib, m in ((funcgrad, f), (torch, t)):
            with pytest.raises(RuntimeError) as e:
                m(lib.zeros(*src), lib.zeros(*tgt))
            errs.append(str(e.value))
        assert errs[0] == errs[1]
