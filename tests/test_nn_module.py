"""nn.Module: registration, traversal, reprs, state_dict round trip and errors, modes, dtype moves,
hooks, Parameter semantics, containers."""

import copy
import pickle
from collections import OrderedDict

import numpy as np
import pytest

import funcgrad as torch
from funcgrad import nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(4, 3)
        self.block = nn.Sequential(nn.ReLU(), nn.Linear(3, 2, bias=False))
        self.register_buffer("steps", torch.zeros(1))
        self.register_buffer("scratch", torch.zeros(2), persistent=False)

    def forward(self, x):
        return self.block(self.fc1(x))


# ---- Parameter ------------------------------------------------------------------------------------
def test_parameter_is_leaf_sharing_storage():
    t = torch.zeros(3)
    p = nn.Parameter(t)
    assert isinstance(p, torch.Tensor) and p.is_leaf and p.requires_grad and p.grad_fn is None
    t[0] = 5.0  # shares the storage cell with the data it was built from
    assert p[0].item() == 5.0
    assert not nn.Parameter(torch.zeros(2), requires_grad=False).requires_grad
    assert repr(nn.Parameter(torch.ones(2))) == "Parameter containing:\ntensor([1., 1.], requires_grad=True)"
    assert type(p * 2) is torch.Tensor


def test_parameter_deepcopy_and_pickle():
    p = nn.Parameter(torch.tensor([1.0, 2.0]))
    q = copy.deepcopy(p)
    assert type(q) is nn.Parameter and q.requires_grad and q is not p
    r = pickle.loads(pickle.dumps(p))
    assert type(r) is nn.Parameter and r.tolist() == [1.0, 2.0]


def test_parameter_integer_dtype_error():
    with pytest.raises(RuntimeError, match="only Tensors of floating point"):
        nn.Parameter(torch.tensor([1, 2]))


# ---- registration --------------------------------------------------------------------------------
def test_registration_and_traversal():
    net = Net()
    assert [n for n, _ in net.named_parameters()] == ["fc1.weight", "fc1.bias", "block.1.weight"]
    assert [n for n, _ in net.named_buffers()] == ["steps", "scratch"]
    assert [n for n, _ in net.named_children()] == ["fc1", "block"]
    assert [n for n, _ in net.named_modules()] == ["", "fc1", "block", "block.0", "block.1"]
    assert len(list(net.parameters(recurse=False))) == 0
    assert list(net.state_dict()) == ["steps", "fc1.weight", "fc1.bias", "block.1.weight"]
    assert net.get_submodule("block.1") is net.block[1]
    assert net.get_parameter("fc1.bias") is net.fc1.bias
    assert "fc1" in dir(net) and "steps" in dir(net)
    del net.fc1
    assert "fc1" not in dict(net.named_children())


def test_shared_parameters_are_deduplicated():
    a = nn.Linear(2, 2)
    seq = nn.Sequential(a, a)
    assert len(list(seq.parameters())) == 2
    assert len(list(seq.named_parameters(remove_duplicate=False))) == 4
    assert len(list(seq.modules())) == 2


def test_setattr_errors_match_pytorch():
    net = Net()
    with pytest.raises(TypeError, match=r"cannot assign 'int' as child module 'fc1' \(funcgrad.nn.Module or None expected\)"):
        net.fc1 = 3
    with pytest.raises(TypeError, match="cannot assign 'funcgrad.FloatTensor' as parameter 'weight'"):
        net.fc1.weight = torch.zeros(3, 4)
    with pytest.raises(TypeError, match="cannot assign 'int' as buffer 'steps'"):
        net.steps = 3
    with pytest.raises(KeyError, match="attribute 'fc1' already exists"):
        net.register_buffer("fc1", torch.zeros(1))
    with pytest.raises(KeyError, match="parameter name can"):
        net.register_parameter("a.b", None)
    with pytest.raises(AttributeError, match="'Net' object has no attribute 'nope'"):
        net.nope
    with pytest.raises(NotImplementedError, match='Module \\[Module\\] is missing the required "forward" function'):
        nn.Module()(1)
    net.fc1.bias = None  # allowed: removes the parameter
    assert net.fc1.bias is None
    net.steps = torch.ones(1)  # replacing a buffer with a tensor keeps it a buffer
    assert "steps" in net._buffers


