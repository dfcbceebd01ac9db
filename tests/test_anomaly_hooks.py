"""detect_anomaly / set_detect_anomaly, and gradient hooks (tensor, grad_fn, post-accumulate)."""

from __future__ import annotations

import numpy as np
import pytest

import funcgrad
from funcgrad import autograd

ANOMALY_WARNING = ("Anomaly Detection has been enabled. This mode will increase the runtime and "
                   "should only be enabled for debugging.")


def test_detect_anomaly_nan_names_forward_op_and_user_line():
    x = funcgrad.tensor([0.0, 1.0], requires_grad=True)
    with pytest.warns(UserWarning, match=ANOMALY_WARNING):
        ctx = autograd.detect_anomaly()
    with ctx:
        assert autograd.is_anomaly_enabled() and autograd.is_anomaly_check_nan_enabled()
        y = funcgrad.sqrt(x) * 0  # USER-LINE
        with pytest.warns(UserWarning) as rec, pytest.raises(RuntimeError) as e:
            y.sum().backward()
    assert str(e.value) == "Function 'SqrtBackward0' returned nan values in its 0th output."
    msg = str(rec[0].message)
    assert msg.startswith("Error detected in SqrtBackward0. Traceback of forward call that caused "
                          "the error:\n")
    assert "test_anomaly_hooks.py" in msg and "y = funcgrad.sqrt(x) * 0  # USER-LINE" in msg
    assert "_dispatch.py" not in msg  # funcgrad's own frames are hidden
    assert not autograd.is_anomaly_enabled()


def test_without_anomaly_nan_passes_silently():
    x = funcgrad.tensor([0.0, 1.0], requires_grad=True)
    (funcgrad.sqrt(x) * 0).sum().backward()
    assert np.isnan(x.grad.numpy()[0])


def test_set_detect_anomaly_function_and_context_and_check_nan_flag():
    autograd.set_detect_anomaly(True)
    assert autograd.is_anomaly_enabled()
    autograd.set_detect_anomaly(False)
    assert not autograd.is_anomaly_enabled()
    with autograd.set_detect_anomaly(True, check_nan=False):
        assert autograd.is_anomaly_enabled() and not autograd.is_anomaly_check_nan_enabled()
        y = funcgrad.tensor([0.0], requires_grad=True)
        (funcgrad.sqrt(y) * 0).sum().backward()  # nan allowed: check_nan=False
    assert not autograd.is_anomaly_enabled()


def test_detect_anomaly_as_decorator_and_custom_function_trace():
    class Bad(autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 1

        @staticmethod
        def backward(ctx, g):
            return g * float("nan")

    with pytest.warns(UserWarning, match=ANOMALY_WARNING):
        @autograd.detect_anomaly()
        def run():
            x = funcgrad.ones(2, requires_grad=True)
            y = Bad.apply(x)  # CUSTOM-LINE
            y.sum().backward()
    with pytest.warns(UserWarning, match="Error detected in BadBackward") as rec, \
            pytest.raises(RuntimeError, match="Function 'BadBackward' returned nan values"):
        run()
    assert "# CUSTOM-LINE" in str(rec[0].message)


# ---- hooks ------------------------------------------------------------------------------------
def test_leaf_hook_replaces_gradient_and_removal():
    x = funcgrad.ones(2, requires_grad=True)
    seen = []
    h = x.register_hook(lambda g: seen.append(g.numpy().copy()) or g * 10)
    (x * 3).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [30.0, 30.0])
    np.testing.assert_allclose(seen[0], [3.0, 3.0])
    h.remove()
    x.grad = None
    (x * 3).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [3.0, 3.0])
    assert len(seen) == 1


def test_non_leaf_hooks_chain_in_order_and_propagate():
    x = funcgrad.ones(2, requires_grad=True)
    y = x * 2
    order = []
    y.register_hook(lambda g: order.append("a") or g + 1)
    y.register_hook(lambda g: order.append(("b", g.numpy().tolist())) or g * 3)
    (y * 5).sum().backward()
    assert order == ["a", ("b", [6.0, 6.0])]
    np.testing.assert_allclose(x.grad.numpy(), [36.0, 36.0])  # ((5 + 1) * 3) * 2


def test_retain_grad_sees_hooked_gradient_regardless_of_order():
    x = funcgrad.ones(2, requires_grad=True)
    y = x * 2
    y.retain_grad()
    y.register_hook(lambda g: g * 2)  # registered after retain_grad: still applied first
    y.sum().backward()
    np.testing.assert_allclose(y.grad.numpy(), [2.0, 2.0])
    np.testing.assert_allclose(x.grad.numpy(), [4.0, 4.0])


def test_hook_errors_and_post_accumulate_hook():
    with pytest.raises(RuntimeError, match="cannot register a hook on a tensor that doesn't require "
                                           "gradient"):
        funcgrad.ones(2).register_hook(lambda g: g)
    x = funcgrad.ones(2, requires_grad=True)
    with pytest.raises(RuntimeError, match="post accumulate grad hooks cannot be registered on "
                                           "non-leaf tensors"):
        (x * 1).register_post_accumulate_grad_hook(lambda t: None)
    seen = []
    h = x.register_post_accumulate_grad_hook(lambda t: seen.append(t.grad.numpy().copy()))
    (x * 2).sum().backward()
    (x * 2).sum().backward()
    np.testing.assert_allclose(seen, [[2.0, 2.0], [4.0, 4.0]])
    h.remove()
    (x * 2).sum().backward()
    assert len(seen) == 2


def test_grad_fn_hooks_and_prehooks():
    x = funcgrad.ones(2, requires_grad=True)
    y = x * 3
    calls = []

    def post(grad_inputs, grad_outputs):
        calls.append(("post", grad_inputs[0].numpy().tolist(), grad_outputs[0].numpy().tolist()))
        return (grad_inputs[0] * 0.5, grad_inputs[1])

    def pre(grad_outputs):
        calls.append(("pre", grad_outputs[0].numpy().tolist()))
        return (grad_outputs[0] * 2,)

    hp = y.grad_fn.register_prehook(pre)
    hq = y.grad_fn.register_hook(post)
    y.sum().backward(retain_graph=True)
    assert calls == [("pre", [1.0, 1.0]), ("post", [6.0, 6.0], [2.0, 2.0])]
    np.testing.assert_allclose(x.grad.numpy(), [3.0, 3.0])
    hp.remove()
    hq.remove()
    x.grad = None
    y.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [3.0, 3.0])


def test_hook_handle_context_manager_and_autograd_grad_does_not_touch_grad():
    x = funcgrad.ones(2, requires_grad=True)
    with x.register_hook(lambda g: g * 0):
        (g,) = autograd.grad((x * 2).sum(), x)
    np.testing.assert_allclose(g.numpy(), [0.0, 0.0])
    assert x.grad is None
    (g,) = autograd.grad((x * 2).sum(), x)
    np.testing.assert_allclose(g.numpy(), [2.0, 2.0])
