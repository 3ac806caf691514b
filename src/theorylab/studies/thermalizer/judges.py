"""thermalizer: its claims, judged from a run's tables, scalars and config."""

from __future__ import annotations

import numpy as np

from theorylab.core import Claims, Verdict
from theorylab.core.errors import Undecided
from theorylab.probes.rollout_metrics import spectrum_band

REF = "arXiv 2503.18731"


claims = Claims("thermalizer")


S_GAIN = ("Exact Gaussian model: the Monte Carlo mean gain of Algorithm 1 with the optimal denoiser (ŝ = 10 -> s_stop "
          "= 4, cosine T = 1000) matches the closed form M "
          "within 1e-3 at σ² in {1, 1e-3, 1e-5} (probes at unit scale: Monte Carlo SE ≈ 4e-5), and M at σ² = 1e6 and 0 "
          "equals its limits √(ᾱ_stop/ᾱ_ŝ) and √(ᾱ_ŝ/ᾱ_stop)(1 − ᾱ_stop)/(1 − ᾱ_ŝ) to 1e-4.")


@claims.add("gauss-gain", S_GAIN, "ours: exact Gaussian model of " + REF + " Algorithm 1")
def judge_gain(res, v) -> Verdict:
    t = res.table("gauss_gain")
    mc = t.dropna(subset=["monte_carlo"])
    worst = float((mc["monte_carlo"] - mc["closed_form"]).abs().max())
    lim = t.dropna(subset=["limit"])
    lim_err = float((lim["closed_form"] - lim["limit"]).abs().max())
    se = float(mc["monte_carlo_se"].max())
    detail = ("MC vs M: " + ", ".join(
        f"σ² {r.variance:g}: {r.monte_carlo:.4f} vs {r.closed_form:.4f}" for r in mc.itertuples())
              + f" (largest MC SE {se:.1e}); limits {lim_err:.1e}")
    if 4 * se > 1e-3:
        raise Undecided(f"needs more Monte Carlo samples (gauss_samples = {res.config['gauss_samples']}): 4 SE exceeds "
                        f"the 1e-3 tolerance; {detail}")
    # 1e-3: ~20 SE at 2e5 samples (SE ~4e-5), so only a real mismatch between Algorithm 1 and the
    # closed form fails (the card's 0.01 was sized for probes at the mode's own scale, SE ~0.01 at σ² = 1e-5).
    return v.judged(worst <= 1e-3 and lim_err <= 1e-4, worst, "<= 1e-3", 1e-3, detail)


S_STAB = ("A linear emulator with a = 1.2 on modes below σ² = 1e-5 (0.9 elsewhere) grows without thermalization (the "
          "plain rollout's rms grows by a per-step factor "
          "within 0.01 of the model's Σ a^(2t) σ², > 1); thermalized every step at ŝ = 10 it is stable: each mode's "
          "per-step factor, measured from the rollout "
          "(lag-1 regression), matches the Gaussian model's M a within 0.01, max |M a| = 0.900 ± 0.001 < 1, and the "
          "stationary variance matches w/(1 − (Ma)²) within 3%.")


@claims.add("gauss-stability", S_STAB, "ours: exact Gaussian model")
def judge_stability(res, v) -> Verdict:
    t = res.table("gauss_stability")
    peak = float((t["gain"] * t["a"]).abs().max())
    factor_err = (t["factor_thermalized"] - t["factor_theory"]).abs()
    worst_factor = float(factor_err.max())
    measured_peak = float(t["factor_thermalized"].abs().max())
    err = float(((t["stationary_mc"] - t["stationary_theory"]).abs() / t["stationary_theory"]).max())
    growth, growth_theory = float(t["plain_growth"].iloc[0]), float(t["plain_growth_theory"].iloc[0])
    # 0.01 on a factor: > 6 standard errors of the lag-1 slope at the quick 2000 chains x 200 steps
    # (SE <= 0.0015), while a denoiser that does not damp the leak band (M = 1) misses by 0.78 there.
    ok = (abs(peak - 0.9) <= 1e-3 and worst_factor <= 0.01 and measured_peak < 1 and err <= 0.03
          and abs(growth - growth_theory) <= 0.01 and growth > 1)
    leak = t[t["a"] > 1]
    detail = ("thermalized per-step factor (measured vs M a): " + ", ".join(f"σ² {r.variance:g}: "
        f"{r.factor_thermalized:.4f} vs {r.factor_theory:.4f}" for r in t.itertuples())
              + f"; worst {worst_factor:.4f} (need <= 0.01; largest SE {t['factor_thermalized_se'].max():.4f}); "
                f"measured max {measured_peak:.4f} (need < 1), "
              f"model max |Ma| {peak:.4f} (need 0.900 ± 0.001); leak band factor "
              f"{leak['factor_thermalized'].max():.4f} vs a = {leak['a'].max():g} unthermalized; "
              f"stationary variance error max {err:.2%} (need <= 3%); plain rollout growth {growth:.4f} per step vs "
              f"model {growth_theory:.4f} (need within 0.01, > 1)")
    return v.judged(ok, worst_factor, "<= 0.01", 0.01, detail)


