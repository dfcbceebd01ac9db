"""Cases recorded from PyTorch for tests/test_prune.py (each ``case(lib)`` returns a list of
outcomes for ``lib`` funcgrad or torch): ``torch.nn.utils.prune``'s masks for the same seed (ties
included), pruned values and gradients, parameter/buffer/state_dict names, hooks, and errors.

An outcome is a NumPy array or a string; strings pass through :func:`norm_text` so that both
libraries' spellings compare (``funcgrad``→``torch``, object addresses dropped)."""

from __future__ import annotations

import copy
import re

import numpy as np


def norm_text(s) -> str:
    s = re.sub(r" at 0x[0-9a-fA-F]+", "", str(s))
    # Python's own words, spelled as the recording's Python 3.11 spells them: 3.12 says "without
    # an implementation for abstract method 'm'" (torch on 3.12 raises the same words)
    s = re.sub(r"without an implementation for abstract method '(\w+)'", r"with abstract method \1", s)
    return s.replace("funcgrad", "torch")


def _hooks_text(hooks) -> str:
    """An OrderedDict's repr as Python 3.11 writes it (3.12 writes ``OrderedDict({k: v})``), hook
    ids masked: they count globally."""
    return re.sub(r"\((\d+), <", "(#, <", f"{type(hooks).__name__}({list(hooks.items())!r})")


def err(fn) -> str:
    """``'<Type>: <message>'`` of what ``fn()`` raises (``'no error'`` if nothing)."""
    try:
        fn()
    except Exception as e:  # noqa: BLE001  (the exception is the outcome)
        return norm_text(f"{type(e).__name__}: {e}")
    return "no error"


def _prune(lib):
    return __import__(lib.__name__ + ".nn.utils.prune", fromlist=["prune"])


def _a(t) -> np.ndarray:
    return t.detach().numpy().copy()


def _layout(m) -> list:
    """Names and hook classes of a module, as the tutorial prints them."""
    return [norm_text([n for n, _ in m.named_parameters()]), norm_text([n for n, _ in m.named_buffers()]),
            norm_text(list(m.state_dict().keys())),
            norm_text([type(h).__name__ for h in m._forward_pre_hooks.values()])]


# ---- masks ----------------------------------------------------------------------------------------
def random_unstructured(lib):
    P = _prune(lib)
    out = []
    for seed, amount in ((0, 0.3), (1, 5), (2, 0.0), (3, 1.0), (4, 0.55)):
        lib.manual_seed(seed)
        m = lib.nn.Conv2d(2, 3, 3)
        P.random_unstructured(m, "weight", amount=amount)
        out += [_a(m.weight_mask), _a(m.weight), _a(m.weight_orig)]
    out.append(_a(lib.rand(3)))           # the generator advanced exactly as PyTorch's
    return out


def l1_unstructured(lib):
    P = _prune(lib)
    out = []
    lib.manual_seed(5)
    m = lib.nn.Linear(7, 4)
    P.l1_unstructured(m, "weight", amount=0.25)
    P.l1_unstructured(m, "bias", amount=2)
    out += [_a(m.weight_mask), _a(m.bias_mask), _a(m.bias)]
    scores = lib.arange(28.0).reshape(4, 7).flip(0)
    P.l1_unstructured(m, "weight", amount=3, importance_scores=scores)
    out += [_a(m.weight_mask)]
    return out


def l1_ties(lib):
    """Equal scores straddling the k-th place: PyTorch's topk picks them by its selection
    algorithm's swaps (heap for 64·k <= n, introselect otherwise), not by index."""
    P = _prune(lib)
    out = []
    for n, k in ((5, 2), (10, 3), (20, 7), (200, 3), (1000, 10), (1000, 400), (130, 2)):
        m = lib.nn.Linear(n, 1, bias=False)
        with lib.no_grad():
            m.weight.copy_(lib.tensor((np.arange(n) % 3 == 0).astype(np.float32)[None] + 1))
        P.l1_unstructured(m, "weight", amount=k)
        out.append(_a(m.weight_mask))
    m = lib.nn.Linear(6, 1, bias=False)
    with lib.no_grad():
        m.weight.copy_(lib.tensor([[1.0, -1.0, 0.0, -0.0, 2.0, float("nan")]]))
    P.l1_unstructured(m, "weight", amount=3)
    out.append(_a(m.weight_mask))
    return out


