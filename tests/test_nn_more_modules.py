"""nn modules and functionals PyTorch tutorials reach that funcgrad lacked: ``MaxUnpool1d/2d/3d``,
``RReLU``, ``LPPool1d/2d/3d``, ``FeatureAlphaDropout``, ``AdaptiveMaxPool3d``,
``MultiLabelMarginLoss``, ``TripletMarginWithDistanceLoss``, ``AdaptiveLogSoftmaxWithLoss``,
``FractionalMaxPool2d/3d`` and their functional forms; ``CrossMapLRN2d``, ``SyncBatchNorm`` (no process
group), the deprecated ``NLLLoss2d`` and ``Container``. One script gives the transcript (values,
gradients, node names, reprs, errors, seeded random draws); ``tests/fixtures/nn_more_modules/expected.json`` holds PyTorch
2.13's, recorded by ``make_fixtures.py`` there and re-checked live where torch is installed."""

import json
import pathlib

import pytest

import funcgrad
from funcgrad._errors import TracedValueError

from ._rows import check_transcript, shower, torch_transcript

FIXTURE = pathlib.Path(__file__).parent / "fixtures" / "nn_more_modules" / "expected.json"


def _r(t):
    return [round(v, 4) + 0.0 for v in t.detach().double().flatten().tolist()]


def _grad(torch, f, *shapes, seed=0, dtype=None):
    """``f``'s result and the gradients of ``(result * weights).sum()`` w.r.t. fresh inputs."""
    g = torch.Generator().manual_seed(seed)
    xs = [torch.randn(*s, generator=g, dtype=dtype or torch.float32).requires_grad_() for s in shapes]
    y = f(*xs)
    w = torch.randn(y.shape, generator=g, dtype=y.dtype)
    (y * w).sum().backward()
    return y.grad_fn.name(), list(y.shape), _r(y), [_r(x.grad) for x in xs]


def _unpool(torch, show):
    nn, F = torch.nn, torch.nn.functional
    x = torch.tensor([[[[1., 5., 2., 2.], [3., 4., 2., 2.], [9., 0., 1., 7.], [8., 8., 6., 7.]]]], requires_grad=True)
    out, idx = F.max_pool2d(x, 2, return_indices=True)
    y = F.max_unpool2d(out, idx, 2)
    show(lambda: (y.grad_fn.name(), _r(y), idx.tolist()))
    (y * torch.arange(16.).view(1, 1, 4, 4)).sum().backward()
    show(lambda: _r(x.grad))
    # overlapping windows: indices repeat (which value lands there depends on PyTorch's thread
    # count), every input gets the gradient at its index
    v = torch.tensor([[[[3., 1.], [2., 4.]]]], requires_grad=True)
    dup = torch.tensor([[[[5, 5], [5, 6]]]])
    y = F.max_unpool2d(v, dup, 2, stride=1)
    show(lambda: (_r(y)[:5], _r(y)[6:]))
    (y * torch.arange(1., 10.).view(1, 1, 3, 3)).sum().backward()
    show(lambda: _r(v.grad))
    show(lambda: _grad(torch, lambda a: F.max_unpool1d(*F.max_pool1d(a, 2, return_indices=True), 2,
                                                       output_size=[7]), (2, 7)))
    show(lambda: _grad(torch, lambda a: F.max_unpool2d(*F.max_pool2d(a, 3, 2, 1, return_indices=True), 3, 2, 1),
                       (2, 1, 5, 5)))
    show(lambda: _grad(torch, lambda a: F.max_unpool3d(*F.max_pool3d(a, 2, return_indices=True), 2,
                                                       output_size=(5, 4, 5)), (2, 4, 4, 5)))
    m = nn.MaxUnpool2d(2)
    show(lambda: _r(m(out, idx, output_size=x.size())))
    show(lambda: (repr(m), repr(nn.MaxUnpool1d(2, 1)), repr(nn.MaxUnpool3d((2, 1, 2), padding=1)),
                  repr(nn.MaxUnpool2d(3, (2, 1), 1))))
    o, i = out.detach(), idx
    o3, i3 = F.max_pool3d(torch.randn(2, 4, 4, 5), 2, return_indices=True)
    o3, i3 = o3[None], i3[None]
    o1, i1 = F.max_pool1d(torch.randn(2, 7), 2, return_indices=True)
    for f in [lambda: F.max_unpool2d(o, i.int(), 2), lambda: F.max_unpool2d(o, i[..., :1], 2),
              lambda: F.max_unpool2d(o, i.index_fill(-1, torch.tensor([1]), 40), 2),
              lambda: F.max_unpool2d(o, i.flatten().index_fill(0, torch.tensor([3]), -2).view(i.shape), 2),
              lambda: F.max_unpool2d(o[0, 0], i[0, 0], 2), lambda: F.max_unpool2d(o, i, 2, output_size=(9, 9)),
              lambda: F.max_unpool2d(o, i, 2, output_size=(5,)), lambda: F.max_unpool2d(o, i, 2, padding=3),
              lambda: F.max_unpool2d(o[:, :, :0], i[:, :, :0], 2), lambda: F.max_unpool2d(o.int(), i, 2),
              lambda: F.max_unpool3d(o3, i3.flatten().index_fill(0, torch.tensor([2]), 80).view(i3.shape), 2,
                                     output_size=(4, 4, 5)),
              lambda: F.max_unpool3d(o3, i3, 2, stride=0), lambda: F.max_unpool3d(o3[0, 0], i3[0, 0], 2),
              lambda: F.max_unpool3d(o3, i3[..., :1], 2), lambda: F.max_unpool3d(o3, i3.int(), 2),
              lambda: F.max_unpool1d(o1[0], i1[0], 2),
              lambda: F.max_unpool1d(o1, i1.flatten().index_fill(0, torch.tensor([4]), 7).view(i1.shape), 2),
              lambda: tuple(F.max_unpool2d(o[:0], i[:0], 2).shape),
              lambda: F.max_unpool2d(o, i, 2, output_size=(1, 2, 5, 5)).shape]:
        show(f)


