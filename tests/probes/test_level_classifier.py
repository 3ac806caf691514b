"""The noise-level calibration probe with a classifier whose answer is known."""

from __future__ import annotations

import torch

from theorylab.nn.unet import noise_schedule
from theorylab.probes.level_classifier import classify_levels, classify_pair_levels


def test_an_rms_classifier_recovers_the_levels_of_diffused_zeros():
    _, abar = noise_schedule(1000, "cosine")
    levels = 50
    grid = (1 - abar[:levels].float()).sqrt()  # rms of x_s when x = 0: sqrt(1 - abar_s)

    def model(x):
        rms = x.pow(2).mean(-1).sqrt()
        logits = -(rms[:, None] - grid[None, :]).abs()
        return torch.zeros_like(x), logits

    clean = torch.zeros(300, 4096)
    out = classify_levels(model, clean, abar, levels, torch.Generator().manual_seed(0))
    expected = torch.randint(0, levels, (300,), generator=torch.Generator().manual_seed(0))  # the levels come first
    assert torch.equal(out["level"], expected)
    assert (
        out["predicted"] - out["level"]
    ).abs().max() <= 1  # levels 0..49 are ~0.6% apart in rms; 4096 points resolve them
    assert bool((out["clean_predicted"] == 0).all())


def test_the_pair_probe_reads_each_frame_at_its_own_level():
    """Frames of zeros diffused to independent levels: an rms classifier per frame recovers both levels, and the
    clean pair reads level 0."""
    _, abar = noise_schedule(1000, "cosine")
    levels = 50
    grid = (1 - abar[:levels].float()).sqrt()

    def model(x):  # x: (B, 2, 1, X) -> logits (B, 2, levels)
        rms = x.pow(2).mean((-1, -2)).sqrt()
        return torch.zeros_like(x), -(rms[..., None] - grid).abs()

    gen = torch.Generator().manual_seed(1)
    s = torch.randint(0, levels, (200, 2), generator=gen)
    out = classify_pair_levels(model, torch.zeros(200, 2, 1, 4096), abar, s, gen)
    assert out["predicted"].shape == (200, 2)
    assert (out["predicted"] - s).abs().max() <= 1
    assert bool((out["clean_predicted"] == 0).all())
