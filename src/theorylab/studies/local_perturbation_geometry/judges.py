"""local-perturbation-geometry: its claims, judged from a run's tables and config."""

from __future__ import annotations

import numpy as np
import pandas as pd

from theorylab.core import Check, Claims, Judgement, Result, Verdict
from theorylab.core.declared import Departure, KnownFailure
from theorylab.probes.second_order import loglog_slope

REF = "Piontkovskaia & Nikolenko, arXiv 2607.16821"
PRED = "predecessor arXiv 2606.10929"
claims = Claims("local-perturbation-geometry", REF)
TAYLOR_SLOPE = (0.9, 1.1)  # card: eps_lin ∝ |delta| (Taylor)
INTERF_SLOPE = (2.7, 3.3)  # card: remainder O(t^3)
INTERF_REL = 1e-3  # card: e(1e-3) <= 1e-3 (|dL_A| + |dL_B|)
DRIFT_UP = 0.02  # card: no increase > 0.02 between consecutive s
DRIFT_END = 0.9  # card (ours): mean cosine at s = 100 <= 0.9
PREFIX_MIN, PREFIX_X = 0.3, 10.0  # card (ours): captured >= 0.3 and >= 10 m/D
BON_RATIO = (0.8, 1.2)  # card
BON_GROWTH = (1.45, 1.95)  # card: theory e_16/e_4 = 1.716
CAA_MIN, CAA_CONTROL = 0.3, 0.1  # card (ours)
LORA_MIN = 0.5  # card (ours)


ORDER_BAND = (0.9, 1.1)  # turn-3 card: median ratio c / (eta kappa) (the paper: 1.002) and the slope of c in eta
ORDER_COS = 0.99  # ours: the measured defect vector points along the bracket
SMALL_DEFECT = 0.02  # ours: the small-eta range is where the predicted defect eta kappa <= 0.02
WINDOW_SCALE = 1e-2  # the paper: one-direction window up to perturbation scale 1e-2 (here |delta| / |theta_0|)
WINDOW_REL = 0.1  # turn-3 card (ours): |dL - g^T delta| <= 10 % of |g^T delta|
WINDOW_SLOPE = (1.8, 2.2)  # Taylor: the error of the first-order prediction grows like the scale squared
ONSET = 0.10  # the paper: onset where the normalised order defect reaches 0.10, predicted at 0.10 / kappa
ONSET_FACTOR = 1.5  # turn-3 card
ROTATION_DEG = 45.0  # ours: the largest principal angle of the top-8 subspace reaches 45 degrees...
ROTATION_WITHIN = 30  # ours: ...within s <= 30 SGD steps ("tens of steps")
ADDITIVE = 0.1  # ours: departure from additivity |dh(a + b) - dh(a) - dh(b)| / (|dh(a)| + |dh(b)|)


# The cpu preset decides additivity-at-full-scale and lora-recovery on the quick model (p = 11, d = 64, 2 layers),
# not the card's paper-sized one: each departure applies to cpu runs only, while the run's value differs.
CPU_SIZE = tuple(
    Departure.field_value(
        f,
        card,
        "cpu preset: the quick model, so the claim is decided on a CPU in a "
        "few minutes; the card's p = 97, d = 256, 4-layer model needs a GPU",
        presets=["cpu"],
    )
    for f, card in (("p", 97), ("d_model", 256), ("n_layers", 4), ("mlp_width", 1024))
)


def _rows(res, name):
    t = res.table(name)
    if t is None or t.empty:
        raise ValueError(f"table {name!r} is empty")
    return t


S_ORDER = (
    "For every task pair, one SGD step on A then one on B, against the other order, at step size eta: the "
    "normalised order defect c(eta) = |theta_AB - theta_BA| / |eta (g_A + g_B)| is eta kappa + O(eta^2) with "
    "kappa = |H_B g_A - H_A g_B| / |g_A + g_B| (exact HVPs). Over the small-eta range (eta kappa <= 0.02) the "
    "median of c / (eta kappa) over pairs and eta lies in [0.9, 1.1], every pair's log-log slope of c in eta "
    "lies in [0.9, 1.1], and the median cosine of the measured defect vector with the bracket is >= 0.99; the "
    "controls (the bracket's sign flipped; H_A g_B dropped) must fail the same test."
)


