"""Spec rows for shape and indexing breadth: split/unbind, repeat/roll/flip, pad, unfold,
gather/scatter, index_*, masked_*, take."""

import jax.numpy as jnp
import numpy as np

import funcgrad as fg
from funcgrad._ops.shape_more import pad

from . import Spec

S = (3, 4)
IDX = np.array([[0, 2], [1, 3], [3, 0]])         # gather/scatter index for dim 1 of a (3, 4)
ROWS = np.array([2, 0])
MASK = np.array([[True, False, True, False], [False, False, True, True], [True, True, False, False]])


def _grid(i, dim):
    g = list(jnp.indices(i.shape, sparse=True))
    g[dim] = i
    return tuple(g)


def _np_pad(mode, *widths):
    """jnp.pad of the trailing dims by ``widths`` (given first dim first)."""
    return lambda x: jnp.pad(x, ((0, 0),) * (x.ndim - len(widths)) + widths, mode=mode)


SPECS = [
    Spec("squeeze_dims", lambda x: x.squeeze((0, -1)), lambda x: x[0, :, :, 0], [(1, 3, 2, 1)],
         grad_fn="SqueezeBackward2"),
    Spec("split", lambda x: x.split(2, dim=-1), lambda x: (x[:, :2], x[:, 2:]), [S], out=1, grad_fn="SplitBackward0"),
    Spec("split", lambda x: fg.chunk(x, 2, 0), lambda x: (x[:2], x[2:]), [S], out=1, id="chunk"),
    Spec("split_with_sizes", lambda x: fg.split(x, [1, 3], 1), lambda x: (x[:, :1], x[:, 1:]), [S], out=1,
         grad_fn="SplitWithSizesBackward0"),
    Spec("unbind", lambda x: x.unbind(1), lambda x: tuple(x[:, i] for i in range(4)), [S], out=2,
         grad_fn="UnbindBackward0"),
    Spec("getitem_slice", lambda x: x.narrow(-1, 1, 2), lambda x: x[:, 1:3], [S], id="narrow",
         grad_fn="SliceBackward0"),
    Spec("getitem_slice", lambda x: fg.tensor_split(x, 3, dim=1), lambda x: (x[:, :2], x[:, 2:3], x[:, 3:]), [S],
         out=0, id="tensor_split"),
    Spec("getitem_slice", lambda x: x.hsplit([1, 3]), lambda x: (x[:, :1], x[:, 1:3], x[:, 3:]), [S], out=1,
         id="hsplit"),
    Spec("getitem_select", lambda x: x.select(-1, -2), lambda x: x[:, -2], [S], id="select",
         grad_fn="SelectBackward0"),
    Spec("repeat", lambda x: x.repeat(2, 1, 3), lambda x: jnp.tile(x, (2, 1, 3)), [S], grad_fn="RepeatBackward0"),
    Spec("repeat", lambda x: x.tile((2,)), lambda x: jnp.tile(x, (1, 2)), [S], id="tile"),
    Spec("repeat_interleave", lambda x: x.repeat_interleave(2, dim=1), lambda x: jnp.repeat(x, 2, 1), [S],
         grad_fn="ViewBackward0"),
    Spec("index_select", lambda x: fg.repeat_interleave(x, fg.tensor([1, 0, 2]), dim=0),
         lambda x: x[np.array([0, 2, 2])], [S], id="repeat_interleave_tensor", grad_fn="IndexSelectBackward0"),
    Spec("roll", lambda x: x.roll((1, -2), (0, 1)), lambda x: jnp.roll(x, (1, -2), (0, 1)), [S],
         grad_fn="RollBackward0"),
    Spec("roll", lambda x: fg.roll(x, 5), lambda x: jnp.roll(x.ravel(), 5).reshape(x.shape), [S], id="roll_flat"),
    Spec("flip", lambda x: x.flip(0, -1), lambda x: x[::-1, ::-1], [S], grad_fn="FlipBackward0"),
    Spec("flip", fg.fliplr, lambda x: x[:, ::-1], [S], id="fliplr"),
    Spec("rot90", lambda x: x.rot90(1, [0, 1]), lambda x: jnp.rot90(x), [S], grad_fn="Rot90Backward0"),
    Spec("rot90", lambda x: fg.rot90(x, -1, (1, 2)), lambda x: jnp.rot90(x, 3, (1, 2)), [(2, 3, 4)], id="rot90_neg"),
    Spec("unfold", lambda x: x.unfold(1, 2, 1), lambda x: jnp.stack([x[:, i:i + 2] for i in range(3)], 1), [S],
         grad_fn="UnfoldBackward0"),
    Spec("permute", lambda x: fg.movedim(x, (0, 1), (-1, 0)), lambda x: jnp.moveaxis(x, (0, 1), (-1, 0)),
         [(2, 3, 4)], id="movedim"),
    Spec("pad_constant", lambda x: pad(x, (1, 2, 0, 1), value=0.5),
         lambda x: jnp.pad(x, ((0, 1), (1, 2)), constant_values=0.5), [S], grad_fn="ConstantPadNdBackward0"),
    Spec("pad_constant", lambda x: pad(x, (-1, 1)), lambda x: jnp.pad(x[:, 1:], ((0, 0), (0, 1))), [S],
         id="pad_negative"),
    Spec("pad_circular", lambda x: pad(x, (1, 2), mode="circular"), _np_pad("wrap", (1, 2)), [(1, 3, 4)],
         grad_fn="CopySlices"),
    Spec("pad_reflect1d", lambda x: pad(x, (1, 2), mode="reflect"), _np_pad("reflect", (1, 2)), [(1, 3, 4)],
         grad_fn="ReflectionPad1DBackward0"),
    Spec("pad_reflect2d", lambda x: pad(x, (2, 1, 1, 2), mode="reflect"), _np_pad("reflect", (1, 2), (2, 1)), [(1, 3, 4)],
         grad_fn="ReflectionPad2DBackward0"),
    Spec("pad_reflect3d", lambda x: pad(x, (2, 1, 1, 2, 0, 0), mode="reflect"), _np_pad("reflect", (0, 0), (1, 2), (2, 1)),
         [(1, 2, 3, 4)],
         grad_fn="ReflectionPad3DBackward0"),
    Spec("pad_replicate1d", lambda x: pad(x, (1, 2), mode="replicate"), _np_pad("edge", (1, 2)), [(2, 3, 4)],
         grad_fn="ReplicationPad1DBackward0"),
    Spec("pad_replicate2d", lambda x: pad(x, (2, 1, 1, 2), mode="replicate"), _np_pad("edge", (1, 2), (2, 1)), [(3, 4, 4)],
         grad_fn="ReplicationPad2DBackward0"),
    Spec("pad_replicate3d", lambda x: pad(x, (2, 1, 1, 2, 0, 0), mode="replicate"),
         _np_pad("edge", (0, 0), (1, 2), (2, 1)), [(1, 2, 3, 4)], grad_fn="ReplicationPad3DBackward0"),
    # ---- indexing ----
    # unique's values: a node whose derivative is not implemented (tests/test_engine_needed_inputs.py)
    Spec("unique_values", lambda x: fg.unique(x), lambda x: jnp.unique(x), [np.array([3.0, 1.0, 3.0, 2.0])],
         nondiff=True),
    Spec("unique_dim_values", lambda x: x.unique(dim=0), lambda x: jnp.unique(x, axis=0),
         [np.array([[1.0, 2.0], [0.0, 1.0], [1.0, 2.0]])], nondiff=True),
    Spec("unique_consecutive_values", lambda x: fg.unique_consecutive(x), lambda x: jnp.array([3.0, 1.0, 2.0]),
         [np.array([3.0, 3.0, 1.0, 2.0])], nondiff=True),
    Spec("index_select", lambda x, i: x.index_select(-1, i), lambda x, i: x[:, i], [S, ROWS],
         grad_fn="IndexSelectBackward0"),
    Spec("take", lambda x, i: x.take(i), lambda x, i: x.ravel()[jnp.where(i < 0, i + 12, i)],
         [S, np.array([[0, 11], [-1, 5]])], grad_fn="TakeBackward0"),
    Spec("take_along_dim", lambda x, i: fg.take_along_dim(x, i, 1), lambda x, i: jnp.take_along_axis(x, i, 1),
         [S, IDX], grad_fn="GatherBackward0"),
    Spec("take_along_dim", lambda x, i: fg.take_along_dim(x, i), lambda x, i: x.ravel()[i],
         [S, np.array([3, 7])], id="take_along_dim_flat"),
    Spec("take_along_dim", lambda x, i: fg.take_along_dim(x, i, 2),
         lambda x, i: jnp.take_along_axis(jnp.broadcast_to(x, (2, 3, 4)), jnp.broadcast_to(i, (2, 3, 2)), 2),
         [(2, 1, 4), IDX[None]], id="take_along_dim_broadcast"),
    Spec("gather", lambda x, i: x.gather(1, i), lambda x, i: jnp.take_along_axis(x, i, 1), [S, IDX],
         grad_fn="GatherBackward0"),
    Spec("gather", lambda x, i: fg.gather(x, 0, i), lambda x, i: x[:, :2][_grid(i, 0)],
         [S, np.array([[2, 1], [0, 0]])], id="gather_smaller_index"),
    # src of the index's shape (a larger src that requires grad: PyTorch's backward raises, as
    # funcgrad's: tests/test_opinfo_derivatives.py)
    Spec("scatter", lambda x, i, s: x.scatter(1, i, s), lambda x, i, s: x.at[_grid(i, 1)].set(s),
         [S, IDX, (3, 2)], grad=(0, 2), grad_fn="ScatterBackward0"),
    Spec("scatter_value", lambda x, i: x.scatter(1, i, 2.5), lambda x, i: x.at[_grid(i, 1)].set(2.5), [S, IDX],
         grad_fn="ScatterBackward1"),
    Spec("scatter_reduce_legacy", lambda x, i: x.scatter(1, i, 2.0, reduce="multiply"),
         lambda x, i: x.at[_grid(i, 1)].multiply(2.0), [S, IDX], nondiff=True),
    Spec("scatter_add", lambda x, i, s: x.scatter_add(0, i, s),
         lambda x, i, s: x.at[_grid(i, 0)].add(s), [S, np.array([[0, 0, 2, 1]] * 2), (2, 4)],
         grad_fn="ScatterAddBackward0"),
    Spec("scatter_reduce", lambda x, i, s: x.scatter_reduce(1, i, s, "sum", include_self=False),
         lambda x, i, s: x.at[_grid(i, 1)].set(0).at[_grid(i, 1)].add(s), [S, IDX, (3, 2)],
         grad_fn="ScatterReduceBackward0"),
    Spec("scatter_reduce", lambda x, i, s: x.scatter_reduce(1, i, s, "amax"),
         lambda x, i, s: x.at[_grid(i, 1)].max(s), [S, IDX, (3, 2)], id="scatter_reduce_amax"),
    Spec("scatter_reduce", lambda x, i, s: x.scatter_reduce(0, i, s, "mean"),
         lambda x, i, s: x.at[_grid(i, 0)].add(s) / jnp.ones_like(x).at[_grid(i, 0)].add(1),
         [S, np.array([[0, 0, 2, 1]] * 2), (2, 4)], id="scatter_reduce_mean"),
    Spec("index_add", lambda x, i, s: x.index_add(1, i, s, alpha=2.0), lambda x, i, s: x.at[:, i].add(2.0 * s),
         [S, np.array([3, 0, 3]), (3, 3)], grad_fn="IndexAddBackward0"),
    Spec("index_copy", lambda x, i, s: x.index_copy(0, i, s), lambda x, i, s: x.at[i].set(s), [S, ROWS, (2, 4)],
         grad_fn="IndexCopyBackward0"),
    Spec("index_fill", lambda x, i: x.index_fill(1, i, -1.0), lambda x, i: x.at[:, i].set(-1.0), [S, ROWS],
         grad_fn="IndexFillBackward0"),
    Spec("index_fill_tensor", lambda x, i, v: x.index_fill(1, i, v), lambda x, i, v: x.at[:, i].set(v),
         [S, ROWS, ()], grad_fn="IndexFillBackward1"),
    Spec("masked_fill", lambda x, m: x.masked_fill(m, 0.5), lambda x, m: jnp.where(m, 0.5, x), [S, MASK],
         grad_fn="MaskedFillBackward0"),
    Spec("masked_fill", lambda x, m: x.masked_fill(m, 1.0), lambda x, m: jnp.where(m, 1.0, x), [S, MASK[0]],
         id="masked_fill_broadcast"),
    Spec("masked_fill_tensor", lambda x, m, v: fg.masked_fill(x, m, v), lambda x, m, v: jnp.where(m, v, x),
         [S, MASK, ()], grad_fn="MaskedFillBackward1"),
    Spec("masked_select", lambda x, m: x.masked_select(m), lambda x, m: x[m], [S, MASK],
         grad_fn="MaskedSelectBackward0"),
    Spec("masked_select", lambda x, m: fg.masked_select(x, m), lambda x, m: jnp.broadcast_to(x, (3, 4))[m],
         [(4,), MASK], id="masked_select_broadcast"),
]
