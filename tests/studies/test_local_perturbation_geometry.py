"""local-perturbation-geometry: the order-defect / window kit against exact answers, the quick run, judges that fail on
wrong results (and say when they cannot decide), bad input and the missing optional dependency (peft)."""

from __future__ import annotations

import importlib.util

import numpy as np
import pandas as pd
import pytest
import torch

import theorylab.studies.local_perturbation_geometry as lpg  # registers the study without an entry point
import theorylab.studies.local_perturbation_geometry.measure as lpg_measure
from result_edits import edit_table as _edit
from theorylab.core.result import Result
from theorylab.probes.second_order import first_order_error, lie_bracket, order_defect, two_step_defect

SLUG = "local-perturbation-geometry"
J = lpg.judges
MATH = ("taylor-remainder", "interference-is-hessian", "best-of-n")  # hold for any correct implementation
HAS_PEFT = importlib.util.find_spec("peft") is not None


# --- the kit: exact answers -----------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def quadratics():
    g = torch.Generator().manual_seed(0)
    D = 7
    A, B = (torch.randn(D, D, generator=g, dtype=torch.float64) for _ in range(2))
    A, B = A @ A.T / D, B + B.T
    a, b, th = (torch.randn(D, generator=g, dtype=torch.float64) for _ in range(3))
    La = lambda x: 0.5 * x @ A @ x + a @ x  # noqa: E731
    Lb = lambda x: 0.5 * x @ B @ x + b @ x  # noqa: E731
    return A, B, a, b, th, La, Lb


def test_lie_bracket_and_two_step_defect_are_exact_on_quadratics(quadratics):
    A, B, a, b, th, La, Lb = quadratics
    br = lie_bracket(La, Lb, th)
    ga, gb = A @ th + a, B @ th + b
    torch.testing.assert_close(br["g_a"], ga)
    torch.testing.assert_close(br["bracket"], B @ ga - A @ gb)
    # for quadratics g_B(theta - eta g_A) = g_B - eta B g_A exactly: the defect is eta^2 [H_B g_A - H_A g_B] at any eta
    for eta in (1e-3, 0.1, 2.0):
        torch.testing.assert_close(two_step_defect(La, Lb, th, eta), eta**2 * (B @ ga - A @ gb))
    etas = [1e-4, 1e-2, 1.0]
    kappa = float((B @ ga - A @ gb).norm() / (ga + gb).norm())
    np.testing.assert_allclose(order_defect(La, Lb, th, etas), np.array(etas) * kappa, rtol=1e-10)
    with pytest.raises(ValueError, match="positive"):
        order_defect(La, Lb, th, [0.0])


def test_first_order_error_is_the_hessian_term_on_a_quadratic(quadratics):
    A, _, a, _, th, La, _ = quadratics
    d = torch.linspace(-1, 1, 7, dtype=torch.float64)
    ts = [1e-3, 1e-1, 1.0]
    dl, lin = first_order_error(La, th, d, ts)
    np.testing.assert_allclose(lin, np.array(ts) * float((A @ th + a) @ d), rtol=1e-12)
    np.testing.assert_allclose(dl - lin, 0.5 * np.array(ts) ** 2 * float(d @ A @ d), rtol=1e-8, atol=1e-15)
    g = torch.arange(7, dtype=torch.float64)
    _, stale = first_order_error(La, th, d, ts, g=g)
    np.testing.assert_allclose(stale, np.array(ts) * float(g @ d), rtol=1e-12)


def test_order_defect_tends_to_eta_kappa_on_a_smooth_non_quadratic():
    g = torch.Generator().manual_seed(1)
    W = torch.randn(5, 5, generator=g, dtype=torch.float64)
    th = torch.randn(5, generator=g, dtype=torch.float64)
    La = lambda x: torch.log(torch.cosh(W @ x)).sum()  # noqa: E731
    Lb = lambda x: (torch.sin(x) ** 2).sum() + (x**4).sum() / 4  # noqa: E731
    br = lie_bracket(La, Lb, th)
    kappa = float(br["bracket"].norm() / (br["g_a"] + br["g_b"]).norm())
    etas = np.array([1e-5, 1e-4, 1e-3])
    ratio = order_defect(La, Lb, th, etas) / (etas * kappa)
    assert abs(ratio[0] - 1) < 1e-3 and abs(ratio[-1] - 1) > abs(ratio[0] - 1)  # the O(eta) correction shrinks


