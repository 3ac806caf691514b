"""self-refining-surrogate: its claims, judged from a run's tables, scalars and config."""

from __future__ import annotations

import numpy as np
import pandas as pd

from theorylab.core import Claims, Verdict
from theorylab.probes.rollout_metrics import spectrum_band

REF = "arXiv 2603.17750"
OURS = "ours: linear-Gaussian AR(1) stand-in for the framework of " + REF

claims = Claims("self-refining-surrogate")


def _censored(t: pd.DataFrame, col: str) -> np.ndarray:
    return np.where(np.isinf(t[col]), t["horizon"], t[col])


S_TRADE = ("Exact AR(1) surrogate (a = 0.95, Σ = 1, δ = 0.04, cosine T = 1000), c in {0, 10, 50, 100, 200, 400, 700, "
           "999}: the one-step MSE increases strictly from 0.1965 to 2.000, V_c/Σ decreases strictly from 4.077 to "
           "1.000, and a Monte Carlo chain (4000 chains x 3000 steps, last 1500 averaged) gives V_50/Σ = 2.828 within "
           "3%.")


@claims.add("gauss-tradeoff", S_TRADE, OURS)
def judge_tradeoff(res, v) -> Verdict:
    t = res.table("gauss")
    d = t[t["delta"] == 0.04].sort_values("level")
    mse, V = d["mse"].to_numpy(), d["V"].to_numpy()
    mono = bool(np.all(np.diff(mse) > 0) and np.all(np.diff(V) < 0))
    # the card's numbers, to their printed precision
    ends = (abs(mse[0] - 0.1965) <= 5e-5 and abs(mse[-1] - 2.000) <= 5e-4 and abs(V[0] - 4.077) <= 5e-4
            and abs(V[-1] - 1.000) <= 5e-4)
    row = d[d["level"] == 50].iloc[0]
    rel = abs(row["mc_variance"] / 2.828 - 1)
    ok = mono and ends and abs(row["V"] - 2.828) <= 5e-4 and rel <= 0.03
    detail = (f"MSE {mse[0]:.4f} -> {mse[-1]:.4f} (monotone: {np.all(np.diff(mse) > 0)}), V/Σ {V[0]:.3f} -> "
              f"{V[-1]:.3f} (monotone: {np.all(np.diff(V) < 0)}); V_50 closed form {row['V']:.3f}, Monte Carlo "
              f"{row['mc_variance']:.3f} ± {row['mc_se']:.3f} ({rel:.1%} off 2.828)")
    return v.judged(ok, float(row["mc_variance"]), "2.828 ± 3%", 0.03, detail)


S_CRIT = ("With δ = 0.08 ((1 + δ)a = 1.026) the AR(1) surrogate diverges for c in {0, 10, 50} (Monte Carlo variance "
          "> 1e6 within 3000 steps) and is stable for c >= 100 (closed-form ρ_c < 1); Monte Carlo V_100/Σ = 24.1 ± 10% "
          "(closed form), consistent with ᾱ_{c*} = 0.9747 between levels 50 and 100.")


@claims.add("gauss-critical-level", S_CRIT, OURS)
def judge_critical(res, v) -> Verdict:
    t = res.table("gauss")
    d = t[t["delta"] == 0.08].set_index("level")
    diverge = all(float(d.loc[c, "mc_max_variance"]) > 1e6 for c in (0, 10, 50))
    stable_theory = bool((d.loc[d.index >= 100, "rho"].abs() < 1).all())
    mc100 = float(d.loc[100, "mc_variance"])
    stable_mc = bool(np.isfinite(d.loc[[100, 200], "mc_max_variance"]).all()) and float(
        d.loc[200, "mc_max_variance"]) < 1e6
    crit = float(res.scalars["critical_alpha_bar"])
    level = int(res.scalars["critical_level"])
    ok = (diverge and stable_theory and stable_mc and abs(mc100 / 24.1 - 1) <= 0.10
          and abs(float(d.loc[100, "V"]) - 24.1) <= 0.05 and abs(crit - 0.9747) <= 5e-5 and 50 < level <= 100)
    detail = ("MC peak variance c = 0/10/50: " + ", ".join(f"{float(d.loc[c, 'mc_max_variance']):.2e}"
                                                            for c in (0, 10, 50))
              + f"; V_100 MC {mc100:.2f} vs closed form {float(d.loc[100, 'V']):.2f}; ᾱ_c* {crit:.4f}, first stable "
                f"level {level}")
    return v.judged(ok, mc100, "24.1 ± 10%", 0.10, detail)


S_CAL = ("On held-out KS pairs noised to independent levels (the training mixture), both level heads have corr(ŝ, s) "
         ">= 0.93, and on clean pairs the mean ŝ of both heads is <= 10 (1% of T).")


