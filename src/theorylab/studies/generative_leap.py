"""generative-leap: sample complexity n = Θ(d^{max(1, k*/2)}) for Gaussian multi-index models.

Paper: A. Damian, J. D. Lee, J. Bruna, "The Generative Leap: Sharp Sample Complexity for
Efficiently Learning Gaussian Multi-Index Models", arXiv 2506.05500 (2025).

The Gaussian 3-parity ``y = sign(z1 z2 z3)`` has generative leap k* = 3: every order-1 and order-2
moment of any label transform vanishes, so an order-3 spectral U-statistic is needed, and it
succeeds at ``n ∝ d^{3/2}``. The monomial ``y = z1 z2 z3`` has information exponent 3 but k* = 2:
an order-2 estimator on ``log|y|`` succeeds at ``n ∝ d``. The study checks the exact moments by
Monte Carlo, computes the first-stage leap of each link from samples, and measures the collapse
of the estimators' overlaps in ``n/d^{3/2}`` and ``n/d``.
"""

from __future__ import annotations

from typing import Annotated

import numpy as np
import pandas as pd
from pydantic import Field

from theorylab.core import Claims, Preset, RunContext, StudyConfig, Verdict, study
from theorylab.core.errors import Undecided
from theorylab.core.fields import Chunk, Dim, SampleRatio, SampleSize, Seeds
from theorylab.core.plotting import color, log_ticks, new_figure, prediction_vs_simulation
from theorylab.data.index_models import IndexModel, get_link
from theorylab.probes.index_recovery import k3_overlaps, order2_overlap, sequential_recovery
from theorylab.theory.generative import P3_TRIPLE, leap_moment_checks
from theorylab.theory.hermite import leap_scores
from theorylab.theory.sample_complexity import crossings_from_table, fitted_exponent

PAPER = "Damian, Lee, Bruna, arXiv 2506.05500 (2025)"
REF = "arXiv 2506.05500"



class GenerativeLeapConfig(StudyConfig):
    moment_n: Annotated[SampleSize, Field(ge=10_000)] = Field(1_000_000, description="samples of the exact-moment "
        "checks (card: 1e6)")
    leap_n: Annotated[SampleSize, Field(ge=10_000)] = Field(200_000, description="samples for the first-stage leap of "
        "each link")
    leap_links: tuple[str, ...] = Field(("parity3", "z1z2z3"), min_length=1, description="links whose leap is "
        "computed (paper adds parity4)")
    parity_dims: tuple[Annotated[Dim, Field(ge=4)], ...] = Field((16, 24, 32), min_length=2, description="dimensions "
        "of the 3-parity U/V-statistic runs")
    parity_c: tuple[SampleRatio, ...] = Field((2.0, 8.0, 16.0), min_length=1, description="c = n / d^1.5 for the "
        "3-parity (card: 2, 8, 16)")
    monomial_dims: tuple[Annotated[Dim, Field(ge=4)], ...] = Field((32, 64, 128), min_length=2,
        description="dimensions "
        "of the monomial order-2 runs")
    monomial_alphas: tuple[SampleRatio, ...] = Field((10.0, 20.0, 40.0), min_length=1, description="alpha = n/d for "
        "the monomial (card: 10, 20, 40)")
    order2_d: Annotated[Dim, Field(ge=4)] = Field(32, description="dimension of the order-2 estimator on the 3-parity")
    order2_c: SampleRatio = Field(16.0, description="c = n / d^1.5 of that run")
    sequential_d: Annotated[Dim, Field(ge=4)] = Field(12, description="dimension of the sequential-estimator runs")
    sequential_n: Annotated[SampleSize, Field(ge=100)] = Field(6000, description="samples of the sequential-estimator "
        "runs")
    seeds: Seeds = Field(3, description="seeds per 3-parity point (card: 3; paper 10)")
    monomial_seeds: Seeds = Field(32, description="seeds per monomial point (card: 3; at d = 32 an overlap is near "
        "1/3, 2/3 or 1, so 3 seeds leave ±0.1 on the mean; 32 leave ±0.02)")
    chunk: Annotated[Chunk, Field(ge=16)] = Field(2048, description="rows per block of the n^2 kernel sums (memory vs "
        "speed)")


