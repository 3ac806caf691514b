"""fast-slow-attention: its claims, judged from a run's tables, scalars and config."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pandas as pd

from theorylab.core import Claims, Judgement, Result, Verdict
from theorylab.core.declared import Departure, KnownFailure
from theorylab.studies.fast_slow_attention.config import CARD_TOKENS
from theorylab.theory.fastslow import loglog_slope

REF = "Gao, arXiv 2606.16730 (2026), abstract; toy and thresholds reconstructed (card)"
claims = Claims("fast-slow-attention", REF)

S_STATIONARY = (
    "The slow manifold is the fast chain's stationary law: on 50 values of y, p_st(y) (null vector "
    "of Q(y)^T) equals the frozen-y chain after 50 mixing times to 1e-9 in L1, with p_st >= 0 and "
    "1^T p_st = 1."
)


@claims.add("manifold-is-stationary", S_STATIONARY, REF + "; reference: scipy.linalg.expm of the frozen chain")
def judge_stationary(res: Result, v: Judgement) -> Verdict:
    t = res.table("stationary")
    if len(t) < 2:
        return v.failed(len(t), ">= 2 values of y", None, "no stationary rows recorded")
    l1 = v.column(t, "l1_to_limit").set_axis([f"y = {y:.3g}" for y in t["y"]])
    neg, mass = float(v.column(t, "min_p").min()), float(v.column(t, "sum_minus_one").abs().max())
    return v.at_most(
        l1,
        1e-9,
        name="L1 to the expm limit",
        tolerance=1e-9,
        also=neg >= 0 and mass <= 1e-12,
        detail=f"{len(t)} values of y; min p_st {neg:.3g} (>= 0); max |1^T p_st - 1| {mass:.2g} (<= 1e-12)",
    )


S_ORDER_ONE = (
    "After the transient (t in [0.5, 5]) x tracks the manifold at distance O(eps): the log-log slope of "
    "e0(eps) = max ||x - p_st(y)||_1 over the eps grid lies in [0.9, 1.1]."
)


def _errors(res, v, *columns: str):
    """The errors table with its judged columns checked for NaN (a NaN row fails the claim, naming it)."""
    t = res.table("errors")
    for c in ("eps", *columns):
        v.column(t, c)
    return t


@claims.add("tikhonov-order-one", S_ORDER_ONE, REF + "; Tikhonov's theorem; reference: SciPy Radau")
def judge_order_one(res: Result, v: Judgement) -> Verdict:
    t = _errors(res, v, "e0")
    if len(t) < 2 or not (t["e0"] > 0).all():
        return v.failed(math.nan, "[0.9, 1.1]", 0.1, "needs >= 2 eps with positive e0")
    slope = loglog_slope(t["eps"], t["e0"])
    return v.within(
        slope,
        0.9,
        1.1,
        name="slope of e0",
        tolerance=0.1,
        detail="e0 = " + ", ".join(f"{e:.2g}" for e in t["e0"]) + " at eps = " + ", ".join(map(str, t["eps"])),
    )


S_FIRST_ORDER = (
    "The Tikhonov correction x ~ p_st + eps x1 (Q^T x1 = dp_st/dt, 1^T x1 = 0) is second order: the slope "
    "of e1(eps) lies in [1.8, 2.2] and e1 <= 0.1 e0 at eps = 0.01; a wrong sign or a missing "
    "normalisation of x1 fails this test."
)


def _first_order(t, column: str) -> tuple[float, float]:
    slope = loglog_slope(t["eps"], t[column])
    at = t.iloc[(t["eps"] - 0.01).abs().argmin()]
    return slope, float(at[column] / at["e0"])


@claims.add("first-order-correction", S_FIRST_ORDER, REF + "; Tikhonov / Fenichel first-order matching")
def judge_first_order(res: Result, v: Judgement) -> Verdict:
    controls = ("e1_flipped", "e1_unnormalised")
    t = _errors(res, v, "e0", "e1", *(c for c in controls if c in res.table("errors")))
    if len(t) < 2 or not (t[["e0", "e1"]] > 0).all().all():
        return v.failed(math.nan, "[1.8, 2.2]", 0.2, "needs >= 2 eps with positive errors")
    if not np.isclose(t["eps"], 0.01).any():
        return v.undecided("not decided: the eps grid lacks 0.01, where the card compares e1 with 0.1 e0")
    slope, ratio = _first_order(t, "e1")
    found = {c: _first_order(t, c) for c in controls if c in t}
    # a control is caught when it fails the claim's test (slope or ratio); the wrong sign fails both, the minimum-norm
    # x1 always fails the slope (its O(eps) mass defect) and the ratio only when that defect is large
    controls_fail = len(found) == 2 and all(not (1.8 <= s <= 2.2) or r > 0.1 for s, r in found.values())
    ctl = "; ".join(f"{c}: slope {s:.2f}, ratio {r:.2g}" for c, (s, r) in found.items())
    return v.within(
        slope,
        1.8,
        2.2,
        name="slope of e1",
        tolerance=0.2,
        expected="[1.8, 2.2] and e1/e0 <= 0.1 at eps = 0.01",
        also=ratio <= 0.1 and controls_fail,
        detail=f"e1/e0 at eps = 0.01: {ratio:.2g} (<= 0.1); controls (must fail): {ctl}",
    )


S_PHI = (
    "The variational phi_theta(y) = softmax(MLP(y)), trained on E||Q(y)^T phi||^2, is within 0.03 in L1 of p_st "
    "on a 200-point grid over [-2, 2]; the untrained net is far outside (> 0.1)."
)


@claims.add("variational-phi", S_PHI, REF + "; variational reading of the master equation")
def judge_phi(res: Result, v: Judgement) -> Verdict:
    t = res.table("phi")
    if t.empty:
        return v.failed(math.nan, "<= 0.03", 0.03, "no phi rows")
    phi, untrained, exact = (v.column(t, c) for c in ("phi", "phi_untrained", "p_st"))
    by_y = t.assign(err=(phi - exact).abs(), err0=(untrained - exact).abs()).groupby("y")
    fitted = by_y["err"].sum()
    worst_untrained = float(by_y["err0"].sum().max())
    return v.at_most(
        fitted.set_axis([f"y = {y:.3g}" for y in fitted.index]),
        0.03,
        name="L1(phi, p_st)",
        tolerance=0.03,
        expected="<= 0.03 (untrained > 0.1)",
        also=worst_untrained > 0.1,
        detail=f"{by_y.ngroups} points; untrained max_y L1 {worst_untrained:.3g} (must be > 0.1)",
    )


S_CAUSAL = (
    "Changing token t changes no logit at positions < t (max |delta| <= 1e-6, float32) in the coupled model "
    "with a non-zero gate, for every t including block boundaries; an unshifted block mean leaks (> 1e-3)."
)


@claims.add("causal-pooling", S_CAUSAL, REF + "; ours: perturbation test (probes.causality)")
def judge_causal(res: Result, v: Judgement) -> Verdict:
    t = res.table("leak")
    causal, leaky = t[t["pooling"] == "shifted (causal)"], t[t["pooling"] == "unshifted (leaky)"]
    if causal.empty or leaky.empty or not causal["boundary"].any():
        return v.failed(math.nan, "<= 1e-6", 1e-6, "the leak test lacks the causal model, the control or a boundary")
    leak = v.column(causal, "leak").set_axis([f"P = {P}, t = {x}" for P, x in zip(causal["P"], causal["t"])])
    boundary = float(leak[causal["boundary"].to_numpy()].max())
    control = float(v.column(leaky, "leak").max())
    return v.at_most(
        leak,
        1e-6,
        name="leak",
        tolerance=1e-6,
        expected="<= 1e-6 (control > 1e-3)",
        also=control > 1e-3,
        detail=f"{causal['t'].nunique()} positions x {causal['P'].nunique()} P; block boundaries "
        f"{boundary:.2g}; unshifted control {control:.3g} (must be > 1e-3)",
    )


S_COST = (
    "The slow path's attention-score FLOPs are exactly 1/P^2 of the fast path's per layer (analytic, and equal "
    "to torch's FLOP counter on the model); a coupled step takes <= 1.5x (CPU; 1.2x GPU) a dense step "
    "(median over >= 20 steps, one process)."
)


@claims.add("slow-path-cost", S_COST, REF + "; ours: torch.utils.flop_counter, interleaved step timing")
def judge_cost(res: Result, v: Judgement) -> Verdict:
    f, st = res.table("flops"), res.table("step_time")
    limit = 1.2 if res.scalars.get("timing_on_gpu") else 1.5
    if f.empty or st.empty:
        return v.failed(math.nan, f"<= {limit}", None, "missing FLOP or timing rows")
    v.column(f, "measured_score_flops")
    v.column(st, "seconds")
    problems = []
    for P, g in f.groupby("P"):
        fast, slow = (g[g["path"] == p].iloc[0] for p in ("fast", "slow"))
        if Fraction(int(slow["analytic_score_flops"]), int(fast["analytic_score_flops"])) != Fraction(1, int(P) ** 2):
            problems.append(f"P = {P}: analytic ratio is not 1/P^2")
        for row in (fast, slow):
            if row["measured_score_flops"] != row["analytic_score_flops"]:
                problems.append(
                    f"P = {P}, {row['path']}: counted {row['measured_score_flops']:.0f} != analytic "
                    f"{row['analytic_score_flops']}"
                )
    skip = st["step"] >= 2  # the first steps warm up allocators and kernels
    dense = st[(st["variant"] == "dense") & skip]["seconds"]
    coupled = st[(st["variant"] == "coupled") & skip]
    if dense.empty or coupled.empty:
        return v.failed(math.nan, f"<= {limit}", None, "missing dense or coupled timing rows")
    if len(dense) < 20:
        return v.undecided(f"not decided: only {len(dense)} timed dense steps (the card: a median over 20)")
    ratios = pd.Series(
        {f"P = {int(P)}": float(g["seconds"].median() / dense.median()) for P, g in coupled.groupby("P")}
    )
    flops = "; ".join(problems) if problems else "analytic = counted, 1/P^2 exact"
    return v.at_most(
        ratios,
        limit,
        name="time ratio coupled/dense",
        tolerance=limit,
        expected=f"<= {limit} and FLOP ratio 1/P^2",
        also=not problems,
        detail=f"medians over {len(dense)} dense steps; FLOPs: {flops}",
    )


GATE_CLOSED = 0.1  # the card's threshold on the gate RMS (reconstructed)
S_GATE = (
    "After 500k tokens the gate RMS of every layer is <= 0.1 for every seed (the paper: the gate stays closed; "
    "threshold reconstructed)."
)
# Both LM claims: the card's seeds per variant (3 at its quick size, 5 at paper) and its 4096-token batches.
SEEDS = [
    Departure.field_value(
        "lm_seeds",
        3,
        "fewer seeds per variant than the card's quick LM",
        presets=["quick", "cpu", "cpu-500k", "cpu-500k-b8"],
    ),
    Departure.field_value("lm_seeds", 5, "fewer seeds per variant than the card's paper LM", presets=["paper"]),
]
BATCH = Departure.field_value(
    "lm_batch",
    32,
    "the card's 500k tokens in more, smaller AdamW steps: at batch 32 (122 "
    "steps) Adam's step bound keeps every gate coordinate below 0.1",
)


def _reduced(res) -> str | None:
    tokens = int(res.scalars.get("lm_tokens", 0))
    if tokens >= CARD_TOKENS:
        return None
    return (
        f"not decided: reduced run ({tokens:,} tokens of the card's 500k; needs the cpu preset, cpu-500k(-b8) or paper)"
    )


def _last(res, variant: str):
    c = res.table("lm_curve")
    c = c[(c["variant"] == variant) & (c["step"] == c["step"].max())]
    return c.set_axis([f"seed {s}, P = {P}, layer {layer}" for s, P, layer in zip(c["seed"], c["P"], c["layer"])])


@claims.add(
    "gate-stays-closed",
    S_GATE,
    REF + ", abstract: 'the gate stays closed'; ours: Adam's step bound (Kingma & Ba 2015, Sec. 2.1)",
    departures=[*SEEDS, BATCH],
    decided_by="cpu",
)
def judge_gate(res: Result, v: Judgement) -> Verdict:
    """Judged only where it can fail. Adam's normalised step m/sqrt(v) is about 1 or less for a gradient of steady
    scale (Kingma & Ba 2015, Sec. 2.1: |step| <~ lr; at most 3.16 lr, for a gradient that was zero until that step),
    and weight decay only shrinks g; so no |g_i|, hence no RMS, passes ``sum_t lr_t``. The run also measures how
    far a coordinate could have travelled with the steps it took (``gate_steps.path``: the sum over steps of the
    largest coordinate move; 1.0-1.04 sum_t lr_t on our runs). Where the larger of the two is <= 0.1 the gate stays
    closed whatever the gradients' directions: not decided, with the bound, the path and the measured RMS."""
    c = _last(res, "coupled")
    if c.empty:
        return v.failed(math.nan, f"<= {GATE_CLOSED}", GATE_CLOSED, "no coupled gate reads")
    rms = v.column(c, "gate_rms")
    bound = v.finite(res.scalars.get("adam_gate_bound", math.nan), "Adam step bound sum_t lr_t")
    steps = res.tables.get("gate_steps")
    reach, measured_steps = bound, ""
    if steps is not None and len(steps):
        largest, path = float(v.column(steps, "max_step_over_lr").max()), float(v.column(steps, "path").max())
        reach = max(bound, path)
        measured_steps = f"; largest gate step {largest:.2f} lr_t, longest path {path:.3g}"
    worst = float(rms.max())
    detail = (
        f"max gate RMS {worst:.3g} over {c['seed'].nunique()} seeds x {c['layer'].nunique()} layers x "
        f"{c['P'].nunique()} P; Adam's step bound sum_t lr_t = {bound:.3g}{measured_steps}"
    )
    reduced = _reduced(res)
    if reduced:
        return v.undecided(
            f"{reduced}; measured {detail}", measured=worst, expected=f"<= {GATE_CLOSED}", tolerance=GATE_CLOSED
        )
    if reach <= GATE_CLOSED:
        return v.undecided(
            f"not decided at this budget: Adam moves a gate coordinate by <~ lr_t per step, so no "
            f"|g_i| can pass {reach:.3g} <= {GATE_CLOSED} whatever the gradients (the claim cannot "
            f"fail here); measured {detail}; the cpu preset (as cpu-500k-b8: the same tokens in batches "
            f"of 8, bound 0.24) decides it",
            measured=worst,
            expected=f"<= {GATE_CLOSED}",
            tolerance=GATE_CLOSED,
        )
    return v.at_most(rms, GATE_CLOSED, name="gate RMS", tolerance=GATE_CLOSED, detail=detail)