def _rrelu(torch, show):
    nn, F = torch.nn, torch.nn.functional
    base = [-1.0, 2.0, -3.0, 0.0, 4.0, -0.5, -0.0, 1e-3]
    for dtype in (torch.float32, torch.float64):
        torch.manual_seed(0)
        x = torch.tensor(base, dtype=dtype, requires_grad=True)
        y = F.rrelu(x, training=True)
        y.sum().backward()
        show(lambda y=y, x=x: (y.grad_fn.name(), y.dtype, _r(y), _r(x.grad)))
        x.grad = None
        y = F.rrelu(x, 0.2, 0.4)
        y.sum().backward()
        show(lambda y=y, x=x: (y.grad_fn.name(), _r(y), _r(x.grad)))
    torch.manual_seed(1)
    x = torch.randn(3, 40)
    show(lambda: _r(F.rrelu(x, 0.05, 0.9, training=True))[:60])
    show(lambda: _r(torch.rand(3)))  # the stream after the draws
    w = torch.tensor(base, requires_grad=True)
    y = w * 1
    r = F.rrelu_(y, training=True)
    show(lambda: (r is y, y._version, y.grad_fn.name(), _r(y)))
    y.sum().backward()
    show(lambda: _r(w.grad))
    show(lambda: F.rrelu(w, inplace=True))
    show(lambda: F.rrelu(w, 0.5, 0.1))
    for t, tr in [(torch.tensor([1, -2]), False), (torch.tensor([1, -2]), True),
                  (torch.tensor([1., -2.], dtype=torch.float16), True)]:
        show(lambda t=t, tr=tr: F.rrelu(t, training=tr))
    show(lambda: _r(torch.rand(2)))  # (a refused draw draws nothing)
    m = nn.RReLU(0.1, 0.3)
    torch.manual_seed(2)
    x = torch.randn(2, 5)
    show(lambda: (repr(m), _r(m(x)), _r(m.eval()(x)), repr(nn.RReLU(inplace=True))))


