"""Forward-mode AD (``funcgrad.autograd.forward_ad``) as PyTorch's: one script runs the forward-AD
tutorial (https://pytorch.org/tutorials/intermediate/forward_ad_usage.html) and the API's edges
(errors, views and in-place ops on dual tensors, complex tangents, PyTorch's derivatives at
singular points, backward through a tangent) and shows each outcome; its transcript was recorded
from PyTorch 2.13 into tests/fixtures/forward_ad/transcript.json (make_fixtures.py there) and is
checked live where torch is installed. Tangents' own ``grad_fn`` are not shown: PyTorch names
them after the last op of its formula (``MulBackward0``), funcgrad after the op's jvp."""

import json
import os

import pytest

import funcgrad
import funcgrad.autograd.forward_ad as fwAD
from funcgrad import _storage, _tensor

from ._rows import check_transcript, shower, torch_transcript

FIXTURE = os.path.join(os.path.dirname(__file__), "fixtures", "forward_ad", "transcript.json")


def _recorded():
    with open(FIXTURE) as f:
        return json.load(f)


def outcomes(torch):
    fw = torch.autograd.forward_ad
    nn, F = torch.nn, torch.nn.functional
    out = []
    show = shower(out)
    p = torch.tensor([1.0, 2.0, 3.0])
    t = torch.tensor([0.5, -1.0, 2.0])
    # ---- outside a level
    show(lambda: fw.make_dual(p, t))
    show(lambda: fw.unpack_dual(p))
    show(lambda: fw.unpack_dual(p).primal is p)
    show(lambda: fw.exit_dual_level())
    show(lambda: fw.exit_dual_level(level=0))
    with fw.dual_level() as level:
        show(lambda: level)
        x = fw.make_dual(p, t)
        show(lambda: (x, x.is_leaf, x.requires_grad, x.grad_fn, x.data_ptr() == p.data_ptr()))
        u = fw.unpack_dual(x)
        show(lambda: (type(u).__name__, u, u.tangent is t, u.primal is p, u.primal.data_ptr() == p.data_ptr()))
        show(lambda: (fw.unpack_dual(p), fw.unpack_dual(p).primal is p))
        # ---- errors (nothing changed by them)
        show(lambda: fw.make_dual(p, torch.ones(2)))
        show(lambda: fw.make_dual(p, torch.ones(1, 3)))
        show(lambda: fw.make_dual(torch.tensor([1, 2]), torch.ones(2)))
        show(lambda: fw.make_dual(p, torch.tensor([1, 2, 3])))
        show(lambda: fw.make_dual(p, x))
        show(lambda: fw.make_dual(x, t))
        show(lambda: fw.make_dual(p, t, level=1))
        show(lambda: fw.enter_dual_level())
        show(lambda: fw.exit_dual_level(level=3))
        show(lambda: fw.unpack_dual(x))
        # ---- tangents through ops
        y = x * x + x.sin()
        show(lambda: y)
        show(lambda: fw.unpack_dual(y))
        show(lambda: fw.unpack_dual(2.0 * x - 1).tangent)
        show(lambda: fw.unpack_dual(x.argmax()))
        show(lambda: [fw.unpack_dual(r) for r in x.max(0)])
        show(lambda: [fw.unpack_dual(r).tangent for r in (x + torch.tensor([0.0, 5.0, -5.0])).sort()])
        show(lambda: fw.unpack_dual(x.double()))
        show(lambda: fw.unpack_dual(x.long()))
        show(lambda: fw.unpack_dual(x.clone()).tangent)
        show(lambda: (fw.unpack_dual(x.detach()), fw.unpack_dual(x.data)))
        show(lambda: fw.unpack_dual(torch.zeros_like(x)))
        show(lambda: fw.make_dual(torch.tensor(2.0), torch.tensor(3.0)))
        with torch.no_grad():
            show(lambda: fw.unpack_dual(x * 2))
        with torch.inference_mode():
            show(lambda: fw.unpack_dual(x * 2))
        m = fw.make_dual(torch.ones(2, 3), torch.arange(6.0).reshape(2, 3))
        for f in (lambda a: a.T, lambda a: a.reshape(3, 2), lambda a: a[:, 1], lambda a: a.sum(0),
                  lambda a: a.unbind(0)[1], lambda a: torch.cat([a, a * 2]), lambda a: a.mean(),
                  lambda a: a.expand(2, 2, 3)[1], lambda a: a[[1, 0]], lambda a: a[a.T.T > 0],
                  lambda a: torch.stack([a, torch.zeros(2, 3)]), lambda a: a @ torch.ones(3, 2),
                  lambda a: torch.where(torch.tensor([True, False, True]), a, 5.0),
                  lambda a: a.split(1, 1)[2], lambda a: a.cumsum(1), lambda a: a.norm(),
                  lambda a: F.linear(a, torch.ones(4, 3), torch.ones(4)),
                  lambda a: F.cross_entropy(a, torch.tensor([0, 2]))):
            show(lambda f=f: fw.unpack_dual(f(m)).tangent)
        # ---- layouts: the tangent as it is, or a copy laid out as the primal
        mat, tm = torch.ones(3, 4), torch.arange(12.0).reshape(4, 3)
        tT = tm.T
        d = fw.make_dual(mat, tT)
        show(lambda: (fw.unpack_dual(d).tangent is tT, fw.unpack_dual(d).tangent.stride(), fw.unpack_dual(d)))
        d = fw.make_dual(mat.T, tm)
        show(lambda: (fw.unpack_dual(d).tangent is tm, fw.unpack_dual(d).tangent.stride()))
        base = torch.zeros(6)
        d = fw.make_dual(base[2:5], torch.ones(3))
        show(lambda: (fw.unpack_dual(d).tangent.stride(), fw.unpack_dual(d).tangent.storage_offset()))
        # ---- in-place ops and views
        x = fw.make_dual(p, t)
        show(lambda: (x.mul_(2), fw.unpack_dual(x).tangent is t, t, p, x._version))
        z = torch.zeros(3)
        show(lambda: (z.add_(x), fw.unpack_dual(z)))
        show(lambda: (fw.unpack_dual(x[1:]), fw.unpack_dual(x[1:]).tangent.data_ptr() == t.data_ptr() + 4))
        base = torch.zeros(4)
        v = base[:2]
        show(lambda: (v.add_(fw.make_dual(torch.tensor([1.0, 2.0]), torch.tensor([3.0, 4.0]))),
                      fw.unpack_dual(base), fw.unpack_dual(v)))
        base2 = torch.zeros(4)
        v2 = base2[1:3]
        show(lambda: (base2.add_(fw.make_dual(torch.ones(4), torch.arange(4.0))), fw.unpack_dual(v2)))
        x2 = fw.make_dual(torch.ones(3), torch.ones(3))
        show(lambda: (x2.copy_(torch.tensor([5.0, 6, 7])), fw.unpack_dual(x2)))
        x3 = fw.make_dual(torch.ones(3), torch.ones(3))
        show(lambda: (x3.zero_(), fw.unpack_dual(x3)))
        x5 = fw.make_dual(torch.ones(3), torch.ones(3))

        def setitem():
            x5[0] = 7.0
            x5[1] = fw.make_dual(torch.tensor(2.0), torch.tensor(9.0))
            return fw.unpack_dual(x5)
        show(setitem)
        y = fw.make_dual(torch.zeros(3), torch.ones(3)) * 2
        dv = y[1:].detach()
        show(lambda: (y.add_(1), fw.unpack_dual(dv)))
        treq = torch.ones(3, requires_grad=True)
        x4 = fw.make_dual(torch.ones(3), treq)
        show(lambda: x4.mul_(2))
        # ---- complex tangents: the pushforward
        xc = fw.make_dual(torch.tensor([1 + 2j, -0.5 + 1j]), torch.tensor([0.3 - 1j, 2 + 0.5j]))
        for f in (torch.abs, torch.conj, lambda a: a * a, torch.angle, torch.real, torch.imag, torch.exp,
                  torch.sqrt, torch.reciprocal, lambda a: (a * a.conj()).real, lambda a: a.abs() ** 2):
            show(lambda f=f: fw.unpack_dual(f(xc)).tangent)
        # ---- PyTorch's derivatives at singular points
        d0 = fw.make_dual(torch.tensor([0.0, -1.0, 2.0]), torch.ones(3))
        for f in (torch.relu, torch.abs, torch.sqrt, lambda a: a.clamp(min=0), lambda a: a.clamp(max=0),
                  lambda a: torch.maximum(a, torch.zeros(3)), lambda a: torch.minimum(a, torch.zeros(3)),
                  torch.sign, torch.floor, lambda a: a ** 0.5, lambda a: a.max(), lambda a: a.amax(),
                  lambda a: F.hardtanh(a, 0.0, 2.0), lambda a: F.leaky_relu(a, 0.1), torch.nn.functional.elu):
            show(lambda f=f: fw.unpack_dual(f(d0)).tangent)
        show(lambda: fw.unpack_dual(fw.make_dual(torch.zeros(3), torch.ones(3)).norm()).tangent)
        # ---- backward through make_dual and through a tangent
        pr = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
        tr = torch.tensor([0.5, -1.0, 2.0], requires_grad=True)
        x = fw.make_dual(pr, tr)
        show(lambda: (x, fw.unpack_dual(x).primal))
        y = (x * x).sin()
        py, ty = fw.unpack_dual(y)
        show(lambda: (py, ty.requires_grad, ty.grad_fn is not None, ty.is_leaf))

        def back():
            ty.sum().backward()
            return pr.grad, tr.grad
        show(back)
        pr.grad = tr.grad = None
        x = fw.make_dual(pr, tr)

        def back2():
            (x * x).sin().sum().backward()
            return pr.grad, tr.grad
        show(back2)
        q = fw.make_dual(torch.tensor([1.0, 2.0]), torch.tensor([1.0, 1.0], requires_grad=True))
        show(lambda: (q, q.requires_grad, fw.unpack_dual(q.exp()).tangent.requires_grad))
    # ---- after the level
    show(lambda: (fw.unpack_dual(y), fw.unpack_dual(x), x, fw.unpack_dual(y).primal is y))

    @fw.dual_level()
    def decorated():
        return fw.unpack_dual(fw.make_dual(torch.tensor([1.0]), torch.tensor([2.0])).exp()).tangent
    show(decorated)
    show(lambda: fw.unpack_dual(x))
    # ---- the tutorial
    torch.manual_seed(0)
    primal, tangent = torch.randn(10, 10), torch.randn(10, 10)
    with fw.dual_level():
        dual_input = fw.make_dual(primal, tangent)
        show(lambda: fw.unpack_dual(dual_input).tangent is tangent)
        dual_input_alt = fw.make_dual(primal, tangent.T)
        show(lambda: fw.unpack_dual(dual_input_alt).tangent is not tangent)
        plain_tensor = torch.randn(10, 10)
        dual_output = dual_input ** 2 + plain_tensor ** 2
        show(lambda: fw.unpack_dual(dual_output).tangent[:3, :5])
        show(lambda: fw.unpack_dual(dual_input_alt ** 2 + plain_tensor ** 2).tangent[:3, :5])
    show(lambda: fw.unpack_dual(dual_output).tangent is None)
    model = nn.Linear(5, 5)
    inp = torch.randn(16, 5)
    params = dict(model.named_parameters())
    tangents = {name: torch.rand_like(p) for name, p in params.items()}
    with fw.dual_level():
        for name, p in params.items():
            delattr(model, name)
            setattr(model, name, fw.make_dual(p, tangents[name]))
        jvp = fw.unpack_dual(model(inp)).tangent
    show(lambda: jvp[:4])
    model = nn.Linear(5, 5)
    with fw.dual_level():
        dual_params = {name: fw.make_dual(p, tangents[name]) for name, p in params.items()}
        jvp2 = fw.unpack_dual(torch.func.functional_call(model, dual_params, inp)).tangent
    show(lambda: (torch.allclose(jvp, jvp2), jvp2[:4]))
    # ---- a model's input tangent, and backward through it into the parameters
    torch.manual_seed(1)
    net = nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 3), nn.Sigmoid())
    xin, v = torch.randn(5, 4), torch.randn(5, 4)
    with fw.dual_level():
        tn = fw.unpack_dual(net(fw.make_dual(xin, v))).tangent
        show(lambda: (tn.detach(), tn.requires_grad))
        (tn ** 2).sum().backward()
    show(lambda: (net[0].weight.grad[:2], net[2].bias.grad))
    return out


