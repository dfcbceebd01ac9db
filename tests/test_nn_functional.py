"""nn.functional: graph shapes users see, NumPy/JAX references for the piecewise cases the op
specs do not cover (ceil_mode, padding, count_include_pad…), error messages, dropout, stability,
nn.utils; plus an optional parity run against PyTorch where it is installed."""

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import funcgrad as torch
import funcgrad.nn.functional as F
from funcgrad import nn

RNG = np.random.default_rng(0)


def t(*shape, rg=False):
    return torch.tensor(RNG.standard_normal(shape), requires_grad=rg)


def test_linear_graph_names():
    w = torch.randn(3, 4, requires_grad=True)
    b = torch.randn(3, requires_grad=True)
    y = F.linear(torch.randn(2, 4), w, b)
    assert y.grad_fn.name() == "AddmmBackward0"
    names = [n.name() if n is not None else None for n, _ in y.grad_fn.next_functions]
    assert names == ["torch::autograd::AccumulateGrad", None, "TBackward0"]
    assert F.linear(torch.randn(2, 4), w).grad_fn.name() == "MmBackward0"
    assert F.linear(torch.randn(2, 5, 4), w, b).grad_fn.name() == "ViewBackward0"
    with pytest.raises(RuntimeError, match=r"mat1 and mat2 shapes cannot be multiplied \(2x5 and 4x3\)"):
        F.linear(torch.randn(2, 5), w, b)


def _np_pool(x, k, s, p, ceil, op, include_pad=True):
    n, c, h, w = x.shape

    def out(size):
        o = (size + 2 * p - k + ((s - 1) if ceil else 0)) // s + 1
        if ceil and (o - 1) * s >= size + p:
            o -= 1
        return o
    oh, ow = out(h), out(w)
    res = np.zeros((n, c, oh, ow))
    for i in range(oh):
        for j in range(ow):
            h0, w0 = i * s - p, j * s - p
            h1, w1 = min(h0 + k, h + p), min(w0 + k, w + p)
            cnt = (h1 - h0) * (w1 - w0)
            hs, ws = max(h0, 0), max(w0, 0)
            he, we = min(h1, h), min(w1, w)
            win = x[:, :, hs:he, ws:we]
            if op == "max":
                res[:, :, i, j] = win.max((2, 3))
            else:
                res[:, :, i, j] = win.sum((2, 3)) / (cnt if include_pad else (he - hs) * (we - ws))
    return res


@pytest.mark.parametrize("k,s,p,ceil", [(2, 2, 0, False), (3, 2, 1, True)])
def test_pools_vs_numpy(k, s, p, ceil):
    x = RNG.standard_normal((2, 2, 7, 6))
    xt = torch.tensor(x)
    np.testing.assert_allclose(F.max_pool2d(xt, k, s, p, ceil_mode=ceil).numpy(), _np_pool(x, k, s, p, ceil, "max"))
    np.testing.assert_allclose(F.avg_pool2d(xt, k, s, p, ceil_mode=ceil).numpy(), _np_pool(x, k, s, p, ceil, "avg"))
    np.testing.assert_allclose(F.avg_pool2d(xt, k, s, p, ceil_mode=ceil, count_include_pad=False).numpy(),
                               _np_pool(x, k, s, p, ceil, "avg", include_pad=False))


def test_max_pool_indices_and_1d():
    x = torch.arange(16.0).view(1, 1, 4, 4)
    out, idx = F.max_pool2d(x, 2, return_indices=True)
    assert out.tolist() == [[[[5.0, 7.0], [13.0, 15.0]]]] and idx.tolist() == [[[[5, 7], [13, 15]]]]
    y = F.max_pool1d(torch.tensor([[[1.0, 3.0, 2.0, 5.0]]], requires_grad=True), 2)
    assert y.grad_fn.name() == "SqueezeBackward1" and y.tolist() == [[[3.0, 5.0]]]
    with pytest.raises(RuntimeError, match="pad should be at most half of effective kernel size"):
        F.max_pool2d(x, 2, padding=2)


