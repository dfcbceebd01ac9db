"""``funcgrad.<name>_``: the in-place functions PyTorch exposes beside its methods
(``torch.exp_(x)`` is ``x.exp_()``), generated from the methods (funcgrad/_ops/more5.py). One
script calls each on fresh inputs and shows the result, whether it is the input itself, the
input's values (to 4 places: a libm may differ in the last bit) and version
afterwards, and the errors PyTorch's parser and autograd give; its
transcript was recorded from PyTorch 2.13 (and is re-recorded where torch is installed)."""

import pytest

import funcgrad
from funcgrad._ops.more5 import INPLACE_FUNCTIONS

from ._rows import check_transcript, shower, torch_transcript

# the arguments after ``input`` each call gives (PyTorch's ``torch.<name>_`` takes the method's)
_CALLS = {
    "addmv_": "(x2, torch.ones(2, 3), torch.ones(3))", "clamp_": "(x, min=0)", "clamp_max_": "(x, 1.0)",
    "clamp_min_": "(x, 0.0)", "clip_": "(x, 0, 1)", "fill_": "(x, 2)", "ldexp_": "(x, torch.tensor([1, 2, 3]))",
    "logit_": "(x01, eps=0.1)", "index_put_": "(x, (torch.tensor([0]),), torch.tensor(5.0))",
    "xlogy_": "(x, 2)", "round_": "(x, decimals=1)", "as_strided_": "(x, (2,), (1,), 1)",
    "resize_as_": "(x, torch.ones(2))",
}
_UNIT = {"acos_", "arccos_", "asin_", "arcsin_", "atanh_", "arctanh_", "logit_", "erf_"}


def _transcript(torch):
    out = []

    show = shower(out)

    for name in INPLACE_FUNCTIONS:
        x = torch.tensor([0.25, -0.5, 2.0] if name not in _UNIT else [0.25, -0.5, 0.75])
        if name == "acosh_" or name == "arccosh_":
            x = torch.tensor([1.5, 2.0, 3.0])
        x01, x2 = torch.tensor([0.25, 0.5, 0.75]), torch.zeros(2)
        env = {"torch": torch, "x": x, "x01": x01, "x2": x2}
        call = f"torch.{name}{_CALLS.get(name, '(x)')}"
        target = {"addmv_": x2, "logit_": x01}.get(name, x)

        def run(call=call, env=env, target=target):
            r = eval(call, env)  # noqa: S307  (the script's own expressions)
            return (r, r is target, [round(v, 4) for v in target.tolist()], target._version)
        show(run)
    x = torch.tensor([1.0, 2.0])
    show(lambda: torch.exp_(input=x))
    show(lambda: torch.exp_(1))
    show(lambda: torch.zero_("a"))
    show(lambda: torch.exp_(input=[1.0]))
    w = torch.ones(2, requires_grad=True)
    show(lambda: torch.sigmoid_(w))
    show(lambda: (w.tolist(), w._version))
    y = w * 1
    show(lambda: (torch.tanh_(y), y.grad_fn.name()))
    return out


