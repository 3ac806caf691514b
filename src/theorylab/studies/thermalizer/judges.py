"""thermalizer: its claims, judged from a run's tables, scalars and config."""

from __future__ import annotations

import numpy as np
import pandas as pd

from theorylab.core import Check, Claims, Judgement, Result, Verdict
from theorylab.core.declared import Departure

REF = "arXiv 2503.18731"


claims = Claims("thermalizer")

# Where the judged form differs from the card's (a field departure applies only when the run's value differs).
HORIZON = Departure.field_value(
    "horizon",
    1000,
    "CPU budget: ~11 denoiser calls per thermalized step; 800 steps are "
    "~25x the plain rollout's median time on the attractor",
    presets=["quick"],
)
KF = [
    Departure.field_value("kolmogorov_solve_grid", 512, "GPU time (--set kolmogorov_solve_grid=512 for the card's)"),
    Departure.field_value("noise_levels", 1000, "the quick preset's 200-class head at every preset", presets=["paper"]),
    Departure.of(
        "KF training reduced: 8 trajectories x 2000 stored steps, 20k steps per net; thermalizer AdamW lr "
        "2e-4, batch 32, no EMA (card: 450k 5-step windows, 12 / 50 epochs, thermalizer lr 2e-5, batch 64, "
        "EMA 0.995)",
        "one GPU session's budget; not compared with the card's recipe",
        presets=["paper"],
    ),
]


S_GAIN = (
    "Exact Gaussian model: the Monte Carlo mean gain of Algorithm 1 with the optimal denoiser (ŝ = 10 -> s_stop "
    "= 4, cosine T = 1000) matches the closed form M "
    "within 1e-3 at σ² in {1, 1e-3, 1e-5} (probes at unit scale: Monte Carlo SE ≈ 4e-5), and M at σ² = 1e6 and 0 "
    "equals its limits √(ᾱ_stop/ᾱ_ŝ) and √(ᾱ_ŝ/ᾱ_stop)(1 − ᾱ_stop)/(1 − ᾱ_ŝ) to 1e-4."
)


@claims.add(
    "gauss-gain",
    S_GAIN,
    "ours: exact Gaussian model of " + REF + " Algorithm 1",
    departures=[
        "Monte Carlo probes at unit scale (card: at the mode's own scale): the mean gain is a regression slope, the "
        "same "
        "for any probe, and at the mode's scale the injected noise leaves SE ~0.01 at σ² = 1e-5",
        "tolerance 1e-3 (card: 0.01): ~20 SE of the unit-scale probes",
        "energetic limit √(ᾱ_stop/ᾱ_ŝ) = 1.00023 (card: 0.99977, the reciprocal): the limit of the closed form; the "
        "card's expression is inverted (theory.thermalize)",
    ],
)
def judge_gain(res: Result, v: Judgement) -> Verdict:
    t = res.table("gauss_gain")
    mc = t.dropna(subset=["monte_carlo"])  # NaN here means: a limit row, without a Monte Carlo estimate
    worst = float((mc["monte_carlo"] - v.column(mc, "closed_form")).abs().max())
    lim = t.dropna(subset=["limit"])  # NaN here means: a Monte Carlo row, without a limit
    lim_err = float((v.column(lim, "closed_form") - lim["limit"]).abs().max())
    se = float(v.column(mc, "monte_carlo_se").max())
    detail = (
        "MC vs M: "
        + ", ".join(f"σ² {r.variance:g}: {r.monte_carlo:.4f} vs {r.closed_form:.4f}" for r in mc.itertuples())
        + f" (largest MC SE {se:.1e}); limits {lim_err:.1e}"
    )
    if 4 * se > 1e-3:
        return v.undecided(
            f"needs more Monte Carlo samples (gauss_n = {res.config['gauss_n']}): 4 SE exceeds "
            f"the 1e-3 tolerance; {detail}"
        )
    # 1e-3: ~20 SE at 2e5 samples (SE ~4e-5), so only a real mismatch between Algorithm 1 and the
    # closed form fails (the card's 0.01 was sized for probes at the mode's own scale, SE ~0.01 at σ² = 1e-5).
    return v.all_of(
        Check.at_most("max |Monte Carlo - M|", worst, 1e-3),
        Check.at_most("max |M - its limit|", lim_err, 1e-4),
        detail=detail,
    )


S_STAB = (
    "A diagonal linear emulator with a = 1.2 on modes below σ² = 1e-5 (0.9 elsewhere), thermalized every step at "
    "ŝ = 10 down to s_stop = 4, is stable: max |M a| = 0.900 ± 0.001 < 1, and the Monte Carlo stationary "
    "variance per mode (chains after 100 discarded steps) matches w/(1 − (Ma)²) within 3%; without "
    "thermalization the per-step growth factor of ‖x‖ over steps 40-50 lies in [1.19, 1.21]."
)