def test_buffer_class_registers():
    m = nn.Module()
    m.b = nn.Buffer(torch.zeros(2))
    m.c = nn.Buffer(torch.zeros(2), persistent=False)
    assert list(m.state_dict()) == ["b"] and [n for n, _ in m.named_buffers()] == ["b", "c"]


# ---- repr --------------------------------------------------------------------------------------
def test_repr_matches_pytorch():
    model = nn.Sequential(nn.Linear(784, 256), nn.ReLU())
    assert repr(model) == ("Sequential(\n  (0): Linear(in_features=784, out_features=256, bias=True)\n"
                           "  (1): ReLU()\n)")
    assert repr(Net()) == ("Net(\n  (fc1): Linear(in_features=4, out_features=3, bias=True)\n  (block): Sequential(\n"
                           "    (0): ReLU()\n    (1): Linear(in_features=3, out_features=2, bias=False)\n  )\n)")
    assert repr(nn.ModuleList([nn.ReLU(), nn.ReLU(), nn.Tanh()])) == \
        "ModuleList(\n  (0-1): 2 x ReLU()\n  (2): Tanh()\n)"
    assert repr(nn.Sequential()) == "Sequential()"


# ---- state dict -------------------------------------------------------------------------------
def test_state_dict_round_trip_in_place():
    a, b = Net(), Net()
    sd = a.state_dict()
    assert isinstance(sd, OrderedDict) and not sd["fc1.weight"].requires_grad
    w = b.fc1.weight
    res = b.load_state_dict(sd)
    assert repr(res) == "<All keys matched successfully>"
    assert b.fc1.weight is w  # copied in place: optimizers holding the Parameter keep working
    np.testing.assert_array_equal(b.fc1.weight.detach().numpy(), a.fc1.weight.detach().numpy())
    sd["fc1.bias"][0] = 123.0  # a state dict shares storage with the module (as PyTorch)
    assert a.fc1.bias[0].item() == 123.0


def test_load_state_dict_errors_leave_module_unchanged():
    m = nn.Linear(4, 2)
    before = m.weight.detach().numpy().copy()
    with pytest.raises(RuntimeError) as e:
        m.load_state_dict({"weight": torch.zeros(3, 4), "foo": torch.zeros(1)})
    assert str(e.value) == (
        'Error(s) in loading state_dict for Linear:\n\tMissing key(s) in state_dict: "bias". \n\t'
        'Unexpected key(s) in state_dict: "foo". \n\tsize mismatch for weight: copying a param with shape '
        "funcgrad.Size([3, 4]) from checkpoint, the shape in current model is funcgrad.Size([2, 4]).")
    np.testing.assert_array_equal(m.weight.detach().numpy(), before)
    # a partly valid dict with one bad shape changes nothing either
    with pytest.raises(RuntimeError, match="size mismatch for bias"):
        m.load_state_dict({"weight": torch.zeros(2, 4), "bias": torch.zeros(3)})
    np.testing.assert_array_equal(m.weight.detach().numpy(), before)