def _lppool(torch, show):
    nn, F = torch.nn, torch.nn.functional
    show(lambda: _grad(torch, lambda a: nn.LPPool3d(1.5, (2, 1, 2), stride=(1, 2, 1), ceil_mode=True)(a.abs() + 0.1),
                       (1, 2, 4, 4, 4)))
    show(lambda: _grad(torch, lambda a: F.lp_pool3d(a, float("inf"), 2), (1, 2, 4, 4, 4)))
    show(lambda: _grad(torch, lambda a: nn.LPPool2d(float("-inf"), 2)(a), (1, 1, 4, 4)))
    show(lambda: (repr(nn.LPPool3d(2, 2)), repr(nn.LPPool1d(2, 3)), repr(nn.LPPool2d(1.5, (2, 3), 1, True))))


def _alpha(torch, show):
    nn, F = torch.nn, torch.nn.functional
    for shape, p in [((2, 3, 2, 2), 0.5), ((4, 5), 0.2), ((2, 3, 4), 0.9)]:
        torch.manual_seed(0)
        x = torch.randn(*shape, requires_grad=True)
        y = F.feature_alpha_dropout(x, p, training=True)
        y.sum().backward()
        show(lambda y=y, x=x: (y.grad_fn.name(), _r(y), _r(x.grad)))
    show(lambda: _r(torch.rand(3)))
    x = torch.randn(2, 3, 2, dtype=torch.float64)
    torch.manual_seed(5)
    show(lambda: _r(F.feature_alpha_dropout(x, 0.3, True)))
    show(lambda: (F.feature_alpha_dropout(x, 0.5) is x, F.feature_alpha_dropout(x, 0.0, True) is x,
                  _r(F.feature_alpha_dropout(x, 1.0, True))))
    show(lambda: F.feature_alpha_dropout(torch.ones(4), 0.5, True))
    show(lambda: F.feature_alpha_dropout(x, 1.5, True))
    show(lambda: F.feature_alpha_dropout(torch.ones(2, 2, dtype=torch.int32), 0.5, True))
    show(lambda: F.feature_alpha_dropout(torch.ones(2, 2, dtype=torch.bool), 0.5, True))
    z = torch.ones(2, 2, 2)
    torch.manual_seed(0)
    r = F.feature_alpha_dropout(z, 0.5, True, inplace=True)
    show(lambda: (r is z, z._version, _r(z)))
    m = nn.FeatureAlphaDropout(0.2, inplace=True)
    torch.manual_seed(3)
    show(lambda: (repr(m), repr(nn.FeatureAlphaDropout()), _r(m(torch.ones(2, 3, 1)))))
    show(lambda: nn.FeatureAlphaDropout(-0.1))


def _amp3d(torch, show):
    nn, F = torch.nn, torch.nn.functional
    show(lambda: _grad(torch, lambda a: F.adaptive_max_pool3d(a, (2, None, 3)), (1, 2, 3, 4, 5)))
    show(lambda: _grad(torch, lambda a: F.adaptive_max_pool3d(a, 2), (2, 3, 4, 5)))
    x = torch.tensor([1., 1., 3., 3., 2., 2., 0., 0.]).view(1, 1, 2, 2, 2).requires_grad_()
    y, i = F.adaptive_max_pool3d(x, (1, 1, 1), return_indices=True)
    y.sum().backward()
    show(lambda: (_r(y), i.tolist(), i.dtype, _r(x.grad)))
    m = nn.AdaptiveMaxPool3d((1, 2, 3), return_indices=True)
    g = torch.Generator().manual_seed(4)
    xx = torch.randn(2, 3, 4, 5, generator=g)
    show(lambda: (repr(m), [_r(t) for t in m(xx)], repr(nn.AdaptiveMaxPool3d(2))))
    x = torch.randn(1, 2, 4, 5, 6)
    for f in [lambda: F.adaptive_max_pool3d(x[0, 0], 2), lambda: F.adaptive_max_pool3d(x, (2, 3)),
              lambda: F.adaptive_max_pool3d(x, (0, 2, 3)).shape, lambda: F.adaptive_max_pool3d(x[:, :, :0], 2),
              lambda: F.adaptive_max_pool3d(x.int(), 2), lambda: F.adaptive_max_pool3d(x[0, 0, 0], (1, 2, 3))]:
        show(f)


