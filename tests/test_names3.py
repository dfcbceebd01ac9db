"""Names real PyTorch code uses (third names probe): constants, ``vmap``, layouts and memory
formats, ``set_warn_always``, ``is_signed``/``is_inference``, the complex functions and ``angle``,
the window functions. Values against recordings from PyTorch 2.13
(tests/fixtures/names3/make_fixtures.py, so the checks run without torch); reprs, flags, node
names and errors against live PyTorch where it is installed."""

from __future__ import annotations

import copy
import json
import math
import os
import pickle
import warnings

import numpy as np
import pytest

import funcgrad

from ._names3_cases import CASES, TOLERANCE

with open(os.path.join(os.path.dirname(__file__), "fixtures", "names3", "cases.json")) as _f:
    RECORDED = json.load(_f)


def _compare(got, want, name):
    assert got.dtype == want.dtype and got.shape == want.shape, (got.dtype, want.dtype, got.shape, want.shape)
    tol = TOLERANCE.get(name)
    if tol is None:  # bit for bit (nan where PyTorch has nan)
        np.testing.assert_array_equal(got, want)
    else:
        np.testing.assert_allclose(got, want, rtol=tol, atol=tol)


@pytest.mark.parametrize("name", sorted(CASES))
def test_matches_recorded_torch(name):
    _compare(CASES[name](funcgrad), np.array(RECORDED[name]["values"], dtype=RECORDED[name]["dtype"]), name)


@pytest.mark.torch
@pytest.mark.parametrize("name", sorted(CASES))
def test_recording_is_current(name):
    torch = pytest.importorskip("torch")
    want = np.array(RECORDED[name]["values"], dtype=RECORDED[name]["dtype"])
    got = CASES[name](torch)
    assert got.dtype == want.dtype and got.shape == want.shape
    if got.dtype.kind in "iub":
        np.testing.assert_array_equal(got, want)
    else:  # (PyTorch's own last bits may depend on the CPU's vector width: see test_names2_fixtures)
        np.testing.assert_allclose(got, want, rtol=4 * np.finfo(got.dtype).eps, atol=0)


# ================================ without torch ===================================================
def test_constants_and_simple_names():
    assert (funcgrad.pi, funcgrad.e) == (math.pi, math.e) and type(funcgrad.pi) is float
    assert funcgrad.inf == math.inf and math.isnan(funcgrad.nan) and funcgrad.newaxis is None
    assert funcgrad.vmap is funcgrad.func.vmap
    assert funcgrad.ones(2).layout is funcgrad.strided and isinstance(funcgrad.strided, funcgrad.layout)
    assert repr(funcgrad.channels_last) == "funcgrad.channels_last" and repr(funcgrad.strided) == "funcgrad.strided"
    assert repr(funcgrad.memory_format) == "<class 'funcgrad.memory_format'>"
    for v in (funcgrad.strided, funcgrad.contiguous_format, funcgrad.channels_last, funcgrad.channels_last_3d,
              funcgrad.preserve_format):
        assert pickle.loads(pickle.dumps(v)) is v and copy.deepcopy(v) is v


def test_memory_format_is_checked_and_the_result_is_row_major():
    x = funcgrad.randn(2, 3, 4, 5)
    y = x.contiguous(memory_format=funcgrad.channels_last)
    assert y is x and y.stride() == (60, 20, 5, 1)  # (funcgrad's results are row-major)
    nhwc = x.permute(0, 2, 3, 1).contiguous().permute(0, 3, 1, 2)  # a view with channels-last strides
    assert nhwc.stride() == (60, 1, 15, 3) and nhwc.is_contiguous(memory_format=funcgrad.channels_last)
    assert not x.is_contiguous(memory_format=funcgrad.channels_last)
    assert funcgrad.randn(2, 1, 4, 5).is_contiguous(memory_format=funcgrad.channels_last)
    assert x.to(memory_format=funcgrad.channels_last) is x
    assert funcgrad.zeros_like(x, memory_format=funcgrad.channels_last).shape == x.shape
    with pytest.raises(RuntimeError, match="required rank 5 tensor to use channels_last_3d format"):
        x.contiguous(memory_format=funcgrad.channels_last_3d)


def test_set_warn_always_repeats_once_warnings():
    a = funcgrad.ones(2, 2)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        funcgrad.chain_matmul(a, a)  # (its warning may have been given already)
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        funcgrad.chain_matmul(a, a)
        assert not w
        funcgrad.set_warn_always(True)
        try:
            assert funcgrad.is_warn_always_enabled()
            funcgrad.chain_matmul(a, a)
            funcgrad.chain_matmul(a, a)
        finally:
            funcgrad.set_warn_always(False)
    assert len(w) == 2 and not funcgrad.is_warn_always_enabled()


