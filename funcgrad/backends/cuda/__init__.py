"""``funcgrad.backends.cuda``: ``matmul.allow_tf32`` (tied to the float32 matmul precision, as in
PyTorch) and the scaled-dot-product-attention switches (recorded)."""

from __future__ import annotations

from ... import _runtime
from ..._device import cuda_is_available


def is_built() -> bool:
    """True where JAX has a GPU backend (PyTorch: built with CUDA)."""
    return cuda_is_available()


class cuBLASModule:  # noqa: N801  (PyTorch's name)
    """``matmul.allow_tf32`` reads/sets the float32 matmul precision ('high' ⇔ True)."""

    _flags = ("allow_fp16_reduced_precision_reduction", "allow_bf16_reduced_precision_reduction",
              "allow_fp16_accumulation")

    def __init__(self):
        object.__setattr__(self, "_values", {"allow_fp16_reduced_precision_reduction": True,
                                             "allow_bf16_reduced_precision_reduction": True,
                                             "allow_fp16_accumulation": False})

    def __getattr__(self, name):
        if name == "allow_tf32":
            return _runtime.get_float32_matmul_precision() != "highest"
        if name in cuBLASModule._flags:
            return self._values[name]
        raise AttributeError(f"Unknown attribute {name}")

    def __setattr__(self, name, value):
        if name == "allow_tf32":
            _runtime.set_float32_matmul_precision("high" if value else "highest")
        elif name in cuBLASModule._flags:
            self._values[name] = value
        else:
            raise AttributeError(f"Unknown attribute {name}")


matmul = cuBLASModule()

# PyTorch's global switches of scaled_dot_product_attention's kernels (the math and flash ones act on
# a CPU: funcgrad/nn/_functional_attention.py; funcgrad.nn.attention.sdpa_kernel sets them all)
_sdp = {"flash": True, "mem_efficient": True, "math": True, "cudnn": True, "overrideable": True}


def enable_flash_sdp(enabled: bool) -> None:
    _sdp["flash"] = bool(enabled)


def enable_mem_efficient_sdp(enabled: bool) -> None:
    _sdp["mem_efficient"] = bool(enabled)


def enable_math_sdp(enabled: bool) -> None:
    _sdp["math"] = bool(enabled)


def enable_cudnn_sdp(enabled: bool) -> None:
    _sdp["cudnn"] = bool(enabled)


def flash_sdp_enabled() -> bool:
    return _sdp["flash"]


def mem_efficient_sdp_enabled() -> bool:
    return _sdp["mem_efficient"]


def math_sdp_enabled() -> bool:
    return _sdp["math"]


def cudnn_sdp_enabled() -> bool:
    return _sdp["cudnn"]