def test_crossing_interpolates_on_log_axes():
    x = np.array([1e-3, 1e-2, 1e-1, 1.0])
    assert lpg_measure._crossing(x, 2 * x, 0.1) == pytest.approx(0.05, rel=1e-12)
    assert np.isnan(lpg_measure._crossing(x, 1e-3 * x, 0.1))  # never reaches
    assert np.isnan(lpg_measure._crossing(x, 1 + x, 0.1))  # starts above


# --- the quick run ---------------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def quick(quick_run):
    return quick_run(SLUG)


@pytest.mark.slow
def test_quick_claims(quick):
    assert quick.status == "done", quick.message
    v = {x.id.split("/")[1]: x for x in quick.verdicts}
    for claim in MATH + ("order-defect-lie-bracket", "subspace-rotation"):
        assert v[claim].passed is True, f"{claim}: {v[claim].detail}"
    for claim in (
        "one-direction-window",
        "order-onset-inside-window",
        "tangent-drift",
        "prefix-basis",
        "edit-to-activation",
    ):
        assert v[claim].passed is not None, f"{claim}: {v[claim].detail}"
    assert v["additivity-at-full-scale"].passed is None and "cpu preset" in v["additivity-at-full-scale"].detail
    assert v["lora-recovery"].passed is None and "reduced measurement" in v["lora-recovery"].detail
    assert {"taylor", "interference", "drift", "bestofn", "caa", "order", "window"} <= {p.stem for p in quick.figures}
    caa = quick.table("caa")
    assert (caa[caa["kind"] == "edit_jvp"]["jvp_fd_rel"] < 1e-3).all()  # the JVP agrees with finite differences
    lin = quick.table("additivity")
    assert (lin[lin["kind"] == "control_linear"]["departure"] < 1e-10).all()  # linearised effects add exactly


# --- judges on made-up tables ----------------------------------------------------------------------------------------
def _result(preset="quick", scalars=None, **tables) -> Result:
    return Result(
        study=SLUG, run_id="", preset=preset, seed=0, status="done", config={}, tables=tables, scalars=scalars or {}
    )


def _order(scale=1.0, cos=1.0, flip=0.5, drop=1.6, etas=None):
    etas = np.geomspace(1e-4, 1, 17) if etas is None else etas
    rows = []
    for pair, kappa in (("add-sub", 0.5), ("max-copy_a", 2.0)):
        for eta in etas:
            c = scale * eta * kappa * (1 + eta * kappa)
            rows.append(
                dict(
                    seed=0,
                    pair=pair,
                    eta=eta,
                    defect=c,
                    kappa=kappa,
                    kappa_flip=kappa / flip,
                    kappa_drop=kappa / drop,
                    cos_bracket=cos,
                    cos_flip=0.3,
                    cos_drop=0.5,
                )
            )
    return pd.DataFrame(rows)


def test_order_judge():
    assert J.judge_order(_result(order=_order())).passed is True
    assert J.judge_order(_result(order=_order(scale=1.2))).passed is False  # 20 % off the bracket
    assert J.judge_order(_result(order=_order(cos=0.9))).passed is False  # wrong direction
    ctl = _order().assign(kappa_flip=lambda f: f["kappa"], cos_flip=1.0)  # the sign-flipped control matches too
    assert J.judge_order(_result(order=ctl)).passed is False
    quad = _order().assign(defect=lambda f: f["eta"] ** 2 * f["kappa"])  # slope 2: not eta kappa
    assert J.judge_order(_result(order=quad)).passed is False
    coarse = _order(etas=np.array([0.1, 0.3, 1.0]))  # no step size in the small-eta range
    out = J.judge_order(_result(order=coarse))
    assert out.passed is False and "does not reach" in out.detail


