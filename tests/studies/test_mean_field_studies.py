"""mean-field-width and propagation-of-chaos: quick runs, judges that fail on wrong results, paper judges on synthetic
tables."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from result_edits import edit_table as _edit
from result_edits import set_where
from theorylab.core import ConfigError
from theorylab.core.result import Result
from theorylab.core.runner import check_memory
from theorylab.core.study import get_study
from theorylab.studies import mean_field_width as mfw
from theorylab.studies import propagation_of_chaos as poc


def _claim(slug: str, name: str):
    return next(c for c in get_study(slug).claims if c.id == f"{slug}/{name}")


def test_mfw_quick(mfw_quick):
    v = {x.id.split("/")[1]: x for x in mfw_quick.verdicts}
    for name in ("init-gap", "init-gap-monte-carlo", "inverse-width", "no-blowup", "mf-converges", "reduced-dynamics"):
        assert v[name].passed is True, v[name].detail
    cpu = "not decided: decided by the cpu preset on a CPU; "
    assert (
        v["poly-width-over-d"].passed is None
        and v["poly-width-over-d"].detail.startswith(cpu)
        and "needs the cpu preset" in v["poly-width-over-d"].detail
    )
    sc = v["self-concordance"]
    assert (
        sc.passed is None
        and not sc.error
        and sc.detail.startswith(cpu + "the d-exponent needs >= 2 dimensions")
        and "needs the cpu preset" in sc.detail
    )
    eq = v["self-concordance-equator"]
    assert (
        eq.passed is None
        and not eq.error
        and eq.detail.startswith(cpu + "at quick size")
        and "judged by the cpu preset" in eq.detail
    )
    # the quick preset's reference and seeds are ours: declared on the verdicts
    assert any(d.startswith("m_ref 2048 (card 1024)") for d in v["inverse-width"].departures)
    assert any(d.startswith("seeds 6 (card 3)") for d in v["init-gap"].departures)
    check = mfw_quick.tables["kernel_check"].iloc[0]
    assert check["init_mc_se"] < 0.01 and abs(check["init_mc"] - check["init_theory"]) < 4 * check["init_mc_se"]


def test_init_claim_fails_on_a_mis_normalised_kernel(mfw_quick):
    # the independent check: a closed form 10% off the Monte Carlo of the activation itself
    closed_form = _edit(mfw_quick, "kernel_check", lambda f: f.assign(init_theory=f["init_theory"] * 1.1))
    assert mfw.judges.judge_init_mc(closed_form).passed is False
    measured = _edit(mfw_quick, "gaps", lambda f: f.assign(m_gap=f["m_gap"] * 1.3))
    assert mfw.judges.judge_init(measured).passed is False
    assert mfw.judges.judge_init_mc(measured).passed is False


def _init_table(m_gap: list[float]) -> Result:
    """Step-0 gaps at d = 16, k = 4 (closed form 1 - 3/(16·18) = 0.9896) with the given m·gap per network."""
    cfg = get_study("mean-field-width").make_config("quick").model_dump()
    gaps = pd.DataFrame(
        [
            dict(
                d=16,
                k=4,
                step=0,
                t=0.0,
                width=32 * 2**i,
                seed=0,
                gap=g / (32 * 2**i),
                m_gap=g,
                init_theory=1 - 3 / (16 * 18),
            )
            for i, g in enumerate(m_gap)
        ]
    )
    return Result("mean-field-width", "x", "quick", 0, "done", cfg, tables={"gaps": gaps})


def test_init_claim_judges_the_cards_closed_form():
    assert mfw.judges.judge_init(_init_table([0.95, 1.0, 1.05])).passed is True
    # the mean is 0.2 off the closed form (a kernel normalised by 1.2, say)
    assert mfw.judges.judge_init(_init_table([1.15, 1.2, 1.25])).passed is False
    # a NaN network fails the claim and names its row (pandas' mean would skip it)
    v = _claim("mean-field-width", "init-gap").evaluate(_init_table([0.99, float("nan"), 0.99]))
    assert v.passed is False and "NaN" in v.detail and "width = 64" in v.detail, v.detail


def test_init_claim_catches_a_kernel_that_is_not_the_activation_s(store, monkeypatch):
    """End to end: a K that is not E[sigma sigma] (here sum_j a_j^2 j! t^j, the basis without its 1/sqrt(j!)) drives the
    whole run; the Monte Carlo, which evaluates sigma itself, disagrees with the measured gap and the claim fails."""
    from math import factorial

    from theorylab.core.runner import execute
    from theorylab.nn.activations import HermiteActivation

    tiny = dict(
        dims=(8,),
        widths=(8, 16),
        seeds=2,
        m_ref=128,
        steps=2,
        checkpoints=(0.0, 1.0),
        reduction_particles=0,
        concordance_particles=8,
        init_mc_n=1 << 14,
    )
    fine = execute("mean-field-width", "quick", 0, tiny, store=store, device="cpu")
    assert _claim("mean-field-width", "init-gap").evaluate(fine).passed is True, fine.verdicts[0].detail

    def wrong(self, t):
        return sum(a * a * factorial(j) * t**j for j, a in enumerate(self.coeffs) if a)

    monkeypatch.setattr(HermiteActivation, "kernel", wrong)
    bad = execute("mean-field-width", "quick", 0, tiny, store=store, device="cpu", force=True)
    v = _claim("mean-field-width", "init-gap").evaluate(bad)
    assert v.passed is False and not v.error, v.detail


def test_inverse_width_fails_when_the_gap_does_not_scale(mfw_quick):
    flat = _edit(mfw_quick, "gaps", lambda f: f.assign(gap=0.01 + 0 * f["gap"]))
    assert mfw.judges.judge_inverse(flat).passed is False


def test_blowup_claim_fails_on_late_growth(mfw_quick):
    grow = _edit(
        mfw_quick,
        "gaps",
        lambda f: f.assign(m_gap=np.where(f["step"] == f["step"].max(), 3 * f["m_gap"].max(), f["m_gap"])),
    )
    assert mfw.judges.judge_blowup(grow).passed is False


def test_convergence_claim_fails_on_a_loss_increase(mfw_quick):
    bump = _edit(mfw_quick, "loss", lambda f: f.assign(L_mf=np.where(f["step"] == 150, f["L_mf"] + 0.01, f["L_mf"])))
    assert mfw.judges.judge_converges(bump).passed is False


def test_mfw_paper_judges_on_synthetic_tables():
    cfg = get_study("mean-field-width").make_config("paper").model_dump()
    gaps, loss, sc = [], [], []
    for d in (16, 32, 64, 128):
        horizon = 2.0 * d  # T(d) ∝ d^1 = d^{(k-2)/2} for k = 4
        for t in (0.0, horizon / 2, horizon):
            for m in (64, 128, 256):
                gaps.append(
                    dict(
                        d=d,
                        k=4,
                        step=int(t * 10),
                        t=t,
                        width=m,
                        seed=0,
                        gap=d / m * 1e-2,
                        m_gap=d * 1e-2,
                        init_theory=1.0,
                    )
                )
            sc.append(
                dict(
                    d=d,
                    k=4,
                    step=int(t * 10),
                    t=t,
                    L_mf=0.5 if t == 0 else 0.3 if t < horizon else 0.005,
                    ratio_p95=5.0,
                    ratio_median=1.0,
                    ratio_max=9.0,
                    hessian_op_max=1.0,
                    escaping=20,
                    ratio_p95_escaping=5.0,
                )
            )
        loss.append(
            pd.DataFrame(dict(d=d, k=4, step=np.arange(3), t=[0, horizon / 2, horizon], L_mf=[0.5, 0.2, 0.005]))
        )
    res = Result(
        "mean-field-width",
        "x",
        "paper",
        0,
        "done",
        cfg,
        tables={"gaps": pd.DataFrame(gaps), "loss": pd.concat(loss), "self_concordance": pd.DataFrame(sc)},
    )
    assert mfw.judges.judge_poly(res).passed is True, mfw.judges.judge_poly(res).detail
    assert mfw.judges.judge_sc(res).passed is True, mfw.judges.judge_sc(res).detail
    assert mfw.judges.judge_sc_equator(res).passed is True, mfw.judges.judge_sc_equator(res).detail
    steep = _edit(res, "gaps", lambda f: f.assign(gap=f["gap"] * (f["d"] / 16.0) ** 4))
    assert mfw.judges.judge_poly(steep).passed is False
    growing = _edit(res, "self_concordance", lambda f: f.assign(ratio_p95_escaping=f["d"] / 4.0))
    assert mfw.judges.judge_sc_equator(growing).passed is False
    assert mfw.judges.judge_sc(growing).passed is True  # the card's form reads every particle
    # the card's form: the ratio over all particles grows with d during the escape phase (L_MF >= L_MF(0)/2)
    growing_all = _edit(
        res, "self_concordance", lambda f: f.assign(ratio_p95=np.where(f["L_mf"] >= 0.25, f["d"] / 4.0, 5.0))
    )
    failed = mfw.judges.judge_sc(growing_all)
    assert failed.passed is False
    # the verdict states the comparison: the exponent (d/4 grows as d^1) against its bound, and the bound on the ratio
    assert (
        failed.measured == pytest.approx(1.0) and "d-exponent of the 95th percentile (k=4) <= 0.25" in failed.expected
    )
    assert "95th percentile of |H|/|v| (k=4) <= 40" in failed.expected and "short: d-exponent" in failed.detail
    too_large = _edit(res, "self_concordance", lambda f: f.assign(ratio_p95=np.where(f["d"] == 64, 50.0, 5.0)))
    assert mfw.judges.judge_sc(too_large).passed is False  # one d over 10k fails, whatever the fitted exponent
    assert "at d=64 of 4" in mfw.judges.judge_sc(too_large).detail
    slow = _edit(res, "loss", lambda f: f.assign(t=f["t"] * (f["d"] / 16.0) ** 2))  # T(d) ~ d^3, theory d^1
    assert mfw.judges.judge_poly(slow).passed is False and "T(d) exponent (k=4" in mfw.judges.judge_poly(slow).detail
    # after the escape phase (L_MF below half its start) a large ratio is not judged by the card's form
    late = _edit(res, "self_concordance", lambda f: f.assign(ratio_p95=np.where(f["L_mf"] < 0.25, 1e4, 5.0)))
    assert mfw.judges.judge_sc(late).passed is True


def test_poc_quick(poc_quick):
    v = {x.id.split("/")[1]: x for x in poc_quick.verdicts}
    for name in ("fast-rate", "integral-finite", "uniform-exponent", "no-late-growth", "discretisation"):
        assert v[name].passed is True, v[name].detail
    for name in ("poly-d", "finite-samples", "finite-samples-excess"):
        assert (
            v[name].passed is None
            and not v[name].error
            and v[name].detail.startswith("not decided: decided by the cpu preset on a CPU; ")
            and "needs the cpu preset" in v[name].detail
        )
    assert v["slow-contrast"].passed is None and v["slow-contrast"].detail.startswith("report only: d=16")
    assert sorted(poc_quick.tables["discretisation"]["eta"]) == [0.1, 0.2]


def test_poc_discretisation_fails_on_a_second_order_or_stalled_error(poc_quick):
    # 4x in distance per halving
    fast = _edit(
        poc_quick, "discretisation", lambda f: f.assign(ref_gap_at_T=f["ref_gap_at_T"] * [1.0, 1 / 4][: len(f)])
    )
    assert poc.judges.judge_disc(fast).passed is False
    # no shrink at all
    stalled = _edit(poc_quick, "discretisation", lambda f: f.assign(ref_gap_at_T=f["ref_gap_at_T"].iloc[0]))
    assert poc.judges.judge_disc(stalled).passed is False
    drift = _edit(
        poc_quick,
        "gaps",
        lambda f: f.assign(gap=np.where(f["eta"] == 0.2, f["gap"] * (f["width"] / 32.0) ** 0.3, f["gap"])),
    )
    assert poc.judges.judge_disc(drift).passed is False


def test_poc_judges_fail_on_wrong_results(poc_quick):
    slow = _edit(poc_quick, "rates", lambda f: f.assign(c=np.where(f["setting"] == "fast", 1.0, f["c"])))
    assert poc.judges.judge_rate(slow).passed is False
    diverging = _edit(poc_quick, "rates", lambda f: f.assign(I_T=f["I_half"] * 2))
    assert poc.judges.judge_integral(diverging).passed is False
    flat = _edit(poc_quick, "sup_gap", lambda f: f.assign(sup_gap=0.01))
    assert poc.judges.judge_uniform(flat).passed is False
    late = _edit(poc_quick, "sup_gap", lambda f: f.assign(late_m_gap=f["early_m_gap"] * 1.2))
    assert poc.judges.judge_late(late).passed is False


def test_poc_paper_judges_on_synthetic_tables():
    cfg = get_study("propagation-of-chaos").make_config("paper").model_dump()
    rates, sup, disc = [], [], []
    for d in (16, 32, 64, 128):
        for eta in (0.2, 0.1, 0.05, 0.025):
            rates.append(
                dict(
                    setting="fast",
                    d=d,
                    eta=eta,
                    c=2.3,
                    c_low=2.2,
                    c_high=2.4,
                    window_points=50,
                    L0=0.5,
                    LT=1e-5,
                    I_T=2 * np.log(d) / np.log(16),
                    I_half=1.9,
                    beta_pred=0.38,
                )
            )
            for m in (64, 256, 1024, 4096):
                sup.append(dict(setting="fast", d=d, eta=eta, width=m, sup_gap=d / m, early_m_gap=1.0, late_m_gap=0.1))
        # squared distances falling 4x per halving = distances falling 2x: first order
        disc += [
            dict(d=d, eta=0.2, eta_half=0.1, ref_gap_at_T=4e-4),
            dict(d=d, eta=0.1, eta_half=0.05, ref_gap_at_T=1e-4),
            dict(d=d, eta=0.05, eta_half=0.025, ref_gap_at_T=2.5e-5),
        ]
    gaps = pd.DataFrame(
        [
            dict(setting="fast", d=d, eta=eta, t=t, width=m, seed=0, gap=d / m / (1 + t))
            for d in (16, 32, 64, 128)
            for eta in (0.2, 0.1, 0.05, 0.025)
            for t in (0.0, 1.0, 2.0)
            for m in (64, 256, 1024, 4096)
        ]
    )
    res = Result(
        "propagation-of-chaos",
        "x",
        "paper",
        0,
        "done",
        cfg,
        tables={
            "rates": pd.DataFrame(rates),
            "sup_gap": pd.DataFrame(sup),
            "discretisation": pd.DataFrame(disc),
            "gaps": gaps,
        },
    )
    assert poc.judges.judge_poly(res).passed is True, poc.judges.judge_poly(res).detail
    assert poc.judges.judge_disc(res).passed is True, poc.judges.judge_disc(res).detail
    second_order = _edit(res, "discretisation", lambda f: f.assign(ref_gap_at_T=[4e-4, 2.5e-5, 1.5625e-6] * 4))
    assert poc.judges.judge_disc(second_order).passed is False
    explosive = _edit(res, "sup_gap", lambda f: f.assign(sup_gap=f["sup_gap"] * f["d"] ** 3))
    assert poc.judges.judge_poly(explosive).passed is False


def test_reduction_claim_fails_when_the_reduced_dynamics_is_wrong(mfw_quick):
    assert mfw.judges.judge_reduction(mfw_quick).passed is True
    # a wrong drift moves both
    wrong = _edit(
        mfw_quick,
        "reduction",
        lambda f: f.assign(L_reduced=f["L_reduced"] * 1.5, L_reduced_coarse=f["L_reduced_coarse"] * 1.5),
    )
    assert mfw.judges.judge_reduction(wrong).passed is False
    assert {"escape", "escape_times", "overlaps"} <= set(mfw_quick.tables)


def _samples(rows_gap, width: int = 4096) -> Result:
    cfg = get_study("propagation-of-chaos").make_config("paper").model_dump()
    pure = 1.0 / 4096
    rows = [
        dict(
            setting="samples",
            d=16,
            k=2,
            eta=0.1,
            n=n,
            step=s,
            t=s / 10,
            width=width,
            seed=0,
            gap=rows_gap(n, s, pure),
            ref_error=0.0,
        )
        for n in (4096, 16384, 65536, 262144)
        for s in (0, 10, 20)
    ]
    sup = pd.DataFrame([dict(setting="fast", d=16, eta=0.1, width=4096, sup_gap=pure, early_m_gap=1.0, late_m_gap=0.5)])
    return Result(
        "propagation-of-chaos",
        "x",
        "paper",
        0,
        "done",
        cfg,
        tables={"finite_samples": pd.DataFrame(rows), "sup_gap": sup},
    )


def test_finite_sample_judges_on_synthetic_tables():
    # the sup-gap itself falls like n^-0.6 to 0.25x the pure-width gap: the card's form holds
    falling = _samples(lambda n, s, pure: 3 * pure * (n / 4096) ** -0.6)
    assert poc.judges.judge_samples(falling).passed is True, poc.judges.judge_samples(falling).detail
    # the sup-gap saturates at the width's own error: the card's form fails, ours reads the excess
    res = _samples(lambda n, s, pure: pure + (0.05 * n**-0.75 if s else 0))
    assert poc.judges.judge_samples(res).passed is False
    assert poc.judges.judge_samples_excess(res).passed is True, poc.judges.judge_samples_excess(res).detail
    pure = 1.0 / 4096
    stuck = _edit(res, "finite_samples", lambda f: f.assign(gap=np.where(f["step"] > 0, 10 * pure, f["gap"])))
    assert poc.judges.judge_samples(stuck).passed is False
    assert poc.judges.judge_samples_excess(stuck).passed is False
    # Fewer than two sample sizes above the pure-width gap: the rate cannot be fitted -> not decided, never a pass.
    below = _edit(res, "finite_samples", lambda f: f.assign(gap=np.where(f["n"] > 4096, 0.5 * pure, f["gap"])))
    v = _claim("propagation-of-chaos", "finite-samples-excess").evaluate(below)
    assert v.passed is None and not v.error and v.detail.startswith("not decided:") and "cannot be fitted" in v.detail
    for name in ("finite-samples", "finite-samples-excess"):
        no_width = _edit(res, "sup_gap", lambda f: f.assign(width=64))
        v = _claim("propagation-of-chaos", name).evaluate(no_width)
        assert v.passed is None and not v.error and "no width 4096" in v.detail
    nan = _edit(
        falling,
        "finite_samples",
        lambda f: set_where(f, lambda t: (t["n"] == 16384) & (t["step"] == 10), "gap", np.nan),
    )
    v = _claim("propagation-of-chaos", "finite-samples").evaluate(nan)
    assert v.passed is False and "NaN" in v.detail and "n = 16384" in v.detail, v.detail


def test_poc_poly_d_is_judged_at_the_cards_width():
    cfg = get_study("propagation-of-chaos").make_config("paper").model_dump()
    rates = pd.DataFrame(
        [
            dict(
                setting="fast",
                d=d,
                eta=0.1,
                c=2.3,
                c_low=2.2,
                c_high=2.4,
                window_points=50,
                L0=0.5,
                LT=1e-5,
                I_T=2 * np.log(d) / np.log(16),
                I_half=1.9,
                beta_pred=0.38,
            )
            for d in (16, 32, 64, 128)
        ]
    )
    # flat in d at m = 2^12, exploding at the largest width: the card's m = 2^12 decides
    sup = pd.DataFrame(
        [
            dict(
                setting="fast",
                d=d,
                eta=0.1,
                width=m,
                sup_gap=(d**4 if m == 16384 else 1.0) / m,
                early_m_gap=1.0,
                late_m_gap=0.1,
            )
            for d in (16, 32, 64, 128)
            for m in (1024, 4096, 16384)
        ]
    )
    res = Result("propagation-of-chaos", "x", "paper", 0, "done", cfg, tables={"rates": rates, "sup_gap": sup})
    v = _claim("propagation-of-chaos", "poly-d").evaluate(res)
    assert v.passed is True and "m = 4096" in v.detail and not v.departures, v.detail
    # without m = 2^12 the largest width is judged, and the verdict says so
    v = _claim("propagation-of-chaos", "poly-d").evaluate(_edit(res, "sup_gap", lambda f: f[f["width"] != 4096]))
    assert v.passed is False and any("card: m = 2^12" in d for d in v.departures), v.departures


def test_memory_estimates_grow_with_the_sizes_and_the_runner_compares_the_papers():
    bigger = {
        "mean-field-width": dict(seeds=12, widths=(32, 64, 128, 1024), m_ref=1 << 16, dims=(16, 128)),
        "propagation-of-chaos": dict(seeds=8, widths=(32, 64, 128, 2048), m_ref=1 << 17, dims=(16, 128)),
    }
    for slug, grown in bigger.items():
        st = get_study(slug)
        quick = st.make_config("quick")
        base, _ = st.memory(quick)
        for field, value in grown.items():
            assert st.memory(quick.model_copy(update={field: value}))[0] > base, (slug, field)
        paper = st.make_config("paper")
        need, hint = st.memory(paper)
        # chunked: the paper preset fits a 24 GB machine (the networks are stepped in groups; propagation-of-chaos
        # measures its gaps at each checkpoint instead of keeping every network's snapshot)
        assert base < need < 20 * 2**30, (slug, need)
        assert check_memory(st, paper, "paper", available=1 << 40) == need
        with pytest.raises(ConfigError, match=rf"the paper preset of {slug} needs about {need / 2**30:.1f} GiB"):
            check_memory(st, paper, "paper", available=int(need / 2))
        assert hint.startswith("--set seeds=4")


def test_cpu_presets_decide_the_claims_and_declare_their_sizes():
    for slug, claim, field in (
        ("mean-field-width", "poly-width-over-d", "dims"),
        ("mean-field-width", "self-concordance", "stop_ratio"),
        ("propagation-of-chaos", "poly-d", "m_ref"),
        ("propagation-of-chaos", "finite-samples-excess", "m_ref"),
    ):
        cfg = get_study(slug).make_config("cpu").model_dump()
        c = _claim(slug, claim)
        assert c.decided_by == "cpu"
        assert any(d.field == field and d.applies(cfg, "cpu") for d in c.departures), (slug, claim)
        assert not any(d.field == field and d.applies(cfg, "quick") for d in c.departures if d.presets == ("cpu",))