EXPECTED = [
    '(tensor([0.2500, 0.5000, 2.0000]), True, [0.25, 0.5, 2.0], 1)',
    '(tensor([1.3181, 2.0944, 0.7227]), True, [1.3181, 2.0944, 0.7227], 1)',
    '(tensor([0.9624, 1.3170, 1.7627]), True, [0.9624, 1.317, 1.7627], 1)',
    '(tensor([3., 3.]), True, [3.0, 3.0], 1)',
    '(tensor([1.3181, 2.0944, 0.7227]), True, [1.3181, 2.0944, 0.7227], 1)',
    '(tensor([0.9624, 1.3170, 1.7627]), True, [0.9624, 1.317, 1.7627], 1)',
    '(tensor([ 0.2527, -0.5236,  0.8481]), True, [0.2527, -0.5236, 0.8481], 1)',
    '(tensor([ 0.2475, -0.4812,  1.4436]), True, [0.2475, -0.4812, 1.4436], 1)',
    '(tensor([ 0.2450, -0.4636,  1.1071]), True, [0.245, -0.4636, 1.1071], 1)',
    '(tensor([ 0.2554, -0.5493,  0.9730]), True, [0.2554, -0.5493, 0.973], 1)',
    '(tensor([-0.5000,  2.0000]), True, [-0.5, 2.0], 1)',
    '(tensor([ 0.2527, -0.5236,  0.8481]), True, [0.2527, -0.5236, 0.8481], 1)',
    '(tensor([ 0.2475, -0.4812,  1.4436]), True, [0.2475, -0.4812, 1.4436], 1)',
    '(tensor([ 0.2450, -0.4636,  1.1071]), True, [0.245, -0.4636, 1.1071], 1)',
    '(tensor([ 0.2554, -0.5493,  0.9730]), True, [0.2554, -0.5493, 0.973], 1)',
    '(tensor([1., -0., 2.]), True, [1.0, -0.0, 2.0], 1)',
    '(tensor([0.2500, 0.0000, 2.0000]), True, [0.25, 0.0, 2.0], 1)',
    '(tensor([ 0.2500, -0.5000,  1.0000]), True, [0.25, -0.5, 1.0], 1)',
    '(tensor([0.2500, 0.0000, 2.0000]), True, [0.25, 0.0, 2.0], 1)',
    '(tensor([0.2500, 0.0000, 1.0000]), True, [0.25, 0.0, 1.0], 1)',
    '(tensor([ 0.9689,  0.8776, -0.4161]), True, [0.9689, 0.8776, -0.4161], 1)',
    '(tensor([1.0314, 1.1276, 3.7622]), True, [1.0314, 1.1276, 3.7622], 1)',
    '(tensor([ 0.0044, -0.0087,  0.0349]), True, [0.0044, -0.0087, 0.0349], 1)',
    '(tensor([ 0.2500, -0.5000,  2.0000]), True, [0.25, -0.5, 2.0], 0)',
    '(tensor([ 0.2763, -0.5205,  0.7112]), True, [0.2763, -0.5205, 0.7112], 1)',
    '(tensor([0.7237, 1.5205, 0.0047]), True, [0.7237, 1.5205, 0.0047], 1)',
    '(tensor([1.1892, 0.7071, 4.0000]), True, [1.1892, 0.7071, 4.0], 1)',
    '(tensor([1.2840, 0.6065, 7.3891]), True, [1.284, 0.6065, 7.3891], 1)',
    '(tensor([ 0.2840, -0.3935,  6.3891]), True, [0.284, -0.3935, 6.3891], 1)',
    '(tensor([2., 2., 2.]), True, [2.0, 2.0, 2.0], 1)',
    '(tensor([0., -0., 2.]), True, [0.0, -0.0, 2.0], 1)',
    '(tensor([ 0., -1.,  2.]), True, [0.0, -1.0, 2.0], 1)',
    '(tensor([ 0.2500, -0.5000,  0.0000]), True, [0.25, -0.5, 0.0], 1)',
    '(tensor([1.0157, 1.0635, 2.2796]), True, [1.0157, 1.0635, 2.2796], 1)',
    '(tensor([ 5.0000, -0.5000,  2.0000]), True, [5.0, -0.5, 2.0], 1)',
    '(tensor([ 0.5000, -2.0000, 16.0000]), True, [0.5, -2.0, 16.0], 1)',
    '(tensor([-0.6021,     nan,  0.3010]), True, [-0.6021, nan, 0.301], 1)',
    '(tensor([ 0.2231, -0.6931,  1.0986]), True, [0.2231, -0.6931, 1.0986], 1)',
    '(tensor([-2., nan,  1.]), True, [-2.0, nan, 1.0], 1)',
    '(tensor([-1.3863,     nan,  0.6931]), True, [-1.3863, nan, 0.6931], 1)',
    '(tensor([-1.0986,  0.0000,  1.0986]), True, [-1.0986, 0.0, 1.0986], 1)',
    '(tensor([ 0.2500, -0.5000,  2.0000]), True, [0.25, -0.5, 2.0], 1)',
    '(tensor([-0.2500,  0.5000, -2.0000]), True, [-0.25, 0.5, -2.0], 1)',
    '(tensor([-0.2500,  0.5000, -2.0000]), True, [-0.25, 0.5, -2.0], 1)',
    '(tensor([ 14.3239, -28.6479, 114.5916]), True, [14.3239, -28.6479, 114.5916], 1)',
    '(tensor([ 4.0000, -2.0000,  0.5000]), True, [4.0, -2.0, 0.5], 1)',
    '(tensor([ 0.2500, -0.5000]), True, [0.25, -0.5], 1)',
    '(tensor([ 0.2000, -0.5000,  2.0000]), True, [0.2, -0.5, 2.0], 1)',
    '(tensor([2.0000,    nan, 0.7071]), True, [2.0, nan, 0.7071], 1)',
    '(tensor([0.5622, 0.3775, 0.8808]), True, [0.5622, 0.3775, 0.8808], 1)',
    '(tensor([ 0.2474, -0.4794,  0.9093]), True, [0.2474, -0.4794, 0.9093], 1)',
    '(tensor([9.0032e-01, 6.3662e-01, 2.7828e-08]), True, [0.9003, 0.6366, 0.0], 1)',
    '(tensor([ 0.2526, -0.5211,  3.6269]), True, [0.2526, -0.5211, 3.6269], 1)',
    '(tensor([0.5000,    nan, 1.4142]), True, [0.5, nan, 1.4142], 1)',
    '(tensor([0.0625, 0.2500, 4.0000]), True, [0.0625, 0.25, 4.0], 1)',
    '(tensor([ 0.2553, -0.5463, -2.1850]), True, [0.2553, -0.5463, -2.185], 1)',
    '(tensor([ 0.2449, -0.4621,  0.9640]), True, [0.2449, -0.4621, 0.964], 1)',
    '(tensor([0., -0., 2.]), True, [0.0, -0.0, 2.0], 1)',
    '(tensor([ 0.1733, -0.3466,  1.3863]), True, [0.1733, -0.3466, 1.3863], 1)',
    '(tensor([0., 0., 0.]), True, [0.0, 0.0, 0.0], 1)',
    'tensor([2.7183, 7.3891])',
    "ERR TypeError exp_(): argument 'input' (position 1) must be Tensor, not int",
    "ERR TypeError zero_(): argument 'input' (position 1) must be Tensor, not str",
    "ERR TypeError exp_(): argument 'input' must be Tensor, not list",
    'ERR RuntimeError a leaf Variable that requires grad is being used in an in-place operation.',
    '([1.0, 1.0], 0)',
    "(tensor([0.7616, 0.7616], grad_fn=<TanhBackward0>), 'TanhBackward0')",
]


def test_inplace_functions_as_pytorch():
    check_transcript(_transcript(funcgrad), EXPECTED)


@pytest.mark.torch
def test_recorded_transcript_is_pytorchs():
    check_transcript(torch_transcript(_transcript), EXPECTED)