def test_conv_padding_modes_and_errors():
    x = t(1, 2, 5, 5).float()
    conv = nn.Conv2d(2, 3, 3, padding=1, padding_mode="reflect")
    ref = F.conv2d(F.pad(x, (1, 1, 1, 1), mode="reflect"), conv.weight, conv.bias)
    np.testing.assert_allclose(conv(x).detach().numpy(), ref.detach().numpy(), rtol=1e-6)
    same = nn.Conv2d(2, 3, 4, padding="same")
    assert same(x).shape == torch.Size([1, 3, 5, 5])
    assert F.conv2d(x[0], conv.weight).shape == torch.Size([3, 3, 3])  # unbatched
    with pytest.raises(RuntimeError, match=r"Given groups=1, weight of size \[3, 4, 3, 3\], expected "
                                           r"input\[1, 2, 5, 5\] to have 4 channels, but got 2 channels instead"):
        F.conv2d(x, torch.randn(3, 4, 3, 3))
    with pytest.raises(RuntimeError, match="expected scalar type Double but found Float"):
        F.conv2d(x.double(), conv.weight)
    with pytest.raises(ValueError, match="padding='same' is not supported for strided convolutions"):
        nn.Conv2d(2, 3, 3, stride=2, padding="same")


def test_conv_transpose_inverts_conv_shape():
    m = nn.ConvTranspose2d(4, 2, 3, stride=2, padding=1)
    x = torch.randn(1, 4, 5, 5)
    assert m(x).shape == torch.Size([1, 2, 9, 9])
    assert m(x, output_size=[10, 10]).shape == torch.Size([1, 2, 10, 10])


def test_softmax_stable_and_warns():
    x = torch.tensor([1000.0, 0.0, -1000.0])
    assert F.softmax(x, 0).tolist() == [1.0, 0.0, 0.0]
    assert F.log_softmax(x, 0).tolist() == [0.0, -1000.0, -2000.0]
    assert F.softplus(torch.tensor([100.0, -100.0])).tolist() == [100.0, pytest.approx(0.0, abs=1e-40)]
    assert math.isfinite(F.logsigmoid(torch.tensor(-200.0)).item())
    with pytest.warns(UserWarning, match="Implicit dimension choice for softmax has been deprecated"):
        F.softmax(torch.ones(2, 3))


def test_dropout_fresh_masks_scaling_and_eval():
    x = torch.ones(2000)
    a, b = F.dropout(x, 0.25), F.dropout(x, 0.25)
    assert not np.array_equal(a.numpy(), b.numpy())
    vals = set(np.unique(a.numpy()).tolist())
    assert vals <= {0.0, float(np.float32(1 / 0.75))}
    assert abs((a.numpy() == 0).mean() - 0.25) < 0.05
    assert F.dropout(x, 0.5, training=False) is x
    assert F.dropout(x, 1.0).sum().item() == 0.0
    with pytest.raises(ValueError, match="dropout probability has to be between 0 and 1, but got 1.5"):
        F.dropout(x, 1.5)
    y = F.dropout2d(torch.ones(4, 50, 3, 3), 0.5)
    per_channel = y.numpy().reshape(4, 50, 9)
    assert np.all((per_channel == per_channel[..., :1]))  # whole channels dropped
    xg = torch.ones(10, requires_grad=True)
    out = F.dropout(xg, 0.5)
    out.sum().backward()
    np.testing.assert_array_equal(xg.grad.numpy(), out.detach().numpy())  # grad == mask / (1-p)
    assert out.grad_fn.name() == "MulBackward0"


def test_batch_norm_functional_updates_in_place():
    rm, rv = torch.zeros(2), torch.ones(2)
    rm_cell = rm._cell
    x = torch.tensor([[0.0, 1.0], [2.0, 3.0]])
    F.batch_norm(x, rm, rv, training=True, momentum=0.5)
    assert rm._cell is rm_cell and rm._ver[0] == 1
    np.testing.assert_allclose(rm.numpy(), [0.5, 1.0])
    np.testing.assert_allclose(rv.numpy(), [0.5 + 0.5 * 2.0, 0.5 + 0.5 * 2.0])  # unbiased var = 2
    with pytest.raises(ValueError, match="Expected more than 1 value per channel when training"):
        F.batch_norm(torch.ones(1, 2), rm, rv, training=True)


def test_embedding_padding_idx_and_max_norm():
    w = torch.randn(5, 3, requires_grad=True)
    idx = torch.tensor([[0, 2], [2, 4]])
    F.embedding(idx, w, padding_idx=2).sum().backward()
    g = w.grad.numpy()
    assert np.all(g[2] == 0) and np.all(g[0] == 1) and np.all(g[1] == 0)
    with pytest.raises(RuntimeError, match="Expected tensor for argument #1 'indices'"):
        F.embedding(torch.ones(2), w)
    emb = nn.Embedding(4, 3, max_norm=1.0)
    with torch.no_grad():
        emb.weight.mul_(10)
    emb(torch.tensor([1]))
    norms = np.linalg.norm(emb.weight.detach().numpy(), axis=1)
    assert norms[1] <= 1.0 + 1e-5 and norms[0] > 1.0


