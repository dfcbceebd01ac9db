"""Saved tensors as PyTorch exposes them (its tutorial "Hooks for autograd saved tensors"):
``grad_fn._saved_<name>`` under ``derivatives.yaml``'s names (the input object itself, a new
tensor on a saved output's storage with the node as its ``grad_fn``, ``None`` where PyTorch saved
nothing because no input that needs it requires grad, a Python number as PyTorch's wrapped-number
tensor, static arguments as numbers), the freed-graph and version errors on reading one.
``EXPECTED`` was recorded from PyTorch 2.13 (and is re-run on torch where it is installed)."""

import pytest

import funcgrad

from ._rows import check_transcript, shower, torch_transcript


def _saved_attrs(torch, g):
    def one(v):
        if isinstance(v, torch.Tensor):
            return (v.dtype, tuple(v.shape), type(v.grad_fn).__name__, v.requires_grad,
                    [round(e, 4) for e in v.detach().flatten().tolist()])
        return v
    return (type(g).__name__, {a: one(getattr(g, a)) for a in sorted(dir(g))
                               if a.startswith("_saved_") and not a.endswith(("sizes", "strides"))})


def _operands(torch):
    """The transcripts' operands, drawn after manual_seed(0): x, w, c (no grad), m1, m2, b."""
    torch.manual_seed(0)
    return (torch.randn(2, 3, requires_grad=True), torch.randn(2, 3, requires_grad=True), torch.randn(2, 3),
            torch.randn(2, 3, requires_grad=True), torch.randn(3, 2, requires_grad=True),
            torch.randn(2, requires_grad=True))


def _transcript(torch):
    out = []
    show = shower(out, warns=True)
    x, w, c, m1, m2, b = _operands(torch)
    for f in [lambda: x * w, lambda: x * c, lambda: c * x, lambda: x * 2, lambda: x * 2.5,
              lambda: x / w, lambda: c / x, lambda: x / c, lambda: x ** w, lambda: x ** c, lambda: c ** x,
              lambda: m1 @ m2, lambda: torch.addmm(b, m1, m2, alpha=2, beta=3),
              lambda: torch.addmm(b.detach(), m1.detach(), m2), lambda: x.exp(), lambda: x.sin(),
              lambda: x.cos(), lambda: x.abs(), lambda: x.tanh(), lambda: x.sigmoid(),
              lambda: x.abs().sqrt(), lambda: x.abs().log(), lambda: x.relu()]:
        show(lambda f=f: _saved_attrs(torch, f().grad_fn))
    # the tutorial: the inputs themselves; a saved output is a new tensor on its storage
    y = x * w
    show(lambda: (y.grad_fn._saved_self is x, y.grad_fn._saved_other is w))
    y = x * x
    z = y * y
    show(lambda: (z.grad_fn._saved_self is y, z.grad_fn._saved_other is y))
    y = torch.exp(x)
    show(lambda: (y.grad_fn._saved_result.equal(y), y.grad_fn._saved_result is y,
                  y.grad_fn._saved_result.grad_fn is y.grad_fn, y.grad_fn._saved_result._version))
    r = y.grad_fn._saved_result
    with torch.no_grad():
        r.mul_(2)  # (the same storage and version counter as y's)
    show(lambda: (y[0, 0].item() == r[0, 0].item(), y._version))
    show(lambda: y.grad_fn._saved_result)  # modified in place: the version error
    # a saved input modified in place; reading after a backward freed the graph
    z = x * 1
    y = z.sin()
    z.mul_(2)
    show(lambda: y.grad_fn._saved_self)
    y = x.sin()
    y.sum().backward()
    show(lambda: y.grad_fn._saved_self)
    y = x.exp()
    y.sum().backward()
    show(lambda: y.grad_fn._saved_result)
    y = x * 2
    y.sum().backward()
    show(lambda: y.grad_fn._saved_self)  # never saved: None, not the error
    show(lambda: y.grad_fn._saved_other)
    y = torch.addmm(b, m1, m2, alpha=2)
    y.sum().backward()
    show(lambda: (y.grad_fn._saved_alpha, y.grad_fn._saved_beta))
    y = x.sin()
    y.sum().backward(retain_graph=True)
    show(lambda: y.grad_fn._saved_self is x)
    show(lambda: y.grad_fn._saved_result)
    # numbers kept beside the tensors (all of the node's _saved_ names), also after a backward
    for f in [lambda: x + w, lambda: torch.add(x, w, alpha=3), lambda: x - w, lambda: torch.sub(x, w, alpha=2),
              lambda: x - 2, lambda: 2 - x, lambda: x + 2, lambda: x.sum(), lambda: x.mean(), lambda: x.view(6),
              lambda: x.reshape(3, 2)]:
        def numbers(f=f):
            y = f()
            g = y.grad_fn
            before = {a: getattr(g, a) for a in sorted(dir(g)) if a.startswith("_saved_")}
            y.sum().backward()
            return (type(g).__name__, before, {a: getattr(g, a) for a in before} == before)
        show(numbers)
    return out