def _mlm(torch, show):
    nn, F = torch.nn, torch.nn.functional
    x = torch.tensor([[0.1, 0.2, 0.4, 0.8], [0.3, -1., 2., 0.], [0.5, 0.5, -0.5, 1.5]], requires_grad=True)
    t = torch.tensor([[3, 0, -1, 1], [1, 2, 3, -1], [0, 1, 2, 3]])
    for red in ("mean", "none"):
        x.grad = None
        y = F.multilabel_margin_loss(x, t, reduction=red)
        y.sum().backward()
        show(lambda y=y: (y.grad_fn.name(), list(y.shape), _r(y), _r(x.grad)))
    x1 = torch.tensor([1., 0., 0.5, 2.], dtype=torch.float64, requires_grad=True)  # a hinge at exactly 0
    y = nn.MultiLabelMarginLoss(reduction="none")(x1, torch.tensor([0, 3, -1, 2]))
    y.backward()
    show(lambda: (list(y.shape), y.dtype, _r(y), _r(x1.grad)))
    show(lambda: (repr(nn.MultiLabelMarginLoss()), repr(nn.MultiLabelMarginLoss(reduction="sum"))))
    for f in [lambda: F.multilabel_margin_loss(x, t[0]), lambda: F.multilabel_margin_loss(x, t[:, :3]),
              lambda: F.multilabel_margin_loss(x, t.int()), lambda: F.multilabel_margin_loss(x, t * 3),
              lambda: F.multilabel_margin_loss(x, t - 3), lambda: F.multilabel_margin_loss(x[None], t[None]),
              lambda: F.multilabel_margin_loss(x[:0], t[:0], reduction="none").shape,
              lambda: F.multilabel_margin_loss(x[:, :0], t[:, :0]),
              lambda: F.multilabel_margin_loss(x[0, 0], torch.tensor(0)),
              lambda: F.multilabel_margin_loss(x.half(), t), lambda: F.multilabel_margin_loss(t, t),
              lambda: F.multilabel_margin_loss(x, t.float()), lambda: F.multilabel_margin_loss(x, t, reduction="foo"),
              lambda: F.multilabel_margin_loss(x, t, size_average=False)]:
        show(f)


def _triplet(torch, show):
    nn, F = torch.nn, torch.nn.functional
    show(lambda: _grad(torch, lambda a, p, n: F.triplet_margin_with_distance_loss(a, p, n), (4, 3), (4, 3), (4, 3)))
    show(lambda: _grad(torch, lambda a, p, n: F.triplet_margin_with_distance_loss(
        a, p, n, distance_function=lambda u, v: 1.0 - F.cosine_similarity(u, v), margin=0.5, swap=True,
        reduction="none"), (5, 3), (5, 3), (5, 3), seed=1))
    show(lambda: _grad(torch, lambda a, p, n: nn.TripletMarginWithDistanceLoss(
        distance_function=nn.PairwiseDistance(p=1), swap=True, reduction="sum")(a, p, n), (3, 4), (3, 4), (3, 4),
        seed=2))
    show(lambda: (repr(nn.TripletMarginWithDistanceLoss()), nn.TripletMarginWithDistanceLoss(margin=2.0).margin))
    a = torch.randn(2, 3)
    for f in [lambda: F.triplet_margin_with_distance_loss(a, a, a[0]),
              lambda: F.triplet_margin_with_distance_loss(a, a, a, margin=0),
              lambda: F.triplet_margin_with_distance_loss(a, a, a, reduction="max"),
              lambda: nn.TripletMarginWithDistanceLoss(margin=-1.0)]:
        show(f)