def _window(rel=0.02, slope=2.0, control_rel=3.0, control_slope=1.0):
    s = np.geomspace(1e-5, 1e-2, 7)
    rows = []
    for d in ("random", "task_a", "task_b", "control_stale_grad"):
        ctl = d.startswith("control")
        r = (control_rel if ctl else rel) * (s / 1e-2) ** ((control_slope if ctl else slope) - 1)
        pred = 1e-3 * s
        rows += [
            dict(seed=0, direction=d, scale=x, error=e * p, predicted=p, rel_error=e) for x, e, p in zip(s, r, pred)
        ]
    return pd.DataFrame(rows)


def test_window_judge():
    assert J.judge_window(_result(window=_window())).passed is True
    assert J.judge_window(_result(window=_window(rel=0.3))).passed is False  # curvature wins before 1e-2
    assert J.judge_window(_result(window=_window(slope=1.0))).passed is False  # error ∝ scale: a wrong gradient
    passing_control = _window(control_rel=0.01, control_slope=2)  # the control passes too: the test cannot tell
    assert J.judge_window(_result(window=passing_control)).passed is False
    missing = _window().query("direction != 'task_b'")
    assert J.judge_window(_result(window=missing)).passed is False


def _onset(ratio=(1.0, 1.2), flip=2.0, drop=0.4):
    return pd.DataFrame(
        dict(
            seed=0,
            pair=["add-sub", "sub-max"],
            kappa=[0.5, 2.0],
            eta_dagger=[0.2 * ratio[0], 0.05 * ratio[1]],
            eta_pred=[0.2, 0.05],
            eta_pred_flip=[0.2 / flip, 0.05],
            eta_pred_drop=[0.2 / drop, 0.05 / drop],
            onset_rel_size=[1e-3, 2e-2],
        )
    )


def test_onset_judge():
    out = J.judge_onset(_result(onset=_onset()))
    assert out.passed is True and "50% of pairs" in out.detail
    assert J.judge_onset(_result(onset=_onset(ratio=(1.0, 1.6)))).passed is False
    assert J.judge_onset(_result(onset=_onset(ratio=(1.0, np.nan)))).passed is False  # no onset on the grid
    assert J.judge_onset(_result(onset=_onset(flip=1.0))).passed is False  # the control predicts as well


def _drift(angles=(0.0, 60.0, 80.0, 85.0), control=0.5, cos=(1.0, 0.8, 0.75, 0.7)):
    rows = [
        dict(seed=0, s=s, kind="sgd", mean_cos=c, min_cos=c, max_angle_deg=a, eigengap=1.1)
        for s, a, c in zip((0, 10, 30, 100), angles, cos)
    ]
    rows.append(dict(seed=0, s=30, kind="control", mean_cos=1.0, min_cos=1.0, max_angle_deg=control, eigengap=1.1))
    return pd.DataFrame(rows)


def test_rotation_and_drift_judges():
    assert J.judge_rotation(_result(drift=_drift())).passed is True
    assert J.judge_rotation(_result(drift=_drift(angles=(0, 20, 30, 85)))).passed is False  # only after s = 30
    assert J.judge_rotation(_result(drift=_drift(control=50.0))).passed is False  # unstable estimate
    assert J.judge_drift(_result(drift=_drift())).passed is True
    assert J.judge_drift(_result(drift=_drift(cos=(1.0, 0.8, 0.85, 0.7)))).passed is True  # rise: reported only
    assert J.judge_drift(_result(drift=_drift(cos=(1.0, 0.95, 0.93, 0.92)))).passed is False
    assert J.judge_drift(_result(drift=_drift(cos=(0.99, 0.8, 0.75, 0.7)))).passed is False


def _additivity(full=(1e-4, 1e-3, 0.02, 0.2), linear=1e-16):
    ts = (1e-3, 1e-2, 1e-1, 1.0)
    return pd.DataFrame(
        [dict(seed=0, t=t, kind="full", departure=d) for t, d in zip(ts, full)]
        + [dict(seed=0, t=t, kind="control_linear", departure=linear) for t in ts]
    )


