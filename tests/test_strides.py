"""Strides and contiguity against PyTorch: over a table of view chains, funcgrad's ``stride()``,
``storage_offset()``, ``is_contiguous()``, which ``view`` shapes are allowed (else PyTorch's
error), ``reshape`` (a view or a copy) and ``contiguous()`` agree with torch's.
"""

import pytest

import funcgrad
from funcgrad import _strides
from funcgrad._ops._registry import OPS

CHAINS = {
    "base": lambda x: x,
    "t of 2-D": lambda x: x[0].t(),
    "transpose": lambda x: x.transpose(0, 2),
    "permute": lambda x: x.permute(2, 0, 1),
    "T": lambda x: x[1].T,
    "mT": lambda x: x.mT,
    "movedim": lambda x: x.movedim(0, -1),
    "swapaxes twice": lambda x: x.swapaxes(0, 1).swapaxes(1, 2),
    "t t": lambda x: x[1].t().t(),
    "step slice": lambda x: x[:, ::2],
    "range slice": lambda x: x[1:, 1:3],
    "two steps": lambda x: x[::2, :, ::3],
    "int index": lambda x: x[1],
    "last index": lambda x: x[..., 1],
    "None index": lambda x: x[None],
    "None and slice": lambda x: x[:, None, 1:],
    "select": lambda x: x.select(1, 2),
    "narrow": lambda x: x.narrow(2, 1, 2),
    "expand": lambda x: x[:, :1].expand(2, 5, 4),
    "expand new dims": lambda x: x[0, 0].expand(3, 2, 4),
    "unsqueeze": lambda x: x.unsqueeze(1),
    "unsqueeze last of a slice": lambda x: x[:, 1].unsqueeze(-1),
    "squeeze": lambda x: x[:, :1].squeeze(1),
    "squeeze all": lambda x: x[:1, :, :1].squeeze(),
    "view": lambda x: x.view(6, 4),
    "flatten": lambda x: x.flatten(1),
    "diagonal": lambda x: x.diagonal(0, 0, 1),
    "diagonal offset": lambda x: x.diagonal(1, 1, 2),
    "diagonal negative offset": lambda x: x.diagonal(-1, 2, 1),
    "unfold": lambda x: x.unfold(2, 2, 1),
    "unfold step": lambda x: x.unfold(1, 2, 2),
    "split": lambda x: x.split(2, dim=2)[1],
    "chunk": lambda x: x.chunk(3, dim=1)[2],
    "unbind": lambda x: x.unbind(1)[1],
    "permute then slice": lambda x: x.permute(1, 2, 0)[1:, ::2],
    "transpose then view": lambda x: x.transpose(1, 2).view(2, 2, 2, 3),
    "slice then transpose": lambda x: x[:, 1:].transpose(0, 1),
    "expand then select": lambda x: x[:, :1].expand(2, 3, 4)[:, 1],
    "t of a step slice": lambda x: x[0, ::2].t(),
}
VIEW_SHAPES = [(-1,), (2, -1), (-1, 2), (1, -1, 1)]


def _base(lib):
    return lib.arange(24.0).reshape(2, 3, 4)


def _views(t, lib):
    """For each shape of VIEW_SHAPES: the view's (shape, strides, offset), or the error."""
    out = []
    for shape in VIEW_SHAPES:
        try:
            v = t.view(*shape)
            out.append((tuple(v.shape), v.stride(), v.storage_offset()))
        except RuntimeError as e:
            out.append(str(e))
    return out


def _layout(t, lib):
    r = t.reshape(-1)
    return {"shape": tuple(t.shape), "stride": t.stride(), "offset": t.storage_offset(),
            "contiguous": t.is_contiguous(), "views": _views(t, lib),
            "reshape shares storage": _shares(r, t, lib), "reshape": r.tolist(),
            "contiguous() stride": t.contiguous().stride(),
            "contiguous() is self": t.contiguous() is t,
            "stride(-1)": t.stride(-1) if t.ndim else None}


def _shares(r, t, lib):
    """Whether a write through ``r`` shows in ``t`` (PyTorch: reshape returned a view)."""
    before = t.tolist()
    if r.numel():
        r[0] = -100.0
    changed = t.tolist() != before
    return changed


@pytest.mark.torch
@pytest.mark.parametrize("name", list(CHAINS))
def test_view_chain_layout_matches_torch(name):
    torch = pytest.importorskip("torch")
    want = _layout(CHAINS[name](_base(torch)), torch)
    got = _layout(CHAINS[name](_base(funcgrad)), funcgrad)
    assert got == want


@pytest.mark.torch
@pytest.mark.parametrize("name", ["t of 2-D", "step slice", "expand", "diagonal"])
def test_reshape_graph_matches_torch(name):
    """A reshape that must copy: CloneBackward0 under UnsafeViewBackward0, as in PyTorch."""
    torch = pytest.importorskip("torch")

    def names(lib):
        x = _base(lib).requires_grad_()
        r = CHAINS[name](x * 1).reshape(-1)
        node, out = r.grad_fn, []
        while node is not None and node.name() != "MulBackward0":
            out.append(node.name())
            node = node.next_functions[0][0]
        return out
    assert names(funcgrad) == names(torch)


def test_every_view_op_has_a_stride_rule():
    views = {k for k, op in OPS.items() if op.view}
    assert views <= set(_strides.RULES), views - set(_strides.RULES)


def test_compute_stride_table():
    """PyTorch's computeStride on a few hand cases (sizes, strides, new shape) -> strides/None."""
    cases = [((2, 3), (3, 1), (6,), (1,)), ((3, 2), (1, 3), (6,), None),
             ((2, 3), (1, 2), (3, 2), None), ((4, 3), (6, 2), (2, 2, 3), (12, 6, 2)),
             ((2, 1, 3), (3, 100, 1), (6,), (1,)), ((3, 4), (0, 1), (12,), None),
             ((3, 4), (0, 1), (3, 2, 2), (0, 2, 1)), ((0, 3), (3, 1), (3, 0), (1, 1)),
             ((), (), (1, 1), (1, 1))]
    for sz, st, new, want in cases:
        assert _strides.compute_stride(sz, st, new) == want, (sz, st, new)


def test_view_error_leaves_the_tensor_unchanged():
    x = funcgrad.arange(6.0).reshape(2, 3)
    t = x.t()
    with pytest.raises(RuntimeError, match="view size is not compatible"):
        t.view(6)
    assert t.tolist() == [[0.0, 3.0], [1.0, 4.0], [2.0, 5.0]] and t.stride() == (1, 3)
    assert x._version == 0