@claims.add(
    "gauss-stability",
    S_STAB,
    "ours: exact Gaussian model",
    departures=[Departure.field_value("gauss_chains", 20_000, "CPU budget; the variance error stays within ~1%")],
)
def judge_stability(res: Result, v: Judgement) -> Verdict:
    t = res.table("gauss_stability")
    peak = float((v.column(t, "gain") * t["a"]).abs().max())
    theory = v.column(t, "stationary_theory")
    err = float(((v.column(t, "stationary_mc") - theory).abs() / theory).max())
    growth = v.finite(t["plain_growth"].iloc[0], "plain growth")
    detail = (
        f"model max |Ma| {peak:.4f}; stationary variance error max {err:.2%}; "
        f"plain rollout growth {growth:.4f} per step"
    )
    return v.all_of(
        Check.at_most("stationary variance relative error", err, 0.03),
        # the max skips a NaN gain a: the peak is then undetermined
        Check.at_most("|model max |Ma| - 0.9|", np.nan if t["a"].isna().any() else abs(peak - 0.9), 1e-3),
        Check.within("plain rollout growth per step", growth, 1.19, 1.21),
        detail=detail,
    )


S_STAB_FACTORS = (
    "Ours: the same thermalized linear emulator read mode by mode: each mode's per-step factor, measured "
    "from the rollout (lag-1 regression), matches the Gaussian model's M a within 0.01, the measured "
    "largest factor is < 1, and the plain rollout's rms grows by a per-step factor within 0.01 of the "
    "model's Σ a^(2t) σ², > 1."
)


@claims.add(
    "gauss-stability-factors",
    S_STAB_FACTORS,
    "ours: exact Gaussian model, per mode",
    departures=[Departure.field_value("gauss_chains", 20_000, "CPU budget; the factors' SE stays <= 0.0015")],
)
def judge_stability_factors(res: Result, v: Judgement) -> Verdict:
    t = res.table("gauss_stability")
    factor_err = (v.column(t, "factor_thermalized") - v.column(t, "factor_theory")).abs()
    worst_factor = float(factor_err.max())
    measured_peak = float(t["factor_thermalized"].abs().max())
    growth = v.finite(t["plain_growth"].iloc[0], "plain growth")
    growth_theory = v.finite(t["plain_growth_theory"].iloc[0], "model growth")
    # 0.01 on a factor: > 6 standard errors of the lag-1 slope at the quick 2000 chains x 200 steps
    # (SE <= 0.0015), while a denoiser that does not damp the leak band (M = 1) misses by 0.78 there.
    leak = t[t["a"] > 1]
    detail = (
        "thermalized per-step factor (measured vs M a): "
        + ", ".join(f"σ² {r.variance:g}: {r.factor_thermalized:.4f} vs {r.factor_theory:.4f}" for r in t.itertuples())
        + f"; worst {worst_factor:.4f} (largest SE {t['factor_thermalized_se'].max():.4f}); "
        f"measured max {measured_peak:.4f}; leak band factor "
        f"{leak['factor_thermalized'].max():.4f} vs a = {leak['a'].max():g} unthermalized; "
        f"plain rollout growth {growth:.4f} per step vs model {growth_theory:.4f}"
    )
    return v.all_of(
        Check.at_most("worst |measured factor - M a|", worst_factor, 0.01),
        Check.holds("measured largest factor < 1", measured_peak < 1),
        Check.at_most("|plain growth - model growth|", abs(growth - growth_theory), 0.01),
        Check.holds("plain growth > 1", growth > 1),
        detail=detail,
    )


S_CAL = (
    "On held-out KS snapshots diffused to s ~ U{0..199}: corr(ŝ, s) >= 0.95, MAE <= 5 levels for s <= 30, and >= 95% "
    "of clean snapshots classified at ŝ <= s_init."
)


@claims.add("classifier-calibrated", S_CAL, REF + ", the noise-level classifier")
def judge_calibration(res: Result, v: Judgement) -> Verdict:
    t = res.table("calibration")
    c = float(np.corrcoef(t["level"], t["predicted"])[0, 1])
    low = t[t["level"] <= 30]
    mae = float((low["predicted"] - low["level"]).abs().mean())
    clean = float((t["clean_predicted"] <= res.config["s_init"]).mean())
    return v.all_of(
        Check.at_least("corr(ŝ, s)", c, 0.95),
        Check.at_most("MAE for s <= 30", mae, 5),
        Check.at_least("share of clean snapshots at ŝ <= s_init", clean, 0.95),
        detail=f"corr {c:.3f}; MAE (s <= 30) {mae:.2f}; clean at ŝ <= s_init: {clean:.1%}",
    )


