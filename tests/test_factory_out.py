"""Factories and samplers as PyTorch's: ``out=`` on ``rand``/``randn``/``randint``/``randperm``/
``normal``/``full``/``eye``/``arange``/``linspace``/``logspace``/``range``/``bernoulli``/
``multinomial`` (out resized in place, or kept where PyTorch keeps as many elements; out's dtype;
``requires_grad=True`` on out; a ``dtype`` other than out's refused), the samplers' refusal of
dtypes their kernels lack (integer ``rand``/``randn`` gave zeros, silently), a bad device
refused before any draw (it used to advance the generator), and any of PyTorch's device type
names. Found running the PyTorch "Introduction to PyTorch Tensors" tutorial
(``torch.rand(2, 2, out=c)``). One script gives ``EXPECTED``, recorded from PyTorch 2.13 (and
re-run on torch where it is installed)."""

import pytest

import funcgrad

from ._rows import check_transcript, shower, torch_transcript


def _transcript(torch):
    out = []
    show = shower(out, warns=True)

    def into(call, kind="f", shape=(2, 2)):
        def f():
            o = torch.zeros(*shape, dtype={"f": torch.float32, "d": torch.float64, "i": torch.int64}[kind])
            r = eval(call, {"torch": torch, "o": o})  # noqa: S307
            return (r is o, tuple(o.shape), o.dtype, o.requires_grad, o.is_leaf,
                    [round(v, 4) for v in o.flatten().tolist()])
        return f

    torch.manual_seed(0)
    for call, kind, shape in [
            ("torch.rand(2, 2, out=o)", "f", (2, 2)), ("torch.rand(3, out=o)", "f", (2, 2)),
            ("torch.rand(2, out=o)", "d", (2,)), ("torch.randn(2, 3, out=o)", "f", (2, 2)),
            ("torch.randn(2, out=o, requires_grad=True)", "f", (2,)),
            ("torch.randint(0, 9, (3,), out=o)", "i", (2, 2)), ("torch.randint(5, (2,), out=o)", "f", (2,)),
            ("torch.randperm(5, out=o)", "i", (2, 2)), ("torch.randperm(3, out=o)", "f", (3,)),
            ("torch.normal(0., 1., (3,), out=o)", "f", (2, 2)),
            ("torch.normal(torch.zeros(3), torch.ones(3), out=o)", "f", (2, 2)),
            ("torch.normal(torch.zeros(2, 2), 1., out=o)", "f", (2, 2)),
            ("torch.normal(torch.zeros(3), 1., out=o)", "f", (2, 2)),
            ("torch.bernoulli(torch.full((3,), 0.5), out=o)", "f", (2, 2)),
            ("torch.multinomial(torch.ones(4), 2, out=o)", "i", (2, 2)),
            ("torch.zeros(3, out=o)", "f", (2, 2)), ("torch.ones(2, 2, out=o, requires_grad=True)", "f", (2, 2)),
            ("torch.empty(3, out=o).shape", "i", (2, 2)),
            ("torch.zeros(2, out=o, dtype=torch.float64)", "f", (2,)),
            ("torch.full((3,), 2.5, out=o)", "i", (2, 2)), ("torch.full((2,), 7, out=o)", "f", (2, 2)),
            ("torch.full((2, 2), 1., out=o, requires_grad=True)", "f", (2, 2)),
            ("torch.eye(3, out=o)", "f", (2, 2)), ("torch.eye(2, 3, out=o)", "i", (2, 2)),
            ("torch.arange(4., out=o)", "f", (2, 2)), ("torch.arange(5, out=o)", "f", (2, 2)),
            ("torch.arange(3, out=o)", "d", (3,)), ("torch.arange(0, 1, 0.25, out=o)", "i", (2, 2)),
            ("torch.arange(4, out=o, requires_grad=True)", "f", (2, 2)),
            ("torch.arange(2, out=o, dtype=torch.int64)", "f", (2,)),
            ("torch.linspace(0, 1, 4, out=o)", "f", (2, 2)), ("torch.linspace(0, 1, 5, out=o)", "d", (2, 2)),
            ("torch.logspace(0, 1, 3, out=o)", "i", (2, 2)), ("torch.logspace(0, 2, 4, out=o)", "f", (2, 2)),
            ("torch.range(0, 3, out=o)", "f", (2, 2)), ("torch.range(0, 2, out=o)", "i", (2, 2))]:
        show(into(call, kind, shape))
    for f in ("rand", "randn", "randperm"):
        for d in ("bool", "uint8", "int32", "int64", "float16", "float64", "complex64"):
            show(lambda f=f, d=d: getattr(torch, f)(3, dtype=getattr(torch, d)).dtype)
    show(lambda: torch.normal(0., 1., (2,), dtype=torch.int64))
    show(lambda: torch.rand_like(torch.ones(2, dtype=torch.int64)))
    show(lambda: torch.randn_like(torch.ones(2, dtype=torch.int32)))
    show(lambda: torch.rand(2, out=torch.zeros(2, dtype=torch.int64)))
    show(lambda: torch.zeros_like(torch.ones(2), out=torch.ones(2)))
    torch.manual_seed(5)  # refused before drawing: the stream goes on where it was
    show(lambda: torch.normal(torch.zeros(2, requires_grad=True), torch.ones(2), out=torch.zeros(2)))
    show(lambda: torch.normal(torch.zeros(2), 1., out=torch.zeros(2, 2)))
    show(lambda: torch.rand(2))
    # a refused device draws nothing: the stream goes on where it was
    for call in ("torch.rand(2, 2, device='gpu')", "torch.randn(2, device='npu')", "torch.randint(3, (2,), device='x')",
                 "torch.randperm(4, device='gpu')", "torch.normal(0., 1., (2,), device='gpu')"):
        torch.manual_seed(3)
        show(lambda call=call: eval(call, {"torch": torch}))  # noqa: S307
        show(lambda: torch.rand(2))
    for name in ("xla", "xpu:1", "meta", "hip", "privateuseone", "cuda:2"):
        show(lambda name=name: torch.device(name))
    return out


