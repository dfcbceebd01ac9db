"""A tour of funcgrad's autograd, printing the seed tutorials' examples with PyTorch's output.

Run: ``python -m funcgrad.examples.autograd_tour``
"""

from __future__ import annotations

import funcgrad as torch


def main() -> None:
    print("# Leaf tensors and grad_fn")
    x = torch.ones(2, 2, requires_grad=True)
    print(x)
    y = torch.sigmoid(x)
    print(y)
    print("x.is_leaf:", x.is_leaf, "| y.is_leaf:", y.is_leaf, "| y.grad_fn:", y.grad_fn.name())

    print("\n# out = mean(3 (x + 2)^2); out.backward()")
    y = x + 2
    z = y * y * 3
    out = z.mean()
    print(z, out, sep="\n")
    out.backward()
    print("x.grad =", x.grad)
    x.sum().backward()
    print("accumulated after x.sum().backward():", x.grad)
    x.grad.data.zero_()
    x.sum().backward()
    print("after x.grad.data.zero_() and x.sum().backward():", x.grad)

    print("\n# Vector-Jacobian product: z.backward(v)")
    x = torch.tensor([1.0, 2.0, 3.0, 4.0], requires_grad=True)
    z = (2 * x).view(2, 2)
    z.backward(torch.tensor([[1.0, 0.1], [0.01, 0.001]]))
    print("x.grad =", x.grad)

    print("\n# retain_graph=True: gradients accumulate")
    inp = torch.eye(5, requires_grad=True)
    out = (inp + 1).pow(2)
    out.backward(torch.ones_like(inp), retain_graph=True)
    print("first call\n", inp.grad, sep="")
    out.backward(torch.ones_like(inp), retain_graph=True)
    print("second call\n", inp.grad, sep="")

    print("\n# no_grad cuts the graph: d/dx (x^2 + no_grad(x^3)) = 2")
    x = torch.tensor(1.0, requires_grad=True)
    y1 = x ** 2
    with torch.no_grad():
        y2 = x ** 3
    (y1 + y2).backward()
    print("x.grad =", x.grad, "| y2.requires_grad =", y2.requires_grad)

    print("\n# .data changes values without the graph")
    x = torch.ones(1, requires_grad=True)
    y = 2 * x
    x.data *= 100
    y.backward()
    print("x =", x, "| x.grad =", x.grad)

    print("\n# detach() shares storage and the version counter")
    x = torch.tensor([1.0, 2.0], requires_grad=True)
    y = x * x
    u = y.detach()
    z = y * x
    u[0] = 5.0
    print("y =", y)
    try:
        z.sum().backward()
    except RuntimeError as e:
        print("RuntimeError:", str(e).split(". Hint")[0])

    print("\n# Higher-order derivatives with create_graph=True")
    x = torch.tensor(3.0, requires_grad=True)
    (g,) = torch.autograd.grad(x ** 3, x, create_graph=True)
    (gg,) = torch.autograd.grad(g, x)
    print("d/dx x^3 at 3 =", g.item(), "| d2/dx2 =", gg.item())


if __name__ == "__main__":
    main()
