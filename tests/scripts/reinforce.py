"""REINFORCE (PyTorch examples' reinforcement_learning/reinforce.py) on a tiny deterministic
bandit-like environment: Categorical policy, -log_prob * return, entropy bonus."""

import time

import numpy as np

from _common import init_from_numpy, torch

nn = torch.nn
F = torch.nn.functional
Categorical = torch.distributions.Categorical
t0 = time.perf_counter()


class Policy(nn.Module):
    def __init__(self):
        super().__init__()
        self.affine1 = nn.Linear(4, 32)
        self.dropout = nn.Dropout(p=0.0)
        self.affine2 = nn.Linear(32, 3)

    def forward(self, x):
        x = self.dropout(F.relu(self.affine1(x)))
        return F.softmax(self.affine2(x), dim=1)


policy = init_from_numpy(Policy(), seed=2)
optimizer = torch.optim.Adam(policy.parameters(), lr=1e-2)
rng = np.random.default_rng(0)
states = torch.tensor(rng.normal(size=(10, 4)).astype(np.float32))
gamma = 0.9

for episode in range(1, 9):
    probs = policy(states)
    m = Categorical(probs)
    # the "sampled" actions come from a fixed NumPy stream (frameworks' RNGs differ)
    actions = torch.tensor(rng.integers(0, 3, size=10))
    rewards = (actions == 1).float() - 0.1 * (actions == 2).float()
    R, returns = 0.0, []
    for r in reversed(rewards.tolist()):
        R = r + gamma * R
        returns.insert(0, R)
    returns = torch.tensor(returns)
    returns = (returns - returns.mean()) / (returns.std() + 1e-6)
    loss = (-m.log_prob(actions) * returns).sum() - 0.01 * m.entropy().sum()
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    print(f"Episode {episode}\tloss: {loss.item():.4f}\tp(a=1): {probs[:, 1].mean().item():.4f}")

print("final probs", policy(states[:2]).detach())
print(f"wall {time.perf_counter() - t0:.2f}s")
