"""Compile costs, side by side with PyTorch in one run (ratios, not absolute times):

* ``import funcgrad`` vs ``import torch`` as a fresh process;
* a whole small training script (import, build, first step; a CNN, the digits MLP and a small
  Transformer encoder) as a fresh process: cold (empty persistent compilation cache), warm (the
  same cache, second run), and PyTorch; the note gives the first step's time and the XLA compile
  count; the tutorial-style scripts of tests/scripts likewise (in a source checkout);
  ``FUNCGRAD_BENCH_REPEAT`` rounds (default 1), side by side, each row its best round;
* memory (RSS growth) through ``n`` distinct batch sizes (500) — an eager training step, an
  inference-only loop and a compiled step — with funcgrad's cache bounds set small
  (``RSS_BOUNDS``): the row is the growth after the bounds are full (``RSS_BOUND_REACHED``
  sizes), the note the RSS after 50, n/2 and n sizes and the XLA compiles per size;
* ``cat``/``stack`` fan-in of 1 000 / 10 000 tensors: forward + backward.

``python -m funcgrad.bench --only cache``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time

# the child processes import this funcgrad, not whichever one is installed
_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
_PYTHONPATH = os.pathsep.join([_ROOT, os.environ.get("PYTHONPATH", "")])

_SCRIPT = r"""
import json, os, sys, time
t0 = time.perf_counter()
lib = sys.argv[1]
if lib == "torch":
    import torch
    from torch import nn
    compiles = programs = lambda: 0
else:
    import jax
    n = [0, 0]  # persistent-cache writes (compiles, with the cache on); programs compiled or loaded
    jax.monitoring.register_event_listener(
        lambda name, **kw: n.__setitem__(0, n[0] + (name == "/jax/compilation_cache/cache_misses")))
    jax.monitoring.register_event_duration_secs_listener(lambda name, _s, **kw: n.__setitem__(
        1, n[1] + (name == "/jax/core/compile/backend_compile_duration")))
    import funcgrad as torch
    from funcgrad import nn
    compiles = lambda: n[0]
    programs = lambda: n[1]
