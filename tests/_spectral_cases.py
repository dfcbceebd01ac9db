"""The rows of tests/test_stft.py and tests/test_as_strided.py: each a call run with ``L`` (``torch`` or
``funcgrad``) on fresh inputs; its outcome, recorded from PyTorch 2.13 in tests/fixtures/spectral/ by
make_fixtures.py there: the result's dtype, shape, node name, values, the leaves' gradients of a fixed
cotangent, the warnings raised (PyTorch's "(Triggered internally ...)" tail cut), or the exception's
type and message; and the inputs after the call (a refused call must leave them as they were)."""

from __future__ import annotations

import warnings

import numpy as np

RNG = np.random.default_rng(0)
SIG = RNG.standard_normal(40)
SIG2 = RNG.standard_normal((2, 33))
CSIG = RNG.standard_normal(24) + 1j * RNG.standard_normal(24)
HANN8 = np.hanning(10)[1:-1]


def _leaf(L, a, grad=True, dtype=None):
    t = L.tensor(a, dtype=dtype)
    return t.requires_grad_() if grad else t


def _val(t):
    a = t.detach().numpy()
    if np.iscomplexobj(a):
        a = np.stack([a.real, a.imag], -1)
    return a.astype(np.float64).tolist()


def outcome(L, f):
    """``f(L) -> (result, leaves)`` run fresh: the row's outcome (see the module docstring)."""
    leaves = []
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        try:
            r, leaves = f(L)
        except Exception as e:  # noqa: BLE001  (the error is the outcome)
            return {"error": [type(e).__name__, str(e).replace("funcgrad", "torch")],
                    "warnings": _warnings(w)}
    out = {"dtype": str(r.dtype).split(".")[-1], "shape": list(r.shape),
           "grad_fn": r.grad_fn.name().split("::")[-1] if r.grad_fn is not None else None,
           "values": _val(r), "warnings": _warnings(w)}
    if r.requires_grad:
        n = r.numel() * (2 if r.dtype.is_complex else 1)
        cot = np.linspace(-1.0, 1.5, n)
        cot = cot[0::2] + 1j * cot[1::2] if r.dtype.is_complex else cot
        g = L.tensor(cot.reshape(tuple(r.shape)), dtype=r.dtype)
        r.backward(g)
        out["grads"] = [_val(t.grad) if t.grad is not None else None for t in leaves if t.requires_grad]
    return out


def _warnings(w):
    return [f"{x.category.__name__}: {str(x.message).split(' (Triggered internally')[0]}".replace(
        "funcgrad", "torch") for x in w]


def compare(got: dict, want: dict, rtol32=1e-5, atol32=1e-6) -> None:
    """``got`` is ``want``: exactly, but values and gradients to float32's FFT rounding (float64's
    for a float64 result), the tolerances of tests/test_ops_more.py's FFT rows."""
    assert got.keys() == want.keys(), (got.keys(), want.keys())
    for k in want:
        if k in ("values", "grads"):
            tol = (1e-6, 1e-9) if want.get("dtype") in ("float64", "complex128") else (rtol32, atol32)
            for g, e in (zip(got[k], want[k], strict=True) if k == "grads" else [(got[k], want[k])]):
                assert (g is None) == (e is None), k
                if e is not None:
                    np.testing.assert_allclose(np.asarray(g), np.asarray(e), rtol=tol[0], atol=tol[1], err_msg=k)
        else:
            assert got[k] == want[k], (k, got[k], want[k])


