"""Issue 17 ("fewer compilations"): operations of a first training step that compiled an XLA
program of their own now compile none (host paths) or share one (one program for a group);
each stand-in gives the bits of what it replaces. Compilations are counted, not timed."""

import copy

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import funcgrad
from funcgrad import _factories, _host, nn
from funcgrad._random import _sample
from funcgrad.amp import grad_scaler as _gs

from .test_caches import _COMPILES  # the XLA-compile counter, one definition


def _bits(a):
    a = np.asarray(a)
    return a.reshape(-1).view(np.uint8).tobytes(), a.dtype, a.shape


# ---- copy_ (load_state_dict) ---------------------------------------------------------------------
@pytest.mark.parametrize("dtype", ["float32", "float64", "int64", "bool", "bfloat16"])
def test_host_copy_is_the_kernel_copy(dtype):
    rs = np.random.RandomState(0)
    a = rs.randn(3, 7).astype(np.float64)
    a[0, 0] = np.nan
    src = funcgrad.tensor(a).to(getattr(funcgrad, dtype))
    dst = funcgrad.zeros(3, 7, dtype=getattr(funcgrad, dtype))
    _factories._copies_seen.pop((src._value.shape, src._value.dtype), None)  # as a new shape
    host = _factories.host_copy(src._value, dst._value)
    assert host is not None
    assert _bits(host) == _bits(src._value)
    assert host is not src._value  # a copy: the two tensors never share a buffer
    assert _bits(dst.copy_(src)._value) == _bits(src._value)


def test_host_copy_leaves_casts_broadcasts_and_repeats_to_the_kernel():
    x = funcgrad.randn(4, 5)
    assert _factories.host_copy(x._value, jnp.zeros((4, 5), jnp.float64)) is None   # a cast
    assert _factories.host_copy(funcgrad.randn(5)._value, x._value) is None          # a broadcast
    committed = jax.device_put(np.ones((4, 5), np.float32), jax.devices()[0])
    assert _factories.host_copy(committed, x._value) is None                         # placement kept
    key = (x._value.shape, x._value.dtype)
    _factories._copies_seen[key] = _factories.HOST_FILLS                             # a repeat
    try:
        assert _factories.host_copy(x._value, x._value) is None
    finally:
        _factories._copies_seen.pop(key)


def test_load_state_dict_compiles_nothing_and_copy_in_grad_mode_is_recorded():
    src = nn.Sequential(nn.Linear(23, 29), nn.Linear(29, 31))  # shapes no other test uses
    dst = nn.Sequential(nn.Linear(23, 29), nn.Linear(29, 31))
    sd = {k: v.clone() for k, v in src.state_dict().items()}
    with _COMPILES as c:
        dst.load_state_dict(sd)
    assert c.n == 0, c.n
    for k, v in dst.state_dict().items():
        assert _bits(v._value) == _bits(sd[k]._value)
    # a copy a graph records is the op (CopyBackwards), not the host
    w = funcgrad.randn(23, requires_grad=True) * 1
    y = w.copy_(funcgrad.ones(23))
    assert type(y.grad_fn).__name__ == "CopyBackwards"


# ---- arange ----------------------------------------------------------------------------------------
@pytest.mark.parametrize("args,dtype", [((0, 37), None), ((5, -20, -3), None), ((3, 41, 4), "int32"),
                                        ((2**40, 2**40 + 50, 3), None), ((0, 1, 0.1), None),
                                        ((0.5, 3.7, 0.3), "float64"), ((-1, 1, 0.25), "float32"),
                                        ((0, 6, 1), "float32")])
def test_host_arange_is_the_kernel_arange(args, dtype):
    dt = getattr(funcgrad, dtype) if dtype else None
    got = funcgrad.arange(*args, dtype=dt)
    start, end, step = (args + (1,))[:3] if len(args) > 1 else (0, args[0], 1)
    if dtype is None and all(isinstance(v, int) for v in args) or dtype == "int32":
        want = jnp.arange(start, end, step, dtype=(dt or funcgrad.int64).np)
    else:
        n = int(np.ceil((end - start) / step))
        want = jnp.asarray(start + step * np.arange(n, dtype=np.float64), (dt or funcgrad.float32).np)
    assert _bits(got._value) == _bits(want)