@claims.add("classifier", S_CAL, REF + ", the level heads")
def judge_classifier(res, v) -> Verdict:
    t = res.table("calibration")
    c1 = float(np.corrcoef(t["level_prev"], t["predicted_prev"])[0, 1])
    c2 = float(np.corrcoef(t["level"], t["predicted"])[0, 1])
    m1, m2 = float(t["clean_prev"].mean()), float(t["clean"].mean())
    ok = min(c1, c2) >= 0.93 and max(m1, m2) <= 10
    return v.judged(ok, min(c1, c2), ">= 0.93", 0.93, f"corr head 1 {c1:.3f}, head 2 {c2:.3f}; clean mean ŝ "
                                                      f"{m1:.2f}, {m2:.2f} (need <= 10)")


S_COND = ("For true next frames noised to s* in {100, 200, 300}, MSE after thermo-mode refinement / MSE after SNS "
          "(conditional) refinement >= 1.5 at each s*, and SNS refinement lowers the input MSE at every s*.")


@claims.add("conditioning-helps", S_COND, REF + ", conditioning on the previous frame")
def judge_conditioning(res, v) -> Verdict:
    t = res.table("one_step").groupby("s_star")[["mse_input", "mse_sns", "mse_thermo"]].mean()
    ratio = t["mse_thermo"] / t["mse_sns"]
    ok = bool((ratio >= 1.5).all() and (t["mse_sns"] < t["mse_input"]).all())
    detail = "; ".join(f"s* {s}: input {r.mse_input:.4f}, SNS {r.mse_sns:.4f}, thermo {r.mse_thermo:.4f} (ratio "
                       f"{r.mse_thermo / r.mse_sns:.2f})" for s, r in t.iterrows())
    return v.judged(ok, float(ratio.min()), ">= 1.5", 1.5, detail)


S_NOOP = "For exact-solver proposals, SNS changes the proposal by ‖refined − proposal‖/‖proposal‖ <= 0.03 (mean)."


@claims.add("no-op-on-clean", S_NOOP, REF + ", level inference leaves clean proposals alone")
def judge_noop(res, v) -> Verdict:
    t = res.table("no_op")
    m = float(t["relative_change"].mean())
    return v.judged(m <= 0.03, m, "<= 0.03", 0.03, f"mean relative change {m:.4f} (max "
                    f"{t['relative_change'].max():.4f}); mean ŝ_2 {t['level'].mean():.2f}, ŝ_1 "
                    f"{t['level_prev'].mean():.2f}; {t['calls'].mean():.1f} calls")


S_STAB = ("KSLeaky(η = 0.1) alone leaves the attractor with median <= 100 steps; with SNS correction (same noise and "
          "initial conditions) >= 90% of trajectories stay on it for the whole horizon (600 steps), so the ratio of "
          "median off-attractor times (censored at the horizon) is >= 6.")


@claims.add("stabilizes", S_STAB, REF + ", stable long rollouts")
def judge_stabilizes(res, v) -> Verdict:
    t = res.table("rollouts")
    plain, sns = t[t["rollout"] == "plain"], t[t["rollout"] == "sns"]
    med_plain = float(np.median(_censored(plain, "off_attractor")))
    stay = float(np.isinf(sns["off_attractor"]).mean())
    ratio = float(np.median(_censored(sns, "off_attractor"))) / max(med_plain, 1.0)
    horizon = int(sns["horizon"].iloc[0])
    ok = med_plain <= 100 and stay >= 0.9 and ratio >= 6 and horizon >= 600
    return v.judged(ok, stay, ">= 0.9", 0.9, f"plain median off-attractor {med_plain:.0f}; SNS: {stay:.0%} stay "
                    f"{horizon} steps, ratio {ratio:.1f}; {sns['calls_per_step'].mean():.1f} denoiser calls per step")


S_SHORT = ("Same proposals: median corr_time(0.8) of SNS >= 1.25 x that of the same network's thermo mode.")


@claims.add("beats-thermo-short", S_SHORT, REF + ", short-time fidelity")
def judge_short(res, v) -> Verdict:
    t = res.table("rollouts")
    sns = float(np.median(t.loc[t["rollout"] == "sns", "corr_time_0.8"]))
    th = float(np.median(t.loc[t["rollout"] == "thermo", "corr_time_0.8"]))
    r = sns / max(th, 1.0)
    calls = t.groupby("rollout")["calls_per_step"].mean()
    return v.judged(r >= 1.25, r, ">= 1.25", 1.25, f"median corr_time(0.8): SNS {sns:.1f}, thermo {th:.1f} (ratio "
                    f"{r:.2f}); calls per step SNS {calls['sns']:.1f}, thermo {calls['thermo']:.1f}")


