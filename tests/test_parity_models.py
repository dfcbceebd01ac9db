"""Whole-model gradient parity: ``loss.backward()`` (eager and inside ``funcgrad.jit``) equals
``jax.grad`` of the same model as a pure function (``funcgrad.func.functional_call``).

Everything runs in float64 so the comparison can be tight (rtol 1e-9): the three computations
are the same jax.numpy kernels, differing only in how XLA fuses and orders them, so any
difference beyond accumulated float64 rounding is a bug, not noise.
"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import funcgrad
from funcgrad import nn
from funcgrad.func import functional_call

# atol only for gradients that are exactly 0 in exact arithmetic and rounding noise (~1e-17) in
# float64: a conv bias followed by training-mode BatchNorm, the attention key bias (softmax is
# shift-invariant). Observed relative errors elsewhere: 1e-15..1e-14.
RTOL, ATOL = 1e-9, 1e-12


@pytest.fixture(autouse=True)
def _float64():
    funcgrad.set_default_dtype(funcgrad.float64)  # conftest restores float32 afterwards
    yield


# ---- the models ---------------------------------------------------------------------------
# Each case builds (model, x, target, head): ``head`` picks the tensor the loss uses from the
# model's output; it works on Tensors and on jax arrays alike (only indexing/arithmetic).
# Sizes are small and chosen so that many parameter/input shapes recur across the models
# (16, 24, 4*4): kernels are compiled per shape, and compiling dominates this file's time.
# Weight matrices stay non-square, so a transposed gradient cannot pass unnoticed.

def _randn(*shape):
    # sampled flat, then viewed: same numbers as randn(*shape), but XLA compiles the 1-D
    # sampler 3-6x faster than a 4-D one (seconds per shape on a loaded CPU)
    return funcgrad.randn(int(np.prod(shape))).view(*shape)


def _mlp():
    model = nn.Sequential(nn.Linear(16, 24), nn.Tanh(), nn.Linear(24, 16), nn.GELU(),
                          nn.Linear(16, 4))
    return model, funcgrad.randn(2, 3, 16), funcgrad.randn(2, 3, 4), lambda o: o


def _cnn():
    model = nn.Sequential(
        nn.Conv2d(2, 4, 3, padding=1), nn.BatchNorm2d(4), nn.ReLU(),
        nn.Conv2d(4, 3, 3, stride=2), nn.BatchNorm2d(3), nn.Tanh(),
        nn.Flatten(), nn.Linear(3 * 2 * 2, 2))
    return model, _randn(3, 2, 5, 5), funcgrad.randn(3, 2), lambda o: o


def _cnn_eval():
    model, x, t, head = _cnn()
    with funcgrad.no_grad():  # running stats far from the (0, 1) defaults, so they matter
        for m in model.modules():
            if isinstance(m, nn.BatchNorm2d):
                m.running_mean.copy_(funcgrad.randn(m.num_features))
                m.running_var.copy_(funcgrad.rand(m.num_features) * 2 + 0.5)
                m.num_batches_tracked.fill_(7)
    model.eval()
    return model, x, t, head


def _lstm():
    model = nn.LSTM(16, 4, num_layers=2, batch_first=True)
    # loss on the whole sequence output and on the last cell state of both layers
    return model, funcgrad.randn(2, 3, 16), funcgrad.randn(2, 3, 4), lambda o: (o[0], o[1][1])


def _transformer():
    layer = nn.TransformerEncoderLayer(16, 2, dim_feedforward=24, dropout=0.0, batch_first=True)
    model = nn.TransformerEncoder(layer, num_layers=2)
    return model, funcgrad.randn(2, 3, 16), funcgrad.randn(2, 3, 16), lambda o: o


CASES = {"mlp": _mlp, "cnn_batchnorm_train": _cnn, "cnn_batchnorm_eval": _cnn_eval,
         "lstm": _lstm, "transformer": _transformer}


def _loss(head, out, target):
    """A loss whose gradient is not all-ones: squared error plus a cubic term."""
    parts = head(out)
    parts = parts if isinstance(parts, tuple) else (parts,)
    first, *rest = parts
    total = ((first - target) ** 2).mean() + 0.1 * (first ** 3).sum()
    for p in rest:
        total = total + (p ** 2).sum()
    return total


def _build(name):
    funcgrad.manual_seed(0)  # same seed: every build of a case has the same weights and data
    model, x, target, head = CASES[name]()
    return model.double(), x, target, head


_REFERENCES: dict = {}


def _reference(name):
    """(loss, grads): ``jax.grad`` of the functional form, on jax arrays only (no Tensor reaches
    JAX). Cached per case (the builds are deterministic): compiling it is the costly part."""
    if name not in _REFERENCES:
        _REFERENCES[name] = _compute_reference(*_build(name))
    return _REFERENCES[name]


def _compute_reference(model, x, target, head):
    before = _buffers(model)
    params = {k: v.detach().jax() for k, v in model.named_parameters()}
    buffers = {k: v.detach().jax() for k, v in model.named_buffers()}
    xj, tj = x.jax(), target.jax()

    def f(p):
        return _loss(head, functional_call(model, (p, buffers), (xj,)), tj)

    loss, grads = jax.jit(jax.value_and_grad(f))(params)
    assert all(g.dtype == jnp.float64 for g in grads.values())
    # the functional call under jax.grad left the module alone (no tracer, stats unchanged)
    for k, b in _buffers(model).items():
        np.testing.assert_array_equal(b, before[k])
    assert all(isinstance(t._value, jax.Array) for t in model.state_dict().values())
    return float(loss), grads


def _assert_grads(model, grads):
    names = [k for k, _ in model.named_parameters()]
    assert sorted(names) == sorted(grads)
    for k, p in model.named_parameters():
        assert p.grad is not None, k
        assert p.grad.dtype == funcgrad.float64, k
        np.testing.assert_allclose(p.grad.numpy(), np.asarray(grads[k]), rtol=RTOL, atol=ATOL,
                                   err_msg=k)


def _buffers(model):
    return {k: b.numpy().copy() for k, b in model.named_buffers()}


@pytest.mark.parametrize("name", list(CASES))
def test_eager_backward_matches_jax_grad(name):
    model, x, target, head = _build(name)
    ref_loss, grads = _reference(name)
    loss = _loss(head, model(x), target)
    loss.backward()
    np.testing.assert_allclose(loss.item(), ref_loss, rtol=RTOL)
    _assert_grads(model, grads)


@pytest.mark.parametrize("name", list(CASES))
def test_compiled_backward_matches_jax_grad(name):
    model, x, target, head = _build(name)
    ref_loss, grads = _reference(name)
    eager_model = _build(name)[0]
    _loss(head, eager_model(x), target)  # eager forward: the buffers the compiled step must give

    @funcgrad.jit
    def step(inp):
        model.zero_grad()
        loss = _loss(head, model(inp), target)
        loss.backward()
        return loss

    loss = step(x)
    assert loss.grad_fn is None and not loss.requires_grad
    np.testing.assert_allclose(loss.item(), ref_loss, rtol=RTOL)
    _assert_grads(model, grads)
    # training-mode BatchNorm updated its running stats as the eager forward did
    for k, b in _buffers(eager_model).items():
        np.testing.assert_allclose(_buffers(model)[k], b, rtol=RTOL, atol=ATOL, err_msg=k)


def _train_cnn(compiled):
    model, _, _, head = _build("cnn_batchnorm_train")
    opt = funcgrad.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    funcgrad.manual_seed(1)
    batches = [(_randn(3, 2, 5, 5), funcgrad.randn(3, 2)) for _ in range(3)]

    def step(x, t):
        opt.zero_grad()
        loss = _loss(head, model(x), t)
        loss.backward()
        opt.step()
        return loss

    if compiled:
        step = funcgrad.jit(step)
    losses = [step(x, t).item() for x, t in batches]
    if compiled:  # step 2 may retrace once (.grad and momentum buffers now exist); step 3 not
        assert step.num_traces <= 2
    return model, opt, losses


def test_compiled_sgd_momentum_steps_match_eager_cnn_batchnorm():
    eager, eager_opt, eager_losses = _train_cnn(False)
    comp, comp_opt, comp_losses = _train_cnn(True)
    np.testing.assert_allclose(comp_losses, eager_losses, rtol=RTOL)
    for (k, p), (_, q) in zip(eager.named_parameters(), comp.named_parameters()):
        np.testing.assert_allclose(q.detach().numpy(), p.detach().numpy(), rtol=RTOL, atol=ATOL,
                                   err_msg=k)
        np.testing.assert_allclose(q.grad.numpy(), p.grad.numpy(), rtol=RTOL, atol=ATOL, err_msg=k)
        mp = eager_opt.state[p]["momentum_buffer"]
        mq = comp_opt.state[q]["momentum_buffer"]
        np.testing.assert_allclose(mq.numpy(), mp.numpy(), rtol=RTOL, atol=ATOL, err_msg=k)
    eb, cb = _buffers(eager), _buffers(comp)
    assert sorted(eb) == sorted(cb)
    for k in eb:
        np.testing.assert_allclose(cb[k], eb[k], rtol=RTOL, atol=ATOL, err_msg=k)
    nbt = [b for k, b in comp.named_buffers() if k.endswith("num_batches_tracked")]
    assert len(nbt) == 2 and all(b.item() == 3 and b.dtype == funcgrad.int64 for b in nbt)
    # the parameters really moved (the comparison above is not between two untouched models)
    fresh = _build("cnn_batchnorm_train")[0]
    assert not np.allclose(fresh[0].weight.detach().numpy(), comp[0].weight.detach().numpy())


def test_eval_batchnorm_case_uses_running_stats():
    # parity alone cannot tell whether eval mode used the running stats (both sides run the
    # same module code): the eval reference must differ from the training-mode one, and equal
    # a hand-written jax.numpy normalisation with the running stats for the first layer
    model, x, _, _ = _build("cnn_batchnorm_eval")
    assert _reference("cnn_batchnorm_eval")[0] != pytest.approx(_reference("cnn_batchnorm_train")[0])
    conv, bn = model[0], model[1]
    with funcgrad.no_grad():
        out = bn(conv(x)).numpy()
        h = conv(x).numpy()
    c = (None, slice(None), None, None)
    ref = ((h - bn.running_mean.numpy()[c]) / np.sqrt(bn.running_var.numpy()[c] + bn.eps)
           * bn.weight.detach().numpy()[c] + bn.bias.detach().numpy()[c])
    np.testing.assert_allclose(out, ref, rtol=RTOL, atol=ATOL)