torch.manual_seed(0)
if sys.argv[2] == "cnn":
    model = nn.Sequential(nn.Conv2d(1, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(), nn.MaxPool2d(2),
                          nn.Flatten(), nn.Linear(8 * 14 * 14, 10))
    x, y = torch.randn(32, 1, 28, 28), torch.randint(0, 10, (32,))
elif sys.argv[2] == "transformer":  # 2 encoder layers, d_model 64, 4 heads; a token-wise head
    layer = nn.TransformerEncoderLayer(64, 4, dim_feedforward=128, batch_first=True)
    model = nn.Sequential(nn.TransformerEncoder(layer, 2), nn.Linear(64, 10), nn.Flatten(0, 1))
    x, y = torch.randn(8, 16, 64), torch.randint(0, 10, (8 * 16,))
elif sys.argv[2] == "lstm":  # an LSTMCell unrolled over 50 steps (time_sequence_prediction's way)
    class Unrolled(nn.Module):
        def __init__(self):
            super().__init__()
            self.cell, self.head = nn.LSTMCell(8, 32), nn.Linear(32, 10)
        def forward(self, x):
            h = c = torch.zeros(x.shape[0], 32)
            for x_t in x.unbind(1):
                h, c = self.cell(x_t, (h, c))
            return self.head(h)
    model = Unrolled()
    x, y = torch.randn(16, 50, 8), torch.randint(0, 10, (16,))
else:  # the digits MLP
    model = nn.Sequential(nn.Linear(784, 256), nn.ReLU(), nn.Linear(256, 256), nn.ReLU(),
                          nn.Linear(256, 10))
    x, y = torch.randn(64, 784), torch.randint(0, 10, (64,))
opt = torch.optim.Adam(model.parameters(), lr=1e-3)
c1, p1, t1 = compiles(), programs(), time.perf_counter()
opt.zero_grad()
loss = nn.functional.cross_entropy(model(x), y)
loss.backward()
opt.step()
float(loss)
t2 = time.perf_counter()
print(json.dumps({"first_step": t2 - t1, "process": t2 - t0, "writes": compiles(),
                  "step_writes": compiles() - c1, "programs": programs(), "step_programs": programs() - p1}))
"""

_RSS = r"""
import json, sys, warnings
lib, mode, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
marks = [int(m) for m in sys.argv[4].split(",")]
compiles = [0]
if lib == "torch":
    import torch
    from torch import nn
else:
    import jax
    jax.monitoring.register_event_duration_secs_listener(lambda name, _s, **kw: compiles.__setitem__(
        0, compiles[0] + (name == "/jax/core/compile/backend_compile_duration")))
    import funcgrad as torch
    from funcgrad import nn
warnings.simplefilter("ignore")
def rss():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * 4096 / (1 << 20)
torch.manual_seed(0)
model = nn.Sequential(nn.Linear(20, 32), nn.ReLU(), nn.Linear(32, 4))
opt = torch.optim.Adam(model.parameters(), lr=1e-3)
def train(x, y):
    opt.zero_grad(); loss = nn.functional.cross_entropy(model(x), y); loss.backward(); opt.step()
    return loss
if mode == "compiled":
    train = torch.jit(train)
def step(b):
    x, y = torch.randn(b, 20), torch.randint(0, 4, (b,))
    if mode == "infer":
        with torch.no_grad():
            model(x).argmax(1)
    else:
        train(x, y)
step(1)
r0, out, c0 = rss(), {}, compiles[0]
for b in range(2, n + 2):
    step(b)
    if b - 1 in marks:
        out[b - 1] = [rss() - r0, compiles[0] - c0]
print(json.dumps(out))
"""


def _proc(code, *args, env=None, cwd=None):
    e = dict(os.environ, **(env or {}), PYTHONPATH=_PYTHONPATH)
    t0 = time.perf_counter()
    r = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, env=e,
                       timeout=1800, cwd=cwd)
    wall = time.perf_counter() - t0
    if r.returncode:
        raise RuntimeError(r.stderr[-2000:])
    return wall, r.stdout.strip().splitlines()[-1]


def _json_proc(code, *args, env=None, cwd=None):
    wall, out = _proc(code, *args, env=env, cwd=cwd)
    return wall, json.loads(out)


def _has_torch():
    try:
        import torch  # noqa: F401
        return True
    except Exception:
        return False


_MODELS = {"cnn": "CNN", "mlp": "MLP 784-256-256-10",
           "transformer": "Transformer (2 encoder layers, d_model 64, 4 heads, seq 16, batch 8)",
           "lstm": "LSTMCell unrolled over 50 steps (batch 16)"}


# a tutorial-style script run as it is, counting XLA programs (compiled, or loaded from the
# persistent cache) and persistent-cache writes (= compiles, with the cache on)
_WRAP = r"""
import json, os, runpy, sys, time
t0 = time.perf_counter()
n = {"writes": 0, "programs": 0}
if os.environ.get("FRAMEWORK") == "funcgrad":
    import jax
    jax.monitoring.register_event_listener(
        lambda name, **kw: n.__setitem__("writes", n["writes"] + (name == "/jax/compilation_cache/cache_misses")))
    jax.monitoring.register_event_duration_secs_listener(lambda name, _s, **kw: n.__setitem__(
        "programs", n["programs"] + (name == "/jax/core/compile/backend_compile_duration")))
path = sys.argv[1]
sys.argv = [path]
sys.path.insert(0, os.path.dirname(path))
runpy.run_path(path, run_name="__main__")
print(json.dumps(dict(n, process=time.perf_counter() - t0)))
"""
SCRIPTS = ("vae", "reinforce", "amp_train", "dcgan", "gpt_checkpoint", "lstm_tagger", "char_rnn")
_IMPLS = ("PyTorch", "funcgrad cold (empty cache)", "funcgrad warm (second run)", "funcgrad, cache off")


def _cold_warm(rows, bench, run, repeat, step=True):
    """Rows for one script as fresh processes: PyTorch, funcgrad cold (empty persistent cache),
    warm (the same cache, second run) and with the cache off, ``repeat`` rounds in that order
    (side by side in the same load), each row the best round. ``run(lib, env) -> (wall, dict)``."""
    best: dict = {}
    for _ in range(repeat):
        got = []
        if _has_torch():
            got.append(("PyTorch", *run("torch", None)))
        with tempfile.TemporaryDirectory() as d:
            env = {"FUNCGRAD_CACHE_DIR": d, "FUNCGRAD_CACHE": "1"}
            got += [(impl, *run("funcgrad", env)) for impl in _IMPLS[1:3]]
        got.append((_IMPLS[3], *run("funcgrad", {"FUNCGRAD_CACHE": "0"})))
        for impl, wall, r in got:
            if impl not in best or wall < best[impl][0]:
                best[impl] = (wall, r)
    for impl in _IMPLS:
        if impl not in best:
            continue
        wall, r = best[impl]
        note = [f"first step {r['first_step']:.2f} s"] if step else []
        if impl == _IMPLS[3]:
            note.append(f"{r['programs']} XLA compiles" + (f", {r['step_programs']} in the first step"
                                                           if step else ""))
        elif impl != "PyTorch":
            note.append(f"{r['writes']} XLA compiles" + (f", {r['step_writes']} in the first step"
                                                         if step else "") + f", {r['programs']} programs")
        rows.append(dict(bench=bench, impl=impl, us=wall * 1e6, note=", ".join(note)))


def _imports(rows, repeat=3):
    """``import funcgrad`` (jax, NumPy, optax and the op table) vs ``import torch`` as new
    processes, interleaved, each row its best of ``repeat``."""
    libs = ["funcgrad"] + (["torch"] if _has_torch() else [])
    best = dict.fromkeys(libs, float("inf"))
    for _ in range(max(1, repeat)):
        for lib in libs:
            wall, _ = _proc(f"import {lib}; print(1)")
            best[lib] = min(best[lib], wall)
    for lib in libs:
        rows.append(dict(bench="import as a new process", impl="PyTorch" if lib == "torch" else lib,
                         us=best[lib] * 1e6))


def _first_step(rows, repeat=1):
    for which, name in _MODELS.items():
        bench = f"whole script (import, {name} build, first Adam step) as a new process"
        _cold_warm(rows, bench, lambda lib, env: _json_proc(_SCRIPT, lib, which, env=env), repeat)


def _scripts(rows, repeat=1, names=SCRIPTS):
    """The tutorial-style scripts of tests/scripts (a source checkout only) as new processes."""
    where = os.path.join(_ROOT, "tests", "scripts")
    for name in names:
        path = os.path.join(where, f"{name}.py")
        if not os.path.exists(path):
            continue

        def run(lib, env, path=path):
            return _json_proc(_WRAP, path, env=dict(env or {}, FRAMEWORK=lib), cwd=where)
        _cold_warm(rows, f"tutorial script tests/scripts/{name}.py as a new process", run, repeat,
                   step=False)


# funcgrad's bounds, small so that they are reached early in the run (defaults: 1024 / 32)
RSS_BOUNDS = {"FUNCGRAD_MAX_EXECUTABLES": "64", "FUNCGRAD_MAX_PROGRAMS": "4"}
RSS_MODES = {"train": "eager MLP train step (Adam)", "infer": "inference-only loop (no_grad)",
             "compiled": "compiled train step (funcgrad.jit, Adam)"}
RSS_BOUND_REACHED = 50  # batch sizes after which RSS_BOUNDS are full (~4-8 compiles per size)


def _rss(rows, n, modes=("train", "infer", "compiled")):
    """RSS growth after 1 .. n distinct batch sizes, and its growth after the bounds are full
    (from ``RSS_BOUND_REACHED`` sizes on: flat, if the caches are bounded). The processes run
    side by side (they measure memory, not time: a loaded machine finishes them sooner)."""
    base = min(RSS_BOUND_REACHED, max(1, n // 5))
    marks = sorted({base, n // 2, n})
    libs = (["torch"] if _has_torch() else []) + ["funcgrad"]
    jobs = []
    for mode in modes:
        for lib in libs:
            if lib == "torch" and mode == "compiled":
                continue  # torch.compile needs a C++ toolchain: not part of this comparison
            env = (dict(os.environ, **RSS_BOUNDS, FUNCGRAD_CACHE="0", PYTHONPATH=_PYTHONPATH)
                   if lib == "funcgrad" else None)
            p = subprocess.Popen([sys.executable, "-c", _RSS, lib, mode, str(n), ",".join(map(str, marks))],
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
            jobs.append((mode, lib, p, time.perf_counter()))
    for mode, lib, p, t0 in jobs:
        out, err = p.communicate(timeout=3600)
        wall = time.perf_counter() - t0
        if p.returncode:
            raise RuntimeError(err[-2000:])
        r = {int(k): v for k, v in json.loads(out.strip().splitlines()[-1]).items()}
        after = r[n][0] - r[base][0]
        bench = (f"RSS growth over {n} distinct batch sizes after the first {base}, {RSS_MODES[mode]} "
                 f"('µs' column is MiB)")
        note = ", ".join(f"{v[0]:+.0f} MiB after {k}" for k, v in sorted(r.items()))
        if lib == "funcgrad":
            note += (f"; {after / (n - base):+.3f} MiB and {(r[n][1] - r[base][1]) / (n - base):.1f} "
                     f"XLA compiles per size after {base}")
        rows.append(dict(bench=bench, impl="PyTorch" if lib == "torch" else "funcgrad",
                         us=max(after, 0.1), note=note + f"; {wall:.0f} s"))


def _fanin(rows, sizes):
    import funcgrad as fg
    try:
        import torch
    except Exception:
        torch = None
    for op in ("cat", "stack"):
        for n in sizes:
            bench = f"{op} of {n:,} tensors of 4: forward + backward (first call)"
            for name, lib in (("PyTorch", torch), ("funcgrad", fg)):
                if lib is None:
                    continue
                xs = [lib.randn(4, requires_grad=True) for _ in range(n)]
                t0 = time.perf_counter()
                getattr(lib, op)(xs).sum().backward()
                float(xs[-1].grad[0])
                rows.append(dict(bench=bench, impl=name, us=(time.perf_counter() - t0) * 1e6))


def run(rss_sizes: int | None = None, fanin_sizes=(1_000, 10_000)) -> list[dict]:
    """``FUNCGRAD_BENCH_RSS_SIZES`` (default 500): fewer batch sizes for a quicker look."""
    if rss_sizes is None:
        rss_sizes = int(os.environ.get("FUNCGRAD_BENCH_RSS_SIZES", "500"))
    rows: list[dict] = []
    repeat = int(os.environ.get("FUNCGRAD_BENCH_REPEAT", "1"))
    _imports(rows, max(3, repeat))
    _first_step(rows, repeat)
    _scripts(rows, repeat)
    _fanin(rows, fanin_sizes)
    _rss(rows, rss_sizes)
    return rows