PRESETS = {
    "quick": Preset.of("quick",
                       "2 CPU cores, < 60 s: the card's moment checks, P3 at d <= 32, M3 at d <= 128, 3 seeds"),
    "paper": Preset.of(
        "paper",
        "GPU for the n^2 kernels: larger d, a fine c grid and 10 seeds, for the fitted exponents",
        parity_dims=((32, 64, 128, 256), "card's dimensions"),
        parity_c=((1.0, 2.0, 4.0, 6.0, 8.0, 12.0, 16.0, 24.0, 32.0, 64.0), "fine c grid for the crossing points"),
        seeds=(10, "card: 10 seeds"),
        leap_links=(("parity3", "z1z2z3", "parity4"), "the leap of the 4-parity too"),
        leap_n=(1_000_000, "order-4 tensors need more samples"),
    ),
}


def _sample(ctx: RunContext, stream: str, d: int, link: str, n: int) -> tuple[IndexModel, np.ndarray, np.ndarray]:
    """A model with a random W and n samples, both from the named stream."""
    rng = ctx.rng(stream)
    model = IndexModel.make(d, link, rng)
    X, y, _ = model.sample(n, rng)
    return model, X, y


def _sequential(cfg: GenerativeLeapConfig, ctx: RunContext) -> None:
    """The agnostic sequential estimator on every leap link: which orders it needed, what it found."""
    rows = []
    for name in cfg.leap_links:
        for seed in range(cfg.seeds):
            model, X, y = _sample(ctx, f"sequential/{name}/{seed}", cfg.sequential_d, name, cfg.sequential_n)
            rows.append(dict(link=name, seed=seed, **sequential_recovery(model, X, y, seed, cfg.chunk)))
    ctx.table("sequential", pd.DataFrame(rows).assign(d=cfg.sequential_d, n=cfg.sequential_n))


def _parity(cfg: GenerativeLeapConfig, ctx: RunContext) -> pd.DataFrame:
    rows = []
    for d in ctx.progress(cfg.parity_dims, "3-parity U/V statistics"):
        for c in cfg.parity_c:
            n = max(int(round(c * d**1.5)), 8)
            for seed in range(cfg.seeds):
                model, X, y = _sample(ctx, f"p3/{d}/{c}/{seed}", d, "parity3", n)
                for stat, ov in k3_overlaps(model, X, y, cfg.chunk, str(ctx.device)).items():
                    rows.append(dict(d=d, c=c, n=n, seed=seed, statistic=stat, overlap=ov))
    return ctx.table("parity", pd.DataFrame(rows))


def _monomial(cfg: GenerativeLeapConfig, ctx: RunContext) -> pd.DataFrame:
    rows = []
    for d in cfg.monomial_dims:
        for alpha in cfg.monomial_alphas:
            for seed in range(cfg.monomial_seeds):
                model, X, y = _sample(ctx, f"m3/{d}/{alpha}/{seed}", d, "z1z2z3", int(round(alpha * d)))
                rows.append(dict(link="z1z2z3", d=d, alpha=alpha, seed=seed, overlap=order2_overlap(model, X, y)))
    d, n = cfg.order2_d, int(round(cfg.order2_c * cfg.order2_d**1.5))
    for seed in range(cfg.seeds):
        model, X, y = _sample(ctx, f"order2-p3/{seed}", d, "parity3", n)
        # Any transform of a +-1 label is affine in it: the identity is every transform.
        rows.append(dict(link="parity3", d=d, alpha=n / d, seed=seed, overlap=order2_overlap(model, X, y, lambda t: t)))
    return ctx.table("order2", pd.DataFrame(rows))


# --------------------------------------------------------------------------------------------
# Figures
# --------------------------------------------------------------------------------------------


