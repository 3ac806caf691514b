"""multi-index-estimators and generative-leap: quick runs, and every judge fed a wrong result fails."""

from __future__ import annotations

import copy

import numpy as np
import pandas as pd
import pytest

from result_edits import edit_table as _edit
from result_edits import set_where as _set
from theorylab.core.result import Result
from theorylab.core.study import get_study
from theorylab.studies import generative_leap as leap
from theorylab.studies import multi_index_estimators as mie

# --- multi-index-estimators -------------------------------------------------------------------


def test_mie_quick_decides_its_quick_claims(mie_quick):
    verdicts = {v.id.split("/")[1]: v for v in mie_quick.verdicts}
    for name in (
        "battery",
        "failures-do-not-improve",
        "phd-noise-floor",
        "proportional-collapse-clipped",
        "population-matrices",
        "statsmodels-agreement",
        "nn-gd-row",
    ):
        assert verdicts[name].passed is True, verdicts[name].detail
    gap = verdicts["information-gap"]
    assert gap.passed is None and "decided by the cpu preset" in gap.detail and "needs the cpu preset" in gap.detail


def test_battery_fails_if_sir_sees_an_even_link(mie_quick):
    bad = _edit(
        mie_quick, "battery", lambda f: _set(f, lambda g: (g.link == "he2") & (g.estimator == "SIR"), "capture", 0.9)
    )
    assert mie.judges.judge_battery(bad).passed is False


def test_battery_fails_if_ade_sees_the_second_direction(mie_quick):
    bad = _edit(
        mie_quick,
        "battery",
        lambda f: _set(
            f, lambda g: (g.link == "z1+z1z2") & (g.estimator == "ADE") & (g.direction == 2), "capture", 0.5
        ),
    )
    assert mie.judges.judge_battery(bad).passed is False


def test_failures_claim_fails_when_a_zero_cell_improves(mie_quick):
    bad = _edit(
        mie_quick,
        "battery",
        lambda f: _set(f, lambda g: (g.link == "z1z2") & (g.estimator == "SIR") & (g.alpha == 50), "capture", 0.4),
    )
    assert mie.judges.judge_failures(bad).passed is False


def test_failures_claim_fails_when_phd_on_d_rises_above_its_noise_floor(mie_quick):
    # A pHd that sees u1 on He3 (a sign bug) climbs to 1, above the blind noise floor, even if its gain is small.
    bad = _edit(
        mie_quick, "battery", lambda f: _set(f, lambda g: (g.link == "he3") & (g.estimator == "pHd"), "capture", 0.9)
    )
    verdict = mie.judges.judge_floor(bad)
    assert verdict.passed is False and "noise floor" in verdict.detail


def test_collapse_fails_without_proportional_scaling(mie_quick):
    # Pretend capture depends on n/d^1.5 instead: shift the largest d's curve down.
    bad = _edit(mie_quick, "collapse", lambda f: _set(f, lambda g: g.d == g.d.max(), "capture", 0.3))
    assert mie.judges.judge_collapse(bad).passed is False
    assert mie.judges.judge_collapse_clipped(bad).passed is False
    clipped = _edit(
        mie_quick,
        "collapse",
        lambda f: _set(f, lambda g: (g.estimator == "pHd-clip") & (g.d == g.d.max()) & (g.alpha == 5), "capture", 0.1),
    )
    assert mie.judges.judge_collapse_clipped(clipped).passed is False
    # The card's claim is on raw pHd; the clipped variant (ours) does not read it.
    raw = _edit(
        mie_quick, "collapse", lambda f: _set(f, lambda g: (g.estimator == "pHd") & (g.d == g.d.max()), "capture", 0.1)
    )
    assert mie.judges.judge_collapse(raw).passed is False
    assert mie.judges.judge_collapse_clipped(raw).passed is True


