"""Mixed-precision training loop (PyTorch's "Automatic Mixed Precision" recipe) on CPU:
autocast(bfloat16) forward, GradScaler scale/step/update, including a step with an inf loss."""

import time

import numpy as np

from _common import init_from_numpy, torch

nn = torch.nn
t0 = time.perf_counter()

net = init_from_numpy(nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 4)), seed=3)
opt = torch.optim.SGD(net.parameters(), lr=0.05)
scaler = torch.amp.GradScaler("cpu", init_scale=1024.0, growth_interval=3)
rng = np.random.default_rng(0)
x = torch.tensor(rng.normal(size=(32, 16)).astype(np.float32))
y = torch.tensor(rng.integers(0, 4, size=32))
loss_fn = nn.CrossEntropyLoss()

for step in range(8):
    with torch.autocast(device_type="cpu", dtype=torch.bfloat16):
        output = net(x)
        loss = loss_fn(output, y)
    if step == 4:
        loss = loss * float("inf")  # an overflow: the step is skipped and the scale backs off
    opt.zero_grad()
    scaler.scale(loss).backward()
    scaler.step(opt)
    scaler.update()
    print(f"step {step} out {output.dtype} loss {loss.dtype} {loss.item():.2f} scale {scaler.get_scale()}")

print("state", scaler.state_dict())
print("w", net[2].bias.detach())
print(f"wall {time.perf_counter() - t0:.2f}s")
