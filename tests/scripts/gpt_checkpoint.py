"""A small character GPT (in the style of minGPT/nanoGPT) whose blocks run under
``torch.utils.checkpoint``; a few training steps on a fixed string, then greedy generation."""

import math
import time

import numpy as np

from _common import init_from_numpy, torch

nn = torch.nn
F = torch.nn.functional
checkpoint = torch.utils.checkpoint.checkpoint
t0 = time.perf_counter()

text = "hello world, hello funcgrad, hello torch. " * 4
chars = sorted(set(text))
stoi = {c: i for i, c in enumerate(chars)}
data = torch.tensor([stoi[c] for c in text])
V, T, C, H = len(chars), 16, 32, 4


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.ln1 = nn.LayerNorm(C)
        self.attn = nn.Linear(C, 3 * C)
        self.proj = nn.Linear(C, C)
        self.ln2 = nn.LayerNorm(C)
        self.mlp = nn.Sequential(nn.Linear(C, 4 * C), nn.GELU(), nn.Linear(4 * C, C))

    def forward(self, x):
        B, L, _ = x.shape
        q, k, v = self.attn(self.ln1(x)).split(C, dim=2)
        q, k, v = (t.view(B, L, H, C // H).transpose(1, 2) for t in (q, k, v))
        att = (q @ k.transpose(-2, -1)) / math.sqrt(C // H)
        mask = torch.tril(torch.ones(L, L)) == 0
        att = F.softmax(att.masked_fill(mask, float("-inf")), dim=-1)
        y = (att @ v).transpose(1, 2).contiguous().view(B, L, C)
        x = x + self.proj(y)
        return x + self.mlp(self.ln2(x))


class GPT(nn.Module):
    def __init__(self):
        super().__init__()
        self.wte = nn.Embedding(V, C)
        self.wpe = nn.Embedding(T, C)
        self.blocks = nn.ModuleList([Block() for _ in range(2)])
        self.ln_f = nn.LayerNorm(C)
        self.head = nn.Linear(C, V, bias=False)

    def forward(self, idx):
        x = self.wte(idx) + self.wpe(torch.arange(idx.shape[1]))
        for b in self.blocks:
            x = checkpoint(b, x, use_reentrant=False)
        return self.head(self.ln_f(x))


model = init_from_numpy(GPT(), seed=4, scale=0.5)
opt = torch.optim.AdamW(model.parameters(), lr=3e-3)
starts = np.arange(0, len(text) - T - 1, 7)[:8]
xb = torch.stack([data[s:s + T] for s in starts])
yb = torch.stack([data[s + 1:s + T + 1] for s in starts])
for it in range(6):
    logits = model(xb)
    loss = F.cross_entropy(logits.view(-1, V), yb.view(-1))
    opt.zero_grad()
    loss.backward()
    opt.step()
    print(f"iter {it} loss {loss.item():.4f}")

idx = xb[:1]
with torch.no_grad():  # a sliding window of T tokens: every step has the training shapes' length
    for _ in range(8):
        nxt = model(idx[:, -T:])[:, -1].argmax(-1, keepdim=True)
        idx = torch.cat([idx, nxt], dim=1)
print("generated", repr("".join(chars[i] for i in idx[0].tolist())))
print(f"wall {time.perf_counter() - t0:.2f}s")
