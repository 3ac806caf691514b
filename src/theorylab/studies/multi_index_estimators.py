"""multi-index-estimators: which index-space estimator works for which link.

Paper: J. Bruna, D. Hsu, "Survey on algorithms for multi-index models", arXiv 2504.05426 (2025).

For ``y = g(U^T x)`` with Gaussian x, the link's Hermite structure decides which estimator sees
which direction: Stein's identity gives ``E[y x] = E[grad g]`` (ADE) and ``E[y (x x^T - I)] =
E[hess g]`` (pHd); SIR sees ``E[x | y]``, which vanishes for links symmetric under ``z -> -z``;
SAVE sees ``Cov(x | y)``. The study runs the card's battery of links against every estimator,
the proportional-limit collapse of the capture in ``alpha = n/d``, Monte Carlo population matrices
against the Stein predictions, agreement with statsmodels' SIR/SAVE, and an online-SGD two-layer
net on B (the survey's neural-network row, about a second on a CPU, so judged at quick too).

Two findings shape the claims. (1) A population zero is not a chance-level capture: pHd on D has
anisotropic noise, and its capture climbs with n towards a fixed-d floor (about 0.49 at d = 100,
computed from the Gaussian limit of sqrt(n) M in :func:`theorylab.theory.sdr.phd_noise_floor`), so
its gain from n/d = 20 to 50 is +0.09 on average and the card's 0.15 slack is judged on 24 paired
seeds. (2) Raw pHd on B has an unbounded label; its largest noise eigenvalue grows like
2 log(n) / alpha, so its capture at fixed n/d falls slowly with d and does not collapse; the
collapse is judged on pHd with the label clipped at 3 (bounded preprocessing), raw pHd reported.
"""

from __future__ import annotations

from typing import Annotated

import numpy as np
import pandas as pd
from pydantic import Field

from theorylab.core import Claims, Preset, RunContext, StudyConfig, Verdict, study
from theorylab.core.errors import Undecided
from theorylab.core.fields import Batch, Dim, Draws, LearningRate, SampleRatio, SampleSize, Seeds, Width
from theorylab.core.plotting import log_ticks, new_figure, prediction_vs_simulation
from theorylab.data.index_models import IndexModel, get_link
from theorylab.probes.index_recovery import battery_captures, capture_sweep, statsmodels_angles
from theorylab.theory.sample_complexity import crossings_from_table, fitted_exponent
from theorylab.theory.sdr import SURVEY_SEES as SEES  # which directions each method sees (Stein, z -> -z symmetry)
from theorylab.theory.sdr import phd_blind_floor, survey_population_checks
from theorylab.train.online_index import train_two_layer_online

PAPER = "Bruna, Hsu, arXiv 2504.05426 (2025)"
REF = "arXiv 2504.05426"


BATTERY_LINKS = ("z1+z1z2", "he2", "z1z2", "he3")  # the card's links A, B, C, D
LINK_LABEL = {"z1+z1z2": "A: z1 + z1 z2", "he2": "B: He2(z1)", "z1z2": "C: z1 z2", "he3": "D: He3(z1)"}
ESTIMATORS = ("ADE", "pHd", "SIR", "SAVE")


