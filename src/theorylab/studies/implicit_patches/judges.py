"""implicit-patches: its claims, judged from a run's tables, scalars and config."""

from __future__ import annotations

import pandas as pd

from theorylab.core import Check, Claims, Judgement, Result, Verdict
from theorylab.core.declared import Departure

REF = "arXiv 2511.17864"


BOUND = {"float64": 1e-10, "float32": 1e-4}  # max |Δ| <= BOUND · (1 + max |out|): float precision, not the paper


CONTROL = 1e-3  # a control "differs" when its gap is at least this


claims = Claims("implicit-patches")


def _exact_checks(v, t: pd.DataFrame) -> tuple[list[Check], float, str]:
    """Per dtype: every case within its bound (``bound`` = BOUND · (1 + max|out|)) and feasible; ``(the checks, the
    worst error / bound over dtypes, the detail)``."""
    for col in ("error", "scale", "bound"):  # a NaN error would pass `error > bound` unseen
        v.column(t, col)
    parts, checks, worst = [], [], 0.0
    for dtype, g in t.groupby("dtype"):
        rel = g["error"] / (1 + g["scale"])
        bad = g[(g["error"] > g["bound"]) | ~g["feasible"]]
        # holds: each case has its own bound (error <= bound row by row)
        checks += [
            Check.holds(f"{dtype}: max |Δ| <= its bound in every case", bool((g["error"] <= g["bound"]).all())),
            Check.holds(f"{dtype}: every case feasible", bool(g["feasible"].all())),
        ]
        worst = max(worst, float(rel.max() / BOUND[dtype]))
        example = "" if bad.empty else bad.iloc[0][["family", "mode", "d", "context", "seed"]].to_dict()
        parts.append(
            f"{dtype}: max |Δ|/(1+max|out|) = {rel.max():.2e} (bound {BOUND[dtype]:g}) over {len(g)} cases"
            + (f"; {len(bad)} over the bound, e.g. {example}" if not bad.empty else "")
        )
    return checks, worst, "; ".join(parts)


S_SINGLE = (
    "For every block family (vanilla, Llama, Gemma, post-norm, parallel, MoE), width, context length and seed, one "
    "block patched without the context gives its with-context output at the query: max |Δ| <= 1e-10·(1 + max|out|) in "
    "float64 and <= 1e-4·(1 + max|out|) in float32."
)


@claims.add(
    "exact-single-block", S_SINGLE, REF + ", Thms (Gemma block; controllability framework); Dherin et al. Thm 2.2"
)
def judge_single(res: Result, v: Judgement) -> Verdict:
    t = res.table("sweep")
    t = t[t["depth"] == 1]
    if t.empty:
        return v.undecided("this config has no depth-1 stack (needs 1 in 'n_layers')")
    checks, worst, detail = _exact_checks(v, t)
    fams = ", ".join(sorted(t["family"].unique()))
    detail = f"families {fams}; worst error / bound {worst:.3g}; {detail}"
    return v.all_of(*checks, measured=worst, tolerance=1, detail=detail)


S_MULTI = (
    "With the multi-layer algorithm (patch layer l against the with-context state, feed the patched output to "
    "layer l+1), the deepest stack's output obeys the same bounds; "
    "patching every layer against its own unpatched query-only input instead misses (gap >= 1e-3) at depth >= 2 "
    "in >= 95% of cases."
)


@claims.add(
    "exact-multi-layer",
    S_MULTI,
    REF + ", multi-layer algorithm",
    departures=[Departure.field_value("n_layers", (1, 2, 4, 8), "the deepest stack is judged (card: depth 8)")],
)
def judge_multi(res: Result, v: Judgement) -> Verdict:
    t = res.table("sweep")
    deep = t[t["depth"] == t["depth"].max()]
    if deep["depth"].max() < 2:
        return v.undecided("this config has no stack deeper than 1 (needs a depth >= 2 in 'n_layers')")
    checks, worst, detail = _exact_checks(v, deep)
    ind = t[(t["depth"] >= 2) & t["independent"].notna()]
    frac = float((ind["independent"] >= CONTROL).mean()) if len(ind) else float("nan")  # NaN: no control case
    checks.append(Check.at_least("share of independent-patch cases at depth >= 2 missing by >= 1e-3", frac, 0.95))
    detail += (
        f"; depth {int(deep['depth'].max())}. Control (independent patches): gap >= 1e-3 in {frac:.1%} of {len(ind)} "
        f"cases at depth >= 2 (median {ind['independent'].median():.2g})"
    )
    # the card: the independent patches fail at depth >= 2 (every case); ours allows 5% of cases to be hit
    departures = (
        [
            f"control: the independent patches miss (gap >= 1e-3) in {frac:.1%} of the depth >= 2 cases, "
            f"judged against >= 95% (card: they fail at depth >= 2)"
        ]
        if frac < 1
        else []
    )
    return v.all_of(
        *checks, measured=worst, tolerance=1, detail=f"worst error / bound {worst:.3g}; {detail}", departures=departures
    )


