"""Complex numbers as PyTorch 2.13 treats them, beyond ``.backward()`` (tests/test_complex_grad.py):

- ``autograd.functional`` (``vjp``, ``jvp``, ``jacobian``, ``hessian``, ``hvp``, ``vhp``; with
  ``create_graph``/``strict``/``vectorize``/``strategy``) and ``funcgrad.func`` (``grad``,
  ``grad_and_value``, ``vjp``, ``jvp``, ``linearize``, ``jacrev``, ``jacfwd``, ``hessian``, ``vmap``)
  on complex-to-real, complex-to-complex (holomorphic or not), real-to-complex functions and a mix
  of complex and real inputs: PyTorch's gradients are the conjugates of JAX's; PyTorch refuses an
  implicit gradient of a complex output, ``jacrev``/``jacfwd`` of complex tensors, and a
  non-vectorized forward-mode ``jacobian``.
- random draws on complex dtypes (``randn``, ``rand``, ``*_like``, ``normal``, ``uniform_``,
  ``normal_``) and the samplers PyTorch refuses for them, with its messages. (Their values bit for
  bit at many sizes: the complex cases of tests/_rng_cases.py, in tests/test_random.py.)

Each transcript line is a result (dtype, shape, values rounded to 4 decimals) or an error;
``tests/fixtures/complex_parity/transcripts.json`` holds PyTorch's, recorded by its
``make_fixtures.py``, and is compared with PyTorch live where it is installed. Left out: rows where
PyTorch 2.13 fails an internal assert (a forward-mode ``jacobian``/``hessian`` of complex inputs
with complex outputs) and, for now, the engine path's double-backward trick on complex tensors
(``jvp``/``hvp`` with ``create_graph``/``strict``: see ``test_double_backward_through_a_cotangent``).
"""

# ruff: noqa: B023  (show() calls each row's lambda at once, in its own loop iteration)
from __future__ import annotations

import json
import pathlib

import pytest

import funcgrad

from ._rows import check_transcript, torch_transcript

FIXTURE = pathlib.Path(__file__).parent / "fixtures" / "complex_parity" / "transcripts.json"


def _r(v):
    if isinstance(v, complex):
        return complex(round(v.real, 4), round(v.imag, 4)) + 0  # (+ 0: no negative zero)
    if isinstance(v, float):
        return round(v, 4) + 0
    if isinstance(v, list):
        return [_r(x) for x in v]
    return v


def _desc(r) -> str:
    if hasattr(r, "tolist") and hasattr(r, "dtype"):
        return (f"{str(r.dtype).split('.')[-1]}{list(r.shape)} {_r(r.tolist())}"
                + (" requires_grad" if r.requires_grad else ""))
    if isinstance(r, (tuple, list)):
        return "(" + ", ".join(_desc(x) for x in r) + ")"
    return repr(r)


def _shower(out: list):
    def show(name, f):
        try:
            line = _desc(f())
        except Exception as e:  # noqa: BLE001  (the error is the transcript's line)
            line = f"ERR {type(e).__name__} {e}"
        out.append(f"{name}: {line}".replace("funcgrad", "torch"))
    return show