def _hooks_transcript(torch):
    out = []
    show = shower(out, warns=True)
    log = []
    x, w, c, m1, m2, b = _operands(torch)
    names = {id(x): "x", id(w): "w", id(c): "c", id(m1): "m1", id(m2): "m2", id(b): "b"}

    def tag(t):
        return names.get(id(t), (type(t.grad_fn).__name__, tuple(t.shape), t.requires_grad))

    def pack(t):
        log.append(("pack", tag(t), torch.is_grad_enabled()))
        return ("P", t)

    def unpack(p):
        log.append(("unpack", tag(p[1]), torch.is_grad_enabled()))
        return p[1]

    def run(f):
        def g():
            for a in (x, w, m1, m2, b):
                a.grad = None
            log.clear()
            with torch.autograd.graph.saved_tensors_hooks(pack, unpack):
                y = f()
            packed = list(log)
            log.clear()
            y.sum().backward()
            return (type(y.grad_fn).__name__, packed, list(log),
                    [None if a.grad is None else [round(v, 4) for v in a.grad.flatten().tolist()]
                     for a in (x, w, m1, m2, b)])
        return g

    for f in [lambda: x * w, lambda: x * x, lambda: x * c, lambda: c * x, lambda: x * 2, lambda: x / w,
              lambda: c / x, lambda: x / c, lambda: x ** 2, lambda: x ** w, lambda: x ** c, lambda: m1 @ m2,
              lambda: torch.addmm(b, m1, m2), lambda: torch.addmm(b.detach(), m1, m2.detach()),
              lambda: torch.nn.functional.linear(m1, m2.t(), b), lambda: torch.nn.functional.linear(m1, m2.t()),
              lambda: x.exp(), lambda: x.sin(), lambda: x.cos(), lambda: x.abs(), lambda: x.tanh(),
              lambda: x.sigmoid(), lambda: x.relu(), lambda: (x * c).sum() ** 2, lambda: x + c, lambda: -x,
              lambda: torch.softmax(x, 1) * w, lambda: torch.log_softmax(x, 1),
              lambda: x.sin().exp() * w]:
        show(run(f))
    # the node keeps no reference to a packed input (only its version and place in the graph)
    import gc
    import weakref
    with torch.autograd.graph.saved_tensors_hooks(lambda t: t.detach().clone(), lambda p: p):
        h = x * 2
        y = h.sin()
        z = h * w
    r = weakref.ref(h)
    show(lambda: [round(v, 4) for v in z.grad_fn._saved_self.flatten().tolist()])
    h.mul_(2)
    del h
    gc.collect()
    show(lambda: r() is None)
    show(lambda: y.sum().backward())
    show(lambda: z.grad_fn._saved_self)
    with torch.autograd.graph.saved_tensors_hooks(lambda t: t.detach().clone(), lambda p: p):
        h = x * 2
        y = h.sin() * x
    x.grad = None
    y.sum().backward()
    show(lambda: x.grad)
    # retain_graph: each backward unpacks again
    with torch.autograd.graph.saved_tensors_hooks(pack, unpack):
        y = (x.sin() * x).sum()
    log.clear()
    x.grad = None
    y.backward(retain_graph=True)
    show(lambda: (list(log), x.grad))
    log.clear()
    y.backward()
    show(lambda: (list(log), x.grad))
    # the unpacked tensor is what the backward computes with; reading _saved_* unpacks each time
    with torch.autograd.graph.saved_tensors_hooks(lambda t: t * 4, lambda p: p / 4):
        y = torch.pow(x, 2)
    x.grad = None
    y.sum().backward()
    show(lambda: x.grad.equal(2 * x))
    with torch.autograd.graph.saved_tensors_hooks(lambda t: t.detach() * 2, lambda p: p):
        y = x.sin()
        z = x * c
    show(lambda: [round(v, 4) for v in y.grad_fn._saved_self.flatten().tolist()])
    x.grad = None
    y.sum().backward()
    show(lambda: [round(v, 4) for v in x.grad.flatten().tolist()])  # cos(2x)
    show(lambda: [round(v, 4) for v in z.grad_fn._saved_other.flatten().tolist()])
    with torch.autograd.graph.saved_tensors_hooks(pack, unpack):
        y = x.sin()
        z = x * c
        e = (x * 1).exp()
    log.clear()
    s1, s2, s3 = y.grad_fn._saved_self, z.grad_fn._saved_other, e.grad_fn._saved_result
    show(lambda: (list(log), s1 is x, s1.requires_grad, s1.is_leaf, s2 is c, s3.grad_fn is e.grad_fn,
                  s3.equal(e)))
    x.grad = None
    s1.sum().backward()  # a leaf's unpacked tensor accumulates into the leaf
    show(lambda: x.grad)
    # nothing packed under no_grad; nesting: the innermost pair
    log.clear()
    with torch.no_grad(), torch.autograd.graph.saved_tensors_hooks(pack, unpack):
        y = x.sin()
    show(lambda: list(log))
    seen = []
    with torch.autograd.graph.saved_tensors_hooks(lambda t: seen.append("outer") or t, lambda p: p):
        with torch.autograd.graph.saved_tensors_hooks(lambda t: seen.append("inner") or t, lambda p: p):
            y = x.sin()
        y = x.sin()
    y = x.sin()
    show(lambda: seen)
    # errors
    with torch.autograd.graph.saved_tensors_hooks(lambda t: 1, lambda p: p):
        y = x.sin()
    show(lambda: y.sum().backward())
    show(lambda: y.grad_fn._saved_self)

    def bad_pack(t):
        t.add_(1)
        return t

    def inplace():
        with torch.autograd.graph.saved_tensors_hooks(bad_pack, lambda p: p):
            (x * 1).sin()
    show(inplace)
    with torch.autograd.graph.saved_tensors_hooks(pack, unpack):
        y = x.sin()
    y.sum().backward()
    show(lambda: y.grad_fn._saved_self)

    def disabled(hooks_first):
        def f():
            if hooks_first:
                with torch.autograd.graph.saved_tensors_hooks(pack, unpack):
                    with torch.autograd.graph.disable_saved_tensors_hooks("no hooks here"):
                        x.sin()
            else:
                with torch.autograd.graph.disable_saved_tensors_hooks("no hooks here"):
                    y = x.sin()
                    y = y * 2  # saving without hooks is allowed
                    with torch.autograd.graph.saved_tensors_hooks(pack, unpack):
                        pass
        return f
    show(disabled(True))
    show(disabled(False))

    def not_callable():
        with torch.autograd.graph.saved_tensors_hooks(1, unpack):
            pass
    show(lambda: _no_addr(not_callable))
    # grad_fn._raw_saved_*: register_hooks
    y = x.sin()
    r = y.grad_fn._raw_saved_self
    show(lambda: type(r).__name__)
    log.clear()
    r.register_hooks(pack, unpack)
    show(lambda: list(log))
    log.clear()
    show(lambda: (y.grad_fn._saved_self.equal(x), list(log)))
    show(lambda: r.register_hooks(pack, unpack))
    log.clear()
    x.grad = None
    y.sum().backward()
    show(lambda: (list(log), x.grad))
    show(lambda: r.register_hooks(pack, unpack))
    z = x * c
    show(lambda: z.grad_fn._raw_saved_self.register_hooks(pack, unpack))
    show(lambda: _no_addr(lambda: z.grad_fn._raw_saved_other.register_hooks(pack, 1)))
    with torch.autograd.graph.saved_tensors_hooks(pack, unpack):
        y = x.sin()
    show(lambda: y.grad_fn._raw_saved_self.register_hooks(pack, unpack))
    show(lambda: sorted(a for a in dir(torch.addmm(b, m1, m2).grad_fn) if a.startswith("_raw_saved")))
    return out