S_RANK = (
    "Every patched matrix has ΔW of numerical rank exactly 1 in float64 (σ₂/σ₁ <= 1e-8) and ΔW != 0; the Gemma "
    "norm-scale patch is a scalar multiple of (1 + g₄) "
    "(spread of the ratio new/old scale <= 1e-10)."
)


@claims.add("rank-one", S_RANK, REF + ", rank-1 MLP patches and the RMSNorm-scale patch")
def judge_rank(res: Result, v: Judgement) -> Verdict:
    t = res.table("sweep")
    t = t[(t["dtype"] == "float64") & t["feasible"]]
    if t.empty:
        return v.undecided("this config runs no float64 sweep (needs float64 in 'dtypes'), where rank is measured")
    deep = t[t["depth"] == t["depth"].max()]
    ratio = float(v.column(deep, "sigma2_over_sigma1").max())
    spread = float(v.column(deep, "scale_ratio_spread").max())
    detail = (
        f"{len(deep)} stacks (every layer): ranks {int(deep['rank_min'].min())}..{int(deep['rank_max'].max())}; "
        f"max σ₂/σ₁ = {ratio:.1e}; "
        f"max spread of the Gemma scale ratio = {spread:.1e}"
    )
    return v.all_of(
        Check.at_most("max σ₂/σ₁", ratio, 1e-8),
        Check.at_most("max spread of the Gemma scale ratio", spread, 1e-10),
        Check.within("smallest rank per stack", deep["rank_min"], 1, 1),
        Check.within("largest rank per stack", deep["rank_max"], 1, 1),
        detail=detail,
    )


S_CONTEXT = (
    "Control: removing the context without patching changes the query's output by >= 1e-3 in every case, so the "
    "exactness claims are not vacuous."
)


@claims.add(
    "needs-context-effect", S_CONTEXT, REF + ", control making the exactness claims non-vacuous (the card's claim 4)"
)
def judge_context_effect(res: Result, v: Judgement) -> Verdict:
    t = res.table("sweep")
    t = t[t["feasible"]]
    low = float(v.column(t, "no_patch").min())
    detail = f"min gap without patch {low:.3g} over {len(t)} (case, depth) rows; median {t['no_patch'].median():.3g}"
    return v.at_least(low, CONTROL, tolerance=CONTROL, detail=detail)


S_TOKEN = (
    "Token dependence: the patches computed for query x, applied to another query x' with the same context, miss x''s "
    "with-context output (gap >= 1e-3) in >= 95% of cases: no global patch."
)


@claims.add("token-dependence", S_TOKEN, REF + ", limitation: patches are token dependent")
def judge_token(res: Result, v: Judgement) -> Verdict:
    t = res.table("sweep")
    t = t[t["other_query"].notna()]
    if t.empty:
        return v.undecided(
            "this config runs no float64 sweep (needs float64 in 'dtypes'), where the other-query control is measured"
        )
    frac = float((t["other_query"] >= CONTROL).mean())
    detail = (
        f"gap >= 1e-3 in {frac:.1%} of {len(t)} (case, depth) rows; min {t['other_query'].min():.3g}, median "
        f"{t['other_query'].median():.3g}"
    )
    return v.at_least(frac, 0.95, tolerance=0.95, detail=detail)