def stft_rows():
    w8 = lambda L: _leaf(L, HANN8, dtype=L.float32)  # noqa: E731
    x = lambda L, grad=True: _leaf(L, SIG, grad, L.float32)  # noqa: E731
    x2 = lambda L: _leaf(L, SIG2, dtype=L.float32)  # noqa: E731

    def call(mk, **kw):
        def f(L):
            a, w = mk(L), w8(L)
            return L.stft(a, 8, window=w, **kw), [a, w]
        return f

    rows = {
        "hann": call(x, return_complex=True),
        "hann_method": lambda L: ((lambda a, w: (a.stft(8, 3, window=w, return_complex=True), [a, w]))(x(L), w8(L))),
        "hop3_winlen6": lambda L: ((lambda a, w: (L.stft(a, 8, 3, 6, w, return_complex=True), [a, w]))(
            x(L), _leaf(L, np.hanning(8)[1:-1], dtype=L.float32))),
        "winlen5_no_window": lambda L: ((lambda a: (L.stft(a, 8, 2, 5, window=L.ones(5), return_complex=True),
                                                     [a]))(x(L))),
        "not_centered": call(x, center=False, return_complex=True),
        "pad_constant": call(x, pad_mode="constant", return_complex=True),
        "pad_replicate": call(x, pad_mode="replicate", return_complex=True),
        "pad_circular": call(x, pad_mode="circular", return_complex=True),
        "normalized": call(x, normalized=True, return_complex=True),
        "two_sided": call(x, onesided=False, return_complex=True),
        "real_pairs": call(x, return_complex=False),
        "batched": call(x2, return_complex=True),
        "batched_not_centered_normalized": call(x2, center=False, normalized=True, return_complex=True),
        "complex_input": lambda L: ((lambda a, w: (L.stft(a, 8, window=w), [a, w]))(
            _leaf(L, CSIG, dtype=L.complex64), w8(L))),
        "align_to_window": lambda L: ((lambda a, w: (L.stft(a, 8, 2, 4, w, center=False, return_complex=True,
                                                          align_to_window=True), [a, w]))(
            x(L), _leaf(L, np.hanning(6)[1:-1], dtype=L.float32))),
        "float64_window": lambda L: ((lambda a, w: (L.stft(a, 8, window=w, return_complex=True), [a, w]))(
            x(L), _leaf(L, HANN8, dtype=L.float64))),
        "no_window": lambda L: ((lambda a: (L.stft(a, 8, return_complex=True), [a]))(x(L))),
        # errors and warnings
        "return_complex_missing": call(x),
        "onesided_complex": lambda L: (L.stft(_leaf(L, CSIG, dtype=L.complex64), 8, window=w8(L),
                                              onesided=True), []),
        "hop0": lambda L: (L.stft(x(L), 8, 0, window=w8(L), return_complex=True), []),
        "winlen_big": lambda L: (L.stft(x(L), 8, win_length=9, window=w8(L), return_complex=True), []),
        "window_size": lambda L: (L.stft(x(L), 8, win_length=4, window=w8(L), return_complex=True), []),
        "window_2d": lambda L: (L.stft(x(L), 8, window=w8(L).view(2, 4), return_complex=True), []),
        "n_fft_big": lambda L: (L.stft(x(L), 50, window=L.ones(50), center=False, return_complex=True), []),
        "n_fft_zero": lambda L: (L.stft(x(L), 0, window=L.ones(1), return_complex=True), []),
        "three_dims": lambda L: (L.stft(x(L).view(1, 1, 40), 8, window=w8(L), center=False,
                                        return_complex=True), []),
        "int_input": lambda L: (L.stft(L.arange(40), 8, window=w8(L), return_complex=True), []),
        "pad_mode_bad": call(x, pad_mode="bogus", return_complex=True),
        "align_centered": call(x, return_complex=True, align_to_window=True),
    }
    S = lambda L, **kw: L.stft(L.tensor(SIG, dtype=L.float32), 8, window=L.tensor(HANN8, dtype=L.float32),  # noqa
                               return_complex=True, **kw)

    def inv(**kw):
        def f(L):
            s, w = S(L).requires_grad_(), _leaf(L, HANN8, dtype=L.float32)
            return L.istft(s, 8, window=w, **kw), [s, w]
        return f
    rows.update({
        "istft": inv(),
        "istft_method": lambda L: ((lambda s, w: (s.istft(8, window=w), [s, w]))(
            S(L).requires_grad_(), _leaf(L, HANN8, dtype=L.float32))),
        "istft_length": inv(length=37),
        "istft_length_long": inv(length=45),
        "istft_not_centered": lambda L: ((lambda s, w: (L.istft(s, 8, window=w, center=False, length=36), [s, w]))(
            S(L, center=False).requires_grad_(), _leaf(L, HANN8 + 0.1, dtype=L.float32))),
        "istft_normalized": lambda L: ((lambda s, w: (L.istft(s, 8, window=w, normalized=True), [s, w]))(
            S(L, normalized=True).requires_grad_(), _leaf(L, HANN8, dtype=L.float32))),
        "istft_two_sided": lambda L: ((lambda s, w: (L.istft(s, 8, window=w, onesided=False), [s, w]))(
            S(L, onesided=False).requires_grad_(), _leaf(L, HANN8, dtype=L.float32))),
        "istft_return_complex": lambda L: ((lambda s, w: (L.istft(s, 8, window=w, return_complex=True), [s, w]))(
            S(L, onesided=False).requires_grad_(), _leaf(L, HANN8, dtype=L.float32))),
        "istft_batched": lambda L: ((lambda s: (L.istft(s, 8, window=L.tensor(HANN8, dtype=L.float32)), [s]))(
            L.stft(L.tensor(SIG2, dtype=L.float32), 8, window=L.tensor(HANN8, dtype=L.float32),
                   return_complex=True).requires_grad_())),
        "istft_no_window": lambda L: ((lambda s: (L.istft(s, 8, 2), [s]))(
            L.stft(L.tensor(SIG, dtype=L.float32), 8, 2, window=L.ones(8), return_complex=True).requires_grad_())),
        "istft_nola": inv(center=False),
        "istft_nola_error": lambda L: (L.istft(S(L), 8, window=L.hann_window(8), center=False), []),
        "istft_real": lambda L: (L.istft(S(L).real, 8), []),
        "istft_onesided_complex": inv(return_complex=True),
        "istft_freq": lambda L: (L.istft(S(L), 8, window=L.ones(8), onesided=False), []),
        "istft_freq_onesided": lambda L: (L.istft(S(L), 10, window=L.ones(10), onesided=True), []),
        "istft_hop": lambda L: (L.istft(S(L), 8, hop_length=9, window=L.ones(8)), []),
        "istft_window": lambda L: (L.istft(S(L), 8, window=L.ones(7)), []),
        "istft_winlen": lambda L: (L.istft(S(L), 8, win_length=9), []),
        "istft_empty": lambda L: (L.istft(S(L)[:0], 8, window=L.ones(8)), []),
        "istft_1d": lambda L: (L.istft(S(L)[0], 8, window=L.ones(8)), []),
        "istft_4d": lambda L: (L.istft(S(L).view(1, 1, 5, 21), 8, window=L.ones(8)), []),
    })
    return rows