def _figure_overlap_vs_c(ctx: RunContext, parity: pd.DataFrame) -> None:
    fig, ax = new_figure()
    means = parity.groupby(["statistic", "d", "c"])["overlap"].mean().reset_index()
    for i, d in enumerate(sorted(means["d"].unique())):
        for stat, style in (("U", "o-"), ("V", "s--")):
            g = means[(means["d"] == d) & (means["statistic"] == stat)]
            ax.plot(g["c"], g["overlap"], style, color=color(i), ms=4, label=f"d = {d}, {stat}-statistic")
    ax.axhline(3 / min(means["d"]), color="grey", ls=":", lw=1, label="chance 3/d (smallest d)")
    ax.set_xscale("log")
    log_ticks(ax, sorted(means["c"].unique()))
    ax.set_ylim(0, 1.02)
    ax.set_xlabel("c = n / d^1.5")
    ax.set_ylabel("overlap |P̂P|²/3 (seed mean)")
    ax.set_title("3-parity (k* = 3): curves collapse in n/d^(k*/2)", fontsize=8)
    ax.legend(fontsize=6)
    ctx.figure("overlap_vs_c", fig)


def _figure_m3_vs_p3(ctx: RunContext, order2: pd.DataFrame) -> None:
    fig, ax = new_figure()
    m3 = order2[order2["link"] == "z1z2z3"].groupby(["d", "alpha"])["overlap"].mean().reset_index()
    prediction_vs_simulation(ax, m3, "alpha", None, "overlap", group="d", label="M3 = z1 z2 z3, d = {group}",
                             xlabel="n/d", ylabel="order-2 overlap (T(y) = log|y|; P3: any T)", logx=True)
    p3 = order2[order2["link"] == "parity3"]
    ax.plot(p3["alpha"], p3["overlap"], "kx", ms=7, label=f"P3 = sign(z1 z2 z3), d = {int(p3['d'].iloc[0])}")
    ax.set_ylim(0, 1.02)
    ax.set_title("the sign hides the order-2 signal: M3 has k* = 2, P3 has k* = 3", fontsize=8)
    ax.legend(fontsize=7)
    ctx.figure("m3_vs_p3", fig)


def _figure_crossing(ctx: RunContext, parity: pd.DataFrame) -> None:
    fig, ax = new_figure()
    ds = np.array(sorted(parity["d"].unique()), dtype=float)
    for slope, style in ((1.0, ":"), (1.5, "--"), (2.0, "-.")):
        ax.plot(ds, 5 * ds**slope, style, color="grey", lw=0.8, label=f"∝ d^{slope:g}")
    rows = []
    for stat in ("U", "V"):
        cross = _crossings(parity[parity["statistic"] == stat])
        rows += [dict(statistic=f"{stat}-statistic", d=d, n=n) for d, n in cross.items()] if len(cross) >= 2 else []
    cross = pd.DataFrame(rows, columns=["statistic", "d", "n"])
    prediction_vs_simulation(ax, cross, "d", None, "n", group="statistic", xlabel="d",
                             ylabel="n where the seed-mean overlap crosses 0.5", logx=True, logy=True)
    ax.set_title("crossing points of the 3-parity estimators", fontsize=8)
    ctx.figure("crossing_scaling", fig)


def _crossings(table: pd.DataFrame, level: float = 0.5) -> dict[int, float]:
    """Per d, the n at which the seed-mean overlap first reaches ``level``; d whose smallest n is already there are left
    out."""
    return crossings_from_table(table, "n", "overlap", level, skip_started=True)


# --------------------------------------------------------------------------------------------
# Claims
# --------------------------------------------------------------------------------------------


claims = Claims("generative-leap")


S_P3 = (
    "For the 3-parity every order-1 and order-2 moment of y vanishes, and E[y z1 z2 z3] = (2/pi)^{3/2} ≈ 0.5079 (Monte "
    "Carlo, 1e6 samples, within 4 SE)."
)


