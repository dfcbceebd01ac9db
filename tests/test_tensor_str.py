"""Tests for funcgrad._tensor_str (PyTorch-compatible tensor printing).

The expected strings in ``CASES`` were produced by ``repr()`` of real PyTorch
2.13 tensors holding the same values (with ``dtype=torch.`` spelled
``dtype=funcgrad.``), so this file does not need torch. The last test compares
against a live torch install when one is available.
"""

import numpy as np
import pytest

from funcgrad import _tensor_str as ts


@pytest.fixture(autouse=True)
def _default_printoptions():
    # Print options are global state; never let one test leak into another.
    ts.set_printoptions(profile="default")
    yield
    ts.set_printoptions(profile="default")


# (make array, dtype_name, is_default_dtype, suffixes, set_printoptions kwargs,
#  extra format_tensor kwargs, expected repr)
CASES = [
    pytest.param(
        lambda: np.array(1.5, np.float32),
        'float32', True, [], {}, {},
        'tensor(1.5000)',
        id='0d-float',
    ),
    pytest.param(
        lambda: np.array(1, np.int64),
        'int64', True, [], {}, {},
        'tensor(1)',
        id='0d-int',
    ),
    pytest.param(
        lambda: np.array(True),
        'bool', True, [], {}, {},
        'tensor(True)',
        id='0d-bool',
    ),
    pytest.param(
        lambda: np.array(np.nan, np.float32),
        'float32', True, [], {}, {},
        'tensor(nan)',
        id='0d-nan',
    ),
    pytest.param(
        lambda: np.array(-0.0, np.float32),
        'float32', True, [], {}, {},
        'tensor(-0.)',
        id='0d-neg-zero',
    ),
    pytest.param(
        lambda: np.array(2.0, np.float64),
        'float64', False, [], {}, {},
        'tensor(2., dtype=funcgrad.float64)',
        id='0d-float64',
    ),
    pytest.param(
        lambda: np.array([1.0, 2.0, 3.0], np.float32),
        'float32', True, [], {}, {},
        'tensor([1., 2., 3.])',
        id='1d-integral-floats',
    ),
    pytest.param(
        lambda: np.array([1, 2], np.int64),
        'int64', True, [], {}, {},
        'tensor([1, 2])',
        id='1d-int',
    ),
    pytest.param(
        lambda: np.array([True, False, True]),
        'bool', True, [], {}, {},
        'tensor([ True, False,  True])',
        id='1d-bool',
    ),
    pytest.param(
        lambda: np.array([0.1, -2.5, 3.14159], np.float32),
        'float32', True, [], {}, {},
        'tensor([ 0.1000, -2.5000,  3.1416])',
        id='1d-mixed-float',
    ),
    pytest.param(
        lambda: np.array([-1.0, 0.0, 2.0, -30.0], np.float32),
        'float32', True, [], {}, {},
        'tensor([ -1.,   0.,   2., -30.])',
        id='1d-negative-integral',
    ),
    pytest.param(
        lambda: np.array([1e-5, 1.0], np.float32),
        'float32', True, [], {}, {},
        'tensor([1.0000e-05, 1.0000e+00])',
        id='sci-small',
    ),
    pytest.param(
        lambda: np.array([1e9, 1.0], np.float32),
        'float32', True, [], {}, {},
        'tensor([1.0000e+09, 1.0000e+00])',
        id='sci-large',
    ),
    pytest.param(
        lambda: np.array([0.001, 10.5], np.float32),
        'float32', True, [], {}, {},
        'tensor([1.0000e-03, 1.0500e+01])',
        id='sci-ratio',
    ),
    pytest.param(
        lambda: np.array([1.0, 12345.0], np.float32),
        'float32', True, [], {}, {},
        'tensor([1.0000e+00, 1.2345e+04])',
        id='sci-integral',
    ),
    pytest.param(
        lambda: np.array([0.0, np.inf, -np.inf, np.nan], np.float32),
        'float32', True, [], {}, {},
        'tensor([0., inf, -inf, nan])',
        id='nonfinite-integral',
    ),
    pytest.param(
        lambda: np.array([1.5, np.nan, -np.inf, 2.25], np.float32),
        'float32', True, [], {}, {},
        'tensor([1.5000,    nan,   -inf, 2.2500])',
        id='nonfinite-fraction',
    ),
    pytest.param(
        lambda: np.zeros(3, np.float32),
        'float32', True, [], {}, {},
        'tensor([0., 0., 0.])',
        id='all-zero',
    ),
    pytest.param(
        lambda: np.array([[0.5, -1.25, 3.0], [100.125, 0.0, -7.5]], np.float32),
        'float32', True, [], {}, {},
        (
            'tensor([[  0.5000,  -1.2500,   3.0000],\n'
            '        [100.1250,   0.0000,  -7.5000]])'
        ),
        id='2d-float',
    ),
    pytest.param(
        lambda: np.array([[1, -20, 300], [-4000, 5, 6]], np.int64),
        'int64', True, [], {}, {},
        (
            'tensor([[    1,   -20,   300],\n'
            '        [-4000,     5,     6]])'
        ),
        id='2d-int-negative',
    ),
    pytest.param(
        lambda: (np.arange(12, dtype=np.float32).reshape(2, 2, 3) - 5.5) / 4,
        'float32', True, [], {}, {},
        (
            'tensor([[[-1.3750, -1.1250, -0.8750],\n'
            '         [-0.6250, -0.3750, -0.1250]],\n'
            '\n'
            '        [[ 0.1250,  0.3750,  0.6250],\n'
            '         [ 0.8750,  1.1250,  1.3750]]])'
        ),
        id='3d-float',
    ),
    pytest.param(
        lambda: np.arange(16, dtype=np.int64).reshape(2, 2, 2, 2),
        'int64', True, [], {}, {},
        (
            'tensor([[[[ 0,  1],\n'
            '          [ 2,  3]],\n'
            '\n'
            '         [[ 4,  5],\n'
            '          [ 6,  7]]],\n'
            '\n'
            '\n'
            '        [[[ 8,  9],\n'
            '          [10, 11]],\n'
            '\n'
            '         [[12, 13],\n'
            '          [14, 15]]]])'
        ),
        id='4d-int',
    ),
    pytest.param(
        lambda: np.arange(2000, dtype=np.int64),
        'int64', True, [], {}, {},
        'tensor([   0,    1,    2,  ..., 1997, 1998, 1999])',
        id='summarized-arange-2000',
    ),
    pytest.param(
        lambda: ((np.arange(10000, dtype=np.float64) * 7919 % 2001 - 1000) / 337).astype(np.float32).reshape(100, 100),
        'float32', True, [], {}, {},
        (
            'tensor([[-2.9674,  2.7181,  2.4659,  ...,  2.2552,  2.0030,  1.7507],\n'
            '        [ 1.4985,  1.2463,  0.9941,  ...,  0.7834,  0.5312,  0.2789],\n'
            '        [ 0.0267, -0.2255, -0.4777,  ..., -0.6884, -0.9407, -1.1929],\n'
            '        ...,\n'
            '        [ 2.7092,  2.4570,  2.2047,  ...,  1.9941,  1.7418,  1.4896],\n'
            '        [ 1.2374,  0.9852,  0.7329,  ...,  0.5223,  0.2700,  0.0178],\n'
            '        [-0.2344, -0.4866, -0.7389,  ..., -0.9496, -1.2018, -1.4540]])'
        ),
        id='summarized-100x100',
    ),
    pytest.param(
        lambda: np.arange(2400, dtype=np.float32).reshape(4, 20, 30) / 8,
        'float32', True, [], {}, {},
        (
            'tensor([[[0.0000e+00, 1.2500e-01, 2.5000e-01,  ..., 3.3750e+00,\n'
            '          3.5000e+00, 3.6250e+00],\n'
            '         [3.7500e+00, 3.8750e+00, 4.0000e+00,  ..., 7.1250e+00,\n'
            '          7.2500e+00, 7.3750e+00],\n'
            '         [7.5000e+00, 7.6250e+00, 7.7500e+00,  ..., 1.0875e+01,\n'
            '          1.1000e+01, 1.1125e+01],\n'
            '         ...,\n'
            '         [6.3750e+01, 6.3875e+01, 6.4000e+01,  ..., 6.7125e+01,\n'
            '          6.7250e+01, 6.7375e+01],\n'
            '         [6.7500e+01, 6.7625e+01, 6.7750e+01,  ..., 7.0875e+01,\n'
            '          7.1000e+01, 7.1125e+01],\n'
            '         [7.1250e+01, 7.1375e+01, 7.1500e+01,  ..., 7.4625e+01,\n'
            '          7.4750e+01, 7.4875e+01]],\n'
            '\n'
            '        [[7.5000e+01, 7.5125e+01, 7.5250e+01,  ..., 7.8375e+01,\n'
            '          7.8500e+01, 7.8625e+01],\n'
            '         [7.8750e+01, 7.8875e+01, 7.9000e+01,  ..., 8.2125e+01,\n'
            '          8.2250e+01, 8.2375e+01],\n'
            '         [8.2500e+01, 8.2625e+01, 8.2750e+01,  ..., 8.5875e+01,\n'
            '          8.6000e+01, 8.6125e+01],\n'
            '         ...,\n'
            '         [1.3875e+02, 1.3888e+02, 1.3900e+02,  ..., 1.4212e+02,\n'
            '          1.4225e+02, 1.4238e+02],\n'
            '         [1.4250e+02, 1.4262e+02, 1.4275e+02,  ..., 1.4588e+02,\n'
            '          1.4600e+02, 1.4612e+02],\n'
            '         [1.4625e+02, 1.4638e+02, 1.4650e+02,  ..., 1.4962e+02,\n'
            '          1.4975e+02, 1.4988e+02]],\n'
            '\n'
            '        [[1.5000e+02, 1.5012e+02, 1.5025e+02,  ..., 1.5338e+02,\n'
            '          1.5350e+02, 1.5362e+02],\n'
            '         [1.5375e+02, 1.5388e+02, 1.5400e+02,  ..., 1.5712e+02,\n'
            '          1.5725e+02, 1.5738e+02],\n'
            '         [1.5750e+02, 1.5762e+02, 1.5775e+02,  ..., 1.6088e+02,\n'
            '          1.6100e+02, 1.6112e+02],\n'
            '         ...,\n'
            '         [2.1375e+02, 2.1388e+02, 2.1400e+02,  ..., 2.1712e+02,\n'
            '          2.1725e+02, 2.1738e+02],\n'
            '         [2.1750e+02, 2.1762e+02, 2.1775e+02,  ..., 2.2088e+02,\n'
            '          2.2100e+02, 2.2112e+02],\n'
            '         [2.2125e+02, 2.2138e+02, 2.2150e+02,  ..., 2.2462e+02,\n'
            '          2.2475e+02, 2.2488e+02]],\n'
            '\n'
            '        [[2.2500e+02, 2.2512e+02, 2.2525e+02,  ..., 2.2838e+02,\n'
            '          2.2850e+02, 2.2862e+02],\n'
            '         [2.2875e+02, 2.2888e+02, 2.2900e+02,  ..., 2.3212e+02,\n'
            '          2.3225e+02, 2.3238e+02],\n'
            '         [2.3250e+02, 2.3262e+02, 2.3275e+02,  ..., 2.3588e+02,\n'
            '          2.3600e+02, 2.3612e+02],\n'
            '         ...,\n'
            '         [2.8875e+02, 2.8888e+02, 2.8900e+02,  ..., 2.9212e+02,\n'
            '          2.9225e+02, 2.9238e+02],\n'
            '         [2.9250e+02, 2.9262e+02, 2.9275e+02,  ..., 2.9588e+02,\n'
            '          2.9600e+02, 2.9612e+02],\n'
            '         [2.9625e+02, 2.9638e+02, 2.9650e+02,  ..., 2.9962e+02,\n'
            '          2.9975e+02, 2.9988e+02]]])'
        ),
        id='summarized-3d',
    ),
    pytest.param(
        lambda: np.arange(30, dtype=np.float32) / 7,
        'float32', True, [], {}, {},
        (
            'tensor([0.0000, 0.1429, 0.2857, 0.4286, 0.5714, 0.7143, 0.8571, 1.0000, 1.1429,\n'
            '        1.2857, 1.4286, 1.5714, 1.7143, 1.8571, 2.0000, 2.1429, 2.2857, 2.4286,\n'
            '        2.5714, 2.7143, 2.8571, 3.0000, 3.1429, 3.2857, 3.4286, 3.5714, 3.7143,\n'
            '        3.8571, 4.0000, 4.1429])'
        ),
        id='wrap-1d-float',
    ),
    pytest.param(
        lambda: np.arange(50, dtype=np.int64) * 1000 - 20000,
        'int64', True, [], {}, {},
        (
            'tensor([-20000, -19000, -18000, -17000, -16000, -15000, -14000, -13000, -12000,\n'
            '        -11000, -10000,  -9000,  -8000,  -7000,  -6000,  -5000,  -4000,  -3000,\n'
            '         -2000,  -1000,      0,   1000,   2000,   3000,   4000,   5000,   6000,\n'
            '          7000,   8000,   9000,  10000,  11000,  12000,  13000,  14000,  15000,\n'
            '         16000,  17000,  18000,  19000,  20000,  21000,  22000,  23000,  24000,\n'
            '         25000,  26000,  27000,  28000,  29000])'
        ),
        id='wrap-1d-int',
    ),
    pytest.param(
        lambda: np.arange(40, dtype=np.float32).reshape(2, 20) * 1.5,
        'float32', True, [], {}, {},
        (
            'tensor([[ 0.0000,  1.5000,  3.0000,  4.5000,  6.0000,  7.5000,  9.0000, 10.5000,\n'
            '         12.0000, 13.5000, 15.0000, 16.5000, 18.0000, 19.5000, 21.0000, 22.5000,\n'
            '         24.0000, 25.5000, 27.0000, 28.5000],\n'
            '        [30.0000, 31.5000, 33.0000, 34.5000, 36.0000, 37.5000, 39.0000, 40.5000,\n'
            '         42.0000, 43.5000, 45.0000, 46.5000, 48.0000, 49.5000, 51.0000, 52.5000,\n'
            '         54.0000, 55.5000, 57.0000, 58.5000]])'
        ),
        id='wrap-2d-rows',
    ),
    pytest.param(
        lambda: np.array([0.5, 1.25, -3.0, 0.1], np.float16),
        'float16', False, [], {}, {},
        'tensor([ 0.5000,  1.2500, -3.0000,  0.1000], dtype=funcgrad.float16)',
        id='float16',
    ),
    pytest.param(
        lambda: np.array([0.5, 1.25, -3.0, 0.10009765625], np.float32),
        'bfloat16', False, [], {}, {},
        'tensor([ 0.5000,  1.2500, -3.0000,  0.1001], dtype=funcgrad.bfloat16)',
        id='bfloat16',
    ),
    pytest.param(
        lambda: np.array([1 / 3, 2 / 3, 1.0], np.float64),
        'float64', False, [], {}, {},
        'tensor([0.3333, 0.6667, 1.0000], dtype=funcgrad.float64)',
        id='float64',
    ),
    pytest.param(
        lambda: np.array([1, 2, 3], np.int32),
        'int32', False, [], {}, {},
        'tensor([1, 2, 3], dtype=funcgrad.int32)',
        id='int32',
    ),
    pytest.param(
        lambda: np.array([0, 7, 255], np.uint8),
        'uint8', False, [], {}, {},
        'tensor([  0,   7, 255], dtype=funcgrad.uint8)',
        id='uint8',
    ),
    pytest.param(
        lambda: np.array([[-128, 5], [0, 127]], np.int8),
        'int8', False, [], {}, {},
        (
            'tensor([[-128,    5],\n'
            '        [   0,  127]], dtype=funcgrad.int8)'
        ),
        id='int8-2d',
    ),
    pytest.param(
        lambda: np.zeros((0,), np.float32),
        'float32', True, [], {}, {},
        'tensor([])',
        id='empty-1d',
    ),
    pytest.param(
        lambda: np.zeros((0, 3), np.float32),
        'float32', True, [], {}, {},
        'tensor([], size=(0, 3))',
        id='empty-2d',
    ),
    pytest.param(
        lambda: np.zeros((0,), np.int64),
        'int64', True, [], {}, {},
        'tensor([], dtype=funcgrad.int64)',
        id='empty-int64',
    ),
    pytest.param(
        lambda: np.zeros((2, 0), bool),
        'bool', True, [], {}, {},
        'tensor([], size=(2, 0), dtype=funcgrad.bool)',
        id='empty-bool-2d',
    ),
    pytest.param(
        lambda: np.zeros((1, 0, 2), np.float64),
        'float64', False, [], {}, {},
        'tensor([], size=(1, 0, 2), dtype=funcgrad.float64)',
        id='empty-float64-3d',
    ),
    pytest.param(
        lambda: np.full((2, 2), 0.7310586, np.float32),
        'float32', True, ['grad_fn=<SigmoidBackward0>'], {}, {},
        (
            'tensor([[0.7311, 0.7311],\n'
            '        [0.7311, 0.7311]], grad_fn=<SigmoidBackward0>)'
        ),
        id='grad-fn',
    ),
    pytest.param(
        lambda: np.array([1.0, 2.5], np.float32),
        'float32', True, ['requires_grad=True'], {}, {},
        'tensor([1.0000, 2.5000], requires_grad=True)',
        id='requires-grad',
    ),
    pytest.param(
        lambda: np.array([1.0, 2.5], np.float64),
        'float64', False, ['requires_grad=True'], {}, {},
        'tensor([1.0000, 2.5000], dtype=funcgrad.float64, requires_grad=True)',
        id='float64-requires-grad',
    ),
    pytest.param(
        lambda: np.arange(7, dtype=np.float32) / 3 + 100,
        'float32', True, ['grad_fn=<MulBackward0>'], {}, {},
        (
            'tensor([100.0000, 100.3333, 100.6667, 101.0000, 101.3333, 101.6667, 102.0000],\n'
            '       grad_fn=<MulBackward0>)'
        ),
        id='suffix-wraps',
    ),
    pytest.param(
        lambda: np.arange(7, dtype=np.float64) / 3 + 100,
        'float64', False, ['requires_grad=True'], {}, {},
        (
            'tensor([100.0000, 100.3333, 100.6667, 101.0000, 101.3333, 101.6667, 102.0000],\n'
            '       dtype=funcgrad.float64, requires_grad=True)'
        ),
        id='dtype-suffix-wraps',
    ),
    pytest.param(
        lambda: np.array([1.12345, -0.5, 3.0], np.float32),
        'float32', True, [], {'precision': 2}, {},
        'tensor([ 1.12, -0.50,  3.00])',
        id='precision-2',
    ),
    pytest.param(
        lambda: np.array([1.6, -0.4], np.float32),
        'float32', True, [], {'precision': 0}, {},
        'tensor([ 2, -0])',
        id='precision-0',
    ),
    pytest.param(
        lambda: np.array([1e-5, 1.0, 123.0], np.float32),
        'float32', True, [], {'sci_mode': False}, {},
        'tensor([  0.0000,   1.0000, 123.0000])',
        id='sci-mode-off',
    ),
    pytest.param(
        lambda: np.array([1.5, 2.0], np.float32),
        'float32', True, [], {'sci_mode': True}, {},
        'tensor([1.5000e+00, 2.0000e+00])',
        id='sci-mode-on',
    ),
    pytest.param(
        lambda: np.arange(10, dtype=np.int64),
        'int64', True, [], {'threshold': 5}, {},
        'tensor([0, 1, 2,  ..., 7, 8, 9])',
        id='threshold-5',
    ),
    pytest.param(
        lambda: np.arange(24, dtype=np.float32).reshape(4, 6) / 9,
        'float32', True, [], {'profile': 'short', 'threshold': 10}, {},
        (
            'tensor([[0.00, 0.11,  ..., 0.44, 0.56],\n'
            '        [0.67, 0.78,  ..., 1.11, 1.22],\n'
            '        [1.33, 1.44,  ..., 1.78, 1.89],\n'
            '        [2.00, 2.11,  ..., 2.44, 2.56]])'
        ),
        id='profile-short',
    ),
    pytest.param(
        lambda: np.arange(1100, dtype=np.int64),
        'int64', True, [], {'profile': 'full'}, {},
        (
            'tensor([   0,    1,    2,    3,    4,    5,    6,    7,    8,    9,   10,   11,\n'
            '          12,   13,   14,   15,   16,   17,   18,   19,   20,   21,   22,   23,\n'
            '          24,   25,   26,   27,   28,   29,   30,   31,   32,   33,   34,   35,\n'
            '          36,   37,   38,   39,   40,   41,   42,   43,   44,   45,   46,   47,\n'
            '          48,   49,   50,   51,   52,   53,   54,   55,   56,   57,   58,   59,\n'
            '          60,   61,   62,   63,   64,   65,   66,   67,   68,   69,   70,   71,\n'
            '          72,   73,   74,   75,   76,   77,   78,   79,   80,   81,   82,   83,\n'
            '          84,   85,   86,   87,   88,   89,   90,   91,   92,   93,   94,   95,\n'
            '          96,   97,   98,   99,  100,  101,  102,  103,  104,  105,  106,  107,\n'
            '         108,  109,  110,  111,  112,  113,  114,  115,  116,  117,  118,  119,\n'
            '         120,  121,  122,  123,  124,  125,  126,  127,  128,  129,  130,  131,\n'
            '         132,  133,  134,  135,  136,  137,  138,  139,  140,  141,  142,  143,\n'
            '         144,  145,  146,  147,  148,  149,  150,  151,  152,  153,  154,  155,\n'
            '         156,  157,  158,  159,  160,  161,  162,  163,  164,  165,  166,  167,\n'
            '         168,  169,  170,  171,  172,  173,  174,  175,  176,  177,  178,  179,\n'
            '         180,  181,  182,  183,  184,  185,  186,  187,  188,  189,  190,  191,\n'
            '         192,  193,  194,  195,  196,  197,  198,  199,  200,  201,  202,  203,\n'
            '         204,  205,  206,  207,  208,  209,  210,  211,  212,  213,  214,  215,\n'
            '         216,  217,  218,  219,  220,  221,  222,  223,  224,  225,  226,  227,\n'
            '         228,  229,  230,  231,  232,  233,  234,  235,  236,  237,  238,  239,\n'
            '         240,  241,  242,  243,  244,  245,  246,  247,  248,  249,  250,  251,\n'
            '         252,  253,  254,  255,  256,  257,  258,  259,  260,  261,  262,  263,\n'
            '         264,  265,  266,  267,  268,  269,  270,  271,  272,  273,  274,  275,\n'
            '         276,  277,  278,  279,  280,  281,  282,  283,  284,  285,  286,  287,\n'
            '         288,  289,  290,  291,  292,  293,  294,  295,  296,  297,  298,  299,\n'
            '         300,  301,  302,  303,  304,  305,  306,  307,  308,  309,  310,  311,\n'
            '         312,  313,  314,  315,  316,  317,  318,  319,  320,  321,  322,  323,\n'
            '         324,  325,  326,  327,  328,  329,  330,  331,  332,  333,  334,  335,\n'
            '         336,  337,  338,  339,  340,  341,  342,  343,  344,  345,  346,  347,\n'
            '         348,  349,  350,  351,  352,  353,  354,  355,  356,  357,  358,  359,\n'
            '         360,  361,  362,  363,  364,  365,  366,  367,  368,  369,  370,  371,\n'
            '         372,  373,  374,  375,  376,  377,  378,  379,  380,  381,  382,  383,\n'
            '         384,  385,  386,  387,  388,  389,  390,  391,  392,  393,  394,  395,\n'
            '         396,  397,  398,  399,  400,  401,  402,  403,  404,  405,  406,  407,\n'
            '         408,  409,  410,  411,  412,  413,  414,  415,  416,  417,  418,  419,\n'
            '         420,  421,  422,  423,  424,  425,  426,  427,  428,  429,  430,  431,\n'
            '         432,  433,  434,  435,  436,  437,  438,  439,  440,  441,  442,  443,\n'
            '         444,  445,  446,  447,  448,  449,  450,  451,  452,  453,  454,  455,\n'
            '         456,  457,  458,  459,  460,  461,  462,  463,  464,  465,  466,  467,\n'
            '         468,  469,  470,  471,  472,  473,  474,  475,  476,  477,  478,  479,\n'
            '         480,  481,  482,  483,  484,  485,  486,  487,  488,  489,  490,  491,\n'
            '         492,  493,  494,  495,  496,  497,  498,  499,  500,  501,  502,  503,\n'
            '         504,  505,  506,  507,  508,  509,  510,  511,  512,  513,  514,  515,\n'
            '         516,  517,  518,  519,  520,  521,  522,  523,  524,  525,  526,  527,\n'
            '         528,  529,  530,  531,  532,  533,  534,  535,  536,  537,  538,  539,\n'
            '         540,  541,  542,  543,  544,  545,  546,  547,  548,  549,  550,  551,\n'
            '         552,  553,  554,  555,  556,  557,  558,  559,  560,  561,  562,  563,\n'
            '         564,  565,  566,  567,  568,  569,  570,  571,  572,  573,  574,  575,\n'
            '         576,  577,  578,  579,  580,  581,  582,  583,  584,  585,  586,  587,\n'
            '         588,  589,  590,  591,  592,  593,  594,  595,  596,  597,  598,  599,\n'
            '         600,  601,  602,  603,  604,  605,  606,  607,  608,  609,  610,  611,\n'
            '         612,  613,  614,  615,  616,  617,  618,  619,  620,  621,  622,  623,\n'
            '         624,  625,  626,  627,  628,  629,  630,  631,  632,  633,  634,  635,\n'
            '         636,  637,  638,  639,  640,  641,  642,  643,  644,  645,  646,  647,\n'
            '         648,  649,  650,  651,  652,  653,  654,  655,  656,  657,  658,  659,\n'
            '         660,  661,  662,  663,  664,  665,  666,  667,  668,  669,  670,  671,\n'
            '         672,  673,  674,  675,  676,  677,  678,  679,  680,  681,  682,  683,\n'
            '         684,  685,  686,  687,  688,  689,  690,  691,  692,  693,  694,  695,\n'
            '         696,  697,  698,  699,  700,  701,  702,  703,  704,  705,  706,  707,\n'
            '         708,  709,  710,  711,  712,  713,  714,  715,  716,  717,  718,  719,\n'
            '         720,  721,  722,  723,  724,  725,  726,  727,  728,  729,  730,  731,\n'
            '         732,  733,  734,  735,  736,  737,  738,  739,  740,  741,  742,  743,\n'
            '         744,  745,  746,  747,  748,  749,  750,  751,  752,  753,  754,  755,\n'
            '         756,  757,  758,  759,  760,  761,  762,  763,  764,  765,  766,  767,\n'
            '         768,  769,  770,  771,  772,  773,  774,  775,  776,  777,  778,  779,\n'
            '         780,  781,  782,  783,  784,  785,  786,  787,  788,  789,  790,  791,\n'
            '         792,  793,  794,  795,  796,  797,  798,  799,  800,  801,  802,  803,\n'
            '         804,  805,  806,  807,  808,  809,  810,  811,  812,  813,  814,  815,\n'
            '         816,  817,  818,  819,  820,  821,  822,  823,  824,  825,  826,  827,\n'
            '         828,  829,  830,  831,  832,  833,  834,  835,  836,  837,  838,  839,\n'
            '         840,  841,  842,  843,  844,  845,  846,  847,  848,  849,  850,  851,\n'
            '         852,  853,  854,  855,  856,  857,  858,  859,  860,  861,  862,  863,\n'
            '         864,  865,  866,  867,  868,  869,  870,  871,  872,  873,  874,  875,\n'
            '         876,  877,  878,  879,  880,  881,  882,  883,  884,  885,  886,  887,\n'
            '         888,  889,  890,  891,  892,  893,  894,  895,  896,  897,  898,  899,\n'
            '         900,  901,  902,  903,  904,  905,  906,  907,  908,  909,  910,  911,\n'
            '         912,  913,  914,  915,  916,  917,  918,  919,  920,  921,  922,  923,\n'
            '         924,  925,  926,  927,  928,  929,  930,  931,  932,  933,  934,  935,\n'
            '         936,  937,  938,  939,  940,  941,  942,  943,  944,  945,  946,  947,\n'
            '         948,  949,  950,  951,  952,  953,  954,  955,  956,  957,  958,  959,\n'
            '         960,  961,  962,  963,  964,  965,  966,  967,  968,  969,  970,  971,\n'
            '         972,  973,  974,  975,  976,  977,  978,  979,  980,  981,  982,  983,\n'
            '         984,  985,  986,  987,  988,  989,  990,  991,  992,  993,  994,  995,\n'
            '         996,  997,  998,  999, 1000, 1001, 1002, 1003, 1004, 1005, 1006, 1007,\n'
            '        1008, 1009, 1010, 1011, 1012, 1013, 1014, 1015, 1016, 1017, 1018, 1019,\n'
            '        1020, 1021, 1022, 1023, 1024, 1025, 1026, 1027, 1028, 1029, 1030, 1031,\n'
            '        1032, 1033, 1034, 1035, 1036, 1037, 1038, 1039, 1040, 1041, 1042, 1043,\n'
            '        1044, 1045, 1046, 1047, 1048, 1049, 1050, 1051, 1052, 1053, 1054, 1055,\n'
            '        1056, 1057, 1058, 1059, 1060, 1061, 1062, 1063, 1064, 1065, 1066, 1067,\n'
            '        1068, 1069, 1070, 1071, 1072, 1073, 1074, 1075, 1076, 1077, 1078, 1079,\n'
            '        1080, 1081, 1082, 1083, 1084, 1085, 1086, 1087, 1088, 1089, 1090, 1091,\n'
            '        1092, 1093, 1094, 1095, 1096, 1097, 1098, 1099])'
        ),
        id='profile-full',
    ),
    pytest.param(
        lambda: np.arange(60, dtype=np.int64).reshape(3, 4, 5),
        'int64', True, [], {'threshold': 10, 'edgeitems': 1}, {},
        (
            'tensor([[[ 0,  ...,  4],\n'
            '         ...,\n'
            '         [15,  ..., 19]],\n'
            '\n'
            '        ...,\n'
            '\n'
            '        [[40,  ..., 44],\n'
            '         ...,\n'
            '         [55,  ..., 59]]])'
        ),
        id='edgeitems-1',
    ),
    pytest.param(
        lambda: np.arange(60, dtype=np.int64).reshape(3, 4, 5),
        'int64', True, [], {'threshold': 10, 'edgeitems': 0}, {},
        'tensor([...], size=(3, 4, 5))',
        id='edgeitems-0',
    ),
    pytest.param(
        lambda: np.arange(12, dtype=np.float32) / 4,
        'float32', True, [], {'linewidth': 40}, {},
        (
            'tensor([0.0000, 0.2500, 0.5000, 0.7500,\n'
            '        1.0000, 1.2500, 1.5000, 1.7500,\n'
            '        2.0000, 2.2500, 2.5000, 2.7500])'
        ),
        id='linewidth-40',
    ),
    pytest.param(
        lambda: np.array([1 + 2j, -0.5 - 1j, 3j], np.complex64),
        'complex64', True, [], {}, {},
        'tensor([ 1.0000+2.j, -0.5000-1.j,  0.0000+3.j])',
        id='complex64',
    ),
    pytest.param(
        lambda: np.array(1.5 - 2j, np.complex128),
        'complex128', False, [], {}, {},
        'tensor(1.5000-2.j, dtype=funcgrad.complex128)',
        id='complex128-0d',
    ),
    pytest.param(
        lambda: np.array([1.5, 2.0], np.float64),
        'float64', True, [], {}, {},
        'tensor([1.5000, 2.0000])',
        id='default-float64',
    ),
    pytest.param(
        lambda: np.array([1.5, 2.0], np.float32),
        'float32', False, [], {}, {},
        'tensor([1.5000, 2.0000], dtype=funcgrad.float32)',
        id='float32-when-default-float64',
    ),
    pytest.param(
        lambda: np.arange(20, dtype=np.float32).reshape(2, 10) / 3,
        'float32', True, [], {}, {'prefix': 'MyTensor('},
        (
            'MyTensor([[0.0000, 0.3333, 0.6667, 1.0000, 1.3333, 1.6667, 2.0000, 2.3333,\n'
            '           2.6667, 3.0000],\n'
            '          [3.3333, 3.6667, 4.0000, 4.3333, 4.6667, 5.0000, 5.3333, 5.6667,\n'
            '           6.0000, 6.3333]])'
        ),
        id='subclass-prefix',
    ),
]


