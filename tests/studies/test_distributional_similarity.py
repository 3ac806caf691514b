"""distributional-similarity: the quick run, judges that fail on wrong results, and the paper path at toy size."""

from __future__ import annotations

import copy

import numpy as np
import pandas as pd
import pytest

from result_edits import edit_table as _edit
from result_edits import set_where
from theorylab.studies import distributional_similarity as ds


@pytest.fixture(scope="module")
def ds_quick(quick_run):
    return quick_run("distributional-similarity")


def _config(res, **values):
    out = copy.copy(res)
    out.config = {**res.config, **values}
    return out


def _evaluate(res, claim: str):
    """The claim's verdict as the runner gives it (declared departures applied; a NaN a judge reads fails)."""
    return next(c for c in ds.claims if c.id.endswith("/" + claim)).evaluate(res)


def test_quick_claims(ds_quick):
    for v in ds_quick.verdicts:
        if v.id.endswith("fragments-recur"):
            assert v.passed is None and "reduced measurement" in v.detail
        else:
            assert v.passed is True, f"{v.id}: {v.detail}"
    assert {"fingerprints", "nmi_matrix", "invariance", "noise_sweep"} <= {p.stem for p in ds_quick.figures}
    # β = 1 at quick is declared on every claim judged on the VAEs; the synthetic one has none
    for v in ds_quick.verdicts:
        on_vaes = not v.id.endswith("discrete-ground-truth")
        assert any(d.startswith("beta 1 (card 4)") for d in v.departures) == on_vaes
    assert not _evaluate(_config(ds_quick, beta=4.0), "identity").departures
    # every VAE channel (all latents and each dimension) and the 3 synthetic ones are compared with themselves
    t = ds_quick.table("identity")
    assert len(t) == 4 * 11 + 3 and (t["fp_err"] < 1e-12).all()
    # each order of a pair is its own descent (the kit's function keeps the smaller of the two)
    it = ds_quick.table("distances").query("method == 'iterative' and a != b and b.str.isdigit()")
    assert len(it) == 12


def test_judges_fail_on_wrong_results(ds_quick):
    r, j = ds_quick, ds.judges
    # a self term off by rounding-plus (e.g. BC instead of BC² in I_11)
    assert j.judge_identity(_edit(r, "identity", lambda f: f.assign(vi=f["vi"] + 1e-6))).passed is False
    # a joint term that adds information: NMI(a, b) no longer 0
    wrong = _edit(r, "synthetic", lambda f: set_where(f, lambda t: t["quantity"] == "NMI(a, b)", "measured", 0.01))
    assert j.judge_discrete(wrong).passed is False
    # a fingerprint that moves under the reparametrisation; or a CKA that does not (no negative control)
    assert j.judge_reparam(_edit(r, "reparam", lambda f: f.assign(bc_max_diff=1e-6))).passed is False
    assert j.judge_reparam(_edit(r, "reparam", lambda f: f.assign(cka=0.99))).passed is False
    # NMI or VI with another run that the reparametrisation changed
    assert j.judge_reparam(_edit(r, "pairs", lambda f: f.assign(nmi_transformed=f["nmi"] - 1e-6))).passed is False
    assert j.judge_reparam(_edit(r, "pairs", lambda f: f.assign(vi_transformed=f["vi"] + 1e-6))).passed is False
    # more noise, more information; or a rise far below any tolerance, in an uninformative channel
    rise = _edit(r, "noise", lambda f: f.assign(I=np.where((f["c"] == 4.0) & (f["channel"] == "all"), 50.0, f["I"])))
    assert j.judge_noise(rise).passed is False

    def tiny_rise(f):  # the least informative channel gains 1e-13 bits from c = 2 to c = 4
        low = f[f["c"] == 1.0].sort_values("I").iloc[0]
        sel = (f["run"] == low["run"]) & (f["channel"] == low["channel"])
        f.loc[sel & (f["c"] == 4.0), "I"] = f.loc[sel & (f["c"] == 2.0), "I"].iloc[0] + 1e-13
        return f

    tiny = j.judge_noise(_edit(r, "noise", tiny_rise))
    assert tiny.passed is False and "rises anywhere: ['run" in tiny.detail, tiny.detail
    # runs that share no more than shuffled probes do; saturated runs are invalid, not passed
    assert j.judge_share(_edit(r, "pairs", lambda f: f.assign(nmi_shuffled=f["nmi"] - 0.1))).passed is False
    sat = j.judge_share(_edit(r, "pairs", lambda f: f.assign(I_a=8.0)))
    assert sat.passed is None and "saturated" in sat.detail
    # a "distance" that breaks the triangle inequality, or is not zero on a rotated copy
    broken = _edit(
        r,
        "distances",
        lambda f: set_where(
            f, lambda t: (t["method"] == "closed form") & (t["a"] == "0") & (t["b"] == "1"), "d", 100.0
        ),
    )
    assert j.judge_metric(broken).passed is False
    rotated = _edit(r, "distances", lambda f: set_where(f, lambda t: t["b"] == "0 rotated", "d", 1e-6))
    assert j.judge_metric(rotated).passed is False