def autograd_transcript(m) -> list:
    out = []
    show = _shower(out)
    F, A = m.func, m.autograd.functional
    z = m.tensor([1 + 2j, 3 - 1j, -0.5 + 0.25j])
    w = m.tensor([0.5 + 1j, 2 - 3j, 1 + 0j])
    v = m.tensor([1 - 1j, 0.5 + 2j, -1 + 0.5j])
    x = m.tensor([1.0, -2.0, 0.5])
    xr = m.tensor([0.3, 1.5, -1.0])
    c2r = lambda z: (z.abs() ** 2).sum()  # noqa: E731
    c2r_b = lambda z: ((z * w).real * (z * z).imag).sum()  # noqa: E731
    c2rv = lambda z: (z * w).real * z.abs()  # noqa: E731
    c2c = lambda z: z * w + z.conj() ** 2  # noqa: E731
    holo = lambda z: z ** 2 * w  # noqa: E731
    r2c = lambda x: m.complex(x, x * 2) * w + x * x  # noqa: E731
    r2c_s = lambda x: (x * w).sum()  # noqa: E731
    c2c_s = lambda z: (z.conj() * z * w).sum()  # noqa: E731
    two = lambda z, x: ((z * x).abs() ** 2).sum()  # noqa: E731
    for cg, st in ((False, False), (True, False), (False, True)):
        k = f"[create_graph={cg},strict={st}]"
        kw = dict(create_graph=cg, strict=st)
        show(f"A.vjp c2r{k}", lambda: A.vjp(c2r, z, **kw))
        show(f"A.vjp c2r_b{k}", lambda: A.vjp(c2r_b, z, **kw))
        show(f"A.vjp c2c v{k}", lambda: A.vjp(c2c, z, v, **kw))
        show(f"A.vjp holo v{k}", lambda: A.vjp(holo, z, v, **kw))
        show(f"A.vjp c2rv v{k}", lambda: A.vjp(c2rv, z, xr, **kw))
        show(f"A.vjp r2c v{k}", lambda: A.vjp(r2c, x, v, **kw))
        show(f"A.vjp r2c_s{k}", lambda: A.vjp(r2c_s, x, **kw))
        show(f"A.vjp c2c_s{k}", lambda: A.vjp(c2c_s, z, **kw))
        show(f"A.vjp two{k}", lambda: A.vjp(two, (z, x), **kw))
        if not (cg or st):  # (the engine's double-backward trick: see the module's docstring)
            show(f"A.jvp c2c{k}", lambda: A.jvp(c2c, z, v, **kw))
            show(f"A.jvp c2r{k}", lambda: A.jvp(c2r, z, v, **kw))
            show(f"A.jvp r2c{k}", lambda: A.jvp(r2c, x, xr, **kw))
            show(f"A.jvp holo{k}", lambda: A.jvp(holo, z, v, **kw))
            show(f"A.hvp c2r_b{k}", lambda: A.hvp(c2r_b, z, v, **kw))
        show(f"A.jacobian c2c{k}", lambda: A.jacobian(c2c, z, **kw))
        show(f"A.jacobian holo{k}", lambda: A.jacobian(holo, z, **kw))
        show(f"A.jacobian r2c{k}", lambda: A.jacobian(r2c, x, **kw))
        show(f"A.jacobian c2rv{k}", lambda: A.jacobian(c2rv, z, **kw))
        show(f"A.jacobian two{k}", lambda: A.jacobian(two, (z, x), **kw))
        show(f"A.hessian c2r{k}", lambda: A.hessian(c2r, z, **kw))
        show(f"A.hessian c2r_b{k}", lambda: A.hessian(c2r_b, z, **kw))
        show(f"A.hessian two{k}", lambda: A.hessian(two, (z, x), **kw))
        show(f"A.vhp c2r_b{k}", lambda: A.vhp(c2r_b, z, v, **kw))
        show(f"A.hvp c2c_s{k}", lambda: A.hvp(c2c_s, z, v, **kw))
        show(f"A.vhp c2c_s{k}", lambda: A.vhp(c2c_s, z, v, **kw))
    for vec in (False, True):
        for strat in ("reverse-mode", "forward-mode"):
            k = f"[vectorize={vec},{strat}]"
            if not (vec and strat == "forward-mode"):  # (PyTorch fails an internal assert there)
                show(f"A.jacobian c2c{k}", lambda: A.jacobian(c2c, z, vectorize=vec, strategy=strat))
                show(f"A.hessian c2r_b{k}",
                     lambda: A.hessian(c2r_b, z, vectorize=vec, outer_jacobian_strategy=strat))
            show(f"A.jacobian r2c{k}", lambda: A.jacobian(r2c, x, vectorize=vec, strategy=strat))
            show(f"A.jacobian c2rv{k}", lambda: A.jacobian(c2rv, z, vectorize=vec, strategy=strat))
            show(f"A.jacobian two{k}", lambda: A.jacobian(two, (z, x), vectorize=vec, strategy=strat))
    show("F.grad c2r", lambda: F.grad(c2r)(z))
    show("F.grad c2r_b", lambda: F.grad(c2r_b)(z))
    show("F.grad two", lambda: F.grad(two, argnums=(0, 1))(z, x))
    show("F.grad c2c_s", lambda: F.grad(c2c_s)(z))
    show("F.grad r2c_s", lambda: F.grad(r2c_s)(x))
    show("F.grad vector", lambda: F.grad(c2rv)(z))
    show("F.grad int", lambda: F.grad(lambda z: 3)(z))
    show("F.grad aux", lambda: F.grad(lambda z: (c2r(z), z * 2), has_aux=True)(z))
    show("F.grad_and_value c2r_b", lambda: F.grad_and_value(c2r_b)(z))
    show("F.grad_and_value aux", lambda: F.grad_and_value(lambda z: (c2r(z), z.real), has_aux=True)(z))
    show("F.grad_and_value c2c_s", lambda: F.grad_and_value(c2c_s)(z))
    show("F.vjp c2c", lambda: F.vjp(c2c, z)[1](v))
    show("F.vjp c2c out", lambda: F.vjp(c2c, z)[0])
    show("F.vjp holo", lambda: F.vjp(holo, z)[1](v))
    show("F.vjp r2c", lambda: F.vjp(r2c, x)[1](v))
    show("F.vjp c2rv", lambda: F.vjp(c2rv, z)[1](xr))
    show("F.vjp c2r", lambda: F.vjp(c2r, z)[1](m.tensor(1.0)))
    show("F.vjp two", lambda: F.vjp(two, z, x)[1](m.tensor(2.0)))
    show("F.vjp aux", lambda: F.vjp(lambda z: (c2c(z), z.abs()), z, has_aux=True)[1](v))
    show("F.jvp c2c", lambda: F.jvp(c2c, (z,), (v,)))
    show("F.jvp r2c", lambda: F.jvp(r2c, (x,), (xr,)))
    show("F.jvp c2r", lambda: F.jvp(c2r, (z,), (v,)))
    show("F.linearize c2c", lambda: F.linearize(c2c, z)[1](v))
    show("F.jacrev c2c", lambda: F.jacrev(c2c)(z))
    show("F.jacrev r2c", lambda: F.jacrev(r2c)(x))
    show("F.jacrev c2rv", lambda: F.jacrev(c2rv)(z))
    show("F.jacrev two", lambda: F.jacrev(two, argnums=1)(z, x))
    show("F.jacrev real then complex", lambda: F.jacrev(two, argnums=0)(x, z))
    show("F.jacfwd c2c", lambda: F.jacfwd(c2c)(z))
    show("F.jacfwd r2c", lambda: F.jacfwd(r2c)(x))
    show("F.jacfwd c2rv", lambda: F.jacfwd(c2rv)(z))
    show("F.hessian c2r", lambda: F.hessian(c2r)(z))
    show("F.vmap grad", lambda: F.vmap(F.grad(c2r_b))(m.stack([z, v])))
    return out


