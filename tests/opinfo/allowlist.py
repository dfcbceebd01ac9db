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
_DTYPE_ERR = (BUG + "PyTorch rejects this dtype/operand (NotImplementedError \"..._cpu\" not implemented "
              "for 'Bool'/'Long', or TypeError for a Python scalar where a Tensor is required) where "
              "funcgrad computes a result or raises another type (issue 14 item 5, errors)")
_TORCH_NAN_LAYOUT = ("PyTorch itself is layout-dependent at nan: its vectorized kernel (contiguous "
                     "operands) gives a zero gradient there, its strided loop passes the gradient; "
                     "funcgrad gives the contiguous result (0)")
_F32_HUGE = ("PyTorch's vectorized float32 CPU kernel overflows differently at ±3e38/±inf (nan or inf "
             "from an intermediate); funcgrad's XLA kernel gives the mathematically expected value")
_FMOD_EXACT = ("PyTorch computes fmod/remainder as a - b * trunc(a / b), so a / b overflowing to inf "
               "(-1e300 by 1e-300) gives nan; XLA's fmod is exact (IEEE fmod)")

_TIES = ("which of tied elements kthvalue/topk return is unspecified in PyTorch (its CPU kernel's "
         "partial sort decides); funcgrad returns the first, so the index and the gradient's position differ")

