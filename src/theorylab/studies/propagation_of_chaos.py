"""propagation-of-chaos: uniform-in-time weak propagation of chaos for noiseless gradient descent.

Paper: M. Glasgow, J. Bruna, "Uniform-in-Time Weak Propagation-of-Chaos in Shallow Neural
Networks", arXiv 2605.22010 (2026).

If the mean-field loss decays fast enough (``int_0^inf L_t^{1/2} dt = O(log d)``, ``L_t <~ t^-c``),
the finite-width network stays close to the mean-field limit for all time:
``sup_t |f_MF - f_m|^2 <~ poly(d) m^{-min(1, c/6)}``. The study uses the mean-field harness of
mean-field-width (exact population loss, projected GD, reference-corrected function gap): it
measures c, the loss integral and the sup-over-time gap's exponent in m for a fast link (He_2),
and reports the same for a slow one (He_4).
"""

from __future__ import annotations

from typing import Annotated

import numpy as np
import pandas as pd
import torch
from pydantic import Field

from theorylab.core import Claims, Preset, RunContext, StudyConfig, Verdict, study
from theorylab.core.errors import Undecided
from theorylab.core.fields import Dim, Fraction, InformationExponent, LearningRate, SampleSize, Seeds, Steps, Width
from theorylab.core.plotting import color, log_ticks, new_figure, prediction_vs_simulation
from theorylab.nn.activations import HermiteActivation
from theorylab.theory.mean_field import max_elements_for, step_halving_gaps
from theorylab.theory.mean_field_rates import (
    halving_shrink_factors,
    loss_decay_summary,
    power_law_through_window,
    root_loss_integral,
    spread_across,
    sup_of_seed_mean,
    sup_over_time,
)
from theorylab.theory.rates import fit_inverse_width
from theorylab.train.mean_field import bounded_memory, checkpoint_steps, sample_sweep, width_sweep

PAPER = "Glasgow, Bruna, arXiv 2605.22010 (2026)"
REF = "arXiv 2605.22010"



class PropagationOfChaosConfig(StudyConfig):
    dims: tuple[Annotated[Dim, Field(ge=3)], ...] = Field((16,), min_length=1, description="input dimensions d (quick "
        "16; paper 16..128)")
    fast_k: InformationExponent = Field(2, description="fast setting: link He_k/sqrt(k!) (card: 2, K(t) = t^2)")
    widths: tuple[Width, ...] = Field((32, 64, 128, 256), min_length=2, description="widths of the fast setting")
    seeds: Seeds = Field(4, description="networks per width, fast setting")
    steps: Annotated[Steps, Field(ge=2)] = Field(400, description="steps of the fast setting (T = eta * steps)")
    m_ref: Annotated[Width, Field(ge=16)] = Field(1024, description="reference particles")
    lr: LearningRate = Field(0.1, description="step size (mean-field time per step)")
    checkpoints: tuple[Fraction, ...] = Field((0.0, 0.02, 0.05, 0.1, 0.2, 0.4, 0.7, 1.0), min_length=3,
        description="checkpoint times as fractions of T")
    rate_window: tuple[float, float] = Field((1e-3, 1e-1), description="window of L_MF/L_MF(0) where the decay "
        "exponent c is fitted")
    slow_k: InformationExponent | None = Field(4, description="slow contrast link He_k (report only; None: skip)")
    slow_widths: tuple[Width, ...] = Field((32, 64, 128), min_length=2, description="widths of the slow setting")
    slow_seeds: Seeds = Field(3, description="networks per width, slow setting")
    slow_steps: Annotated[Steps, Field(ge=2)] = Field(200, description="steps of the slow setting")
    lrs: tuple[LearningRate, ...] = Field((), description="discretisation check: step sizes at equal T, eta always "
        "added (quick 0.2, 0.1, 0.05; paper also 0.025; empty: skip)")
    sample_sizes: tuple[Annotated[SampleSize, Field(ge=16)], ...] = Field((), description="finite-sample check: n "
        "fixed samples per network (paper: 2^12 .. 2^18; empty: skip)")
    sample_width: Width = Field(256, description="width of the finite-sample networks (paper: 2^12; must be one of "
        "'widths')")
    sample_seeds: Seeds = Field(4, description="networks per sample size")
    block_mib: float = Field(16.0, gt=0, le=1 << 20, description="largest pairwise block formed at once, MiB (16: "
        "peak memory bounded, fits 24 GB; a large GPU may raise it to ~1000)")


