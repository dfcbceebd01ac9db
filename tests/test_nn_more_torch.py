"""PyTorch parity of the nn layers and functions added for real scripts (names probe, part 2):
``Unfold``/``Fold``, ``CosineSimilarity``, ``PairwiseDistance``, ``ChannelShuffle``,
``UpsamplingNearest2d``/``UpsamplingBilinear2d``, ``HingeEmbeddingLoss``, ``MultiLabelSoftMarginLoss``,
``LazyLinear``, ``F.pdist``, ``F.gumbel_softmax`` — values, gradients, node names, reprs, init draws
and errors — plus ``utils.hooks.RemovableHandle``, ``random.fork_rng`` and ``DistributedSampler``."""

from __future__ import annotations

import warnings
from collections import OrderedDict

import numpy as np
import pytest

import funcgrad
from funcgrad import nn

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.torch

F = nn.functional


def _pair(shape, seed=0, lo=None):
    x = np.random.RandomState(seed).randn(*shape).astype(np.float32)
    if lo is not None:
        x = np.abs(x) + lo
    return funcgrad.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)


def _int_target(shape, seed=1, values=(-1.0, 1.0)):
    t = np.random.RandomState(seed).choice(values, size=shape).astype(np.float32)
    return funcgrad.tensor(t), torch.tensor(t)


# (id, constructor text evaluated against both libraries' nn, input shapes)
LAYERS = [
    ("unfold", "Unfold(kernel_size=(2, 3), dilation=(1, 2), padding=1, stride=2)", [(2, 3, 6, 7)]),
    ("unfold_unbatched", "Unfold(2)", [(3, 4, 4)]),
    ("fold", "Fold(output_size=(4, 5), kernel_size=2, padding=1)", [(2, 12, 30)]),
    ("fold_unbatched", "Fold((3, 3), 2)", [(8, 4)]),
    ("cosine", "CosineSimilarity(dim=1, eps=1e-6)", [(4, 5), (4, 5)]),
    ("cosine_dim0", "CosineSimilarity(dim=0)", [(3, 2), (3, 2)]),
    ("pairwise", "PairwiseDistance()", [(4, 5), (4, 5)]),
    ("pairwise_p1_keep", "PairwiseDistance(p=1.0, eps=0.0, keepdim=True)", [(4, 5), (4, 5)]),
    ("shuffle", "ChannelShuffle(3)", [(2, 6, 3, 2)]),
    ("up_nearest", "UpsamplingNearest2d(scale_factor=2)", [(1, 2, 3, 4)]),
    ("up_nearest_size", "UpsamplingNearest2d(size=(5, 7))", [(1, 2, 3, 4)]),
    ("up_bilinear", "UpsamplingBilinear2d(scale_factor=2)", [(1, 2, 3, 4)]),
    ("up_bilinear_size", "UpsamplingBilinear2d(size=(5, 7))", [(1, 2, 3, 4)]),
]


@pytest.mark.parametrize("ctor,shapes", [r[1:] for r in LAYERS], ids=[r[0] for r in LAYERS])
def test_layer_matches_torch(ctor, shapes):
    a_mod, b_mod = eval("nn." + ctor), eval("torch.nn." + ctor)
    assert repr(a_mod) == repr(b_mod)
    pairs = [_pair(s, seed=i) for i, s in enumerate(shapes)]
    ya = a_mod(*[p[0] for p in pairs])
    yb = b_mod(*[p[1] for p in pairs])
    np.testing.assert_allclose(ya.detach().numpy(), yb.detach().numpy(), rtol=1e-5, atol=1e-6)
    assert ya.grad_fn.name() == yb.grad_fn.name()
    w = np.random.RandomState(9).randn(*yb.shape).astype(np.float32)
    (ya * funcgrad.tensor(w)).sum().backward()
    (yb * torch.tensor(w)).sum().backward()
    for a, b in pairs:
        np.testing.assert_allclose(a.grad.numpy(), b.grad.numpy(), rtol=1e-5, atol=1e-6)


