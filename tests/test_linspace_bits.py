"""``linspace`` gives PyTorch's CPU values bit for bit (its kernel's fused multiply-adds from both
ends), so do ``arange``'s floats (its vectorized lanes included) and ``affine_grid``'s base grid (PyTorch's linspace, scaled in the dtype). Before,
jnp.linspace rounded otherwise: ``linspace(-pi, pi, 2000)`` of the PyTorch polynomial tutorials
differed in 1206 of its 2000 values, and the Spatial Transformer tutorial's identity affine_grid in
448 of 1568, which moved grid_sample's one-sided gradients to the other cell (its second training
loss 2.290801, PyTorch's 2.286732). ``EXPECTED`` recorded from PyTorch 2.13 (re-run on torch where
it is installed)."""

import hashlib
import math

import pytest

import funcgrad

from ._rows import check_transcript, shower, torch_transcript


def _transcript(torch):
    out = []
    show = shower(out)

    def bits(t):
        return hashlib.sha256(t.detach().numpy().tobytes()).hexdigest()[:16]

    inf, nan = float("inf"), float("nan")
    for args in [(-math.pi, math.pi, 2000), (0.0, 2 * math.pi, 25), (-1, 1, 28), (0, 1, 1000), (3, -7, 77),
                 (-5, 5, 70001), (-1e-30, 1e30, 50)]:
        for dt in (torch.float32, torch.float64):
            show(lambda args=args, dt=dt: (args, str(dt), bits(torch.linspace(*args, dtype=dt))))
    for args in [(-1, 1, 7), (0.1, 0.7, 5), (0, inf, 5), (nan, 1, 3), (0, 1, 1), (0, 1, 0), (2.5, 2.5, 3)]:
        show(lambda args=args: torch.linspace(*args).tolist())
        show(lambda args=args: torch.linspace(*args, dtype=torch.float64).tolist())
    show(lambda: torch.linspace(0, 1, 5, requires_grad=True))
    threads = torch.get_num_threads()
    torch.set_num_threads(2)   # (an arange over 32768 elements is vectorized per thread's chunk)
    try:
        for args in [(-3.7, 5.0, 0.3), (0, 1, 0.1), (5, -5, -0.7), (-2, 2, 1e-4), (1.5, 700.0, 0.01),
                     (0.25, 1000.5, 0.0125)]:
            for dt in (torch.float32, torch.float64):
                show(lambda args=args, dt=dt: (args, str(dt), bits(torch.arange(*args, dtype=dt))))
    finally:
        torch.set_num_threads(threads)
    show(lambda: torch.arange(-3.7, 5.0, 0.3)[:20].tolist())
    show(lambda: torch.arange(0, 2, 0.1, dtype=torch.float64)[16:].tolist())
    theta = torch.tensor([[[1.0, 0, 0], [0, 1, 0]]])
    for ac in (False, True):
        show(lambda ac=ac: bits(torch.nn.functional.affine_grid(theta, (1, 1, 28, 28), align_corners=ac)))
        show(lambda ac=ac: bits(torch.nn.functional.affine_grid(theta.double(), (1, 1, 7, 9), align_corners=ac)))
    return out


