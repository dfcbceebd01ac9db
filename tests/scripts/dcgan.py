"""DCGAN (PyTorch's DCGAN tutorial, shrunk to 8x8 images): ConvTranspose2d/BatchNorm2d generator,
Conv2d/LeakyReLU discriminator, BCELoss, Adam(betas=(0.5, 0.999)), two alternating updates."""

import time

import numpy as np

from _common import init_from_numpy, torch

nn = torch.nn
t0 = time.perf_counter()
torch.backends.cudnn.benchmark = True
nz, ngf, ndf, nc = 4, 8, 8, 1


class Generator(nn.Module):
    def __init__(self):
        super().__init__()
        self.main = nn.Sequential(
            nn.ConvTranspose2d(nz, ngf * 2, 4, 1, 0, bias=False), nn.BatchNorm2d(ngf * 2), nn.ReLU(True),
            nn.ConvTranspose2d(ngf * 2, nc, 4, 2, 1, bias=False), nn.Tanh())

    def forward(self, input):
        return self.main(input)


class Discriminator(nn.Module):
    def __init__(self):
        super().__init__()
        self.main = nn.Sequential(
            nn.Conv2d(nc, ndf, 4, 2, 1, bias=False), nn.LeakyReLU(0.2, inplace=True),
            nn.Conv2d(ndf, 1, 4, 1, 0, bias=False), nn.Sigmoid())

    def forward(self, input):
        return self.main(input)


netG = init_from_numpy(Generator(), seed=5, scale=1.0)
netD = init_from_numpy(Discriminator(), seed=6, scale=1.0)
criterion = nn.BCELoss()
rng = np.random.default_rng(0)
real = torch.tensor(np.tanh(rng.normal(size=(6, nc, 8, 8))).astype(np.float32))
optimizerD = torch.optim.Adam(netD.parameters(), lr=2e-3, betas=(0.5, 0.999))
optimizerG = torch.optim.Adam(netG.parameters(), lr=2e-3, betas=(0.5, 0.999))
real_label, fake_label = 1.0, 0.0

for i in range(3):
    netD.zero_grad()
    label = torch.full((6,), real_label, dtype=torch.float)
    output = netD(real).view(-1)
    errD_real = criterion(output, label)
    errD_real.backward()
    D_x = output.mean().item()
    noise = torch.tensor(rng.normal(size=(6, nz, 1, 1)).astype(np.float32))
    fake = netG(noise)
    label.fill_(fake_label)
    output = netD(fake.detach()).view(-1)
    errD_fake = criterion(output, label)
    errD_fake.backward()
    D_G_z1 = output.mean().item()
    errD = errD_real + errD_fake
    optimizerD.step()
    netG.zero_grad()
    label.fill_(real_label)
    output = netD(fake).view(-1)
    errG = criterion(output, label)
    errG.backward()
    D_G_z2 = output.mean().item()
    optimizerG.step()
    print(f"[{i}/3]\tLoss_D: {errD.item():.4f}\tLoss_G: {errG.item():.4f}\tD(x): {D_x:.4f}\t"
          f"D(G(z)): {D_G_z1:.4f} / {D_G_z2:.4f}")
print("running_mean", netG.main[1].running_mean[:4])
print(f"wall {time.perf_counter() - t0:.2f}s")