def test_load_state_dict_non_strict_and_assign():
    m = nn.Linear(4, 2)
    res = m.load_state_dict({"weight": torch.ones(2, 4)}, strict=False)
    assert res.missing_keys == ["bias"] and res.unexpected_keys == []
    assert repr(res) == "_IncompatibleKeys(missing_keys=['bias'], unexpected_keys=[])"
    assert m.weight.sum().item() == 8.0
    m.load_state_dict({"weight": torch.zeros(2, 4, dtype=torch.float64), "bias": torch.zeros(2)}, assign=True)
    assert isinstance(m.weight, nn.Parameter) and m.weight.dtype == torch.float64
    bn = nn.BatchNorm1d(3)  # old checkpoints without num_batches_tracked load (PyTorch's upgrade rule)
    sd = {k: v for k, v in nn.BatchNorm1d(3).state_dict().items() if k != "num_batches_tracked"}
    assert repr(bn.load_state_dict(sd)) == "<All keys matched successfully>"


def test_load_keeps_optimizer_references_and_dtype():
    m = nn.Linear(2, 2)
    w = m.weight
    m.load_state_dict({"weight": torch.ones(2, 2, dtype=torch.float64), "bias": torch.zeros(2)})
    assert m.weight is w and w.dtype == torch.float32 and w.sum().item() == 4.0


# ---- modes, grads, dtype moves -------------------------------------------------------------------
def test_train_eval_requires_grad_zero_grad():
    net = Net()
    assert net.training and net.block[0].training
    net.eval()
    assert not net.training and not net.block[1].training
    net.train()
    assert net.block[1].training
    with pytest.raises(ValueError, match="training mode is expected to be boolean"):
        net.train("yes")
    net(torch.ones(1, 4)).sum().backward()
    assert net.fc1.weight.grad is not None
    net.zero_grad(set_to_none=False)
    assert net.fc1.weight.grad.abs().sum().item() == 0.0
    net.zero_grad()
    assert net.fc1.weight.grad is None
    net.requires_grad_(False)
    assert not any(p.requires_grad for p in net.parameters())


def test_to_double_keeps_parameter_objects():
    net = Net()
    w = net.fc1.weight
    net(torch.ones(1, 4)).sum().backward()
    out = net.double()
    assert out is net and net.fc1.weight is w and w.dtype == torch.float64
    assert w.grad.dtype == torch.float64 and isinstance(w, nn.Parameter) and w.requires_grad
    assert net.steps.dtype == torch.float64
    net.to(torch.float32)
    assert w.dtype == torch.float32
    net.to("cpu")
    bn = nn.BatchNorm1d(2).half()
    assert bn.num_batches_tracked.dtype == torch.int64 and bn.running_mean.dtype == torch.float16
    with pytest.raises(TypeError, match="nn.Module.to only accepts floating point"):
        net.to(torch.int64)


def test_apply_and_deepcopy():
    net = Net()
    seen = []
    net.apply(lambda m: seen.append(type(m).__name__))
    assert seen == ["Linear", "ReLU", "Linear", "Sequential", "Net"]
    net2 = copy.deepcopy(net)
    assert net2.fc1.weight is not net.fc1.weight
    np.testing.assert_array_equal(net2.fc1.weight.detach().numpy(), net.fc1.weight.detach().numpy())
    assert isinstance(net2.fc1.weight, nn.Parameter)


# ---- hooks -------------------------------------------------------------------------------------------
def _fixed_linear():
    m = nn.Linear(3, 2)
    with torch.no_grad():
        m.weight.copy_(torch.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]))
        m.bias.zero_()
    return m


def test_forward_hooks():
    m = _fixed_linear()
    h1 = m.register_forward_pre_hook(lambda mod, args: (args[0] * 2,))
    h2 = m.register_forward_hook(lambda mod, args, out: out + 1)
    assert m(torch.ones(1, 3)).tolist() == [[13.0, 31.0]]
    h1.remove()
    h2.remove()
    assert m(torch.ones(1, 3)).tolist() == [[6.0, 15.0]]
    calls = []
    m.register_forward_hook(lambda mod, args, kwargs, out: calls.append(sorted(kwargs)), with_kwargs=True)
    m.register_forward_pre_hook(lambda mod, args, kwargs: (args, kwargs), with_kwargs=True)
    m(torch.ones(1, 3))
    assert calls == [[]]


