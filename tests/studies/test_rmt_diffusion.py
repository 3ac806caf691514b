"""rmt-diffusion's claims can fail: each judge is fed a stored quick run with one thing made wrong."""

from __future__ import annotations

import copy

import numpy as np
import pytest

from theorylab.studies import rmt_diffusion as study


def _mutated(result, table, **columns):
    res = copy.copy(result)
    res.tables = dict(result.tables)
    frame = result.tables[table].copy()
    for name, fn in columns.items():
        frame[name] = fn(frame)
    res.tables[table] = frame
    return res


def test_quick_run_all_claims_pass(rmt_quick):
    assert rmt_quick.status == "done"
    assert [v.passed for v in rmt_quick.verdicts] == [True] * len(study.judges.claims)


def test_mean_claim_fails_if_sigma2_replaces_kappa(rmt_quick):
    wrong = _mutated(rmt_quick, "mean_equiv", rmt=lambda f: f["naive"])
    assert study.judges.judge_mean(wrong).passed is False


def _claim(claim_id):
    return next(c for c in study.judges.claims if c.id == f"rmt-diffusion/{claim_id}")


def test_mean_claim_undecided_with_too_few_draws(rmt_quick):
    noisy = _mutated(rmt_quick, "mean_equiv", sim_se=lambda f: f["sim_se"] * 10)
    v = _claim("mean-equivalent").evaluate(noisy)
    assert v.passed is None and not v.error and v.detail.startswith("not decided: needs more draws"), v.detail


def test_undecided_parts_say_why(rmt_quick):
    noisy_sqrt = _mutated(rmt_quick, "sqrt_equiv", sim_se=lambda f: f["sim_se"] * 10)
    noisy_var = _mutated(rmt_quick, "variance", ratio_se=lambda f: f["ratio_se"] * 10)
    noisy_map = _mutated(rmt_quick, "sampling_map", var_ratio_se=lambda f: f["var_ratio_se"] * 10)
    small = copy.copy(rmt_quick)
    small.tables = {**rmt_quick.tables, "cross_split": rmt_quick.tables["cross_split"].query("n < 300")}
    for cid, res in (("sqrt-equivalent", noisy_sqrt), ("variance-factorization", noisy_var), ("sampling-map-equivalent",
        noisy_map), ("digits-linear-consistency", small)):
        v = _claim(cid).evaluate(res)
        assert v.passed is None and not v.error and v.detail.startswith("not decided: "), (cid, v.detail)


def test_nothing_claims_the_deep_denoisers():
    # The card's deep-follows-linear (trained MLP/UNet/DiT denoisers) is not built: no claim may pretend it is.
    ids = {c.id for c in study.judges.claims}
    assert "rmt-diffusion/deep-follows-linear" not in ids
    from theorylab.core.study import get_study

    assert "rmt-diffusion/deep-follows-linear" in get_study("rmt-diffusion").not_built  # listed as missing, not counted
    assert "not built" in study.__doc__.lower() and "deep-follows-linear" in study.__doc__
    for c in study.judges.claims:
        if c.id.endswith(("moment-mismatch", "seed-level-prediction")):
            assert "linear maps only" in c.statement and "not built" in c.statement


def test_kappa_claim_fails_on_wrong_limit(rmt_quick):
    res = copy.copy(rmt_quick)
    res.scalars = {**rmt_quick.scalars, "ratio_gamma_half_tiny": 1.0 / (1 - 1 / 400)}  # d-normalised trace
    assert study.judges.judge_kappa(res).passed is False
    flat = _mutated(rmt_quick, "kappa", ratio=lambda f: f["ratio"] * (1 + 1e-3 * np.log(f["sigma2"] + 1)))
    assert study.judges.judge_kappa(flat).passed is False


def test_sqrt_claim_fails_if_population_sqrt_used(rmt_quick):
    wrong = _mutated(rmt_quick, "sqrt_equiv", quad=lambda f: np.sqrt(f["lambda"]))
    assert study.judges.judge_sqrt(wrong).passed is False


def test_variance_claim_fails_without_the_n_minus_df2_scaling(rmt_quick):
    # kappa^2/n instead of kappa^2/(n - df2) under-predicts, so simulated/theory grows.
    t = rmt_quick.tables["variance"]
    df2 = {n: float(study.rmt.df2(study.rmt.solve_kappa(1e-2, study.PowerLawGaussian(200, 1.0).eigenvalues, n),
                                  study.PowerLawGaussian(200, 1.0).eigenvalues)) for n in t["n"].unique()}
    wrong = _mutated(rmt_quick, "variance", ratio=lambda f: f["ratio"] * f["n"].map(lambda n: n / (n - df2[n])))
    assert study.judges.judge_variance(wrong).passed is False


def test_variance_claim_fails_when_factors_do_not_factor(rmt_quick):
    rng = np.random.default_rng(0)
    wrong = _mutated(rmt_quick, "variance", sim_var=lambda f: f["sim_var"] * np.exp(0.4 * rng.standard_normal(len(f))))
    assert study.judges.judge_variance(wrong).passed is False


def test_sampling_map_claim_fails_on_naive_map(rmt_quick):
    lam_col = lambda f: np.sqrt((f["lambda"] + f["sigma"] ** 2) / (f["lambda"] + 80.0**2))  # noqa: E731
    wrong = _mutated(rmt_quick, "sampling_map_mean", equiv=lam_col)
    assert study.judges.judge_sampling_map(wrong).passed is False


def test_digits_claim_fails_when_cross_split_does_not_fall(rmt_quick):
    flat = _mutated(rmt_quick, "cross_split", cross_mse=lambda f: f["cross_mse"].median() + 0 * f["n"])
    assert study.judges.judge_digits(flat).passed is False
    memorising = _mutated(rmt_quick, "cross_split", cross_mse=lambda f: f["nearest_mse_1"] * (0.6 + 30 / f["n"]))
    assert study.judges.judge_digits(memorising).passed is False


def test_mismatch_and_seed_claims_can_fail(rmt_quick):
    same = _mutated(rmt_quick, "moment_mismatch", mismatch_mse=lambda f: f["iid_mse"] * 2)
    assert study.judges.judge_mismatch(same).passed is False
    rng = np.random.default_rng(1)
    shuffled = _mutated(rmt_quick, "seed_level", predicted=lambda f: rng.permutation(f["predicted"].to_numpy()))
    assert study.judges.judge_seed_level(shuffled).passed is False


@pytest.mark.slow  # > 5 s on 2 cores: outside the fast tier
@pytest.mark.parametrize("field, value", [("draws", 20), ("var_draws", 100)])
def test_small_monte_carlo_is_undecided_not_passed(field, value):
    import tempfile

    from theorylab.core.runner import execute
    from theorylab.core.store import Store

    with tempfile.TemporaryDirectory() as tmp:
        res = execute("rmt-diffusion", "quick", 0, {field: value, "n": 400, "split_n": [300, 800], "seeds": 64,
                                                    "seed_level_seeds": 64}, store=Store(tmp), device="cpu")
    by_id = {v.id: v for v in res.verdicts}
    if field == "draws":
        assert by_id["rmt-diffusion/mean-equivalent"].passed is None
        assert "needs more draws" in by_id["rmt-diffusion/mean-equivalent"].detail
    else:
        assert by_id["rmt-diffusion/variance-factorization"].passed is None
