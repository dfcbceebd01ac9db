"""Write the tutorial notebooks from the cell sources below, then execute them to fill outputs.

Run from the repository root::

    python notebooks/_build.py             # write and execute every notebook
    python notebooks/_build.py 01 04       # only the notebooks whose name starts with these
    python notebooks/_build.py --no-execute

The sources live here (not in the .ipynb files) so that a notebook is regenerated, never edited
by hand; ``tests/test_notebooks.py`` checks the committed notebooks match these sources and
executes every one of them.
"""

from __future__ import annotations

import os
import sys
import textwrap

HERE = os.path.dirname(os.path.abspath(__file__))

# Each notebook: a list of (kind, source) with kind "md" or "code".
NOTEBOOKS: dict[str, list[tuple[str, str]]] = {}


def notebook(name: str):
    def register(fn):
        NOTEBOOKS[name] = [(k, textwrap.dedent(s).strip("\n")) for k, s in fn()]
        return fn
    return register


# ------------------------------------------------------------------------------------------------
@notebook("01_graphs_and_autograd")
def _nb1():
    return [
        ("md", """
        # Computational graphs and autograd

        A tour of PyTorch's autograd as funcgrad implements it: every value is a JAX array, every
        recorded operation a node of a graph that `backward()` walks in reverse. We write
        `import funcgrad as torch`, so the code below is ordinary PyTorch code.

        Graph pictures come from `funcgrad.viz.make_dot(root, params=...)`: **leaves blue**,
        **the root green**, **backward operations grey** (with PyTorch's node names).
        """),
        ("code", """
        import warnings
        import funcgrad as torch
        from funcgrad import nn
        import funcgrad.nn.functional as F
        from funcgrad.viz import make_dot, compiled_summary

        torch.manual_seed(0);
        """),
        ("md", """
        ## 1. Leaf nodes, `is_leaf` and `grad_fn`

        Tensors created by the user are *leaves*. A leaf with `requires_grad=True` collects its
        gradient in `.grad`. The result of an operation on a tensor that requires grad is not a
        leaf: it records the operation that produced it in `grad_fn`, whose `next_functions`
        link to the nodes of its inputs (`AccumulateGrad` for leaves).
        """),
        ("code", """
        a = torch.tensor([2.0, 3.0], requires_grad=True)
        b = torch.tensor([6.0, 4.0], requires_grad=True)
        Q = 3 * a ** 3 - b ** 2
        print(Q)
        print("a.is_leaf:", a.is_leaf, "| Q.is_leaf:", Q.is_leaf)
        print("a.grad_fn:", a.grad_fn, "| Q.grad_fn:", Q.grad_fn.name())
        print("Q.grad_fn.next_functions:", [f.name() for f, _ in Q.grad_fn.next_functions])
        """),
        ("code", """
        make_dot(Q.sum(), params={"a": a, "b": b})
        """),
        ("md", """
        `backward()` walks this graph from the root to the leaves. `Q` is a vector, so we pass
        the gradient of some scalar with respect to `Q` (here all ones, i.e. of `Q.sum()`):
        $\\partial Q/\\partial a = 9a^2$, $\\partial Q/\\partial b = -2b$.
        """),
        ("code", """
        Q.backward(gradient=torch.ones(2))
        print(a.grad, 9 * a ** 2 == a.grad)
        print(b.grad, -2 * b == b.grad)
        """),
        ("md", """
        ## 2. `.grad` of a non-leaf and `retain_grad()`

        Only leaves keep their gradient. Reading `.grad` of an intermediate tensor gives `None`
        with PyTorch's warning — unless `retain_grad()` was called before `backward()`.
        """),
        ("code", """
        x = torch.ones(2, 2, requires_grad=True)
        y = x + 2
        z = (y * y * 3).mean()
        z.backward()
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            print("y.grad:", y.grad)
        print("UserWarning:", str(caught[0].message)[:110], "...")
        """),
        ("code", """
        x = torch.ones(2, 2, requires_grad=True)
        y = x + 2
        y.retain_grad()
        z = (y * y * 3).mean()
        z.backward()
        print("y.grad =", y.grad)
        print("x.grad =", x.grad)
        """),
        ("md", """
        ## 3. `retain_graph`: backward twice

        After `backward()` the values the graph saved are freed, so a second `backward()`
        through the same graph is an error. With `retain_graph=True` they are kept, and the
        second call *adds* to `.grad` (twice the graph, twice the gradient).
        """),
        ("code", """
        x = torch.tensor([1.0, 2.0], requires_grad=True)
        loss = (x ** 2).sum()
        loss.backward()
        try:
            loss.backward()
        except RuntimeError as e:
            print("RuntimeError:", e)
        """),
        ("code", """
        x = torch.tensor([1.0, 2.0], requires_grad=True)
        loss = (x ** 2).sum()
        loss.backward(retain_graph=True)
        print("after one backward: ", x.grad)
        loss.backward()
        print("after two backwards:", x.grad)
        """),
        ("md", """
        ## 4. `create_graph`: derivatives of derivatives

        With `create_graph=True` the gradient is itself computed by recorded operations, so it
        has a `grad_fn` and can be differentiated again (Hessian-vector products, gradient
        penalties). The picture below is the graph *of the gradient*.
        """),
        ("code", """
        x = torch.tensor(3.0, requires_grad=True)
        y = x ** 3
        (dy,) = torch.autograd.grad(y, x, create_graph=True)
        print("dy/dx   =", dy)                  # 3 x^2 = 27
        (d2y,) = torch.autograd.grad(dy, x)
        print("d2y/dx2 =", d2y)                 # 6 x = 18
        """),
        ("code", """
        x = torch.tensor(3.0, requires_grad=True)
        (dy,) = torch.autograd.grad(x ** 3, x, create_graph=True)
        make_dot(dy, params={"x": x})
        """),
        ("md", """
        ## 5. `detach()`: a leaf that shares memory

        `y.detach()` is a new leaf, outside the graph, that shares `y`'s storage **and** its
        version counter. Writing into it changes `y` — and if the graph saved `y` for the
        backward pass, autograd notices the in-place change and refuses to compute a wrong
        gradient.
        """),
        ("code", """
        x = torch.tensor([1.0, 2.0], requires_grad=True)
        y = x * x
        u = y.detach()
        print("u.is_leaf:", u.is_leaf, "| u.requires_grad:", u.requires_grad, "| u.grad_fn:", u.grad_fn)
        z = y * x                        # MulBackward0 saves y and x for the backward pass
        u[0] = 5.0                       # writes into y's storage: y changes too
        print("y =", y)
        try:
            z.sum().backward()
        except RuntimeError as e:
            print("RuntimeError:", e)
        """),
        ("md", """
        `detach()` cuts the graph: here `u` is used as a constant, so the gradient of
        `z = u * x` is `u`, not `3x²`.
        """),
        ("code", """
        x = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
        y = x * x
        u = y.detach()
        z = u * x
        z.sum().backward()
        print("x.grad =", x.grad, "== u:", bool((x.grad == u).all()))
        make_dot(z.sum(), params={"x": x})
        """),
        ("md", """
        ## 6. `requires_grad=False`: freezing a layer for fine-tuning

        Parameters with `requires_grad=False` are constants for autograd: no gradient is computed
        for them and the graph stops where nothing requires grad. Freeze the first layer of a
        small network and the backward graph only reaches the last layer.
        """),
        ("code", """
        model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2))
        for p in model[0].parameters():        # freeze the "pretrained" first layer
            p.requires_grad = False
        opt = torch.optim.SGD([p for p in model.parameters() if p.requires_grad], lr=0.1)
        loss = F.cross_entropy(model(torch.randn(3, 4)), torch.tensor([0, 1, 1]))
        loss.backward()
        for name, p in model.named_parameters():
            print(f"{name:9} requires_grad={p.requires_grad!s:5}  grad={'None' if p.grad is None else tuple(p.grad.shape)}")
        make_dot(loss, params=dict(model.named_parameters()))
        """),
        ("md", """
        ## 7. `no_grad()` versus `eval()`

        They are different switches:

        | | records the graph | Dropout / BatchNorm |
        |---|---|---|
        | `model.train()` | yes | training behaviour (drop, batch statistics) |
        | `model.eval()` | **yes** | inference behaviour (no dropout, running statistics) |
        | `with torch.no_grad():` | **no** | unchanged (whatever `train()`/`eval()` says) |

        For inference use both.
        """),
        ("code", """
        net = nn.Sequential(nn.Linear(4, 4), nn.Dropout(p=0.5))
        x = torch.ones(1, 4)

        net.train()
        with torch.no_grad():
            out = net(x)
        print("train + no_grad: requires_grad =", out.requires_grad, "| zeros from dropout:", int((out == 0).sum()))

        net.eval()
        out = net(x)
        print("eval:            requires_grad =", out.requires_grad, "| grad_fn:", out.grad_fn.name())
        with torch.no_grad():
            out = net(x)
        print("eval + no_grad:  requires_grad =", out.requires_grad)
        """),
        ("md", """
        ## 8. Anatomy of a training step

        1. `opt.zero_grad()` — clear last step's `.grad` (set to `None`, as PyTorch 2 does);
        2. forward — running the model **builds** the graph;
        3. `loss.backward()` — walks it, fills every parameter's `.grad`, frees the graph;
        4. `opt.step()` — updates the parameters in place (under `no_grad`).
        """),
        ("code", """
        torch.manual_seed(0)
        model = nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 3))
        opt = torch.optim.SGD(model.parameters(), lr=0.5)
        xb, yb = torch.randn(16, 4), torch.randint(0, 3, (16,))

        opt.zero_grad()
        print("1. zero_grad: model[2].bias.grad =", model[2].bias.grad)
        loss = F.cross_entropy(model(xb), yb)
        print("2. forward:   loss =", loss)
        loss.backward()
        print("3. backward:  model[2].bias.grad =", model[2].bias.grad)
        before = model[2].bias.detach().clone()
        opt.step()
        print("4. step:      bias moved by", model[2].bias.detach() - before)
        """),
        ("code", """
        # the graph built by step 2 (and walked by step 3)
        make_dot(F.cross_entropy(model(xb), yb), params=dict(model.named_parameters()))
        """),
        ("md", """
        ## 9. Dynamic graphs

        The graph is rebuilt by every forward pass: it is a record of the Python that ran. Control
        flow that depends on the data gives a different graph for different inputs — there is
        nothing to declare in advance.
        """),
        ("code", """
        w = torch.tensor(0.5, requires_grad=True)

        def f(x):
            y = x * w
            while y.abs() < 4:          # data-dependent loop
                y = y * 2
            return y.relu() if y > 0 else y.sigmoid()

        make_dot(f(torch.tensor(3.0)), params={"w": w})
        """),
        ("code", """
        make_dot(f(torch.tensor(-0.5)), params={"w": w})
        """),
        ("md", """
        ## 10. Static graphs: the same step compiled with `funcgrad.jit`

        Decorating the unchanged step with `funcgrad.jit` traces it once into a JAX program —
        forward, backward *and* the optimizer update — that XLA compiles and optimizes as a whole
        (the "static graph"). Parameters, `.grad` and optimizer state are found automatically
        and written back, so after each call the model and optimizer look exactly as if the step
        had run eagerly, and the numbers are the same.
        """),
        ("code", """
        def make(seed=0):
            torch.manual_seed(seed)
            model = nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 3))
            return model, torch.optim.SGD(model.parameters(), lr=0.5)

        def train_step(model, opt, x, y):
            opt.zero_grad()
            loss = F.cross_entropy(model(x), y)
            loss.backward()
            opt.step()
            return loss

        eager_model, eager_opt = make()
        jit_model, jit_opt = make()
        compiled_step = torch.jit(train_step)
        for i in range(3):
            le = train_step(eager_model, eager_opt, xb, yb)
            lc = compiled_step(jit_model, jit_opt, xb, yb)
            print(f"step {i}: eager loss {le.item():.6f} | compiled loss {lc.item():.6f}")
        print("same parameters:", all(torch.allclose(p, q) for p, q in zip(eager_model.parameters(), jit_model.parameters())))
        print("traces:", compiled_step.num_traces)
        """),
        ("md", """
        The first call traced the step with every `.grad` still `None`; the second saw the
        `.grad` slots filled by the first step (a different state structure), so it traced once
        more. From then on every call reuses the compiled program:
        """),
        ("code", """
        print(compiled_step.retrace_reasons)
        compiled_step(jit_model, jit_opt, xb, yb)
        print("traces after a 4th call:", compiled_step.num_traces)
        """),
        ("md", """
        What XLA compiles is the *whole* step — forward, backward and the SGD update — as one
        pure function of the state. `compiled_step.lower(...)` returns that program for the
        given arguments without running it (parameters and optimizer are left as they are), and
        `funcgrad.viz.compiled_summary` counts the operations of its XLA (StableHLO) text:
        """),
        ("code", """
        summary = compiled_summary(compiled_step, jit_model, jit_opt, xb, yb)
        print("total ops:", summary["ops"])
        for op, n in list(summary["by_op"].items())[:10]:
            print(f"  {op:32} {n}")
        print("traces:", compiled_step.num_traces, "(the cached program: lower() did not retrace)")
        """),
        ("md", """
        The price of a static graph: the trace runs the Python once, so a branch on a tensor's
        *value* cannot be compiled. funcgrad says where and what to do instead.
        """),
        ("code", """
        @torch.jit
        def g(x):
            if x.sum() > 0:
                return x * 2
            return x

        try:
            g(torch.ones(3))
        except Exception as e:
            print(type(e).__name__ + ":", str(e).split(" at")[0])
            print("fix:", str(e).split("Fix: ")[1])
        """),
    ]