# ================================ against live PyTorch ===========================================
@pytest.fixture
def torch():
    return pytest.importorskip("torch")


def _outcome(lib, f):
    try:
        r = f(lib)
    except Exception as e:  # noqa: BLE001
        return type(e).__name__, str(e).replace("funcgrad.", "torch.").replace("Tensor.", "")
    if isinstance(r, tuple):
        return tuple(_describe(v) for v in r)
    return _describe(r)


def _describe(r):
    if hasattr(r, "grad_fn") and hasattr(r, "shape"):
        return ("tensor", str(r.dtype).split(".")[-1], tuple(r.shape), type(r.grad_fn).__name__,
                r.requires_grad, r.is_leaf)
    if type(r).__module__ in ("torch", "funcgrad") or type(r).__name__ in ("layout", "memory_format"):
        return repr(r).replace("funcgrad.", "torch.")
    return r


_X4 = lambda L: L.ones(2, 3, 4, 5)  # noqa: E731
_C = lambda L: L.complex(L.tensor([1.0, -2.0]), L.tensor([0.5, 3.0]))  # noqa: E731
_G = lambda L: L.tensor([1.0, -2.0, 0.0], requires_grad=True)  # noqa: E731
_M = lambda L: L.tensor([[True, False, True], [False, True, True]])  # noqa: E731