def _order_test(t, kind):
    ratio = t["defect"] / (t["eta"] * t[f"kappa{'' if kind == 'bracket' else '_' + kind}"])
    med, cos = float(np.median(ratio)), float(np.median(t[f"cos_{kind}"]))
    return ORDER_BAND[0] <= med <= ORDER_BAND[1] and cos >= ORDER_COS, med, cos


def _control_fails(test) -> bool | None:
    """Whether a control fails its test; None (undetermined) when its median ratio or cosine is NaN, which would
    fail the test and so let the claim pass."""
    ok, med, cos = test
    return None if np.isnan(med) or np.isnan(cos) else not ok


@claims.add(
    "order-defect-lie-bracket",
    S_ORDER,
    REF + ": c(eta) = eta kappa + O(eta^2), median ratio 1.002 (abstract); the range, cosine and controls are ours",
)
def judge_order(res: Result, v: Judgement) -> Verdict:
    t = _rows(res, "order")
    small = t[t["eta"] * t["kappa"] <= SMALL_DEFECT]
    slopes = {}
    for (seed, pair), _ in t.groupby(["seed", "pair"]):
        gs = small[(small["seed"] == seed) & (small["pair"] == pair)]
        slopes[f"{pair}/{seed}"] = loglog_slope(gs["eta"], gs["defect"]) if len(gs) >= 3 else np.nan
    sl = np.array(list(slopes.values()))
    if not np.isfinite(sl).all():
        bad = [k for k, x in slopes.items() if not np.isfinite(x)]
        return v.failed(
            np.nan,
            "ratio in [0.9, 1.1]",
            ORDER_BAND,
            f"fewer than 3 step sizes with eta kappa <= "
            f"{SMALL_DEFECT} for {bad}: the eta grid does not reach the small-eta range",
        )
    tests = {k: _order_test(small, k) for k in ("bracket", "flip", "drop")}
    _, med, cos = tests["bracket"]
    return v.all_of(
        Check.within("median c / (eta kappa)", med, *ORDER_BAND),
        Check.at_least("median cosine of the defect with the bracket", cos, ORDER_COS),
        Check.within("log-log slope of c in eta", pd.Series(slopes), *ORDER_BAND),
        Check.holds("the sign-flipped control fails", _control_fails(tests["flip"])),
        Check.holds("the H_A g_B-dropped control fails", _control_fails(tests["drop"])),
        detail=f"median ratio {med:.4f}, median cosine {cos:.5f} over {len(small)} (pair, eta) points with "
        f"eta kappa <= {SMALL_DEFECT}; slopes "
        + ", ".join(f"{k} {x:.3f}" for k, x in slopes.items())
        + "; controls (median ratio, cosine): "
        + ", ".join(
            f"{k} ({tests[k][1]:.3f}, {tests[k][2]:.3f}) "
            + ("PASSES: the test cannot tell it apart" if tests[k][0] else "fails")
            for k in ("flip", "drop")
        ),
    )


S_WINDOW = (
    "Along a random unit direction and the two normalised task vectors, at sizes |delta| / |theta_0| up to "
    "1e-2, the probe-loss change dL is predicted by g^T delta to within 10 % of |g^T delta| at every size, and "
    "the prediction's error |dL - g^T delta| grows like the size squared (log-log slope in [1.8, 2.2]); the "
    "control (a stale gradient, from the end of the task-A path) must fail."
)


def _window_test(g):
    g = g[g["scale"] <= WINDOW_SCALE * (1 + 1e-9)]
    worst = float(g["rel_error"].max())
    slope = loglog_slope(g["scale"], g["error"]) if len(g) >= 3 and (g["error"] > 0).all() else np.nan
    ok = worst <= WINDOW_REL and WINDOW_SLOPE[0] <= slope <= WINDOW_SLOPE[1]
    inside = g.sort_values("scale")
    good = (inside["rel_error"] <= WINDOW_REL).cumprod().astype(bool)
    window = float(inside["scale"][good].max()) if good.any() else 0.0
    return bool(ok), worst, slope, window


WINDOW_CAUSE = (
    "around our fully trained toy checkpoint the probe loss's gradient is small (the base run stops at 95% "
    "per task), so the curvature term t^2 delta^T H delta / 2 overtakes g^T delta long before |delta| = "
    "1e-2 |theta_0|: the 10 % window ends at 1e-4..1e-3 |theta_0| (|delta| ~ 0.005-0.05; seeds 0, 1, 2, "
    "17, 123), worst relative error at 1e-2 between 0.47 and 4.0. The error does grow like the scale "
    "squared (slopes 1.89-2.06) and the stale-gradient control fails, so the measurement is sound; the "
    "paper's operating point (a multitask LoRA point, its own scale unit) is not ours."
)