def test_one_hot_and_misc():
    assert F.one_hot(torch.tensor([0, 2])).tolist() == [[1, 0, 0], [0, 0, 1]]
    assert F.one_hot(torch.tensor([1]), 4).dtype == torch.int64
    with pytest.raises(RuntimeError, match="Class values must be smaller than num_classes."):
        F.one_hot(torch.tensor([3]), 2)
    np.testing.assert_allclose(F.normalize(torch.tensor([[3.0, 4.0]])).numpy(), [[0.6, 0.8]])
    assert F.interpolate(torch.tensor([[[1.0, 2.0]]]), scale_factor=2).tolist() == [[[1.0, 1.0, 2.0, 2.0]]]
    up = F.interpolate(torch.tensor([[[[0.0, 1.0]]]]), size=(1, 3), mode="bilinear", align_corners=True)
    assert up.tolist() == [[[[0.0, 0.5, 1.0]]]]
    assert F.pixel_shuffle(torch.zeros(1, 8, 2, 2), 2).shape == torch.Size([1, 2, 4, 4])
    assert F.glu(torch.tensor([1.0, 0.0])).item() == 0.5
    assert torch.softmax(torch.tensor([0.0, 0.0]), 0).tolist() == [0.5, 0.5]
    assert torch.tensor([0.0, 0.0]).log_softmax(0).grad_fn is None


# ---- nn.utils -------------------------------------------------------------------------------------
def test_clip_grad_norm_matches_reference():
    ps = [nn.Parameter(torch.zeros(3)), nn.Parameter(torch.zeros(2, 2))]
    g = [RNG.standard_normal(3), RNG.standard_normal((2, 2))]
    for p, gg in zip(ps, g):
        p.grad = torch.tensor(gg, dtype=torch.float32)
    grad_objs = [p.grad for p in ps]
    total = nn.utils.clip_grad_norm_(ps, 0.5)
    ref = math.sqrt(sum((gg ** 2).sum() for gg in g))
    assert total.item() == pytest.approx(ref, rel=1e-5)
    coef = min(0.5 / (ref + 1e-6), 1.0)
    for p, gg, obj in zip(ps, g, grad_objs):
        assert p.grad is obj  # scaled in place
        np.testing.assert_allclose(p.grad.numpy(), gg * coef, rtol=1e-5)
    tinf = nn.utils.clip_grad_norm_(ps, 10.0, norm_type="inf" if False else math.inf)
    assert tinf.item() == pytest.approx(max(np.abs(p.grad.numpy()).max() for p in ps))
    ps[0].grad = torch.tensor([float("nan"), 0.0, 0.0])
    before = ps[1].grad.numpy().copy()
    with pytest.raises(RuntimeError, match="The total norm of order 2.0 for gradients from `parameters` is "
                                           "non-finite, so it cannot be clipped."):
        nn.utils.clip_grad_norm_(ps, 1.0, error_if_nonfinite=True)
    np.testing.assert_array_equal(ps[1].grad.numpy(), before)


def test_clip_value_and_vector_conversion():
    p = nn.Parameter(torch.zeros(3))
    p.grad = torch.tensor([-2.0, 0.1, 3.0])
    nn.utils.clip_grad_value_([p], 1.0)
    assert p.grad.tolist() == pytest.approx([-1.0, 0.1, 1.0])
    m = nn.Linear(2, 2)
    v = nn.utils.parameters_to_vector(m.parameters())
    assert v.shape == torch.Size([6])
    w = m.weight
    nn.utils.vector_to_parameters(torch.arange(6.0), m.parameters())
    assert m.weight is w and m.weight.tolist() == [[0.0, 1.0], [2.0, 3.0]] and m.bias.tolist() == [4.0, 5.0]


# ---- optional parity with PyTorch ---------------------------------------------------------------
PARITY = [
    ("elu", lambda F_, x: F_.elu(x, 0.7)), ("celu", lambda F_, x: F_.celu(x)), ("selu", lambda F_, x: F_.selu(x)),
    ("gelu", lambda F_, x: F_.gelu(x, approximate="tanh")),
    ("avg_ceil", lambda F_, x: F_.avg_pool2d(x, 3, 2, 1, ceil_mode=True, count_include_pad=False)),
    ("max_dil", lambda F_, x: F_.max_pool2d(x, 2, 1, 1, dilation=2)),
    ("aap", lambda F_, x: F_.adaptive_avg_pool2d(x, (4, 3))), ("amp", lambda F_, x: F_.adaptive_max_pool2d(x, 3)),
    ("interp_b", lambda F_, x: F_.interpolate(x, scale_factor=1.5, mode="bilinear")),
    ("interp_n", lambda F_, x: F_.interpolate(x, size=(5, 9))),
    ("in", lambda F_, x: F_.instance_norm(x)), ("lrn", lambda F_, x: F_.local_response_norm(x, 3)),
]