def test_forward_ad_as_pytorch():
    check_transcript(outcomes(funcgrad), _recorded())


@pytest.mark.torch
def test_recorded_transcript_is_pytorchs():
    check_transcript(torch_transcript(outcomes), _recorded())


def test_level_state_is_restored():
    """Leaving a level (also by an exception) restores dispatch's fast paths and drops tangents."""
    active = _storage.ACTIVE[0]
    x0, t0 = funcgrad.ones(2), funcgrad.ones(2)
    with pytest.raises(ZeroDivisionError):
        with fwAD.dual_level():
            assert _storage.ACTIVE[0] == active + 1 and _tensor.DUAL[0] is not None
            x = fwAD.make_dual(x0, t0)
            raise ZeroDivisionError
    assert _storage.ACTIVE[0] == active and _tensor.DUAL[0] is None
    assert fwAD.unpack_dual(x).tangent is None and fwAD._current_level[0] == -1
    with fwAD.dual_level():  # a new level sees no tangent of the old one
        assert fwAD.unpack_dual(x, level=0).tangent is None


def test_refused_inplace_changes_nothing():
    """PyTorch writes the primal before its tangent's in-place op refuses a leaf; here neither is
    written."""
    treq = funcgrad.ones(3, requires_grad=True)
    with fwAD.dual_level():
        x = fwAD.make_dual(funcgrad.tensor([1.0, 2.0, 3.0]), treq)
        with pytest.raises(RuntimeError, match="a leaf Variable that requires grad"):
            x.mul_(2)
        assert x.tolist() == [1.0, 2.0, 3.0] and x._version == 0
        assert fwAD.unpack_dual(x).tangent is treq and treq.tolist() == [1.0, 1.0, 1.0]


def test_tangent_kernels_are_cached_and_jitted(monkeypatch):
    """A tangent is a cached jitted kernel's result: ``jax.jvp`` runs while the kernel is traced,
    never again per call."""
    calls = []
    real = fwAD.jax.jvp
    monkeypatch.setattr(fwAD.jax, "jvp", lambda *a, **k: calls.append(1) or real(*a, **k))
    x0, w = funcgrad.tensor([[0.25, -1.5, 2.0]]), funcgrad.tensor([[0.5, 1.0, -2.0]])
    with fwAD.dual_level():
        for i in range(3):
            x = fwAD.make_dual(x0, funcgrad.ones(1, 3) * (i + 1))
            out = funcgrad.tanh(x * w + 3.17).sum(1, keepdim=True)
            assert fwAD.unpack_dual(out).tangent is not None
            if i == 0:
                first = len(calls)
    assert first > 0 and len(calls) == first