def _asm(torch, show):
    nn = torch.nn
    torch.manual_seed(0)
    m = nn.AdaptiveLogSoftmaxWithLoss(8, 10, [4, 8], div_value=2.0)
    show(lambda: (repr(m), [(k, list(v.shape)) for k, v in m.state_dict().items()]))
    show(lambda: [_r(p)[:4] for p in m.parameters()])
    x = torch.randn(6, 8, requires_grad=True)
    out = m(x, torch.tensor([0, 5, 9, 3, 8, 4]))
    out.loss.backward()
    show(lambda: (type(out).__name__, out._fields, out.output.grad_fn.name(), _r(out.output), _r(out.loss)))
    show(lambda: (_r(x.grad), [_r(p.grad) for p in m.parameters()]))
    show(lambda: (_r(m.log_prob(x)), m.log_prob(x).requires_grad))
    show(lambda: m.predict(x).tolist())
    torch.manual_seed(1)
    m2 = nn.AdaptiveLogSoftmaxWithLoss(4, 5, [1], head_bias=True)
    show(lambda: (repr(m2), [_r(p) for p in m2.parameters()]))
    xs = torch.randn(4)
    o = m2(xs, torch.tensor(3))
    show(lambda: (_r(o.output), list(o.output.shape), _r(o.loss)))
    for f in [lambda: nn.AdaptiveLogSoftmaxWithLoss(8, 10, []), lambda: nn.AdaptiveLogSoftmaxWithLoss(8, 10, [5, 3]),
              lambda: nn.AdaptiveLogSoftmaxWithLoss(8, 10, [4, 10]), lambda: m(x, torch.tensor([0, 1, 2, 3, 4, 10])),
              lambda: m(x, torch.tensor([0, 1])), lambda: m(x[0], torch.tensor([1])),
              lambda: m(x, torch.tensor(1)), lambda: m(x, torch.zeros(6, 1, dtype=torch.long))]:
        show(f)


def _fractional(torch, show):
    nn, F = torch.nn, torch.nn.functional
    torch.manual_seed(0)
    x = torch.randn(2, 3, 7, 6, requires_grad=True)
    m = nn.FractionalMaxPool2d(3, output_ratio=0.5)
    y = m(x)  # the samples drawn with rand, as PyTorch's functional draws them
    y.sum().backward()
    show(lambda: (repr(m), y.grad_fn.name(), _r(y), _r(x.grad)))
    show(lambda: _r(torch.rand(3)))
    y = torch.arange(1., 26.).view(1, 1, 5, 5)
    for u in [(0.1, 0.9), (0.5, 0.0), (0.99, 0.7)]:
        show(lambda u=u: [t.tolist() for t in F.fractional_max_pool2d(y, 2, output_size=3, return_indices=True,
                                                                       _random_samples=torch.tensor([[u]]))])
    z = torch.tensor([[[[1., 1.], [2., 2.]]]]).repeat(1, 1, 2, 2)  # ties: the first, as PyTorch
    show(lambda: [t.tolist() for t in F.fractional_max_pool2d(z, 2, output_size=2, return_indices=True,
                                                              _random_samples=torch.tensor([[[0.3, 0.6]]]))])
    show(lambda: [t.tolist() for t in F.fractional_max_pool2d(torch.arange(30.).view(1, 1, 5, 6), (0, 2), output_size=2,
                                                              return_indices=True,
                                                              _random_samples=torch.tensor([[[0.3, 0.6]]]))])
    u3 = torch.rand(1, 2, 3, dtype=torch.float64)
    show(lambda: _grad(torch, lambda a: F.fractional_max_pool3d(a, 2, output_size=(3, 2, 3), _random_samples=u3),
                       (1, 2, 5, 4, 6), dtype=torch.float64))
    show(lambda: (repr(nn.FractionalMaxPool3d(2, output_size=2, return_indices=True)),
                  nn.FractionalMaxPool2d(2, output_ratio=0.5).output_ratio))
    u = torch.rand(1, 2, 2)
    x = torch.randn(1, 2, 6, 7)
    x3 = torch.randn(1, 2, 5, 6, 7)
    for f in [lambda: F.fractional_max_pool2d(x, 2, output_size=(6, 3), _random_samples=u),
              lambda: F.fractional_max_pool2d(x, 2, output_size=(3, 7), _random_samples=u),
              lambda: F.fractional_max_pool2d(x, 2), lambda: F.fractional_max_pool2d(x, 2, output_ratio=(0.5, 0.5, 0.5)),
              lambda: F.fractional_max_pool2d(x[0, 0], 2, output_size=2),
              lambda: F.fractional_max_pool2d(x[0, 0], 2, output_size=2, _random_samples=u),
              lambda: F.fractional_max_pool2d(x[:, :, :0], 2, output_size=2),
              lambda: F.fractional_max_pool2d(x, 2, output_size=2, _random_samples=u.double()),
              lambda: F.fractional_max_pool2d(x, 2, output_size=2, _random_samples=u[0]),
              lambda: F.fractional_max_pool2d(x, 2, output_size=2, _random_samples=u[:, :1]),
              lambda: F.fractional_max_pool2d(x, 2, output_size=2, _random_samples=torch.rand(1, 2, 3)),
              lambda: F.fractional_max_pool2d(x.repeat(2, 1, 1, 1), 2, output_size=2, _random_samples=u),
              lambda: F.fractional_max_pool2d(x, (2, 2, 2), output_size=2, _random_samples=u),
              lambda: F.fractional_max_pool2d(x, 2, output_size=(2, 2, 2), _random_samples=u),
              lambda: F.fractional_max_pool3d(x3, 2, output_size=(6, 2, 2)),
              lambda: F.fractional_max_pool3d(x3, 2, output_size=(2, 2, 7)),
              lambda: F.fractional_max_pool3d(x3[0, 0], 2, output_size=2),
              lambda: F.fractional_max_pool3d(x3, 2, output_size=2, _random_samples=torch.rand(1, 2, 2)),
              lambda: F.fractional_max_pool3d(x3, (2, 2), output_size=2),
              lambda: nn.FractionalMaxPool2d(2), lambda: nn.FractionalMaxPool2d(2, output_size=2, output_ratio=0.5),
              lambda: nn.FractionalMaxPool2d(2, output_ratio=1.5), lambda: nn.FractionalMaxPool3d(0, output_ratio=0.5),
              lambda: nn.FractionalMaxPool3d(2, output_ratio=(0.5, 0.5, 1.0))]:
        show(f)