@claims.add("p3-moments", S_P3, REF + ", the 3-parity's moments")
def judge_p3_moments(res, v) -> Verdict:
    t = res.table("moments")
    t = t[t["link"] == "parity3"].assign(z=lambda f: (f["measured"] - f["expected"]).abs() / f["se"])
    worst = t.loc[t["z"].idxmax()]
    triple = t[t["moment"] == "E[y z1 z2 z3]"].iloc[0]
    detail = (
        f"{len(t)} moments; largest deviation {worst['z']:.2f} SE ({worst['moment']}); E[y z1 z2 z3] = "
        f"{triple['measured']:.4f} ± {triple['se']:.4f} vs {P3_TRIPLE:.4f}"
    )
    return v.judged(bool(t["z"].max() <= 4), float(worst["z"]), 0, "4 SE", detail)


S_M3 = (
    "For the monomial y = z1 z2 z3, E[(y^2 - 1)(z1^2 - 1)] = 2: a label transform exposes an order-2 signal (Monte "
    "Carlo, within 4 SE)."
)


@claims.add("m3-moment", S_M3, REF + ", label transforms lower the exponent")
def judge_m3_moment(res, v) -> Verdict:
    row = res.table("moments").query("link == 'z1z2z3'").iloc[0]
    z = abs(row["measured"] - 2.0) / row["se"]
    detail = f"{row['measured']:.4f} ± {row['se']:.4f} vs 2 ({z:.2f} SE)"
    return v.judged(bool(z <= 4), float(row["measured"]), 2.0, "4 SE", detail)


S_LEAP = (
    "Computed from samples, the first-stage generative leap is 3 for the 3-parity and 2 for z1 z2 z3 (4 for the "
    "4-parity at the paper preset): the smallest k whose conditional Hermite tensor E[He_k(z) | y] is nonzero."
)


@claims.add("leap-values", S_LEAP, REF + ", definition of the generative leap (first stage; reconstructed)")
def judge_leaps(res, v) -> Verdict:
    t = res.table("leaps")
    found = t.groupby("link")[["leap", "known"]].first()
    bad = [f"{link}: {int(r.leap)} (known {int(r.known)})" for link, r in found.iterrows() if r.leap != r.known]
    detail = ", ".join(f"{link}: k* = {int(r.leap)}" for link, r in found.iterrows()) + (
        f"; wrong: {', '.join(bad)}" if bad else "")
    zs = t.pivot(index="link", columns="k", values="z_score").round(1).to_dict("index")
    return v.judged(not bad, len(bad), 0, 0, detail + f"; z-scores by k: {zs}")


S_SEQ = ("The agnostic sequential spectral estimator (orders 1-3, no knowledge of the link) needs exactly order k* and "
         "recovers the whole index space "
         "(overlap >= 0.9, no extra direction) on each leap link, for every seed (ours: a check of our estimator "
         "against the known first-stage leaps; "
         "not the card's sequential-leap claim, which needs a multi-stage link and is not built).")


@claims.add("sequential-estimator", S_SEQ, REF + ", agnostic sequential estimation (our reconstruction)")
def judge_sequential(res, v) -> Verdict:
    t = res.table("sequential")
    known = t["known"].astype(int)
    testable = t[known <= 3]  # our estimator stops at order 3
    if testable.empty:
        raise Undecided("this config has no link with k* <= 3 in 'leap_links' (the estimator stops at order 3)")
    bad = testable[(testable["leap"] != testable["known"]) | (testable["found"] != testable["r"]) | (testable[
        "overlap"] < 0.9)]
    detail = "; ".join(f"{r.link} seed {r.seed}: {r.stages} (overlap {r.overlap:.3f})" for r in testable.itertuples())
    return v.judged(bad.empty, len(bad), 0, 0, detail)


S_COLLAPSE = (
    "3-parity (k* = 3): the order-3 U-statistic's seed-mean overlap collapses in c = n/d^{3/2}: >= 0.85 at c = 16 for "
    "every d, spread <= 0.15 across d at c = 8, and <= 0.5 at c = 2."
)