# ------------------------------------------------------------------------------------------------
@notebook("02_pytorch_autograd_tutorial")
def _nb2():
    return [
        ("md", """
        # Automatic differentiation with `torch.autograd` — the PyTorch tutorial, on funcgrad

        The official PyTorch tutorial ("Learn the Basics → Automatic Differentiation with
        torch.autograd"), run unchanged except for the import line. Random values differ from
        PyTorch's (funcgrad draws from JAX's PRNG); everything else prints as in PyTorch.
        """),
        ("code", """
        import funcgrad as torch
        from funcgrad.viz import make_dot

        torch.manual_seed(0);
        """),
        ("md", """
        ## Tensors, functions and the computational graph

        The simplest one-layer network, with input `x`, parameters `w` and `b`, and a loss:
        """),
        ("code", """
        x = torch.ones(5)  # input tensor
        y = torch.zeros(3)  # expected output
        w = torch.randn(5, 3, requires_grad=True)
        b = torch.randn(3, requires_grad=True)
        z = torch.matmul(x, w) + b
        loss = torch.nn.functional.binary_cross_entropy_with_logits(z, y)
        """),
        ("md", """
        `w` and `b` are parameters to optimize, so they require gradients. The function that
        computes a tensor in the forward direction and its derivative in the backward direction
        is stored in its `grad_fn`:
        """),
        ("code", """
        print(f"Gradient function for z = {z.grad_fn}")
        print(f"Gradient function for loss = {loss.grad_fn}")
        """),
        ("code", """
        make_dot(loss, params={"w": w, "b": b})
        """),
        ("md", """
        ## Computing gradients

        $\\partial loss/\\partial w$ and $\\partial loss/\\partial b$ for fixed `x` and `y`:
        """),
        ("code", """
        loss.backward()
        print(w.grad)
        print(b.grad)
        """),
        ("md", """
        Gradients are only kept for leaves with `requires_grad=True`; and the graph can be
        used for one `backward` call unless `retain_graph=True` is passed.

        ## Disabling gradient tracking

        When we only need the forward pass (inference, or frozen parameters), `torch.no_grad()`
        stops tracking:
        """),
        ("code", """
        z = torch.matmul(x, w) + b
        print(z.requires_grad)

        with torch.no_grad():
            z = torch.matmul(x, w) + b
        print(z.requires_grad)
        """),
        ("md", """
        or `detach()`:
        """),
        ("code", """
        z = torch.matmul(x, w) + b
        z_det = z.detach()
        print(z_det.requires_grad)
        """),
        ("md", """
        ## More on computational graphs

        autograd keeps a record of data and operations in a directed acyclic graph (DAG) of
        `Function` objects: leaves are the inputs, roots the outputs. The forward pass runs the
        operation and records its gradient function; `.backward()` computes the gradients from
        each `.grad_fn`, accumulates them in the leaves' `.grad` and propagates to the leaves.
        The DAG is dynamic: it is recreated from scratch by each forward pass.
        """),
        ("code", """
        print(loss.grad_fn)
        print(loss.grad_fn.next_functions)
        print(loss.grad_fn.next_functions[0][0].next_functions)
        """),
        ("md", """
        ## Optional reading: tensor gradients and Jacobian products

        For a vector output, `backward(v)` computes the product $v^T \\cdot J$ with the Jacobian
        instead of the Jacobian itself:
        """),
        ("code", """
        inp = torch.eye(4, 5, requires_grad=True)
        out = (inp + 1).pow(2).t()
        out.backward(torch.ones_like(out), retain_graph=True)
        print(f"First call\\n{inp.grad}")
        out.backward(torch.ones_like(out), retain_graph=True)
        print(f"\\nSecond call\\n{inp.grad}")
        inp.grad.zero_()
        out.backward(torch.ones_like(out), retain_graph=True)
        print(f"\\nCall after zeroing gradients\\n{inp.grad}")
        """),
        ("md", """
        The second call gives a different gradient: `backward` **accumulates** into `.grad`.
        The square `eye(5)` version, and the full Jacobian for comparison:
        """),
        ("code", """
        inp = torch.eye(5, requires_grad=True)
        out = (inp + 1).pow(2)
        out.backward(torch.ones_like(inp), retain_graph=True)
        print(f"First call\\n{inp.grad}")
        J = torch.autograd.functional.jacobian(lambda t: (t + 1).pow(2), torch.eye(2))
        print("Jacobian of (t + 1)^2 at eye(2), shape", tuple(J.shape), "\\n", J.reshape(4, 4))
        """),
    ]