@claims.add(
    "one-direction-window",
    S_WINDOW,
    REF + ": first-order predictable up to scale 1e-2 (abstract); the "
    "10 % bound is ours, the scale-squared error is Taylor's",
    known=KnownFailure.on_every_seed(WINDOW_CAUSE),
)
def judge_window(res: Result, v: Judgement) -> Verdict:
    t = _rows(res, "window")
    out, worst = {}, []
    for (seed, d), g in t.groupby(["seed", "direction"]):
        out[(seed, d)] = _window_test(g)
    real = {k: x for k, x in out.items() if not k[1].startswith("control")}
    ctrl = {k: x for k, x in out.items() if k[1].startswith("control")}
    if {d for _, d in real} != {"random", "task_a", "task_b"} or not ctrl:
        return v.failed(np.nan, "<= 0.1", WINDOW_REL, f"directions present: {sorted({d for _, d in out})}")
    worst = max(x[1] for x in real.values())
    # every row up to 1e-2 (the per-direction max would skip a NaN); a control with a NaN row is undetermined
    judged = t[t["scale"] <= WINDOW_SCALE * (1 + 1e-9)].set_index(["direction", "seed", "scale"])
    is_ctrl = judged.index.get_level_values("direction").str.startswith("control")
    ctrl_nan = bool(judged[is_ctrl][["rel_error", "error"]].isna().any().any())
    slopes = pd.Series({f"{d}/{s}": x[2] for (s, d), x in real.items()})
    return v.all_of(
        Check.at_most("relative error up to 1e-2", judged[~is_ctrl]["rel_error"], WINDOW_REL),
        Check.within("error slope", slopes, *WINDOW_SLOPE),
        Check.holds("the stale-gradient control fails", None if ctrl_nan else not any(x[0] for x in ctrl.values())),
        measured=worst,
        detail="; ".join(
            f"{d}/{s}: worst rel. error {x[1]:.3g}, slope {x[2]:.3f}, window to {x[3]:.3g}" for (s, d), x in out.items()
        ),
    )


S_ONSET = (
    "For every task pair, the measured onset eta_dagger (where the normalised order defect first reaches 0.10, "
    "log-log interpolated on the eta grid) is within a factor 1.5 of the prediction 0.10 / kappa; the "
    "predictions from the controls (sign-flipped bracket; H_A g_B dropped) must miss on some pair. Reported: "
    "the spread of eta_dagger over pairs and the fraction of pairs whose onset step |eta_dagger (g_A + g_B)| "
    "lies strictly inside the one-direction window (1e-2 |theta_0|; the paper: over a third of (model, pair) "
    "combinations)."
)


ONSET_CAUSE = (
    "0.10 / kappa is the leading-order onset, and at eta ~ 0.1-1 the O(eta^2) part of c(eta) is no "
    "longer small for the pairs sub-max and sub-copy_a (task sub moves furthest: its 100-step task "
    "vector is 0.46-1.06 long, add's 0.11-0.32): there c(eta) / (eta kappa) climbs well above 1 before "
    "c reaches 0.10 and the onset comes early, eta_dagger / (0.10 / kappa) = 0.63 "
    "(seed 0, sub-max), 0.39 and 0.66 (seed 1, sub-max, sub-copy_a), 0.21 and 0.21 (seed 2); seeds 17 "
    "and 123 are within x1.5 on every pair (0.74-1.36). The small-eta law itself holds on every seed "
    "(claim order-defect-lie-bracket)."
)