def _collapse_table(raw_drift: float = 0.0) -> Result:
    """Seed-mean captures of pHd (raw and clipped) on B and SIR on D that depend on n/d alone, raw pHd drifting down by
    ``raw_drift`` per doubling of d."""
    cfg = get_study("multi-index-estimators").make_config("quick").model_dump()
    rows = [
        dict(
            link=link,
            estimator=est,
            d=d,
            alpha=a,
            seed=s,
            capture=a / (a + 2.0) - (raw_drift * np.log2(d / 50) if est == "pHd" else 0.0),
        )
        for link, est in (("he2", "pHd"), ("he2", "pHd-clip"), ("he3", "SIR"))
        for d in (50, 100, 200)
        for a in (2.0, 5.0, 10.0, 20.0)
        for s in range(2)
    ]
    return Result("multi-index-estimators", "x", "quick", 0, "done", cfg, tables={"collapse": pd.DataFrame(rows)})


def test_collapse_judges_on_synthetic_tables():
    flat = _collapse_table()
    assert mie.judges.judge_collapse(flat).passed is True, mie.judges.judge_collapse(flat).detail
    assert mie.judges.judge_collapse_clipped(flat).passed is True
    # raw pHd falling 0.1 per doubling of d: 0.2 across d = 50..200, the card's form fails; the clipped variant holds
    drift = _collapse_table(0.1)
    assert mie.judges.judge_collapse(drift).passed is False
    assert mie.judges.judge_collapse_clipped(drift).passed is True
    # a NaN capture fails the claim naming its row (pandas' mean would skip it)
    nan = _edit(
        flat,
        "collapse",
        lambda f: _set(
            f, lambda g: (g.estimator == "SIR") & (g.d == 100) & (g.alpha == 5) & (g.seed == 1), "capture", np.nan
        ),
    )
    v = next(c for c in get_study("multi-index-estimators").claims if c.id.endswith("/proportional-collapse")).evaluate(
        nan
    )
    assert v.passed is False and "NaN" in v.detail and "d = 100" in v.detail, v.detail


def test_nn_row_fails_if_untrained_or_born_aligned(mie_quick):
    slow = _edit(mie_quick, "nn_row", lambda f: _set(f, lambda g: g.alpha > 0, "capture", 0.5))
    assert mie.judges.judge_nn(slow).passed is False
    born = _edit(mie_quick, "nn_row", lambda f: _set(f, lambda g: g.alpha == 0, "capture", 0.9))
    assert mie.judges.judge_nn(born).passed is False


def test_skipped_parts_are_not_decided_with_a_reason(mie_quick, leap_quick):
    from theorylab.core.study import get_study

    def verdict(result, claim_id):
        claim = next(c for c in get_study(result.study).claims if c.id == claim_id)
        return claim.evaluate(result)

    no_nn = copy.copy(mie_quick)
    no_nn.tables = {k: v for k, v in mie_quick.tables.items() if k != "nn_row"}
    v = verdict(no_nn, "multi-index-estimators/nn-gd-row")
    assert v.passed is None and not v.error and v.detail.startswith("not decided:") and "nn_alphas" in v.detail
    no5 = _edit(mie_quick, "collapse", lambda f: f[f.alpha != 5])
    v = verdict(no5, "multi-index-estimators/proportional-collapse")
    assert v.passed is None and not v.error and "collapse_alphas" in v.detail
    no20 = _edit(leap_quick, "order2", lambda f: f[f.alpha != 20])
    v = verdict(no20, "generative-leap/m3-linear")
    assert v.passed is None and not v.error and "monomial_alphas" in v.detail
    no8 = _edit(leap_quick, "parity", lambda f: f[f.c != 8])
    for claim_id in ("generative-leap/u-stat-collapse", "generative-leap/u-beats-v"):
        v = verdict(no8, claim_id)
        assert v.passed is None and not v.error and "parity_c" in v.detail, v.detail


def test_generative_leap_builds_every_card_claim():
    study = get_study("generative-leap")
    assert not study.not_built
    ids = {c.id for c in study.claims}
    assert {"generative-leap/sequential-leap", "generative-leap/exponents"} <= ids