CALLS = {
    "layout": lambda L: (L.ones(1).layout, L.strided, L.contiguous_format, L.channels_last, L.channels_last_3d,
                         L.preserve_format),
    "constants": lambda L: (L.pi, L.e, L.inf, L.newaxis),
    "is_contiguous_cl": lambda L: tuple(L.ones(*s).is_contiguous(memory_format=f) for s in
                                        [(2, 3, 4, 5), (2, 1, 4, 5), (2, 3, 1, 1), (0, 3, 4, 5), (1, 3, 4, 5), (2, 3, 4),
                                         (2, 3, 4, 5, 6)]
                                        for f in (L.channels_last, L.channels_last_3d, L.contiguous_format)),
    "is_contiguous_view_cl": lambda L: (_X4(L).permute(0, 2, 3, 1).contiguous().permute(0, 3, 1, 2)
                                        .is_contiguous(memory_format=L.channels_last),
                                        _X4(L).t().is_contiguous(memory_format=L.preserve_format)
                                        if False else _X4(L).transpose(1, 2).is_contiguous(
                                            memory_format=L.contiguous_format)),
    "is_contiguous_bad": lambda L: _X4(L).is_contiguous(memory_format=1),
    "contiguous_bad": lambda L: _X4(L).contiguous(memory_format="channels_last"),
    "contiguous_rank": lambda L: L.ones(3, 4).contiguous(memory_format=L.channels_last),
    "contiguous_rank3d": lambda L: _X4(L).contiguous(memory_format=L.channels_last_3d),
    "contiguous_preserve": lambda L: _X4(L).contiguous(memory_format=L.preserve_format),
    "to_bad": lambda L: _X4(L).to(memory_format="a"),
    "to_bad_dtype": lambda L: _X4(L).to(L.float64, memory_format="a"),
    "to_rank": lambda L: L.ones(3).to(memory_format=L.channels_last),
    "to_ok": lambda L: _X4(L).to(L.float64, memory_format=L.channels_last),
    "module_to": lambda L: L.nn.Linear(2, 3).to(memory_format=L.channels_last).weight.shape,
    "empty_like_rank": lambda L: L.empty_like(_X4(L), memory_format=L.channels_last_3d),
    "zeros_like_bad": lambda L: L.zeros_like(_X4(L), memory_format=3),
    "randn_like_rank": lambda L: L.randn_like(L.ones(3), memory_format=L.channels_last),
    "warn_always_bad": lambda L: L.set_warn_always(1),
    "is_signed": lambda L: (L.is_signed(L.tensor([1])), L.tensor([1], dtype=L.uint8).is_signed(),
                            L.tensor([True]).is_signed(), L.tensor([1.0], dtype=L.bfloat16).is_signed(),
                            L.tensor([1j]).is_signed()),
    "is_signed_bad": lambda L: L.is_signed(1),
    "is_inference": lambda L: (L.is_inference(L.ones(1)), L.is_inference(_inference(L))),
    "is_inference_bad": lambda L: L.is_inference([1]),
    # complex
    "complex": lambda L: L.complex(_G(L), L.tensor([1.0, 2.0, 3.0])),
    "complex_f64": lambda L: L.complex(L.ones(2, 1, dtype=L.float64), L.ones(3, dtype=L.float64)),
    "complex_mixed": lambda L: L.complex(L.ones(2), L.ones(2, dtype=L.float64)),
    "complex_int": lambda L: L.complex(L.ones(2, dtype=L.long), L.ones(2, dtype=L.long)),
    "complex_int_float": lambda L: L.complex(L.ones(2, dtype=L.int32), L.ones(2)),
    "complex_scalar": lambda L: L.complex(L.ones(2), 1.0),
    "complex_shape": lambda L: L.complex(L.ones(2), L.ones(3)),
    "polar": lambda L: L.polar(_G(L), L.ones(3)),
    "polar_mixed": lambda L: L.polar(L.ones(2), L.ones(2, dtype=L.float64)),
    "polar_int": lambda L: L.polar(L.ones(2, dtype=L.int32), L.ones(2, dtype=L.int32)),
    "view_as_real": lambda L: L.view_as_real(L.complex(_G(L), _G(L))),
    "view_as_real_real": lambda L: L.view_as_real(L.ones(2)),
    "view_as_complex": lambda L: L.view_as_complex(L.ones(3, 2, requires_grad=True)),
    "view_as_complex_f64": lambda L: L.view_as_complex(L.ones(4, 3, 2, dtype=L.float64)[::2]),
    "view_as_complex_last": lambda L: L.view_as_complex(L.ones(3)),
    "view_as_complex_last3": lambda L: L.view_as_complex(L.ones(3, 3)),
    "view_as_complex_0d": lambda L: L.view_as_complex(L.tensor(1.0)),
    "view_as_complex_long": lambda L: L.view_as_complex(L.ones(3, 2, dtype=L.long)),
    "view_as_complex_bf16": lambda L: L.view_as_complex(L.ones(3, 2, dtype=L.bfloat16)),
    "view_as_complex_stride1": lambda L: L.view_as_complex(L.ones(2, 3).t()),
    "view_as_complex_stride2": lambda L: L.view_as_complex(L.ones(3, 3)[:, :2]),
    "view_as_complex_offset": lambda L: L.view_as_complex(L.ones(7)[1:].view(3, 2)),
    "view_as_complex_empty": lambda L: L.view_as_complex(L.ones(0, 2)),
    "conj": lambda L: (L.conj(_C(L).requires_grad_()), L.conj_physical(_C(L).requires_grad_()),
                       _C(L).requires_grad_().conj_physical()),
    "conj_real_is_self": lambda L: tuple(f(t) is t for t in [L.ones(2, requires_grad=True)]
                                         for f in (L.conj, L.conj_physical, L.resolve_conj, L.resolve_neg,
                                                   lambda v: v.conj(), lambda v: v.resolve_conj())),
    "resolve_plain_complex": lambda L: (lambda z: (L.resolve_conj(z) is z, L.resolve_neg(z) is z,
                                                   z.is_conj(), z.is_neg(), L.is_conj(L.ones(1))))(_C(L)),
    "is_conj_bad": lambda L: L.is_conj(1),
    "angle": lambda L: (L.angle(_G(L)), L.angle(L.tensor([1, -2])), L.angle(L.tensor([True])),
                        L.angle(L.ones(2, dtype=L.float64)), L.angle(_C(L).requires_grad_()), _G(L).angle()),
    # gcd/lcm, inner, matrix_exp, sum_to_size, fill_diagonal_, scatters, new_empty_strided, unravel_index
    "gcd": lambda L: (L.gcd(L.tensor([4, 6], dtype=L.int8), L.tensor([6])), L.tensor([4]).lcm(L.tensor([6])),
                      L.tensor([4]).gcd_(L.tensor([6]))),
    "gcd_function_inplace": lambda L: (lambda a: (L.gcd_(a, L.tensor([6])) is a, a.tolist(),
                                                  L.lcm_(a, L.tensor([3])) is a, a.tolist()))(L.tensor([4])),
    "gcd_function_inplace_bad": lambda L: L.gcd_(1, L.tensor([6])),
    "conj_physical_function_inplace": lambda L: (lambda z: (L.conj_physical_(z) is z, z.tolist()))(_C(L)),
    "gcd_float": lambda L: L.gcd(L.ones(2), L.ones(2)),
    "gcd_bool": lambda L: L.lcm(L.tensor([True]), L.tensor([True])),
    "gcd_scalar": lambda L: L.gcd(L.tensor([4]), 2),
    "gcd_inplace_float": lambda L: L.ones(2).gcd_(L.tensor([2])),
    "inner": lambda L: (L.inner(_G(L), L.ones(3)), L.inner(L.ones(2, 3, requires_grad=True), L.ones(4, 3)),
                        L.inner(L.tensor(2.0, requires_grad=True), L.ones(2, 2)), _G(L).inner(_G(L))),
    "inner_shape": lambda L: L.inner(L.ones(3, 4), L.ones(4, 3)),
    "inner_dtype": lambda L: L.inner(L.ones(3, 4), L.ones(4, dtype=L.long)),
    "matrix_exp": lambda L: (L.matrix_exp(L.eye(3, requires_grad=True)), L.eye(2).matrix_exp()),
    "matrix_exp_shape": lambda L: L.matrix_exp(L.ones(2, 3)),
    "sum_to_size": lambda L: (lambda x: (x.sum_to_size(1, 4), x.sum_to_size(4), x.sum_to_size((3, 1)),
                                         x.sum_to_size(3, 4) is x, x.sum_to_size(1, 1)))(L.ones(3, 4, requires_grad=True)),
    "sum_to_size_bad": lambda L: L.ones(3, 4).sum_to_size(2, 4),
    "sum_to_size_long": lambda L: L.ones(3, 4).sum_to_size(1, 1, 4),
    "fill_diagonal": lambda L: (lambda a: (lambda x: (x.fill_diagonal_(2.0) is x, x))(a.clone()))(
        L.ones(3, 3, requires_grad=True)),
    "fill_diagonal_1d": lambda L: L.zeros(2).fill_diagonal_(1),
    "fill_diagonal_unequal": lambda L: L.zeros(2, 3, 4).fill_diagonal_(1),
    "scatters": lambda L: (L.diagonal_scatter(L.zeros(3, 3, requires_grad=True), L.ones(3)),
                           L.select_scatter(L.zeros(2, 2, dtype=L.long), L.ones(2), 0, 1),
                           L.slice_scatter(L.zeros(8, 8), L.ones(2, 8, requires_grad=True), start=6),
                           L.slice_scatter(L.zeros(5), L.ones(0), start=4, end=2),
                           L.slice_scatter(L.zeros(5), L.ones(2), start=-2),
                           L.zeros(3, 3).diagonal_scatter(L.ones(2), 1)),
    "select_scatter_size": lambda L: L.select_scatter(L.zeros(2, 2), L.ones(3), 0, 0),
    "select_scatter_index": lambda L: L.select_scatter(L.zeros(2, 2), L.ones(2), 0, 5),
    "slice_scatter_size": lambda L: L.slice_scatter(L.zeros(8, 8), L.ones(3, 8), start=6),
    "slice_scatter_step": lambda L: L.slice_scatter(L.zeros(5), L.ones(1), step=0),
    "diagonal_scatter_size": lambda L: L.diagonal_scatter(L.zeros(3, 3), L.ones(2)),
    "masked_scatter": lambda L: (lambda x, s: (x.masked_scatter(_M(L), s), L.masked_scatter(L.zeros(3), _M(L), s),
                                               x.detach().clone().masked_scatter_(_M(L)[0], s)))(
        L.zeros(2, 3, requires_grad=True), L.arange(6.0, requires_grad=True)),
    "masked_scatter_dtype": lambda L: L.zeros(2, 3).masked_scatter(_M(L), L.ones(6, dtype=L.float64)),
    "masked_scatter_int_mask": lambda L: L.zeros(2, 3).masked_scatter(L.ones(2, 3, dtype=L.int32), L.ones(6)),
    "masked_scatter_short": lambda L: L.zeros(2, 3).masked_scatter(_M(L), L.ones(3)),
    "masked_scatter_shape": lambda L: L.zeros(2, 3).masked_scatter(L.ones(4, dtype=L.bool), L.ones(6)),
    "masked_scatter_inplace_shape": lambda L: L.zeros(2, 3).masked_scatter_(L.ones(4, dtype=L.bool), L.ones(6)),
    "masked_scatter_inplace_rank": lambda L: L.zeros(2, 3).masked_scatter_(L.ones(1, 2, 3, dtype=L.bool),
                                                                           L.ones(6)),
    "masked_scatter_source_type": lambda L: L.zeros(2, 3).masked_scatter(_M(L), 1.0),
    "new_empty_strided": lambda L: L.ones(2, dtype=L.float64).new_empty_strided((2, 3), (3, 1)),
    "new_empty_strided_bad": lambda L: L.ones(2).new_empty_strided((2, 3), (1,)),
    "unravel_index": lambda L: (*L.unravel_index(L.tensor([4, 1]), (2, 3)), *L.unravel_index(L.tensor(4), 6)),
    "unravel_index_float": lambda L: L.unravel_index(L.tensor([1.0]), (2, 3)),
    "unravel_index_negative": lambda L: L.unravel_index(L.tensor([1]), (2, -3)),
    "unravel_index_shape": lambda L: L.unravel_index(L.tensor([1]), 2.0),
    # windows
    "windows": lambda L: tuple(getattr(L, n)(4, **kw) for n in ("hann_window", "hamming_window",
                                                                  "blackman_window", "bartlett_window",
                                                                  "kaiser_window")
                               for kw in ({}, dict(dtype=L.float64, requires_grad=True))),
    "window_negative": lambda L: L.hann_window(-1),
    "window_long": lambda L: L.hamming_window(3, dtype=L.long),
    "window_int_grad": lambda L: L.blackman_window(0, dtype=L.int32, requires_grad=True),
    "window_bool": lambda L: L.bartlett_window(3, dtype=L.bool),
    "window_int8": lambda L: L.kaiser_window(3, dtype=L.int8),
    "window_complex": lambda L: L.hann_window(3, dtype=L.complex64),
    "window_float_length": lambda L: L.hann_window(3.0),
    "signal_windows": lambda L: tuple(f(4, **kw) for f in (L.signal.windows.gaussian, L.signal.windows.kaiser,
                                                           L.signal.windows.hann, L.signal.windows.bartlett,
                                                           L.signal.windows.exponential, L.signal.windows.cosine)
                                      for kw in ({}, dict(dtype=L.float64, requires_grad=True))),
    "signal_negative": lambda L: L.signal.windows.hann(-1),
    "signal_dtype": lambda L: L.signal.windows.cosine(3, dtype=L.float16),
    "signal_tau": lambda L: L.signal.windows.exponential(3, tau=0),
    "signal_center": lambda L: L.signal.windows.exponential(3, center=1.0),
    "signal_std": lambda L: L.signal.windows.gaussian(3, std=-1),
    "signal_beta": lambda L: L.signal.windows.kaiser(3, beta=-1),
    "signal_coefficients": lambda L: L.signal.windows.general_cosine(3, a=[]),
    "signal_coefficients_type": lambda L: L.signal.windows.general_cosine(3, a=1.0),
}