def test_host_arange_leaves_subnormals_and_narrow_floats_to_the_kernel():
    assert _factories._host_arange([0, 1e-38, 1e-39], 10, False, np.dtype(np.float32)) is None
    assert _factories._host_arange([0, 1, 0.5], 2, False, np.dtype(jnp.bfloat16)) is None
    assert _factories._host_arange([0, 300, 1], 300, True, np.dtype(np.int8)) is None
    with _COMPILES as c:
        funcgrad.arange(43)
        funcgrad.arange(0.0, 4.3, 0.1)
    assert c.n == 0, c.n


# ---- nn: deepcopy, 3-D linear, dropout noise, BatchNorm's counter -------------------------------
def test_deepcopy_of_a_module_compiles_nothing():
    layer = nn.Linear(11, 13)
    with _COMPILES as c:
        twin = copy.deepcopy(layer)
    assert c.n == 0, c.n
    assert _bits(twin.weight._value) == _bits(layer.weight._value)


def test_dropout_noise_of_a_transposed_input_is_transposed_on_the_host():
    shape, strides, p = (6, 4, 5), (5, 30, 1), 0.25  # dims 0/1 swapped in storage
    g = funcgrad.Generator().manual_seed(3)
    with _COMPILES as c:
        noise = _sample.dropout_noise(g, shape, p, np.float32, strides)
    assert c.n <= 1, c.n  # at most the shared bernoulli kernel, when cold
    g.manual_seed(3)
    stored = _sample.bernoulli_scalar(g, (4, 6, 5), 1.0 - p, np.float32,
                                      (np.float32(1) / np.float32(0.75)).astype(np.float32))
    assert _bits(noise) == _bits(jnp.transpose(stored, (1, 0, 2)))


def test_batch_norm_counts_batches_without_a_kernel():
    bn = nn.BatchNorm1d(3)
    x = funcgrad.randn(8, 3)
    bn(x)
    v = bn.num_batches_tracked._ver[0]
    with _COMPILES as c:
        bn(x)
    assert c.n == 0, c.n  # the batch-norm kernel is compiled: nothing else is
    assert bn.num_batches_tracked.item() == 2 and bn.num_batches_tracked.dtype == funcgrad.int64
    assert bn.num_batches_tracked._ver[0] == v + 1  # in place, as add_


# ---- GradScaler ------------------------------------------------------------------------------------
# the program's own function run un-jitted: the operations one by one, as before (each its own
# XLA computation), against the one fused program
_eager_unscale = _gs._unscale_kernel.__wrapped__


@pytest.mark.parametrize("seed", range(4))
def test_grad_scaler_programs_are_the_eager_operations(seed):
    rs = np.random.RandomState(seed)
    dts = [jnp.float32, jnp.bfloat16, jnp.float64, jnp.float16]
    grads = [jnp.asarray(rs.randn(*s) * 10.0 ** rs.uniform(-4, 3, s), dts[i])
             for i, s in enumerate([(3, 4), (5,), (2, 2, 2), (7,)])]
    if seed % 2:
        grads[1] = grads[1].at[2].set(jnp.inf)
    scale = jnp.asarray(np.float32(2.0 ** rs.randint(-20, 40) * rs.uniform(0.5, 2)))
    f1, g1 = _eager_unscale(scale, grads)
    f2, g2 = _gs._unscale_kernel(scale, grads)
    assert _bits(f1) == _bits(f2)
    for a, b in zip(g1, g2):
        assert _bits(a) == _bits(b)
    tracker = jnp.asarray(np.int32(rs.randint(0, 4)))
    founds = [f1, jnp.asarray(np.float32(seed % 3 == 0))]
    found = founds[0] + founds[1]
    grown = tracker + 1
    grow_now = grown >= 3
    want_s = jnp.where(found > 0, scale * 0.37, jnp.where(grow_now, scale * 1.9, scale)).astype(jnp.float32)
    want_t = jnp.where((found > 0) | grow_now, 0, grown).astype(jnp.int32)
    s, t = _gs._update_kernel(founds, scale, tracker, 3, 0.37, 1.9)
    assert _bits(s) == _bits(want_s) and _bits(t) == _bits(want_t)


