"""Benchmarks of the jit bridge (``funcgrad.jit``), side by side in one run.

1. MLP 784-256-256-10 batch 64 and 784-512-512-10 batch 128, Adam: a compiled PyTorch-style
   step vs a hand-written ``jax.jit`` + ``optax`` step on the same weights, donating its
   parameters and optimizer state (target: <= 1.05x its time at both sizes).
2. Per-call overhead: a 100-parameter-tensor model with tiny shapes, compiled step vs a plain
   ``jax.jit`` over the flat pytree doing the same update (target: <= 1.2x).
3. The same MLP step in PyTorch eager, when ``torch`` is importable.

Fairness: after a funcgrad step ``p.grad`` holds the step's gradients (PyTorch semantics), so
the compiled program must also return them; each hand-written JAX step is timed twice, as
written plainly (params and optimizer state out) and also returning the gradients (the same
work as funcgrad's program; it donates the previous gradients, as funcgrad.jit does, so that
the new ones reuse their buffers). The batch is an argument of every program, as of a training
loop's (a step that closes over one batch lets XLA fold it, e.g. the labels' gather indices,
into constants: funcgrad's program takes it as an input). funcgrad.jit packs small state (parameters, ``.grad``, optimizer
state of at most 4096 elements) into one buffer per dtype (``funcgrad/_jit/pack.py``), so the
per-call benchmark also times a hand-written step using that same packed layout: the best a
hand-written program does, and so funcgrad's own overhead. Timings are interleaved best-of-N
(the machine may be busy).
"""

from __future__ import annotations


import jax
import jax.numpy as jnp
import numpy as np
import optax

from .train_bench import _time_many, torch_step  # one timer and one PyTorch MLP step


def _mlp_funcgrad(sizes, batch):
    import funcgrad
    from funcgrad import nn, optim
    import funcgrad.nn.functional as F
    funcgrad.manual_seed(0)
    layers = []
    for a, b in zip(sizes[:-1], sizes[1:]):
        layers += [nn.Linear(a, b), nn.ReLU()]
    model = nn.Sequential(*layers[:-1])
    opt = optim.Adam(model.parameters(), lr=1e-3)
    x, y = funcgrad.randn(batch, sizes[0]), funcgrad.randint(0, sizes[-1], (batch,))

    @funcgrad.jit
    def step(x, y):
        opt.zero_grad()
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        return loss

    # copies: the compiled step donates (and so deletes) the parameters' current buffers
    params = [(jnp.array(m.weight.jax()), jnp.array(m.bias.jax())) for m in model
              if isinstance(m, nn.Linear)]
    return (lambda: step(x, y)._value), step, params, x.jax(), y.jax()


def _mlp_jax(params, x, y, with_grads: bool):
    params = jax.tree.map(jnp.array, params)
    tx = optax.adam(1e-3)
    st = tx.init(params)

    def loss_fn(p, x, y):
        h = x
        for i, (w, b) in enumerate(p):
            h = h @ w.T + b
            if i < len(p) - 1:
                h = jax.nn.relu(h)
        return optax.softmax_cross_entropy_with_integer_labels(h, y).mean()

    def step(p, s, g_old, x, y):
        loss, g = jax.value_and_grad(loss_fn)(p, x, y)
        u, s = tx.update(g, s, p)
        return optax.apply_updates(p, u), s, loss, (g if with_grads else None)
    # with_grads: the previous gradients are donated (unread): the new ones take their buffers
    step = jax.jit(step, donate_argnums=(0, 1, 2) if with_grads else (0, 1), keep_unused=with_grads)
    box = [params, st, jax.tree.map(jnp.zeros_like, params) if with_grads else None]

    def call():  # the batch is an argument, as funcgrad.jit's (not constants folded into the program)
        box[0], box[1], loss, g = step(*box, x, y)
        if with_grads:
            box[2] = g
        return loss
    return call


