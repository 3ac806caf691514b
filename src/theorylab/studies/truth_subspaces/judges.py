"""truth-subspaces: its claims, judged from a run's tables and config."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from theorylab.core import Check, Claims, Judgement, Result, Verdict
from theorylab.core.declared import Departure, KnownFailure
from theorylab.theory.truth_bayes import truth_bayes

REF = "Ravfogel, Yehudai, Linzen, Bruna & Bietti, arXiv 2510.15804"
claims = Claims("truth-subspaces")
TRUTH_PROBE = 0.9  # card: t_truth is the first logged step with post-norm y-probe balanced accuracy >= 0.9
MEMORISED = 0.9  # card: t_mem is the first logged step with memorisation accuracy >= 0.9

# The recipe of the toy runs where it is not the card's (docs/studies/truth-subspaces.md, "Ours: ..."). Each applies
# only while the run's value differs from the card's, so `--set lr=0.001 --set weight_decay=0` judges as stated.
LR = Departure.field_value(
    "lr",
    1e-3,
    "at the card's rate the truth phase starts near step 2000-2500 and the final "
    "post-norm probe read 0.93 < 0.95 on the pilot seed: 4000 steps end before "
    "the truth phase settles",
)
DECAY = Departure.field_value(
    "weight_decay",
    0.0,
    "AdamW decay on the token embeddings and positions only (card: "
    "plain Adam): without it 2 of 10 seeds collapse attention onto the "
    "current token and never leave the memorise-only plateau",
)
RECIPE = (LR, DECAY)
TEST_RHO_MAX = 0.9  # the largest truth rate a test set is drawn at (so the probes see >= 10% false contexts)


def _base(res) -> dict:
    c = res.config
    return dict(n=c["n_entities"][0], n_layers=c["n_layers"][0], rho=c["rhos"][0])


def _select(frame: pd.DataFrame, final_norm: str = "layer", **key) -> pd.DataFrame:
    mask = frame["final_norm"] == final_norm
    for k, v in key.items():
        mask &= np.isclose(frame[k], v) if k == "rho" else frame[k] == v
    return frame[mask]


def _first(steps, values, threshold: float) -> float:
    hit = [s for s, v in zip(steps, values) if v >= threshold]
    return float(hit[0]) if hit else math.inf


def phases(res, final_norm: str = "layer", **key) -> pd.DataFrame:
    """Per seed of one configuration (the base by default): t_mem, t_truth and the final-step measurements."""
    key = key or _base(res)
    curve = _select(res.table("curve"), final_norm, **key)
    probes = _select(res.table("probes"), final_norm, **key)
    probes = probes[probes["metric"] == "probe"]
    rows = []
    for seed, c in curve.groupby("seed"):
        c = c.sort_values("step")
        p = probes[probes["seed"] == seed].pivot_table(index="step", columns="site", values="value")
        t_mem = _first(c["step"], c["mem_acc"], MEMORISED)
        post = p["y/post"] if "y/post" in p else pd.Series(dtype=float)
        t_truth = _first(post.index, post.values, TRUTH_PROBE)
        last = c.iloc[-1]
        final = p.loc[p.index.max()] if len(p) else pd.Series(dtype=float)
        window = c[(c["step"] >= 3 * t_mem) & (c["step"] < t_truth)]
        rows.append(
            dict(
                seed=seed,
                t_mem=t_mem,
                t_truth=t_truth,
                step_end=int(last["step"]),
                plateau_steps=list(window["step"]),
                plateau_loss=list(window["loss_y2"]),
                loss_end=last["loss_y2"],
                loss_true_end=last["loss_y2_true"],
                loss_false_end=last["loss_y2_false"],
                probe_post_end=final.get("y/post", math.nan),
                probe_pre_end=final.get("y/pre", math.nan),
                probe_x2_end=final.get("x2/post", math.nan),
                probe_max_end=float(final.max()) if len(final) else math.nan,
            )
        )
    return pd.DataFrame(rows)


def _col(v, ph: pd.DataFrame, col: str) -> pd.Series:
    """A per-seed column of :func:`phases`; a NaN fails the claim naming the seed (pandas' min/max would skip it)."""
    return v.column(ph[["seed", col]], col)


def _empty(v, what: str) -> Verdict:
    return v.failed(math.nan, what, None, "no base-configuration training run in the tables")


S_BAYES = (
    "On 2e5 generated sequences (N = 64, ρ = 0.9), the Bayes predictor's empirical y'-loss is within 0.01 nats "
    "of L_Bayes = f_T h_N(q_T) + (1 - f_T) ln N and the memorise-only predictor's within 0.01 of L_mem = "
    "h_N(f_T) (the gap L_mem - L_Bayes is ~0.30 nats, so generator bugs show)."
)


@claims.add(
    "bayes-closed-form",
    S_BAYES,
    REF + ", Sec. 3 (closed forms derived for the card's generator)",
    departures=[
        Departure.field_value(
            "bayes_n",
            200_000,
            "at 2e5 the memorise-only loss's standard error is 0.0042 nats, so "
            "the 0.01 tolerance is 2.4 of them and a correct generator failed "
            "on seed 47 (0.0105); 1e6 puts it at 5",
        )
    ],
)
def judge_bayes(res: Result, v: Judgement) -> Verdict:
    t = res.table("bayes")
    if set(t["predictor"]) != {"bayes", "memorise"}:
        return v.failed(math.nan, "<= 0.01", 0.01, "missing Bayes or memorise-only rows")
    err = (v.column(t, "empirical") - v.column(t, "closed_form")).abs()
    th = truth_bayes(int(t["n"].iloc[0]), float(t["rho"].iloc[0]))
    detail = "; ".join(f"{r.predictor}: {r.empirical:.4f} ± {r.se:.4f} vs {r.closed_form:.4f}" for r in t.itertuples())
    return v.at_most(
        err.set_axis(t["predictor"]),
        0.01,
        name="|empirical - closed form|",
        tolerance=0.01,
        expected="<= 0.01 nats",
        detail=detail + f" (gap L_mem - L_Bayes = {th.gap:.3f})",
    )


S_MEM = (
    "Memorisation accuracy (argmax over Y at the x position equals g(x)) reaches >= 0.9 at a logged step t_mem <= 300."
)


@claims.add("memorise-first", S_MEM, REF + ", Sec. 4 (two-phase dynamics)", departures=RECIPE)
def judge_memorise(res: Result, v: Judgement) -> Verdict:
    ph = phases(res)
    if ph.empty:
        return _empty(v, "<= 300")
    worst = float(ph["t_mem"].max())
    return v.at_most(
        worst,
        300,
        expected="t_mem <= 300",
        tolerance=300,
        detail=f"t_mem by seed: {[int(t) if math.isfinite(t) else 'never' for t in ph['t_mem']]}",
    )


# Measured over seeds 0-9 of the quick preset (docs/studies/truth-subspaces.md, docs/seed-robustness.md).
PLATEAU_CAUSE = (
    "the truth phase starts before the memorise-only plateau settles: seed 3's post-norm probe crosses "
    "0.9 at step 700, and its y'-loss at the window's steps 200, 300, 500 is 0.818, 0.815, 0.791, 0.061 "
    "nats above L_mem at the closest (band 0.05; seed 31 likewise, 0.0512); the later claims pass on it"
)
S_PLATEAU = (
    "At some logged step t in [3 t_mem, t_truth) the y'-loss is within 0.05 nats of L_mem: the model sits on "
    "the memorise-only plateau before the truth phase."
)


@claims.add(
    "plateau",
    S_PLATEAU,
    REF + ", Sec. 4 (reconstructed threshold)",
    departures=RECIPE,
    known=KnownFailure.on_some_seeds(1, 10, [3], PLATEAU_CAUSE, presets=["quick"]),
)
def judge_plateau(res: Result, v: Judgement) -> Verdict:
    ph = phases(res)
    if ph.empty:
        return _empty(v, "<= 0.05")
    b = _base(res)
    l_mem = truth_bayes(b["n"], b["rho"]).loss_mem
    # np.min/np.max, not Python's min/max: a NaN loss in a window must propagate (and fail), not be skipped.
    best = [
        float(np.min(np.abs(np.asarray(r.plateau_loss, dtype=float) - l_mem))) if len(r.plateau_loss) else math.inf
        for r in ph.itertuples()
    ]
    worst = float(np.max(best))
    return v.at_most(
        worst,
        0.05,
        expected="<= 0.05 nats",
        tolerance=0.05,
        detail=(
            f"L_mem = {l_mem:.4f}; closest |loss - L_mem| in the window by seed: {[round(x, 4) for x in best]}; "
            f"y'-loss in the window (seed {ph['seed'].iloc[0]}): "
        )
        + ", ".join((f"{t}: {x:.3f}" for t, x in zip(ph["plateau_steps"].iloc[0], ph["plateau_loss"].iloc[0]))),
    )


S_LATER = (
    "t_truth, the first logged step where the post-norm probe at the y position has balanced accuracy >= 0.9, "
    "satisfies t_truth >= 5 t_mem: truth becomes linearly decodable only well after memorisation."
)


@claims.add("truth-later", S_LATER, REF + ", Sec. 4 (two-phase signature)", departures=RECIPE)
def judge_later(res: Result, v: Judgement) -> Verdict:
    ph = phases(res)
    if ph.empty:
        return _empty(v, ">= 5")
    ratio = (ph["t_truth"] / ph["t_mem"]).set_axis([f"seed {s}" for s in ph["seed"]])
    return v.all_of(
        Check.at_least("t_truth / t_mem", ratio, 5),
        Check.holds("t_truth finite on every seed", bool(np.isfinite(ph["t_truth"]).all())),
        measured=float(ratio.to_numpy().min()),  # NaN propagates (numpy)
        detail=f"(t_mem, t_truth) by seed: {list(zip(ph['t_mem'], ph['t_truth']))}",
    )


S_FINAL = (
    "At the last step: post-norm probe balanced accuracy >= 0.95 at the y position; y'-loss <= L_Bayes + 0.08; "
    "y'-loss in false contexts minus y'-loss in true contexts >= 3 nats."
)


@claims.add("final-state", S_FINAL, REF + ", Sec. 4", departures=RECIPE)
def judge_final(res: Result, v: Judgement) -> Verdict:
    ph = phases(res)
    if ph.empty:
        return _empty(v, ">= 0.95")
    b = _base(res)
    l_bayes = truth_bayes(b["n"], b["rho"]).loss_bayes
    probe, loss = float(_col(v, ph, "probe_post_end").min()), float(_col(v, ph, "loss_end").max())
    split = float((_col(v, ph, "loss_false_end") - _col(v, ph, "loss_true_end")).min())
    return v.all_of(
        Check.at_least("post-norm probe (worst seed)", probe, 0.95),
        Check.at_most("y'-loss (worst seed; bound L_Bayes + 0.08)", loss, l_bayes + 0.08),
        Check.at_least("false - true y'-loss (worst seed)", split, 3),
        detail=f"worst seed: probe {probe:.3f}, y'-loss {loss:.4f} (L_Bayes + 0.08 = {l_bayes + 0.08:.4f}), "
        f"false - true {split:.2f} nats",
    )


S_NORM = (
    "At the final step the pre-norm probe at the y position has balanced accuracy at least 0.2 below the "
    "post-norm probe: the truth signal is a norm difference that the final LayerNorm linearises."
)


@claims.add("norm-carries-truth", S_NORM, REF + ", Sec. 4 mechanism (reconstructed)", departures=RECIPE)
def judge_norm(res: Result, v: Judgement) -> Verdict:
    ph = phases(res)
    if ph.empty:
        return _empty(v, ">= 0.2")
    gap = float((_col(v, ph, "probe_post_end") - _col(v, ph, "probe_pre_end")).min())
    pairs = [(round(a, 3), round(b, 3)) for a, b in zip(ph["probe_pre_end"], ph["probe_post_end"])]
    return v.at_least(gap, 0.2, expected="post - pre >= 0.2", tolerance=0.2, detail=f"(pre, post) by seed: {pairs}")


S_NOLN = (
    "Without the final LayerNorm, after the same number of steps, probe balanced accuracy is <= 0.65 at every "
    "site and the y'-loss stays >= L_mem - 0.03."
)


@claims.add("no-layernorm", S_NOLN, REF + ", LayerNorm ablation (reconstructed)", departures=RECIPE, decided_by="cpu")
def judge_noln(res: Result, v: Judgement) -> Verdict:
    curve = res.table("curve")
    if not (curve["final_norm"] == "none").any():
        return v.undecided(
            "needs the cpu preset (no no-LayerNorm run in this preset; reduced measurement: none, a "
            "second training run does not fit the quick budget: at one thread, seed 0, quick took "
            "50.9 s of CPU and quick plus the ablation 110.1 s, over quick's 60 s)"
        )
    ph = phases(res, final_norm="none")
    b = _base(res)
    l_mem = truth_bayes(b["n"], b["rho"]).loss_mem
    probe, loss = float(_col(v, ph, "probe_max_end").max()), float(_col(v, ph, "loss_end").min())
    return v.all_of(
        Check.at_most("largest final probe (every site)", probe, 0.65),
        Check.at_least("smallest final y'-loss (bound L_mem - 0.03)", loss, l_mem - 0.03),
        detail=f"largest final probe {probe:.3f}; smallest final y'-loss {loss:.4f} vs L_mem - 0.03 = "
        f"{l_mem - 0.03:.4f}",
    )


S_RHO = (
    "The median t_truth over seeds is non-decreasing in ρ in {0.5, 0.9, 0.99}, and at ρ = 0.999 t_truth is "
    "finite within 1e5 steps."
)


@claims.add("rho-ordering", S_RHO, REF + ", ρ sweep", departures=RECIPE, decided_by="paper")
def judge_rho(res: Result, v: Judgement) -> Verdict:
    b = _base(res)
    med = {}
    for rho in sorted(set(res.table("curve")["rho"])):
        ph = phases(res, n=b["n"], n_layers=b["n_layers"], rho=rho)
        if len(ph):
            med[float(rho)] = float(np.median(ph["t_truth"]))
    have = {r for r in med if any(math.isclose(r, x) for x in (0.5, 0.9, 0.99, 0.999))}
    detail = f"median t_truth by ρ: {med}"
    if len(have) < 4 or res.config["steps"] < 100_000:
        return v.undecided(
            f"needs paper preset (ρ in {{0.5, 0.9, 0.99, 0.999}}, 1e5 steps); reduced measurement: {detail}"
        )
    seq = [med[r] for r in sorted(med) if r <= 0.99 + 1e-12 and r >= 0.5 - 1e-12]
    # The run draws the test set of a ρ above TEST_RHO_MAX at TEST_RHO_MAX, so that both probe
    # classes have rows; t_truth there is a probe of such a test set, not of one drawn at the run's ρ.
    above = [r for r in med if r > TEST_RHO_MAX + 1e-12]
    departures = (
        [
            f"probes at ρ = {', '.join(f'{r:g}' for r in above)} fit and scored on test sequences drawn at ρ = "
            f"{TEST_RHO_MAX:g} (card: at the run's ρ): at ρ = 0.999 a 4000-sequence test set holds about four "
            f"false contexts"
        ]
        if above
        else []
    )
    return v.all_of(
        Check.holds("median t_truth non-decreasing in ρ over [0.5, 0.99]", all(a <= b2 for a, b2 in zip(seq, seq[1:]))),
        Check.holds(f"t_truth finite at ρ = {max(med):g}", math.isfinite(med[max(med)])),
        measured=seq,
        detail=detail,
        departures=departures,
    )


S_LM = (
    "In our own trained 4-layer LM on synthetic 8-fact documents, mean log P(correct attribute of the last true "
    "fact) is lower by >= 0.5 nats after one false fact than after an all-true context, and a linear probe on the "
    "mean residual of the context reaches balanced accuracy >= 0.9."
)


LM_STEPS = 1000  # the cpu preset's own-LM steps: the pilot's facts are memorised by step 400, its truth effect by 1000
LM_WIDTH = Departure.field_value(
    "lm_d_model",
    256,
    "our own LM at width 64 (card: 256), trained 1000 Adam steps at lr 3e-3 (paper preset: 20000 steps at "
    "1e-3): at width 256 a step takes ~2-5 s of CPU at one thread; the card's 4 layers, 8-fact documents and "
    "R = 4 relations are kept",
)


@claims.add(
    "own-lm-cooccurrence",
    S_LM,
    REF + ", Sec. 5 (our own LM stands in for the pretrained models)",
    departures=[LM_WIDTH],
    decided_by="cpu",
)
def judge_lm(res: Result, v: Judgement) -> Verdict:
    steps = res.config.get("lm_steps", 0)
    if "own_lm" not in res.tables:
        return v.undecided("needs cpu preset (own LM, lm_steps >= 1000); reduced measurement: none, no own-LM run")
    t = res.table("own_lm").set_index("metric")["value"]
    drop = float(t["logp_last_all_true"] - t["logp_last_one_false"])
    probe = float(t["probe_mean_residual"])
    detail = f"log P drop after one false fact {drop:.3f} nats; mean-residual probe {probe:.3f}"
    if steps < LM_STEPS:
        return v.undecided(
            f"needs cpu preset (own LM, lm_steps >= {LM_STEPS}); reduced measurement: {steps} steps, {detail}"
        )
    return v.all_of(
        Check.at_least("log P drop after one false fact (nats)", drop, 0.5),
        Check.at_least("mean-residual probe", probe, 0.9),
        detail=detail,
    )