@pytest.mark.parametrize("make, dtype_name, is_default, suffixes, options, kwargs, expected", CASES)
def test_matches_pytorch_repr(make, dtype_name, is_default, suffixes, options, kwargs, expected):
    if options:
        ts.set_printoptions(**options)
    got = ts.format_tensor(make(), dtype_name=dtype_name, is_default_dtype=is_default,
                           suffixes=suffixes, **kwargs)
    assert got == expected


def test_defaults_and_suffix_order():
    arr = np.array([1.0, 2.0])
    assert ts.format_tensor(arr, dtype_name="float32", is_default_dtype=True) == "tensor([1., 2.])"
    # PyTorch order: device, dtype (size first for empty tensors), then autograd.
    got = ts.format_tensor(arr, dtype_name="float64", is_default_dtype=False,
                           suffixes=["requires_grad=True"], device_suffix="device='cuda:0'")
    assert got == "tensor([1., 2.], device='cuda:0', dtype=funcgrad.float64, requires_grad=True)"
    got = ts.format_tensor(np.zeros((0, 2), np.int32), dtype_name="int32", is_default_dtype=False,
                           device_suffix="device='cuda:0'")
    assert got == "tensor([], device='cuda:0', size=(0, 2), dtype=funcgrad.int32)"


def test_is_default_dtype_ignored_for_int_and_bool():
    for flag in (True, False):
        assert ts.format_tensor(np.array([1, 2]), dtype_name="int64", is_default_dtype=flag) == "tensor([1, 2])"
        assert ts.format_tensor(np.array([1, 2], np.int16), dtype_name="int16",
                                is_default_dtype=flag) == "tensor([1, 2], dtype=funcgrad.int16)"
        assert ts.format_tensor(np.array(False), dtype_name="bool", is_default_dtype=flag) == "tensor(False)"


