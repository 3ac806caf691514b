"""mpnn-algorithms: the quick run, and judges that fail on wrong results."""

from __future__ import annotations

import copy
import warnings

import pytest

# torch_geometric is in the `test` extra: without it this module fails to import (loudly), so the
# judge tests below can never be skipped in silence (the mpnn_quick fixture would skip them).
# Its import emits torch.jit deprecation noise we do not control, hence the filter.
with warnings.catch_warnings():
    warnings.simplefilter("ignore", DeprecationWarning)
    import torch_geometric  # noqa: F401
from result_edits import assert_undecided, set_where
from result_edits import edit_table as _edit
from theorylab.studies import mpnn_algorithms as mpnn


def test_quick_claims(mpnn_quick):
    for v in mpnn_quick.verdicts:
        if v.id.endswith("mst-minimax"):  # off at quick (CPU budget): the verdict says so and where it is measured
            assert (
                v.passed is None
                and not v.error
                and v.detail.startswith(
                    "not decided: decided by the mst-cpu preset on a CPU; this config trains no minimax models"
                )
            ), v.detail
            assert "--preset mst-cpu" in v.detail
        else:
            assert v.passed is True, f"{v.id}: {v.detail}"
    assert {"error_vs_n", "learned_f", "knapsack_vs_items", "wl_pair"} <= {p.stem for p in mpnn_quick.figures}
    sizes = mpnn_quick.table("size_generalization")
    assert set(sizes["n"]) == {16, 64, 256, 1024} and set(sizes["aggr"]) == {"min", "sum", "mean"}


def _min_reg(t):
    return (t["aggr"] == "min") & (t["eta"] == 1e-3)


def test_judges_fail_on_wrong_results(mpnn_quick):
    r = mpnn_quick
    assert (
        mpnn.judges.judge_reference(
            _edit(r, "references", lambda f: set_where(f, lambda t: t.index == 3, "error", 1e-6))
        ).passed
        is False
    )
    # one seed off by 2% at n = 1024, or an error that grows tenfold with n (below 1e-2 but not flat)
    big = _edit(
        r,
        "size_generalization",
        lambda f: set_where(f, lambda t: _min_reg(t) & (t["n"] == 1024) & (t["seed"] == 1), "mean_rel_error", 2e-2),
    )
    assert mpnn.judges.judge_size(big).passed is False
    growing = _edit(
        r,
        "size_generalization",
        lambda f: f.assign(mean_rel_error=f["mean_rel_error"].where(~_min_reg(f), 1e-4 * f["n"] / 16 * 1.5)),
    )
    assert mpnn.judges.judge_size(growing).passed is False
    assert (
        mpnn.judges.judge_learned_f(
            _edit(r, "learned_function", lambda f: set_where(f, lambda t: t["eta"] == 1e-3, "max_rel_error", 0.05))
        ).passed
        is False
    )
    # a "sum" model that secretly takes the min would score like the min model
    assert (
        mpnn.judges.judge_aggregation(
            _edit(
                r, "size_generalization", lambda f: set_where(f, lambda t: t["aggr"] == "sum", "mean_rel_error", 1e-5)
            )
        ).passed
        is False
    )
    assert (
        mpnn.judges.judge_l1(
            _edit(r, "learned_function", lambda f: set_where(f, lambda t: t["eta"] == 1e-3, "l1", 300.0))
        ).passed
        is False
    )
    # node ids leaking in would make the node MPNN tell the graphs apart
    assert (
        mpnn.judges.judge_wl(
            _edit(r, "wl_pair", lambda f: set_where(f, lambda t: t["variant"] == "node MPNN", "embedding_gap", 0.3))
        ).passed
        is False
    )
    # the pair-based MPNN (ours) must separate the graphs; the node MPNN claim does not read it
    no_pair = _edit(
        r, "wl_pair", lambda f: set_where(f, lambda t: t["variant"].str.startswith("pair"), "embedding_gap", 0.0)
    )
    assert mpnn.judges.judge_pair(no_pair).passed is False
    assert mpnn.judges.judge_wl(no_pair).passed is True
    # a leak control that no longer detects node ids: the card's "a model that leaks node ids fails" is not shown
    assert (
        mpnn.judges.judge_wl(
            _edit(
                r, "wl_pair", lambda f: set_where(f, lambda t: t["variant"].str.contains("leak"), "embedding_gap", 0.0)
            )
        ).passed
        is False
    )
    assert (
        mpnn.judges.judge_knapsack(
            _edit(r, "knapsack", lambda f: set_where(f, lambda t: t["seed"] == 1, "rel_error", 0.05))
        ).passed
        is False
    )


