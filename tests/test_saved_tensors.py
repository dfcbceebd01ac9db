"""Saved tensors as PyTorch exposes them (its tutorial "Hooks for autograd saved tensors"):
``grad_fn._saved_<name>`` under ``derivatives.yaml``'s names (the input object itself, a new
tensor on a saved output's storage with the node as its ``grad_fn``, ``None`` where PyTorch saved
nothing because no input that needs it requires grad, a Python number as PyTorch's wrapped-number
tensor, static arguments as numbers), the freed-graph and version errors on reading one.
``EXPECTED`` was recorded from PyTorch 2.13 (and is re-run on torch where it is installed)."""

import pytest

import funcgrad

from ._rows import check_transcript, shower, torch_transcript


def _saved_attrs(torch, g):
    def one(v):
        if isinstance(v, torch.Tensor):
            return (v.dtype, tuple(v.shape), type(v.grad_fn).__name__, v.requires_grad,
                    [round(e, 4) for e in v.detach().flatten().tolist()])
        return v
    return (type(g).__name__, {a: one(getattr(g, a)) for a in sorted(dir(g))
                               if a.startswith("_saved_") and not a.endswith(("sizes", "strides"))})


def _transcript(torch):
    out = []
    show = shower(out, warns=True)
    torch.manual_seed(0)
    x = torch.randn(2, 3, requires_grad=True)
    w = torch.randn(2, 3, requires_grad=True)
    c = torch.randn(2, 3)
    m1 = torch.randn(2, 3, requires_grad=True)
    m2 = torch.randn(3, 2, requires_grad=True)
    b = torch.randn(2, requires_grad=True)
    for f in [lambda: x * w, lambda: x * c, lambda: c * x, lambda: x * 2, lambda: x * 2.5,
              lambda: x / w, lambda: c / x, lambda: x / c, lambda: x ** w, lambda: x ** c, lambda: c ** x,
              lambda: m1 @ m2, lambda: torch.addmm(b, m1, m2, alpha=2, beta=3),
              lambda: torch.addmm(b.detach(), m1.detach(), m2), lambda: x.exp(), lambda: x.sin(),
              lambda: x.cos(), lambda: x.abs(), lambda: x.tanh(), lambda: x.sigmoid(),
              lambda: x.abs().sqrt(), lambda: x.abs().log(), lambda: x.relu()]:
        show(lambda f=f: _saved_attrs(torch, f().grad_fn))
    # the tutorial: the inputs themselves; a saved output is a new tensor on its storage
    y = x * w
    show(lambda: (y.grad_fn._saved_self is x, y.grad_fn._saved_other is w))
    y = x * x
    z = y * y
    show(lambda: (z.grad_fn._saved_self is y, z.grad_fn._saved_other is y))
    y = torch.exp(x)
    show(lambda: (y.grad_fn._saved_result.equal(y), y.grad_fn._saved_result is y,
                  y.grad_fn._saved_result.grad_fn is y.grad_fn, y.grad_fn._saved_result._version))
    r = y.grad_fn._saved_result
    with torch.no_grad():
        r.mul_(2)  # (the same storage and version counter as y's)
    show(lambda: (y[0, 0].item() == r[0, 0].item(), y._version))
    show(lambda: y.grad_fn._saved_result)  # modified in place: the version error
    # a saved input modified in place; reading after a backward freed the graph
    z = x * 1
    y = z.sin()
    z.mul_(2)
    show(lambda: y.grad_fn._saved_self)
    y = x.sin()
    y.sum().backward()
    show(lambda: y.grad_fn._saved_self)
    y = x.exp()
    y.sum().backward()
    show(lambda: y.grad_fn._saved_result)
    y = x * 2
    y.sum().backward()
    show(lambda: y.grad_fn._saved_self)  # never saved: None, not the error
    show(lambda: y.grad_fn._saved_other)
    y = torch.addmm(b, m1, m2, alpha=2)
    y.sum().backward()
    show(lambda: (y.grad_fn._saved_alpha, y.grad_fn._saved_beta))
    y = x.sin()
    y.sum().backward(retain_graph=True)
    show(lambda: y.grad_fn._saved_self is x)
    show(lambda: y.grad_fn._saved_result)
    return out


