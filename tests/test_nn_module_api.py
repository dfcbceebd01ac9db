"""``nn.Module``'s API beyond the forward: ``set_submodule``, ``get_extra_state``/``set_extra_state``
(the ``_extra_state`` key), ``register_state_dict_pre_hook``, ``register_load_state_dict_pre_hook``,
the keys ``load_state_dict(strict=False)`` gives back, and ``Module.compile()``. One script runs on
funcgrad and gives ``EXPECTED``, its transcript recorded from PyTorch 2.13 (where torch is installed
the script runs on it too, so the recording stays PyTorch's)."""

import copy
import io

import pytest

import funcgrad

from ._rows import check_transcript, shower, torch_transcript


def _transcript(torch):
    nn, out = torch.nn, []

    show = shower(out)

    torch.manual_seed(0)
    m = nn.Sequential(nn.Linear(2, 3), nn.Sequential(nn.ReLU(), nn.Linear(3, 1)))
    show(lambda: (m.set_submodule("1.0", nn.Tanh()), str(m))[1])
    show(lambda: (m.set_submodule("0", nn.Linear(2, 3)), type(m[0]).__name__)[1])
    show(lambda: m.set_submodule("", nn.Tanh()))
    show(lambda: m.set_submodule("0", 3))
    show(lambda: m.set_submodule("1.zz", nn.Tanh(), strict=True))
    show(lambda: m.set_submodule("0.weight", nn.Tanh()))
    show(lambda: m.set_submodule("5.x", nn.Tanh()))
    show(lambda: (m.set_submodule("1.new", nn.Tanh()), list(dict(m.named_modules())))[1])

    class WithExtra(nn.Module):
        def __init__(self):
            super().__init__()
            self.lin, self.count = nn.Linear(1, 1), 3

        def get_extra_state(self):
            return {"count": self.count}

        def set_extra_state(self, st):
            self.count = st["count"]

    sd = nn.Sequential(WithExtra()).state_dict()
    show(lambda: list(sd))
    show(lambda: sd["0._extra_state"])
    b = nn.Sequential(WithExtra())
    b[0].count = 0
    show(lambda: (b.load_state_dict(sd), b[0].count))
    no_extra = {k: v for k, v in sd.items() if not k.endswith("_extra_state")}
    show(lambda: b.load_state_dict(no_extra))
    show(lambda: b.load_state_dict(no_extra, strict=False))
    show(lambda: nn.Sequential(nn.Linear(1, 1)).load_state_dict(
        {"0.weight": torch.ones(1, 1), "0.bias": torch.ones(1), "0._extra_state": 1}))
    show(lambda: nn.Linear(1, 1).load_state_dict({"weight": torch.ones(1, 1), "extra": torch.ones(1)}, strict=False))
    show(lambda: nn.Linear(1, 1).get_extra_state())

    calls = []
    seq = nn.Sequential(nn.Linear(1, 1))
    for mod in (seq, seq[0]):
        mod.register_state_dict_pre_hook(lambda mod, prefix, keep_vars: calls.append((type(mod).__name__, prefix,
                                                                                       keep_vars)))
    seq.state_dict(keep_vars=True)
    show(lambda: calls)

    def rename(mod, state_dict, prefix, local_metadata, strict, missing, unexpected, errors):
        calls.append(("load", prefix, strict, sorted(state_dict)))
        if prefix + "w" in state_dict:  # an old checkpoint's name
            state_dict[prefix + "weight"] = state_dict.pop(prefix + "w")
    calls.clear()
    old = nn.Sequential(nn.Linear(1, 1))
    old[0].register_load_state_dict_pre_hook(rename)
    ckpt = {"0.w": torch.full((1, 1), 2.0), "0.bias": torch.zeros(1)}
    show(lambda: (old.load_state_dict(ckpt, strict=False), old[0].weight.item(), calls, sorted(ckpt)))

    def refuse(mod, state_dict, prefix, local_metadata, strict, missing, unexpected, errors):
        errors.append("nope")
    lin = nn.Linear(1, 1)
    lin.register_load_state_dict_pre_hook(refuse)
    show(lambda: lin.load_state_dict(nn.Linear(1, 1).state_dict()))

    torch.manual_seed(0)
    net = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2))
    x, y = torch.randn(5, 4), torch.randint(0, 2, (5,))
    ref = net(x)
    show(lambda: net.compile())
    show(lambda: bool(torch.allclose(net(x), ref)))
    opt = torch.optim.SGD(net.parameters(), lr=0.1)
    losses = []
    for _ in range(3):
        opt.zero_grad()
        loss = nn.functional.cross_entropy(net(x), y)
        loss.backward()
        opt.step()
        losses.append(round(loss.item(), 4))
    show(lambda: losses)
    show(lambda: (list(net.state_dict())[:2], net._compiled_call_impl is not None,
                  copy.deepcopy(net)._compiled_call_impl))
    buf = io.BytesIO()
    torch.save(net, buf)
    buf.seek(0)
    show(lambda: torch.load(buf, weights_only=False)._compiled_call_impl)
    show(lambda: str(net)[:40])
    return out


