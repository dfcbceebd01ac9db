"""Shapes that do not broadcast, against PyTorch: every row makes the same mistake on ``torch`` and
on ``funcgrad``; both must raise the same exception type with the same message, and funcgrad must
leave the row's tensors unchanged (values, versions, ``requires_grad``, ``.grad``).

PyTorch words a mismatch by the path that finds it (``funcgrad/_broadcast.py``): ATen's
``infer_size`` scans from the last dim and folds over the operands in ATen's order (``masked_fill``
and ``kl_div`` take the mask / target first), ``expand`` has its own message, an in-place op whose
broadcast shape is not self's another, and ``torch.broadcast_shapes`` (Python) a third. Most rows
have two mismatching dims, so a scan from the first dim, or another operand order, names another
dimension than PyTorch.

Without PyTorch the expected outcomes come from ``tests/fixtures/broadcast_errors/outcomes.json``,
recorded from PyTorch 2.13 by ``tests/fixtures/broadcast_errors/make_fixtures.py``.
"""

from __future__ import annotations

import pathlib
import random

import numpy as np
import pytest

import funcgrad
import funcgrad.nn.functional  # noqa: F401
from funcgrad import _broadcast

# one way of running a row, comparing it with PyTorch and checking nothing changed
from .test_errors_torch import _outcome, check_fixture_current, check_matches_torch, check_unchanged

FIXTURE = pathlib.Path(__file__).parent / "fixtures" / "broadcast_errors" / "outcomes.json"


# ------------------------------------------------------------------ the tensors a row starts from
def _ts(**shapes):
    """A setup making one float32 tensor per name (``g`` requires grad), of the given shapes."""
    def setup(lib):
        lib.manual_seed(0)
        return {k: lib.randn(*s, requires_grad=k == "g") for k, s in shapes.items()}
    return setup


def _mask(lib, *shape):
    return lib.arange(float(np.prod(shape))).reshape(shape) % 2 == 0


def _F(lib):
    return lib.nn.functional


_23_45 = _ts(g=(2, 3), b=(4, 5))
_23 = _ts(g=(2, 3), a=(2, 3))
_3 = _ts(a=(3,), b=(2, 3))

