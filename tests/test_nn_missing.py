"""nn names PyTorch 2.13 has that funcgrad lacked: the lazy convolution and normalization layers
and ``UninitializedBuffer``, the in-place functional forms (``F.elu_``...), the BatchNorm fusion
utilities, ``nn.utils.skip_init`` and ``nn.utils.stateless.functional_call``. One script gives
``EXPECTED``, recorded from PyTorch 2.13 (re-run on torch where it is installed)."""

import funcgrad

from ._rows import check_transcript, shower, torch_transcript

LAZY = [("LazyConv1d", (4, 3), (2, 3, 8)), ("LazyConv2d", (4, 3), (2, 3, 6, 6)), ("LazyConv2d", (4, 3), (3, 6, 6)),
        ("LazyConv3d", (2, 2), (1, 2, 4, 4, 4)), ("LazyConvTranspose1d", (4, 3), (2, 3, 5)),
        ("LazyConvTranspose2d", (2, 3), (1, 2, 4, 4)), ("LazyConvTranspose3d", (2, 2), (1, 2, 3, 3, 3)),
        ("LazyBatchNorm1d", (), (4, 3)), ("LazyBatchNorm2d", (), (2, 3, 2, 2)), ("LazyBatchNorm3d", (), (2, 3, 2, 2, 2)),
        ("LazyInstanceNorm1d", (), (2, 3, 5)), ("LazyInstanceNorm2d", (), (2, 3, 4, 4)),
        ("LazyInstanceNorm3d", (), (2, 3, 2, 2, 2))]


def _r(t):
    return [round(v, 3) + 0.0 for v in t.detach().double().flatten().tolist()[:6]]