S_SPEC = ("Over the last 300 steps of the SNS rollout, E_SNS(m)/E_ref(m) is in [0.8, 1.25] for m = 1..6 and the mean "
          "|ln ratio| <= 0.1 (E_ref: the training ensemble's spectrum); thermo mode reported, not claimed.")


@claims.add("energetic-stats", S_SPEC, REF + ", long-time consistency")
def judge_spectrum(res, v) -> Verdict:
    t = res.table("spectrum").set_index("mode")
    r = t.loc[1:6, "ratio"]
    in_band, mean_log = spectrum_band(r, 0.8, 1.25)
    ok = in_band and mean_log <= 0.1
    detail = ("SNS ratios m = 1..6: " + ", ".join(f"{x:.3f}" for x in r) + "; thermo: " + ", ".join(
        f"{x:.3f}" for x in t.loc[1:6, "thermo_ratio"]) + "; truth window: " + ", ".join(
        f"{x:.3f}" for x in t.loc[1:6, "truth_ratio"]))
    return v.judged(ok, mean_log, "<= 0.1", 0.1, detail)


def _ks_times(res) -> str:
    t = res.table("rollouts")
    med = t.groupby("rollout")["corr_time_0.8"].median()
    calls = t.groupby("rollout")["calls_per_step"].mean()
    return ", ".join(f"{k} {med[k]:.1f} ({calls[k]:.1f} calls/step)" for k in ("sns", "acdm", "thermo", "plain"))


KF_SKIPPED = "needs paper preset: this config does not run the Kolmogorov-flow part (--set kolmogorov=true runs it)"
S_KF = ("On KF Re = 10k, the median corr_time(0.8) of SNS is >= that of acdm, the same network's thermo mode and the "
        "plain emulator, and its spectral similarity over the last 10% of the rollout is <= thermo's.")


@claims.add("kf-correlation", S_KF, REF + ", Kolmogorov flow")
def judge_kf(res, v) -> Verdict:
    if "kolmogorov" not in res.tables:
        return v.undecided(KF_SKIPPED + "; reduced KS22 measurement, median corr_time(0.8): " + _ks_times(res))
    t = res.table("kolmogorov")
    med = t.groupby("rollout")["corr_time_0_8"].median()
    sim = t.groupby("rollout")["spectral_similarity"].first()
    ok = all(med["sns"] >= med[k] for k in ("acdm", "thermo", "plain")) and sim["sns"] <= sim["thermo"]
    detail = ("median corr_time(0.8): " + ", ".join(f"{k} {x:.0f}" for k, x in med.items()) + "; spectral "
              "similarity: " + ", ".join(f"{k} {x:.3f}" for k, x in sim.items())
              + " (the Thermalizer baseline of studies/thermalizer is not rerun here)")
    return v.judged(ok, float(med["sns"]), ">= baselines", None, detail)


S_QG = ("On the QG jet, SNS completes 50,000-step rollouts in >= 90% of test trajectories without abort, while the "
        "same-network acdm mode diverges or needs more denoiser calls per step.")


@claims.add("qg-long", S_QG, REF + ", two-layer QG jet")
def judge_qg(res, v) -> Verdict:
    if "qg" in res.tables:
        q = res.table("qg")
        share = q.groupby("rollout")["completed"].mean()
        calls = q.groupby("rollout")["calls_per_step"].mean()
        horizon = int(q["horizon"].iloc[0])
        acdm_worse = share["acdm"] < 0.9 or calls["acdm"] > calls["sns"]
        ok = share["sns"] >= 0.9 and acdm_worse
        detail = (f"{horizon}-step rollouts completed (no blow-up, never off the attractor): "
                  + ", ".join(f"{k} {share[k]:.0%}" for k in ("sns", "acdm", "plain"))
                  + f"; denoiser calls per step: SNS {calls['sns']:.1f}, acdm {calls['acdm']:.1f}"
                  + (" (full horizon below the card's 50,000: reduced)" if horizon < 50_000 else ""))
        return v.judged(ok, float(share["sns"]), ">= 0.9 and acdm worse", 0.9, detail)
    t = res.table("rollouts")
    acdm = t[t["rollout"] == "acdm"]
    sns = t[t["rollout"] == "sns"]
    return v.undecided("needs paper preset: this config does not run the QG-jet part (--set qg=true runs it); "
                       f"reduced KS22 measurement: acdm stays {np.isinf(acdm['off_attractor']).mean():.0%} of "
                       f"{int(acdm['horizon'].iloc[0])} steps at {acdm['calls_per_step'].mean():.1f} calls/step, SNS "
                       f"{np.isinf(sns['off_attractor']).mean():.0%} of {int(sns['horizon'].iloc[0])} at "
                       f"{sns['calls_per_step'].mean():.1f}")