def test_sequential_leap_fails_on_a_leaking_control_a_seeing_single_stage_or_a_wrong_stage(leap_quick):
    assert leap.judges.judge_staged(leap_quick).passed is True
    top = leap_quick.table("staged")["alpha"].max()
    found = _edit(
        leap_quick, "staged", lambda f: _set(f, lambda g: (g.role == "control") & (g.alpha == top), "overlap", 0.9)
    )
    assert leap.judges.judge_staged(found).passed is False
    sees = _edit(
        leap_quick,
        "staged",
        lambda f: _set(f, lambda g: (g.role == "staged") & (g.alpha == top), "single_stage_z2", 0.8),
    )
    assert leap.judges.judge_staged(sees).passed is False
    # both directions at once (one stage of order 2) is not the two-stage leap
    one_stage = _edit(
        leap_quick,
        "staged",
        lambda f: _set(
            f, lambda g: (g.role == "staged") & (g.alpha == top) & (g.d == g.d.max()) & (g.seed < 5), "stages", "k=2:2"
        ),
    )
    assert leap.judges.judge_staged(one_stage).passed is False
    # n ∝ d^1.5 would show as overlaps falling with d at fixed n/d
    falls = _edit(
        leap_quick,
        "staged",
        lambda f: _set(f, lambda g: (g.role == "staged") & (g.alpha == top) & (g.d == g.d.max()), "overlap", 0.8),
    )
    assert leap.judges.judge_staged(falls).passed is False
    moved = _edit(
        leap_quick,
        "staged_moments",
        lambda f: _set(f, lambda g: g.moment.str.startswith("E[y (z2^2"), "measured", 0.05),
    )
    assert leap.judges.judge_staged(moved).passed is False


def test_population_claim_fails_on_a_wrong_hessian_or_a_leaking_sir(mie_quick):
    bad = _edit(
        mie_quick,
        "population",
        lambda f: _set(f, lambda g: (g.method == "pHd") & (g.link == "he2") & (g.entry == "0,0"), "measured", 1.0),
    )
    assert mie.judges.judge_population(bad).passed is False
    leak = _edit(
        mie_quick, "population", lambda f: _set(f, lambda g: (g.method == "SIR") & (g.link == "z1z2"), "measured", 0.05)
    )
    assert mie.judges.judge_population(leak).passed is False


def test_statsmodels_claim_fails_on_a_different_subspace(mie_quick):
    bad = _edit(mie_quick, "statsmodels", lambda f: _set(f, lambda g: g.method == "SAVE", "max_angle", 1e-3))
    assert mie.judges.judge_statsmodels(bad).passed is False


def test_paper_judges_on_synthetic_tables():
    cfg = get_study("multi-index-estimators").make_config("paper").model_dump()
    rows = []
    for d in (50, 100, 200, 400):
        for alpha in (1, 2, 5, 10, 20, 50, 100):
            n = alpha * d
            rows += [
                dict(d=d, alpha=alpha, seed=0, estimator="ADE", capture=0.05),
                dict(d=d, alpha=alpha, seed=0, estimator="pHd", capture=0.2),
            ]
            # crosses at n = 5 d
            rows.append(dict(d=d, alpha=alpha, seed=0, estimator="SIR", capture=1 / (1 + (5 * d / n) ** 2)))
            # n ∝ d^1.6
            rows.append(
                dict(d=d, alpha=alpha, seed=0, estimator="order-3 V-stat", capture=1 / (1 + (0.5 * d**1.6 / n) ** 2))
            )
    gap = pd.DataFrame(rows)
    nn = pd.DataFrame(
        dict(alpha=[0, 25, 50, 100, 200], n=[0] * 5, capture=[0.01, 0.0, 0.1, 0.85, 0.95], loss=[1.0] * 5)
    )
    res = Result("multi-index-estimators", "x", "paper", 0, "done", cfg, tables={"gap": gap, "nn_row": nn})
    assert mie.judges.judge_gap(res).passed is True, mie.judges.judge_gap(res).detail
    assert mie.judges.judge_nn(res).passed is True
    blind = _edit(res, "gap", lambda f: _set(f, lambda g: (g.estimator == "pHd") & (g.alpha == 100), "capture", 0.7))
    assert mie.judges.judge_gap(blind).passed is False
    slow = _edit(res, "nn_row", lambda f: f.assign(capture=0.3))
    assert mie.judges.judge_nn(slow).passed is False


# --- generative-leap ------------------------------------------------------------------------------


