"""rg-order-parameter: judges on made-up results (pass, fail, undecided), the layer-spectra probe against exact
answers, the masked-chain trainer, config errors."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import torch
from pydantic import ValidationError

from theorylab.core.result import Result
from theorylab.probes.layer_spectra import layer_drift, layer_ranks, relative_kernel_change, spectrum_measures
from theorylab.studies.rg_order_parameter import judges as J
from theorylab.studies.rg_order_parameter.config import RgOrderParameterConfig
from theorylab.train.masked_chain import masked_batches, train_masked_chain

XIS = (1.2, 6.7)
N = 6


def _profile(first: float, last: float, n: int = N) -> np.ndarray:
    return np.linspace(first, last, n)


def _result(
    readings=("mixer", "window", "flat"),
    short=(20.0, 12.0),
    long=(20.0, 20.5),
    short0=(18.0, 16.0),
    long0=(18.0, 16.2),
    drift_short=(0.4, 0.3, 0.05, 0.05, 0.05),
    gap=(0.05, 0.05),
    eig_error=1e-15,
    auto_dev=0.005,
) -> Result:
    ranks, drift, losses = [], [], []
    for reading in readings:
        for xi, tr, un, g in ((XIS[0], short, short0, gap[0]), (XIS[1], long, long0, gap[1])):
            for trained, prof in ((True, tr), (False, un)):
                e = _profile(*prof)
                ranks.append(dict(reading=reading, xi=xi, trained=trained, layer=0, erank=10.0, erank_pooled=10.0))
                ranks += [
                    dict(reading=reading, xi=xi, trained=trained, layer=i + 1, erank=float(x), erank_pooled=float(x))
                    for i, x in enumerate(e)
                ]
                ds = drift_short if (xi == XIS[0] and trained) else (0.2,) * (N - 1)
                drift += [
                    dict(reading=reading, xi=xi, trained=trained, layer=i + 1, one_minus_cka=x, kernel_change=x)
                    for i, x in enumerate(ds)
                ]
            losses.append(dict(reading=reading, xi=xi, loss=1.0 + g, loss_init=2.8, bayes=1.0, gap=g))
    lags = np.arange(1, 6)
    auto = [
        dict(xi=xi, lag=int(k), empirical=np.exp(-k / xi) + auto_dev, theory=np.exp(-k / xi), lam_k=np.exp(-k / xi))
        for xi in XIS
        for k in lags
    ]
    tables = dict(
        ranks=pd.DataFrame(ranks),
        drift=pd.DataFrame(drift),
        losses=pd.DataFrame(losses),
        chain_spectrum=pd.DataFrame([dict(xi=xi, lam=np.exp(-1 / xi), eig_error=eig_error) for xi in XIS]),
        chain_autocorrelation=pd.DataFrame(auto),
    )
    config = RgOrderParameterConfig(readings=readings).model_dump()
    return Result(
        study="rg-order-parameter",
        run_id="made-up",
        preset="quick",
        seed=0,
        status="done",
        config=config,
        tables=tables,
    )


IDS = dict(
    converged="converged",
    collapse="collapse-short-xi",
    no_collapse="no-collapse-long-xi",
    selectivity="selectivity",
    untrained="untrained-control",
    drift="drift-concentration",
    plateau="long-xi-plateau",
)


def _judge(short: str, reading: str):
    """The claim's evaluation (an undecided judge becomes a verdict with passed None, as in a run)."""
    claim = next(c for c in J.claims if c.id == f"rg-order-parameter/{IDS[short]}-{reading}")
    return claim.evaluate


PAPER_LIKE = _result()  # the paper's picture: collapse at short ξ, none at long ξ, concentrated drift


@pytest.mark.parametrize("reading", ["mixer", "window", "flat"])
def test_judges_pass_on_the_papers_picture(reading):
    for short in ("converged", "collapse", "no_collapse", "selectivity", "untrained", "drift", "plateau"):
        v = _judge(short, reading)(PAPER_LIKE)
        assert v.passed is True, f"{short}: {v.detail}"
    assert J.judge_chain(PAPER_LIKE).passed is True


