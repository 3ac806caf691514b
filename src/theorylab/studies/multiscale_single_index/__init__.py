"""multiscale-single-index: hierarchical feature learning in the multiscale single-index model (MSIM).

Paper: Bruna, *The Multiscale Single-Index Model: A Stylized Model for Hierarchical Feature Learning*,
arXiv 2607.03347 (2026); the model is DeepTD's (Oymak & Soltanolkotabi, arXiv 1805.06523). Each of K layers applies
one shared unit feature w_l to non-overlapping patches of the previous layer (``data.msim``). The first Wiener chaos
E[y x] is a spiked rank-one tensor ``c^(K) w_K ⊗ ... ⊗ w_1`` plus O(d^(-1/2)) (``theory.msim``), so unfoldings
recover the features (``probes.tensor``), and online spherical SGD on the correlation loss recovers all of them
together with Õ(d^(K-1)) samples (``nn.msim``, ``train.spherical_sgd``). Quick: the Edgeworth constant (K = 2), HOSVD
at K = 3, SGD at K = 2; paper: SGD at K = 3, 4, unfolding baselines and the second-chaos spectrum.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import torch

from theorylab.core import RunContext, study
from theorylab.data.msim import (
    first_chaos_projection,
    first_chaos_tensor,
    msim,
    msim_link,
    second_chaos_matrix,
    stack_features,
)
from theorylab.probes.tensor import (
    balanced_features,
    hosvd_features,
    layer_axis,
    overlaps,
    singular_value_ratios,
    unfold,
)
from theorylab.studies.multiscale_single_index.config import PRESETS, MultiscaleSingleIndexConfig
from theorylab.studies.multiscale_single_index.figures import (
    figure_edgeworth,
    figure_sgd_overlaps,
    figure_unfolding_vs_sgd,
)
from theorylab.studies.multiscale_single_index.judges import claims
from theorylab.theory.msim import edgeworth_constant, leading_coefficient, mode_noise_scale
from theorylab.train.spherical_sgd import crossing, train_msim_sgd

PAPER = "Bruna, arXiv 2607.03347 (2026)"
LINK = "quadratic"


def _edgeworth(cfg: MultiscaleSingleIndexConfig, ctx: RunContext) -> None:
    """Claim 1: E[y z] at K = 2, flat w, for the quadratic link and its linear control (same draws)."""
    q = msim_link(LINK)
    a = edgeworth_constant(q, q)
    rows = []
    for d in cfg.edge_dims:
        models = [msim(d, 2, features="flat", link=name) for name in (LINK, "linear")]
        est = first_chaos_projection(models, cfg.edge_n, ctx.rng(f"edgeworth {d}"), chunk=cfg.chunk)
        for name, (mean, se) in zip((LINK, "linear"), est):
            lead = leading_coefficient([msim_link(name)] * 2)
            rows.append(
                dict(
                    link=name,
                    d=d,
                    n=cfg.edge_n,
                    e_yz=mean,
                    se=se,
                    leading=lead,
                    rel_dev=mean / lead - 1,
                    rel_se=se / lead,
                    predicted=(a if name == LINK else 0.0) / math.sqrt(d),
                )
            )
    ctx.table("edgeworth", pd.DataFrame(rows))
    ctx.scalar("edgeworth_a_theory", a)


def _hosvd(cfg: MultiscaleSingleIndexConfig, ctx: RunContext) -> None:
    """Claim 2: HOSVD (and balanced-flattening) estimates from T_hat = (1/n) sum y x, K = 3, with an
    independent-y control on the same x."""
    K, rows = cfg.hosvd_n_scales, []
    coef = leading_coefficient([msim_link(LINK)] * K)
    kinds = tuple(dict.fromkeys((cfg.hosvd_features,) + tuple(cfg.hosvd_report_features)))
    for kind, d in ((k, d) for k in kinds for d in cfg.hosvd_dims):
        model = msim(d, K, ctx.rng(f"hosvd features {kind} {d}"), features=kind, link=LINK)
        n = int(round(cfg.hosvd_sample_ratio * d ** (K - 1)))
        T, C = first_chaos_tensor(
            stack_features([model], ctx.device),
            model.links,
            n,
            ctx.generator(f"hosvd {kind} {d}", ctx.device),
            chunk=cfg.chunk,
            control=True,
        )
        for y, tensor in (("target", T[0]), ("independent", C[0])):
            tensor = tensor.cpu().numpy()
            for est, feats in (("hosvd", hosvd_features(tensor)), ("balanced", balanced_features(tensor))):
                # sign-blind: a singular vector is defined up to sign (an ambiguity of the estimator, not of the
                # model; unlike the SGD student below, whose signs are its own)
                ov = overlaps(np.stack(feats), np.stack(model.features))
                ratio = [singular_value_ratios(unfold(tensor, layer_axis(K, layer)), 2)[0] for layer in range(1, K + 1)]
                rows.append(
                    dict(
                        features=kind,
                        judged=kind == cfg.hosvd_features,
                        d=d,
                        K=K,
                        n=n,
                        y=y,
                        estimator=est,
                        min_overlap=float(ov.min()),
                        **{f"overlap_{i + 1}": float(o) for i, o in enumerate(ov)},
                        max_sv_ratio=float(max(ratio)),
                        spike=coef,
                        noise=mode_noise_scale(d, K, n),
                    )
                )
    ctx.table("hosvd", pd.DataFrame(rows))


def _sgd(cfg: MultiscaleSingleIndexConfig, ctx: RunContext) -> None:
    """Claims 3-5: online spherical SGD (card schedule) for every (K, d), seeds batched."""
    runs, path = [], []
    for K, dims in cfg.sgd_cases:
        for d in dims:
            rng = ctx.rng(f"sgd features {K} {d}")
            W = torch.as_tensor(rng.standard_normal((cfg.sgd_seeds, K, d)), dtype=torch.float32, device=ctx.device)
            W = W / W.norm(dim=-1, keepdim=True)
            scale = d ** (K - 1) * math.log(d)
            n = int(round(cfg.sgd_sample_ratio * scale))
            run = train_msim_sgd(
                W,
                (LINK,) * K,
                n,
                batch=cfg.sgd_batch,
                c=cfg.sgd_lr,
                decay_fraction=cfg.sgd_decay_fraction,
                decay=cfg.sgd_decay,
                generator=ctx.generator(f"sgd {K} {d}", ctx.device),
                log_every=cfg.sgd_log_every,
                sampler=cfg.sgd_sampler,
            )
            # Signed overlaps <u_l, w_l>: no sign flip of (u_1, u_2, ...) other than the identity leaves the network
            # unchanged, because the card's link sigma(t) = (t + He_2(t)/2)/sqrt(1.5) is neither odd nor even:
            # sigma(t) - sigma(-t) = 2t/sqrt(1.5) and sigma(t) + sigma(-t) = (t^2 - 1)/sqrt(1.5) are both non-zero
            # functions. Flipping u_1 changes every hidden unit sigma(<u_1, x_j>); flipping the top u_K changes the
            # output sigma(s) to sigma(-s), equal only where s = 0 (sigma's axis of symmetry is t = -1); flipping
            # several changes the pre-activation of the output by a non-zero function of x. So (-w_1, -w_2) is a
            # different network (a spurious critical point of the correlation, 0.26 instead of 1), and a run there
            # has not recovered the features. The card's |<u_l, w_l>| is kept beside it (report only).
            signed = run.overlaps  # (T, S, K)
            ov, ov_abs = signed, np.abs(signed)
            mins, mins_abs = ov.min(-1), ov_abs.min(-1)
            n05 = crossing(run.samples, mins, 0.5)  # NaN: never reached 0.5 within the n samples
            n05_abs = crossing(run.samples, mins_abs, 0.5)
            n05_layer = crossing(run.samples, ov, 0.5)  # (S, K)
            for s in range(cfg.sgd_seeds):
                runs.append(
                    dict(
                        K=K,
                        d=d,
                        seed=s,
                        n=n,
                        final_min=float(mins[-1, s]),
                        final_min_abs=float(mins_abs[-1, s]),
                        final_signs="".join("+" if v > 0 else "-" for v in signed[-1, s]),
                        n05=n05[s],
                        n05_scaled=n05[s] / scale,
                        n05_abs_scaled=n05_abs[s] / scale,
                        **{f"final_{i + 1}": float(ov[-1, s, i]) for i in range(K)},
                        **{f"n05_{i + 1}": float(n05_layer[s, i]) for i in range(K)},
                    )
                )
            stride = max(1, len(run.samples) // 200)
            for t in range(0, len(run.samples), stride):
                for s in range(cfg.sgd_seeds):
                    path.append(
                        dict(
                            K=K,
                            d=d,
                            seed=s,
                            n=int(run.samples[t]),
                            n_scaled=run.samples[t] / scale,
                            min_overlap=float(mins[t, s]),
                            min_abs_overlap=float(mins_abs[t, s]),
                        )
                    )
    ctx.table("sgd", pd.DataFrame(runs))
    ctx.table("sgd_path", pd.DataFrame(path))


def _unfolding(cfg: MultiscaleSingleIndexConfig, ctx: RunContext) -> None:
    """Claim 6 (paper): mode-wise (HOSVD) and balanced unfoldings of T_hat(n) over an n grid, K = 4."""
    K, rows = cfg.unfold_n_scales, []
    for d in cfg.unfold_dims:
        model = msim(d, K, ctx.rng(f"unfold features {d}"), link=LINK)
        lo, hi = 0.25 * d ** math.ceil(K / 2), 16.0 * d ** (K - 1)  # below the balanced, above the mode-wise scale
        sizes = sorted({int(round(v)) for v in np.geomspace(lo, hi, cfg.unfold_points)})
        T, _ = first_chaos_tensor(
            stack_features([model], ctx.device),
            model.links,
            sizes,
            ctx.generator(f"unfold {d}", ctx.device),
            chunk=cfg.chunk,
        )
        for n, tensor in zip(sizes, T[:, 0].cpu().numpy()):
            for est, feats in (("mode-wise", hosvd_features(tensor)), ("balanced", balanced_features(tensor))):
                ov = overlaps(np.stack(feats), np.stack(model.features))
                rows.append(dict(d=d, K=K, n=n, estimator=est, min_overlap=float(ov.min())))
    ctx.table("unfolding", pd.DataFrame(rows, columns=["d", "K", "n", "estimator", "min_overlap"]))


def _chaos2(cfg: MultiscaleSingleIndexConfig, ctx: RunContext) -> None:
    """Claim 7 (paper, reconstructed): singular values of E[y (x x^T - I)] (d^3 x d^3) at K = 3."""
    rows = []
    for d in cfg.chaos2_dims:
        model = msim(d, 3, ctx.rng(f"chaos2 features {d}"), link=LINK)
        n = int(round(cfg.chaos2_sample_ratio * d**3))
        C = second_chaos_matrix(
            stack_features([model], ctx.device),
            model.links,
            n,
            ctx.generator(f"chaos2 {d}", ctx.device),
            chunk=cfg.chunk,
        )
        s = torch.linalg.eigvalsh(C).abs().sort(descending=True).values.cpu().numpy()  # symmetric: |eigenvalues|
        noise = 2 * math.sqrt(d**3 / n)  # Wigner edge of the sampling noise (E y^2 = 1 per entry)
        for i, v in enumerate(s[: 4 * d]):
            rows.append(dict(d=d, n=n, index=i, singular_value=float(v), noise=noise))
    ctx.table("chaos2", pd.DataFrame(rows, columns=["d", "n", "index", "singular_value", "noise"]))


@study(
    "multiscale-single-index",
    title="Hierarchical feature learning in the multiscale single-index model (Edgeworth first chaos, HOSVD, "
    "spherical SGD)",
    paper=PAPER,
    config=MultiscaleSingleIndexConfig,
    presets=PRESETS,
    family="index models",
    claims=claims,
    # small batched einsums and a per-step Python loop: one thread is fastest here
    cpu_threads=1,
)
def run(cfg: MultiscaleSingleIndexConfig, ctx: RunContext) -> None:
    ctx.say(f"Edgeworth check: E[y z] at d = {cfg.edge_dims}, {cfg.edge_n} samples each")
    _edgeworth(cfg, ctx)
    ctx.say(f"HOSVD of T_hat at K = {cfg.hosvd_n_scales}, d = {cfg.hosvd_dims}")
    _hosvd(cfg, ctx)
    ctx.say(f"spherical SGD on {cfg.sgd_cases}, {cfg.sgd_seeds} seeds")
    _sgd(cfg, ctx)
    if cfg.unfold_dims:
        ctx.say(f"unfolding baselines at K = {cfg.unfold_n_scales}, d = {cfg.unfold_dims}")
    _unfolding(cfg, ctx)
    if cfg.chaos2_dims:
        ctx.say(f"second-chaos spectrum at d = {cfg.chaos2_dims}")
    _chaos2(cfg, ctx)
    figure_edgeworth(ctx, ctx.tables["edgeworth"])
    figure_sgd_overlaps(ctx, ctx.tables["sgd_path"])
    figure_unfolding_vs_sgd(ctx, ctx.tables["unfolding"], ctx.tables["sgd"])