# ------------------------------------------------------------------------------------------------
@notebook("03_d2l_autograd")
def _nb3():
    return [
        ("md", """
        # Automatic differentiation — the d2l chapter, on funcgrad

        The "Automatic Differentiation" section of *Dive into Deep Learning* (PyTorch version),
        plus the classic `y = x + 2` example of PyTorch's 60-minute blitz.
        """),
        ("code", """
        import funcgrad as torch
        from funcgrad.viz import make_dot
        """),
        ("md", """
        ## A simple function

        Differentiate $y = 2\\mathbf{x}^\\top\\mathbf{x}$ with respect to the column vector $\\mathbf{x}$.
        """),
        ("code", """
        x = torch.arange(4.0)
        x
        """),
        ("code", """
        x.requires_grad_(True)
        print(x.grad)  # The gradient is None by default
        """),
        ("code", """
        y = 2 * torch.dot(x, x)
        y
        """),
        ("code", """
        y.backward()
        x.grad
        """),
        ("code", """
        x.grad == 4 * x
        """),
        ("md", """
        Gradients **accumulate**: reset before computing another one.
        """),
        ("code", """
        x.grad.zero_()  # Reset the gradient
        y = x.sum()
        y.backward()
        x.grad
        """),
        ("md", """
        ## Backward for non-scalar variables

        `backward` on a vector needs the `gradient` argument $\\mathbf{v}$ and computes
        $\\mathbf{v}^\\top \\partial_{\\mathbf{x}} \\mathbf{y}$; without it, PyTorch's error:
        """),
        ("code", """
        x.grad.zero_()
        y = x * x
        try:
            y.backward()
        except RuntimeError as e:
            print("RuntimeError:", e)
        y.backward(gradient=torch.ones(len(y)))  # Faster: y.sum().backward()
        x.grad
        """),
        ("md", """
        ## Detaching computation

        `u = y.detach()` has the values of `y` but is a constant for autograd: the gradient of
        `z = u * x` with respect to `x` is `u`.
        """),
        ("code", """
        x.grad.zero_()
        y = x * x
        u = y.detach()
        z = u * x

        z.sum().backward()
        x.grad == u
        """),
        ("code", """
        x.grad.zero_()
        y.sum().backward()
        x.grad == 2 * x
        """),
        ("md", """
        ## Gradients and Python control flow

        The graph is built as the code runs, so loops and branches that depend on the data are
        differentiable: `f` is piecewise linear in `a`, so `d / a` is its gradient.
        """),
        ("code", """
        def f(a):
            b = a * 2
            while b.norm() < 1000:
                b = b * 2
            if b.sum() > 0:
                c = b
            else:
                c = 100 * b
            return c
        """),
        ("code", """
        torch.manual_seed(0)
        a = torch.randn((), requires_grad=True)   # d2l writes randn(size=(), ...)
        d = f(a)
        d.backward()
        """),
        ("code", """
        a.grad == d / a
        """),
        ("md", """
        ## The 60-minute blitz: `out = mean(3 (x + 2)²)`

        $out = \\frac{1}{4}\\sum_i 3(x_i+2)^2$, so $\\partial out/\\partial x_i = \\frac{3}{2}(x_i+2) = 4.5$ at $x_i = 1$.
        """),
        ("code", """
        x = torch.ones(2, 2, requires_grad=True)
        y = x + 2
        z = y * y * 3
        out = z.mean()
        print(y)
        print(z, out, sep="\\n")
        """),
        ("code", """
        make_dot(out, params={"x": x})
        """),
        ("code", """
        out.backward()
        print(x.grad)
        """),
        ("md", """
        ## `no_grad` and `.data`

        Inside `torch.no_grad()` nothing is recorded; `.data` reads or writes a tensor's values
        outside autograd (no graph, no version check) — the old way to update weights in place.
        """),
        ("code", """
        print(x.requires_grad, (x ** 2).requires_grad)
        with torch.no_grad():
            print((x ** 2).requires_grad)
        """),
        ("code", """
        x = torch.ones(1, requires_grad=True)
        y = 2 * x
        x.data *= 100            # changes x, invisible to autograd
        y.backward()
        print("x =", x, "| x.grad =", x.grad)
        w = torch.tensor([1.0, 2.0], requires_grad=True)
        (w ** 2).sum().backward()
        w.data -= 0.1 * w.grad.data   # a hand-written SGD step
        print("w =", w, "| w.data =", w.data)
        """),
    ]