def ln_structured(lib):
    P = _prune(lib)
    out = []
    for seed, n, dim, amount in ((0, 2, 0, 0.5), (1, 1, 1, 2), (2, float("inf"), -1, 0.34),
                                 (3, float("-inf"), 0, 1), (4, "fro", 1, 0.5), (5, 2, 0, 0), (6, "nuc", 0, 2)):
        lib.manual_seed(seed)
        m = lib.nn.Conv2d(3, 4, 2) if isinstance(n, float) or n == 2 or n == 1 else lib.nn.Conv1d(3, 4, 2)
        P.ln_structured(m, "weight", amount=amount, n=n, dim=dim)
        out += [_a(m.weight_mask)]
    m = lib.nn.Linear(3, 6, bias=False)           # equal row norms: the tie is PyTorch's
    with lib.no_grad():
        m.weight.copy_(lib.ones(6, 3))
    P.ln_structured(m, "weight", amount=4, n=2, dim=0)
    out.append(_a(m.weight_mask))
    return out


def random_structured(lib):
    P = _prune(lib)
    out = []
    for seed, dim, amount in ((0, 0, 0.5), (1, 1, 2), (2, -1, 0.4), (3, 2, 1)):
        lib.manual_seed(seed)
        m = lib.nn.Conv2d(3, 4, (2, 5))
        P.random_structured(m, "weight", amount=amount, dim=dim)
        out.append(_a(m.weight_mask))
    out.append(_a(lib.rand(2)))
    return out


def iterative(lib):
    """The tutorial's sequence: random, then structured on what is left, then L1, then remove."""
    P = _prune(lib)
    lib.manual_seed(7)
    m = lib.nn.Conv2d(2, 6, 3)
    P.random_unstructured(m, "weight", amount=0.3)
    out = [_a(m.weight_mask)]
    P.ln_structured(m, "weight", amount=0.5, n=2, dim=0)
    out.append(_a(m.weight_mask))
    P.l1_unstructured(m, "weight", amount=0.2)
    out.append(_a(m.weight_mask))
    P.random_structured(m, "weight", amount=1, dim=1)
    out.append(_a(m.weight_mask))
    hook = [h for h in m._forward_pre_hooks.values() if h._tensor_name == "weight"][0]
    out.append(norm_text([type(h).__name__ for h in hook]))
    out += _layout(m)
    P.remove(m, "weight")
    out += _layout(m) + [_a(m.weight)]
    return out


def structured_on_a_vector(lib):
    """Structured pruning of a 1-D tensor already pruned: PyTorch's channel test is one bool and
    indexing with it adds a leading dim, so the method sees a 1×n tensor and prunes all of it."""
    P = _prune(lib)
    lib.manual_seed(12)
    m = lib.nn.Linear(3, 4)
    P.l1_unstructured(m, "bias", amount=1)
    P.random_structured(m, "bias", amount=1, dim=0)
    out = [_a(m.bias_mask), _a(m.bias)]
    P.l1_unstructured(m, "weight", amount=2)
    P.ln_structured(m, "weight", amount=0, n=1, dim=1)
    return out + [_a(m.weight_mask), norm_text([type(h).__name__ for h in m._forward_pre_hooks.values()])]


def global_unstructured(lib):
    P = _prune(lib)
    lib.manual_seed(8)
    net = lib.nn.Sequential(lib.nn.Linear(6, 5), lib.nn.Linear(5, 3), lib.nn.Linear(3, 2))
    P.random_unstructured(net[1], "weight", amount=4)
    P.global_unstructured([(net[0], "weight"), (net[1], "weight"), (net[2], "bias")],
                          pruning_method=P.L1Unstructured, amount=0.4)
    out = [_a(net[0].weight_mask), _a(net[1].weight_mask), _a(net[2].bias_mask)]
    scores = {(net[2], "weight"): lib.arange(6.0).reshape(2, 3)}
    P.global_unstructured([(net[0], "bias"), (net[2], "weight")], pruning_method=P.RandomUnstructured,
                          importance_scores=scores, amount=3)
    out += [_a(net[0].bias_mask), _a(net[2].weight_mask)]
    out += [norm_text([n for n, _ in net.named_buffers()]), norm_text(list(net.state_dict().keys()))]
    out.append(norm_text([type(h).__name__ for h in net[1]._forward_pre_hooks.values()]))
    return out


