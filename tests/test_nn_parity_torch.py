"""Every common ``nn`` layer against PyTorch with the same weights: PyTorch's state_dict is copied
into funcgrad's layer, both run the same input (train and, where the layer differs, eval mode),
and the outputs, the input's gradient, every parameter's gradient and the state after the call
(BatchNorm's running statistics) must agree.
"""

import numpy as np
import pytest

import funcgrad
import funcgrad.nn  # noqa: F401

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.torch

# name -> (constructor written for either library, input shape (or "int" for indices), modes)
BOTH = ("train", "eval")
LAYERS = {
    "Linear": (lambda nn: nn.Linear(4, 3), (5, 4), ("train",)),
    "Linear no bias 3-D": (lambda nn: nn.Linear(4, 3, bias=False), (2, 5, 4), ("train",)),
    "Conv1d": (lambda nn: nn.Conv1d(3, 4, 3, padding=1), (2, 3, 8), ("train",)),
    "Conv2d": (lambda nn: nn.Conv2d(3, 4, 3, stride=2, padding=1), (2, 3, 7, 7), ("train",)),
    "Conv2d groups dilation": (lambda nn: nn.Conv2d(4, 4, 3, groups=2, dilation=2), (1, 4, 8, 8), ("train",)),
    "Conv3d": (lambda nn: nn.Conv3d(2, 3, 2), (1, 2, 4, 4, 4), ("train",)),
    "ConvTranspose1d": (lambda nn: nn.ConvTranspose1d(3, 2, 3, stride=2), (2, 3, 5), ("train",)),
    "ConvTranspose2d": (lambda nn: nn.ConvTranspose2d(3, 2, 3, stride=2, padding=1, output_padding=1),
                        (1, 3, 4, 4), ("train",)),
    "MaxPool2d": (lambda nn: nn.MaxPool2d(2), (2, 3, 6, 6), ("train",)),
    "AvgPool2d": (lambda nn: nn.AvgPool2d(3, stride=2, padding=1), (2, 3, 6, 6), ("train",)),
    "AdaptiveAvgPool2d": (lambda nn: nn.AdaptiveAvgPool2d((2, 3)), (2, 3, 7, 7), ("train",)),
    "AdaptiveMaxPool2d": (lambda nn: nn.AdaptiveMaxPool2d(2), (2, 3, 6, 6), ("train",)),
    "BatchNorm1d": (lambda nn: nn.BatchNorm1d(4), (6, 4), BOTH),
    "BatchNorm2d": (lambda nn: nn.BatchNorm2d(3, momentum=0.2), (4, 3, 5, 5), BOTH),
    "LayerNorm": (lambda nn: nn.LayerNorm(4), (3, 5, 4), ("train",)),
    "GroupNorm": (lambda nn: nn.GroupNorm(2, 4), (3, 4, 5), ("train",)),
    "InstanceNorm1d": (lambda nn: nn.InstanceNorm1d(4, affine=True, track_running_stats=True),
                       (3, 4, 6), BOTH),
    "Embedding": (lambda nn: nn.Embedding(10, 3), "int", ("train",)),
    "LSTM": (lambda nn: nn.LSTM(4, 5, batch_first=True), (2, 3, 4), ("train",)),
    "GRU": (lambda nn: nn.GRU(4, 5, num_layers=2), (3, 2, 4), ("train",)),
    "RNN": (lambda nn: nn.RNN(4, 5, nonlinearity="relu"), (3, 2, 4), ("train",)),
    "MultiheadAttention": (lambda nn: nn.MultiheadAttention(8, 2), (3, 2, 8), ("train",)),
    "TransformerEncoderLayer": (lambda nn: nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0),
                                (3, 2, 8), BOTH),
    "Dropout": (lambda nn: nn.Dropout(0.5), (4, 5), ("eval",)),
    "PReLU": (lambda nn: nn.PReLU(3), (2, 3, 4), ("train",)),
    "Sequential MLP": (lambda nn: nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 2)), (5, 4),
                       ("train",)),
    "PixelShuffle": (lambda nn: nn.PixelShuffle(2), (1, 8, 3, 3), ("train",)),
    "Upsample bilinear": (lambda nn: nn.Upsample(scale_factor=2, mode="bilinear"), (1, 2, 3, 3), ("train",)),
    "ReflectionPad1d": (lambda nn: nn.ReflectionPad1d(2), (2, 3, 5), ("train",)),
    "Flatten": (lambda nn: nn.Flatten(), (2, 3, 4), ("train",)),
}
for _act in ["ReLU", "GELU", "SiLU", "ELU", "Tanh", "Sigmoid", "Softplus", "Hardswish", "Mish",
             "LeakyReLU", "Hardtanh", "LogSigmoid", "Softsign", "SELU", "CELU"]:
    LAYERS[_act] = (lambda nn, a=_act: getattr(nn, a)(), (3, 4), ("train",))