@claims.add(
    "order-onset-inside-window",
    S_ONSET,
    REF + ": eta_dagger ~ 0.10 / kappa, spanning three orders of "
    "magnitude; order matters inside the window on > 1/3 of "
    "combinations (abstract); factor 1.5 from the card",
    known=KnownFailure.on_some_seeds(3, 5, [0, 1, 2], ONSET_CAUSE),
)
def judge_onset(res: Result, v: Judgement) -> Verdict:
    t = _rows(res, "onset")
    ratio = t["eta_dagger"] / t["eta_pred"]
    if ratio.isna().any():
        bad = t["pair"][ratio.isna()].tolist()
        return v.failed(
            np.nan,
            "within x1.5 of 0.10 / kappa",
            ONSET_FACTOR,
            f"no onset on the eta grid for {bad} (c never reaches 0.10, or starts above it)",
        )
    inband = lambda r: (r >= 1 / ONSET_FACTOR) & (r <= ONSET_FACTOR)  # noqa: E731
    ctrl = {k: t["eta_dagger"] / t[f"eta_pred_{k}"] for k in ("flip", "drop")}
    ctrl_pass = {k: bool(inband(r).all()) for k, r in ctrl.items()}
    # a control with a NaN prediction would "miss": undetermined instead
    ctrl_misses = {k: None if r.isna().any() else not ctrl_pass[k] for k, r in ctrl.items()}
    inside = float((t["onset_rel_size"] < WINDOW_SCALE).mean())
    w = res.tables.get("window")
    ours = ""
    if w is not None and len(w):
        win = min(_window_test(g)[3] for (_, d), g in w.groupby(["seed", "direction"]) if not d.startswith("control"))
        ours = (
            f" and inside our measured window ({win:.3g} |theta_0|, the narrowest direction's) on "
            f"{float((t['onset_rel_size'] < win).mean()):.0%}"
        )
    spread = float(t["eta_dagger"].max() / t["eta_dagger"].min())
    worst = float(ratio.iloc[int(np.argmax(np.abs(np.log(ratio))))])
    return v.all_of(
        Check.within("eta_dagger / (0.10 / kappa)", ratio.set_axis(t["pair"]), 1 / ONSET_FACTOR, ONSET_FACTOR),
        Check.holds("the sign-flipped control misses on some pair", ctrl_misses["flip"]),
        Check.holds("the H_A g_B-dropped control misses on some pair", ctrl_misses["drop"]),
        measured=worst,
        tolerance=f"x{ONSET_FACTOR}",
        detail="eta_dagger / prediction: "
        + ", ".join(f"{p} {r:.3f}" for p, r in zip(t["pair"], ratio))
        + f"; eta_dagger {t['eta_dagger'].min():.3g}..{t['eta_dagger'].max():.3g} (spread x{spread:.1f}); "
        f"onset inside the paper's window (1e-2 |theta_0|) on {inside:.0%} of pairs{ours} "
        f"(paper: over a third); "
        f"onset step |eta_dagger (g_A + g_B)| / |theta_0| "
        f"{t['onset_rel_size'].min():.2g}..{t['onset_rel_size'].max():.2g}; controls "
        + ", ".join(
            f"{k}: ratios {np.round(r.to_numpy(), 2).tolist()}"
            f"{' all within x1.5 (cannot tell apart)' if ctrl_pass[k] else ''}"
            for k, r in ctrl.items()
        ),
    )


S_ROTATION = (
    "The top-8 per-example-gradient subspace (256 probe examples) along task-A SGD rotates within tens "
    "of steps: its largest principal angle against theta_0's reaches >= 45 degrees at some s <= 30, while at "
    "the control point theta_0 + 1e-3 (theta_s - theta_0) (same direction, a thousandth of the distance) it "
    "stays below 45 degrees."
)


@claims.add(
    "subspace-rotation",
    S_ROTATION,
    REF + ": task-gradient subspaces rotate within tens of steps (abstract); 45 degrees and s <= 30 are ours",
)
def judge_rotation(res: Result, v: Judgement) -> Verdict:
    t = _rows(res, "drift")
    sgd = t[(t["kind"] == "sgd") & (t["s"] > 0) & (t["s"] <= ROTATION_WITHIN)]
    ctrl = t[t["kind"] == "control"]
    if sgd.empty or ctrl.empty:
        return v.failed(
            np.nan,
            f">= {ROTATION_DEG} deg",
            ROTATION_DEG,
            f"no drift steps in (0, {ROTATION_WITHIN}] or no control row",
        )
    per_seed = sgd.groupby("seed")["max_angle_deg"].max()
    ctrl_seed = ctrl.groupby("seed")["max_angle_deg"].max()
    # judged with NaN rows kept (the per-model max skips them): a NaN angle leaves the claim undetermined
    strict = sgd.groupby("seed")["max_angle_deg"].agg(lambda a: a.max(skipna=False))
    ctrl_nan = bool(ctrl["max_angle_deg"].isna().any())
    return v.all_of(
        Check.at_least(f"largest principal angle by s <= {ROTATION_WITHIN} (deg)", strict, ROTATION_DEG),
        Check.holds(
            f"the control stays < {ROTATION_DEG} deg", None if ctrl_nan else bool((ctrl_seed < ROTATION_DEG).all())
        ),
        measured=float(per_seed.min()),
        detail="; ".join(
            f"model {s}: "
            + ", ".join(f"s={int(r.s)} {r.max_angle_deg:.1f} deg (mean cos {r.mean_cos:.3f})" for r in g.itertuples())
            for s, g in sgd.groupby("seed")
        )
        + "; control "
        + ", ".join(f"{x:.2f} deg" for x in ctrl_seed)
        + "; eigengap sigma_8^2/sigma_9^2 at theta_0 "
        + ", ".join(f"{x:.2f}" for x in t[(t["kind"] == "sgd") & (t["s"] == 0)]["eigengap"]),
    )