PRESETS = {
    "quick": Preset.of(
        "quick",
        "2 CPU cores, < 60 s: fast He_2 at d = 16 (m up to 256, 4 seeds, T = 40) at eta = 0.2, 0.1, 0.05, and the slow "
        "He_4 contrast",
        lrs=((0.2, 0.1, 0.05), "the discretisation check costs seconds at d = 16: the same T at three step sizes"),
    ),
    "paper": Preset.of(
        "paper",
        "GPU: d in {16, ..., 128}, m up to 2^14, m_ref = 2^17, 8 seeds, and the discretisation check",
        dims=((16, 32, 64, 128), "the card's dimensions"),
        widths=((64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384), "2^6 .. 2^14"),
        seeds=(8, "S = 8"),
        m_ref=(131072, "2^17"),
        steps=(2000, "T = 200 time units, far into the t^-c tail"),
        lrs=((0.2, 0.1, 0.05, 0.025), "the card's step sizes"),
        sample_sizes=((4096, 16384, 65536, 262144), "n = 2^12 .. 2^18"),
        sample_width=(4096, "m = 2^12"),
    ),
}


def _sweep(cfg: PropagationOfChaosConfig, ctx: RunContext, out: tuple[list, list], setting: str, d: int, k: int, widths,
           seeds: int, steps: int, eta: float) -> torch.Tensor:
    """One width sweep: appends its loss curve and its gaps to ``out``; returns the reference's particles at T."""
    marks = checkpoint_steps(cfg.checkpoints, steps)
    sw = width_sweep(HermiteActivation.he(k), d, widths, seeds, cfg.m_ref, eta=eta, steps=steps, checkpoints=marks,
                     generator=ctx.generator(f"particles/{setting}/{d}", device=ctx.device), device=ctx.device,
                     progress=ctx.progress, max_elements=max_elements_for(cfg.block_mib))
    out[0].append(pd.DataFrame({"setting": setting, "d": d, "k": k, "eta": eta, "step": np.arange(steps + 1),
                                "t": sw.history.times, "L_mf": sw.history.ref_loss}))
    gaps = pd.DataFrame(sw.gap_rows(marks, eta, setting=setting, d=d, k=k, eta=eta))
    out[1].append(gaps.assign(m_gap=lambda f: f["width"] * f["gap"]))
    return sw.history.snapshots[max(sw.history.snapshots)][1]  # only the reference at T is kept


# --------------------------------------------------------------------------------------------
# Figures
# --------------------------------------------------------------------------------------------


def _figure_loss(ctx: RunContext, loss: pd.DataFrame, rates: pd.DataFrame, cfg: PropagationOfChaosConfig) -> None:
    fig, ax = new_figure()
    twin = ax.twinx()
    for i, ((setting, d), grp) in enumerate(loss[(loss["eta"] == cfg.lr) & (loss["t"] > 0)].groupby(["setting", "d"])):
        ax.plot(grp["t"], grp["L_mf"], color=color(i), lw=1.2, label=f"{setting}, d = {d}")
        r = rates[(rates["setting"] == setting) & (rates["d"] == d) & (rates["eta"] == cfg.lr)].iloc[0]
        if np.isfinite(r["c"]):
            tt, line = power_law_through_window(grp["t"], grp["L_mf"], r["c"], cfg.rate_window, r["L0"])
            ax.plot(tt, line, "--", color="black", lw=0.8, label=f"fit t^-{r['c']:.2f}")
        twin.plot(grp["t"], root_loss_integral(grp["t"], grp["L_mf"]), ":", color=color(i), lw=1)
    ax.axhspan(cfg.rate_window[0] * loss["L_mf"].iloc[0], cfg.rate_window[1] * loss["L_mf"].iloc[0], color="grey",
               alpha=0.1)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("mean-field time t")
    ax.set_ylabel("L_MF(t) (band: fit window)")
    twin.set_ylabel("I(t) = ∫ L^1/2 (dotted)")
    ax.legend(fontsize=6)
    ctx.figure("loss_rate", fig)