S_CONTROL = (
    "With one entry of the post-MLP norm scale (1 + g₄) set to 0, the Gemma construction (ours and on HF "
    "Gemma 3) reports 'not output-controllable' "
    "instead of returning a patch, in every trial; the unreachable target entry is >= 1e-3, so any returned "
    "patch would be off."
)


HF_SOURCE = "HF Gemma 3"


def _hf_missing(res) -> str:
    """Why this run has no Hugging Face tables (for ``unless=``)."""
    if not res.config.get("hf", True):
        return "this config does not run the Hugging Face part (hf=false)"
    skipped = res.scalars.get("hf_skipped", "transformers is not installed")
    return f'the Hugging Face part did not run here ({skipped}; pip install "theorylab[hf]")'


@claims.add("controllability-failure", S_CONTROL, REF + ", output controllability")
def judge_controllability(res: Result, v: Judgement) -> Verdict:
    t = res.table("controllability")
    if t.empty:
        return v.undecided("no controllability trials were run")
    flagged = float(t["flagged"].mean())
    unreachable = t["unreachable"].dropna()
    checks = [Check.holds("every trial refused", bool(t["flagged"].all()))]
    if not unreachable.empty:
        checks.append(Check.at_least("unreachable target entry", unreachable, CONTROL))
    ok = all(c.ok for c in checks)
    detail = (
        f"{int(t['flagged'].sum())}/{len(t)} trials refused ({', '.join(sorted(t['source'].unique()))}); smallest "
        f'unreachable target entry {unreachable.min():.3g}; e.g. "{t["message"].iloc[0][:140]}"'
    )
    hf = t["source"].str.startswith(HF_SOURCE)
    if ok and not hf.any():
        # The statement names HF Gemma 3: our blocks alone cannot pass it (a silent wrong patch on them still fails it,
        # above).
        why = (
            _hf_missing(res)
            if "generation" not in res.tables
            else "this config runs no random-init HF Gemma 3 (gemma3 not in hf_archs)"
        )
        return v.undecided(f"{why}, so the HF Gemma 3 half is not tested; our GemmaBlock half passes: {detail}")
    return v.all_of(*checks, measured=flagged, tolerance=0, detail=f"share refused {flagged:.3g}; {detail}")


S_HF_GEN = (
    "Hugging Face Gemma 3 (random init from the card's config; also self-trained or local weights where run): "
    "20 greedy tokens from the patched query-only runs equal those of the "
    "full-context runs, and the logits agree to 1e-8·(1 + max|logit|) in float64 at every step."
)


def _hf_tables(res):
    why = _hf_missing(res)
    return res.table("hf_exact", unless=why), res.table("generation", unless=why)


@claims.add(
    "hf-greedy-identical",
    S_HF_GEN,
    REF + ", Gemma 3 experiment (identical greedy generation)",
    departures=[
        "HF's RMSNorms computed in float64 (card: the HF module as is, whose RMSNorm rounds to float32 in a float64 "
        "model "
        "and leaves a ~3e-8 logit gap, reported)"
    ],
)
def judge_hf_generation(res: Result, v: Judgement) -> Verdict:
    exact, gen = _hf_tables(res)
    if gen.empty or not (gen["arch"] == "gemma3").any():
        return v.undecided("this config runs no Hugging Face Gemma 3 (gemma3 not in hf_archs)")
    g = gen[gen["arch"] == "gemma3"]
    rel = float((v.column(g, "logit_error") / (1 + v.column(g, "logit_scale"))).max())
    same = bool((g["token_context"] == g["token_patched"]).all())
    e = exact[(exact["arch"] == "gemma3") & (exact["dtype"] == "float64")]
    native = e[e["norms"] == "native"]
    detail = (
        f"{', '.join(sorted(g['model'].unique()))}: {g.groupby(['model', 'prompt']).ngroups} prompt(s) x "
        f"{int(g['step'].max())} steps; tokens identical: {same}; "
        f"max |Δlogit|/(1+max|logit|) = {rel:.2e} (norms in float64). With HF's own float32 RMSNorms in a "
        f"float64 model the gap is "
        f"{(native['logit_error'] / (1 + native['logit_scale'])).max():.1e} (the norm rounds to float32): "
        f"reported, not judged"
    )
    return v.all_of(
        Check.at_most("max |Δlogit|/(1+max|logit|)", rel, 1e-8),
        Check.holds("greedy tokens identical", same),
        detail=detail,
    )