EXPECTED = [
    "('MulBackward0', {'_saved_other': (torch.float32, (2, 3), 'NoneType', True, [0.4033, 0.838, -0.7193, -0.4033, -0.5966, 0.182]), '_saved_self': (torch.float32, (2, 3), 'NoneType', True, [1.541, -0.2934, -2.1788, 0.5684, -1.0845, -1.3986])})",
    "('MulBackward0', {'_saved_other': (torch.float32, (2, 3), 'NoneType', False, [-0.8567, 1.1006, -1.0712, 0.1227, -0.5663, 0.3731]), '_saved_self': None})",
    "('MulBackward0', {'_saved_other': None, '_saved_self': (torch.float32, (2, 3), 'NoneType', False, [-0.8567, 1.1006, -1.0712, 0.1227, -0.5663, 0.3731])})",
    "('MulBackward0', {'_saved_other': (torch.int64, (), 'NoneType', False, [2]), '_saved_self': None})",
    "('MulBackward0', {'_saved_other': (torch.float64, (), 'NoneType', False, [2.5]), '_saved_self': None})",
    "('DivBackward0', {'_saved_other': (torch.float32, (2, 3), 'NoneType', True, [0.4033, 0.838, -0.7193, -0.4033, -0.5966, 0.182]), '_saved_self': (torch.float32, (2, 3), 'NoneType', True, [1.541, -0.2934, -2.1788, 0.5684, -1.0845, -1.3986])})",
    "('DivBackward0', {'_saved_other': (torch.float32, (2, 3), 'NoneType', True, [1.541, -0.2934, -2.1788, 0.5684, -1.0845, -1.3986]), '_saved_self': (torch.float32, (2, 3), 'NoneType', False, [-0.8567, 1.1006, -1.0712, 0.1227, -0.5663, 0.3731])})",
    "('DivBackward0', {'_saved_other': (torch.float32, (2, 3), 'NoneType', False, [-0.8567, 1.1006, -1.0712, 0.1227, -0.5663, 0.3731]), '_saved_self': None})",
    "('PowBackward1', {'_saved_exponent': (torch.float32, (2, 3), 'NoneType', True, [0.4033, 0.838, -0.7193, -0.4033, -0.5966, 0.182]), '_saved_result': (torch.float32, (2, 3), 'PowBackward1', True, [1.1906, nan, nan, 1.2559, nan, nan]), '_saved_self': (torch.float32, (2, 3), 'NoneType', True, [1.541, -0.2934, -2.1788, 0.5684, -1.0845, -1.3986])})",
    "('PowBackward1', {'_saved_exponent': (torch.float32, (2, 3), 'NoneType', False, [-0.8567, 1.1006, -1.0712, 0.1227, -0.5663, 0.3731]), '_saved_result': (torch.float32, (2, 3), 'PowBackward1', True, [0.6904, nan, nan, 0.933, nan, nan]), '_saved_self': (torch.float32, (2, 3), 'NoneType', True, [1.541, -0.2934, -2.1788, 0.5684, -1.0845, -1.3986])})",
    "('PowBackward1', {'_saved_exponent': (torch.float32, (2, 3), 'NoneType', True, [1.541, -0.2934, -2.1788, 0.5684, -1.0845, -1.3986]), '_saved_result': (torch.float32, (2, 3), 'PowBackward1', True, [nan, 0.9723, nan, 0.3034, nan, 3.9703]), '_saved_self': (torch.float32, (2, 3), 'NoneType', False, [-0.8567, 1.1006, -1.0712, 0.1227, -0.5663, 0.3731])})",
    "('MmBackward0', {'_saved_mat2': (torch.float32, (3, 2), 'NoneType', True, [0.1919, 1.2638, -1.2904, -0.7911, -0.0209, -0.7185]), '_saved_self': (torch.float32, (2, 3), 'NoneType', True, [-0.892, -1.5091, 0.3704, 1.4565, 0.9398, 0.7748])})",
    "('AddmmBackward0', {'_saved_alpha': 2, '_saved_beta': 3, '_saved_mat1': (torch.float32, (2, 3), 'NoneType', True, [-0.892, -1.5091, 0.3704, 1.4565, 0.9398, 0.7748]), '_saved_mat2': (torch.float32, (3, 2), 'NoneType', True, [0.1919, 1.2638, -1.2904, -0.7911, -0.0209, -0.7185])})",
    "('AddmmBackward0', {'_saved_alpha': 1, '_saved_beta': 1, '_saved_mat1': (torch.float32, (2, 3), 'NoneType', False, [-0.892, -1.5091, 0.3704, 1.4565, 0.9398, 0.7748]), '_saved_mat2': None})",
    "('ExpBackward0', {'_saved_result': (torch.float32, (2, 3), 'ExpBackward0', True, [4.6692, 0.7457, 0.1132, 1.7655, 0.3381, 0.2469])})",
    "('SinBackward0', {'_saved_self': (torch.float32, (2, 3), 'NoneType', True, [1.541, -0.2934, -2.1788, 0.5684, -1.0845, -1.3986])})",
    "('CosBackward0', {'_saved_self': (torch.float32, (2, 3), 'NoneType', True, [1.541, -0.2934, -2.1788, 0.5684, -1.0845, -1.3986])})",
    "('AbsBackward0', {'_saved_self': (torch.float32, (2, 3), 'NoneType', True, [1.541, -0.2934, -2.1788, 0.5684, -1.0845, -1.3986])})",
    "('TanhBackward0', {'_saved_result': (torch.float32, (2, 3), 'TanhBackward0', True, [0.9123, -0.2853, -0.9747, 0.5142, -0.7949, -0.885])})",
    "('SigmoidBackward0', {'_saved_result': (torch.float32, (2, 3), 'SigmoidBackward0', True, [0.8236, 0.4272, 0.1017, 0.6384, 0.2527, 0.198])})",
    "('SqrtBackward0', {'_saved_result': (torch.float32, (2, 3), 'SqrtBackward0', True, [1.2414, 0.5417, 1.4761, 0.7539, 1.0414, 1.1826])})",
    "('LogBackward0', {'_saved_self': (torch.float32, (2, 3), 'AbsBackward0', True, [1.541, 0.2934, 2.1788, 0.5684, 1.0845, 1.3986])})",
    "('ReluBackward0', {'_saved_result': (torch.float32, (2, 3), 'ReluBackward0', True, [1.541, 0.0, 0.0, 0.5684, 0.0, 0.0])})",
    '(True, True)',
    '(True, True)',
    '(True, False, True, 0)',
    '(True, 1)',
    'ERR RuntimeError one of the variables needed for gradient computation has been modified by an inplace operation: [torch.FloatTensor [2, 3]], which is output 0 of Exp, is at version 1; expected version 0 instead. Hint: enable anomaly detection to find the operation that failed to compute its gradient, with torch.autograd.set_detect_anomaly(True, check_nan=False).',
    'ERR RuntimeError one of the variables needed for gradient computation has been modified by an inplace operation: [torch.FloatTensor [2, 3]], which is output 0 of Mul, is at version 1; expected version 0 instead. Hint: enable anomaly detection to find the operation that failed to compute its gradient, with torch.autograd.set_detect_anomaly(True, check_nan=False).',
    'ERR RuntimeError Trying to backward through the graph a second time (or directly access saved tensors after they have already been freed). Saved intermediate values of the graph are freed when you call .backward() or autograd.grad(). Specify retain_graph=True if you need to backward through the graph a second time or if you need to access saved tensors after calling backward.',
    'ERR RuntimeError Trying to backward through the graph a second time (or directly access saved tensors after they have already been freed). Saved intermediate values of the graph are freed when you call .backward() or autograd.grad(). Specify retain_graph=True if you need to backward through the graph a second time or if you need to access saved tensors after calling backward.',
    'None',
    'ERR RuntimeError Trying to backward through the graph a second time (or directly access saved tensors after they have already been freed). Saved intermediate values of the graph are freed when you call .backward() or autograd.grad(). Specify retain_graph=True if you need to backward through the graph a second time or if you need to access saved tensors after calling backward.',
    '(2, 1)',
    'True',
    "ERR AttributeError 'SinBackward0' object has no attribute '_saved_result'",
]


def test_saved_tensors_as_pytorch():
    check_transcript(_transcript(funcgrad), EXPECTED)


@pytest.mark.torch
def test_recorded_transcript_is_pytorchs():
    check_transcript(torch_transcript(_transcript), EXPECTED)