def _figure_sup_gap(ctx: RunContext, sup: pd.DataFrame, rates: pd.DataFrame) -> None:
    parts = []
    for (setting, d), grp in sup.groupby(["setting", "d"]):
        grp = grp[grp["eta"] == grp["eta"].max()].sort_values("width")
        pred = rates[(rates["setting"] == setting) & (rates["d"] == d)]["beta_pred"].iloc[0]
        curve = f"{setting}, d = {d}: β = {fit_inverse_width(grp['width'], grp['sup_gap']):.2f} (theorem {pred:.2f})"
        theorem = grp["sup_gap"].iloc[0] * (grp["width"] / grp["width"].iloc[0]) ** -pred  # the theorem's slope
        parts.append(grp.assign(curve=curve, theorem=theorem))
    fig, ax = new_figure()
    prediction_vs_simulation(ax, pd.concat(parts), "width", "theorem", "sup_gap", group="curve", xlabel="width m",
                             theory_label="theorem's slope -min(1, c/6)", ylabel="sup_t gap_m(t)", logx=True, logy=True)
    log_ticks(ax, sorted(sup["width"].unique()))
    ax.legend(fontsize=6)
    ctx.figure("sup_gap_vs_m", fig)


def _figure_long_time(ctx: RunContext, gaps: pd.DataFrame) -> None:
    fast = gaps[(gaps["setting"] == "fast") & (gaps["d"] == gaps["d"].min()) & (gaps["eta"] == gaps["eta"].max())]
    means = fast[fast["t"] > 0].groupby(["width", "t"])["m_gap"].mean().reset_index()
    fig, ax = new_figure()
    prediction_vs_simulation(ax, means, "t", None, "m_gap", group="width", label="m = {group}", logx=True, logy=True,
                             xlabel="mean-field time t", ylabel="m · gap_m(t) (seed mean)")
    ax.set_title("no late growth of the fluctuation (fast setting)", fontsize=8)
    ctx.figure("gap_over_long_time", fig)


# --------------------------------------------------------------------------------------------
# Claims
# --------------------------------------------------------------------------------------------


claims = Claims("propagation-of-chaos")


def _fast(res) -> pd.DataFrame:
    rates = res.table("rates")
    return rates[(rates["setting"] == "fast") & (rates["eta"] == res.config["lr"])]


S_RATE = (
    "The theorem's premise holds in the fast setting: L_MF(t) decays like t^-c with c >= 1.5 (fitted where "
    "L_MF/L_MF(0) is in [1e-3, 1e-1]) and L_MF(T) <= 1e-3 L_MF(0)."
)


@claims.add("fast-rate", S_RATE, REF + ", premise L_t <~ t^-c")
def judge_rate(res, v) -> Verdict:
    fast = _fast(res)
    worst_c = float(fast["c"].min())
    ratio = float((fast["LT"] / fast["L0"]).max())
    ok = bool(np.isfinite(worst_c)) and worst_c >= 1.5 and ratio <= 1e-3
    detail = "; ".join(f"d={int(r.d)}: c = {r.c:.2f} [{r.c_low:.2f}, {r.c_high:.2f}] over {r.window_points} points, "
                       f"L(T)/L(0) = {r.LT / r.L0:.1e}" for r in fast.itertuples())
    return v.judged(ok, worst_c, ">= 1.5", 1.5, detail)


S_INTEGRAL = (
    "The integral condition is numerically satisfied: I(T) = ∫_0^T L_MF^{1/2} dt <= 5 and its last half adds <= 30% "
    "([I(T) - I(T/2)] / I(T/2) <= 0.3)."
)


@claims.add("integral-finite", S_INTEGRAL, REF + ", premise ∫ L^1/2 dt = O(log d)")
def judge_integral(res, v) -> Verdict:
    fast = _fast(res)
    growth = float(((fast["I_T"] - fast["I_half"]) / fast["I_half"]).max())
    total = float(fast["I_T"].max())
    detail = "; ".join(f"d={int(r.d)}: I(T) = {r.I_T:.3f}, I(T/2) = {r.I_half:.3f}" for r in fast.itertuples())
    return v.judged(growth <= 0.3 and total <= 5, growth, "<= 0.3", 0.3, detail)


