"""Layers: BatchNorm running statistics vs a NumPy reference, default initialisation and
``nn.init`` statistics, layer shapes/graphs, Dropout/Embedding modules, a small CNN trained a
step against ``jax.grad`` of the same computation."""

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import funcgrad as torch
import funcgrad.nn.functional as F
from funcgrad import nn

RNG = np.random.default_rng(0)


@pytest.mark.parametrize("momentum", [0.1, None])
def test_batchnorm_running_stats_vs_numpy(momentum):
    bn = nn.BatchNorm2d(3, momentum=momentum)
    rm_obj, rm_cell = bn.running_mean, bn.running_mean._cell
    rm, rv = np.zeros(3), np.ones(3)
    for step in range(1, 4):
        x = RNG.standard_normal((4, 3, 2, 2)) * 2 + 1
        y = bn(torch.tensor(x, dtype=torch.float32))
        m = x.mean((0, 2, 3))
        v = x.var((0, 2, 3))
        n = x.size // 3
        f = 1.0 / step if momentum is None else momentum
        rm = (1 - f) * rm + f * m
        rv = (1 - f) * rv + f * v * n / (n - 1)
        np.testing.assert_allclose(y.detach().numpy(), (x - m[None, :, None, None]) /
                                   np.sqrt(v[None, :, None, None] + 1e-5), rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(bn.running_mean.numpy(), rm, rtol=1e-5)
    np.testing.assert_allclose(bn.running_var.numpy(), rv, rtol=1e-5)
    assert bn.num_batches_tracked.item() == 3
    # updated in place: same objects, same storage cells (the jit bridge tracks them)
    assert bn.running_mean is rm_obj and bn.running_mean._cell is rm_cell
    bn.eval()
    x = RNG.standard_normal((2, 3, 2, 2))
    y = bn(torch.tensor(x, dtype=torch.float32))
    np.testing.assert_allclose(y.numpy() if not y.requires_grad else y.detach().numpy(),
                               (x - rm[None, :, None, None]) / np.sqrt(rv[None, :, None, None] + 1e-5),
                               rtol=1e-4, atol=1e-5)
    assert bn.num_batches_tracked.item() == 3


def test_batchnorm_variants():
    bn = nn.BatchNorm1d(4, affine=False, track_running_stats=False)
    assert bn.running_mean is None and list(bn.state_dict()) == []
    y = bn(torch.randn(5, 4))
    np.testing.assert_allclose(y.numpy().mean(0), 0, atol=1e-5)
    bn.eval()
    bn(torch.randn(5, 4))  # still batch stats: nothing to track
    with pytest.raises(ValueError, match="expected 4D input"):
        nn.BatchNorm2d(4)(torch.randn(3, 4))
    y = nn.BatchNorm1d(2)(torch.randn(3, 2, requires_grad=True))
    assert y.grad_fn.name() == "NativeBatchNormBackward0"


def test_norm_layers():
    x = torch.randn(2, 4, 3, 3)
    ln = nn.LayerNorm([3, 3])
    y = ln(x)
    np.testing.assert_allclose(y.detach().numpy().reshape(2, 4, 9).mean(-1), 0, atol=1e-5)
    assert y.grad_fn.name() == "NativeLayerNormBackward0"
    gn = nn.GroupNorm(2, 4)
    g = gn(x).detach().numpy().reshape(2, 2, -1)
    np.testing.assert_allclose(g.std(-1), 1, atol=1e-3)
    inn = nn.InstanceNorm2d(4)
    i = inn(x).numpy().reshape(2, 4, -1)
    np.testing.assert_allclose(i.mean(-1), 0, atol=1e-5)
    assert inn(x[0]).shape == torch.Size([4, 3, 3])  # unbatched


def test_default_init_bounds_and_statistics():
    lin = nn.Linear(400, 300)
    bound = 1 / math.sqrt(400)  # kaiming_uniform_(a=sqrt(5)) gives U(-1/sqrt(fan_in), 1/sqrt(fan_in))
    w = lin.weight.detach().numpy()
    assert w.dtype == np.float32 and np.abs(w).max() <= bound and np.abs(w).max() > 0.95 * bound
    assert abs(w.std() - bound / math.sqrt(3)) < 0.01 * bound
    assert np.abs(lin.bias.detach().numpy()).max() <= bound
    conv = nn.Conv2d(8, 4, 3)
    cb = 1 / math.sqrt(8 * 9)
    assert np.abs(conv.weight.detach().numpy()).max() <= cb
    emb = nn.Embedding(300, 100).weight.detach().numpy()
    assert abs(emb.mean()) < 0.02 and abs(emb.std() - 1) < 0.02
    assert nn.Linear(2, 2).weight.tolist() != nn.Linear(2, 2).weight.tolist()  # fresh keys
    torch.manual_seed(3)
    a = nn.Linear(3, 3).weight.tolist()
    torch.manual_seed(3)
    assert nn.Linear(3, 3).weight.tolist() == a


def test_init_functions():
    init = nn.init
    w = torch.empty(200, 300)
    obj = w
    assert init.xavier_uniform_(w) is obj
    a = math.sqrt(6 / 500)
    assert np.abs(w.numpy()).max() <= a and abs(w.numpy().std() - a / math.sqrt(3)) < 0.02 * a
    init.kaiming_normal_(w, mode="fan_out", nonlinearity="relu")
    assert abs(w.numpy().std() - math.sqrt(2 / 200)) < 0.02 * math.sqrt(2 / 200)
    init.trunc_normal_(w, std=1.0, a=-0.5, b=0.5)
    assert np.abs(w.numpy()).max() <= 0.5
    init.orthogonal_(w)
    np.testing.assert_allclose(w.numpy() @ w.numpy().T, np.eye(200), atol=1e-4)
    init.constant_(w, 0.3)
    assert np.all(w.numpy() == np.float32(0.3))
    e = torch.empty(3, 4)
    init.eye_(e)
    assert e.tolist()[0] == [1.0, 0.0, 0.0, 0.0]
    d = torch.empty(2, 2, 3)
    init.dirac_(d)
    assert d.numpy()[0, 0, 1] == 1 and d.numpy().sum() == 2
    assert init.calculate_gain("leaky_relu", 0.2) == pytest.approx(math.sqrt(2 / 1.04))
    assert init._calculate_fan_in_and_fan_out(torch.empty(4, 3, 5)) == (15, 20)
    with pytest.raises(ValueError, match="Unsupported nonlinearity foo"):
        init.calculate_gain("foo")
    g = torch.Generator().manual_seed(1)
    x1 = init.normal_(torch.empty(4), generator=g).tolist()
    g.manual_seed(1)
    assert init.normal_(torch.empty(4), generator=g).tolist() == x1
    p = nn.Parameter(torch.zeros(3))
    init.uniform_(p)  # a leaf that requires grad: written under no_grad, stays a leaf
    assert p.is_leaf and p.grad_fn is None and p.abs().sum().item() > 0


def test_layer_shapes_and_graphs():
    x = torch.randn(2, 3, 8, 8)
    assert nn.MaxPool2d(2)(x).shape == torch.Size([2, 3, 4, 4])
    assert nn.AvgPool2d(3, stride=2, padding=1)(x).shape == torch.Size([2, 3, 4, 4])
    assert nn.AdaptiveAvgPool2d((1, 1))(x).shape == torch.Size([2, 3, 1, 1])
    assert nn.AdaptiveMaxPool2d(3)(x).shape == torch.Size([2, 3, 3, 3])
    assert nn.Flatten()(x).shape == torch.Size([2, 192])
    assert nn.Unflatten(1, (3, 64))(nn.Flatten()(x)).shape == torch.Size([2, 3, 64])
    assert nn.Bilinear(3, 4, 5)(torch.randn(2, 3), torch.randn(2, 4)).shape == torch.Size([2, 5])
    assert nn.Upsample(scale_factor=2, mode="nearest")(x).shape == torch.Size([2, 3, 16, 16])
    assert nn.Conv1d(3, 2, 3)(torch.randn(4, 3, 10)).shape == torch.Size([4, 2, 8])
    assert nn.ConvTranspose1d(3, 2, 3, stride=2)(torch.randn(4, 3, 5)).shape == torch.Size([4, 2, 11])
    xr = torch.randn(4, 6, requires_grad=True)
    names = {type(m).__name__: m(xr).grad_fn.name() for m in
             [nn.ReLU(), nn.LeakyReLU(0.1), nn.ELU(), nn.GELU(), nn.SiLU(), nn.Softplus(), nn.Tanh(), nn.Sigmoid(),
              nn.Softmax(dim=1), nn.LogSoftmax(dim=1), nn.Hardtanh(), nn.ReLU6(), nn.PReLU(), nn.GLU()]}
    assert names == {"ReLU": "ReluBackward0", "LeakyReLU": "LeakyReluBackward0", "ELU": "EluBackward0",
                     "GELU": "GeluBackward0", "SiLU": "SiluBackward0", "Softplus": "SoftplusBackward0",
                     "Tanh": "TanhBackward0", "Sigmoid": "SigmoidBackward0", "Softmax": "SoftmaxBackward0",
                     "LogSoftmax": "LogSoftmaxBackward0", "Hardtanh": "HardtanhBackward0",
                     "ReLU6": "HardtanhBackward0", "PReLU": "PreluKernelBackward0", "GLU": "GluBackward0"}


def test_inplace_activation():
    x = torch.tensor([-1.0, 2.0]) * 1
    y = nn.ReLU(inplace=True)(x)
    assert y is x and x.tolist() == [0.0, 2.0]
    leaf = torch.tensor([-1.0], requires_grad=True)
    with pytest.raises(RuntimeError, match="a leaf Variable that requires grad is being used in an in-place"):
        F.relu(leaf, inplace=True)


def test_dropout_and_embedding_modules():
    d = nn.Dropout(0.5)
    x = torch.ones(100)
    assert not np.array_equal(d(x).numpy(), x.numpy())
    d.eval()
    assert d(x) is x
    with pytest.raises(ValueError, match="dropout probability has to be between 0 and 1, but got -0.1"):
        nn.Dropout(-0.1)
    emb = nn.Embedding(5, 2, padding_idx=1)
    assert emb.weight[1].tolist() == [0.0, 0.0]
    out = emb(torch.tensor([[1, 2]]))
    assert out.shape == torch.Size([1, 2, 2]) and out.grad_fn.name() == "EmbeddingBackward0"
    pre = nn.Embedding.from_pretrained(torch.eye(3))
    assert not pre.weight.requires_grad and pre(torch.tensor([2])).tolist() == [[0.0, 0.0, 1.0]]


def test_cnn_step_matches_jax_grad():
    """A conv → BN(eval) → ReLU → pool → linear model: loss.backward() equals jax.grad of the same
    computation written in jax.numpy."""
    torch.manual_seed(0)
    conv, bn, fc = nn.Conv2d(2, 3, 3, padding=1), nn.BatchNorm2d(3), nn.Linear(12, 2)
    bn.eval()
    with torch.no_grad():
        bn.running_mean.copy_(torch.tensor([0.1, -0.2, 0.3]))
        bn.running_var.copy_(torch.tensor([1.5, 0.5, 2.0]))
    model = nn.Sequential(conv, bn, nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(), fc)
    x = torch.randn(4, 2, 4, 4)
    loss = model(x).pow(2).mean()
    loss.backward()

    def ref(params, xv):
        w, b, g, beta, fw, fb = params
        y = jax.lax.conv_general_dilated(xv, w, (1, 1), [(1, 1), (1, 1)],
                                         dimension_numbers=("NCHW", "OIHW", "NCHW")) + b[None, :, None, None]
        rm, rv = bn.running_mean._value, bn.running_var._value
        y = (y - rm[None, :, None, None]) / jnp.sqrt(rv[None, :, None, None] + 1e-5)
        y = jnp.maximum(y * g[None, :, None, None] + beta[None, :, None, None], 0)
        y = y.reshape(4, 3, 2, 2, 2, 2).max((3, 5)).reshape(4, -1)
        return jnp.mean((y @ fw.T + fb) ** 2)
    params = [p.detach()._value for p in (conv.weight, conv.bias, bn.weight, bn.bias, fc.weight, fc.bias)]
    want = jax.grad(ref)(params, x._value)
    np.testing.assert_allclose(loss.item(), float(ref(params, x._value)), rtol=1e-5)
    for p, w in zip((conv.weight, conv.bias, bn.weight, bn.bias, fc.weight, fc.bias), want):
        np.testing.assert_allclose(p.grad.numpy(), np.asarray(w), rtol=2e-4, atol=1e-6)