def _transcript(torch):
    out = []
    show = shower(out, warns=True)
    nn, F = torch.nn, torch.nn.functional
    torch.manual_seed(0)
    for name, args, shape in LAZY:
        m = getattr(nn, name)(*args)
        show(lambda m=m: (repr(m), list(m.state_dict()), [type(v).__name__ for v in m.state_dict().values()]))
        x = torch.randn(*shape, requires_grad=True)
        y = m(x)
        show(lambda m=m: (repr(m), type(m).__name__, [tuple(v.shape) for v in m.state_dict().values()]))
        show(lambda y=y: (y.grad_fn.name(), tuple(y.shape), _r(y)))
        y.pow(2).sum().backward()
        show(lambda x=x, m=m: (_r(x.grad), [_r(p.grad) for p in m.parameters()], [_r(v) for v in m.state_dict().values()]))
    m = nn.LazyConv2d(4, 3, bias=False, groups=2, padding=1)
    show(lambda: repr(m))
    show(lambda: m(torch.ones(3, 3)))
    show(lambda: m(torch.ones(1, 3, 3, 3)))
    show(lambda: m.has_uninitialized_params())
    m = nn.LazyBatchNorm1d(affine=False, track_running_stats=False)
    show(lambda: (repr(m), list(m.state_dict())))
    show(lambda: (m(torch.ones(2, 5)).shape, repr(m), list(m.state_dict())))
    m = nn.LazyInstanceNorm2d(affine=True, track_running_stats=True)
    show(lambda: (repr(m), list(m.state_dict())))
    show(lambda: (repr(nn.UninitializedBuffer()), repr(nn.UninitializedParameter())))
    b = nn.UninitializedBuffer()
    b.materialize((2, 3))
    show(lambda: (type(b).__name__, tuple(b.shape)))
    m = nn.Module()
    m.b = nn.UninitializedBuffer(persistent=False)
    show(lambda: (list(m._buffers), list(m.state_dict())))
    # in-place functional forms
    for name, args in [("elu_", ()), ("elu_", (0.5,)), ("selu_", ()), ("celu_", (2.0,)), ("hardtanh_", (-0.5, 0.5)),
                       ("leaky_relu_", (0.2,)), ("threshold_", (0.1, -3.0)), ("relu_", ())]:
        w = torch.tensor([-2.0, -0.25, 0.0, 0.5, 3.0], requires_grad=True)
        y = w * 1
        r = getattr(F, name)(y, *args)
        show(lambda r=r, y=y: (r is y, y._version, y.grad_fn.name(), _r(y)))
        y.sum().backward()
        show(lambda w=w: _r(w.grad))
        show(lambda name=name, args=args, w=w: getattr(F, name)(w, *args))
    # fusion
    torch.manual_seed(1)
    for conv, bn, shape, tr in [(nn.Conv2d(3, 4, 3), nn.BatchNorm2d(4), (2, 3, 5, 5), False),
                                (nn.Conv1d(2, 3, 2, bias=False), nn.BatchNorm1d(3, affine=False), (2, 2, 6), False),
                                (nn.ConvTranspose2d(3, 2, 2), nn.BatchNorm2d(2), (1, 3, 3, 3), True)]:
        x = torch.randn(*shape)
        bn.train()
        bn(conv(x))
        conv.eval()
        bn.eval()
        fused = nn.utils.fuse_conv_bn_eval(conv, bn, transpose=tr)
        show(lambda fused=fused: (repr(fused), type(fused.weight).__name__, fused.weight.requires_grad,
                                  [tuple(p.shape) for p in fused.parameters()]))
        show(lambda conv=conv, bn=bn, fused=fused, x=x: ((fused(x) - bn(conv(x))).abs().max().item() < 1e-5,
                                                         _r(fused.weight), _r(fused.bias)))
    lin, bn = nn.Linear(3, 4), nn.BatchNorm1d(4)
    x = torch.randn(5, 3)
    bn(lin(x))
    show(lambda: nn.utils.fuse_linear_bn_eval(lin, bn))
    lin.eval()
    bn.eval()
    fused = nn.utils.fuse_linear_bn_eval(lin, bn)
    show(lambda: (repr(fused), (fused(x) - bn(lin(x))).abs().max().item() < 1e-5, _r(fused.weight), _r(fused.bias)))
    show(lambda: nn.utils.fuse_linear_bn_eval(lin, nn.BatchNorm1d(3).eval()))
    show(lambda: nn.utils.fuse_conv_bn_eval(nn.Conv2d(1, 2, 1).eval(), nn.BatchNorm2d(2, track_running_stats=False).eval()))
    w2, b2 = nn.utils.fuse_linear_bn_weights(lin.weight, None, bn.running_mean, bn.running_var, 1e-3, bn.weight, bn.bias)
    show(lambda: (type(w2).__name__, b2.requires_grad, _r(w2), _r(b2)))
    # skip_init: no draws spent, same stream afterwards
    torch.manual_seed(2)
    s = nn.utils.skip_init(nn.Linear, 5, 3)
    show(lambda: (repr(s), [tuple(p.shape) for p in s.parameters()], _r(torch.rand(4))))
    show(lambda: nn.utils.skip_init(nn.ReLU))
    show(lambda: nn.utils.skip_init(int))
    # stateless.functional_call: PyTorch 2.0's deprecated name
    lin = nn.Linear(2, 1)
    show(lambda: _r(nn.utils.stateless.functional_call(lin, {"weight": torch.ones(1, 2), "bias": torch.zeros(1)},
                                                      (torch.tensor([[1.0, 2.0]]),))))
    # nn.init: eye_/dirac_/sparse_ and the deprecated names without the underscore (FutureWarning)
    init = nn.init
    show(lambda: init.eye_(torch.empty(2, 3)))
    show(lambda: init.eye_(torch.empty(2)))
    show(lambda: init.dirac_(torch.empty(4, 2, 3)).flatten().tolist())
    show(lambda: init.dirac_(torch.empty(4, 2, 1, 3), groups=2).flatten().tolist())
    show(lambda: init.dirac_(torch.empty(3, 2, 3), groups=2))
    show(lambda: init.dirac_(torch.empty(3, 2)))
    torch.manual_seed(3)
    show(lambda: (init.sparse_(torch.empty(4, 3), 0.5) == 0).sum(0).tolist())
    show(lambda: init.sparse_(torch.empty(4, 3, 2), 0.5))
    torch.manual_seed(4)
    for name, args in [("uniform", ()), ("normal", ()), ("constant", (0.5,)), ("eye", ()), ("xavier_uniform", ()),
                       ("xavier_normal", ()), ("kaiming_uniform", ()), ("kaiming_normal", ()), ("orthogonal", ())]:
        show(lambda name=name, args=args: _r(getattr(init, name)(torch.empty(3, 3), *args)))
    show(lambda: _r(init.dirac(torch.empty(2, 2, 3))))
    show(lambda: _r(init.sparse(torch.empty(3, 2), 0.3)))
    show(lambda: [getattr(init, n).__name__ for n in ("uniform", "dirac", "sparse")])
    return out