def _sizes(errors: dict[str, float], nodes=(16, 64, 256, 1024, 4096)):
    """A size-generalization table: every (aggregation, n) at the given mean relative error."""
    import pandas as pd

    from theorylab.core.result import Result
    from theorylab.core.study import get_study

    rows = [
        dict(member=i, family="er", n=n, aggr=a, task="bf", eta=1e-3, loss="multiplicative", seed=0, mean_rel_error=e)
        for i, (a, e) in enumerate(errors.items())
        for n in nodes
    ]
    cfg = get_study("mpnn-algorithms").make_config("paper").model_dump()
    return Result("mpnn-algorithms", "x", "paper", 0, "done", cfg, tables={"size_generalization": pd.DataFrame(rows)})


def test_aggregation_control_is_judged_at_the_cards_n():
    import numpy as np

    from theorylab.core.study import get_study

    claim = next(c for c in get_study("mpnn-algorithms").claims if c.id.endswith("/aggregation-control"))
    res = _sizes({"min": 1e-5, "sum": 0.5, "mean": 0.4})
    v = claim.evaluate(res)
    assert v.passed is True and "n = 1024" in v.detail and not any("largest test size" in d for d in v.departures)
    # a sum baseline that only fails beyond n = 1024 does not show the card's claim
    late = _edit(
        res,
        "size_generalization",
        lambda f: f.assign(mean_rel_error=np.where((f["aggr"] == "sum") & (f["n"] <= 1024), 0.05, f["mean_rel_error"])),
    )
    assert claim.evaluate(late).passed is False
    # without n = 1024 the largest size is judged, and the verdict says so
    v = claim.evaluate(_sizes({"min": 1e-5, "sum": 0.5, "mean": 0.4}, nodes=(16, 64, 256)))
    assert v.passed is True and any("card: n = 1024" in d for d in v.departures), v.departures
    # a NaN baseline row fails the claim and names it (pandas' min would skip it)
    nan = _edit(
        res,
        "size_generalization",
        lambda f: set_where(f, lambda t: (t["aggr"] == "mean") & (t["n"] == 1024), "mean_rel_error", np.nan),
    )
    v = claim.evaluate(nan)
    assert v.passed is False and "NaN" in v.detail and "mean" in v.detail, v.detail


def test_quick_declares_the_recipe_and_the_restart_rule():
    from theorylab.core.study import get_study

    st = get_study("mpnn-algorithms")
    cfg = st.make_config("quick").model_dump()
    claims = {c.id.split("/")[1]: c for c in st.claims}
    knap = [d.describe(cfg) for d in claims["knapsack-extrapolation"].departures if d.applies(cfg, "quick")]
    assert any(d.startswith("knap_restarts 2 (card 1): restart rule") for d in knap), knap
    bf = [d.describe(cfg) for d in claims["size-generalization"].departures if d.applies(cfg, "quick")]
    assert any(d.startswith("lr 0.01 (card 0.001)") for d in bf) and any(
        d.startswith("steps 1500 (card 5000)") for d in bf
    )
    # the card's recipe set back: no recipe departure
    card = {**cfg, "lr": 1e-3, "schedule": "constant", "steps": 5000, "losses": ["mse"]}
    assert not [d for d in claims["size-generalization"].departures if d.applies(card, "quick")]


def test_bad_config_fails_before_work():
    from theorylab.core.study import all_studies

    with pytest.raises(ValueError, match="knap_items"):
        all_studies()["mpnn-algorithms"].make_config("quick", knap_items=0)
    with pytest.raises(ValueError, match="regulariser"):
        all_studies()["mpnn-algorithms"].make_config("quick", regulariser="l2")


@pytest.fixture(scope="module")
def mpnn_mst(mpnn_quick):
    """The quick result plus the minimax part of preset mst-cpu (its tables and config), built from the
    study's own pieces: the quick preset trains no minimax models."""
    from theorylab.core.context import RunContext
    from theorylab.core.study import all_studies

    cfg = all_studies()["mpnn-algorithms"].make_config("mst-cpu")
    ctx = RunContext(0)
    members = mpnn._members(cfg)
    group = members[members["task"] == "minimax"]
    net, log = mpnn._train(cfg, ctx, group, steps=cfg.mst_steps)
    net, chosen = mpnn._select_minimax(cfg, ctx, net, group, log)
    mpnn._mst(cfg, ctx, net, chosen)
    res = copy.copy(mpnn_quick)
    res.tables = {**mpnn_quick.tables, "mst": ctx.tables["mst"], "minimax_selection": ctx.tables["minimax_selection"]}
    res.preset = "mst-cpu"
    res.config = dict(
        mpnn_quick.config,
        mst=True,
        mst_seeds=cfg.mst_seeds,
        mst_restarts=cfg.mst_restarts,
        mst_steps=cfg.mst_steps,
        mst_judged_nodes=cfg.mst_judged_nodes,
    )
    return res