def test_full_backward_hooks_values_match_pytorch():
    m = _fixed_linear()
    log = []
    m.register_forward_pre_hook(lambda mod, args: (args[0] * 2,))
    m.register_full_backward_pre_hook(lambda mod, go: log.append(("pre", go[0].tolist())))
    m.register_full_backward_hook(lambda mod, gi, go: log.append(
        ("bw", None if gi[0] is None else gi[0].tolist(), go[0].tolist())))
    x = torch.ones(1, 3, requires_grad=True)
    y = m(x)
    assert y.grad_fn.name() == "BackwardHookFunctionBackward"
    y.sum().backward()
    # values PyTorch 2 prints for the same script
    assert log == [("pre", [[1.0, 1.0]]), ("bw", [[5.0, 7.0, 9.0]], [[1.0, 1.0]])]
    assert x.grad.tolist() == [[10.0, 14.0, 18.0]]
    log.clear()
    m(torch.ones(1, 3)).sum().backward()  # no input needs a grad: grad_input is (None,)
    assert log == [("pre", [[1.0, 1.0]]), ("bw", None, [[1.0, 1.0]])]


def test_full_backward_hook_can_replace_grad_input():
    m = _fixed_linear()
    m.register_full_backward_hook(lambda mod, gi, go: (gi[0] * 0,))
    x = torch.ones(1, 3, requires_grad=True)
    m(x).sum().backward()
    assert x.grad.tolist() == [[0.0, 0.0, 0.0]]
    assert m.weight.grad is not None


# ---- containers -------------------------------------------------------------------------------------
def test_sequential_api():
    s = nn.Sequential(nn.ReLU(), nn.Linear(2, 2), nn.Tanh())
    assert len(s) == 3 and isinstance(s[-1], nn.Tanh)
    assert isinstance(s[0:2], nn.Sequential) and len(s[0:2]) == 2
    with pytest.raises(IndexError, match="index 5 is out of range"):
        s[5]
    s.append(nn.Sigmoid())
    s.insert(0, nn.Identity())
    s.extend([nn.ReLU()])
    assert [type(m).__name__ for m in s] == ["Identity", "ReLU", "Linear", "Tanh", "Sigmoid", "ReLU"]
    del s[0]
    assert list(s._modules) == ["0", "1", "2", "3", "4"]
    named = nn.Sequential(OrderedDict([("fc", nn.Linear(1, 1))]))
    assert repr(named) == "Sequential(\n  (fc): Linear(in_features=1, out_features=1, bias=True)\n)"
    with pytest.raises(TypeError, match="int is not a Module subclass"):
        nn.Sequential(1)


def test_module_list_dict_parameter_list_dict():
    ml = nn.ModuleList([nn.Linear(2, 2)])
    ml.append(nn.Linear(2, 2))
    ml += [nn.ReLU()]
    assert len(ml) == 3 and len(list(ml.parameters())) == 4
    md = nn.ModuleDict({"a": nn.Linear(1, 1)})
    md["b"] = nn.ReLU()
    assert list(md.keys()) == ["a", "b"] and "a" in md
    pl = nn.ParameterList([torch.zeros(2), nn.Parameter(torch.ones(2))])
    assert all(isinstance(p, nn.Parameter) for p in pl)
    assert [n for n, _ in pl.named_parameters()] == ["0", "1"]
    pd = nn.ParameterDict({"w": torch.zeros(2)})
    assert isinstance(pd["w"], nn.Parameter) and list(pd.state_dict()) == ["w"]


def test_register_module_forward_hook_global():
    from funcgrad.nn.module import register_module_forward_hook
    seen = []
    h = register_module_forward_hook(lambda m, a, o: seen.append(type(m).__name__))
    try:
        nn.Sequential(nn.ReLU())(torch.ones(1))
    finally:
        h.remove()
    assert seen == ["ReLU", "Sequential"]
