"""self-refining-surrogate: its claims, judged from a run's tables, scalars and config.

Horizons. The card states ``stabilizes`` on 600-step KS22 rollouts, ``kf-correlation`` on 1e4-step Kolmogorov
rollouts and ``qg-long`` on 50,000-step QG rollouts. Each judge reads the horizon that was run from its table; on a
shorter one the claim is "not decided" (with the reduced measurement, and what decides it), never judged: a
stability claim over a long horizon is not shown by a short one.

Censoring. ``corr_time`` (:mod:`theorylab.probes.rollout_metrics`) returns the last step of the correlation window
when ρ_t never fell below the threshold, flagged ``censored``: the true time is only bounded below. The KS22 table
stores the times alone, and a time at the rollout's last step (its ``horizon``) is read as censored (when ρ fell
exactly at that step the bound is the value, so the reading is only conservative); the Kolmogorov table stores the
flag. A median over trajectories of which some are lower bounds lies between the median with them at their bound
and the median with them at +inf, and a comparison of medians is decided only where those bounds decide it.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from theorylab.core import Check, Claims, Judgement, Result, Verdict
from theorylab.core.declared import Departure, KnownFailure
from theorylab.probes.rollout_metrics import censored_median_bounds, spectrum_band

REF = "arXiv 2603.17750"
OURS = "ours: linear-Gaussian AR(1) stand-in for the framework of " + REF

CARD_GAUSS_LEVELS = (0, 10, 50, 100, 200, 400, 700, 999)
"""The card's conditioning levels c of claims 1-2."""
KS_HORIZON = 600
"""The card's SNS rollout length on KS22 (claims 6-8)."""
KF_HORIZON = 10_000
"""The card's Kolmogorov rollout length (claim 9: "the last 10% of a 1e4-step rollout")."""
QG_HORIZON = 50_000
"""The card's QG rollout length (claim 10)."""

claims = Claims("self-refining-surrogate")

# --- departures from the card, as data ------------------------------------------------------------------------
# The card's quick recipe, field by field: a field set away from the card's value is a departure of every claim
# it feeds (a user who sets it back gets the claim as stated). The presets' own departures carry their reason.
STEPS = Departure.field_value(
    "steps",
    2000,
    "CPU budget of the quick preset: the card's 2000 steps took 25-28 s of "
    "a ~60 s run on a 2-core AVX2 box (the card measured 23 s on AVX-512); thresholds kept",
)
BASELINE_HORIZON = Departure.field_value(
    "baseline_horizon",
    200,
    "CPU budget: thermo costs ~70 denoiser calls per step; a thermo corr_time that reaches "
    "the rollout's end is judged as a lower bound (censored), so the cut can leave the claim not decided, never "
    "pass it on a time it did not measure",
)
GAUSS = [Departure.field_value("gauss_chains", 4000), Departure.field_value("gauss_steps", 3000)]
NET = [STEPS] + [
    Departure.field_value(f, card)
    for f, card in (
        ("noise_levels", 1000),
        ("low_noise_levels", 200),
        ("low_share", 0.5),
        ("ce_weight", 0.1),
        ("width", 256),
        ("blocks", 3),
        ("batch", 128),
        ("lr", 2e-3),
        ("train_trajectories", 48),
        ("train_horizon", 800),
    )
]
REFINE = NET + [Departure.field_value("variant", "fix_short")]
ROLLOUT = REFINE + [Departure.field_value("leak", 0.1), Departure.field_value("test_trajectories", 16)]

NO_ATTENTION = "no attention blocks in the U-Net (card: mid-attention and attention at the last level)"


def _trained(cfg: dict, tag: str, card_epochs: int, card_data: str) -> str:
    """The paper-scale SNS training as run, against the card's epochs (``tag``: the config prefix)."""
    n, T = cfg.get(f"{tag}_train_trajectories", 8), cfg.get(f"{tag}_train_horizon", 2000)
    steps, batch = cfg.get(f"{tag}_steps", 20_000), cfg.get("kolmogorov_batch", 64)
    epochs = steps * batch / max(n * (T - 1), 1)
    return (
        f"SNS U-Net {steps} AdamW steps, {epochs:.0f} epochs of {n} x {T} stored steps (card: {card_epochs} epochs"
        f"{card_data})"
    )


