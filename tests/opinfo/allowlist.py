"""Known differences from PyTorch, each with the reason funcgrad differs.

``ALLOWED`` keys are ``"<op>/<sample id glob>:<kind>"`` (kind: raises, dtype, value, shape,
grad_fn, requires_grad, grad, outputs, type; ``<op>`` may be a glob too). A reason for a genuine,
not yet fixed bug starts with "BUG (issue 14, not fixed yet):"; everything else is a deliberate or
unavoidable difference. An entry that matches no mismatch any more fails the sweep (remove it
once fixed).

``EXCLUDED``: op keys with no sample, and why.
"""

from __future__ import annotations

import fnmatch

BUG = "BUG (issue 14, not fixed yet): "
_TORCH_NAN_LAYOUT = ("PyTorch itself is layout-dependent at nan: its vectorized kernel (contiguous "
                     "operands) gives a zero gradient there, its strided loop passes the gradient; "
                     "funcgrad gives the contiguous result (0)")
_TORCH_LAYOUT = ("PyTorch itself is layout-dependent: its vectorized kernel (contiguous operands, and "
                 "every tensor of realistic size) gives nan at nan (elu, celu, hardswish) and -inf at "
                 "-0.0 (logit); its scalar loop (this transposed operand, a short tail) passes the "
                 "gradient and gives +inf; funcgrad gives the contiguous result")
_F32_HUGE = ("PyTorch's vectorized float32 CPU kernel overflows differently at ±3e38/±inf (nan or inf "
             "from an intermediate); funcgrad's XLA kernel gives the mathematically expected value")
_FMOD_EXACT = ("PyTorch computes fmod/remainder as a - b * trunc(a / b), so a / b overflowing to inf "
               "(-1e300 by 1e-300) gives nan; XLA's fmod is exact (IEEE fmod)")

_ONEDNN_GELU = ("PyTorch's CPU gelu is oneDNN's on a CPU with AVX-512 (torch.backends.mkldnn on): float32 "
                "inf at 3e38 and nan at +-inf, an intermediate overflowing; elsewhere, or with mkldnn off, "
                "ATen's kernel gives 3e38 and inf, as funcgrad on every CPU")

_TIES = ("which of tied elements kthvalue/topk return is unspecified in PyTorch (its CPU kernel's "
         "partial sort decides); funcgrad returns the first, so the index and the gradient's position differ")

ALLOWED: dict[str, str] = {
    # ---- PyTorch's own platform behaviour
    "hardtanh/edge-T:grad": _TORCH_NAN_LAYOUT,
    "hardshrink/edge-T:grad": _TORCH_NAN_LAYOUT,
    "softshrink/edge-T:grad": _TORCH_NAN_LAYOUT,
    **{f"{op}/edge-T:grad": _TORCH_LAYOUT for op in ("elu", "celu", "elu_", "celu_", "hardswish", "logit")},
    "special_erfcx/edge-f32:grad": _F32_HUGE,
    "gelu/edge-f32:value": _ONEDNN_GELU,
    "special_ndtri/edge-f32:grad": ("float32 rounding of exp(ndtri(2e-38)**2 / 2) ~ 6e35 (relative "
                                    "difference 1.5e-5, over float32's 1e-5 tolerance)"),
    "remainder/edge-grid:value": _FMOD_EXACT,
    "fmod/edge-grid:value": _FMOD_EXACT,
    "fmod_tensor/edge-grid:value": _FMOD_EXACT,
    # ---- genuine, not fixed yet
    # ---- reductions
    "kthvalue/ties:*": _TIES,
    "kthvalue/special:*": _TIES,
    "topk/ties:*": _TIES,
    "topk/special:*": _TIES,
    "var_mean/special:value": ("PyTorch's var_mean computes the mean with Welford's update, which gives nan "
                               "for a row of -inf (-inf - -inf); torch.mean gives -inf, as funcgrad"),
    # ---- the spec table's calls (mirror)
    "svd/spec:*:value": ("singular vectors are defined up to sign: LAPACK (PyTorch) and XLA pick different "
                         "signs; U diag(S) Vh agree (tests/test_ops_shape / linalg tests)"),
    "svd/spec:*:grad": ("the gradient through U/V follows their signs, which LAPACK (PyTorch) and XLA pick "
                        "differently; through sign-invariant functions of U, S, Vh it agrees (the spec row "
                        "svd_sign_invariant, no entry needed)"),
}

# entries whose mismatch depends on the machine PyTorch runs on (its oracle differs between CPUs):
# allowed where they occur, never stale where they do not
PLATFORM = frozenset({"gelu/edge-f32:value"})

