"""The ``meta`` device (``funcgrad/_meta.py``) against PyTorch: each row of the spec table does one
thing with meta tensors on ``torch`` and on ``funcgrad``; both must give the same result (the
repr of what it returns, ``torch.`` for ``funcgrad.``) or raise the same exception type with the
same message. Meta tensors hold a shape and a dtype only: factories allocate nothing and random
ones draw nothing, ops give the shapes and dtypes of their results, a backward gives gradients'
shapes, and whatever reads data raises PyTorch's error.

Without PyTorch the expected outcomes come from ``tests/fixtures/meta_device/outcomes.json``,
recorded from PyTorch 2.13 by ``tests/fixtures/meta_device/make_fixtures.py``.
"""

from __future__ import annotations

import json
import pathlib
import warnings

import numpy as np
import pytest

import funcgrad
import funcgrad.nn.functional  # noqa: F401
from funcgrad import _meta, _tensor_str

FIXTURE = pathlib.Path(__file__).parent / "fixtures" / "meta_device" / "outcomes.json"


def _e(lib, *shape, **kw):
    return lib.empty(*shape, device="meta", **kw)


def _w(lib):
    """A leaf meta tensor that requires grad."""
    return lib.empty(3, device="meta", requires_grad=True)


def _rng_kept(lib, draw):
    """Whether ``draw(lib)`` left the global generator where it was, and the next CPU draws."""
    lib.manual_seed(0)
    before = lib.random.get_rng_state()
    draw(lib)
    kept = bool(lib.equal(before, lib.random.get_rng_state()))
    return kept, lib.rand(2)


def _meta_draws(lib):
    lib.randn(3, device="meta"), lib.rand(2, 2, device="meta"), lib.randint(0, 5, (4,), device="meta")
    lib.randperm(5, device="meta"), lib.normal(0.0, 1.0, (3,), device="meta")
    lib.rand_like(_e(lib, 2)), lib.randn_like(_e(lib, 2)), lib.bernoulli(_e(lib, 3))
    lib.multinomial(_e(lib, 4), 2)
    x = _e(lib, 3, 4)
    x.uniform_(), x.normal_(), x.random_(0, 5), x.bernoulli_(0.5), x.exponential_()
    x.cauchy_(), x.log_normal_(), x.geometric_(0.5)


def _init_all(lib):
    init = lib.nn.init
    w = _e(lib, 4, 3)
    for f in (init.uniform_, init.normal_, init.xavier_uniform_, init.xavier_normal_,
              init.kaiming_uniform_, init.kaiming_normal_, init.trunc_normal_, init.orthogonal_,
              init.zeros_, init.ones_):  # (not eye_: torch's, eye(out=meta), refuses a meta out while
        # a default device 'cpu' is set, as test_default_device leaves torch's mode stack)
        f(w)
    init.constant_(w, 0.5)
    return w


def _linear_in_meta_context(lib):
    with lib.device("meta"):
        m = lib.nn.Linear(4, 3)
    return m.weight, m.bias, m.weight.grad


def _to_empty(lib):
    m = lib.nn.Linear(4, 3, device="meta").to_empty(device="cpu")
    return m.weight.shape, m.weight.device, m.weight.requires_grad, type(m.weight).__name__


def _load_assign(lib):
    lib.manual_seed(0)
    sd = lib.nn.Linear(4, 3).state_dict()
    m = lib.nn.Linear(4, 3, device="meta")
    r = m.load_state_dict(sd, assign=True)
    return str(r), m.weight, type(m.weight).__name__, m.bias.device


def _load_copy_warns(lib):
    sd = lib.nn.Linear(4, 3).state_dict()
    m = lib.nn.Linear(4, 3, device="meta")
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        m.load_state_dict(sd)
    return [str(x.message) for x in w], m.weight.device


def _backward(lib):
    w = _w(lib)
    (w * 2).sum().backward()
    g1 = w.grad
    (w * _e(lib, 3)).sum().backward()
    return g1, w.grad, w.is_leaf


def _hooks(lib):
    w = _w(lib)
    w.register_hook(lambda g: g * 2)
    z = w * 2
    z.retain_grad()
    z.sum().backward()
    return z.grad, w.grad