@pytest.mark.parametrize("reading", ["mixer", "window"])
def test_judges_fail_on_wrong_results(reading):
    # our measurements' picture: rank rises (or stays flat) with depth at both ξ
    flat_rise = _result(short=(18.0, 21.0), long=(18.0, 21.5))
    assert _judge("collapse", reading)(flat_rise).passed is False
    assert _judge("selectivity", reading)(flat_rise).passed is False
    assert _judge("no_collapse", reading)(_result(long=(20.0, 15.0))).passed is False
    # rho falls enough but not monotonically: Spearman fails alone
    zigzag = _result(short=(20.0, 12.0))
    r = zigzag.tables["ranks"]
    sel = (r["reading"] == reading) & (r["xi"] == XIS[0]) & r["trained"] & r["layer"].isin([2, 3, 4, 5])
    r.loc[sel, "erank"] = [30.0, 10.0, 31.0, 9.0]
    assert _judge("collapse", reading)(zigzag).passed is False
    assert _judge("converged", reading)(_result(gap=(0.05, 0.12))).passed is False
    assert _judge("untrained", reading)(_result(long0=(18.0, 17.5))).passed is False
    # a uniform drift (share 0.4) and a concentrated one with a third transition at 0.2
    assert _judge("drift", reading)(_result(drift_short=(0.2,) * 5)).passed is False
    assert _judge("drift", reading)(_result(drift_short=(0.35, 0.3, 0.2, 0.1, 0.05))).passed is False
    # plateau: a rank below V = 16 somewhere, or a rising profile
    assert _judge("plateau", reading)(_result(long=(20.0, 15.5))).passed is False
    assert _judge("plateau", reading)(_result(long=(17.0, 24.0))).passed is False
    assert J.judge_chain(_result(auto_dev=0.03)).passed is False
    assert J.judge_chain(_result(eig_error=1e-9)).passed is False


def test_judges_undecided_when_a_reading_was_not_run():
    res = _result(readings=("window",))
    for short in ("converged", "collapse", "no_collapse", "selectivity", "untrained", "drift", "plateau"):
        v = _judge(short, "mixer")(res)
        assert v.passed is None and "cpu preset" in v.detail
    res = _result(readings=("window",))
    assert _judge("collapse", "window")(res).passed is True


def test_selectivity_is_monotone_over_more_xis():
    res = _result()
    extra = res.tables["ranks"][res.tables["ranks"]["xi"] == XIS[1]].copy()
    extra["xi"] = 3.0
    extra.loc[extra["trained"] & (extra["layer"] == N), "erank"] = 10.0  # ρ(3) = 0.5 < ρ(1.2) = 0.6
    res.tables["ranks"] = pd.concat([res.tables["ranks"], extra], ignore_index=True)
    res.config = dict(res.config, xis=(1.2, 3.0, 6.7))
    assert _judge("selectivity", "mixer")(res).passed is False
    assert _judge("selectivity", "mixer")(_result()).passed is True


# --- the probe --------------------------------------------------------------------------------------------------


def test_spectrum_measures_exact():
    # a (B, d) matrix with singular values (3, 1, 0, ...) after centring: eRank = exp(H(3/4, 1/4)), PR = 100 / 82
    B, d = 8, 5
    u = torch.linalg.qr(torch.randn(B, B, generator=torch.Generator().manual_seed(0), dtype=torch.float64))[0]
    ones = torch.ones(B, 1, dtype=torch.float64) / B**0.5
    u = u - ones @ (ones.T @ u)  # centred columns
    u = torch.linalg.qr(u[:, :2])[0]
    h = 3 * u[:, :1] @ torch.eye(d, dtype=torch.float64)[:1] + u[:, 1:2] @ torch.eye(d, dtype=torch.float64)[1:2]
    h = h + 5.0  # a constant shift: centring removes it
    er, pr = spectrum_measures(h)
    p = np.array([0.75, 0.25])
    assert float(er) == pytest.approx(np.exp(-(p * np.log(p)).sum()), rel=1e-10)
    assert float(pr) == pytest.approx(100 / 82, rel=1e-10)