EXCLUDED: dict[str, str] = {
    # sparse COO kernels whose spec rows read a funcgrad-only handle
    **dict.fromkeys(
        ["sparse_coo_values", "sparse_from_dense", "sparse_from_dense_dim", "sparse_coalesce",
         "sparse_sum_dim", "sparse_sparse_sum", "sparse_add_sparse"],
        "its spec row reads the sparse tensor's values Tensor itself "
        "(tests/op_specs/spec_sparse.py's V: PyTorch has no spelling, values() adds "
        "ValuesBackward0 and _values() is detached); values, nodes and gradients vs torch are "
        "tests/test_sparse_coo.py"),
    "copy_slices": "internal kernel of in-place writes through a view (x[0] = v records CopySlices via "
                   "setitem): no user-level call of its own; covered by the setitem and index_put samples",
    "to_device": "internal kernel of .to(device): PyTorch's CPU build has one device, so there is nothing "
                 "to compare",
    "dropout": "random: its mask comes from the generator, so a sample needs the same seed and draw order "
               "on both sides; PyTorch's masks bit for bit are tests/test_random.py, p=0/p=1 and the "
               "scaling tests/test_nn_functional.py",
    "standard_gamma": "random (Gamma/Beta/Dirichlet sampling): values come from the generator; the "
                      "reparameterised gradient vs torch's is tests/test_distributions.py",
    "rnn_stacked_states": "identity node giving nn.LSTM/GRU/RNN's h_n/c_n PyTorch's StackBackward0; the "
                          "modules' node names vs torch are tests/test_api_surface.py",
    "rnn_cat_directions": "identity node giving a bidirectional RNN's output PyTorch's CatBackward0 "
                          "(tests/test_api_surface.py compares the node names with torch)",
    "norm_except_dim": "internal kernel of nn.utils.weight_norm; the module vs torch is "
                       "tests/test_ops_more.py::test_weight_norm_matches_torch",
    "weight_norm_interface": "as norm_except_dim (tests/test_ops_more.py::test_weight_norm_matches_torch)",
    "weight_norm_all": "as norm_except_dim (tests/test_ops_more.py::test_weight_norm_matches_torch)",
    "embedding_bag": "its spec row calls the internal kernel with funcgrad's offsets layout; "
                     "F.embedding_bag vs torch (sum/mean/max, offsets, padding_idx, per_sample_weights, "
                     "errors) is tests/test_ops_more.py",
    "lstm": "takes funcgrad's packed internal weight layout (no functional PyTorch spelling); nn.LSTM against "
            "torch with copied weights is tests/test_nn_rnn.py",
    "gru": "as lstm (tests/test_nn_rnn.py compares nn.GRU with torch)",
    "rnn": "as lstm (tests/test_nn_rnn.py compares nn.RNN with torch)",
    "lstm_cell": "as lstm (tests/test_nn_rnn.py compares nn.LSTMCell with torch)",
    "gru_cell": "as lstm (tests/test_nn_rnn.py compares nn.GRUCell with torch)",
    "rnn_tanh_cell": "as lstm (tests/test_nn_rnn.py compares nn.RNNCell with torch)",
    "rnn_relu_cell": "as lstm (tests/test_nn_rnn.py compares nn.RNNCell(nonlinearity='relu') with torch)",
    "attention_with_weights": "internal kernel of nn.MultiheadAttention(need_weights=True); "
                              "tests/test_nn_attention.py compares the module with torch",
}


def _split(k):
    pat, _, kind = k.rpartition(":")
    return pat, kind


def match(sample, kind):
    """The allowlist key covering this mismatch of ``sample`` (None: not allowlisted)."""
    for k in ALLOWED:
        pat, kd = _split(k)
        if fnmatch.fnmatchcase(kind, kd) and fnmatch.fnmatchcase(sample.key, pat):
            return k
    return None


def family_of(k, samples):
    """Whether key ``k`` belongs to the family of ``samples`` (that family checks it for staleness):
    ``spec:`` entries to the spec-table families, the others to the edge-value families."""
    pat, _ = _split(k)
    mirror = any(s.id.startswith("spec:") for s in samples)
    return ("/spec:" in pat) == mirror and any(fnmatch.fnmatchcase(s.key, pat) for s in samples)


def _torch_importable() -> bool:
    try:
        import torch  # noqa: F401
    except Exception:  # (the sweep is skipped then: pytest.importorskip)
        return False
    return True


TORCH = _torch_importable()
# ops some of whose gradients differ from PyTorch's on purpose (allowlisted)
_GRAD_ALLOWED = [k.split("/")[0] for k in ALLOWED if k.endswith(":grad")]


def gradient_checked_by_torch(spec) -> bool:
    """Whether this run's mirror sweep (tests/opinfo/mirror.py) compares the spec row's float64
    gradient with PyTorch's: torch imports, the op is not excluded, and none of its gradients is
    an allowlisted difference. Where it does, a comparison of that gradient with ``jax.grad`` or
    finite differences adds nothing (tests/test_ops.py, tests/test_gradcheck.py leave it out)."""
    return TORCH and spec.op not in EXCLUDED and not any(
        fnmatch.fnmatchcase(spec.op, g) for g in _GRAD_ALLOWED)
