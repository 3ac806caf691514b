"""focus-dilution: its claims, judged from a run's tables and config.

Thresholds are the card's, reconstructed from the abstract of arXiv 2605.01199 (the full text was not available).
Every judge reads the per-member curves (table ``curves``: one row per member and log step) and the loss levels
(table ``levels``); a claim holds only if it holds for every member.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from theorylab.core import Claims, Verdict
from theorylab.core.declared import Departure, KnownFailure
from theorylab.probes.stages import longest_true_run

REF = "Chen, Lin, Xu & Luo, arXiv 2605.01199 (abstract; thresholds reconstructed in the card)"
claims = Claims("focus-dilution")

INIT_TOL = 5e-3
PLATEAU_REL = 0.02  # |L - H(π)| <= 2 % of H(π) on the first plateau
FROZEN = 1.5  # ‖W_Q W_Kᵀ‖_F <= 1.5 x its initial value while attention is frozen
MIN_WINDOW = 100  # steps
RANK_ONE = 0.3  # σ₂/σ₁ at or below this: condensed to rank one
QK_GROWTH = 10.0
ENTROPY_DROP = 0.3  # nats
F_PEAK = 1.05
UNDONE = 0.5  # at least half the focus gain undone by the end
BEYOND = 0.5  # final loss at least halfway from H(π) to the entropy rate
SECOND_PEAK = 1.03
SECOND_CYCLE_STEPS = 20_000  # the card: claim 6 needs about 5x the quick budget of 4000 steps

# The paper's setting, from the card's update (secondary notes on the paper), differs from the card's recipe we built.
PAPER_SETTING = ("W_V, loss on every position, Zipf-mixed chain (the card's update, from notes on the paper: no W_V, "
                 "last-token loss, π = (0.75, 0.19, 0.05, 0.01), population gradient flow): the paper's setting is not "
                 "built yet")
# The card's paper preset trains about 1e5 steps; ours 20k (the budget claim 6 names).
PAPER_STEPS = Departure.field_value("steps", 100_000, "the card's claim 6 asks about 5x the quick budget; 1e5 steps "
                                    "not run", presets=["paper"])
# The cpu preset: quick's model and data at the 20000 steps claim 6 names.
CPU_SIZE = Departure.of("V = 10, d = 16, T = 16, 512 sequences, 2 members at 20000 steps (paper preset: V = 50, d = "
                        "256, T = 128, 5 members; card: ~1e5 steps)", "cpu preset: quick's model on 2 CPU cores; the "
                        "paper's size needs a GPU", presets=["cpu"])


def members(res) -> list[tuple[int, pd.DataFrame, pd.Series]]:
    """``(member, its curve sorted by step, its loss levels)`` for every member."""
    curves, levels = res.table("curves"), res.table("levels").set_index("member")
    return [(int(m), g.sort_values("step").reset_index(drop=True), levels.loc[m]) for m, g in curves.groupby("member")]


def first_window(curve: pd.DataFrame, level: pd.Series) -> tuple[float, float] | None:
    """W₁: the longest run of log steps with |L - H(π)| <= 2 % H(π) and ‖W_Q W_Kᵀ‖_F <= 1.5 x initial, as (start,
    end) steps; None when no log step qualifies."""
    h = float(level["unigram_entropy"])
    ok = ((curve["loss"] - h).abs() <= PLATEAU_REL * h) & (curve["qk_norm"] <= FROZEN * curve["qk_norm"].iloc[0])
    run = longest_true_run(ok.to_numpy(), curve["step"].to_numpy())
    return None if run is None else (float(curve["step"].iloc[run[0]]), float(curve["step"].iloc[run[1]]))


def focus_peak(curve: pd.DataFrame, after: float) -> tuple[float, float, float]:
    """``(F_peak, its step, F_end)`` with the peak over log steps >= ``after``."""
    late = curve[curve["step"] >= after]
    i = late["focus"].idxmax()
    return float(late.loc[i, "focus"]), float(late.loc[i, "step"]), float(curve["focus"].iloc[-1])


def every_member(res, check) -> tuple[bool, list[float], str]:
    """Apply ``check(curve, levels) -> (good, value, text)`` to every member: ``(all good, the values, the
    texts joined)``. A claim holds only if it holds for every member."""
    ok, values, parts = True, [], []
    for m, c, lv in members(res):
        good, value, text = check(c, lv)
        ok &= bool(good)
        values.append(value)
        parts.append(f"member {m}: {text}")
    return ok, values, "; ".join(parts)


S_INIT = "At initialisation (every weight N(0, ε²), ε = 0.05) the loss is ln V: |L(0) - ln V| <= 5e-3."


@claims.add("init-loss", S_INIT, REF + ", small-initialisation regime", departures=[PAPER_SETTING])
def judge_init(res, v) -> Verdict:
    gaps = [abs(float(c["loss"].iloc[0]) - float(lv["ln_v"])) for _, c, lv in members(res)]
    worst = max(gaps)
    return v.judged(worst <= INIT_TOL, worst, f"<= {INIT_TOL}", INIT_TOL,
                    "|L(0) - ln V| per member: " + ", ".join(f"{g:.2e}" for g in gaps))


S_CONDENSE = ("Stage 1: a window W₁ of >= 100 steps where the loss sits at the unigram entropy H(π) (within 2 %) while "
              "‖W_Q W_Kᵀ‖_F stays <= 1.5x its initial value, and inside it σ₂/σ₁ of both E and U fall to <= 0.3 "
              "(rank-one condensation with attention frozen).")


@claims.add("condensation-with-frozen-attention", S_CONDENSE, REF + ", stage 1 (abstract)",
            departures=[PAPER_SETTING, PAPER_STEPS])
def judge_condense(res, v) -> Verdict:
    def check(c, lv):
        w = first_window(c, lv)
        if w is None:
            return False, 0.0, "no log step at the unigram level with frozen attention"
        inside = c[(c["step"] >= w[0]) & (c["step"] <= w[1])]
        e_min, u_min = float(inside["e_ratio"].min()), float(inside["u_ratio"].min())
        good = w[1] - w[0] >= MIN_WINDOW and e_min <= RANK_ONE and u_min <= RANK_ONE
        return good, w[1] - w[0], f"W₁ = steps {w[0]:.0f}-{w[1]:.0f}, min σ₂/σ₁(E) {e_min:.3f}, (U) {u_min:.3f}"

    ok, lengths, detail = every_member(res, check)
    return v.judged(ok, min(lengths), f">= {MIN_WINDOW} steps (σ₂/σ₁ <= {RANK_ONE})", None, detail)


S_WAKE = ("Stage 2 begins after stage 1: ‖W_Q W_Kᵀ‖_F grows >= 10x by the end, first exceeds 1.5x its initial value "
          "after the start of W₁, and the attention entropy (t >= 4) falls by >= 0.3 nats from its uniform start.")


@claims.add("attention-wakes-later", S_WAKE, REF + ", stage 2 (abstract)",
            departures=[PAPER_SETTING, PAPER_STEPS])
def judge_wake(res, v) -> Verdict:
    def check(c, lv):
        w = first_window(c, lv)
        q0 = float(c["qk_norm"].iloc[0])
        growth = float(c["qk_norm"].iloc[-1]) / q0
        awake = c[c["qk_norm"] > FROZEN * q0]
        wake = float(awake["step"].iloc[0]) if len(awake) else math.inf
        drop = float(c["entropy"].iloc[0] - c["entropy"].iloc[-1])
        good = w is not None and growth >= QK_GROWTH and wake > w[0] and drop >= ENTROPY_DROP
        return good, growth, (f"‖W_QW_Kᵀ‖ x{growth:.1f}, wakes at step {wake:.0f} (W₁ starts at "
                              f"{'none' if w is None else f'{w[0]:.0f}'}), entropy drop {drop:.3f} nats")

    ok, growths, detail = every_member(res, check)
    return v.judged(ok, min(growths), f">= {QK_GROWTH}x (wake after W₁ starts; entropy drop >= {ENTROPY_DROP})", None,
                    detail)


S_FOCUS = ("Stages 2-3: after W₁ the focus ratio F on the V/4 most frequent tokens peaks at >= 1.05, and by the end "
           "at least half of that gain is undone (F_end <= 1 + 0.5 (F_peak - 1)), for every member.")


# Measured at the quick preset over seeds 0-19, 42, 100, 123, 1234, 2026, 12345 (issues 22 and 44; see
# docs/seed-robustness.md, docs/studies/focus-dilution.md).
FOCUS_KNOWN = KnownFailure.on_some_seeds(4, 26, [1, 6, 19, 12345], (
    "seed 1's attention focuses on pi-ranks 2-4 and misses the card's V/4 = 2-token top set; seed 6 focuses late and "
    "does not dilute even at 8000 steps; seeds 19 and 12345 have a member that focuses late and weakly (F_peak "
    "1.027 at the last step 4000; 1.082 at step 2700, F_end 1.065 against 1.041). The focus definition is "
    "reconstructed (the card's top set of pi) and is the first thing to re-check against the paper (issue 46 "
    "rebuilds it); the card's F_peak and F_end bounds are kept"),
    presets=["quick"])


@claims.add("focus-then-dilution", S_FOCUS, REF + ", stages 2-3 (abstract)", known=FOCUS_KNOWN)
def judge_focus(res, v) -> Verdict:
    def check(c, lv):
        w = first_window(c, lv)
        if w is None:
            return False, math.nan, "no W₁, so no 'after W₁'"
        peak, at, end = focus_peak(c, w[1])
        good = peak >= F_PEAK and end <= 1 + UNDONE * (peak - 1)
        return good, peak, f"F_peak {peak:.3f} at step {at:.0f}, F_end {end:.3f} (bound {1 + UNDONE * (peak - 1):.3f})"

    ok, peaks, detail = every_member(res, check)
    return v.judged(ok, float(np.nanmin(peaks)) if not all(map(math.isnan, peaks)) else math.nan,
                    f"F_peak >= {F_PEAK}, F_end <= 1 + {UNDONE} (F_peak - 1)", None, detail)


S_BEYOND = ("The attention stage learns beyond the unigram level: the final loss is <= H(π) - 0.5 (H(π) - H_cond), "
            "H_cond the chain's entropy rate.")


@claims.add("beyond-unigram", S_BEYOND, REF + "; loss levels from the chain (theory.markov)",
            departures=[PAPER_SETTING, PAPER_STEPS])
def judge_beyond(res, v) -> Verdict:
    def check(c, lv):
        h, hc, last = float(lv["unigram_entropy"]), float(lv["entropy_rate"]), float(c["loss"].iloc[-1])
        frac = (h - last) / (h - hc)
        return frac >= BEYOND, frac, f"L_end {last:.4f}, H(π) {h:.4f}, H_cond {hc:.4f} ({frac:.2f} of the way)"

    ok, fractions, detail = every_member(res, check)
    return v.judged(ok, min(fractions), f">= {BEYOND} of the way from H(π) to H_cond", None, detail)


def second_cycle(c: pd.DataFrame, w: tuple[float, float]) -> dict:
    """The reduced measurement of claim 6 on one member: the first dilution after the focus peak, the number of
    singular values of E above 0.3σ₁ there and later, and a second F peak after the new direction opens."""
    peak, at, _ = focus_peak(c, w[1])
    after = c[c["step"] > at]
    diluted = after[after["focus"] <= 1 + UNDONE * (peak - 1)]
    out = dict(peak=peak, dilution=math.nan, dirs=math.nan, new_dirs=math.nan, peak2=math.nan, end2=math.nan,
               ok=False)
    if not len(diluted):
        return out
    t_d = float(diluted["step"].iloc[0])
    n_d = int(diluted["e_directions"].iloc[0])
    later = c[c["step"] >= t_d]
    opened = later[later["e_directions"] >= n_d + 1]
    out.update(dilution=t_d, dirs=n_d, new_dirs=int(later["e_directions"].max()))
    if not len(opened):
        return out
    rest = c[c["step"] >= float(opened["step"].iloc[0])]
    i = rest["focus"].idxmax()
    peak2 = float(rest.loc[i, "focus"])
    end2 = float(c["focus"].iloc[-1])
    out.update(peak2=peak2, end2=end2, ok=peak2 >= SECOND_PEAK and end2 <= 1 + UNDONE * (peak2 - 1)
               and rest.loc[i, "step"] < c["step"].iloc[-1])
    return out


S_SECOND = ("Stage 4: after the first dilution a new embedding direction opens (the count of singular values of E "
            "above 0.3σ₁ grows by >= 1), followed by a second F peak >= 1.03 and a second decline (half its gain "
            "undone by the end). Needs about 5x the quick step budget.")


@claims.add("second-cycle", S_SECOND, REF + ", stage 4 (abstract)", decided_by="cpu", departures=[
    PAPER_SETTING, PAPER_STEPS, CPU_SIZE,
    "second decline = half the second peak's gain undone by the end (card: 'a second decline', no size stated): the "
    "first decline's rule"])
def judge_second(res, v) -> Verdict:
    def check(c, lv):
        w = first_window(c, lv)
        if w is None:
            return False, math.nan, "no W₁"
        s = second_cycle(c, w)
        return s["ok"], s["peak2"], (f"first dilution at step {s['dilution']:.0f}, E directions {s['dirs']} -> "
                                     f"{s['new_dirs']}, second F peak {s['peak2']:.3f}, F_end {s['end2']:.3f}")

    ok, _, detail = every_member(res, check)
    steps = int(res.config["steps"])
    if steps < SECOND_CYCLE_STEPS:
        return v.undecided(f"needs >= {SECOND_CYCLE_STEPS} steps (cpu preset; this run has {steps}); reduced "
                           f"measurement: {detail}", measured=bool(ok), expected="a second direction, peak and decline")
    return v.judged(ok, bool(ok), "a second direction, peak >= 1.03 and decline", None, detail)
