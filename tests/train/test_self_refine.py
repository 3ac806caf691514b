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


class Blind(torch.nn.Module):
    """A fixed noise-blind network: ε̂ linear in the frames, levels from the pair's mean square (so they differ per
    trajectory and per step)."""

    def __init__(self, n: int, levels: int = 1000):
        super().__init__()
        g = torch.Generator().manual_seed(3)
        self.w = torch.randn(2 * n, 2 * n, generator=g, dtype=torch.float64) / (4 * n) ** 0.5
        self.levels = levels

    def forward(self, x, anchor=None, levels=True):
        x = x.double()
        eps = (x.flatten(1) @ self.w).view_as(x)
        if not levels:
            return eps.float(), None
        ms = x.pow(2).flatten(2).mean(-1)  # [B, 2]
        lv = (10 * (ms - 0.5).clamp(min=0) + 20 * x.flatten(2)[..., 0].abs()).long().clamp(max=30)
        return eps.float(), torch.nn.functional.one_hot(lv, self.levels).float()


@pytest.mark.parametrize("min_start", [1, 3, None])
def test_pipelined_rollout_equals_the_synchronous_one(min_start):
    # acdm mode without reverse noise draws nothing: every trajectory's path is deterministic, and the pipelined
    # engine must give the synchronous rollout's states and logs whatever order the trajectories advance in
    from theorylab.train.rollout import rollout_pipelined

    torch.manual_seed(0)
    x0 = torch.randn(7, 1, 8, dtype=torch.float64)
    step = lambda x: 0.9 * x.roll(1, -1) + 0.3  # noqa: E731
    net = Blind(8)
    sync = rollout(
        step,
        x0,
        6,
        corrector=SelfRefine(net, BETAS, ABAR, mode="acdm", noise=False, scale=1.5).reset(x0),
        record_every=2,
    )
    pipe = rollout_pipelined(
        step,
        x0,
        6,
        SelfRefine(net, BETAS, ABAR, mode="acdm", noise=False, scale=1.5).reset(x0),
        record_every=2,
        min_start=min_start,
    )
    assert sync.logs["calls"].float().std() > 0  # the trajectories' schedules differ
    torch.testing.assert_close(pipe.states, sync.states, rtol=1e-9, atol=1e-9)
    assert torch.equal(pipe.times, sync.times) and torch.equal(pipe.blowup_step, sync.blowup_step)
    for k in ("level", "level_prev", "calls"):
        assert torch.equal(pipe.logs[k], sync.logs[k]), k


@pytest.mark.parametrize("variant", ["fix_short", "joint"])
def test_pipelined_sns_schedules(variant):
    # with forward diffusion of x_{t−1} (random), each logged step still costs its schedule: 1 + (max level + 1)
    from theorylab.train.rollout import rollout_pipelined

    x0 = torch.randn(5, 1, 8, dtype=torch.float64)
    g = torch.Generator().manual_seed(0)
    r = rollout_pipelined(
        lambda x: 0.9 * x.roll(1, -1) + 0.3,
        x0,
        5,
        SelfRefine(Blind(8), BETAS, ABAR, variant=variant, generator=g).reset(x0),
    )
    top = r.logs["level"] if variant == "fix_short" else torch.maximum(r.logs["level"], r.logs["level_prev"])
    assert torch.equal(r.logs["calls"], torch.where(top > 0, top + 2, 1)) and torch.isfinite(r.states).all()


def test_pipelined_rollout_freezes_a_blown_up_trajectory():
    from theorylab.train.rollout import rollout_pipelined

    x0 = torch.randn(3, 1, 8, dtype=torch.float64)

    def step(x):
        y = 0.5 * x
        y[x[:, 0, 0] > 1e3] = float("inf")
        return y

    x0[1] = 2e3
    r = rollout_pipelined(step, x0, 4, SelfRefine(Fixed(0, 2), BETAS, ABAR, noise=False).reset(x0))
    assert r.blowup_step.tolist() == [-1, 1, -1]
    assert torch.isnan(r.states[1, 1:]).all() and torch.isfinite(r.states[[0, 2]]).all()
    assert r.logs["calls"][:, 1].tolist() == [1, 0, 0, 0] and r.logs["calls"][:, 0].tolist() == [4] * 4


def test_anchor_rows_follow_the_trajectories():
    # rows finish at different levels (ŝ_2 = 3 x row), so later calls see row subsets: each must get its own anchor
    class Spy(torch.nn.Module):
        def forward(self, x, anchor, levels=True):
            assert torch.equal(anchor[:, 0, :, 0], x[:, 0, :, 0])  # acdm: the conditioning frame is x_{t−1} itself
            logits = torch.zeros(x.shape[0], 2, 1000)
            logits[torch.arange(x.shape[0]), 1, (3 * x[:, 0, 0, 0]).long()] = 1
            return torch.zeros_like(x), logits if levels else None

    prev = torch.arange(5, dtype=torch.float64).view(5, 1, 1).expand(5, 1, 4).clone()
    y, info = refine(Spy(), prev, prev + 0.5, BETAS, ABAR, mode="acdm", anchor=prev, noise=False)
    assert info["level"].tolist() == [0, 3, 6, 9, 12] and info["calls"].tolist() == [1, 5, 8, 11, 14]