def _kf_departures(res) -> list[str]:
    """How the Kolmogorov part, when judged, differs from the card (the run's config; card defaults otherwise)."""
    cfg = getattr(res, "config", None) or {}
    return [
        "Thermalizer = the same network's thermo mode (card: the Thermalizer of studies/thermalizer)",
        "ACDM = the same network's acdm mode, ŝ_1 := 0 (card: ACDM)",
        _trained(cfg, "kolmogorov", 10, " of 1e5 stored steps"),
        NO_ATTENTION,
    ]


def _qg_departures(res) -> list[str]:
    cfg = getattr(res, "config", None) or {}
    return [_trained(cfg, "qg", 1000, ""), NO_ATTENTION]


# Measured with the quick preset (1600 steps) on seeds 0-9, 31 and 47 (theorylab check / run, this store's runs).
CLASSIFIER_KNOWN = KnownFailure.on_some_seeds(
    1,
    12,
    [47],
    (
        "on clean pairs seed 47's head 2 reads mean ŝ 13.90 (head 1 7.38; both corr 0.96) against the card's <= 10; "
        "seeds "
        "0-9 and 31 read 1.9-8.7. The clean ŝ is each trained head's own offset among the lowest levels (0-15 add "
        "noise "
        "of 0.6-3.5% of the field's std on the cosine schedule), which the heads barely tell apart, so where the "
        "argmax "
        "settles differs from network to network; the card's 2000 steps move the failure (seed 8, head 1 10.40) rather "
        "than remove it (docs/studies/self-refining-surrogate.md)"
    ),
)


def _said(lo: float, hi: float) -> str:
    return f"{lo:.1f}" if lo == hi else f">= {lo:.1f} (censored)"


def _ks_corr(v, t: pd.DataFrame, rollout: str) -> dict:
    """Median corr_time(0.8) bounds of one KS22 rollout: a time at the rollout's last step is censored."""
    r = t[t["rollout"] == rollout]
    time = v.column(r, "corr_time_0.8").to_numpy(float)
    horizon = v.column(r, "horizon").to_numpy(float)
    censored = time >= horizon
    lo, hi = censored_median_bounds(time, censored)
    return dict(lo=lo, hi=hi, censored=int(censored.sum()), n=len(r), horizon=int(horizon.max()))


S_TRADE = (
    "Exact AR(1) surrogate (a = 0.95, Σ = 1, δ = 0.04, cosine T = 1000), c in {0, 10, 50, 100, 200, 400, 700, "
    "999}: the one-step MSE increases strictly from 0.1965 to 2.000, V_c/Σ decreases strictly from 4.077 to "
    "1.000, and a Monte Carlo chain (4000 chains x 3000 steps, last 1500 averaged) gives V_50/Σ = 2.828 within "
    "3%."
)


@claims.add("gauss-tradeoff", S_TRADE, OURS, departures=GAUSS)
def judge_tradeoff(res: Result, v: Judgement) -> Verdict:
    t = res.table("gauss")
    d = t[t["delta"] == 0.04].sort_values("level")
    levels = tuple(int(c) for c in d["level"])
    mse, V = v.column(d, "mse").to_numpy(float), v.column(d, "V").to_numpy(float)
    mse_up, v_down = bool(np.all(np.diff(mse) > 0)), bool(np.all(np.diff(V) < 0))
    row = d[d["level"] == 50].iloc[0]
    mc = v.finite(row["mc_variance"], "Monte Carlo V_50")
    rel = abs(mc / 2.828 - 1)
    detail = (
        f"levels {list(levels)}; MSE {mse[0]:.4f} -> {mse[-1]:.4f} (monotone: {mse_up}), "
        f"V/Σ {V[0]:.3f} -> {V[-1]:.3f} (monotone: {v_down}); V_50 closed form "
        f"{row['V']:.3f}, Monte Carlo {mc:.3f} ± {row['mc_se']:.3f} ({rel:.1%} off 2.828)"
    )
    return v.all_of(
        Check.at_most("|Monte Carlo V_50 / 2.828 - 1|", rel, 0.03),
        Check.holds("levels are the card's", levels == CARD_GAUSS_LEVELS),
        Check.holds("MSE increases strictly in c", mse_up),
        Check.holds("V/Σ decreases strictly in c", v_down),
        # the card's numbers, to their printed precision
        Check.at_most("|MSE_0 - 0.1965|", abs(mse[0] - 0.1965), 5e-5),
        Check.at_most("|MSE_999 - 2.000|", abs(mse[-1] - 2.000), 5e-4),
        Check.at_most("|V_0/Σ - 4.077|", abs(V[0] - 4.077), 5e-4),
        Check.at_most("|V_999/Σ - 1.000|", abs(V[-1] - 1.000), 5e-4),
        Check.at_most("|V_50/Σ - 2.828| (closed form)", abs(float(row["V"]) - 2.828), 5e-4),
        measured=mc,
        detail=detail,
    )


