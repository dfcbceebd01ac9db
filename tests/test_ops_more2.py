"""Issue 18, the rest: ``F.grid_sample``, ``F.affine_grid``, ``interpolate(mode="bicubic")``,
``F.ctc_loss``/``nn.CTCLoss`` and ``nn.utils.parametrizations``, against live PyTorch: forward,
gradients, node names, warnings and errors."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import funcgrad
import funcgrad.nn.functional as F

torch = pytest.importorskip("torch")
TF = torch.nn.functional
pytestmark = pytest.mark.torch


def _pair(a, requires_grad=True):
    a = np.asarray(a)
    return (funcgrad.tensor(a, requires_grad=requires_grad), torch.tensor(a, requires_grad=requires_grad))


def _close(f, t, rtol=1e-5, atol=1e-6):
    np.testing.assert_allclose(np.asarray(f.detach().numpy()), t.detach().numpy(), rtol=rtol, atol=atol)


def _raises(fg, tc):
    with pytest.raises(Exception) as te:
        tc()
    with pytest.raises(type(te.value)) as fe:
        fg()
    assert str(fe.value).replace("funcgrad", "torch") == str(te.value), (str(fe.value), str(te.value))


# ================================ grid_sample / affine_grid =======================================
rng = np.random.default_rng(0)
IMG = rng.normal(size=(2, 3, 4, 5)).astype(np.float32)
# beyond [-1, 1] (padding), exact pixel centres and borders (the clip/reflect gradient conventions)
GRID = np.concatenate([rng.uniform(-1.6, 1.6, size=(2, 3, 2, 2)),
                       np.broadcast_to(np.array([[[[-1.0, -1.0], [1.0, 1.0]]]]), (2, 1, 2, 2)),
                       np.broadcast_to(np.array([[[[0.2, -0.5], [1.0, -1.0]]]]), (2, 1, 2, 2))],
                      axis=1).astype(np.float32)


@pytest.mark.parametrize("mode", ["bilinear", "nearest"])
@pytest.mark.parametrize("padding_mode", ["zeros", "border", "reflection"])
@pytest.mark.parametrize("align_corners", [False, True])
def test_grid_sample_matches_torch(mode, padding_mode, align_corners):
    (fx, tx), (fg, tg) = _pair(IMG), _pair(GRID)
    fy = F.grid_sample(fx, fg, mode=mode, padding_mode=padding_mode, align_corners=align_corners)
    ty = TF.grid_sample(tx, tg, mode=mode, padding_mode=padding_mode, align_corners=align_corners)
    assert type(fy.grad_fn).__name__ == type(ty.grad_fn).__name__ == "GridSampler2DBackward0"
    _close(fy, ty, 1e-5, 1e-5)
    w = rng.normal(size=ty.shape).astype(np.float32)
    (fy * funcgrad.tensor(w)).sum().backward()
    (ty * torch.tensor(w)).sum().backward()
    _close(fx.grad, tx.grad, 1e-5, 1e-5)
    _close(fg.grad, tg.grad, 1e-4, 1e-4)


def test_grid_sample_float64_default_align_warning_and_errors():
    (fx, tx), (fg, tg) = _pair(IMG.astype(np.float64)), _pair(GRID.astype(np.float64))
    with warnings.catch_warnings(record=True) as tw:
        warnings.simplefilter("always")
        ty = TF.grid_sample(tx, tg)
    with pytest.warns(UserWarning) as fw:
        fy = F.grid_sample(fx, fg)
    assert str(fw[0].message) == str(tw[0].message)
    assert fy.dtype is funcgrad.float64
    _close(fy, ty, 1e-12, 1e-12)
    _raises(lambda: F.grid_sample(fx, fg, mode="foo"), lambda: TF.grid_sample(tx, tg, mode="foo"))
    _raises(lambda: F.grid_sample(fx, fg, padding_mode="foo", align_corners=False),
            lambda: TF.grid_sample(tx, tg, padding_mode="foo", align_corners=False))
    _raises(lambda: F.grid_sample(fx[0], fg, align_corners=False),
            lambda: TF.grid_sample(tx[0], tg, align_corners=False))
    _raises(lambda: F.grid_sample(fx, fg[..., :1], align_corners=False),
            lambda: TF.grid_sample(tx, tg[..., :1], align_corners=False))
    _raises(lambda: F.grid_sample(fx, fg[:1], align_corners=False),
            lambda: TF.grid_sample(tx, tg[:1], align_corners=False))
    _raises(lambda: F.grid_sample(fx.float(), fg, align_corners=False),
            lambda: TF.grid_sample(tx.float(), tg, align_corners=False))


@pytest.mark.parametrize("align_corners", [False, True])
def test_affine_grid_matches_torch_and_feeds_grid_sample(align_corners):
    theta = np.array([[[0.9, -0.3, 0.1], [0.2, 1.1, -0.2]], [[1.2, 0.0, 0.3], [0.1, 0.8, 0.0]]], np.float32)
    (fth, tth), (fx, tx) = _pair(theta), _pair(IMG)
    fgr = F.affine_grid(fth, (2, 3, 3, 6), align_corners=align_corners)
    tgr = TF.affine_grid(tth, (2, 3, 3, 6), align_corners=align_corners)
    assert type(fgr.grad_fn).__name__ == type(tgr.grad_fn).__name__
    _close(fgr, tgr)
    F.grid_sample(fx, fgr, align_corners=align_corners).square().sum().backward()
    TF.grid_sample(tx, tgr, align_corners=align_corners).square().sum().backward()
    _close(fth.grad, tth.grad, 1e-4, 1e-4)
    _close(fx.grad, tx.grad, 1e-5, 1e-5)
    bad = np.zeros((1, 2, 2), np.float32)
    _raises(lambda: F.affine_grid(funcgrad.tensor(bad), (1, 1, 3, 3), align_corners=False),
            lambda: TF.affine_grid(torch.tensor(bad), (1, 1, 3, 3), align_corners=False))


# ================================ interpolate(mode="bicubic") =====================================
@pytest.mark.parametrize("align_corners", [False, True])
@pytest.mark.parametrize("kw", [{"scale_factor": 2}, {"size": (3, 7)}, {"scale_factor": 0.6}])
def test_interpolate_bicubic_matches_torch(align_corners, kw):
    fx, tx = _pair(IMG)
    fy = F.interpolate(fx, mode="bicubic", align_corners=align_corners, **kw)
    ty = TF.interpolate(tx, mode="bicubic", align_corners=align_corners, **kw)
    assert type(fy.grad_fn).__name__ == type(ty.grad_fn).__name__ == "UpsampleBicubic2DBackward0"
    assert tuple(fy.shape) == tuple(ty.shape)
    _close(fy, ty, 1e-5, 1e-5)
    w = rng.normal(size=ty.shape).astype(np.float32)
    (fy * funcgrad.tensor(w)).sum().backward()
    (ty * torch.tensor(w)).sum().backward()
    _close(fx.grad, tx.grad, 1e-5, 1e-5)


def test_interpolate_bicubic_needs_4d():
    a = np.zeros((1, 2, 3), np.float32)
    _raises(lambda: F.interpolate(funcgrad.tensor(a), scale_factor=2, mode="bicubic"),
            lambda: TF.interpolate(torch.tensor(a), scale_factor=2, mode="bicubic"))


# ================================ ctc_loss ========================================================
T_, N_, C_ = 7, 3, 5
LOGITS = rng.normal(size=(T_, N_, C_)).astype(np.float32)
TARGETS = np.array([[1, 2, 2], [3, 1, 0], [4, 4, 4]])   # repeats need a blank between them
IN_LEN, TGT_LEN = [7, 6, 4], [3, 2, 3]                   # sample 2 is impossible: 4 frames < 3+2 needed


CTC_CASES = [("none", False, 0), ("mean", False, 4), ("sum", False, 0), ("none", True, 4), ("mean", True, 0),
             ("sum", True, 4)]  # (reduction, zero_infinity, blank)


@pytest.mark.parametrize("reduction,zero_infinity,blank", CTC_CASES)
def test_ctc_loss_matches_torch(reduction, zero_infinity, blank):
    targets = np.where(TARGETS == blank, 2, TARGETS)
    in_len = IN_LEN if zero_infinity else [7, 6, 6]  # finite losses unless they are zeroed
    (fz, tz) = _pair(LOGITS)
    flp, tlp = fz.log_softmax(2), tz.log_softmax(2)
    flp.retain_grad()
    tlp.retain_grad()
    fl = F.ctc_loss(flp, funcgrad.tensor(targets), in_len, TGT_LEN, blank, reduction, zero_infinity)
    tl = TF.ctc_loss(tlp, torch.tensor(targets), in_len, TGT_LEN, blank, reduction, zero_infinity)
    assert type(fl.grad_fn).__name__ == type(tl.grad_fn).__name__
    _close(fl, tl, 1e-5, 1e-5)
    (fl.sum() if reduction == "none" else fl).backward()
    (tl.sum() if reduction == "none" else tl).backward()
    _close(flp.grad, tlp.grad, 1e-5, 1e-5)  # PyTorch's gradient w.r.t. log_probs itself
    _close(fz.grad, tz.grad, 1e-5, 1e-5)


def test_ctc_loss_concatenated_targets_tensor_lengths_and_module():
    (fz, tz) = _pair(LOGITS.astype(np.float64))
    flat = np.array([1, 2, 2, 3, 1, 4])
    lens = (np.array([7, 6, 6]), np.array([3, 2, 1]))
    fl = funcgrad.nn.CTCLoss()(fz.log_softmax(2), funcgrad.tensor(flat), *map(funcgrad.tensor, lens))
    tl = torch.nn.CTCLoss()(tz.log_softmax(2), torch.tensor(flat), *map(torch.tensor, lens))
    _close(fl, tl, 1e-12, 1e-12)
    fl.backward()
    tl.backward()
    _close(fz.grad, tz.grad, 1e-10, 1e-12)
    inf = F.ctc_loss(fz.log_softmax(2), funcgrad.tensor(TARGETS), [7, 6, 1], [3, 2, 3], reduction="none")
    tinf = TF.ctc_loss(tz.log_softmax(2), torch.tensor(TARGETS), [7, 6, 1], [3, 2, 3], reduction="none")
    _close(inf, tinf, 1e-12, 1e-12)
    assert np.isinf(inf.detach().numpy()[2])


def test_ctc_loss_errors():
    lp = np.log(np.full((5, 2, 4), 0.25, np.float32))
    t = np.array([[1, 2], [3, 3]])
    cases = [(([5, 4], [2, 3]), {}), (([6, 4], [2, 2]), {}), (([5, 4], [2, 2]), {"blank": 4}),
             (([5], [2, 2]), {}), (([5, 4], [2, 2]), {"reduction": "foo"})]
    for (il, tl), kw in cases:
        _raises(lambda: F.ctc_loss(funcgrad.tensor(lp), funcgrad.tensor(t), il, tl, **kw),
                lambda: TF.ctc_loss(torch.tensor(lp), torch.tensor(t), il, tl, **kw))


# ================================ nn.utils.parametrize / parametrizations.weight_norm =============
def _linear_pair(cls_f, cls_t, *args):
    tm = cls_t(*args)
    fm = cls_f(*args)
    fm.load_state_dict({k: funcgrad.tensor(v.detach().numpy()) for k, v in tm.state_dict().items()})
    return fm, tm


@pytest.mark.parametrize("dim", [0, 1, None])
def test_parametrizations_weight_norm_matches_torch(dim):
    fm, tm = _linear_pair(funcgrad.nn.Linear, torch.nn.Linear, 4, 3)
    fm = funcgrad.nn.utils.parametrizations.weight_norm(fm, dim=dim)
    tm = torch.nn.utils.parametrizations.weight_norm(tm, dim=dim)
    assert type(fm).__name__ == type(tm).__name__ == "ParametrizedLinear"
    assert repr(fm) == repr(tm)
    assert list(fm.state_dict()) == list(tm.state_dict())
    assert [n for n, _ in fm.named_parameters()] == [n for n, _ in tm.named_parameters()]
    for k, v in tm.state_dict().items():
        _close(fm.state_dict()[k], v)
    assert type(fm.weight.grad_fn).__name__ == type(tm.weight.grad_fn).__name__
    x = rng.normal(size=(5, 4)).astype(np.float32)
    fo, to = fm(funcgrad.tensor(x)), tm(torch.tensor(x))
    _close(fo, to)
    fo.square().sum().backward()
    to.square().sum().backward()
    for (n, fp), (_, tp) in zip(fm.named_parameters(), tm.named_parameters()):
        _close(fp.grad, tp.grad, 1e-5, 1e-5)
    # a torch state_dict loads as is; the setter goes through right_inverse
    fm.load_state_dict({k: funcgrad.tensor(v.detach().numpy() * 2) for k, v in tm.state_dict().items()})
    tm.load_state_dict({k: v * 2 for k, v in tm.state_dict().items()})
    _close(fm.weight, tm.weight)
    w = np.ones((3, 4), np.float32)
    fm.weight = funcgrad.tensor(w)
    tm.weight = torch.tensor(w)
    _close(fm.parametrizations.weight.original0, tm.parametrizations.weight.original0)
    funcgrad.nn.utils.parametrize.remove_parametrizations(fm, "weight")
    torch.nn.utils.parametrize.remove_parametrizations(tm, "weight")
    assert type(fm) is funcgrad.nn.Linear and list(fm.state_dict()) == list(tm.state_dict())
    _close(fm.weight, tm.weight)


def test_register_parametrization_custom_and_errors():
    def forward(self, X):
        return X.triu() + X.triu(1).transpose(-1, -2)
    FSym = type("Sym", (funcgrad.nn.Module,), {"forward": forward})  # one name: the reprs agree
    TSym = type("Sym", (torch.nn.Module,), {"forward": forward})

    fm, tm = _linear_pair(funcgrad.nn.Linear, torch.nn.Linear, 3, 3)
    fP, tP = funcgrad.nn.utils.parametrize, torch.nn.utils.parametrize
    fP.register_parametrization(fm, "weight", FSym())
    tP.register_parametrization(tm, "weight", TSym())
    assert list(fm.state_dict()) == list(tm.state_dict()) == ["bias", "parametrizations.weight.original"]
    assert type(fm.weight.grad_fn).__name__ == type(tm.weight.grad_fn).__name__
    _close(fm.weight, tm.weight)
    assert fP.is_parametrized(fm) and not fP.is_parametrized(fm, "bias")
    assert fP.type_before_parametrizations(fm) is funcgrad.nn.Linear
    _raises(lambda: fP.register_parametrization(fm, "foo", FSym()),
            lambda: tP.register_parametrization(tm, "foo", TSym()))
    fP.remove_parametrizations(fm, "weight", leave_parametrized=False)
    tP.remove_parametrizations(tm, "weight", leave_parametrized=False)
    _close(fm.weight, tm.weight)
    _raises(lambda: fP.remove_parametrizations(fm, "weight"),
            lambda: tP.remove_parametrizations(tm, "weight"))