S_ADD = (
    "Under a fixed activation probe (the residual after block 1 at '=', mean over the probe set), the effect of "
    "t delta_A + t delta_B departs from the sum of the single effects, |dh(a + b) - dh(a) - dh(b)| / (|dh(a)| + "
    "|dh(b)|), by more than 0.1 at full task-vector scale (t = 1) and by less than 0.1 at t <= 1e-2; the "
    "linearised control (dh = J_h delta, exactly additive) must fail."
)


# Measured at the cpu preset, seed 0 (3 models; docs/studies/local-perturbation-geometry.md, "CPU preset").
ADDITIVITY_CAUSE = (
    "the quick model's full task vectors are short (|delta_A| 0.21-0.89, |delta_B| 0.80-1.00 against "
    "|theta_0| 47), so the probe's cross term stays second order at t = 1: the departure grows exactly "
    "in proportion to t (2.3e-5, 2.3e-4, 2.3e-3, 0.024 at t = 1e-3 ... 1 on model 0) and reaches only "
    "0.024, 0.044, 0.068 < 0.1 at t = 1 on the 3 models; the small-t half and the linear control "
    "(<= 6e-17) hold"
)


@claims.add(
    "additivity-at-full-scale",
    S_ADD,
    REF + ": additivity under a fixed activation probe fails at full "
    "task-vector scale on several models (abstract); 0.1 is ours",
    decided_by="cpu",
    departures=CPU_SIZE,
    known=KnownFailure.on_every_seed(ADDITIVITY_CAUSE, presets=["cpu"]),
)
def judge_additivity(res: Result, v: Judgement) -> Verdict:
    t = _rows(res, "additivity")
    full, lin = t[t["kind"] == "full"], t[t["kind"] == "control_linear"]
    at1 = full[np.isclose(full["t"], 1.0)].groupby("seed")["departure"].first()
    small = full[full["t"] <= 1e-2 * (1 + 1e-9)].groupby("seed")["departure"].max()
    ctrl = lin[np.isclose(lin["t"], 1.0)].groupby("seed")["departure"].first()
    said = (
        f"departure at t = 1: {np.round(at1.to_numpy(), 4).tolist()}; worst at t <= 1e-2: "
        f"{[f'{x:.2e}' for x in small]}; linear control at t = 1: {[f'{x:.1e}' for x in ctrl]}; by t: "
        + ", ".join(f"{r.t:g} {r.departure:.3g}" for r in full.itertuples())
    )
    if res.preset not in ("cpu", "paper"):
        return v.undecided(
            f"needs the cpu preset (the claim is judged on a declared model size: the cpu preset's "
            f"or the paper's); this {res.preset} run measured {said}"
        )
    if at1.empty or small.empty or ctrl.empty:
        return v.failed(np.nan, f"> {ADDITIVE} at t = 1", ADDITIVE, "rows for t = 1, t <= 1e-2 or the control missing")
    # first() and max() per model skip a NaN row: a NaN departure leaves its condition undetermined
    nan = {
        key: bool(rows["departure"].isna().any())
        for key, rows in (
            ("at1", full[np.isclose(full["t"], 1.0)]),
            ("small", full[full["t"] <= 1e-2 * (1 + 1e-9)]),
            ("ctrl", lin[np.isclose(lin["t"], 1.0)]),
        )
    }
    return v.all_of(
        Check.holds(
            f"departure at t = 1 > {ADDITIVE} on every model", None if nan["at1"] else bool((at1 > ADDITIVE).all())
        ),
        Check.holds(
            f"departure at t <= 1e-2 < {ADDITIVE} on every model",
            None if nan["small"] else bool((small < ADDITIVE).all()),
        ),
        Check.at_most("the linear control's departure at t = 1", np.nan if nan["ctrl"] else ctrl, ADDITIVE),
        measured=float(at1.min()),
        tolerance=ADDITIVE,
        detail=said,
    )