EXPECTED = [
    "((-3.141592653589793, 3.141592653589793, 2000), 'torch.float32', '015ad3d111e14c15')",
    "((-3.141592653589793, 3.141592653589793, 2000), 'torch.float64', '2d864e18202a3a05')",
    "((0.0, 6.283185307179586, 25), 'torch.float32', '03b56c39d63e98a0')",
    "((0.0, 6.283185307179586, 25), 'torch.float64', 'e6a2b68ac57afd4b')",
    "((-1, 1, 28), 'torch.float32', 'f6dceeb428862885')",
    "((-1, 1, 28), 'torch.float64', 'a850a68e8458925a')",
    "((0, 1, 1000), 'torch.float32', '62198d533f55dc39')",
    "((0, 1, 1000), 'torch.float64', '5bc0e324fd665827')",
    "((3, -7, 77), 'torch.float32', 'ae2391ebc3d4079e')",
    "((3, -7, 77), 'torch.float64', 'b3f1b6744e1ad3ec')",
    "((-5, 5, 70001), 'torch.float32', 'ac8513297427062f')",
    "((-5, 5, 70001), 'torch.float64', 'dae45c7769e7128f')",
    "((-1e-30, 1e+30, 50), 'torch.float32', '6abeb7e7f9515b25')",
    "((-1e-30, 1e+30, 50), 'torch.float64', '903313b984406970')",
    '[-1.0, -0.6666666269302368, -0.3333333134651184, '
    '-2.9802322387695312e-08, 0.3333333134651184, 0.6666666269302368, 1.0]',
    '[-1.0, -0.6666666666666667, -0.33333333333333337, '
    '5.551115123125783e-17, 0.33333333333333337, 0.6666666666666667, 1.0]',
    '[0.10000000149011612, 0.25, 0.4000000059604645, 0.550000011920929, 0.699999988079071]',
    '[0.1, 0.25, 0.39999999999999997, 0.5499999999999999, 0.7]',
    '[nan, inf, nan, nan, nan]',
    '[nan, inf, nan, nan, nan]',
    '[nan, nan, nan]',
    '[nan, nan, nan]',
    '[0.0]',
    '[0.0]',
    '[]',
    '[]',
    '[2.5, 2.5, 2.5]',
    '[2.5, 2.5, 2.5]',
    'tensor([0.0000, 0.2500, 0.5000, 0.7500, 1.0000], requires_grad=True)',
    "((-3.7, 5.0, 0.3), 'torch.float32', '1be8d08513c3472e')",
    "((-3.7, 5.0, 0.3), 'torch.float64', '59d3d2ae06454147')",
    "((0, 1, 0.1), 'torch.float32', 'c19f968c36d3f235')",
    "((0, 1, 0.1), 'torch.float64', 'd85b1587701bb28f')",
    "((5, -5, -0.7), 'torch.float32', 'c4b302d5578f36c3')",
    "((5, -5, -0.7), 'torch.float64', '97523a2fc72dc9ab')",
    "((-2, 2, 0.0001), 'torch.float32', '39bd86e2c3a37ff9')",
    "((-2, 2, 0.0001), 'torch.float64', '04b4e56dbba07cc3')",
    "((1.5, 700.0, 0.01), 'torch.float32', '1b6fdd97ba636563')",
    "((1.5, 700.0, 0.01), 'torch.float64', 'cf81c8d724d132bf')",
    "((0.25, 1000.5, 0.0125), 'torch.float32', '9df5320b39dbe7df')",
    "((0.25, 1000.5, 0.0125), 'torch.float64', '943481d6639fa69f')",
    '[-3.700000047683716, -3.4000000953674316, -3.1000001430511475, -2.799999952316284, -2.5, -2.200000047683716, -1.9000000953674316, -1.600000023841858, -1.2999999523162842, -0.9999999403953552, '
    '-0.6999999284744263, -0.3999999463558197, -0.09999994933605194, 0.20000004768371582, 0.5000000596046448, 0.8000000715255737, 1.100000023841858, 1.399999976158142, 1.7000000476837158, 2.0]',
    '[1.6, 1.7000000000000002, 1.8, 1.9000000000000001]',
    '5c3e0ae589642cf0',
    '2ceb688b8d8ebdf3',
    '6e8663ecaf826e2f',
    '75a195b7938c9fa5',
]


def test_linspace_and_affine_grid_bits_are_pytorchs():
    check_transcript(_transcript(funcgrad), EXPECTED)


@pytest.mark.torch
def test_recorded_transcript_is_pytorchs():
    check_transcript(torch_transcript(_transcript), EXPECTED)