class MultiIndexEstimatorsConfig(StudyConfig):
    # --- battery ------------------------------------------------------------------------------------
    d: Annotated[Dim, Field(ge=5)] = Field(100, description="dimension of the battery (card: 100)")
    alphas: tuple[SampleRatio, ...] = Field((20.0, 50.0), min_length=2, description="n/d of the battery; the last is "
        "the judged one (card: 20, 50)")
    battery_seeds: Seeds = Field(24, description="seeds averaged per battery cell (card: seed 0; 24 put the gain of "
        "pHd on D, +0.09 per seed ± 0.10, 3 SE under 0.15)")
    floor_draws: Annotated[Draws, Field(ge=10)] = Field(60, description="Gaussian-limit draws for pHd's noise floor "
        "on D at d (n -> infinity, fixed d)")
    n_slices: int = Field(10, ge=2, le=1000, description="equal-count slices of SIR and SAVE (card: 10)")
    noise: float = Field(0.0, ge=0, le=100, description="label noise standard deviation")
    # --- proportional collapse: pHd on B and SIR on D ----------------------------------------------
    collapse_dims: tuple[Annotated[Dim, Field(ge=3)], ...] = Field((50, 100, 200), min_length=2,
        description="dimensions of the collapse sweep")
    collapse_alphas: tuple[SampleRatio, ...] = Field((2.0, 5.0, 10.0, 20.0), min_length=1, description="n/d of the "
        "collapse sweep")
    collapse_seeds: Seeds = Field(10, description="seeds per collapse point (card: 3; 3 leave ±0.05 on a mean at n/d "
        "= 5, so the spread of three means hits 0.12 on some seeds)")
    clip: float = Field(3.0, gt=0, le=1000, description="upper clip of the label for the judged pHd on B (bounded "
        "preprocessing; 3 = the 92% quantile of z^2 - 1)")
    # --- population matrices (Monte Carlo) ---------------------------------------------------------
    pop_d: Annotated[Dim, Field(ge=3, le=50)] = Field(5, description="dimension of the population-matrix check")
    pop_n: Annotated[SampleSize, Field(ge=10_000)] = Field(1_000_000, description="samples of the population-matrix "
        "check (card: 1e6)")
    pop_batches: int = Field(20, ge=5, le=1000, description="batches for the standard errors")
    # --- statsmodels cross-check ------------------------------------------------------------------
    statsmodels_d: Annotated[Dim, Field(ge=3)] = Field(20, description="dimension of the statsmodels cross-check")
    statsmodels_n: Annotated[SampleSize, Field(ge=100)] = Field(2000, description="samples of the statsmodels "
        "cross-check")
    # --- paper: information gap on D and the neural-network row -----------------------------------
    gap_dims: tuple[Annotated[Dim, Field(ge=3)], ...] = Field((), description="dimensions of the information-gap "
        "sweep on D (paper: 50..400; empty: skip)")
    gap_alphas: tuple[SampleRatio, ...] = Field((), description="n/d grid of the information-gap sweep (paper: log "
        "grid 1..100)")
    gap_seeds: Seeds = Field(5, description="seeds per information-gap point")
    nn_alphas: tuple[SampleRatio, ...] = Field((25.0, 50.0, 100.0, 200.0), description="n/d checkpoints of the "
        "online-SGD two-layer net on B (card: up to 200; about 1 s on a CPU; empty: skip)")
    nn_width: Width = Field(64, description="hidden width of the two-layer ReLU net (card: 64)")
    nn_lr: LearningRate = Field(0.05, description="online SGD step size of the two-layer net")
    nn_batch: Batch = Field(32, description="online SGD batch size")


PRESETS = {
    "quick": Preset.of("quick", "2 CPU cores, < 60 s: the card's battery, collapse sweeps, population matrices, "
                                "statsmodels check and the two-layer net"),
    "paper": Preset.of(
        "paper",
        "CPU is enough: more dimensions and seeds, the information gap on D and the neural-network row",
        collapse_dims=((50, 100, 200, 400), "card's dimensions"),
        collapse_alphas=((1.0, 2.0, 5.0, 10.0, 20.0, 50.0, 100.0), "log grid up to 100"),
        collapse_seeds=(20, "card: 20 seeds"),
        battery_seeds=(40, "card: 20 seeds; 40 halve the standard error of the gains"),
        gap_dims=((50, 100, 200, 400), "card's dimensions"),
        gap_alphas=((1.0, 2.0, 5.0, 10.0, 20.0, 50.0, 100.0), "log grid up to 100"),
    ),
}


# Judged: pHd with the clipped label min(y, clip) and SIR on D; reported: raw pHd on B, whose
# unbounded label drifts with log n (see judge_collapse).
COLLAPSE_CELLS = (("he2", "pHd-clip"), ("he3", "SIR"), ("he2", "pHd"))
GAP_ESTIMATORS = ("ADE", "pHd", "SIR", "order-3 V-stat")  # the last: the naive order-3 tensor method


# --------------------------------------------------------------------------------------------
# Figures
# --------------------------------------------------------------------------------------------