def test_leap_quick_decides_its_quick_claims(leap_quick):
    verdicts = {v.id.split("/")[1]: v for v in leap_quick.verdicts}
    for name in (
        "p3-moments",
        "m3-moment",
        "leap-values",
        "u-stat-collapse",
        "order2-blind",
        "m3-linear-above-threshold",
        "u-beats-v",
        "sequential-leap",
    ):
        assert verdicts[name].passed is True, verdicts[name].detail
    # the card's form (n/d 10, 20, 40) straddles the order-2 threshold: declared to fail on every seed
    assert verdicts["m3-linear"].outcome == "known", verdicts["m3-linear"].detail
    exponents = verdicts["exponents"]
    assert exponents.passed is None and "decided by the cpu preset" in exponents.detail, exponents.detail


def test_moment_claims_fail_on_wrong_values(leap_quick):
    bad = _edit(leap_quick, "moments", lambda f: _set(f, lambda g: g.moment == "E[y z1 z2]", "measured", 0.01))
    assert leap.judges.judge_p3_moments(bad).passed is False
    bad = _edit(leap_quick, "moments", lambda f: _set(f, lambda g: g.link == "z1z2z3", "measured", 1.0))
    assert leap.judges.judge_m3_moment(bad).passed is False


def test_leap_claim_fails_if_the_parity_leaks_at_order_two(leap_quick):
    bad = _edit(leap_quick, "leaps", lambda f: _set(f, lambda g: g.link == "parity3", "leap", 2))
    assert leap.judges.judge_leaps(bad).passed is False


def test_collapse_and_u_beats_v_fail_on_wrong_curves(leap_quick):
    bad = _edit(
        leap_quick,
        "parity",
        lambda f: _set(f, lambda g: (g.statistic == "U") & (g.c == 8) & (g.d == g.d.max()), "overlap", 0.2),
    )
    assert leap.judges.judge_u_collapse(bad).passed is False
    assert leap.judges.judge_u_beats_v(bad).passed is False
    easy = _edit(leap_quick, "parity", lambda f: _set(f, lambda g: (g.statistic == "U") & (g.c == 2), "overlap", 0.9))
    assert leap.judges.judge_u_collapse(easy).passed is False


def test_order2_claims_fail_on_wrong_overlaps(leap_quick):
    seen = _edit(leap_quick, "order2", lambda f: _set(f, lambda g: g.link == "parity3", "overlap", 0.6))
    assert leap.judges.judge_order2_blind(seen).passed is False
    slow = _edit(
        leap_quick,
        "order2",
        lambda f: _set(f, lambda g: (g.link == "z1z2z3") & (g.alpha == 40) & (g.d == g.d.max()), "overlap", 0.6),
    )
    assert leap.judges.judge_m3_linear(slow).passed is False
    assert leap.judges.judge_m3_above(slow).passed is False
    spread = _edit(
        leap_quick,
        "order2",
        lambda f: _set(f, lambda g: (g.link == "z1z2z3") & (g.alpha == 20) & (g.d == g.d.max()), "overlap", 0.6),
    )
    assert leap.judges.judge_m3_above(spread).passed is False
    # n/d = 10: judged by the card's claim (its overlaps fall with d below the spectral threshold: a known failure),
    # reported by ours; flat at 10, the card's claim holds and reads "passed unexpectedly"
    below = _edit(
        leap_quick,
        "order2",
        lambda f: _set(f, lambda g: (g.link == "z1z2z3") & (g.alpha == 10) & (g.d == g.d.max()), "overlap", 0.0),
    )
    assert leap.judges.judge_m3_above(below).passed is True
    assert leap.judges.judge_m3_linear(below).passed is False
    from theorylab.core.study import get_study as _get

    card = next(c for c in _get("generative-leap").claims if c.id == "generative-leap/m3-linear")
    assert card.evaluate(leap_quick).outcome == "known"
    flat = _edit(
        leap_quick,
        "order2",
        lambda f: f.assign(overlap=f["overlap"].where(~((f["link"] == "z1z2z3") & (f["alpha"] == 10.0)), 0.5)),
    )
    assert card.evaluate(flat).outcome == "unexpected"


