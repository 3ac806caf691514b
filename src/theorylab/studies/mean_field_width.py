"""mean-field-width: polynomial width tracks the mean-field limit beyond logarithmic time.

Paper: M. Glasgow, D. Wu, J. Bruna, "Propagation of Chaos in One-hidden-layer Neural Networks
beyond Logarithmic Time", arXiv 2504.13110 (2025).

A one-hidden-layer network in mean-field scaling (particles on the sphere, second layer 1/m) is
trained by projected gradient descent on the exact population loss of a single-index target of
information exponent k, next to a wide reference system. The function gap to the reference is
measured over the whole run, including the long escape from the equator; the paper's claim is
that it stays O(poly(d)/m), not the exp(T)/m of a Grönwall bound, because each particle's local
Hessian is controlled by its velocity (self-concordance).
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
from theorylab.nn.activations import single_index_link
from theorylab.theory.mean_field import (
    escape_time_summary,
    init_gap_check,
    init_gap_per_width,
    max_elements_for,
    reduction_error_budget,
    self_concordance_summary,
)
from theorylab.theory.mean_field_rates import (
    exponents_in_dimension,
    growth_over_start,
    pooled_inverse_width,
    width_for_sup_gap,
)
from theorylab.train.mean_field import (
    bounded_memory,
    checkpoint_steps,
    planted_direction,
    reduction_against_reference,
    steps_to_loss_fraction,
    width_sweep,
)

PAPER = "Glasgow, Wu, Bruna, arXiv 2504.13110 (2025)"
REF = "arXiv 2504.13110"



class MeanFieldWidthConfig(StudyConfig):
    dims: tuple[Annotated[Dim, Field(ge=3)], ...] = Field((16,), min_length=1, description="input dimensions d (quick "
        "16; paper 16..128)")
    ks: tuple[Annotated[InformationExponent, Field(ge=2)], ...] = Field((4,), min_length=1, description="information "
        "exponents of the link (quick 4; paper 3, 4, 6)")
    widths: tuple[Width, ...] = Field((32, 64, 128), min_length=2, description="network widths m")
    seeds: Seeds = Field(3, description="networks per width (S)")
    m_ref: Annotated[Width, Field(ge=16)] = Field(1024, description="particles of the mean-field reference")
    lr: LearningRate = Field(0.1, description="step size = mean-field time per step")
    steps: Steps = Field(200, description="steps (when stop_ratio is unset)")
    stop_ratio: float | None = Field(None, gt=0, lt=1, description="if set, T = first time L_MF <= stop_ratio * "
        "L_MF(0) (paper 0.01), capped at max_steps")
    max_steps: Steps = Field(10_000, description="cap on the adaptive number of steps")
    checkpoints: tuple[Fraction, ...] = Field((0.0, 0.125, 0.25, 0.5, 0.75, 1.0), min_length=2,
                                              description="checkpoint "
        "times as fractions of T")
    concordance_particles: SampleSize = Field(64, description="reference particles on which the self-concordance "
        "ratio is measured")
    escape_threshold: float = Field(0.5, gt=0, lt=1, description="a particle has escaped the equator once |<w, w*>| "
        ">= this")
    reduction_n: Annotated[SampleSize, Field(ge=0)] = Field(128, description="particles of the 1-D overlap reduction "
        "(0: skip; checked against the reference at n/2 and eta/2)")
    reduction_nodes: int = Field(12, ge=2, le=200, description="Gauss-Jacobi nodes of the reduction's angular integral")
    init_mc_samples: Annotated[SampleSize, Field(ge=1024)] = Field(1 << 18, description="Monte Carlo draws (w, w', x) "
        "of the independent kernel check at initialisation")
    block_mib: float = Field(16.0, gt=0, le=1 << 20, description="largest pairwise block formed at once, MiB (16: "
        "peak memory bounded, fits 24 GB; a large GPU may raise it to ~1000)")


PRESETS = {
    "quick": Preset.of("quick", "2 CPU cores, < 60 s: d = 16, k = 4, m in {32, 64, 128}, 6 seeds, m_ref = 1024, 200 "
                                "steps (T = 20)",
                       seeds=(6, "3 networks per width left the reference-error estimate and the late slopes too noisy "
                                 "(seeds 0-9: reduced-dynamics "
                                 "failed seed 5, inverse-width seed 4); at 6 reduced-dynamics passes 10/10, "
                                 "inverse-width 9/10 (see docs/seed-robustness.md)")),
    "paper": Preset.of(
        "paper",
        "GPU: d in {16, ..., 128}, k in {3, 4, 6}, m up to 2^13, m_ref = 2^16, 8 seeds, T at L_MF <= 1% of L_MF(0)",
        dims=((16, 32, 64, 128), "the card's dimensions"),
        ks=((3, 4, 6), "the card's information exponents"),
        widths=((64, 128, 256, 512, 1024, 2048, 4096, 8192), "2^6 .. 2^13"),
        seeds=(8, "S = 8"),
        m_ref=(65536, "2^16"),
        stop_ratio=(0.01, "T = time to reach 1% of the initial loss"),
    ),
}


def _one_setting(cfg: MeanFieldWidthConfig, ctx: RunContext, d: int, k: int) -> None:
    act, limit, w_star = single_index_link(k), max_elements_for(cfg.block_mib), planted_direction(d, ctx.device)
    steps = cfg.steps if cfg.stop_ratio is None else steps_to_loss_fraction(
        act, d, cfg.m_ref, eta=cfg.lr, stop_ratio=cfg.stop_ratio, max_steps=cfg.max_steps, max_elements=limit,
        generator=ctx.generator(f"horizon/{d}/{k}", device=ctx.device), device=ctx.device, progress=ctx.progress,
        label=f"horizon d={d}, k={k}")
    marks = checkpoint_steps(cfg.checkpoints, steps)
    sweep = width_sweep(act, d, cfg.widths, cfg.seeds, cfg.m_ref, eta=cfg.lr, steps=steps, checkpoints=marks,
                        generator=ctx.generator(f"particles/{d}/{k}", device=ctx.device), device=ctx.device,
                        progress=ctx.progress,
                        escape_threshold=cfg.escape_threshold, max_elements=limit)
    hist, eta = sweep.history, cfg.lr
    ctx.table("loss", pd.DataFrame({"d": d, "k": k, "step": np.arange(steps + 1), "t": hist.times,
                                    "L_mf": hist.ref_loss, "escaped_fraction": hist.ref_escaped}))
    ctx.table("gaps", pd.DataFrame(sweep.gap_rows(marks, eta, d=d, k=k)).assign(m_gap=lambda f: f["width"] * f["gap"],
                                                                               init_theory=init_gap_per_width(act, d)))
    pick = torch.randperm(cfg.m_ref, generator=torch.Generator().manual_seed(0))[: cfg.concordance_particles].to(
        ctx.device)
    ctx.table("self_concordance", pd.DataFrame([
        dict(d=d, k=k, step=s, t=s * eta, L_mf=hist.ref_loss[s],
             **self_concordance_summary(act, hist.snapshots[s][1], w_star, pick, cfg.escape_threshold, limit))
        for s in marks]))
    ctx.table("escape", pd.DataFrame(sweep.escape_rows(marks, eta, d=d, k=k)))
    ctx.table("escape_times", pd.DataFrame([dict(d=d, k=k, threshold=cfg.escape_threshold,
                                                 **escape_time_summary(hist.ref_escape_time))]))
    ctx.table("overlaps", pd.concat([pd.DataFrame({"d": d, "k": k, "step": i, "t": i * eta, "system": name, "s": s})
                                     for i, name, s in sweep.overlap_samples(marks, w_star)], ignore_index=True))
    if cfg.reduction_n > 0:  # the 1-D reduction beside the reference, and what bounds their gap (judge_reduction)
        red = reduction_against_reference(act, d, hist.snapshots[0][1], n=cfg.reduction_n, nodes=cfg.reduction_nodes,
                                          eta=eta, steps=steps, max_elements=limit)
        ctx.table("reduction", pd.DataFrame([dict(d=d, k=k, step=s, t=s * eta, L_ref=hist.ref_loss[s],
                                                  **{c: v[s] for c, v in red.items()}, ref_error=sweep.ref_error[s])
                                             for s in marks]))
    # The independent check of the kernel: E[sigma(g)^2] (quadrature) - E[sigma(<w, x>) sigma(<w', x>)] (Monte Carlo,
    # x ~ N(0, I_d)), from the activation itself, never through K.
    mc_gen = ctx.generator(f"kernel-mc/{d}/{k}", device=ctx.device)
    check = init_gap_check(act, d, cfg.init_mc_samples, mc_gen, device=ctx.device)
    ctx.table("kernel_check", pd.DataFrame([dict(d=d, k=k, **check)]))


# --------------------------------------------------------------------------------------------
# Figures
# --------------------------------------------------------------------------------------------


def _figure_gap_vs_time(ctx: RunContext, gaps: pd.DataFrame, loss: pd.DataFrame) -> None:
    d, k = gaps["d"].iloc[0], gaps["k"].iloc[0]
    g = gaps[(gaps["d"] == d) & (gaps["k"] == k)]
    fig, ax = new_figure()
    ax.axhline(g["init_theory"].iloc[0], color="grey", ls=":", lw=1, label="theory at t = 0: K(1) - E K")
    means = g.groupby(["width", "t"])["m_gap"].mean().reset_index()
    prediction_vs_simulation(ax, means, "t", None, "m_gap", group="width", label="m = {group}",
                             xlabel="mean-field time t", ylabel="m · gap_m(t) (seed mean)")
    twin = ax.twinx()
    lg = loss[(loss["d"] == d) & (loss["k"] == k)]
    twin.plot(lg["t"], lg["L_mf"], color="black", lw=1, alpha=0.6, label="L_MF(t)")
    twin.set_yscale("log")
    twin.set_ylabel("mean-field loss L_MF(t)")
    ax.set_title(f"d = {d}, k = {k}: collapse of m·gap is the 1/m law", fontsize=8)
    ax.legend(fontsize=7, loc="upper right")
    ctx.figure("gap_vs_time", fig)


def _figure_gap_vs_width(ctx: RunContext, gaps: pd.DataFrame) -> None:
    d, k = gaps["d"].iloc[0], gaps["k"].iloc[0]
    g = gaps[(gaps["d"] == d) & (gaps["k"] == k)]
    fig, ax = new_figure()
    ms = np.array(sorted(g["width"].unique()), dtype=float)
    ax.plot(ms, g["init_theory"].iloc[0] / ms, "k--", lw=1, label="slope -1 (initial theory)")
    means = g.groupby(["t", "width"])["gap"].mean().clip(lower=1e-12).reset_index()
    prediction_vs_simulation(ax, means, "width", None, "gap", group="t", label="t = {group:g}", xlabel="width m",
                             ylabel="gap_m(t) (seed mean, reference-corrected)", logx=True, logy=True)
    log_ticks(ax, ms)
    ax.set_title(f"pooled exponent β = {pooled_inverse_width(g['t'], g['width'], g['gap'])[0]:.2f}", fontsize=8)
    ax.legend(fontsize=6)
    ctx.figure("gap_vs_width", fig)


def _figure_overlaps(ctx: RunContext, overlaps: pd.DataFrame) -> None:
    d, k = overlaps["d"].iloc[0], overlaps["k"].iloc[0]
    o = overlaps[(overlaps["d"] == d) & (overlaps["k"] == k)]
    times = sorted(o["t"].unique())
    fig, axes = new_figure(ncols=len(times), width=2.0 * len(times), height=2.4)
    bins = np.linspace(-1, 1, 41)
    for ax, t in zip(np.atleast_1d(axes), times):
        for i, (system, grp) in enumerate(o[o["t"] == t].groupby("system")):
            ax.hist(grp["s"], bins=bins, density=True, alpha=0.5, color=color(i), label=system)
        ax.set_title(f"t = {t:g}", fontsize=8)
        ax.set_xlabel("s = <w, w*>", fontsize=7)
    np.atleast_1d(axes)[0].legend(fontsize=6)
    ctx.figure("overlap_histograms", fig)


def _figure_reduction(ctx: RunContext, reduction: pd.DataFrame) -> None:
    d, k = reduction["d"].iloc[0], reduction["k"].iloc[0]
    fig, ax = new_figure()
    prediction_vs_simulation(ax, reduction[(reduction["d"] == d) & (reduction["k"] == k)], "t", "L_reduced", "L_ref",
                             theory_label="1-D overlap reduction", xlabel="mean-field time t",
                             ylabel="L_MF(t) (markers: particle reference)", logy=True)
    ax.set_title(f"d = {d}, k = {k}: the reduction reproduces the particle system", fontsize=8)
    ctx.figure("reduction_vs_particles", fig)


# --------------------------------------------------------------------------------------------
# Claims
# --------------------------------------------------------------------------------------------


claims = Claims("mean-field-width")


S_INIT = ("At initialisation m·gap_m(0), averaged over seeds and widths, equals K(1) - E K(<w, w'>) = E[σ(g)²] - "
          "E[σ(<w, x>) σ(<w', x>)] within 0.15, "
          "the expectation computed without K: σ evaluated pointwise, E σ(g)² by Gauss-Hermite quadrature and the "
          "cross term by Monte Carlo over w, w' uniform, x ~ N(0, I); "
          "the closed form (1 - 3/(d(d+2)) for K(t) = t^4) agrees with that Monte Carlo within 4 standard errors.")


@claims.add("init-gap", S_INIT, REF + ", fluctuations at initialisation (exact in expectation)")
def judge_init(res, v) -> Verdict:
    g, mc = res.table("gaps"), res.table("kernel_check")
    g0 = g[g["step"] == 0]
    worst, parts, ok = 0.0, [], True
    for (d, k), grp in g0.groupby(["d", "k"]):
        row = mc[(mc["d"] == d) & (mc["k"] == k)].iloc[0]
        measured, expected, se, theory = float(grp["m_gap"].mean()), float(row["init_mc"]), float(row[
            "init_mc_se"]), float(row["init_theory"])
        worst = max(worst, abs(measured - expected))
        ok &= abs(measured - expected) <= 0.15 and abs(theory - expected) <= 4 * se
        parts.append(f"d={d}, k={k}: measured {measured:.3f} vs Monte Carlo {expected:.3f} ± {se:.3f} (need "
                     f"|difference| <= 0.15); "
                     f"closed form {theory:.3f} (need within 4 SE = {4 * se:.3f} of the Monte Carlo)")
    return v.judged(ok, worst, "Monte Carlo", 0.15, "; ".join(parts))


S_INVERSE = (
    "The gap stays O(1/m) over the whole run, escape phase included: the exponent beta of gap ∝ m^-beta pooled over "
    "checkpoints lies in [0.7, 1.4], every checkpoint's own slope in [0.5, 1.6]."
)


@claims.add("inverse-width", S_INVERSE, REF + ", Thm. (propagation of chaos beyond log time)")
def judge_inverse(res, v) -> Verdict:
    g = res.table("gaps")
    bad, parts, pooled_all = [], [], []
    for (d, k), grp in g.groupby(["d", "k"]):
        pooled, per = pooled_inverse_width(grp["t"], grp["width"], grp["gap"])
        pooled_all.append(pooled)
        parts.append(f"d={d}, k={k}: pooled {pooled:.2f}; per checkpoint " + ", ".join(f"t={t:g}: {b:.2f}" for t,
            b in per.items()))
        if not 0.7 <= pooled <= 1.4:
            bad.append(f"pooled {pooled:.2f} at d={d}, k={k}")
        bad += [f"t={t:g}: {b:.2f}" for t, b in per.items() if not 0.5 <= b <= 1.6]
    return v.judged(not bad, float(np.nanmin(pooled_all)), "[0.7, 1.4]", "per checkpoint [0.5, 1.6]", "; ".join(parts))


S_BLOWUP = ("No exponential blow-up: max over checkpoints of m·gap_m(t) is <= 1.5 x m·gap_m(0) for every m at a single "
            "d (across d: the ratio grows "
            "with a fitted exponent <= 2 in d); the Grönwall factor exp(Lip·T) with the measured Lipschitz constant is "
            "reported beside it.")


@claims.add("no-blowup", S_BLOWUP, REF + ", poly(d) instead of exp(T) width")
def judge_blowup(res, v) -> Verdict:
    g, sc = res.table("gaps"), res.table("self_concordance")
    ratios, parts = {}, []
    for (d, k), grp in g.groupby(["d", "k"]):
        r = growth_over_start(grp["t"], grp["width"], grp["m_gap"])
        lip = float(sc[(sc["d"] == d) & (sc["k"] == k)]["hessian_op_max"].max())
        horizon = float(grp["t"].max())
        ratios[(d, k)] = r
        parts.append(f"d={d}, k={k}: max_t m·gap / m·gap(0) = {r:.2f} (Grönwall exp(Lip·T) = exp({lip:.2f} x "
                     f"{horizon:g}) = {np.exp(min(lip * horizon, 700)):.2e})")
    dims = sorted({d for d, _ in ratios})
    if len(dims) == 1:
        worst = max(ratios.values())
        return v.judged(worst <= 1.5, worst, "<= 1.5", 1.5, "; ".join(parts))
    slopes = exponents_in_dimension(ratios)
    worst = max(slopes) if slopes else float("nan")
    return v.judged(bool(slopes) and worst <= 2, worst, "<= 2", 2, "; ".join(parts) + f"; exponent in d per k: "
        f"{[round(s, 2) for s in slopes]}")


S_CONVERGES = (
    "The mean-field reference converges: L_MF decreases monotonically (violations <= 1e-9) and L_MF(T) <= 0.1 and <= "
    "L_MF(0)/5."
)


@claims.add("mf-converges", S_CONVERGES, REF + ", convergence of the mean-field dynamics")
def judge_converges(res, v) -> Verdict:
    loss = res.table("loss")
    worst_violation, parts, ok = 0.0, [], True
    for (d, k), grp in loss.groupby(["d", "k"]):
        values = grp.sort_values("step")["L_mf"].to_numpy()
        violation = float(np.max(np.diff(values), initial=0.0))
        worst_violation = max(worst_violation, violation)
        end, start = values[-1], values[0]
        ok &= violation <= 1e-9 and end <= 0.1 and end <= start / 5
        parts.append(f"d={d}, k={k}: L_MF {start:.3f} -> {end:.4f}, largest increase {violation:.1e}")
    return v.judged(ok, worst_violation, "<= 1e-9", 1e-9, "; ".join(parts))


S_POLY = (
    "Width needed to keep sup_t gap <= 1e-3 until T(d) grows polynomially in d (fitted exponent <= 3), and T(d) grows "
    "like d^{(k-2)/2} (exponent within [-0.3, +0.5] of it)."
)


@claims.add("poly-width-over-d", S_POLY, REF + ", polynomial width and time (threshold ours)")
def judge_poly(res, v) -> Verdict:
    g, loss = res.table("gaps"), res.table("loss")
    dims = sorted(g["d"].unique())
    if len(dims) < 3:
        raise Undecided(f"this config runs {len(dims)} dimension(s) ({', '.join(map(str, dims))}) and the fit needs >= "
                        f"3; needs paper preset")
    parts, ok = [], True
    for k, grp in g.groupby("k"):
        need = [width_for_sup_gap(s["t"], s["width"], s["gap"], 1e-3) for s in (grp[grp["d"] == d] for d in dims)]
        horizon = [float(loss[(loss["d"] == d) & (loss["k"] == k)]["t"].max()) for d in dims]
        e_need = float(np.polyfit(np.log(dims), np.log(need), 1)[0])
        e_t = float(np.polyfit(np.log(dims), np.log(horizon), 1)[0])
        target = (k - 2) / 2
        ok &= e_need <= 3 and target - 0.3 <= e_t <= target + 0.5
        parts.append(f"k={k}: width exponent {e_need:.2f} (need <= 3); T(d) exponent {e_t:.2f} (need in "
                     f"[{target - 0.3:.2f}, {target + 0.5:.2f}])")
    return v.judged(ok, None, None, None, "; ".join(parts))


S_REDUCTION = ("The rotationally symmetric 1-D overlap dynamics reproduces the particle reference's loss at every "
               "checkpoint, within the sum of "
               "three estimated errors: the reference's finite width, its time step, and the reduction's "
               "discretisation (ours: the check the card asks for before using the reduction).")


@claims.add("reduced-dynamics", S_REDUCTION, REF + ", the symmetric reduction of the mean-field dynamics")
def judge_reduction(res, v) -> Verdict:
    r = res.table("reduction", unless="this config skips the 1-D reduction (reduction_n = 0)")
    width_err, step_err, disc_err = reduction_error_budget(r["L_ref"], r["L_ref_half_eta"], r["L_reduced"],
                                                           r["L_reduced_coarse"], r["ref_error"])
    budget = width_err + step_err + disc_err
    diff = (r["L_reduced"] - r["L_ref"]).abs()
    excess = float((diff - budget).max())
    worst = r.loc[(diff / budget).idxmax()]
    detail = (f"largest |L_reduced - L_ref| / budget = {float((diff / budget).max()):.2f} at t = {worst['t']:g} "
              f"({abs(worst['L_reduced'] - worst['L_ref']):.2e} vs width {width_err[worst.name]:.1e} + step "
              f"{step_err[worst.name]:.1e} + discretisation {disc_err[worst.name]:.1e})")
    return v.judged(excess <= 0, excess, "<= 0", "error budget", detail)


S_SC = ("Self-concordance during the escape: over particles still on the equator band (|<w, w*>| < 0.5), at every "
        "checkpoint, the 95th percentile of "
        "|H(w)|_op/|v(w)| is <= 10·k and does not grow with d (fitted exponent <= 0.25). (Reconstructed: converged "
        "particles, v -> 0, are excluded.)")


@claims.add("self-concordance", S_SC, REF + ", self-concordance |H| <~ |v| (reconstructed constant)")
def judge_sc(res, v) -> Verdict:
    sc = res.table("self_concordance")
    dims = sorted(sc["d"].unique())
    valid = sc[sc["ratio_p95_escaping"].notna()]
    if len(dims) < 2:
        worst = float(valid["ratio_p95_escaping"].max()) if not valid.empty else float("nan")
        k = int(sc["k"].iloc[0])
        init = sc[sc["step"] == 0].iloc[0]
        raise Undecided(
            f"at quick size (one dimension, d = {dims[0]}, k = {k}) it measures a 95th percentile of |H|/|v| over "
            f"escaping particles of up to {worst:.1f} "
            f"(passes the bound 10k = {10 * k}; the d-exponent needs >= 2 dimensions); judged at paper size, where our "
            f"reading is expected to fail for a "
            f"structural reason, not the scale: at initialisation |s|·|H|/|v| has median "
            f"{init['scaled_median_escaping']:.2f} (drive alone: k - 1 = {k - 1}), "
            f"so |H|/|v| ~ (k - 1)/|s| with |s| ~ d^-1/2 (median |s| here {init['overlap_median_escaping']:.3f}) grows "
            f"like sqrt(d)")
    parts, ok = [], True
    for k, grp in valid.groupby("k"):
        per_d = grp.groupby("d")["ratio_p95_escaping"].max()
        scaled = grp.groupby("d")["scaled_p95_escaping"].max() if "scaled_p95_escaping" in grp else None
        slope = float(np.polyfit(np.log(per_d.index.to_numpy(float)), np.log(per_d.to_numpy()), 1)[0])
        ok &= bool((per_d <= 10 * k).all()) and slope <= 0.25
        parts.append(f"k={k}: " + ", ".join(f"d={d}: {v:.2f}" for d, v in per_d.items()) + f"; exponent {slope:.2f} "
            f"(need <= 0.25; bound {10 * k})"
                     + ("; |s|·|H|/|v| (95th pct): " + ", ".join(f"d={d}: {v:.2f}" for d, v in scaled.items(
                         )) if scaled is not None else ""))
    return v.judged(ok, None, None, None, "; ".join(parts))


@study(
    "mean-field-width",
    title="Polynomial width tracks the mean-field limit beyond logarithmic time",
    paper=PAPER,
    config=MeanFieldWidthConfig,
    presets=PRESETS,
    family="mean field",
    claims=claims,
)
def run(cfg: MeanFieldWidthConfig, ctx: RunContext) -> None:
    with bounded_memory("block_mib", cfg.block_mib, "m_ref, widths or seeds"):
        for d in cfg.dims:
            for k in cfg.ks:
                _one_setting(cfg, ctx, d, k)  # records this setting's rows of every table
    _figure_gap_vs_time(ctx, ctx.tables["gaps"], ctx.tables["loss"])
    _figure_gap_vs_width(ctx, ctx.tables["gaps"])
    _figure_overlaps(ctx, ctx.tables["overlaps"])
    if "reduction" in ctx.tables:
        _figure_reduction(ctx, ctx.tables["reduction"])