# ------------------------------------------------------------------------------------------------
@notebook("04_training")
def _nb4():
    return [
        ("md", """
        # Training: the digits model, eager and compiled

        The model of `python -m funcgrad.examples.train` (scikit-learn's bundled 8×8 handwritten
        digits: 1 797 images, no download) trained with one ordinary PyTorch-style step — first
        eagerly, then the same function under `funcgrad.jit`. A few epochs only, to keep the
        notebook quick; `python -m funcgrad.examples.train --epochs 15` trains to ≥ 95 %.
        """),
        ("code", """
        import time

        import matplotlib.pyplot as plt

        import funcgrad as torch
        import funcgrad.nn.functional as F
        from funcgrad import nn
        from funcgrad.examples.train import load_digits, make_model
        from funcgrad.utils.data import DataLoader, TensorDataset

        (xtr, ytr), (xte, yte) = load_digits(seed=0)
        print(f"{len(xtr)} training and {len(xte)} test images of shape {xtr.shape[1:]}")
        """),
        ("code", """
        fig, axes = plt.subplots(1, 8, figsize=(8, 1.3))
        for ax, img, label in zip(axes, xtr, ytr):
            ax.imshow(img, cmap="gray_r")
            ax.set_title(int(label))
            ax.axis("off")
        plt.show()
        """),
        ("md", """
        One training function for both runs: the step (zero_grad, forward, backward, clip,
        step) is written once; `compiled=True` wraps it in `funcgrad.jit`. The first steps
        compile: eagerly, each operation's XLA kernel is compiled on first use; under
        `funcgrad.jit` the step is compiled once, on the first call (traced twice there: the
        `.grad` slots and AdamW state its first step creates are made first, so the program it
        compiles is the one every later step runs), and traced once more on the second call, which
        checks that the step reads no `.grad` left by the first. The speed is measured on the steps
        after these two.
        """),
        ("code", """
        EPOCHS, BATCH = 6, 64
        WARMUP = 2   # steps that compile or trace: eager kernels on first use; the jit program (see above)

        def train(compiled: bool, seed: int = 0):
            torch.manual_seed(seed)
            model = make_model("mlp")
            loader = DataLoader(TensorDataset(torch.tensor(xtr), torch.tensor(ytr)),
                                batch_size=BATCH, shuffle=True, drop_last=True)
            opt = torch.optim.AdamW(model.parameters(), lr=3e-3, weight_decay=1e-4)

            def train_step(x, y):
                opt.zero_grad()
                loss = F.cross_entropy(model(x), y)
                loss.backward()
                nn.utils.clip_grad_norm_(model.parameters(), 1.0)
                opt.step()
                return loss

            step = torch.jit(train_step) if compiled else train_step
            model.train()
            losses, seconds = [], []
            for epoch in range(EPOCHS):
                for x, y in loader:
                    t0 = time.perf_counter()
                    losses.append(step(x, y).item())   # .item() waits for the result
                    seconds.append(time.perf_counter() - t0)
            steps_per_s = (len(seconds) - WARMUP) / sum(seconds[WARMUP:])
            model.eval()
            with torch.no_grad():
                acc = (model(torch.tensor(xte)).argmax(1) == torch.tensor(yte)).float().mean().item()
            return dict(losses=losses, acc=acc, warmup_s=sum(seconds[:WARMUP]), total_s=sum(seconds),
                        steps_per_s=steps_per_s)

        eager = train(compiled=False)
        compiled = train(compiled=True)
        for name, r in [("eager", eager), ("compiled", compiled)]:
            print(f"{name:>8}: test accuracy {100 * r['acc']:.1f}%, {r['total_s']:.1f} s in total "
                  f"(first {WARMUP} steps {r['warmup_s']:.1f} s), then {r['steps_per_s']:.0f} steps/s")
        print(f"speed-up of the compiled step: {compiled['steps_per_s'] / eager['steps_per_s']:.1f}x steady state, "
              f"{eager['total_s'] / compiled['total_s']:.1f}x in total time (compilation included)")
        """),
        ("md", """
        Same seed, same data order, same numbers: the two loss curves lie on top of each other
        (up to float rounding: XLA fuses the whole step, so the last bits may differ).
        """),
        ("code", """
        fig, ax = plt.subplots(figsize=(6, 3.5))
        ax.plot(eager["losses"], label="eager", lw=3, alpha=0.5)
        ax.plot(compiled["losses"], "--", label="compiled (funcgrad.jit)")
        ax.set_xlabel("step")
        ax.set_ylabel("cross-entropy loss")
        ax.set_title("digits MLP")
        ax.legend()
        plt.show()
        diff = max(abs(a - b) for a, b in zip(eager["losses"], compiled["losses"]))
        print("largest loss difference below 1e-6:", diff < 1e-6)   # the last bits vary with the CPU
        """),
        ("md", """
        The speed-up depends on the machine and the model size: on a small MLP and a CPU, each
        eager operation is a separate dispatch from Python (microseconds each), while the
        compiled step is one XLA call. On a GPU/TPU the compiled step also avoids one
        device round trip per operation.
        """),
    ]