S_NEUTRAL = (
    "At 500k tokens coupling is neutral: |mean L_coupled - mean L_frozen| and |mean L_coupled - mean L_dense| "
    "are each <= 2 pooled seed SDs of the validation loss."
)


def pooled_sd(a: np.ndarray, b: np.ndarray) -> float:
    return float(np.sqrt((np.var(a, ddof=1) + np.var(b, ddof=1)) / 2))


def _no_op(res, v, f) -> str | None:
    """Why the ablation cannot be judged, or None: two variants of a seed with bit-identical losses are one run
    (the comparisons coincide), a frozen gate that moved is no ablation, a coupled gate that never moved is the
    frozen model."""
    same = [
        f"seed {s}: {', '.join(f'{a} (P = {P})' for a, P in zip(g['variant'], g['P']))}"
        for s, seed in f.groupby("seed")
        for _, g in seed.groupby("val_loss")
        if len(g) > 1
    ]
    if same:
        return f"variants trained to bit-identical losses, so the comparisons are one: {'; '.join(same)}"
    frozen, coupled = v.column(_last(res, "frozen"), "gate_rms"), v.column(_last(res, "coupled"), "gate_rms")
    if len(frozen) and (frozen != 0).any():
        return f"the frozen gate moved (RMS {float(frozen.max()):.3g} at {frozen.idxmax()}): no ablation"
    if len(coupled) and (coupled == 0).any():
        return f"a coupled gate never moved ({coupled.idxmin()}): that model is the frozen one"
    return None