S_CRIT = (
    "With δ = 0.08 ((1 + δ)a = 1.026) the AR(1) surrogate diverges for c in {0, 10, 50} (Monte Carlo variance "
    "> 1e6 within 3000 steps) and is stable for c >= 100 (closed-form ρ_c < 1); Monte Carlo V_100/Σ = 24.1 ± 10% "
    "(closed form), consistent with ᾱ_{c*} = 0.9747 between levels 50 and 100."
)


@claims.add("gauss-critical-level", S_CRIT, OURS, departures=GAUSS)
def judge_critical(res: Result, v: Judgement) -> Verdict:
    t = res.table("gauss")
    d = t[t["delta"] == 0.08].set_index("level")
    peak = v.column(d.loc[[0, 10, 50, 100, 200]], "mc_max_variance")  # the Monte Carlo levels
    diverge = bool((peak.loc[[0, 10, 50]] > 1e6).all())
    stable_theory = bool((v.column(d.loc[d.index >= 100], "rho").abs() < 1).all())
    mc100 = v.finite(d.loc[100, "mc_variance"], "Monte Carlo V_100")
    stable_mc = bool(np.isfinite(peak.loc[[100, 200]]).all()) and float(peak.loc[200]) < 1e6
    crit = v.finite(res.scalars["critical_alpha_bar"], "ᾱ_c*")
    level = int(res.scalars["critical_level"])
    detail = (
        "MC peak variance c = 0/10/50: "
        + ", ".join(f"{float(peak.loc[c]):.2e}" for c in (0, 10, 50))
        + f"; V_100 MC {mc100:.2f} vs closed form {float(d.loc[100, 'V']):.2f}; ᾱ_c* {crit:.4f}, first stable "
        f"level {level}"
    )
    return v.all_of(
        Check.at_most("|Monte Carlo V_100 / 24.1 - 1|", abs(mc100 / 24.1 - 1), 0.10),
        Check.holds("Monte Carlo peak variance > 1e6 at c = 0, 10, 50", diverge),
        Check.holds("closed-form |ρ_c| < 1 at every c >= 100", stable_theory),
        Check.holds("Monte Carlo finite at c = 100, 200, peak < 1e6 at c = 200", stable_mc),
        Check.at_most("|V_100/Σ - 24.1| (closed form)", abs(float(d.loc[100, "V"]) - 24.1), 0.05),
        Check.at_most("|ᾱ_c* - 0.9747|", abs(crit - 0.9747), 5e-5),
        Check.holds("first stable level > 50", level > 50),
        Check.at_most("first stable level", level, 100),
        measured=mc100,
        detail=detail,
    )


S_CAL = (
    "On held-out KS pairs noised to independent levels (the training mixture), both level heads have corr(ŝ, s) "
    ">= 0.93, and on clean pairs the mean ŝ of both heads is <= 10 (1% of T)."
)