def _autograd_grad(lib):
    w = _w(lib)
    y = (w.exp() * _e(lib, 3)).sum()
    return lib.autograd.grad(y, w)


def _mlp_step(lib, opt):
    m = lib.nn.Sequential(lib.nn.Linear(4, 8, device="meta"), lib.nn.ReLU(),
                          lib.nn.Linear(8, 2, device="meta"))
    o = opt(lib, m.parameters())
    loss = lib.nn.functional.cross_entropy(m(_e(lib, 5, 4)), _e(lib, 5, dtype=lib.long))
    loss.backward()
    o.step()
    o.step()
    first = next(iter(m.parameters()))
    return loss, first.grad, sorted((k, repr(v)) for k, v in o.state[first].items()), first._version


def _view_write(lib):
    x = _e(lib, 2, 3)
    v = x[0]
    v.mul_(2)
    x.add_(1)
    return x, v, v * 2, x._version


def _default_device(lib):
    lib.set_default_device("meta")
    try:
        return lib.ones(2), lib.tensor([1.0, 2.0]), lib.arange(3), lib.get_default_device()
    finally:
        lib.set_default_device(None)


def _layers(lib):
    nn, F = lib.nn, lib.nn.functional
    with lib.device("meta"):
        conv, bn, ln = nn.Conv2d(3, 8, 3, padding=1), nn.BatchNorm2d(8), nn.LayerNorm(8)
        emb, lstm = nn.Embedding(10, 8), nn.LSTM(8, 16, batch_first=True)
        enc = nn.TransformerEncoder(nn.TransformerEncoderLayer(8, 2, 16, batch_first=True), 2)
    x, s = _e(lib, 2, 3, 5, 5), _e(lib, 2, 4, 8)
    return (F.max_pool2d(bn(conv(x)), 2), ln(s), emb(_e(lib, 2, 4, dtype=lib.long)), lstm(s)[0],
            enc(s), sum(p.numel() for p in enc.parameters()))


def _opt(name, **kw):
    return lambda lib, params: getattr(lib.optim, name)(params, **kw)