def _aliases(torch, show):
    F = torch.nn.functional
    x = torch.arange(16.).view(1, 1, 4, 4)
    show(lambda: [[_r(t) for t in F.max_pool2d_with_indices(x, 2)], [_r(t) for t in F.max_pool1d_with_indices(x[0], 2)],
                  [_r(t) for t in F.max_pool3d_with_indices(x, 2)],
                  [_r(t) for t in F.adaptive_max_pool2d_with_indices(x, 3)],
                  [_r(t) for t in F.adaptive_max_pool1d_with_indices(x[0], 2)]])
    show(lambda: _r(F.upsample_nearest(x[:, :, :2, :2], scale_factor=2)))
    show(lambda: _r(F.upsample_bilinear(x[:, :, :2, :2], size=3)))


def _legacy(torch, show):
    """CrossMapLRN2d, the deprecated NLLLoss2d and Container, SyncBatchNorm with no process group."""
    nn = torch.nn
    x = torch.tensor([[[[0.5, -1.0]], [[2.0, 0.0]], [[1.5, -0.25]], [[3.0, 0.75]], [[-2.0, 1.0]]]], requires_grad=True)
    w = torch.arange(10.).view(1, 5, 1, 2) - 4.5
    for m in (nn.CrossMapLRN2d(3), nn.CrossMapLRN2d(5, alpha=0.5, beta=0.75, k=2.0), nn.CrossMapLRN2d(4, 1.0, 0.5)):
        y = m(x)
        g, = torch.autograd.grad((y * w).sum(), x)
        show(lambda m=m, y=y, g=g: (repr(m), y.grad_fn.name(), y.dtype, _r(y), _r(g)))
    m = nn.CrossMapLRN2d(3, 0.5)
    y = m(x)
    show(lambda: torch.autograd.grad((y * w).sum(), x, create_graph=True))
    show(lambda: (m(x.detach()).grad_fn, m(x.double()).dtype, _r(m(torch.zeros(0, 3, 1, 1)))))
    with torch.no_grad():
        show(lambda: m(x).grad_fn)
    for f in [lambda: m(x[0]), lambda: m(torch.ones(1, 3, 2, 2, dtype=torch.int64)),
              lambda: m(torch.ones(1, 3, 2, 2, dtype=torch.bool)), lambda: m(torch.ones(2, 0, 2, 2)),
              lambda: torch.autograd.grad(nn.CrossMapLRN2d(1)(x).sum(), x)]:
        show(f)
    # deprecated classes: a FutureWarning for the class itself and for a subclass, not its instances
    show(lambda: nn.Container(lin=nn.Linear(2, 3), act=nn.ReLU()))
    show(lambda: type("Legacy", (nn.Container,), {}))
    sub = type("Legacy", (nn.Module,), {})
    show(lambda: (isinstance(nn.Container(), nn.Module), list(nn.Container(a=nn.Linear(1, 1)).state_dict()), sub()))
    made = []
    show(lambda: made.append(nn.NLLLoss2d(weight=torch.tensor([1.0, 2.0, 0.5]), ignore_index=1)))
    loss = made[0]
    show(lambda: (repr(loss), isinstance(loss, nn.NLLLoss), loss.ignore_index, loss.reduction))
    show(lambda: nn.NLLLoss2d(size_average=False).reduction)
    lp = torch.log_softmax(torch.arange(24.).view(2, 3, 2, 2).sin(), 1).requires_grad_()
    t = torch.tensor([[[0, 1], [2, 2]], [[1, 0], [0, 2]]])
    for lo in (loss, nn.NLLLoss(reduction="none")):
        out = lo(lp, t)
        show(lambda out=out: (out.grad_fn.name(), _r(out), _r(torch.autograd.grad(out.sum(), lp)[0])))
    # spatial inputs are PyTorch's nll_loss2d (any other than 4D viewed as 4D), its errors
    for f in [lambda: loss(lp, t[:, :1]), lambda: loss(lp, t[0]), lambda: nn.NLLLoss()(lp, t.flatten(1)),
              lambda: nn.NLLLoss(weight=torch.ones(2))(lp, t), lambda: nn.NLLLoss(weight=torch.ones(3).double())(lp, t),
              lambda: nn.NLLLoss()(lp, t.to(torch.uint8)), lambda: nn.CrossEntropyLoss(reduction="none")(lp.flatten(2), t.flatten(1)),
              lambda: nn.NLLLoss(weight=torch.ones(3, requires_grad=True))(lp.flatten(2), t.flatten(1)),
              lambda: nn.CrossEntropyLoss()(lp.flatten(2), t[:, :1].flatten(1))]:
        show(lambda f=f: (lambda o: (o.grad_fn.name(), _r(o)))(f()))
    # SyncBatchNorm: BatchNorm's computation with no process group, in training and in eval
    bn = nn.SyncBatchNorm(3, momentum=None)
    show(lambda: (repr(bn), repr(nn.SyncBatchNorm(2, affine=False, track_running_stats=False, bias=False)),
                  bn.process_group, list(bn.state_dict())))
    z = (torch.arange(12.).view(2, 3, 2).cos() * 3).requires_grad_()
    for _ in range(2):
        y = bn(z)
        show(lambda y=y: (y.grad_fn.name(), _r(y), _r(bn.running_mean), _r(bn.running_var), bn.num_batches_tracked))
    show(lambda: _r(torch.autograd.grad((y * torch.arange(12.).view(2, 3, 2)).sum(), z)[0]))
    bn.eval()
    show(lambda: (_r(bn(z)), bn.num_batches_tracked, _r(bn(z.view(2, 3, 1, 2, 1)))))
    bn.train()
    for f in [lambda: bn(z[0, 0]), lambda: bn(torch.ones(2, 0, 4)), lambda: bn(torch.ones(1, 3)),
              lambda: (bn.num_batches_tracked, tuple(bn(torch.ones(2, 3, 1, 1, 2)).shape))]:
        show(f)
    net = nn.Sequential(nn.Conv2d(2, 3, 1), nn.BatchNorm2d(3), nn.Sequential(nn.BatchNorm1d(3, affine=False).eval()),
                        nn.InstanceNorm2d(3))
    conv = nn.SyncBatchNorm.convert_sync_batchnorm(net)
    show(lambda: (repr(conv), conv is net, conv[1].weight is net[1].weight, conv[1].running_mean is net[1].running_mean,
                  conv[2][0].training, type(conv[2][0]).__name__, conv[1].process_group))
    show(lambda: repr(nn.SyncBatchNorm.convert_sync_batchnorm(nn.BatchNorm3d(4, eps=0.1, bias=False))))