@claims.add("classifier", S_CAL, REF + ", the level heads", departures=NET, known=CLASSIFIER_KNOWN)
def judge_classifier(res: Result, v: Judgement) -> Verdict:
    t = res.table("calibration")
    c1 = float(np.corrcoef(v.column(t, "level_prev"), v.column(t, "predicted_prev"))[0, 1])
    c2 = float(np.corrcoef(v.column(t, "level"), v.column(t, "predicted"))[0, 1])
    m1, m2 = float(v.column(t, "clean_prev").mean()), float(v.column(t, "clean").mean())
    return v.all_of(
        Check.at_least("corr(ŝ, s)", pd.Series({"head 1": c1, "head 2": c2}), 0.93),
        Check.at_most("clean mean ŝ", pd.Series({"head 1": m1, "head 2": m2}), 10),
        detail=f"corr head 1 {c1:.3f}, head 2 {c2:.3f}; clean mean ŝ {m1:.2f}, {m2:.2f} (need <= 10)",
    )


S_COND = (
    "For true next frames noised to s* in {100, 200, 300}, MSE after thermo-mode refinement / MSE after SNS "
    "(conditional) refinement >= 1.5 at each s*, and SNS refinement lowers the input MSE at every s*."
)


@claims.add(
    "conditioning-helps",
    S_COND,
    REF + ", conditioning on the previous frame",
    departures=REFINE
    + [Departure.field_value("pairs", 320), Departure.field_value("refine_noise_levels", (100, 200, 300))],
)
def judge_conditioning(res: Result, v: Judgement) -> Verdict:
    one = res.table("one_step")
    cols = ["mse_input", "mse_sns", "mse_thermo"]
    t = pd.DataFrame({c: v.column(one, c) for c in cols}).groupby(one["s_star"]).mean()
    ratio = t["mse_thermo"] / t["mse_sns"]
    detail = "; ".join(
        f"s* {s}: input {r.mse_input:.4f}, SNS {r.mse_sns:.4f}, thermo {r.mse_thermo:.4f} (ratio "
        f"{r.mse_thermo / r.mse_sns:.2f})"
        for s, r in t.iterrows()
    )
    return v.all_of(
        Check.at_least("thermo / SNS refined MSE", ratio, 1.5),
        Check.holds("SNS lowers the input MSE at every s*", bool((t["mse_sns"] < t["mse_input"]).all())),
        measured=float(ratio.min()),
        detail=detail,
    )


S_NOOP = "For exact-solver proposals, SNS changes the proposal by ‖refined − proposal‖/‖proposal‖ <= 0.03 (mean)."


@claims.add("no-op-on-clean", S_NOOP, REF + ", level inference leaves clean proposals alone", departures=REFINE)
def judge_noop(res: Result, v: Judgement) -> Verdict:
    t = res.table("no_op")
    change = v.column(t, "relative_change")
    return v.at_most(
        float(change.mean()),
        0.03,
        name="mean relative change",
        detail=(
            f"max {change.max():.4f}; mean ŝ_2 {v.column(t, 'level').mean():.2f}, ŝ_1 "
            f"{v.column(t, 'level_prev').mean():.2f}; {v.column(t, 'calls').mean():.1f} calls"
        ),
    )


S_STAB = (
    "KSLeaky(η = 0.1) alone leaves the attractor with median <= 100 steps; with SNS correction (same noise and "
    "initial conditions) >= 90% of trajectories stay on it for the whole horizon (600 steps), so the ratio of "
    "median off-attractor times (censored at the horizon) is >= 6."
)


@claims.add("stabilizes", S_STAB, REF + ", stable long rollouts", departures=ROLLOUT)
def judge_stabilizes(res: Result, v: Judgement) -> Verdict:
    t = res.table("rollouts")
    plain, sns = t[t["rollout"] == "plain"], t[t["rollout"] == "sns"]
    # off-attractor times are +inf when a trajectory never left (censored at the horizon); with them at the horizon
    # the plain median is exact whenever it is <= 100 < horizon, and SNS's median (so the ratio) is a lower bound
    off_plain = v.column(plain, "off_attractor").to_numpy(float)
    off_sns = v.column(sns, "off_attractor").to_numpy(float)
    horizon = int(v.column(sns, "horizon").min())
    med_plain = float(np.median(np.where(np.isinf(off_plain), v.column(plain, "horizon"), off_plain)))
    stay = float(np.isinf(off_sns).mean())
    ratio = float(np.median(np.where(np.isinf(off_sns), horizon, off_sns))) / max(med_plain, 1.0)
    detail = (
        f"plain median off-attractor {med_plain:.0f}; SNS: {stay:.0%} stay {horizon} steps, ratio "
        f"{ratio:.1f}; {v.column(sns, 'calls_per_step').mean():.1f} denoiser calls per step"
    )
    if horizon < KS_HORIZON:
        return v.undecided(
            f"needs {KS_HORIZON}-step SNS rollouts (the card's; the quick preset runs them): this run's "
            f"{horizon} steps are reduced; at {horizon}: {detail}",
            measured=stay,
        )
    return v.all_of(
        Check.at_least("share of SNS trajectories on the attractor throughout", stay, 0.9),
        Check.at_most("plain median off-attractor time", med_plain, 100),
        Check.at_least("ratio of median off-attractor times", ratio, 6),
        detail=detail,
    )