S_UNIFORM = (
    "The sup-over-time gap falls with width at least as fast as the theorem's rate: beta_sup >= min(1, c/6) - 0.1, and "
    "(empirically) beta_sup in [0.7, 1.4]."
)


@claims.add("uniform-exponent", S_UNIFORM, REF + ", main theorem: m^{-min(1, c/6)}")
def judge_uniform(res, v) -> Verdict:
    sup, fast = res.table("sup_gap"), _fast(res)
    parts, ok, betas = [], True, []
    for r in fast.itertuples():
        grp = sup[(sup["setting"] == "fast") & (sup["d"] == r.d) & (sup["eta"] == r.eta)]
        beta = fit_inverse_width(grp["width"], grp["sup_gap"])
        betas.append(beta)
        ok &= bool(np.isfinite(beta)) and beta >= r.beta_pred - 0.1 and 0.7 <= beta <= 1.4
        parts.append(f"d={int(r.d)}: beta_sup = {beta:.2f} vs predicted min(1, c/6) = {r.beta_pred:.2f}")
    return v.judged(ok, float(np.nanmin(betas)), "[0.7, 1.4]", 0.1, "; ".join(parts))


S_LATE = "No late growth: for every width, max over t in [T/2, T] of m·gap_m(t) is <= its max over t <= T/2."


@claims.add("no-late-growth", S_LATE, REF + ", uniform in time")
def judge_late(res, v) -> Verdict:
    sup = res.table("sup_gap")
    fast = sup[(sup["setting"] == "fast") & (sup["eta"] == res.config["lr"])]
    excess = fast["late_m_gap"] - fast["early_m_gap"]
    detail = "; ".join(f"d={int(r.d)}, m={int(r.width)}: late {r.late_m_gap:.4f} vs early {r.early_m_gap:.4f}"
                       for r in fast.itertuples())
    return v.judged(bool((excess <= 0).all()), float(excess.max()), "<= 0", 0, detail)


S_POLY = (
    "Polynomial dependence on d: m·G_m at the largest width grows with exponent <= 3 in d, and I(∞) grows no faster "
    "than log d (I(d_max)/I(d_min) <= 1.5 ln d_max / ln d_min)."
)


@claims.add("poly-d", S_POLY, REF + ", poly(d) dependence (threshold ours)")
def judge_poly(res, v) -> Verdict:
    sup, fast = res.table("sup_gap"), _fast(res)
    dims = sorted(fast["d"].unique())
    if len(dims) < 3:
        raise Undecided(f"this config runs {len(dims)} dimension(s) ({', '.join(str(int(d)) for d in dims)}) and the "
                        f"fit needs >= 3; needs paper preset")
    top = sup[(sup["setting"] == "fast") & (sup["eta"] == res.config["lr"])]
    top = top[top["width"] == top["width"].max()].set_index("d")
    mg = (top["sup_gap"] * top["width"]).loc[dims]
    exponent = float(np.polyfit(np.log(dims), np.log(mg.to_numpy()), 1)[0])
    integrals = fast.set_index("d")["I_T"]
    bound = 1.5 * np.log(dims[-1]) / np.log(dims[0])
    ratio = float(integrals[dims[-1]] / integrals[dims[0]])
    detail = f"m·G_m exponent {exponent:.2f} (need <= 3); I ratio {ratio:.2f} (need <= {bound:.2f})"
    return v.judged(exponent <= 3 and ratio <= bound, exponent, "<= 3", 3, detail)


S_DISC = ("First-order discretisation: the L2 distance at T between reference runs with step eta and eta/2 (same "
          "initial particles) shrinks by a factor in [1.5, 3] "
          "per halving, and beta_sup (sup over checkpoints t > 0) changes by at most 0.15 across eta.")


