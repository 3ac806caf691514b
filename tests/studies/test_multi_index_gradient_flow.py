"""multi-index-gradient-flow: the quick run, judges that fail on wrong results, and the paper path at toy size."""

from __future__ import annotations

import numpy as np
import pytest

import theorylab.studies.multi_index_gradient_flow as mig  # registers the study without an entry point
from result_edits import edit_table as _edit
from result_edits import set_where


@pytest.fixture(scope="module")
def mig_quick(quick_run):
    return quick_run("multi-index-gradient-flow")


def test_quick_claims(mig_quick):
    for v in mig_quick.verdicts:
        if v.id.endswith("finite-d-tracks-ode"):
            assert v.passed is None and "needs the cpu preset" in v.detail and "reduced measurement" in v.detail
        else:
            assert v.passed is True, f"{v.id}: {v.detail}"
    by_id = {v.id.split("/")[-1]: v for v in mig_quick.verdicts}
    # claims 4-5 are judged from the card's seeded M(0) (no start departure); the first exit is declared basis-free
    assert "gaussian M(0)" in by_id["staircase-log-time"].detail and not by_id["staircase-log-time"].departures
    assert "gaussian M(0)" in by_id["non-staircase-poly-time"].detail
    assert any("||M_1,:||" in d for d in by_id["non-staircase-poly-time"].departures)
    assert not any("r2_start" in d for d in by_id["non-staircase-poly-time"].departures)
    assert "2/10 seeds (1, 9)" in by_id["non-staircase-poly-time"].known
    assert {"escape_scaling", "saddle_to_saddle", "phi", "planted_vs_two_timescale"} <= {
        p.stem for p in mig_quick.figures
    }


def test_judges_fail_on_wrong_results(mig_quick):
    r, j = mig_quick, mig.judges
    # the transposed convention (A_(M1 M2)) or a quadrature error above 1e-10
    sg = _edit(r, "semigroup", lambda f: set_where(f, lambda t: t["check"] == "semigroup", "error", 1e-6))
    assert j.judge_semigroup(sg).passed is False
    blind = _edit(r, "semigroup", lambda f: f.assign(other_order_gap=0.0))  # a check that cannot tell the orders
    assert j.judge_semigroup(blind).passed is False
    # Phi missing a factor k! = 2 on the degree-2 term
    assert j.judge_loss(_edit(r, "loss_identity", lambda f: f.assign(phi=f["phi"] + 0.5))).passed is False
    # escape times off by a factor 2 (time normalisation), or a wrong exponent
    assert j.judge_escape(_edit(r, "escape", lambda f: f.assign(t_ode=2 * f["t_ode"]))).passed is False
    steeper = _edit(r, "escape", lambda f: f.assign(t_ode=f["t_integral"] * (f["d"] / 100) ** 0.05))
    assert j.judge_escape(steeper).passed is False
    # a staircase whose second plateau grows polynomially
    poly = _edit(r, "r2", lambda f: f.assign(t_second=np.where(f["link"] == "staircase", f["d"] / 10, f["t_second"])))
    assert j.judge_stair(poly).passed is False
    # a non-staircase second exit growing like d^2 (information exponent 3), or a different first exit
    quad = _edit(
        r, "r2", lambda f: f.assign(t_second=np.where(f["link"] == "non-staircase", f["d"] ** 2, f["t_second"]))
    )
    assert j.judge_nonstair(quad).passed is False
    first = _edit(
        r, "r2", lambda f: f.assign(t_first=np.where(f["link"] == "non-staircase", 1.1 * f["t_first"], f["t_first"]))
    )
    assert j.judge_nonstair(first).passed is False
    # Phi rising along a run, or a run that ends away from O(r)
    assert j.judge_mono(_edit(r, "r2", lambda f: f.assign(phi_max_rise=1e-8))).passed is False
    assert j.judge_mono(_edit(r, "escape", lambda f: f.assign(final_dist=0.01))).passed is False
    # a planted flow that recovers from m0 < 0, or a two-timescale flow that does not
    rec = _edit(r, "planted", lambda f: set_where(f, lambda t: (t["flow"] == "planted") & (t["m0"] < 0), "m_end", 1.0))
    assert j.judge_planted(rec).passed is False
    stuck = _edit(r, "planted", lambda f: set_where(f, lambda t: t["flow"] == "two-timescale", "m_end", -1e-4))
    assert j.judge_planted(stuck).passed is False


def _claim(short):
    return next(c for c in mig.judges.claims if c.id == f"multi-index-gradient-flow/{short}")


def _start(res, start):
    out = _edit(res, "r2", lambda f: f)
    out.config = {**res.config, "r2_start": start}
    return out


def test_r2_claims_are_judged_from_the_configured_start(mig_quick):
    """The judged rows are the r2_start ones: a wrong Gaussian-start table fails by default, and the same table
    judged from the identity start passes, carrying the declared start departure."""
    j, r = mig.judges, mig_quick
    gauss = lambda f: f["start"] == "gaussian"  # noqa: E731
    poly = _edit(
        r,
        "r2",
        lambda f: f.assign(t_second=np.where(gauss(f) & (f["link"] == "staircase"), f["d"] / 10, f["t_second"])),
    )
    assert j.judge_stair(poly).passed is False
    v = _claim("staircase-log-time").evaluate(_start(poly, "identity"))
    assert v.passed is True and any("r2_start identity (card gaussian)" in d for d in v.departures), v
    quad = _edit(
        r,
        "r2",
        lambda f: f.assign(t_second=np.where(gauss(f) & (f["link"] == "non-staircase"), f["d"] ** 2, f["t_second"])),
    )
    assert j.judge_nonstair(quad).passed is False
    v = _claim("non-staircase-poly-time").evaluate(_start(quad, "identity"))
    assert v.passed is True and any("r2_start identity" in d for d in v.departures), v