def _transcript(torch):
    out = []
    show = shower(out, warns=True)
    for part in (_unpool, _rrelu, _lppool, _alpha, _amp3d, _mlm, _triplet, _asm, _fractional, _aliases,
                 _legacy):
        part(torch, show)
    return out


def test_nn_more_modules_transcript():
    check_transcript(_transcript(funcgrad), json.loads(FIXTURE.read_text()))


def test_nn_more_modules_transcript_is_pytorchs():
    check_transcript(torch_transcript(_transcript), json.loads(FIXTURE.read_text()))


def test_nn_more_modules_paths():
    import funcgrad.nn.functional as F
    from funcgrad.nn.modules.adaptive import AdaptiveLogSoftmaxWithLoss, _ASMoutput
    assert AdaptiveLogSoftmaxWithLoss is funcgrad.nn.AdaptiveLogSoftmaxWithLoss and _ASMoutput._fields == ("output",
                                                                                                         "loss")
    for name in ["max_unpool1d", "max_unpool2d", "max_unpool3d", "rrelu", "rrelu_", "lp_pool3d",
                 "feature_alpha_dropout", "adaptive_max_pool3d", "multilabel_margin_loss",
                 "triplet_margin_with_distance_loss", "fractional_max_pool2d", "fractional_max_pool3d",
                 "fractional_max_pool2d_with_indices", "fractional_max_pool3d_with_indices"]:
        assert callable(getattr(F, name))