def test_mst_cpu_decides_the_claim(mpnn_mst):
    """mst-cpu judges at its largest test size (64 nodes, declared); at run seed 0 one of its two minimax models
    misses F1 0.99 (the declared known failure), but a pass elsewhere is a pass."""
    v = next(c for c in mpnn.judges.claims if c.id.endswith("mst-minimax")).evaluate(mpnn_mst)
    assert v.outcome in ("passed", "known") and "mean F1 by (seed, n)" in v.detail, (v.outcome, v.detail)
    assert any(d.startswith("mst_judged_nodes 64") for d in v.departures), v.departures


def _judged_at(result, n: int):
    res = copy.copy(result)
    res.config = dict(result.config, mst_judged_nodes=n)
    return res


def test_mst_judge_fails_on_wrong_results(mpnn_mst):
    assert_undecided(lambda: mpnn.judges.judge_mst(_judged_at(mpnn_mst, 256)), "at reduced size it measures")
    # judged at the sizes the reduced run has: an all-correct classification passes, wrong ones fail
    right = _judged_at(_edit(mpnn_mst, "mst", lambda f: f.assign(f1=1.0, weight_rel_error=0.0)), 16)
    assert mpnn.judges.judge_mst(right).passed is True
    r = right
    # one seed misclassifies a fifth of the edges at n = 64
    assert (
        mpnn.judges.judge_mst(
            _edit(r, "mst", lambda f: set_where(f, lambda t: (t["seed"] == 1) & (t["n"] == 64), "f1", 0.8))
        ).passed
        is False
    )
    # right F1 on average but the predicted forest weighs 5% too much on one size
    assert (
        mpnn.judges.judge_mst(
            _edit(r, "mst", lambda f: set_where(f, lambda t: t["n"] == 16, "weight_rel_error", 0.05))
        ).passed
        is False
    )
    # a tiny F1 shortfall (0.985) is still a failure: the threshold is 0.99
    assert mpnn.judges.judge_mst(_edit(r, "mst", lambda f: f.assign(f1=0.985))).passed is False


def _without(result, *tables):
    res = copy.copy(result)
    res.tables = {k: v for k, v in result.tables.items() if k not in tables}
    return res


def test_skipped_parts_are_undecided_not_errors(mpnn_quick):
    from theorylab.core.study import all_studies

    claims = {c.id: c for c in all_studies()["mpnn-algorithms"].claims}
    no_mst = mpnn_quick
    assert_undecided(lambda: mpnn.judges.judge_mst(no_mst), "mst=false")
    v = claims["mpnn-algorithms/mst-minimax"].evaluate(no_mst)
    assert v.passed is None and not v.error and v.detail.startswith("not decided:")
    no_reg = _edit(mpnn_quick, "size_generalization", lambda f: f[f["eta"] != 1e-3])
    assert_undecided(lambda: mpnn.judges.judge_size(no_reg), "η = 1e-3")
    assert_undecided(
        lambda: mpnn.judges.judge_aggregation(
            _edit(mpnn_quick, "size_generalization", lambda f: f[f["aggr"] == "min"])
        ),
        "controls",
    )
    assert_undecided(
        lambda: mpnn.judges.judge_knapsack(_edit(mpnn_quick, "knapsack", lambda f: f[f["items"] < 50])),
        "the claim is at 50",
    )
    # a table the run always writes is an error when missing, never "not decided"
    v = claims["mpnn-algorithms/knapsack-extrapolation"].evaluate(_without(mpnn_quick, "knapsack"))
    assert v.passed is False and v.error


def test_restart_selection_uses_only_held_out_training_sizes(mpnn_mst):
    for name, test in (("knapsack_selection", "knapsack"), ("minimax_selection", "mst")):
        sel = mpnn_mst.table(name)
        cfg = mpnn_mst.config
        restarts = cfg["knap_restarts"] if name.startswith("knap") else cfg["mst_restarts"]
        assert sel.groupby("seed").size().eq(restarts).all() and sel.groupby("seed")["chosen"].sum().eq(1).all()
        best = sel.loc[sel.groupby("seed")["val_rel_error"].idxmin(), ["seed", "restart"]]
        assert best["restart"].tolist() == sel[sel["chosen"]].sort_values("seed")["restart"].tolist()
        kept = mpnn_mst.table(test).groupby("seed")["restart"].unique()
        assert {s: list(v) for s, v in kept.items()} == {int(r.seed): [int(r.restart)] for r in best.itertuples()}
