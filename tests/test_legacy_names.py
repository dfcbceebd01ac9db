"""Names old scripts still call: ``range`` (deprecated, ``end`` included), ``scalar_tensor``,
``Tensor.new``, ``get_device``, ``is_storage``, ``set_default_tensor_type``, the anomaly switches
at the top level, and the functions PyTorch 1.9 removed (``solve``, ``lstsq``, ``symeig``,
``eig``, ``matrix_rank``: names raising its migration messages). One script gives ``EXPECTED``,
recorded from PyTorch 2.13 (re-run on torch where it is installed)."""

import warnings

import pytest

import funcgrad

from ._rows import check_transcript, shower, torch_transcript


def _transcript(torch):
    out = []

    show = shower(out, warns=True)

    for call in ["(0, 3)", "(0, 1, 0.25)", "(0, 1, 0.1)", "(0, 1, 0.3)", "(3, 3)", "(0, -2, -0.5)",
                 "(0, 3, dtype=torch.int64)", "(1, 4, dtype=torch.float16)", "(0, 1, 0.1, dtype=torch.bfloat16)",
                 "(0, 1, 0.1, dtype=torch.float64)", "(torch.tensor(1), 3)", "(0, 3, requires_grad=True)",
                 "(3)", "(0, 3, 0)", "(0, 3, -1)", "(0, float('inf'))", "(0.5, float('nan'))",
                 "(0, 2, dtype=torch.bool)", "(0, 2, dtype=torch.complex64)"]:
        show(lambda call=call: eval(f"torch.range{call}", {"torch": torch}))  # noqa: S307
    for call in ["(3)", "(True)", "(2.5, dtype=torch.float64)", "(3, dtype=torch.int64)", "(3, requires_grad=True)",
                 "('a')", "(1+2j)", "(1+2j, dtype=torch.complex64)"]:
        show(lambda call=call: eval(f"torch.scalar_tensor{call}", {"torch": torch}))  # noqa: S307
    x, xi = torch.ones(2), torch.ones(2, dtype=torch.int64)
    for call in ["(2, 3).shape", "([1.5, 2])", "((2, 1))", "(torch.Size([2, 1])).shape", "()", "(size=(2,)).shape",
                 "(data=[1, 2])", "('a')", "(2.5)"]:
        show(lambda call=call: eval(f"x.new{call}", {"torch": torch, "x": x}))  # noqa: S307
        show(lambda call=call: eval(f"xi.new{call}", {"torch": torch, "xi": xi}))  # noqa: S307
    w = torch.ones(2, requires_grad=True)
    show(lambda: (w.new([1.0]).requires_grad, w.new(torch.ones(1)).requires_grad))
    base = torch.ones(3)
    show(lambda: (x.new(base).data_ptr() == base.data_ptr()))
    show(lambda: x.new(xi))
    for name, args in [("solve", "(torch.eye(2), torch.eye(2))"), ("lstsq", "(torch.eye(2), torch.eye(2))"),
                       ("symeig", "(torch.eye(2))"), ("eig", "(torch.eye(2))"), ("matrix_rank", "(torch.eye(2))"),
                       ("solve", "(torch.eye(2))"), ("matrix_rank", "()")]:
        show(lambda name=name, args=args: eval(f"torch.{name}{args}", {"torch": torch}))  # noqa: S307
    def same_error(method, function):  # (the method's message is the function's: not shown twice)
        try:
            eval(method, {"torch": torch})  # noqa: S307
        except Exception as e:  # noqa: BLE001
            try:
                eval(function, {"torch": torch})  # noqa: S307
            except Exception as f:  # noqa: BLE001
                return f"{type(e).__name__}, same message as the function's: {str(e) == str(f)}"
        return "no error"
    for name, args, fargs in [("solve", "(torch.eye(2))", "(torch.eye(2), torch.eye(2))"),
                              ("lstsq", "(torch.eye(2))", "(torch.eye(2), torch.eye(2))"),
                              ("symeig", "()", "(torch.eye(2))"), ("eig", "(True)", "(torch.eye(2))")]:
        show(lambda name=name, args=args, fargs=fargs: same_error(f"torch.eye(2).{name}{args}", f"torch.{name}{fargs}"))
    show(lambda: (torch.is_anomaly_enabled(), torch.is_anomaly_check_nan_enabled()))
    show(lambda: (torch.set_anomaly_enabled(True, False), torch.is_anomaly_enabled(),
                  torch.is_anomaly_check_nan_enabled()))
    show(lambda: (torch.set_anomaly_enabled(False), torch.is_anomaly_enabled(), torch.is_anomaly_check_nan_enabled()))
    show(lambda: (torch.is_storage(x.untyped_storage()), torch.is_storage(x), torch.is_storage("a")))
    show(lambda: (torch.get_device(x), x.get_device()))
    show(lambda: torch.get_device(1))
    torch.set_warn_always(True)  # (PyTorch warns of set_default_tensor_type once per process)
    try:
        show(lambda: (torch.set_default_tensor_type(torch.DoubleTensor), torch.ones(1).dtype))
        show(lambda: (torch.set_default_tensor_type("torch.FloatTensor"), torch.ones(1).dtype))
        for arg in ["torch.float64", "torch.IntTensor", "'torch.cuda.FloatTensor'", "'torch.IntTensor'", "'float'"]:
            show(lambda arg=arg: eval(f"torch.set_default_tensor_type({arg})", {"torch": torch}))  # noqa: S307
        # on a GPU machine (as PyTorch's CUDA build) the CUDA type is taken, and new tensors go there
        show(lambda: torch.ones(1).device.type)
    finally:
        torch.set_warn_always(False)
        torch.set_default_dtype(torch.float32)
        torch.set_default_device(None)
    return out