EXPECTED = [
    "Sequential(\n  (0): Linear(in_features=2, out_features=3, bias=True)\n  (1): Sequential(\n    (0): Tanh()\n"
    "    (1): Linear(in_features=3, out_features=1, bias=True)\n  )\n)",
    "Linear",
    "ERR ValueError Cannot set the submodule without a target name!",
    "ERR ValueError `module` is not an nn.Module, found <class 'int'>",
    "ERR AttributeError Sequential has no attribute `zz`",
    "ERR AttributeError `weight` is not an nn.Module",
    "ERR AttributeError Sequential has no attribute `5`",
    "['', '0', '1', '1.0', '1.1', '1.new']",
    "['0._extra_state', '0.lin.weight', '0.lin.bias']",
    "{'count': 3}",
    "(<All keys matched successfully>, 3)",
    'ERR RuntimeError Error(s) in loading state_dict for Sequential:\n\tMissing key(s) in state_dict: "0._extra_state". ',
    "_IncompatibleKeys(missing_keys=['0._extra_state'], unexpected_keys=[])",
    'ERR RuntimeError Error(s) in loading state_dict for Sequential:\n\tUnexpected key(s) in state_dict: '
    '"0._extra_state". ',
    "_IncompatibleKeys(missing_keys=['bias'], unexpected_keys=['extra'])",
    "ERR RuntimeError Reached a code path in Module.get_extra_state() that should never be called. Please file an "
    "issue at https://github.com/pytorch/pytorch/issues/new?template=bug-report.yml to report this bug.",
    "[('Sequential', '', True), ('Linear', '0.', True)]",
    "(<All keys matched successfully>, 2.0, [('load', '0.', True, ['0.bias', '0.w'])], ['0.bias', '0.w'])",
    "ERR RuntimeError Error(s) in loading state_dict for Linear:\n\tnope",
    "None",
    "True",
    "[0.7316, 0.6933, 0.6625]",
    "(['0.weight', '0.bias'], True, None)",
    "None",
    "Sequential(\n  (0): Linear(in_features=4,",
]


def _compiled_transcript(torch):
    """``torch.compile(module)``: PyTorch's OptimizedModule, the original its ``_orig_mod``."""
    torch.manual_seed(0)
    m = torch.nn.Sequential(torch.nn.Linear(2, 2), torch.nn.Tanh())
    c = torch.compile(m)
    x = torch.randn(3, 2)
    c.note = "set through"
    c.eval()
    out = [str(c), type(c).__name__, isinstance(c, torch.nn.Module), c._orig_mod is m, len(c),
           list(dict(c.named_parameters())), list(c.state_dict()), getattr(m, "note", None), m.training,
           c.training, bool(torch.allclose(c(x), m(x))), type(copy.deepcopy(c)).__name__,
           list(copy.deepcopy(c).state_dict())]
    c.train()
    out.append(m.training)
    del c.note
    out.append(hasattr(m, "note"))
    ref = torch.nn.Sequential(torch.nn.Linear(2, 2), torch.nn.Tanh())
    out.append(repr(torch.compile(ref).load_state_dict(c.state_dict())))
    return out


COMPILED_EXPECTED = [
    "OptimizedModule(\n  (_orig_mod): Sequential(\n    (0): Linear(in_features=2, out_features=2, bias=True)\n"
    "    (1): Tanh()\n  )\n)", "OptimizedModule", True, True, 2, ["_orig_mod.0.weight", "_orig_mod.0.bias"],
    ["_orig_mod.0.weight", "_orig_mod.0.bias"], "set through", False, False, True, "OptimizedModule",
    ["_orig_mod.0.weight", "_orig_mod.0.bias"], True, False, "<All keys matched successfully>"]


def test_module_compile_is_one_program_and_not_a_prefix():
    net = funcgrad.nn.Linear(3, 2)
    x = funcgrad.randn(4, 3)
    eager = net(x)
    net.compile()
    assert isinstance(net._compiled_call_impl, funcgrad._jit.module.OptimizedModule)
    for _ in range(3):
        assert funcgrad.equal(net(x), eager)
    assert list(net.state_dict()) == ["weight", "bias"] and str(net) == "Linear(in_features=3, out_features=2, bias=True)"


