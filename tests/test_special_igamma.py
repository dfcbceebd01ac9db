"""``igamma`` / ``igammac`` (``special.gammainc`` / ``gammaincc``, ``Tensor.igamma[_]``...) against
PyTorch 2.13: values at PyTorch's special cases (a or x zero, infinite, negative, nan), dtype
promotion, argument and dtype errors, ``out=``, in-place forms, and the derivative derivatives.yaml
states (``other`` only; ``self``'s raises NotImplementedError when the backward needs it, as
``special.zeta``'s, also checked here).
``tests/fixtures/special_igamma/expected.json`` holds PyTorch's transcript, recorded by
``make_fixtures.py`` there and re-checked live where torch is installed."""

import json
import math
import pathlib

import funcgrad

from ._rows import check_transcript, shower, torch_transcript

FIXTURE = pathlib.Path(__file__).parent / "fixtures" / "special_igamma" / "expected.json"
NAN, INF = math.nan, math.inf
# every pair: PyTorch's special cases, in float64 (values away from them: the spec rows)
_A = [0.0, -0.0, 1.0, -1.0, NAN, INF, 0.5, 3.0]
_X = [0.0, 1.0, INF, NAN, -1.0, 2.5]


def _r(t):
    return [float(f"{v:.10g}") + 0.0 for v in t.detach().double().flatten().tolist()]


def _transcript(torch):
    out = []
    show = shower(out, warns=True)
    T = torch.tensor
    a, x = T([[1.0], [2.5]]), T([0.5, 1.0, 3.0])
    for f in (torch.igamma, torch.igammac, torch.special.gammainc, torch.special.gammaincc):
        show(lambda f=f: f(a, x))
    show(lambda: (a.igamma(x), a.igammac(x)))
    ga = T([u for u in _A for _ in _X], dtype=torch.float64)
    gx = T([v for _ in _A for v in _X], dtype=torch.float64, requires_grad=True)
    for f in (torch.igamma, torch.igammac):
        y = f(ga, gx)
        show(lambda y=y: (y.grad_fn.name(), _r(y)))
        show(lambda y=y: _r(torch.autograd.grad(y, gx, torch.ones_like(y))[0]))
    # promotion: PyTorch's result type, floating only
    for p, q in [(T([1, 2]), T(2.0)), (T([1, 2]), T([1.5, 2.0], dtype=torch.float64)),
                 (T([1.0, 2.0]), T(2)), (T([1.0], dtype=torch.float16), T(2.0, dtype=torch.float64)),
                 (T([0.3, 2.5], dtype=torch.float16), T([2.5, 0.3], dtype=torch.float16)),
                 (T([0.3, 2.5], dtype=torch.bfloat16), T([2.5, 0.3], dtype=torch.bfloat16))]:
        show(lambda p=p, q=q: (torch.igamma(p, q), torch.igammac(p, q)))
    o = torch.zeros(3)
    for f in [lambda: torch.igamma(T([1, 2]), T([1, 2])), lambda: torch.igammac(T([True]), T([True])),
              lambda: torch.igamma(T([1], dtype=torch.int8), T([1], dtype=torch.uint8)),
              lambda: torch.special.gammaincc(T([1]), T([1])), lambda: torch.igamma(T([1.0]), T([2.0 + 0j])),
              lambda: torch.igamma(x, 2.0), lambda: torch.igamma(2.0, x), lambda: torch.igammac(x, 2),
              lambda: torch.special.gammainc(x, 2.0), lambda: torch.special.gammaincc(1, x),
              lambda: x.igamma(2.0), lambda: x.igammac_(2.0), lambda: x.igamma(), lambda: x.igamma(x, x),
              lambda: torch.igamma(T([1.0, 2.0]), x), lambda: torch.igamma(input=x, other=x),
              lambda: (torch.igamma(a, x, out=o), o), lambda: (torch.special.gammaincc(a[0], x, out=o), o),
              lambda: torch.igamma(x, x, out=T([1, 2, 3])),
              lambda: (torch.igamma(x, x, out=torch.zeros(3, dtype=torch.float64)).dtype),
              lambda: torch.igamma(T([1]), T([1]), out=torch.zeros(1))]:
        show(f)
    # in place: self's dtype and shape
    for f in [lambda: x.clone().igamma_(x), lambda: x.clone().igammac_(T(2.0, dtype=torch.float64)),
              lambda: x.double().igamma_(x), lambda: torch.ones(1).igamma_(x), lambda: T([1, 2, 3]).igamma_(x)]:
        show(f)
    show(lambda: x)
    # out= refuses an input requiring grad (PyTorch names igamma for special.gammainc too)
    w = torch.tensor([1.0, 2.0, 0.5], requires_grad=True)
    for f in [lambda: torch.igamma(w, x, out=torch.zeros(3)), lambda: torch.special.gammainc(x, w, out=torch.zeros(3)),
              lambda: torch.special.gammaincc(w, x, out=torch.zeros(3)), lambda: w.igamma_(x)]:
        show(f)
    # derivatives: other's by PyTorch's formula; self's raises when the backward needs it
    for f in (torch.igamma, torch.igammac):
        p = torch.tensor([1.0, 2.0, 0.5], dtype=torch.float64, requires_grad=True)
        q = torch.tensor([0.5, 1.0, 3.0], dtype=torch.float64, requires_grad=True)
        show(lambda f=f, p=p, q=q: f(p, q).sum().backward())
        show(lambda p=p, q=q: (p.grad, q.grad))
        show(lambda f=f, p=p, q=q: torch.autograd.grad(f(p.detach(), q).sum(), q))
        show(lambda f=f, p=p, q=q: torch.autograd.grad(f(p, q.detach()).sum(), p))
        g, = torch.autograd.grad(f(p.detach(), q).sum(), q, create_graph=True)
        show(lambda g=g: (g.grad_fn is not None, _r(g)))
        show(lambda g=g, q=q: _r(torch.autograd.grad(g.sum(), q)[0]))
        y = q * 1
        getattr(y, f.__name__ + "_")(p.detach())
        show(lambda y=y: (y.grad_fn.name(), y._version, _r(y)))
        show(lambda y=y, q=q: _r(torch.autograd.grad(y.sum(), q)[0]))
        y = q * 1
        getattr(y, f.__name__ + "_")(p)
        show(lambda y=y: y.sum().backward())
    # zeta's derivative is not implemented for self either (q's is), also with q a number
    p = torch.tensor([3.0, 2.5], dtype=torch.float64, requires_grad=True)
    q = torch.tensor([2.0, 1.5], dtype=torch.float64, requires_grad=True)
    for y in (torch.special.zeta(p, q), torch.special.zeta(p, 2.0)):
        show(lambda y=y: (y.grad_fn.name(), _r(y)))
        show(lambda y=y: y.sum().backward())
        show(lambda: (p.grad, q.grad))
    for y in (torch.special.zeta(p.detach(), q), torch.special.zeta(3.0, q)):
        show(lambda y=y: (y.grad_fn.name(), _r(torch.autograd.grad(y.sum(), q)[0])))
    return out


def test_igamma_transcript():
    check_transcript(_transcript(funcgrad), json.loads(FIXTURE.read_text()))


def test_igamma_transcript_is_pytorchs():
    check_transcript(torch_transcript(_transcript), json.loads(FIXTURE.read_text()))


def test_igamma_names():
    assert funcgrad.special.gammainc.__name__ == "gammainc" and callable(funcgrad.Tensor.igammac_)
    assert "gammainc" in funcgrad.special.__all__ and "gammaincc" in funcgrad.special.__all__