def test_layer_ranks_and_drift_on_known_layers():
    g = torch.Generator().manual_seed(1)
    h = torch.randn(256, 4, 6, generator=g, dtype=torch.float64)
    q = torch.linalg.qr(torch.randn(6, 6, generator=g, dtype=torch.float64))[0]
    layers = [h, 2.0 * h @ q, h[..., :1].expand(-1, -1, 6) + 0.0 * h]
    r = layer_ranks(layers, mask=torch.ones(256, 4, dtype=torch.bool))
    # an orthogonal map and a scale leave eRank unchanged; the third layer has rank 1
    assert r["erank"][0] == pytest.approx(r["erank"][1], rel=1e-10)
    assert r["erank"][2] == pytest.approx(1.0, abs=1e-6)
    assert r["erank_masked"][0] == pytest.approx(r["erank"][0], rel=1e-10)
    d = layer_drift(layers)
    assert d["one_minus_cka"][0] == pytest.approx(0.0, abs=1e-12)  # CKA is invariant to scale and rotation
    assert d["one_minus_cka"][1] > 0.5
    # relative kernel change against the explicit B x B kernels
    a, b = layers[0][:, 0], layers[2][:, 0]
    ac, bc = a - a.mean(0), b - b.mean(0)
    k0, k1 = ac @ ac.T, bc @ bc.T
    want = float((k1 - k0).norm() / k0.norm())
    assert float(relative_kernel_change(a, b)) == pytest.approx(want, rel=1e-9)


# --- the trainer --------------------------------------------------------------------------------------------------


def test_masked_batches_are_fresh_masked_and_reproducible():
    P = np.full((4, 4), 0.25)
    make = lambda: list(
        masked_batches(
            P,
            length=6,
            batch=3,
            steps=5,
            mask_rate=0.3,
            mask_id=4,  # noqa: E731
            generator=torch.Generator().manual_seed(0),
            chunk=2,
        )
    )
    a, b = make(), make()
    assert len(a) == 5 and all(torch.equal(x[1], y[1]) for x, y in zip(a, b))
    for tokens, corrupted, mask in a:
        assert mask.any() and (corrupted[mask] == 4).all() and torch.equal(corrupted[~mask], tokens[~mask])
    assert not torch.equal(a[0][0], a[1][0])


def test_training_reaches_the_bayes_loss_of_an_iid_chain():
    # i.i.d. uniform tokens: the Bayes masked loss is ln V whatever the neighbours; a tiny stack gets there
    from theorylab.nn.residual_mlp import ResidualMLPStack

    V = 4
    P = np.full((V, V), 1 / V)
    model = ResidualMLPStack(V + 1, V, 8, d=8, n_blocks=2, variant="window", window=1, seed=0)
    curve = train_masked_chain(
        model,
        P,
        length=8,
        batch=32,
        steps=200,
        lr=3e-3,
        mask_rate=0.3,
        mask_id=V,
        generator=torch.Generator().manual_seed(0),
        log_every=50,
        schedule="linear",
    )
    assert list(curve["step"]) == [50, 100, 150, 200]
    assert curve["loss"].iloc[-1] == pytest.approx(np.log(V), abs=0.05)


def test_bad_config_fails_with_one_line():
    with pytest.raises(ValidationError, match="readings"):
        RgOrderParameterConfig(readings=("mixer", "attention"))
    with pytest.raises(ValidationError, match="repeats"):
        RgOrderParameterConfig(readings=("mixer", "mixer"))
    with pytest.raises(ValidationError, match="xis"):
        RgOrderParameterConfig(xis=(1.2,))
    with pytest.raises(ValidationError, match="n_layers"):
        RgOrderParameterConfig(n_layers=2)