S_SHORT = "Same proposals: median corr_time(0.8) of SNS >= 1.25 x that of the same network's thermo mode."


@claims.add("beats-thermo-short", S_SHORT, REF + ", short-time fidelity", departures=ROLLOUT + [BASELINE_HORIZON])
def judge_short(res: Result, v: Judgement) -> Verdict:
    t = res.table("rollouts")
    s, th = _ks_corr(v, t, "sns"), _ks_corr(v, t, "thermo")
    calls = v.column(t, "calls_per_step").groupby(t["rollout"]).mean()
    detail = (
        f"median corr_time(0.8): SNS {_said(s['lo'], s['hi'])} ({s['censored']}/{s['n']} censored at "
        f"{s['horizon']} steps), thermo {_said(th['lo'], th['hi'])} ({th['censored']}/{th['n']} censored at "
        f"{th['horizon']} steps); calls per step SNS {calls['sns']:.1f}, thermo {calls['thermo']:.1f}"
    )
    low, high = s["lo"] / max(th["hi"], 1e-12), s["hi"] / max(th["lo"], 1e-12)  # bounds on the ratio of medians
    # decided only where the bounds decide it: SNS's lower bound against thermo's upper bound, or the reverse
    if s["lo"] >= 1.25 * th["hi"]:
        return v.passed(low, ">= 1.25", 1.25, f"ratio >= {low:.2f}; {detail}")
    if s["hi"] < 1.25 * th["lo"]:
        return v.failed(high, ">= 1.25", 1.25, f"ratio <= {high:.2f}; {detail}")
    return v.undecided(
        f"censored medians bound the ratio only to [{low:.2f}, {high:.2f}] against >= 1.25; a longer "
        f"thermo rollout (baseline_horizon, card 200) or SNS rollout decides it; {detail}",
        measured=low,
    )


S_SPEC = (
    "Over the last 300 steps of the SNS rollout, E_SNS(m)/E_ref(m) is in [0.8, 1.25] for m = 1..6 and the mean "
    "|ln ratio| <= 0.1 (E_ref: the training ensemble's spectrum); thermo mode reported, not claimed."
)


@claims.add(
    "energetic-stats",
    S_SPEC,
    REF + ", long-time consistency",
    departures=ROLLOUT + [Departure.field_value("horizon", KS_HORIZON), Departure.field_value("spectrum_window", 300)],
)
def judge_spectrum(res: Result, v: Judgement) -> Verdict:
    t = res.table("spectrum").set_index("mode")
    modes = t.loc[1:6]
    r = v.column(modes, "ratio")
    lo, hi = 0.8, 1.25
    _, mean_log = spectrum_band(r, lo, hi)
    detail = (
        "SNS ratios m = 1..6: "
        + ", ".join(f"{x:.3f}" for x in r)
        + "; thermo: "
        + ", ".join(f"{x:.3f}" for x in modes["thermo_ratio"])
        + "; truth window: "
        + ", ".join(f"{x:.3f}" for x in modes["truth_ratio"])
    )
    return v.all_of(
        Check.at_most("mean |ln E_SNS/E_ref|", mean_log, 0.1),
        Check.within("E_SNS/E_ref", r, lo, hi),
        Check.holds("modes 1..6 present", list(modes.index) == [1, 2, 3, 4, 5, 6]),
        detail=detail,
    )


# The paper preset's claims, declared after these (their module reads this one's names).
from theorylab.studies.self_refining_surrogate.judges_paper import judge_kf, judge_qg  # noqa: E402,F401