@claims.add("discretisation", S_DISC, REF + ", discrete time")
def judge_disc(res, v) -> Verdict:
    disc = res.table("discretisation", unless="this config runs one step size (etas empty)")
    # The gap is a squared L2 distance; a first-order scheme's error is O(eta) in the distance itself.
    factors = [f for _, grp in disc.groupby("d") for f in halving_shrink_factors(grp["eta"], grp["ref_gap_at_T"])]
    # The sup over t > 0: at t = 0 every step size starts from the same particles, so a sup attained there could not
    # differ.
    gaps = res.table("gaps")
    later = gaps[(gaps["setting"] == "fast") & (gaps["t"] > 0)]
    sups = {(int(d), float(eta)): sup_of_seed_mean(g["width"], g["t"], g["gap"])
            for (d, eta), g in later.groupby(["d", "eta"])}
    betas = {key: fit_inverse_width(sup.index.to_numpy(), sup.to_numpy()) for key, sup in sups.items()}
    spread = spread_across(betas)
    ok = bool(factors) and all(1.5 <= f <= 3 for f in factors) and spread <= 0.15
    detail = (f"shrink factors per halving: {[round(f, 2) for f in factors]} (need in [1.5, 3]); beta_sup over t > 0: "
              + ", ".join(f"d={d}, eta={eta:g}: {b:.3f}" for (d, eta), b in sorted(betas.items())) + f"; spread across "
                  f"eta {spread:.3f} (need <= 0.15)")
    return v.judged(ok, spread, "<= 0.15", 0.15, detail)


S_SAMPLES = ("Finite samples: at fixed width, the sup-over-time gap of networks trained on n fixed samples to the "
             "population mean-field reference falls with n "
             "(fitted exponent >= 0.5 on the excess over the population-trained gap), and at the largest n is <= 2x "
             "that pure-width gap (rate reconstructed).")


@claims.add("finite-samples", S_SAMPLES, REF + ", finitely many samples (rate reconstructed)")
def judge_samples(res, v) -> Verdict:
    fs = res.table("finite_samples", unless="this config trains no finite-sample networks (sample_sizes empty); needs "
                                            "paper preset")
    sup = res.table("sup_gap")
    width = int(fs["width"].iloc[0])
    pure = sup[(sup["setting"] == "fast") & (sup["width"] == width) & (sup["eta"] == res.config["lr"]) & (sup[
        "d"] == fs["d"].iloc[0])]
    if pure.empty:
        raise Undecided(f"the population sweep has no width {width} (sample_width must be one of widths), so there is "
                        f"no pure-width gap to compare with")
    pure_gap = float(pure["sup_gap"].iloc[0])
    by_n = sup_of_seed_mean(fs["n"], fs["t"], fs["gap"])
    excess = by_n - pure_gap
    keep = excess > 0
    final_ratio = float(by_n.iloc[-1] / pure_gap)
    gaps_text = ", ".join(f"n={n}: {g:.2e}" for n, g in by_n.items()) + f"; population-trained gap {pure_gap:.2e}"
    if keep.sum() < 2:
        raise Undecided(f"only {int(keep.sum())} of {len(by_n)} sample sizes show an excess over the "
                        f"population-trained gap ({gaps_text}), "
                        f"so the rate in n cannot be fitted (largest n / pure = {final_ratio:.2f}); more sample sizes "
                        f"below the width's own error are needed")
    exponent = float(-np.polyfit(np.log(by_n.index[keep]), np.log(excess[keep]), 1)[0])
    detail = (
        f"{gaps_text}; excess exponent {exponent:.2f} over {int(keep.sum())} sizes (need >= 0.5); largest n / pure = "
        f"{final_ratio:.2f} (need <= 2)"
    )
    return v.judged(exponent >= 0.5 and final_ratio <= 2, exponent, ">= 0.5", 0.5, detail)


S_SLOW = (
    "Report only: in the slow He_4 setting, the decay exponent c, the growth of I(T), and beta_sup (if beta_sup stays "
    "near 1 while c < 2, the integral condition is sufficient rather than necessary)."
)


