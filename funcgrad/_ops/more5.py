"""Op table — the ``funcgrad.<name>_`` in-place functions PyTorch exposes beside its Tensor
methods (``torch.exp_(x)`` is ``x.exp_()``): generated here from the methods, as PyTorch generates
both from one declaration. Each takes ``input`` (a Tensor, by position or keyword: PyTorch's
parser error otherwise) and whatever the method takes, and is the method itself on it: the same
result, version bump, ``grad_fn`` and errors (named as the function is, which is the method's
name).
"""

from __future__ import annotations

from ._registry import FUNCTIONS, METHODS, Tensor, _require_tensors

# PyTorch 2.13's torch.<name>_ functions whose method funcgrad has (the rest of its in-place
# functions are declared with their ops: gcd_, lcm_, relu_, ...)
INPLACE_FUNCTIONS = (
    "abs_", "acos_", "acosh_", "addmv_", "arccos_", "arccosh_", "arcsin_", "arcsinh_", "arctan_",
    "arctanh_", "asin_", "asinh_", "atan_", "atanh_", "ceil_", "clamp_", "clamp_max_", "clamp_min_",
    "clip_", "cos_", "cosh_", "deg2rad_", "detach_", "erf_", "erfc_", "exp2_", "exp_", "expm1_",
    "fill_", "fix_", "floor_", "frac_", "i0_", "index_put_", "ldexp_", "log10_", "log1p_", "log2_",
    "log_", "logit_", "nan_to_num_", "neg_", "negative_", "rad2deg_", "reciprocal_", "round_",
    "rsqrt_", "sigmoid_", "sin_", "sinc_", "sinh_", "sqrt_", "square_", "tan_", "tanh_", "trunc_",
    "xlogy_", "zero_")


def _inplace_function(name: str):
    def f(input, *args, **kwargs):
        return getattr(input, name)(*args, **kwargs)
    f.__name__ = f.__qualname__ = name
    f.__doc__ = f"``input.{name}(...)`` (``torch.{name}``)."
    return _require_tensors(f, name, ("input",), False)


def inplace_functions() -> dict:
    """The in-place functions by name, for ``funcgrad/__init__.py`` to export once every method
    is installed (also in ``FUNCTIONS``; a name some module declared as a function keeps it)."""
    for name in INPLACE_FUNCTIONS:
        if name not in FUNCTIONS and (name in METHODS or hasattr(Tensor, name)):
            FUNCTIONS[name] = _inplace_function(name)
    return {name: FUNCTIONS[name] for name in INPLACE_FUNCTIONS if name in FUNCTIONS}