EXPECTED = [
    'tensor([0., 1., 2., 3.]) ["UserWarning: torch.range is deprecated and will be removed in a fut'
    "ure release because its behavior is inconsistent with Python's range builtin. Instead, use tor"
    'ch.arange, which produces values in [start, end)."]',
    'tensor([0.0000, 0.2500, 0.5000, 0.7500, 1.0000]) ["UserWarning: torch.range is deprecated and '
    "will be removed in a future release because its behavior is inconsistent with Python's range b"
    'uiltin. Instead, use torch.arange, which produces values in [start, end)."]',
    'tensor([0.0000, 0.1000, 0.2000, 0.3000, 0.4000, 0.5000, 0.6000, 0.7000, 0.8000,\n        0.900'
    '0, 1.0000]) ["UserWarning: torch.range is deprecated and will be removed in a future release b'
    "ecause its behavior is inconsistent with Python's range builtin. Instead, use torch.arange, wh"
    'ich produces values in [start, end)."]',
    'tensor([0.0000, 0.3000, 0.6000, 0.9000]) ["UserWarning: torch.range is deprecated and will be '
    "removed in a future release because its behavior is inconsistent with Python's range builtin. "
    'Instead, use torch.arange, which produces values in [start, end)."]',
    'tensor([3.]) ["UserWarning: torch.range is deprecated and will be removed in a future release '
    "because its behavior is inconsistent with Python's range builtin. Instead, use torch.arange, w"
    'hich produces values in [start, end)."]',
    'tensor([ 0.0000, -0.5000, -1.0000, -1.5000, -2.0000]) ["UserWarning: torch.range is deprecated'
    " and will be removed in a future release because its behavior is inconsistent with Python's ra"
    'nge builtin. Instead, use torch.arange, which produces values in [start, end)."]',
    'tensor([0, 1, 2, 3]) ["UserWarning: torch.range is deprecated and will be removed in a future '
    "release because its behavior is inconsistent with Python's range builtin. Instead, use torch.a"
    'range, which produces values in [start, end)."]',
    'tensor([1., 2., 3., 4.], dtype=torch.float16) ["UserWarning: torch.range is deprecated and wil'
    "l be removed in a future release because its behavior is inconsistent with Python's range buil"
    'tin. Instead, use torch.arange, which produces values in [start, end)."]',
    'tensor([0.0000, 0.1001, 0.2002, 0.3008, 0.4004, 0.5000, 0.6016, 0.6992, 0.8008,\n        0.898'
    '4, 1.0000], dtype=torch.bfloat16) ["UserWarning: torch.range is deprecated and will be removed'
    " in a future release because its behavior is inconsistent with Python's range builtin. Instead"
    ', use torch.arange, which produces values in [start, end)."]',
    'tensor([0.0000, 0.1000, 0.2000, 0.3000, 0.4000, 0.5000, 0.6000, 0.7000, 0.8000,\n        0.900'
    '0, 1.0000], dtype=torch.float64) ["UserWarning: torch.range is deprecated and will be removed '
    "in a future release because its behavior is inconsistent with Python's range builtin. Instead,"
    ' use torch.arange, which produces values in [start, end)."]',
    'tensor([1., 2., 3.]) ["UserWarning: torch.range is deprecated and will be removed in a future '
    "release because its behavior is inconsistent with Python's range builtin. Instead, use torch.a"
    'range, which produces values in [start, end)."]',
    'tensor([0., 1., 2., 3.], requires_grad=True) ["UserWarning: torch.range is deprecated and will'
    " be removed in a future release because its behavior is inconsistent with Python's range built"
    'in. Instead, use torch.arange, which produces values in [start, end)."]',
    'ERR TypeError range() missing 1 required positional arguments: "end"',
    'ERR RuntimeError step must be nonzero ["UserWarning: torch.range is deprecated and will be rem'
    "oved in a future release because its behavior is inconsistent with Python's range builtin. Ins"
    'tead, use torch.arange, which produces values in [start, end)."]',
    'ERR RuntimeError upper bound and lower bound inconsistent with step sign ["UserWarning: torch.'
    'range is deprecated and will be removed in a future release because its behavior is inconsiste'
    "nt with Python's range builtin. Instead, use torch.arange, which produces values in [start, en"
    'd)."]',
    'ERR RuntimeError unsupported range: 0 -> inf ["UserWarning: torch.range is deprecated and will'
    " be removed in a future release because its behavior is inconsistent with Python's range built"
    'in. Instead, use torch.arange, which produces values in [start, end)."]',
    'ERR RuntimeError unsupported range: 0.5 -> nan ["UserWarning: torch.range is deprecated and wi'
    "ll be removed in a future release because its behavior is inconsistent with Python's range bui"
    'ltin. Instead, use torch.arange, which produces values in [start, end)."]',
    'ERR NotImplementedError "range_cpu" not implemented for \'Bool\' ["UserWarning: torch.range is'
    ' deprecated and will be removed in a future release because its behavior is inconsistent with '
    'Python\'s range builtin. Instead, use torch.arange, which produces values in [start, end)."]',
    'ERR NotImplementedError "range_cpu" not implemented for \'ComplexFloat\' ["UserWarning: torch.'
    'range is deprecated and will be removed in a future release because its behavior is inconsiste'
    "nt with Python's range builtin. Instead, use torch.arange, which produces values in [start, en"
    'd)."]',
    'tensor(3.)',
    'tensor(1.)',
    'tensor(2.5000, dtype=torch.float64)',
    'tensor(3)',
    'tensor(3., requires_grad=True)',
    "ERR TypeError scalar_tensor(): argument 's' (position 1) must be Number, not str",
    'ERR RuntimeError value cannot be converted to type float without overflow',
    'tensor(1.+2.j)',
    'torch.Size([2, 3])',
    'torch.Size([2, 3])',
    'tensor([1.5000, 2.0000])',
    'tensor([1, 2])',
    'tensor([2., 1.])',
    'tensor([2, 1])',
    'torch.Size([2, 1])',
    'torch.Size([2, 1])',
    'tensor([])',
    'tensor([], dtype=torch.int64)',
    'torch.Size([2])',
    'torch.Size([2])',
    'tensor([1., 2.])',
    'tensor([1, 2])',
    "ERR TypeError new(): invalid data type 'str'",
    "ERR TypeError new(): invalid data type 'str'",
    'ERR TypeError new(): data must be a sequence (got float)',
    'ERR TypeError new(): data must be a sequence (got float)',
    '(False, False)',
    'True',
    'ERR TypeError expected TensorOptions(dtype=float, device=cpu, layout=Strided, requires_grad=fa'
    'lse (default), pinned_memory=false (default), memory_format=(nullopt)) (got TensorOptions(dtyp'
    'e=long int, device=cpu, layout=Strided, requires_grad=false (default), pinned_memory=false (de'
    'fault), memory_format=(nullopt)))',
    'ERR RuntimeError This function was deprecated since version 1.9 and is now removed. `torch.sol'
    've` is deprecated in favor of `torch.linalg.solve`. `torch.linalg.solve` has its arguments rev'
    'ersed and does not return the LU factorization.\n\nTo get the LU factorization see `torch.lu`,'
    ' which can be used with `torch.lu_solve` or `torch.lu_unpack`.\nX = torch.solve(B, A).solution'
    ' should be replaced with:\nX = torch.linalg.solve(A, B)',
    'ERR RuntimeError This function was deprecated since version 1.9 and is now removed. `torch.lst'
    'sq` is deprecated in favor of `torch.linalg.lstsq`.\n`torch.linalg.lstsq` has reversed argumen'
    'ts and does not return the QR decomposition in the returned tuple (although it returns other i'
    'nformation about the problem).\n\nTo get the QR decomposition consider using `torch.linalg.qr`'
    '.\n\nThe returned solution in `torch.lstsq` stored the residuals of the solution in the last m'
    ' - n columns of the returned value whenever m > n. In torch.linalg.lstsq, the residuals are in'
    " the field 'residuals' of the returned named tuple.\n\nThe unpacking of the solution, as in\nX"
    ', _ = torch.lstsq(B, A).solution[:A.size(1)]\nshould be replaced with:\nX = torch.linalg.lstsq'
    '(A, B).solution',
    'ERR RuntimeError This function was deprecated since version 1.9 and is now removed. The defaul'
    't behavior has changed from using the upper triangular portion of the matrix by default to usi'
    'ng the lower triangular portion.\n\nL, _ = torch.symeig(A, upper=upper) should be replaced wit'
    "h:\nL = torch.linalg.eigvalsh(A, UPLO='U' if upper else 'L')\n\nand\n\nL, V = torch.symeig(A, "
    "eigenvectors=True) should be replaced with:\nL, V = torch.linalg.eigh(A, UPLO='U' if upper els"
    "e 'L')",
    'ERR RuntimeError This function was deprecated since version 1.9 and is now removed. `torch.lin'
    'alg.eig` returns complex tensors of dtype `cfloat` or `cdouble` rather than real tensors mimic'
    'king complex tensors.\n\nL, _ = torch.eig(A) should be replaced with:\nL_complex = torch.linal'
    'g.eigvals(A)\n\nand\n\nL, V = torch.eig(A, eigenvectors=True) should be replaced with:\nL_comp'
    'lex, V_complex = torch.linalg.eig(A)',
    'ERR RuntimeError This function was deprecated since version 1.9 and is now removed.\nPlease us'
    "e the `torch.linalg.matrix_rank` function instead. The parameter 'symmetric' was renamed in `t"
    "orch.linalg.matrix_rank()` to 'hermitian'.",
    "ERR TypeError solve() missing 1 required positional argument: 'A'",
    "ERR TypeError matrix_rank() missing 1 required positional argument: 'input'",
    "RuntimeError, same message as the function's: True",
    "RuntimeError, same message as the function's: True",
    "RuntimeError, same message as the function's: True",
    "RuntimeError, same message as the function's: True",
    '(False, True)',
    '(None, True, False)',
    '(None, False, True)',
    '(True, False, False)',
    '(-1, -1)',
    "ERR TypeError get_device(): argument 'input' (position 1) must be Tensor, not int",
    "(None, torch.float64) ['UserWarning: torch.set_default_tensor_type() is deprecated as of PyTor"
    "ch 2.1, please use torch.set_default_dtype() and torch.set_default_device() as alternatives.']",
    "(None, torch.float32) ['UserWarning: torch.set_default_tensor_type() is deprecated as of PyTor"
    "ch 2.1, please use torch.set_default_dtype() and torch.set_default_device() as alternatives.']",
    'ERR TypeError invalid type object: only floating-point types are supported as the default type'
    " ['UserWarning: torch.set_default_tensor_type() is deprecated as of PyTorch 2.1, please use to"
    "rch.set_default_dtype() and torch.set_default_device() as alternatives.']",
    "ERR TypeError only floating-point types are supported as the default type ['UserWarning: torch"
    '.set_default_tensor_type() is deprecated as of PyTorch 2.1, please use torch.set_default_dtype'
    "() and torch.set_default_device() as alternatives.']",
    'ERR TypeError type torch.cuda.FloatTensor not available. Torch not compiled with CUDA enabled.'
    " ['UserWarning: torch.set_default_tensor_type() is deprecated as of PyTorch 2.1, please use to"
    "rch.set_default_dtype() and torch.set_default_device() as alternatives.']",
    "ERR TypeError only floating-point types are supported as the default type ['UserWarning: torch"
    '.set_default_tensor_type() is deprecated as of PyTorch 2.1, please use torch.set_default_dtype'
    "() and torch.set_default_device() as alternatives.']",
    "ERR ModuleNotFoundError No module named 'float'",
    'cpu',
]
_CUDA_ROW = EXPECTED.index(next(e for e in EXPECTED if "torch.cuda.FloatTensor not available" in e))


