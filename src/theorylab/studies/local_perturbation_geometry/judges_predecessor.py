"""The predecessor's claims (arXiv 2606.10929), judged in the form it states them: tangent drift, prefix basis,
best-of-N, edit-to-activation, LoRA recovery. Declared on the study's one :data:`judges.claims`, after the paper's
own claims (this module is imported at the end of judges.py, so the declaration order is the card's)."""

from __future__ import annotations

import numpy as np

from theorylab.core import Check, Judgement, Result, Verdict
from theorylab.core.declared import Departure, KnownFailure
from theorylab.studies.local_perturbation_geometry.judges import (
    BON_GROWTH,
    BON_RATIO,
    CAA_CONTROL,
    CAA_MIN,
    CPU_SIZE,
    DRIFT_END,
    DRIFT_UP,
    LORA_MIN,
    PRED,
    PREFIX_MIN,
    PREFIX_X,
    _rows,
    claims,
)
from theorylab.theory.extremes import expected_max_normal

S_DRIFT = (
    "Predecessor claim, in its form (a useful basis that drifts within about 100 steps): the mean "
    "principal-angle cosine between the top-8 per-example-gradient subspaces at theta_0 and at theta_100 "
    "(SGD on task A) is <= 0.9. Reported, not judged (the earlier card's extra condition): whether it "
    "decreases monotonically over s = 0, 10, 30, 100."
)


@claims.add(
    "tangent-drift",
    S_DRIFT,
    PRED + ": a useful basis that drifts within ~100 steps (threshold ours)",
    departures=[
        Departure.of(
            "monotone decrease over s reported, not judged (first card: no rise > 0.02 between consecutive s)",
            "the turn-3 card judges predecessor claims in the "
            "predecessor's form, 'a basis that drifts within about 100 steps'; the "
            "monotone form failed on 6 of seeds 0-9",
        )
    ],
    known=KnownFailure.on_some_seeds(
        1,
        12,
        [2],
        "seed 2's checkpoint barely moves its top-8 subspace along "
        "task-A SGD: mean cosine 0.997 at s = 10, 0.904 at s = 100, just above "
        "0.9 (seeds 0-9, 17, 123 measured: 0.26-0.90)",
    ),
)
def judge_drift(res: Result, v: Judgement) -> Verdict:
    t = _rows(res, "drift")
    if "kind" in t:
        t = t[t["kind"] == "sgd"]
    details, ends = [], []
    for seed, g in t.groupby("seed"):
        g = g.sort_values("s")
        c = g["mean_cos"].to_numpy()
        if int(g["s"].iloc[0]) != 0 or abs(c[0] - 1) > 1e-6:
            return v.failed(
                np.nan,
                "cosine 1 at s = 0",
                None,
                f"model {seed}: s = 0 missing or its cosine {c[0]} is not 1 (a broken subspace comparison)",
            )
        at = g[g["s"] == 100]["mean_cos"]
        ends.append(float(at.iloc[0]) if len(at) else np.nan)
        rise = float(np.max(np.diff(c))) if len(c) > 1 else 0.0
        details.append(
            f"model {seed}: "
            + ", ".join(f"s={s} {x:.3f}" for s, x in zip(g["s"], c))
            + (f" (rises by {rise:.3f}: not monotone)" if rise > DRIFT_UP else " (monotone)")
        )
    if not np.isfinite(ends).all():
        return v.failed(np.nan, "<= 0.9 at s = 100", DRIFT_END, "no s = 100 in drift_steps; " + "; ".join(details))
    return v.at_most(np.array(ends), DRIFT_END, name="mean cosine at s = 100", detail="; ".join(details))


S_PREFIX = (
    "The first-10-update SGD basis captures >= 0.3 of the 100-step task-A displacement, and >= 10x the "
    "random-subspace baseline m/D."
)


