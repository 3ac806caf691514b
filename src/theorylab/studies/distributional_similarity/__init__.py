"""distributional-similarity: similarity of distribution-valued representations measured by information.

Paper: K. Murphy, arXiv 2608.30720 (2026; only the abstract's first sentence was seen). The build follows the same
author's method: Murphy, Dillavou & Bassett, "Comparing the information content of probabilistic representation
spaces" (TMLR 2025, arXiv 2405.21042). Each probe x_i is encoded as a Gaussian; a channel (a set of latent
dimensions) is summarised by its Bhattacharyya fingerprint over the probes, its information by the Kolchinsky-Tracey
estimate, and two channels are compared by NMI and VI (`theory.info`). Point-valued baselines (CKA, Procrustes) and
distributional ones (Gaussian W2, the stochastic shape distance of Duong et al.) come from `probes.similarity`.
"""

from __future__ import annotations

import itertools

import numpy as np
import pandas as pd
import torch

from theorylab.core import RunContext, study
from theorylab.probes.similarity import linear_cka, procrustes_distance
from theorylab.studies.distributional_similarity.config import PRESETS, DistributionalSimilarityConfig
from theorylab.studies.distributional_similarity.figures import (
    figure_fingerprints,
    figure_invariance,
    figure_nmi_matrix,
    figure_noise_sweep,
)
from theorylab.studies.distributional_similarity.judges import claims
from theorylab.theory.info import Channel
from theorylab.train.vae_ensemble import ensemble_seeds, train_vae_ensemble

PAPER = "Murphy, arXiv 2608.30720 (2026); method: Murphy, Dillavou & Bassett, arXiv 2405.21042 (TMLR 2025)"


def _synthetic(cfg: DistributionalSimilarityConfig, ctx: RunContext) -> dict[str, tuple[torch.Tensor, torch.Tensor]]:
    """Claim 2's channels: means on well-separated points for a, b in {0..3}, every (a, b) cell used equally.
    Returns their encodings (mu, var) for the identity check (claim 1)."""
    cells = torch.tensor(list(itertools.product(range(4), range(4))), dtype=torch.float64)
    ab = cells.repeat_interleave(cfg.cell_repeats, dim=0)  # (16 * repeats, 2)
    unit = torch.ones(len(ab), 1, dtype=torch.float64)
    enc = {
        name: (cfg.gap * values[:, None], unit)
        for name, values in (("a", ab[:, 0]), ("b", ab[:, 1]), ("a mod 2", ab[:, 0] % 2))
    }
    a, b, parity = (Channel(*enc[name]) for name in ("a", "b", "a mod 2"))
    nmi_ab, vi_ab = a.nmi_vi(b)
    nmi_ap, vi_ap = a.nmi_vi(parity)
    rows = [
        ("I(a)", a.I, 2.0),
        ("NMI(a, b)", nmi_ab, 0.0),
        ("VI(a, b)", vi_ab, 4.0),
        ("NMI(a, a mod 2)", nmi_ap, 2**-0.5),
        ("VI(a, a mod 2)", vi_ap, 1.0),
    ]
    ctx.table("synthetic", pd.DataFrame(rows, columns=["quantity", "measured", "exact"]).assign(N=len(ab)))
    return enc