S_HF_FAMILIES = (
    "Every Hugging Face family run (Gemma 3, Llama, Mixtral MoE; random init, small configs) is patched exactly "
    "through its own module code: logits at the query agree to 1e-8·(1 + max|logit|) in float64, in both patch modes, "
    "and every patch has rank 1."
)


@claims.add(
    "hf-families-exact",
    S_HF_FAMILIES,
    REF + ", gating, MoE, pre/post-norm on real module code (ours: random-init small configs)",
)
def judge_hf_families(res: Result, v: Judgement) -> Verdict:
    exact, _ = _hf_tables(res)
    if exact.empty:
        return v.undecided("this config runs no Hugging Face model (hf_archs empty, no local model)")
    e = exact[(exact["dtype"] == "float64") & (exact["norms"] == "float64")]
    per = (
        e.assign(rel=e["logit_error"] / (1 + e["logit_scale"]))
        .groupby("model")
        .agg(rel=("rel", "max"), rmin=("rank_min", "min"), rmax=("rank_max", "max"))
    )
    detail = "; ".join(f"{m}: {r.rel:.1e}, ranks {int(r.rmin)}..{int(r.rmax)}" for m, r in per.iterrows())
    other = exact[exact["dtype"] != "float64"]
    if not other.empty:
        detail += "; reported: " + ", ".join(
            f"{m} {dt}: {g['logit_error'].max() / (1 + g['logit_scale'].max()):.1e}"
            for (m, dt), g in other.groupby(["model", "dtype"])
        )
    # every case, not the per-model max: pandas' max would skip a NaN case (and let it pass)
    rel = pd.Series((e["logit_error"] / (1 + e["logit_scale"])).to_numpy(), index=e["model"])
    return v.all_of(
        Check.at_most("|Δlogit|/(1+max|logit|)", rel, 1e-8),
        Check.within("smallest patch rank per model", per["rmin"], 1, 1),
        Check.within("largest patch rank per model", per["rmax"], 1, 1),
        detail=detail,
    )


S_ICL = (
    "In-context linear regression (Dherin et al.): on the trained model the implicit (patched, query-only) "
    "prediction equals the model's prediction "
    "(|Δ|/(1+|pred|) <= 1e-10 in float64, <= 1e-4 in float32), and the incremental patches shrink: mean ‖ΔW_i‖_F "
    "over i in [40, 49] <= 0.5 x the mean over i in [1, 10]."
)


@claims.add(
    "icl-norm-shrinks",
    S_ICL,
    "arXiv 2507.16003, Sec. 4 (implicit updates converge as the context is consumed)",
    departures=[
        Departure.field_value("icl_n_layers", 5, "one block: the contextual block of Dherin et al.'s Thm 2.2"),
        Departure.field_value("icl_steps", 100, "the paper preset trains the regression model longer"),
    ],
)
def judge_icl(res: Result, v: Judgement) -> Verdict:
    t = res.table("icl_patches")
    if t["i"].max() < 49:
        return v.undecided(
            "this config's in-context sequences are too short for the claim's windows (needs icl_length >= "
            "50: i up to 49)"
        )
    for col in ("increment_norm", "rel_error", "rel_error32"):
        v.column(t, col)
    early = float(t[t["i"].between(1, 10)]["increment_norm"].mean())
    late = float(t[t["i"].between(40, 49)]["increment_norm"].mean())
    ratio = late / early
    e64, e32 = float(t["rel_error"].max()), float(t["rel_error32"].max())
    detail = (
        f"implicit vs model: {e64:.1e} (float64), {e32:.1e} (float32); mean ‖ΔW_i‖: i 1-10 {early:.3g}, i 40-49 "
        f"{late:.3g}"
    )
    return v.all_of(
        Check.at_most("mean ‖ΔW_i‖ ratio (i 40-49 / i 1-10)", ratio, 0.5),
        Check.at_most("max |Δ|/(1+|pred|), float64", e64, 1e-10),
        Check.at_most("max |Δ|/(1+|pred|), float32", e32, 1e-4),
        detail=detail,
    )