def test_compiled_steps_draw_as_eager():
    """Under ``funcgrad.jit`` the draws (feature_alpha_dropout's noise, fractional pooling's
    samples) and the deterministic kernels give eager's numbers; rrelu in training, whose draws
    depend on the values, refuses to trace with its reason."""
    F = funcgrad.nn.functional

    def f(x):
        h = F.feature_alpha_dropout(x, 0.3, True)
        o, i = F.max_pool2d(h, 2, return_indices=True)
        return F.fractional_max_pool2d(F.max_unpool2d(o, i, 2), 2, output_size=3).sum() + F.rrelu(x).sum()

    x = funcgrad.randn(2, 3, 6, 6)
    outs = []
    for step in (f, funcgrad.jit(f)):
        funcgrad.manual_seed(1)
        outs.append((step(x).item(), funcgrad.rand(2).tolist()))
    assert outs[0] == outs[1]
    with pytest.raises(TracedValueError, match="rrelu in training"):
        funcgrad.jit(lambda x: F.rrelu(x, training=True).sum())(x)


def _sync_bn_with_group(torch, init, destroy):
    init()
    try:
        bn = torch.nn.SyncBatchNorm(3)
        x = torch.arange(6.).view(2, 3)
        out = []
        try:
            bn(x)
        except ValueError as e:
            out.append(str(e))
        out.append(int(bn.num_batches_tracked))  # (counted before the device check)
        out.append(_r(bn.eval()(x)))
        bn.train()
        bn.running_mean = bn.running_var = None
        bn.track_running_stats = False
        out.append(_r(bn.eval()(x)))  # eval without running stats: batch statistics, no device check
        return out
    finally:
        destroy()


def test_sync_batchnorm_with_a_process_group():
    """With a process group initialized (one process), PyTorch's SyncBatchNorm refuses a CPU input
    in training, after counting the batch; in eval it normalizes with the running statistics."""
    dist = funcgrad.distributed
    got = _sync_bn_with_group(funcgrad, lambda: dist.init_process_group(world_size=1), dist.destroy_process_group)
    assert got == ["SyncBatchNorm expected input tensor to be on GPU or XPU or privateuseone", 1,
                   [0.0, 1.0, 2.0, 3.0, 4.0, 5.0], [-1.0, -1.0, -1.0, 1.0, 1.0, 1.0]]
    assert not dist.is_initialized()
    torch = pytest.importorskip("torch")
    tdist = torch.distributed
    assert got == _sync_bn_with_group(
        torch, lambda: tdist.init_process_group("gloo", store=tdist.HashStore(), world_size=1, rank=0),
        tdist.destroy_process_group)