def test_identity_fails_on_a_wrong_fingerprint(ds_quick):
    """NMI(x, x) = 1 and VI = 0 hold for any kernel entering the self and joint terms alike, so the claim is judged on
    fingerprints shown to be the card's Bhattacharyya matrix, and on the estimates behind NMI and VI."""
    r, j = ds_quick, ds.judges
    assert j.judge_identity(r).passed is True
    # a fingerprint that is not the card's D_B (say 1/4 for 1/8 in the quadratic term), though NMI = 1, VI = 0
    assert j.judge_identity(_edit(r, "identity", lambda f: f.assign(fp_err=1e-3))).passed is False
    one = _edit(
        r, "identity", lambda f: set_where(f, lambda t: (t["run"] == 2) & (t["channel"] == "z3"), "fp_err", 1e-8)
    )
    assert "vae 2 z3" in j.judge_identity(one).detail and j.judge_identity(one).passed is False

    def bc_self_term(f):  # the self term with kernel BC instead of BC²: then NMI(x, x) = (2 I - I_joint) / I
        f = f.assign(I_self=f["I"], I_self_copy=f["I_copy"])
        return f.assign(
            nmi=(f["I"] + f["I_copy"] - f["I_joint"]) / np.sqrt(f["I"] * f["I_copy"]),
            vi=2 * f["I_joint"] - f["I"] - f["I_copy"],
        )

    assert j.judge_identity(_edit(r, "identity", bc_self_term)).passed is False
    # NMI = 1, VI = 0 written down, but not what the recorded estimates give
    assert j.judge_identity(_edit(r, "identity", lambda f: f.assign(I_joint=f["I_joint"] + 1e-3))).passed is False
    nan = _evaluate(_edit(r, "identity", lambda f: set_where(f, lambda t: t.index == 5, "nmi", np.nan)), "identity")
    assert nan.passed is False and "NaN" in nan.detail


def test_metric_axioms_see_an_asymmetric_estimate(ds_quick):
    """Each order of a pair is its own descent, so an estimate with d(a, b) != d(b, a) fails; a missing order too."""
    r, j = ds_quick, ds.judges
    assert j.judge_metric(r).passed is True
    it = r.table("distances").query("method == 'iterative'")
    scale, d12 = it["d"].max(), it.query("a == '1' and b == '2'")["d"].iloc[0]
    skew = _edit(
        r,
        "distances",
        lambda f: set_where(
            f, lambda t: (t["method"] == "iterative") & (t["a"] == "2") & (t["b"] == "1"), "d", d12 + 1e-3 * scale
        ),
    )
    verdict = j.judge_metric(skew)
    assert verdict.passed is False and "iterative asymmetry" in verdict.detail, verdict.detail
    gone = _edit(r, "distances", lambda f: f[~((f["method"] == "iterative") & (f["a"] == "3") & (f["b"] == "0"))])
    assert j.judge_metric(gone).passed is False
    turned = _edit(
        r,
        "distances",
        lambda f: set_where(f, lambda t: (t["method"] == "iterative") & (t["b"] == "0 rotated"), "d", 1e-3 * scale),
    )
    assert j.judge_metric(turned).passed is False


def _fragments(hit_share: float, runs: int = 50) -> pd.DataFrame:
    """A dim_nmi table over ``runs`` runs with one active dimension each: the first ``hit_share`` of the runs match
    each other at NMI 0.9, the rest match nothing above 0.5."""
    rows = []
    good = int(round(hit_share * runs))
    for a in range(runs):
        for b in range(runs):
            if a != b:
                rows.append((a, "z0", b, "z0", 0.9 if a < good and b < good else 0.5))
    return pd.DataFrame(rows, columns=["run_a", "dim_a", "run_b", "dim_b", "nmi"])


def test_fragments_judged_on_a_50_run_table(ds_quick):
    """With the card's 50 runs the claim is decided: dimensions recurring in >= half of the other runs pass, a table
    where too few recur fails (and the quick run's 4 runs stay not decided)."""
    j = ds.judges
    fifty = _config(ds_quick, runs=50, fragment_runs=50)
    right = j.judge_fragments(_edit(fifty, "dim_nmi", lambda _: _fragments(0.6)))
    assert right.passed is True and right.measured == pytest.approx(0.6)
    wrong = j.judge_fragments(_edit(fifty, "dim_nmi", lambda _: _fragments(0.3)))
    assert wrong.passed is False and wrong.measured == 0.0
    # no active dimension at all is a failure, not a pass
    assert j.judge_fragments(_edit(fifty, "dim_nmi", lambda t: t.iloc[:0])).passed is False
    nan = _evaluate(_edit(fifty, "dim_nmi", lambda _: _fragments(0.6).assign(nmi=np.nan)), "fragments-recur")
    assert nan.passed is False and "NaN" in nan.detail
    # 25 of 50 runs matched, as the card's paper preset does: a declared departure
    verdict = _evaluate(
        _edit(_config(ds_quick, runs=50, fragment_runs=25, beta=4.0), "dim_nmi", lambda _: _fragments(0.6, runs=25)),
        "fragments-recur",
    )
    assert verdict.passed is True and verdict.departures == (
        "fragment_runs 25 (card 50): the card's paper preset matches 25 models x 10 latents (250 fingerprints of "
        "300 x 300), not all 50 runs",
    )