def _inference(L):
    with L.inference_mode():
        return L.ones(1)


@pytest.mark.torch
@pytest.mark.parametrize("name", sorted(CALLS))
def test_matches_torch(torch, name):
    assert _outcome(funcgrad, CALLS[name]) == _outcome(torch, CALLS[name])


@pytest.mark.torch
def test_angle_gradient_and_windows_print_as_torch(torch):
    for L in (funcgrad, torch):
        x = L.tensor([1.0, -2.0, 0.0, float("nan")], requires_grad=True)
        (L.angle(x) * L.tensor([1.0, float("nan"), 2.0, 3.0])).sum().backward()
        assert x.grad.tolist() == [0.0, 0.0, 0.0, 0.0]
    assert repr(funcgrad.hann_window(4, requires_grad=True)) == repr(torch.hann_window(4, requires_grad=True))
    assert repr(funcgrad.view_as_real(funcgrad.tensor([1 + 2j]))) == repr(torch.view_as_real(torch.tensor([1 + 2j])))


@pytest.mark.torch
def test_complex_leaf_gradients_match_torch(torch):
    """Gradients reaching a complex leaf through the new ops are PyTorch's (its conjugate
    convention), not only those reaching real inputs."""
    def grads(L):
        w = L.tensor([[1.0, 2.0], [3.0, -1.0]])
        fns = [lambda z: (L.view_as_real(z.conj().resolve_conj()) * w).sum(),
               lambda z: (L.view_as_real(z) * w).sum(),
               lambda z: L.view_as_complex(L.view_as_real(z) * 2).abs().sum(),
               lambda z: L.polar(z.abs(), L.angle(z)).imag.sum(),
               lambda z: (L.conj_physical(z).real * w[0]).sum() + L.conj_physical(z).imag.sum(),
               lambda z: L.angle(z).sum()]
        out = []
        for fn in fns:
            z = L.tensor([3 + 4j, 1 - 2j], dtype=L.complex128, requires_grad=True)
            fn(z).backward()
            out.append(z.grad.resolve_conj().numpy())
        return np.stack(out)
    np.testing.assert_allclose(grads(funcgrad), grads(torch), rtol=1e-12, atol=1e-15)