@claims.add("u-stat-collapse", S_COLLAPSE, REF + ", sufficiency of the spectral U-statistic")
def judge_u_collapse(res, v) -> Verdict:
    t = res.table("parity")
    u = t[t["statistic"] == "U"].groupby(["c", "d"])["overlap"].mean()
    cs = set(u.index.get_level_values(0))
    if not {2.0, 8.0, 16.0} <= cs:
        raise Undecided(
            f"this config has no c = {', '.join(f'{c:g}' for c in sorted({2.0, 8.0, 16.0} - cs))} in 'parity_c'")
    high, mid, low = u[16.0], u[8.0], u[2.0]
    spread = float(mid.max() - mid.min())
    ok = high.min() >= 0.85 and spread <= 0.15 and low.max() <= 0.5
    detail = (
        f"c=16: min {high.min():.3f} (need >= 0.85); c=8: {', '.join(f'd={d}: {v:.3f}' for d, v in mid.items())}, "
        f"spread {spread:.3f} (need <= 0.15); c=2: max {low.max():.3f} (need <= 0.5)"
    )
    return v.judged(ok, spread, "<= 0.15", 0.15, detail)


S_BLIND = (
    "Order-2 methods are blind to the 3-parity: at d = 32, n = 16 d^{3/2}, the order-2 estimator's overlap stays <= "
    "0.3 (chance 3/32), whatever the label transform."
)


@claims.add("order2-blind", S_BLIND, REF + ", necessity (low-degree lower bound)")
def judge_order2_blind(res, v) -> Verdict:
    t = res.table("order2").query("link == 'parity3'")
    worst = float(t["overlap"].max())
    detail = f"overlaps over {len(t)} seeds: " + ", ".join(f"{v:.3f}" for v in t[
        "overlap"]) + f" (need <= 0.3; chance {3 / t['d'].iloc[0]:.3f})"
    return v.judged(worst <= 0.3, worst, "<= 0.3", 0.3, detail)


S_M3_LINEAR = ("Monomial z1 z2 z3 (information exponent 3, k* = 2): the order-2 estimator on log|y| reaches seed-mean "
               "overlap >= 0.85 at n/d = 40 for every d, "
               "and its curves collapse in n/d: spread <= 0.1 across d at n/d = 20 and 40. The card's n/d = 10 is "
               "reported, not judged: it lies below this "
               "estimator's spectral threshold, where the proportional-limit overlap is 0 and finite-d overlaps fall "
               "slowly with d "
               "(0.50, 0.43, 0.35, 0.22, 0.13 at d = 32, 64, 128, 256, 512; 40 seeds each), so there is nothing to "
               "collapse at these d.")

M3_JUDGED = (20.0, 40.0)  # above the spectral threshold (fixed from the d-trend above, not from this run)


@claims.add("m3-linear", S_M3_LINEAR, REF + ", k* = 2 gives n ∝ d")
def judge_m3_linear(res, v) -> Verdict:
    t = res.table("order2").query("link == 'z1z2z3'")
    means = t.groupby(["alpha", "d"])["overlap"].mean()
    alphas = sorted(set(means.index.get_level_values(0)))
    missing = [a for a in M3_JUDGED if a not in alphas]
    if missing:
        raise Undecided(f"this config has no n/d = {', '.join(f'{a:g}' for a in missing)} in 'monomial_alphas'")
    top = means[40.0]
    spreads = {a: float(means[a].max() - means[a].min()) for a in alphas}
    worst = max(spreads[a] for a in M3_JUDGED)
    ok = top.min() >= 0.85 and worst <= 0.1
    below = [a for a in alphas if a < min(M3_JUDGED)]
    detail = (f"n/d = 40: min over d {top.min():.3f} (need >= 0.85); spread across d: "
              + ", ".join(f"{a:g}: {spreads[a]:.3f}" for a in M3_JUDGED) + " (need <= 0.1)"
              + "".join(f"; reported, n/d = {a:g} (below the threshold): " + ", ".join(f"d={d}: {v:.3f}" for d,
                  v in means[a].items()) for a in below)
              + f"; {t['seed'].nunique()} seeds per point")
    return v.judged(ok, worst, "<= 0.1", 0.1, detail)