S_DRIFT = (
    "KSLeaky(η = 0.1) leaves the attractor (rms outside [0.3, 2] data std) in every test trajectory, with median "
    "off-attractor time <= 100 steps, while the truth never does."
)


@claims.add("emulator-drifts", S_DRIFT, REF + ", emulators drift (our controlled emulator)", departures=[HORIZON])
def judge_drift(res: Result, v: Judgement) -> Verdict:
    t = res.table("rollouts")
    med = float(np.median(t["off_plain"]))
    return v.all_of(
        Check.at_most("median off-attractor time of the plain rollout", med, 100),
        Check.holds("every plain rollout leaves the attractor", bool(np.isfinite(t["off_plain"]).all())),
        Check.holds("the truth never leaves", bool(np.isinf(t["off_truth"]).all())),
        detail=f"plain off-attractor: median {med:.0f}, min {t['off_plain'].min():.0f}; "
        f"truth exits: {int(np.isfinite(t['off_truth']).sum())}",
    )


S_STABLE = (
    "The thermalized rollout (same emulator, noise and initial conditions) stays on the attractor for the whole "
    "horizon in >= 90% of trajectories, so R = τ_therm/τ_emu >= 10."
)


@claims.add("stabilizes", S_STABLE, REF + ", thermalization keeps rollouts stable", departures=[HORIZON])
def judge_stabilizes(res: Result, v: Judgement) -> Verdict:
    t = res.table("rollouts")
    share = float(np.isinf(t["off_thermalized"]).mean())
    horizon = res.config["horizon"]
    R = float(
        np.median(np.where(np.isinf(t["off_thermalized"]), horizon, t["off_thermalized"])) / np.median(t["off_plain"])
    )
    return v.all_of(
        Check.at_least("share staying on the attractor", share, 0.9),
        Check.at_least("R = τ_therm/τ_emu", R, 10),
        detail=f"{share:.0%} stay for {horizon} steps; R >= {R:.0f} (censored); "
        f"{t['calls_per_step'].mean():.1f} denoiser calls per step, thermalized "
        f"on {t['thermalized_share'].mean():.0%} of steps",
    )


S_SPEC = (
    "Over the last 500 thermalized steps, spectrum_ratio(m) = E_therm(m)/E_true(m) against the truth's own "
    "test rollouts over the same window is in [0.85, 1.15] for every energetic mode m = 1..6, with mean "
    "|ln ratio| <= 0.08."
)


def _band(v, r: pd.Series, detail: str) -> Verdict:
    r = r.rename(lambda m: f"m = {m}")
    mean_log = float(np.abs(np.log(r.to_numpy(float))).mean())
    return v.all_of(
        Check.within("spectrum ratio", r, 0.85, 1.15),
        Check.at_most("mean |ln ratio|", mean_log, 0.08),
        detail=f"{detail}; mean |ln ratio| {mean_log:.3f}",
    )


@claims.add(
    "energetic-stats", S_SPEC, REF + "; the Gaussian model's damper is near 1 on energetic modes", departures=[HORIZON]
)
def judge_spectrum(res: Result, v: Judgement) -> Verdict:
    t = res.table("spectrum").set_index("mode")
    r = (
        v.column(t, "thermalized", name="thermalized spectrum (rows: mode)").loc[1:6]
        / v.column(t, "truth", name="truth spectrum (rows: mode)").loc[1:6]
    )
    detail = (
        "ratios m = 1..6: " + ", ".join(f"{x:.3f}" for x in r) + "; against the training ensemble's invariant "
        "spectrum: " + ", ".join(f"{x:.3f}" for x in t.loc[1:6, "ratio"])
    )
    return _band(v, r, detail)


S_SPEC_REF = (
    "Ours (a reference with less sampling noise): over the last 500 thermalized steps, E_therm(m)/E_ref(m) "
    "is in [0.85, 1.15] for every energetic mode m = 1..6, with mean |ln ratio| <= 0.08, E_ref the invariant "
    "measure's spectrum from the training ensemble (the 16-trajectory test window alone scatters by ~10% "
    "per mode)."
)


