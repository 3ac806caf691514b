"""The thermalizer's training loops: the exact objective of a step, the unroll curriculum, and learning."""

from __future__ import annotations

import copy

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from theorylab.core.rng import seeded
from theorylab.nn.unet import DenoiserMLP, UNet, noise_schedule
from theorylab.train.thermalizer import fit_unet_emulator, train_emulator, train_level_denoiser

_, ABAR = noise_schedule(1000, "cosine")


def test_one_denoiser_step_is_eps_mse_plus_level_cross_entropy():
    torch.manual_seed(0)
    net = DenoiserMLP(8, 16, 1, 10)
    ref = copy.deepcopy(net)
    snaps = torch.randn(50, 8)
    opt = torch.optim.SGD(net.parameters(), lr=0.1)
    log = train_level_denoiser(
        net, snaps, ABAR, steps=1, batch=6, levels=10, optimizer=opt, generator=torch.Generator().manual_seed(3)
    )
    g = torch.Generator().manual_seed(3)  # the draws in the documented order: indices, levels, noise
    x = snaps[torch.randint(0, 50, (6,), generator=g)]
    s = torch.randint(0, 10, (6,), generator=g)
    e = torch.randn(x.shape, generator=g)
    a = ABAR.float()[s][:, None]
    eps, logits = ref(a.sqrt() * x + (1 - a).sqrt() * e)
    loss = F.mse_loss(eps, e) + F.cross_entropy(logits, s)
    assert log == [dict(step=0, loss=pytest.approx(loss.item(), rel=1e-6))]
    loss.backward()
    with torch.no_grad():
        for p, q in zip(net.parameters(), ref.parameters()):
            assert torch.allclose(p, q - 0.1 * q.grad, atol=1e-6)


def test_denoiser_learns_the_noise_level():
    # 20 levels spaced 25 apart on the cosine schedule (1 - abar from ~0 to 0.6): the noise dominates small fields,
    # so a few hundred steps learn both heads; the calibration probe then reads the classifier back.
    from theorylab.probes.level_classifier import classify_levels

    torch.manual_seed(1)
    net = DenoiserMLP(16, 64, 2, 20)
    abar = ABAR[::25]
    snaps = torch.randn(2000, 16) * 0.1
    opt = torch.optim.Adam(net.parameters(), lr=3e-3)
    gen = torch.Generator().manual_seed(0)
    log = train_level_denoiser(
        net, snaps, abar, steps=300, batch=128, levels=20, optimizer=opt, generator=gen, log_every=100
    )
    assert [r["step"] for r in log] == [0, 100, 200, 299]
    assert log[-1]["loss"] < 0.6 * log[0]["loss"]
    out = classify_levels(net.eval(), torch.randn(500, 16) * 0.1, abar, 20, torch.Generator().manual_seed(1))
    assert float(torch.corrcoef(torch.stack([out["level"].double(), out["predicted"].double()]))[0, 1]) > 0.9


class Counting(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.lin, self.calls = nn.Linear(d, d, bias=False), 0

    def forward(self, x):
        self.calls += 1
        return self.lin(x)


def test_emulator_curriculum_and_a_linear_system_is_learned():
    A = torch.tensor([[0.9, 0.2], [-0.2, 0.9]])
    g = torch.Generator().manual_seed(0)
    x = [torch.randn(32, 2, generator=g)]
    for _ in range(20):
        x.append(x[-1] @ A.T)
    traj = torch.stack(x, 1)  # [B, T, 2]
    model = Counting(2)
    train_emulator(
        model,
        traj,
        steps=6,
        batch=4,
        max_unroll=3,
        optimizer=torch.optim.SGD(model.parameters(), lr=0.0),
        generator=torch.Generator().manual_seed(0),
    )
    assert model.calls == 1 + 1 + 2 + 2 + 3 + 3  # k = min(3, 1 + i * 3 // 6)
    model = Counting(2)
    log = train_emulator(
        model,
        traj,
        steps=600,
        batch=32,
        max_unroll=2,
        optimizer=torch.optim.Adam(model.parameters(), lr=2e-2),
        generator=torch.Generator().manual_seed(1),
    )
    assert torch.allclose(model.lin.weight, A, atol=1e-2) and log[-1]["loss"] < 1e-4
    with pytest.raises(RuntimeError):  # a non-finite loss stops through ``check``

        def check(what, loss, step):
            raise RuntimeError(f"{what} at {step}")

        train_emulator(
            model,
            traj,
            steps=2,
            batch=2,
            optimizer=torch.optim.SGD(model.parameters(), lr=0.0),
            generator=torch.Generator().manual_seed(0),
            check=check,
        )


@pytest.mark.parametrize("channels", [1, 2])
def test_fit_unet_emulator_is_the_seeded_unet_trained_by_train_emulator(channels):
    """The shared surrogate step of thermalizer and self-refining-surrogate: the same weights as building the U-Net
    under the seed and calling train_emulator with AdamW by hand; the init leaves the global RNG untouched."""
    data = torch.randn(3, 6, channels, 8, 8, generator=torch.Generator().manual_seed(0))
    kw = dict(steps=4, batch=2, max_unroll=2)
    state = torch.random.get_rng_state()
    fit = fit_unet_emulator(
        data,
        width=4,
        levels=1,
        init_seed=7,
        lr=1e-3,
        weight_decay=0.05,
        generator=torch.Generator().manual_seed(1),
        **kw,
    )
    assert torch.equal(torch.random.get_rng_state(), state)
    with seeded(7):
        ref = UNet(2, channels, channels, width=4, levels=1, residual=True)
    opt = torch.optim.AdamW(ref.parameters(), lr=1e-3, weight_decay=0.05)
    train_emulator(ref, data, optimizer=opt, generator=torch.Generator().manual_seed(1), **kw)
    for (name, a), b in zip(fit.state_dict().items(), ref.state_dict().values()):
        assert torch.equal(a, b), name
    assert fit(data[0, :2]).shape == (2, channels, 8, 8)