ROWS = [
    # ---- factories: no storage, the shape and dtype
    ("empty", lambda lib: _e(lib, 2, 3)),
    ("empty float64", lambda lib: _e(lib, 2, 3, dtype=lib.float64)),
    ("empty int64 names its dtype", lambda lib: _e(lib, 2, 3, dtype=lib.int64)),
    ("empty bool", lambda lib: _e(lib, 2, dtype=lib.bool)),
    ("empty requires_grad", lambda lib: _e(lib, 2, 3, requires_grad=True)),
    ("empty 0-d", lambda lib: _e(lib, ())),
    ("empty of no element", lambda lib: _e(lib, 0)),
    ("zeros, ones, full", lambda lib: (lib.zeros(2, device="meta"), lib.ones(2, 1, device="meta"),
                                       lib.full((2,), 3.0, device="meta"))),
    ("arange, linspace, eye, tensor", lambda lib: (
        lib.arange(5, device="meta"), lib.linspace(0, 1, 5, device="meta"), lib.eye(3, device="meta"),
        lib.tensor([1.0, 2.0], device="meta"))),
    ("random factories", lambda lib: (
        lib.rand(2, device="meta"), lib.randn(2, 3, device="meta"), lib.randint(0, 5, (2,), device="meta"),
        lib.randperm(4, device="meta"), lib.normal(0.0, 1.0, (2,), device="meta"))),
    ("random factories draw nothing", lambda lib: _rng_kept(lib, _meta_draws)),
    ("*_like of a meta tensor", lambda lib: (
        lib.empty_like(_e(lib, 2, 3)), lib.zeros_like(_e(lib, 2)), lib.ones_like(_e(lib, 2)),
        lib.full_like(_e(lib, 2), 7.0), lib.rand_like(_e(lib, 2)))),
    ("*_like with device='meta'", lambda lib: (
        lib.empty_like(lib.ones(2), device="meta"), lib.zeros_like(lib.ones(2, dtype=lib.int32), device="meta"))),
    ("new_*", lambda lib: (
        _e(lib, 2).new_empty(4), _e(lib, 2).new_zeros(4), _e(lib, 2).new_ones(3),
        _e(lib, 2).new_full((3,), 2.0), _e(lib, 2).new_tensor([1, 2]))),
    ("default device meta", _default_device),
    ("with device('meta')", lambda lib: _linear_in_meta_context(lib)),
    ("meta device objects", lambda lib: (lib.device("meta"), lib.device("meta:0"), str(lib.device("meta")))),
    # ---- moves
    ("to('meta')", lambda lib: lib.randn(2, 3).to("meta")),
    ("to('meta') keeps the graph", lambda lib: lib.ones(2, requires_grad=True).to("meta")),
    ("to('meta') of a meta tensor is itself", lambda lib: (lambda x: x.to("meta") is x)(_e(lib, 2))),
    ("to(meta tensor)", lambda lib: lib.ones(2).to(_e(lib, 1))),
    ("to(meta, float64)", lambda lib: _e(lib, 2).to(lib.device("meta"), lib.float64)),
    ("to('cpu')", lambda lib: _e(lib, 2).to("cpu")),
    ("cpu()", lambda lib: _e(lib, 2).cpu()),
    ("to('cpu', float64)", lambda lib: _e(lib, 2).to("cpu", lib.float64)),
    ("to(cpu tensor)", lambda lib: _e(lib, 2).to(lib.ones(1))),
    # ---- reading data
    ("item", lambda lib: _e(lib, 1).item()),
    ("item of 0-d", lambda lib: _e(lib, ()).item()),
    ("item of many elements", lambda lib: _e(lib, 6).item()),
    ("tolist", lambda lib: _e(lib, 2).tolist()),
    ("numpy", lambda lib: _e(lib, 2).numpy()),
    ("numpy of a tensor that requires grad", lambda lib: _e(lib, 2, requires_grad=True).numpy()),
    ("np.asarray", lambda lib: np.asarray(_e(lib, 2))),
    ("bool", lambda lib: bool(_e(lib, ()))),
    ("bool of many elements", lambda lib: bool(_e(lib, 2))),
    ("float", lambda lib: float(_e(lib, ()))),
    ("int", lambda lib: int(_e(lib, ()))),
    ("format", lambda lib: format(_e(lib, ()))),
    ("format with a spec", lambda lib: format(_e(lib, ()), ".2f")),
    ("copy_ out of meta", lambda lib: lib.ones(2, 3).copy_(_e(lib, 2, 3))),
    ("pin_memory", lambda lib: _e(lib, 2).pin_memory()),
    # ---- properties
    ("properties", lambda lib: (lambda x: (
        x.is_meta, x.device, x.is_cpu, x.get_device(), x.dtype, x.shape, x.numel(), x.nbytes, x.stride(),
        x.t().stride(), x.t().is_contiguous(), x.data_ptr(), len(x), x.dim()))(_e(lib, 2, 3))),
    ("is_meta of a cpu tensor", lambda lib: lib.ones(2).is_meta),
    ("Parameter", lambda lib: lib.nn.Parameter(_e(lib, 2, dtype=lib.float64))),
    # ---- ops: shapes and dtypes
    ("matmul, relu, sum", lambda lib: (_e(lib, 2, 3) @ lib.randn(3, 5, device="meta")).relu().sum(1)),
    ("reductions", lambda lib: (lambda x: (x.sum(), x.mean((0, 1)), x.max(), x.argmax(-1), x.std(), x.norm(),
                                           x.max(1), x.sort(), x.topk(2)))(_e(lib, 2, 3, 4))),
    ("int sum promotes", lambda lib: _e(lib, 2, dtype=lib.int32).sum()),
    ("comparisons", lambda lib: (lambda x: (x == x, (x > 0).all(), x < 3))(_e(lib, 2, 3))),
    ("python scalar and cpu 0-d operands", lambda lib: (_e(lib, 2, 3) + 1, _e(lib, 2) * lib.tensor(2.0))),
    ("casts", lambda lib: (lambda x: (x.double(), x.to(lib.int32), x.half().float(), x.bool()))(_e(lib, 2))),
    ("views", lambda lib: (lambda x: (x[0], x.view(3, 2), x.t(), x[:, 1:], x[..., None], x.reshape(-1),
                                      x.unsqueeze(0).expand(4, 2, 3), x.permute(1, 0).contiguous(),
                                      x.split(1), x.chunk(2, 1), list(x)))(_e(lib, 2, 3))),
    ("view of a wrong size", lambda lib: _e(lib, 2, 3).view(7)),
    ("cat, stack, where", lambda lib: (lambda x: (lib.cat([x, x]), lib.stack([x, x]),
                                                  lib.where(x > 0, x, 0.0)))(_e(lib, 2, 3))),
    ("indexing with meta and cpu indices", lambda lib: (
        _e(lib, 5)[lib.tensor([0, 1])], _e(lib, 3).index_select(0, lib.tensor([0, 1], device="meta")),
        _e(lib, 2, 3).gather(1, _e(lib, 2, 1, dtype=lib.long)))),
    ("softmax, dropout, losses", lambda lib: (lambda x, F: (
        x.softmax(-1), F.dropout(x), F.mse_loss(x, x), F.binary_cross_entropy_with_logits(x, x),
        F.cross_entropy(x, _e(lib, 2, dtype=lib.long))))(_e(lib, 2, 3), lib.nn.functional)),
    ("in-place ops", lambda lib: (lambda x: (x.add_(1), x.zero_(), x.fill_(2), x.abs_(),
                                             x.copy_(lib.ones(2, 3)), x._version))(_e(lib, 2, 3))),
    ("copy_ of another size", lambda lib: _e(lib, 2).copy_(lib.ones(3))),
    ("setitem of cpu values into meta", lambda lib: (lambda x: (x.__setitem__(0, lib.ones(4)), x,
                                                               x._version))(_e(lib, 3, 4))),
    ("setitem of meta values into cpu", lambda lib: lib.ones(3, 4).__setitem__(0, _e(lib, 4))),
    ("writes through views", _view_write),
    ("layers", _layers),
    # ---- errors
    ("meta + cpu", lambda lib: _e(lib, 2, 3) + lib.ones(2, 3)),
    ("cpu + meta", lambda lib: lib.ones(2, 3) + _e(lib, 2, 3)),
    ("meta 0-d + cpu", lambda lib: _e(lib, ()) + lib.ones(2)),
    ("cpu + meta 0-d", lambda lib: lib.ones(2) + _e(lib, ())),
    ("shapes that do not broadcast", lambda lib: _e(lib, 2, 3) + _e(lib, 4, 5)),
    ("in-place on a leaf that requires grad", lambda lib: _w(lib).add_(1)),
    ("normal_ with a negative std", lambda lib: _e(lib, 2).normal_(0.0, -1.0)),
    # ---- autograd: shapes only
    ("grad_fn", lambda lib: _e(lib, 2, 3, requires_grad=True) * 2),
    ("backward", _backward),
    ("autograd.grad", _autograd_grad),
    ("hooks and retain_grad", _hooks),
    ("backward of a tensor that does not require grad", lambda lib: _e(lib, 2).sum().backward()),
    ("backward of a non-scalar", lambda lib: (_w(lib) * 2).backward()),
    # ---- modules
    ("Linear(device='meta')", lambda lib: (lambda m: (m.weight, m.bias, repr(m)))(
        lib.nn.Linear(4, 3, device="meta"))),
    ("Linear forward", lambda lib: lib.nn.Linear(4, 3, device="meta")(_e(lib, 5, 4))),
    ("Linear forward of a cpu input", lambda lib: lib.nn.Linear(4, 3, device="meta")(lib.ones(5, 4))),
    ("state_dict", lambda lib: list(lib.nn.Linear(4, 3, device="meta").state_dict().items())),
    ("to_empty", _to_empty),
    ("load_state_dict assign=True", _load_assign),
    ("load_state_dict into meta warns", _load_copy_warns),
    ("nn.init on meta changes nothing", lambda lib: _init_all(lib)),
    ("nn.init on meta draws nothing", lambda lib: _rng_kept(lib, _init_all)),
    ("nn.init refusals", lambda lib: lib.nn.init.kaiming_uniform_(_e(lib, 3))),
    ("modules built on meta draw nothing", lambda lib: _rng_kept(lib, lambda lib: lib.nn.Linear(8, 4, device="meta"))),
    ("SGD step", lambda lib: _mlp_step(lib, _opt("SGD", lr=0.1, momentum=0.9))),
    ("Adam step", lambda lib: _mlp_step(lib, _opt("Adam"))),
    ("Adagrad step", lambda lib: _mlp_step(lib, _opt("Adagrad"))),
]
IDS = [r[0] for r in ROWS]