def _loading_transcript(torch):
    """``load_state_dict``'s extension points: a ``_load_from_state_dict`` override (what it is
    given, renaming an old key), post-hooks (their order, the keys each sees, one that accepts a
    checkpoint by clearing the missing keys, one that returns a value), and the method called
    on its own."""
    nn, out = torch.nn, []

    show = shower(out)

    class Renamed(nn.Module):  # a checkpoint's "old_scale" is now "scale"
        def __init__(self):
            super().__init__()
            self.lin = nn.Linear(2, 2)
            self.register_buffer("scale", torch.ones(2))

        def _load_from_state_dict(self, state_dict, prefix, local_metadata, strict, missing_keys,
                                  unexpected_keys, error_msgs):
            out.append(f"override {prefix!r} {sorted(state_dict)} {local_metadata} {strict}")
            if prefix + "old_scale" in state_dict:
                state_dict[prefix + "scale"] = state_dict.pop(prefix + "old_scale")
            if prefix + "bad" in state_dict:
                error_msgs.append("bad entry")
            super()._load_from_state_dict(state_dict, prefix, local_metadata, strict, missing_keys,
                                          unexpected_keys, error_msgs)

    class Outer(nn.Module):
        def __init__(self):
            super().__init__()
            self.a = Renamed()
            self.b = nn.Linear(2, 1)

    torch.manual_seed(0)
    m = Outer()
    m.a.register_load_state_dict_pre_hook(lambda mod, sd, prefix, *rest: out.append(f"pre {prefix!r}"))
    handles = [mod.register_load_state_dict_post_hook(
        lambda mod, keys, n=n: out.append(f"post {n!r} {keys.missing_keys} {keys.unexpected_keys}"))
        for n, mod in m.named_modules()]
    sd = {k: v + 1 for k, v in m.state_dict().items()}
    sd["a.old_scale"] = sd.pop("a.scale") * 3
    show(lambda: m.load_state_dict(sd))
    show(lambda: (m.a.scale.tolist(), m.b.bias.tolist() == sd["b.bias"].tolist()))
    partial = {k: v for k, v in sd.items() if k != "b.bias"}
    show(lambda: m.load_state_dict(partial))
    show(lambda: m.load_state_dict(partial, strict=False))
    show(lambda: m.load_state_dict({**sd, "a.bad": torch.zeros(1)}))
    show(lambda: m.load_state_dict(sd, assign=True))
    for h in handles:
        h.remove()

    def accept(mod, keys):  # a hook that takes a checkpoint without "b.bias"
        keys.missing_keys.clear()
    m.b.register_load_state_dict_post_hook(accept)
    show(lambda: m.load_state_dict({k: v * 0 for k, v in partial.items()}))
    show(lambda: (m.b.weight.tolist(), m.a.scale.tolist()))
    m.register_load_state_dict_post_hook(lambda mod, keys: "a value")
    show(lambda: m.load_state_dict(sd))

    lin = nn.Linear(2, 1)  # called on its own, it copies at once
    missing, unexpected, errors = [], [], []
    lin._load_from_state_dict({"w.weight": torch.ones(1, 2), "w.extra": torch.ones(1)}, "w.", {}, True,
                              missing, unexpected, errors)
    show(lambda: (lin.weight.tolist(), missing, unexpected, errors))
    bn = nn.BatchNorm1d(2)  # a checkpoint from before num_batches_tracked (version 1)
    old = bn.state_dict()
    del old["num_batches_tracked"]
    old._metadata = {"": {"version": 1}}
    show(lambda: (bn.load_state_dict(old), int(bn.num_batches_tracked)))
    return out


