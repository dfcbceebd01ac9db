"""Cases recorded from PyTorch for tests/test_names3.py (each ``case(lib)`` gives a NumPy array,
for ``lib`` funcgrad or torch): window functions at each floating dtype, the complex functions'
values and their gradients through real inputs, ``angle`` of real numbers and its gradient;
gcd/lcm, fill_diagonal_, unravel_index, and the scatters' gradients through inner/sum_to_size.
``TOLERANCE`` names the cases not compared bit for bit (float32 ``cos``/``i0``: XLA's vs
Sleef's/Cephes' last bit)."""

from __future__ import annotations

import numpy as np

_LENGTHS = (0, 1, 2, 3, 5, 8, 17, 64, 101)
_WINDOWS = {"hann": {}, "hamming": {}, "hamming_ab": dict(alpha=0.5, beta=0.3), "blackman": {},
            "bartlett": {}, "kaiser": {}, "kaiser_beta": dict(beta=5.5)}


def _window(lib, kind, dt):
    name, kw = kind.split("_")[0] + "_window", _WINDOWS[kind]
    ws = [getattr(lib, name)(n, periodic, dtype=getattr(lib, dt), **kw) for n in _LENGTHS for periodic in (True, False)]
    # (float16/bfloat16 exactly as float32; the lengths are those of _LENGTHS, periodic or not)
    return np.concatenate([(w if dt == "float64" else w.float()).numpy() for w in ws])


def _window_cases():
    cases = {}
    for kind in _WINDOWS:
        for dt in ("float32", "float64", "float16", "bfloat16"):
            cases[f"{kind}_window_{dt}"] = (lambda lib, kind=kind, dt=dt: _window(lib, kind, dt))
    return cases


def complex_values(lib):
    a = lib.tensor([1.5, -2.0, 0.0, 3.25], dtype=lib.float64)
    b = lib.tensor([0.5, 4.0, -1.0, -0.0], dtype=lib.float64)
    z = lib.complex(a, b)
    p = lib.polar(a.abs(), b)
    parts = [lib.view_as_real(z), lib.view_as_real(p), lib.view_as_real(z.conj().resolve_conj()),
             lib.view_as_real(lib.conj_physical(z)), lib.angle(z), lib.angle(p),
             lib.view_as_real(lib.view_as_complex(lib.stack([a, b], -1).reshape(2, 2, 2)))]
    return np.concatenate([t.numpy().ravel() for t in parts])


def complex_grads(lib):
    a = lib.tensor([1.5, -2.0, 0.25, 3.0], requires_grad=True)
    b = lib.tensor([0.5, 4.0, -1.0, 2.0], requires_grad=True)
    x = lib.tensor([[0.3, -1.2], [2.0, 0.7]], requires_grad=True)
    w = lib.tensor([[1.0, -2.0], [0.5, 3.0], [-1.5, 0.25], [2.0, 1.0]])
    z = lib.complex(a, b) * lib.polar(b.abs() + 0.5, a)
    loss = (lib.view_as_real(z.conj().resolve_conj()) * w).sum() + lib.angle(z).sum() + (lib.view_as_complex(x) ** 2).abs().sum()
    loss.backward()
    return np.concatenate([a.grad.numpy(), b.grad.numpy(), x.grad.numpy().ravel()])


def angle_real(lib):
    x = lib.tensor([1.0, -2.0, 0.0, -0.0, float("nan"), float("inf"), -float("inf")], requires_grad=True)
    y = lib.angle(x)
    (y * lib.tensor([1.0, 2.0, 3.0, 4.0, float("nan"), 5.0, 6.0])).sum().backward()
    ints = lib.angle(lib.tensor([3, -1, 0]))
    return np.concatenate([y.detach().numpy(), x.grad.numpy(), ints.numpy()])