# ------------------------------------------------------------------------------------------------
@notebook("05_for_jax_users")
def _nb5():
    return [
        ("md", """
        # funcgrad for JAX users

        A funcgrad model is also a pure function: `funcgrad.func.functional_call(model, params, x)`
        runs it with the parameters you pass (JAX arrays or tracers), so it composes with
        `jax.grad`, `jax.vmap` and `jax.jit`. Tensors are JAX pytrees, and funcgrad code runs
        inside `jax.jit`.
        """),
        ("code", """
        import jax
        import jax.numpy as jnp
        import numpy as np

        import funcgrad as torch
        import funcgrad.nn.functional as F
        from funcgrad import nn
        from funcgrad.func import functional_call

        torch.manual_seed(0)
        model = nn.Sequential(nn.Linear(4, 16), nn.Tanh(), nn.Linear(16, 3))
        x, y = torch.randn(8, 4), torch.randint(0, 3, (8,))
        """),
        ("md", """
        ## `jax.grad` of the model equals `loss.backward()`
        """),
        ("code", """
        params = {name: p.detach().jax() for name, p in model.named_parameters()}   # plain jax arrays

        def loss_fn(params, x, y):
            logits = functional_call(model, params, (x,))      # jax arrays in, jax arrays out
            return F.cross_entropy(logits, torch.from_jax(y)).jax()

        grads = jax.grad(loss_fn)(params, x.jax(), y.jax())

        loss = F.cross_entropy(model(x), y)                    # the PyTorch way
        loss.backward()
        for name, p in model.named_parameters():
            err = np.abs(np.asarray(grads[name]) - p.grad.numpy()).max()
            print(f"{name:9} {str(tuple(p.shape)):8} max |jax.grad - backward| < 1e-6: {err < 1e-6}")
        """),
        ("md", """
        ## Per-example gradients with `jax.vmap`

        The loss of one example, differentiated, mapped over the batch: one gradient per
        example, in one vectorized call (what `torch.func.vmap(grad(...))` does in PyTorch).
        Their mean is the batch gradient.
        """),
        ("code", """
        def example_loss(params, xi, yi):
            return loss_fn(params, xi[None], yi[None])

        per_example = jax.vmap(jax.grad(example_loss), in_axes=(None, 0, 0))(params, x.jax(), y.jax())
        print({k: v.shape for k, v in per_example.items()})
        print("mean of per-example grads == batch grad:",
              all(np.allclose(per_example[k].mean(0), grads[k], atol=1e-6) for k in grads))
        """),
        ("md", """
        ## Tensors are pytrees

        `jax.tree` utilities see a Tensor's array as its leaf and rebuild Tensors, so dicts of
        parameters, `state_dict()`s and optimizer states go through JAX transformations as they are.
        """),
        ("code", """
        sd = model.state_dict()
        print([type(l).__name__ for l in jax.tree.leaves(sd)][:2], "...")
        halved = jax.tree.map(lambda a: a / 2, sd)
        print(type(halved["0.bias"]).__name__, halved["0.bias"][:4])
        print("parameter count:", sum(l.size for l in jax.tree.leaves(sd)))
        """),
        ("md", """
        ## A training loop the JAX way: optax on `functional_call`

        Parameters as a pytree, `jax.value_and_grad`, an optax optimizer, `jax.jit` around the
        whole update — with the model defined the PyTorch way.
        """),
        ("code", """
        import optax

        tx = optax.adam(1e-2)
        opt_state = tx.init(params)

        @jax.jit
        def update(params, opt_state, x, y):
            loss, g = jax.value_and_grad(loss_fn)(params, x, y)
            updates, opt_state = tx.update(g, opt_state)
            return optax.apply_updates(params, updates), opt_state, loss

        for i in range(201):
            params, opt_state, l = update(params, opt_state, x.jax(), y.jax())
            if i % 50 == 0:
                print(f"step {i:3d}  loss {float(l):.4f}")
        model.load_state_dict({k: torch.from_jax(v) for k, v in params.items()})   # back into the module
        print("accuracy on the batch:", (model(x).argmax(1) == y).float().mean().item())
        """),
        ("md", """
        ## funcgrad code inside `jax.jit`, and JAX code on Tensors

        Ordinary funcgrad code (modules, `nn.functional`) can be traced by `jax.jit`; Tensors go
        in and out. In the other direction, `t.jax()` gives the array (no copy) and
        `torch.from_jax(a)` wraps one.
        """),
        ("code", """
        @jax.jit
        def predict(x):
            return F.softmax(model(x), dim=1).argmax(1)

        with torch.no_grad():
            print(predict(x))
            print(model(x).softmax(1).argmax(1))
        """),
        ("code", """
        a = jnp.linspace(0.0, 1.0, 5, dtype=jnp.float32)   # funcgrad turns on jax_enable_x64:
        t = torch.from_jax(a).requires_grad_()               # say float32 or jnp gives float64
        out = (t.sin() * 2).sum()         # funcgrad autograd on a jax array
        out.backward()
        print(t.grad)
        print(jax.grad(lambda a: (jnp.sin(a) * 2).sum())(a))   # the same with jax.grad
        """),
    ]


