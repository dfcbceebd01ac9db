"""funcgrad.parallel / nn.parallel / distributed: multi-device checks on 8 simulated CPU devices.

The pytest process already started jax with one device, so the 8-device checks run in one
subprocess (tests/_parallel_worker.py, XLA_FLAGS=--xla_force_host_platform_device_count=8)
that prints its results as JSON; the tests below assert on them.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pytest

import funcgrad as fg
from funcgrad import nn
from funcgrad import parallel as par

WORKER = os.path.join(os.path.dirname(__file__), "_parallel_worker.py")


def _run_worker(*args) -> dict:
    env = dict(os.environ, XLA_FLAGS="--xla_force_host_platform_device_count=8",
               JAX_PLATFORMS="cpu")
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env["PYTHONPATH"] = root + os.pathsep + env.get("PYTHONPATH", "")
    p = subprocess.run([sys.executable, WORKER, *args], env=env, capture_output=True, text=True,
                       timeout=300)
    assert p.returncode == 0, p.stderr[-3000:]
    line = [ln for ln in p.stdout.splitlines() if ln.startswith("RESULT ")][-1]
    return json.loads(line[len("RESULT "):])


@pytest.fixture(scope="module")
def res() -> dict:
    return _run_worker()


def _same_params(a: dict, b: dict) -> None:
    assert a.keys() == b.keys()
    for k in a:
        np.testing.assert_allclose(np.asarray(b[k]), np.asarray(a[k]), rtol=1e-5, atol=1e-6, err_msg=k)


def test_eight_devices(res):
    assert res["devices"] == 8


@pytest.mark.parametrize("opt", ["SGD", "Adam"])
def test_data_parallel_matches_single_device(res, opt):
    ref, dp = res[f"ref_{opt}"], res[f"dp_{opt}"]
    _same_params(ref["params"], dp["params"])
    assert dp["loss"] == pytest.approx(ref["loss"], rel=1e-5)
    assert set(dp["specs"].values()) == {"P()"} and set(dp["devices"].values()) == {8}
    assert "all-reduce" in dp["collectives"]  # XLA averaged the gradients
    # one device: the first call runs the later calls' program (funcgrad/_jit/trace.py prime), one
    # program; data-parallel (multi-device) state is not primed, so its first call has its own
    assert ref["traces"] == 1 and dp["traces"] == 2


@pytest.mark.parametrize("opt", ["SGD", "Adam"])
def test_sharded_parameters_match_single_device(res, opt):
    ref, sh = res[f"ref_{opt}"], res[f"sharded_{opt}"]
    _same_params(ref["params"], sh["params"])
    # rules kept across steps (the jit bridge pins the output shardings of sharded state)
    assert sh["specs"] == {"0.weight": "P('model', None)", "0.bias": "P('model',)",
                           "2.weight": "P(None, 'model')", "2.bias": "P('model',)"}
    assert {"all-reduce", "all-gather"} & set(sh["collectives"])
    if opt == "Adam":  # optimizer state inherits the parameter sharding (ZeRO-style)
        assert sh["opt_specs"]["exp_avg"] == "P('model',)" or sh["opt_specs"]["exp_avg"] == "P('model', None)"


def test_ddp_wrapper_matches_single_device(res):
    _same_params(res["ref_ddp"]["params"], res["ddp_SGD"]["params"])
    assert "all-reduce" in res["ddp_SGD"]["collectives"]


def test_checkpoint_gathered(res):
    for k in ("dp_Adam", "sharded_Adam", "ddp_SGD"):
        assert res[k]["gathered_devices"] == 1 and res[k]["ckpt_equal"]


def test_indivisible_batch_error(res):
    assert "batch size 30" in res["bad_batch"] and "'data' mesh axis of size 8" in res["bad_batch"]


def test_loader_batches_sharded(res):
    assert res["loader"] == [["P('data',)", "P('data',)", [16, 16]]] * 2


def test_distributed_one_process_job():
    r = _run_worker("distributed")
    assert r["dist"] == [True, 0, 1]
    assert r["dist_twice"] == "trying to initialize the default process group twice!"
    assert r["dist_after"] is False


# ---- single-device (in-process) behaviour ------------------------------------------------------
def test_single_device_api():
    mesh = par.make_mesh()
    assert dict(mesh.shape) == {"data": 1, "model": 1}
    with pytest.raises(ValueError, match="needs 2 devices"):
        par.make_mesh(data=2)
    lin = par.shard_module(nn.Linear(4, 2), mesh, [("weight", par.P("data", None))])
    assert lin.weight._value.sharding.spec == par.P("data", None)
    with pytest.raises(ValueError, match="has 3 entries for a 2-d tensor"):
        par.param_specs(lin, mesh, [("weight", par.P("data", None, None))])
    assert par.param_specs(lin, mesh, [("bias", par.fsdp("data", min_size=1))]) == {
        "weight": par.P(), "bias": par.P()}  # an axis of size 1: nothing to shard
    x = par.shard_batch(fg.ones(3, 4), mesh)
    assert x.shape == (3, 4)
    with pytest.raises(ValueError, match="requires grad"):
        par.shard_batch(fg.ones(2, requires_grad=True), mesh)


def test_distributed_helpers_single_process():
    import funcgrad.distributed as dist
    assert dist.is_available() and dist.get_rank() == 0 and dist.get_world_size() == 1
    assert not dist.is_initialized()
    dist.init_process_group(world_size=1)  # nothing to connect: only marks the group
    try:
        assert dist.is_initialized()
        dist.barrier()
    finally:
        dist.destroy_process_group()
    assert not dist.is_initialized()
    with pytest.raises(ValueError, match="Default process group has not been initialized"):
        dist.destroy_process_group()


def test_ddp_state_dict_prefix_and_no_sync():
    ddp = nn.parallel.DistributedDataParallel(nn.Linear(3, 2))
    assert sorted(ddp.state_dict()) == ["module.bias", "module.weight"]
    with ddp.no_sync():
        ddp(fg.ones(2, 3)).sum().backward()
    assert ddp.module.weight.grad.shape == (2, 3)
    assert isinstance(nn.DataParallel(nn.Linear(1, 1)), nn.parallel.DistributedDataParallel)