def _figure_battery(ctx: RunContext, battery: pd.DataFrame) -> None:
    top = battery[battery["alpha"] == battery["alpha"].max()]
    means = top.groupby(["link", "direction", "estimator"])["capture"].mean()
    labels = [(link, i) for link in BATTERY_LINKS for i in sorted(means[link].index.get_level_values(0).unique())]
    grid = np.array([[means[(link, i, est)] for est in ESTIMATORS] for link, i in labels])
    fig, ax = new_figure(width=5.5, height=4.2)
    im = ax.imshow(grid, vmin=0, vmax=1, cmap="viridis", aspect="auto")
    for row, (link, i) in enumerate(labels):
        for col, est in enumerate(ESTIMATORS):
            mark = "✓" if SEES[(link, est)][i - 1] else "✗"
            ax.text(col, row, f"{grid[row, col]:.2f}\n{mark}", ha="center", va="center", fontsize=7,
                    color="white" if grid[row, col] < 0.6 else "black")
    ax.set_xticks(range(len(ESTIMATORS)), ESTIMATORS)
    ax.set_yticks(range(len(labels)), [f"{LINK_LABEL[l]}, u{i}" for l, i in labels], fontsize=7)
    ax.set_title(f"capture |P u_i|^2 at d = {int(top['d'].iloc[0])}, n/d = {top['alpha'].max():g} (✓/✗: population "
                 f"prediction)", fontsize=8)
    fig.colorbar(im, ax=ax, fraction=0.04)
    ctx.figure("battery_heatmap", fig)


def _figure_collapse(ctx: RunContext, collapse: pd.DataFrame) -> None:
    fig, axes = new_figure(ncols=3, width=11)
    for ax, ((link, est), grp) in zip(axes, collapse.groupby(["link", "estimator"], sort=False)):
        m = grp.groupby(["d", "alpha"])["capture"].agg(["mean", "std"]).reset_index()
        prediction_vs_simulation(ax, m, "alpha", None, "mean", err="std", group="d", label="d = {group}",
                                 xlabel="α = n/d", ylabel="capture (mean ± sd over seeds)", logx=True)
        log_ticks(ax, sorted(grp["alpha"].unique()))
        ax.set_ylim(-0.02, 1.02)
        what = "judged" if est != "pHd" else "reported: unbounded label, drifts with log n"
        ax.set_title(f"{est} on {LINK_LABEL[link]} ({what})", fontsize=8)
    ctx.figure("collapse_curves", fig)


def _figure_gap(ctx: RunContext, gap: pd.DataFrame) -> None:
    fig, ax = new_figure()
    ds = np.array(sorted(gap["d"].unique()), dtype=float)
    for slope, style in ((1.0, ":"), (1.5, "--"), (2.0, "-.")):
        ax.plot(ds, 10 * ds**slope, style, color="grey", lw=0.8, label=f"∝ d^{slope:g}")
    rows = [dict(estimator=est, d=d, n=n) for est, grp in gap.groupby("estimator") for d, n in _crossings(grp).items()]
    prediction_vs_simulation(ax, pd.DataFrame(rows, columns=["estimator", "d", "n"]), "d", None, "n", group="estimator",
                             xlabel="d", ylabel="n where the mean capture crosses 0.5", logx=True, logy=True)
    ax.set_title("link D = He3(z1): which methods need n ∝ d", fontsize=8)
    ctx.figure("gap_plot", fig)


def _crossings(gap: pd.DataFrame) -> dict[int, float]:
    """Per d, the n at which the seed-mean capture first reaches 0.5 (log-linear interpolation in n/d)."""
    return crossings_from_table(gap, "alpha", "capture", times_dimension=True)


# --------------------------------------------------------------------------------------------
# Claims
# --------------------------------------------------------------------------------------------


claims = Claims("multi-index-estimators")


