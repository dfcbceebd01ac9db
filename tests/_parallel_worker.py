"""Multi-device checks for tests/test_parallel.py, run in a subprocess with 8 simulated CPUs.

XLA_FLAGS must be set before jax initialises its backend, which the pytest process has already
done with one device: so this script runs alone and prints one JSON object of results.
"""

from __future__ import annotations

import json
import os
import socket
import sys

os.environ.setdefault("XLA_FLAGS", "--xla_force_host_platform_device_count=8")

import jax  # noqa: E402


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("localhost", 0))
        return s.getsockname()[1]


res: dict = {}
if sys.argv[1:] == ["distributed"]:
    # multi-host launch as far as one machine allows: a 1-process job, before `import funcgrad`
    jax.distributed.initialize(coordinator_address=f"localhost:{_free_port()}", num_processes=1,
                               process_id=0)
    import funcgrad.distributed as dist

    res["dist"] = [dist.is_initialized(), dist.get_rank(), dist.get_world_size()]
    dist.barrier()
    try:
        dist.init_process_group(init_method="env://", world_size=1)
    except RuntimeError as e:
        res["dist_twice"] = str(e)
    dist.destroy_process_group()
    res["dist_after"] = dist.is_initialized()
    print("RESULT " + json.dumps(res))
    sys.exit(0)

import numpy as np  # noqa: E402

import funcgrad as fg  # noqa: E402
from funcgrad import nn  # noqa: E402
from funcgrad import parallel as par  # noqa: E402

P = par.P
res["devices"] = jax.device_count()
COLL = ("all-reduce", "reduce-scatter", "all-gather", "all-to-all", "collective-permute")

X = np.random.RandomState(0).randn(32, 16).astype(np.float32)
Y = np.random.RandomState(1).randn(32, 4).astype(np.float32)


def build(opt_name):
    fg.manual_seed(0)
    model = nn.Sequential(nn.Linear(16, 32), nn.Tanh(), nn.Linear(32, 4))
    opt = getattr(fg.optim, opt_name)(model.parameters(), lr=1e-2)

    @fg.jit
    def step(x, y):
        opt.zero_grad()
        loss = nn.functional.mse_loss(model(x), y)
        loss.backward()
        opt.step()
        return loss

    return model, opt, step


def train(mode, opt_name, n=4):
    model, opt, step = build(opt_name)
    x, y = fg.tensor(X), fg.tensor(Y)
    if mode == "dp":
        mesh = par.make_mesh(data=8)
        par.shard_module(model, mesh)
    elif mode == "sharded":
        mesh = par.make_mesh(data=4, model=2)
        par.shard_module(model, mesh, [(r"^0\.weight$", P("model", None)),
                                       (r"weight$", P(None, "model")), (r".*", par.fsdp("model", 1))])
    elif mode == "ddp":
        mesh = par.make_mesh(data=8)
        model = nn.parallel.DistributedDataParallel(model, mesh=mesh)
        opt = fg.optim.SGD(model.parameters(), lr=1e-2)

        @fg.jit
        def step(x, y):
            opt.zero_grad()
            loss = nn.functional.mse_loss(model(x), y)
            loss.backward()
            opt.step()
            return loss
    if mode in ("dp", "sharded"):
        x, y = par.shard_batch((x, y), mesh)
    for _ in range(n):
        loss = step(x, y)
    out = {"params": {k.removeprefix("module."): np.asarray(p.detach()._value).tolist()
                      for k, p in model.named_parameters()},
           "loss": float(loss), "traces": step.num_traces}
    if mode:
        txt = par.compiled_text(step, x, y)
        out["collectives"] = [c for c in COLL if c in txt]
        out["specs"] = {k: str(p._value.sharding.spec) for k, p in model.named_parameters()}
        out["devices"] = {k: len(p._value.sharding.device_set) for k, p in model.named_parameters()}
        st = next(iter(opt.state.values()), {})
        out["opt_specs"] = {k: str(v._value.sharding.spec) for k, v in st.items()}
        # checkpoint: gathered to one device, saved, loaded into a fresh model, re-sharded
        sd = par.gather(model.state_dict())
        out["gathered_devices"] = max(len(v._value.sharding.device_set) for v in sd.values())
        path = os.path.join(os.environ.get("TMPDIR", "/tmp"), f"fg_par_{os.getpid()}.pt")
        fg.save(sd, path)
        back = fg.load(path)
        os.remove(path)
        out["ckpt_equal"] = all(np.array_equal(np.asarray(back[k]._value), np.asarray(v._value))
                                for k, v in sd.items())
    return out


for opt_name in ("SGD", "Adam"):
    res[f"ref_{opt_name}"] = train(None, opt_name)
    for mode in ("dp", "sharded"):
        res[f"{mode}_{opt_name}"] = train(mode, opt_name)
res["ref_ddp"] = res["ref_SGD"]
res["ddp_SGD"] = train("ddp", "SGD")

# a batch not divisible by the data axis
mesh = par.make_mesh(data=8)
try:
    par.shard_batch(fg.ones(30, 3), mesh)
    res["bad_batch"] = None
except ValueError as e:
    res["bad_batch"] = str(e)

# a DataLoader's batches placed on the mesh, with prefetch
from funcgrad.utils.data import DataLoader, TensorDataset  # noqa: E402

ds = TensorDataset(fg.tensor(X), fg.tensor(Y))
batches = list(par.shard_loader(DataLoader(ds, batch_size=16), mesh, prefetch=1))
res["loader"] = [[str(b._value.sharding.spec) for b in bt] + [list(bt[0].shape)] for bt in batches]

print("RESULT " + json.dumps(res))