def reference_fingerprint(mu, var) -> np.ndarray:
    """The card's Bhattacharyya coefficients in matrix form, independently of ``theory.info`` (which sums the
    diagonal-covariance terms per dimension): ``D_B = 1/8 dmu^T Sbar^-1 dmu + 1/2 ln(det Sbar / sqrt(det S_i
    det S_j))`` with ``np.linalg.solve`` and ``slogdet`` on the (k, k) covariances, in blocks of probe rows."""
    mu, var = np.asarray(mu, dtype=np.float64), np.asarray(var, dtype=np.float64)
    n, k = mu.shape
    cov = np.einsum("nk,kl->nkl", var, np.eye(k))
    logdet = np.linalg.slogdet(cov)[1]
    out = np.empty((n, n))
    rows = max(1, 2_000_000 // (n * k * k))
    for i in range(0, n, rows):
        sbar = (cov[i : i + rows, None] + cov[None]) / 2  # (rows, n, k, k)
        dmu = mu[i : i + rows, None] - mu[None]
        quad = np.einsum("rnk,rnk->rn", dmu, np.linalg.solve(sbar, dmu[..., None])[..., 0])
        log_ratio = np.linalg.slogdet(sbar)[1] - 0.5 * (logdet[i : i + rows, None] + logdet[None])
        out[i : i + rows] = np.exp(-(quad / 8 + 0.5 * log_ratio))
    return out


def _identity_row(mu, var, **labels) -> dict:
    """Claim 1 for one channel: compared with a second, separately built copy of itself (its own fingerprint), with
    the five estimates behind NMI and VI, and how far its fingerprint is from the card's formula (``fp_err``): a
    channel's NMI with itself is 1 for *any* kernel that enters the self and joint terms alike, so the claim is
    judged on fingerprints shown to be the card's."""
    x, copy = Channel(mu, var), Channel(mu.clone(), var.clone())
    nmi, vi = x.nmi_vi(copy)
    fp_err = float(np.abs(x.log_bc.exp().numpy() - reference_fingerprint(mu, var)).max())
    return dict(
        **labels,
        I=x.I,
        I_copy=copy.I,
        I_self=x.I_self,
        I_self_copy=copy.I_self,
        I_joint=x.joint(copy),
        nmi=nmi,
        vi=vi,
        fp_err=fp_err,
    )


def _images(cfg: DistributionalSimilarityConfig, ctx: RunContext) -> tuple[torch.Tensor, torch.Tensor, np.ndarray]:
    """``(train, probes, probe labels)``, images flattened to [0, 1]; the probes are held out of training."""
    if cfg.local_images is not None:
        data = np.load(cfg.local_images)
        x = torch.as_tensor(data[data.files[0]] if hasattr(data, "files") else data, dtype=torch.float32)
        x = x.reshape(len(x), -1)
        x = x[torch.randperm(len(x), generator=ctx.generator("local order"))]
        labels = np.zeros(cfg.probes, dtype=np.int64)
    elif cfg.dataset == "digits":
        from theorylab.data.digits import digits

        d = digits()
        x, labels = torch.as_tensor((d.x + 1) / 2, dtype=torch.float32), d.y[: cfg.probes]
    else:
        from theorylab.data.shapes2d import shapes2d

        images, factors = shapes2d(cfg.shapes_train + cfg.probes, cfg.shapes_size, generator=ctx.generator("shapes"))
        x, labels = images.reshape(len(images), -1), factors.indices[: cfg.probes, 0].numpy()  # the shape factor
    if float(x.min()) < 0 or float(x.max()) > 1:
        raise ValueError(f"images must lie in [0, 1]; got [{float(x.min()):g}, {float(x.max()):g}]")
    return x[cfg.probes :], x[: cfg.probes], np.asarray(labels)


def _channels(mu: torch.Tensor, var: torch.Tensor) -> dict[tuple[int, str], Channel]:
    """Every run's channel of all latents ("all") and of each latent dimension ("z0", "z1", ...)."""
    out = {}
    for r in range(mu.shape[0]):
        out[r, "all"] = Channel(mu[r], var[r])
        for d in range(mu.shape[2]):
            out[r, f"z{d}"] = Channel(mu[r, :, d : d + 1], var[r, :, d : d + 1])
    return out


def _reparametrize(mu: torch.Tensor, var: torch.Tensor, g: torch.Generator) -> tuple[torch.Tensor, torch.Tensor]:
    """A random permutation and per-dimension affine map (scales 10^linspace(-1, 1, k) in random order, random
    shifts); σ scales with μ (claim 3)."""
    k = mu.shape[-1]
    scale = torch.logspace(-1, 1, k, dtype=torch.float64)[torch.randperm(k, generator=g)]
    shift = 10 * torch.randn(k, generator=g, dtype=torch.float64)
    perm = torch.randperm(k, generator=g)
    return (mu * scale + shift)[..., perm], (var * scale**2)[..., perm]


def _measure(
    cfg, ctx: RunContext, mu: torch.Tensor, var: torch.Tensor, synthetic: dict[str, tuple[torch.Tensor, torch.Tensor]]
) -> None:
    R, N, k = mu.shape
    ch = _channels(mu, var)
    ctx.table("info", pd.DataFrame([dict(run=r, channel=c, I=x.I) for (r, c), x in ch.items()]))
    identity = [_identity_row(m, v, source="synthetic", run=-1, channel=name) for name, (m, v) in synthetic.items()]
    for r, c in ch:
        dims = slice(None) if c == "all" else slice(int(c[1:]), int(c[1:]) + 1)
        identity.append(_identity_row(mu[r][:, dims], var[r][:, dims], source="vae", run=r, channel=c))
    ctx.table("identity", pd.DataFrame(identity))
    g = ctx.generator("reparametrize")
    rep, noise = [], []
    transformed = {}
    for r in range(R):
        mu_t, var_t = _reparametrize(mu[r], var[r], g)
        transformed[r] = (mu_t, var_t)
        t = Channel(mu_t, var_t)
        nmi, vi = ch[r, "all"].nmi_vi(t)
        rep.append(
            dict(
                run=r,
                bc_max_diff=float((ch[r, "all"].log_bc.exp() - t.log_bc.exp()).abs().max()),
                I=ch[r, "all"].I,
                I_transformed=t.I,
                nmi=nmi,
                vi=vi,
                cka=linear_cka(mu[r], mu_t),
            )
        )
        for c in ["all"] + [f"z{d}" for d in range(k)]:
            dims = slice(None) if c == "all" else slice(int(c[1:]), int(c[1:]) + 1)
            noise += [
                dict(run=r, channel=c, c=s, I=Channel(mu[r][:, dims], var[r][:, dims] * s**2).I)
                for s in cfg.noise_scales
            ]
    ctx.table("reparam", pd.DataFrame(rep))
    ctx.table("noise", pd.DataFrame(noise))
    rng = ctx.rng("shuffle")
    pairs = []
    for a, b in itertools.combinations(range(R), 2):
        perm = rng.permutation(N)  # b's encodings assigned to the wrong probes: no shared information is left
        shuffled = Channel(mu[b][perm], var[b][perm])
        nmi, vi = ch[a, "all"].nmi_vi(ch[b, "all"])
        pairs.append(
            dict(
                a=a,
                b=b,
                nmi=nmi,
                vi=vi,
                nmi_shuffled=ch[a, "all"].nmi_vi(shuffled)[0],
                I_a=ch[a, "all"].I,
                I_b=ch[b, "all"].I,
                cka=linear_cka(mu[a], mu[b]),
                cka_transformed=linear_cka(mu[a], transformed[b][0]),
                **dict(zip(("nmi_transformed", "vi_transformed"), ch[a, "all"].nmi_vi(Channel(*transformed[b])))),
            )
        )
    ctx.table("pairs", pd.DataFrame(pairs))
    _distances(cfg, ctx, mu, var)
    _fragments(cfg, ctx, ch, R, k)


def one_way_shape_distance(mu_a, var_a, mu_b, var_b, iters: int) -> float:
    """Duong et al.'s stochastic shape distance from a to b by one alternating-Procrustes descent (a's Gaussians
    against b's rotated ones). ``probes.similarity.stochastic_shape_distance`` runs a -> b and b -> a and keeps the
    smaller, so its d(a, b) and d(b, a) are one number; claim 6 asks the estimate to be symmetric, so each order is
    solved on its own here (the kit's own centring and Gaussian factors, its descent, its default tolerance)."""
    from theorylab.probes.similarity import _gaussian_family, _stochastic_descent

    ma, la = _gaussian_family(mu_a, var_a, "a")
    mb, lb = _gaussian_family(mu_b, var_b, "b", ma.device)
    if ma.shape != mb.shape:
        raise ValueError(f"one-way shape distance needs equal shapes, got {tuple(ma.shape)} and {tuple(mb.shape)}")
    f, _ = _stochastic_descent(ma - ma.mean(0), la, mb - mb.mean(0), lb, iters, 1e-10)
    return float(np.sqrt(max(f, 0.0)))


def _distances(cfg, ctx: RunContext, mu: torch.Tensor, var: torch.Tensor) -> None:
    """Claim 6: the closed-form shape distance (Procrustes between centred mean matrices) and the iterative
    stochastic shape distance over every ordered pair of runs (the first ``distance_runs``; each order its own
    descent), plus identical and orthogonally rotated copies of run 0 (the rotated copy's covariances rotated with
    its means)."""
    R = mu.shape[0] if cfg.distance_runs is None else min(mu.shape[0], cfg.distance_runs)
    Q = torch.linalg.qr(
        torch.randn(mu.shape[2], mu.shape[2], generator=ctx.generator("rotation"), dtype=torch.float64)
    )[0]
    rows = []
    for a, b in itertools.product(range(R), repeat=2):
        rows.append(
            dict(
                method="closed form",
                a=str(a),
                b=str(b),
                d=procrustes_distance(mu[a], mu[b], kind="euclidean", scale=False),
            )
        )
        if a != b:
            rows.append(
                dict(
                    method="iterative",
                    a=str(a),
                    b=str(b),
                    d=one_way_shape_distance(mu[a], var[a], mu[b], var[b], cfg.shape_iters),
                )
            )
    rows.append(
        dict(
            method="closed form",
            a="0",
            b="0 rotated",
            d=procrustes_distance(mu[0], mu[0] @ Q, kind="euclidean", scale=False),
        )
    )
    rows.append(
        dict(
            method="iterative",
            a="0",
            b="0 (itself)",
            d=one_way_shape_distance(mu[0], var[0], mu[0], var[0], cfg.shape_iters),
        )
    )
    rotated_cov = Q.T @ torch.diag_embed(var[0]) @ Q  # row i: N(Q^T mu_i, Q^T S_i Q)
    rows.append(
        dict(
            method="iterative",
            a="0",
            b="0 rotated",
            d=one_way_shape_distance(mu[0], var[0], mu[0] @ Q, rotated_cov, cfg.shape_iters),
        )
    )
    ctx.table("distances", pd.DataFrame(rows))


def _fragments(cfg, ctx: RunContext, ch: dict, R: int, k: int) -> None:
    """NMI between every pair of latent dimensions of different runs (the first ``fragment_runs`` runs)."""
    runs = range(min(R, cfg.fragment_runs))
    active = [(r, f"z{d}") for r in runs for d in range(k) if ch[r, f"z{d}"].I >= cfg.active_bits]
    rows = [
        dict(run_a=ra, dim_a=da, run_b=rb, dim_b=db, nmi=ch[ra, da].nmi_vi(ch[rb, db])[0])
        for (ra, da), (rb, db) in itertools.permutations(active, 2)
        if ra != rb
    ]
    ctx.table("dim_nmi", pd.DataFrame(rows, columns=["run_a", "dim_a", "run_b", "dim_b", "nmi"]))


@study(
    "distributional-similarity",
    title="Information-based similarity of distribution-valued representations (NMI / VI of Bhattacharyya "
    "fingerprints)",
    paper=PAPER,
    config=DistributionalSimilarityConfig,
    presets=PRESETS,
    family="representations",
    claims=claims,
    # small batched matmuls and 300 x 300 kernels: one thread is fastest (2 threads on a shared 2-core box made
    # the VAE training ~8x slower)
    cpu_threads=1,
)
def run(cfg: DistributionalSimilarityConfig, ctx: RunContext) -> None:
    synthetic = _synthetic(cfg, ctx)
    train, probes, labels = _images(cfg, ctx)
    ctx.say(
        f"training {cfg.runs} β-VAEs in lockstep ({cfg.steps} steps, {len(train)} images of {train.shape[1]} pixels)"
    )
    ensemble = train_vae_ensemble(
        train.to(ctx.device),
        ensemble_seeds(ctx.seed("vaes"), cfg.runs),
        latent_dim=cfg.latent_dim,
        hidden=cfg.width,
        beta=cfg.beta,
        lr=cfg.lr,
        batch_size=cfg.batch,
        steps=cfg.steps,
    )
    ctx.table(
        "training",
        pd.DataFrame(
            [
                dict(run=r, step=s, recon=float(ensemble.recon[r, s]), kl=float(ensemble.kl[r, s]))
                for r in range(cfg.runs)
                for s in range(0, cfg.steps, 50)
            ]
        ),
    )
    mu, var = (t.double().cpu() for t in ensemble.encode(probes.to(ctx.device)))
    ctx.check_finite("probe encodings", mu)
    ctx.table("probe_labels", pd.DataFrame(dict(probe=np.arange(len(labels)), label=labels)))
    _measure(cfg, ctx, mu, var, synthetic)
    figure_fingerprints(ctx, mu, var, labels, ctx.tables["info"])
    figure_nmi_matrix(ctx, ctx.tables["dim_nmi"])
    figure_invariance(ctx, ctx.tables["pairs"])
    figure_noise_sweep(ctx, ctx.tables["noise"], n_probes=cfg.probes)