# Measured on cpu-500k seeds 0-2 (each: 3 LM seeds x coupled / frozen / dense at the card's recipe): coupled -
# frozen +0.0168 (2.60 SD), +0.0106 (1.35), -0.0039 (0.37); coupled - dense +0.0101 (1.51), +0.0091 (0.82), -0.0055.
NEUTRAL_KNOWN = KnownFailure.on_some_seeds(
    1,
    3,
    [0],
    "the card's 2-SD test on 3 independent runs per variant raises a false alarm on ~7% of comparisons "
    "with no effect (|t_4| > 2.45), ~12% for the pair; seed 0's coupled runs drew losses 0.017 above frozen (2.6 SD) "
    "while the coupling itself moves the loss by ~2e-5 (the same seed with coupled and frozen sharing their "
    "initialisation, before issue 44: -0.00002) and coupled - frozen changes sign over seeds",
    presets=["cpu-500k"],
)


@claims.add(
    "ablation-neutral",
    S_NEUTRAL,
    REF + ", abstract: 'within run-to-run noise'",
    departures=[*SEEDS, BATCH],
    known=NEUTRAL_KNOWN,
    decided_by="cpu",
)
def judge_neutral(res: Result, v: Judgement) -> Verdict:
    f = res.table("lm_final")
    v.column(f, "val_loss")
    broken = _no_op(res, v, f)
    if broken:
        return v.failed(math.nan, "<= 2 SD", 2.0, broken)
    dense = f[f["variant"] == "dense"]["val_loss"].to_numpy()
    z, parts = {}, []
    for P, g in f[f["variant"] != "dense"].groupby("P"):
        coupled = g[g["variant"] == "coupled"]["val_loss"].to_numpy()
        for name, other in (("frozen", g[g["variant"] == "frozen"]["val_loss"].to_numpy()), ("dense", dense)):
            if len(coupled) < 2 or len(other) < 2:
                return v.failed(math.nan, "<= 2 SD", 2.0, "needs >= 2 seeds per variant")
            sd = pooled_sd(coupled, other)
            gap = abs(coupled.mean() - other.mean())
            z[f"P = {P}, coupled - {name}"] = gap / sd if sd > 0 else (0.0 if gap == 0 else math.inf)
            parts.append(
                f"P={P} coupled-{name}: {coupled.mean() - other.mean():+.4f} (SD {sd:.4f}, "
                f"{z[f'P = {P}, coupled - {name}']:.2f} SD)"
            )
    if not parts:
        return v.failed(math.nan, "<= 2 SD", 2.0, "no coupled / frozen rows")
    detail = "; ".join(parts)
    reduced = _reduced(res)
    if reduced:
        return v.undecided(f"{reduced}; measured {detail}", measured=max(z.values()), expected="<= 2 SD", tolerance=2.0)
    return v.at_most(
        pd.Series(z), 2.0, name="|mean difference| / pooled SD", tolerance=2.0, expected="<= 2 SD", detail=detail
    )
