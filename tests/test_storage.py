"""``Tensor.data_ptr()``, ``untyped_storage()``, ``storage()`` and ``is_set_to()`` as PyTorch's: which
tensors share memory and where in it they start. ``VIEWS`` was recorded from PyTorch 2.13 (the same
lambdas run on torch; compared live where torch is installed)."""

import warnings

import pytest

import funcgrad

# label -> (op on x = arange(12.).view(3, 4), PyTorch's (data_ptr - x.data_ptr() or None for another
# storage, storage_offset, is_set_to(x)))
VIEWS = {
    "slice row": (lambda x: x[1], (16, 4, False)),
    "column": (lambda x: x[:, 2], (8, 2, False)),
    "step": (lambda x: x[:, 1::2], (4, 1, False)),
    "t": (lambda x: x.t(), (0, 0, False)),
    "view": (lambda x: x.view(12), (0, 0, False)),
    "reshape": (lambda x: x.reshape(2, 6), (0, 0, False)),
    "flatten": (lambda x: x.flatten(), (0, 0, False)),
    "narrow": (lambda x: x.narrow(1, 1, 2), (4, 1, False)),
    "select": (lambda x: x.select(0, 2), (32, 8, False)),
    "unsqueeze": (lambda x: x.unsqueeze(0), (0, 0, False)),
    "permute": (lambda x: x.permute(1, 0), (0, 0, False)),
    "diagonal": (lambda x: x.diagonal(offset=1), (4, 1, False)),
    "expand": (lambda x: x[:1].expand(5, 4), (0, 0, False)),
    "detach": (lambda x: x.detach(), (0, 0, True)),
    "data": (lambda x: x.data, (0, 0, True)),
    "chunk": (lambda x: x.chunk(2, 1)[1], (8, 2, False)),
    "unbind": (lambda x: x.unbind(0)[2], (32, 8, False)),
    "split": (lambda x: x.split(1, 0)[2], (32, 8, False)),
    "index [1:, 1:]": (lambda x: x[1:, 1:], (20, 5, False)),
    "clone": (lambda x: x.clone(), (None, 0, False)),
    "contiguous of t": (lambda x: x.t().contiguous(), (None, 0, False)),
    "contiguous": (lambda x: x.contiguous(), (0, 0, True)),
    "x + 0": (lambda x: x + 0, (None, 0, False)),
    "to same dtype": (lambda x: x.to(funcgrad_or_torch(x).float32), (0, 0, True)),
    "to double": (lambda x: x.double(), (None, 0, False)),
    "in-place add_": (lambda x: x.add_(1), (0, 0, True)),
    "setitem, then itself": (lambda x: (x.__setitem__(0, 5.0), x)[1], (0, 0, True)),
    "reshape of t": (lambda x: x.t().reshape(12), (None, 0, False)),
    "fancy index": (lambda x: x[[0, 2]], (None, 0, False)),
    "squeeze of unsqueeze": (lambda x: x.unsqueeze(1).squeeze(1), (0, 0, True)),
    "movedim": (lambda x: x.movedim(0, 1), (0, 0, False)),
    "unfold": (lambda x: x.unfold(1, 2, 2), (0, 0, False)),
    "view of a view": (lambda x: x[1:][1:][0], (32, 8, False)),
}
# Not yet PyTorch's: x.view(dtype) (funcgrad's is a copy, PyTorch's shares the storage)


def funcgrad_or_torch(t):
    return funcgrad if isinstance(t, funcgrad.Tensor) else __import__("torch")


def _row(lib, op):
    x = lib.arange(12.0).view(3, 4)
    p, s = x.data_ptr(), x.untyped_storage().data_ptr()
    y = op(x)
    same = y.untyped_storage().data_ptr() == s
    return (y.data_ptr() - p if same else None, y.storage_offset(), y.is_set_to(x))


@pytest.mark.parametrize("label", VIEWS)
def test_views_share_storage_as_pytorchs(label):
    op, expected = VIEWS[label]
    assert _row(funcgrad, op) == expected


@pytest.mark.torch
@pytest.mark.parametrize("label", VIEWS)
def test_recorded_rows_are_pytorchs(label):
    torch = pytest.importorskip("torch")
    op, expected = VIEWS[label]
    assert _row(torch, op) == expected


def test_storages_of_different_tensors_never_overlap():
    ts = [funcgrad.zeros(n) for n in (1, 3, 17, 64, 5)]
    spans = sorted((t.data_ptr(), t.data_ptr() + t.nbytes) for t in ts)
    assert all(a[1] <= b[0] for a, b in zip(spans, spans[1:], strict=False))
    assert funcgrad.empty(0).data_ptr() == 0


def test_untyped_storage():  # (PyTorch 2.13's values and printout, its module's name ours)
    x = funcgrad.tensor([1.0, 2.0])
    s = x.untyped_storage()
    assert (s.nbytes(), s.size(), len(s), s.element_size(), str(s.device)) == (8, 8, 8, 1, "cpu")
    assert s.tolist() == [0, 0, 128, 63, 0, 0, 0, 64] and s[3] == 63
    assert repr(s) == (" 0\n 0\n 128\n 63\n 0\n 0\n 0\n 64\n"
                       "[funcgrad.storage.UntypedStorage(device=cpu) of size 8]")
    assert repr(funcgrad.tensor([True]).untyped_storage()) == (
        " 1\n[funcgrad.storage.UntypedStorage(device=cpu) of size 1]")
    assert repr(funcgrad.empty(0).untyped_storage()) == " \n[funcgrad.storage.UntypedStorage(device=cpu) of size 0]"
    x.add_(1)  # the storage is the tensor's memory, read live
    assert s.tolist()[:4] == [0, 0, 0, 64] and s.data_ptr() == x.data_ptr()
    assert not s.is_shared() and not s.is_pinned()


def test_typed_storage_warns_once_as_pytorch():
    funcgrad.storage._WARNED[0] = False
    x = funcgrad.arange(6.0).view(2, 3)
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        ts = x[1].storage()
        x.storage()
    assert [str(m.message) for m in w] == [
        "TypedStorage is deprecated. It will be removed in the future and UntypedStorage will be the only "
        "storage class. This should only matter to you if you are using storages directly.  To access "
        "UntypedStorage directly, use tensor.untyped_storage() instead of tensor.storage()"]
    assert w[0].filename == __file__  # (pointing at the caller's line)
    assert (ts.size(), len(ts), ts.dtype, ts.element_size(), ts.nbytes()) == (6, 6, funcgrad.float32, 4, 24)
    assert ts[1] == 1.0 and ts.tolist() == [0.0, 1.0, 2.0, 3.0, 4.0, 5.0]
    assert ts.data_ptr() == x.data_ptr() == ts.untyped().data_ptr()
    assert repr(funcgrad.tensor([1, 2]).storage()) == (
        " 1\n 2\n[funcgrad.storage.TypedStorage(dtype=funcgrad.int64, device=cpu) of size 2]")
    assert repr(funcgrad.tensor([1.5]).half().storage()) == (
        " 1.5\n[funcgrad.storage.TypedStorage(dtype=funcgrad.float16, device=cpu) of size 1]")
    assert funcgrad.tensor([[1, 2], [3, 4]]).t()[0].storage().tolist() == [1, 2, 3, 4]