def test_grad_scaler_step_compiles_two_programs():
    net = nn.Sequential(nn.Linear(9, 14), nn.ReLU(), nn.Linear(14, 3))  # shapes no other test uses
    opt = funcgrad.optim.SGD(net.parameters(), lr=0.1)
    scaler = funcgrad.amp.GradScaler("cpu", init_scale=256.0)
    scaler.scale(net(funcgrad.randn(4, 9)).sum()).backward()
    with _COMPILES as c:
        scaler.unscale_(opt)
        scaler.update()
    assert c.n <= 2, c.n  # before: 4 programs per gradient shape, 7 for update


# ---- data-movement ops' first uses run their NumPy twin (Op.host) -------------------------------
# (label, f(x, y) with x, y of shape (2, 3, 4)): every op of the table with a host twin
_MOVES = [
    ("view", lambda x, y: x.view(-1)), ("reshape", lambda x, y: x.reshape(4, 6)),
    ("flatten", lambda x, y: x.flatten(1)), ("unflatten", lambda x, y: x.unflatten(2, (2, 2))),
    ("reshape of a transposed view (unsafe_view)", lambda x, y: x.transpose(0, 2).reshape(-1)),
    ("transpose", lambda x, y: x.transpose(0, 2)), ("mT", lambda x, y: x.mT),
    ("t", lambda x, y: x[0].t()), ("permute", lambda x, y: x.permute(2, 0, 1)),
    ("T", lambda x, y: x.T), ("squeeze", lambda x, y: x[:, :1].squeeze()),
    ("squeeze_dim", lambda x, y: x[:, :1].squeeze(1)), ("squeeze_dims", lambda x, y: x[:1].squeeze((0, 2))),
    ("unsqueeze", lambda x, y: x.unsqueeze(-1)), ("expand", lambda x, y: x[:, :1].expand(2, 5, 4)),
    ("select", lambda x, y: x[1]), ("select last", lambda x, y: x[:, -1]),
    ("slice", lambda x, y: x[:, 1:3]), ("strided slice", lambda x, y: x[..., ::3]),
    ("new axis and select", lambda x, y: x[None, 0, :, 2]), ("alias", lambda x, y: x[...]),
    ("narrow", lambda x, y: x.narrow(2, 1, 2)), ("split", lambda x, y: x.split(2, dim=2)),
    ("split_with_sizes", lambda x, y: x.split([1, 2], dim=1)), ("chunk", lambda x, y: x.chunk(2, dim=0)),
    ("unbind", lambda x, y: x.unbind(1)), ("clone", lambda x, y: x.clone()),
    ("contiguous", lambda x, y: x.transpose(1, 2).contiguous()),
    ("cat", lambda x, y: funcgrad.cat([x, y, x], 1)), ("stack", lambda x, y: funcgrad.stack([x, y], 2)),
    ("empty slice", lambda x, y: x[:, 3:]),
]
_M = funcgrad.tensor(np.arange(24).reshape(2, 3, 4) % 3 == 0)  # a fixed mask
_IDX = funcgrad.tensor([[0, 2], [1, 1], [2, 0]])
_NB = ["float32", "float64", "float16", "int64", "int32", "uint8", "bool", "complex64"]  # no bfloat16
_NUM = [d for d in _NB if d != "bool"]
_ORDERED = [d for d in _NB if d != "complex64"]
_FLOAT = ["float32", "float64", "float16"]
# (label, f, dtypes it runs on the host for (None: all of HOST_DTYPES), reads: it reads values,
# so its inputs hold no subnormal). bfloat16 and subnormal read: test_host_twin_leaves_to_the_kernel
HOST_CASES = [(n, f, None, False) for n, f in _MOVES] + [
    ("eq", lambda x, y: x == y, _NB, True), ("ne", lambda x, y: x != y, _NB, True),
    ("eq scalar", lambda x, y: x == 0, _NUM, True), ("ne scalar", lambda x, y: x != 1, _NUM, True),
    ("lt", lambda x, y: x < y, _ORDERED, True),
    ("le scalar", lambda x, y: x <= 1, [d for d in _ORDERED if d != "bool"], True),
    ("gt", lambda x, y: x > y, _ORDERED, True), ("ge scalar float", lambda x, y: x >= 0.5, _FLOAT, True),
    ("gt inf", lambda x, y: x > float("-inf"), _FLOAT, True),
    ("all", lambda x, y: x.all(), _NB, True), ("any dim", lambda x, y: x.any(1), _NB, True),
    ("all keepdim", lambda x, y: x.all(2, keepdim=True), _NB, True),
    ("masked_fill", lambda x, y: x.masked_fill(_M, 0), _NB, False),
    ("masked_fill -inf", lambda x, y: x.masked_fill(_M, float("-inf")), _FLOAT, False),
    ("masked_fill tensor", lambda x, y: x.masked_fill(_M, y[0, 0, 0]), _NB, False),
    ("where", lambda x, y: funcgrad.where(_M, x, y), _NB, False),
    ("where scalar", lambda x, y: funcgrad.where(_M, x, 0), _NUM, False),
    ("tril", lambda x, y: x.tril(), _NB, False), ("triu -1", lambda x, y: x.triu(-1), _NB, False),
    ("embedding", lambda x, y: funcgrad.nn.functional.embedding(_IDX, x[0]), _NB, False),
    ("float of bool/int", lambda x, y: x.float(), ["int64", "int32", "uint8", "bool"], False),
    ("long of int/bool", lambda x, y: x.long(), ["int32", "uint8", "bool"], False),
    ("uint8 wraps", lambda x, y: x.to(funcgrad.uint8), ["int64", "int32", "bool"], False),
    ("bool", lambda x, y: x.bool(), ["int64", "int32", "uint8"], False),
]
HOST_DTYPES = ["float32", "float64", "bfloat16", "float16", "int64", "int32", "uint8", "bool", "complex64"]