# ------------------------------------------------------------------ the rows: (id, setup, mistake)
ROWS = [
    # ---- elementwise ops: TensorIterator folds infer_size over its operands in order
    ("add, two mismatching dims", _23_45, lambda o, lib: o["g"] + o["b"]),
    ("mul, one mismatch", _23_45, lambda o, lib: lib.mul(o["g"], o["b"][0, :4])),
    ("add, fewer dims", _ts(g=(3,), b=(2, 4)), lambda o, lib: o["g"] + o["b"]),
    ("where, three operands", _ts(a=(1, 3), b=(4, 5)),
     lambda o, lib: lib.where(_mask(lib, 2, 1), o["a"], o["b"])),
    ("where, condition last to mismatch", _ts(a=(2, 1), b=(4, 5)),
     lambda o, lib: lib.where(_mask(lib, 1, 5), o["a"], o["b"])),
    ("addcmul, three operands", _ts(g=(2, 1), a=(1, 3), b=(4, 5)),
     lambda o, lib: lib.addcmul(o["g"], o["a"], o["b"])),
    ("clamp, tensor min and max", _ts(g=(2, 3), a=(4, 1), b=(1, 5)),
     lambda o, lib: lib.clamp(o["g"], o["a"], o["b"])),
    ("clamp, tensor max mismatching", _ts(g=(2, 3), a=(2, 3), b=(4, 5)),
     lambda o, lib: lib.clamp(o["g"], o["a"], o["b"])),
    ("masked_fill: the mask is tensor a", _23_45, lambda o, lib: o["g"].masked_fill(_mask(lib, 4, 5), 0.0)),
    ("masked_fill, one mismatch", _23_45, lambda o, lib: o["g"].masked_fill(_mask(lib, 4), 0.0)),
    ("masked_fill_: self is tensor a", _ts(a=(2, 3)), lambda o, lib: o["a"].masked_fill_(_mask(lib, 4, 5), 0.0)),
    ("masked_fill_ with a larger mask", _ts(a=(3,)), lambda o, lib: o["a"].masked_fill_(_mask(lib, 2, 3), 0.0)),
    ("masked_select", _23_45, lambda o, lib: o["g"].masked_select(_mask(lib, 4, 5))),
    ("masked_scatter", _ts(g=(2, 3), b=(20,)), lambda o, lib: o["g"].masked_scatter(_mask(lib, 4, 5), o["b"])),
    ("masked_scatter_", _ts(a=(2, 3), b=(20,)), lambda o, lib: o["a"].masked_scatter_(_mask(lib, 4, 5), o["b"])),
    ("matmul batch dims", _ts(g=(2, 3, 4, 5), b=(4, 5, 5, 6)), lambda o, lib: o["g"] @ o["b"]),
    ("matmul batch dims and inner sizes", _ts(g=(2, 3, 4, 5), b=(4, 5, 6, 6)), lambda o, lib: o["g"] @ o["b"]),
    ("cdist batch dims", _ts(g=(2, 3, 4, 4), b=(3, 2, 5, 4)), lambda o, lib: lib.cdist(o["g"], o["b"])),
    ("linalg.cross", _ts(g=(2, 5, 3), b=(4, 6, 3)), lambda o, lib: lib.linalg.cross(o["g"], o["b"])),
    ("addmm input: expand's error", _ts(g=(3, 5), a=(2, 4), b=(4, 6)),
     lambda o, lib: lib.addmm(o["g"], o["a"], o["b"])),
    ("addmm input of more dims", _ts(g=(1, 2, 6), a=(2, 4), b=(4, 6)),
     lambda o, lib: lib.addmm(o["g"], o["a"], o["b"])),
    ("baddbmm input", _ts(g=(2, 5, 7), a=(3, 4, 5), b=(3, 5, 6)),
     lambda o, lib: lib.baddbmm(o["g"], o["a"], o["b"])),
    ("addbmm input", _ts(g=(3, 5), a=(2, 2, 4), b=(2, 4, 6)), lambda o, lib: lib.addbmm(o["g"], o["a"], o["b"])),
    ("addmv input", _ts(g=(3,), a=(2, 4), b=(4,)), lambda o, lib: lib.addmv(o["g"], o["a"], o["b"])),
    ("addmv input of 2 dims", _ts(g=(2, 2), a=(2, 4), b=(4,)), lambda o, lib: lib.addmv(o["g"], o["a"], o["b"])),
    ("sdpa batch dims of q and k", _ts(g=(2, 3, 4, 8), a=(4, 5, 4, 8), b=(4, 5, 4, 8)),
     lambda o, lib: _F(lib).scaled_dot_product_attention(o["g"], o["a"], o["b"])),
    ("sdpa batch dims of v", _ts(g=(2, 4, 8), a=(2, 4, 8), b=(3, 4, 8)),
     lambda o, lib: _F(lib).scaled_dot_product_attention(o["g"], o["a"], o["b"])),
    ("sdpa mask", _ts(g=(2, 3, 4, 8), a=(2, 3, 4, 8), b=(5, 6, 4, 4)),
     lambda o, lib: _F(lib).scaled_dot_product_attention(o["g"], o["a"], o["a"], attn_mask=o["b"])),
    ("sdpa with dropout", _ts(g=(2, 3, 4, 8), a=(4, 5, 4, 8)),
     lambda o, lib: _F(lib).scaled_dot_product_attention(o["g"], o["a"], o["a"], dropout_p=0.5)),
    # ---- in place: the broadcast shape must be self's
    ("add_ to a larger shape", _3, lambda o, lib: o["a"].add_(o["b"])),
    ("add_, two mismatching dims", _ts(a=(2, 3), b=(4, 5)), lambda o, lib: o["a"].add_(o["b"])),
    ("mul_, one mismatch", _ts(a=(2, 3), b=(4,)), lambda o, lib: o["a"].mul_(o["b"])),
    ("sub_ to a larger shape", _ts(a=(3,), b=(2, 1)), lambda o, lib: o["a"].sub_(o["b"])),
    ("+= to a larger shape", _ts(a=(1, 3), b=(2, 3)), lambda o, lib: o["a"].__iadd__(o["b"])),
    ("copy_ from a larger shape", _3, lambda o, lib: o["a"].copy_(o["b"])),
    ("copy_, two mismatching dims", _ts(a=(2, 3), b=(4, 5)), lambda o, lib: o["a"].copy_(o["b"])),
    ("clamp_ to a larger shape", _3, lambda o, lib: o["a"].clamp_(o["b"], o["a"])),
    ("addcmul_ to a larger shape", _3, lambda o, lib: o["a"].addcmul_(o["b"], o["a"])),
    ("setitem of a value of two mismatching dims", _ts(a=(2, 3), b=(4, 5)),
     lambda o, lib: o["a"].__setitem__(slice(None), o["b"])),
    # ---- out=
    ("add out=, two mismatching dims", _ts(c=(2, 3), b=(4, 5), a=(4, 5)),
     lambda o, lib: lib.add(o["c"], o["b"], out=o["a"])),
    ("normal of mean and std", _ts(a=(2, 3), b=(4, 5)), lambda o, lib: lib.normal(o["a"], o["b"].abs())),
    ("normal of a mean, into out=", _ts(a=(2, 3), b=(4, 5)),
     lambda o, lib: lib.normal(o["a"], 1.0, out=o["b"])),
    ("normal of mean and std, into out=", _ts(a=(2, 3), b=(4, 5)),
     lambda o, lib: lib.normal(o["a"], o["b"].abs(), out=o["a"])),
    # ---- expand / broadcast_to / broadcast_tensors
    ("expand, two mismatching dims", _23_45, lambda o, lib: o["g"].expand(4, 5)),
    ("expand with a new leading dim", _23_45, lambda o, lib: o["g"].expand(2, 4, 5)),
    ("expand -1 in a new leading dim", _23_45, lambda o, lib: o["g"].expand(-1, 2, 3)),
    ("expand -1 kept, others mismatching", _23_45, lambda o, lib: o["g"].expand(-1, 4, 5)),
    ("expand of an int64 tensor to fewer dims", _23_45, lambda o, lib: o["g"].long().expand(3)),
    ("expand_as", _23_45, lambda o, lib: o["g"].expand_as(o["b"])),
    ("broadcast_to", _23_45, lambda o, lib: lib.broadcast_to(o["g"], (4, 5))),
    ("broadcast_tensors, fold over three", _ts(g=(2, 1), a=(1, 3), b=(4, 5)),
     lambda o, lib: lib.broadcast_tensors(o["g"], o["a"], o["b"])),
    ("broadcast_tensors, fewer dims", _ts(g=(3,), b=(2, 4)), lambda o, lib: lib.broadcast_tensors(o["g"], o["b"])),
    # ---- torch.broadcast_shapes (Python, its own messages)
    ("broadcast_shapes, two mismatching dims", _23, lambda o, lib: lib.broadcast_shapes((2, 3), (4, 5))),
    ("broadcast_shapes of a list", _23, lambda o, lib: lib.broadcast_shapes([2, 3], (1, 5))),
    ("broadcast_shapes of an int", _23, lambda o, lib: lib.broadcast_shapes(3, (2, 4))),
    ("broadcast_shapes of Sizes", _23_45, lambda o, lib: lib.broadcast_shapes(o["g"].shape, o["b"].shape)),
    ("broadcast_shapes, the common shape grown before", _23,
     lambda o, lib: lib.broadcast_shapes((1, 1, 3), (4, 2, 3), (5, 1, 1))),
    ("broadcast_shapes of a size 0", _23, lambda o, lib: lib.broadcast_shapes((0,), (2,))),
    ("broadcast_shapes of a negative size", _23, lambda o, lib: lib.broadcast_shapes((1,), (-1,))),
    ("broadcast_shapes of a negative size against 3", _23, lambda o, lib: lib.broadcast_shapes((3,), (-1,))),
    ("broadcast_shapes of a dict", _23, lambda o, lib: lib.broadcast_shapes({1: 2}, (3,))),
    ("broadcast_shapes of a numpy int", _23, lambda o, lib: lib.broadcast_shapes(np.int64(3), (3,))),
    # ---- losses
    ("mse_loss", _23_45, lambda o, lib: _F(lib).mse_loss(o["g"], o["b"])),
    ("mse_loss reduction='none'", _23_45, lambda o, lib: _F(lib).mse_loss(o["g"], o["b"], reduction="none")),
    ("mse_loss weight of another size", _ts(g=(2, 3), a=(2, 3), b=(1, 3)),
     lambda o, lib: _F(lib).mse_loss(o["g"], o["a"], weight=o["b"])),
    ("l1_loss", _23_45, lambda o, lib: _F(lib).l1_loss(o["g"], o["b"])),
    ("l1_loss weight of another size", _ts(g=(2, 3), a=(2, 3), b=(4, 5)),
     lambda o, lib: _F(lib).l1_loss(o["g"], o["a"], weight=o["b"])),
    ("smooth_l1_loss", _23_45, lambda o, lib: _F(lib).smooth_l1_loss(o["g"], o["b"])),
    ("huber_loss", _23_45, lambda o, lib: _F(lib).huber_loss(o["g"], o["b"], reduction="sum")),
    ("huber_loss weight of another size", _ts(g=(2, 3), a=(2, 3), b=(3,)),
     lambda o, lib: _F(lib).huber_loss(o["g"], o["a"], weight=o["b"])),
    ("soft_margin_loss", _23_45, lambda o, lib: _F(lib).soft_margin_loss(o["g"], o["b"])),
    ("kl_div: the target is tensor a", _23_45, lambda o, lib: _F(lib).kl_div(o["g"], o["b"], reduction="batchmean")),
    ("kl_div log_target", _23_45, lambda o, lib: _F(lib).kl_div(o["g"], o["b"], reduction="sum", log_target=True)),
    ("poisson_nll_loss", _23_45, lambda o, lib: _F(lib).poisson_nll_loss(o["g"], o["b"])),
    ("poisson_nll_loss log_input=False", _23_45,
     lambda o, lib: _F(lib).poisson_nll_loss(o["g"], o["b"], log_input=False)),
    ("hinge_embedding_loss", _23_45, lambda o, lib: _F(lib).hinge_embedding_loss(o["g"], o["b"])),
    ("multilabel_soft_margin_loss", _23_45, lambda o, lib: _F(lib).multilabel_soft_margin_loss(o["g"], o["b"])),
    ("margin_ranking_loss target", _ts(g=(2, 3), a=(2, 3), b=(4, 5)),
     lambda o, lib: _F(lib).margin_ranking_loss(o["g"], o["a"], o["b"])),
    ("cosine_embedding_loss inputs", _ts(g=(2, 3), a=(4, 5), b=(2,)),
     lambda o, lib: _F(lib).cosine_embedding_loss(o["g"], o["a"], o["b"])),
    ("cosine_embedding_loss target", _ts(g=(2, 3), a=(2, 3), b=(5,)),
     lambda o, lib: _F(lib).cosine_embedding_loss(o["g"], o["a"], o["b"])),
    ("binary_cross_entropy weight", _ts(a=(2, 3), b=(4, 5)),
     lambda o, lib: _F(lib).binary_cross_entropy(o["a"].sigmoid(), o["a"].sigmoid(), weight=o["b"])),
    ("binary_cross_entropy weight of more dims", _ts(a=(2, 3), b=(2, 2, 3)),
     lambda o, lib: _F(lib).binary_cross_entropy(o["a"].sigmoid(), o["a"].sigmoid(), weight=o["b"])),
    ("bce_with_logits weight", _ts(g=(2, 3), a=(2, 3), b=(4, 5)),
     lambda o, lib: _F(lib).binary_cross_entropy_with_logits(o["g"], o["a"], weight=o["b"])),
    ("bce_with_logits pos_weight", _ts(g=(2, 3), a=(2, 3), b=(4, 5)),
     lambda o, lib: _F(lib).binary_cross_entropy_with_logits(o["g"], o["a"], pos_weight=o["b"])),
    ("bce_with_logits weight of more dims", _ts(g=(2, 3), a=(2, 3), b=(2, 2, 3)),
     lambda o, lib: _F(lib).binary_cross_entropy_with_logits(o["g"], o["a"], weight=o["b"], reduction="none")),
    ("bce_with_logits pos_weight of more dims", _ts(g=(2, 3), a=(2, 3), b=(2, 2, 3)),
     lambda o, lib: _F(lib).binary_cross_entropy_with_logits(o["g"], o["a"], pos_weight=o["b"])),
]
IDS = [r[0] for r in ROWS]