def as_strided_rows():
    a6 = lambda L: _leaf(L, np.arange(6.0))  # noqa: E731

    def base(L):
        t = L.arange(12.0).view(3, 4)
        return t

    def write(L):  # writes through as_strided views reach the base (and a later view of them)
        b = base(L)
        y = b.t().as_strided((2, 2), (4, 1), 5)
        y.mul_(10)
        y[1].zero_()
        return b, []

    def grad_through_write(L):
        a = a6(L)
        h = a * 2
        w = h.as_strided((3,), (2,))
        w.mul_(L.tensor([1.0, 2.0, 3.0]))
        return h, [a]

    def inplace(L):
        a = a6(L)
        b = a * 1
        r = b.as_strided_((3,), (2,), 1)
        assert r is b
        return b, [a]

    def inplace_view(L):
        c = L.arange(6.0)
        v = c[1:]
        v.as_strided_((2,), (2,), 0)
        v[0] = 9.0
        return L.stack([c[:2], v]), []

    def inplace_root(L):
        c = L.arange(6.0)
        c.as_strided_((2, 2), (1, 2))
        c[1, 1] = 7.0
        return L.tensor(list(c.stride()) + [c.storage_offset(), int(c.is_contiguous())] + c.flatten().tolist()), []

    def layout(L):
        y = L.arange(12.0).view(3, 4)[1:].as_strided((2, 3), (3, 1), 5)
        z = y[1, 1:]
        return L.tensor(list(y.stride()) + [y.storage_offset()] + list(z.stride()) + [z.storage_offset()]), []

    return {
        "basic": lambda L: ((lambda a: (a.as_strided((2, 3), (1, 1), 1), [a]))(a6(L))),
        "function": lambda L: ((lambda a: (L.as_strided(a, (3, 2), (0, 2)), [a]))(a6(L))),
        "overlapping_out": lambda L: ((lambda a: (a.as_strided((4, 3), (1, 1)), [a]))(a6(L))),
        "from_view_offset": lambda L: ((lambda a: (a[2:].as_strided((4,), (1,)), [a]))(a6(L))),
        "from_view_outside": lambda L: ((lambda a: (a[2:].as_strided((3,), (1,), 0), [a]))(a6(L))),
        "from_transpose": lambda L: ((lambda a: (a.view(2, 3).t().as_strided((2, 2), (1, 3)), [a]))(a6(L))),
        "overlapping_in": lambda L: ((lambda a: (a.expand(2, 6).as_strided((2, 3), (1, 1), 1), [a]))(a6(L))),
        "empty": lambda L: ((lambda a: (a.as_strided((0, 3), (1, 1), 6), [a]))(a6(L))),
        "scalar": lambda L: ((lambda a: (a.as_strided((), (), 5), [a]))(a6(L))),
        "int": lambda L: (L.arange(6).as_strided((2, 2), (2, 1), 1), []),
        "write": write,
        "grad_through_write": grad_through_write,
        "inplace": inplace,
        "inplace_view": inplace_view,
        "inplace_root": inplace_root,
        "layout": layout,
        "scatter": lambda L: ((lambda s, t: (L.as_strided_scatter(s, t, (3,), (2,), 1), [s, t]))(
            a6(L), _leaf(L, [7.0, 8.0, 9.0]))),
        "scatter_method_2d": lambda L: ((lambda s, t: (s.as_strided_scatter(t, (2,), (1,), 3), [s, t]))(
            _leaf(L, np.arange(6.0).reshape(2, 3)), _leaf(L, [7.0, 8.0]))),
        "scatter_cast": lambda L: (L.zeros(6).as_strided_scatter(L.ones(3, dtype=L.float64), (3,), (1,), 1), []),
        "scatter_of_view": lambda L: (L.zeros(6)[1:].as_strided_scatter(L.ones(2), (2,), (1,), 0), []),
        "scatter_of_view_default": lambda L: ((lambda s, t: (s[2:].as_strided_scatter(t, (2,), (2,)), [s, t]))(
            a6(L), _leaf(L, [7.0, 8.0]))),
        # errors: a refused call leaves its inputs as they were (checked by the test)
        "err_mismatch": lambda L: (L.arange(10.0).as_strided((3, 3), (1,)), []),
        "err_negative_stride": lambda L: (L.arange(10.0).as_strided((3,), (-1,)), []),
        "err_negative_offset": lambda L: (L.arange(10.0).as_strided((3,), (1,), -1), []),
        "err_negative_size": lambda L: (L.arange(10.0).as_strided((-1,), (1,)), []),
        "err_bounds": lambda L: (L.arange(10.0).as_strided((4,), (3,), 1), []),
        "err_bounds_offset": lambda L: (L.arange(10.0).as_strided((3,), (1,), 8), []),
        "err_bounds_view": lambda L: (L.arange(10.0)[5:].as_strided((6,), (1,)), []),
        "err_bounds_double": lambda L: (L.arange(10.0, dtype=L.float64).view(2, 5).as_strided((3, 4), (4, 1)), []),
        "err_inplace_leaf": lambda L: (a6(L).as_strided_((3,), (2,)), []),
        "err_scatter_size": lambda L: (L.as_strided_scatter(L.zeros(6), L.ones(2), (3,), (2,), 1), []),
        "err_scatter_bounds": lambda L: (L.zeros(6).as_strided_scatter(L.ones(3), (3,), (2,), 5), []),
        "err_scatter_overlap": lambda L: (L.zeros(6).as_strided_scatter(L.ones(3), (3,), (0,), 1), []),
    }