def _special(rs, dtype, subnormal=True):
    """(2, 3, 4) values with the bits a copy must keep: -0.0, subnormals, inf, nan payloads."""
    a = rs.randn(2, 3, 4)
    if dtype == "bool":
        return funcgrad.tensor(a > 0)
    if dtype in ("int64", "int32", "uint8"):
        return funcgrad.tensor((a * 50).astype(dtype))
    np_dt = {"bfloat16": jnp.bfloat16, "complex64": np.complex64}.get(dtype, np.dtype(dtype))
    v = a.astype(np_dt)
    if not subnormal:  # (a random float16 can be one)
        v[np.abs(v).astype(np.float64) < float(jnp.finfo(np_dt).tiny)] = 0
    if dtype != "complex64":
        flat = v.reshape(-1)
        flat[:4] = np.array([-0.0, np.inf, -np.inf, np.nan]).astype(np_dt)
        flat[4] = jnp.finfo(np_dt).smallest_subnormal if subnormal else jnp.finfo(np_dt).tiny
        bits = flat.view({2: np.uint16, 4: np.uint32, 8: np.uint64}[flat.itemsize])
        bits[5] = bits[3] | 1  # a nan with a payload
    return funcgrad.Tensor._wrap(jax.device_put(v))  # (NumPy's bfloat16 too, bit for bit)


def _host_runs(but_getitem=False) -> int:
    """How many results the twins made (a key left to the kernel counts HOST_USES: not one);
    ``but_getitem``: not counting indexing's."""
    return sum(sum(n for n in op._host_seen.values() if n < _host.HOST_USES)
               for op in funcgrad._ops._registry.OPS.values()
               if op.host is not None and not (but_getitem and op.name.startswith("getitem_")))


def _forget_host_uses():
    for op in funcgrad._ops._registry.OPS.values():
        if op.host is not None:
            op._host_seen.clear()


def _results(r):
    return [_bits(t._value) for t in (r if isinstance(r, tuple) else (r,))]


# (bfloat16 cat/stack are the kernel's: test_bfloat16_cat_is_left_to_the_kernel)
def _host_params():
    return [(n, f, d, r) for n, f, ds, r in HOST_CASES for d in (ds or HOST_DTYPES)
            if not (n in ("cat", "stack") and d == "bfloat16")]


@pytest.mark.parametrize("label,f,dtype,reads", _host_params(),
                         ids=[f"{n}-{d}" for n, _, d, _ in _host_params()])