def _show(x, lib) -> str:
    if isinstance(x, list):
        return "[" + ", ".join(_show(i, lib) for i in x) + "]"
    if type(x) is tuple:
        return "(" + ", ".join(_show(i, lib) for i in x) + ")"
    return repr(x)


def _outcome(lib, row):
    """``("ok", what the row returns, shown)`` or ``(exception type, message)``, spelled as
    PyTorch spells its names."""
    prefix = _tensor_str._DTYPE_PREFIX
    _tensor_str._DTYPE_PREFIX = "torch."  # (line wrapping depends on the dtype suffix's length)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            out = ("ok", _show(row[1](lib), lib))
    except Exception as e:  # noqa: BLE001 (the row's outcome)
        out = (type(e).__name__, str(e))
    finally:
        _tensor_str._DTYPE_PREFIX = prefix
    return tuple(s.replace("funcgrad.", "torch.") for s in out)


def outcomes(torch):
    """PyTorch's outcome per row, for the fixture."""
    return {row[0]: list(_outcome(torch, row)) for row in ROWS}


def _expected():
    return {k: tuple(v) for k, v in json.loads(FIXTURE.read_text()).items()}


@pytest.mark.torch
@pytest.mark.parametrize("row", ROWS, ids=IDS)
def test_meta_matches_torch(row):
    """Same result (or exception type and message) as PyTorch (live when installed, else recorded)."""
    try:
        import torch
        want = _outcome(torch, row)
    except ImportError:
        want = _expected()[row[0]]
    assert _outcome(funcgrad, row) == tuple(want)