def integer_names(lib):
    a, b = lib.tensor([12, 18, -4, 0, 0, 7, -2**62]), lib.tensor([8, 27, 6, 0, 5, -3, 0])
    x = lib.zeros(7, 3, dtype=lib.long)
    cube = lib.zeros(3, 3, 3, dtype=lib.long)
    return np.concatenate([lib.gcd(a, b).numpy(), lib.lcm(a[:6], b[:6]).numpy(), a.clone().gcd_(b).numpy(),
                           x.fill_diagonal_(5, wrap=True).numpy().ravel(), cube.fill_diagonal_(2).numpy().ravel(),
                           lib.zeros(7, 3, dtype=lib.long).fill_diagonal_(4).numpy().ravel(),
                           *[t.numpy().ravel() for t in lib.unravel_index(lib.tensor([[4, 1], [7, -1]]), (2, 3))],
                           *[t.numpy() for t in lib.unravel_index(lib.tensor([13, 0, 59]), (3, 4, 5))]])


def scatter_grads(lib):
    x = lib.tensor(np.linspace(-1, 1, 24).reshape(2, 3, 4), requires_grad=True)
    src_d = lib.tensor(np.linspace(0, 1, 6).reshape(2, 3), requires_grad=True)
    src_s = lib.tensor(np.linspace(2, 3, 8).reshape(2, 4), requires_grad=True)
    src_l = lib.tensor(np.linspace(-3, 3, 12).reshape(2, 3, 2), requires_grad=True)
    y = lib.diagonal_scatter(x, src_d, 0, 1, 2)
    y = lib.select_scatter(y * y, src_s, 1, -2)
    y = lib.slice_scatter(y.sin(), src_l, 2, 1, None, 2)
    y = y.masked_scatter(y > 0.3, (src_l * 3).flatten())
    z = y.clone()
    z[0].fill_diagonal_(0.5)
    w = lib.tensor(np.linspace(1, 2, 24).reshape(2, 3, 4))
    s = (z * w).sum_to_size(1, 3, 1)
    loss = (s * lib.tensor([[[1.0], [2.0], [-1.0]]])).sum() + lib.inner(z, w).sum()
    loss.backward()
    return np.concatenate([t.numpy().ravel() for t in (y.detach(), s.detach(), x.grad, src_d.grad, src_s.grad,
                                                      src_l.grad)])


_SIGNAL = ("bartlett", "blackman", "cosine", "exponential", "gaussian", "hamming", "hann", "kaiser", "nuttall")


def _signal(lib, name, dt):
    mod = __import__(lib.__name__ + ".signal.windows", fromlist=["windows"])
    kw = {"exponential": dict(tau=0.7), "gaussian": dict(std=1.7), "kaiser": dict(beta=5.0)}.get(name, {})
    return np.concatenate([getattr(mod, name)(M, sym=sym, dtype=getattr(lib, dt), **kw).numpy()
                           for M in _LENGTHS for sym in (True, False)])


def _signal_cases():
    return {f"signal_{name}_{dt}": (lambda lib, name=name, dt=dt: _signal(lib, name, dt))
            for name in _SIGNAL for dt in ("float32", "float64")}


CASES = {**_window_cases(), **_signal_cases(), **{f.__name__: f for f in (complex_values, complex_grads, angle_real, integer_names,
                                                       scatter_grads)}}

# float32 cos (hann/hamming/blackman) may differ from PyTorch's (Sleef's) in its last bit: at most
# float32's eps on values in [0, 1]; kaiser's I0 is jax's, not PyTorch's Cephes code: a few ulps of
# the float32 result, 1e-15 at float64 (float16/bfloat16 round to PyTorch's values)
TOLERANCE = {name: 2 ** -23 for name in CASES if name.endswith("_float32") and not name.startswith("bartlett")}
TOLERANCE.update({"kaiser_window_float32": 2 ** -21, "kaiser_beta_window_float32": 2 ** -21,
                  "kaiser_window_float64": 4e-15, "kaiser_beta_window_float64": 4e-15, "complex_grads": 1e-6,
                  "scatter_grads": 1e-12})
# signal.windows are PyTorch's Python composites over linspace/sin/cos/exp/i0: funcgrad's linspace
# (jnp.linspace) and those functions round differently from PyTorch's in the last bits
TOLERANCE.update({f"signal_{name}_{dt}": 4e-6 if dt == "float32" else 1e-14 for name in _SIGNAL
                  for dt in ("float32", "float64")})