LAYERS["Softmax"] = (lambda nn: nn.Softmax(dim=-1), (3, 4), ("train",))
LAYERS["LogSoftmax"] = (lambda nn: nn.LogSoftmax(dim=1), (3, 4), ("train",))

CASES = [(n, m) for n, (_, _, modes) in LAYERS.items() for m in modes]


def _run(lib, name, mode, state, x_np, cot_np):
    make, shape, _ = LAYERS[name]
    layer = make(lib.nn)
    layer.load_state_dict({k: lib.tensor(v) for k, v in state.items()})
    layer.train(mode == "train")
    if shape == "int":
        x = lib.tensor(x_np)
        out = layer(x)
    else:
        x = lib.tensor(x_np, requires_grad=True)
        out = layer(x, x, x) if name == "MultiheadAttention" else layer(x)
    if isinstance(out, tuple):
        out = out[0]
    (out * lib.tensor(cot_np)).sum().backward()
    grads = {k: None if p.grad is None else p.grad.detach().numpy() for k, p in layer.named_parameters()}
    return {"out": out.detach().numpy(), "x.grad": None if shape == "int" else x.grad.numpy(),
            "grads": grads, "state": {k: v.detach().numpy() for k, v in layer.state_dict().items()}}


@pytest.mark.parametrize("name,mode", CASES, ids=[f"{n}-{m}" for n, m in CASES])
def test_layer_matches_torch(name, mode):
    make, shape, _ = LAYERS[name]
    torch.manual_seed(0)
    ref = make(torch.nn)
    state = {k: v.detach().numpy().copy() for k, v in ref.state_dict().items()}
    rng = np.random.default_rng(0)
    x_np = rng.integers(0, 10, (4, 3)) if shape == "int" else rng.standard_normal(shape).astype(np.float32)
    with torch.no_grad():
        probe = ref(*(3 * [torch.tensor(x_np)] if name == "MultiheadAttention" else [torch.tensor(x_np)]))
    probe = probe[0] if isinstance(probe, tuple) else probe
    cot_np = rng.standard_normal(tuple(probe.shape)).astype(np.float32)
    want = _run(torch, name, mode, state, x_np, cot_np)
    got = _run(funcgrad, name, mode, state, x_np, cot_np)
    tol = dict(rtol=2e-5, atol=2e-5)
    np.testing.assert_allclose(got["out"], want["out"], **tol)
    if want["x.grad"] is not None:
        np.testing.assert_allclose(got["x.grad"], want["x.grad"], **tol)
    assert got["grads"].keys() == want["grads"].keys()
    for k, g in want["grads"].items():
        assert (got["grads"][k] is None) == (g is None), k
        if g is not None:
            np.testing.assert_allclose(got["grads"][k], g, err_msg=k, **tol)
    assert got["state"].keys() == want["state"].keys()
    for k, v in want["state"].items():
        np.testing.assert_allclose(got["state"][k], v, err_msg=k, **tol)
