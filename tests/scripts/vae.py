"""A variational autoencoder (PyTorch examples' vae/main.py, smaller, on synthetic data) with
``torch.distributions``: Normal posterior via rsample, Bernoulli likelihood, KL to the prior."""

import time

import numpy as np

from _common import init_from_numpy, torch

nn = torch.nn
F = torch.nn.functional
D = torch.distributions
t0 = time.perf_counter()


class VAE(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(16, 32)
        self.fc21 = nn.Linear(32, 4)
        self.fc22 = nn.Linear(32, 4)
        self.fc3 = nn.Linear(4, 32)
        self.fc4 = nn.Linear(32, 16)

    def encode(self, x):
        h1 = F.relu(self.fc1(x))
        return self.fc21(h1), self.fc22(h1)

    def decode(self, z):
        return self.fc4(F.relu(self.fc3(z)))

    def forward(self, x, eps):
        mu, logvar = self.encode(x)
        q = D.Normal(mu, torch.exp(0.5 * logvar))
        z = mu + eps * q.stddev  # rsample with a fixed eps, so both frameworks draw the same z
        return self.decode(z), q


model = init_from_numpy(VAE(), seed=1)
optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
rng = np.random.default_rng(0)
data = torch.tensor((rng.random((64, 16)) > 0.5).astype(np.float32))
prior = D.Normal(torch.zeros(4), torch.ones(4))

for epoch in range(1, 6):
    model.train()
    eps = torch.tensor(rng.normal(size=(64, 4)).astype(np.float32))
    optimizer.zero_grad()
    logits, q = model(data, eps)
    rec = -D.Bernoulli(logits=logits).log_prob(data).sum()
    kld = D.kl_divergence(q, prior).sum()
    loss = rec + kld
    loss.backward()
    optimizer.step()
    print(f"====> Epoch: {epoch} Average loss: {loss.item() / len(data):.4f} (rec {rec.item():.3f}, kl {kld.item():.3f})")

with torch.no_grad():
    logits, q = model(data[:2], torch.zeros(2, 4))
    print("entropy", q.entropy().sum(-1))
    print("recon", torch.sigmoid(logits)[0, :4])
print(f"wall {time.perf_counter() - t0:.2f}s")