def custom_and_identity(lib):
    P = _prune(lib)
    lib.manual_seed(9)
    m = lib.nn.Linear(5, 3)
    P.custom_from_mask(m, "bias", mask=lib.tensor([0, 1, 0]))
    P.identity(m, "weight")
    P.custom_from_mask(m, "weight", mask=lib.tensor([[True, False, True, True, False]] * 3))
    out = [_a(m.bias_mask), _a(m.bias), _a(m.weight_mask), _a(m.weight)] + _layout(m)
    meth = P.L1Unstructured(amount=2)
    out.append(_a(meth.prune(lib.tensor([3.0, -1.0, 0.5, 2.0]))))
    out.append(_a(meth.prune(lib.tensor([3.0, -1.0, 0.5, 2.0]), default_mask=lib.tensor([1.0, 1.0, 1.0, 0.0]),
                             importance_scores=lib.tensor([1.0, 2.0, 3.0, 4.0]))))
    out.append(norm_text((P.is_pruned(m), P.is_pruned(lib.nn.Sequential(m)), P.is_pruned(lib.nn.Linear(2, 2)))))
    return out


def grads_and_forward(lib):
    """The hook recomputes weight = mask * weight_orig before each forward; gradients reach
    weight_orig through the mask; remove keeps the parameter object (optimizers stay valid)."""
    P = _prune(lib)
    lib.manual_seed(10)
    m = lib.nn.Linear(4, 3)
    p = m.weight
    P.l1_unstructured(m, "weight", amount=5)
    x = lib.randn(2, 4)
    with lib.no_grad():
        m.weight_orig.mul_(2.0)           # stale until the next forward recomputes it
    stale = _a(m.weight)
    y = m(x)
    y.pow(2).sum().backward()
    out = [stale, _a(m.weight), _a(y), _a(m.weight_orig.grad), norm_text(m.weight.grad_fn.name()),
           norm_text(m.weight_orig is p)]
    P.remove(m, "weight")
    out += [_a(m.weight), norm_text((m.weight is p, type(m.weight).__name__, m.weight.requires_grad))]
    return out


def errors(lib):
    P = _prune(lib)
    lib.manual_seed(11)
    lin = lib.nn.Linear(3, 2)

    class Wide(P.BasePruningMethod):
        PRUNING_TYPE = "sideways"

        def compute_mask(self, t, default_mask):
            return default_mask

    class NoDim(P.BasePruningMethod):
        PRUNING_TYPE = "structured"

        def compute_mask(self, t, default_mask):
            return default_mask

    def twice(cls):
        m = lib.nn.Linear(3, 2)
        P.identity(m, "weight")
        cls.apply(m, "weight")

    def bad_container():
        a = P.L1Unstructured(1)
        a._tensor_name = "weight"
        b = P.L1Unstructured(1)
        b._tensor_name = "bias"
        P.PruningContainer(a).add_pruning_method(b)

    def rollback():
        m = lib.nn.Linear(3, 2)
        try:
            P.l1_unstructured(m, "weight", amount=7)
        except ValueError:
            pass
        return norm_text([n for n, _ in m.named_parameters()]) + norm_text(list(m._forward_pre_hooks))

    return [
        err(lambda: P.l1_unstructured(lin, "weight", amount=-1)),
        err(lambda: P.l1_unstructured(lin, "weight", amount=1.5)),
        err(lambda: P.random_unstructured(lin, "weight", amount="a")),
        err(lambda: P.l1_unstructured(lib.nn.Linear(3, 2), "weight", amount=7)),
        rollback(),
        err(lambda: P.ln_structured(lib.nn.Linear(3, 2), "bias", amount=1, n=2, dim=0)),
        err(lambda: P.ln_structured(lib.nn.Linear(3, 2), "weight", amount=1, n=2, dim=2)),
        err(lambda: P.random_structured(lib.nn.Linear(3, 2), "weight", amount=3, dim=0)),
        err(lambda: P.ln_structured(lib.nn.Conv2d(1, 2, 2), "weight", amount=1, n="fro", dim=0)),
        err(lambda: P.ln_structured(lib.nn.Linear(3, 2), "weight", amount=1, n="nuc", dim=0)),
        err(lambda: P.remove(lib.nn.Linear(3, 2), "weight")),
        err(lambda: P.global_unstructured([(lin, "weight")], pruning_method=P.LnStructured, amount=1, n=2)),
        err(lambda: P.global_unstructured(5, pruning_method=P.L1Unstructured, amount=1)),
        err(lambda: P.global_unstructured([(lin, "weight")], pruning_method=P.L1Unstructured,
                                          importance_scores=[1], amount=1)),
        err(lambda: P.l1_unstructured(lib.nn.Linear(3, 2), "weight", amount=1, importance_scores=lib.ones(3))),
        err(lambda: P.L1Unstructured(1).prune(lib.ones(3), importance_scores=lib.ones(2))),
        err(lambda: P.custom_from_mask(lib.nn.Linear(3, 2), "bias", mask=lib.ones(3))),
        err(bad_container),
        err(lambda: P.PruningContainer(P.L1Unstructured(1))),
        err(lambda: twice(Wide)),
        err(lambda: twice(NoDim)),
        err(lambda: P.BasePruningMethod()),
        err(lambda: P.l1_unstructured(lib.nn.Linear(3, 2), "nope", amount=1)),
        # the pruned weight is a non-leaf attribute: deepcopy refuses, as PyTorch's does
        err(lambda: copy.deepcopy(P.l1_unstructured(lib.nn.Linear(3, 2), "weight", amount=1))),
    ]


