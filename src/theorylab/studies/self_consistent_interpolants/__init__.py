"""self-consistent-interpolants: a clean generative model from corrupted data and a black-box channel.

Paper: C. Modi, J. Han, E. Vanden-Eijnden, J. Bruna, "Generative Modeling from Black-box
Corruptions via Self-Consistent Stochastic Interpolants", arXiv 2512.10857 (2025), ICLR 2026.
(Re-implemented from the paper and the card; the authors' code is CC BY-NC-SA and was not used.)

Only corrupted samples y = A(x) and the channel A (a callable) are available. The transport is
trained to its self-consistent fixed point (:func:`theorylab.train.interpolants.train_self_consistent`);
the cleaned law T_# nu_obs is then held against (i) the exact answer of the linear-Gaussian case
(:mod:`theorylab.theory.scsi_gaussian`), (ii) held-out clean samples (two moons, sliced W2), and at
the paper preset (iii) Gaussian data under coordinate masking and (iv) masked 8x8 digits (PSNR, a
clean-trained classifier, MMD of the re-corrupted law).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import torch

from theorylab.core import ConfigError, Diverged, RunContext, study
from theorylab.core.rng import seeded
from theorylab.data.corruptions import Channel, GaussianBlur, GaussianNoise, RandomMask
from theorylab.data.gaussian import correlated_gaussian
from theorylab.data.images import image_tensors
from theorylab.data.toy2d import toy_channel, toy_samples
from theorylab.nn.velocity import TimeMLP, UNet8
from theorylab.probes.distances import median_bandwidth, sliced_w2
from theorylab.studies.self_consistent_interpolants.config import PRESETS, SCSIConfig
from theorylab.studies.self_consistent_interpolants.figures import (
    COV,
    MEAN,
    figure_digits,
    figure_gauss,
    figure_moons,
    figure_moons_convergence,
)
from theorylab.studies.self_consistent_interpolants.judges import claims
from theorylab.theory.scsi_gaussian import oracle_fixed_point_checks
from theorylab.train.interpolant_checks import (
    clean_classifier_accuracy,
    gaussian_moment_errors,
    image_restoration_scores,
)
from theorylab.train.interpolants import generate, train_and_measure, transport

PAPER = "Modi, Han, Vanden-Eijnden, Bruna, arXiv 2512.10857 (2025); ICLR 2026"


SHARED_TRAINING = {
    "batch",
    "lr",
    "transport_steps",
    "method",
    "resamples",
    "gamma",
    "schedule",
    "ema_decay",
    "precision",
}


def _velocity(cfg: SCSIConfig, seed: int, latent_dim: int = 0) -> TimeMLP:
    with seeded(seed):
        return TimeMLP(2, cfg.width, cfg.n_layers, cfg.time_dim, latent_dim)


def _train(
    cfg: SCSIConfig, ctx: RunContext, name: str, model, observed, channel, latents, steps, measure, **kw
) -> pd.DataFrame:
    """Self-consistent training with the shared settings (``kw`` overrides them); ``measure`` rows as a table."""
    opts = (
        cfg.model_dump(include=SHARED_TRAINING)
        | dict(alpha=cfg.p_recorrupt, evaluate_every=cfg.evaluate_every, progress=ctx.progress)
        | kw
    )
    rows, log = train_and_measure(
        model,
        observed,
        channel,
        measure,
        observed_latents=latents,
        steps=steps,
        generator=ctx.generator(f"{name}/train"),
        **opts,
    )
    if log.diverged_at >= 0:
        raise Diverged(f"{name} training loss", log.diverged_at)
    ctx.table(f"{name}_loss", pd.DataFrame({"step": log.steps, "loss": log.losses}))
    return pd.DataFrame(rows)


def oracle_part(cfg: SCSIConfig, ctx: RunContext) -> pd.DataFrame:
    """Training-free: the exact transport T* and the do-nothing map, on fresh samples."""
    channel, gen = GaussianNoise(cfg.gauss_sigma), ctx.generator("oracle/channel")
    y = channel(correlated_gaussian(cfg.oracle_n, MEAN, COV, ctx.rng("oracle")).double(), gen)[0].numpy()
    recorrupt = lambda a: channel(torch.from_numpy(a), gen)[0].numpy()  # noqa: E731
    return pd.DataFrame(oracle_fixed_point_checks(y, cfg.gauss_sigma, recorrupt, MEAN, COV))


def gauss_part(cfg: SCSIConfig, ctx: RunContext) -> pd.DataFrame:
    channel = GaussianNoise(cfg.gauss_sigma)
    clean = correlated_gaussian(cfg.gauss_n, MEAN, COV, ctx.rng("gauss/clean"))
    observed = channel(clean, ctx.generator("gauss/observe"))[0]
    probe = observed[: cfg.eval_n]

    def measure(step: int, weights: str, net) -> dict:
        gen = ctx.generator(f"gauss/eval{step}")
        errors = gaussian_moment_errors(net, probe, None, MEAN, COV, cfg.transport_steps, cfg.method, channel, gen)
        return dict(step=step, weights=weights, **errors)

    model = _velocity(cfg, ctx.seed("gauss/init"))
    table = _train(cfg, ctx, "gauss", model, observed, channel, None, cfg.gauss_steps, measure)
    cov_y = np.cov(observed.numpy(), rowvar=False)
    ctx.table("gauss_observed", pd.DataFrame([dict(c11=cov_y[0, 0], c12=cov_y[0, 1], c22=cov_y[1, 1])]))
    figure_gauss(ctx, ctx.table("gauss", table), ctx.tables["gauss_observed"], cfg.gauss_sigma)
    return table


def moons_part(cfg: SCSIConfig, ctx: RunContext) -> None:
    seed = ctx.seed("moons/data")
    clean = toy_samples(cfg.toy_data, cfg.moons_n, seed)
    held_out = toy_samples(cfg.toy_data, cfg.moons_n, seed + 1)
    floor_ref = toy_samples(cfg.toy_data, cfg.moons_n, seed + 2)
    sw = lambda a, b, k: sliced_w2(a, b, 200, ctx.generator(f"moons/sw{k}"))  # noqa: E731
    tables, scatter = [], {"clean": held_out.numpy()}
    floor = sw(held_out, floor_ref, "floor")
    for kind in cfg.moons_channels:
        channel = toy_channel(kind, cfg.moons_sigma, cfg.mask_ratio)
        observed, latents = channel(clean, ctx.generator(f"moons/{kind}/observe"))
        probe, probe_lat = observed[: cfg.eval_n], (latents[: cfg.eval_n] if latents is not None else None)
        corrupted_sw = sw(probe, held_out, f"{kind}/observed")

        def measure(
            step: int,
            weights: str,
            net,
            kind=kind,
            probe=probe,
            probe_lat=probe_lat,
            corrupted_sw=corrupted_sw,
            observed=observed,
            latents=latents,
            channel=channel,
        ) -> dict:
            cleaned = transport(net, probe, probe_lat, cfg.transport_steps, cfg.method)
            d, generated = sw(cleaned, held_out, f"{kind}/{step}"), float("nan")
            if weights == "raw" and step == cfg.moons_steps:  # newly generated samples, not cleaned copies of the data
                scatter[f"restored/{kind}"] = cleaned.numpy()
                gen = ctx.generator(f"moons/{kind}/generate")
                new = generate(net, observed, channel, cfg.eval_n, gen, latents, cfg.transport_steps, cfg.method)
                generated = sw(new, held_out, f"{kind}/generated")
            return dict(
                channel=kind,
                step=step,
                weights=weights,
                sw2=d,
                sw2_observed=corrupted_sw,
                ratio=d / corrupted_sw,
                sw2_floor=floor,
                sw2_generated=generated,
            )

        scatter[f"observed/{kind}"] = probe.numpy()
        model = _velocity(cfg, ctx.seed(f"moons/{kind}/init"), 2 if latents is not None else 0)
        tables.append(_train(cfg, ctx, f"moons_{kind}", model, observed, channel, latents, cfg.moons_steps, measure))
    moons = ctx.table("moons", pd.concat(tables, ignore_index=True))
    figure_moons(ctx, moons, scatter)
    figure_moons_convergence(ctx, moons)


def mask2d_part(cfg: SCSIConfig, ctx: RunContext) -> pd.DataFrame:
    channel = RandomMask(cfg.mask_ratio)
    clean = correlated_gaussian(cfg.gauss_n, MEAN, COV, ctx.rng("mask2d/clean"))
    observed, latents = channel(clean, ctx.generator("mask2d/observe"))
    probe, probe_lat = observed[: cfg.eval_n], latents[: cfg.eval_n]
    measure = lambda step, weights, net: dict(  # noqa: E731
        step=step,
        weights=weights,
        **gaussian_moment_errors(net, probe, probe_lat, MEAN, COV, cfg.transport_steps, cfg.method),
    )
    model = _velocity(cfg, ctx.seed("mask2d/init"), 2)
    return _train(
        cfg, ctx, "mask2d", model, observed, channel, latents, cfg.mask2d_steps, measure, batch=cfg.mask2d_batch
    )


def digits_part(cfg: SCSIConfig, ctx: RunContext) -> None:
    """Masked (or blurred) images: the observed set is the non-held-out images, corrupted once; the
    held-out images judge the result (PSNR, SSIM, a clean-trained classifier when labels exist)."""
    images, labels = image_tensors(cfg.image_path)
    h = cfg.digits_held_out
    if len(images) < 2 * h + 2:
        raise ConfigError(f"digits_held_out: {h} leaves too few of the {len(images)} images to observe")
    train_x, test_x = images[h:], images[:h]
    channel: Channel = RandomMask(cfg.mask_ratio) if cfg.digits_channel == "mask" else GaussianBlur(1.0, 0.1)
    gen = ctx.generator("digits/observe")
    observed, latents = channel(train_x, gen)
    test_obs, test_lat = channel(test_x, gen)
    device = ctx.device
    with seeded(ctx.seed("digits/init")):
        model = UNet8(images.shape[1], cfg.digits_width, 64, latent_channels=0 if latents is None else images.shape[1])
    model = model.to(device)
    accuracy = clean_classifier_accuracy(train_x, *((labels[h:], labels[:h]) if labels is not None else (None, None)))
    bandwidth = median_bandwidth(observed[: 2 * h])  # one kernel for both MMDs of the ratio
    grid = {}

    def measure(step: int, weights: str, net) -> dict | None:
        if step != cfg.digits_steps:
            return None
        scores, restored = image_restoration_scores(
            net,
            test_obs,
            test_lat,
            test_x,
            observed,
            latents,
            channel,
            gen,
            steps=cfg.digits_transport_steps,
            method=cfg.method,
            bandwidth=bandwidth,
            accuracy=accuracy,
            device=device,
        )
        if weights == "raw":
            grid.update(clean=test_x[:10].numpy(), observed=test_obs[:10].numpy(), restored=restored[:10].numpy())
        return dict(weights=weights, **scores)

    on_device = None if latents is None else latents.to(device)
    table = _train(
        cfg,
        ctx,
        "digits",
        model,
        observed.to(device),
        channel,
        on_device,
        cfg.digits_steps,
        measure,
        batch=cfg.digits_batch,
        lr=cfg.digits_lr,
        transport_steps=cfg.digits_transport_steps,
        schedule="cosine",
    )
    ctx.table("digits", table)
    if grid:
        figure_digits(ctx, grid)


@study(
    "self-consistent-interpolants",
    title="Clean generative models from black-box corruptions",
    paper=PAPER,
    config=SCSIConfig,
    presets=PRESETS,
    family="generative",
    claims=claims,
)
def run(cfg: SCSIConfig, ctx: RunContext) -> None:
    ctx.table("oracle", oracle_part(cfg, ctx))
    gauss = gauss_part(cfg, ctx)
    if cfg.moons_channels:
        moons_part(cfg, ctx)
    if cfg.mask2d:
        ctx.table("mask2d", mask2d_part(cfg, ctx))
    if cfg.digits:
        digits_part(cfg, ctx)
    end = gauss[(gauss["weights"] == "raw") & (gauss["step"] == gauss["step"].max())].iloc[0]
    ctx.scalar("gauss_cov_error", float(end.cov_error))
    ctx.scalar("gauss_residual", float(end.residual))