EXPECTED = [
    "('LazyConv1d(0, 4, kernel_size=(3,), stride=(1,))', ['weight', 'bias'], ['UninitializedParameter', 'UninitializedParameter'])",
    "('Conv1d(3, 4, kernel_size=(3,), stride=(1,))', 'Conv1d', [(4, 3, 3), (4,)])",
    "('ConvolutionBackward0', (2, 4, 6), [0.21, -0.656, 0.456, 0.401, 0.533, -0.106])",
    "([-0.799, -0.746, 0.042, 0.119, 0.538, -0.285], [[1.134, 3.294, 3.423, 2.844, 1.235, 3.265], [3.589, -4.601, -1.061, -7.402]], [[-0.148, -0.012, 0.213, 0.331, 0.132, 0.045], [0.062, -0.056, -0.055, -0.153]])",
    "('LazyConv2d(0, 4, kernel_size=(3, 3), stride=(1, 1))', ['weight', 'bias'], ['UninitializedParameter', 'UninitializedParameter'])",
    "('Conv2d(3, 4, kernel_size=(3, 3), stride=(1, 1))', 'Conv2d', [(4, 3, 3, 3), (4,)])",
    "('ConvolutionBackward0', (2, 4, 4, 4), [-0.43, -0.573, -0.42, 0.956, 0.784, 0.333])",
    "([0.071, 0.33, 0.532, -0.085, -0.014, 0.233], [[-6.089, 1.642, -17.558, 8.955, 11.082, 14.546], [-9.263, 2.834, -11.37, 3.509]], [[0.016, 0.024, -0.151, 0.015, 0.133, 0.173], [-0.082, 0.069, -0.137, 0.072]])",
    "('LazyConv2d(0, 4, kernel_size=(3, 3), stride=(1, 1))', ['weight', 'bias'], ['UninitializedParameter', 'UninitializedParameter'])",
    "('Conv2d(3, 4, kernel_size=(3, 3), stride=(1, 1))', 'Conv2d', [(4, 3, 3, 3), (4,)])",
    "('SqueezeBackward1', (4, 4, 4), [-1.015, 0.017, 0.237, -0.421, -0.837, -0.634])",
    "([0.36, 0.415, -0.356, -0.201, 0.275, 0.056], [[-1.916, -12.516, 5.994, 0.636, -4.158, -4.806], [-11.669, 2.036, 5.227, 3.496]], [[-0.041, -0.043, 0.122, 0.009, -0.187, -0.114], [0.02, 0.181, -0.026, 0.149]])",
    "('LazyConv3d(0, 2, kernel_size=(2, 2, 2), stride=(1, 1, 1))', ['weight', 'bias'], ['UninitializedParameter', 'UninitializedParameter'])",
    "('Conv3d(2, 2, kernel_size=(2, 2, 2), stride=(1, 1, 1))', 'Conv3d', [(2, 2, 2, 2, 2), (2,)])",
    "('ConvolutionBackward0', (1, 2, 3, 3, 3), [0.177, 1.1, -0.366, -0.316, 0.664, 0.104])",
    "([0.082, -0.943, 0.203, 0.071, 0.201, -0.185], [[-12.592, -1.376, -4.689, -8.6, 14.51, -7.023], [3.715, 0.741]], [[-0.16, -0.173, -0.04, -0.044, 0.111, -0.107], [0.059, 0.009]])",
    "('LazyConvTranspose1d(0, 4, kernel_size=(3,), stride=(1,))', ['weight', 'bias'], ['UninitializedParameter', 'UninitializedParameter'])",
    "('ConvTranspose1d(3, 4, kernel_size=(3,), stride=(1,))', 'ConvTranspose1d', [(3, 4, 3), (4,)])",
    "('ConvolutionBackward0', (2, 4, 7), [-0.005, -0.515, -0.279, -0.689, -0.064, -1.437])",
    "([-0.075, -0.348, -0.316, 1.327, -1.171, -0.419], [[10.928, 9.112, -6.362, -1.791, -3.474, -10.261], [-7.934, -0.739, 9.077, 0.123]], [[0.221, 0.281, -0.171, -0.018, -0.116, -0.266], [0.047, 0.07, 0.254, 0.105]])",
    "('LazyConvTranspose2d(0, 2, kernel_size=(3, 3), stride=(1, 1))', ['weight', 'bias'], ['UninitializedParameter', 'UninitializedParameter'])",
    "('ConvTranspose2d(2, 2, kernel_size=(3, 3), stride=(1, 1))', 'ConvTranspose2d', [(2, 2, 3, 3), (2,)])",
    "('ConvolutionBackward0', (1, 2, 6, 6), [0.021, 0.245, -0.365, -0.008, 0.199, -0.19])",
    "([0.493, 0.597, -0.28, 0.206, 0.537, 1.676], [[-2.488, 0.21, -6.952, -8.23, -3.412, -5.386], [6.961, -14.159]], [[0.091, -0.1, -0.143, -0.093, -0.193, -0.188], [0.033, -0.153]])",
    "('LazyConvTranspose3d(0, 2, kernel_size=(2, 2, 2), stride=(1, 1, 1))', ['weight', 'bias'], ['UninitializedParameter', 'UninitializedParameter'])",
    "('ConvTranspose3d(2, 2, kernel_size=(2, 2, 2), stride=(1, 1, 1))', 'ConvTranspose3d', [(2, 2, 2, 2, 2), (2,)])",
    "('ConvolutionBackward0', (1, 2, 4, 4, 4), [0.222, -0.43, -0.367, 0.005, 0.157, -0.859])",
    "([0.119, -0.345, -1.449, -1.699, -1.139, -2.074], [[18.402, -1.333, 12.271, -9.901, -9.071, 12.108], [-12.441, -17.824]], [[0.205, 0.097, 0.211, -0.086, -0.138, 0.215], [-0.015, -0.157]])",
    "('LazyBatchNorm1d(0, eps=1e-05, momentum=0.1, affine=True, bias=True, track_running_stats=True)', ['weight', 'bias', 'running_mean', 'running_var', 'num_batches_tracked'], ['UninitializedParameter', 'UninitializedParameter', 'UninitializedBuffer', 'UninitializedBuffer', 'Tensor'])",
    "('BatchNorm1d(3, eps=1e-05, momentum=0.1, affine=True, bias=True, track_running_stats=True)', 'BatchNorm1d', [(3,), (3,), (3,), (3,), ()])",
    "('NativeBatchNormBackward0', (4, 3), [-1.313, -1.543, -0.976, 0.732, 1.255, -0.963])",
    "([0.0, 0.0, 0.0, 0.0, 0.0, 0.0], [[8.0, 8.0, 8.0], [0.0, 0.0, 0.0]], [[1.0, 1.0, 1.0], [0.0, 0.0, 0.0], [-0.02, 0.062, 0.014], [0.943, 0.95, 0.935], [1.0]])",
    "('LazyBatchNorm2d(0, eps=1e-05, momentum=0.1, affine=True, bias=True, track_running_stats=True)', ['weight', 'bias', 'running_mean', 'running_var', 'num_batches_tracked'], ['UninitializedParameter', 'UninitializedParameter', 'UninitializedBuffer', 'UninitializedBuffer', 'Tensor'])",
    "('BatchNorm2d(3, eps=1e-05, momentum=0.1, affine=True, bias=True, track_running_stats=True)', 'BatchNorm2d', [(3,), (3,), (3,), (3,), ()])",
    "('NativeBatchNormBackward0', (2, 3, 2, 2), [-0.351, -0.809, 1.348, -1.307, 0.446, 0.917])",
    "([0.0, 0.0, 0.0, 0.0, 0.0, 0.0], [[16.0, 16.0, 16.0], [0.0, 0.0, 0.0]], [[1.0, 1.0, 1.0], [0.0, 0.0, 0.0], [0.037, -0.016, 0.002], [0.95, 0.956, 0.978], [1.0]])",
    "('LazyBatchNorm3d(0, eps=1e-05, momentum=0.1, affine=True, bias=True, track_running_stats=True)', ['weight', 'bias', 'running_mean', 'running_var', 'num_batches_tracked'], ['UninitializedParameter', 'UninitializedParameter', 'UninitializedBuffer', 'UninitializedBuffer', 'Tensor'])",
    "('BatchNorm3d(3, eps=1e-05, momentum=0.1, affine=True, bias=True, track_running_stats=True)', 'BatchNorm3d', [(3,), (3,), (3,), (3,), ()])",
    "('NativeBatchNormBackward0', (2, 3, 2, 2, 2), [-0.259, 0.076, -0.566, 1.496, -1.372, -2.138])",
    "([0.0, 0.0, 0.0, 0.0, 0.0, 0.0], [[32.0, 32.0, 32.0], [0.0, 0.0, 0.0]], [[1.0, 1.0, 1.0], [0.0, 0.0, 0.0], [0.027, 0.032, 0.006], [0.979, 1.016, 1.018], [1.0]])",
    "('LazyInstanceNorm1d(0, eps=1e-05, momentum=0.1, affine=True, bias=True, track_running_stats=True)', ['weight', 'bias', 'running_mean', 'running_var', 'num_batches_tracked'], ['UninitializedParameter', 'UninitializedParameter', 'UninitializedBuffer', 'UninitializedBuffer', 'Tensor'])",
    "('InstanceNorm1d(3, eps=1e-05, momentum=0.1, affine=True, bias=True, track_running_stats=True)', 'InstanceNorm1d', [(3,), (3,), (3,), (3,), ()])",
    "('ViewBackward0', (2, 3, 5), [-1.316, -0.246, -0.729, 1.307, 0.984, 1.304])",
    "([0.0, 0.0, 0.0, 0.0, 0.0, 0.0], [[19.999, 20.0, 19.999], [0.0, 0.0, 0.0]], [[1.0, 1.0, 1.0], [0.0, 0.0, 0.0], [0.02, 0.045, 0.045], [0.942, 1.064, 0.933], [0.0]])",
    "('LazyInstanceNorm2d(0, eps=1e-05, momentum=0.1, affine=True, bias=True, track_running_stats=True)', ['weight', 'bias', 'running_mean', 'running_var', 'num_batches_tracked'], ['UninitializedParameter', 'UninitializedParameter', 'UninitializedBuffer', 'UninitializedBuffer', 'Tensor'])",
    "('InstanceNorm2d(3, eps=1e-05, momentum=0.1, affine=True, bias=True, track_running_stats=True)', 'InstanceNorm2d', [(3,), (3,), (3,), (3,), ()])",
    "('ViewBackward0', (2, 3, 4, 4), [1.133, 0.563, 0.234, 1.642, 1.041, -0.555])",
    "([0.0, 0.0, 0.0, 0.0, 0.0, 0.0], [[63.999, 63.999, 63.999], [0.0, 0.0, 0.0]], [[1.0, 1.0, 1.0], [0.0, 0.0, 0.0], [0.023, 0.005, 0.009], [1.033, 1.06, 0.976], [0.0]])",
    "('LazyInstanceNorm3d(0, eps=1e-05, momentum=0.1, affine=True, bias=True, track_running_stats=True)', ['weight', 'bias', 'running_mean', 'running_var', 'num_batches_tracked'], ['UninitializedParameter', 'UninitializedParameter', 'UninitializedBuffer', 'UninitializedBuffer', 'Tensor'])",
    "('InstanceNorm3d(3, eps=1e-05, momentum=0.1, affine=True, bias=True, track_running_stats=True)', 'InstanceNorm3d', [(3,), (3,), (3,), (3,), ()])",
    "('ViewBackward0', (2, 3, 2, 2, 2), [1.126, 1.226, -1.427, 0.786, 0.224, -0.7])",
    "([0.0, 0.0, 0.0, 0.0, 0.0, 0.0], [[32.0, 32.0, 32.0], [0.0, 0.0, 0.0]], [[1.0, 1.0, 1.0], [0.0, 0.0, 0.0], [-0.031, 0.021, 0.031], [1.033, 1.037, 1.077], [0.0]])",
    "LazyConv2d(0, 4, kernel_size=(3, 3), stride=(1, 1), padding=(1, 1), groups=2, bias=False)",
    "ERR RuntimeError Expected 3D (unbatched) or 4D (batched) input to LazyConv2d, but got input of size: torch.Size([3, 3])",
    "ERR ValueError in_channels must be divisible by groups",
    "True",
    "('LazyBatchNorm1d(0, eps=1e-05, momentum=0.1, affine=False, bias=False, track_running_stats=False)', [])",
    "(torch.Size([2, 5]), 'BatchNorm1d(0, eps=1e-05, momentum=0.1, affine=False, bias=False, track_running_stats=False)', [])",
    "('LazyInstanceNorm2d(0, eps=1e-05, momentum=0.1, affine=True, bias=True, track_running_stats=True)', ['weight', 'bias', 'running_mean', 'running_var', 'num_batches_tracked'])",
    "('<UninitializedBuffer>', '<UninitializedParameter>')",
    "('Tensor', (2, 3))",
    "(['b'], [])",
    "(True, 1, 'EluBackward1', [-0.865, -0.221, 0.0, 0.5, 3.0])",
    "[0.135, 0.779, 1.0, 1.0, 1.0]",
    "ERR RuntimeError a leaf Variable that requires grad is being used in an in-place operation.",
    "(True, 1, 'EluBackward1', [-0.432, -0.111, 0.0, 0.5, 3.0])",
    "[0.068, 0.389, 0.5, 1.0, 1.0]",
    "ERR RuntimeError a leaf Variable that requires grad is being used in an in-place operation.",
    "(True, 1, 'EluBackward1', [-1.52, -0.389, 0.0, 0.525, 3.152])",
    "[0.238, 1.369, 1.758, 1.051, 1.051]",
    "ERR RuntimeError a leaf Variable that requires grad is being used in an in-place operation.",
    "(True, 1, 'CeluBackward1', [-1.264, -0.235, 0.0, 0.5, 3.0])",
    "[0.368, 0.882, 1.0, 1.0, 1.0]",
    "ERR RuntimeError a leaf Variable that requires grad is being used in an in-place operation.",
    "(True, 1, 'HardtanhBackward0', [-0.5, -0.25, 0.0, 0.5, 0.5])",
    "[0.0, 1.0, 1.0, 0.0, 0.0]",
    "ERR RuntimeError a leaf Variable that requires grad is being used in an in-place operation.",
    "(True, 1, 'LeakyReluBackward1', [-0.4, -0.05, 0.0, 0.5, 3.0])",
    "[0.2, 0.2, 0.2, 1.0, 1.0]",
    "ERR RuntimeError a leaf Variable that requires grad is being used in an in-place operation.",
    "(True, 1, 'ThresholdBackward1', [-3.0, -3.0, -3.0, 0.5, 3.0])",
    "[0.0, 0.0, 0.0, 1.0, 1.0]",
    "ERR RuntimeError a leaf Variable that requires grad is being used in an in-place operation.",
    "(True, 1, 'ReluBackward0', [0.0, 0.0, 0.0, 0.5, 3.0])",
    "[0.0, 0.0, 0.0, 1.0, 1.0]",
    "ERR RuntimeError a leaf Variable that requires grad is being used in an in-place operation.",
    "('Conv2d(3, 4, kernel_size=(3, 3), stride=(1, 1))', 'Parameter', True, [(4, 3, 3, 3), (4,)])",
    "(True, [0.103, -0.089, -0.039, 0.094, -0.189, 0.12], [0.126, 0.037, 0.088, 0.14])",
    "('Conv1d(2, 3, kernel_size=(2,), stride=(1,))', 'Parameter', True, [(3, 2, 2), (3,)])",
    "(True, [0.494, -0.346, 0.065, 0.389, 0.377, 0.323], [0.015, -0.008, -0.01])",
    "('ConvTranspose2d(3, 2, kernel_size=(2, 2), stride=(1, 1))', 'Parameter', True, [(3, 2, 2, 2), (2,)])",
    "(True, [0.196, -0.203, -0.345, -0.078, 0.21, 0.338], [0.193, 0.227])",
    "ERR AssertionError Fusion only for eval!",
    "('Linear(in_features=3, out_features=4, bias=True)', True, [0.345, -0.305, 0.42, 0.004, -0.485, -0.127], [0.236, 0.174, -0.381, 0.172])",
    "ERR AssertionError To fuse, linear.out_features == bn.num_features or bn.num_features == 1, got linear.out_features=4 and bn.num_features=3",
    "ERR AssertionError bn.running_mean and bn.running_var must not be None",
    "('Parameter', False, [0.345, -0.305, 0.42, 0.004, -0.485, -0.127], [-0.051, -0.072, 0.014, -0.052])",
    "('Linear(in_features=5, out_features=3, bias=True)', [(3, 5), (3,)], [0.615, 0.381, 0.637, 0.474])",
    "ERR RuntimeError Module must support a 'device' arg to skip initialization",
    "ERR RuntimeError Expected a Module; got <class 'int'>",
    "[3.0] ['FutureWarning: `torch.nn.utils.stateless.functional_call` is deprecated as of PyTorch 2.0 and will be removed in a future version of PyTorch. Please use `torch.func.functional_call` instead which is a drop-in replacement.']",
    "tensor([[1., 0., 0.],\n        [0., 1., 0.]])",
    "ERR ValueError Only tensors with 2 dimensions are supported",
    "[0.0, 1.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0]",
    "[0.0, 1.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0, 0.0]",
    "ERR ValueError dim 0 must be divisible by groups",
    "ERR ValueError Only tensors with 3, 4, or 5 dimensions are supported",
    "[2, 2, 2]",
    "ERR ValueError Only tensors with 2 dimensions are supported",
    "[0.56, 0.559, 0.091, 0.21, 0.007, 0.039] ['FutureWarning: `nn.init.uniform` is now deprecated in favor of `nn.init.uniform_`.']",
    "[0.445, -1.529, 0.226, -0.925, -0.216, -0.831] ['FutureWarning: `nn.init.normal` is now deprecated in favor of `nn.init.normal_`.']",
    "[0.5, 0.5, 0.5, 0.5, 0.5, 0.5] ['FutureWarning: `nn.init.constant` is now deprecated in favor of `nn.init.constant_`.']",
    "[1.0, 0.0, 0.0, 0.0, 1.0, 0.0] ['FutureWarning: `nn.init.eye` is now deprecated in favor of `nn.init.eye_`.']",
    "[-0.416, 0.835, 0.717, -0.399, 0.613, 0.924] ['FutureWarning: `nn.init.xavier_uniform` is now deprecated in favor of `nn.init.xavier_uniform_`.']",
    "[0.373, 0.064, 0.411, -0.54, -0.019, 0.442] ['FutureWarning: `nn.init.xavier_normal` is now deprecated in favor of `nn.init.xavier_normal_`.']",
    "[-1.412, 0.469, 0.694, 1.254, 0.174, 0.959] ['FutureWarning: `nn.init.kaiming_uniform` is now deprecated in favor of `nn.init.kaiming_uniform_`.']",
    "[-0.725, -0.568, 0.105, 0.964, -0.405, 0.006] ['FutureWarning: `nn.init.kaiming_normal` is now deprecated in favor of `nn.init.kaiming_normal_`.']",
    "[-0.94, 0.34, 0.001, -0.162, -0.452, 0.877] ['FutureWarning: `nn.init.orthogonal` is now deprecated in favor of `nn.init.orthogonal_`.']",
    "[0.0, 1.0, 0.0, 0.0, 0.0, 0.0] ['FutureWarning: `nn.init.dirac` is now deprecated in favor of `nn.init.dirac_`.']",
    "[0.0, 0.005, -0.012, -0.011, -0.003, 0.0] ['FutureWarning: `nn.init.sparse` is now deprecated in favor of `nn.init.sparse_`.']",
    "['uniform', 'dirac', 'sparse']",
]


def test_nn_missing_transcript():
    check_transcript(_transcript(funcgrad), EXPECTED)


def test_nn_missing_transcript_is_pytorchs():
    check_transcript(torch_transcript(_transcript), EXPECTED)
