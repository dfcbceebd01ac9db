"""``Module.register_backward_hook`` (deprecated) as PyTorch's: a hook of the node that made the
module's output, so ``grad_input`` are that node's input gradients (a Linear's: bias, input,
weight), with PyTorch's FutureWarning at each call where that differs from the module's
inputs; registering it beside a full backward hook is refused both ways. It used to be a full
hook (``grad_input`` the module's inputs' gradients only) with no warning. Found running the
PyTorch tutorial "nn package" (beginner_source/former_torchies/nnft_tutorial.py). One script
gives ``EXPECTED``, recorded from PyTorch 2.13 (re-run on torch where it is installed)."""

import pytest

import funcgrad

from ._rows import check_transcript, shower, torch_transcript


def _transcript(torch):
    out = []
    show = shower(out, warns=True)
    nn = torch.nn
    seen = []

    def hook(m, gi, go):
        seen.append((type(m).__name__, [None if g is None else tuple(g.shape) for g in gi],
                     [tuple(g.shape) for g in go], [None if g is None else round(g.sum().item(), 4) for g in gi]))

    torch.manual_seed(0)
    for make, x in [(lambda: nn.Linear(3, 2), lambda: torch.randn(4, 3, requires_grad=True)),
                    (lambda: nn.Linear(3, 2, bias=False), lambda: torch.randn(4, 3)),
                    (lambda: nn.ReLU(), lambda: torch.randn(4, 3, requires_grad=True) * 1),
                    (lambda: nn.Conv2d(1, 2, 2), lambda: torch.randn(1, 1, 3, 3, requires_grad=True))]:
        m = make()
        seen.clear()
        h = m.register_backward_hook(hook)
        show(lambda m=m, x=x: m(x()).sum().backward())
        show(lambda: list(seen))
        h.remove()
        seen.clear()
        show(lambda m=m, x=x: (m(x()).sum().backward(), len(seen))[1])
    m = nn.Linear(2, 2)
    m.register_backward_hook(hook)
    show(lambda: m.register_full_backward_hook(hook))
    m = nn.Linear(2, 2)
    m.register_full_backward_hook(hook)
    show(lambda: m.register_backward_hook(hook))
    # a hook's result replaces the node's input gradients
    m = nn.Linear(2, 1)
    m.register_backward_hook(lambda mod, gi, go: tuple(None if g is None else g * 0 for g in gi))
    x = torch.ones(1, 2, requires_grad=True)
    show(lambda: (m(x).sum().backward(), x.grad.tolist(), m.weight.grad.tolist())[1:])
    # a module returning a list: the first tensor's node, and PyTorch's warning
    class Pair(nn.Module):
        def forward(self, a):
            return [a * 2, a + 1]
    p = Pair()
    p.register_backward_hook(hook)
    seen.clear()
    show(lambda: (p(torch.ones(2, requires_grad=True))[0].sum().backward(), list(seen))[1])
    return out


EXPECTED = [
    "None ['FutureWarning: Using a non-full backward hook when the forward contains multiple autograd Nodes is deprecated and will be removed in future versions. This hook will be missing some grad_input. Please use register_full_backward_hook to get the documented behavior.']",
    "[('Linear', [(2,), (4, 3), (3, 2)], [(4, 2)], [8.0, -2.6489, -6.967])]",
    '0',
    "None ['FutureWarning: Using a non-full backward hook when the forward contains multiple autograd Nodes is deprecated and will be removed in future versions. This hook will be missing some grad_input. Please use register_full_backward_hook to get the documented behavior.']",
    "[('Linear', [None, (3, 2)], [(4, 2)], [None, 3.3538])]",
    '0',
    'None',
    "[('ReLU', [(4, 3)], [(4, 3)], [6.0])]",
    '0',
    "None ['FutureWarning: Using a non-full backward hook when the forward contains multiple autograd Nodes is deprecated and will be removed in future versions. This hook will be missing some grad_input. Please use register_full_backward_hook to get the documented behavior.']",
    "[('Conv2d', [(1, 1, 3, 3), (2, 1, 2, 2), (2,)], [(1, 2, 2, 2)], [-5.8204, -8.6781, 8.0])]",
    '0',
    'ERR RuntimeError Cannot use both regular backward hooks and full backward hooks on a single Module. Please use only one of them.',
    'ERR RuntimeError Cannot use both regular backward hooks and full backward hooks on a single Module. Please use only one of them.',
    "([[-0.0, -0.0]], [[0.0, 0.0]]) ['FutureWarning: Using a non-full backward hook when the forward contains multiple autograd Nodes is deprecated and will be removed in future versions. This hook will be missing some grad_input. Please use register_full_backward_hook to get the documented behavior.']",
    "[('Pair', [(2,), None], [(2,)], [4.0, None])] ['FutureWarning: Using non-full backward hooks on a Module that does not return a single Tensor or a tuple of Tensors is deprecated and will be removed in future versions. This hook will be missing some of the grad_output. Please use register_full_backward_hook to get the documented behavior.']",
]


def test_backward_hook_as_pytorch():
    check_transcript(_transcript(funcgrad), EXPECTED)


@pytest.mark.torch
def test_recorded_transcript_is_pytorchs():
    check_transcript(torch_transcript(_transcript), EXPECTED)