S_CAL = (
    "On held-out KS snapshots diffused to s ~ U{0..199}: corr(ŝ, s) >= 0.95, MAE <= 5 levels for s <= 30, and >= 95% "
    "of clean snapshots classified at ŝ <= s_init."
)


@claims.add("classifier-calibrated", S_CAL, REF + ", the noise-level classifier")
def judge_calibration(res, v) -> Verdict:
    t = res.table("calibration")
    c = float(np.corrcoef(t["level"], t["predicted"])[0, 1])
    low = t[t["level"] <= 30]
    mae = float((low["predicted"] - low["level"]).abs().mean())
    clean = float((t["clean_predicted"] <= res.config["s_init"]).mean())
    ok = c >= 0.95 and mae <= 5 and clean >= 0.95
    return v.judged(ok, c, ">= 0.95", 0.95, f"corr {c:.3f}; MAE (s <= 30) {mae:.2f}; clean at ŝ <= s_init: {clean:.1%}")


S_DRIFT = (
    "KSLeaky(η = 0.1) leaves the attractor (rms outside [0.3, 2] data std) in every test trajectory, with median "
    "off-attractor time <= 100 steps, while the truth never does."
)


@claims.add("emulator-drifts", S_DRIFT, REF + ", emulators drift (our controlled emulator)")
def judge_drift(res, v) -> Verdict:
    t = res.table("rollouts")
    med = float(np.median(t["off_plain"]))
    ok = bool(np.isfinite(t["off_plain"]).all()) and med <= 100 and bool(np.isinf(t["off_truth"]).all())
    return v.judged(ok, med, "<= 100", 100, f"plain off-attractor: median {med:.0f}, min {t['off_plain'].min():.0f}; "
                                            f"truth exits: {int(np.isfinite(t['off_truth']).sum())}")


S_STABLE = (
    "The thermalized rollout (same emulator, noise and initial conditions) stays on the attractor for the whole "
    "horizon in >= 90% of trajectories, so R = τ_therm/τ_emu >= 10."
)


@claims.add("stabilizes", S_STABLE, REF + ", thermalization keeps rollouts stable")
def judge_stabilizes(res, v) -> Verdict:
    t = res.table("rollouts")
    share = float(np.isinf(t["off_thermalized"]).mean())
    horizon = res.config["horizon"]
    R = float(np.median(np.where(np.isinf(t["off_thermalized"]), horizon, t["off_thermalized"])) / np.median(t[
        "off_plain"]))
    ok = share >= 0.9 and R >= 10
    return v.judged(ok, share, ">= 0.9", 0.9, f"{share:.0%} stay for {horizon} steps; R >= {R:.0f} (censored); "
                                              f"{t['calls_per_step'].mean():.1f} denoiser calls per step, thermalized "
                                              f"on {t['thermalized_share'].mean():.0%} of steps")


S_SPEC = ("Over the last 500 thermalized steps, E_therm(m)/E_true(m) is in [0.85, 1.15] for every energetic mode m = "
          "1..6, with mean |ln ratio| <= 0.08; "
          "E_true is the invariant measure's spectrum from the training ensemble (the test window alone scatters by "
          "~10% per mode).")