def random_transcript(m) -> list:
    out = []
    show = _shower(out)

    def seeded(f):
        def run():
            m.manual_seed(0)
            return f()
        return run
    for dt in (m.complex64, m.complex128):
        d = str(dt).split(".")[-1]
        e = lambda n=3, dt=dt: m.empty(n, dtype=dt)  # noqa: E731
        for name, f in [
                ("randn", lambda: m.randn(2, 3, dtype=dt)), ("randn 20", lambda: m.randn(20, dtype=dt)),
                ("rand", lambda: m.rand(3, dtype=dt)), ("rand 0", lambda: m.rand(0, dtype=dt)),
                ("randn_like", lambda: m.randn_like(m.zeros(3, dtype=dt))),
                ("rand_like", lambda: m.rand_like(m.zeros(3, dtype=dt))),
                ("randn generator", lambda: m.randn(3, dtype=dt, generator=m.Generator().manual_seed(3))),
                ("rand requires_grad", lambda: m.rand(2, dtype=dt, requires_grad=True)),
                ("normal size", lambda: m.normal(2.0, 0.5, (3,), dtype=dt)),
                ("normal mean", lambda: m.normal(m.full((2,), 1 - 2j, dtype=dt), 0.5)),
                ("normal mean std", lambda: m.normal(m.full((2,), 1 - 2j, dtype=dt), m.full((2,), 3.0))),
                ("uniform_", lambda: e().uniform_()), ("uniform_ -1 2", lambda: e().uniform_(-1, 2)),
                ("uniform_ 2 1", lambda: e().uniform_(2, 1)), ("uniform_ empty 2 1", lambda: e(0).uniform_(2, 1)),
                ("uniform_ inf", lambda: e().uniform_(0, float("inf"))),
                ("normal_", lambda: e().normal_()), ("normal_ 1 2", lambda: e().normal_(1.0, 2.0)),
                ("normal_ std -1", lambda: e().normal_(0, -1)), ("normal_ empty", lambda: e(0).normal_()),
                ("exponential_", lambda: e().exponential_()), ("exponential_ empty", lambda: e(0).exponential_()),
                ("exponential_ -1", lambda: e().exponential_(-1)),
                ("random_", lambda: e().random_()), ("random_ empty", lambda: e(0).random_()),
                ("random_ 5", lambda: e().random_(5)), ("random_ 3 1", lambda: e().random_(3, 1)),
                ("bernoulli_", lambda: e().bernoulli_()), ("bernoulli_ empty", lambda: e(0).bernoulli_(0.5)),
                ("bernoulli_ 2", lambda: e().bernoulli_(2.0)),
                ("bernoulli_ tensor", lambda: e().bernoulli_(m.rand(3))),
                ("bernoulli_ complex p", lambda: m.empty(3).bernoulli_(m.rand(3, dtype=dt))),
                ("bernoulli", lambda: m.bernoulli(m.zeros(3, dtype=dt))),
                ("bernoulli p", lambda: m.bernoulli(m.zeros(3, dtype=dt), 0.5)),
                ("dropout", lambda: m.nn.functional.dropout(m.ones(3, dtype=dt), 0.5)),
                ("cauchy_", lambda: e().cauchy_()), ("cauchy_ -1", lambda: e().cauchy_(0, -1)),
                ("log_normal_", lambda: e().log_normal_()), ("log_normal_ -1", lambda: e().log_normal_(0, -1)),
                ("geometric_", lambda: e().geometric_(0.5)), ("geometric_ 2", lambda: e().geometric_(2)),
                ("randint", lambda: m.randint(0, 5, (3,), dtype=dt)),
                ("randint_like", lambda: m.randint_like(m.zeros(3, dtype=dt), 5)),
                ("multinomial", lambda: m.multinomial(m.ones(3, dtype=dt), 2))]:
            show(f"{name} {d}", seeded(f))
    for dt in (m.int64, m.bool):  # the messages name the dtype as PyTorch does
        d = str(dt).split(".")[-1]
        e = lambda dt=dt: m.empty(3, dtype=dt)  # noqa: E731
        for name, f in [("exponential_", lambda: e().exponential_()), ("cauchy_", lambda: e().cauchy_()),
                        ("log_normal_", lambda: e().log_normal_()), ("normal_", lambda: e().normal_()),
                        ("normal_ std -1", lambda: e().normal_(0, -1)), ("uniform_", lambda: e().uniform_()),
                        ("multinomial", lambda: m.multinomial(m.ones(3, dtype=dt), 2))]:
            show(f"{name} {d}", seeded(f))
    show("geometric_ bool", seeded(lambda: m.empty(3, dtype=m.bool).geometric_(0.5)))
    show("uniform_ float 2.0 1.0", lambda: m.empty(3).uniform_(2.0, 1.0))
    show("uniform_ float16 range", lambda: m.empty(3, dtype=m.float16).uniform_(-60000.0, 60000.0))
    show("uniform_ float -inf", lambda: m.empty(3).uniform_(float("-inf"), 0))
    show("normal_ float std -1.5", lambda: m.empty(3).normal_(0, -1.5))
    show("exponential_ float 0.0", lambda: m.empty(3).exponential_(0.0))
    return out