# (link, estimator, direction) -> (bound kind, threshold): the card's 14 cells at alpha = 50.
BATTERY_THRESHOLDS = {
    ("z1+z1z2", "ADE", 1): (">=", 0.9), ("z1+z1z2", "ADE", 2): ("<=", 0.2),
    ("z1+z1z2", "pHd", 1): (">=", 0.8), ("z1+z1z2", "pHd", 2): (">=", 0.8), ("z1+z1z2", "SIR", 1): (">=", 0.8), (
        "z1+z1z2", "SIR", 2): (">=", 0.8),
    ("he2", "pHd", 1): (">=", 0.9), ("he2", "SAVE", 1): (">=", 0.9), ("he2", "ADE", 1): ("<=", 0.25), ("he2", "SIR",
        1): ("<=", 0.25),
    ("z1z2", "pHd", 1): (">=", 0.85), ("z1z2", "pHd", 2): (">=", 0.85), ("z1z2", "SAVE", 1): (">=", 0.85), ("z1z2",
        "SAVE", 2): (">=", 0.85),
    ("z1z2", "ADE", 1): ("<=", 0.25), ("z1z2", "ADE", 2): ("<=", 0.25), ("z1z2", "SIR", 1): ("<=", 0.25), ("z1z2",
        "SIR", 2): ("<=", 0.25),
    ("he3", "SIR", 1): (">=", 0.85), ("he3", "ADE", 1): ("<=", 0.1), ("he3", "pHd", 1): ("<=", 0.5),
}

S_BATTERY = ("At d = 100, n/d = 50 each estimator captures exactly the directions Stein's identity and the link's "
             "symmetry predict "
             "(ADE: E[grad g]; pHd: E[hess g]; SIR: E[x|y]; SAVE: Cov(x|y)); the card's 21 thresholds on seed-mean "
             "captures.")


def _cell_means(battery: pd.DataFrame, alpha: float) -> pd.Series:
    return battery[battery["alpha"] == alpha].groupby(["link", "estimator", "direction"])["capture"].mean()


@claims.add("battery", S_BATTERY, REF + ", Sec. 3 (first- and second-order methods)")
def judge_battery(res, v) -> Verdict:
    battery = res.table("battery")
    alpha = max(res.config["alphas"])
    means = _cell_means(battery, alpha)
    bad = []
    for (link, est, i), (kind, thr) in BATTERY_THRESHOLDS.items():
        value = float(means[(link, est, i)])
        ok = value >= thr if kind == ">=" else value <= thr
        if not ok:
            bad.append(f"{link}/{est}/u{i} = {value:.3f} (need {kind} {thr})")
    if res.config["d"] != 100 or alpha != 50:
        detail = f"thresholds are the card's for d = 100, n/d = 50; this run has d = {res.config['d']}, n/d = {alpha:g}"
        return v.undecided(detail, len(bad), 0, 0)
    detail = (f"{len(BATTERY_THRESHOLDS) - len(bad)}/{len(BATTERY_THRESHOLDS)} cells as predicted "
              f"(means over {res.config['battery_seeds']} seeds)" + ("; failing: " + "; ".join(bad) if bad else ""))
    return v.judged(not bad, len(bad), 0, 0, detail)


S_FAILURES = ("Population zeros stay zeros: in every predicted-zero cell the seed-mean capture gains at most 0.15 from "
              "the smaller n/d to the larger (card), "
              "and pHd on D, whose anisotropic noise gives it a capture floor far above chance, stays below that "
              "floor's n -> infinity value at this d (Gaussian-limit theory).")


@claims.add("failures-do-not-improve", S_FAILURES, REF + ", population zeros")
def judge_failures(res, v) -> Verdict:
    battery = res.table("battery")
    lo, hi = min(res.config["alphas"]), max(res.config["alphas"])
    zero = battery[~battery["predicted"].astype(bool)]
    # Gains are paired by seed: both n/d are fitted on nested samples of one model.
    wide = zero.pivot_table(index=["link", "estimator", "direction", "seed"], columns="alpha", values="capture")
    per_seed = wide[hi] - wide[lo]
    gains = per_seed.groupby(level=["link", "estimator", "direction"]).agg(["mean", "std", "count"])
    worst_key = gains["mean"].idxmax()
    worst = float(gains.loc[worst_key, "mean"])
    se = float(gains.loc[worst_key, "std"] / np.sqrt(gains.loc[worst_key, "count"])) if gains.loc[worst_key,
        "count"] > 1 else float("nan")
    floor = res.table("noise_floor").iloc[0]
    phd_d = float(zero[(zero["link"] == "he3") & (zero["estimator"] == "pHd") & (zero["alpha"] == hi)]["capture"].mean(
        ))
    ok = worst <= 0.15 and phd_d <= floor["floor"]
    detail = (f"{len(gains)} predicted-zero cells, n/d {lo:g} -> {hi:g}; largest seed-mean gain {worst:+.3f} ± "
              f"{se:.3f} (SE over {int(gains.loc[worst_key, 'count'])} paired seeds) "
              f"at {worst_key[0]}/{worst_key[1]}/u{worst_key[2]} (need <= 0.15); pHd on D at n/d = {hi:g}: {phd_d:.3f} "
              f"against its blind noise floor "
              f"{floor['floor']:.3f} ± {floor['se']:.3f} (n -> infinity at d = {int(floor['d'])}; need below). pHd on "
              f"D drifts up towards that floor "
              "(+0.09 per seed from 20 to 50 over 200 seeds at d = 100; the u1 row of its noise has variance "
              f"{floor['u1k']:.0f} against {floor['kl']:.0f} in the bulk), which is why the card's slack is judged on "
              f"many seeds")
    return v.judged(ok, worst, "<= 0.15", 0.15, detail)