# ------------------------------------------------------------------------------------------------
def build(name: str):
    """The notebook object for ``name`` (no outputs)."""
    import nbformat
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nb.metadata["language_info"] = {"name": "python"}
    for kind, src in NOTEBOOKS[name]:
        nb.cells.append(nbformat.v4.new_markdown_cell(src) if kind == "md" else nbformat.v4.new_code_cell(src))
    for i, cell in enumerate(nb.cells):  # stable ids: regenerating gives no spurious diffs
        cell["id"] = f"{name[:2]}-{i:02d}"
    return nb


def execute(nb, timeout: int = 600):
    """Run every cell in a fresh ``python3`` kernel (cwd: notebooks/); raises on a cell error."""
    from nbclient import NotebookClient
    NotebookClient(nb, timeout=timeout, kernel_name="python3", record_timing=False,
                   resources={"metadata": {"path": HERE}}).execute()
    return nb


def main(argv: list[str]) -> None:
    import nbformat
    run = "--no-execute" not in argv
    wanted = [a for a in argv if not a.startswith("--")]
    for name in NOTEBOOKS:
        if wanted and not any(name.startswith(w) for w in wanted):
            continue
        nb = build(name)
        if run:
            import time
            t0 = time.perf_counter()
            execute(nb)
            print(f"{name}: executed in {time.perf_counter() - t0:.1f} s")
        nbformat.write(nb, os.path.join(HERE, name + ".ipynb"))


if __name__ == "__main__":
    main(sys.argv[1:])