@pytest.mark.parametrize("name,fn", PARITY, ids=[p[0] for p in PARITY])
def test_parity_with_pytorch(name, fn):
    real = pytest.importorskip("torch")
    x = RNG.standard_normal((2, 4, 7, 6))
    xt = real.tensor(x, requires_grad=True)
    xf = torch.tensor(x, requires_grad=True)
    yt, yf = fn(real.nn.functional, xt), fn(F, xf)
    np.testing.assert_allclose(yf.detach().numpy(), yt.detach().numpy(), rtol=1e-6, atol=1e-8)
    cot = RNG.standard_normal(tuple(yt.shape))
    (gt,) = real.autograd.grad(yt, xt, real.tensor(cot))
    (gf,) = torch.autograd.grad(yf, xf, torch.tensor(cot))
    np.testing.assert_allclose(gf.numpy(), gt.numpy(), rtol=1e-6, atol=1e-8)


def test_jax_reference_conv_module():
    conv = nn.Conv1d(3, 4, 3, stride=2, padding=1, dilation=2, groups=1)
    x = t(2, 3, 9)
    want = jax.lax.conv_general_dilated(jnp.asarray(x.numpy(), jnp.float32), conv.weight.detach()._value, (2,),
                                        [(1, 1)], rhs_dilation=(2,), dimension_numbers=("NCH", "OIH", "NCH"))
    want = want + conv.bias.detach()._value[None, :, None]
    np.testing.assert_allclose(conv(x.float()).detach().numpy(), np.asarray(want), rtol=1e-5, atol=1e-6)


# threshold's Python numbers as PyTorch converts them (c10's checked_convert): overflow errors
# naming the C++ type, negative ints wrapping into uint8, floats truncating, float16/bfloat16
# comparing in float32; (threshold, value) pairs, integer-range ones on the integer dtypes and
# float-range ones on the float dtypes (each distinct pair is a kernel compile)
_THRESHOLD_INT = [(300, 7), (3, 300), (-1, 7), (3, -1), (3.5, 7), (3, 7.5), (-5, -5), (-255, 1), (-256, 1),
                  (-0.5, 1), (3, -0.5), (127.9, 1), (-128.9, 1), (float("nan"), 1), (3, float("inf")),
                  (True, 3), (1, 1.5j), (2 ** 31, 7), (1, 2.0 ** 31), (2 ** 70, 1), (-2 ** 63 - 1, 1),
                  (1, 2.0 ** 63), (2.0 ** 63, 1)]
_THRESHOLD_FLOAT = [(3, 300), (float("nan"), 1), (3, float("inf")), (1, 1.5j), (2 ** 70, 1), (1, 65520),
                    (1e39, 1), (1, 3.4e38), (1.00000001, 9), (1.0004, 9), (2 ** 63, 1)]
_THRESHOLD_X = {"uint8": [0, 1, 5, 200, 255], "int8": [0, 1, 5, 127, -128], "int16": [1, 2], "int32": [1, 2],
                "int64": [1, 2], "float16": [1.0, 1.0009765625], "bfloat16": [1.0, 1.0078125],
                "float32": [1.0, 2.0], "float64": [1.0, 2.0], "bool": [True, False]}


def _threshold_outcome(lib, dt, th, v):
    x = lib.tensor(_THRESHOLD_X[dt], dtype=getattr(lib, dt))
    try:
        r = lib.nn.functional.threshold(x, th, v)
    except Exception as e:  # noqa: BLE001 - type and message are compared
        return type(e).__name__, str(e)
    return str(r.dtype).split(".")[-1], r.double().tolist()


@pytest.mark.torch
@pytest.mark.parametrize("dt", list(_THRESHOLD_X))
def test_threshold_number_conversion_matches_torch(dt):
    real = pytest.importorskip("torch")
    pairs = _THRESHOLD_INT if dt.startswith(("int", "uint")) else _THRESHOLD_FLOAT
    for th, v in pairs[:3] if dt == "bool" else pairs:
        assert _threshold_outcome(torch, dt, th, v) == _threshold_outcome(real, dt, th, v), (dt, th, v)