def _tiny(n_layers=50, width=4):
    import funcgrad
    from funcgrad import nn, optim
    funcgrad.manual_seed(0)
    model = nn.Sequential(*[nn.Linear(width, width) for _ in range(n_layers)])
    opt = optim.SGD(model.parameters(), lr=1e-3)
    x = funcgrad.randn(2, width)

    @funcgrad.jit
    def step(x):
        opt.zero_grad()
        loss = model(x).pow(2).mean()
        loss.backward()
        opt.step()
        return loss

    params = [(jnp.array(m.weight.jax()), jnp.array(m.bias.jax())) for m in model]
    xa = x.jax()

    def loss_fn(p, x):
        h = x
        for w, b in p:
            h = h @ w.T + b
        return (h ** 2).mean()

    def make(with_grads):
        def jstep(p, x):
            loss, g = jax.value_and_grad(loss_fn)(p, x)
            return jax.tree.map(lambda a, b: a - 1e-3 * b, p, g), loss, (g if with_grads else None)
        jstep = jax.jit(jstep, donate_argnums=0)
        box = [jax.tree.map(jnp.array, params)]

        def call():
            box[0], loss, _ = jstep(box[0], xa)
            return loss
        return call
    def make_packed():
        # the layout funcgrad.jit uses for small state: one flat buffer in, params and grads out
        flat, tree = jax.tree.flatten(params)
        shapes = [a.shape for a in flat]
        offs = np.cumsum([0] + [a.size for a in flat]).tolist()

        def unpack(buf):
            return jax.tree.unflatten(tree, [buf[a:b].reshape(s)
                                             for a, b, s in zip(offs, offs[1:], shapes)])

        def pack(tree_):
            return jnp.concatenate([a.ravel() for a in jax.tree.leaves(tree_)])

        def jstep(buf, x):
            p = unpack(buf)
            loss, g = jax.value_and_grad(loss_fn)(p, x)
            return pack(jax.tree.map(lambda a, b: a - 1e-3 * b, p, g)), pack(g), loss
        jstep = jax.jit(jstep, donate_argnums=0)
        box = [pack(params)]

        def call():
            box[0], _, loss = jstep(box[0], xa)
            return loss
        return call
    return (lambda: step(x)._value), step, make(False), make(True), make_packed()


def run(n: int = 20) -> list[dict]:
    """Run the benchmarks; one row per measurement (``bench``, ``impl``, ``us``, ``note``)."""
    import funcgrad
    prev = funcgrad.get_default_dtype()
    funcgrad.set_default_dtype(funcgrad.float32)
    try:
        return _rows(n)
    finally:
        funcgrad.set_default_dtype(prev)


def _rows(n):
    rows = []
    for sizes, batch, reps in (((784, 256, 256, 10), 64, 4), ((784, 512, 512, 10), 128, 1)):
        b1 = (f"jit: MLP {'-'.join(map(str, sizes))} b{batch} Adam train step "
              f"(target funcgrad.jit <= 1.05x jax.jit)")
        fg, step, params, x, y = _mlp_funcgrad(sizes, batch)
        fns = [_mlp_jax(params, x, y, False), _mlp_jax(params, x, y, True), fg]
        impls = ["jax.jit + optax", "jax.jit + optax, grads out", "funcgrad.jit"]
        try:
            fns.append(torch_step(sizes, batch, threads=None))
            impls.append("pytorch eager (default threads)")
        except ImportError:
            pass
        for impl, t in zip(impls, _time_many(fns, n * reps, repeat=9)):
            rows.append(dict(bench=b1, impl=impl, us=t * 1e6,
                             note=f"{step.num_traces} traces" if impl == "funcgrad.jit" else ""))
    b2 = "jit: per-call overhead, 100 param tensors 4x4 SGD (target funcgrad.jit <= 1.2x jax.jit)"
    fg, step, j_plain, j_grads, j_packed = _tiny()
    for impl, t in zip(["plain jax.jit (flat pytree)", "plain jax.jit, grads out",
                        "jax.jit, packed, grads out", "funcgrad.jit"],
                       _time_many([j_plain, j_grads, j_packed, fg], n * 10, repeat=9)):
        rows.append(dict(bench=b2, impl=impl, us=t * 1e6,
                         note=f"{step.num_traces} traces" if impl == "funcgrad.jit" else ""))
    return rows


if __name__ == "__main__":  # pragma: no cover
    from .__main__ import _print
    _print(run())