@claims.add(
    "prefix-basis",
    S_PREFIX,
    PRED + ": a prefix basis captures 77% of a LoRA recovery (threshold ours)",
    known=KnownFailure.on_some_seeds(
        1,
        12,
        [7],
        "seed 7 has the largest and sharpest task vector "
        "(|delta_A| = 1.01, top Hessian eigenvalue 19 vs 11 at seed 0): its "
        "100-step path turns away from the first 10 updates (captured 0.05); "
        "0.41-0.78 on seeds 0-9, 17, 123 otherwise",
    ),
)
def judge_prefix(res: Result, v: Judgement) -> Verdict:
    t = _rows(res, "prefix")
    return v.all_of(
        Check.at_least("captured share", t["captured"], PREFIX_MIN),
        Check.at_least(f"captured - {PREFIX_X:g} m/D", t["captured"] - PREFIX_X * t["m"] / t["dim"], 0.0),
        Check.holds("m = 10 updates", bool((t["m"] == 10).all())),
        Check.holds("a 100-step displacement", bool((t["steps"] == 100).all())),
        measured=float(t["captured"].min()),
        detail=f"captured {np.round(t['captured'], 4).tolist()}; m/D {float((t['m'] / t['dim']).iloc[0]):.2e}",
    )


S_BON = (
    "In the valid regime (s |tr H| / (2 |g| e_N) <= 0.05), the mean best-of-N gain over 200 repeats divided by "
    "s |g| e_N lies in [0.8, 1.2] for N = 4 and N = 16, and the gain ratio N = 16 / N = 4 lies in [1.45, 1.95] "
    "(theory e_16/e_4 = 1.716)."
)


@claims.add(
    "best-of-n",
    S_BON,
    PRED + ", best-of-N Gaussian local-linear theorem (reconstructed)",
    departures=[
        Departure.field_value(
            "bestofn_params",
            "all",
            "ours, for speed: the random search perturbs "
            "the readout (D' = 1040, its input cached); 3200 full-model "
            "evaluations take ~90 s on one core. The law s |g| e_N holds for any "
            "smooth loss of the perturbed parameters",
        )
    ],
)
def judge_best_of_n(res: Result, v: Judgement) -> Verdict:
    t = _rows(res, "bestofn")
    ratios, growth, valid = [], [], []
    for seed, g in t.groupby("seed"):
        g = g.set_index("n")
        if not {4, 16} <= set(g.index):
            return v.failed(np.nan, "rows for N = 4 and 16", None, f"seed {seed} has N = {sorted(g.index)}")
        for n in (4, 16):
            r = g.loc[n]
            ratios.append(r["mean_gain"] / (r["s"] * r["grad_norm"] * expected_max_normal(n)))
            valid.append(r["s"] * abs(r["trace"]) / (2 * r["grad_norm"] * expected_max_normal(n)))
        growth.append(g.loc[16, "mean_gain"] / g.loc[4, "mean_gain"])
    ratios, growth, valid = map(np.array, (ratios, growth, valid))
    draws = int(res.config["bestofn_draws"])
    return v.all_of(
        Check.within("gain / (s |g| e_N)", ratios, *BON_RATIO),
        Check.within("gain ratio N = 16 / N = 4", growth, *BON_GROWTH),
        Check.at_most("validity s |tr H| / (2 |g| e_N)", valid, 0.05 + 1e-12),
        Check.at_least("repeats", draws, 200),
        measured=float(ratios[np.argmax(abs(ratios - 1))]),
        tolerance="[0.8, 1.2]",
        detail=f"ratios (N=4, N=16 per seed) {np.round(ratios, 3).tolist()}; growth 16/4 "
        f"{np.round(growth, 3).tolist()} (theory {expected_max_normal(16) / expected_max_normal(4):.3f}); "
        f"validity {np.round(valid, 4).tolist()}; {draws} repeats; perturbing {t['params'].iloc[0]} "
        f"(D = {int(t['dim'].iloc[0])})",
    )


S_CAA = (
    "At layer 1, cos(J_h delta, v_CAA) >= 0.3 for the one-step edit (task-A prompts, task-B answers), while "
    "random edits of the same norm have RMS |cos| <= 0.1."
)


