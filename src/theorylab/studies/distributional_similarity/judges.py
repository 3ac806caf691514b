"""distributional-similarity: its claims, judged from a run's tables, scalars and config."""

from __future__ import annotations

import math

import numpy as np

from theorylab.core import Claims, Verdict

REF = "Murphy, Dillavou & Bassett, arXiv 2405.21042 (the method 2608.30720 builds on)"
claims = Claims("distributional-similarity")


S_IDENTITY = ("Any channel compared with itself has NMI = 1 and VI = 0 to 1e-9 (synthetic channels and every VAE "
              "channel carrying >= 0.1 bits).")


@claims.add("identity", S_IDENTITY, REF + ", NMI/VI definitions")
def judge_identity(res, v) -> Verdict:
    t, syn = res.table("identity"), res.table("synthetic")
    self_syn = syn[syn["quantity"].str.match(r"(NMI|VI)\((.+), \2\)")]
    errs = list((t["nmi"] - 1).abs()) + list(t["vi"].abs()) + list((self_syn["measured"] - self_syn["exact"]).abs())
    if len(t) == 0:
        return v.failed(math.nan, "<= 1e-9", 1e-9, "no VAE channel carries >= 0.1 bits: nothing to compare")
    worst = float(np.max(errs))
    return v.judged(worst <= 1e-9, worst, "<= 1e-9", 1e-9,
                    f"{len(t)} VAE channels and {len(self_syn) // 2} synthetic ones: largest |NMI - 1| or |VI| "
                    f"{worst:.2g}")


S_DISCRETE = ("Discrete ground truth (means 100σ apart, N = 320 probes, each (a, b) cell 20 times): I(a) = 2 bits, "
              "NMI(a, b) = 0 and VI(a, b) = 4 bits for independent a, b, NMI(a, a mod 2) = 1/√2 and VI = 1 bit, to "
              "1e-6.")


@claims.add("discrete-ground-truth", S_DISCRETE, REF + ", closed forms for partition channels")
def judge_discrete(res, v) -> Verdict:
    t = res.table("synthetic")
    t = t[~t["quantity"].str.match(r"(NMI|VI)\((.+), \2\)")]
    err = (t["measured"] - t["exact"]).abs()
    return v.judged(bool((err <= 1e-6).all()), float(err.max()), "<= 1e-6", 1e-6,
                    "; ".join(f"{q} {m:.9g} (exact {e:.6g})" for q, m, e in zip(t["quantity"], t["measured"],
                                                                                t["exact"])))


S_REPARAM = ("A random permutation and per-dimension affine map (scales 10^linspace(-1, 1, k) in random order, random "
             "shifts, σ scaled with μ) of each VAE's channel leaves its fingerprint, I, NMI = 1 and VI = 0 unchanged "
             "to 1e-9, while linear CKA(μ, transformed μ) <= 0.95 (point-valued similarity is not tied to "
             "information).")


@claims.add("reparametrization-invariance", S_REPARAM, REF + "; CKA: Kornblith et al. 2019")
def judge_reparam(res, v) -> Verdict:
    t = res.table("reparam")
    worst = float(max(t["bc_max_diff"].max(), (t["I"] - t["I_transformed"]).abs().max(), (t["nmi"] - 1).abs().max(),
                      t["vi"].abs().max()))
    cka = float(t["cka"].max())
    return v.judged(worst <= 1e-9 and cka <= 0.95, worst, "<= 1e-9 (and CKA <= 0.95)", 1e-9,
                    f"{len(t)} runs: largest change of BC, I, NMI - 1 or VI {worst:.2g}; CKA(μ, transformed μ) "
                    + ", ".join(f"{c:.3f}" for c in t["cka"]))


S_NOISE = ("Scaling every σ by c in {1, 1.5, 2, 4} with μ fixed strictly decreases I for every channel with I >= 0.1 "
           "bits at c = 1, never increases it for any channel, and I <= log2 N always.")


@claims.add("noise-monotone", S_NOISE, REF + ", data-processing (added noise loses information)")
def judge_noise(res, v) -> Verdict:
    t = res.table("noise").sort_values(["run", "channel", "c"])
    n = res.config["probes"]
    strict_bad, rises, informative = [], 0, 0
    for (r, c), g in t.groupby(["run", "channel"]):
        d = np.diff(g["I"].to_numpy())
        rises += int((d > 1e-12).sum())
        if g["I"].iloc[0] >= 0.1:
            informative += 1
            if not (d < 0).all():
                strict_bad.append(f"run {r} {c}")
    top = float(t["I"].max())
    ok = not strict_bad and rises == 0 and top <= math.log2(n) + 1e-12 and informative > 0
    return v.judged(ok, len(strict_bad) + rises, "0 violations", None,
                    f"{informative} informative channels; not strictly decreasing: {strict_bad or 'none'}; rises "
                    f"anywhere: {rises}; largest I {top:.3f} <= log2 N = {math.log2(n):.3f}")