def test_fragments_decided_at_the_cpu_preset(ds_quick):
    """The cpu preset (25 runs, all matched; distances over 4) decides the claim, with its reductions declared at cpu
    only; fewer matched runs stay not decided."""
    from theorylab.core.study import get_study

    st, j = get_study("distributional-similarity"), ds.judges
    cfg = st.make_config("cpu")
    assert (cfg.runs, cfg.fragment_runs, cfg.distance_runs, cfg.dataset) == (25, 25, 4, "digits")
    cpu = copy.copy(ds_quick)
    cpu.config, cpu.preset = cfg.model_dump(mode="json"), "cpu"
    right = _evaluate(_edit(cpu, "dim_nmi", lambda _: _fragments(0.6, runs=25)), "fragments-recur")
    assert right.passed is True and right.measured == pytest.approx(0.6)
    assert {d.split(":")[0] for d in right.departures} == {
        "beta 1 (card 4)",
        "fragment_runs 25 (card 50)",
        "runs 25 (card 50)",
        "dataset digits (card shapes2d)",
    }
    wrong = _evaluate(_edit(cpu, "dim_nmi", lambda _: _fragments(0.4, runs=25)), "fragments-recur")
    assert wrong.passed is False and wrong.measured == 0.0
    # matching fewer runs than the card's 25 is a reduced measurement, not a verdict
    few = _config(cpu, fragment_runs=10)
    assert j.judge_fragments(_edit(few, "dim_nmi", lambda _: _fragments(0.6, runs=10))).passed is None
    # the cpu departures do not apply to the paper preset's config
    paper = st.make_config("paper").model_dump(mode="json")
    assert not any(d.applies(paper, "paper") for d in j.CPU_FRAGMENTS)
    # seed 0 at cpu: 23% recur (runs share information as a whole, not axis by axis); known there, not at paper
    claim = next(c for c in st.claims if c.id.endswith("/fragments-recur"))
    assert claim.decided_by == "cpu" and claim.known.applies("cpu") and not claim.known.applies("paper")
    assert claim.declare(wrong, cfg.model_dump(mode="json"), "cpu").outcome == "known"
    assert claim.declare(wrong, paper, "paper").outcome == "failed"


def test_distances_over_the_first_runs(tmp_path):
    """``distance_runs`` limits the shape distances to the first runs' ordered pairs (the cpu preset's 4 of 25)."""
    from theorylab.core.runner import execute
    from theorylab.core.store import Store

    res = execute(
        "distributional-similarity",
        "quick",
        0,
        store=Store(tmp_path / "store"),
        device="cpu",
        overrides=dict(
            probes=40, runs=5, steps=5, width=16, latent_dim=3, batch=32, cell_repeats=2, shape_iters=2, distance_runs=3
        ),
    )
    it = res.table("distances").query("method == 'iterative' and b.str.isdigit()")
    assert set(it["a"]) | set(it["b"]) == {"0", "1", "2"} and len(it) == 6


def test_fragment_share_counts_recurring_dimensions():
    import pandas as pd

    # run 0's z0 matches a dimension of both other runs; its z1 only of one: with 3 runs half of the others is 1
    rows = [(0, "z0", 1, "z3", 0.9), (0, "z0", 2, "z1", 0.85), (0, "z1", 1, "z2", 0.5), (0, "z1", 2, "z0", 0.79)]
    t = pd.DataFrame(rows, columns=["run_a", "dim_a", "run_b", "dim_b", "nmi"])
    share, active = ds.judges.fragment_share(t, runs=3)
    assert active == 2 and share == 0.5


def test_paper_path_at_toy_size(tmp_path):
    """The paper preset's code path (shapes2d, more runs, the fragments judged) at toy size."""
    from theorylab.core.runner import execute
    from theorylab.core.store import Store

    res = execute(
        "distributional-similarity",
        "paper",
        0,
        store=Store(tmp_path / "store"),
        device="cpu",
        overrides=dict(
            shapes_size=8,
            shapes_train=256,
            probes=40,
            runs=3,
            steps=5,
            width=16,
            latent_dim=3,
            batch=32,
            cell_repeats=2,
            shape_iters=2,
        ),
    )
    assert {v.id.split("/")[-1] for v in res.verdicts} >= {"identity", "metric-axioms", "fragments-recur"}
    assert res.table("probe_labels")["label"].nunique() >= 2  # shapes sorted by their shape factor


def test_bad_config_fails_before_work():
    from theorylab.core.study import get_study

    with pytest.raises(Exception, match="noise_scales"):
        get_study("distributional-similarity").make_config("quick", noise_scales=(1.5, 2.0))
    with pytest.raises(Exception, match="local_images"):
        get_study("distributional-similarity").make_config("quick", local_images="/no/such/file.npz")