@claims.add("energetic-stats", S_SPEC, REF + "; the Gaussian model's damper is near 1 on energetic modes")
def judge_spectrum(res, v) -> Verdict:
    t = res.table("spectrum").set_index("mode")
    r = t.loc[1:6, "ratio"]
    in_band, mean_log = spectrum_band(r, 0.85, 1.15)
    ok = in_band and mean_log <= 0.08
    control = t.loc[1:6, "truth_ratio"]  # the truth's own test window against the same reference: the sampling spread
    detail = ("ratios m = 1..6: " + ", ".join(f"{v:.3f}" for v in r) + " (standard errors of ln ratio: " + ", ".join(
        f"{v:.3f}" for v in t.loc[1:6, "se_log_ratio"])
              + "); the truth's own test window: " + ", ".join(f"{v:.3f}" for v in control))
    return v.judged(ok, mean_log, "<= 0.08", 0.08, detail)


S_FLOOR = (
    "In the leak band the thermalized spectrum stays finite but inflated, as the Gaussian model predicts (modes below "
    "the s_stop floor cannot be restored): E_therm(8)/E_true(8) in [1.5, 10]."
)


@claims.add("noise-floor", S_FLOOR, "ours: the Gaussian model's noise floor")
def judge_floor(res, v) -> Verdict:
    t = res.table("spectrum").set_index("mode")
    r = float(t.loc[8, "ratio"])
    return v.judged(1.5 <= r <= 10, r, "in [1.5, 10]", None, f"ratio at m = 8: {r:.2f}; m = 9, 10: "
                                                             f"{t.loc[9, 'ratio']:.2f}, {t.loc[10, 'ratio']:.2f}")


KF_SKIPPED = (
    "needs paper preset: this config does not run the Kolmogorov-flow part (kolmogorov=false; --set kolmogorov=true "
    "runs it)"
)


S_KF = ("On Kolmogorov flow (Re = 10k), the thermalized learned emulator's median off-attractor time is >= 100x the "
        "plain emulator's, >= 35/40 of its trajectories stay "
        "for the 1e5-step horizon, and its KE spectral similarity to the truth is within 2x the "
        "truth-vs-independent-truth floor (thresholds ours; the paper: > 1e5 steps, ~100x).")


@claims.add("kf-horizon", S_KF, REF + ", ~100x longer stable rollouts on Kolmogorov flow")
def judge_kolmogorov_horizon(res, v) -> Verdict:
    t = res.table("kolmogorov", unless=KF_SKIPPED)
    horizon = int(t["horizon"].iloc[0])
    stay = float(np.isinf(t["off_thermalized"]).mean())
    med_t = float(np.median(np.where(np.isinf(t["off_thermalized"]), horizon, t["off_thermalized"])))
    med_p = float(np.median(np.where(np.isinf(t["off_plain"]), horizon, t["off_plain"])))
    ratio = med_t / max(med_p, 1.0)
    sim, floor = float(t["spectral_similarity"].iloc[0]), float(t["noise_floor"].iloc[0])
    ok = ratio >= 100 and stay >= 35 / 40 and horizon >= 100_000 and sim <= 2 * floor
    detail = (
        f"horizon {horizon}: {stay:.0%} stay; median off-attractor {med_t:.0f} vs plain {med_p:.0f} (ratio "
        f"{ratio:.0f}); spectral similarity {sim:.3f} vs floor {floor:.3f}"
    )
    return v.judged(ok, ratio, ">= 100", 100, detail)


S_COST = (
    "Averaged over the Kolmogorov rollout, thermalization fires on < 50% of steps with <= 10 denoiser calls per "
    "emulator step (the paper's cost argument; reconstructed)."
)


@claims.add("kf-cost", S_COST, REF + ", the cost of thermalization")
def judge_kolmogorov_cost(res, v) -> Verdict:
    t = res.table("kolmogorov", unless=KF_SKIPPED)
    share, calls = float(t["thermalized_share"].mean()), float(t["calls_per_step"].mean())
    return v.judged(share < 0.5 and calls <= 10, share, "< 0.5", 0.5, f"thermalized on {share:.0%} of steps; "
        f"{calls:.2f} denoiser calls per step")