S_SHARE = ("Every pair of trained VAEs shares information: NMI(a, b) >= NMI(a, b with probe rows shuffled) + 0.3, "
           "with both runs unsaturated (I < 0.8 log2 N; otherwise the check is invalid, not passed).")


@claims.add("runs-share-information", S_SHARE, REF + " (threshold: the card's)")
def judge_share(res, v) -> Verdict:
    t = res.table("pairs")
    cap = 0.8 * math.log2(res.config["probes"])
    saturated = sorted(set(t.loc[t["I_a"] >= cap, "a"]) | set(t.loc[t["I_b"] >= cap, "b"]))
    gap = t["nmi"] - t["nmi_shuffled"]
    detail = (f"{len(t)} pairs: NMI {t['nmi'].min():.3f}-{t['nmi'].max():.3f}, shuffled "
              f"{t['nmi_shuffled'].min():.3f}-{t['nmi_shuffled'].max():.3f}, smallest gap {gap.min():.3f}; I per run "
              f"{t['I_a'].min():.2f}-{t['I_b'].max():.2f} bits (cap {cap:.2f})")
    if saturated:
        return v.undecided(f"invalid: runs {saturated} are saturated (I >= 0.8 log2 N), so NMI says little; "
                           + detail, measured=float(gap.min()))
    return v.judged(bool((gap >= 0.3).all()), float(gap.min()), ">= 0.3", 0.3, detail)


S_METRIC = ("Over all triples of runs the closed-form shape distance (Procrustes between centred mean matrices) obeys "
            "the triangle inequality with violation <= 1e-9, is symmetric to 1e-12 and zero (<= 1e-9) on identical "
            "inputs and an orthogonally rotated copy; the iterative stochastic shape distance satisfies the same to "
            "1e-4 relative (it is symmetric by construction: the solver keeps the smaller of a -> b and b -> a).")


def _axioms(t, tol_sym: float, tol_tri: float, relative: bool) -> tuple[float, float, float]:
    runs = sorted({x for x in t["a"] if x.isdigit()})
    d = {(r.a, r.b): r.d for r in t.itertuples()}
    scale = max(d.values()) if relative else 1.0
    sym = max((abs(d[a, b] - d[b, a]) for a in runs for b in runs if a < b), default=0.0) / scale
    tri = max((d[a, c] - d[a, b] - d[b, c] for a in runs for b in runs for c in runs if len({a, b, c}) == 3),
              default=-math.inf) / scale
    zero = max(abs(r.d) for r in t.itertuples() if r.a == r.b or "rotated" in r.b or "itself" in r.b) / scale
    return sym, tri, zero


@claims.add("metric-axioms", S_METRIC, "Williams et al. 2021 (shape metrics); Duong et al., ICLR 2023")
def judge_metric(res, v) -> Verdict:
    t = res.table("distances")
    cf = _axioms(t[t["method"] == "closed form"], 1e-12, 1e-9, relative=False)
    it = _axioms(t[t["method"] == "iterative"], 1e-4, 1e-4, relative=True)
    ok = cf[0] <= 1e-12 and cf[1] <= 1e-9 and cf[2] <= 1e-9 and max(it) <= 1e-4
    return v.judged(ok, max(cf[1], 0.0), "<= 1e-9 (triangle)", 1e-9,
                    f"closed form: asymmetry {cf[0]:.2g}, largest triangle excess {cf[1]:.2g}, zero cases "
                    f"{cf[2]:.2g}; iterative (relative): asymmetry {it[0]:.2g}, excess {it[1]:.2g}, zero {it[2]:.2g}")


S_FRAGMENTS = ("In the 50-run ensemble, >= 50% of active latent dimensions (I >= 0.5 bits) have a best-match "
               "NMI >= 0.8 "
               "in at least half of the other runs (repeated information fragments; threshold reconstructed).")


def fragment_share(t, runs: int) -> tuple[float, int]:
    """Share of active dimensions whose best match reaches NMI 0.8 in at least half of the other runs."""
    if t.empty:
        return 0.0, 0
    best = t.groupby(["run_a", "dim_a", "run_b"])["nmi"].max().reset_index()
    hits = best.assign(hit=best["nmi"] >= 0.8).groupby(["run_a", "dim_a"])["hit"].sum()
    return float((hits >= (runs - 1) / 2).mean()), len(hits)


@claims.add("fragments-recur", S_FRAGMENTS, REF + ", repeated information fragments")
def judge_fragments(res, v) -> Verdict:
    runs = min(res.config["runs"], res.config["fragment_runs"])
    share, active = fragment_share(res.table("dim_nmi"), runs)
    detail = f"{active} active dimensions over {runs} runs; {share:.0%} recur in >= half of the other runs"
    if res.config["runs"] < 50:
        return v.undecided("needs paper preset (50 runs); reduced measurement: " + detail, measured=share)
    return v.judged(share >= 0.5, share, ">= 0.5", 0.5, detail)