def test_legacy_names_as_pytorch():
    expected = list(EXPECTED)
    if funcgrad.cuda.is_available():  # PyTorch's CUDA build: the type is taken (recorded on its CPU build)
        expected[_CUDA_ROW] = "None ['UserWarning" + expected[_CUDA_ROW].partition(" ['UserWarning")[2]
        expected[-1] = "cuda"
    check_transcript(_transcript(funcgrad), expected)
    assert funcgrad.get_default_device().type == "cpu"


@pytest.mark.torch
def test_recorded_transcript_is_pytorchs():
    check_transcript(torch_transcript(_transcript), EXPECTED)


def test_a_warning_reaches_code_run_with_globals_of_its_own():
    """funcgrad's warnings are raised at the user's line; code run by exec/eval with a globals
    dict of its own (no ``__name__``) got none before: warnings.warn_explicit drops a warning
    whose module is None."""
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        exec("torch.range(0, 1)", {"torch": funcgrad})  # noqa: S102
    assert [str(x.message)[:40] for x in w] == ["torch.range is deprecated and will be re"]


def test_range_refuses_a_step_an_integer_dtype_truncates_to_zero():
    # (PyTorch 2.13 dies of a division by zero here: SIGFPE)
    with pytest.warns(UserWarning, match="range is deprecated"), pytest.raises(RuntimeError, match="step must be nonzero"):
        funcgrad.range(0, 2, 0.5, dtype=funcgrad.int64)