@claims.add(
    "energetic-stats-invariant",
    S_SPEC_REF,
    "ours: " + REF + ", energetic statistics against the invariant measure",
    departures=[HORIZON],
)
def judge_spectrum_invariant(res: Result, v: Judgement) -> Verdict:
    t = res.table("spectrum").set_index("mode")
    r = v.column(t, "ratio", name="E_therm/E_ref (rows: mode)").loc[1:6]
    control = t.loc[1:6, "truth_ratio"]  # the truth's own test window against the same reference: the sampling spread
    detail = (
        "ratios m = 1..6: "
        + ", ".join(f"{x:.3f}" for x in r)
        + " (standard errors of ln ratio: "
        + ", ".join(f"{x:.3f}" for x in t.loc[1:6, "se_log_ratio"])
        + "); the truth's own test window: "
        + ", ".join(f"{x:.3f}" for x in control)
    )
    return _band(v, r, detail)


S_FLOOR = (
    "In the leak band the thermalized spectrum stays finite but inflated, as the Gaussian model predicts (modes below "
    "the s_stop floor cannot be restored): E_therm(8)/E_true(8) in [1.5, 10]."
)


@claims.add("noise-floor", S_FLOOR, "ours: the Gaussian model's noise floor", departures=[HORIZON])
def judge_floor(res: Result, v: Judgement) -> Verdict:
    t = res.table("spectrum").set_index("mode")
    r = float(t.loc[8, "ratio"])
    return v.within(
        r,
        1.5,
        10,
        name="E_therm(8)/E_true(8)",
        detail=f"m = 9, 10: {t.loc[9, 'ratio']:.2f}, {t.loc[10, 'ratio']:.2f}",
    )


KF_SKIPPED = (
    "needs paper preset: this config does not run the Kolmogorov-flow part (kolmogorov=false; --set kolmogorov=true "
    "runs it)"
)


S_KF = (
    "On Kolmogorov flow (Re = 10k), the thermalized learned emulator's median off-attractor time is >= 100x the "
    "plain emulator's, >= 35/40 of its trajectories stay "
    "for the 1e5-step horizon, and its KE spectral similarity to the truth is within 2x the "
    "truth-vs-independent-truth floor (thresholds ours; the paper: > 1e5 steps, ~100x)."
)


@claims.add(
    "kf-horizon", S_KF, REF + ", ~100x longer stable rollouts on Kolmogorov flow", departures=KF, decided_by="paper"
)
def judge_kolmogorov_horizon(res: Result, v: Judgement) -> Verdict:
    t = res.table("kolmogorov", unless=KF_SKIPPED)
    horizon = int(t["horizon"].iloc[0])
    stay = float(np.isinf(t["off_thermalized"]).mean())
    med_t = float(np.median(np.where(np.isinf(t["off_thermalized"]), horizon, t["off_thermalized"])))
    med_p = float(np.median(np.where(np.isinf(t["off_plain"]), horizon, t["off_plain"])))
    ratio = med_t / max(med_p, 1.0)
    sim, floor = float(t["spectral_similarity"].iloc[0]), float(t["noise_floor"].iloc[0])
    detail = (
        f"horizon {horizon}: {stay:.0%} stay; median off-attractor {med_t:.0f} vs plain {med_p:.0f} (ratio "
        f"{ratio:.0f}); spectral similarity {sim:.3f} vs floor {floor:.3f}"
    )
    return v.all_of(
        Check.at_least("median off-attractor time, thermalized / plain", ratio, 100),
        Check.at_least("share staying for the horizon", stay, 35 / 40),
        Check.at_least("horizon", horizon, 100_000),
        Check.at_most("KE spectral similarity (bound: 2x the truth floor)", sim, 2 * floor),
        detail=detail,
    )


S_COST = (
    "Averaged over the Kolmogorov rollout, thermalization fires on < 50% of steps with <= 10 denoiser calls per "
    "emulator step (the paper's cost argument; reconstructed)."
)


@claims.add("kf-cost", S_COST, REF + ", the cost of thermalization", departures=KF, decided_by="paper")
def judge_kolmogorov_cost(res: Result, v: Judgement) -> Verdict:
    t = res.table("kolmogorov", unless=KF_SKIPPED)
    share, calls = float(t["thermalized_share"].mean()), float(t["calls_per_step"].mean())
    nan = t[["thermalized_share", "calls_per_step"]].isna().any()  # the means skip a NaN rollout: undetermined
    return v.all_of(
        Check.holds("thermalized share < 0.5", None if nan["thermalized_share"] else share < 0.5),
        Check.at_most("denoiser calls per step", np.nan if nan["calls_per_step"] else calls, 10),
        measured=share,
        tolerance=0.5,
        detail=f"thermalized on {share:.0%} of steps; {calls:.2f} denoiser calls per step",
    )