def test_exponent_judge_on_synthetic_crossings():
    cfg = get_study("generative-leap").make_config("paper").model_dump()
    rows = []
    for d in (32, 64, 128, 256):
        for c in (1, 2, 4, 6, 8, 12, 16, 24, 32, 64):
            n = int(c * d**1.5)
            rows.append(
                dict(d=d, c=c, n=n, seed=0, statistic="U", overlap=float(np.clip(np.log(c / 2) / np.log(8), 0, 1)))
            )
            rows.append(
                dict(
                    d=d,
                    c=c,
                    n=n,
                    seed=0,
                    statistic="V",
                    overlap=float(np.clip(np.log(n / (0.2 * d**2)) / np.log(8), 0, 1)),
                )
            )

    def p4(power):  # the order-4 U-statistic crossing 0.5 at n = 3.5 * 256 (d/16)^power
        return pd.DataFrame(
            [
                dict(
                    d=d,
                    c=c,
                    n=int(c * d**2),
                    seed=0,
                    statistic=s,
                    overlap=float(np.clip(0.5 + np.log(c * d**2 / (3.5 * 256 * (d / 16) ** power)) / np.log(64), 0, 1))
                    if s == "U"
                    else 0.1,
                )
                for d in (16, 24, 32, 48)
                for c in (1, 2, 3, 4, 6, 8)
                for s in ("U", "V")
            ]
        )

    res = Result(
        "generative-leap", "x", "paper", 0, "done", cfg, tables={"parity": pd.DataFrame(rows), "parity4": p4(2.0)}
    )
    verdict = leap.judges.judge_exponents(res)
    assert verdict.passed is True, verdict.detail
    assert "4-parity U (order 4): 2.00" in verdict.detail, verdict.detail
    flat = _edit(
        res,
        "parity",
        lambda f: f.assign(
            overlap=np.where(f.statistic == "V", f.overlap, np.clip(np.log(f.n / (0.1 * f.d**2)) / np.log(8), 0, 1))
        ),
    )
    assert leap.judges.judge_exponents(flat).passed is False
    steep = copy.copy(res)
    steep.tables = {**res.tables, "parity4": p4(2.4)}
    v = leap.judges.judge_exponents(steep)
    assert v.passed is False and "(need 2.0 ± 0.25: FAILS)" in v.detail, v.detail
    without = copy.copy(res)
    without.tables = {k: t for k, t in res.tables.items() if k != "parity4"}
    undecided = leap.judges.judge_exponents(without)  # a judge says "not decided" by returning it, not raising
    assert undecided.passed is None and "4-parity" in undecided.detail, undecided.detail


@pytest.mark.parametrize(
    "slug, overrides, field",
    [
        ("generative-leap", dict(parity_dims=(2,)), "parity_dims"),
        ("multi-index-estimators", dict(alphas=(20.0,)), "alphas"),
    ],
)
def test_bad_configs(slug, overrides, field):
    from theorylab.core.config import ConfigError

    with pytest.raises(ConfigError, match=field):
        get_study(slug).make_config("quick", **overrides)


def test_sequential_claim_fails_on_a_wrong_order_or_a_missed_direction(leap_quick):
    assert leap.judges.judge_sequential(leap_quick).passed is True
    wrong = _edit(
        leap_quick, "sequential", lambda f: _set(f, lambda g: (g.link == "parity3") & (g.seed == 0), "leap", 2)
    )
    assert leap.judges.judge_sequential(wrong).passed is False
    missed = _edit(
        leap_quick, "sequential", lambda f: _set(f, lambda g: (g.link == "z1z2z3") & (g.seed == 1), "found", 2)
    )
    assert leap.judges.judge_sequential(missed).passed is False


def test_leap_nan_overlaps_fail_naming_the_row_and_m3_departures(leap_quick):
    claims = {c.id.split("/")[1]: c for c in get_study("generative-leap").claims}
    bad = _edit(
        leap_quick,
        "order2",
        lambda f: f.assign(overlap=f["overlap"].where(~((f["link"] == "z1z2z3") & (f["d"] == 64) & (f["seed"] == 3)))),
    )
    v = claims["m3-linear"].evaluate(bad)
    assert v.passed is False and "d = 64" in v.detail and "seed = 3" in v.detail, v.detail
    said = claims["m3-linear"].evaluate(leap_quick).departures
    assert len(said) == 1 and said[0].startswith("monomial_seeds 32 (card 3)"), said
    as_card = claims["m3-linear"].declare(
        claims["m3-linear"].judge(leap_quick), {**leap_quick.config, "monomial_seeds": 3}, "quick"
    )
    assert as_card.departures == ()