def test_fixture_covers_every_row():
    assert set(_expected()) == set(IDS)


def test_factories_allocate_nothing():
    """A meta tensor's storage holds its shape and dtype only, whatever its size."""
    x = funcgrad.empty(1 << 20, 1 << 20, device="meta")
    assert type(x._cell.value) is _meta.MetaArray and x.numel() == 1 << 40
    with funcgrad.device("meta"):
        m = funcgrad.nn.Linear(1 << 16, 1 << 16)
    assert all(type(p._cell.value) is _meta.MetaArray for p in m.parameters())


def test_shapes_are_cached_per_key():
    """``jax.eval_shape`` runs once per (op, static arguments, cast, operand avals)."""
    x = funcgrad.empty(7, 5, device="meta")
    x.exp()
    n = len(_meta._fwd)
    x.exp()
    funcgrad.empty(7, 5, device="meta").exp()
    assert len(_meta._fwd) == n


def test_compiled_step_on_meta_runs_eagerly():
    """``funcgrad.jit`` of meta inputs gives eager's meta result (as ``torch.compile``'s); meta
    state with CPU inputs is refused clearly."""
    f = funcgrad.jit(lambda a: (a * 2).sum(1))
    assert repr(f(funcgrad.empty(2, 3, device="meta"))) == "tensor(..., device='meta', size=(2,))"
    assert f(funcgrad.ones(2, 3)).tolist() == [6.0, 6.0]
    m = funcgrad.nn.Linear(3, 2, device="meta")
    g = funcgrad.jit(lambda x: m(x).sum())
    assert g(funcgrad.empty(4, 3, device="meta")).shape == ()
    with pytest.raises(NotImplementedError, match="meta device"):
        g(funcgrad.ones(4, 3))


def test_init_eye_and_dirac_on_meta():
    """``nn.init.eye_``/``dirac_`` write nothing into a meta tensor (PyTorch's, without a default
    device set: its ``eye(out=meta)`` refuses a meta ``out`` once one is)."""
    w = funcgrad.nn.init.eye_(funcgrad.empty(4, 3, device="meta"))
    c = funcgrad.nn.init.dirac_(funcgrad.empty(2, 2, 3, device="meta"))
    assert (repr(w), repr(c)) == ("tensor(..., device='meta', size=(4, 3))",
                                  "tensor(..., device='meta', size=(2, 2, 3))")