def test_longer_dtype_name_wraps_by_its_own_length():
    # "funcgrad.int32" is 3 chars longer than "torch.int32": this line fits in
    # PyTorch but not here, so the suffix moves to the next line (same rule).
    arr = np.array([[5975088, -2223385, 16199924, 1017729, 10506297]], np.int32)
    got = ts.format_tensor(arr, dtype_name="int32", is_default_dtype=False)
    assert got == ("tensor([[ 5975088, -2223385, 16199924,  1017729, 10506297]],\n"
                   "       dtype=funcgrad.int32)")


def test_set_and_get_printoptions():
    assert ts.get_printoptions() == {"precision": 4, "threshold": 1000, "edgeitems": 3,
                                     "linewidth": 80, "sci_mode": None}
    ts.set_printoptions(profile="full", precision=6, sci_mode=True)
    opts = ts.get_printoptions()
    assert opts["threshold"] == float("inf") and opts["precision"] == 6 and opts["sci_mode"] is True
    opts["precision"] = 1  # a copy: must not change the live options
    assert ts.get_printoptions()["precision"] == 6
    ts.set_printoptions(linewidth=100)  # like torch, omitting sci_mode resets it
    assert ts.get_printoptions()["sci_mode"] is None
    assert ts.get_printoptions()["linewidth"] == 100
    ts.set_printoptions(profile="short")
    assert ts.get_printoptions() == {"precision": 2, "threshold": 1000, "edgeitems": 2,
                                     "linewidth": 80, "sci_mode": None}
    ts.set_printoptions(**opts | {"precision": 3})  # round-trips as kwargs
    assert ts.get_printoptions()["precision"] == 3


