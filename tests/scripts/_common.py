"""Shared header of the tutorial-style scripts: FRAMEWORK=funcgrad runs them with
``import funcgrad as torch``, anything else with PyTorch; weights come from fixed NumPy arrays
(the two frameworks' random streams differ), so both print the same numbers."""

import os

import numpy as np

if os.environ.get("FRAMEWORK") == "funcgrad":
    import funcgrad as torch
else:
    import torch


def init_from_numpy(model, seed=0, scale=0.3):
    """Load every parameter/buffer of ``model`` from a seeded NumPy normal draw."""
    rng = np.random.default_rng(seed)
    sd = {}
    for k, v in model.state_dict().items():
        if v.dtype.is_floating_point:
            if k.endswith("running_var") or k.endswith("weight") and v.dim() == 1:
                a = np.ones(tuple(v.shape))
            elif k.endswith("running_mean") or k.endswith("bias"):
                a = np.zeros(tuple(v.shape))
            else:
                a = rng.normal(0.0, scale / max(1.0, np.sqrt(v.shape[-1])), tuple(v.shape))
            sd[k] = torch.tensor(a, dtype=torch.float32)
        else:
            sd[k] = v
    model.load_state_dict(sd)
    return model
