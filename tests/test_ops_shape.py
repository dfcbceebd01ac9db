"""Shape, indexing and linear-algebra behaviour beyond the spec table: writes through views and
``__setitem__``, non-differentiable outputs, named tuples, warnings and PyTorch's errors."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import funcgrad as fg
from funcgrad._ops.shape_more import pad


def _np(t):
    return np.asarray(t.detach()._value)


# ---- __setitem__ ------------------------------------------------------------------------------
def test_setitem_mask_index_slice():
    x = fg.arange(12.).view(3, 4)
    x[x > 9] = 0
    x[fg.tensor([0, 2])] = fg.tensor([-1., -2., -3., -4.])
    x[:, 1:3] = fg.tensor([[7., 8.]])
    want = np.arange(12.).reshape(3, 4)
    want[want > 9] = 0
    want[[0, 2]] = [-1, -2, -3, -4]
    want[:, 1:3] = [[7, 8]]
    np.testing.assert_array_equal(_np(x), want)
    assert x._version == 3 if hasattr(x, "_version") else True


def test_setitem_through_view_shows_in_base():
    base = fg.zeros(2, 3)
    row = base[1]
    row[0] = 5.0
    base.t()[2, 0] = 9.0          # a write through a transposed view
    sub = base.narrow(1, 1, 2)
    sub.fill_(1.0)
    np.testing.assert_array_equal(_np(base), [[0, 1, 1], [5, 1, 1]])
    np.testing.assert_array_equal(_np(row), [5, 1, 1])
    assert base._ver[0] == row._ver[0] == 3


def test_setitem_gradients():
    w = fg.tensor([1., 2., 3., 4.], requires_grad=True)
    v = fg.tensor([10., 20.], requires_grad=True)
    y = w * 2
    y[fg.tensor([1, 3])] = v * v
    y.sum().backward()
    np.testing.assert_allclose(_np(w.grad), [2, 0, 2, 0])
    np.testing.assert_allclose(_np(v.grad), [20, 40])
    assert y.grad_fn.name() == "IndexPutBackward0"


def test_mask_setitem_gradient_and_view_write_grad():
    x = fg.ones(2, 3, requires_grad=True)
    y = x.clone()
    y[y.detach() > 0] = 0.0
    y.sum().backward()
    np.testing.assert_array_equal(_np(x.grad), np.zeros((2, 3)))
    x2 = fg.ones(2, 3, requires_grad=True)
    z = x2 * 3
    z.select(1, 0).mul_(2)            # a view of a non-leaf, written in place
    z.sum().backward()
    np.testing.assert_array_equal(_np(x2.grad), [[6, 3, 3], [6, 3, 3]])


def test_leaf_view_inplace_error_leaves_value():
    x = fg.ones(3, requires_grad=True)
    with pytest.raises(RuntimeError, match="leaf Variable that requires grad"):
        x.masked_fill_(x > 0, 0.0)
    np.testing.assert_array_equal(_np(x), [1, 1, 1])


# ---- views from split/unbind/diagonal/unfold ----------------------------------------------------
def test_view_ops_write_through():
    x = fg.zeros(3, 3)
    x.diagonal().fill_(1.0)
    np.testing.assert_array_equal(_np(x), np.eye(3))
    a, b = x.split([1, 2], dim=1)
    b.zero_()
    x.unbind(0)[2][0] = 4.0
    np.testing.assert_array_equal(_np(x), [[1, 0, 0], [0, 0, 0], [4, 0, 0]])
    u = fg.arange(5.).unfold(0, 2, 1)
    assert u.shape == (4, 2) and u.grad_fn is None


def test_squeeze_tuple_and_movedim():
    x = fg.ones(1, 3, 1, 2, requires_grad=True)
    assert x.squeeze((0, 2)).shape == (3, 2)
    assert x.squeeze((0, 2)).grad_fn.name() == "SqueezeBackward2"
    assert fg.moveaxis(x, 0, -1).shape == (3, 1, 2, 1)
    assert fg.movedim(x, (1, 3), (0, 1)).shape == (3, 2, 1, 1)


# ---- non-differentiable outputs ------------------------------------------------------------------
def test_integer_outputs_have_no_grad_fn():
    x = fg.tensor([[1., 0.], [3., 1.]], requires_grad=True)
    for r in [fg.argwhere(x), fg.nonzero(x), fg.linalg.matrix_rank(x), fg.tril_indices(2, 2),
              *fg.unique(fg.tensor([3, 1, 3]), return_inverse=True, return_counts=True),
              fg.repeat_interleave(fg.tensor([1, 2]))]:
        assert r.grad_fn is None and not r.requires_grad and r.dtype is fg.int64
    assert fg.linalg.matrix_rank(x).item() == 2


def test_unique_variants():
    t = fg.tensor([[1, 2], [1, 2], [0, 5]])
    vals, inv, cnt = fg.unique(t, dim=0, return_inverse=True, return_counts=True)
    np.testing.assert_array_equal(_np(vals), [[0, 5], [1, 2]])
    np.testing.assert_array_equal(_np(inv), [1, 1, 0])
    np.testing.assert_array_equal(_np(cnt), [1, 2])
    u, c = fg.unique_consecutive(fg.tensor([1, 1, 2, 2, 1]), return_counts=True)
    assert u.tolist() == [1, 2, 1] and c.tolist() == [2, 2, 1]


# ---- creation ----------------------------------------------------------------------------------
def test_new_factories():
    x = fg.ones(2, dtype=fg.float64)
    assert x.new_zeros(2, 3).dtype is fg.float64 and x.new_zeros((2, 3)).shape == (2, 3)
    assert x.new_ones(1, dtype=fg.int32).dtype is fg.int32
    assert x.new_full((2,), 7).tolist() == [7.0, 7.0]
    assert x.new_empty(3).shape == (3,)
    y = x.new_tensor([1, 2], requires_grad=True)
    assert y.dtype is fg.float64 and y.requires_grad and y.is_leaf
    assert fg.zeros_like(x, dtype=fg.int64).dtype is fg.int64
    assert fg.ones_like(x, requires_grad=True).requires_grad
    assert fg.triu_indices(3, 3, 1).tolist() == [[0, 0, 1], [1, 2, 2]]


def test_arange_steps():
    assert fg.arange(1, 0, -0.3).shape == (4,)
    assert fg.arange(0, 1, 0.1).shape == (10,)
    assert fg.arange(10, 0, -3).tolist() == [10, 7, 4, 1]
    with pytest.raises(RuntimeError, match="inconsistent with step sign"):
        fg.arange(0, 5, -1)


# ---- stacks, splits, grids ----------------------------------------------------------------------
def test_stacks_and_splits():
    a, b = fg.tensor([1, 2]), fg.tensor([3, 4])
    assert fg.hstack([a, b]).tolist() == [1, 2, 3, 4]
    assert fg.vstack([a, b]).shape == (2, 2) and fg.row_stack([a, b]).shape == (2, 2)
    assert fg.dstack([a, b]).shape == (1, 2, 2)
    assert fg.column_stack([a, b]).tolist() == [[1, 3], [2, 4]]
    assert [t.shape[0] for t in fg.arange(7).tensor_split(3)] == [3, 2, 2]
    assert [t.tolist() for t in fg.arange(6).tensor_split([1, 4])] == [[0], [1, 2, 3], [4, 5]]
    assert [t.shape for t in fg.ones(4, 4).vsplit(2)] == [(2, 4), (2, 4)]
    assert [t.shape for t in fg.ones(2, 2, 4).dsplit([1])] == [(2, 2, 1), (2, 2, 3)]
    assert [t.shape for t in fg.arange(5).chunk(3)] == [(2,), (2,), (1,)]
    assert fg.atleast_2d(fg.tensor(1.)).shape == (1, 1)
    assert [t.shape for t in fg.atleast_3d(a, fg.ones(2, 3))] == [(1, 2, 1), (2, 3, 1)]
    x, y = fg.broadcast_tensors(fg.ones(3, 1), fg.ones(4))
    assert x.shape == y.shape == (3, 4) and fg.broadcast_shapes((3, 1), (4,)) == (3, 4)


def test_meshgrid_warning_and_indexing():
    a, b = fg.tensor([1, 2, 3]), fg.tensor([4, 5])
    with pytest.warns(UserWarning, match="it will be required to pass the indexing argument"):
        gx, gy = fg.meshgrid(a, b)
    assert gx.shape == (3, 2)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        gx, gy = fg.meshgrid([a, b], indexing="xy")
    assert gx.tolist() == [[1, 2, 3], [1, 2, 3]] and gy.tolist() == [[4, 4, 4], [5, 5, 5]]


def test_pad_and_repeat():
    x = fg.tensor([[1., 2., 3.]])
    assert pad(x, (2, 0), mode="reflect").tolist() == [[3., 2., 1., 2., 3.]]
    assert pad(x, (1, 1), mode="replicate").tolist() == [[1., 1., 2., 3., 3.]]
    assert pad(x, (1, 1), mode="circular").tolist() == [[3., 1., 2., 3., 1.]]
    assert pad(x, (0, 0, 1, 0)).tolist() == [[0., 0., 0.], [1., 2., 3.]]
    assert fg.tensor([1, 2]).repeat(2, 2).tolist() == [[1, 2, 1, 2], [1, 2, 1, 2]]
    assert fg.tensor([[1, 2]]).repeat_interleave(fg.tensor([2, 1]), dim=1).tolist() == [[1, 1, 2]]


# ---- linalg --------------------------------------------------------------------------------------
def test_linalg_named_tuples_and_grads():
    A = fg.tensor([[4., 1.], [1., 3.]], dtype=fg.float64, requires_grad=True)
    sl = fg.linalg.slogdet(A)
    assert sl._fields == ("sign", "logabsdet") and type(sl).__name__ == "linalg_slogdet"
    assert repr(sl).startswith("funcgrad.return_types.linalg_slogdet(\nsign=tensor(1.")
    Q, R = fg.linalg.qr(A)
    U, S, Vh = fg.linalg.svd(A)
    w, V = fg.linalg.eigh(A)
    assert fg.svd(A)._fields == ("U", "S", "V")
    for t in (sl.sign, sl.logabsdet, Q, R, U, S, Vh, w, V):
        assert t.grad_fn is not None
    (sl.logabsdet + S.sum() + w.sum()).backward()
    Ainv = np.linalg.inv(_np(A))
    # d logdet = A^-T; d sum(S) = U Vh; d sum(eig) = I (from the lower triangle + diagonal)
    want = Ainv.T + _np(U) @ _np(Vh) + np.array([[1., 0.], [2., 1.]]) * np.eye(2) + np.array([[0, 0], [0, 0]])
    np.testing.assert_allclose(_np(A.grad), want, atol=1e-9)


def test_linalg_errors():
    with pytest.raises(fg.linalg.LinAlgError, match="The diagonal element 2 is zero"):
        fg.linalg.inv(fg.tensor([[1., 2.], [2., 4.]]))
    assert issubclass(fg.linalg.LinAlgError, RuntimeError)
    with pytest.raises(fg.linalg.LinAlgError, match="leading minor of order 1 is not positive-definite"):
        fg.linalg.cholesky(-fg.eye(2))
    with pytest.raises(RuntimeError, match="A must be batches of square matrices, but they are 2 by 3"):
        fg.linalg.det(fg.ones(2, 3))
    with pytest.raises(RuntimeError, match="fewer operands were provided"):
        fg.einsum("ij,jk->ik", fg.ones(2, 2))
    with pytest.raises(RuntimeError, match="inconsistent tensor size"):
        fg.dot(fg.ones(2), fg.ones(3))
    with pytest.warns(UserWarning, match="torch.cholesky is deprecated"):
        fg.cholesky(fg.eye(2))


def test_linalg_values():
    A = fg.tensor([[2., 1.], [1., 3.]])
    assert abs(fg.linalg.det(A).item() - 5.0) < 1e-5
    np.testing.assert_allclose(_np(fg.linalg.matrix_power(A, 0)), np.eye(2))
    np.testing.assert_allclose(_np(fg.linalg.matrix_power(A, 3)), np.linalg.matrix_power(_np(A), 3), rtol=1e-6)
    np.testing.assert_allclose(_np(fg.linalg.norm(A, "fro")), np.linalg.norm(_np(A)), rtol=1e-6)
    np.testing.assert_allclose(_np(fg.linalg.vector_norm(A, 0)), 4.0)
    np.testing.assert_allclose(_np(fg.norm(A, dim=1)), np.linalg.norm(_np(A), axis=1), rtol=1e-6)
    z = fg.zeros(3, requires_grad=True)
    fg.linalg.vector_norm(z).backward()            # PyTorch's subgradient at 0 is 0, not nan
    np.testing.assert_array_equal(_np(z.grad), np.zeros(3))
    np.testing.assert_allclose(_np(fg.linalg.pinv(fg.ones(2, 3))), np.linalg.pinv(np.ones((2, 3))), rtol=1e-5)
    out = fg.empty(2, 2)
    fg.addmm(A, A, A, out=out)
    np.testing.assert_allclose(_np(out), _np(A) + _np(A) @ _np(A))
    assert fg.einsum("ij->", A).grad_fn is None


# ---- indexing errors leave the objects unchanged -------------------------------------------------
@pytest.mark.parametrize("call, exc, msg", [
    (lambda x: x.gather(1, fg.tensor([[0.]])), RuntimeError, "Expected dtype int32/int64 for index"),
    (lambda x: x.gather(1, fg.tensor([[4]])), RuntimeError, "index 4 is out of bounds for dimension 1 with size 4"),
    (lambda x: x.index_select(1, fg.tensor([[0]])), IndexError, "Index is supposed to be a vector"),
    (lambda x: x.index_select(1, fg.tensor([7])), RuntimeError, "INDICES element is out of DATA bounds, id=7"),
    (lambda x: x.masked_fill(fg.ones(3, 4), 0), RuntimeError, "only supports boolean masks, but got mask with dtype float"),
    (lambda x: x.narrow(1, 2, 3), RuntimeError, r"start \(2\) \+ length \(3\) exceeds dimension size \(4\)"),
    (lambda x: x.split([1, 2], 1), RuntimeError, "split_with_sizes expects split_sizes to sum exactly to 4"),
    (lambda x: x.chunk(0), RuntimeError, "chunk expects `chunks` to be greater than 0"),
    (lambda x: x.repeat(2), RuntimeError, "Number of dimensions of repeat dims can not be smaller"),
    (lambda x: x.take(fg.tensor([20])), IndexError, "tried to access index 20 on a tensor of 12 elements"),
    (lambda x: pad(x[None, None, None], (1, 1), mode="reflect"), NotImplementedError,
     "Padding size 2 is not supported for 5D input tensor"),
    (lambda x: pad(x, (5, 5), mode="reflect"), RuntimeError,
     r"Padding size should be less than the corresponding input dimension, but got: padding \(5, 5\) at "
     r"dimension 1 of input \[3, 4\]"),
    (lambda x: pad(x, (5,)), RuntimeError, "Padding length must be divisible by 2"),
    (lambda x: x.scatter_(1, fg.tensor([[9]]), 1.0), RuntimeError, "index 9 is out of bounds"),
    (lambda x: x.index_fill_(0, fg.tensor([5]), 1.0), RuntimeError, "index 5 is out of bounds"),
])
def test_indexing_errors(call, exc, msg):
    x = fg.arange(12.).view(3, 4)
    before = _np(x).copy()
    with pytest.raises(exc, match=msg):
        call(x)
    np.testing.assert_array_equal(_np(x), before)
    assert x._ver[0] == 0


def test_inplace_indexing_ops():
    x = fg.zeros(3, 4)
    x.scatter_(1, fg.tensor([[0], [1], [2]]), 1.0)
    x.index_add_(0, fg.tensor([0, 0]), fg.ones(2, 4))
    x.masked_fill_(fg.tensor([False, False, False, True]), -1.0)
    x.index_copy_(1, fg.tensor([2]), fg.full((3, 1), 5.0))
    np.testing.assert_array_equal(_np(x), [[3, 2, 5, -1], [0, 1, 5, -1], [0, 0, 5, -1]])
    assert x._ver[0] == 4


def test_against_torch():
    torch = pytest.importorskip("torch")
    a = np.random.default_rng(0).standard_normal((3, 4)).astype(np.float32)
    pairs = [
        (lambda m: m.roll(1, 0).flip(1).rot90(1, (0, 1)), None),
        (lambda m: m.unfold(1, 2, 1).sum(-1), None),
        (lambda m: m.tril(1) + m.triu(-1), None),
        (lambda m: m.repeat_interleave(2, dim=0), None),
    ]
    for f, _ in pairs:
        np.testing.assert_allclose(_np(f(fg.tensor(a))), f(torch.tensor(a)).numpy(), rtol=1e-6)
    np.testing.assert_allclose(_np(fg.kron(fg.tensor(a), fg.tensor(a[:2, :2]))),
                               torch.kron(torch.tensor(a), torch.tensor(a[:2, :2])).numpy(), rtol=1e-6)
    np.testing.assert_allclose(_np(fg.diag_embed(fg.tensor(a), 1, 0, 2)),
                               torch.diag_embed(torch.tensor(a), 1, 0, 2).numpy())
    np.testing.assert_allclose(_np(fg.linalg.matrix_norm(fg.tensor(a), -2)),
                               torch.linalg.matrix_norm(torch.tensor(a), -2).numpy(), rtol=1e-5)


@pytest.mark.torch
def test_matrix_rank_hermitian_reads_the_lower_triangle_as_torch():
    torch = pytest.importorskip("torch")
    mats = [[[1., 5., 2.], [0., 0., 3.], [0., 0., 0.]], [[1., 0., 0.], [5., 0., 0.], [2., 3., 0.]],
            [[1., 100.], [1., 1.]], [[1., 2j], [0., 4.]], [[0., 1.], [1., 0.]]]
    for m in mats:
        for lib in (fg, torch):
            a = lib.tensor(m)
            got = [lib.linalg.matrix_rank(a, hermitian=h).item() for h in (True, False)]
            if lib is fg:
                fg_got = got
        assert fg_got == got, m