EXPECTED = [
    '(True, (2, 2), torch.float32, False, True, [0.4963, 0.7682, 0.0885, 0.132])',
    '(True, (3,), torch.float32, False, True, [0.3074, 0.6341, 0.4901])',
    '(True, (2,), torch.float64, False, True, [0.1716, 0.0585])',
    '(True, (2, 3), torch.float32, False, True, [0.21, 0.9056, 0.6035, 0.811, -0.0451, 0.8797])',
    '(True, (2,), torch.float32, True, True, [1.0482, -0.0445])',
    '(True, (3,), torch.int64, False, True, [8, 6, 0])',
    '(True, (2,), torch.float32, False, True, [1.0, 2.0])',
    '(True, (5,), torch.int64, False, True, [3, 1, 0, 4, 2])',
    '(True, (3,), torch.float32, False, True, [1.0, 2.0, 0.0])',
    '(True, (3,), torch.float32, False, True, [0.1494, -0.6709, -0.2142])',
    "(True, (3,), torch.float32, False, True, [-0.432, -0.7079, -0.1064]) ['UserWarning: An output with one or more elements was resized since it had shape [2, 2], which does not match the required output shape [3]. This behavior is deprecated, and in a future PyTorch release outputs will not be resized unless they have zero elements. You can explicitly reuse an out tensor t by resizing it, inplace, to zero elements with t.resize_(0).']",
    '(True, (2, 2), torch.float32, False, True, [-1.2427, -0.4762, -0.6859, -1.5051])',
    'ERR RuntimeError The size of tensor a (3) must match the size of tensor b (2) at non-singleton dimension 1',
    '(True, (3,), torch.float32, False, True, [1.0, 1.0, 0.0])',
    '(True, (2,), torch.int64, False, True, [1, 2])',
    '(True, (3,), torch.float32, False, True, [0.0, 0.0, 0.0])',
    '(True, (2, 2), torch.float32, True, True, [1.0, 1.0, 1.0, 1.0])',
    '(False, (3,), torch.int64, False, True, [0, 0, 0])',
    'ERR RuntimeError dtype Double does not match dtype of out parameter (Float)',
    '(True, (3,), torch.int64, False, True, [2, 2, 2])',
    '(True, (2,), torch.float32, False, True, [7.0, 7.0])',
    '(True, (2, 2), torch.float32, True, True, [1.0, 1.0, 1.0, 1.0])',
    '(True, (3, 3), torch.float32, False, True, [1.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1.0])',
    '(True, (2, 3), torch.int64, False, True, [1, 0, 0, 0, 1, 0])',
    '(True, (2, 2), torch.float32, False, True, [0.0, 1.0, 2.0, 3.0])',
    "(True, (5,), torch.float32, False, True, [0.0, 1.0, 2.0, 3.0, 4.0]) ['UserWarning: The number of elements in the out tensor of shape [2, 2] is 4 which does not match the computed number of elements 5. Note that this may occur as a result of rounding error. The out tensor will be resized to a tensor of shape (5,).']",
    '(True, (3,), torch.float64, False, True, [0.0, 1.0, 2.0])',
    'ERR ValueError step must be nonzero',
    '(True, (2, 2), torch.float32, True, True, [0.0, 1.0, 2.0, 3.0])',
    'ERR RuntimeError dtype Long does not match dtype of out parameter (Float)',
    '(True, (2, 2), torch.float32, False, True, [0.0, 0.3333, 0.6667, 1.0])',
    '(True, (5,), torch.float64, False, True, [0.0, 0.25, 0.5, 0.75, 1.0])',
    '(True, (3,), torch.int64, False, True, [1, 3, 10])',
    '(True, (2, 2), torch.float32, False, True, [1.0, 4.6416, 21.5443, 100.0])',
    '(True, (2, 2), torch.float32, False, True, [0.0, 1.0, 2.0, 3.0]) ["UserWarning: torch.range is deprecated and will be removed in a future release because its behavior is inconsistent with Python\'s range builtin. Instead, use torch.arange, which produces values in [start, end)."]',
    '(True, (3,), torch.int64, False, True, [0, 1, 2]) ["UserWarning: torch.range is deprecated and will be removed in a future release because its behavior is inconsistent with Python\'s range builtin. Instead, use torch.arange, which produces values in [start, end)."]',
    'ERR NotImplementedError "check_uniform_bounds" not implemented for \'Bool\'',
    'ERR NotImplementedError "check_uniform_bounds" not implemented for \'Byte\'',
    'ERR NotImplementedError "check_uniform_bounds" not implemented for \'Int\'',
    'ERR NotImplementedError "check_uniform_bounds" not implemented for \'Long\'',
    'torch.float16',
    'torch.float64',
    'torch.complex64',
    'ERR NotImplementedError "normal_kernel_cpu" not implemented for \'Bool\'',
    'ERR NotImplementedError "normal_kernel_cpu" not implemented for \'Byte\'',
    'ERR NotImplementedError "normal_kernel_cpu" not implemented for \'Int\'',
    'ERR NotImplementedError "normal_kernel_cpu" not implemented for \'Long\'',
    'torch.float16',
    'torch.float64',
    'torch.complex64',
    'ERR NotImplementedError "randperm" not implemented for \'Bool\'',
    'torch.uint8',
    'torch.int32',
    'torch.int64',
    'torch.float16',
    'torch.float64',
    'ERR NotImplementedError "randperm" not implemented for \'ComplexFloat\'',
    'ERR NotImplementedError "normal_kernel_cpu" not implemented for \'Long\'',
    'ERR NotImplementedError "check_uniform_bounds" not implemented for \'Long\'',
    'ERR NotImplementedError "normal_kernel_cpu" not implemented for \'Int\'',
    'ERR NotImplementedError "check_uniform_bounds" not implemented for \'Long\'',
    "ERR TypeError zeros_like() got an unexpected keyword argument 'out'",
    "ERR RuntimeError normal(): functions with out=... arguments don't support automatic differentiation, but one of the arguments requires grad.",
    'tensor([[-0.4868, -0.6038],\n        [-0.5581,  0.6675]])',
    'tensor([0.0333, 0.9942])',
    'ERR RuntimeError Expected one of cpu, cuda, ipu, xpu, mkldnn, opengl, opencl, ideep, hip, ve, fpga, maia, xla, lazy, vulkan, mps, meta, hpu, mtia, privateuseone device type at start of device string: gpu',
    'tensor([0.0043, 0.1056])',
    'ERR RuntimeError Expected one of cpu, cuda, ipu, xpu, mkldnn, opengl, opencl, ideep, hip, ve, fpga, maia, xla, lazy, vulkan, mps, meta, hpu, mtia, privateuseone device type at start of device string: npu',
    'tensor([0.0043, 0.1056])',
    'ERR RuntimeError Expected one of cpu, cuda, ipu, xpu, mkldnn, opengl, opencl, ideep, hip, ve, fpga, maia, xla, lazy, vulkan, mps, meta, hpu, mtia, privateuseone device type at start of device string: x',
    'tensor([0.0043, 0.1056])',
    'ERR RuntimeError Expected one of cpu, cuda, ipu, xpu, mkldnn, opengl, opencl, ideep, hip, ve, fpga, maia, xla, lazy, vulkan, mps, meta, hpu, mtia, privateuseone device type at start of device string: gpu',
    'tensor([0.0043, 0.1056])',
    'ERR RuntimeError Expected one of cpu, cuda, ipu, xpu, mkldnn, opengl, opencl, ideep, hip, ve, fpga, maia, xla, lazy, vulkan, mps, meta, hpu, mtia, privateuseone device type at start of device string: gpu',
    'tensor([0.0043, 0.1056])',
    "device(type='xla')",
    "device(type='xpu', index=1)",
    "device(type='meta')",
    "device(type='hip')",
    "device(type='privateuseone')",
    "device(type='cuda', index=2)",
]


def test_factories_as_pytorch():
    check_transcript(_transcript(funcgrad), EXPECTED)


@pytest.mark.torch
def test_recorded_transcript_is_pytorchs():
    check_transcript(torch_transcript(_transcript), EXPECTED)