def test_non_staircase_known_failure_is_declared_not_hidden(mig_quick):
    """A draw like seed 9's (first-exit gap 12% at d = 1e2) fails the claim; the verdict carries the declaration."""
    far = _edit(
        mig_quick,
        "r2",
        lambda f: f.assign(
            t_first=np.where(
                (f["link"] == "non-staircase") & (f["start"] == "gaussian") & (f["d"] == 1e2),
                1.12 * f["t_first"],
                f["t_first"],
            )
        ),
    )
    v = _claim("non-staircase-poly-time").evaluate(far)
    assert v.passed is False and "gaps 0.12" in v.detail and "known failure on 2/10 seeds (1, 9)" in v.known, v


def test_nan_rows_fail_naming_the_row(mig_quick):
    r = mig_quick
    cases = [
        (
            "staircase-log-time",
            "r2",
            lambda f: set_where(
                f,
                lambda t: (t["link"] == "staircase") & (t["start"] == "gaussian") & (t["d"] == 1e4),
                "t_second",
                np.nan,
            ),
            "d = 10000",
        ),
        (
            "non-staircase-poly-time",
            "r2",
            lambda f: set_where(
                f,
                lambda t: (t["link"] == "staircase") & (t["start"] == "gaussian") & (t["d"] == 1e3),
                "t_first",
                np.nan,
            ),
            "d = 1000",
        ),
        (
            "semigroup",
            "semigroup",
            lambda f: set_where(f, lambda t: (t["check"] == "semigroup") & (t["point"] == 3), "error", np.nan),
            "point = 3",
        ),
        (
            "semigroup",
            "semigroup",
            lambda f: set_where(
                f, lambda t: (t["check"] == "semigroup") & (t["point"] == 2), "other_order_gap", np.nan
            ),
            "other_order_gap",
        ),
        (
            "escape-exponent",
            "escape",
            lambda f: set_where(f, lambda t: (t["k"] == 2) & (t["d"] == 1e3), "t_ode", np.nan),
            "k = 2, d = 1000",
        ),
        (
            "escape-exponent",
            "escape",
            lambda f: set_where(f, lambda t: (t["k"] == 3) & (t["d"] == 1e2), "t_integral", np.nan),
            "t_integral",
        ),
        (
            "monotone-and-global",
            "r2",
            lambda f: set_where(f, lambda t: (t["link"] == "staircase") & (t["d"] == 1e3), "phi_max_rise", np.nan),
            "phi_max_rise",
        ),
        (
            "monotone-and-global",
            "escape",
            lambda f: set_where(f, lambda t: (t["k"] == 1) & (t["d"] == 1e2), "final_dist", np.nan),
            "final_dist",
        ),
        (
            "planted-trap",
            "planted",
            lambda f: set_where(f, lambda t: (t["flow"] == "two-timescale") & (t["m0"] < 0), "m_end", np.nan),
            "two-timescale m_end",
        ),
        ("loss-identity", "loss_identity", lambda f: f.assign(estimate=np.nan), "estimate"),
        ("finite-d-tracks-ode", "tracking", lambda f: f.assign(dev_smin=np.nan), "dev_smin"),
    ]
    for short, table, edit, where in cases:
        v = _claim(short).evaluate(_edit(r, table, edit))
        assert v.passed is False and not v.error and where in v.detail, (short, v.detail)


def test_tracking_judge_decides_at_paper_size(mig_quick):
    j = mig.judges
    paper = _edit(mig_quick, "tracking", lambda f: f.assign(d=256, batch=200_000))
    assert j.judge_track(paper).passed is (
        bool(np.maximum(paper.table("tracking")["dev_m1"], paper.table("tracking")["dev_smin"]).max() <= 0.15)
    )
    far = _edit(paper, "tracking", lambda f: f.assign(dev_m1=0.3))
    assert j.judge_track(far).passed is False
    close = _edit(paper, "tracking", lambda f: f.assign(dev_m1=0.01, dev_smin=0.01, reached=True))
    assert j.judge_track(close).passed is True


def test_paper_path_at_toy_size(tmp_path):
    """The paper preset's code path (several d, n, both link fits, r = 1 and 2, seeds) at toy size."""
    from theorylab.core.runner import execute
    from theorylab.core.store import Store

    res = execute(
        "multi-index-gradient-flow",
        "paper",
        0,
        store=Store(tmp_path / "store"),
        device="cpu",
        overrides=dict(
            fd_dims=(8, 12),
            fd_batches=(300, 600),
            fd_seeds=2,
            fd_time=0.4,
            fd_lr=0.1,
            fd_n_features=20,
            fd_log_every=1,
            escape_dims=(1e2, 1e3),
            escape_orders=(1, 2),
            ode_rtol=1e-8,
            mc_n=20_000,
            semigroup_n=3,
            quad_nodes=6,
        ),
    )
    t = res.table("tracking")
    assert len(t) == 2 * 2 * 2 * 2 * 2 and set(t["features"]) == {"hermite", "random"}
    assert set(t["link"]) == {"staircase", "pure-he1"}
    assert {v.id.split("/")[-1] for v in res.verdicts} >= {"semigroup", "finite-d-tracks-ode"}


def test_bad_config_fails_before_work():
    from theorylab.core.study import get_study

    st = get_study("multi-index-gradient-flow")
    with pytest.raises(Exception, match="r2_dims"):
        st.make_config("quick", r2_dims=(1e3, 1e2, 1e4))
    with pytest.raises(Exception, match="fd_batches"):
        st.make_config("quick", fd_batches=(4,))
    with pytest.raises(Exception, match="escape_orders"):
        st.make_config("quick", escape_orders=(0,))