def outcomes(torch) -> dict:
    """PyTorch's transcripts (``make_fixtures.py`` records them)."""
    return {"autograd": autograd_transcript(torch), "random": random_transcript(torch)}


def _recorded(name: str) -> list:
    return json.loads(FIXTURE.read_text())[name]


@pytest.mark.parametrize("name", ["autograd", "random"])
def test_complex_transcript_is_pytorchs(name):
    script = {"autograd": autograd_transcript, "random": random_transcript}[name]
    check_transcript(script(funcgrad), _recorded(name))


@pytest.mark.torch
@pytest.mark.parametrize("name", ["autograd", "random"])
def test_recorded_transcript_is_pytorchs(name):
    script = {"autograd": autograd_transcript, "random": random_transcript}[name]
    check_transcript(torch_transcript(script), _recorded(name))


def test_complex_randn_has_imaginary_parts_of_half_the_variance():
    funcgrad.manual_seed(0)
    z = funcgrad.randn(100_000, dtype=funcgrad.complex64)
    for part in (z.real, z.imag):
        assert abs(float(part.var()) - 0.5) < 0.01  # each part N(0, 1/2): E|z|² = 1
    assert abs(float((z.abs() ** 2).mean()) - 1.0) < 0.01


def test_double_backward_through_a_cotangent():
    """A double backward of a complex op through its (zero) cotangent keeps the cotangent's
    imaginary part (it was dropped: the +0.0 imaginary part of a real cotangent's gradient was a
    ``where``, whose derivative is zero at zeros; funcgrad/_dispatch.py ``_conj``)."""
    z = funcgrad.tensor([1 + 2j, 3 - 1j], requires_grad=True)
    w = funcgrad.tensor([0.5 + 1j, 2 - 3j])
    u = funcgrad.zeros(2, dtype=funcgrad.complex64, requires_grad=True)
    gi, = funcgrad.autograd.grad(z * w, z, u, create_graph=True)
    r, = funcgrad.autograd.grad(gi, u, funcgrad.tensor([1 - 1j, 0.5 + 2j]))
    assert r.tolist() == [(1.5 + 0.5j), (7 + 2.5j)]  # PyTorch 2.13's: v * w
