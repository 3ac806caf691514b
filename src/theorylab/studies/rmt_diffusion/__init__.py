"""rmt-diffusion: random-matrix theory of cross-split consistency in (linear) diffusion models.

Paper: B. Wang, J. A. Zavatone-Veth, C. Pehlevan, "A Random Matrix Theory Perspective on the
Consistency of Diffusion Models", arXiv 2602.02908 (2026).

The linear theory: the renormalised noise level kappa(sigma^2), deterministic equivalents of the mean
and variance of the linear denoiser, of E[Sigma_hat^(1/2)] and of the PF-ODE sampling map, checked
against Monte Carlo over many data-set draws; and the cross-split consistency of linear maps fitted
to disjoint splits of the 8x8 digits.

The deep part: EDM denoisers (``theorylab.nn.edm``, ``theorylab.train.edm``) trained on two disjoint
splits and sampled with the deterministic Heun sampler from shared seeds. At quick this is the card's
MLP pair (claim ``deep-follows-linear``); at paper the UNet/DiT (``diffusers``) pair plus the
PC2-stratified and i.i.d. groups give the deep halves of ``moment-mismatch`` and
``seed-level-prediction``, which at quick are judged on linear maps only and say so.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import torch

from theorylab.core import ConfigError, RunContext, study
from theorylab.core.cpu import BASE_BYTES
from theorylab.core.plotting import new_figure
from theorylab.data.digits import ImageSet, digits, disjoint_splits, stratify_by_pc
from theorylab.data.gaussian import PowerLawGaussian
from theorylab.data.images import ImageFolderArray
from theorylab.nn.denoisers import LinearDenoiser, linear_samples
from theorylab.nn.edm import make_backbone
from theorylab.probes.cross_split import cross_split_samples, linear_map_disagreement
from theorylab.probes.dataset_draws import bilinear_denoiser_draws, draws_peak_bytes, spectral_draws
from theorylab.probes.distances import nearest_mse, paired_mse, spearman
from theorylab.probes.estimators import variance_with_se
from theorylab.studies.rmt_diffusion.config import PRESETS, RMTDiffusionConfig, _check_split_sizes
from theorylab.studies.rmt_diffusion.figures import (
    figure_cross_split,
    figure_deep_samples,
    figure_kappa,
    figure_mean,
    figure_sampling_map,
    figure_variance,
)
from theorylab.studies.rmt_diffusion.judges import claims
from theorylab.theory import rmt
from theorylab.train.edm import edm_samples, train_edm_models

PAPER = "Wang, Zavatone-Veth, Pehlevan, arXiv 2602.02908 (2026)"


def _synthetic(cfg: RMTDiffusionConfig, ctx: RunContext) -> None:
    # Every estimator here is rotation-equivariant, so we work in the population eigenbasis
    # (Sigma = diag(lambda)); tests check that a random basis changes nothing.
    lam = PowerLawGaussian(cfg.d, cfg.decay).eigenvalues
    rng = ctx.rng("probes")
    # Readout vectors v: random unit directions; inputs x: draws from the data; map inputs sigma_T z.
    probe_v = rng.standard_normal((cfg.n_probe, cfg.d))
    probe_v /= np.linalg.norm(probe_v, axis=1, keepdims=True)
    probe_x = rng.standard_normal((cfg.n_probe, cfg.d)) * np.sqrt(lam)
    map_inputs = cfg.sigma_T * rng.standard_normal((cfg.n_probe, cfg.d))
    s2 = np.asarray(cfg.sigma2)
    modes = np.arange(1, cfg.d + 1)
    for n in cfg.ns:
        # (1) Spectral statistics: one eigendecomposition per data-set draw.
        sim = spectral_draws(
            lam,
            n,
            cfg.draws,
            cfg.chunk,
            s2,
            cfg.map_sigma,
            cfg.sigma_T,
            map_inputs,
            ctx.rng(f"wishart/{n}"),
            ctx.device,
            progress=ctx.progress,
            check=ctx.check_finite,
        )
        # (2) Bilinear forms v^T D(x) = v^T x - sigma^2 v^T (Sigma_hat + sigma^2)^-1 x, by Cholesky.
        values = bilinear_denoiser_draws(
            lam,
            n,
            cfg.var_draws,
            cfg.chunk,
            cfg.var_sigma2,
            probe_v,
            probe_x,
            ctx.rng(f"wishart-var/{n}"),
            ctx.device,
            progress=ctx.progress,
        )
        ctx.check_finite(f"denoiser bilinear forms (n={n})", values)

        # Theory next to each measurement.
        rmt_mean = rmt.denoiser_mean_equiv(s2, lam, n)  # (S, d)
        naive = lam / (lam + s2[:, None])
        kappa = rmt.solve_kappa(s2, lam, n)
        gain = sim["gain"]
        for si, sig2 in enumerate(s2):
            ctx.table(
                "mean_equiv",
                {
                    "n": n,
                    "gamma": cfg.d / n,
                    "sigma2": sig2,
                    "kappa": kappa[si],
                    "mode": modes,
                    "lambda": lam,
                    "sim_mean": gain.mean[si],
                    "sim_se": gain.se[si],
                    "rmt": rmt_mean[si],
                    "naive": naive[si],
                },
            )
        ctx.table(
            "sqrt_equiv",
            {
                "n": n,
                "mode": modes,
                "lambda": lam,
                "sim_mean": sim["sqrt"].mean,
                "sim_se": sim["sqrt"].se,
                "quad": rmt.sqrt_equiv(lam, n, cfg.quad_nodes),
                "quad_2x": rmt.sqrt_equiv(lam, n, 2 * cfg.quad_nodes),
            },
        )
        sim_var, sim_var_se = variance_with_se(values)
        theory = rmt.denoiser_var_equiv(probe_v, probe_x, cfg.var_sigma2, lam, n)
        scaling, weights = rmt.variance_factors(cfg.var_sigma2, lam, n)
        v_idx, x_idx = (a.ravel() for a in np.meshgrid(np.arange(cfg.n_probe), np.arange(cfg.n_probe), indexing="ij"))
        ctx.table(
            "variance",
            {
                "n": n,
                "v": v_idx,
                "x": x_idx,
                "sim_var": sim_var.ravel(),
                "theory_var": theory.ravel(),
                "scaling": scaling,
                "anisotropy": (probe_v**2 * weights).sum(-1)[v_idx],
                "inhomogeneity": (probe_x**2 * weights).sum(-1)[x_idx],
                "ratio": (sim_var / theory).ravel(),
                "ratio_se": (sim_var_se / theory).ravel(),
            },
        )
        for s in cfg.map_sigma:
            eq_mean = rmt.sampling_map_mean_equiv(lam, n, s, cfg.sigma_T, cfg.map_nodes)
            ctx.table(
                "sampling_map_mean",
                {
                    "n": n,
                    "sigma": s,
                    "mode": modes,
                    "lambda": lam,
                    "sim_mean": sim["map_mean"][s].mean,
                    "sim_se": sim["map_mean"][s].se,
                    "equiv": eq_mean,
                    "equiv_2x": rmt.sampling_map_mean_equiv(lam, n, s, cfg.sigma_T, 2 * cfg.map_nodes),
                },
            )
            outputs = sim["map_outputs"][s]  # (draws, m, d)
            eq_var = rmt.sampling_map_var(map_inputs, lam, n, s, cfg.sigma_T, cfg.map_nodes // 2).sum(-1)
            sim_var_total, sim_var_se = variance_with_se(outputs, event_dims=1)  # of ||F u||: (m,)
            eq_out = map_inputs * eq_mean
            eq_norm = np.linalg.norm(eq_out, axis=1)
            ctx.table(
                "sampling_map",
                {
                    "n": n,
                    "sigma": s,
                    "input": np.arange(cfg.n_probe),
                    "sim_var": sim_var_total,
                    "theory_var": eq_var,
                    "var_ratio": sim_var_total / eq_var,
                    "var_ratio_se": sim_var_se / eq_var,
                    "mean_rel_err": np.linalg.norm(outputs.mean(0) - eq_out, axis=1) / eq_norm,
                    "mean_rel_se": np.sqrt(sim_var_total / len(outputs)) / eq_norm,
                },
            )


def _kappa_grid(cfg: RMTDiffusionConfig, ctx: RunContext) -> None:
    """kappa(sigma^2) over ten decades for gamma in {1/4, 1/2, 1, 2, 4} and every configured n, and its two limits."""
    lam = PowerLawGaussian(cfg.d, cfg.decay).eigenvalues
    sizes = sorted({*cfg.ns, *(round(cfg.d / g) for g in (0.25, 0.5, 1.0, 2.0, 4.0))})
    ctx.table("kappa", rmt.kappa_grid(lam, sizes, np.logspace(-8, 2, 61)))
    for name, value in rmt.kappa_limit_checks(lam).items():  # each limit against an independent computation (brentq)
        ctx.scalar(name, value)


def _images(cfg: RMTDiffusionConfig) -> ImageSet:
    if cfg.dataset == "digits":
        return digits()
    return ImageFolderArray(cfg.image_path).load()  # type: ignore[arg-type]


def _plateau(losses: np.ndarray) -> dict[str, list[float]]:
    """Where the training loss stands: its mean over the last quarter of the steps and over the quarter before,
    the relative drop between them and that drop's standard error (steps as independent draws: each step's
    minibatch, noise levels and noise are fresh). NaN when there are fewer than 4 steps (no quarters to compare)."""
    q = len(losses) // 4
    if q < 1:
        return {"loss_prev": [np.nan], "loss_last": [np.nan], "rel_drop": [np.nan], "rel_drop_se": [np.nan]}
    prev, last = losses[-2 * q : -q], losses[-q:]
    se = np.sqrt(prev.var(ddof=1 if q > 1 else 0) / q + last.var(ddof=1 if q > 1 else 0) / q)
    return {
        "loss_prev": [float(prev.mean())],
        "loss_last": [float(last.mean())],
        "rel_drop": [float((prev.mean() - last.mean()) / last.mean())],
        "rel_drop_se": [float(se / last.mean())],
    }


@torch.no_grad()
def _loss_vs_linear(
    net: torch.nn.Module, train: np.ndarray, ctx: RunContext, name: str, samples: int = 8192
) -> dict[str, list[float]]:
    """EDM's weighted DSM loss on the training set of the trained net and of the linear (Gaussian) denoiser of the
    same set, on one fixed draw of (image, sigma, noise) shared by both (paired, so their difference has a small
    error): a net that does not beat the Gaussian denoiser on its own training loss has not learnt even the
    moments, and its closeness to the linear map says nothing about a trained net."""
    rng = ctx.rng(f"deep-eval/{name}")
    m = min(samples, 8 * len(train))
    y = torch.as_tensor(train[rng.integers(len(train), size=m)], dtype=torch.float64)
    sigma = torch.as_tensor(np.exp(-1.2 + 1.2 * rng.standard_normal(m)))  # EDM's P_mean, P_std
    x = y + sigma[:, None] * torch.as_tensor(rng.standard_normal(y.shape))
    weight = (sigma**2 + 0.25) / (0.5 * sigma) ** 2  # sigma_data = 0.5
    param = next(net.parameters())
    deep = torch.cat(
        [
            net(xs.to(param.device, param.dtype), ss.to(param.device, param.dtype)).to("cpu", torch.float64)
            for xs, ss in zip(torch.split(x, 1024), torch.split(sigma, 1024))
        ]
    )
    lin = LinearDenoiser.fit(torch.as_tensor(train, dtype=torch.float64))(x, sigma)
    per_deep = weight * ((deep - y) ** 2).mean(1)
    per_lin = weight * ((lin - y) ** 2).mean(1)
    diff = per_deep - per_lin
    return {
        "eval_loss_deep": [float(per_deep.mean())],
        "eval_loss_linear": [float(per_lin.mean())],
        "eval_gap": [float(diff.mean())],
        "eval_gap_se": [float(diff.std() / np.sqrt(m))],
    }


def _deep_part(cfg: RMTDiffusionConfig, ctx: RunContext, images: ImageSet) -> pd.DataFrame | None:
    """Deep EDM denoisers on disjoint splits, sampled from shared seeds; returns the per-seed cross-split table."""
    if cfg.deep_backbone == "none":
        return None
    _, d = images.x.shape
    z = torch.as_tensor(ctx.rng("deep-seeds").standard_normal((cfg.deep_seeds, d)))

    if cfg.deep_backbone == "mlp":
        sizes = dict(width=cfg.deep_width)
    elif cfg.deep_backbone == "unet":
        sizes = dict(unet_channels=cfg.unet_channels)
    else:
        sizes = dict(dit_d_model=cfg.dit_d_model, dit_n_layers=cfg.dit_n_layers, dit_n_heads=cfg.dit_n_heads)

    def backbone():
        return make_backbone(cfg.deep_backbone, d, images.image_shape, **sizes)

    a, b = disjoint_splits(images, cfg.deep_n)
    sets = {"split 1": a, "split 2": b}
    if cfg.deep_backbone != "mlp":  # paper scale: the deep halves of moment-mismatch and seed-level-prediction
        top, bottom = stratify_by_pc(images, k=2, size=cfg.pc_group)
        iid_a, iid_b = disjoint_splits(images, cfg.pc_group)
        sets.update({"PC2 top": top, "PC2 bottom": bottom, "iid 1": iid_a, "iid 2": iid_b})
    deep = {}
    for name, train in sets.items():
        ctx.say(f"training the {cfg.deep_backbone} EDM denoiser on {name} ({len(train)} images)")
        nets, losses = train_edm_models(
            backbone,
            [torch.as_tensor(train, dtype=torch.float32)],
            cfg.deep_steps,
            cfg.deep_batch,
            cfg.deep_lr,
            [ctx.generator(f"deep/{name}")],
            device=ctx.device,
            callback=lambda k, step, loss, name=name: ctx.check_finite(f"EDM loss ({name})", loss, step),
        )
        keep = np.unique(np.linspace(0, cfg.deep_steps - 1, min(cfg.deep_steps, 200)).astype(int))
        ctx.table("deep_loss", {"model": name, "step": keep, "loss": losses[0][keep]})
        ctx.table(
            "deep_convergence",
            {
                "model": [name],
                "n": [len(train)],
                "steps": [cfg.deep_steps],
                **_plateau(losses[0]),
                **_loss_vs_linear(nets[0], train, ctx, name),
            },
        )
        deep[name] = edm_samples(nets[0], z, cfg.deep_sampler_steps, sigma_max=cfg.sigma_T)
        ctx.check_finite(f"deep samples ({name})", deep[name])
    lin_a, lin_b = linear_samples(a, cfg.sigma_T * z, cfg.sigma_T), linear_samples(b, cfg.sigma_T * z, cfg.sigma_T)
    seeds = np.arange(cfg.deep_seeds)
    for k, (out, lin) in enumerate(((deep["split 1"], lin_a), (deep["split 2"], lin_b)), start=1):
        # mismatched seeds: seed i's deep sample against the linear sample of seed i+1 (a derangement)
        ctx.table(
            "deep_vs_linear",
            {
                "split": k,
                "seed": seeds,
                "same_mse": paired_mse(out, lin).numpy(),
                "other_mse": paired_mse(out, lin.roll(-1, 0)).numpy(),
            },
        )
    predicted = rmt.seed_disagreement_from_moments(z.numpy(), images.mean, images.covariance, cfg.deep_n, cfg.sigma_T)
    cross = ctx.table(
        "deep_cross",
        {
            "seed": seeds,
            "cross_mse": paired_mse(deep["split 1"], deep["split 2"]).numpy(),
            "nearest_mse_1": nearest_mse(deep["split 1"], torch.as_tensor(a)).numpy(),
            "nearest_mse_2": nearest_mse(deep["split 2"], torch.as_tensor(b)).numpy(),
            "linear_cross_mse": paired_mse(lin_a, lin_b).numpy(),
            "predicted": predicted,
        },
    )
    if "PC2 top" in deep:
        ctx.table(
            "deep_mismatch",
            {
                "seed": seeds,
                "iid_mse": paired_mse(deep["iid 1"], deep["iid 2"]).numpy(),
                "mismatch_mse": paired_mse(deep["PC2 top"], deep["PC2 bottom"]).numpy(),
            },
        )
    figure_deep_samples(
        ctx,
        deep["split 1"][:8].numpy(),
        deep["split 2"][:8].numpy(),
        lin_a[:8].numpy(),
        images.image_shape,
        cfg.deep_backbone,
    )
    return cross


def _images_part(
    cfg: RMTDiffusionConfig, ctx: RunContext, images: ImageSet, deep_cross: pd.DataFrame | None = None
) -> None:
    total, d = images.x.shape
    z = torch.as_tensor(ctx.rng("noise-seeds").standard_normal((cfg.seeds, d)))
    x_T = cfg.sigma_T * z
    samples = {}
    for n in cfg.split_ns:
        a, b = disjoint_splits(images, n)
        out_a, out_b, metrics = cross_split_samples(a, b, x_T, cfg.sigma_T)
        ctx.check_finite(f"linear samples (n={n})", out_a)
        ctx.table("cross_split", {"n": n, "seed": np.arange(cfg.seeds), **{k: v.numpy() for k, v in metrics.items()}})
        samples[n] = (out_a[:6].numpy(), out_b[:6].numpy())

    # Moment mismatch: PC2-top vs PC2-bottom groups against i.i.d. disjoint splits of the same size.
    top, bottom = stratify_by_pc(images, k=2, size=cfg.pc_group)
    iid_a, iid_b = disjoint_splits(images, cfg.pc_group)
    mismatch = linear_map_disagreement(top, bottom, x_T, cfg.sigma_T)
    iid = linear_map_disagreement(iid_a, iid_b, x_T, cfg.sigma_T)
    ctx.table(
        "moment_mismatch",
        pd.DataFrame({"seed": np.arange(cfg.seeds), "iid_mse": iid.numpy(), "mismatch_mse": mismatch.numpy()}),
    )

    # Seed-level: RMT-predicted disagreement from the population (mu, Sigma) and n alone, against
    # the disagreement realised by the two real splits.
    m = cfg.seed_level_seeds
    mu, cov = images.mean, images.covariance
    predicted = rmt.seed_disagreement_from_moments(z[:m].numpy(), mu, cov, cfg.seed_level_n, cfg.sigma_T)
    a, b = disjoint_splits(images, cfg.seed_level_n)
    realized = linear_map_disagreement(a, b, x_T[:m], cfg.sigma_T).numpy()
    ctx.table("seed_level", pd.DataFrame({"seed": np.arange(m), "predicted": predicted, "realized": realized}))
    figure_cross_split(
        ctx,
        ctx.tables["cross_split"],
        samples,
        images.image_shape,
        None if deep_cross is None else (cfg.deep_n, cfg.deep_backbone, deep_cross),
    )
    rho, _ = spearman(predicted, realized)
    fig, ax = new_figure()
    ax.scatter(predicted, realized, s=8, alpha=0.6)
    ax.set_xlabel(r"RMT-predicted disagreement $\hat\Delta(z)$")
    ax.set_ylabel(r"realised $\|x_1(z)-x_2(z)\|^2/d$")
    ax.set_title(f"seed-level prediction, n={cfg.seed_level_n}: Spearman ρ = {rho:.2f}")
    ctx.figure("seed_scatter", fig)


def _memory(cfg: RMTDiffusionConfig) -> tuple[float, str]:
    """Peak bytes: the synthetic part's largest n, ``chunk`` sample covariances of d x d at once
    (:func:`~theorylab.probes.dataset_draws.draws_peak_bytes`; 19 GB at the paper's d = 1024, chunk 500), plus
    the sampling map's stored outputs (draws x n_probe x d per end level). The deep pair runs afterwards with its
    own, smaller batch-bound footprint."""
    draws = draws_peak_bytes(cfg.d, max(cfg.ns), cfg.chunk)
    outputs = 8.0 * cfg.draws * cfg.n_probe * cfg.d * len(cfg.map_sigma)
    half = max(1, cfg.chunk // 2)
    at_half = BASE_BYTES + draws_peak_bytes(cfg.d, max(cfg.ns), half) + outputs
    return BASE_BYTES + draws + outputs, (
        f"lower --set chunk (data-set draws at once, now {cfg.chunk}): chunk={half} needs ~{at_half / 2**30:.1f} GiB"
    )


@study(
    "rmt-diffusion",
    title="Random-matrix theory of cross-split consistency in diffusion models (linear theory and EDM denoisers)",
    paper=PAPER,
    config=RMTDiffusionConfig,
    presets=PRESETS,
    family="generative",
    claims=claims,
    # One torch thread: measured on the shared 2-core box (load ~3), seed 0 took 71 s on one thread (linear parts
    # ~35 s, MLP pair ~33 s) and 503 s on two (both parts slowed ~7x by oversubscription); the ops are small
    # (200x200 eigendecompositions, 128x256 matmuls), so a second thread buys little even on an idle machine.
    cpu_threads=1,
    memory=_memory,
)
def run(cfg: RMTDiffusionConfig, ctx: RunContext) -> None:
    images = _images(cfg)  # first, so that a local data set too small for the splits fails before any work
    try:
        _check_split_sizes(cfg, len(images.x))
    except ValueError as bad:
        raise ConfigError(f"invalid config: {bad}") from None
    _kappa_grid(cfg, ctx)
    figure_kappa(ctx, ctx.tables["kappa"])
    _synthetic(cfg, ctx)
    figure_mean(ctx, ctx.tables["mean_equiv"])
    figure_variance(ctx, ctx.tables["variance"])
    figure_sampling_map(ctx, ctx.tables["sampling_map"])
    deep_cross = _deep_part(cfg, ctx, images)
    _images_part(cfg, ctx, images, deep_cross)