def test_accepts_ml_dtypes_bfloat16_arrays():
    ml_dtypes = pytest.importorskip("ml_dtypes")
    arr = np.array([0.5, 1.25, -3.0, 0.1], np.float32).astype(ml_dtypes.bfloat16)
    got = ts.format_tensor(arr, dtype_name="bfloat16", is_default_dtype=False)
    assert got == "tensor([ 0.5000,  1.2500, -3.0000,  0.1001], dtype=funcgrad.bfloat16)"


def _random_case(rng):
    """A random array/dtype/options combination stressing the formatter."""
    names = ["float32", "float64", "float16", "bfloat16", "int64", "int32", "uint8",
             "bool", "complex64", "complex128"]
    name = str(rng.choice(names))
    ndim = int(rng.integers(0, 5))
    shape = tuple(int(rng.integers(0 if rng.random() < 0.05 else 1, m + 1))
                  for m in [60, 15, 9, 7][4 - ndim:])
    x = rng.standard_normal(shape) * 10.0 ** int(rng.integers(-7, 10))
    if rng.random() < 0.3:
        x = np.round(x)
    if rng.random() < 0.2 and x.size:
        flat = x.reshape(-1)
        flat[rng.integers(0, flat.size, 2)] = rng.choice([np.nan, np.inf, -np.inf, 0.0, -0.0])
    if name.startswith("complex"):
        x = x + 1j * rng.standard_normal(shape) * 10.0 ** int(rng.integers(-3, 4))
    elif name == "bool":
        x = x > 0
    elif name == "uint8":
        x = np.nan_to_num(np.clip(x, 0, 255)).astype(np.int64)
    elif name.startswith("int"):
        x = np.nan_to_num(np.clip(x, -1e9, 1e9)).astype(np.int64)
    options = [{}, {"precision": int(rng.integers(0, 8))}, {"sci_mode": bool(rng.integers(0, 2))},
               {"linewidth": int(rng.integers(20, 150))},
               {"threshold": int(rng.integers(1, 50)), "edgeitems": int(rng.integers(0, 4))},
               {"profile": str(rng.choice(["short", "full"]))}]
    return name, x, options[int(rng.integers(0, len(options)))]


def test_random_arrays_match_live_torch(monkeypatch):
    torch = pytest.importorskip("torch")
    # Compare byte-for-byte, so use torch's dtype spelling (it affects wrapping).
    monkeypatch.setattr(ts, "_DTYPE_PREFIX", "torch.")
    rng = np.random.default_rng(1234)
    for _ in range(400):
        name, x, options = _random_case(rng)
        t = torch.tensor(x).to(getattr(torch, name))
        suffixes = []
        if t.is_floating_point() and rng.random() < 0.3:
            t.requires_grad_(True)
            suffixes = ["requires_grad=True"]
        # numpy has no bfloat16; float32 holds half/bfloat16 values exactly.
        arr = t.detach().float().numpy() if name in ("float16", "bfloat16") else t.detach().numpy()
        torch.set_printoptions(**options)
        ts.set_printoptions(**options)
        try:
            expected = repr(t)
            got = ts.format_tensor(arr, dtype_name=name, suffixes=suffixes,
                                   is_default_dtype=name in ("float32", "complex64"))
        finally:
            torch.set_printoptions(profile="default")
            ts.set_printoptions(profile="default")
        assert got == expected, (name, x.shape, options)