def test_host_twin_is_the_kernel(label, f, dtype, reads, monkeypatch):
    rs = np.random.RandomState(len(label))
    x, y = _special(rs, dtype, not reads), _special(rs, dtype, not reads)
    _forget_host_uses()  # as in a fresh process
    before = _host_runs()
    with _COMPILES as c:
        host = f(x, y)
    assert _host_runs() > before  # the twin ran (not a kernel compiled by an earlier test)
    assert c.n == 0, c.n
    monkeypatch.setattr(_factories, "HOST_FILLS", 0)  # every use a repeat: the kernels run
    monkeypatch.setattr(_host, "HOST_USES", 0)
    assert _results(f(x, y)) == _results(host)


# where XLA:CPU's kernel changes bits the twin would keep, the kernel runs: bfloat16 selects,
# gathers and concatenates quiet nan payloads (0x7fc1 -> 0x7fc0); comparisons and truth tests read
# a subnormal as zero (PyTorch does not: there the kernel, not the twin, differs from PyTorch)
_KERNEL_CASES = ([(n, f, "bfloat16", False) for n, f, ds, _ in HOST_CASES if ds is not None and "float32" in ds]
                 + [(n, f, "bfloat16", False) for n, f, _, _ in HOST_CASES if n in ("cat", "stack")]
                 + [(n, f, d, True) for n, f, ds, r in HOST_CASES if r for d in ("float32", "float64", "float16")
                    if d in ds])


@pytest.mark.parametrize("label,f,dtype,subnormal", _KERNEL_CASES,
                         ids=[f"{n}-{d}" + ("-subnormal" if r else "") for n, _, d, r in _KERNEL_CASES])
def test_host_twin_leaves_to_the_kernel(label, f, dtype, subnormal):
    rs = np.random.RandomState(len(label))
    x, y = _special(rs, dtype, subnormal), _special(rs, dtype, subnormal)
    _forget_host_uses()
    first = f(x, y)
    assert _host_runs(but_getitem=True) == 0  # (x[0], y[0, 0, 0]: moves, the twin's)
    assert _results(f(x, y)) == _results(first)


def test_the_kernel_reads_a_subnormal_as_zero():
    # why the reading twins refuse subnormals: the kernel's answer is not NumPy's (nor PyTorch's)
    x = funcgrad.Tensor._wrap(jax.device_put(np.array([1e-45, 0.0], np.float32)))
    assert (x == 0).tolist() == [True, True]


def test_host_cast_at_the_integer_bounds(monkeypatch):
    # 2**63 is out of int64's range (its max, as a float, rounds up to it): the kernel's; 2**62 the twin's
    for v, twin in [(2.0 ** 63, False), (-2.0 ** 63, True), (2.0 ** 62, True), (256.0, False)]:
        x = funcgrad.tensor([v, 1.0], dtype=funcgrad.float32)
        dst = funcgrad.uint8 if v == 256.0 else funcgrad.int64
        _forget_host_uses()
        host = x.to(dst)
        assert (_host_runs() > 0) == twin, v
        monkeypatch.setattr(_factories, "HOST_FILLS", 0)
        monkeypatch.setattr(_host, "HOST_USES", 0)
        assert _results(x.to(dst)) == _results(host)
        monkeypatch.undo()


# casts from floats: the twin where no rounding can happen, else the kernel
@pytest.mark.parametrize("src,dst,exact", [
    ("float32", "float64", True), ("float16", "float32", True), ("bfloat16", "float32", True),
    ("float64", "float32", True), ("float32", "float16", True), ("float32", "bfloat16", True),
    ("float32", "int64", True), ("float64", "int32", True), ("float32", "uint8", True),
    ("float32", "bool", True),
    ("float64", "float32", False), ("float32", "float16", False), ("float32", "bfloat16", False),
    ("float32", "int32", False), ("float32", "uint8", False)])
def test_host_cast_is_the_kernels(src, dst, exact, monkeypatch):
    rs = np.random.RandomState(7)
    # exact: values every dtype of the row holds (halves, small integers); else: values it rounds,
    # or integers out of the destination's range
    v = rs.randint(0, 200, (3, 5)) / 2.0 if exact else rs.randn(3, 5) * (1e10 if "int" in dst else 1e5)
    x = funcgrad.tensor(v).to(getattr(funcgrad, src))
    _forget_host_uses()
    host = x.to(getattr(funcgrad, dst))
    assert (_host_runs() > 0) == exact
    monkeypatch.setattr(_factories, "HOST_FILLS", 0)
    monkeypatch.setattr(_host, "HOST_USES", 0)
    assert _results(x.to(getattr(funcgrad, dst))) == _results(host)


