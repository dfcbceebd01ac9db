"""Issue 17 ("fewer compilations"): operations of a first training step that compiled an XLA
program of their own now compile none (host paths) or share one (one program for a group);
each stand-in gives the bits of what it replaces. Compilations are counted, not timed."""

import copy

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import funcgrad
from funcgrad import _factories, nn
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
