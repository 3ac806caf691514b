"""Lockstep beta-VAE ensembles.

The tests check four things. Vectorising over runs never mixes them: each run matches a plain
``BetaVAE`` + ``torch.optim.Adam`` loop with the same seed, in float64. Seeds matter. Training lowers the
loss. At the digits recipe, runs carry unsaturated information about held-out probes and share it (the
study's claim 5).
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
import torch

from theorylab.data.digits import digits
from theorylab.nn.stochastic_encoder import BetaVAE
from theorylab.theory.info import bhattacharyya_coefficient, kt_information, nmi_vi
from theorylab.train.vae_ensemble import DIGITS_RECIPE, ensemble_seeds, run_generator, train_vae_ensemble


@pytest.fixture(scope="module")
def grey():
    """Digits as grey levels in [0, 1]: the first 300 are the held-out probes, the rest the training set."""
    x = (digits().x + 1) / 2
    return x[:300], x[300:]


def _alone(x, seed, *, steps, batch_size, beta, lr, kl_warmup, binarize, **arch):
    """The reference: one plain BetaVAE with torch.optim.Adam, drawing from the run's generator in the order
    train_vae_ensemble documents (permutation at an epoch start, binarisation, reparametrisation noise)."""
    x = torch.as_tensor(x, dtype=torch.float64)
    vae = BetaVAE(x.shape[1], beta=beta, seed=seed, **arch).double()
    opt = torch.optim.Adam(vae.parameters(), lr=lr)
    g = run_generator(seed)
    per_epoch = len(x) // batch_size
    curves = []
    for t in range(steps):
        j = t % per_epoch
        if j == 0:
            order = torch.randperm(len(x), generator=g)
        xb = x[order[j * batch_size : (j + 1) * batch_size]]
        if binarize == "stochastic":
            xb = torch.bernoulli(xb, generator=g)
        vae.beta = beta * min(1.0, (t + 1) / (kl_warmup * steps)) if kl_warmup > 0 else beta
        loss, recon, kl = vae.loss(xb, generator=g)
        opt.zero_grad()
        loss.backward()
        opt.step()
        curves.append((float(recon.detach()), float(kl.detach())))
    return vae, np.array(curves)


@pytest.mark.parametrize("binarize,kl_warmup", [("none", 0.0), ("stochastic", 0.5)])
def test_each_run_follows_its_solo_trajectory(grey, binarize, kl_warmup):
    x = grey[1][:200]
    kw = dict(steps=25, batch_size=64, beta=2.0, lr=3e-3, kl_warmup=kl_warmup, binarize=binarize)
    arch = dict(latent_dim=3, hidden=16, depth=2)
    seeds = [11, 5, 123]
    ens = train_vae_ensemble(x, seeds, dtype=torch.float64, **kw, **arch)
    for r, s in enumerate(seeds):
        vae, curves = _alone(x, s, **kw, **arch)
        for name, p in vae.state_dict().items():
            torch.testing.assert_close(ens.params[name][r], p, rtol=1e-9, atol=1e-11, msg=f"run {r}: {name}")
        np.testing.assert_allclose(ens.recon[r], curves[:, 0], rtol=1e-9)
        np.testing.assert_allclose(ens.kl[r], curves[:, 1], rtol=1e-9, atol=1e-12)
        # The unstacked module and the stacked encoder agree on probes.
        mu, var = ens.encode(grey[0][:7])
        m_mu, m_logvar = ens.model(r).encoder(torch.as_tensor(grey[0][:7]))
        torch.testing.assert_close(mu[r], m_mu.detach())
        torch.testing.assert_close(var[r], m_logvar.detach().exp())
    # A run's trajectory does not depend on its companions: alone, in another order, it is the same.
    solo = train_vae_ensemble(x, [5], dtype=torch.float64, **kw, **arch)
    torch.testing.assert_close(
        solo.params["decoder.4.weight"][0], ens.params["decoder.4.weight"][1], rtol=1e-12, atol=1e-14
    )


def test_different_seeds_give_different_models(grey):
    ens = train_vae_ensemble(grey[1], [0, 1], steps=30)
    for name, p in ens.params.items():
        assert not torch.allclose(p[0], p[1]), name
    mu, _ = ens.encode(grey[0])
    assert (mu[0] - mu[1]).abs().mean() > 0.3 * mu[0].abs().mean()
    assert not np.allclose(ens.recon[0], ens.recon[1])
    again = train_vae_ensemble(grey[1], [0, 1], steps=30)  # and a seed is reproducible, bit for bit
    assert all(torch.equal(again.params[n], p) for n, p in ens.params.items())
    assert ensemble_seeds(0, 4) == ensemble_seeds(0, 4) and len(set(ensemble_seeds(0, 4) + ensemble_seeds(1, 4))) == 8


def test_training_lowers_the_loss_on_digits(grey):
    ens = train_vae_ensemble(grey[1], ensemble_seeds(0, 2), steps=150)
    loss = ens.recon + ens.beta_schedule * ens.kl
    assert loss.shape == (2, 150)
    assert (loss[:, -20:].mean(1) < loss[:, :10].mean(1) - 10).all()  # from ~45 nats to under ~30


def test_nonsense_arguments_raise_one_clear_line(grey):
    x = grey[1][:300]
    cases = [
        dict(steps=0),
        dict(batch_size=1000),
        dict(beta=-1.0),
        dict(lr=0.0),
        dict(kl_warmup=1.5),
        dict(binarize="sometimes"),
        dict(latent_dim=0),
    ]
    for kw in cases:
        with pytest.raises(ValueError) as err:
            train_vae_ensemble(x, [0], **kw)
        assert "\n" not in str(err.value) and str(err.value).startswith("train_vae_ensemble:"), kw
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        train_vae_ensemble(digits().x, [0])  # [-1, 1] pixels are not Bernoulli targets
    with pytest.raises(ValueError, match="distinct"):
        train_vae_ensemble(x, [3, 3])


def test_a_non_finite_loss_names_the_run_and_the_step(grey):
    with pytest.raises(FloatingPointError, match=r"run \d \(seed \d+\) has a non-finite loss at step \d+"):
        train_vae_ensemble(grey[1][:256], [0, 1], steps=20, lr=1e30, batch_size=64, hidden=8)


@pytest.mark.slow  # ~20 s on one thread
def test_digits_recipe_gives_unsaturated_shared_information(grey):
    """Four runs at the study's quick settings (beta = 1, see DIGITS_RECIPE): each carries between
    0.5 bits and 0.8 log2 N about 300 held-out digits. Every pair shares it: NMI beats the NMI with the
    probe rows of one run shuffled by at least 0.3."""
    probes, train = grey
    ens = train_vae_ensemble(train, ensemble_seeds(0, 4), **DIGITS_RECIPE)
    mu, var = ens.encode(probes)
    bcs = [bhattacharyya_coefficient(mu[r], var[r]) for r in range(4)]
    cap = 0.8 * math.log2(len(probes))
    for r, bc in enumerate(bcs):
        assert 0.5 <= kt_information(bc) < cap, (r, kt_information(bc))
    perm = torch.randperm(len(probes), generator=torch.Generator().manual_seed(0))
    for a, b in itertools.combinations(range(4), 2):
        nmi, _ = nmi_vi(bcs[a], bcs[b])
        shuffled, _ = nmi_vi(bcs[a], bcs[b][perm][:, perm])
        assert nmi >= shuffled + 0.3, (a, b, nmi, shuffled)