LOADING_EXPECTED = [
    "override 'a.' ['a.lin.bias', 'a.lin.weight', 'a.old_scale'] {} True",
    "pre 'a.'",
    "post 'a.lin' [] []",
    "post 'a' [] []",
    "post 'b' [] []",
    "post '' [] []",
    '<All keys matched successfully>',
    '([6.0, 6.0], True)',
    "override 'a.' ['a.lin.bias', 'a.lin.weight', 'a.old_scale'] {} True",
    "pre 'a.'",
    "post 'a.lin' [] []",
    "post 'a' [] []",
    "post 'b' ['b.bias'] []",
    "post '' ['b.bias'] []",
    'ERR RuntimeError Error(s) in loading state_dict for Outer:\n\tMissing key(s) in state_dict: "b.bias". ',
    "override 'a.' ['a.lin.bias', 'a.lin.weight', 'a.old_scale'] {} True",
    "pre 'a.'",
    "post 'a.lin' [] []",
    "post 'a' [] []",
    "post 'b' ['b.bias'] []",
    "post '' ['b.bias'] []",
    "_IncompatibleKeys(missing_keys=['b.bias'], unexpected_keys=[])",
    "override 'a.' ['a.bad', 'a.lin.bias', 'a.lin.weight', 'a.old_scale'] {} True",
    "pre 'a.'",
    "post 'a.lin' [] ['a.bad']",
    "post 'a' [] ['a.bad']",
    "post 'b' [] ['a.bad']",
    "post '' [] ['a.bad']",
    'ERR RuntimeError Error(s) in loading state_dict for Oute'
    'r:\n\tUnexpected key(s) in state_dict: "a.bad". \n\tbad entry',
    "override 'a.' ['a.lin.bias', 'a.lin.weight', 'a.old_scale'] {'assign_to_params_buffers': True} True",
    "pre 'a.'",
    "post 'a.lin' [] []",
    "post 'a' [] []",
    "post 'b' [] []",
    "post '' [] []",
    '<All keys matched successfully>',
    "override 'a.' ['a.lin.bias', 'a.lin.weight', 'a.old_scale'] {} True",
    "pre 'a.'",
    '<All keys matched successfully>',
    '([[0.0, 0.0]], [0.0, 0.0])',
    "override 'a.' ['a.lin.bias', 'a.lin.weight', 'a.old_scale'] {} True",
    "pre 'a.'",
    'ERR AssertionError Hooks registered with ``register_load_state_dict_post_hook`` are not expec'
    'ted to return new values, if incompatible_keys need to be modified, it should be done inplace.',
    "([[1.0, 1.0]], ['w.bias'], ['w.extra'], [])",
    '(<All keys matched successfully>, 0)',
]


# each script's transcript: funcgrad's is the one recorded from PyTorch (and torch's still is)
TRANSCRIPTS = {"module_api": (_transcript, EXPECTED), "compiled_module": (_compiled_transcript, COMPILED_EXPECTED),
               "load_state_dict_extension_points": (_loading_transcript, LOADING_EXPECTED)}


@pytest.mark.parametrize("name", TRANSCRIPTS)
def test_transcript_as_pytorch(name):
    script, expected = TRANSCRIPTS[name]
    check_transcript(script(funcgrad), expected)


@pytest.mark.torch
@pytest.mark.parametrize("name", TRANSCRIPTS)
def test_recorded_transcript_is_pytorchs(name):
    script, expected = TRANSCRIPTS[name]
    check_transcript(torch_transcript(script), expected)


def test_refused_load_with_post_hooks_changes_nothing():
    """PyTorch leaves a refused load's copies in place (its post-hooks saw them); funcgrad undoes
    them, so a refused load changes nothing here either."""
    nn = funcgrad.nn
    m = nn.Sequential(nn.Linear(2, 2), nn.Linear(2, 1))
    seen = []
    m[1].register_load_state_dict_post_hook(lambda mod, keys: seen.append(mod.weight.tolist()))
    before = {k: v.clone() for k, v in m.state_dict().items()}
    partial = {k: v + 1 for k, v in before.items() if k != "1.bias"}
    with pytest.raises(RuntimeError, match='Missing key'):
        m.load_state_dict(partial)
    assert seen == [(before["1.weight"] + 1).tolist()]  # the hook saw the loaded weights
    assert all(funcgrad.equal(v, before[k]) for k, v in m.state_dict().items())


def test_lazy_modules_take_a_checkpoints_shapes():
    """PyTorch's _lazy_load_hook: a lazy module loaded before its first call takes each
    parameter's and buffer's shape from the checkpoint (a LazyBatchNorm1d's running stats are
    UninitializedBuffers: they were a size mismatch). Values as torch 2.13 gives them."""
    nn = funcgrad.nn
    funcgrad.manual_seed(0)
    bn = nn.BatchNorm1d(3)
    with funcgrad.no_grad():
        bn.running_mean += 1
    lazy = nn.LazyBatchNorm1d()
    assert repr(lazy.load_state_dict(bn.state_dict())) == "<All keys matched successfully>"
    assert lazy.running_mean.tolist() == [1.0, 1.0, 1.0] and tuple(lazy.weight.shape) == (3,)
    assert type(lazy.running_mean).__name__ == "Tensor"
    assert tuple(lazy(funcgrad.ones(2, 3)).shape) == (2, 3) and type(lazy).__name__ == "BatchNorm1d"
    conv = nn.LazyConv2d(4, 3)
    conv.load_state_dict(nn.Conv2d(2, 4, 3).state_dict())
    assert tuple(conv.weight.shape) == (4, 2, 3, 3)