S_TAYLOR = (
    "For a random unit direction and for the normalised task vector, the log-log slope of the first-order "
    "error eps_lin(t u) on the probe logits over t in [1e-4, 1e-2] lies in [0.9, 1.1] (float64)."
)


@claims.add("taylor-remainder", S_TAYLOR, REF + ", first-order predictability (Taylor: eps_lin ∝ |delta|)")
def judge_taylor(res: Result, v: Judgement) -> Verdict:
    t = _rows(res, "taylor")
    slopes = {}
    for (seed, d), g in t.groupby(["seed", "direction"]):
        g = g[g["t"] <= 1e-2 * (1 + 1e-9)]
        slopes[f"{d}/{seed}"] = loglog_slope(g["t"], g["eps_lin"]) if len(g) >= 3 else np.nan
    need = {"random", "task"}
    have = {k.split("/")[0] for k in slopes}
    vals = np.array(list(slopes.values()))
    r01 = t.groupby("direction")["r01"].mean().to_dict()
    return v.all_of(
        Check.within("log-log slope of eps_lin", pd.Series(slopes, dtype=float), *TAYLOR_SLOPE),
        Check.holds("both directions (random, task) measured", have == need),
        measured=float(vals[np.argmax(abs(vals - 1))]) if len(vals) else np.nan,
        tolerance="[0.9, 1.1]",
        detail="slopes "
        + ", ".join(f"{k} {s:.4f}" for k, s in slopes.items())
        + "; r_0.1 "
        + ", ".join(f"{k} {r:.3g}" for k, r in r01.items()),
    )


S_INTERF = (
    "e(t) = |I(t delta_A, t delta_B) - t^2 delta_A^T H delta_B| has log-log slope in [2.7, 3.3] over t in "
    "[1e-3, 1e-1], and at t = 1e-3 e(t) <= 1e-3 (|dL(t delta_A)| + |dL(t delta_B)|)."
)


@claims.add(
    "interference-is-hessian",
    S_INTERF,
    REF + ", interference = delta_1^T H delta_2 + O(|delta|^3)",
    known=KnownFailure.on_some_seeds(
        1,
        12,
        [3],
        "seed 3's residual bends at large t (local slopes 3.0, 2.9, "
        "2.6, 1.1 over 1e-3..1e-1): at |t delta_B| ~ 0.09 the step is already at "
        "the task direction's r_0.1 ~ 0.1, past the cubic regime; its slope over "
        "[1e-3, 1e-2] is 2.93",
    ),
)
def judge_interference(res: Result, v: Judgement) -> Verdict:
    t = _rows(res, "interference")
    slopes, rels = [], []
    for _, g in t.groupby("seed"):
        fit = g[(g["t"] >= 1e-3 * (1 - 1e-9)) & (g["t"] <= 1e-1 * (1 + 1e-9))]
        slopes.append(loglog_slope(fit["t"], fit["residual"]) if len(fit) >= 3 else np.nan)
        at = g.iloc[(g["t"] - 1e-3).abs().argmin()]
        rels.append(at["residual"] / (abs(at["dl_a"]) + abs(at["dl_b"])) if abs(at["t"] - 1e-3) < 1e-9 else np.inf)
    slopes, rels = np.array(slopes), np.array(rels)
    return v.all_of(
        Check.within("log-log slope of e(t)", slopes, *INTERF_SLOPE),
        Check.at_most("e(1e-3) / (|dL_A| + |dL_B|)", rels, INTERF_REL),
        measured=float(slopes[np.argmax(abs(slopes - 3))]),
        tolerance="[2.7, 3.3]",
        detail=f"slopes {np.round(slopes, 4).tolist()}; e(1e-3)/(|dL_A|+|dL_B|) {[f'{r:.2e}' for r in rels]}",
    )


# The predecessor's claims, declared after the paper's own (import order is declaration order).
from theorylab.studies.local_perturbation_geometry.judges_predecessor import (  # noqa: E402, F401
    judge_best_of_n,
    judge_caa,
    judge_drift,
    judge_lora,
    judge_prefix,
)