ALLOWED: dict[str, str] = {
    # ---- dtype / operand-type errors (item 5 of issue 14)
    **{f"{op}/{sid}:raises": _DTYPE_ERR for op, sid in [
        ("neg", "bool"), ("abs", "bool"), ("relu", "bool"), ("ceil", "bool"), ("floor", "bool"),
        ("frac", "int64"), ("frac", "bool"), ("round", "bool"), ("trunc", "bool"),
        ("bitwise_not", "edge-*"), ("bitwise_not", "0d"), ("bitwise_not", "empty"),
        ("round_decimals", "int64"), ("round_decimals", "bool"),
        ("gelu", "int64"), ("gelu", "bool"), ("silu", "int64"), ("silu", "bool"), ("mish", "int64"),
        ("mish", "bool"), ("elu", "int64"), ("elu", "bool"), ("celu", "int64"), ("celu", "bool"),
        ("softplus", "int64"), ("softplus", "bool"), ("hardtanh", "bool"), ("hardswish", "int64"),
        ("hardswish", "bool"), ("hardsigmoid", "int64"), ("hardsigmoid", "bool"), ("log_sigmoid", "int64"),
        ("log_sigmoid", "bool"), ("hardshrink", "int64"), ("hardshrink", "bool"), ("softshrink", "int64"),
        ("softshrink", "bool"), ("leaky_relu", "int64"), ("leaky_relu", "bool"), ("threshold", "bool"),
        ("div_floor", "int64"), ("div_floor", "bool"), ("div_trunc", "int64"), ("div_trunc", "bool"),
        ("remainder", "int64"), ("remainder", "bool"), ("pow_tensor", "bool"), ("fmod", "int64"),
        ("fmod", "bool"),
        ("maximum", "scalar"), ("maximum", "int-pyfloat"), ("minimum", "scalar"), ("minimum", "int-pyfloat"),
        ("bitwise_and", "*"), ("bitwise_or", "*"), ("bitwise_xor", "*"),
        ("atan2", "scalar"), ("atan2", "int-pyfloat"),
        ("hypot", "int64"), ("hypot", "int-f64"), ("hypot", "bool"), ("hypot", "scalar"), ("hypot", "int-pyfloat"),
        ("logaddexp", "int64"), ("logaddexp", "int-f64"), ("logaddexp", "bool"), ("logaddexp", "scalar"),
        ("logaddexp", "int-pyfloat"), ("logaddexp2", "int64"), ("logaddexp2", "int-f64"), ("logaddexp2", "bool"),
        ("logaddexp2", "scalar"), ("logaddexp2", "int-pyfloat"), ("heaviside", "scalar"),
        ("heaviside", "int-pyfloat"), ("logical_and", "scalar"), ("logical_and", "int-pyfloat"),
        ("logical_or", "scalar"), ("logical_or", "int-pyfloat"), ("logical_xor", "scalar"),
        ("logical_xor", "int-pyfloat")]},
    # ---- PyTorch's own platform behaviour
    "hardtanh/edge-T:grad": _TORCH_NAN_LAYOUT,
    "hardshrink/edge-T:grad": _TORCH_NAN_LAYOUT,
    "softshrink/edge-T:grad": _TORCH_NAN_LAYOUT,
    "gelu/edge-f32:value": _F32_HUGE,
    "special_erfcx/edge-f32:grad": _F32_HUGE,
    "special_ndtri/edge-f32:grad": ("float32 rounding of exp(ndtri(2e-38)**2 / 2) ~ 6e35 (relative "
                                    "difference 1.5e-5, over float32's 1e-5 tolerance)"),
    "remainder/edge-grid:value": _FMOD_EXACT,
    "fmod/edge-grid:value": _FMOD_EXACT,
    "fmod_tensor/edge-grid:value": _FMOD_EXACT,
    # ---- genuine, not fixed yet
    "clamp/int64:dtype": BUG + "an integer tensor clamped by Python float bounds is float32 in PyTorch "
                               "(the bounds take part in type promotion); funcgrad keeps int64",
    "clamp/int64:value": BUG + "follows from the dtype: funcgrad clamps in int64",
    "clamp*/bool:dtype": BUG + "as clamp/int64: the float bounds promote in PyTorch",
    "clamp_m*/int64:dtype": BUG + "as clamp/int64: the float bounds promote in PyTorch",
    "add/bool:dtype": BUG + "bool + bool is bool (logical or) in PyTorch; funcgrad gives int64",
    "add/bool:value": BUG + "follows from the dtype (True + True is True in PyTorch)",
    "div/bool:value": BUG + "False / False is nan in PyTorch; funcgrad gives 0",
    "div_trunc/edge-grid:value": BUG + "trunc(1e-300 / 1e-300) is 1 in PyTorch; funcgrad gives 0",
    "clamp_tensor/edge-grid:grad": BUG + "PyTorch's backward of clamp(min=T, max=T) raises where min > max "
                                         "broadcast; funcgrad computes a gradient",
    # ---- reductions
    **{f"{op}/0d:raises": BUG + "dim=-1 on a 0-d tensor: PyTorch wraps it to dim 0, funcgrad raises"
       for op in ["sum_dim", "mean_dim", "amax", "amin", "max_dim", "min_dim", "argmax", "vector_norm",
                  "softmax", "log_softmax"]},
    **{f"{op}/{sid}:raises": _DTYPE_ERR for op, sid in [
        ("argmax", "bool"), ("argmin", "bool"), ("argmin", "empty"), ("median", "bool"), ("median_dim", "bool"),
        ("nanmedian", "bool"), ("nanmedian_dim", "bool"), ("kthvalue", "bool"), ("topk", "bool"),
        ("logcumsumexp", "int64"), ("logcumsumexp", "bool"), ("softmax", "int64"), ("softmax", "bool"),
        ("log_softmax", "int64"), ("log_softmax", "bool")]},
    "median/int64:dtype": BUG + "median of int64 is int64 in PyTorch (an element); funcgrad gives float64",
    "nanmedian/int64:dtype": BUG + "as median/int64",
    "mode/special:*": BUG + "mode of a row with nan/inf: PyTorch counts nan as a value (returns it)",
    "kthvalue/ties:*": _TIES,
    "kthvalue/special:*": _TIES,
    "topk/ties:*": _TIES,
    "topk/special:*": _TIES,
    "var_mean/special:value": ("PyTorch's var_mean computes the mean with Welford's update, which gives nan "
                               "for a row of -inf (-inf - -inf); torch.mean gives -inf, as funcgrad"),
    # ---- the spec table's calls (mirror)
    "clamp_min/spec:clamp_min#*:grad_fn": BUG + "x.clamp(min=v) is ClampBackward1 in PyTorch (clamp with max=None); "
                                      "funcgrad records ClampMinBackward0 (right for x.clamp_min(v))",
    "clamp_max/spec:clamp_max#*:grad_fn": BUG + "as clamp_min: x.clamp(max=v) is ClampBackward1",
    "sort/*:grad_fn": BUG + "sort(dim=, stable=True) is the sort.stable overload in PyTorch (SortBackward1)",
    "svd/spec:*:value": ("singular vectors are defined up to sign: LAPACK (PyTorch) and XLA pick different "
                         "signs; U diag(S) Vh agree (tests/test_ops_shape / linalg tests)"),
    "svd/spec:*:grad": ("the gradient through U/V follows their signs, which LAPACK (PyTorch) and XLA pick "
                        "differently; through sign-invariant functions of U, S, Vh it agrees (the spec row "
                        "svd_sign_invariant, no entry needed)"),
}

EXCLUDED: dict[str, str] = {
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
