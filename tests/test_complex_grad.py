"""Gradients of complex tensors in PyTorch's convention: the conjugate of ``jax.vjp``'s (PyTorch's
``x.grad`` of a real loss is ``∂L/∂x̄``-based: ``(x.abs() ** 2).sum()`` gives ``2x``, JAX's ``2x̄``), on the
fused backward, the node-by-node engine (a hook, ``retain_grad``), ``autograd.grad`` with a
``grad_outputs``, double backward, a real leaf feeding a complex op and ``@``. ``EXPECTED`` was
recorded from PyTorch 2.13 (values rounded to 4 decimals; run on torch too where installed)."""

import pytest

import funcgrad

from ._rows import check_transcript, torch_transcript


def _c(v):
    return [complex(round(z.real, 4), round(z.imag, 4)) + 0 for z in v]  # (+ 0: no negative zero)


def _transcript(torch):
    out = []
    x = torch.tensor([1 + 2j, 3 - 1j], requires_grad=True)
    w = torch.tensor([0.5 + 1j, 2 - 3j])
    for name, f in [("abs2", lambda x: (x.abs() ** 2).sum()), ("real(x*w)", lambda x: (x * w).real.sum()),
                    ("imag(x*w)", lambda x: (x * w).imag.sum()), ("abs(exp)", lambda x: x.exp().abs().sum()),
                    ("real(x@x)", lambda x: (x @ x).real), ("angle", lambda x: x.angle().sum())]:
        x.grad = None
        f(x).backward()
        out.append((name, _c(x.grad.tolist())))
    out.append(("vjp", _c(torch.autograd.grad(x * w, x, torch.tensor([1 + 1j, 2 - 1j]))[0].tolist())))
    x.grad = None
    y = x * w
    y.register_hook(lambda g: g * 2)
    (y.abs() ** 2).sum().backward()
    out.append(("hook", _c(x.grad.tolist())))
    x.grad = None
    z = x * x * w
    z.retain_grad()
    z.real.sum().backward()
    out.append(("retain", _c(x.grad.tolist()), _c(z.grad.tolist())))
    x.grad = None
    g, = torch.autograd.grad((x * x * w).abs().sum(), x, create_graph=True)
    (g.real.sum() + g.imag.sum()).backward()
    out.append(("double", _c(g.tolist()), _c(x.grad.tolist())))
    r = torch.tensor([1.0, 2.0], requires_grad=True)
    (torch.complex(r, r * 2) * w).abs().sum().backward()
    out.append(("real leaf", [round(v, 4) for v in r.grad.tolist()]))
    m = torch.tensor([[1 + 1j, 2j], [3, 1 - 1j]], requires_grad=True)
    (m @ m).sum().abs().backward()
    out.append(("mm", [_c(row) for row in m.grad.tolist()]))
    return out


EXPECTED = [
    ("abs2", [(2 + 4j), (6 - 2j)]), ("real(x*w)", [(0.5 - 1j), (2 + 3j)]), ("imag(x*w)", [(1 + 0.5j), (-3 + 2j)]),
    ("abs(exp)", [(2.7183 + 0j), (20.0855 + 0j)]), ("real(x@x)", [(2 - 4j), (6 + 2j)]),
    ("angle", [(-0.4 + 0.2j), (0.1 + 0.3j)]), ("vjp", [(1.5 - 0.5j), (7 + 4j)]), ("hook", [(5 + 10j), (156 - 52j)]),
    ("retain", [(-3 - 4j), (6 + 22j)], [(1 + 0j), (1 + 0j)]),
    ("double", [(2.2361 + 4.4721j), (21.6333 - 7.2111j)], [(2.2361 + 2.2361j), (7.2111 + 7.2111j)]),
    ("real leaf", [2.5, 8.0623]),
    ("mm", [[(5.5009 + 3.2772j), (2.809 + 7.4906j)], [(4.4476 + 0.4682j), (1.7556 + 4.6816j)]]),
]


def test_complex_gradients_are_pytorchs():
    check_transcript(_transcript(funcgrad), EXPECTED)


@pytest.mark.torch
def test_recorded_transcript_is_pytorchs():
    check_transcript(torch_transcript(_transcript), EXPECTED)


def test_real_gradients_are_untouched():  # (the conjugation is traced only for complex dtypes)
    x = funcgrad.tensor([1.5, -2.0], requires_grad=True)
    (x * x * 3).sum().backward()
    assert x.grad.tolist() == [9.0, -12.0]