@claims.add("slow-contrast", S_SLOW, REF + ", contrast (report only)")
def judge_slow(res, v) -> Verdict:
    rates = res.table("rates")
    slow = rates[rates["setting"] == "slow"]
    if slow.empty:
        return v.undecided("report only: slow setting not run")
    sup = res.table("sup_gap")
    parts = []
    for r in slow.itertuples():
        grp = sup[(sup["setting"] == "slow") & (sup["d"] == r.d)]
        beta = fit_inverse_width(grp["width"], grp["sup_gap"])
        parts.append(f"d={int(r.d)}: c = {r.c:.2f} ({r.window_points} points in the window), I(T) = {r.I_T:.3f} "
                     f"(I(T/2) = {r.I_half:.3f}), beta_sup = {beta:.2f}")
    return v.undecided("report only: " + "; ".join(parts))


@study(
    "propagation-of-chaos",
    title="Uniform-in-time weak propagation of chaos for noiseless GD",
    paper=PAPER,
    config=PropagationOfChaosConfig,
    presets=PRESETS,
    family="mean field",
    claims=claims,
)
def run(cfg: PropagationOfChaosConfig, ctx: RunContext) -> None:
    with bounded_memory("block_mib", cfg.block_mib, "m_ref, widths, seeds, sample_width or sample_sizes"):
        loss, gap, discs = _run(cfg, ctx)
    # Per setting, d and eta: the decay exponent c, the loss integral and the predicted width exponent; and per
    # width the sup over checkpoints of the seed-mean gap, early and late halves.
    rates = pd.DataFrame([dict(setting=s, d=d, eta=eta, **loss_decay_summary(g["t"], g["L_mf"], cfg.rate_window))
                          for (s, d, eta), g in loss.sort_values("t", kind="stable").groupby(["setting", "d", "eta"])])
    sup = pd.DataFrame([dict(setting=s, d=d, eta=eta, width=m, **sup_over_time(g["t"], g["gap"], m))
                        for (s, d, eta, m), g in gap.groupby(["setting", "d", "eta", "width"])])
    for name, table in (("loss", loss), ("gaps", gap), ("rates", rates), ("sup_gap", sup)):
        ctx.table(name, table)
    if discs:
        ctx.table("discretisation", pd.concat(discs, ignore_index=True))
    _figure_loss(ctx, loss, rates, cfg)
    _figure_sup_gap(ctx, sup, rates)
    _figure_long_time(ctx, gap)


def _run(cfg: PropagationOfChaosConfig, ctx: RunContext) -> tuple[pd.DataFrame, pd.DataFrame, list[pd.DataFrame]]:
    out, discs = ([], []), []
    etas = sorted(set(cfg.lrs) | {cfg.lr}, reverse=True)
    for d in cfg.dims:
        finals = {eta: _sweep(cfg, ctx, out, "fast", d, cfg.fast_k, cfg.widths, cfg.seeds,
                              int(round(cfg.steps * cfg.lr / eta)), eta)  # the same horizon T for every step size
                  for eta in etas}
        if len(finals) > 1:
            gaps_at_t = step_halving_gaps(HermiteActivation.he(cfg.fast_k), finals, max_elements_for(cfg.block_mib))
            discs.append(pd.DataFrame([(d, *g) for g in gaps_at_t], columns=["d", "eta", "eta_half", "ref_gap_at_T"]))
        if cfg.slow_k is not None and d == cfg.dims[0]:
            _sweep(cfg, ctx, out, "slow", d, cfg.slow_k, cfg.slow_widths, cfg.slow_seeds, cfg.slow_steps, cfg.lr)
    if cfg.sample_sizes:
        d = cfg.dims[0]
        marks = checkpoint_steps(cfg.checkpoints, cfg.steps)
        sweeps = sample_sweep(HermiteActivation.he(cfg.fast_k), d, cfg.sample_width, cfg.sample_sizes, cfg.sample_seeds,
                              cfg.m_ref, eta=cfg.lr, steps=cfg.steps, checkpoints=marks, device=ctx.device,
                              generator=ctx.generator(f"samples/{d}", device=ctx.device), progress=ctx.progress,
                              max_elements=max_elements_for(cfg.block_mib))
        labels = dict(setting="samples", d=d, k=cfg.fast_k, eta=cfg.lr)
        rows = [r for n, sw in sweeps.items() for r in sw.gap_rows(marks, cfg.lr, **labels, n=n)]
        ctx.table("finite_samples", pd.DataFrame(rows))
    return pd.concat(out[0], ignore_index=True), pd.concat(out[1], ignore_index=True), discs