def test_additivity_judge_decides_at_the_cpu_and_paper_presets_only():
    out = J.judge_additivity(_result(additivity=_additivity()))
    assert out.passed is None and "needs the cpu preset" in out.detail and "0.2" in out.detail
    assert J.judge_additivity(_result("cpu", additivity=_additivity())).passed is True
    assert J.judge_additivity(_result("paper", additivity=_additivity())).passed is True
    assert J.judge_additivity(_result("paper", additivity=_additivity(full=(1e-4, 1e-3, 0.01, 0.05)))).passed is False
    assert J.judge_additivity(_result("paper", additivity=_additivity(full=(0.2, 0.2, 0.2, 0.2)))).passed is False
    assert J.judge_additivity(_result("paper", additivity=_additivity(linear=0.3))).passed is False


def test_lora_judge_says_what_decides_it():
    prefix = pd.DataFrame(dict(seed=[0], captured=[0.7], m=[10], dim=[1000], steps=[100]))
    out = J.judge_lora(_result(scalars={"lora_skipped_no_peft": True}, prefix=prefix, lora=pd.DataFrame()))
    assert out.passed is None and "needs peft" in out.detail and "pip install peft" in out.detail
    out = J.judge_lora(_result(prefix=prefix, lora=pd.DataFrame()))
    assert out.passed is None and "cpu preset" in out.detail
    lora = lambda prefix, plane: _result(
        lora=pd.DataFrame(
            dict(
                seed=[0],
                prefix_captured=[prefix],  # noqa: E731
                plane_captured=[plane],
            )
        )
    )
    assert J.judge_lora(lora(0.6, 0.2)).passed is True
    assert J.judge_lora(lora(0.4, 0.2)).passed is False
    assert J.judge_lora(lora(0.6, 0.7)).passed is False


@pytest.mark.slow
def test_cpu_preset_decides_additivity_and_lora_at_a_declared_size():
    """The cpu preset (the quick model, 3 seeds, LoRA) decides both claims; the model size is a departure there only."""
    from theorylab.core.study import Verdict, get_study

    st = get_study(SLUG)
    cfg = st.make_config("cpu")
    assert (cfg.p, cfg.d_model, cfg.seeds, cfg.lora_steps) == (11, 64, 3, 300) and not st.presets["cpu"].gpu_minutes
    by = {c.id.split("/")[1]: c for c in st.claims}
    for cid in ("additivity-at-full-scale", "lora-recovery"):
        c = by[cid]
        assert c.decided_by == "cpu"
        v = c.declare(Verdict(c.id, c.statement, 0.0, 0.0, 0.0, True), cfg.model_dump(mode="json"), "cpu")
        assert [d.split(" (")[0] for d in v.departures] == ["p 11", "d_model 64", "n_layers 2", "mlp_width 256"]
        paper = st.make_config("paper").model_dump(mode="json")
        assert not c.declare(Verdict(c.id, c.statement, 0.0, 0.0, 0.0, True), paper, "paper").departures


def test_judges_fail_on_wrong_quick_results(quick):
    r = quick
    # a stale JVP (eps_lin flat in t), or a missing direction
    assert J.judge_taylor(_edit(r, "taylor", lambda f: f.assign(eps_lin=0.3))).passed is False
    assert J.judge_taylor(_edit(r, "taylor", lambda f: f[f["direction"] == "random"])).passed is False
    # a remainder of order t^2 (a Hessian on the wrong parameters), or one too large at t = 1e-3
    assert J.judge_interference(_edit(r, "interference", lambda f: f.assign(residual=f["t"] ** 2))).passed is False
    big = lambda f: f.assign(residual=f["residual"] * (1 + 1e6 * np.isclose(f["t"], 1e-3)))  # noqa: E731
    assert J.judge_interference(_edit(r, "interference", big)).passed is False
    # the order defect off the bracket by 20 %; onsets shifted by 2x
    assert J.judge_order(_edit(r, "order", lambda f: f.assign(defect=1.2 * f["defect"]))).passed is False
    assert J.judge_onset(_edit(r, "onset", lambda f: f.assign(eta_dagger=2 * f["eta_pred"]))).passed is False
    # the prefix basis captures too little
    assert J.judge_prefix(_edit(r, "prefix", lambda f: f.assign(captured=0.29))).passed is False
    assert J.judge_prefix(_edit(r, "prefix", lambda f: f.assign(captured=0.9))).passed is True
    # best-of-N: gains 30% high; N = 16 no better than N = 4 x 1.2; out of the valid regime
    assert J.judge_best_of_n(_edit(r, "bestofn", lambda f: f.assign(mean_gain=1.3 * f["mean_gain"]))).passed is False
    flat = lambda f: f.assign(mean_gain=np.where(f["n"] == 16, 1.2 * f["mean_gain"].iloc[0], f["mean_gain"]))  # noqa
    assert J.judge_best_of_n(_edit(r, "bestofn", flat)).passed is False
    assert J.judge_best_of_n(_edit(r, "bestofn", lambda f: f.assign(trace=3 * f["trace"]))).passed is False
    assert J.judge_best_of_n(_edit(r, "bestofn", lambda f: f[f["n"] == 4])).passed is False

    # CAA: a well-aligned edit with a quiet control passes; a weak edit or a loud control fails
    def caa(edit_cos, ctrl_cos):
        return _edit(
            r,
            "caa",
            lambda f: f.assign(
                cos=np.select([f["kind"] == "edit_jvp", f["kind"] == "random"], [edit_cos, ctrl_cos], f["cos"])
            ),
        )

    assert J.judge_caa(caa(0.5, 0.05)).passed is True
    assert J.judge_caa(caa(0.25, 0.05)).passed is False
    assert J.judge_caa(caa(0.5, 0.15)).passed is False