def _no_addr(f):
    import re
    try:
        f()
    except TypeError as e:
        return "ERR TypeError " + re.sub(r"0x[0-9a-f]+", "0x...", str(e))
    return "no error"


def _tutorial(torch):
    """The tutorial's own examples (its prints; hooks printing the tensors they see)."""
    out = []
    show = shower(out, warns=True)
    torch.manual_seed(0)
    a = torch.randn(5, requires_grad=True)
    b = torch.ones(5, requires_grad=True)
    y = a * b
    show(lambda: y.grad_fn._saved_self)
    show(lambda: y.grad_fn._saved_other)
    show(lambda: (y.grad_fn._saved_self is a, y.grad_fn._saved_other is b))
    y = torch.exp(a)
    show(lambda: (y.grad_fn._saved_result.equal(y), y.grad_fn._saved_result is y))

    def pack_hook(x):
        out.append(f"Packing {x}")
        return x

    def unpack_hook(x):
        out.append(f"Unpacking {x}")
        return x
    a = torch.ones(5, requires_grad=True)
    b = torch.ones(5, requires_grad=True) * 2
    with torch.autograd.graph.saved_tensors_hooks(pack_hook, unpack_hook):
        y = a * b
    y.sum().backward()
    x = torch.randn(5, requires_grad=True)
    with torch.autograd.graph.saved_tensors_hooks(lambda x: x * 4, lambda x: x / 4):
        y = torch.pow(x, 2)
    y.sum().backward()
    show(lambda: x.grad.equal(2 * x))
    storage = []

    def pack(x):
        storage.append(x)
        return len(storage) - 1

    def unpack(x):
        return storage[x]
    x = torch.randn(5, requires_grad=True)
    with torch.autograd.graph.saved_tensors_hooks(pack, unpack):
        y = x * x
    y.sum().backward()
    show(lambda: (x.grad.equal(2 * x), len(storage)))

    def pack2(x):
        delta = torch.randn(*x.size())
        return x - delta, lambda x: x + delta

    def unpack2(packed):
        x, f = packed
        return f(x)
    x = torch.randn(5, requires_grad=True)
    with torch.autograd.graph.saved_tensors_hooks(pack2, unpack2):
        y = x * x
    y.sum().backward()
    show(lambda: torch.allclose(x.grad, 2 * x))
    x = torch.randn(5, requires_grad=True)
    with torch.autograd.graph.saved_tensors_hooks(lambda x: repr(x), lambda x: eval("torch." + x, {"torch": torch})):  # noqa: S307
        y = x * x
    y.sum().backward()
    show(lambda: torch.all(x.grad - 2 * x <= 1e-4))

    def pack_cpu(x):
        return (x.device, x.cpu())

    def unpack_cpu(packed):
        device, tensor = packed
        return tensor.to(device)
    x = torch.randn(5, requires_grad=True)
    with torch.autograd.graph.saved_tensors_hooks(pack_cpu, unpack_cpu):
        y = x * x
    y.sum().backward()
    show(lambda: torch.allclose(x.grad, (2 * x)))

    class Model(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.w = torch.nn.Parameter(torch.randn(5))

        def forward(self, x):
            with torch.autograd.graph.save_on_cpu(pin_memory=True):
                return self.w * x
    x = torch.randn(5)
    model = Model()
    loss = model(x).sum()
    loss.backward()
    show(lambda: model.w.grad.equal(x))
    for pin in (False, True):
        x = torch.randn(3, requires_grad=True)
        with torch.autograd.graph.save_on_cpu(pin_memory=pin):
            y = x.sin() * x
        y.sum().backward()
        show(lambda x=x: x.grad)

    class SaveToCpu(torch.nn.Module):
        def __init__(self, module):
            super().__init__()
            self.module = module

        def forward(self, *args, **kwargs):
            with torch.autograd.graph.save_on_cpu(pin_memory=True):
                return self.module(*args, **kwargs)
    model = torch.nn.Sequential(torch.nn.Linear(10, 4), SaveToCpu(torch.nn.Linear(4, 4)), torch.nn.Linear(4, 2))
    x = torch.randn(10)
    loss = model(x).sum()
    loss.backward()
    show(lambda: [round(v, 4) for v in model[1].module.weight.grad.flatten().tolist()])
    return out


def _function_transcript(torch):
    """A custom Function's save_for_backward under the hooks: packed after its forward (an output
    saved as the returned one), unpacked at each ctx.saved_tensors read."""
    out = []
    show = shower(out, warns=True)
    log = []
    torch.manual_seed(0)
    x = torch.randn(3, requires_grad=True)
    c = torch.randn(3)

    def tag(t):
        return "x" if t is x else "c" if t is c else (type(t.grad_fn).__name__, t.requires_grad, t.is_leaf)

    class F(torch.autograd.Function):
        @staticmethod
        def forward(ctx, a, b):
            out = a * b
            ctx.save_for_backward(a, b, out, None)
            return out

        @staticmethod
        def backward(ctx, g):
            a, b, out, n = ctx.saved_tensors
            log.append(("backward", tag(a), tag(b), tag(out), n))
            ctx.saved_tensors  # noqa: B018  (a second read unpacks again)
            return g * b * 2, None

    def pack(t):
        log.append(("pack", tag(t), torch.is_grad_enabled()))
        return ("P", t * 1)

    def unpack(p):
        log.append(("unpack", tag(p[1]), torch.is_grad_enabled()))
        return p[1]
    with torch.autograd.graph.saved_tensors_hooks(pack, unpack):
        y = F.apply(x, c)
    show(lambda: list(log))
    log.clear()
    y.sum().backward()
    show(lambda: (list(log), x.grad))
    show(lambda: y.grad_fn.saved_tensors)
    with torch.autograd.graph.saved_tensors_hooks(lambda t: 1, lambda p: p):
        y = F.apply(x, c)
    show(lambda: y.sum().backward())
    return out


EXPECTED = [
    "('MulBackward0', {'_saved_other': (torch.float32, (2, 3), 'NoneType', True, [0.4033, 0.838, -0.7193, -0.4033, -0.5966, 0.182]), '_saved_self': (torch.float32, (2, 3), 'NoneType', True, [1.541, -0.2934, -2.1788, 0.5684, -1.0845, -1.3986])})",
    "('MulBackward0', {'_saved_other': (torch.float32, (2, 3), 'NoneType', False, [-0.8567, 1.1006, -1.0712, 0.1227, -0.5663, 0.3731]), '_saved_self': None})",
    "('MulBackward0', {'_saved_other': None, '_saved_self': (torch.float32, (2, 3), 'NoneType', False, [-0.8567, 1.1006, -1.0712, 0.1227, -0.5663, 0.3731])})",
    "('MulBackward0', {'_saved_other': (torch.int64, (), 'NoneType', False, [2]), '_saved_self': None})",
    "('MulBackward0', {'_saved_other': (torch.float64, (), 'NoneType', False, [2.5]), '_saved_self': None})",
    "('DivBackward0', {'_saved_other': (torch.float32, (2, 3), 'NoneType', True, [0.4033, 0.838, -0.7193, -0.4033, -0.5966, 0.182]), '_saved_self': (torch.float32, (2, 3), 'NoneType', True, [1.541, -0.2934, -2.1788, 0.5684, -1.0845, -1.3986])})",
    "('DivBackward0', {'_saved_other': (torch.float32, (2, 3), 'NoneType', True, [1.541, -0.2934, -2.1788, 0.5684, -1.0845, -1.3986]), '_saved_self': (torch.float32, (2, 3), 'NoneType', False, [-0.8567, 1.1006, -1.0712, 0.1227, -0.5663, 0.3731])})",
    "('DivBackward0', {'_saved_other': (torch.float32, (2, 3), 'NoneType', False, [-0.8567, 1.1006, -1.0712, 0.1227, -0.5663, 0.3731]), '_saved_self': None})",
    "('PowBackward1', {'_saved_exponent': (torch.float32, (2, 3), 'NoneType', True, [0.4033, 0.838, -0.7193, -0.4033, -0.5966, 0.182]), '_saved_result': (torch.float32, (2, 3), 'PowBackward1', True, [1.1906, nan, nan, 1.2559, nan, nan]), '_saved_self': (torch.float32, (2, 3), 'NoneType', True, [1.541, -0.2934, -2.1788, 0.5684, -1.0845, -1.3986])})",
    "('PowBackward1', {'_saved_exponent': (torch.float32, (2, 3), 'NoneType', False, [-0.8567, 1.1006, -1.0712, 0.1227, -0.5663, 0.3731]), '_saved_result': (torch.float32, (2, 3), 'PowBackward1', True, [0.6904, nan, nan, 0.933, nan, nan]), '_saved_self': (torch.float32, (2, 3), 'NoneType', True, [1.541, -0.2934, -2.1788, 0.5684, -1.0845, -1.3986])})",
    "('PowBackward1', {'_saved_exponent': (torch.float32, (2, 3), 'NoneType', True, [1.541, -0.2934, -2.1788, 0.5684, -1.0845, -1.3986]), '_saved_result': (torch.float32, (2, 3), 'PowBackward1', True, [nan, 0.9723, nan, 0.3034, nan, 3.9703]), '_saved_self': (torch.float32, (2, 3), 'NoneType', False, [-0.8567, 1.1006, -1.0712, 0.1227, -0.5663, 0.3731])})",
    "('MmBackward0', {'_saved_mat2': (torch.float32, (3, 2), 'NoneType', True, [0.1919, 1.2638, -1.2904, -0.7911, -0.0209, -0.7185]), '_saved_self': (torch.float32, (2, 3), 'NoneType', True, [-0.892, -1.5091, 0.3704, 1.4565, 0.9398, 0.7748])})",
    "('AddmmBackward0', {'_saved_alpha': 2, '_saved_beta': 3, '_saved_mat1': (torch.float32, (2, 3), 'NoneType', True, [-0.892, -1.5091, 0.3704, 1.4565, 0.9398, 0.7748]), '_saved_mat2': (torch.float32, (3, 2), 'NoneType', True, [0.1919, 1.2638, -1.2904, -0.7911, -0.0209, -0.7185])})",
    "('AddmmBackward0', {'_saved_alpha': 1, '_saved_beta': 1, '_saved_mat1': (torch.float32, (2, 3), 'NoneType', False, [-0.892, -1.5091, 0.3704, 1.4565, 0.9398, 0.7748]), '_saved_mat2': None})",
    "('ExpBackward0', {'_saved_result': (torch.float32, (2, 3), 'ExpBackward0', True, [4.6692, 0.7457, 0.1132, 1.7655, 0.3381, 0.2469])})",
    "('SinBackward0', {'_saved_self': (torch.float32, (2, 3), 'NoneType', True, [1.541, -0.2934, -2.1788, 0.5684, -1.0845, -1.3986])})",
    "('CosBackward0', {'_saved_self': (torch.float32, (2, 3), 'NoneType', True, [1.541, -0.2934, -2.1788, 0.5684, -1.0845, -1.3986])})",
    "('AbsBackward0', {'_saved_self': (torch.float32, (2, 3), 'NoneType', True, [1.541, -0.2934, -2.1788, 0.5684, -1.0845, -1.3986])})",
    "('TanhBackward0', {'_saved_result': (torch.float32, (2, 3), 'TanhBackward0', True, [0.9123, -0.2853, -0.9747, 0.5142, -0.7949, -0.885])})",
    "('SigmoidBackward0', {'_saved_result': (torch.float32, (2, 3), 'SigmoidBackward0', True, [0.8236, 0.4272, 0.1017, 0.6384, 0.2527, 0.198])})",
    "('SqrtBackward0', {'_saved_result': (torch.float32, (2, 3), 'SqrtBackward0', True, [1.2414, 0.5417, 1.4761, 0.7539, 1.0414, 1.1826])})",
    "('LogBackward0', {'_saved_self': (torch.float32, (2, 3), 'AbsBackward0', True, [1.541, 0.2934, 2.1788, 0.5684, 1.0845, 1.3986])})",
    "('ReluBackward0', {'_saved_result': (torch.float32, (2, 3), 'ReluBackward0', True, [1.541, 0.0, 0.0, 0.5684, 0.0, 0.0])})",
    '(True, True)',
    '(True, True)',
    '(True, False, True, 0)',
    '(True, 1)',
    'ERR RuntimeError one of the variables needed for gradient computation has been modified by an inplace operation: [torch.FloatTensor [2, 3]], which is output 0 of Exp, is at version 1; expected version 0 instead. Hint: enable anomaly detection to find the operation that failed to compute its gradient, with torch.autograd.set_detect_anomaly(True, check_nan=False).',
    'ERR RuntimeError one of the variables needed for gradient computation has been modified by an inplace operation: [torch.FloatTensor [2, 3]], which is output 0 of Mul, is at version 1; expected version 0 instead. Hint: enable anomaly detection to find the operation that failed to compute its gradient, with torch.autograd.set_detect_anomaly(True, check_nan=False).',
    'ERR RuntimeError Trying to backward through the graph a second time (or directly access saved tensors after they have already been freed). Saved intermediate values of the graph are freed when you call .backward() or autograd.grad(). Specify retain_graph=True if you need to backward through the graph a second time or if you need to access saved tensors after calling backward.',
    'ERR RuntimeError Trying to backward through the graph a second time (or directly access saved tensors after they have already been freed). Saved intermediate values of the graph are freed when you call .backward() or autograd.grad(). Specify retain_graph=True if you need to backward through the graph a second time or if you need to access saved tensors after calling backward.',
    'None',
    'ERR RuntimeError Trying to backward through the graph a second time (or directly access saved tensors after they have already been freed). Saved intermediate values of the graph are freed when you call .backward() or autograd.grad(). Specify retain_graph=True if you need to backward through the graph a second time or if you need to access saved tensors after calling backward.',
    '(2, 1)',
    'True',
    "ERR AttributeError 'SinBackward0' object has no attribute '_saved_result'",
    "('AddBackward0', {'_saved_alpha': 1}, True)",
    "('AddBackward0', {'_saved_alpha': 3}, True)",
    "('SubBackward0', {'_saved_alpha': 1}, True)",
    "('SubBackward0', {'_saved_alpha': 2}, True)",
    "('SubBackward0', {'_saved_alpha': 1}, True)",
    "('RsubBackward1', {'_saved_alpha': 1}, True)",
    "('AddBackward0', {'_saved_alpha': 1}, True)",
    "('SumBackward0', {'_saved_self_sym_sizes': (2, 3)}, True)",
    "('MeanBackward0', {'_saved_self_sym_numel': 6, '_saved_self_sym_sizes': (2, 3)}, True)",
    "('ViewBackward0', {'_saved_self_sym_sizes': (2, 3)}, True)",
    "('ViewBackward0', {'_saved_self_sym_sizes': (2, 3)}, True)",
]


EXPECTED_HOOKS = [
    "('MulBackward0', [('pack', 'w', False), ('pack', 'x', False)], [('unpack', 'w', False), ('unpack', 'x', False)], [[0.4033, 0.838, -0.7193, -0.4033, -0.5966, 0.182], [1.541, -0.2934, -2.1788, 0.5684, -1.0845, -1.3986], None, None, None])",
    "('MulBackward0', [('pack', 'x', False), ('pack', 'x', False)], [('unpack', 'x', False), ('unpack', 'x', False)], [[3.082, -0.5869, -4.3576, 1.1369, -2.169, -2.7972], None, None, None, None])",
    "('MulBackward0', [('pack', 'c', False)], [('unpack', 'c', False)], [[-0.8567, 1.1006, -1.0712, 0.1227, -0.5663, 0.3731], None, None, None, None])",
    "('MulBackward0', [('pack', 'c', False)], [('unpack', 'c', False)], [[-0.8567, 1.1006, -1.0712, 0.1227, -0.5663, 0.3731], None, None, None, None])",
    "('MulBackward0', [], [], [[2.0, 2.0, 2.0, 2.0, 2.0, 2.0], None, None, None, None])",
    "('DivBackward0', [('pack', 'w', False), ('pack', 'x', False)], [('unpack', 'w', False), ('unpack', 'x', False)], [[2.4793, 1.1933, -1.3903, -2.4793, -1.6761, 5.4934], [-9.4721, 0.4178, 4.2116, -3.494, 3.0466, 42.2061], None, None, None])",
    "('DivBackward0', [('pack', 'x', False), ('pack', 'c', False)], [('unpack', 'x', False), ('unpack', 'c', False)], [[0.3608, -12.7828, 0.2256, -0.3797, 0.4815, -0.1907], None, None, None, None])",
    "('DivBackward0', [('pack', 'c', False)], [('unpack', 'c', False)], [[-1.1673, 0.9086, -0.9335, 8.1499, -1.7658, 2.6801], None, None, None, None])",
    "('PowBackward0', [('pack', 'x', False)], [('unpack', 'x', False)], [[3.082, -0.5869, -4.3576, 1.1369, -2.169, -2.7972], None, None, None, None])",
    "('PowBackward1', [('pack', 'w', False), ('pack', 'x', False), ('pack', ('PowBackward1', (2, 3), True), False)], [('unpack', 'w', False), ('unpack', 'x', False), ('unpack', ('PowBackward1', (2, 3), True), False)], [[0.3116, nan, nan, -0.8911, nan, nan], [0.5148, nan, nan, -0.7094, nan, nan], None, None, None])",
    "('PowBackward1', [('pack', 'c', False), ('pack', 'x', False), ('pack', ('PowBackward1', (2, 3), True), False)], [('unpack', 'c', False), ('unpack', 'x', False), ('unpack', ('PowBackward1', (2, 3), True), False)], [[-0.3838, nan, nan, 0.2014, nan, nan], None, None, None, None])",
    "('MmBackward0', [('pack', 'm2', False), ('pack', 'm1', False)], [('unpack', 'm2', False), ('unpack', 'm1', False)], [None, None, [1.4557, -2.0815, -0.7394, 1.4557, -2.0815, -0.7394], [0.5645, 0.5645, -0.5693, -0.5693, 1.1452, 1.1452], None])",
    "('AddmmBackward0', [('pack', 'm1', False), ('pack', 'm2', False)], [('unpack', 'm1', False), ('unpack', 'm2', False)], [None, None, [1.4557, -2.0815, -0.7394, 1.4557, -2.0815, -0.7394], [0.5645, 0.5645, -0.5693, -0.5693, 1.1452, 1.1452], [2.0, 2.0]])",
    "('AddmmBackward0', [('pack', ('NoneType', (3, 2), False), False)], [('unpack', ('NoneType', (3, 2), False), False)], [None, None, [1.4557, -2.0815, -0.7394, 1.4557, -2.0815, -0.7394], None, None])",
    "('AddmmBackward0', [('pack', 'm1', False), ('pack', ('TBackward0', (3, 2), True), False)], [('unpack', 'm1', False), ('unpack', ('TBackward0', (3, 2), True), False)], [None, None, [1.4557, -2.0815, -0.7394, 1.4557, -2.0815, -0.7394], [0.5645, 0.5645, -0.5693, -0.5693, 1.1452, 1.1452], [2.0, 2.0]])",
    "('MmBackward0', [('pack', ('TBackward0', (3, 2), True), False), ('pack', 'm1', False)], [('unpack', ('TBackward0', (3, 2), True), False), ('unpack', 'm1', False)], [None, None, [1.4557, -2.0815, -0.7394, 1.4557, -2.0815, -0.7394], [0.5645, 0.5645, -0.5693, -0.5693, 1.1452, 1.1452], None])",
    "('ExpBackward0', [('pack', ('ExpBackward0', (2, 3), True), False)], [('unpack', ('ExpBackward0', (2, 3), True), False)], [[4.6692, 0.7457, 0.1132, 1.7655, 0.3381, 0.2469], None, None, None, None])",
    "('SinBackward0', [('pack', 'x', False)], [('unpack', 'x', False)], [[0.0298, 0.9573, -0.5712, 0.8427, 0.4673, 0.1714], None, None, None, None])",
    "('CosBackward0', [('pack', 'x', False)], [('unpack', 'x', False)], [[-0.9996, 0.2892, 0.8208, -0.5383, 0.8841, 0.9852], None, None, None, None])",
    "('AbsBackward0', [('pack', 'x', False)], [('unpack', 'x', False)], [[1.0, -1.0, -1.0, 1.0, -1.0, -1.0], None, None, None, None])",
    "('TanhBackward0', [('pack', ('TanhBackward0', (2, 3), True), False)], [('unpack', ('TanhBackward0', (2, 3), True), False)], [[0.1677, 0.9186, 0.0499, 0.7356, 0.3682, 0.2167], None, None, None, None])",
    "('SigmoidBackward0', [('pack', ('SigmoidBackward0', (2, 3), True), False)], [('unpack', ('SigmoidBackward0', (2, 3), True), False)], [[0.1453, 0.2447, 0.0913, 0.2308, 0.1888, 0.1588], None, None, None, None])",
    "('ReluBackward0', [('pack', ('ReluBackward0', (2, 3), True), False)], [('unpack', ('ReluBackward0', (2, 3), True), False)], [[1.0, 0.0, 0.0, 1.0, 0.0, 0.0], None, None, None, None])",
    "('PowBackward0', [('pack', 'c', False), ('pack', ('SumBackward0', (), True), False)], [('unpack', ('SumBackward0', (), True), False), ('unpack', 'c', False)], [[-1.4613, 1.8774, -1.8272, 0.2093, -0.966, 0.6365], None, None, None, None])",
    "('AddBackward0', [], [], [[1.0, 1.0, 1.0, 1.0, 1.0, 1.0], None, None, None, None])",
    "('NegBackward0', [], [], [[-1.0, -1.0, -1.0, -1.0, -1.0, -1.0], None, None, None, None])",
    "('MulBackward0', [('pack', ('SoftmaxBackward0', (2, 3), True), False), ('pack', 'w', False), ('pack', ('SoftmaxBackward0', (2, 3), True), False)], [('unpack', 'w', False), ('unpack', ('SoftmaxBackward0', (2, 3), True), False), ('unpack', ('SoftmaxBackward0', (2, 3), True), False)], [[-0.0301, 0.0538, -0.0237, -0.0253, -0.0326, 0.058], [0.8446, 0.1349, 0.0205, 0.7511, 0.1438, 0.1051], None, None, None])",
    "('LogSoftmaxBackward0', [('pack', ('LogSoftmaxBackward0', (2, 3), True), False)], [('unpack', ('LogSoftmaxBackward0', (2, 3), True), False)], [[-1.5339, 0.5953, 0.9386, -1.2533, 0.5685, 0.6848], None, None, None, None])",
    "('MulBackward0', [('pack', 'x', False), ('pack', ('ExpBackward0', (2, 3), True), False), ('pack', 'w', False), ('pack', ('ExpBackward0', (2, 3), True), False)], [('unpack', 'w', False), ('unpack', ('ExpBackward0', (2, 3), True), False), ('unpack', ('ExpBackward0', (2, 3), True), False), ('unpack', 'x', False)], [[0.0327, 0.6007, 0.1808, -0.5823, -0.1152, 0.0116], [2.7171, 0.7488, 0.4401, 1.7131, 0.4131, 0.3734], None, None, None])",
    '[3.082, -0.5869, -4.3576, 1.1369, -2.169, -2.7972]',
    'True',
    'None',
    'tensor([[ 3.0820, -0.5869, -4.3576],\n        [ 1.1369, -2.1690, -2.7972]], grad_fn=<MulBackward0>)',
    'tensor([[-3.0170, -1.0424,  2.4516],\n        [ 1.3853,  0.3953,  2.2953]])',
    "([('unpack', 'x', False), ('unpack', ('SinBackward0', (2, 3), True), False), ('unpack', 'x', False)], tensor([[ 1.0455, -0.5701,  0.4238],\n        [ 1.0174, -1.3909, -1.2249]]))",
    "([('unpack', 'x', False), ('unpack', ('SinBackward0', (2, 3), True), False), ('unpack', 'x', False)], tensor([[ 2.0909, -1.1402,  0.8475],\n        [ 2.0347, -2.7818, -2.4497]]))",
    'True',
    '[3.082, -0.5869, -4.3576, 1.1369, -2.169, -2.7972]',
    '[-0.9982, 0.8327, -0.3474, 0.4204, -0.5632, -0.9413]',
    '[-1.7133, 2.2012, -2.1424, 0.2454, -1.1326, 0.7462]',
    "([('unpack', 'x', True), ('unpack', 'c', True), ('unpack', ('ExpBackward0', (2, 3), True), True)], False, True, True, True, True, True)",
    'tensor([[1., 1., 1.],\n        [1., 1., 1.]])',
    '[]',
    "['inner', 'outer']",
    'ERR TypeError Output of saved tensor unpack_hook expected to be a Tensor but got result of type int',
    'ERR TypeError Output of saved tensor unpack_hook expected to be a Tensor but got result of type int',
    'ERR RuntimeError A saved tensor pack hook is modifying its input in place. Tensors provided as input to pack hook cannot be modified by in-place operations as this can lead to unexpected side-effects. Please open an issue if you need to perform in-place operations on the input to a pack hook.',
    'ERR RuntimeError Trying to backward through the graph a second time (or directly access saved tensors after they have already been freed). Saved intermediate values of the graph are freed when you call .backward() or autograd.grad(). Specify retain_graph=True if you need to backward through the graph a second time or if you need to access saved tensors after calling backward.',
    'ERR RuntimeError no hooks here',
    'ERR RuntimeError no hooks here',
    'ERR TypeError _push_saved_tensors_default_hooks(): incompatible function arguments. The following argument types are supported:\n    1. (arg0: collections.abc.Callable, arg1: collections.abc.Callable) -> None\n\nInvoked with: 1, <function _hooks_transcript.<locals>.unpack at 0x...>',
    'SavedTensor',
    "[('pack', ('NoneType', (2, 3), False), False)]",
    "(True, [('unpack', ('NoneType', (2, 3), False), True)])",
    'ERR RuntimeError Calling register_hooks on a saved tensor whose hooks have already been set. Hint: only one pair of hooks is allowed at a time.',
    "([('unpack', ('NoneType', (2, 3), False), False)], tensor([[ 0.0298,  0.9573, -0.5712],\n        [ 0.8427,  0.4673,  0.1714]]))",
    'ERR RuntimeError Calling register_hooks on a saved tensor after it has been freed. Saved intermediate values of the graph are freed when you call .backward() or autograd.grad(). Specify retain_graph=True if you need to backward through the graph a second time or if you need to access saved variables after calling backward.',
    'ERR RuntimeError Calling register_hooks on a saved tensor with value None is forbidden',
    'ERR TypeError register_hooks(): incompatible function arguments. The following argument types are supported:\n    1. (self: torch._C._autograd.SavedTensor, arg0: collections.abc.Callable, arg1: collections.abc.Callable) -> None\n\nInvoked with: <torch._C._autograd.SavedTensor object at 0x...>, <function _hooks_transcript.<locals>.pack at 0x...>, 1',
    'ERR RuntimeError Calling register_hooks on a saved tensor whose hooks have already been set. Hint: only one pair of hooks is allowed at a time.',
    "['_raw_saved_mat1', '_raw_saved_mat2']",
]


EXPECTED_TUTORIAL = [
    'tensor([ 1.5410, -0.2934, -2.1788,  0.5684, -1.0845], requires_grad=True)',
    'tensor([1., 1., 1., 1., 1.], requires_grad=True)',
    '(True, True)',
    '(True, False)',
    'Packing tensor([2., 2., 2., 2., 2.], grad_fn=<MulBackward0>)',
    'Packing tensor([1., 1., 1., 1., 1.], requires_grad=True)',
    'Unpacking tensor([2., 2., 2., 2., 2.], grad_fn=<MulBackward0>)',
    'Unpacking tensor([1., 1., 1., 1., 1.], requires_grad=True)',
    'True',
    '(True, 2)',
    'True',
    'tensor(True)',
    'True',
    'True',
    'tensor([ 0.1253, -1.2456,  1.3902])',
    'tensor([-2.1791,  0.3470, -1.3583])',
    '[0.001, 0.0017, -0.0006, 0.0004, 0.0785, 0.1354, -0.0516, 0.0331, -0.1812, -0.3126, 0.1192, -0.0763, 0.0633, 0.1092, -0.0417, 0.0267]',
]




EXPECTED_FUNCTION = [
    "[('pack', 'x', False), ('pack', 'c', False), ('pack', ('FBackward', True, False), False)]",
    "([('unpack', ('NoneType', False, True), False), ('unpack', ('NoneType', False, True), False), ('unpack', ('NoneType', False, True), False), ('backward', ('NoneType', True, True), ('NoneType', False, True), ('FBackward', True, False), None), ('unpack', ('NoneType', False, True), False), ('unpack', ('NoneType', False, True), False), ('unpack', ('NoneType', False, True), False)], tensor([ 1.1369, -2.1690, -2.7972]))",
    'ERR RuntimeError Trying to backward through the graph a second time (or directly access saved tensors after they have already been freed). Saved intermediate values of the graph are freed when you call .backward() or autograd.grad(). Specify retain_graph=True if you need to backward through the graph a second time or if you need to access saved tensors after calling backward.',
    'ERR TypeError Output of saved tensor unpack_hook expected to be a Tensor but got result of type int',
]


# each transcript: funcgrad's lines equal the recorded ones, and the recording equals torch's
_TRANSCRIPTS = {"saved": (_transcript, EXPECTED), "hooks": (_hooks_transcript, EXPECTED_HOOKS),
                "tutorial": (_tutorial, EXPECTED_TUTORIAL), "function": (_function_transcript, EXPECTED_FUNCTION)}


@pytest.mark.parametrize("name", list(_TRANSCRIPTS))
def test_transcript_as_pytorch(name):
    script, expected = _TRANSCRIPTS[name]
    check_transcript(script(funcgrad), expected)


@pytest.mark.torch
@pytest.mark.parametrize("name", list(_TRANSCRIPTS))
def test_recorded_transcript_is_pytorchs(name):
    script, expected = _TRANSCRIPTS[name]
    check_transcript(torch_transcript(script), expected)