LOSSES = [
    ("hinge", "HingeEmbeddingLoss()", (4, 5), (-1.0, 1.0)),
    ("hinge_margin_sum", "HingeEmbeddingLoss(margin=0.5, reduction='sum')", (4, 5), (-1.0, 1.0)),
    ("hinge_none", "HingeEmbeddingLoss(reduction='none')", (4, 5), (-1.0, 1.0)),
    ("mlsm", "MultiLabelSoftMarginLoss()", (4, 5), (0.0, 1.0)),
    ("mlsm_sum", "MultiLabelSoftMarginLoss(reduction='sum')", (4, 5), (0.0, 1.0)),
    ("mlsm_none_weight", "MultiLabelSoftMarginLoss(weight=lib.tensor([1., 2., .5, 0., 3.]), reduction='none')",
     (4, 5), (0.0, 1.0)),
]


@pytest.mark.parametrize("ctor,shape,values", [r[1:] for r in LOSSES], ids=[r[0] for r in LOSSES])
def test_loss_matches_torch(ctor, shape, values):
    lib = funcgrad
    a_mod = eval("nn." + ctor)
    lib = torch
    b_mod = eval("torch.nn." + ctor)
    assert repr(a_mod) == repr(b_mod)
    (xa, xb), (ta, tb) = _pair(shape), _int_target(shape, values=values)
    la, lb = a_mod(xa, ta), b_mod(xb, tb)
    np.testing.assert_allclose(la.detach().numpy(), lb.detach().numpy(), rtol=1e-5, atol=1e-6)
    assert la.grad_fn.name() == lb.grad_fn.name()
    la.sum().backward()
    lb.sum().backward()
    np.testing.assert_allclose(xa.grad.numpy(), xb.grad.numpy(), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("p", [2.0, 1.0, 0.5, 3.0, 0.0, float("inf")])
def test_pdist_matches_torch(p):
    x = np.random.RandomState(0).randn(5, 3).astype(np.float32)
    x[3] = x[1]  # a zero distance: PyTorch's gradient there is 0, not nan
    a, b = funcgrad.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    ya, yb = F.pdist(a, p), torch.nn.functional.pdist(b, p)
    np.testing.assert_allclose(ya.detach().numpy(), yb.detach().numpy(), rtol=1e-5, atol=1e-6)
    assert ya.grad_fn.name() == yb.grad_fn.name() == "PdistBackward0"
    w = np.arange(1, 11, dtype=np.float32)
    (ya * funcgrad.tensor(w)).sum().backward()
    (yb * torch.tensor(w)).sum().backward()
    np.testing.assert_allclose(a.grad.numpy(), b.grad.numpy(), rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("hard", [False, True])
@pytest.mark.parametrize("tau,dim", [(1.0, -1), (0.5, 0)])
def test_gumbel_softmax_draws_and_grads_match_torch(hard, tau, dim):
    (a, b) = _pair((3, 4))
    funcgrad.manual_seed(7)
    torch.manual_seed(7)
    ya = F.gumbel_softmax(a, tau=tau, hard=hard, dim=dim)
    yb = torch.nn.functional.gumbel_softmax(b, tau=tau, hard=hard, dim=dim)
    np.testing.assert_allclose(ya.detach().numpy(), yb.detach().numpy(), rtol=1e-5, atol=1e-6)
    assert ya.grad_fn.name() == yb.grad_fn.name()
    w = np.random.RandomState(3).randn(3, 4).astype(np.float32)
    (ya * funcgrad.tensor(w)).sum().backward()
    (yb * torch.tensor(w)).sum().backward()
    np.testing.assert_allclose(a.grad.numpy(), b.grad.numpy(), rtol=1e-5, atol=1e-6)
    # the stream advanced as PyTorch's did
    np.testing.assert_array_equal(funcgrad.rand(3).numpy(), torch.rand(3).numpy())


def test_gumbel_softmax_eps_is_deprecated():
    with pytest.warns(UserWarning, match="`eps` parameter is deprecated and has no effect."):
        F.gumbel_softmax(funcgrad.zeros(3), eps=1e-5)


def _err(lib, text):
    Fn = lib.nn.functional  # noqa: F841 - used by the evaluated text
    try:
        eval(text)
    except Exception as e:  # noqa: BLE001 - the test compares whatever both raise
        return type(e).__name__, str(e)
    return None


ERRORS = [
    "Fn.unfold(lib.zeros(3, 4), 2)",
    "Fn.unfold(lib.zeros(3), 2)",
    "Fn.unfold(lib.zeros(1, 1, 3, 4, 5), 2)",
    "Fn.unfold(lib.zeros(1, 2, 3, 3), 4)",
    "Fn.unfold(lib.zeros(1, 2, 3, 3), (2, 2, 2))",
    "Fn.fold(lib.zeros(1, 7, 4), (3, 3), 2)",
    "Fn.fold(lib.zeros(1, 8, 5), (3, 3), 2)",
    "Fn.fold(lib.zeros(8), (3, 3), 2)",
    "Fn.pdist(lib.zeros(3))",
    "Fn.pdist(lib.zeros(3, 2), p=-1)",
    "Fn.pdist(lib.zeros(3, 2, dtype=lib.int64))",
    "Fn.channel_shuffle(lib.zeros(2, 4, 3), 3)",
    "Fn.channel_shuffle(lib.zeros(2, 4, 3), 0)",
    "Fn.channel_shuffle(lib.zeros(3), 1)",
]


@pytest.mark.parametrize("text", ERRORS)
def test_errors_match_torch(text):
    expected = _err(torch, text)
    assert expected is not None
    assert _err(funcgrad, text) == expected


def test_pdist_of_one_row_is_empty():
    assert tuple(F.pdist(funcgrad.zeros(1, 3)).shape) == tuple(torch.nn.functional.pdist(torch.zeros(1, 3)).shape)


# ---- LazyLinear ------------------------------------------------------------------------------
@pytest.mark.parametrize("bias", [True, False])
def test_lazy_linear_materialises_with_torchs_draws(bias):
    funcgrad.manual_seed(3)
    torch.manual_seed(3)
    a, b = nn.LazyLinear(5, bias=bias), torch.nn.LazyLinear(5, bias=bias)
    assert repr(a) == repr(b)
    assert repr(a.weight) == repr(b.weight) == "<UninitializedParameter>"
    assert [(k, repr(v)) for k, v in a.state_dict().items()] == [(k, repr(v)) for k, v in b.state_dict().items()]
    x = np.random.RandomState(0).randn(2, 7).astype(np.float32)
    ya, yb = a(funcgrad.tensor(x)), b(torch.tensor(x))
    assert type(a).__name__ == type(b).__name__ == "Linear"
    assert repr(a) == repr(b)
    assert a.in_features == b.in_features == 7
    np.testing.assert_array_equal(a.weight.detach().numpy(), b.weight.detach().numpy())
    if bias:
        np.testing.assert_array_equal(a.bias.detach().numpy(), b.bias.detach().numpy())
    else:
        assert a.bias is None and b.bias is None
    np.testing.assert_allclose(ya.detach().numpy(), yb.detach().numpy(), rtol=1e-6, atol=1e-6)
    assert type(a.weight) is nn.Parameter and a.weight.requires_grad and a.weight.is_leaf
    assert not a._forward_pre_hooks  # the init hook removed itself
    ya.sum().backward()
    assert tuple(a.weight.grad.shape) == (5, 7)
    # the next draw is the same in both streams (the init took exactly torch's draws)
    np.testing.assert_array_equal(funcgrad.rand(2).numpy(), torch.rand(2).numpy())


def test_lazy_linear_trains_with_an_optimizer_made_after_the_first_call():
    m = nn.LazyLinear(1)
    m(funcgrad.zeros(1, 3))
    opt = funcgrad.optim.SGD(m.parameters(), lr=0.1)
    before = m.weight.detach().clone()
    m(funcgrad.ones(4, 3)).sum().backward()
    opt.step()
    np.testing.assert_allclose((before - m.weight.detach()).numpy(), np.full((1, 3), 0.4), rtol=1e-6)


@pytest.mark.parametrize("assign", [False, True])
def test_lazy_linear_takes_a_checkpoints_shapes(assign):
    """A checkpoint loads into a model of lazy layers (PyTorch's _lazy_load_hook materializes each
    uninitialized parameter with the checkpoint's shape); the layer becomes a Linear on its first
    call, with the loaded values; a bad key changes nothing."""
    torch.manual_seed(0)
    src = torch.nn.Sequential(torch.nn.Linear(4, 5), torch.nn.ReLU(), torch.nn.Linear(5, 2))
    sd_t = src.state_dict()
    sd_f = OrderedDict((k, funcgrad.tensor(v.numpy())) for k, v in sd_t.items())
    libs = {}
    for lib, sd in ((torch, sd_t), (funcgrad, sd_f)):
        m = lib.nn.Sequential(lib.nn.LazyLinear(5), lib.nn.ReLU(), lib.nn.LazyLinear(2))
        bad = OrderedDict(sd, extra=sd["0.bias"])
        with pytest.raises(RuntimeError, match='Unexpected key.*"extra"'):
            m.load_state_dict(bad, assign=assign)
        if lib is funcgrad:  # (PyTorch materializes before its checks: funcgrad leaves it lazy)
            assert repr(m[0].weight) == "<UninitializedParameter>"
        res = m.load_state_dict(sd, assign=assign)
        libs[lib] = (m, repr(res), repr(m), [type(x).__name__ for x in m])
    (a, *ra), (b, *rb) = libs[funcgrad], libs[torch]
    assert ra == rb  # the load's result, the lazy reprs (in_features=0) until the first call
    x = np.random.RandomState(0).randn(3, 4).astype(np.float32)
    ya, yb = a(funcgrad.tensor(x)), b(torch.tensor(x))
    assert repr(a) == repr(b) and [type(m).__name__ for m in a] == ["Linear", "ReLU", "Linear"]
    np.testing.assert_allclose(ya.detach().numpy(), yb.detach().numpy(), rtol=1e-6, atol=1e-6)
    for (ka, va), (kb, vb) in zip(a.state_dict().items(), b.state_dict().items()):
        assert ka == kb
        np.testing.assert_array_equal(va.numpy(), vb.numpy())


# ---- utils.hooks, random, DistributedSampler ---------------------------------------------------
def test_removable_handle_is_torchs_class_and_constructor():
    from funcgrad.utils.hooks import RemovableHandle
    m = nn.Linear(2, 2)
    h = m.register_forward_pre_hook(lambda mod, args, kwargs: None, with_kwargs=True)
    assert isinstance(h, RemovableHandle)
    assert h.id in m._forward_pre_hooks and h.id in m._forward_pre_hooks_with_kwargs
    with h:
        pass
    assert not m._forward_pre_hooks and not m._forward_pre_hooks_with_kwargs
    for lib in (funcgrad, torch):
        hooks, extra = OrderedDict(), OrderedDict()
        a = lib.utils.hooks.RemovableHandle(hooks, extra_dict=extra)
        b = lib.utils.hooks.RemovableHandle(hooks, extra_dict=[extra])
        assert b.id == a.id + 1
        hooks[a.id] = hooks[b.id] = extra[a.id] = extra[b.id] = print
        a.remove()
        a.remove()  # twice is fine
        assert list(hooks) == list(extra) == [b.id]


def test_random_namespace_matches_torch():
    assert set(funcgrad.random.__all__) == set(torch.random.__all__) - {"thread_safe_generator"}
    for lib in (funcgrad, torch):
        lib.random.manual_seed(5)
    with funcgrad.random.fork_rng(), torch.random.fork_rng():
        np.testing.assert_array_equal(funcgrad.randn(4).numpy(), torch.randn(4).numpy())
    with funcgrad.random.fork_rng(enabled=False), torch.random.fork_rng(enabled=False):
        np.testing.assert_array_equal(funcgrad.randn(3).numpy(), torch.randn(3).numpy())
    # back to the state after manual_seed(5) plus the unforked draws
    np.testing.assert_array_equal(funcgrad.rand(3).numpy(), torch.rand(3).numpy())
    s = funcgrad.random.get_rng_state()
    np.testing.assert_array_equal(s.numpy(), torch.random.get_rng_state().numpy())
    funcgrad.random.set_rng_state(s)
    assert funcgrad.random.initial_seed() == torch.random.initial_seed() == 5
    with pytest.raises(ValueError, match="boom"), funcgrad.random.fork_rng():
        funcgrad.rand(5)
        raise ValueError("boom")
    np.testing.assert_array_equal(funcgrad.rand(2).numpy(), torch.rand(2).numpy())


SAMPLERS = [dict(num_replicas=3, rank=0), dict(num_replicas=3, rank=2, seed=11),
            dict(num_replicas=4, rank=1, drop_last=True), dict(num_replicas=4, rank=3, shuffle=False),
            dict(num_replicas=16, rank=15, seed=2)]


@pytest.mark.parametrize("kw", SAMPLERS)
def test_distributed_sampler_order_matches_torch(kw):
    from funcgrad.utils.data.distributed import DistributedSampler as A
    from torch.utils.data.distributed import DistributedSampler as B
    a, b = A(range(10), **kw), B(range(10), **kw)
    assert len(a) == len(b)
    for epoch in (0, 1, 7):
        a.set_epoch(epoch)
        b.set_epoch(epoch)
        assert list(a) == list(b)
    loader = funcgrad.utils.data.DataLoader(range(10), batch_size=2, sampler=a)
    assert [x.tolist() for x in loader] == [x.tolist() for x in torch.utils.data.DataLoader(range(10), 2, sampler=b)]


@pytest.mark.parametrize("rank", [-1, 3])
def test_distributed_sampler_bad_rank(rank):
    from funcgrad.utils.data.distributed import DistributedSampler as A
    from torch.utils.data.distributed import DistributedSampler as B
    with pytest.raises(ValueError) as eb:
        B(range(4), num_replicas=3, rank=rank)
    with pytest.raises(ValueError) as ea:
        A(range(4), num_replicas=3, rank=rank)
    assert str(ea.value) == str(eb.value)


def test_no_warnings_from_new_layers():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        nn.UpsamplingNearest2d(scale_factor=2)(funcgrad.zeros(1, 1, 2, 2))
        nn.UpsamplingBilinear2d(scale_factor=2)(funcgrad.zeros(1, 1, 2, 2))


# ---- spectral_norm, to_empty -------------------------------------------------------------------
@pytest.mark.parametrize("ctor,shape,n", [("Linear(4, 3)", (2, 4), 1), ("Conv2d(2, 3, 3)", (1, 2, 5, 5), 2),
                                          ("ConvTranspose2d(2, 3, 3)", (1, 2, 4, 4), 1)])
def test_spectral_norm_matches_torch(ctor, shape, n):
    x = np.random.RandomState(0).randn(*shape).astype(np.float32)

    def run(lib):
        lib.manual_seed(0)
        m = lib.nn.utils.spectral_norm(eval("lib.nn." + ctor), n_power_iterations=n)
        opt = lib.optim.SGD(m.parameters(), lr=0.1)
        outs = []
        for _ in range(3):
            opt.zero_grad()
            y = m(lib.tensor(x))
            y.square().sum().backward()
            opt.step()
            outs.append(y.detach().numpy())
        m.eval()
        outs.append(m(lib.tensor(x)).detach().numpy())
        sd = {k: v.numpy().copy() for k, v in m.state_dict().items()}
        grad = m.weight_orig.grad.numpy()
        lib.nn.utils.remove_spectral_norm(m)
        return outs, sd, grad, m.weight.detach().numpy(), sorted(n for n, _ in m.named_parameters())

    (oa, sa, ga, wa, na), (ob, sb, gb, wb, nb) = run(torch), run(funcgrad)
    assert list(sa) == list(sb) and na == nb
    tol = dict(rtol=1e-4, atol=1e-4)  # float32 power iteration and conv sums, several steps
    for a, b in zip(oa, ob):
        np.testing.assert_allclose(b, a, **tol)
    for k in sa:
        np.testing.assert_allclose(sb[k], sa[k], **tol, err_msg=k)
    np.testing.assert_allclose(gb, ga, **tol)
    np.testing.assert_allclose(wb, wa, **tol)


def test_spectral_norm_draws_and_errors_match_torch():
    for lib in (torch, funcgrad):
        lib.manual_seed(4)
    a, b = nn.utils.spectral_norm(nn.Linear(5, 2)), torch.nn.utils.spectral_norm(torch.nn.Linear(5, 2))
    for k in ("weight_u", "weight_v", "weight_orig"):
        np.testing.assert_allclose(getattr(a, k).detach().numpy(), getattr(b, k).detach().numpy(), rtol=1e-6,
                                   atol=1e-7)
    msgs = []
    for lib in (torch, funcgrad):
        m = lib.nn.utils.spectral_norm(lib.nn.Linear(2, 2))
        out = []
        for f in (lambda: lib.nn.utils.spectral_norm(m), lambda: lib.nn.utils.spectral_norm(lib.nn.Linear(2, 2),
                                                                                             n_power_iterations=0),
                  lambda: lib.nn.utils.remove_spectral_norm(lib.nn.Linear(2, 2), "bias"),
                  lambda: lib.nn.utils.spectral_norm(lib.nn.Linear(2, 2, bias=False), name="bias")):
            with pytest.raises((RuntimeError, ValueError)) as e:
                f()
            out.append((e.type, str(e.value).replace("torch.", "funcgrad.")))
        msgs.append(out)
    assert [t for t, _ in msgs[0]] == [t for t, _ in msgs[1]]
    assert [m for _, m in msgs[0][:2] + msgs[0][3:]] == [m for _, m in msgs[1][:2] + msgs[1][3:]]


def test_to_empty_keeps_identity_shapes_and_dtypes_as_torch():
    def run(lib, recurse):
        m = lib.nn.Sequential(lib.nn.Linear(2, 3), lib.nn.BatchNorm1d(3))
        # parameters keep their identity in both (buffers too in funcgrad, whose _apply converts
        # every tensor in place; PyTorch rebinds buffers)
        before = [id(t) for t in m.parameters()]
        assert m.to_empty(device="cpu", recurse=recurse) is m
        after = [id(t) for t in m.parameters()]
        return before == after, [(n, tuple(t.shape), str(t.dtype).split(".")[-1], t.requires_grad)
                                 for n, t in m.state_dict(keep_vars=True).items()]
    for recurse in (True, False):
        assert run(funcgrad, recurse) == run(torch, recurse)


# ---- in-place activations: PyTorch's *Backward1 nodes and result-based derivatives --------------
INPLACE_ACTS = [  # (function, kwargs): F.<function>(x, **kwargs, inplace=True) on a non-leaf
    ("elu", dict(alpha=1.7)), ("elu", dict(alpha=1.0)), ("selu", {}), ("celu", dict(alpha=0.7)),
    ("celu", dict(alpha=2.5)), ("leaky_relu", dict(negative_slope=0.2)),
    ("leaky_relu", dict(negative_slope=0.0)), ("threshold", dict(threshold=0.5, value=2.0)),
    ("relu", {}), ("hardtanh", {}), ("relu6", {}),
]


@pytest.mark.parametrize("inplace", [True, False])
@pytest.mark.parametrize("name,kw", INPLACE_ACTS, ids=[f"{n}-{k}" for n, k in INPLACE_ACTS])
def test_activation_node_and_gradient_are_torchs(name, kw, inplace):
    """The node (EluBackward1, LeakyReluBackward1, ThresholdBackward1... for the in-place forms)
    and the gradient from PyTorch's formula (the in-place forms' reads the result): bit-equal
    to torch's wherever the forward values are (its exp/expm1 may differ by an ulp)."""
    x0 = np.random.RandomState(0).randn(500) * 3
    g0 = np.linspace(-2, 2, 500)
    res = []
    for lib in (funcgrad, torch):
        x = lib.tensor(x0, requires_grad=True)
        y = getattr(lib.nn.functional, name)(x * 1, **kw, inplace=inplace)
        y.backward(lib.tensor(g0))
        res.append((y.grad_fn.name(), y.detach().numpy(), x.grad.numpy()))
    (na, ya, ga), (nb, yb, gb) = res
    assert na == nb
    np.testing.assert_allclose(ya, yb, rtol=1e-15, atol=0)
    same = ya == yb
    np.testing.assert_allclose(ga, gb, rtol=1e-13, atol=1e-300)  # (an ulp of exp, through r + alpha)
    if inplace:
        np.testing.assert_array_equal(ga[same], gb[same])


@pytest.mark.parametrize("name,kw", [("elu", dict(alpha=-1.5)), ("celu", dict(alpha=-1.0)),
                                     ("leaky_relu", dict(negative_slope=-0.5))])
def test_inplace_activation_with_a_negative_slope_refuses_backward(name, kw):
    msgs = []
    for lib in (funcgrad, torch):
        x = lib.tensor([0.5, -1.0], requires_grad=True)
        y = getattr(lib.nn.functional, name)(x * 1, **kw, inplace=True)
        with pytest.raises(RuntimeError) as e:
            y.sum().backward()
        msgs.append(str(e.value))
        assert x.grad is None
    assert msgs[0] == msgs[1]