def test_bad_config_fails_before_work():
    from theorylab.core.study import get_study

    st = get_study(SLUG)
    for bad, field in (
        (dict(p=1), "p"),
        (dict(task_a="sub"), "task_a"),
        (dict(caa_layer=3), "caa_layer"),
        (dict(drift_steps=(5, 10)), "drift_steps"),
        (dict(tasks=("add", "add")), "tasks"),
        (dict(ts=(1e-2, 1e-3, 1e-4, 1e-5, 1e-6)), "ts"),
        (dict(prefix_steps=100), "prefix_steps"),
        (dict(task_a="max", tasks=("add", "sub")), "task_a"),
        (dict(n_heads=3), "n_heads"),
        (dict(lrs=(1e-3, 1e-4, 1e-2, 0.1, 1.0)), "lrs"),
        (dict(additivity_ts=(1e-3, 1e-2, 0.1)), "additivity_ts"),
        (dict(window_scales=(1e-5, 1e-4, 1e-3, 3e-3)), "window_scales"),
        (dict(rotation_control=2.0), "rotation_control"),
    ):
        with pytest.raises(Exception, match=field):
            st.make_config("quick", **bad)


@pytest.mark.slow
def test_paper_path_at_toy_size(tmp_path):
    """The paper preset's code path (several seeds, best-of-N over all parameters, LoRA when peft is here; without
    peft the LoRA claim says it needs peft and the run finishes)."""
    from theorylab.core.runner import execute
    from theorylab.core.store import Store

    res = execute(
        SLUG,
        "paper",
        0,
        store=Store(tmp_path / "store"),
        device="cpu",
        overrides=dict(
            p=5,
            d_model=16,
            n_layers=2,
            n_heads=2,
            mlp_width=32,
            seeds=2,
            base_max_steps=150,
            base_batch=64,
            probe_n=32,
            sgd_steps=12,
            drift_steps=(0, 4, 12),
            prefix_steps=4,
            bestofn_draws=4,
            trace_probes=2,
            caa_controls=2,
            lora_steps=10,
            lrs=(1e-3, 1e-2, 0.1, 1.0, 10.0),
        ),
    )
    assert res.status == "done", res.message
    assert set(res.table("base")["seed"]) == {0, 1}
    b = res.table("bestofn")
    assert (b["params"] == "all").all() and (b["dim"] == res.table("base")["dim"].iloc[0]).all()
    v = {x.id.split("/")[1]: x for x in res.verdicts}
    assert v["additivity-at-full-scale"].passed is not None or "NaN" in v["additivity-at-full-scale"].detail
    if HAS_PEFT:
        assert len(res.table("lora")) == 2 and v["lora-recovery"].passed is not None
    else:
        assert v["lora-recovery"].passed is None and "needs peft" in v["lora-recovery"].detail