def tutorial(lib):
    """The Pruning Tutorial's LeNet run, its printed lines (parameters, buffers, hooks, pruned
    tensors, state_dict keys, sparsities, a custom method), then a forward and backward."""
    nn, F, P = lib.nn, lib.nn.functional, _prune(lib)
    lines = []

    def show(x):
        lines.append(norm_text(x))

    class LeNet(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv1 = nn.Conv2d(1, 6, 3)
            self.conv2 = nn.Conv2d(6, 16, 3)
            self.fc1 = nn.Linear(16 * 5 * 5, 120)
            self.fc2 = nn.Linear(120, 84)
            self.fc3 = nn.Linear(84, 10)

        def forward(self, x):
            x = F.max_pool2d(F.relu(self.conv1(x)), (2, 2))
            x = F.max_pool2d(F.relu(self.conv2(x)), 2)
            x = x.flatten(start_dim=1)
            return self.fc3(F.relu(self.fc2(F.relu(self.fc1(x)))))

    lib.manual_seed(0)
    model = LeNet()
    module = model.conv1
    show(list(module.named_parameters()))
    show(list(module.named_buffers()))
    P.random_unstructured(module, name="weight", amount=0.3)
    show(list(module.named_parameters()))
    show(list(module.named_buffers()))
    show(module.weight)
    show(_hooks_text(module._forward_pre_hooks))
    P.l1_unstructured(module, name="bias", amount=3)
    show(list(module.named_parameters()))
    show(list(module.named_buffers()))
    show(module.bias)
    show(_hooks_text(module._forward_pre_hooks))
    P.ln_structured(module, name="weight", amount=0.5, n=2, dim=0)
    show(module.weight)
    hook = [h for h in module._forward_pre_hooks.values() if h._tensor_name == "weight"][0]
    show(list(hook))
    show(model.state_dict().keys())
    P.remove(module, "weight")
    show(list(module.named_parameters()))
    show(list(module.named_buffers()))

    new_model = LeNet()
    for _, mod in new_model.named_modules():
        if isinstance(mod, nn.Conv2d):
            P.l1_unstructured(mod, name="weight", amount=0.2)
        elif isinstance(mod, nn.Linear):
            P.l1_unstructured(mod, name="weight", amount=0.4)
    show(dict(new_model.named_buffers()).keys())

    model = LeNet()
    layers = (model.conv1, model.conv2, model.fc1, model.fc2, model.fc3)
    P.global_unstructured([(m, "weight") for m in layers], pruning_method=P.L1Unstructured, amount=0.2)
    for m in layers:
        show(f"Sparsity: {100.0 * float(lib.sum(m.weight == 0)) / float(m.weight.nelement()):.2f}%")
    out = model(lib.randn(2, 1, 28, 28))
    out.sum().backward()
    show(out)
    show(model.fc3.weight_orig.grad[:2, :12])

    class FooBarPruningMethod(P.BasePruningMethod):
        PRUNING_TYPE = "unstructured"

        def compute_mask(self, t, default_mask):
            mask = default_mask.clone()
            mask.flatten()[::2] = 0
            return mask

    model = LeNet()
    FooBarPruningMethod.apply(model.fc3, "bias")
    show(model.fc3.bias_mask)
    return lines


CASES = {f.__name__: f for f in (random_unstructured, l1_unstructured, l1_ties, ln_structured, random_structured,
                                  structured_on_a_vector,
                                  iterative, global_unstructured, custom_and_identity, grads_and_forward, errors,
                                  tutorial)}