CAA_CAUSE = (
    "the card's control bound (random-edit RMS |cos| <= 0.1) lies below the isotropic chance level "
    "1/sqrt(64) = 0.125 of a 64-wide residual stream, so the control part fails on most seeds at d = 64 "
    "(measured RMS 0.08-0.22; seed 123 passes with 0.088 and edit cos 0.42); the edit's own cosine is >= 0.3 "
    "on 8 of 12 seeds and below on 4 (once negative). The paper itself reports that no model's median "
    "passes its weight-to-steering bar."
)


@claims.add(
    "edit-to-activation",
    S_CAA,
    PRED + ": cos 0.58 on Qwen-0.5B/BoolQ (threshold ours)",
    departures=[
        Departure.of(
            "control: RMS |cos| of 16 random equal-norm edits (card: a random delta of the same norm)",
            "one random edit's cosine is a random variable with RMS 1/sqrt(64) "
            "under an isotropic null; the RMS is the stable (and stricter than mean) "
            "reading",
        )
    ],
    known=KnownFailure.on_some_seeds(11, 12, [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 17], CAA_CAUSE),
)
def judge_caa(res: Result, v: Judgement) -> Verdict:
    t = _rows(res, "caa")
    layer = int(res.config["caa_layer"])
    t = t[t["layer"] == layer]
    edit = t[t["kind"] == "edit_jvp"].groupby("seed")["cos"].first()
    ctrl = t[t["kind"] == "random"].groupby("seed")["cos"].apply(lambda c: float(np.sqrt(np.mean(c**2))))
    if edit.empty or ctrl.empty:
        return v.failed(np.nan, ">= 0.3", CAA_MIN, f"no edit or control rows at layer {layer}")
    # first() and np.mean skip a NaN cosine: a NaN row leaves its condition undetermined
    nan = {k: bool(t[t["kind"] == k]["cos"].isna().any()) for k in ("edit_jvp", "random")}
    return v.all_of(
        Check.at_least("cos(J_h delta, v_CAA)", np.nan if nan["edit_jvp"] else edit, CAA_MIN),
        Check.at_most("random-edit RMS |cos|", np.nan if nan["random"] else ctrl, CAA_CONTROL),
        measured=float(edit.min()),
        detail=f"layer {layer}: edit cos {np.round(edit.to_numpy(), 3).tolist()}; random-edit RMS |cos| "
        f"{np.round(ctrl.to_numpy(), 3).tolist()}",
    )


S_LORA = (
    "After random weight noise, a LoRA (rank 8) recovery's first-10-update basis captures >= 0.5 of the "
    "recovery displacement, and more than the fixed top-8 gradient plane estimated before recovery."
)


@claims.add(
    "lora-recovery",
    S_LORA,
    PRED + ": prefix basis 77% of LoRA recovery; fixed task plane rejected (protocol reconstructed)",
    decided_by="cpu",
    departures=CPU_SIZE,
)
def judge_lora(res: Result, v: Judgement) -> Verdict:
    t = res.table("lora")
    if t is None or t.empty:
        p = res.table("prefix")
        reduced = (
            f"; reduced measurement: SGD prefix capture {p['captured'].min():.3f}" if p is not None and len(p) else ""
        )
        if res.scalars.get("lora_skipped_no_peft"):
            return v.undecided(
                "not decided: needs peft, the optional package for LoRA adapters (`pip install peft`); "
                f"the run skipped the LoRA recovery{reduced}"
            )
        return v.undecided(f"needs the cpu preset (LoRA recovery via peft, lora_steps > 0){reduced}")
    return v.all_of(
        Check.at_least("prefix-basis capture", t["prefix_captured"], LORA_MIN),
        Check.holds(
            "prefix capture > fixed-plane capture at every seed",
            bool((t["plane_captured"] < t["prefix_captured"]).all()),
        ),
        measured=float(t["prefix_captured"].min()),
        detail=f"prefix {np.round(t['prefix_captured'], 3).tolist()}; "
        f"plane {np.round(t['plane_captured'], 3).tolist()}",
    )