def outcomes(torch):
    """PyTorch's (exception type, message) per row, for the fixture."""
    return {row[0]: list(_outcome(torch, row)[:2]) for row in ROWS}


@pytest.mark.torch
@pytest.mark.parametrize("row", ROWS, ids=IDS)
def test_error_matches_torch(row):
    """Same exception type and message as PyTorch (live when installed, else recorded)."""
    check_matches_torch(row, FIXTURE)


@pytest.mark.parametrize("row", ROWS, ids=IDS)
def test_error_leaves_tensors_unchanged(row):
    check_unchanged(row)


def test_fixture_is_current():
    check_fixture_current(ROWS, FIXTURE, "tests/fixtures/broadcast_errors/make_fixtures.py")


# ------------------------------------------------------------------ shapes that do broadcast
GOOD_SHAPES = [((2,), (3, 1), (1, 1, 1)), ((2, 1), (3,), None), ([2, 1], [3]), ((0,), (1,)), (3, (2, 1)),
               ((2, 3),), (), ((1, 1), (4, 5)), ((2, 1), (4, 5, 1, 3)), (True, (3,))]


@pytest.mark.parametrize("shapes", GOOD_SHAPES, ids=repr)
def test_broadcast_shapes_values(shapes):
    got = funcgrad.broadcast_shapes(*shapes)
    assert type(got) is funcgrad.Size
    try:
        import torch
    except ImportError:
        assert tuple(got) == tuple(_broadcast.broadcast_shapes(*shapes) or ())
        return
    assert tuple(got) == tuple(torch.broadcast_shapes(*shapes))


def test_infer_size_against_aten():
    """``_broadcast.infer_size`` against ATen's own (``torch._C._infer_size``) on random shapes,
    half of them broadcastable: the same shape, or the same message."""
    torch = pytest.importorskip("torch")
    rng = random.Random(0)
    for _ in range(300):
        a = tuple(rng.choice((1, 1, 2, 3, 0)) for _ in range(rng.randrange(4)))
        b = tuple(rng.choice((1, 2, 3, 4)) for _ in range(rng.randrange(4)))
        want = got = None
        try:
            want = tuple(torch._C._infer_size(torch.Size(a), torch.Size(b)))
        except RuntimeError as e:
            want = str(e)
        try:
            got = _broadcast.infer_size(a, b)
        except RuntimeError as e:
            got = str(e)
        assert got == want, (a, b)
