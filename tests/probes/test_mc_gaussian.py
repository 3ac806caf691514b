"""MC-dropout Gaussians: the fitted mean and variance against the closed form for dropout followed by a
linear layer, and the mode handling (only dropout switched on, every flag restored, batch norm untouched)."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from theorylab.probes.mc_gaussian import dropout_modules, mc_gaussian


def _dropout_linear(p: float, d: int = 6, m: int = 3) -> nn.Sequential:
    g = torch.Generator().manual_seed(0)
    lin = nn.Linear(d, m).double()
    with torch.no_grad():
        lin.weight.copy_(torch.randn(m, d, generator=g, dtype=torch.float64))
        lin.bias.copy_(torch.randn(m, generator=g, dtype=torch.float64))
    return nn.Sequential(nn.Dropout(p), lin)


def test_dropout_then_linear_matches_the_closed_form():
    """y = W (x * mask / (1 - p)) + b, mask ~ Bernoulli(1 - p): E y = W x + b and
    Var y_o = sum_i W_oi^2 x_i^2 p / (1 - p). Tolerances are 5 standard errors."""
    p, n = 0.3, 20_000
    model = _dropout_linear(p)
    x = torch.randn(4, 6, generator=torch.Generator().manual_seed(1), dtype=torch.float64)
    mean, var = mc_gaussian(model, x, n, seed=0)
    w, b = model[1].weight, model[1].bias
    true_mean = x @ w.T + b
    true_var = (x.square() @ w.square().T) * p / (1 - p)
    assert mean.shape == var.shape == (4, 3) and mean.dtype == torch.float64
    assert ((mean - true_mean).abs() <= 5 * (true_var / n).sqrt()).all()
    # The sample variance of a bounded variable has standard error below sqrt(m4 / n); m4 <= (range / 2)^2 var.
    half_range = (x.abs() @ w.abs().T) / (1 - p)
    assert ((var - true_var).abs() <= 5 * half_range * true_var.sqrt() / n**0.5).all()
    assert ((var / true_var - 1).abs() < 0.1).all()


def test_no_dropout_means_zero_variance_and_the_eval_output():
    model = _dropout_linear(0.0)
    x = torch.randn(2, 6, dtype=torch.float64)
    mean, var = mc_gaussian(model, x, 5)
    torch.testing.assert_close(mean, model(x))
    assert torch.equal(var, torch.zeros_like(var))


def test_unbiased_and_population_variance_differ_by_n_over_n_minus_1():
    model = _dropout_linear(0.5)
    x = torch.ones(1, 6, dtype=torch.float64)
    m1, v1 = mc_gaussian(model, x, 7, seed=3)
    m0, v0 = mc_gaussian(model, x, 7, seed=3, unbiased=False)
    assert torch.equal(m1, m0)
    torch.testing.assert_close(v0, v1 * 6 / 7, rtol=1e-12, atol=0)


def test_only_dropout_is_switched_on_and_every_flag_is_restored():
    model = nn.Sequential(nn.Linear(5, 8), nn.BatchNorm1d(8), nn.Dropout(0.5), nn.Linear(8, 2))
    model.train()
    model[3].eval()  # mixed flags must come back exactly as they were
    before = [m.training for m in model.modules()]
    bn = model[1]
    bn.running_mean.fill_(0.3)
    stats = (bn.running_mean.clone(), bn.running_var.clone(), int(bn.num_batches_tracked))
    x = torch.randn(16, 5)
    rng = torch.get_rng_state()
    mean, var = mc_gaussian(model, x, 10, seed=1)
    assert [m.training for m in model.modules()] == before
    assert torch.equal(bn.running_mean, stats[0]) and torch.equal(bn.running_var, stats[1])
    assert int(bn.num_batches_tracked) == stats[2]  # eval-mode batch norm: running statistics untouched
    assert torch.equal(torch.get_rng_state(), rng)  # seed= leaves the caller's stream alone
    assert (var > 0).all()
    # Batch norm ran in eval mode: with dropout off (p = 0) the mean is exactly the eval-mode output.
    model[2].p = 0.0
    model.eval()
    mean0, _ = mc_gaussian(model, x, 2)
    torch.testing.assert_close(mean0.float(), model(x))
    assert dropout_modules(model) == [model[2]]


def test_flags_are_restored_when_a_pass_fails_and_bad_arguments_raise():
    model = _dropout_linear(0.5)
    model.train()

    def boom(out):
        raise RuntimeError("boom")

    with pytest.raises(RuntimeError, match="boom"):
        mc_gaussian(model, torch.ones(1, 6, dtype=torch.float64), 4, features=boom)
    assert all(m.training for m in model.modules())
    with pytest.raises(ValueError, match="n_pass"):
        mc_gaussian(model, torch.ones(1, 6, dtype=torch.float64), 1)
    with pytest.raises(ValueError, match="no dropout"):
        mc_gaussian(nn.Linear(6, 2), torch.ones(1, 6), 4)


def test_seeded_passes_are_reproducible_and_features_select_an_output():
    model = nn.Sequential(nn.Linear(4, 4), nn.Dropout(0.2))

    class Pair(nn.Module):
        def __init__(self):
            super().__init__()
            self.body = model

        def forward(self, x):
            h = self.body(x)
            return {"hidden": h, "sum": h.sum(-1)}

    x = torch.randn(3, 4)
    a = mc_gaussian(Pair(), x, 6, seed=5, features=lambda out: out["hidden"])
    b = mc_gaussian(model, x, 6, seed=5)
    assert torch.equal(a[0], b[0]) and torch.equal(a[1], b[1])
    c = mc_gaussian(model, x, 6, seed=6)
    assert not torch.equal(b[1], c[1])