S_COLLAPSE = ("Sample complexity n ∝ d when the generative exponent is <= 2: for pHd on B (label clipped at 3, the "
              "bounded preprocessing the proportional-limit "
              "theory needs) and SIR on D the seed-mean capture at fixed n/d in {5, 10, 20} differs by <= 0.12 across "
              "d, and is >= 0.75 at n/d = 20. "
              "Raw pHd on B is reported, not judged: its unbounded label makes the largest noise eigenvalue grow like "
              "max y / alpha ~ 2 log(n) / alpha, "
              "so its capture at fixed n/d falls slowly with d (0.59, 0.54, 0.51, 0.40 at d = 50-400, n/d = 5).")

JUDGED_COLLAPSE = (("he2", "pHd-clip"), ("he3", "SIR"))


@claims.add("proportional-collapse", S_COLLAPSE, REF + ", sample complexity n ∝ d")
def judge_collapse(res, v) -> Verdict:
    col = res.table("collapse")
    missing = {5.0, 10.0, 20.0} - set(col["alpha"])
    if missing:
        raise Undecided(f"this config has no n/d = {', '.join(f'{a:g}' for a in sorted(missing))} in 'collapse_alphas'")
    means = col.groupby(["link", "estimator", "alpha", "d"])["capture"].mean()
    spreads, floors = [], []
    for link, est in JUDGED_COLLAPSE:
        for alpha in (5.0, 10.0, 20.0):
            vals = means[(link, est, alpha)]
            spreads.append((float(vals.max() - vals.min()), f"{est}/{link} at {alpha:g}"))
        floors.append((float(means[(link, est, 20.0)].min()), f"{est}/{link}"))
    spread, where = max(spreads)
    floor, fwhere = min(floors)
    ok = spread <= 0.12 and floor >= 0.75
    raw = ""
    if ("he2", "pHd") in {k[:2] for k in means.index}:
        r5 = means[("he2", "pHd", 5.0)]
        raw = "; reported, raw pHd on B at n/d = 5: " + ", ".join(f"d={d}: {v:.3f}" for d, v in r5.items())
    detail = (
        f"largest spread across d: {spread:.3f} ({where}; need <= 0.12); lowest capture at n/d = 20: {floor:.3f} "
        f"({fwhere}; need >= 0.75){raw}"
    )
    return v.judged(ok, spread, "<= 0.12", 0.12, detail)


S_POPULATION = (
    "Monte Carlo population matrices (n = 1e6, d = 5) match Stein's predictions: pHd equals E[hess g] entry by entry, "
    "and SIR/SAVE are zero exactly in the directions the table says they miss (within 4 standard errors)."
)


@claims.add("population-matrices", S_POPULATION, REF + ", Stein's identity")
def judge_population(res, v) -> Verdict:
    pop = res.table("population")
    bad = []
    phd = pop[pop["method"] == "pHd"]
    z_phd = ((phd["measured"] - phd["expected"]).abs() / phd["se"]).max()
    for r in phd.itertuples():
        if abs(r.measured - r.expected) > 4 * r.se:
            bad.append(f"pHd {r.link}[{r.entry}] = {r.measured:.4f} vs {r.expected:g} ± {r.se:.4f}")
    sliced = pop[pop["method"] != "pHd"]
    for r in sliced.itertuples():
        z = r.measured / r.se
        if r.predicted_nonzero and z < 4:
            bad.append(f"{r.method} {r.link} {r.entry}: {r.measured:.2e} is not >= 4 SE ({r.se:.1e})")
        if not r.predicted_nonzero and abs(z) > 4:
            bad.append(f"{r.method} {r.link} {r.entry}: {r.measured:.2e} is not within 4 SE ({r.se:.1e}) of 0")
    detail = f"pHd: largest |measured - E[hess g]| / SE = {z_phd:.2f}; {len(sliced)} SIR/SAVE diagonal checks" + (
        "; failing: " + "; ".join(bad[:6]) if bad else "; all as predicted")
    return v.judged(not bad, len(bad), 0, "4 SE", detail)