@pytest.mark.parametrize("label,f", [c[:2] for c in HOST_CASES], ids=[c[0] for c in HOST_CASES])
def test_host_twin_gradients_and_views_are_the_kernels(label, f, monkeypatch):
    def run():
        funcgrad.manual_seed(3)
        x = funcgrad.randn(2, 3, 4, requires_grad=True)
        y = funcgrad.randn(2, 3, 4, requires_grad=True)
        r = f(x, y)
        r = r if isinstance(r, tuple) else (r,)
        loss = sum(((t.float() * funcgrad.arange(t.numel()).view(t.shape)) ** 2).sum() for t in r)
        if loss.requires_grad:  # (a comparison's result has no graph)
            loss.backward()
        names = [type(t.grad_fn).__name__ for t in r]
        grads = [None if g is None else _bits(g._value) for g in (x.grad, y.grad)]
        return names, [_bits(t._value) for t in r], grads
    _forget_host_uses()
    host = run()
    monkeypatch.setattr(_factories, "HOST_FILLS", 0)
    monkeypatch.setattr(_host, "HOST_USES", 0)
    assert run() == host


def test_host_views_write_through_to_their_base():
    _forget_host_uses()
    x = funcgrad.zeros(3, 4)
    v = x.view(12)  # a host-made view: writes reach the base, and the base's reach it
    v[5] = 7.0
    assert x[1, 1].item() == 7.0
    x.t()[2, 0] = 3.0
    assert v[2].item() == 3.0


def test_a_large_operands_twin_leaves_to_the_kernel_sooner():
    """Past _HOST_SMALL elements a twin's transfer costs more: HOST_FILLS uses, not HOST_USES."""
    from funcgrad._ops.shape import _view
    big = funcgrad.randn(300, 300)  # 90 000 elements
    small = funcgrad.randn(30, 30)
    assert big.numel() > _host._HOST_SMALL >= small.numel()
    keys = [((("shape", (t.numel(),)),), None, t._value.aval) for t in (big, small)]
    for k in keys:
        _view._host_seen.pop(k, None)
    for _ in range(_factories.HOST_FILLS + 1):
        big.view(-1)
        small.view(-1)
    assert _view._host_seen[keys[0]] == _host.HOST_USES  # left to the kernel
    assert _view._host_seen[keys[1]] == _factories.HOST_FILLS + 1  # still the twin's


def test_host_twin_leaves_repeats_traces_and_placed_arrays_to_the_kernel():
    from funcgrad._ops.shape import _view
    x = funcgrad.randn(5, 7)
    key = ((("shape", (35,)),), None, x._value.aval)
    _view._host_seen.pop(key, None)
    for _ in range(_host.HOST_USES):  # a small operand: HOST_USES uses by the twin
        x.view(35)
    assert _view._host_seen[key] == _host.HOST_USES
    with _COMPILES as c:  # a use that keeps coming back compiles its kernel (once)
        x.view(35)
        x.view(35)
    assert c.n <= 1
    # in a funcgrad.jit trace the operands are tracers: the op traces into the program
    _view._host_seen.clear()
    step = funcgrad.jit(lambda t: t.view(35) * 2)
    assert np.array_equal(np.asarray(step(x)._value), np.asarray(x._value).reshape(35) * 2)
    assert not _view._host_seen
    # a committed array keeps its placement: the kernel runs, every time (also after the twin ran
    # for the key: the twin's result would land on the default device), and the key stays the
    # uncommitted uses'
    committed = funcgrad.Tensor._wrap(jax.device_put(np.ones((5, 7), np.float32), jax.devices()[0]))
    r = committed.view(35)
    assert r._value.committed
    assert not _view._host_seen
    x.view(35)
    assert list(_view._host_seen.values()) == [1]
    assert committed.view(35)._value.committed
    assert list(_view._host_seen.values()) == [1]
