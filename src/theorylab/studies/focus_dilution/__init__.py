"""focus-dilution: focus-dilution cycles in one-layer attention learning from small initialisation.

Paper: Zheng-An Chen, Pengxiao Lin, Zhi-Qin John Xu & Tao Luo, "Focus and Dilution: The Multi-stage Learning Process
of Attention", arXiv 2605.01199 (2026; only the abstract was available). Precursor: Chen & Luo, "From Condensation to
Rank Collapse", arXiv 2510.06954. A one-layer, one-head transformer without MLP, norm or bias, every weight N(0, ε²),
is trained by full-batch GD on a Zipf-Markov chain (`data.markov.zipf_chain`); the loss levels ln V, H(π) and the
entropy rate come from `theory.markov`; the stage probes (σ₂/σ₁, ‖W_Q W_Kᵀ‖_F, attention entropy, focus ratio F, key
score vs frequency) from `probes.focus` and the plateau detector from `probes.stages`.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import torch

from theorylab.core import RunContext, study
from theorylab.data.markov import sample_chain, zipf_chain
from theorylab.probes.focus import (
    count_above,
    focus_ratio,
    key_frequency_spearman,
    key_scores,
    late_entropy,
    singular_ratio,
    stable_rank,
    token_mass,
    top_tokens,
)
from theorylab.studies.focus_dilution.config import PRESETS, FocusDilutionConfig
from theorylab.studies.focus_dilution.figures import (
    figure_focus_heatmap,
    figure_focus_markers,
    figure_key_scores,
    figure_stages,
)
from theorylab.studies.focus_dilution.judges import claims
from theorylab.studies.focus_dilution.paper_setting import (
    PaperModel,
    optimal_loss,
    stationary_law,
    token_attention,
    train_population,
)
from theorylab.theory.markov import entropy_rate, stationary, unigram_entropy
from theorylab.train.attention_gd import build_members, card_weights, train_gd

PAPER = (
    "Chen, Lin, Xu & Luo, 'Focus and Dilution: The Multi-stage Learning Process of Attention', arXiv 2605.01199 "
    "(ICML 2026)"
)


def _chains(cfg: FocusDilutionConfig, ctx: RunContext):
    """Per member: its chain P, stationary π, Top set and T + 1 state sequences (inputs and next-token targets)."""
    rows, chains, xs, ys = [], [], [], []
    for m in range(cfg.seeds):
        P = zipf_chain(cfg.vocab_size, s=cfg.zipf_s, mix=cfg.chain_mix, seed=ctx.seed(f"chain {m}"))
        pi = stationary(P)
        top = top_tokens(pi, cfg.top_fraction)
        tokens = sample_chain(P, cfg.n_sequences, cfg.length + 1, ctx.generator(f"sequences {m}"))
        xs.append(tokens[:, :-1])
        ys.append(tokens[:, 1:])
        chains.append((P, pi, top))
        rank = np.empty(cfg.vocab_size, dtype=np.int64)
        rank[np.argsort(-pi, kind="stable")] = np.arange(cfg.vocab_size)
        rows += [
            dict(member=m, token=v, pi=float(pi[v]), rank=int(rank[v]), top=bool(v in set(top.tolist())))
            for v in range(cfg.vocab_size)
        ]
        ctx.table(
            "levels",
            pd.DataFrame(
                [
                    dict(
                        member=m,
                        ln_v=math.log(cfg.vocab_size),
                        unigram_entropy=unigram_entropy(pi),
                        entropy_rate=entropy_rate(P),
                    )
                ]
            ),
        )
    ctx.table("tokens", pd.DataFrame(rows))
    return chains, torch.stack(xs), torch.stack(ys)


@study(
    "focus-dilution",
    title="Focus-dilution cycles in one-layer attention learning from small initialisation",
    paper=PAPER,
    config=FocusDilutionConfig,
    presets=PRESETS,
    family="attention",
    claims=claims,
    # tiny ops: one thread avoids contention on a shared 2-core box (card)
    cpu_threads=1,
)
def run(cfg: FocusDilutionConfig, ctx: RunContext) -> None:
    chains, x, y = _chains(cfg, ctx)
    models = build_members(
        cfg.vocab_size, cfg.d_model, cfg.init_std, cfg.residual, [ctx.seed(f"init {m}") for m in range(cfg.seeds)]
    )
    w0 = {k: t.to(ctx.device) for k, t in card_weights(models).items()}
    x, y = x.to(ctx.device), y.to(ctx.device)
    curves, mass_rows, key_rows = [], [], []
    xs_cpu = x.cpu()

    def log(step: int, w: dict, losses: torch.Tensor, pattern: torch.Tensor) -> None:
        ctx.check_finite("training loss", losses, step)
        qk = (w["Q"] @ w["K"].transpose(-1, -2)).double().cpu()  # (S, d, d): the card's W_Q W_Kᵀ
        E, U = w["E"].double().cpu(), w["U"].double().cpu()
        e_ratio, u_ratio, qk_ratio = singular_ratio(E), singular_ratio(U), singular_ratio(qk)
        e_sr, u_sr, qk_sr, e_dirs = stable_rank(E), stable_rank(U), stable_rank(qk), count_above(E, 0.3)
        scale = 1.0 / math.sqrt(w["Q"].shape[-1])
        for m, (_, pi, top) in enumerate(chains):
            pat = pattern[m][:, None].double().cpu()  # (N, 1, T, T)
            scores_vv = scale * E[m] @ qk[m] @ E[m].T  # (V, V)
            ks = key_scores(scores_vv, pi)
            curves.append(
                dict(
                    member=m,
                    step=step,
                    loss=float(losses[m]),
                    qk_norm=float(qk[m].norm()),
                    e_ratio=float(e_ratio[m]),
                    u_ratio=float(u_ratio[m]),
                    qk_ratio=float(qk_ratio[m]),
                    e_stable_rank=float(e_sr[m]),
                    u_stable_rank=float(u_sr[m]),
                    qk_stable_rank=float(qk_sr[m]),
                    e_directions=int(e_dirs[m]),
                    focus=float(focus_ratio(pat, xs_cpu[m], top, cfg.min_position)[0]),
                    entropy=float(late_entropy(pat, cfg.min_position)[0]),
                    key_spearman=key_frequency_spearman(ks, pi),
                )
            )
            tm = token_mass(pat, xs_cpu[m], cfg.vocab_size, cfg.min_position)[0]
            mass_rows.extend([dict(member=m, step=step, token=v, mass=float(tm[v])) for v in range(cfg.vocab_size)])
            key_rows.extend([dict(member=m, step=step, token=v, key_score=float(ks[v])) for v in range(cfg.vocab_size)])

    ctx.say(
        f"training {cfg.seeds} one-layer transformers in lockstep: V = {cfg.vocab_size}, d = {cfg.d_model}, "
        f"T = {cfg.length}, ε = {cfg.init_std}, {cfg.steps} full-batch GD steps"
    )
    train_gd(
        w0,
        x,
        y,
        lr=cfg.lr,
        steps=cfg.steps,
        evaluate_every=cfg.evaluate_every,
        residual=cfg.residual,
        log=log,
        progress=lambda it: ctx.progress(it, "gradient descent"),
    )
    ctx.table("curves", pd.DataFrame(curves))
    ctx.table("token_mass", pd.DataFrame(mass_rows))
    ctx.table("key_scores", pd.DataFrame(key_rows))
    figure_stages(ctx, ctx.tables["curves"], ctx.tables["levels"])
    figure_focus_heatmap(ctx, ctx.tables["token_mass"], ctx.tables["tokens"])
    figure_key_scores(ctx, ctx.tables["curves"], ctx.tables["key_scores"], ctx.tables["tokens"])
    if cfg.focus_setting == "paper":
        paper_focus(cfg, ctx)


def paper_focus(cfg: FocusDilutionConfig, ctx: RunContext) -> None:
    """The paper's setting (paper_setting.py): members trained by GD on the exact population last-token loss; per
    log step the per-token attention A = softmax(Φ) (query token i, key token j), its weight on the high-frequency
    token 0 and its entropy, both averaged over query tokens, and the same from the last query in context."""
    pi = stationary_law(cfg.focus_asymmetry)
    V = len(pi)
    model = PaperModel(
        V, cfg.focus_d_model, cfg.focus_init_std, [ctx.seed(f"paper init {m}") for m in range(cfg.seeds)]
    )
    rows = []

    def log(step: int, w: dict, losses: torch.Tensor, in_context: torch.Tensor, position_entropy: torch.Tensor) -> None:
        ctx.check_finite("paper-setting loss", losses, step)
        phi = PaperModel.phi(w)
        A = token_attention(phi)  # (S, V, V)
        entropy = -(A * A.clamp_min(1e-300).log()).sum(-1)  # (S, V): per query token
        sv = torch.linalg.svdvals(w["W0"])
        for m in range(A.shape[0]):
            rows.append(
                dict(
                    member=m,
                    step=step,
                    loss=float(losses[m]),
                    hf_attention=float(A[m, :, 0].mean()),
                    entropy=float(entropy[m].mean()),
                    hf_in_context=float(in_context[m, 0]),
                    entropy_in_context=float(position_entropy[m]),
                    phi_norm=float(phi[m].norm()),
                    w0_ratio=float(sv[m, 1] / sv[m, 0]),
                    **{f"hf_attention_q{i}": float(A[m, i, 0]) for i in range(V)},
                )
            )

    ctx.say(
        f"paper setting: {cfg.seeds} members, π = ({', '.join(f'{p:.4f}' for p in pi)}), λ = "
        f"{cfg.focus_lambda}, T = {cfg.focus_length}, d = {cfg.focus_d_model}, ε = {cfg.focus_init_std}, "
        f"{cfg.focus_steps} GD steps of lr {cfg.focus_lr} on the exact population last-token loss"
    )
    train_population(
        model,
        pi,
        cfg.focus_lambda,
        cfg.focus_length,
        lr=cfg.focus_lr,
        steps=cfg.focus_steps,
        evaluate_every=cfg.focus_every,
        log=log,
        progress=lambda it: ctx.progress(it, "paper setting"),
    )
    ctx.table("focus_curves", pd.DataFrame(rows))
    ctx.table(
        "focus_levels",
        pd.DataFrame(
            [
                dict(
                    ln_v=math.log(V),
                    entropy_rate=optimal_loss(pi, cfg.focus_lambda),
                    **{f"pi_{i}": float(p) for i, p in enumerate(pi)},
                )
            ]
        ),
    )
    figure_focus_markers(ctx, ctx.tables["focus_curves"], ctx.tables["focus_levels"])