S_STATSMODELS = (
    "Our SIR and SAVE span the same subspaces as statsmodels' SlicedInverseReg and SAVE with the same slicing (link A, "
    "d = 20, n = 2000): largest principal angle <= 1e-6 rad."
)


@claims.add("statsmodels-agreement", S_STATSMODELS, "statsmodels.regression.dimred (reference implementation)")
def judge_statsmodels(res, v) -> Verdict:
    t = res.table("statsmodels", unless='statsmodels is not installed here (pip install "theorylab[stats]")')
    worst = float(t["max_angle"].max())
    detail = ", ".join(f"{r.method}: {r.max_angle:.1e} rad" for r in t.itertuples()) + " (need <= 1e-6)"
    return v.judged(worst <= 1e-6, worst, 0.0, 1e-6, detail)


S_GAP = (
    "Label transformations change the exponent: on D = He3(z1) ADE and pHd stay <= 0.5 up to n/d = 100, SIR crosses "
    "0.5 at n ∝ d (fitted exponent <= 1.25), while the naive order-3 tensor method needs n ∝ d^{1.5-2} (exponent "
    ">= 1.4)."
)


@claims.add("information-gap", S_GAP, REF + ", label transformations and the generative exponent")
def judge_gap(res, v) -> Verdict:
    gap = res.table("gap", unless="needs paper preset (this config skips the information-gap sweep on D: "
                                  "gap_dims/gap_alphas empty)")
    blind = gap[gap["estimator"].isin(["ADE", "pHd"])].groupby(["estimator", "d", "alpha"])["capture"].mean()
    worst_blind = float(blind.max())
    e_sir = fitted_exponent(_crossings(gap[gap["estimator"] == "SIR"]))
    e_tensor = fitted_exponent(_crossings(gap[gap["estimator"] == "order-3 V-stat"]))
    if e_sir is None or e_tensor is None:
        raise Undecided(f"needs crossings of 0.5 at >= 2 dimensions for SIR and the tensor method (exponents: {e_sir}, "
                        f"{e_tensor})")
    ok = worst_blind <= 0.5 and e_sir <= 1.25 and e_tensor >= 1.4
    detail = (
        f"ADE/pHd max seed-mean capture {worst_blind:.3f} (need <= 0.5); SIR exponent {e_sir:.2f} (need <= 1.25); "
        f"order-3 V-stat exponent {e_tensor:.2f} (need >= 1.4)"
    )
    return v.judged(ok, e_tensor, ">= 1.4", 1.4, detail)


S_NN = ("A two-layer ReLU net (width 64) trained by online SGD on B = He2(z1) at d = 100 recovers u1 in its "
        "first-layer top singular vector "
        "(capture >= 0.8, from about 1/d at initialisation) by n/d = 200 (threshold ours).")


@claims.add("nn-gd-row", S_NN, REF + ", neural networks trained by gradient descent")
def judge_nn(res, v) -> Verdict:
    t = res.table("nn_row", unless="this config does not train the two-layer net (nn_alphas empty)")
    init = t[t["alpha"] == 0]
    trained = t[(t["alpha"] > 0) & (t["alpha"] <= 200)]
    if trained.empty:
        raise Undecided("this config has no checkpoint of the net at n/d <= 200 in 'nn_alphas'")
    best = float(trained["capture"].max())
    start = float(init["capture"].iloc[0]) if len(init) else float("nan")
    # Trained, not born aligned: the initial top singular vector is a random direction (capture ~ 1/d).
    ok = best >= 0.8 and not start >= 0.5
    detail = (f"at initialisation {start:.3f}; " + ", ".join(
        f"n/d={r.alpha:g}: {r.capture:.3f}" for r in trained.itertuples())
              + f" (need >= 0.8 by n/d = 200, from < 0.5 at initialisation; d = {res.config['d']}, width "
                f"{res.config['nn_width']})")
    return v.judged(ok, best, ">= 0.8", 0.8, detail)


