"""train.self_refine: the level mixture, the SNS loss loop, the corrector's modes/variants against closed forms."""

from __future__ import annotations

import math

import pytest
import torch

from theorylab.nn.conditional_diffusion import ConditionalDiffusion, mlp_backbone
from theorylab.nn.unet import noise_schedule
from theorylab.train.rollout import rollout
from theorylab.train.self_refine import SelfRefine, draw_levels, refine, train_sns

BETAS, ABAR = noise_schedule(1000, "cosine")


class Fixed(torch.nn.Module):
    """ε̂ = 0 and logits one-hot at fixed levels; records what it sees."""

    def __init__(self, s1: int, s2: int, levels: int = 1000):
        super().__init__()
        self.s, self.levels, self.seen = (s1, s2), levels, []

    def forward(self, x, anchor=None, levels=True):
        self.seen.append(x.clone())
        logits = torch.zeros(x.shape[0], 2, self.levels)
        logits[:, 0, self.s[0]] = 1
        logits[:, 1, self.s[1]] = 1
        return torch.zeros_like(x), logits if levels else None


def test_level_mixture():
    g = torch.Generator().manual_seed(0)
    s = draw_levels(200_000, 1000, 200, 0.5, g)
    assert s.min() >= 0 and s.max() <= 999
    assert float((s < 200).double().mean()) == pytest.approx(0.5 + 0.5 * 0.2, abs=0.005)
    assert float((s >= 200).double().mean()) == pytest.approx(0.4, abs=0.005)


def test_clean_levels_are_a_no_op():
    x = torch.randn(4, 1, 8, dtype=torch.float64)
    y, info = refine(Fixed(0, 0), x, x + 1, BETAS, ABAR)
    torch.testing.assert_close(y, x + 1)
    assert info["calls"].tolist() == [1] * 4


@pytest.mark.parametrize("k", [1, 7, 40])
def test_reverse_chain_matches_the_ddpm_product(k):
    # with ε̂ = 0 and no noise, steps s = k..0 divide by Π √α_s = √ᾱ_k
    prev, prop = torch.randn(3, 1, 8, dtype=torch.float64), torch.randn(3, 1, 8, dtype=torch.float64)
    y, info = refine(Fixed(0, k), prev, prop, BETAS, ABAR, noise=False)
    torch.testing.assert_close(y, prop / math.sqrt(float(ABAR[k])))
    assert info["calls"].tolist() == [k + 2] * 3 and info["level"].tolist() == [k] * 3


def test_modes_condition_as_specified():
    torch.manual_seed(0)
    prev, prop = torch.randn(500, 1, 8, dtype=torch.float64), torch.randn(500, 1, 8, dtype=torch.float64)
    g = torch.Generator().manual_seed(1)
    for mode, expect in (("acdm", 1.0), ("sns", math.sqrt(float(ABAR[300]))), ("thermo", 0.0)):
        m = Fixed(300, 3)
        _, info = refine(m, prev, prop, BETAS, ABAR, mode=mode, generator=g)
        cond = m.seen[-1][:, 0].double()  # the conditioning frame during the reverse steps
        c = float(torch.corrcoef(torch.stack([cond.flatten(), prev.flatten()]))[0, 1])
        assert c == pytest.approx(expect, abs=0.03), mode
        assert info["level_prev"][0] == {"acdm": 0, "sns": 300, "thermo": 999}[mode]


def test_joint_variant_steps_both_frames():
    prev, prop = torch.randn(2, 1, 8, dtype=torch.float64), torch.randn(2, 1, 8, dtype=torch.float64)
    m = Fixed(5, 2)
    y_fix, i_fix = refine(m, prev, prop, BETAS, ABAR, noise=False)
    m2 = Fixed(5, 2)
    y_joint, i_joint = refine(m2, prev, prop, BETAS, ABAR, variant="joint", noise=False)
    assert i_fix["calls"].tolist() == [4, 4] and i_joint["calls"].tolist() == [7, 7]
    torch.testing.assert_close(y_fix, y_joint)  # ε̂ = 0: frame 2 sees the same steps s = 2..0
    # frame 1 was denoised alone first (levels 5..3), then both
    assert len(m2.seen) == 7 and torch.equal(m2.seen[1][:, 1], m2.seen[4][:, 1])
    assert not torch.equal(m2.seen[4][:, 1], m2.seen[5][:, 1]) and not torch.equal(m2.seen[1][:, 0], m2.seen[2][:, 0])


def test_self_refine_in_a_rollout():
    x0 = torch.randn(3, 1, 8, dtype=torch.float64)
    corr = SelfRefine(Fixed(0, 4), BETAS, ABAR, scale=2.0, noise=False)
    with pytest.raises(RuntimeError, match="reset"):
        corr(x0, 1)
    r = rollout(lambda x: 0.5 * x, x0, 3, corrector=corr.reset(x0))
    torch.testing.assert_close(r.states[:, -1], x0 * (0.5 / math.sqrt(float(ABAR[4]))) ** 3)
    assert set(r.logs) == {"level", "level_prev", "calls"} and r.logs["calls"].shape == (3, 3)
    with pytest.raises(ValueError, match="mode"):
        SelfRefine(Fixed(0, 0), BETAS, ABAR, mode="pde-refiner")


def test_train_sns_learns_levels():
    torch.manual_seed(0)
    g = torch.Generator().manual_seed(0)
    data = 0.1 * torch.randn(4, 50, 1, 16)  # below unit variance, so the noise level is identifiable
    net = ConditionalDiffusion(mlp_backbone(16, 2, 1, 64, 1), 2, 20)
    opt = torch.optim.Adam(net.parameters(), 3e-3)
    ab = noise_schedule(20, "cosine")[1]
    log = train_sns(net, data, ab, steps=300, batch=32, optimizer=opt, generator=g, levels=20, log_every=50)
    assert log[-1]["loss"] < log[0]["loss"] and math.isfinite(log[-1]["loss"])
    assert log[-1]["ce"] < 0.9 * 2 * math.log(20)  # two heads at chance: 2 ln 20
    with pytest.raises(ValueError, match="low_share"):
        train_sns(net, data, ab, steps=1, batch=2, optimizer=opt, generator=g, low_share=2.0)