S_U_BEATS_V = (
    "Removing the diagonal does not hurt: at c = 8 the U-statistic's seed-mean overlap is >= the V-statistic's for "
    "every d."
)


@claims.add("u-beats-v", S_U_BEATS_V, REF + ", U- vs V-statistic")
def judge_u_beats_v(res, v) -> Verdict:
    t = res.table("parity")
    at = t[t["c"] == 8.0].groupby(["d", "statistic"])["overlap"].mean().unstack()
    if at.empty:
        raise Undecided("this config has no c = 8 in 'parity_c'")
    margin = float((at["U"] - at["V"]).min())
    detail = ", ".join(f"d={d}: U {r.U:.3f} vs V {r.V:.3f}" for d, r in at.iterrows())
    return v.judged(margin >= 0, margin, ">= 0", 0, detail)


S_EXPONENTS = ("Fitted exponent of the crossing n (overlap 0.5) against d: 1.5 ± 0.2 for the 3-parity U-statistic (n ∝ "
               "d^{k*/2}) and >= 1.75 for the V-statistic. "
               "The card's third part, 2.0 ± 0.25 for the 4-parity, is not built (no order-4 kernel): this claim does "
               "not cover it.")


@claims.add("exponents", S_EXPONENTS, REF + ", n = Θ(d^{k*/2})")
def judge_exponents(res, v) -> Verdict:
    t = res.table("parity")
    exps = {}
    for stat in ("U", "V"):
        cross = _crossings(t[t["statistic"] == stat])
        if len(cross) >= 3 and max(cross) >= 128:
            exps[stat] = fitted_exponent(cross)
    if len(exps) < 2:
        raise Undecided("needs paper preset (crossings of 0.5 at >= 3 dimensions up to d >= 128); the 4-parity part is "
                        "not built")
    ok = abs(exps["U"] - 1.5) <= 0.2 and exps["V"] >= 1.75
    detail = (
        f"U: {exps['U']:.2f} (need 1.5 ± 0.2); V: {exps['V']:.2f} (need >= 1.75); the card's 4-parity exponent needs "
        f"an order-4 kernel we have not built"
    )
    return v.judged(ok, exps["U"], 1.5, 0.2, detail)


@study(
    "generative-leap",
    title="Sharp sample complexity n = Θ(d^{max(1, k*/2)}) for Gaussian multi-index models",
    paper=PAPER,
    config=GenerativeLeapConfig,
    presets=PRESETS,
    family="index models",
    claims=claims,
    not_built={
        "generative-leap/sequential-leap": "the card's multi-stage link (a degree-1 stage unlocking a degree-2 stage "
                                           "given x_S) is not built; "
        "sequential-estimator checks our estimator on one-stage links only",
        "generative-leap/exponents (4-parity)": "the card's exponent 2.0 ± 0.25 for the 4-parity needs an order-4 "
                                                "U-statistic kernel, not built; "
        "exponents judges the 3-parity only",
    },
)
def run(cfg: GenerativeLeapConfig, ctx: RunContext) -> None:
    ctx.table("moments", pd.DataFrame(leap_moment_checks(cfg.moment_n, ctx.rng("moments"))))
    leaps = [dict(link=name, **row) for name in cfg.leap_links
             for row in leap_scores(get_link(name), cfg.leap_n, ctx.rng(f"leap/{name}"))]
    ctx.table("leaps", pd.DataFrame(leaps))
    _sequential(cfg, ctx)
    parity = _parity(cfg, ctx)
    _figure_overlap_vs_c(ctx, parity)
    _figure_crossing(ctx, parity)
    order2 = _monomial(cfg, ctx)
    _figure_m3_vs_p3(ctx, order2)