@study(
    "multi-index-estimators",
    title="Which index-space estimator works for which link",
    paper=PAPER,
    config=MultiIndexEstimatorsConfig,
    presets=PRESETS,
    family="index models",
    claims=claims,
)
def run(cfg: MultiIndexEstimatorsConfig, ctx: RunContext) -> None:
    battery = battery_captures(cfg.d, BATTERY_LINKS, cfg.battery_seeds, cfg.alphas, ESTIMATORS, cfg.n_slices,
                               lambda key: ctx.rng(f"battery/{key}"), cfg.noise, progress=ctx.progress)
    _figure_battery(ctx, ctx.table("battery", pd.DataFrame(battery).assign(d=cfg.d)))
    # pHd on D sees nothing in population, but its anisotropic noise gives it a capture floor (n -> infinity at
    # fixed d) far above chance, computed from the link by quadrature: theory.sdr.phd_noise_floor.
    floor = phd_blind_floor(get_link("he3"), cfg.d, cfg.floor_draws, ctx.rng("noise-floor"))
    ctx.table("noise_floor", pd.DataFrame([dict(link="he3", estimator="pHd", d=cfg.d, **floor)]))
    collapse = []
    for link, est in COLLAPSE_CELLS:
        sweep = capture_sweep(link, (est,), cfg.collapse_dims, cfg.collapse_alphas, cfg.collapse_seeds, cfg.n_slices,
                              lambda key, link=link: ctx.rng(f"collapse/{link}/{key}"), cfg.clip, cfg.noise)
        collapse += [dict(link=link, **r) for r in sweep]
    collapse = pd.DataFrame(collapse)[["link", "estimator", "d", "alpha", "seed", "capture"]]
    _figure_collapse(ctx, ctx.table("collapse", collapse))
    # Second-order population matrices by Monte Carlo with U = the first r coordinate axes.
    per = cfg.pop_n // cfg.pop_batches
    population = survey_population_checks(cfg.pop_d, cfg.pop_batches, per, cfg.n_slices,
                                          lambda link: ctx.rng(f"population/{link}"), BATTERY_LINKS)
    ctx.table("population", pd.DataFrame(population).assign(d=cfg.pop_d, n=per * cfg.pop_batches))
    rng = ctx.rng("statsmodels")
    X, y, _ = IndexModel.make(cfg.statsmodels_d, "z1+z1z2", rng).sample(cfg.statsmodels_n, rng)
    try:
        ctx.table("statsmodels", pd.DataFrame(statsmodels_angles(X, y, cfg.n_slices)).assign(d=cfg.statsmodels_d,
            n=cfg.statsmodels_n))
    except ImportError:
        ctx.log("statsmodels not installed: the cross-check is skipped (pip install statsmodels)")
    if cfg.gap_dims and cfg.gap_alphas:  # link D over n/d: ADE, pHd, SIR and the naive tensor method
        gap = capture_sweep("he3", GAP_ESTIMATORS, cfg.gap_dims, cfg.gap_alphas, cfg.gap_seeds, cfg.n_slices,
                            lambda key: ctx.rng(f"gap/{key}"), noise=cfg.noise, device=str(ctx.device),
                            progress=ctx.progress, description="information gap")
        _figure_gap(ctx, ctx.table("gap", pd.DataFrame(gap)))
    if cfg.nn_alphas:  # a two-layer ReLU net trained by online SGD on link B at d
        model = IndexModel.make(cfg.d, "he2", ctx.rng("nn/model"), noise=cfg.noise)
        check = lambda loss, seen: ctx.check_finite("two-layer net loss", loss, step=seen)  # noqa: E731
        rows = train_two_layer_online(model, cfg.nn_width, cfg.nn_lr, cfg.nn_batch, cfg.nn_alphas,
                                      ctx.generator("nn/init"), ctx.rng("nn/data"), check)
        ctx.table("nn_row", pd.DataFrame(rows).assign(d=cfg.d, width=cfg.nn_width))
